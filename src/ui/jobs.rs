//! The UI's jobs: slow work off the key path, a struct per job with its own typed output.
//!
//! - Each implements `runner::Job`; the runner starts it on a worker of tokio's blocking pool.
//! - A model call blocks its worker on the runtime while its requests run as tasks.
//! - Counting runs on a pool of low priority, so a key press never waits on it.
//! - Tests run a job in place (`runner::run_here`, `runner::run_now`).

use super::context_view::{self, ContextData};
use super::runner::{self, Job, Report};
use super::selection::{self, SelectionInfo};
use crate::engine::edit::plan::WriteRequest;
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::engine::view::context::ContextMessage;
use crate::engine::view::tokens::{Encoding, TokenCache};
use crate::llm::summarize::Summarizer;
use crate::store::{self, SessionInfo};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a summary is for.
#[derive(Clone)]
pub enum SummaryKind {
    Compaction(CompactionSummary),
    Branch(BranchSummary),
}

/// A compaction, written by each of `strategies` side by side (one tab each).
#[derive(Clone)]
pub struct CompactionSummary {
    pub plan: Arc<crate::engine::compaction::cut::CompactionPlan>,
    pub focus: Option<String>,
    pub thinking: String,
    pub strategies: Vec<crate::engine::compaction::strategy::Strategy>,
    pub params: crate::engine::compaction::slices::SliceParams,
}

/// The branch left, summarized before going to another entry.
#[derive(Clone)]
pub struct BranchSummary {
    pub nav: Box<crate::engine::edit::entries::Navigation>,
    pub focus: Option<String>,
    pub replace: bool,
}

/// Sessions above this many entries compute the selection's gauge and cut off the key path
/// (as jobs; below it they are instant and run in place).
pub const LARGE_SESSION: usize = 20_000;

/// Gauge and cut for the selected entry (see `selection`).
pub struct SelectionJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub settings: Settings,
    pub registry: Arc<Registry>,
    pub keep_recent: u64,
    pub want_classes: bool,
}

/// The cut of a selection whose gauge is shown (the first load's, after the first frame).
pub struct CutJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub to_come: Box<selection::CutToCome>,
}

/// Exact token counts of the messages at the selection.
pub struct ExactTokensJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub messages: Vec<ContextMessage>,
    pub encoding: Encoding,
    pub cache: Arc<TokenCache>,
}

/// "What the model sees" at the selection (and the marked entry): the session's context,
/// or with `live` what bonsai's Pi package sends (its settings, window and reserve).
pub struct ContextViewJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub mark: Option<usize>,
    pub encoding: Encoding,
    pub cache: Arc<TokenCache>,
    pub live: Option<context_view::LiveParams>,
}

/// The live policy's figure at the selection (what the Pi package would send), for the
/// gauge's mark.
pub struct LiveFigureJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub params: context_view::LiveParams,
}

/// The open session's bill replayed under the live policy and without it (`bonsai bill`):
/// the live context view's bottom line. A job of its own: on a 100 MB session it takes
/// seconds, and the view's rows come first.
pub struct LiveBillJob {
    /// The session's length it is for.
    pub generation: u64,
    pub session: Arc<Session>,
    pub params: context_view::LiveParams,
}

/// A pruning plan for the selection (see `engine::edit::prune`).
pub struct PruneJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub policy: crate::engine::edit::prune::Policy,
    pub settings: crate::engine::edit::prune::PruneSettings,
    pub force: bool,
    /// The gauge's zone (the zones policy follows it unless one is chosen).
    pub zone: crate::engine::edit::prune::Zone,
}

/// Pi's compaction plan at `leaf` (`c`: what is summarized, where the cut falls, or
/// why there is nothing to compact).
pub struct PlanCompactionJob {
    pub id: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub settings: crate::engine::compaction::cut::CompactionSettings,
}

/// What fills the context at the selection.
pub struct FillsJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub encoding: Encoding,
    pub cache: Arc<TokenCache>,
}

/// Every session's model calls for the usage view (and the open session's compactions).
pub struct UsageJob {
    pub generation: u64,
    pub cwd: PathBuf,
    pub settings: crate::engine::settings::Settings,
    pub agent_dir: PathBuf,
    pub session: Option<(PathBuf, Vec<i64>)>,
}

/// The file grew (Pi appended): the session with the new lines.
pub struct ReloadJob {
    pub session: Arc<Session>,
    pub path: PathBuf,
}

/// Open another session (the picker), through its index where it has one.
pub struct OpenJob {
    pub path: PathBuf,
    pub index: Option<store::index::Place>,
}

/// Write the index of a session just opened (in the background, after its first frame;
/// a quit does not wait for it).
pub struct SaveIndexJob {
    pub place: store::index::Place,
    pub source: store::index::Source,
    pub session: Arc<Session>,
}

/// The session bonsai was started on, read with its progress said (`LoadReport`).
/// `early`: a big session's gauge is worked out here right after the parse.
/// The app builds its tree meanwhile, so the first frame has the gauge.
/// The cut is left to a `CutJob` after the first frame.
pub struct LoadJob {
    pub path: PathBuf,
    pub size: u64,
    pub early: Option<(Settings, Arc<Registry>)>,
    pub index: Option<store::index::Place>,
    /// A big file's leaf rows for the loading frame (the tree's filter, how many rows),
    /// read from its end beside a whole parse (`LoadReport::Preview`); an open from the index is
    /// quicker than that read, so it has none.
    pub preview: Option<(crate::engine::view::tree_view::FilterMode, usize)>,
}

/// Find the model and its API key for a summary: Pi's `auth.json`, the environment and
/// the settings are read here, not in the update. `wanted`: bonsai's summary model
/// setting; `session_model`: the session's own (provider, id).
pub struct ResolveSummarizerJob {
    pub id: u64,
    pub registry: Arc<Registry>,
    pub agent_dir: PathBuf,
    pub wanted: Option<String>,
    pub session_model: Option<(String, String)>,
}

