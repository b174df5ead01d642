//! The TUI's state and its key handling. No terminal here: `draw` (mod.rs) renders this
//! state, the event loop feeds it keys and finished background work.

use crate::engine::compaction::{self, CompactionPlan, CompactionSettings, NoCompaction};
use crate::engine::context::{self, ContextMessage, ContextTokens, Projection};
use crate::engine::models::Registry;
use crate::engine::session::Session;
use crate::engine::settings::Settings;
use crate::engine::tokens::{Encoding, TokenCache};
use crate::engine::tree::Tree;
use crate::engine::tree_view::{FilterMode, RowText, TreeView};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Detail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    Context,
    Picker,
}

/// Where an entry falls in the cut preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutClass {
    /// Already behind the previous compaction's boundary.
    Compacted,
    Summarized,
    TurnPrefix,
    Kept,
    /// The previous compaction (its summary is updated).
    Boundary,
}

/// Zone of the context gauge, relative to T = window − reserveTokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Green,
    Yellow,
    Red,
    Compact,
}

#[derive(Debug, Clone)]
pub struct Gauge {
    pub leaf: Option<usize>,
    pub tokens: ContextTokens,
    pub exact: Option<u64>,
    pub window: Option<u64>,
    pub reserve: u64,
    pub keep_recent: u64,
    pub model: Option<String>,
    /// The selection moved and the new numbers are still being computed.
    pub stale: bool,
}

impl Gauge {
    /// Pi auto-compacts above this.
    pub fn threshold(&self) -> Option<u64> {
        self.window.map(|w| w.saturating_sub(self.reserve))
    }
    pub fn zone(&self, bounds: (f64, f64)) -> Option<Zone> {
        let t = self.threshold()? as f64;
        let x = self.tokens.tokens;
        Some(if x >= t {
            Zone::Compact
        } else if x >= bounds.1 * t {
            Zone::Red
        } else if x >= bounds.0 * t {
            Zone::Yellow
        } else {
            Zone::Green
        })
    }
}

/// Work the event loop runs off the draw thread; results come back through `App::apply`.
pub enum Job {
    ExactTokens {
        generation: u64,
        session: Arc<Session>,
        messages: Vec<ContextMessage>,
        encoding: Encoding,
    },
    /// A summary written by a model, streamed back as `LlmChunk`s.
    Llm {
        id: u64,
        session: Arc<Session>,
        summarizer: Box<crate::llm::summarize::Summarizer>,
        kind: LlmKind,
        cancel: Arc<std::sync::atomic::AtomicBool>,
        chunks: Option<tokio::sync::mpsc::UnboundedSender<JobResult>>,
    },
    Selection {
        generation: u64,
        session: Arc<Session>,
        leaf: usize,
        settings: Settings,
        registry: Arc<Registry>,
        keep_recent: u64,
        want_cut: bool,
    },
}

/// Sessions above this many entries compute the selection's gauge and cut off the key path.
pub const LARGE_SESSION: usize = 20_000;

pub struct SelectionInfo {
    pub leaf: usize,
    pub gauge: Gauge,
    pub messages: Vec<ContextMessage>,
    pub encoding: Encoding,
    pub cut: Option<Result<CompactionPlan, NoCompaction>>,
    pub classes: HashMap<usize, CutClass>,
}

pub enum LlmKind {
    Compaction {
        plan: Box<CompactionPlan>,
        focus: Option<String>,
        thinking: String,
    },
    Branch {
        nav: Box<crate::engine::actions::Navigation>,
        focus: Option<String>,
        replace: bool,
    },
}

pub enum JobResult {
    ExactTokens {
        generation: u64,
        total: u64,
        per_message: Vec<u64>,
    },
    LlmChunk {
        id: u64,
        text: String,
    },
    LlmDone {
        id: u64,
        result: Result<crate::engine::actions::Summary, String>,
    },
    Selection {
        generation: u64,
        info: Box<SelectionInfo>,
    },
    Reloaded(Result<Session, String>),
}

