//! Background work in flight and what waits for it: the job queue, the summary being
//! written, the write under way and the dialog parked beside it.

use crate::engine::compaction::strategy::Strategy;
use crate::ui::dialog::{BranchedFile, Dialog, SummaryFor};
use crate::ui::jobs::SummaryKind;
use crate::ui::request::{PlannedCompaction, Seen};
use crate::ui::runner::Queued;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Background work in flight, for the receiver `R` of the jobs' outputs (the app).
pub struct Pending<R> {
    /// A summary dialog whose write is under way: given back if the write is refused.
    pub(crate) parked: Option<Dialog>,
    /// The fork or clone bonsai wrote last in this run (`u` removes it while untouched).
    pub(crate) last_branched: Option<BranchedFile>,
    /// The id the next job gets.
    pub(crate) next_id: u64,
    pub queue: Vec<Queued<R>>,
    pub reload: bool,
    /// The session is being parsed again because a line failed its index's check.
    pub reparsing: bool,
    /// The summary being written: its job id and cancel flag.
    pub summary: Option<(u64, Arc<AtomicBool>)>,
    /// Writes not yet reported back.
    pub writes: usize,
    /// Index jobs not yet reported back (queued after the first frame, or running).
    pub index_saves: usize,
    /// A quit waits for them since this instant (the tick's clock).
    pub quit_waits: Option<std::time::Instant>,
    /// The summary model found for the strategies dialog open now: the strategies chosen
    /// there run on it, so it is looked up once per compaction.
    pub(crate) summarizer: Option<Box<crate::llm::summarize::Summarizer>>,
    /// The summary model being looked for, and what waits for it.
    pub(crate) resolving: Option<(u64, AfterResolve)>,
    /// The leaf's selection job held while the first load works out the same gauge.
    pub early: Option<Queued<R>>,
    /// Jobs that wait until the session's first whole frame is drawn (writing its index).
    pub after_frame: Vec<Queued<R>>,
    /// The compaction being planned for `c` (`PlanCompactionJob`), and what the user saw
    /// when `c` was pressed.
    pub planning: Option<(u64, crate::ui::dialog::Seen)>,
    /// The session every queued job is for: its results are dropped once another session
    /// is opened, and its waiting jobs never start.
    pub doc: crate::ui::runner::DocToken,
}

impl<R> Default for Pending<R> {
    fn default() -> Self {
        Pending {
            parked: None,
            last_branched: None,
            next_id: 0,
            queue: Vec::new(),
            reload: false,
            reparsing: false,
            summary: None,
            writes: 0,
            index_saves: 0,
            quit_waits: None,
            summarizer: None,
            resolving: None,
            early: None,
            after_frame: Vec::new(),
            planning: None,
            doc: Default::default(),
        }
    }
}

/// What waits for the summary model to be found (`ResolveSummarizerJob`).
pub(crate) enum AfterResolve {
    /// The compaction's instructions were given: choose the strategies (a model is there)
    /// or compact offline.
    Compact {
        at: PlannedCompaction,
        focus: Option<String>,
        seen: Seen,
    },
    /// Compact by these strategies.
    Strategies {
        at: PlannedCompaction,
        focus: Option<String>,
        strategies: Vec<Strategy>,
        seen: Seen,
    },
    /// Summarize the branch left (the model found for its leaf).
    BranchSummary {
        kind: Box<SummaryKind>,
        purpose: SummaryFor,
        seen: Seen,
    },
}
