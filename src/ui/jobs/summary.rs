//! The summary jobs: a compaction's plan, the summary model and its key, the summaries.

use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::llm::summarize::Summarizer;
use crate::ui::runner::{self, Job, Report};
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

/// Pi's compaction plan at `leaf` (`c`: what is summarized, where the cut falls, or
/// why there is nothing to compact).
pub struct PlanCompactionJob {
    pub id: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub settings: crate::engine::compaction::cut::CompactionSettings,
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

/// Pi's compaction plan at `leaf`, or why there is nothing to compact.
#[derive(Debug)]
pub struct CompactionPlanned {
    pub id: u64,
    pub leaf: usize,
    pub plan: Result<Box<crate::engine::compaction::cut::CompactionPlan>, crate::engine::compaction::cut::NoCompaction>,
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
    /// What the summary lost of the range (`engine::compaction::audit`): its headline, and the
    /// first lost items.
    pub audit: (String, Vec<String>),
}

/// The lost items a strategy's tab lists.
const LOST_SHOWN: usize = 6;

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
    let leaf = plan.projection.path.last().copied().unwrap_or(0);
    let before = Arc::new(crate::engine::compaction::audit::Before::of_plan(&s, &plan, leaf).owned());
    let mut set = tokio::task::JoinSet::new();
    for (tab, st) in strategies.into_iter().enumerate() {
        let before = before.clone();
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
                    let a = before.audit(&o.text);
                    Ok(Box::new(StrategyResult {
                        audit: (a.headline(), a.lost_lines(LOST_SHOWN)),
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
    let leaf = plan.projection.path.last().copied().unwrap_or(0);
    let before = crate::engine::compaction::audit::Before::of_plan(s, plan, leaf);
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
            let a = before.audit(&text);
            let r = StrategyResult {
                audit: (a.headline(), a.lost_lines(LOST_SHOWN)),
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