/// Everything the gauge and the cut preview show for `leaf` (pure; runs on any thread).
pub fn compute_selection(
    s: &Session,
    leaf: usize,
    settings: &Settings,
    registry: &Registry,
    keep_recent: u64,
    want_cut: bool,
) -> SelectionInfo {
    let proj = context::project(s, &s.path_to(leaf));
    let msgs: Vec<&ContextMessage> = proj.messages().collect();
    let tokens = context::estimate_context_tokens(s, &msgs);
    let model = proj.model.clone().and_then(|(p, m)| Some((p?, m?)));
    let window = model
        .as_ref()
        .and_then(|(p, m)| registry.find(p, m))
        .map(|m| m.context_window);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let reserve = settings.reserve_tokens(mref);
    let encoding = Encoding::for_model(mref.map(|m| m.0), mref.map(|m| m.1));
    let messages: Vec<ContextMessage> = msgs.iter().map(|m| (*m).clone()).collect();
    let mut classes = HashMap::new();
    let cut = want_cut.then(|| {
        let plan = compaction::prepare_path(
            s,
            &proj.path,
            CompactionSettings {
                reserve_tokens: reserve,
                keep_recent_tokens: keep_recent,
            },
        );
        if let Ok(p) = &plan {
            let in_projection: std::collections::HashSet<usize> =
                p.projection.entries.iter().map(|e| e.source).collect();
            for &i in &p.projection.path {
                if !in_projection.contains(&i) {
                    classes.insert(i, CutClass::Compacted);
                }
            }
            for (k, pe) in p.projection.entries.iter().enumerate() {
                let class = if Some(k) == p.previous_compaction {
                    CutClass::Boundary
                } else if k < p.history.start {
                    CutClass::Compacted
                } else if k < p.history.end {
                    CutClass::Summarized
                } else if k < p.first_kept {
                    CutClass::TurnPrefix
                } else {
                    CutClass::Kept
                };
                classes.insert(pe.source, class);
            }
        }
        plan
    });
    SelectionInfo {
        leaf,
        gauge: Gauge {
            leaf: Some(leaf),
            tokens,
            exact: None,
            window,
            reserve,
            keep_recent,
            model: model.map(|(p, m)| format!("{p}/{m}")),
            stale: false,
        },
        messages,
        encoding,
        cut,
        classes,
    }
}

pub struct App {
    pub session: Arc<Session>,
    pub path: Option<PathBuf>,
    pub tree: Tree,
    pub view: TreeView,
    pub settings: Settings,
    pub registry: Arc<Registry>,
    pub focus: Focus,
    pub show_detail: bool,
    pub detail_scroll: usize,
    pub overlay: Overlay,
    pub searching: bool,
    pub cut_preview: bool,
    pub keep_recent: u64,
    pub cut: Option<Result<CompactionPlan, NoCompaction>>,
    pub cut_classes: HashMap<usize, CutClass>,
    pub gauge: Option<Gauge>,
    pub zones: (f64, f64),
    pub notice: Option<String>,
    pub status: Option<String>,
    pub live: bool,
    pub quit: bool,
    /// Rows the tree pane showed last frame (for paging, like Pi's maxVisibleLines).
    pub tree_rows: usize,
    pub context_mark: Option<usize>,
    pub context_scroll: usize,
    pub exact: Arc<TokenCache>,
    pub exact_for_selection: Option<Vec<u64>>,
    pub generation: u64,
    pub jobs: Vec<Job>,
    pub picker: Option<super::picker::Picker>,
    row_cache: HashMap<usize, RowText>,
    pub file_len: u64,
    /// The detail pane's document for the selected entry (rebuilt when it changes).
    pub doc: Option<super::detail::Doc>,
    pub dialog: Option<super::dialog::Dialog>,
    /// Work for the event loop that needs the terminal ($EDITOR).
    pub external: Option<super::dialog::External>,
    /// Text to put on the clipboard (OSC 52) at the next frame.
    pub clipboard: Option<String>,
    /// The running model summary: its id and cancel flag.
    pub llm_job: Option<(u64, Arc<std::sync::atomic::AtomicBool>)>,
    /// Tests put a summarizer here; otherwise it is resolved from Pi's keys when needed.
    pub summarizer_override: Option<crate::llm::summarize::Summarizer>,
    /// Never call a model (tests: no test may touch the network).
    pub force_offline: bool,
}

