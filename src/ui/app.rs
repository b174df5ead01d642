//! The TUI's state and its one update function. No terminal here: `draw` (ui.rs) renders
//! this state, and the event loop turns keys (through the key table), mouse, time and finished
//! jobs into [`Action`]s for [`App::update`], the only place the state changes.
//!
//! `update` dispatches by mode to the handlers in the child modules: `browse` (the tree, the
//! detail pane, search, the context view, the picker, mouse), `dialogs` (each dialog's keys),
//! `writes` (opening the dialogs before a write, summaries, the writes themselves) and `events` (jobs reporting back, the tick, a new
//! version of the session). What draw needs is made here too (`frame`, the detail document),
//! so drawing only reads.

mod audit;
mod branches;
mod browse;
mod dialogs;
mod effects;
mod events;
mod find;
mod first_load;
pub(crate) use super::find::Find;
mod housekeeping;
mod pending;
pub use pending::Pending;
mod prune;
mod resume;
pub mod status;
mod summaries;
mod usage;
mod writes;

use super::action::Action;
use super::component::Effect;
pub use super::component::Terminal;
pub use super::context_view::{ContextKey, ContextState};
use super::detail;
pub use super::detail::DetailState;
use super::dialog::Dialog;
pub use super::fills::FillsState;
use super::keymap::{self, Mode};
use super::layout::{self, Areas, Shown};
use super::picker::Picker;
pub use super::prune_list::PlanList;
pub use super::prune_panel::{POLICIES, PruneState};
use super::runner::{self, Answers, CarriesOut, Done, Job, Queued, Reaches, Receives};
pub use super::selection::SelectionState;

pub use super::tree_pane::{FrameRow, TreeFrame};

use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::engine::view::tokens::TokenCache;
use crate::engine::view::tree::Tree;
use crate::engine::view::tree_view::{FilterMode, Row, RowText, TreeView};
use crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The open session and what is built from it once per load.
pub struct Doc {
    pub session: Arc<Session>,
    pub path: Option<PathBuf>,
    pub tree: Tree,
    /// Why nothing may be written (the bundled demo), if so.
    pub read_only: Option<&'static str>,
    /// The context edits in effect at Pi's leaf (target → edit entry), marked in the tree.
    pub edits: HashMap<usize, usize>,
    /// bonsai's title for a session without a name (made once per load: it reads from the end
    /// to the newest summary).
    pub made_title: Option<String>,
}

impl Doc {
    pub fn new(session: Arc<Session>, path: Option<PathBuf>, read_only: Option<&'static str>) -> Doc {
        // Each walks the whole session (the leaf's path, every entry): side by side.
        let (edits, tree) = rayon::join(
            || {
                session
                    .leaf()
                    .map(|l| crate::engine::edit::prune::edits_changing(&session, l))
                    .unwrap_or_default()
            },
            || Tree::build(&session),
        );
        let made_title = match session.session_name() {
            Some(_) => None,
            None => crate::engine::view::title::of_session(&session),
        };
        Doc {
            tree,
            session,
            path,
            read_only,
            edits,
            made_title,
        }
    }
}

pub use super::screen::{Focus, Overlay, Screen};

/// What `$EDITOR` is editing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditorFor {
    Summary,
    /// The text an entry gets in the model's context.
    Replacement {
        target: usize,
    },
}

/// Why an old session file is read-only (Pi rewrites v1 and v2 files when it opens them).
const OLD_VERSION: &str = "read-only: an old (v1/v2) session file; bonsai writes only to version 3 files: `bonsai migrate FILE` converts it first (it keeps a .bak), or open it in Pi once";

/// Messages the log keeps.
const MESSAGES_KEPT: usize = 200;

/// The app: the open session, what the components hold, the work in flight, and what it
/// runs with. Each part is a struct of its own; the update routes to them.
pub struct App {
    pub(crate) doc: Doc,
    /// The session bonsai was started on, still being read (the loading frame).
    pub(crate) first_load: Option<super::loading::FirstLoad>,
    /// Why the run ends (the first session could not be read).
    pub(crate) fatal: Option<crate::store::OpenError>,
    /// The status line, the banner and every message said.
    pub log: StatusLog,
    /// The tree pane: Pi's `/tree` view, the rows on screen and their text.
    pub(crate) tree: TreePart,
    /// What was read from outside when bonsai started, and the clock at the last tick.
    pub(crate) outside: Outside,
    /// What the app runs with: settings, models, where indexes go, what tests turn off.
    pub setup: Setup,
    pub(crate) screen: Screen,
    pub selection: SelectionState,
    /// The state of each component that is not the tree.
    pub parts: Parts,
    /// Background work in flight, and what waits for it.
    pub pending: Pending<App>,
    /// Terminal work for the event loop.
    pub(crate) effects: Vec<Terminal>,
    /// Exact token counts: the cache and the whole-session count.
    pub(crate) exact: Exact,
    /// What is known of the open session's file since it was read.
    pub(crate) file: FileState,
    pub(crate) quit: bool,
}

