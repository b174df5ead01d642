//! The session picker: a tree drawn with tui-tree-widget (a shallow, wide tree is what it is
//! good at) of this project's sessions, or every project's (Tab): projects, their sessions
//! newest first, forks and clones nested under the session they came from (`parentSession`),
//! pinned sessions on top; beside it a preview of the selected session (header, first and
//! newest request, the context against the model's window). `/` filters by name; `s` searches
//! inside the listed sessions, the hits streaming in as each file is done, Enter opening the
//! session at the hit's entry. What is not a readable session is listed greyed with the reason.
//!
//! Listing, opening and searching are jobs; the picker holds what they reported. `layout`
//! (called from `App::update`) lets the tree widget settle its scroll; `draw` only renders.

use super::input::LineEditor;
use super::theme::*;
use crate::engine::view::search::Hit;
use crate::engine::view::text_width::truncate_to_width;
use crate::store::SessionInfo;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use tui_tree_widget::{Tree, TreeItem, TreeState};

/// What has the picker's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerFocus {
    Tree,
    /// Typing the name filter.
    Filter,
    /// Typing a search query.
    Query,
    /// Going through the search's hits.
    Hits,
}

/// What a tree node is.
#[derive(Debug, Clone)]
enum Node {
    /// A project's session folder.
    Project {
        label: String,
        sessions: usize,
    },
    /// The pinned sessions of every project (all projects).
    Pinned,
    Session(usize),
    /// A file or folder that is not a readable session.
    Problem(usize),
    /// bonsai's trash, and a session in it (by its index in `trash`).
    Trash,
    Trashed(usize),
}

/// A search inside the listed sessions.
pub struct SessionSearch {
    pub query: LineEditor,
    pub id: u64,
    pub running: bool,
    pub cancel: Arc<AtomicBool>,
    /// Hits grouped by session, in the order the files finished.
    pub hits: Vec<(PathBuf, Hit)>,
    /// Files done and in all.
    pub files: (usize, usize),
    pub selected: usize,
    pub error: Option<String>,
    pub elapsed_ms: u64,
}

/// The search's job outputs, taken here; another search's (an older `id`) are dropped.
impl SessionSearch {
    /// One file searched: its hits, or why it could not be.
    pub fn take_file(&mut self, id: u64, path: PathBuf, hits: Result<Vec<Hit>, crate::store::search::SearchError>) {
        if id != self.id {
            return;
        }
        self.files.0 += 1;
        match hits {
            Ok(h) => self.hits.extend(h.into_iter().map(|h| (path.clone(), h))),
            Err(e) => self.error = Some(format!("{}: {e}", path.display())),
        }
    }

    /// Every file searched, or the search stopped.
    pub fn take_done(&mut self, id: u64, elapsed_ms: u64, error: Option<crate::store::search::SearchError>) {
        if id != self.id {
            return;
        }
        self.running = false;
        self.elapsed_ms = elapsed_ms;
        if error.is_some() {
            self.error = error.map(|e| e.to_string());
        }
    }
}

pub struct Picker {
    pub all: bool,
    pub sessions: Vec<SessionInfo>,
    /// The context window of each session's model (from Pi's model table), by index.
    pub windows: Vec<Option<u64>>,
    pub pins: Vec<PathBuf>,
    items: Vec<TreeItem<'static, String>>,
    nodes: HashMap<String, Node>,
    /// Every node's identifier path (open or not) and whether it has children.
    paths: Vec<(Vec<String>, bool)>,
    /// The tree widget's state. In a cell: rendering records where rows were drawn (for
    /// clicks) even from `draw(&self)`; the scroll itself is settled in `layout`.
    state: std::cell::RefCell<TreeState<String>>,
    pub filter: LineEditor,
    pub focus: PickerFocus,
    pub search: Option<SessionSearch>,
    pub error: Option<String>,
    /// The open session (shown in green).
    pub current: Option<PathBuf>,
    /// A listing is being read.
    pub loading: bool,
    /// A session is being opened (and the entry to select in it).
    pub opening: Option<PathBuf>,
    pub open_at: Option<String>,
    /// bonsai started in the picker: closing it quits.
    pub launched_without_session: bool,
    /// Only these sessions are shown (`bonsai resume QUERY` matched several): the query, and
    /// the files it matched.
    pub only: Option<(String, Vec<PathBuf>)>,
    /// When this project has none: how many sessions Pi has in all projects.
    pub everywhere: Option<usize>,
    /// The selected session disappeared from its folder (deleted or moved).
    pub gone: Option<PathBuf>,
    /// This project's folder (its sessions come first in all projects).
    pub home_dir: Option<PathBuf>,
    /// The user's home folder (paths under it are shown as `~/…`).
    pub user_home: Option<PathBuf>,
    /// The tree was built once (the first build opens the nodes worth opening).
    built: bool,
    /// When the listing last arrived (the tick lists again after a while); none yet.
    pub listed_at: Option<std::time::Instant>,
    /// The time the previews' ages count to (the app's clock, ms since the epoch).
    pub now_ms: i64,
    /// The tree pane is wide enough for the cost and token columns (set by `layout`).
    wide: bool,
    /// What is in bonsai's trash (with its bytes), listed under its own node at the end.
    pub trash: Vec<(crate::store::trash::Trashed, u64, Option<String>)>,
    /// bonsai's backups beside the listed sessions (shown with their session).
    pub leftovers: Vec<crate::store::backups::Backup>,
    /// The documents bonsai exported (listed with the session they came from).
    pub exports: Vec<crate::store::exports::Export>,
}

/// Backups older than this are "old" for the picker's B.
pub const OLD_BACKUP_DAYS: f64 = 30.0;

/// The tree pane width from which rows carry the cost and token columns (a 136-column
/// terminal, or 82 below 110 where the preview goes under the tree).
const COLUMNS_FROM: u16 = 80;

/// Dollars as a column shows them: cents, or four places under a cent.
pub fn money(x: f64) -> String {
    crate::engine::units::money(x)
}

/// A token count in at most five characters (`950`, `12.3k`, `4.1M`).
pub fn tokens_short(t: f64) -> String {
    crate::engine::units::tokens_short(t)
}

/// Identifier prefixes: a project's folder, a pinned copy, a session, a problem.
/// The listing as trees (see `Picker::forest`).
struct Forest {
    /// Each session's forks in the listing.
    children: Vec<Vec<usize>>,
    /// Sessions that are no fork of a listed one, by folder.
    roots_by_dir: HashMap<PathBuf, Vec<usize>>,
    /// Shown under the filter: a match, or a match below it.
    keep: Vec<bool>,
}

/// What a rebuild makes beside the tree items: each row's node, and every row's path with
/// whether it has children.
#[derive(Default)]
struct Built {
    nodes: HashMap<String, Node>,
    paths: Vec<(Vec<String>, bool)>,
}