impl App {
    pub fn new(session: Session, path: Option<PathBuf>, settings: Settings, registry: Registry) -> App {
        let session = Arc::new(session);
        let tree = Tree::build(&session);
        let filter = FilterMode::parse(settings.tree_filter_mode()).unwrap_or_default();
        let view = TreeView::new(&session, &tree, session.leaf(), filter, crate::store::clock::now_ms());
        let file_len = session.buf.len() as u64;
        let mut app = App {
            session,
            path,
            tree,
            view,
            settings,
            registry: Arc::new(registry),
            focus: Focus::Tree,
            show_detail: true,
            detail_scroll: 0,
            overlay: Overlay::None,
            searching: false,
            cut_preview: false,
            keep_recent: 0,
            cut: None,
            cut_classes: HashMap::new(),
            gauge: None,
            zones: (0.7, 0.9),
            notice: None,
            status: None,
            live: false,
            quit: false,
            tree_rows: 20,
            context_mark: None,
            context_scroll: 0,
            exact: Arc::new(TokenCache::default()),
            exact_for_selection: None,
            generation: 0,
            jobs: vec![],
            picker: None,
            row_cache: HashMap::new(),
            file_len,
            doc: None,
            dialog: None,
            external: None,
            clipboard: None,
            llm_job: None,
            summarizer_override: None,
            force_offline: false,
        };
        app.zones = app.settings.gauge_zones();
        app.keep_recent = app
            .settings
            .keep_recent_tokens(app.model_ref().as_ref().map(|(p, m)| (p.as_str(), m.as_str())));
        app.on_selection_changed();
        app
    }

    fn model_ref(&self) -> Option<(String, String)> {
        let leaf = self.session.leaf()?;
        let (_, model) = context::path_settings(&self.session, &self.session.path_to(leaf));
        model.and_then(|(p, m)| Some((p?, m?)))
    }

    pub fn selected(&self) -> Option<usize> {
        self.view.selected_entry()
    }

    /// Row text with a per-entry cache (the line is decoded once, not every frame).
    pub fn row_text(&mut self, entry: usize) -> RowText {
        if let Some(t) = self.row_cache.get(&entry) {
            return t.clone();
        }
        let t = self.view.display_text(&self.session, entry);
        self.row_cache.insert(entry, t.clone());
        t
    }

    pub fn projection_for(&self, leaf: usize) -> Projection {
        context::project(&self.session, &self.session.path_to(leaf))
    }

    /// Recompute what depends on the selected entry (as a leaf): gauge, cut preview.
    /// On large sessions this walks a long path, so it runs as a job and the frame for the
    /// key press draws at once (the gauge follows when the job reports).
    pub fn on_selection_changed(&mut self) {
        self.detail_scroll = 0;
        self.generation += 1;
        self.exact_for_selection = None;
        let Some(leaf) = self.selected() else {
            self.gauge = None;
            self.cut = None;
            self.cut_classes.clear();
            return;
        };
        let job = Job::Selection {
            generation: self.generation,
            session: self.session.clone(),
            leaf,
            settings: self.settings.clone(),
            registry: self.registry.clone(),
            keep_recent: self.keep_recent,
            want_cut: self.cut_preview,
        };
        if self.session.entries.len() > LARGE_SESSION {
            if let Some(g) = &mut self.gauge {
                g.stale = true;
            }
            self.jobs.push(job);
        } else {
            let r = run_job(job, &self.exact);
            self.apply(r);
        }
    }

    fn recompute_cut(&mut self, _leaf: usize) {
        if let Some(g) = &mut self.gauge {
            g.keep_recent = self.keep_recent;
        }
        self.on_selection_changed();
    }

    /// Run queued jobs synchronously (tests and small sessions).
    pub fn run_jobs_now(&mut self) {
        while !self.jobs.is_empty() {
            for job in std::mem::take(&mut self.jobs) {
                let r = run_job(job, &self.exact);
                self.apply(r);
            }
        }
    }

    pub fn apply(&mut self, r: JobResult) {
        match r {
            JobResult::ExactTokens {
                generation,
                total,
                per_message,
            } => {
                if generation == self.generation {
                    if let Some(g) = &mut self.gauge {
                        g.exact = Some(total);
                    }
                    self.exact_for_selection = Some(per_message);
                }
            }
            JobResult::Selection { generation, info } => {
                if generation == self.generation {
                    self.apply_selection(*info);
                }
            }
            JobResult::LlmChunk { id, text } => self.on_llm_chunk(id, &text),
            JobResult::LlmDone { id, result } => self.on_llm_done(id, result),
            JobResult::Reloaded(Ok(s)) => self.replace_session(s),
            JobResult::Reloaded(Err(e)) => self.status = Some(format!("reload failed: {e}")),
        }
    }

