//! Pi's `getTree()`: roots in file order, children sorted by timestamp (stable), orphans and
//! self-parents as roots. Duplicate ids resolve as Pi's maps do: the later entry owns the id.

use crate::load::session::Session;

#[derive(Debug, Clone)]
pub struct Tree {
    pub roots: Vec<usize>,
    /// Children per entry index, in Pi's order.
    pub children: Vec<Vec<usize>>,
    /// Reachable from a root (entries in a parent cycle are not).
    pub in_tree: Vec<bool>,
}

impl Tree {
    pub fn build(s: &Session) -> Tree {
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
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in 0..n {
            let me = node(i);
            // `parent_idx` is none for no parent, a self-parent and a missing parent alike:
            // each makes a root in Pi's getTree.
            match s.parent_of(i) {
                None => roots.push(me),
                Some(pi) => children[pi].push(me),
            }
        }
        for ch in children.iter_mut() {
            if ch.len() > 1 {
                // Pi sorts with `a.ts - b.ts`: NaN for an invalid date, which V8 counts as equal
                // (not a total order, so the order is V8's algorithm's; Rust's sort may panic).
                crate::load::js::v8_sort_by(ch, |&a, &b| s.entries[a].ts - s.entries[b].ts);
            }
        }
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
            roots,
            children,
            in_tree,
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
