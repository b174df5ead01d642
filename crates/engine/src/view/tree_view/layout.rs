//! Pi's layout walk: the flattened order (`flattenTree`) and the layout of what a filter
//! leaves visible (`recalculateVisualStructure`), with the dense per-entry tables the keys use.

use super::{NONE, TreeView};
use crate::load::entry::{Kind, Role};
use crate::load::session::Session;
use crate::view::tree::Tree;

/// A vertical guide line continuing a non-last branch (`│`), shared between siblings.
#[derive(Debug, Clone, Copy)]
pub(super) struct Gutter {
    pub(super) position: u32,
    pub(super) show: bool,
    pub(super) prev: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub indent: u32,
    pub show_connector: bool,
    pub is_last: bool,
    pub(super) gutters: Option<u32>,
    pub is_virtual_root_child: bool,
}

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
                gutters: gut,
                is_virtual_root_child: vrc,
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
                prev: gut,
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

/// Where a tool call is: the `k`th call of the reply at `entry`, and its id's hash.
#[derive(Debug, Clone, Copy)]
pub(super) struct ToolCallAt {
    pub hash: u64,
    pub entry: u32,
    pub k: u32,
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
        self.layout = vec![
            Layout {
                indent: 0,
                show_connector: false,
                is_last: false,
                gutters: None,
                is_virtual_root_child: false
            };
            n
        ];
        let multiple = tree.roots.len() > 1;
        let mut roots = tree.roots.clone();
        roots.sort_by_key(|r| !active[*r]);
        let mut gutters = std::mem::take(&mut self.gutters);
        let mut flat = std::mem::take(&mut self.flat);
        let mut layouts = std::mem::take(&mut self.layout);
        flat.reserve(n.saturating_sub(flat.len()));
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
        self.gutters = gutters;
        self.flat = flat;
        self.layout = layouts;
    }

    /// toolCallId → (assistant entry, its call's place) over `flat` (Pi's flattened order),
    /// the last one in that order winning as in Pi's map. Built on its own so it can run
    /// beside the filter (it is a third of a big session's rows). Keyed by the ids' hashes,
    /// which a session opened from bonsai's index reads in place: its replies are decoded
    /// only where two ids hash alike (to tell them apart) and for the rows shown.
    pub(super) fn tool_call_table(s: &Session, flat: &[usize]) -> hashbrown::HashTable<ToolCallAt> {
        let reply = |i: usize| match &s.entries[i].kind {
            Kind::Message(m) if m.facts().is(&Role::Assistant) => Some(m),
            _ => None,
        };
        // Sized once: growing it rehashes every call.
        let mut calls = 0;
        for &i in flat {
            if let Some(m) = reply(i) {
                s.tool_call_hashes(m, |_, _| calls += 1);
            }
        }
        let mut table = hashbrown::HashTable::with_capacity(calls);
        for &node in flat {
            if let Some(m) = reply(node) {
                s.tool_call_hashes(m, |k, hash| {
                    let found = table.entry(
                        hash,
                        |c: &ToolCallAt| c.hash == hash && call_id(s, c.entry, c.k) == call_id(s, node as u32, k),
                        |c: &ToolCallAt| c.hash,
                    );
                    found.insert(ToolCallAt {
                        hash,
                        entry: node as u32,
                        k,
                    });
                });
            }
        }
        table
    }

    pub(super) fn relayout(&mut self, s: &Session) {
        let n = s.entries.len();
        self.is_visible.clear();
        self.is_visible.resize(n, false);
        self.visible_parent.clear();
        self.visible_parent.resize(n, NONE);
        self.row_of.clear();
        self.row_of.resize(n, NONE);
        self.visible_child_at.clear();
        self.visible_child_list.clear();
        if self.visible.is_empty() {
            return;
        }
        for (k, &fi) in self.visible.iter().enumerate() {
            self.is_visible[self.flat[fi]] = true;
            self.row_of[self.flat[fi]] = k as u32;
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
                    Some(p) if self.is_visible[p] => break Some(p),
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
                    self.visible_parent[i] = p as u32;
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
            let p = self.visible_parent[i];
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
        self.multiple_roots = roots.len() > 1;
        let mr = self.multiple_roots;
        self.gutters.clear();
        let mut gutters = std::mem::take(&mut self.gutters);
        let mut layouts = std::mem::take(&mut self.layout);
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
        self.gutters = gutters;
        self.layout = layouts;
        self.visible_child_at = at;
        self.visible_child_list = list;
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