/// The status line, the banner and the log of messages (M).
#[derive(Default)]
pub struct StatusLog {
    /// Every status message of this run with its time (UTC), newest last.
    pub(crate) messages: Vec<(String, String)>,
    /// The status last put in the log.
    pub(crate) logged: Option<String>,
    /// The one-line banner (demo notice, malformed lines).
    pub(crate) notice: Option<String>,
    pub status: Option<String>,
}

/// The tree pane's state.
pub struct TreePart {
    pub(crate) view: TreeView,
    pub(crate) frame: TreeFrame,
    pub(crate) row_cache: HashMap<usize, RowText>,
}

/// What the app runs with, set when it starts (tests change some).
pub struct Setup {
    pub(crate) settings: Settings,
    pub(crate) registry: Arc<Registry>,
    /// bonsai's Pi package is in use: the gauge marks what it sends.
    pub(crate) live_in_use: bool,
    /// Where session indexes are kept (`None`: off; tests set one when they want it).
    pub(crate) index: Option<crate::store::index::Place>,
    /// Count every entry's exact tokens on its own when a session opens (up to
    /// `AUTO_EXACT_BYTES`); tests turn it off to pin what their snapshots show.
    pub(crate) auto_exact: bool,
    /// Never call a model (tests: no test may touch the network).
    pub(crate) force_offline: bool,
    /// Tests put a summarizer here; otherwise it is resolved from Pi's keys when needed.
    pub summarizer_override: Option<crate::llm::summarize::Summarizer>,
    /// The summary strategies chosen last (the chooser starts from them).
    pub(crate) strategy_choice: Vec<crate::engine::compaction::strategy::Strategy>,
}

/// The state of the components other than the tree pane: each its own.
pub struct Parts {
    pub(crate) detail: DetailState,
    pub(crate) context: ContextState,
    pub(crate) prune: PruneState,
    pub(crate) fills: FillsState,
    pub(crate) audit: crate::ui::audit_view::AuditState,
    pub(crate) editor_for: EditorFor,
    pub(crate) picker: Option<Picker>,
    /// The usage view, and the overlay it was opened from (closing goes back there).
    pub(crate) usage: Option<(crate::ui::usage_view::UsageView, Overlay)>,
    /// A tree search being typed.
    pub(crate) search: Option<crate::ui::tree_search::TreeSearch>,
    /// Find inside the session (Ctrl+F), its hits and the one shown.
    pub(crate) find: Option<Find>,
    pub dialog: Option<Dialog>,
}

/// Exact token counts.
#[derive(Default)]
pub struct Exact {
    pub(crate) cache: Arc<TokenCache>,
    /// The exact count of every entry (the tree's right column), running or done.
    pub(crate) all: ExactAll,
}

/// What is known of the open session's file since it was read.
#[derive(Default)]
pub struct FileState {
    /// Pi appended while bonsai was open.
    pub(crate) live: bool,
    /// The file is gone from its folder (said once in the status line).
    pub(crate) gone: bool,
    /// Its inode and time, and its length, at the last tick (a change that keeps the length
    /// shows only there).
    pub(crate) seen: Option<(crate::ui::action::FileStamp, u64)>,
}

/// Sessions up to this size get every entry's exact count on their own when they open (a
/// 100 MB session takes a few seconds of both cores, at a low priority); larger ones on `S`.
pub const AUTO_EXACT_BYTES: usize = 256 << 20;

/// The whole-session exact count.
#[derive(Default)]
pub struct ExactAll {
    pub generation: u64,
    pub cancel: Option<Arc<AtomicBool>>,
    /// Messages counted and in all, while it runs.
    pub progress: Option<(usize, usize)>,
    /// Asked for (S): the end is said in the status line (an automatic count ends quietly).
    pub announce: bool,
}

/// The parts of the app that own jobs, as the runner reaches them to hand them their
/// outputs (`runner::Answers`). A part that is gone (its view closed) gets nothing.
impl Reaches<SelectionState> for App {
    fn part(&mut self) -> Option<&mut SelectionState> {
        Some(&mut self.selection)
    }
}

impl Reaches<ContextState> for App {
    fn part(&mut self) -> Option<&mut ContextState> {
        Some(&mut self.parts.context)
    }
}

impl Reaches<FillsState> for App {
    fn part(&mut self) -> Option<&mut FillsState> {
        Some(&mut self.parts.fills)
    }
}

impl Reaches<crate::ui::audit_view::AuditState> for App {
    fn part(&mut self) -> Option<&mut crate::ui::audit_view::AuditState> {
        Some(&mut self.parts.audit)
    }
}