/// Small file work (the trash, old backups, pins, a listed session's name).
pub struct ChoreJob {
    pub chore: super::chores::Chore,
    pub agent_dir: PathBuf,
}

/// List sessions (the picker; `all`: every project), with bonsai's pins.
pub struct ListJob {
    pub cwd: PathBuf,
    pub settings: Settings,
    pub all: bool,
    /// Pi's agent directory (bonsai's pins are under it).
    pub agent_dir: PathBuf,
}

/// Exact counts of every message of every entry (the tree's right column), in the
/// background at a low priority, reporting progress.
pub struct ExactAllJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub encoding: Encoding,
    pub cache: Arc<TokenCache>,
    pub cancel: Arc<AtomicBool>,
}

/// Search inside `files` (the picker), each file's hits reported as it is done.
pub struct SearchSessionsJob {
    pub id: u64,
    pub files: Vec<PathBuf>,
    pub query: String,
    pub cancel: Arc<AtomicBool>,
}

/// Find text inside the open session (its bytes in memory), hits reported as they come.
pub struct FindInSessionJob {
    pub id: u64,
    pub session: Arc<Session>,
    pub query: String,
    pub cancel: Arc<AtomicBool>,
}

/// Append, decided again on the file as it is (see `engine::edit::plan`).
pub struct WriteJob {
    pub path: PathBuf,
    pub request: WriteRequest,
    pub what: String,
    /// The entry to select afterwards (by id; `None`: the new leaf).
    pub select: Option<String>,
    /// A refusal reads the file again (a summary dialog waits to be given back with what
    /// changed); without one, a refused write reads nothing more.
    pub reread_on_refusal: bool,
    /// The session what is written was made from: proven against the file first when it
    /// was opened through bonsai's index (every line, not only those read).
    pub built_from: Arc<Session>,
}

/// A new session file with the path up to `cut` (Pi's `/fork` and `/clone`), beside
/// `source`.
pub struct BranchedJob {
    pub session: Arc<Session>,
    pub cut: Option<usize>,
    pub source: PathBuf,
    pub what: &'static str,
    /// The text a fork hands back (the user message it forked before).
    pub editor_text: Option<String>,
}

/// Delete the branch at `target` from the file `session` was read from (refused if the
/// file is no longer exactly those bytes), then read the new file.
pub struct DeleteBranchJob {
    pub path: PathBuf,
    pub session: Arc<Session>,
    pub target: String,
}

/// The path to `leaf` as a document at `out` (a new file; the format from its extension).
pub struct ExportJob {
    pub session: Arc<Session>,
    /// The session's file: the export gets its mode.
    pub source: Option<PathBuf>,
    pub leaf: usize,
    pub out: PathBuf,
}

/// A summary, said as `SummaryReport`s:
/// - a compaction's strategies, each reporting into its tab;
/// - a branch's by a model, its text streamed back in chunks;
/// - without a summarizer, the offline one.
pub struct SummaryJob {
    pub id: u64,
    pub session: Arc<Session>,
    pub summarizer: Option<Box<Summarizer>>,
    pub kind: SummaryKind,
    pub cancel: Arc<AtomicBool>,
}

/// A finished write: the session after it and what was appended.
#[derive(Debug)]
pub struct Written {
    pub session: Arc<Session>,
    pub applied: store::Appended,
    pub prepared: crate::engine::edit::plan::Prepared,
    pub what: String,
    pub select: Option<String>,
}

/// What the job read: every session's calls under Pi's sessions folder, and the open one's.
#[derive(Debug)]
pub struct UsageData {
    pub generation: u64,
    pub sessions: Vec<crate::engine::usage::SessionCalls>,
    pub skipped: usize,
    pub tz: jiff::tz::TimeZone,
    pub models: Arc<crate::engine::load::models::Registry>,
    /// The clock when read (the period ends today).
    pub now_ms: i64,
    /// The open session's file, and the times (ms) of its compactions.
    pub session: Option<(std::path::PathBuf, Vec<i64>)>,
    pub elapsed_ms: u64,
}

/// The selection's gauge as soon as it is known, then its cut (`SelectionJob`).
#[derive(Debug)]
pub enum SelectionReport {
    Gauge { generation: u64, info: Box<SelectionInfo> },
    Cut(CutReady),
}

/// The cut of the selection whose gauge came before it (of the same generation).
#[derive(Debug)]
pub struct CutReady {
    pub generation: u64,
    pub cut: Box<selection::SelectionCut>,
}

/// Exact counts of the selection's messages.
#[derive(Debug)]
pub struct ExactTokens {
    pub generation: u64,
    pub total: u64,
    pub per_message: Vec<u64>,
}

/// A context view's count under way, then the view.
#[derive(Debug)]
pub enum ContextReport {
    /// Messages counted of those to count.
    Progress {
        generation: u64,
        done: usize,
        total: usize,
    },
    Built(Box<ContextData>),
}

/// The live policy's figure at the selection.
#[derive(Debug)]
pub struct LiveFigure {
    pub generation: u64,
    pub report: Box<crate::engine::live::LiveReport>,
}

/// The live bill's line (`None`: nothing to bill).
#[derive(Debug)]
pub struct LiveBill {
    pub generation: u64,
    pub line: Option<String>,
}

/// A pruning plan for the selection.
#[derive(Debug)]
pub struct PrunePlanned {
    pub generation: u64,
    pub plan: Box<crate::engine::edit::prune::Plan>,
}

/// Pi's compaction plan at `leaf`, or why there is nothing to compact.
#[derive(Debug)]
pub struct CompactionPlanned {
    pub id: u64,
    pub leaf: usize,
    pub plan: Result<Box<crate::engine::compaction::cut::CompactionPlan>, crate::engine::compaction::cut::NoCompaction>,
}

