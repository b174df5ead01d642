//! One visible row as Pi draws it (indent, guides, connector, fold marker, path marker,
//! label, text), the window of rows around the selection, and the plain render.

use super::model::TreeView;
use super::model::{Gutter, ToolCallAt};
use super::text::{extract_content, format_label_timestamp, format_tool_call, normalize};
use crate::load::entry::{Kind, Role};
use crate::load::js;
use crate::load::session::Session;
use crate::view::text_width::{slice_by_column, truncate_to_width, visible_width};
use serde_json::Value;

/// One visible row, ready to draw (no colour; the TUI styles the parts).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub entry: usize,
    pub selected: bool,
    /// Tree drawing (indent, guides, connector with fold marker): the columns from
    /// `prefix_from` that can show (a row thousands of levels deep is never drawn whole).
    pub prefix: String,
    /// The column of the whole drawing where `prefix` starts (0 unless the rows are panned).
    pub prefix_from: usize,
    /// Columns of the whole drawing.
    pub prefix_cols: usize,
    /// `⊞ ` for a folded node without a connector.
    pub fold_marker: &'static str,
    pub on_active_path: bool,
    pub label: Option<String>,
    pub label_time: Option<String>,
    pub text: RowText,
    /// In an archived branch (shown only when archived branches are; drawn dimmed).
    pub archived: bool,
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
    /// A placeholder (what a row is swapped for while its drawing is made).
    pub const EMPTY: Row = Row {
        entry: 0,
        selected: false,
        prefix: String::new(),
        prefix_from: 0,
        prefix_cols: 0,
        fold_marker: "",
        on_active_path: false,
        label: None,
        label_time: None,
        text: RowText {
            lead: String::new(),
            body: String::new(),
            style: RowStyle::Empty,
        },
        archived: false,
    };

    /// The drawn prefix and the rest.
    pub fn body_plain(&self) -> String {
        format!("{}{}", self.prefix, self.rest_plain())
    }

    /// Everything after the tree drawing: fold marker, path marker, label, text.
    pub fn rest_plain(&self) -> String {
        let mut s = String::new();
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
    /// Where the selected row's text starts, in the whole row (Pi's pan anchor).
    pub fn anchor_col(&self) -> usize {
        self.prefix_cols + visible_width(self.fold_marker) + if self.on_active_path { 2 } else { 0 }
    }
}

impl TreeView {
    // ---- rows ----

    /// Columns of visible row `k`'s tree drawing (indent, guides, connector).
    fn prefix_cols(&self, k: usize) -> usize {
        let l = self.layout[self.flat[self.visible[k]]];
        let display = if self.multiple_roots {
            l.indent.saturating_sub(1)
        } else {
            l.indent
        } as usize;
        display * 3
    }

