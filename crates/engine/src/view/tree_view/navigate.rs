//! Making a view and moving in it: the first view of a session, the selection, folds, the
//! filter and search as keys change them.

use super::model::{FilterMode, TreeView};
use super::stored;
use crate::load::session::Session;
use crate::load::table::Table;
use crate::view::tree::Tree;
use rustc_hash::FxHashSet as HashSet;

impl TreeView {
    /// `now_ms` is "now" for label timestamps (Pi shows today's as HH:MM).
    pub fn new(s: &Session, tree: &Tree, leaf: Option<usize>, filter: FilterMode, now_ms: i64) -> TreeView {
        if let Some(v) = stored::tree_view(s, tree, leaf, filter, now_ms) {
            return v;
        }
        let mut v = TreeView::empty(s, tree, leaf, filter, now_ms);
        let roots = crate::view::archive::archived_roots(s);
        if !roots.is_empty() {
            v.archived = crate::view::archive::hidden(s, tree, &roots, leaf).into();
            let on_path: Vec<usize> = leaf.map(|l| s.path_to(l)).unwrap_or_default();
            v.archived_branches = roots.iter().filter(|r| !on_path.contains(r)).count();
        }
        v.flatten(s, tree);
        if let Some(l) = leaf {
            let mut active_path = vec![false; s.entries.len()];
            for i in s.path_to(l) {
                active_path[i] = true;
            }
            v.active_path = active_path.into();
        }
        // The tool-call table is built beside the filter (which never reads it).
        let flat = v.flat.clone();
        let (calls, ()) = rayon::join(|| TreeView::tool_call_table(s, &flat), || v.apply_filter(s));
        v.tool_calls = calls.into();
        v.select_nearest(s, leaf);
        v
    }

    /// A view with no rows yet (its tables sized for `s`, empty).
    pub(super) fn empty(s: &Session, tree: &Tree, leaf: Option<usize>, filter: FilterMode, now_ms: i64) -> TreeView {
        TreeView {
            leaf,
            active_path: vec![false; s.entries.len()].into(),
            multiple_roots: tree.roots.len() > 1,
            is_visible: vec![false; s.entries.len()].into(),
            ..TreeView::no_rows(filter, now_ms)
        }
    }

    /// A view of nothing: every table empty, nothing selected, searched or folded.
    pub(super) fn no_rows(filter: FilterMode, now_ms: i64) -> TreeView {
        TreeView {
            flat: Table::default(),
            layout: Table::default(),
            gutters: Table::default(),
            leaf: None,
            active_path: Table::default(),
            tool_calls: Table::default(),
            filter,
            search: String::new(),
            folded: HashSet::default(),
            show_label_times: false,
            visible: Table::default(),
            selected: 0,
            last_selected: None,
            multiple_roots: false,
            visible_parent: Table::default(),
            visible_child_at: Table::default(),
            visible_child_list: Table::default(),
            row_of: Table::default(),
            search_text: None,
            home: None,
            is_visible: Table::default(),
            now_ms,
            archived: Table::default(),
            archived_branches: 0,
            show_archived: false,
        }
    }

    /// Pi's `findNearestVisibleIndex`: the entry or its nearest visible ancestor, else the
    /// last row.
    pub fn nearest_visible(&self, s: &Session, id: Option<usize>) -> usize {
        if self.visible.is_empty() {
            return 0;
        }
        let mut cur = id;
        let mut guard = 0;
        while let Some(i) = cur {
            if let Some(k) = self.index_of_entry(i) {
                return k;
            }
            guard += 1;
            if guard > s.entries.len() {
                break;
            }
            cur = s.parent_of(i);
        }
        self.visible.len() - 1
    }

    pub fn selected_entry(&self) -> Option<usize> {
        self.visible.get(self.selected).map(|&f| self.flat[f])
    }

    pub fn select_entry(&mut self, s: &Session, entry: usize) {
        self.select_nearest(s, Some(entry));
    }

    /// Select `id`'s row or its nearest visible ancestor's (none: the last row).
    pub(super) fn select_nearest(&mut self, s: &Session, id: Option<usize>) {
        self.selected = self.nearest_visible(s, id);
        self.last_selected = self.selected_entry();
    }

    // ---- keys (Pi's TreeList.handleInput semantics) ----

    pub fn move_up(&mut self) {
        if self.visible.is_empty() {
            return;
        }
        self.selected = if self.selected == 0 {
            self.visible.len() - 1
        } else {
            self.selected - 1
        };
    }
    pub fn move_down(&mut self) {
        if self.visible.is_empty() {
            return;
        }
        self.selected = if self.selected + 1 >= self.visible.len() {
            0
        } else {
            self.selected + 1
        };
    }
    pub fn page_up(&mut self, page: usize) {
        self.selected = self.selected.saturating_sub(page);
    }
    pub fn page_down(&mut self, page: usize) {
        if !self.visible.is_empty() {
            self.selected = (self.selected + page).min(self.visible.len() - 1);
        }
    }
    pub fn fold_or_up(&mut self, s: &Session) {
        if let Some(cur) = self.selected_entry()
            && self.is_foldable(cur)
            && !self.folded.contains(&cur)
        {
            self.folded.insert(cur);
            self.apply_filter(s);
            return;
        }
        self.selected = self.segment_jump(false);
    }
    pub fn unfold_or_down(&mut self, s: &Session) {
        if let Some(cur) = self.selected_entry()
            && self.folded.remove(&cur)
        {
            self.apply_filter(s);
            return;
        }
        self.selected = self.segment_jump(true);
    }
    pub fn set_filter(&mut self, s: &Session, f: FilterMode) {
        self.filter = f;
        self.folded.clear();
        self.apply_filter(s);
    }
    /// Ctrl+T/U/L/A toggle their mode against default, as in Pi.
    pub fn toggle_filter(&mut self, s: &Session, f: FilterMode) {
        let next = if self.filter == f { FilterMode::Default } else { f };
        self.set_filter(s, next);
    }
    /// Show archived branches (dimmed) or hide them.
    pub fn set_show_archived(&mut self, s: &Session, show: bool) {
        self.show_archived = show;
        self.apply_filter(s);
    }

    /// Entry `i` is in an archived branch.
    pub fn is_archived(&self, i: usize) -> bool {
        self.archived.get(i).copied().unwrap_or(false)
    }

    pub fn set_search(&mut self, s: &Session, q: String) {
        self.search = q;
        self.folded.clear();
        self.apply_filter(s);
    }
}