/// The session read again after it changed.
#[derive(Debug)]
pub struct Reloaded {
    pub result: Result<Arc<Session>, store::OpenError>,
    /// The file was not the shown session plus appended lines (rewritten, truncated).
    pub rewritten: bool,
    /// The file's last change was bonsai's own (`bonsai restore`, another window).
    pub by_bonsai: bool,
}

/// Another session read (the picker), through its index where it has one.
#[derive(Debug)]
pub struct Opened {
    pub path: PathBuf,
    pub result: Result<Arc<Session>, store::OpenError>,
    pub index: Option<Indexed>,
}

/// How the first session's read goes, then the session and its early gauge.
#[derive(Debug)]
pub enum LoadReport {
    /// Bytes parsed so far.
    Progress { parsed: usize },
    /// Read from its index, or parsed whole and why.
    Via(store::index::Used),
    /// The leaf's newest rows for the loading frame (`None`: they could not be read).
    Preview(Option<crate::engine::view::tree_view::TailPreview>),
    /// The session read, or why not.
    Loaded(Box<Opened>),
    /// The gauge of the leaf, worked out by the load.
    /// `None`: the leaf has none, or the load had nothing to work on.
    EarlySelection(Option<Box<(SelectionInfo, selection::CutToCome)>>),
}

/// The sessions listed, with bonsai's records beside them.
#[derive(Debug)]
pub struct Listed {
    pub all: bool,
    pub sessions: Vec<SessionInfo>,
    /// Pi's sessions in every project, counted when this project has none.
    pub everywhere: Option<usize>,
    /// The pinned sessions (bonsai's own file).
    pub pins: Vec<PathBuf>,
    /// What is in bonsai's trash, with the bytes each holds.
    pub trash: Vec<(store::trash::Trashed, u64)>,
    /// When the listing was read (the picker lists again two seconds later).
    pub at: std::time::Instant,
    /// bonsai's backups beside the listed sessions.
    pub leftovers: Vec<store::backups::Backup>,
    /// The documents bonsai exported, still as it wrote them.
    pub exports: Vec<store::exports::Export>,
}

/// The whole-session count: its progress, then its end.
#[derive(Debug)]
pub enum ExactAllReport {
    /// Messages counted of all.
    Progress { generation: u64, done: usize, total: usize },
    /// The count ended, or was cancelled.
    Done {
        generation: u64,
        tokens: u64,
        messages: usize,
        elapsed_ms: u64,
        cancelled: bool,
    },
}

/// A search of the listed sessions: each file as it is done, then the end.
#[derive(Debug)]
pub enum SearchReport {
    File {
        id: u64,
        path: PathBuf,
        hits: Result<Vec<crate::engine::view::search::Hit>, store::search::SearchError>,
    },
    /// Every file searched, or the search stopped.
    Done {
        id: u64,
        elapsed_ms: u64,
        error: Option<store::search::SearchError>,
    },
}

/// A find in the open session: hits one piece at a time, then the end.
#[derive(Debug)]
pub enum FindReport {
    /// (entry, matches in it).
    Hits { id: u64, hits: Vec<(usize, usize)> },
    /// The find ended, or was stopped.
    Done {
        id: u64,
        elapsed_ms: u64,
        error: Option<store::search::SearchError>,
    },
}

/// A write's end.
#[derive(Debug)]
pub struct WriteOutcome {
    pub result: Result<Written, store::WriteError>,
    /// After a refused write: the session as the file holds it now, read by the job.
    /// A dialog given back shows what changed.
    pub now: Option<Arc<Session>>,
}

/// A fork's or clone's new file.
#[derive(Debug)]
pub struct BranchedOutcome {
    pub what: &'static str,
    pub result: Result<PathBuf, store::WriteError>,
    pub editor_text: Option<String>,
}

/// The summary model found for request `id`.
/// `None`: no model or no key; the summary is written offline.
#[derive(Debug)]
pub struct Resolved {
    pub id: u64,
    pub summarizer: Option<Box<Summarizer>>,
}

/// A summary's progress and end: a branch's streamed text, or a compaction's strategies.
#[derive(Debug)]
pub enum SummaryReport {
    Chunk {
        id: u64,
        text: String,
    },
    Done {
        id: u64,
        /// How long the job ran (the tab's time, measured where the work was done).
        wall_ms: u64,
        result: Result<crate::engine::compaction::summary::Summary, SummaryError>,
    },
    /// A compaction strategy's progress (tab `tab` of summary job `id`).
    StrategyProgress {
        id: u64,
        tab: usize,
        progress: crate::llm::strategies::Progress,
    },
    /// A compaction strategy finished (the others may still run).
    StrategyDone {
        id: u64,
        tab: usize,
        result: Result<Box<StrategyResult>, StrategyFailed>,
    },
    /// Every strategy of summary job `id` finished.
    /// `finished` holds the tabs that had not reported yet (the offline group runs in one
    /// piece).
    StrategiesDone {
        id: u64,
        finished: Vec<(usize, Result<Box<StrategyResult>, StrategyFailed>)>,
    },
}

/// Why a strategy's summary did not come (its tab says it; the others go on), and after how
/// long.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub struct StrategyFailed {
    pub why: StrategyError,
    pub wall_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StrategyError {
    /// A model's strategy with no model to call.
    #[error("no model is configured (an API key in Pi's auth.json or the environment)")]
    NoModel,
    /// The model call's own error, said as it is.
    #[error(transparent)]
    Model(#[from] crate::llm::LlmError),
}

/// What a finished strategy gives its tab.
#[derive(Debug)]
pub struct StrategyResult {
    pub summary: crate::engine::compaction::summary::Summary,
    pub calls: usize,
    pub usage: crate::llm::Usage,
    pub cost: f64,
    pub wall_ms: u64,
    pub score: crate::engine::compaction::recall::Score,
}

impl std::fmt::Debug for SelectionInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "SelectionInfo(leaf {})", self.leaf)
    }
}