impl Reaches<crate::ui::usage_view::UsageView> for App {
    fn part(&mut self) -> Option<&mut crate::ui::usage_view::UsageView> {
        self.parts.usage.as_mut().map(|(u, _)| u)
    }
}

impl Reaches<crate::ui::picker::SessionSearch> for App {
    fn part(&mut self) -> Option<&mut crate::ui::picker::SessionSearch> {
        self.parts.picker.as_mut().and_then(|p| p.search.as_mut())
    }
}

impl Reaches<Find> for App {
    fn part(&mut self) -> Option<&mut Find> {
        self.parts.find.as_mut()
    }
}

/// What a part answers, carried out as the effects of a key are.
impl CarriesOut<Vec<Effect>> for App {
    fn carry_out(&mut self, effects: Vec<Effect>) {
        self.apply(effects);
    }
}

pub use super::jobs::LARGE_SESSION;

pub use super::outside::Outside;

impl App {
    pub fn new(session: Session, path: Option<PathBuf>, settings: Settings, registry: Registry) -> App {
        App::with_session(Arc::new(session), path, settings, registry)
    }

    /// The app on `session`, with what it needs from outside read now.
    pub fn with_session(session: Arc<Session>, path: Option<PathBuf>, settings: Settings, registry: Registry) -> App {
        App::with_outside(session, path, settings, registry, Outside::read(), true)
    }

    /// The "Pi may be running" rule of a rewrite, as the confirm says it: not for the file Pi
    /// waits on while bonsai runs inside it (Pi writes nothing until bonsai exits).
    pub(super) fn recent_write_rule(&self, path: Option<&std::path::Path>) -> Option<String> {
        if path.is_some() && path == self.outside.pi_session.as_deref() {
            return None;
        }
        Some("Refused if the file was written in the last 10 s (Pi may be running).".into())
    }

    /// What the app reads from outside, as [`Outside`] holds it now (for the session opened next).
    pub(super) fn outside(&self) -> Outside {
        // The tree's home is the view's (it travels with the view across reloads).
        Outside {
            tree_home: self.tree.view.home.clone(),
            ..self.outside.clone()
        }
    }

    /// The app on `session`, built on what was read from outside (`outside`); `auto_exact`:
    /// every entry's exact count starts by itself (on files up to `AUTO_EXACT_BYTES`).
    pub fn with_outside(
        session: Arc<Session>,
        path: Option<PathBuf>,
        settings: Settings,
        registry: Registry,
        outside: Outside,
        auto_exact: bool,
    ) -> App {
        let filter = FilterMode::parse(settings.tree_filter_mode()).unwrap_or_default();
        let zones = settings.gauge_zones();
        // Said when the session opens (the status), not after something was typed.
        let read_only = if path.is_none() {
            Some("the demo session is read-only; open a Pi session to write")
        } else if session.header.version < 3.0 {
            Some(OLD_VERSION)
        } else {
            None
        };
        let pruning_enabled = settings.context_pruning_enabled();
        let doc = Doc::new(session, path, read_only);
        let mut view = TreeView::new(&doc.session, &doc.tree, doc.session.leaf(), filter, outside.now_ms);
        // Tool paths under the home folder read as Pi's /tree shows them.
        view.home = outside.tree_home.clone();
        let live_in_use = settings.live_package_in_use() || outside.pi_session.is_some();
        let mut app = App {
            doc,
            first_load: None,
            fatal: None,
            log: StatusLog {
                status: (read_only == Some(OLD_VERSION)).then(|| OLD_VERSION.to_string()),
                ..Default::default()
            },
            tree: TreePart {
                view,
                frame: TreeFrame::default(),
                row_cache: HashMap::new(),
            },
            setup: Setup {
                settings,
                registry: Arc::new(registry),
                live_in_use,
                index: None,
                auto_exact,
                force_offline: false,
                summarizer_override: None,
                strategy_choice: vec![crate::engine::compaction::strategy::Strategy::SingleShot],
            },
            screen: Screen::new(Rect::new(0, 0, 120, 40), zones),
            selection: SelectionState::default(),
            parts: Parts {
                detail: DetailState::default(),
                context: ContextState::default(),
                prune: PruneState {
                    pruning_enabled,
                    ..Default::default()
                },
                fills: FillsState::default(),
                audit: Default::default(),
                editor_for: EditorFor::Summary,
                picker: None,
                usage: None,
                search: None,
                find: None,
                dialog: None,
            },
            pending: Pending::default(),
            effects: vec![],
            exact: Exact::default(),
            file: FileState::default(),
            quit: false,
            outside,
        };
        // Tests never touch the user's indexes: they set a place of their own.
        if !cfg!(test) {
            app.setup.index = Some(crate::store::index::Place::in_agent(
                &app.outside.agent_dir,
                &app.setup.settings,
            ))
            .filter(|p| p.limit > 0);
        }
        app.selection.keep_recent = app.keep_recent_setting();
        app.selection_changed();
        app.auto_exact_all();
        app.refresh();
        app
    }

