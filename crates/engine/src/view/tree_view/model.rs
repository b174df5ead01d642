//! The `/tree` view's data: the view itself and the plain tables it is made of. Each other
//! part of the view (layout, filter, rows, the index's copy) works on these.

use crate::load::table::Table;
use rustc_hash::FxHashSet as HashSet;

/// "No entry" in the dense per-entry tables.
pub(super) const NONE: u32 = u32::MAX;

/// The per-entry tables are built at open, or read in place from bonsai's index when the
/// session was opened from an unchanged file's index with this view in it (`view::stored`);
/// a key that changes one makes it anew in memory.
#[derive(Clone, Debug)]
pub struct TreeView {
    /// Pi's flattened order (pre-order, active branch first).
    pub flat: Table<usize>,
    pub(super) layout: Table<Layout>,
    pub(super) gutters: Table<Gutter>,
    pub leaf: Option<usize>,
    /// On the root→leaf path, by entry index.
    pub(super) active_path: Table<bool>,
    /// toolCallId → (assistant entry, its `tool_call_ids` index), last one in flattened order
    /// wins; sorted by the id's hash (the session holds the ids, so none is copied).
    pub(super) tool_calls: Table<ToolCallAt>,
    pub filter: FilterMode,
    pub search: String,
    pub folded: HashSet<usize>,
    pub show_label_times: bool,
    /// Visible rows: indices into `flat`.
    pub visible: Table<usize>,
    pub selected: usize,
    pub(super) last_selected: Option<usize>,
    pub(super) multiple_roots: bool,
    /// Nearest visible ancestor of each visible entry (`NONE`: none), dense by entry index.
    pub(super) visible_parent: Table<u32>,
    /// Visible children of entry `i`: `visible_child_list[visible_child_at[i]..visible_child_at[i + 1]]`.
    pub(super) visible_child_at: Table<u32>,
    pub(super) visible_child_list: Table<u32>,
    /// Row in `visible` of each visible entry (`NONE` otherwise).
    pub(super) row_of: Table<u32>,
    /// Lower-cased searchable text per entry, filled on first search.
    pub(super) search_text: Option<Vec<String>>,
    /// `$HOME` for shortening tool paths (`None`: no shortening).
    pub home: Option<String>,
    /// Entries whose layout fields are current (those visible after the last filter).
    pub(super) is_visible: Table<bool>,
    /// "Now" for label timestamps (Pi shows today's as HH:MM); fixed in tests.
    pub now_ms: i64,
    /// Per entry: inside a branch bonsai archived (`archive::hidden`); empty when none is.
    pub archived: Table<bool>,
    /// How many archived branches there are (hidden unless `show_archived`).
    pub archived_branches: usize,
    /// Archived branches shown (dimmed) instead of hidden.
    pub show_archived: bool,
}

/// A vertical guide line continuing a non-last branch (`│`), shared between siblings.
/// Plain bytes (`prev`: `NONE` for none) so an index can hold a view's gutters in place.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::CheckedBitPattern, bytemuck::NoUninit)]
pub(crate) struct Gutter {
    pub(super) position: u32,
    pub(super) prev: u32,
    pub(super) show: bool,
    pub(super) _pad: [u8; 3],
}

impl Gutter {
    pub(super) fn prev(&self) -> Option<u32> {
        (self.prev != NONE).then_some(self.prev)
    }
}

/// One entry's place in the layout. Plain bytes (`gutters`: `NONE` for none) so an index can
/// hold a view's layout in place.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::CheckedBitPattern, bytemuck::NoUninit)]
pub struct Layout {
    pub indent: u32,
    pub(super) gutters: u32,
    pub show_connector: bool,
    pub is_last: bool,
    pub is_virtual_root_child: bool,
    pub(super) _pad: u8,
}

impl Layout {
    pub(super) const NOWHERE: Layout = Layout {
        indent: 0,
        gutters: NONE,
        show_connector: false,
        is_last: false,
        is_virtual_root_child: false,
        _pad: 0,
    };
    pub(super) fn gutters(&self) -> Option<u32> {
        (self.gutters != NONE).then_some(self.gutters)
    }
}

/// Where a tool call is: the `k`th call of the reply at `entry`, and its id's hash. Plain
/// bytes, so an index can hold the table in place.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::CheckedBitPattern, bytemuck::NoUninit)]
pub(crate) struct ToolCallAt {
    pub hash: u64,
    pub entry: u32,
    pub k: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterMode {
    #[default]
    Default,
    NoTools,
    UserOnly,
    LabeledOnly,
    All,
}

impl FilterMode {
    pub const CYCLE: [FilterMode; 5] = [
        FilterMode::Default,
        FilterMode::NoTools,
        FilterMode::UserOnly,
        FilterMode::LabeledOnly,
        FilterMode::All,
    ];
    pub fn parse(s: &str) -> Option<FilterMode> {
        Some(match s {
            "default" => FilterMode::Default,
            "no-tools" => FilterMode::NoTools,
            "user-only" => FilterMode::UserOnly,
            "labeled-only" => FilterMode::LabeledOnly,
            "all" => FilterMode::All,
            _ => return None,
        })
    }
    pub fn name(&self) -> &'static str {
        match self {
            FilterMode::Default => "default",
            FilterMode::NoTools => "no-tools",
            FilterMode::UserOnly => "user-only",
            FilterMode::LabeledOnly => "labeled-only",
            FilterMode::All => "all",
        }
    }
    /// The tag Pi appends to the status line.
    pub fn status_tag(&self) -> &'static str {
        match self {
            FilterMode::Default => "",
            FilterMode::NoTools => " [no-tools]",
            FilterMode::UserOnly => " [user]",
            FilterMode::LabeledOnly => " [labeled]",
            FilterMode::All => " [all]",
        }
    }
    pub fn next(self) -> FilterMode {
        let i = FilterMode::CYCLE.iter().position(|m| *m == self).unwrap_or(0);
        FilterMode::CYCLE[(i + 1) % 5]
    }
    pub fn prev(self) -> FilterMode {
        let i = FilterMode::CYCLE.iter().position(|m| *m == self).unwrap_or(0);
        FilterMode::CYCLE[(i + 4) % 5]
    }
}