impl std::fmt::Debug for selection::CutToCome {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "CutToCome")
    }
}

impl std::fmt::Debug for selection::SelectionCut {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "SelectionCut(leaf {})", self.leaf)
    }
}

/// Why a model summary did not come.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SummaryError {
    #[error("cancelled")]
    Cancelled,
    #[error(transparent)]
    Llm(#[from] crate::llm::LlmError),
    #[error("could not start the request: {0}")]
    Runtime(String),
}

impl Job for ChoreJob {
    type Output = super::chores::ChoreDone;
    const NAME: &'static str = "chore";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        super::chores::run(self.chore, &self.agent_dir, store::clock::now_ms())
    }
}

impl Job for ResolveSummarizerJob {
    type Output = Resolved;
    const NAME: &'static str = "resolve summarizer";
    fn run(self, _: Report<Resolved>) -> Resolved {
        let ResolveSummarizerJob {
            id,
            registry,
            agent_dir,
            wanted,
            session_model,
        } = self;
        Resolved {
            id,
            summarizer: Summarizer::resolve(
                &registry,
                &agent_dir,
                wanted.as_deref(),
                session_model.as_ref().map(|(p, m)| (p.as_str(), m.as_str())),
            )
            .ok()
            .map(Box::new),
        }
    }
}

impl Job for SelectionJob {
    type Output = SelectionReport;
    const NAME: &'static str = "selection";
    /// The gauge is said as soon as it is known; the cut is the end.
    fn run(self, report: Report<SelectionReport>) -> SelectionReport {
        let SelectionJob {
            generation,
            session,
            leaf,
            settings,
            registry,
            keep_recent,
            want_classes,
        } = self;
        let (info, to_come) = selection::gauge_of(&session, leaf, &settings, &registry, Some(keep_recent));
        report.say(SelectionReport::Gauge {
            generation,
            info: Box::new(info),
        });
        SelectionReport::Cut(CutReady {
            generation,
            cut: Box::new(to_come.cut(&session, want_classes)),
        })
    }
}

impl Job for CutJob {
    type Output = CutReady;
    const NAME: &'static str = "cut";
    fn run(self, _: Report<CutReady>) -> CutReady {
        CutReady {
            generation: self.generation,
            cut: Box::new(self.to_come.cut(&self.session, false)),
        }
    }
}

impl Job for ExactTokensJob {
    type Output = ExactTokens;
    const NAME: &'static str = "exact tokens";
    fn run(self, _: Report<ExactTokens>) -> ExactTokens {
        let ExactTokensJob {
            generation,
            session,
            messages,
            encoding,
            cache,
        } = self;
        let refs: Vec<&ContextMessage> = messages.iter().collect();
        let per_message = at_low_priority(|| cache.count_all(&session, &refs, encoding));
        ExactTokens {
            generation,
            total: per_message.iter().sum(),
            per_message,
        }
    }
}

impl Job for ContextViewJob {
    type Output = ContextReport;
    const NAME: &'static str = "context view";
    /// At a low priority, so keys and frames never wait on the count.
    fn run(self, report: Report<ContextReport>) -> ContextReport {
        let ContextViewJob {
            generation,
            session,
            leaf,
            mark,
            encoding,
            cache,
            live,
        } = self;
        let data = at_low_priority(|| {
            context_view::build_with_progress(
                &session,
                generation,
                leaf,
                mark,
                encoding,
                &cache,
                live.as_ref(),
                &|done, total| {
                    report.say(ContextReport::Progress {
                        generation,
                        done,
                        total,
                    })
                },
            )
        });
        ContextReport::Built(Box::new(data))
    }
}

impl Job for LiveFigureJob {
    type Output = LiveFigure;
    const NAME: &'static str = "live figure";
    fn run(self, _: Report<LiveFigure>) -> LiveFigure {
        let at = at_low_priority(|| self.params.at_leaf(&self.session, self.leaf));
        LiveFigure {
            generation: self.generation,
            report: Box::new(at.answer.report),
        }
    }
}

impl Job for LiveBillJob {
    type Output = LiveBill;
    const NAME: &'static str = "live bill";
    fn run(self, _: Report<LiveBill>) -> LiveBill {
        LiveBill {
            generation: self.generation,
            line: at_low_priority(|| context_view::bill_line(&self.params.bill(&self.session))),
        }
    }
}

impl Job for PruneJob {
    type Output = PrunePlanned;
    const NAME: &'static str = "prune plan";
    fn run(self, _: Report<PrunePlanned>) -> PrunePlanned {
        PrunePlanned {
            generation: self.generation,
            plan: Box::new(crate::engine::edit::prune::plan(
                &self.session,
                self.leaf,
                self.policy,
                &self.settings,
                self.force,
                self.zone,
            )),
        }
    }
}

impl Job for PlanCompactionJob {
    type Output = CompactionPlanned;
    const NAME: &'static str = "compaction plan";
    fn run(self, _: Report<CompactionPlanned>) -> CompactionPlanned {
        CompactionPlanned {
            id: self.id,
            leaf: self.leaf,
            plan: crate::engine::edit::entries::plan_compaction(&self.session, self.leaf, self.settings).map(Box::new),
        }
    }
}

impl Job for FillsJob {
    type Output = Box<super::fills::FillsData>;
    const NAME: &'static str = "fills";
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        Box::new(super::fills::build(
            &self.session,
            self.generation,
            self.leaf,
            self.encoding,
            &self.cache,
        ))
    }
}