    /// Columns `from..to` of visible row `k`'s tree drawing. A row can be thousands of levels
    /// deep: only the guides in the range are looked up (the row's guides run from its own
    /// level back to the root, levels never rising, so the walk stops left of the range).
    fn prefix_range(&self, k: usize, from: usize, to: usize) -> String {
        let i = self.flat[self.visible[k]];
        let l = self.layout[i];
        let to = to.min(self.prefix_cols(k));
        if from >= to {
            return String::new();
        }
        let display = self.prefix_cols(k) / 3;
        let has_conn = l.show_connector && !l.is_virtual_root_child;
        let conn_pos: isize = if has_conn { display as isize - 1 } else { -1 };
        let (lo, hi) = (from / 3, (to - 1) / 3);
        // Pi takes the first guide at each level (root first): walking from the row back to
        // the root, the last one seen at a level is that one.
        let mut at_level: Vec<Option<bool>> = vec![None; hi - lo + 1];
        let mut cur: Option<Gutter> = l.gutters().map(|g| self.gutters[g as usize]);
        while let Some(g) = cur {
            let p = g.position as usize;
            if p < lo {
                break;
            }
            if p <= hi {
                at_level[p - lo] = Some(g.show);
            }
            cur = g.prev().map(|g| self.gutters[g as usize]);
        }
        let folded = self.folded.contains(&i);
        let mut prefix = String::with_capacity((to - from) * 3);
        for c in from..to {
            let level = c / 3;
            let pos = c % 3;
            if let Some(show) = at_level[level - lo] {
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
        prefix
    }

    pub fn row(&self, s: &Session, k: usize) -> Row {
        self.row_with(s, k, |i| self.display_text(s, i))
    }

    /// Visible row `k` with its text from `text` (a caller that caches row texts).
    pub fn row_with(&self, s: &Session, k: usize, text: impl FnOnce(usize) -> RowText) -> Row {
        self.row_with_prefix(s, k, text, 0..usize::MAX)
    }

    /// Visible row `k` without its tree drawing (`prefix` empty, `prefix_cols` known): rows
    /// of a window are made so, then [`TreeView::draw_prefixes`] draws what shows.
    pub fn row_undrawn(&self, s: &Session, k: usize, text: impl FnOnce(usize) -> RowText) -> Row {
        self.row_with_prefix(s, k, text, 0..0)
    }

    /// Pi's pan for the window of `rows` (visible rows from `first`) at `width`, then each
    /// row's tree drawing for only the columns shown: a key press on a session whose branches
    /// nest tens of thousands of levels deep draws about a screen's width per row, not the
    /// whole depth. Returns the pan.
    pub fn draw_prefixes(&self, rows: &mut [Row], first: usize, width: usize) -> usize {
        let scroll = pan_scroll(rows, width);
        let vw = width.saturating_sub(2);
        let (from, to) = if scroll == 0 { (0, width) } else { (scroll, scroll + vw) };
        let draw = |(j, r): (usize, &mut Row)| {
            r.prefix = self.prefix_range(first + j, from, to);
            r.prefix_from = from.min(r.prefix_cols);
        };
        if rows.len() > 2048 {
            use rayon::prelude::*;
            rows.par_iter_mut().enumerate().for_each(draw);
        } else {
            rows.iter_mut().enumerate().for_each(draw);
        }
        scroll
    }

    /// Visible row `k` with only columns `cols` of its tree drawing.
    fn row_with_prefix(
        &self,
        s: &Session,
        k: usize,
        text: impl FnOnce(usize) -> RowText,
        cols: std::ops::Range<usize>,
    ) -> Row {
        let i = self.flat[self.visible[k]];
        let l = self.layout[i];
        let has_conn = l.show_connector && !l.is_virtual_root_child;
        let folded = self.folded.contains(&i);
        let prefix = self.prefix_range(k, cols.start, cols.end);
        let e = &s.entries[i];
        let label = s.label_of(&e.id).map(String::from);
        let label_time = if self.show_label_times && label.is_some() {
            s.labels
                .get(e.id.as_str())
                .map(|(_, li)| format_label_timestamp(s.entries[*li as usize].ts, self.now_ms))
        } else {
            None
        };
        Row {
            entry: i,
            selected: k == self.selected,
            prefix,
            prefix_from: cols.start.min(self.prefix_cols(k)),
            prefix_cols: self.prefix_cols(k),
            fold_marker: if folded && !has_conn { "⊞ " } else { "" },
            on_active_path: self.active_path[i],
            label,
            label_time,
            text: text(i),
            archived: self.is_archived(i),
        }
    }

    /// Pi's `getEntryDisplayText`.
    pub fn display_text(&self, s: &Session, i: usize) -> RowText {
        let e = &s.entries[i];
        let t = row_text;
        // A tool result's row comes from its call (in the assistant's line): its own line,
        // often the longest, is not decoded.
        let own_result = matches!(&e.kind, Kind::Message(m) if m.role == Role::ToolResult);
        let needs_value = !own_result
            && !matches!(
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
            Kind::Message(m) => self.message_text(s, m, &v),
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
            Kind::ModelChange(c) => t(
                "",
                format!("[model: {}]", c.model_id.as_deref().unwrap_or("undefined")),
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
            Kind::ContextEdit(ce) => t(
                "",
                format!(
                    "[context {}: {}]",
                    if ce.replacement_null { "omit" } else { "replace" },
                    ce.target_id.as_deref().unwrap_or("undefined")
                ),
                RowStyle::Dim,
            ),
            Kind::Label(l) => t(
                "",
                format!("[label: {}]", l.label.as_deref().unwrap_or("(cleared)")),
                RowStyle::Dim,
            ),
            Kind::SessionInfo { name } => match name.as_deref().filter(|n| !n.is_empty()) {
                Some(n) => t("", format!("[title: {n}]"), RowStyle::Dim),
                None => t("", "[title: empty]".into(), RowStyle::Dim),
            },
            Kind::Usage | Kind::Unknown(_) => t("", String::new(), RowStyle::Empty),
        }
    }

    /// A message's row: Pi's `/tree` text for its role.
    fn message_text(&self, s: &Session, m: &crate::load::entry::StoredMessage, v: &Value) -> RowText {
        let t = row_text;
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
            Role::ToolResult => self.tool_result_text(s, m),
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

    /// A tool result's row: the call it answers (found by its id), as Pi formats it.
    fn tool_result_text(&self, s: &Session, m: &crate::load::entry::StoredMessage) -> RowText {
        let t = row_text;
        let call = m.tool_call_id.as_deref().and_then(|id| {
            let ToolCallAt { entry: e, k, .. } = self.tool_call(s, id)?;
            let block = s.entries[e as usize].message()?.tool_call_ids[k as usize].1;
            Some((e as usize, block))
        });
        if let Some((ai, block)) = call {
            let b = tool_call_block(s, ai, block as usize);
            let b = &b;
            let name = b
                .get("name")
                .map(js::js_to_string)
                .unwrap_or_else(|| "undefined".into());
            let args = b.get("arguments").cloned().unwrap_or(Value::Null);
            t(
                "",
                format_tool_call(&name, &args, self.home.as_deref(), s.pi),
                RowStyle::Tool,
            )
        } else {
            t(
                "",
                format!("[{}]", m.tool_name.as_deref().unwrap_or("tool")),
                RowStyle::Tool,
            )
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
        let first = range.start;
        let vw = width.saturating_sub(2);
        // Each row decodes its entry: a whole tree (`bonsai tree`) is made on every core.
        let part = |k: usize| self.row_undrawn(s, k, |i| self.display_text(s, i));
        let mut rows: Vec<Row> = if range.len() > 2048 {
            use rayon::prelude::*;
            range.into_par_iter().map(part).collect()
        } else {
            range.map(part).collect()
        };
        let scroll = self.draw_prefixes(&mut rows, first, width);
        let line = |r: &Row| {
            let g = if r.selected { "› " } else { "  " };
            let rest = r.rest_plain();
            let body = if scroll == 0 {
                format!("{}{rest}", r.prefix)
            } else {
                // The drawing shown from the pan, then the text in the columns left.
                let left = vw.saturating_sub(r.prefix.chars().count());
                format!(
                    "{}{}",
                    r.prefix,
                    slice_by_column(&rest, scroll.saturating_sub(r.prefix_cols), left)
                )
            };
            truncate_to_width(&format!("{g}{body}"), width, "")
        };
        let mut out: Vec<String> = if rows.len() > 2048 {
            use rayon::prelude::*;
            rows.par_iter().map(line).collect()
        } else {
            rows.iter().map(line).collect()
        };
        out.push(truncate_to_width(&self.status_line(), width, "..."));
        out
    }
}

/// Block `k` of an assistant message's content, decoded alone: the rest of the line (its
/// thinking and text, often most of it) is only skipped over, not built into values.
fn tool_call_block(s: &Session, entry: usize, k: usize) -> Value {
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow)]
        message: Message<'a>,
    }
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow)]
        content: Vec<&'a serde_json::value::RawValue>,
    }
    if !s.migrated
        && let Ok(line) = std::str::from_utf8(s.line_bytes(entry))
        && let Ok(l) = serde_json::from_str::<Line>(line)
    {
        return l
            .message
            .content
            .get(k)
            .and_then(|b| serde_json::from_str(b.get()).ok())
            .unwrap_or(Value::Null);
    }
    // A migrated session, or a line serde cannot borrow from: the whole entry as it reads.
    s.entry_value(entry)["message"]["content"][k].clone()
}

