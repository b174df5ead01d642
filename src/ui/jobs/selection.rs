//! The selection's jobs: its gauge and cut, its exact count, the live policy's figure.

use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::engine::view::context::ContextMessage;
use crate::engine::view::tokens::{Encoding, TokenCache};
use crate::ui::component::Effect;
use crate::ui::context_view::{self};
use crate::ui::runner::{Answers, Job, Report, at_low_priority};
use crate::ui::selection::{self, SelectionInfo};
use std::sync::Arc;

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

/// The live policy's figure at the selection (what the Pi package would send), for the
/// gauge's mark.
pub struct LiveFigureJob {
    pub generation: u64,
    pub session: Arc<Session>,
    pub leaf: usize,
    pub params: context_view::LiveParams,
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

/// The live policy's figure at the selection.
#[derive(Debug)]
pub struct LiveFigure {
    pub generation: u64,
    pub report: Box<crate::engine::live::LiveReport>,
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

impl Job for SelectionJob {
    type Output = SelectionReport;
    const NAME: &'static str = "selection";
    const LATEST_WINS: bool = true;
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
    const LATEST_WINS: bool = true;
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
    const LATEST_WINS: bool = true;
    /// Counted in chunks, stopping when its session is left: a 1 GB session's path took
    /// seconds of both cores after a small session had been opened in its place.
    fn run(self, report: Report<ExactTokens>) -> ExactTokens {
        let ExactTokensJob {
            generation,
            session,
            messages,
            encoding,
            cache,
        } = self;
        let refs: Vec<&ContextMessage> = messages.iter().collect();
        let mut per_message = Vec::with_capacity(refs.len());
        for chunk in refs.chunks(2048) {
            if report.left() {
                break;
            }
            per_message.extend(at_low_priority(|| cache.count_all(&session, chunk, encoding)));
        }
        ExactTokens {
            generation,
            total: per_message.iter().sum(),
            per_message,
        }
    }
}

impl Job for LiveFigureJob {
    type Output = LiveFigure;
    const NAME: &'static str = "live figure";
    const LATEST_WINS: bool = true;
    fn run(self, _: Report<LiveFigure>) -> LiveFigure {
        let at = at_low_priority(|| self.params.at_leaf(&self.session, self.leaf));
        LiveFigure {
            generation: self.generation,
            report: Box::new(at.answer.report),
        }
    }
}

/// The selection owns its jobs: their outputs go to it, not through the app.
impl Answers<SelectionJob> for selection::SelectionState {
    type Effects = Vec<Effect>;
    fn answer(&mut self, r: SelectionReport) -> Vec<Effect> {
        match r {
            SelectionReport::Gauge { generation, info } => self.take_gauge(generation, *info),
            SelectionReport::Cut(c) => self.take_cut(c.generation, *c.cut),
        }
    }
}

impl Answers<CutJob> for selection::SelectionState {
    type Effects = Vec<Effect>;
    fn answer(&mut self, c: CutReady) -> Vec<Effect> {
        self.take_cut(c.generation, *c.cut)
    }
}

impl Answers<ExactTokensJob> for selection::SelectionState {
    type Effects = Vec<Effect>;
    fn answer(&mut self, r: ExactTokens) -> Vec<Effect> {
        self.take_exact(r.generation, r.total, r.per_message);
        vec![]
    }
}

impl Answers<LiveFigureJob> for selection::SelectionState {
    type Effects = Vec<Effect>;
    fn answer(&mut self, r: LiveFigure) -> Vec<Effect> {
        self.take_live(r.generation, r.report);
        vec![]
    }
}