impl Job for ReloadJob {
    type Output = Reloaded;
    const NAME: &'static str = "reload";
    /// The session read again after it changed: whether it was rewritten, whether bonsai
    /// wrote it.
    fn run(self, _: Report<Reloaded>) -> Reloaded {
        let r = store::files::reload_shown(&self.session, &self.path);
        let rewritten = r.as_ref().is_ok_and(|(_, w)| *w);
        let by_bonsai = std::fs::metadata(&self.path).is_ok_and(|m| store::own_writes::is_ours(&self.path, &m));
        Reloaded {
            result: r.map(|(s, _)| Arc::new(s)),
            rewritten,
            by_bonsai,
        }
    }
}

impl Job for OpenJob {
    type Output = Opened;
    const NAME: &'static str = "open";
    fn run(self, _: Report<Opened>) -> Opened {
        let (result, index) = open_indexed(&self.path, self.index.as_ref(), None, None);
        Opened {
            path: self.path,
            result,
            index,
        }
    }
}

impl Job for SaveIndexJob {
    type Output = Result<u64, String>;
    const NAME: &'static str = "save index";
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        store::index::save(&self.place, &self.source, &self.session).map_err(|e| e.to_string())
    }
}

impl Job for ListJob {
    type Output = Listed;
    const NAME: &'static str = "list";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Listed>) -> Listed {
        let ListJob {
            cwd,
            settings,
            all,
            agent_dir,
        } = self;
        let sessions = store::sessions::list_sessions_in(&agent_dir, &cwd, &settings, all);
        // None here: say how many there are elsewhere (counted, not opened).
        let everywhere =
            (sessions.is_empty() && !all).then(|| store::sessions::count_all_sessions_in(&agent_dir, &cwd, &settings));
        // The trash and each listed folder's leftovers, for housekeeping in the picker.
        let trash = store::trash::list(&agent_dir)
            .into_iter()
            .map(|t| {
                let bytes = store::trash::size(&agent_dir, &t);
                (t, bytes)
            })
            .collect();
        let mut dirs: Vec<PathBuf> = sessions.iter().map(|s| s.dir.clone()).collect();
        dirs.sort();
        dirs.dedup();
        Listed {
            at: std::time::Instant::now(),
            all,
            sessions,
            everywhere,
            pins: store::pins::load(&agent_dir),
            trash,
            leftovers: store::backups::find(&dirs),
            exports: store::exports::list(&agent_dir),
        }
    }
}

impl Job for UsageJob {
    type Output = Box<UsageData>;
    const NAME: &'static str = "usage";
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        let UsageJob {
            generation,
            cwd,
            settings,
            agent_dir,
            session,
        } = self;
        let t0 = std::time::Instant::now();
        let mut paths = store::sessions::session_folders(&cwd, &settings, true);
        // The open session counts even when it lives outside Pi's folders.
        if let Some((p, _)) = &session
            && !paths.iter().any(|d| p.starts_with(d))
        {
            paths.push(p.clone());
        }
        let (sessions, skipped) = store::usage::read_sessions_cached(&agent_dir, &paths);
        Box::new(UsageData {
            generation,
            sessions,
            skipped: skipped.len(),
            tz: store::usage::time_zone(None).unwrap_or(jiff::tz::TimeZone::UTC),
            models: Arc::new(store::config::load_registry(&agent_dir)),
            now_ms: store::clock::now_ms(),
            session,
            elapsed_ms: t0.elapsed().as_millis() as u64,
        })
    }
}

impl Job for ExactAllJob {
    type Output = ExactAllReport;
    const NAME: &'static str = "exact all";
    fn run(self, report: Report<ExactAllReport>) -> ExactAllReport {
        count_everything(self, &report)
    }
}

impl Job for SearchSessionsJob {
    type Output = SearchReport;
    const NAME: &'static str = "search sessions";
    /// Each file is said when it is done.
    fn run(self, report: Report<SearchReport>) -> SearchReport {
        let SearchSessionsJob {
            id,
            files,
            query,
            cancel,
        } = self;
        let started = std::time::Instant::now();
        let error = match crate::engine::view::search::Query::new(&query, false, None) {
            Ok(q) => {
                store::search::search(&files, &q, &cancel, |path, hits| {
                    report.say(SearchReport::File {
                        id,
                        path: path.to_path_buf(),
                        hits,
                    })
                });
                None
            }
            Err(e) => Some(e.into()),
        };
        SearchReport::Done {
            id,
            elapsed_ms: started.elapsed().as_millis() as u64,
            error,
        }
    }
}

impl Job for FindInSessionJob {
    type Output = FindReport;
    const NAME: &'static str = "find in session";
    fn run(self, report: Report<FindReport>) -> FindReport {
        let started = std::time::Instant::now();
        let error = find_in_session(self.id, &self.session, &self.query, &self.cancel, &report).err();
        FindReport::Done {
            id: self.id,
            elapsed_ms: started.elapsed().as_millis() as u64,
            error,
        }
    }
}

impl Job for WriteJob {
    type Output = WriteOutcome;
    const NAME: &'static str = "write";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<WriteOutcome>) -> WriteOutcome {
        let WriteJob {
            path,
            request,
            what,
            select,
            reread_on_refusal,
            built_from,
        } = self;
        let result = if built_from.prove_all() {
            store::write::apply(&path, &request)
        } else {
            Err(store::WriteError::IndexMismatch)
        };
        let result = result.map(|a| Written {
            session: Arc::new(a.session),
            applied: a.appended,
            prepared: a.prepared,
            what,
            select,
        });
        let mismatch = matches!(result, Err(store::WriteError::IndexMismatch));
        let now = (result.is_err() && (reread_on_refusal || mismatch))
            .then(|| store::load_session(&path).ok().map(Arc::new))
            .flatten();
        WriteOutcome { result, now }
    }
}

impl Job for BranchedJob {
    type Output = BranchedOutcome;
    const NAME: &'static str = "fork or clone";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<BranchedOutcome>) -> BranchedOutcome {
        BranchedOutcome {
            what: self.what,
            result: write_branched(&self.session, self.cut, &self.source),
            editor_text: self.editor_text,
        }
    }
}

