//! A session's tree and its `/tree` view as first shown (at the file's leaf, under one
//! filter), kept in bonsai's session index as plain tables and read in place when the file
//! is unchanged: a second open then builds neither, and touches only the pages of the rows it
//! draws. Measured on the 1 GB reference, building them was ~75 ms of a ~165 ms second open,
//! most of it the kernel clearing the fresh memory they took.
//!
//! Every table is checked whole when the index is opened (each its CRC-32, then every value's
//! bit pattern and every position in range), so a damaged or wrongly made view is refused
//! with the index, never drawn and never a panic. The view is used only for the session it
//! was made from (same entries, same leaf, same filter); any other view is built as before.

use super::model::{FilterMode, NONE, TreeView};
use crate::load::bytes::FileBytes;
use crate::load::session::{Kept, Session};
use crate::load::table::{IN_PLACE, Plain, Table};
use crate::view::context::{self, LeafContext};
use crate::view::tree::{Children, Tree};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How many tables a stored view has (in the order [`encode`] writes them).
const TABLES: usize = 16;

/// What an index's head says of its stored view: what it is of, and where each table is in
/// the view's part (offset from the part's start, bytes, CRC-32).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ViewsHead {
    filter: String,
    leaf: Option<u64>,
    entries: u64,
    archived_branches: u64,
    multiple_roots: bool,
    tables: Vec<(u64, u64, u32)>,
    /// The context at the file's leaf, as the first frame's gauge and edits need it.
    leaf_context: Option<LeafContext>,
}

/// The stored view of a session opened from its index, checked: the view itself, its tables
/// in place (its tree is kept beside it, as a [`Tree`] of its own, which `Tree::build` finds).
#[derive(Debug)]
pub struct StoredViews {
    entries: usize,
    view: TreeView,
}

fn pad_to_8(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(8), 0);
}

/// The view part of `s`'s index (its head encoded, its bytes; see `Session::to_index`): the
/// tree and the `/tree` view at the file's leaf under `filter`, built as an open without the
/// index builds them. Nothing where tables cannot be read in place on this machine
/// ([`IN_PLACE`]).
pub fn encode(s: &Session, filter: FilterMode) -> Option<(Vec<u8>, Vec<u8>)> {
    if !IN_PLACE {
        return None;
    }
    let tree = Tree::build(s);
    let v = TreeView::new(s, &tree, s.leaf(), filter, 0);
    let parts: [&[u8]; TABLES] = [
        tree.roots.as_bytes(),
        tree.children.at.as_bytes(),
        tree.children.list.as_bytes(),
        tree.in_tree.as_bytes(),
        v.flat.as_bytes(),
        v.layout.as_bytes(),
        v.gutters.as_bytes(),
        v.active_path.as_bytes(),
        v.tool_calls.as_bytes(),
        v.visible.as_bytes(),
        v.visible_parent.as_bytes(),
        v.visible_child_at.as_bytes(),
        v.visible_child_list.as_bytes(),
        v.row_of.as_bytes(),
        v.is_visible.as_bytes(),
        v.archived.as_bytes(),
    ];
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    let mut tables = Vec::with_capacity(TABLES);
    for p in parts {
        pad_to_8(&mut out);
        tables.push((out.len() as u64, p.len() as u64, crc32fast::hash(p)));
        out.extend_from_slice(p);
    }
    let leaf_context = s
        .leaf()
        .map(|leaf| LeafContext::of_projection(s, leaf, &context::project(s, &s.path_to(leaf))));
    let head = ViewsHead {
        leaf_context,
        filter: filter.name().to_string(),
        leaf: s.leaf().map(|l| l as u64),
        entries: s.entries.len() as u64,
        archived_branches: v.archived_branches as u64,
        multiple_roots: v.multiple_roots,
        tables,
    };
    Some((postcard::to_allocvec(&head).expect("a view's head encodes"), out))
}