/// Keep `i` when it or a fork below it matches.
fn mark_kept(i: usize, children: &[Vec<usize>], keep: &mut [bool], hit: &dyn Fn(usize) -> bool, depth: usize) -> bool {
    let mut any = hit(i);
    // Bounded: a parent cycle in the headers must not recurse for ever.
    if depth < 64 {
        for &c in &children[i] {
            any |= mark_kept(c, children, keep, hit, depth + 1);
        }
    }
    keep[i] = any;
    any
}

fn project_id(dir: &std::path::Path) -> String {
    format!("p:{}", dir.display())
}
fn session_id(p: &std::path::Path) -> String {
    format!("s:{}", p.display())
}

fn size_text(bytes: u64) -> String {
    crate::engine::units::bytes(bytes)
}

/// `~/x` for a path under the home folder.
fn tilde(p: &str, home: Option<&std::path::Path>) -> String {
    match home.and_then(|h| p.strip_prefix(h.to_str()?)) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
        _ => p.to_string(),
    }
}

impl Picker {
    /// A picker for the open session `current`, its ages counted to `now_ms`.
    pub fn new(current: Option<PathBuf>, now_ms: i64) -> Picker {
        Picker {
            all: false,
            sessions: vec![],
            windows: vec![],
            pins: vec![],
            items: vec![],
            nodes: HashMap::new(),
            paths: vec![],
            state: std::cell::RefCell::new(TreeState::default()),
            filter: LineEditor::new("", false),
            focus: PickerFocus::Tree,
            search: None,
            error: None,
            current,
            loading: false,
            opening: None,
            open_at: None,
            launched_without_session: false,
            only: None,
            everywhere: None,
            gone: None,
            home_dir: None,
            user_home: None,
            built: false,
            listed_at: None,
            now_ms,
            wide: false,
            trash: vec![],
            leftovers: vec![],
            exports: vec![],
        }
    }

    /// A picker over `sessions`, its ages counted to now (tests).
    #[cfg(test)]
    pub fn from_sessions(sessions: Vec<SessionInfo>) -> Picker {
        let mut p = Picker::new(None, crate::store::clock::now_ms());
        let windows = vec![None; sessions.len()];
        p.set_sessions(false, sessions, windows, vec![]);
        p
    }

    /// A listing arrived (this project's, or every project's when `all`), with the sessions'
    /// context windows and the pins. Folds and the selection stay (by identifier); a selected
    /// session that is no longer listed is said to be gone.
    pub fn set_sessions(
        &mut self,
        all: bool,
        sessions: Vec<SessionInfo>,
        windows: Vec<Option<u64>>,
        pins: Vec<PathBuf>,
    ) {
        let switched = all != self.all;
        let was = self.selected_path();
        self.all = all;
        self.sessions = sessions;
        self.windows = windows;
        self.pins = pins;
        self.loading = false;
        if switched {
            self.built = false;
        }
        self.gone = was
            .filter(|p| !switched && !self.sessions.iter().any(|s| &s.path == p))
            .filter(|p| !p.exists());
        self.rebuild();
    }

    /// A session moved away on purpose (to the trash) leaves the list at once, the selection
    /// going to a neighbour; the listing that follows confirms it.
    pub fn drop_session(&mut self, path: &std::path::Path) {
        let Some(k) = self.sessions.iter().position(|s| s.path == path) else {
            return;
        };
        let mut sessions = std::mem::take(&mut self.sessions);
        let mut windows = std::mem::take(&mut self.windows);
        sessions.remove(k);
        if k < windows.len() {
            windows.remove(k);
        }
        let pins = std::mem::take(&mut self.pins);
        self.set_sessions(self.all, sessions, windows, pins);
        // Not "gone (deleted or moved)": the user moved it.
        self.gone = None;
    }

    /// Enter in the search field: a fresh search for its query (an earlier one cancelled);
    /// false when the query is empty.
    pub fn begin_search(&mut self) -> bool {
        let Some(s) = &mut self.search else { return false };
        if s.query.text().is_empty() {
            return false;
        }
        s.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        s.cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        s.running = true;
        s.hits.clear();
        s.selected = 0;
        s.error = None;
        s.files = (0, 0);
        self.focus = PickerFocus::Hits;
        true
    }

    /// Esc in the hits: stops a running search (the hits so far stay), else closes it.
    pub fn stop_or_close_search(&mut self) -> bool {
        let Some(s) = &mut self.search else { return false };
        if s.running {
            s.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            s.running = false;
        } else {
            self.search = None;
            self.focus = PickerFocus::Tree;
        }
        true
    }

    /// The search field, opened with the last query (a running search cancelled).
    pub fn open_search(&mut self) {
        if let Some(s) = &self.search {
            s.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let query = self.search.as_ref().map(|s| s.query.text()).unwrap_or_default();
        self.search = Some(SessionSearch {
            query: crate::ui::input::LineEditor::new(&query, false),
            id: 0,
            running: false,
            cancel: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
            hits: vec![],
            files: (0, 0),
            selected: 0,
            error: None,
            elapsed_ms: 0,
        });
        self.focus = PickerFocus::Query;
    }

    pub fn set_pins(&mut self, pins: Vec<PathBuf>) {
        self.pins = pins;
        self.rebuild();
    }

    fn is_pinned(&self, p: &std::path::Path) -> bool {
        self.pins.iter().any(|x| x == p)
    }

    /// One session's row: modified, entries, size, context share, pin, title.
    fn session_line(&self, i: usize) -> Line<'static> {
        let s = &self.sessions[i];
        let modified = s.modified_iso();
        let ctx = match (s.context_tokens, self.windows.get(i).copied().flatten()) {
            (Some(t), Some(w)) if w > 0 => format!("{:>3}%", crate::engine::units::percent(t, w).unwrap_or(0).min(999)),
            _ => "   ·".into(),
        };
        let current = self.current.as_ref() == Some(&s.path);
        let mut spans = vec![
            Span::styled(
                format!("{} ", modified.get(..16).unwrap_or(&modified).replace('T', " ")),
                fg(MUTED),
            ),
            Span::styled(format!("{:>6} ", s.entries), fg(DIM)),
            Span::styled(format!("{:>8} ", size_text(s.bytes)), fg(DIM)),
            Span::styled(format!("{ctx}  "), fg(DIM)),
        ];
        if self.wide {
            let (cost, tokens) = match s.spent.calls {
                0 => ("·".to_string(), "·".to_string()),
                _ => (money(s.spent.cost), tokens_short(s.spent.tokens)),
            };
            spans.push(Span::styled(format!("{cost:>8} {tokens:>6}  "), fg(DIM)));
        }
        if self.is_pinned(&s.path) {
            spans.push(Span::styled("★ ", fg(WARNING)));
        }
        // A title bonsai made (the session has no name) is marked `~` and dimmer.
        if s.title_is_made() {
            spans.push(Span::styled(
                format!("~ {}", s.title()),
                if current { fg(SUCCESS) } else { fg(MUTED) }.add_modifier(Modifier::ITALIC),
            ));
        } else {
            spans.push(Span::styled(
                s.title(),
                if current { fg(SUCCESS) } else { Style::default() },
            ));
        }
        Line::from(spans)
    }

