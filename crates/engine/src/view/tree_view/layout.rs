//! Pi's layout walk: the flattened order (`flattenTree`) and the layout of what a filter
//! leaves visible (`recalculateVisualStructure`), with the dense per-entry tables the keys use.

use super::model::{Gutter, Layout, NONE, ToolCallAt, TreeView};
use crate::load::entry::{Kind, Role};
use crate::load::session::Session;
use crate::view::tree::Tree;

/// Pi's layout walk (`flattenTree` and `recalculateVisualStructure` share it): pre-order,
/// a branch point indents its children, the first generation after a branch indents once
/// more, single-child chains stay flat, and a shown connector leaves a guide for descendants.
fn lay_out(
    roots: &[usize],
    multiple_roots: bool,
    n: usize,
    gutters: &mut Vec<Gutter>,
    mut children_of: impl FnMut(usize, &mut Vec<usize>),
    mut visit: impl FnMut(usize, Layout),
) {
    let mut children = Vec::new();
    // (node, indent, justBranched, showConnector, isLast, gutters, isVirtualRootChild)
    let mut stack: Vec<(usize, u32, bool, bool, bool, Option<u32>, bool)> = Vec::new();
    let mr = multiple_roots;
    for (i, &r) in roots.iter().enumerate().rev() {
        stack.push((r, mr as u32, mr, mr, i == roots.len() - 1, None, mr));
    }
    // A duplicate id can put a node under two parents; draw it once.
    let mut seen = vec![false; n];
    while let Some((node, indent, just, conn, last, gut, vrc)) = stack.pop() {
        if std::mem::replace(&mut seen[node], true) {
            continue;
        }
        visit(
            node,
            Layout {
                indent,
                show_connector: conn,
                is_last: last,
                gutters: gut.unwrap_or(NONE),
                is_virtual_root_child: vrc,
                _pad: 0,
            },
        );
        children.clear();
        children_of(node, &mut children);
        let multi = children.len() > 1;
        let child_indent = if multi || (just && indent > 0) {
            indent + 1
        } else {
            indent
        };
        let display = if mr { indent.saturating_sub(1) } else { indent };
        let child_gut = if conn && !vrc {
            gutters.push(Gutter {
                position: display.saturating_sub(1),
                show: !last,
                prev: gut.unwrap_or(NONE),
                _pad: [0; 3],
            });
            Some(gutters.len() as u32 - 1)
        } else {
            gut
        };
        for (k, &c) in children.iter().enumerate().rev() {
            stack.push((c, child_indent, multi, multi, k == children.len() - 1, child_gut, false));
        }
    }
}

/// The id of the `k`th tool call of entry `e`.
pub(super) fn call_id(s: &Session, e: u32, k: u32) -> Option<&str> {
    Some(&s.entries[e as usize].message()?.tool_call_ids.get(k as usize)?.0)
}

impl TreeView {
    pub(super) fn contains_active(s: &Session, tree: &Tree, leaf: Option<usize>) -> Vec<bool> {
        let n = s.entries.len();
        let mut has = vec![false; n];
        let Some(l) = leaf else { return has };
        // Mark the leaf and its ancestors that are tree nodes reachable from roots.
        let mut cur = Some(l);
        let mut guard = 0;
        while let Some(i) = cur {
            if has[i] || guard > n {
                break;
            }
            has[i] = true;
            guard += 1;
            cur = s.parent_of(i).filter(|&p| tree.children[p].contains(&i));
        }
        has
    }

    pub(super) fn flatten(&mut self, s: &Session, tree: &Tree) {
        let active = Self::contains_active(s, tree, self.leaf);
        let n = s.entries.len();
        let multiple = tree.roots.len() > 1;
        let mut roots = tree.roots.to_vec();
        roots.sort_by_key(|r| !active[*r]);
        let mut gutters = std::mem::take(self.gutters.emptied());
        let mut flat = std::mem::take(self.flat.emptied());
        let mut layouts = vec![Layout::NOWHERE; n];
        flat.reserve(n);
        lay_out(
            &roots,
            multiple,
            n,
            &mut gutters,
            |node, ordered| {
                let children = &tree.children[node];
                ordered.extend(children.iter().copied().filter(|c| active[*c]));
                ordered.extend(children.iter().copied().filter(|c| !active[*c]));
            },
            |node, layout| {
                flat.push(node);
                layouts[node] = layout;
            },
        );
        self.gutters = gutters.into();
        self.flat = flat.into();
        self.layout = layouts.into();
    }