/// The view part at `bytes[at..]` checked whole against its head for a session of `n`
/// entries: the tree and the view, or `None` when anything is off (a checksum, a bit pattern,
/// a position out of range, bytes not aligned as this machine needs), and the index is then
/// refused. An `ExtraDecoder` for `IndexedParse::decode`.
pub fn decode(bytes: &Arc<FileBytes>, at: usize, head: &[u8], n: usize) -> Option<Vec<Kept>> {
    let head: ViewsHead = postcard::from_bytes(head).ok()?;
    if !IN_PLACE || head.tables.len() != TABLES || head.entries != n as u64 {
        return None;
    }
    let ranges: Vec<std::ops::Range<usize>> = head
        .tables
        .iter()
        .map(|&(off, len, _)| {
            let start = at.checked_add(usize::try_from(off).ok()?)?;
            Some(start..start.checked_add(usize::try_from(len).ok()?)?)
        })
        .collect::<Option<_>>()?;
    // Nothing between the tables but the zeros that align them, nothing after the last.
    let mut end = at;
    for r in &ranges {
        if r.start < end || bytes.get(end..r.start)?.iter().any(|&b| b != 0) {
            return None;
        }
        end = r.end;
    }
    if end != bytes.len() {
        return None;
    }
    let sums_ok = ranges
        .par_iter()
        .zip(&head.tables)
        .all(|(r, &(_, _, crc))| bytes.get(r.clone()).is_some_and(|b| crc32fast::hash(b) == crc));
    if !sums_ok {
        return None;
    }
    fn table<T: Plain>(bytes: &Arc<FileBytes>, r: &std::ops::Range<usize>) -> Option<Table<T>> {
        Table::in_place(bytes, r.clone())
    }
    let r = &ranges;
    let tree = Tree {
        roots: table(bytes, &r[0])?,
        children: Children {
            at: table(bytes, &r[1])?,
            list: table(bytes, &r[2])?,
        },
        in_tree: table(bytes, &r[3])?,
    };
    let filter = FilterMode::parse(&head.filter)?;
    let view = TreeView {
        flat: table(bytes, &r[4])?,
        layout: table(bytes, &r[5])?,
        gutters: table(bytes, &r[6])?,
        leaf: head.leaf.map(usize::try_from).transpose().ok()?,
        active_path: table(bytes, &r[7])?,
        tool_calls: table(bytes, &r[8])?,
        multiple_roots: head.multiple_roots,
        visible: table(bytes, &r[9])?,
        visible_parent: table(bytes, &r[10])?,
        visible_child_at: table(bytes, &r[11])?,
        visible_child_list: table(bytes, &r[12])?,
        row_of: table(bytes, &r[13])?,
        is_visible: table(bytes, &r[14])?,
        archived: table(bytes, &r[15])?,
        archived_branches: usize::try_from(head.archived_branches).ok()?,
        // Its selection is set when it is taken (`tree_view`).
        ..TreeView::no_rows(filter, 0)
    };
    let views = StoredViews { entries: n, view };
    let context_ok = head
        .leaf_context
        .as_ref()
        .is_none_or(|c| c.leaf < n && head.leaf == Some(c.leaf as u64) && c.edits.iter().all(|&(t, e)| t < n && e < n));
    let ok = tree_in_range(&tree, n) && views.in_range() && context_ok;
    // Checked: only the pages of the rows drawn are read again.
    bytes.done_with(at..end);
    let mut kept = vec![Arc::new(tree) as Kept, Arc::new(views) as Kept];
    kept.extend(head.leaf_context.map(|c| Arc::new(c) as Kept));
    ok.then_some(kept)
}

/// Every value below `bound`, on every core.
fn below<T: Copy + Sync + TryInto<usize>>(values: &[T], bound: usize) -> bool {
    values
        .par_iter()
        .with_min_len(1 << 14)
        .all(|&v| v.try_into().is_ok_and(|v: usize| v < bound))
}

/// Every value below `bound` or `NONE`.
fn below_or_none(values: &[u32], bound: usize) -> bool {
    values
        .par_iter()
        .with_min_len(1 << 14)
        .all(|&v| v == NONE || (v as usize) < bound)
}