    fn apply_selection(&mut self, info: SelectionInfo) {
        let mut gauge = info.gauge;
        let refs: Vec<&ContextMessage> = info.messages.iter().collect();
        let cached: Option<Vec<u64>> = refs.iter().map(|m| self.exact.get(m, info.encoding)).collect();
        gauge.exact = cached.as_ref().map(|v| v.iter().sum());
        if let Some(v) = cached {
            self.exact_for_selection = Some(v);
        } else {
            self.jobs.push(Job::ExactTokens {
                generation: self.generation,
                session: self.session.clone(),
                messages: info.messages,
                encoding: info.encoding,
            });
        }
        self.gauge = Some(gauge);
        if let Some(cut) = info.cut {
            self.cut = Some(cut);
            self.cut_classes = info.classes;
        }
    }

    /// A newer version of the file (Pi appended): keep selection, filter, folds, scroll.
    pub fn replace_session(&mut self, s: Session) {
        let selected_id = self.selected().map(|i| self.session.entries[i].id.clone());
        let was_at_leaf = self.selected() == self.session.leaf();
        let added = s.entries.len().saturating_sub(self.session.entries.len());
        let folded_ids: Vec<Box<str>> = self
            .view
            .folded
            .iter()
            .map(|&i| self.session.entries[i].id.clone())
            .collect();
        let filter = self.view.filter;
        let search = self.view.search.clone();
        let show_times = self.view.show_label_times;
        self.file_len = s.buf.len() as u64;
        self.session = Arc::new(s);
        self.tree = Tree::build(&self.session);
        self.view = TreeView::new(
            &self.session,
            &self.tree,
            self.session.leaf(),
            filter,
            crate::store::clock::now_ms(),
        );
        self.view.show_label_times = show_times;
        for id in folded_ids {
            if let Some(i) = self.session.idx_of(&id) {
                self.view.folded.insert(i);
            }
        }
        self.view.search = search;
        self.view.apply_filter(&self.session);
        let target = if was_at_leaf {
            self.session.leaf()
        } else {
            selected_id.and_then(|id| self.session.idx_of(&id))
        };
        if let Some(t) = target {
            self.view.select_entry(&self.session, t);
        }
        self.row_cache.clear();
        self.doc = None;
        self.exact = Arc::new(TokenCache::default());
        self.live = true;
        self.status = Some(format!("live: {added} new entries"));
        let keep = self.detail_scroll;
        self.on_selection_changed();
        self.detail_scroll = keep;
    }

    fn select_changed_from(&mut self, before: Option<usize>) {
        if self.selected() != before {
            self.on_selection_changed();
        }
    }

    pub fn page(&self) -> usize {
        self.tree_rows.max(5)
    }