impl Job for DeleteBranchJob {
    type Output = Result<(store::rewrite::Deleted, Arc<Session>), DeleteJobError>;
    const NAME: &'static str = "delete branch";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        delete_branch(&self.path, &self.session, &self.target)
    }
}

impl Job for ExportJob {
    type Output = Result<(PathBuf, usize), ExportError>;
    const NAME: &'static str = "export";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        export_document(&self.session, self.source.as_deref(), self.leaf, &self.out)
    }
}

impl Job for SummaryJob {
    type Output = SummaryReport;
    const NAME: &'static str = "summary";
    /// A model's summary waits on the network: its worker blocks on the runtime while the
    /// strategies run as tasks. The offline ones are worked out here.
    fn run(self, report: Report<SummaryReport>) -> SummaryReport {
        let SummaryJob {
            id,
            session,
            summarizer,
            kind,
            cancel,
        } = self;
        match (summarizer, kind) {
            (None, SummaryKind::Compaction(c)) => SummaryReport::StrategiesDone {
                id,
                finished: offline_strategies(&session, &c.plan, c.focus.as_deref(), &c.strategies),
            },
            (None, kind) => {
                let started = std::time::Instant::now();
                let summary = offline_summary(&session, &kind);
                SummaryReport::Done {
                    id,
                    wall_ms: started.elapsed().as_millis() as u64,
                    result: Ok(summary),
                }
            }
            (Some(m), SummaryKind::Compaction(c)) => {
                let work = compaction_by_model(id, session, Some(m), c, cancel, report);
                runner::block_on(work).unwrap_or_else(|e| SummaryReport::Done {
                    id,
                    wall_ms: 0,
                    result: Err(SummaryError::Runtime(e.to_string())),
                })
            }
            (Some(m), SummaryKind::Branch(b)) => {
                let work = branch_summary_by_model(id, session, *m, b, cancel, report);
                runner::block_on(work).unwrap_or_else(|e| SummaryReport::Done {
                    id,
                    wall_ms: 0,
                    result: Err(SummaryError::Runtime(e.to_string())),
                })
            }
        }
    }
}

impl Job for LoadJob {
    type Output = LoadReport;
    const NAME: &'static str = "load";
    /// Progress is said about every 2% (the loading frame's figure); then the session, then
    /// its leaf's gauge when asked. A panic in the parse is said as an error, not a loading
    /// frame left waiting.
    fn run(self, report: Report<LoadReport>) -> LoadReport {
        run_load(self, &report)
    }
}

/// Run `work` on the low-priority pool, or here when it cannot be made.
fn at_low_priority<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    match low_priority_pool() {
        Some(p) => p.install(work),
        None => work(),
    }
}

/// The compaction's strategies side by side, until done or cancelled.
async fn compaction_by_model(
    id: u64,
    session: Arc<Session>,
    summarizer: Option<Box<Summarizer>>,
    c: CompactionSummary,
    cancel: Arc<AtomicBool>,
    report: Report<SummaryReport>,
) -> SummaryReport {
    let CompactionSummary {
        plan,
        focus,
        thinking,
        strategies,
        params,
    } = c;
    let work = run_strategies(
        id,
        session,
        summarizer.map(Arc::from),
        plan,
        focus,
        thinking,
        strategies,
        params,
        report,
    );
    tokio::select! {
        () = work => {}
        () = cancelled(&cancel) => {}
    }
    SummaryReport::StrategiesDone { id, finished: vec![] }
}

/// A branch summary by the model, its text streaming into the dialog, until done or cancelled.
async fn branch_summary_by_model(
    id: u64,
    session: Arc<Session>,
    summarizer: Summarizer,
    b: BranchSummary,
    cancel: Arc<AtomicBool>,
    report: Report<SummaryReport>,
) -> SummaryReport {
    // The text as it streams, and each retry while the model is slow or down.
    // The tab says them, as the compaction's strategies do.
    let on_text = move |e: crate::llm::Event| match e {
        crate::llm::Event::Text(text) => report.say(SummaryReport::Chunk { id, text }),
        crate::llm::Event::Retry { attempt, wait, reason } => report.say(SummaryReport::StrategyProgress {
            id,
            tab: 0,
            progress: crate::llm::strategies::Progress::Retry { attempt, wait, reason },
        }),
    };
    let work = summarizer.branch(&session, &b.nav, b.focus.as_deref(), b.replace, on_text);
    let started = std::time::Instant::now();
    let result = tokio::select! {
        r = work => r.map_err(SummaryError::from),
        () = cancelled(&cancel) => Err(SummaryError::Cancelled),
    };
    SummaryReport::Done {
        id,
        wall_ms: started.elapsed().as_millis() as u64,
        result,
    }
}

/// Read the first session (see `LoadJob`'s `run`).
fn run_load(job: LoadJob, report: &Report<LoadReport>) -> LoadReport {
    let LoadJob {
        path,
        size,
        early,
        index,
        preview,
    } = job;
    let step = (size as usize / 50).max(1);
    let last = std::sync::atomic::AtomicUsize::new(0);
    let progress = |parsed: usize| {
        let before = last.load(Ordering::Relaxed);
        if parsed >= before + step
            && last
                .compare_exchange(before, parsed, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            report.say(LoadReport::Progress { parsed });
        }
    };
    let (result, index) = std::thread::scope(|scope| {
        let told = |used: &store::index::Used| {
            report.say(LoadReport::Via(used.clone()));
            if let (store::index::Used::Parsed(_), Some((filter, rows))) = (used, preview) {
                let path = &path;
                scope.spawn(move || {
                    report.say(LoadReport::Preview(store::files::leaf_path_preview(path, filter, rows)))
                });
            }
        };
        open_indexed(&path, index.as_ref(), Some(&progress), Some(&told))
    });
    let early = early.zip(result.as_ref().ok().cloned());
    let loaded = LoadReport::Loaded(Box::new(Opened { path, result, index }));
    let Some(((settings, registry), s)) = early.filter(|(_, s)| s.entries.len() > LARGE_SESSION) else {
        return loaded;
    };
    report.say(loaded);
    LoadReport::EarlySelection(super::selection::of_leaf(&s, &settings, &registry).map(Box::new))
}