/// Pi's `renderHorizontalViewport` pan: how many columns the bodies shift left so the
/// selected row's text does not start too far right (0 almost always).
pub fn pan_scroll(rows: &[Row], width: usize) -> usize {
    let vw = width.saturating_sub(2);
    let Some(sel) = rows.iter().find(|r| r.selected) else {
        return 0;
    };
    // The scroll is at most the selected row's anchor: bodies need measuring only that far
    // (a row's drawing is counted, not drawn).
    let cap = vw + sel.anchor_col();
    let max_body = rows
        .iter()
        .map(|r| {
            r.prefix_cols
                + crate::view::text_width::visible_width_upto(&r.rest_plain(), cap.saturating_sub(r.prefix_cols))
        })
        .max()
        .unwrap_or(0);
    pan_from(sel.anchor_col(), max_body, vw)
}

/// Pi's pan: with the selected row's anchor at column `anchor`, the widest row `max_body`
/// columns (measured up to `vw` + `anchor`) and `vw` columns to show them in.
fn pan_from(anchor: usize, max_body: usize, vw: usize) -> usize {
    let max_scroll = max_body.saturating_sub(vw);
    if max_scroll > 0 {
        let need = (vw / 3).clamp(4, 20);
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

/// A row's text: its lead (`user: `), its body, its style.
fn row_text(lead: &str, body: String, style: RowStyle) -> RowText {
    RowText {
        lead: lead.to_string(),
        body,
        style,
    }
}
