//! Pi's `/tree` view model, without a terminal: flattening (active branch first, linear
//! chains flat, branch points fold), filters, search, folds, selection, segment jumps, and
//! the row text. `render_plain` reproduces Pi 0.87.1's rows character for character; the
//! TUI draws the same rows with colour.

use super::entry::{Kind, Role};
use super::js;
use super::session::Session;
use super::tree::Tree;
use rustc_hash::FxHashSet as HashSet;
use serde_json::Value;
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

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
        let i = FilterMode::CYCLE.iter().position(|m| *m == self).unwrap();
        FilterMode::CYCLE[(i + 1) % 5]
    }
    pub fn prev(self) -> FilterMode {
        let i = FilterMode::CYCLE.iter().position(|m| *m == self).unwrap();
        FilterMode::CYCLE[(i + 4) % 5]
    }
}

/// A vertical guide line continuing a non-last branch (`│`), shared between siblings.
#[derive(Debug, Clone, Copy)]
struct Gutter {
    position: u32,
    show: bool,
    prev: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub indent: u32,
    pub show_connector: bool,
    pub is_last: bool,
    gutters: Option<u32>,
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

/// One visible row, ready to draw (no colour; the TUI styles the parts).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub entry: usize,
    pub selected: bool,
    /// Tree drawing (indent, guides, connector with fold marker).
    pub prefix: String,
    /// `⊞ ` for a folded node without a connector.
    pub fold_marker: &'static str,
    pub on_active_path: bool,
    pub label: Option<String>,
    pub label_time: Option<String>,
    pub text: RowText,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RowText {
    /// Coloured lead (`user: `, `[bash]: `…) and its style class.
    pub lead: String,
    pub body: String,
    pub style: RowStyle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowStyle {
    User,
    Assistant,
    AssistantMuted,
    AssistantError,
    Tool,
    Dim,
    CustomMessage,
    Compaction,
    BranchSummary,
    Empty,
}

impl RowText {
    pub fn plain(&self) -> String {
        format!("{}{}", self.lead, self.body)
    }
}

impl Row {
    pub fn body_plain(&self) -> String {
        let mut s = String::new();
        s.push_str(&self.prefix);
        s.push_str(self.fold_marker);
        if self.on_active_path {
            s.push_str("• ");
        }
        if let Some(l) = &self.label {
            s.push('[');
            s.push_str(l);
            s.push_str("] ");
        }
        if let Some(t) = &self.label_time {
            s.push_str(t);
            s.push(' ');
        }
        s.push_str(&self.text.plain());
        s
    }
    pub fn anchor_col(&self) -> usize {
        visible_width(&self.prefix) + visible_width(self.fold_marker) + if self.on_active_path { 2 } else { 0 }
    }
}

fn str_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(id)
}

/// The id of the `k`th tool call of entry `e`.
fn call_id(s: &Session, e: u32, k: u32) -> Option<&str> {
    Some(&s.entries[e as usize].message()?.tool_call_ids.get(k as usize)?.0)
}

/// "No entry" in the dense per-entry tables.
const NONE: u32 = u32::MAX;

pub struct TreeView {
    /// Pi's flattened order (pre-order, active branch first).
    pub flat: Vec<usize>,
    layout: Vec<Layout>,
    gutters: Vec<Gutter>,
    pub leaf: Option<usize>,
    /// On the root→leaf path, by entry index.
    active_path: Vec<bool>,
    /// toolCallId → (assistant entry, its `tool_call_ids` index), last one in flattened order
    /// wins; hashed by the id the session holds, so no id is copied.
    tool_calls: hashbrown::HashTable<(u32, u32)>,
    pub filter: FilterMode,
    pub search: String,
    pub folded: HashSet<usize>,
    pub show_label_times: bool,
    /// Visible rows: indices into `flat`.
    pub visible: Vec<usize>,
    pub selected: usize,
    last_selected: Option<usize>,
    multiple_roots: bool,
    /// Nearest visible ancestor of each visible entry (`NONE`: none), dense by entry index.
    visible_parent: Vec<u32>,
    /// Visible children of entry `i`: `visible_child_list[visible_child_at[i]..visible_child_at[i + 1]]`.
    visible_child_at: Vec<u32>,
    visible_child_list: Vec<u32>,
    /// Row in `visible` of each visible entry (`NONE` otherwise).
    row_of: Vec<u32>,
    /// Lower-cased searchable text per entry, filled on first search.
    search_text: Option<Vec<String>>,
    /// `$HOME` for shortening tool paths (`None`: no shortening).
    pub home: Option<String>,
    /// Entries whose layout fields are current (those visible after the last filter).
    is_visible: Vec<bool>,
    /// "Now" for label timestamps (Pi shows today's as HH:MM); fixed in tests.
    pub now_ms: i64,
}

fn normalize(s: &str) -> String {
    let r: String = s
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .collect();
    js::js_trim(&r).to_string()
}

/// Pi's `extractFullContent`: string content, or text blocks concatenated.
pub fn extract_full_content(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => {
            let mut out = String::new();
            for b in a {
                if b.get("type").and_then(|t| t.as_str()) == Some("text") {
                    match b.get("text") {
                        None => out.push_str("undefined"),
                        Some(t) => out.push_str(&js::js_to_string(t)),
                    }
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// `extractContent`: the first 200 UTF-16 units.
pub fn extract_content(c: Option<&Value>) -> String {
    js::slice_utf16(&extract_full_content(c), 200).into_owned()
}

/// A one-line preview of text, cut to `n` chars (for CLI tables).
pub fn one_line(s: &str, n: usize) -> String {
    let t = normalize(&s.replace('\r', " "));
    if t.chars().count() > n {
        format!("{}…", t.chars().take(n).collect::<String>())
    } else {
        t
    }
}

fn js_or<'a>(args: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().map(|k| args.get(*k)).find(|v| js::truthy(*v)).flatten()
}

/// Pi's `formatToolCall`: how a tool result row names the call behind it.
pub fn format_tool_call(name: &str, args: &Value, home: Option<&str>) -> String {
    let shorten = |p: String| match home {
        Some(h) if !h.is_empty() && p.starts_with(h) => format!("~{}", &p[h.len()..]),
        _ => p,
    };
    let s = |v: Option<&Value>, d: &str| v.map(js::js_to_string).unwrap_or_else(|| d.to_string());
    match name {
        "read" => {
            let mut display = shorten(s(js_or(args, &["path", "file_path"]), ""));
            let offset = args.get("offset");
            let limit = args.get("limit");
            if offset.is_some() || limit.is_some() {
                let start = match offset {
                    Some(Value::Null) | None => Value::from(1),
                    Some(v) => v.clone(),
                };
                let end = match limit {
                    None => String::new(),
                    Some(l) => match (start.as_f64(), l.as_f64()) {
                        (Some(a), Some(b)) => js::js_number(a + b - 1.0),
                        _ => format!("{}{}", js::js_to_string(&start), js::js_to_string(l)) + "-1",
                    },
                };
                display.push_str(&format!(":{}", js::js_to_string(&start)));
                if !end.is_empty() && end != "0" {
                    display.push_str(&format!("-{end}"));
                }
            }
            format!("[read: {display}]")
        }
        "write" => format!("[write: {}]", shorten(s(js_or(args, &["path", "file_path"]), ""))),
        "edit" => format!("[edit: {}]", shorten(s(js_or(args, &["path", "file_path"]), ""))),
        "bash" => {
            let raw = s(js_or(args, &["command"]), "");
            let cmd = js::slice_utf16(&normalize(&raw), 50).into_owned();
            format!("[bash: {cmd}{}]", if js::utf16_len(&raw) > 50 { "..." } else { "" })
        }
        "grep" => format!(
            "[grep: /{}/ in {}]",
            s(js_or(args, &["pattern"]), ""),
            shorten(s(js_or(args, &["path"]), "."))
        ),
        "find" => format!(
            "[find: {} in {}]",
            s(js_or(args, &["pattern"]), ""),
            shorten(s(js_or(args, &["path"]), "."))
        ),
        "ls" => format!("[ls: {}]", shorten(s(js_or(args, &["path"]), "."))),
        _ => {
            let j = js::stringify(args);
            let cut = js::slice_utf16(&j, 40);
            format!("[{name}: {cut}{}]", if js::utf16_len(&j) > 40 { "..." } else { "" })
        }
    }
}

/// Terminal width of text as pi-tui measures it (graphemes; wide glyphs and emoji 2).
pub fn visible_width(s: &str) -> usize {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return s.len();
    }
    // Tree drawing: ASCII plus box-drawing, fold markers, bullets (all one column).
    if s.chars().all(|c| {
        let u = c as u32;
        (0x20..0x7f).contains(&u)
            || (0x2500..0x2580).contains(&u)
            || u == 0x229E
            || u == 0x229F
            || u == 0x2022
            || u == 0x203A
    }) {
        return s.chars().count();
    }
    // Most text (tree drawing, Latin, CJK) has no multi-char clusters: sum char widths.
    if !s.chars().any(may_join) {
        return s
            .chars()
            .map(|c| {
                if c == '\t' {
                    3
                } else {
                    unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
                }
            })
            .sum();
    }
    s.graphemes(true).map(grapheme_width).sum()
}

/// Characters that can merge with a neighbour into one grapheme cluster.
fn may_join(c: char) -> bool {
    let u = c as u32;
    (0x300..0x370).contains(&u)
        || (0x483..0x490).contains(&u)
        || (0x591..0x5C8).contains(&u)
        || (0x610..0x61B).contains(&u)
        || (0x64B..0x660).contains(&u)
        || (0x900..0xE00).contains(&u)
        || (0x1AB0..0x1B00).contains(&u)
        || (0x1DC0..0x1E00).contains(&u)
        || (0x200B..0x2010).contains(&u)
        || (0x20D0..0x2100).contains(&u)
        || (0x3099..0x309B).contains(&u)
        || (0xFE00..0xFE10).contains(&u)
        || (0xFE20..0xFE30).contains(&u)
        || u == 0x1160
        || (0x1100..0x1200).contains(&u)
        || (0xAC00..0xD7A4).contains(&u)
        || u >= 0x1F000
        || c == '\r'
}

pub fn char_width(c: char) -> usize {
    if c == '\t' {
        3
    } else {
        unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
    }
}

fn grapheme_width(g: &str) -> usize {
    if g == "\t" {
        return 3;
    }
    let w = UnicodeWidthStr::width(g);
    if w > 2 { 2 } else { w }
}

/// Pi's `truncateToWidth(text, width, ellipsis)`.
pub fn truncate_to_width(text: &str, width: usize, ellipsis: &str) -> String {
    if width == 0 {
        return String::new();
    }
    if visible_width(text) <= width {
        return text.to_string();
    }
    let ew = visible_width(ellipsis);
    if ew >= width {
        return ellipsis.graphemes(true).take(width).collect();
    }
    let target = width - ew;
    let mut out = String::new();
    let mut w = 0;
    for g in text.graphemes(true) {
        let gw = grapheme_width(g);
        if w + gw > target {
            break;
        }
        out.push_str(g);
        w += gw;
    }
    out.push_str(ellipsis);
    out
}

/// Pi's `sliceByColumn`: columns [start, start+len) of text; wide glyphs crossing an edge drop.
fn slice_by_column(text: &str, start: usize, len: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for g in text.graphemes(true) {
        let gw = grapheme_width(g);
        if col >= start && col + gw <= start + len {
            out.push_str(g);
        }
        col += gw;
        if col >= start + len {
            break;
        }
    }
    out
}

impl TreeView {
    /// `now_ms` is "now" for label timestamps (Pi shows today's as HH:MM).
    pub fn new(s: &Session, tree: &Tree, leaf: Option<usize>, filter: FilterMode, now_ms: i64) -> TreeView {
        let mut v = TreeView {
            flat: vec![],
            layout: vec![],
            gutters: vec![],
            leaf,
            active_path: vec![false; s.entries.len()],
            tool_calls: hashbrown::HashTable::new(),
            filter,
            search: String::new(),
            folded: HashSet::default(),
            show_label_times: false,
            visible: vec![],
            selected: 0,
            last_selected: None,
            multiple_roots: tree.roots.len() > 1,
            visible_parent: vec![],
            visible_child_at: vec![],
            visible_child_list: vec![],
            row_of: vec![],
            search_text: None,
            home: None,
            is_visible: vec![false; s.entries.len()],
            now_ms,
        };
        v.flatten(s, tree);
        if let Some(l) = leaf {
            for i in s.path_to(l) {
                v.active_path[i] = true;
            }
        }
        v.apply_filter(s);
        v.selected = v.nearest_visible(s, leaf);
        v.last_selected = v.visible.get(v.selected).map(|&f| v.flat[f]);
        v
    }

    fn contains_active(s: &Session, tree: &Tree, leaf: Option<usize>) -> Vec<bool> {
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

    fn flatten(&mut self, s: &Session, tree: &Tree) {
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
        let mut tool_calls = std::mem::take(&mut self.tool_calls);
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
                if let Kind::Message(m) = &s.entries[node].kind
                    && m.role == Role::Assistant
                {
                    for (k, (id, _)) in m.tool_call_ids.iter().enumerate() {
                        let found = tool_calls.entry(
                            str_hash(id),
                            |&(e, j)| call_id(s, e, j) == Some(&**id),
                            |&(e, j)| str_hash(call_id(s, e, j).unwrap_or("")),
                        );
                        found.insert((node as u32, k as u32));
                    }
                }
                flat.push(node);
                layouts[node] = layout;
            },
        );
        self.gutters = gutters;
        self.flat = flat;
        self.layout = layouts;
        self.tool_calls = tool_calls;
    }

    fn is_settings_entry(kind: &Kind) -> bool {
        matches!(
            kind,
            Kind::Label { .. }
                | Kind::ContextEdit { .. }
                | Kind::Custom { .. }
                | Kind::ModelChange { .. }
                | Kind::ThinkingLevelChange { .. }
                | Kind::SessionInfo { .. }
        )
    }

    fn passes(&self, s: &Session, i: usize) -> bool {
        let e = &s.entries[i];
        if matches!(e.kind, Kind::Usage) {
            return false;
        }
        if let Kind::Message(m) = &e.kind
            && m.role == Role::Assistant
            && Some(i) != self.leaf
        {
            let err_or_aborted = m
                .stop_reason
                .as_deref()
                .is_some_and(|r| !r.is_empty() && r != "stop" && r != "toolUse");
            if !m.visible_text && !err_or_aborted {
                return false;
            }
        }
        let role = e.message().map(|m| &m.role);
        match self.filter {
            FilterMode::UserOnly => role == Some(&Role::User),
            FilterMode::NoTools => !Self::is_settings_entry(&e.kind) && role != Some(&Role::ToolResult),
            FilterMode::LabeledOnly => s.label_of(&e.id).is_some(),
            FilterMode::All => true,
            FilterMode::Default => !Self::is_settings_entry(&e.kind),
        }
    }

    fn ensure_search_text(&mut self, s: &Session) {
        if self.search_text.is_none() {
            let texts = (0..s.entries.len())
                .map(|i| searchable_text(s, i).to_lowercase())
                .collect();
            self.search_text = Some(texts);
        }
    }

    /// Pi's `applyFilter`: filter, search, folds, re-layout, keep the selection.
    pub fn apply_filter(&mut self, s: &Session) {
        if !self.visible.is_empty() {
            self.last_selected = self
                .visible
                .get(self.selected)
                .map(|&f| self.flat[f])
                .or(self.last_selected);
        }
        let tokens: Vec<String> = self
            .search
            .to_lowercase()
            .split_whitespace()
            .map(String::from)
            .collect();
        if !tokens.is_empty() {
            self.ensure_search_text(s);
        }
        let mut visible = Vec::with_capacity(self.flat.len());
        for (fi, &i) in self.flat.iter().enumerate() {
            if !self.passes(s, i) {
                continue;
            }
            if !tokens.is_empty() {
                let t = &self.search_text.as_ref().unwrap()[i];
                if !tokens.iter().all(|k| t.contains(k.as_str())) {
                    continue;
                }
            }
            visible.push(fi);
        }
        if !self.folded.is_empty() {
            let mut skip: HashSet<usize> = HashSet::default();
            for &i in &self.flat {
                if let Some(p) = s.parent_of(i)
                    && (self.folded.contains(&p) || skip.contains(&p))
                {
                    skip.insert(i);
                }
            }
            visible.retain(|&fi| !skip.contains(&self.flat[fi]));
        }
        self.visible = visible;
        self.relayout(s);
        if let Some(ls) = self.last_selected {
            self.selected = self.nearest_visible(s, Some(ls));
        } else if self.selected >= self.visible.len() {
            self.selected = self.visible.len().saturating_sub(1);
        }
        if !self.visible.is_empty() {
            self.last_selected = self
                .visible
                .get(self.selected)
                .map(|&f| self.flat[f])
                .or(self.last_selected);
        }
    }

    fn relayout(&mut self, s: &Session) {
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
    fn visible_children(&self, i: usize) -> &[u32] {
        match (self.visible_child_at.get(i), self.visible_child_at.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.visible_child_list[a as usize..b as usize],
            _ => &[],
        }
    }

    fn visible_parent(&self, i: usize) -> Option<usize> {
        self.visible_parent.get(i).filter(|&&p| p != NONE).map(|&p| p as usize)
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
        self.selected = self.nearest_visible(s, Some(entry));
        self.last_selected = self.selected_entry();
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

    fn index_of_entry(&self, i: usize) -> Option<usize> {
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
    pub fn set_search(&mut self, s: &Session, q: String) {
        self.search = q;
        self.folded.clear();
        self.apply_filter(s);
    }

    // ---- rows ----

    fn gutter_list(&self, head: Option<u32>) -> Vec<Gutter> {
        let mut v = Vec::new();
        let mut cur = head;
        while let Some(g) = cur {
            let gg = self.gutters[g as usize];
            v.push(gg);
            cur = gg.prev;
        }
        v.reverse();
        v
    }

    pub fn row(&self, s: &Session, k: usize) -> Row {
        let i = self.flat[self.visible[k]];
        let l = self.layout[i];
        let display = if self.multiple_roots {
            l.indent.saturating_sub(1)
        } else {
            l.indent
        } as usize;
        let has_conn = l.show_connector && !l.is_virtual_root_child;
        let conn_pos: isize = if has_conn { display as isize - 1 } else { -1 };
        let gutters = self.gutter_list(l.gutters);
        // Pi takes the first gutter at each level; index them once (rows can be 300 levels deep).
        let mut at_level: Vec<Option<bool>> = vec![None; display + 1];
        for g in &gutters {
            if let Some(slot) = at_level.get_mut(g.position as usize)
                && slot.is_none()
            {
                *slot = Some(g.show);
            }
        }
        let folded = self.folded.contains(&i);
        let mut prefix = String::with_capacity(display * 3);
        for c in 0..display * 3 {
            let level = c / 3;
            let pos = c % 3;
            if let Some(show) = at_level[level] {
                prefix.push(if pos == 0 && show { '│' } else { ' ' });
            } else if has_conn && level as isize == conn_pos {
                prefix.push(match pos {
                    0 => {
                        if l.is_last {
                            '└'
                        } else {
                            '├'
                        }
                    }
                    1 => {
                        if folded {
                            '⊞'
                        } else if self.is_foldable(i) {
                            '⊟'
                        } else {
                            '─'
                        }
                    }
                    _ => ' ',
                });
            } else {
                prefix.push(' ');
            }
        }
        let e = &s.entries[i];
        let label = s.label_of(&e.id).map(String::from);
        let label_time = if self.show_label_times && label.is_some() {
            s.labels
                .get(&e.id)
                .map(|(_, li)| format_label_timestamp(s.entries[*li as usize].ts, self.now_ms))
        } else {
            None
        };
        Row {
            entry: i,
            selected: k == self.selected,
            prefix,
            fold_marker: if folded && !has_conn { "⊞ " } else { "" },
            on_active_path: self.active_path[i],
            label,
            label_time,
            text: self.display_text(s, i),
        }
    }

    /// Pi's `getEntryDisplayText`.
    pub fn display_text(&self, s: &Session, i: usize) -> RowText {
        let e = &s.entries[i];
        let t = |lead: &str, body: String, style| RowText {
            lead: lead.to_string(),
            body,
            style,
        };
        let needs_value = !matches!(
            e.kind,
            Kind::Compaction(_)
                | Kind::ModelChange { .. }
                | Kind::ThinkingLevelChange { .. }
                | Kind::Custom { .. }
                | Kind::Label { .. }
                | Kind::SessionInfo { .. }
                | Kind::Usage
                | Kind::Unknown(_)
        );
        let v = if needs_value { s.entry_value(i) } else { Value::Null };
        let st = |k: &str| v.get(k).map(js::js_to_string).unwrap_or_else(|| "undefined".into());
        match &e.kind {
            Kind::Message(m) => {
                let msg = v.get("message").cloned().unwrap_or(Value::Null);
                match &m.role {
                    Role::User => t(
                        "user: ",
                        normalize(&extract_content(msg.get("content"))),
                        RowStyle::User,
                    ),
                    Role::Assistant => {
                        let text = normalize(&extract_content(msg.get("content")));
                        if !text.is_empty() {
                            t("assistant: ", text, RowStyle::Assistant)
                        } else if m.stop_reason.as_deref() == Some("aborted") {
                            t("assistant: ", "(aborted)".into(), RowStyle::AssistantMuted)
                        } else if let Some(err) = msg.get("errorMessage").filter(|x| js::truthy(Some(x))) {
                            let n = normalize(&js::js_to_string(err));
                            t(
                                "assistant: ",
                                js::slice_utf16(&n, 80).into_owned(),
                                RowStyle::AssistantError,
                            )
                        } else {
                            t("assistant: ", "(no content)".into(), RowStyle::AssistantMuted)
                        }
                    }
                    Role::ToolResult => {
                        let call = m.tool_call_id.as_deref().and_then(|id| {
                            let &(e, k) = self
                                .tool_calls
                                .find(str_hash(id), |&(e, j)| call_id(s, e, j) == Some(id))?;
                            let block = s.entries[e as usize].message()?.tool_call_ids[k as usize].1;
                            Some((e as usize, block))
                        });
                        if let Some((ai, block)) = call {
                            let av = s.entry_value(ai);
                            let b = &av["message"]["content"][block as usize];
                            let name = b
                                .get("name")
                                .map(js::js_to_string)
                                .unwrap_or_else(|| "undefined".into());
                            let args = b.get("arguments").cloned().unwrap_or(Value::Null);
                            t("", format_tool_call(&name, &args, self.home.as_deref()), RowStyle::Tool)
                        } else {
                            t(
                                "",
                                format!("[{}]", m.tool_name.as_deref().unwrap_or("tool")),
                                RowStyle::Tool,
                            )
                        }
                    }
                    Role::BashExecution => {
                        let cmd = msg
                            .get("command")
                            .filter(|c| !c.is_null())
                            .map(js::js_to_string)
                            .unwrap_or_default();
                        t("[bash]: ", normalize(&cmd), RowStyle::Dim)
                    }
                    r => t("", format!("[{}]", r.as_str()), RowStyle::Dim),
                }
            }
            Kind::CustomMessage { .. } => {
                let content = match v.get("content") {
                    Some(Value::String(x)) => x.clone(),
                    Some(Value::Array(a)) => a
                        .iter()
                        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
                        .map(|b| {
                            b.get("text")
                                .filter(|x| !x.is_null())
                                .map(js::js_to_string)
                                .unwrap_or_default()
                        })
                        .collect(),
                    _ => String::new(),
                };
                t(
                    &format!("[{}]: ", st("customType")),
                    normalize(&content),
                    RowStyle::CustomMessage,
                )
            }
            Kind::Compaction(c) => {
                let k = c
                    .tokens_before
                    .map(|x| js::js_number((x / 1000.0 + 0.5).floor()))
                    .unwrap_or_else(|| "NaN".into());
                t("", format!("[compaction: {k}k tokens]"), RowStyle::Compaction)
            }
            Kind::BranchSummary(_) => t("[branch summary]: ", normalize(&st("summary")), RowStyle::BranchSummary),
            Kind::ModelChange { model_id, .. } => t(
                "",
                format!("[model: {}]", model_id.as_deref().unwrap_or("undefined")),
                RowStyle::Dim,
            ),
            Kind::ThinkingLevelChange { level } => t(
                "",
                format!("[thinking: {}]", level.as_deref().unwrap_or("undefined")),
                RowStyle::Dim,
            ),
            Kind::Custom { custom_type } => t(
                "",
                format!("[custom: {}]", custom_type.as_deref().unwrap_or("undefined")),
                RowStyle::Dim,
            ),
            Kind::ContextEdit {
                target_id,
                replacement_null,
                ..
            } => t(
                "",
                format!(
                    "[context {}: {}]",
                    if *replacement_null { "omit" } else { "replace" },
                    target_id.as_deref().unwrap_or("undefined")
                ),
                RowStyle::Dim,
            ),
            Kind::Label { label, .. } => t(
                "",
                format!("[label: {}]", label.as_deref().unwrap_or("(cleared)")),
                RowStyle::Dim,
            ),
            Kind::SessionInfo { name } => match name.as_deref().filter(|n| !n.is_empty()) {
                Some(n) => t("", format!("[title: {n}]"), RowStyle::Dim),
                None => t("", "[title: empty]".into(), RowStyle::Dim),
            },
            Kind::Usage | Kind::Unknown(_) => t("", String::new(), RowStyle::Empty),
        }
    }

    /// The window of rows Pi draws around the selection (`maxVisibleLines` rows).
    pub fn window(&self, max_rows: usize) -> std::ops::Range<usize> {
        let n = self.visible.len();
        let start = (self.selected as isize - (max_rows / 2) as isize)
            .min(n as isize - max_rows as isize)
            .max(0) as usize;
        start..(start + max_rows).min(n)
    }

    pub fn status_line(&self) -> String {
        let times = if self.show_label_times { " [+label time]" } else { "" };
        if self.visible.is_empty() {
            format!("  (0/0){}{}", self.filter.status_tag(), times)
        } else {
            format!(
                "  ({}/{}){}{}",
                self.selected + 1,
                self.visible.len(),
                self.filter.status_tag(),
                times
            )
        }
    }

    /// The rows exactly as Pi's `TreeList.render(width)` prints them, escapes stripped.
    /// `max_rows` None draws every visible row (as the oracle's golden renders do).
    pub fn render_plain(&self, s: &Session, width: usize, max_rows: Option<usize>) -> Vec<String> {
        if self.visible.is_empty() {
            return vec![
                truncate_to_width("  No entries found", width, "..."),
                truncate_to_width(&self.status_line(), width, "..."),
            ];
        }
        let range = self.window(max_rows.unwrap_or(self.visible.len()));
        let rows: Vec<Row> = range.map(|k| self.row(s, k)).collect();
        let mut out = pan_rows(&rows, width)
            .into_iter()
            .map(|(gutter, body)| truncate_to_width(&format!("{gutter}{body}"), width, ""))
            .collect::<Vec<_>>();
        out.push(truncate_to_width(&self.status_line(), width, "..."));
        out
    }
}

/// Pi's `renderHorizontalViewport` pan: how many columns the bodies shift left so the
/// selected row's text does not start too far right (0 almost always).
pub fn pan_scroll(rows: &[Row], width: usize) -> usize {
    let vw = width.saturating_sub(2);
    let max_body = rows.iter().map(|r| visible_width(&r.body_plain())).max().unwrap_or(0);
    let max_scroll = max_body.saturating_sub(vw);
    if let Some(sel) = rows.iter().find(|r| r.selected)
        && max_scroll > 0
    {
        let need = (vw / 3).clamp(4, 20);
        let anchor = sel.anchor_col();
        if anchor as isize > vw as isize - need as isize {
            let ctx = (vw / 4).clamp(2, 12);
            return max_scroll.min(anchor.saturating_sub(ctx));
        }
    }
    0
}

/// (gutter, body) per row after panning.
pub fn pan_rows(rows: &[Row], width: usize) -> Vec<(&'static str, String)> {
    let vw = width.saturating_sub(2);
    let scroll = pan_scroll(rows, width);
    rows.iter()
        .map(|r| {
            let g = if r.selected { "› " } else { "  " };
            let b = r.body_plain();
            if scroll > 0 {
                (g, slice_by_column(&b, scroll, vw))
            } else {
                (g, b)
            }
        })
        .collect()
}

/// Pi's `getEntryCopyText`: a bash command, a message's text (an empty assistant gives its
/// error), a custom message's text, a summary; nothing for other entries or blank text.
pub fn copy_text(s: &Session, i: usize) -> Option<String> {
    let e = &s.entries[i];
    let v = s.entry_value(i);
    let text = match &e.kind {
        Kind::Message(m) if m.role == Role::BashExecution => {
            v["message"].get("command").and_then(|c| c.as_str()).map(String::from)
        }
        Kind::Message(m) => {
            let msg = &v["message"];
            let t = msg.get("content").map(|c| extract_full_content(Some(c)));
            match t {
                Some(t) if t.is_empty() && m.role == Role::Assistant => {
                    msg.get("errorMessage").and_then(|x| x.as_str()).map(String::from)
                }
                other => other,
            }
        }
        Kind::CustomMessage { .. } => Some(extract_full_content(v.get("content"))),
        Kind::Compaction(_) | Kind::BranchSummary(_) => v.get("summary").and_then(|x| x.as_str()).map(String::from),
        _ => None,
    };
    text.filter(|t| !js::js_trim(t).is_empty())
}

/// Pi's `getSearchableText` (label, role or type words, text).
pub fn searchable_text(s: &Session, i: usize) -> String {
    let e = &s.entries[i];
    let mut parts: Vec<String> = Vec::new();
    if let Some(l) = s.label_of(&e.id) {
        parts.push(l.to_string());
    }
    let v = || s.entry_value(i);
    let st = |v: &Value, k: &str| v.get(k).map(js::js_to_string).unwrap_or_else(|| "undefined".into());
    match &e.kind {
        Kind::Message(m) => {
            let v = v();
            let msg = &v["message"];
            parts.push(m.role.as_str().to_string());
            if js::truthy(msg.get("content")) {
                parts.push(extract_content(msg.get("content")));
            }
            if m.role == Role::BashExecution && js::truthy(msg.get("command")) {
                parts.push(st(msg, "command"));
            }
        }
        Kind::CustomMessage { .. } => {
            let v = v();
            parts.push(st(&v, "customType"));
            match v.get("content") {
                Some(Value::String(x)) => parts.push(x.clone()),
                c => parts.push(extract_content(c)),
            }
        }
        Kind::Compaction(_) => parts.push("compaction".into()),
        Kind::BranchSummary(_) => {
            parts.push("branch summary".into());
            parts.push(st(&v(), "summary"));
        }
        Kind::SessionInfo { name } => {
            parts.push("title".into());
            if let Some(n) = name.as_deref().filter(|n| !n.is_empty()) {
                parts.push(n.to_string());
            }
        }
        Kind::ModelChange { model_id, .. } => {
            parts.push("model".into());
            parts.push(model_id.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::ThinkingLevelChange { level } => {
            parts.push("thinking".into());
            parts.push(level.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::Custom { custom_type } => {
            parts.push("custom".into());
            parts.push(custom_type.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::ContextEdit {
            target_id,
            replacement_null,
            ..
        } => {
            parts.push("context edit".into());
            parts.push(if *replacement_null { "omit" } else { "replace" }.into());
            parts.push(target_id.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::Label { label, .. } => {
            parts.push("label".into());
            parts.push(label.as_deref().unwrap_or("").to_string());
        }
        Kind::Usage | Kind::Unknown(_) => {}
    }
    parts.join(" ")
}

/// Pi's `formatLabelTimestamp` (in UTC: `HH:MM` today, `M/D HH:MM` this year, else `YY/M/D`).
pub fn format_label_timestamp(ms: f64, now_ms: i64) -> String {
    if ms.is_nan() {
        return "NaN/NaN NaN:NaN".into();
    }
    let ms = ms as i64;
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = js::civil_from_days(days);
    let time = format!("{:02}:{:02}", rem / 3_600_000, (rem / 60_000) % 60);
    let (ny, nm, nd) = js::civil_from_days(now_ms.div_euclid(86_400_000));
    if (y, m, d) == (ny, nm, nd) {
        time
    } else if y == ny {
        format!("{m}/{d} {time}")
    } else {
        format!("{:02}/{m}/{d} {time}", y.rem_euclid(100))
    }
}