/// How a session was opened through its index, and what a new index of it describes.
#[derive(Debug, Clone)]
pub struct Indexed {
    pub used: store::index::Used,
    pub source: store::index::Source,
}

/// The session at `path`, through its index when `index` is given; a parse that panics is an
/// error, not a crash.
fn open_indexed(
    path: &std::path::Path,
    index: Option<&store::index::Place>,
    progress: Option<&(dyn Fn(usize) + Sync)>,
    told: Option<&(dyn Fn(&store::index::Used) + Sync)>,
) -> (Result<Arc<Session>, store::OpenError>, Option<Indexed>) {
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store::index::open(path, index, progress, told)
    }));
    match read {
        Ok(Ok(o)) => (
            Ok(Arc::new(o.session)),
            index.map(|_| Indexed {
                used: o.used,
                source: o.source,
            }),
        ),
        Ok(Err(e)) => (Err(e), None),
        Err(_) => (
            Err(store::OpenError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other("the parse stopped on an internal error"),
            }),
            None,
        ),
    }
}

/// Delete the branch at `target` (the one rewrite), then read the file again.
fn delete_branch(
    path: &std::path::Path,
    session: &Session,
    target: &str,
) -> Result<(store::rewrite::Deleted, Arc<Session>), DeleteJobError> {
    let d = store::rewrite::delete_branch(path, &session.buf, target)?;
    let s = store::load_session(path).map_err(DeleteJobError::ReadAgain)?;
    Ok((d, Arc::new(s)))
}

/// Threads for counting nobody waits on (the selection's exact tokens, every entry's): at a
/// low priority, so neither a key press nor the terminal drawing the frame waits on them
/// (after a 1 GB session's first frame, its path's 86,000 messages kept both cores busy for
/// seconds). `None` if the threads cannot be made: the caller counts where it is.
fn low_priority_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
            .thread_name(|k| format!("bonsai-count-{k}"))
            .start_handler(|_| {
                // SAFETY: setpriority on this thread (0 = the calling thread on Linux) only
                // lowers its scheduling priority.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, 0, 10);
                }
            })
            .build()
            .ok()
    })
    .as_ref()
}

/// Every message of every entry counted exactly into `cache`, in chunks on a pool of low
/// priority threads (the UI thread keeps its own priority: a key press is not slowed), the
/// progress reported after each chunk.
fn count_everything(job: ExactAllJob, report: &Report<ExactAllReport>) -> ExactAllReport {
    let ExactAllJob {
        generation,
        session,
        encoding: enc,
        cache,
        cancel,
    } = job;
    let s = &*session;
    let started = std::time::Instant::now();
    let msgs: Vec<ContextMessage> = (0..s.entries.len())
        .flat_map(|i| crate::engine::view::context::intrinsic_messages(s, i))
        .collect();
    let total = msgs.len();
    let pool = low_priority_pool();
    const CHUNK: usize = 2048;
    let mut tokens = 0u64;
    let mut done = 0;
    let count = |chunk: &[ContextMessage]| {
        let refs: Vec<&ContextMessage> = chunk.iter().collect();
        cache.count_all(s, &refs, enc).iter().sum::<u64>()
    };
    for chunk in msgs.chunks(CHUNK) {
        if cancel.load(Ordering::Relaxed) {
            return ExactAllReport::Done {
                generation,
                tokens,
                messages: done,
                elapsed_ms: started.elapsed().as_millis() as u64,
                cancelled: true,
            };
        }
        tokens += match pool {
            Some(p) => p.install(|| count(chunk)),
            None => count(chunk),
        };
        done += chunk.len();
        report.say(ExactAllReport::Progress {
            generation,
            done,
            total,
        });
    }
    ExactAllReport::Done {
        generation,
        tokens,
        messages: total,
        elapsed_ms: started.elapsed().as_millis() as u64,
        cancelled: false,
    }
}

/// Find `query` in the session's bytes on every core; each piece's hits are reported as
/// entries (by the line each hit is on) as soon as the piece is done.
fn find_in_session(
    id: u64,
    session: &Session,
    query: &str,
    cancel: &AtomicBool,
    report: &Report<FindReport>,
) -> Result<(), store::search::SearchError> {
    let q = crate::engine::view::search::Query::new(query, false, None)?;
    store::search::search_bytes(&session.buf, &q, cancel, |hits| {
        let entries = hits
            .into_iter()
            .filter_map(|h| {
                let line = h.line as u32;
                let at = session.entries.partition_point(|e| e.line < line);
                session
                    .entries
                    .get(at)
                    .filter(|e| e.line == line)
                    .map(|_| (at, h.matches))
            })
            .collect();
        report.say(FindReport::Hits { id, hits: entries });
    })
}

