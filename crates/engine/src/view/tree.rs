//! Pi's `getTree()`: roots in file order, children sorted by timestamp (stable), orphans and
//! self-parents as roots. Duplicate ids resolve as Pi's maps do: the later entry owns the id.

use crate::load::session::Session;
use crate::load::table::Table;

/// The tables live in memory, or in place in bonsai's index when the session was opened from
/// an unchanged file's index (`view::stored`): then building the tree reads nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub roots: Table<usize>,
    /// Children per entry index, in Pi's order (`children[i]`).
    pub children: Children,
    /// Reachable from a root (entries in a parent cycle are not).
    pub in_tree: Table<bool>,
}

/// Every entry's children in one list, each entry's a slice of it: one allocation for the
/// whole tree instead of one per entry (a 437,000-entry session's tree in 7 MB instead of 25,
/// which is what opening it from bonsai's index spends most of its time on: fresh memory).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Children {
    /// Entry `i`'s children are `list[at[i]..at[i + 1]]`.
    pub(crate) at: Table<usize>,
    pub(crate) list: Table<usize>,
}

impl Children {
    /// Read in place from bonsai's index (see `Table`).
    pub fn is_in_place(&self) -> bool {
        self.list.is_in_place()
    }
    /// How many entries there are (not children).
    pub fn len(&self) -> usize {
        self.at.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Each entry's children, in entry order.
    pub fn iter(&self) -> impl Iterator<Item = &[usize]> + '_ {
        (0..self.len()).map(|i| &self[i])
    }
}

impl std::ops::Index<usize> for Children {
    type Output = [usize];
    fn index(&self, i: usize) -> &[usize] {
        &self.list[self.at[i]..self.at[i + 1]]
    }
}

impl Tree {
    pub fn build(s: &Session) -> Tree {
        // Kept in bonsai's index for this very session (`tree_view::stored`): read in place.
        if let Some(t) = s.kept::<Tree>().filter(|t| t.children.len() == s.entries.len()) {
            return t.clone();
        }
        let n = s.entries.len();
        // With duplicate ids every entry of an id stands for its owner (the later one).
        let node = |i: usize| {
            if s.has_duplicate_ids {
                s.idx_of(&s.entries[i].id).unwrap_or(i)
            } else {
                i
            }
        };
        let mut roots = Vec::new();
        // Counted, then placed in file order (each entry's children as they were pushed).
        let mut at = vec![0usize; n + 1];
        for i in 0..n {
            if let Some(pi) = s.parent_of(i) {
                at[pi + 1] += 1;
            }
        }
        for i in 0..n {
            at[i + 1] += at[i];
        }
        let mut next = at.clone();
        let mut list = vec![0usize; at[n]];
        for i in 0..n {
            let me = node(i);
            // `parent_idx` is none for no parent, a self-parent and a missing parent alike:
            // each makes a root in Pi's getTree.
            match s.parent_of(i) {
                None => roots.push(me),
                Some(pi) => {
                    list[next[pi]] = me;
                    next[pi] += 1;
                }
            }
        }
        drop(next);
        for p in 0..n {
            let ch = &mut list[at[p]..at[p + 1]];
            if ch.len() > 1 {
                // Pi sorts with `a.ts - b.ts`: NaN for an invalid date, which V8 counts as equal
                // (not a total order, so the order is V8's algorithm's; Rust's sort may panic).
                crate::load::js::v8_sort_by(ch, |&a, &b| s.entries[a].ts - s.entries[b].ts);
            }
        }
        let children = Children {
            at: at.into(),
            list: list.into(),
        };
        let mut in_tree = vec![false; n];
        let mut stack: Vec<usize> = roots.clone();
        while let Some(i) = stack.pop() {
            if in_tree[i] {
                continue;
            }
            in_tree[i] = true;
            stack.extend(children[i].iter().copied());
        }
        Tree {
            roots: roots.into(),
            children,
            in_tree: in_tree.into(),
        }
    }

    /// Number of branch points on the deepest root→leaf path.
    pub fn max_branch_depth(&self) -> usize {
        let mut max = 0;
        let mut seen = vec![false; self.children.len()];
        let mut stack: Vec<(usize, usize)> = self.roots.iter().map(|&r| (r, 0)).collect();
        while let Some((i, d)) = stack.pop() {
            if seen[i] {
                continue;
            }
            seen[i] = true;
            max = max.max(d);
            let nd = if self.children[i].len() > 1 { d + 1 } else { d };
            for &c in &self.children[i] {
                stack.push((c, nd));
            }
        }
        max
    }
}