    /// One key press. Returns true when the screen needs a redraw.
    pub fn on_key(&mut self, key: KeyEvent) -> bool {
        self.status = None;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if key.code == KeyCode::Char('c') && ctrl && !self.searching {
            self.quit = true;
            return true;
        }
        if self.dialog.is_some() {
            return self.on_dialog_key(key);
        }
        match self.overlay {
            Overlay::Help => {
                self.overlay = Overlay::None;
                return true;
            }
            Overlay::Picker => return self.on_picker_key(key),
            Overlay::Context => return self.on_context_key(key),
            Overlay::None => {}
        }
        if self.searching {
            return self.on_search_key(key);
        }
        let before = self.selected();
        let s = self.session.clone();
        match key.code {
            KeyCode::Char('q') if !ctrl => self.quit = true,
            KeyCode::Esc => {
                if !self.view.search.is_empty() {
                    self.view.set_search(&s, String::new());
                } else if self.cut_preview {
                    self.cut_preview = false;
                    self.cut_classes.clear();
                } else if self.focus == Focus::Detail {
                    self.focus = Focus::Tree;
                }
            }
            KeyCode::Char('?') => self.overlay = Overlay::Help,
            KeyCode::Tab => {
                if self.show_detail {
                    self.focus = if self.focus == Focus::Tree {
                        Focus::Detail
                    } else {
                        Focus::Tree
                    };
                }
            }
            KeyCode::Char('d') if !ctrl => {
                self.show_detail = !self.show_detail;
                if !self.show_detail {
                    self.focus = Focus::Tree;
                }
            }
            KeyCode::Char('/') => self.searching = true,
            KeyCode::Char('c') if !ctrl => {
                self.cut_preview = !self.cut_preview;
                if self.cut_preview {
                    if let Some(l) = self.selected() {
                        self.recompute_cut(l);
                    }
                } else {
                    self.cut_classes.clear();
                }
            }
            KeyCode::Char('+') | KeyCode::Char('=') => self.change_keep(1),
            KeyCode::Char('-') => self.change_keep(-1),
            KeyCode::Char('v') => {
                self.overlay = Overlay::Context;
                self.context_scroll = 0;
            }
            KeyCode::Char('m') => {
                self.context_mark = if self.context_mark == self.selected() {
                    None
                } else {
                    self.selected()
                };
                self.status = Some(match self.context_mark {
                    Some(i) => format!("marked {} for the context comparison (v)", self.session.entries[i].id),
                    None => "mark cleared".into(),
                });
            }
            KeyCode::Char('o') if !ctrl => self.open_picker(),
            KeyCode::Char('T') => self.view.show_label_times = !self.view.show_label_times,
            KeyCode::Char('x') if ctrl => self.copy_selected(),
            KeyCode::Enter if self.focus == Focus::Tree => self.open_navigate(),
            KeyCode::Char('C') => self.open_compact(),
            KeyCode::Char('L') => self.open_label(),
            KeyCode::Char('R') => self.open_rename(),
            KeyCode::Char('F') => self.fork_or_clone(false),
            KeyCode::Char('K') => self.fork_or_clone(true),
            KeyCode::Char('g') | KeyCode::Home if self.focus == Focus::Tree => self.view.selected = 0,
            KeyCode::Char('G') | KeyCode::End if self.focus == Focus::Tree => {
                self.view.selected = self.view.visible.len().saturating_sub(1)
            }
            KeyCode::Char('l') if !ctrl => {
                if let Some(leaf) = s.leaf() {
                    self.view.select_entry(&s, leaf);
                }
            }
            _ if self.focus == Focus::Detail => self.on_detail_key(key),
            KeyCode::Up | KeyCode::Char('k') => self.view.move_up(),
            KeyCode::Down | KeyCode::Char('j') => self.view.move_down(),
            KeyCode::Left if ctrl || alt => self.view.fold_or_up(&s),
            KeyCode::Right if ctrl || alt => self.view.unfold_or_down(&s),
            KeyCode::Left | KeyCode::PageUp => self.view.page_up(self.page()),
            KeyCode::Right | KeyCode::PageDown => self.view.page_down(self.page()),
            KeyCode::Char('b') if ctrl => self.view.page_up(self.page()),
            KeyCode::Char('f') if ctrl => self.view.page_down(self.page()),
            KeyCode::Char('d') if ctrl => self.view.set_filter(&s, FilterMode::Default),
            KeyCode::Char('t') if ctrl => self.view.toggle_filter(&s, FilterMode::NoTools),
            KeyCode::Char('u') if ctrl => self.view.toggle_filter(&s, FilterMode::UserOnly),
            KeyCode::Char('l') if ctrl => self.view.toggle_filter(&s, FilterMode::LabeledOnly),
            KeyCode::Char('a') if ctrl => self.view.toggle_filter(&s, FilterMode::All),
            KeyCode::Char('o') if ctrl && key.modifiers.contains(KeyModifiers::SHIFT) => {
                self.view.set_filter(&s, self.view.filter.prev())
            }
            KeyCode::Char('o') if ctrl => self.view.set_filter(&s, self.view.filter.next()),
            KeyCode::Char('O') if ctrl => self.view.set_filter(&s, self.view.filter.prev()),
            _ => return false,
        }
        self.select_changed_from(before);
        true
    }

    /// Pi 0.87's Ctrl+X in /tree: the entry's text to the clipboard (OSC 52).
    fn copy_selected(&mut self) {
        let Some(i) = self.selected() else { return };
        match crate::engine::tree_view::copy_text(&self.session, i) {
            Some(t) => {
                self.clipboard = Some(t);
                self.status = Some("Copied selected message to clipboard".into());
            }
            None => self.status = Some("Selected entry has no text to copy".into()),
        }
    }

