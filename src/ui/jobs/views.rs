//! The overlays' jobs: what the model sees, the live bill, what fills the context, the
//! prune plan, usage, and every entry's exact count.

use crate::engine::load::session::Session;
use crate::engine::view::context::ContextMessage;
use crate::engine::view::tokens::{Encoding, TokenCache};
use crate::store;
use crate::ui::component::Effect;
use crate::ui::context_view::{self, ContextData};
use crate::ui::runner::{self, Answers, Job, Report, at_low_priority};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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

/// Exact counts of every message of every entry (the tree's right column), in the
/// background at a low priority, reporting progress.
pub struct ExactAllJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub encoding: Encoding,
    pub cache: Arc<TokenCache>,
    pub cancel: Arc<AtomicBool>,
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

impl Job for ContextViewJob {
    type Output = ContextReport;
    const NAME: &'static str = "context view";
    const LATEST_WINS: bool = true;
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
    const LATEST_WINS: bool = true;
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

/// The audit of one summary (what it lost of the entries it replaced).
pub struct AuditJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub entry: usize,
}

impl Job for AuditJob {
    type Output = Option<Box<crate::ui::audit_view::AuditData>>;
    const NAME: &'static str = "audit";
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        crate::ui::audit_view::AuditData::build(&self.session, self.generation, self.entry).map(Box::new)
    }
}

impl Job for FillsJob {
    type Output = Box<crate::ui::fills::FillsData>;
    const NAME: &'static str = "fills";
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        Box::new(crate::ui::fills::build(
            &self.session,
            self.generation,
            self.leaf,
            self.encoding,
            &self.cache,
        ))
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
    let pool = runner::low_priority_pool();
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

/// The context view owns its live bill.
impl Answers<LiveBillJob> for context_view::ContextState {
    type Effects = Vec<Effect>;
    fn answer(&mut self, r: LiveBill) -> Vec<Effect> {
        if Some(r.generation as usize) == self.bill_for {
            self.bill = r.line;
        }
        vec![]
    }
}

/// The audit view owns its audit.
impl Answers<AuditJob> for crate::ui::audit_view::AuditState {
    type Effects = Vec<Effect>;
    fn answer(&mut self, data: Option<Box<crate::ui::audit_view::AuditData>>) -> Vec<Effect> {
        match data {
            Some(d) if d.generation == self.generation => {
                self.data = Some(d);
                vec![]
            }
            Some(_) => vec![],
            None => vec![Effect::NotAuditable],
        }
    }
}

/// The fills view owns its figures.
impl Answers<FillsJob> for crate::ui::fills::FillsState {
    type Effects = Vec<Effect>;
    fn answer(&mut self, data: Box<crate::ui::fills::FillsData>) -> Vec<Effect> {
        if data.generation == self.generation {
            self.data = Some(data);
        }
        vec![]
    }
}