    pub fn session(&self) -> &Arc<Session> {
        &self.doc.session
    }

    /// Count every entry's exact tokens in the background (what is counted already stays).
    pub(crate) fn start_exact_all(&mut self) {
        if let Some(c) = self.exact.all.cancel.take() {
            c.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.exact.all.generation += 1;
        let cancel = Arc::new(AtomicBool::new(false));
        self.exact.all.cancel = Some(cancel.clone());
        self.exact.all.progress = Some((0, 0));
        self.exact.all.announce = false;
        self.start(crate::ui::jobs::ExactAllJob {
            generation: self.exact.all.generation,
            session: self.doc.session.clone(),
            encoding: self.selection_encoding(),
            cache: self.exact.cache.clone(),
            cancel,
        });
    }

    /// On opening (or a new version of) a session: count it all when it is small enough.
    pub(crate) fn auto_exact_all(&mut self) {
        if self.setup.auto_exact && self.doc.session.buf.len() <= AUTO_EXACT_BYTES {
            self.start_exact_all();
        }
    }

    pub fn selected(&self) -> Option<usize> {
        self.tree.view.selected_entry()
    }

    /// The selection taken as a leaf: the selected entry, or, when only entries without
    /// messages follow it on the way to the file's last entry (labels, context edits, bonsai's
    /// records and markers, which the tree hides), that last entry, so what they do counts
    /// (the gauge and a plan see the edits; a compaction goes under them, not beside them).
    pub fn selected_leaf(&self) -> Option<usize> {
        let sel = self.selected()?;
        let s = &self.doc.session;
        let Some(last) = s.leaf() else { return Some(sel) };
        let mut cur = Some(last);
        // Bounded: a parent cycle in a damaged file must not hang the key press.
        for _ in 0..s.entries.len() {
            let Some(i) = cur else { break };
            if i == sel {
                return Some(last);
            }
            if !crate::engine::view::context::intrinsic_messages(s, i).is_empty() {
                return Some(sel);
            }
            cur = s.parent_of(i);
        }
        Some(sel)
    }

    /// What has the keyboard.
    pub fn mode(&self) -> Mode {
        if let Some(d) = &self.parts.dialog {
            return d.mode();
        }
        match self.screen.overlay {
            Overlay::Help(_) | Overlay::Messages => return Mode::Help,
            Overlay::PrunePlan => return Mode::PrunePlan,
            Overlay::Picker => {
                use super::picker::PickerFocus;
                return match self.parts.picker.as_ref().map(|p| p.focus) {
                    Some(PickerFocus::Filter) => Mode::PickerFilter,
                    Some(PickerFocus::Query) => Mode::PickerQuery,
                    Some(PickerFocus::Hits) => Mode::PickerHits,
                    _ => Mode::Picker,
                };
            }
            Overlay::Context => return Mode::Context,
            Overlay::Fills => return Mode::Fills,
            Overlay::Audit => return Mode::Audit,
            Overlay::Usage => return Mode::Usage,
            Overlay::None => {}
        }
        if self.parts.find.as_ref().is_some_and(|f| f.editor.is_some()) {
            Mode::Find
        } else if self.parts.search.is_some() {
            Mode::Search
        } else if self.screen.focus == Focus::Detail && self.screen.show_detail {
            Mode::Detail
        } else if self.screen.prune_preview {
            Mode::Prune
        } else if self.screen.cut_preview {
            Mode::CutPreview
        } else {
            Mode::Tree
        }
    }

    /// The keys the hint bar offers now (the mode's; a dialog may leave some out).
    pub fn hints(&self) -> Vec<(String, &'static str)> {
        match &self.parts.dialog {
            Some(d) => d.hints(),
            None => keymap::hints(self.mode()),
        }
    }

    /// Where things are on screen now.
    pub fn areas(&self) -> Areas {
        layout::areas(
            self.screen.size,
            Shown {
                banner: self.log.notice.is_some(),
                status_lines: crate::ui::status_line::lines(
                    self.status_header(),
                    self.log.status.as_deref(),
                    self.screen.size.width,
                )
                .len() as u16,
                detail: self.screen.show_detail,
                cut_preview: self.screen.cut_preview || self.screen.prune_preview,
            },
        )
    }

    /// Rows a page moves (Pi's maxVisibleLines: what the tree pane shows).
    pub fn page(&self) -> usize {
        (self.areas().tree.height as usize).max(5)
    }

    /// What a key means now: the open dialog's reading of it, else the key table's for the
    /// mode (in a text input, an unbound key edits the text; in the help, any key closes it).
    pub fn action_for_key(&self, key: &KeyEvent) -> Option<Action> {
        if let Some(d) = &self.parts.dialog {
            return d.on_key(key);
        }
        let mode = self.mode();
        keymap::action_for(mode, key).or(match mode {
            m if m.takes_text() => Some(Action::Edit(*key)),
            Mode::Help => Some(Action::Close),
            _ => None,
        })
    }

    /// A key, through the key table. Returns whether the screen needs a redraw.
    pub fn handle_key(&mut self, key: KeyEvent) -> bool {
        match self.action_for_key(&key) {
            Some(a) => self.update(a),
            None => false,
        }
    }

    /// The one place the state changes on an action. Returns whether the screen needs a
    /// redraw.
    pub fn update(&mut self, action: Action) -> bool {
        let redraw = self.update_state(action);
        self.log_status();
        redraw
    }

    /// A job reported back (its progress or its end): always a redraw.
    pub fn job_done(&mut self, d: Done<App>) -> bool {
        // Queued for a session left since: its figure is not this session's.
        if !d.is_for(&self.pending.doc) {
            return false;
        }
        d.deliver(self);
        self.refresh();
        self.log_status();
        true
    }

    /// An output of job `J` taken as if it had come from the runner (tests, and jobs run in
    /// place).
    pub fn report<J: Job>(&mut self, output: J::Output) -> bool
    where
        App: Receives<J>,
    {
        self.receive(output);
        self.refresh();
        self.log_status();
        true
    }

    /// Queue a job; the event loop starts it and its outputs come back to `Receives<J>`.
    pub(crate) fn start<J: Job>(&mut self, job: J)
    where
        App: Receives<J>,
    {
        self.pending.queue.push(Queued::new(job));
    }

    /// Run a job here and take its outputs at once: small sessions, where it is instant.
    pub(crate) fn run_in_place<J: Job>(&mut self, job: J)
    where
        App: Receives<J>,
    {
        for output in runner::run_here(job) {
            self.receive(output);
        }
    }

    /// Queue a job that the part `C` owns: its outputs go to `C`, and the app carries out
    /// what `C` answers.
    pub(crate) fn start_for<C, J: Job>(&mut self, job: J)
    where
        C: Answers<J, Effects = Vec<Effect>>,
        App: Reaches<C>,
    {
        self.pending.queue.push(Queued::to::<J, C>(job));
    }

    /// [`Self::run_in_place`] for a job the part `C` owns.
    pub(crate) fn run_in_place_for<C, J: Job>(&mut self, job: J)
    where
        C: Answers<J, Effects = Vec<Effect>>,
        App: Reaches<C>,
    {
        for output in runner::run_here(job) {
            self.answer_by::<C, J>(output);
        }
    }

    /// An output of job `J` handed to its part `C` as if it had come from the runner (tests).
    pub fn report_to<C, J: Job>(&mut self, output: J::Output) -> bool
    where
        C: Answers<J, Effects = Vec<Effect>>,
        App: Reaches<C>,
    {
        self.answer_by::<C, J>(output);
        self.refresh();
        self.log_status();
        true
    }

    fn answer_by<C, J: Job>(&mut self, output: J::Output)
    where
        C: Answers<J, Effects = Vec<Effect>>,
        App: Reaches<C>,
    {
        if let Some(part) = <App as Reaches<C>>::part(self) {
            let effects = part.answer(output);
            self.apply(effects);
        }
    }

    /// Every message said lands in the log (M), whole, with its time.
    fn log_status(&mut self) {
        if self.log.status.is_some() && self.log.status != self.log.logged {
            self.log.logged = self.log.status.clone();
            let time = crate::engine::load::js::iso_from_ms(self.outside.now_ms);
            let hms = time.get(11..19).unwrap_or("").to_string();
            self.log
                .messages
                .push((hms, self.log.status.clone().unwrap_or_default()));
            if self.log.messages.len() > MESSAGES_KEPT {
                self.log.messages.remove(0);
            }
        }
    }

    fn update_state(&mut self, action: Action) -> bool {
        // Quitting, waiting for the session's index: any key quits at once.
        if self.pending.quit_waits.is_some() && !matches!(action, Action::Tick(_) | Action::Resize { .. }) {
            self.quit = true;
            return true;
        }
        match action {
            Action::Resize { width, height } => {
                self.screen.size = Rect::new(0, 0, width, height);
                self.refresh();
                true
            }
            Action::Tick(seen) => self.on_tick(seen),
            Action::EditorClosed(text) => {
                self.on_editor_closed(text);
                true
            }
            Action::PiExited(said) => {
                self.pi_exited(said);
                true
            }
            Action::SelectEntry(r) => {
                self.select_entry_ref(&r);
                self.refresh();
                true
            }
            Action::Click { col, row } => {
                let r = self.on_click(col, row);
                self.refresh();
                r
            }
            Action::Wheel { down, col, row } => {
                let r = self.on_wheel(down, col, row);
                self.refresh();
                r
            }
            action => {
                self.log.status = None;
                let before = self.selected();
                let handled = match self.mode() {
                    Mode::Tree | Mode::CutPreview | Mode::Prune | Mode::Detail => self.on_browse(action),
                    Mode::Search => self.on_search(action),
                    Mode::Find => self.on_find_input(action),
                    Mode::Context => self.on_context(action),
                    Mode::Fills => self.on_fills(action),
                    Mode::Audit => self.on_audit(action),
                    Mode::Usage => self.on_usage(action),
                    Mode::PrunePlan => self.on_plan_list(action),
                    Mode::Help => self.on_help(action),
                    Mode::Instructions | Mode::Strategies | Mode::Streaming | Mode::SummaryPreview => {
                        self.on_summary_dialog(action)
                    }
                    Mode::Picker | Mode::PickerFilter | Mode::PickerQuery | Mode::PickerHits => self.on_picker(action),
                    _ => self.on_dialog(action),
                };
                if self.selected() != before {
                    self.selection_changed();
                }
                self.refresh();
                handled
            }
        }
    }

    /// Run queued jobs here until none is left (tests; small sessions need no event loop).
    pub fn run_jobs_now(&mut self) {
        while !self.pending.queue.is_empty() {
            for job in std::mem::take(&mut self.pending.queue) {
                for d in runner::run_now(job) {
                    self.job_done(d);
                }
            }
        }
    }

    /// The jobs to start (the event loop takes them).
    pub fn take_jobs(&mut self) -> Vec<Queued<App>> {
        let doc = &self.pending.doc;
        std::mem::take(&mut self.pending.queue)
            .into_iter()
            .map(|j| j.for_doc(doc))
            .collect()
    }

    /// The jobs that waited for the session's first whole frame, once it is drawn (the
    /// event loop asks after each frame): none while the session loads or its gauge is
    /// still being worked out by the load.
    pub fn take_after_frame(&mut self) -> Vec<Queued<App>> {
        if self.is_loading() || self.pending.early.is_some() {
            return Vec::new();
        }
        let doc = &self.pending.doc;
        std::mem::take(&mut self.pending.after_frame)
            .into_iter()
            .map(|j| j.for_doc(doc))
            .collect()
    }

    /// Keys that arrived together: the work for the frame (its rows, the detail with its
    /// highlighting) is done once after the last of them rather than after each.
    pub fn hold_refresh(&mut self) {
        self.screen.refresh_held.get_or_insert(false);
    }

    /// The end of [`Self::hold_refresh`]: the owed refresh, if any.
    pub fn release_refresh(&mut self) {
        if self.screen.refresh_held.take() == Some(true) {
            self.refresh();
        }
    }

    /// Something for the event loop to do with the terminal is waiting.
    pub fn has_effects(&self) -> bool {
        !self.effects.is_empty()
    }

    pub fn take_effects(&mut self) -> Vec<Terminal> {
        std::mem::take(&mut self.effects)
    }

    fn next_job_id(&mut self) -> u64 {
        self.pending.next_id += 1;
        self.pending.next_id
    }

    /// keepRecentTokens as Pi's settings give it for the session's model.
    fn keep_recent_setting(&self) -> u64 {
        super::selection::keep_recent_for(&self.doc.session, &self.setup.settings)
    }

    /// Recompute what depends on the selected entry (as a leaf): gauge, cut. On large sessions
    /// this walks a long path, so it runs as a job and the frame for the key press draws at
    /// once (the gauge follows when the job reports).
    pub fn selection_changed(&mut self) {
        self.parts.detail.scroll = 0;
        self.selection.generation += 1;
        self.selection.exact = None;
        let Some(leaf) = self.selected_leaf() else {
            self.selection.gauge = None;
            self.selection.cut = None;
            self.selection.cut_classes.clear();
            return;
        };
        let job = crate::ui::jobs::SelectionJob {
            generation: self.selection.generation,
            session: self.doc.session.clone(),
            leaf,
            settings: self.setup.settings.clone(),
            registry: self.setup.registry.clone(),
            keep_recent: self.selection.keep_recent,
            want_classes: self.screen.cut_preview,
        };
        if let Some(g) = &mut self.selection.gauge {
            g.stale = true;
        }
        if self.doc.session.entries.len() > LARGE_SESSION {
            self.start_for::<SelectionState, _>(job);
        } else {
            self.run_in_place_for::<SelectionState, _>(job);
        }
        if self.screen.overlay == Overlay::Context {
            self.request_context();
        }
        if self.screen.prune_preview {
            self.request_plan();
        }
    }

    /// The tokenizer for exact counts: the selection's model's, o200k when unknown.
    pub(super) fn selection_encoding(&self) -> crate::engine::view::tokens::Encoding {
        self.selection
            .gauge
            .as_ref()
            .and_then(|g| g.model.as_deref())
            .and_then(|m| m.split_once('/'))
            .map(|(p, m)| crate::engine::view::tokens::Encoding::for_model(Some(p), Some(m)))
            .unwrap_or(crate::engine::view::tokens::Encoding::O200k)
    }

    /// Count "what the model sees" for the selection (and the mark) in a job.
    fn request_context(&mut self) {
        let Some(leaf) = self.selected_leaf() else { return };
        self.parts.context.generation += 1;
        let encoding = self.selection_encoding();
        let key = ContextKey {
            leaf,
            mark: self.parts.context.mark,
            encoding: encoding.name(),
            live: self.parts.context.live,
            len: self.doc.session.buf.len(),
        };
        if self.parts.context.live {
            self.request_live_bill();
        }
        if let Some((k, d)) = &self.parts.context.built
            && *k == key
        {
            let mut d = d.clone();
            d.generation = self.parts.context.generation;
            let n = d.aligned.len();
            self.parts.context.data = Some(d);
            self.parts.context.cursor = self.parts.context.cursor.min(n.saturating_sub(1));
            self.parts.context.progress = None;
            return;
        }
        self.parts.context.progress = None;
        let live = self.parts.context.live.then(|| self.live_params());
        self.start(crate::ui::jobs::ContextViewJob {
            generation: self.parts.context.generation,
            session: self.doc.session.clone(),
            leaf,
            mark: self.parts.context.mark,
            encoding,
            cache: self.exact.cache.clone(),
            live,
        });
    }

    /// The open session's bill under the live policy and without it, for the live view's
    /// bottom line: asked once per version of the session.
    fn request_live_bill(&mut self) {
        let len = self.doc.session.buf.len();
        if self.parts.context.bill_for == Some(len) {
            return;
        }
        self.parts.context.bill_for = Some(len);
        self.parts.context.bill = None;
        self.start_for::<ContextState, _>(crate::ui::jobs::LiveBillJob {
            generation: len as u64,
            session: self.doc.session.clone(),
            params: self.live_params(),
        });
    }

    /// The live policy's settings (Pi's settings.json, `bonsai.live`), and the window,
    /// reserve and prices of the gauge's model at the selection.
    pub(super) fn live_params(&self) -> super::context_view::LiveParams {
        let g = self.selection.gauge.as_ref();
        let window = crate::engine::load::models::window_or_default(g.and_then(|g| g.window));
        let reserve = g
            .map(|g| g.reserve)
            .unwrap_or_else(|| self.setup.settings.reserve_tokens(None));
        let prices = g
            .and_then(|g| g.model.as_deref())
            .and_then(|m| m.split_once('/'))
            .and_then(|(p, id)| self.setup.registry.find(p, id))
            .map(crate::engine::live::Prices::of_model);
        super::context_view::LiveParams {
            settings: self.setup.settings.live_settings(),
            env: crate::engine::live::CallEnv {
                context_window: window,
                reserve_tokens: reserve,
                prices,
            },
            registry: self.setup.registry.clone(),
        }
    }

    /// Count what the Pi package would send at the selection (the gauge marks it) in a
    /// low-priority job, when the package is in use (opened by `/bonsai`, listed in Pi's
    /// packages, or `bonsai.live` configured) and its policy is not off.
    pub(super) fn request_live_figure(&mut self) {
        self.selection.live = None;
        if !self.setup.live_in_use {
            return;
        }
        let Some(leaf) = self.selected_leaf() else { return };
        let params = self.live_params();
        if params.settings.policy == crate::engine::live::LivePolicy::Off {
            return;
        }
        self.start_for::<SelectionState, _>(crate::ui::jobs::LiveFigureJob {
            generation: self.selection.generation,
            session: self.doc.session.clone(),
            leaf,
            params,
        });
    }

    pub fn context_data(&self) -> Option<&super::context_view::ContextData> {
        self.parts.context.data.as_deref()
    }

    pub fn context_cursor(&self) -> (usize, usize) {
        (self.parts.context.cursor, self.parts.context.scroll)
    }

    /// Make what `draw` reads: the tree rows on screen and the detail document (and the
    /// picker's scroll).
    fn refresh(&mut self) {
        if let Some(owed) = &mut self.screen.refresh_held {
            *owed = true;
            return;
        }
        self.refresh_frame();
        self.refresh_detail();
        let main = self.areas().main;
        if let Some(p) = &mut self.parts.picker {
            p.layout(main);
        }
    }

    fn refresh_frame(&mut self) {
        let area = self.areas().tree;
        let range = self.tree.view.window(area.height as usize);
        let token_col = super::layout::token_column(area.width);
        let s = self.doc.session.clone();
        let mut rows = Vec::with_capacity(range.len());
        for k in range.clone() {
            // A row's text decodes its line: once per entry, not once per frame.
            let (view, cache) = (&self.tree.view, &mut self.tree.row_cache);
            let row = view.row_undrawn(&s, k, |i| {
                cache.entry(i).or_insert_with(|| view.display_text(&s, i)).clone()
            });
            let msgs = crate::engine::view::context::intrinsic_messages(&s, row.entry);
            let est: u64 = msgs.iter().map(|m| m.est_tokens).sum();
            let enc = crate::engine::view::tokens::Encoding::O200k;
            let exact: Option<u64> = msgs.iter().map(|m| self.exact.cache.get(m, enc)).sum();
            let mut tokens = match (est, exact) {
                (0, _) => String::new(),
                (e, Some(x)) if token_col >= 12 => format!("{} {}", short_tokens(e), short_tokens(x)),
                (e, _) => short_tokens(e),
            };
            let edited = self.doc.edits.get(&row.entry).map(|&e| {
                matches!(
                    &s.entries[e].kind,
                    crate::engine::load::entry::Kind::ContextEdit(ce) if ce.replacement_null
                )
            });
            let item = self
                .parts
                .prune
                .plan
                .as_ref()
                .filter(|_| self.screen.prune_preview)
                .and_then(|p| self.parts.prune.marks.get(&row.entry).map(|&k| &p.items[k]));
            if let Some(i) = item.filter(|i| i.change.writes()) {
                tokens = format!("−{}", short_tokens(i.saved()));
            }
            let change = item.map(|i| i.change.clone());
            rows.push(FrameRow {
                row,
                tokens,
                edited,
                change,
            });
        }
        let body_width = (area.width as usize).saturating_sub(token_col);
        let mut plain: Vec<Row> = rows
            .iter_mut()
            .map(|r| std::mem::replace(&mut r.row, Row::EMPTY))
            .collect();
        let pan = self.tree.view.draw_prefixes(&mut plain, range.start, body_width);
        for (fr, r) in rows.iter_mut().zip(plain) {
            fr.row = r;
        }
        self.tree.frame = TreeFrame {
            start: range.start,
            pan,
            rows,
        };
    }

    fn refresh_detail(&mut self) {
        let Some(area) = self.areas().detail else { return };
        let Some(entry) = self.selected() else {
            self.parts.detail.doc = None;
            return;
        };
        let width = area.width.saturating_sub(1);
        let edit = self.doc.edits.get(&entry).copied();
        let stale =
            !matches!(&self.parts.detail.doc, Some(d) if d.entry == entry && d.width == width && d.edit == edit);
        if stale {
            let s = self.doc.session.clone();
            let tc = crate::engine::view::context::tool_call_for(&s, entry);
            self.parts.detail.doc = Some(detail::build(&s, entry, width, tc, edit));
        }
        self.scroll_detail_to_match();
        let h = area.height as usize;
        if let Some(doc) = &mut self.parts.detail.doc {
            self.parts.detail.scroll = self.parts.detail.scroll.min(doc.total_lines().saturating_sub(h));
            doc.highlight_to(self.parts.detail.scroll + h);
        }
    }

    /// One line about skipped or suspicious lines, if any.
    pub fn diagnostics_notice(&self) -> Option<String> {
        use crate::engine::load::entry::DiagnosticKind;
        let d = &self.doc.session.diagnostics;
        let old = self.doc.read_only == Some(OLD_VERSION);
        if d.is_empty() {
            return old.then(|| {
                "read-only: an old (v1/v2) session file; `bonsai migrate FILE` converts it (keeping a .bak)".into()
            });
        }
        let malformed: Vec<u32> = d
            .iter()
            .filter(|x| x.kind == DiagnosticKind::MalformedLine)
            .map(|x| x.line)
            .collect();
        let mut parts = Vec::new();
        if !malformed.is_empty() {
            let list: Vec<String> = malformed.iter().take(5).map(|l| l.to_string()).collect();
            parts.push(format!(
                "{} malformed line{} skipped as Pi skips them (line {}{})",
                malformed.len(),
                if malformed.len() == 1 { "" } else { "s" },
                list.join(", "),
                if malformed.len() > 5 { ", …" } else { "" }
            ));
        }
        let others: Vec<_> = d.iter().filter(|x| x.kind != DiagnosticKind::MalformedLine).collect();
        if let Some(first) = others.first() {
            parts.push(format!("line {}: {}", first.line, first.message));
            if others.len() > 1 {
                parts.push(format!("{} more warnings", others.len() - 1));
            }
        }
        Some(parts.join(" · "))
    }
}

/// Compact token counts: 950, 12.3k, 1.2M.
pub fn short_tokens(n: u64) -> String {
    crate::engine::units::tokens_short(n as f64)
}

/// `n thing` / `n things`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
pub(crate) mod tests;