    /// A trashed session's row, like a listed one's: when it was trashed, its size, its
    /// title (its name or first request), and the file and folder it was in.
    fn trashed_line(&self, i: usize) -> Line<'static> {
        let (t, bytes, title) = &self.trash[i];
        let when = crate::engine::load::js::iso_from_ms(t.at_ms);
        let name = t
            .original
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let folder = t
            .original
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        Line::from(vec![
            Span::styled(
                format!("{} ", when.get(..16).unwrap_or(&when).replace('T', " ")),
                fg(DIM),
            ),
            Span::styled(format!("{:>8}  ", size_text(*bytes)), fg(DIM)),
            Span::raw(title.clone().unwrap_or_else(|| "(no messages)".into())),
            Span::styled(format!("  {name} in {folder}"), fg(DIM)),
        ])
    }

    /// The trashed session selected, if a trash row is.
    pub fn selected_trashed(&self) -> Option<&crate::store::trash::Trashed> {
        match self.selected_node() {
            Some(Node::Trashed(i)) => self.trash.get(*i).map(|t| &t.0),
            _ => None,
        }
    }

    /// bonsai's backups of `session`, and those of them old enough to go (never one the next
    /// restore needs).
    pub fn backups_of(
        &self,
        session: &std::path::Path,
        now_ms: i64,
    ) -> (Vec<&crate::store::backups::Backup>, Vec<&crate::store::backups::Backup>) {
        let all: Vec<&crate::store::backups::Backup> = self.leftovers.iter().filter(|b| b.session == session).collect();
        let old = all
            .iter()
            .copied()
            .filter(|b| b.age_days(now_ms) >= OLD_BACKUP_DAYS && !b.needed_for_restore && b.made)
            .collect();
        (all, old)
    }

    /// The documents bonsai exported from `session`, and those older than 30 days.
    pub fn exports_of(
        &self,
        session: &std::path::Path,
        now_ms: i64,
    ) -> (Vec<&crate::store::exports::Export>, Vec<&crate::store::exports::Export>) {
        let all: Vec<&crate::store::exports::Export> = self.exports.iter().filter(|e| e.session == session).collect();
        let old = all
            .iter()
            .copied()
            .filter(|e| e.age_days(now_ms) >= OLD_BACKUP_DAYS)
            .collect();
        (all, old)
    }

    fn problem_line(&self, i: usize) -> Line<'static> {
        let s = &self.sessions[i];
        let name = s
            .path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let why = s.problem.as_ref().map(|p| p.reason()).unwrap_or_default();
        Line::from(Span::styled(format!("{name} — {why}"), fg(DIM)))
    }

    /// Whether session `i` passes the name filter: its name (or first message) and its file
    /// name, not the folder (every session of a project shares its cwd, and the sessions
    /// folder is named after it, so a word of the path matched them all).
    fn matches(&self, i: usize, q: &str) -> bool {
        let s = &self.sessions[i];
        if let Some((_, paths)) = &self.only
            && !paths.contains(&s.path)
        {
            return false;
        }
        q.is_empty()
            || s.title().to_lowercase().contains(q)
            || s.first_message.as_ref().is_some_and(|m| m.to_lowercase().contains(q))
            || s.path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().to_lowercase().contains(q))
    }

    /// The tree items from the listing, the pins and the filter.
    fn rebuild(&mut self) {
        let q = self.filter.text().to_lowercase();
        self.nodes.clear();
        let forest = self.forest(&q);
        let mut out = Built::default();
        let mut items = Vec::new();
        if self.all {
            // Pinned sessions of every project first, then the projects, newest first.
            items.extend(self.pinned_item(&forest, &mut out));
            let mut dirs: Vec<(&PathBuf, &Vec<usize>)> = forest.roots_by_dir.iter().collect();
            let newest = |v: &Vec<usize>| v.iter().map(|&i| self.sessions[i].modified_ms).max().unwrap_or(0);
            dirs.sort_by(|a, b| {
                let here = |d: &PathBuf| self.home_dir.as_ref() == Some(d);
                here(b.0)
                    .cmp(&here(a.0))
                    .then(newest(b.1).cmp(&newest(a.1)))
                    .then(a.0.cmp(b.0))
            });
            for (dir, roots) in dirs {
                items.extend(self.project_item(dir, roots, &forest, &mut out));
            }
        } else {
            let mut roots: Vec<usize> = forest
                .roots_by_dir
                .values()
                .flatten()
                .copied()
                .filter(|&r| forest.keep[r])
                .collect();
            self.order(&mut roots);
            items = roots.iter().map(|&r| self.item(r, &forest, &mut out, &[])).collect();
        }
        items.extend(self.trash_item(&q, &mut out));
        self.items = items;
        self.nodes = out.nodes;
        self.paths = out.paths;
        self.settle();
    }

    /// The listing as trees: forks under the session they came from (in the same listing),
    /// the roots by folder, and which sessions the filter keeps (a session with a match below
    /// it stays, to show where the match sits).
    fn forest(&self, q: &str) -> Forest {
        let by_path: HashMap<String, usize> = self
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_session())
            .map(|(i, s)| (s.path.to_string_lossy().to_string(), i))
            .collect();
        let parent_of = |i: usize| {
            self.sessions[i]
                .parent_session
                .as_ref()
                .and_then(|p| by_path.get(p).copied())
                .filter(|&p| p != i)
        };
        let mut children: Vec<Vec<usize>> = vec![vec![]; self.sessions.len()];
        let mut roots_by_dir: HashMap<PathBuf, Vec<usize>> = HashMap::new();
        for i in 0..self.sessions.len() {
            match (self.sessions[i].is_session(), parent_of(i)) {
                (true, Some(p)) => children[p].push(i),
                _ => roots_by_dir.entry(self.sessions[i].dir.clone()).or_default().push(i),
            }
        }
        let mut keep = vec![false; self.sessions.len()];
        let hit = |i: usize| self.matches(i, q);
        for roots in roots_by_dir.values() {
            for &r in roots {
                mark_kept(r, &children, &mut keep, &hit, 0);
            }
        }
        Forest {
            children,
            roots_by_dir,
            keep,
        }
    }

    /// Newest first; pinned sessions first; sessions with a problem last.
    fn order(&self, v: &mut [usize]) {
        v.sort_by(|&a, &b| {
            let (sa, sb) = (&self.sessions[a], &self.sessions[b]);
            sa.problem
                .is_some()
                .cmp(&sb.problem.is_some())
                .then(self.is_pinned(&sb.path).cmp(&self.is_pinned(&sa.path)))
                .then(sb.modified_ms.cmp(&sa.modified_ms))
                .then(sa.path.cmp(&sb.path))
        })
    }

    /// Session `i` with its forks below it (or a problem's row), under `prefix`.
    fn item(&self, i: usize, forest: &Forest, out: &mut Built, prefix: &[String]) -> TreeItem<'static, String> {
        let s = &self.sessions[i];
        let mut path = prefix.to_vec();
        if !s.is_session() {
            let id = format!("x:{}", s.path.display());
            out.nodes.insert(id.clone(), Node::Problem(i));
            path.push(id.clone());
            out.paths.push((path, false));
            return TreeItem::new_leaf(id, self.problem_line(i));
        }
        let id = session_id(&s.path);
        out.nodes.insert(id.clone(), Node::Session(i));
        path.push(id.clone());
        let at = out.paths.len();
        out.paths.push((path.clone(), false));
        let mut kids: Vec<usize> = forest.children[i].iter().copied().filter(|&c| forest.keep[c]).collect();
        self.order(&mut kids);
        // Bounded: a chain of forks can be deep, a cycle in the headers endless.
        let kids: Vec<TreeItem<'static, String>> = if path.len() < 64 {
            kids.into_iter().map(|c| self.item(c, forest, out, &path)).collect()
        } else {
            vec![]
        };
        out.paths[at].1 = !kids.is_empty();
        TreeItem::new(id.clone(), self.session_line(i), kids)
            .unwrap_or_else(|_| TreeItem::new_leaf(id, self.session_line(i)))
    }

    /// The pinned sessions of every project, as one folded group on top.
    fn pinned_item(&self, forest: &Forest, out: &mut Built) -> Option<TreeItem<'static, String>> {
        let mut pinned: Vec<usize> = (0..self.sessions.len())
            .filter(|&i| self.sessions[i].is_session() && self.is_pinned(&self.sessions[i].path) && forest.keep[i])
            .collect();
        if pinned.is_empty() {
            return None;
        }
        self.order(&mut pinned);
        out.paths.push((vec!["pinned".to_string()], true));
        let kids = pinned
            .iter()
            .map(|&i| {
                let id = format!("pin:{}", self.sessions[i].path.display());
                out.nodes.insert(id.clone(), Node::Session(i));
                out.paths.push((vec!["pinned".to_string(), id.clone()], false));
                TreeItem::new_leaf(id, self.session_line(i))
            })
            .collect();
        let it = TreeItem::new(
            "pinned".to_string(),
            Line::from(Span::styled("★ pinned", fg(WARNING))),
            kids,
        )
        .ok()?;
        out.nodes.insert("pinned".into(), Node::Pinned);
        Some(it)
    }

    /// One project (a session folder) with its sessions, its count and cost; a folder that
    /// cannot be read is one row saying so.
    fn project_item(
        &self,
        dir: &PathBuf,
        roots: &[usize],
        forest: &Forest,
        out: &mut Built,
    ) -> Option<TreeItem<'static, String>> {
        let mut roots: Vec<usize> = roots.iter().copied().filter(|&r| forest.keep[r]).collect();
        if roots.is_empty() {
            return None;
        }
        self.order(&mut roots);
        let count = self.sessions.iter().filter(|s| s.is_session() && &s.dir == dir).count();
        let cost: f64 = self
            .sessions
            .iter()
            .filter(|s| s.is_session() && &s.dir == dir)
            .map(|s| s.spent.cost)
            .sum();
        // The folder itself cannot be read: its row says so.
        if let [only] = roots[..]
            && matches!(self.sessions[only].problem, Some(crate::store::Problem::Folder(_)))
        {
            let id = format!("x:{}", dir.display());
            out.nodes.insert(id.clone(), Node::Problem(only));
            out.paths.push((vec![id.clone()], false));
            let why = self.sessions[only]
                .problem
                .as_ref()
                .map(|p| p.reason())
                .unwrap_or_default();
            return Some(TreeItem::new_leaf(
                id,
                Line::from(Span::styled(format!("{} — {why}", dir.display()), fg(DIM))),
            ));
        }
        // The project's folder as Pi named its sessions' folder: a session's `cwd` names the
        // group only when it is the folder Pi encoded (any file can claim any cwd), else the
        // folder's own name. Shown on one line either way.
        let folder = dir
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let label = roots
            .iter()
            .map(|&r| &self.sessions[r])
            .find(|s| {
                s.is_session()
                    && !s.cwd.is_empty()
                    && crate::store::config::encode_cwd(std::path::Path::new(&s.cwd)) == folder
            })
            .map(|s| tilde(&s.shown_cwd(), self.user_home.as_deref()))
            .unwrap_or_else(|| crate::engine::units::one_line(&folder).into_owned());
        let id = project_id(dir);
        out.paths.push((vec![id.clone()], true));
        let prefix = vec![id.clone()];
        let kids = roots.iter().map(|&r| self.item(r, forest, out, &prefix)).collect();
        let text = Line::from(vec![
            Span::styled(label.clone(), title()),
            Span::styled(
                format!(
                    "  {count} session{} · {}",
                    if count == 1 { "" } else { "s" },
                    money(cost)
                ),
                fg(DIM),
            ),
        ]);
        let it = TreeItem::new(id.clone(), text, kids).ok()?;
        out.nodes.insert(id, Node::Project { label, sessions: count });
        Some(it)
    }

    /// The trash last, folded: what a restore can bring back.
    fn trash_item(&self, q: &str, out: &mut Built) -> Option<TreeItem<'static, String>> {
        if self.only.is_some() {
            return None;
        }
        let trashed: Vec<usize> = (0..self.trash.len())
            .filter(|&i| {
                let (t, _, title) = &self.trash[i];
                q.is_empty()
                    || t.original.to_string_lossy().to_lowercase().contains(q)
                    || title.as_ref().is_some_and(|x| x.to_lowercase().contains(q))
            })
            .collect();
        if trashed.is_empty() {
            return None;
        }
        out.paths.push((vec!["trash".to_string()], true));
        let kids = trashed
            .iter()
            .map(|&i| {
                let id = format!("t:{}", self.trash[i].0.name);
                out.nodes.insert(id.clone(), Node::Trashed(i));
                out.paths.push((vec!["trash".to_string(), id.clone()], false));
                TreeItem::new_leaf(id, self.trashed_line(i))
            })
            .collect();
        let bytes: u64 = self.trash.iter().map(|t| t.1).sum();
        let label = Line::from(vec![
            Span::styled("trash", fg(MUTED)),
            Span::styled(
                format!(
                    "  {} session{} · {} · u restores, D empties",
                    self.trash.len(),
                    if self.trash.len() == 1 { "" } else { "s" },
                    size_text(bytes)
                ),
                fg(DIM),
            ),
        ]);
        let it = TreeItem::new("trash".to_string(), label, kids).ok()?;
        out.nodes.insert("trash".into(), Node::Trash);
        Some(it)
    }

    /// After a rebuild: the first build opens what is worth seeing (this project's forks, the
    /// pins and the current project), a filter opens every match's way; the selection follows
    /// its session to wherever it is now, else the first row.
    fn settle(&mut self) {
        let all_paths = self.flat_paths();
        let filtering = !self.filter.text().is_empty() || self.only.is_some();
        if (!self.built && !all_paths.is_empty()) || filtering {
            self.built = true;
            let here = self.home_dir.as_ref().map(|d| project_id(d));
            for (path, kids) in &self.paths {
                let open = *kids
                    && (!self.all
                        || filtering
                        || path.first().map(String::as_str) == Some("pinned")
                        || path.first() == here.as_ref());
                if open {
                    self.state.get_mut().open(path.clone());
                }
            }
        }
        let sel = self.state.get_mut().selected().to_vec();
        if all_paths.contains(&sel) {
            return;
        }
        // The selected node under another path now (a fork whose parent appeared), or the
        // open session, or the first row.
        let want = sel
            .last()
            .cloned()
            .or_else(|| self.current.as_ref().map(|c| session_id(c)));
        let found = want.and_then(|w| all_paths.iter().find(|p| p.last() == Some(&w)).cloned());
        match found {
            Some(p) => {
                for k in 1..p.len() {
                    self.state.get_mut().open(p[..k].to_vec());
                }
                self.state.get_mut().select(p);
            }
            // The first row (the tree's own `select_first` knows rows only once drawn).
            None => {
                let first = all_paths.iter().find(|p| p.len() == 1).cloned().unwrap_or_default();
                self.state.get_mut().select(first);
            }
        }
    }

    /// Every node's identifier path (open or not).
    fn flat_paths(&self) -> Vec<Vec<String>> {
        self.paths.iter().map(|(p, _)| p.clone()).collect()
    }

    fn selected_node(&self) -> Option<&Node> {
        let id = self.state.borrow().selected().last().cloned()?;
        self.nodes.get(&id)
    }

    /// The selected session's listing, if a session is selected.
    pub fn selected_session(&self) -> Option<&SessionInfo> {
        match self.selected_node()? {
            Node::Session(i) => self.sessions.get(*i),
            _ => None,
        }
    }

    pub fn selected_path(&self) -> Option<PathBuf> {
        self.selected_session().map(|s| s.path.clone())
    }

    /// Whether the selection is a node with children (a project, the pins, a forked session).
    pub fn selected_has_children(&self) -> bool {
        let st = self.state.borrow();
        let sel = st.selected();
        self.paths.iter().any(|(p, kids)| *kids && p == sel)
    }

    pub fn toggle_selected(&mut self) -> bool {
        self.state.get_mut().toggle_selected()
    }

    /// Fold the selection (or go to its parent), or unfold it (a node with children).
    pub fn fold(&mut self, open: bool) -> bool {
        if open && !self.selected_has_children() {
            return false;
        }
        let st = self.state.get_mut();
        if open { st.key_right() } else { st.key_left() }
    }

    pub fn first_or_last(&mut self, last: bool) -> bool {
        if self.focus == PickerFocus::Hits {
            let Some(s) = &mut self.search else { return false };
            let to = if last { s.hits.len().saturating_sub(1) } else { 0 };
            let moved = to != s.selected;
            s.selected = to;
            return moved;
        }
        let rows = self.shown_rows();
        let to = if last { rows.last() } else { rows.first() };
        match to {
            Some(r) => self.state.get_mut().select(r.clone()),
            None => false,
        }
    }

    pub fn rows(&self) -> usize {
        self.state.borrow().flatten(&self.items).len()
    }

    /// The identifiers of the rows the tree shows now (folds applied).
    fn shown_rows(&self) -> Vec<Vec<String>> {
        self.state
            .borrow()
            .flatten(&self.items)
            .into_iter()
            .map(|f| f.identifier)
            .collect()
    }

    pub fn move_by(&mut self, d: isize) -> bool {
        if self.focus == PickerFocus::Hits {
            let Some(s) = &mut self.search else { return false };
            let last = s.hits.len().saturating_sub(1) as isize;
            let to = (s.selected as isize + d).clamp(0, last.max(0)) as usize;
            let moved = to != s.selected;
            s.selected = to;
            return moved;
        }
        // By the rows the tree shows now (the widget's own moves know rows only once drawn).
        let rows = self.shown_rows();
        if rows.is_empty() {
            return false;
        }
        let st = self.state.get_mut();
        let cur = rows.iter().position(|r| r.as_slice() == st.selected());
        let to = match cur {
            None => 0,
            Some(c) => (c as isize + d).clamp(0, rows.len() as isize - 1) as usize,
        };
        st.select(rows[to].clone())
    }

    pub fn edit_filter(&mut self, key: crossterm::event::KeyEvent) -> bool {
        let changed = self.filter.input(key);
        if changed {
            self.rebuild();
        }
        changed
    }

    pub fn paste(&mut self, text: &str) {
        match self.focus {
            PickerFocus::Query => {
                if let Some(s) = &mut self.search {
                    s.query.paste(text)
                }
            }
            _ => {
                self.filter.paste(text);
                self.rebuild();
            }
        }
    }

    pub fn clear_filter(&mut self) {
        self.filter = LineEditor::new("", false);
        self.rebuild();
    }

    /// The search hit under the cursor: its session and entry.
    pub fn selected_hit(&self) -> Option<(PathBuf, String)> {
        let s = self.search.as_ref()?;
        s.hits.get(s.selected).map(|(p, h)| (p.clone(), h.entry_id.clone()))
    }

    /// Where the tree is drawn inside the picker in `area`, and the preview beside (or below).
    fn panes(&self, area: Rect) -> (Rect, Rect, Option<Rect>) {
        let inner = Rect {
            x: area.x + 1,
            y: area.y + 1,
            width: area.width.saturating_sub(2),
            height: area.height.saturating_sub(2),
        };
        // The head line (filter, counts), then the tree and the preview.
        let head = Rect {
            height: 1.min(inner.height),
            ..inner
        };
        let body = Rect {
            y: inner.y + head.height,
            height: inner.height.saturating_sub(head.height),
            ..inner
        };
        if body.width >= 110 {
            let tree_w = body.width * 3 / 5;
            let tree = Rect { width: tree_w, ..body };
            let preview = Rect {
                x: body.x + tree_w + 1,
                width: body.width.saturating_sub(tree_w + 1),
                ..body
            };
            (head, tree, Some(preview))
        } else if body.height >= 22 {
            // Below: its top border and the preview's eleven lines.
            let tree_h = body.height - 12;
            let tree = Rect { height: tree_h, ..body };
            let preview = Rect {
                y: body.y + tree_h,
                height: 12,
                ..body
            };
            (head, tree, Some(preview))
        } else {
            (head, body, None)
        }
    }

    /// The tree widget (`None` only for duplicate identifiers, which `rebuild` never makes).
    fn widget(&self) -> Option<Tree<'_, String>> {
        let items: &[TreeItem<'static, String>] = &self.items;
        Some(
            Tree::new(items)
                .ok()?
                .highlight_style(Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD))
                .highlight_symbol("› ")
                .node_closed_symbol("⊞ ")
                .node_open_symbol("⊟ ")
                .node_no_children_symbol("  "),
        )
    }

    /// Let the tree widget settle its scroll for the picker drawn in `area` (it keeps the
    /// selection in view as it renders); `draw` then renders the same state.
    pub fn layout(&mut self, area: Rect) {
        let (_, tree, _) = self.panes(area);
        // The columns come and go with the width: the rows are made again when it crosses.
        if (tree.width >= COLUMNS_FROM) != self.wide {
            self.wide = tree.width >= COLUMNS_FROM;
            self.rebuild();
        }
        let mut scratch = Buffer::empty(tree);
        if let Some(w) = self.widget() {
            ratatui::widgets::StatefulWidget::render(w, tree, &mut scratch, &mut self.state.borrow_mut());
        }
    }

    /// A click on a row selects it (a click on the selected row opens nothing: Enter does).
    pub fn click(&mut self, area: Rect, col: u16, row: u16) -> bool {
        let (_, tree, _) = self.panes(area);
        if self.focus == PickerFocus::Hits {
            if row < tree.y + 1 || row >= tree.y + tree.height {
                return false;
            }
            let k = self.hit_rows_start(tree.height as usize) + (row - tree.y - 1) as usize;
            let Some(s) = &mut self.search else { return false };
            let Some(target) = hit_row_target(&s.hits, k) else {
                return false;
            };
            s.selected = target;
            return true;
        }
        self.state.get_mut().click_at(Position::new(col, row))
    }

    /// The first hit row shown in a list `h` rows high (the selection kept in view).
    fn hit_rows_start(&self, h: usize) -> usize {
        let Some(s) = &self.search else { return 0 };
        let row_of_selected = hit_rows(&s.hits)
            .iter()
            .position(|r| *r == Some(s.selected))
            .unwrap_or(0);
        row_of_selected.saturating_sub(h.saturating_sub(2))
    }

    pub(crate) fn render(&self, f: &mut Frame, area: Rect) {
        f.render_widget(Clear, area);
        let n = self.sessions.iter().filter(|s| s.is_session()).count();
        let title = format!(
            " sessions · {} (Tab: {}) · {n} ",
            if self.all { "all projects" } else { "this project" },
            if self.all { "this project" } else { "all projects" },
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(fg(ACCENT))
            .title(Span::styled(title, super::theme::title()));
        f.render_widget(block, area);
        let (head, tree, preview) = self.panes(area);
        f.render_widget(Paragraph::new(self.head_line()), head);
        match self.focus {
            PickerFocus::Query | PickerFocus::Hits => self.draw_hits(f, tree),
            _ => self.draw_tree(f, tree),
        }
        if let Some(p) = preview {
            let lines = self.preview_lines(p.width.saturating_sub(2) as usize);
            let block = Block::default()
                .borders(if p.x > tree.x { Borders::LEFT } else { Borders::TOP })
                .border_style(fg(DIM));
            f.render_widget(Paragraph::new(lines).block(block), p);
        }
    }

    fn head_line(&self) -> Line<'static> {
        match self.focus {
            PickerFocus::Query | PickerFocus::Hits => {
                let Some(s) = &self.search else { return Line::default() };
                let mut spans = vec![Span::styled(" search: ", fg(MUTED))];
                spans.extend(s.query.line_spans(0, fg(ACCENT)));
                let sessions = s.hits.iter().map(|(p, _)| p).collect::<HashSet<_>>().len();
                let state = if s.running {
                    format!("searching… {} of {} files", s.files.0, s.files.1)
                } else if s.files.1 > 0 {
                    format!(
                        "{} files in {}",
                        s.files.1,
                        crate::engine::units::duration(s.elapsed_ms as f64)
                    )
                } else {
                    "enter searches the listed sessions".into()
                };
                spans.push(Span::styled(
                    format!(
                        "   {} hit{} in {sessions} session{} · {state}",
                        s.hits.len(),
                        if s.hits.len() == 1 { "" } else { "s" },
                        if sessions == 1 { "" } else { "s" }
                    ),
                    fg(DIM),
                ));
                Line::from(spans)
            }
            _ => {
                let mut spans = vec![Span::styled(" filter: ", fg(MUTED))];
                if let Some((q, paths)) = &self.only
                    && self.focus != PickerFocus::Filter
                    && self.filter.text().is_empty()
                {
                    spans.push(Span::styled(
                        format!("the {} sessions \"{q}\" matches (bonsai resume)", paths.len()),
                        fg(ACCENT),
                    ));
                } else if self.focus == PickerFocus::Filter || !self.filter.text().is_empty() {
                    spans.extend(self.filter.line_spans(0, fg(ACCENT)));
                } else {
                    spans.push(Span::styled(
                        "/ filters by name · s searches inside the sessions · p pins",
                        fg(DIM),
                    ));
                }
                Line::from(spans)
            }
        }
    }

    fn draw_tree(&self, f: &mut Frame, area: Rect) {
        let mut lines: Vec<Line> = vec![];
        if let Some(e) = &self.error {
            lines.push(Line::from(Span::styled(format!(" {e}"), fg(ERROR))));
        }
        if let Some(p) = &self.opening {
            lines.push(Line::from(Span::styled(
                format!(" opening {}…", p.display()),
                fg(MUTED),
            )));
        } else if self.loading && self.items.is_empty() {
            lines.push(Line::from(Span::styled(" reading the session folders…", fg(MUTED))));
        } else if self.items.is_empty() {
            let msg = if self.sessions.is_empty() {
                match (self.all, self.everywhere) {
                    (true, _) | (false, Some(0)) => {
                        " no Pi sessions found in any project (Pi writes them under ~/.pi/agent/sessions)".to_string()
                    }
                    (false, Some(n)) => format!(
                        " no Pi sessions for this directory; {n} in other projects: Tab lists them (or bonsai list --all)"
                    ),
                    (false, None) => " no Pi sessions found for this project (Tab: all projects)".to_string(),
                }
            } else {
                format!(
                    " no session matches \"{}\" ({} in this list; Backspace to widen)",
                    self.filter.text(),
                    self.sessions.len()
                )
            };
            lines.push(Line::from(Span::styled(msg, fg(MUTED))));
        }
        let top = lines.len() as u16;
        if !lines.is_empty() {
            f.render_widget(
                Paragraph::new(lines),
                Rect {
                    height: top.min(area.height),
                    ..area
                },
            );
        }
        if self.items.is_empty() || top >= area.height {
            return;
        }
        let rest = Rect {
            y: area.y + top,
            height: area.height - top,
            ..area
        };
        if let Some(w) = self.widget() {
            f.render_stateful_widget(w, rest, &mut self.state.borrow_mut());
        }
    }

    fn draw_hits(&self, f: &mut Frame, area: Rect) {
        let Some(s) = &self.search else { return };
        let mut lines: Vec<Line> = vec![];
        if let Some(e) = &s.error {
            lines.push(Line::from(Span::styled(format!(" {e}"), fg(ERROR))));
        } else if s.hits.is_empty() {
            lines.push(Line::from(Span::styled(
                if s.running {
                    " searching…"
                } else if s.files.1 > 0 {
                    " no hits"
                } else {
                    " type what to find, enter searches"
                },
                fg(MUTED),
            )));
        }
        let rows = hit_rows(&s.hits);
        let h = area.height as usize;
        let start = self.hit_rows_start(h);
        let titles: HashMap<&PathBuf, String> = self.sessions.iter().map(|x| (&x.path, x.title())).collect();
        for r in rows.iter().skip(start).take(h.saturating_sub(lines.len())) {
            match r {
                None => {}
                Some(k) => {
                    let (p, hit) = &s.hits[*k];
                    let first_of_session = *k == 0 || &s.hits[k - 1].0 != p;
                    if first_of_session {
                        let name = titles.get(p).cloned().unwrap_or_else(|| p.display().to_string());
                        lines.push(Line::from(Span::styled(format!(" {name}"), title())));
                    }
                    let sel = *k == s.selected;
                    let time = hit.timestamp.get(..16).unwrap_or(&hit.timestamp).replace('T', " ");
                    let (pre, m, post) = (
                        &hit.snippet[..hit.at.start],
                        &hit.snippet[hit.at.clone()],
                        &hit.snippet[hit.at.end..],
                    );
                    let mut line = Line::from(vec![
                        Span::styled(if sel { " › " } else { "   " }, fg(ACCENT)),
                        Span::styled(format!("{} {:<10} {time}  ", hit.entry_id, hit.role), fg(DIM)),
                        Span::raw(pre.to_string()),
                        Span::styled(m.to_string(), fg(WARNING).add_modifier(Modifier::BOLD)),
                        Span::raw(post.to_string()),
                    ]);
                    if sel {
                        line = line.style(Style::default().bg(SELECTED_BG));
                    }
                    lines.push(line);
                }
            }
        }
        f.render_widget(Paragraph::new(lines), area);
    }

    /// What the preview pane says of the selection.
    fn preview_lines(&self, width: usize) -> Vec<Line<'static>> {
        let cut = |s: &str| truncate_to_width(s, width, "…");
        let mut out = vec![];
        if let Some(g) = &self.gone {
            out.push(Line::from(Span::styled(
                cut(&format!(
                    " {} is gone (deleted or moved)",
                    g.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
                )),
                fg(WARNING),
            )));
        }
        let session = if matches!(self.focus, PickerFocus::Hits | PickerFocus::Query) {
            self.selected_hit()
                .and_then(|(p, _)| self.sessions.iter().position(|s| s.path == p))
        } else {
            match self.selected_node() {
                Some(Node::Session(i)) | Some(Node::Problem(i)) => Some(*i),
                Some(node) => {
                    out.extend(self.node_preview(node, width));
                    return out;
                }
                None => None,
            }
        };
        if let Some(i) = session {
            out.extend(self.session_preview(i, width));
        }
        out
    }

    /// What a row that is no session shows: a project, the pins, the trash, a trashed session.
    fn node_preview(&self, node: &Node, width: usize) -> Vec<Line<'static>> {
        let cut = |s: &str| truncate_to_width(s, width, "…");
        let mut out = vec![];
        match node {
            Node::Project { label, sessions } => {
                out.push(Line::from(Span::styled(cut(&format!(" {label}")), title())));
                out.push(Line::from(Span::styled(
                    format!(" {sessions} session{}", if *sessions == 1 { "" } else { "s" }),
                    fg(MUTED),
                )));
            }
            Node::Pinned => {
                out.push(Line::from(Span::styled(" pinned sessions (p unpins)", fg(MUTED))));
            }
            Node::Trash => {
                out.push(Line::from(Span::styled(" bonsai's trash", title())));
                for l in [
                    "sessions moved out of Pi's session folders, with their backups:",
                    "Pi's /resume does not list them.",
                    "u puts the selected one back where it was; D empties the trash",
                    "(asks first, says how much).",
                ] {
                    out.push(Line::from(Span::styled(cut(&format!(" {l}")), fg(MUTED))));
                }
            }
            Node::Trashed(i) => {
                let (t, bytes, first) = &self.trash[*i];
                let kv = |k: &str, v: String| {
                    Line::from(vec![Span::styled(format!(" {k:<8}"), fg(DIM)), Span::raw(cut(&v))])
                };
                out.push(Line::from(Span::styled(cut(" in the trash"), title())));
                out.push(kv("first", first.clone().unwrap_or_else(|| "(no messages)".into())));
                out.push(kv(
                    "was",
                    tilde(&t.original.to_string_lossy(), self.user_home.as_deref()),
                ));
                let when = crate::engine::load::js::iso_from_ms(t.at_ms);
                out.push(kv("trashed", when.get(..16).unwrap_or(&when).replace('T', " ")));
                out.push(kv(
                    "size",
                    format!(
                        "{}{}",
                        size_text(*bytes),
                        match t.side.len() {
                            0 => String::new(),
                            n => format!(" with {n} backup file{}", if n == 1 { "" } else { "s" }),
                        }
                    ),
                ));
                out.push(kv("keys", "u restores it · D empties the trash".into()));
            }
            Node::Session(_) | Node::Problem(_) => {}
        }
        out
    }

    /// A listed session: its title, file, size, header, folder, where it was forked from, its
    /// first and newest requests, its context, what it spent and its leftovers.
    fn session_preview(&self, i: usize, width: usize) -> Vec<Line<'static>> {
        let cut = |s: &str| truncate_to_width(s, width, "…");
        let mut out = vec![];
        let s = &self.sessions[i];
        if let Some(p) = &s.problem {
            out.push(Line::from(Span::styled(
                cut(&format!(" {}", s.path.display())),
                fg(DIM),
            )));
            out.push(Line::from(Span::styled(
                cut(&format!(" not listed as a session: {}", p.reason())),
                fg(WARNING),
            )));
            return out;
        }
        let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!(" {k:<8}"), fg(DIM)), Span::raw(cut(&v))]);
        out.push(Line::from(Span::styled(cut(&format!(" {}", s.title())), title())));
        if s.title_is_made() {
            out.push(Line::from(Span::styled(
                cut(" ~ bonsai's title: no name yet (R names it)"),
                fg(DIM),
            )));
        }
        let one = |t: &str| crate::engine::units::one_line(t).into_owned();
        let name = s
            .path
            .file_name()
            .map(|n| one(&n.to_string_lossy()))
            .unwrap_or_default();
        out.push(kv("file", name));
        out.push(kv(
            "folder",
            tilde(&one(&s.dir.to_string_lossy()), self.user_home.as_deref()),
        ));
        out.push(kv(
            "size",
            format!(
                "{} entries · {} · modified {}",
                s.entries,
                size_text(s.bytes),
                s.modified_iso().get(..16).unwrap_or("").replace('T', " ")
            ),
        ));
        out.push(kv(
            "header",
            format!(
                "v{} · created {} · id {}",
                s.version.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
                s.created
                    .as_deref()
                    .and_then(|c| c.get(..16))
                    .unwrap_or("?")
                    .replace('T', " "),
                s.id.get(..13).unwrap_or(&s.id)
            ),
        ));
        out.push(kv("cwd", tilde(&s.shown_cwd(), self.user_home.as_deref())));
        if let Some(p) = &s.parent_session {
            let parent = self
                .sessions
                .iter()
                .find(|x| x.path.to_string_lossy() == p.as_str())
                .map(|x| x.title());
            out.push(kv("from", parent.unwrap_or_else(|| one(p))));
        }
        out.push(kv(
            "first",
            s.first_message.clone().unwrap_or_else(|| "(no request)".into()),
        ));
        out.push(kv(
            "newest",
            s.last_message.clone().unwrap_or_else(|| "(no request)".into()),
        ));
        out.extend(self.context_preview(i, width));
        // Counted as `bonsai usage` counts: the agent's replies, then the summary calls and
        // the copies from the session it was forked from, each apart.
        let sp = &s.spent;
        if sp.calls + sp.summaries.calls + sp.copies.calls > 0 {
            use crate::engine::units::{plural, tokens_short as tokens};
            let mut text = format!(
                "{} · {} · {} tokens",
                money(sp.cost),
                plural(sp.calls, "call", "calls"),
                tokens(sp.tokens)
            );
            if sp.uncosted > 0 {
                text += &format!(
                    " ({} without a recorded cost)",
                    crate::engine::units::count(sp.uncosted)
                );
            }
            out.push(kv("spent", text));
            if sp.summaries.calls > 0 {
                out.push(kv(
                    "",
                    format!(
                        "and {} · {} · {} tokens",
                        plural(sp.summaries.calls, "summary call", "summary calls"),
                        money(sp.summaries.cost),
                        tokens(sp.summaries.tokens)
                    ),
                ));
            }
            if sp.copies.calls > 0 {
                out.push(kv(
                    "",
                    format!(
                        "not counted: {} copied from the session it was forked from",
                        plural(sp.copies.calls, "call", "calls")
                    ),
                ));
            }
        }
        out.extend(self.leftovers_preview(&s.path, width));
        out
    }

    /// The context against the model's window, as of the newest reply.
    fn context_preview(&self, i: usize, width: usize) -> Vec<Line<'static>> {
        let cut = |s: &str| truncate_to_width(s, width, "…");
        let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!(" {k:<8}"), fg(DIM)), Span::raw(cut(&v))]);
        let s = &self.sessions[i];
        let mut out = vec![];
        let window = self.windows.get(i).copied().flatten();
        let model = s.model.as_ref().map(|(p, m)| format!("{p}/{m}")).unwrap_or_default();
        match (s.context_tokens, window) {
            (Some(t), Some(w)) if w > 0 => {
                let bar_w = width.saturating_sub(12).clamp(8, 40);
                let filled = ((t as f64 / w as f64).min(1.0) * bar_w as f64).round() as usize;
                let colour = if t * 10 >= w * 9 {
                    ERROR
                } else if t * 10 >= w * 7 {
                    WARNING
                } else {
                    SUCCESS
                };
                out.push(Line::from(vec![
                    Span::styled(" context ", fg(DIM)),
                    Span::styled("▓".repeat(filled), fg(colour)),
                    Span::styled("░".repeat(bar_w - filled), fg(DIM)),
                ]));
                out.push(Line::from(Span::styled(
                    cut(&format!(
                        "         {} / {} tokens ({}%) · {model}",
                        crate::engine::edit::prune::thousands(t),
                        crate::engine::edit::prune::thousands(w),
                        crate::engine::units::percent(t, w).unwrap_or(0)
                    )),
                    fg(MUTED),
                )));
            }
            (Some(t), _) => out.push(kv(
                "context",
                format!(
                    "{} tokens · {model} (window unknown)",
                    crate::engine::edit::prune::thousands(t)
                ),
            )),
            (None, _) => out.push(kv("context", "no reply yet".into())),
        }
        out
    }

    /// Leftovers: each backup and export with its size and age (B removes the old ones).
    fn leftovers_preview(&self, path: &std::path::Path, width: usize) -> Vec<Line<'static>> {
        let cut = |s: &str| truncate_to_width(s, width, "…");
        let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!(" {k:<8}"), fg(DIM)), Span::raw(cut(&v))]);
        let mut out = vec![];
        let now_ms = self.now_ms;
        let (backups, old) = self.backups_of(path, now_ms);
        let (exports, old_exports) = self.exports_of(path, now_ms);
        if !backups.is_empty() || !exports.is_empty() {
            let n = old.len() + old_exports.len();
            out.push(kv(
                "backups",
                if n > 0 {
                    format!("B removes the {n} older than {OLD_BACKUP_DAYS} days")
                } else {
                    "none older than 30 days".to_string()
                },
            ));
            let rows = backups
                .iter()
                .map(|b| {
                    use crate::store::backups::BackupKind;
                    let what = match b.kind {
                        BackupKind::Original => "copy before a rewrite",
                        BackupKind::Removed => "lines a delete removed",
                        BackupKind::Restored => "removed lines, restored",
                    };
                    let why = if b.needed_for_restore {
                        " · restore needs it"
                    } else {
                        ""
                    };
                    (
                        format!("{what}  {}  {:.0} d{why}", size_text(b.bytes), b.age_days(now_ms)),
                        b.needed_for_restore,
                    )
                })
                .chain(exports.iter().map(|e| {
                    let name = tilde(&e.path.to_string_lossy(), self.user_home.as_deref());
                    (
                        format!("{name}  {}  {:.0} d · export", size_text(e.bytes), e.age_days(now_ms)),
                        false,
                    )
                }))
                .collect::<Vec<_>>();
            let shown = rows.len().min(4);
            for (text, kept) in &rows[..shown] {
                out.push(Line::from(Span::styled(
                    cut(&format!("          {text}")),
                    if *kept { fg(DIM) } else { fg(MUTED) },
                )));
            }
            if rows.len() > shown {
                out.push(Line::from(Span::styled(
                    format!("          and {} more", rows.len() - shown),
                    fg(DIM),
                )));
            }
        }
        out
    }
}

/// The hit list's rows: `None` for a session's heading, `Some(k)` for hit `k`.
fn hit_rows(hits: &[(PathBuf, Hit)]) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(hits.len() + 8);
    for (k, (p, _)) in hits.iter().enumerate() {
        if k == 0 || &hits[k - 1].0 != p {
            out.push(None);
        }
        out.push(Some(k));
    }
    out
}

/// The hit a click on row `k` of the hit list means (a heading means its first hit).
fn hit_row_target(hits: &[(PathBuf, Hit)], k: usize) -> Option<usize> {
    let rows = hit_rows(hits);
    rows.get(k)
        .and_then(|r| r.or_else(|| rows.get(k + 1).copied().flatten()))
}

#[cfg(test)]
pub(crate) mod snapshots;
mod update;