/// Offsets into a list of `len`: one per entry and the end, from 0, never going back.
fn offsets<T: Copy + Sync + TryInto<usize>>(at: &[T], n: usize, len: usize) -> bool {
    let at_ = |a: T| a.try_into().ok();
    at.len() == n + 1
        && at.first().is_some_and(|&a| at_(a) == Some(0))
        && at.last().is_some_and(|&a| at_(a) == Some(len))
        && at.par_windows(2).with_min_len(1 << 14).all(|w| at_(w[0]) <= at_(w[1]))
}

/// Every table of a tree of `n` entries as long as it needs and every position in range.
fn tree_in_range(t: &Tree, n: usize) -> bool {
    below(&t.roots, n)
        && offsets(&t.children.at, n, t.children.list.len())
        && below(&t.children.list, n)
        && t.in_tree.len() == n
}

impl StoredViews {
    /// Every table as long as the session needs and every position in it in range, so no
    /// walk over them can index outside a table.
    fn in_range(&self) -> bool {
        let n = self.entries;
        let v = &self.view;
        let gutters = v.gutters.len();
        v.flat.len() <= n
            && below(&v.flat, n)
            && v.layout.len() == n
            && v.is_visible.len() == n
            // A hidden entry's layout is what the flattening left (never read).
            && (0..n)
                .into_par_iter()
                .with_min_len(1 << 14)
                .all(|i| !v.is_visible[i] || v.layout[i].gutters == NONE || (v.layout[i].gutters as usize) < gutters)
            && v.gutters
                .iter()
                .enumerate()
                .all(|(g, x)| x.prev == NONE || (x.prev as usize) < g)
            && v.active_path.len() == n
            && v.tool_calls.par_iter().all(|c| (c.entry as usize) < n)
            && v.tool_calls.windows(2).all(|w| w[0].hash <= w[1].hash)
            && below(&v.visible, v.flat.len())
            && v.visible.windows(2).all(|w| w[0] < w[1])
            && v.visible_parent.len() == n
            && below_or_none(&v.visible_parent, n)
            && (offsets(&v.visible_child_at, n, v.visible_child_list.len())
                || v.visible.is_empty() && v.visible_child_at.is_empty() && v.visible_child_list.is_empty())
            && below(&v.visible_child_list, n)
            && v.row_of.len() == n
            && below_or_none(&v.row_of, v.visible.len())
            && (v.archived.is_empty() || v.archived.len() == n)
            && v.leaf.is_none_or(|l| l < n)
    }
}

/// The `/tree` view of `s` at `leaf` under `filter` as its index keeps it: only for the very
/// view stored (same leaf, same filter, drawn on the stored tree).
pub fn tree_view(s: &Session, tree: &Tree, leaf: Option<usize>, filter: FilterMode, now_ms: i64) -> Option<TreeView> {
    let st = s.kept::<StoredViews>()?;
    let kept = s.kept::<Tree>()?;
    let same_tree =
        std::ptr::eq(tree.children.list.as_ptr(), kept.children.list.as_ptr()) && tree.children.is_in_place();
    if st.view.filter != filter || st.view.leaf != leaf || st.entries != s.entries.len() || !same_tree {
        return None;
    }
    // Its tables are shared with the kept view (in place), not copied.
    let mut v = st.view.clone();
    v.now_ms = now_ms;
    v.select_nearest(s, leaf);
    Some(v)
}

impl TreeView {
    /// Every table and field a view's rows and keys read, the same as `other`'s: what tests
    /// hold of a stored view against a built one.
    pub fn same_tables_as(&self, other: &TreeView) -> Result<(), String> {
        macro_rules! same {
            ($($f:ident),*) => {$(
                if self.$f != other.$f {
                    return Err(format!("{} differs", stringify!($f)));
                }
            )*};
        }
        same!(
            flat,
            layout,
            gutters,
            leaf,
            active_path,
            tool_calls,
            filter,
            visible,
            selected,
            last_selected,
            multiple_roots,
            visible_parent,
            visible_child_at,
            visible_child_list,
            row_of,
            is_visible,
            archived,
            archived_branches,
            show_archived
        );
        Ok(())
    }
}
