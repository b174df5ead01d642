//! Slow work, off the key path: each job runs on a worker (disk and CPU on tokio's blocking
//! pool, model calls as tasks on the one runtime) and reports back through the event loop as
//! `App::job_done`. Tests run them in place (`run_now`).

use super::context_view::{self, ContextData};
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

pub enum Job {
    /// Gauge and cut for the selected entry (see `selection`).
    Selection(SelectionJob),
    /// The cut of a selection whose gauge is shown (the first load's, after the first frame).
    Cut(CutJob),
    /// Exact token counts of the messages at the selection.
    ExactTokens(ExactTokensJob),
    /// "What the model sees" at the selection (and the marked entry): the session's context,
    /// or with `live` what bonsai's Pi package sends (its settings, window and reserve).
    ContextView(ContextViewJob),
    /// The live policy's figure at the selection (what the Pi package would send), for the
    /// gauge's mark.
    LiveFigure(LiveFigureJob),
    /// The open session's bill replayed under the live policy and without it (`bonsai bill`):
    /// the live context view's bottom line. A job of its own: on a 100 MB session it takes
    /// seconds, and the view's rows come first.
    LiveBill(LiveBillJob),
    /// A pruning plan for the selection (see `engine::edit::prune`).
    Prune(PruneJob),
    /// Pi's compaction plan at `leaf` (`c`: what is summarized, where the cut falls, or
    /// why there is nothing to compact).
    PlanCompaction(PlanCompactionJob),
    /// What fills the context at the selection.
    Fills(FillsJob),
    /// Every session's model calls for the usage view (and the open session's compactions).
    Usage(UsageJob),
    /// The file grew (Pi appended): the session with the new lines.
    Reload(ReloadJob),
    /// Open another session (the picker), through its index where it has one.
    Open(OpenJob),
    /// Write the index of a session just opened (in the background, after its first frame;
    /// a quit does not wait for it).
    SaveIndex(SaveIndexJob),
    /// The session bonsai was started on, read with its progress reported (`LoadProgress`,
    /// then `Loaded`). `early`: a big session's gauge is worked out here right after the
    /// parse, beside the app building its tree, so the first frame has it
    /// (`EarlySelection`; its cut is left to a job after the first frame, `Job::Cut`).
    Load(LoadJob),
    /// Find the model and its API key for a summary: Pi's `auth.json`, the environment and
    /// the settings are read here, not in the update. `wanted`: bonsai's summary model
    /// setting; `session_model`: the session's own (provider, id).
    ResolveSummarizer(ResolveSummarizerJob),
    /// Small file work (the trash, old backups, pins, a listed session's name).
    Chore(ChoreJob),
    /// List sessions (the picker; `all`: every project), with bonsai's pins.
    List(ListJob),
    /// Exact counts of every message of every entry (the tree's right column), in the
    /// background at a low priority, reporting progress.
    ExactAll(ExactAllJob),
    /// Search inside `files` (the picker), each file's hits reported as it is done.
    SearchSessions(SearchSessionsJob),
    /// Find text inside the open session (its bytes in memory), hits reported as they come.
    FindInSession(FindInSessionJob),
    /// Append, decided again on the file as it is (see `engine::edit::plan`).
    Write(WriteJob),
    /// A new session file with the path up to `cut` (Pi's `/fork` and `/clone`), beside
    /// `source`.
    Branched(BranchedJob),
    /// Delete the branch at `target` from the file `session` was read from (refused if the
    /// file is no longer exactly those bytes), then read the new file.
    DeleteBranch(DeleteBranchJob),
    /// The path to `leaf` as a document at `out` (a new file; the format from its extension).
    Export(ExportJob),
    /// A summary: a compaction's strategies (each reporting as `Strategy*` results), or a
    /// branch's, a model's (streamed back as `SummaryChunk`s) or, without a summarizer, the
    /// offline one.
    Summary(SummaryJob),
}

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