    fn change_keep(&mut self, dir: i64) {
        // Steps that feel right from 1k to 100k: 10% of the value, at least 500.
        let step = (self.keep_recent / 10).max(500) as i64;
        self.keep_recent = (self.keep_recent as i64 + dir * step).clamp(500, 1_000_000) as u64;
        if let Some(g) = &mut self.gauge {
            g.keep_recent = self.keep_recent;
        }
        if let Some(l) = self.selected()
            && self.cut_preview
        {
            self.recompute_cut(l);
        }
        self.status = Some(format!("keepRecentTokens {}", self.keep_recent));
    }

    fn on_detail_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.detail_scroll = self.detail_scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.detail_scroll += 1,
            KeyCode::PageUp | KeyCode::Left => self.detail_scroll = self.detail_scroll.saturating_sub(self.page()),
            KeyCode::PageDown | KeyCode::Right | KeyCode::Char(' ') => self.detail_scroll += self.page(),
            KeyCode::Home | KeyCode::Char('g') => self.detail_scroll = 0,
            KeyCode::End | KeyCode::Char('G') => self.detail_scroll = usize::MAX / 2,
            _ => {}
        }
    }

    fn on_search_key(&mut self, key: KeyEvent) -> bool {
        let s = self.session.clone();
        let before = self.selected();
        match key.code {
            KeyCode::Enter => self.searching = false,
            KeyCode::Esc => {
                self.searching = false;
                self.view.set_search(&s, String::new());
            }
            KeyCode::Backspace => {
                let mut q = self.view.search.clone();
                q.pop();
                self.view.set_search(&s, q);
            }
            KeyCode::Up => self.view.move_up(),
            KeyCode::Down => self.view.move_down(),
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                let q = format!("{}{c}", self.view.search);
                self.view.set_search(&s, q);
            }
            _ => return false,
        }
        self.select_changed_from(before);
        true
    }

    fn on_context_key(&mut self, key: KeyEvent) -> bool {
        match key.code {
            KeyCode::Esc | KeyCode::Char('v') | KeyCode::Char('q') => self.overlay = Overlay::None,
            KeyCode::Up | KeyCode::Char('k') => self.context_scroll = self.context_scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.context_scroll += 1,
            KeyCode::PageUp => self.context_scroll = self.context_scroll.saturating_sub(self.page()),
            KeyCode::PageDown | KeyCode::Char(' ') => self.context_scroll += self.page(),
            KeyCode::Char('m') => self.context_mark = None,
            _ => return false,
        }
        true
    }

    pub fn open_picker(&mut self) {
        let cwd = std::env::current_dir().unwrap_or_default();
        let mut p = super::picker::Picker::load(&cwd, &self.settings, false);
        p.current = self.path.clone();
        self.picker = Some(p);
        self.overlay = Overlay::Picker;
    }

    fn on_picker_key(&mut self, key: KeyEvent) -> bool {
        let Some(p) = &mut self.picker else {
            self.overlay = Overlay::None;
            return true;
        };
        match p.on_key(key, &self.settings) {
            super::picker::PickerAction::None => {}
            super::picker::PickerAction::Close => {
                if self.path.is_some() || !self.session.entries.is_empty() {
                    self.overlay = Overlay::None;
                } else {
                    self.quit = true;
                }
            }
            super::picker::PickerAction::Open(path) => match crate::store::load_session(&path) {
                Ok(s) => {
                    let settings = std::mem::take(&mut self.settings);
                    let registry = (*self.registry).clone();
                    let mut fresh = App::new(s, Some(path), settings, registry);
                    fresh.notice = fresh.diagnostics_notice();
                    *self = fresh;
                }
                Err(e) => p.error = Some(e.to_string()),
            },
        }
        true
    }

    /// One line about skipped or suspicious lines, if any.
    pub fn diagnostics_notice(&self) -> Option<String> {
        let d = &self.session.diagnostics;
        if d.is_empty() {
            return None;
        }
        let malformed: Vec<u32> = d
            .iter()
            .filter(|x| x.kind == crate::engine::entry::DiagnosticKind::MalformedLine)
            .map(|x| x.line)
            .collect();
        let other = d.len() - malformed.len();
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
        if other > 0 {
            let first = d
                .iter()
                .find(|x| x.kind != crate::engine::entry::DiagnosticKind::MalformedLine)
                .unwrap();
            parts.push(format!("line {}: {}", first.line, first.message));
            if other > 1 {
                parts.push(format!("{} more warnings", other - 1));
            }
        }
        Some(parts.join(" · "))
    }
}