    /// toolCallId → (assistant entry, its call's place) over `flat` (Pi's flattened order),
    /// the last one in that order winning as in Pi's map: every call sorted by its id's hash,
    /// one per id (a sorted table rather than a hash map, so an index can hold it in place).
    /// Built on its own so it can run beside the filter (it is a third of a big session's
    /// rows). The hashes are read in place from a session opened from bonsai's index: its
    /// replies are decoded only where two calls hash alike (to tell them apart).
    pub(super) fn tool_call_table(s: &Session, flat: &[usize]) -> Vec<ToolCallAt> {
        let mut calls = Vec::new();
        for &node in flat {
            if let Kind::Message(m) = &s.entries[node].kind
                && m.facts().is(&Role::Assistant)
            {
                s.tool_call_hashes(m, |k, hash| {
                    calls.push(ToolCallAt {
                        hash,
                        entry: node as u32,
                        k,
                    })
                });
            }
        }
        // Stable: within one hash the calls stay in flattened order.
        calls.sort_by_key(|c| c.hash);
        let mut table = Vec::with_capacity(calls.len());
        for run in calls.chunk_by(|a, b| a.hash == b.hash) {
            if let [only] = run {
                table.push(*only);
                continue;
            }
            // Latest first: a call whose id a later one has is shadowed by it.
            let kept = table.len();
            for c in run.iter().rev() {
                let id = call_id(s, c.entry, c.k);
                if !table[kept..]
                    .iter()
                    .any(|d: &ToolCallAt| call_id(s, d.entry, d.k) == id)
                {
                    table.push(*c);
                }
            }
            table[kept..].reverse();
        }
        table
    }

    /// The call with the id `id` (see [`TreeView::tool_call_table`]).
    pub(super) fn tool_call(&self, s: &Session, id: &str) -> Option<ToolCallAt> {
        let hash = crate::load::entry::tool_call_id_hash(id);
        let from = self.tool_calls.partition_point(|c| c.hash < hash);
        self.tool_calls[from..]
            .iter()
            .take_while(|c| c.hash == hash)
            .find(|c| call_id(s, c.entry, c.k) == Some(id))
            .copied()
    }