/// The session bonsai was started on, read with its progress reported (`LoadProgress`,
/// then `Loaded`). `early`: a big session's gauge is worked out here right after the
/// parse, beside the app building its tree, so the first frame has it
/// (`EarlySelection`; its cut is left to a job after the first frame, `Job::Cut`).
pub struct LoadJob {
    pub path: PathBuf,
    pub size: u64,
    pub early: Option<(Settings, Arc<Registry>)>,
    pub index: Option<store::index::Place>,
    /// A big file's leaf rows for the loading frame (the tree's filter, how many rows),
    /// read from its end beside a whole parse (`LeafPreview`); an open from the index is
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

/// A summary: a compaction's strategies (each reporting as `Strategy*` results), or a
/// branch's, a model's (streamed back as `SummaryChunk`s) or, without a summarizer, the
/// offline one.
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

#[derive(Debug)]
pub enum JobResult {
    /// A chore done (`Job::Chore`): what to say, the pins after a toggle, whether to list again.
    ChoreDone(super::chores::ChoreDone),
    /// The summary model found for request `id` (none: no model or no key; the summary is
    /// written offline).
    SummarizerResolved {
        id: u64,
        summarizer: Option<Box<Summarizer>>,
    },
    Selection {
        generation: u64,
        info: Box<SelectionInfo>,
    },
    /// The cut of the selection whose gauge came in `Selection` (of the same generation).
    SelectionCut {
        generation: u64,
        cut: Box<selection::SelectionCut>,
    },
    ExactTokens {
        generation: u64,
        total: u64,
        per_message: Vec<u64>,
    },
    ContextView(Box<ContextData>),
    /// A context view's count under way: messages counted of those to count.
    ContextProgress {
        generation: u64,
        done: usize,
        total: usize,
    },
    LiveFigure {
        generation: u64,
        report: Box<crate::engine::live::LiveReport>,
    },
    LiveBill {
        generation: u64,
        line: Option<String>,
    },
    Prune {
        generation: u64,
        plan: Box<crate::engine::edit::prune::Plan>,
    },
    CompactionPlanned {
        id: u64,
        leaf: usize,
        plan: Result<Box<crate::engine::compaction::cut::CompactionPlan>, crate::engine::compaction::cut::NoCompaction>,
    },
    Fills(Box<super::fills::FillsData>),
    Reloaded {
        result: Result<Arc<Session>, store::OpenError>,
        /// The file was not the shown session plus appended lines (rewritten, truncated).
        rewritten: bool,
        /// The file's last change was bonsai's own (`bonsai restore`, another window).
        by_bonsai: bool,
    },
    Opened {
        path: PathBuf,
        result: Result<Arc<Session>, store::OpenError>,
        index: Option<Indexed>,
    },
    /// Bytes of the first session parsed so far.
    LoadProgress {
        parsed: usize,
    },
    /// How the first session is being read: from its index, or parsed whole and why.
    LoadVia(store::index::Used),
    /// The first session read (or why not).
    Loaded {
        path: PathBuf,
        result: Result<Arc<Session>, store::OpenError>,
        index: Option<Indexed>,
    },
    /// A session's index was written (its size), or why not.
    IndexSaved(Result<u64, String>),
    /// The gauge of the first session's leaf, worked out by the load (`None`: it has none,
    /// or the load had nothing to work on).
    EarlySelection(Option<Box<(SelectionInfo, selection::CutToCome)>>),
    /// The leaf's newest rows for the loading frame (`None`: they could not be read).
    LeafPreview(Option<crate::engine::view::tree_view::TailPreview>),
    Usage(Box<UsageData>),
    Listed {
        all: bool,
        sessions: Vec<SessionInfo>,
        /// Pi's sessions in every project, counted when this project has none.
        everywhere: Option<usize>,
        /// The pinned sessions (bonsai's own file).
        pins: Vec<PathBuf>,
        /// What is in bonsai's trash, with the bytes each holds.
        trash: Vec<(store::trash::Trashed, u64)>,
        /// When the listing was read (the picker lists again two seconds later).
        at: std::time::Instant,
        /// bonsai's backups beside the listed sessions.
        leftovers: Vec<store::backups::Backup>,
        /// The documents bonsai exported, still as it wrote them.
        exports: Vec<store::exports::Export>,
    },
    /// The whole-session count: messages counted of all.
    ExactProgress {
        generation: u64,
        done: usize,
        total: usize,
    },
    /// The whole-session count ended (or was cancelled).
    ExactAllDone {
        generation: u64,
        tokens: u64,
        messages: usize,
        elapsed_ms: u64,
        cancelled: bool,
    },
    /// One file of search `id` is done.
    SearchFile {
        id: u64,
        path: PathBuf,
        hits: Result<Vec<crate::engine::view::search::Hit>, store::search::SearchError>,
    },
    /// Hits of find `id`: (entry, matches in it), one piece of the session at a time.
    FindHits {
        id: u64,
        hits: Vec<(usize, usize)>,
    },
    /// Find `id` ended (or was stopped).
    FindDone {
        id: u64,
        elapsed_ms: u64,
        error: Option<store::search::SearchError>,
    },
    /// Search `id` ended (every file, or stopped).
    SearchDone {
        id: u64,
        elapsed_ms: u64,
        error: Option<store::search::SearchError>,
    },
    Written {
        result: Result<Written, store::WriteError>,
        /// After a refused write: the session as the file holds it now (read by the job), so
        /// a dialog given back shows what changed.
        now: Option<Arc<Session>>,
    },
    Branched {
        what: &'static str,
        result: Result<PathBuf, store::WriteError>,
        editor_text: Option<String>,
    },
    Deleted(Result<(store::rewrite::Deleted, Arc<Session>), DeleteJobError>),
    Exported(Result<(PathBuf, usize), ExportError>),
    SummaryChunk {
        id: u64,
        text: String,
    },
    SummaryDone {
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
    /// Every strategy of summary job `id` finished; `finished` holds the tabs that had not
    /// reported yet (the offline group runs in one piece).
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

impl Job {
    /// Jobs that write a file: a quit waits for them (a cut write would leave a temp file
    /// or an unfinished rename), while everything else is left to die with the process.
    pub fn writes_files(&self) -> bool {
        matches!(
            self,
            Job::Write(WriteJob { .. })
                | Job::Branched(BranchedJob { .. })
                | Job::DeleteBranch(DeleteBranchJob { .. })
                | Job::Export(ExportJob { .. })
                | Job::List(ListJob { .. })
                | Job::Chore(ChoreJob { .. })
        )
    }

    /// Model calls and searches (which report as they go) are tasks on the runtime;
    /// everything else (the offline summaries too) blocks a worker.
    pub fn is_async(&self) -> bool {
        matches!(
            self,
            Job::Summary(SummaryJob {
                summarizer: Some(_),
                ..
            }) | Job::SearchSessions(SearchSessionsJob { .. })
                | Job::FindInSession(FindInSessionJob { .. })
                | Job::ExactAll(ExactAllJob { .. })
        )
    }

    /// Run a blocking job to its result.
    pub fn run_blocking(self) -> JobResult {
        self.run_blocking_with(&|_| {})
    }

    /// Run a blocking job to its result, reporting progress (the context view's count).
    pub fn run_blocking_with(self, report: &(dyn Fn(JobResult) + Sync)) -> JobResult {
        match self {
            Job::Chore(ChoreJob { chore, agent_dir }) => {
                JobResult::ChoreDone(super::chores::run(chore, &agent_dir, store::clock::now_ms()))
            }
            Job::ResolveSummarizer(r) => resolve_summarizer(r),
            Job::Selection(r) => run_selection(r, report),
            Job::Cut(CutJob {
                generation,
                session,
                to_come,
            }) => JobResult::SelectionCut {
                generation,
                cut: Box::new(to_come.cut(&session, false)),
            },
            Job::ExactTokens(r) => run_exact_tokens(r),
            Job::ContextView(r) => run_context_view(r, report),
            Job::LiveFigure(r) => run_live_figure(r),
            Job::LiveBill(LiveBillJob {
                generation,
                session,
                params,
            }) => {
                let line = || context_view::bill_line(&params.bill(&session));
                JobResult::LiveBill {
                    generation,
                    line: match low_priority_pool() {
                        Some(p) => p.install(line),
                        None => line(),
                    },
                }
            }
            Job::Prune(PruneJob {
                generation,
                session,
                leaf,
                policy,
                settings,
                force,
                zone,
            }) => JobResult::Prune {
                generation,
                plan: Box::new(crate::engine::edit::prune::plan(
                    &session, leaf, policy, &settings, force, zone,
                )),
            },
            Job::PlanCompaction(PlanCompactionJob {
                id,
                session,
                leaf,
                settings,
            }) => JobResult::CompactionPlanned {
                id,
                leaf,
                plan: crate::engine::edit::entries::plan_compaction(&session, leaf, settings).map(Box::new),
            },
            Job::Fills(FillsJob {
                generation,
                session,
                leaf,
                encoding,
                cache,
            }) => JobResult::Fills(Box::new(super::fills::build(
                &session, generation, leaf, encoding, &cache,
            ))),
            Job::Reload(ReloadJob { session, path }) => reload(&session, &path),
            Job::Open(OpenJob { path, index }) => {
                let (result, index) = open_indexed(&path, index.as_ref(), None, None);
                JobResult::Opened { path, result, index }
            }
            Job::SaveIndex(SaveIndexJob { place, source, session }) => {
                JobResult::IndexSaved(store::index::save(&place, &source, &session).map_err(|e| e.to_string()))
            }
            Job::Load(r) => run_load(r, report),
            Job::Usage(r) => run_usage(r),
            Job::List(r) => run_list(r),
            Job::Write(r) => run_write(r),
            Job::Branched(BranchedJob {
                session,
                cut,
                source,
                what,
                editor_text,
            }) => JobResult::Branched {
                what,
                result: write_branched(&session, cut, &source),
                editor_text,
            },
            Job::DeleteBranch(DeleteBranchJob { path, session, target }) => {
                JobResult::Deleted(delete_branch(&path, &session, &target))
            }
            Job::Export(ExportJob {
                session,
                source,
                leaf,
                out,
            }) => JobResult::Exported(export_document(&session, source.as_deref(), leaf, &out)),
            Job::Summary(r) => run_summary_here(r),
            Job::FindInSession(r) => run_find_in_session(r, report),
            Job::SearchSessions(SearchSessionsJob { id, .. }) => JobResult::SearchDone {
                id,
                elapsed_ms: 0,
                error: Some(store::search::SearchError::Stopped("a search needs the runtime".into())),
            },
            Job::ExactAll(r) => run_exact_all(r),
        }
    }

    /// Run a model summary, reporting streamed text through `report`. Ends early (with
    /// `Cancelled`) when the cancel flag is set. A search reports each file as it is done.
    pub async fn run_async(self, report: impl Fn(JobResult) + Send + Sync + 'static) -> JobResult {
        match self {
            Job::ExactAll(j) => count_everything_async(j, report).await,
            Job::FindInSession(j) => find_in_session_async(j, report).await,
            Job::SearchSessions(j) => search_sessions_async(j, report).await,
            Job::Summary(SummaryJob {
                id,
                session,
                summarizer,
                kind: SummaryKind::Compaction(c),
                cancel,
            }) => compaction_async(id, session, summarizer, c, cancel, report).await,
            Job::Summary(SummaryJob {
                id,
                session,
                summarizer: Some(m),
                kind: SummaryKind::Branch(b),
                cancel,
            }) => branch_summary_async(id, session, *m, b, cancel, report).await,
            j => j.run_blocking(),
        }
    }
}

/// Every entry's exact count on a blocking worker (cancelled: reported as such).
async fn count_everything_async(job: ExactAllJob, report: impl Fn(JobResult) + Send + Sync + 'static) -> JobResult {
    let ExactAllJob {
        generation,
        session,
        encoding,
        cache,
        cancel,
    } = job;
    let r =
        tokio::task::spawn_blocking(move || count_everything(generation, &session, encoding, &cache, &cancel, &report))
            .await;
    r.unwrap_or(JobResult::ExactAllDone {
        generation,
        tokens: 0,
        messages: 0,
        elapsed_ms: 0,
        cancelled: true,
    })
}

/// Find in the open session on a blocking worker, hits reported as they come.
async fn find_in_session_async(job: FindInSessionJob, report: impl Fn(JobResult) + Send + Sync + 'static) -> JobResult {
    let FindInSessionJob {
        id,
        session,
        query,
        cancel,
    } = job;
    let started = std::time::Instant::now();
    let report = Arc::new(report);
    let r = tokio::task::spawn_blocking(move || find_in_session(id, &session, &query, &cancel, &*report)).await;
    JobResult::FindDone {
        id,
        elapsed_ms: started.elapsed().as_millis() as u64,
        error: match r {
            Ok(r) => r.err(),
            Err(e) => Some(store::search::SearchError::Stopped(e.to_string())),
        },
    }
}

/// Search the listed sessions on a blocking worker, each file reported when done.
async fn search_sessions_async(
    job: SearchSessionsJob,
    report: impl Fn(JobResult) + Send + Sync + 'static,
) -> JobResult {
    let SearchSessionsJob {
        id,
        files,
        query,
        cancel,
    } = job;
    let started = std::time::Instant::now();
    let q = match crate::engine::view::search::Query::new(&query, false, None) {
        Ok(q) => q,
        Err(e) => {
            return JobResult::SearchDone {
                id,
                elapsed_ms: 0,
                error: Some(e.into()),
            };
        }
    };
    let report = Arc::new(report);
    let r = tokio::task::spawn_blocking(move || {
        store::search::search(&files, &q, &cancel, |path, hits| {
            report(JobResult::SearchFile {
                id,
                path: path.to_path_buf(),
                hits,
            })
        });
    })
    .await;
    JobResult::SearchDone {
        id,
        elapsed_ms: started.elapsed().as_millis() as u64,
        error: r.err().map(|e| store::search::SearchError::Stopped(e.to_string())),
    }
}

/// The compaction's strategies side by side, until done or cancelled.
async fn compaction_async(
    id: u64,
    session: Arc<Session>,
    summarizer: Option<Box<Summarizer>>,
    c: CompactionSummary,
    cancel: Arc<AtomicBool>,
    report: impl Fn(JobResult) + Send + Sync + 'static,
) -> JobResult {
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
        Arc::new(report),
    );
    tokio::select! {
        () = work => {}
        () = cancelled(&cancel) => {}
    }
    JobResult::StrategiesDone { id, finished: vec![] }
}

/// A branch summary by the model, its text streaming into the dialog, until done or cancelled.
async fn branch_summary_async(
    id: u64,
    session: Arc<Session>,
    summarizer: Summarizer,
    b: BranchSummary,
    cancel: Arc<AtomicBool>,
    report: impl Fn(JobResult) + Send + Sync + 'static,
) -> JobResult {
    // The text as it streams, and each retry while the model is slow or down (said in
    // the tab, as the compaction's strategies do).
    let on_text = move |e: crate::llm::Event| match e {
        crate::llm::Event::Text(text) => report(JobResult::SummaryChunk { id, text }),
        crate::llm::Event::Retry { attempt, wait, reason } => report(JobResult::StrategyProgress {
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
    JobResult::SummaryDone {
        id,
        wall_ms: started.elapsed().as_millis() as u64,
        result,
    }
}

/// Read the first session, its progress reported about every 2% (the loading frame's
/// figure), then its leaf's gauge when asked. A panic in the parse is said as an error, not a
/// loading frame left waiting.
fn run_load(job: LoadJob, report: &(dyn Fn(JobResult) + Sync)) -> JobResult {
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
            report(JobResult::LoadProgress { parsed });
        }
    };
    let (result, index) = std::thread::scope(|scope| {
        let told = |used: &store::index::Used| {
            report(JobResult::LoadVia(used.clone()));
            if let (store::index::Used::Parsed(_), Some((filter, rows))) = (used, preview) {
                let path = &path;
                scope.spawn(move || {
                    report(JobResult::LeafPreview(store::files::leaf_path_preview(
                        path, filter, rows,
                    )))
                });
            }
        };
        open_indexed(&path, index.as_ref(), Some(&progress), Some(&told))
    });
    let early = early.zip(result.as_ref().ok().cloned());
    let loaded = JobResult::Loaded { path, result, index };
    let Some(((settings, registry), s)) = early.filter(|(_, s)| s.entries.len() > LARGE_SESSION) else {
        return loaded;
    };
    report(loaded);
    JobResult::EarlySelection(super::selection::of_leaf(&s, &settings, &registry).map(Box::new))
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

/// Find the summary model and its key (reads Pi's auth.json and the environment).
fn resolve_summarizer(job: ResolveSummarizerJob) -> JobResult {
    let ResolveSummarizerJob {
        id,
        registry,
        agent_dir,
        wanted,
        session_model,
    } = job;
    JobResult::SummarizerResolved {
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

/// The session read again after it changed: whether it was rewritten, whether bonsai wrote it.
fn reload(session: &Session, path: &std::path::Path) -> JobResult {
    let r = store::files::reload_shown(session, path);
    let rewritten = r.as_ref().is_ok_and(|(_, w)| *w);
    let by_bonsai = std::fs::metadata(path).is_ok_and(|m| store::own_writes::is_ours(path, &m));
    JobResult::Reloaded {
        result: r.map(|(s, _)| Arc::new(s)),
        rewritten,
        by_bonsai,
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

/// A summary run here: the offline ones (a model's needs the runtime).
fn run_summary_here(job: SummaryJob) -> JobResult {
    let SummaryJob {
        id,
        session,
        summarizer,
        kind,
        ..
    } = job;
    match (summarizer, kind) {
        (None, SummaryKind::Compaction(c)) => JobResult::StrategiesDone {
            id,
            finished: offline_strategies(&session, &c.plan, c.focus.as_deref(), &c.strategies),
        },
        (None, kind) => {
            let started = std::time::Instant::now();
            let summary = offline_summary(&session, &kind);
            JobResult::SummaryDone {
                id,
                wall_ms: started.elapsed().as_millis() as u64,
                result: Ok(summary),
            }
        }
        (Some(_), _) => JobResult::SummaryDone {
            id,
            wall_ms: 0,
            result: Err(SummaryError::Runtime("a model call needs the runtime".into())),
        },
    }
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
fn count_everything(
    generation: u64,
    s: &Session,
    enc: Encoding,
    cache: &TokenCache,
    cancel: &AtomicBool,
    report: &(dyn Fn(JobResult) + Send + Sync),
) -> JobResult {
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
            return JobResult::ExactAllDone {
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
        report(JobResult::ExactProgress {
            generation,
            done,
            total,
        });
    }
    JobResult::ExactAllDone {
        generation,
        tokens,
        messages: total,
        elapsed_ms: started.elapsed().as_millis() as u64,
        cancelled: false,
    }
}

/// Resolves once `cancel` is set.
/// Find `query` in the session's bytes on every core; each piece's hits are reported as
/// entries (by the line each hit is on) as soon as the piece is done.
fn find_in_session(
    id: u64,
    session: &Session,
    query: &str,
    cancel: &AtomicBool,
    report: &(dyn Fn(JobResult) + Sync),
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
        report(JobResult::FindHits { id, hits: entries });
    })
}

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
    report: Arc<dyn Fn(JobResult) + Send + Sync>,
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
            let on =
                |progress: crate::llm::strategies::Progress| report(JobResult::StrategyProgress { id, tab, progress });
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
            report(JobResult::StrategyDone { id, tab, result });
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

/// How many jobs that write files are under way (see `Job::writes_files`).
static WRITES_UNDER_WAY: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts a writing job from its start to its end, however it ends.
struct WriteUnderWay;

impl WriteUnderWay {
    fn start() -> Self {
        WRITES_UNDER_WAY.fetch_add(1, Ordering::SeqCst);
        WriteUnderWay
    }
}

impl Drop for WriteUnderWay {
    fn drop(&mut self) {
        WRITES_UNDER_WAY.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Wait, up to `limit`, until no job is writing a file; true if none is. On quit: the
/// runtime is then shut down without waiting for the rest (a parse, a count, a search), which
/// could take seconds on a big session.
pub fn wait_for_writes(limit: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    while WRITES_UNDER_WAY.load(Ordering::SeqCst) > 0 {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    true
}

/// Start `job` on the runtime; its results arrive on `tx`.
pub fn spawn(job: Job, handle: &tokio::runtime::Handle, tx: tokio::sync::mpsc::UnboundedSender<JobResult>) {
    // Counted from here, not from when a worker takes it, so a quit right after a key that
    // started a write still waits for it.
    let under_way = job.writes_files().then(WriteUnderWay::start);
    if job.is_async() {
        let progress = tx.clone();
        handle.spawn(async move {
            let r = job
                .run_async(move |r| {
                    let _ = progress.send(r);
                })
                .await;
            let _ = tx.send(r);
            drop(under_way);
        });
    } else {
        handle.spawn_blocking(move || {
            let progress = std::sync::Mutex::new(tx.clone());
            let r = job.run_blocking_with(&|r| {
                if let Ok(p) = progress.lock() {
                    let _ = p.send(r);
                }
            });
            let _ = tx.send(r);
            drop(under_way);
        });
    }
}

/// Run `job` here and now, with its progress (tests; no terminal, no event loop).
pub fn run_now(job: Job) -> Vec<JobResult> {
    if !job.is_async() {
        let progress = std::sync::Mutex::new(Vec::new());
        let done = job.run_blocking_with(&|r| {
            if let Ok(mut v) = progress.lock() {
                v.push(r);
            }
        });
        let mut all = progress.into_inner().unwrap_or_default();
        all.push(done);
        return all;
    }
    let progress = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = progress.clone();
    let done = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(job.run_async(move |r| {
            if let Ok(mut v) = sink.lock() {
                v.push(r);
            }
        })),
        Err(e) => JobResult::SummaryDone {
            id: 0,
            wall_ms: 0,
            result: Err(SummaryError::Runtime(e.to_string())),
        },
    };
    let mut out = progress.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
    out.push(done);
    out
}

/// A selection's gauge, reported as soon as it is known, then its cut (the result).
fn run_selection(j: SelectionJob, report: &(dyn Fn(JobResult) + Sync)) -> JobResult {
    let SelectionJob {
        generation,
        session,
        leaf,
        settings,
        registry,
        keep_recent,
        want_classes,
    } = j;
    let (info, to_come) = selection::gauge_of(&session, leaf, &settings, &registry, Some(keep_recent));
    report(JobResult::Selection {
        generation,
        info: Box::new(info),
    });
    JobResult::SelectionCut {
        generation,
        cut: Box::new(to_come.cut(&session, want_classes)),
    }
}

fn run_exact_tokens(j: ExactTokensJob) -> JobResult {
    let ExactTokensJob {
        generation,
        session,
        messages,
        encoding,
        cache,
    } = j;
    let refs: Vec<&ContextMessage> = messages.iter().collect();
    let count = || cache.count_all(&session, &refs, encoding);
    let per_message = match low_priority_pool() {
        Some(p) => p.install(count),
        None => count(),
    };
    JobResult::ExactTokens {
        generation,
        total: per_message.iter().sum(),
        per_message,
    }
}

fn run_context_view(j: ContextViewJob, report: &(dyn Fn(JobResult) + Sync)) -> JobResult {
    let ContextViewJob {
        generation,
        session,
        leaf,
        mark,
        encoding,
        cache,
        live,
    } = j;
    // At a low priority, so keys and frames never wait on the count.
    let build = || {
        context_view::build_with_progress(
            &session,
            generation,
            leaf,
            mark,
            encoding,
            &cache,
            live.as_ref(),
            &|done, total| {
                report(JobResult::ContextProgress {
                    generation,
                    done,
                    total,
                })
            },
        )
    };
    let data = match low_priority_pool() {
        Some(p) => p.install(build),
        None => build(),
    };
    JobResult::ContextView(Box::new(data))
}

fn run_live_figure(j: LiveFigureJob) -> JobResult {
    let LiveFigureJob {
        generation,
        session,
        leaf,
        params,
    } = j;
    let at = || params.at_leaf(&session, leaf);
    let at = match low_priority_pool() {
        Some(p) => p.install(at),
        None => at(),
    };
    JobResult::LiveFigure {
        generation,
        report: Box::new(at.answer.report),
    }
}

fn run_usage(j: UsageJob) -> JobResult {
    let UsageJob {
        generation,
        cwd,
        settings,
        agent_dir,
        session,
    } = j;
    let t0 = std::time::Instant::now();
    let mut paths = store::sessions::session_folders(&cwd, &settings, true);
    // The open session counts even when it lives outside Pi's folders.
    if let Some((p, _)) = &session
        && !paths.iter().any(|d| p.starts_with(d))
    {
        paths.push(p.clone());
    }
    let (sessions, skipped) = store::usage::read_sessions_cached(&agent_dir, &paths);
    JobResult::Usage(Box::new(UsageData {
        generation,
        sessions,
        skipped: skipped.len(),
        tz: store::usage::time_zone(None).unwrap_or(jiff::tz::TimeZone::UTC),
        models: Arc::new(store::config::load_registry(&agent_dir)),
        now_ms: store::clock::now_ms(),
        session,
        elapsed_ms: t0.elapsed().as_millis() as u64,
    }))
}

fn run_list(j: ListJob) -> JobResult {
    let ListJob {
        cwd,
        settings,
        all,
        agent_dir,
    } = j;
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
    JobResult::Listed {
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

fn run_write(j: WriteJob) -> JobResult {
    let WriteJob {
        path,
        request,
        what,
        select,
        reread_on_refusal,
        built_from,
    } = j;
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
    JobResult::Written { result, now }
}

fn run_find_in_session(j: FindInSessionJob, report: &(dyn Fn(JobResult) + Sync)) -> JobResult {
    let FindInSessionJob {
        id,
        session,
        query,
        cancel,
    } = j;
    let started = std::time::Instant::now();
    let error = find_in_session(id, &session, &query, &cancel, &|r| report(r)).err();
    JobResult::FindDone {
        id,
        elapsed_ms: started.elapsed().as_millis() as u64,
        error,
    }
}

fn run_exact_all(j: ExactAllJob) -> JobResult {
    let ExactAllJob {
        generation,
        session,
        encoding,
        cache,
        cancel,
    } = j;
    count_everything(generation, &session, encoding, &cache, &cancel, &|_| {})
}