pub fn run_job(job: Job, cache: &TokenCache) -> JobResult {
    match job {
        Job::Llm {
            id,
            session,
            summarizer,
            kind,
            cancel,
            chunks,
        } => {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    return JobResult::LlmDone {
                        id,
                        result: Err(e.to_string()),
                    };
                }
            };
            let on_text = move |e: crate::llm::Event| {
                if let (crate::llm::Event::Text(t), Some(tx)) = (e, &chunks) {
                    let _ = tx.send(JobResult::LlmChunk { id, text: t });
                }
            };
            let result = rt.block_on(async {
                let work = async {
                    match &kind {
                        LlmKind::Compaction { plan, focus, thinking } => {
                            summarizer
                                .compaction(&session, plan, focus.as_deref(), Some(thinking), on_text)
                                .await
                        }
                        LlmKind::Branch { nav, focus, replace } => {
                            summarizer
                                .branch(&session, nav, focus.as_deref(), *replace, on_text)
                                .await
                        }
                    }
                };
                let watch = async {
                    while !cancel.load(std::sync::atomic::Ordering::Relaxed) {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                };
                tokio::select! {
                    r = work => r.map_err(|e| e.to_string()),
                    _ = watch => Err("cancelled".to_string()),
                }
            });
            JobResult::LlmDone { id, result }
        }
        Job::Selection {
            generation,
            session,
            leaf,
            settings,
            registry,
            keep_recent,
            want_cut,
        } => {
            let info = compute_selection(&session, leaf, &settings, &registry, keep_recent, want_cut);
            JobResult::Selection {
                generation,
                info: Box::new(info),
            }
        }
        Job::ExactTokens {
            generation,
            session,
            messages,
            encoding,
        } => {
            let refs: Vec<&ContextMessage> = messages.iter().collect();
            let per_message = cache.count_all(&session, &refs, encoding);
            JobResult::ExactTokens {
                generation,
                total: per_message.iter().sum(),
                per_message,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::app_for;

    use crossterm::event::{KeyCode, KeyEvent};
    use std::io::Write;

    #[test]
    fn live_follow_keeps_selection_and_moves_with_the_leaf() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("live.jsonl");
        let src =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/pi-0.87.1/split-turn.jsonl");
        std::fs::copy(&src, &p).unwrap();
        let mut a = app_for(&p);
        // Select an earlier row, then Pi appends two entries.
        a.on_key(KeyEvent::from(KeyCode::Up));
        a.on_key(KeyEvent::from(KeyCode::Up));
        let chosen = a.selected().unwrap();
        let chosen_id = a.session.entries[chosen].id.clone();
        let leaf_id = a.session.entries[a.session.leaf().unwrap()].id.clone();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        writeln!(f, r#"{{"type":"message","id":"live0001","parentId":"{leaf_id}","timestamp":"2026-11-22T06:00:00.000Z","message":{{"role":"user","content":"one more thing","timestamp":1}}}}"#).unwrap();
        writeln!(f, r#"{{"type":"message","id":"live0002","parentId":"live0001","timestamp":"2026-11-22T06:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"sure"}}],"stopReason":"stop"}}}}"#).unwrap();
        drop(f);
        a.apply(super::JobResult::Reloaded(
            crate::store::load_session(&p).map_err(|e| e.to_string()),
        ));
        assert_eq!(a.session.entries.len(), 46);
        assert!(a.live);
        assert_eq!(a.session.entries[a.selected().unwrap()].id, chosen_id, "selection kept");
        // At the leaf, the selection follows the new leaf.
        a.on_key(KeyEvent::from(KeyCode::Char('l')));
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        writeln!(f, r#"{{"type":"message","id":"live0003","parentId":"live0002","timestamp":"2026-11-22T06:00:02.000Z","message":{{"role":"user","content":"and another","timestamp":2}}}}"#).unwrap();
        drop(f);
        a.apply(super::JobResult::Reloaded(
            crate::store::load_session(&p).map_err(|e| e.to_string()),
        ));
        assert_eq!(&*a.session.entries[a.selected().unwrap()].id, "live0003");
    }
}