    pub(super) fn relayout(&mut self, s: &Session) {
        let n = s.entries.len();
        let mut is_visible = std::mem::take(self.is_visible.emptied());
        is_visible.resize(n, false);
        let mut visible_parent = std::mem::take(self.visible_parent.emptied());
        visible_parent.resize(n, NONE);
        let mut row_of = std::mem::take(self.row_of.emptied());
        row_of.resize(n, NONE);
        self.visible_child_at = Vec::new().into();
        self.visible_child_list = Vec::new().into();
        for (k, &fi) in self.visible.iter().enumerate() {
            is_visible[self.flat[fi]] = true;
            row_of[self.flat[fi]] = k as u32;
        }
        self.row_of = row_of.into();
        if self.visible.is_empty() {
            self.is_visible = is_visible.into();
            self.visible_parent = visible_parent.into();
            return;
        }
        // Nearest visible ancestors, then the children lists laid out flat (counts, offsets,
        // fill in row order) so no entry needs a list of its own.
        let mut roots = Vec::new();
        let mut at = vec![0u32; n + 1];
        for &fi in &self.visible {
            let i = self.flat[fi];
            let mut cur = s.parent_of(i);
            let mut guard = 0;
            let anc = loop {
                match cur {
                    None => break None,
                    Some(p) if is_visible[p] => break Some(p),
                    Some(p) => {
                        guard += 1;
                        if guard > n {
                            break None;
                        }
                        cur = s.parent_of(p);
                    }
                }
            };
            match anc {
                Some(p) => {
                    visible_parent[i] = p as u32;
                    at[p + 1] += 1;
                }
                None => roots.push(i),
            }
        }
        for k in 0..n {
            at[k + 1] += at[k];
        }
        let mut list = vec![0u32; at[n] as usize];
        let mut fill = at.clone();
        for &fi in &self.visible {
            let i = self.flat[fi];
            let p = visible_parent[i];
            if p != NONE {
                list[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
            }
        }
        // Entries whose visible ancestors loop (a duplicated id can close a parent cycle) are
        // reached from no root: the first of each such group is drawn as a root of its own,
        // so every visible row has a layout.
        let mut reached = vec![false; n];
        let mut stack: Vec<usize> = roots.clone();
        let mark = |stack: &mut Vec<usize>, reached: &mut Vec<bool>| {
            while let Some(i) = stack.pop() {
                if std::mem::replace(&mut reached[i], true) {
                    continue;
                }
                stack.extend(list[at[i] as usize..at[i + 1] as usize].iter().map(|&c| c as usize));
            }
        };
        mark(&mut stack, &mut reached);
        for &fi in &self.visible {
            let i = self.flat[fi];
            if !reached[i] {
                roots.push(i);
                stack.push(i);
                mark(&mut stack, &mut reached);
            }
        }
        self.is_visible = is_visible.into();
        self.visible_parent = visible_parent.into();
        self.multiple_roots = roots.len() > 1;
        let mr = self.multiple_roots;
        let mut gutters = std::mem::take(self.gutters.emptied());
        let mut layouts = std::mem::take(self.layout.to_mut());
        lay_out(
            &roots,
            mr,
            n,
            &mut gutters,
            |node, out| {
                out.extend(
                    list[at[node] as usize..at[node + 1] as usize]
                        .iter()
                        .map(|&c| c as usize),
                )
            },
            |node, layout| layouts[node] = layout,
        );
        self.gutters = gutters.into();
        self.layout = layouts.into();
        self.visible_child_at = at.into();
        self.visible_child_list = list.into();
    }

    /// Visible children of a visible entry, in row order.
    pub(super) fn visible_children(&self, i: usize) -> &[u32] {
        match (self.visible_child_at.get(i), self.visible_child_at.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.visible_child_list[a as usize..b as usize],
            _ => &[],
        }
    }

    pub(super) fn visible_parent(&self, i: usize) -> Option<usize> {
        self.visible_parent.get(i).filter(|&&p| p != NONE).map(|&p| p as usize)
    }

    /// Pi's `isFoldable`: a visible root or the first node of a branch, with children.
    pub fn is_foldable(&self, i: usize) -> bool {
        if self.index_of_entry(i).is_none() || self.visible_children(i).is_empty() {
            return false;
        }
        match self.visible_parent(i) {
            None => true,
            Some(p) => self.visible_children(p).len() > 1,
        }
    }

    pub(super) fn index_of_entry(&self, i: usize) -> Option<usize> {
        self.row_of.get(i).filter(|&&k| k != NONE).map(|&k| k as usize)
    }

    /// Pi's `findBranchSegmentStart`.
    pub fn segment_jump(&self, down: bool) -> usize {
        let Some(mut cur) = self.selected_entry() else {
            return self.selected;
        };
        // Bounded walks: a malformed file must never hang a key press.
        if down {
            for _ in 0..=self.visible.len() {
                let ch = self.visible_children(cur);
                if ch.is_empty() {
                    return self.index_of_entry(cur).unwrap_or(self.selected);
                }
                if ch.len() > 1 {
                    return self.index_of_entry(ch[0] as usize).unwrap_or(self.selected);
                }
                cur = ch[0] as usize;
            }
            return self.selected;
        }
        for _ in 0..=self.visible.len() {
            let Some(p) = self.visible_parent(cur) else {
                return self.index_of_entry(cur).unwrap_or(self.selected);
            };
            let ch = self.visible_children(p).len();
            if ch > 1
                && let Some(k) = self.index_of_entry(cur)
                && k < self.selected
            {
                return k;
            }
            cur = p;
        }
        self.selected
    }
}