/// Resolves once `cancel` is set.
async fn cancelled(cancel: &AtomicBool) {
    while !cancel.load(Ordering::Relaxed) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A compaction's strategies side by side, each a task of its own: each reports its progress
/// and its end as its tab's results, scored against the range (`engine::compaction::recall`). Dropping
/// the future aborts every task (and with them their calls).
#[allow(clippy::too_many_arguments)]
async fn run_strategies(
    id: u64,
    s: Arc<Session>,
    summarizer: Option<Arc<Summarizer>>,
    plan: Arc<crate::engine::compaction::cut::CompactionPlan>,
    focus: Option<String>,
    thinking: String,
    strategies: Vec<crate::engine::compaction::strategy::Strategy>,
    params: crate::engine::compaction::slices::SliceParams,
    report: Report<SummaryReport>,
) {
    let input = Arc::new(crate::engine::compaction::summary::SummaryInput::of_plan(&s, &plan));
    let range = Arc::new(crate::engine::compaction::recall::Range::of_input(&s, &plan, &input));
    let mut set = tokio::task::JoinSet::new();
    for (tab, st) in strategies.into_iter().enumerate() {
        let (s, summarizer, plan, focus, thinking, report, input, range) = (
            s.clone(),
            summarizer.clone(),
            plan.clone(),
            focus.clone(),
            thinking.clone(),
            report.clone(),
            input.clone(),
            range.clone(),
        );
        set.spawn(async move {
            let started = std::time::Instant::now();
            let on = |progress: crate::llm::strategies::Progress| {
                report.say(SummaryReport::StrategyProgress { id, tab, progress })
            };
            let r = crate::llm::strategies::run(
                summarizer.as_deref(),
                st,
                &s,
                &plan,
                &input,
                &params,
                focus.as_deref(),
                Some(&thinking),
                &on,
            )
            .await;
            let result = match r {
                Ok(o) => {
                    let usage = summarizer
                        .as_deref()
                        .filter(|_| o.calls > 0)
                        .map(|sm| o.usage.to_pi(&sm.model));
                    let cost = usage.as_ref().and_then(|u| u["cost"]["total"].as_f64()).unwrap_or(0.0);
                    let score = range.score(&o.text);
                    Ok(Box::new(StrategyResult {
                        summary: crate::engine::compaction::summary::Summary { text: o.text, usage },
                        calls: o.calls,
                        usage: o.usage,
                        cost,
                        wall_ms: o.wall.as_millis() as u64,
                        score,
                    }))
                }
                Err(e) => Err(StrategyFailed {
                    why: e.into(),
                    wall_ms: started.elapsed().as_millis() as u64,
                }),
            };
            report.say(SummaryReport::StrategyDone { id, tab, result });
        });
    }
    while set.join_next().await.is_some() {}
}

/// Strategies without a model, in one piece: the offline one is summarized and scored; a
/// model's says it has none.
fn offline_strategies(
    s: &Session,
    plan: &crate::engine::compaction::cut::CompactionPlan,
    focus: Option<&str>,
    strategies: &[crate::engine::compaction::strategy::Strategy],
) -> Vec<(usize, Result<Box<StrategyResult>, StrategyFailed>)> {
    let started = std::time::Instant::now();
    let input = crate::engine::compaction::summary::SummaryInput::of_plan(s, plan);
    let range = crate::engine::compaction::recall::Range::of_input(s, plan, &input);
    strategies
        .iter()
        .enumerate()
        .map(|(tab, st)| {
            if st.is_llm() {
                return (
                    tab,
                    Err(StrategyFailed {
                        why: StrategyError::NoModel,
                        wall_ms: 0,
                    }),
                );
            }
            let text = crate::engine::compaction::strategy::offline(s, plan, &input, focus);
            let score = range.score(&text);
            let r = StrategyResult {
                summary: crate::engine::compaction::summary::Summary { text, usage: None },
                calls: 0,
                usage: crate::llm::Usage::default(),
                cost: 0.0,
                wall_ms: started.elapsed().as_millis() as u64,
                score,
            };
            (tab, Ok(Box::new(r)))
        })
        .collect()
}

/// The offline summary (deterministic and instant next to a model's).
fn offline_summary(s: &Session, kind: &SummaryKind) -> crate::engine::compaction::summary::Summary {
    match kind {
        SummaryKind::Compaction(c) => {
            crate::engine::compaction::offline::compaction_summary(s, &c.plan, c.focus.as_deref())
        }
        SummaryKind::Branch(b) => crate::engine::edit::entries::offline_branch_summary(s, &b.nav, b.focus.as_deref()),
    }
}

/// Why the TUI's delete did not end with the session read again.
#[derive(Debug, thiserror::Error)]
pub enum DeleteJobError {
    #[error(transparent)]
    Delete(#[from] store::rewrite::DeleteError),
    /// The branch is deleted, but the file could not be read again.
    #[error("deleted, but reading the file again failed: {0}")]
    ReadAgain(store::OpenError),
}

/// Why the TUI's export wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{} exists: nothing written (type another name)", .0.display())]
    Exists(PathBuf),
    #[error(transparent)]
    Write(#[from] store::WriteError),
}

fn export_document(
    s: &Session,
    source: Option<&std::path::Path>,
    leaf: usize,
    out: &std::path::Path,
) -> Result<(PathBuf, usize), ExportError> {
    use crate::engine::export::{self, Scope};
    let scope = Scope::Path(leaf);
    let text = match export::format_for(out).unwrap_or("md") {
        "html" => export::html(s, scope).into_bytes(),
        "json" => export::json(s, scope),
        _ => export::markdown(s, scope).into_bytes(),
    };
    if out.exists() {
        return Err(ExportError::Exists(out.to_path_buf()));
    }
    store::write_document(out, &text, false, source.unwrap_or(std::path::Path::new("")))?;
    Ok((out.to_path_buf(), text.len()))
}

/// Pi's `/fork` or `/clone` file: the path to `cut`, written new (exclusive create, fsync)
/// beside `source` under Pi's file name.
fn write_branched(s: &Session, cut: Option<usize>, source: &std::path::Path) -> Result<PathBuf, store::WriteError> {
    let now = store::clock::now_ms();
    let sid = crate::engine::edit::entries::session_id(now, store::clock::entropy());
    let abs = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    let cwd = s.header.cwd.clone().unwrap_or_default();
    let header = crate::engine::edit::entries::session_header(&sid, &cwd, Some(&abs.to_string_lossy()), now);
    let lines = crate::engine::edit::entries::branched_session(s, cut, header, store::clock::entropy());
    let out = store::new_session_path(abs.parent().unwrap_or(std::path::Path::new(".")), &sid, now);
    store::write_new(&out, &lines, &abs)?;
    Ok(out)
}
