//! The detail pane: the whole selected entry, decoded from its line on demand.

use super::highlight::{self, Highlighter};
use super::theme::*;
use crate::engine::load::entry::{Kind, Role, StoredMessage};
use crate::engine::load::js;
use crate::engine::load::session::Session;
use crate::engine::view::context;
use crate::engine::view::text_width::visible_width;
use crate::engine::view::tree_view::format_tool_call;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use serde_json::Value;

/// The detail pane's own state: the document shown and how far it is scrolled.
#[derive(Default)]
pub struct DetailState {
    pub doc: Option<Doc>,
    pub scroll: usize,
}

impl DetailState {}

/// A rendered entry: prose lines, and at most one code block highlighted lazily.
pub struct Doc {
    pub entry: usize,
    pub width: u16,
    /// The context edit shown for it (a new edit rebuilds the document).
    pub edit: Option<usize>,
    pub lines: Vec<Line<'static>>,
    /// Index in `lines` where the code block is spliced in, its lines, its highlighter.
    pub code: Option<(usize, Vec<String>, Option<Highlighter>)>,
}

impl Doc {
    pub fn total_lines(&self) -> usize {
        self.lines.len() + self.code.as_ref().map(|c| c.1.len()).unwrap_or(0)
    }

    /// Whether highlighting has not yet reached line `upto` of the document.
    pub fn highlight_pending(&self, upto: usize) -> bool {
        match &self.code {
            Some((at, lines, Some(h))) => h.done.len() < upto.saturating_sub(*at).min(lines.len()),
            _ => false,
        }
    }

    /// Highlight code up to document line `upto` (a frame's budget at most; see highlight).
    pub fn highlight_to(&mut self, upto: usize) {
        if let Some((at, lines, Some(h))) = &mut self.code {
            let need = upto.saturating_sub(*at).min(lines.len());
            h.advance(lines, need);
        }
    }

    /// Lines [from, from + n): highlighted code where it has been highlighted, plain after.
    pub fn window(&self, from: usize, n: usize) -> Vec<Line<'static>> {
        let mut out = Vec::with_capacity(n);
        let (at, code_len) = self.code.as_ref().map(|c| (c.0, c.1.len())).unwrap_or((usize::MAX, 0));
        for k in from..(from + n).min(self.total_lines()) {
            if k < at {
                out.push(self.lines[k].clone());
            } else if k < at.saturating_add(code_len) {
                let ci = k - at;
                let Some((_, lines, h)) = &self.code else { break };
                match h.as_ref().and_then(|h| h.done.get(ci)) {
                    Some(spans) => out.push(Line::from(spans.clone())),
                    None => out.push(Line::from(Span::raw(lines[ci].clone()))),
                }
            } else {
                out.push(self.lines[k - code_len].clone());
            }
        }
        out
    }

    /// The whole document as plain text (for `$PAGER`).
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        for l in self.window(0, self.total_lines()) {
            for sp in &l.spans {
                out.push_str(&sp.content);
            }
            out.push('\n');
        }
        out
    }
}

/// Word-wrap prose to the pane width (code is never wrapped; the pane clips it).
fn wrap(text: &str, width: usize, style: Style) -> Vec<Line<'static>> {
    let width = width.max(10);
    let mut out = Vec::new();
    for raw in text.split('\n') {
        let raw = raw.replace('\t', "    ");
        if visible_width(&raw) <= width {
            out.push(Line::from(Span::styled(raw, style)));
            continue;
        }
        let mut cur = String::new();
        let mut w = 0;
        for word in raw.split_inclusive(' ') {
            let ww = visible_width(word);
            if w + ww > width && !cur.is_empty() {
                out.push(Line::from(Span::styled(std::mem::take(&mut cur), style)));
                w = 0;
            }
            if ww > width {
                // A very long token: hard-split it.
                for c in word.chars() {
                    let cw = visible_width(&c.to_string());
                    if w + cw > width {
                        out.push(Line::from(Span::styled(std::mem::take(&mut cur), style)));
                        w = 0;
                    }
                    cur.push(c);
                    w += cw;
                }
                continue;
            }
            cur.push_str(word);
            w += ww;
        }
        out.push(Line::from(Span::styled(cur, style)));
    }
    out
}

fn heading(text: String) -> Line<'static> {
    Line::from(Span::styled(text, title()))
}

fn kv(k: &str, v: String) -> Line<'static> {
    Line::from(vec![Span::styled(format!("{k}: "), fg(MUTED)), Span::raw(v)])
}

/// A message's `durationMs` (Pi 1.5.2) as a short figure.
fn duration(msg: &Value) -> Option<String> {
    let ms = msg
        .get("durationMs")
        .and_then(|d| d.as_f64())
        .filter(|d| d.is_finite() && *d >= 0.0)?;
    Some(crate::engine::units::duration(ms))
}

fn image_label(b: &Value) -> String {
    let mime = b.get("mimeType").and_then(|m| m.as_str()).unwrap_or("image");
    let kind = mime.strip_prefix("image/").unwrap_or(mime);
    let bytes = b
        .get("data")
        .and_then(|d| d.as_str())
        .map(|d| d.len() * 3 / 4)
        .unwrap_or(0);
    format!("[image {kind} {}]", crate::engine::units::bytes(bytes as u64))
}

/// Markdown-ish: headings bold, file-list tags muted.
fn markdown(text: &str, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in text.split('\n') {
        if line.starts_with('#') {
            out.push(Line::from(Span::styled(line.to_string(), title())));
        } else if line.starts_with("<read-files>")
            || line.starts_with("</read-files>")
            || line.starts_with("<modified-files>")
            || line.starts_with("</modified-files>")
        {
            out.push(Line::from(Span::styled(line.to_string(), fg(MUTED))));
        } else if line.starts_with("**") || line.starts_with("---") {
            out.push(Line::from(Span::styled(line.to_string(), bold())));
        } else {
            out.extend(wrap(line, width, Style::default()));
        }
    }
    out
}

fn content_lines(c: Option<&Value>, width: usize, style: Style, out: &mut Vec<Line<'static>>) {
    match c {
        Some(Value::String(s)) => out.extend(wrap(s, width, style)),
        Some(Value::Array(a)) => {
            for b in a {
                match b.get("type").and_then(|t| t.as_str()) {
                    Some("text") => {
                        out.extend(wrap(b.get("text").and_then(|t| t.as_str()).unwrap_or(""), width, style))
                    }
                    Some("image") => out.push(Line::from(Span::styled(image_label(b), fg(ACCENT)))),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// A summary's `details` file lists (what Pi carries into the next summary).
fn file_lists(details: Option<&crate::engine::load::entry::FileLists>, lines: &mut Vec<Line<'static>>) {
    if let Some(d) = details {
        let list = |v: &[Value]| crate::engine::compaction::serialize::list_strings(v).join(", ");
        lines.push(Line::default());
        let lists = d.lists();
        lines.push(kv("read files", list(&lists.read_files)));
        lines.push(kv("modified files", list(&lists.modified_files)));
    }
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Build the document for one entry. `edit`: the context edit in effect for it at Pi's leaf
/// (what the model gets is shown first, then the original).
pub fn build(s: &Session, entry: usize, width: u16, tool_call: Option<(String, Value)>, edit: Option<usize>) -> Doc {
    let w = width as usize;
    let e = &s.entries[entry];
    let v = s.entry_value(entry);
    let mut lines = head_lines(s, entry, edit, w);
    let mut code = None;
    let msg = v.get("message").cloned().unwrap_or(Value::Null);
    match &e.kind {
        Kind::Message(m) => match m.role {
            Role::Assistant => assistant_lines(m, &msg, w, &mut lines),
            Role::ToolResult => code = tool_result_lines(s, m, &msg, tool_call.as_ref(), &mut lines),
            Role::BashExecution => code = bash_lines(m, &msg, &mut lines),
            Role::System => system_lines(&msg, w, &mut lines),
            _ => other_message_lines(m, &msg, w, &mut lines),
        },
        _ => entry_lines(e, &v, w, &mut lines),
    }
    Doc {
        edit,
        entry,
        width,
        lines,
        code,
    }
}

/// The code block a document splices in: where, its lines, its highlighter.
type CodeBlock = Option<(usize, Vec<String>, Option<Highlighter>)>;

/// What the entry is, its id, line, time and tokens; its label; the context edit in effect.
fn head_lines(s: &Session, entry: usize, edit: Option<usize>, w: usize) -> Vec<Line<'static>> {
    let e = &s.entries[entry];
    let v = s.entry_value(entry);
    let mut lines: Vec<Line<'static>> = Vec::new();
    let est: u64 = context::intrinsic_messages(s, entry).iter().map(|m| m.est_tokens).sum();
    let what = match &e.kind {
        Kind::Message(m) => m.role.as_str().to_string(),
        k => k.type_name().to_string(),
    };
    lines.push(Line::from(vec![
        Span::styled(what, title()),
        Span::styled(format!("  {}  line {}", e.id, e.line), fg(MUTED)),
        Span::styled(
            v.get("timestamp")
                .and_then(|t| t.as_str())
                .map(|t| format!("  {t}"))
                .unwrap_or_default(),
            fg(DIM),
        ),
        Span::styled(
            if est > 0 {
                format!("  ~{est} tokens")
            } else {
                String::new()
            },
            fg(MUTED),
        ),
    ]));
    if let Some(l) = s.label_of(&e.id) {
        lines.push(Line::from(Span::styled(format!("[{l}]"), fg(WARNING))));
    }
    if let Some(ei) = edit {
        let ev = s.entry_value(ei);
        let head = format!("context edit {} (line {}): ", s.entries[ei].id, s.entries[ei].line);
        match ev.get("replacement") {
            Some(Value::Null) | None => lines.extend(wrap(
                &format!("{head}hidden from the model's context (X restores it, u undoes the last edits)"),
                w,
                fg(WARNING),
            )),
            Some(r) => {
                lines.extend(wrap(
                    &format!("{head}the model gets this instead (X restores the original below):"),
                    w,
                    fg(WARNING),
                ));
                content_lines(r.get("content"), w, fg(WARNING), &mut lines);
            }
        }
        lines.push(Line::from(Span::styled("── original ──", fg(MUTED))));
    }
    lines.push(Line::default());
    lines
}

/// An assistant message: thinking, text, tool calls, images, the error, the model and usage.
fn assistant_lines(m: &StoredMessage, msg: &Value, w: usize, lines: &mut Vec<Line<'static>>) {
    if let Some(blocks) = msg.get("content").and_then(|c| c.as_array()) {
        for b in blocks {
            match b.get("type").and_then(|t| t.as_str()) {
                Some("thinking") => {
                    let st = fg(DIM).add_modifier(Modifier::ITALIC);
                    lines.extend(wrap(b.get("thinking").and_then(|t| t.as_str()).unwrap_or(""), w, st));
                    lines.push(Line::default());
                }
                Some("text") => {
                    lines.extend(wrap(
                        b.get("text").and_then(|t| t.as_str()).unwrap_or(""),
                        w,
                        Style::default(),
                    ));
                    lines.push(Line::default());
                }
                Some("toolCall") => {
                    let name = b.get("name").and_then(|n| n.as_str()).unwrap_or("?");
                    lines.push(Line::from(vec![
                        Span::styled("▶ ", fg(ACCENT)),
                        Span::styled(name.to_string(), fg(ACCENT).add_modifier(Modifier::BOLD)),
                        Span::styled(
                            format!("  {}", b.get("id").and_then(|i| i.as_str()).unwrap_or("")),
                            fg(DIM),
                        ),
                    ]));
                    for l in pretty(b.get("arguments").unwrap_or(&Value::Null)).lines() {
                        lines.push(Line::from(Span::styled(format!("  {l}"), fg(MUTED))));
                    }
                    // Pi 1.5.2 keeps why the model's arguments did not parse.
                    if let Some(e) = b.get("argumentsError").and_then(|e| e.as_str()) {
                        lines.extend(wrap(&format!("  arguments error: {e}"), w, fg(ERROR)));
                    }
                    lines.push(Line::default());
                }
                Some("image") => lines.push(Line::from(Span::styled(image_label(b), fg(ACCENT)))),
                _ => {}
            }
        }
    }
    if let Some(err) = msg.get("errorMessage").and_then(|x| x.as_str()) {
        lines.extend(wrap(&format!("error: {err}"), w, fg(ERROR)));
    }
    let mut meta = Vec::new();
    if let Some(p) = &m.provider {
        let asked = m.model.as_deref().unwrap_or("?");
        // Pi 1.5.2 records the model that answered when it is not the one asked.
        match msg
            .get("responseModel")
            .and_then(|r| r.as_str())
            .filter(|r| *r != asked)
        {
            Some(r) => meta.push(format!("{p}/{asked} (answered by {r})")),
            None => meta.push(format!("{p}/{asked}")),
        }
    }
    if let Some(sr) = &m.stop_reason {
        meta.push(format!("stop: {sr}"));
    }
    if let Some(d) = duration(msg) {
        meta.push(format!("took {d}"));
    }
    if let Some(t) = msg.get("thinkingLevel").and_then(|t| t.as_str()) {
        meta.push(format!("thinking: {t}"));
    }
    if let Some(u) = m.usage.as_deref() {
        meta.push(format!(
            "usage: in {} · out {} · cache read {} · cache write {} · total {}",
            js::js_number(u.input),
            js::js_number(u.output),
            js::js_number(u.cache_read),
            js::js_number(u.cache_write),
            js::js_number(u.context_tokens())
        ));
    }
    for l in meta {
        lines.push(Line::from(Span::styled(l, fg(DIM))));
    }
}

/// A tool result: the call it answers, the calls a script made, images, and its text as a
/// code block (highlighted by the file's type for a read).
fn tool_result_lines(
    s: &Session,
    m: &StoredMessage,
    msg: &Value,
    tool_call: Option<&(String, Value)>,
    lines: &mut Vec<Line<'static>>,
) -> CodeBlock {
    let name = m.tool_name.as_deref().unwrap_or("tool");
    let call_text = tool_call.map(|(n, a)| format_tool_call(n, a, None, s.pi));
    lines.push(Line::from(vec![
        Span::styled(call_text.unwrap_or_else(|| format!("[{name}]")), fg(MUTED)),
        Span::styled(if m.is_error { "  error" } else { "" }, fg(ERROR)),
        Span::styled(
            duration(msg).map(|d| format!("  took {d}")).unwrap_or_default(),
            fg(DIM),
        ),
    ]));
    // The calls a codemode script made (Pi 1.5.2 records them; the model never sees
    // them).
    if let Some(calls) = msg
        .get("nestedCalls")
        .and_then(|n| n.get("calls"))
        .and_then(|c| c.as_array())
    {
        for c in calls {
            let cname = c.get("name").and_then(|n| n.as_str()).unwrap_or("?");
            let shown = match c.get("arguments") {
                Some(a) => format_tool_call(cname, a, None, s.pi),
                None => format!("[{cname}]"),
            };
            let status = c.get("status").and_then(|x| x.as_str()).unwrap_or("");
            lines.push(Line::from(vec![
                Span::styled(format!("  ↳ {shown}"), fg(MUTED)),
                Span::styled(
                    if status == "ok" {
                        String::new()
                    } else {
                        format!("  {status}")
                    },
                    fg(if status == "error" { ERROR } else { DIM }),
                ),
            ]));
        }
    }
    lines.push(Line::default());
    let path = tool_call.filter(|(n, _)| n == "read").and_then(|(_, a)| {
        a.get("path")
            .or(a.get("file_path"))
            .and_then(|p| p.as_str())
            .map(String::from)
    });
    let text = context::content_text(msg.get("content"), "\n");
    // Images in the result.
    if let Some(a) = msg.get("content").and_then(|c| c.as_array()) {
        for b in a
            .iter()
            .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("image"))
        {
            lines.push(Line::from(Span::styled(image_label(b), fg(ACCENT))));
        }
    }
    let hl = if highlight::ready() {
        path.as_deref().and_then(Highlighter::new)
    } else {
        None
    };
    let text_lines: Vec<String> = text.split('\n').map(|l| l.replace('\t', "    ")).collect();
    let at = lines.len();
    Some((at, text_lines, hl))
}

/// A `!` command: the command, its output as a code block, the exit code.
fn bash_lines(m: &StoredMessage, msg: &Value, lines: &mut Vec<Line<'static>>) -> CodeBlock {
    lines.push(Line::from(Span::styled(
        format!("$ {}", msg.get("command").and_then(|c| c.as_str()).unwrap_or("")),
        bold(),
    )));
    let out = msg.get("output").and_then(|c| c.as_str()).unwrap_or("").to_string();
    let at = lines.len();
    let code = Some((at, out.split('\n').map(String::from).collect(), None));
    let mut tail = vec![Line::default()];
    if let Some(code) = msg.get("exitCode").filter(|c| !c.is_null()) {
        tail.push(kv("exit code", js::js_to_string(code)));
    }
    if m.exclude_from_context {
        tail.push(Line::from(Span::styled("excluded from context (!!)", fg(WARNING))));
    }
    lines.extend(tail);
    code
}

/// A system message: its content, its sections, the tools added and removed.
fn system_lines(msg: &Value, w: usize, lines: &mut Vec<Line<'static>>) {
    content_lines(msg.get("content"), w, Style::default(), lines);
    if let Some(Value::Object(sec)) = msg.get("sections") {
        for (k, val) in sec {
            lines.push(heading(format!("§ {k}")));
            match val {
                Value::String(t) => lines.extend(wrap(t, w, Style::default())),
                Value::Null => lines.push(Line::from(Span::styled("(removed)", fg(MUTED)))),
                other => lines.push(Line::raw(other.to_string())),
            }
        }
    }
    for (key, label) in [("toolsAdded", "tools added"), ("toolsRemoved", "tools removed")] {
        if let Some(Value::Array(t)) = msg.get(key) {
            let names: Vec<String> = t
                .iter()
                .filter_map(|x| x.get("name").and_then(|n| n.as_str()))
                .map(String::from)
                .collect();
            lines.push(kv(label, names.join(", ")));
        }
    }
}

/// Any other message (custom, branch or compaction summaries as messages).
fn other_message_lines(m: &StoredMessage, msg: &Value, w: usize, lines: &mut Vec<Line<'static>>) {
    if let Some(ct) = &m.custom_type {
        lines.push(kv("customType", ct.to_string()));
    }
    content_lines(msg.get("content"), w, Style::default(), lines);
    if let Some(sm) = msg.get("summary").and_then(|x| x.as_str()) {
        lines.extend(markdown(sm, w));
    }
}

/// Entries that are not messages.
fn entry_lines(e: &crate::engine::load::entry::Entry, v: &Value, w: usize, lines: &mut Vec<Line<'static>>) {
    match &e.kind {
        Kind::Compaction(c) => {
            lines.push(kv(
                "tokens before",
                c.tokens_before.map(js::js_number).unwrap_or_else(|| "?".into()),
            ));
            let fk = c.first_kept_entry_id.as_deref().unwrap_or("?");
            let retain_none = fk == &*e.id;
            lines.push(kv(
                "first kept",
                if retain_none {
                    format!("{fk} (itself: nothing before it is kept)")
                } else {
                    fk.to_string()
                },
            ));
            if c.from_hook {
                lines.push(Line::from(Span::styled(
                    "written by an extension (fromHook)",
                    fg(WARNING),
                )));
            }
            lines.push(Line::default());
            lines.extend(markdown(v.get("summary").and_then(|x| x.as_str()).unwrap_or(""), w));
            file_lists(c.details.as_ref(), lines);
        }
        Kind::BranchSummary(b) => {
            lines.push(kv("from", b.from_id.as_deref().unwrap_or("?").to_string()));
            lines.push(Line::default());
            lines.extend(markdown(v.get("summary").and_then(|x| x.as_str()).unwrap_or(""), w));
            file_lists(b.details.as_ref(), lines);
        }
        Kind::CustomMessage(c) => {
            lines.push(kv("customType", c.custom_type.as_deref().unwrap_or("?").to_string()));
            lines.push(kv(
                "display",
                v.get("display").map(js::js_to_string).unwrap_or_default(),
            ));
            lines.push(Line::default());
            content_lines(v.get("content"), w, Style::default(), lines);
        }
        Kind::ContextEdit(ce) => {
            lines.push(kv("target", ce.target_id.as_deref().unwrap_or("?").to_string()));
            if ce.replacement_null {
                lines.push(Line::from(Span::styled(
                    "omits the target from the model's context",
                    fg(WARNING),
                )));
            } else {
                lines.push(Line::from(Span::styled(
                    "replaces the target's content with:",
                    fg(WARNING),
                )));
                content_lines(
                    v.get("replacement").and_then(|r| r.get("content")),
                    w,
                    Style::default(),
                    lines,
                );
            }
        }
        Kind::ModelChange(c) => lines.push(kv(
            "model",
            format!(
                "{}/{}",
                c.provider.as_deref().unwrap_or("?"),
                c.model_id.as_deref().unwrap_or("?")
            ),
        )),
        Kind::ThinkingLevelChange { level } => {
            lines.push(kv("thinking level", level.as_deref().unwrap_or("?").to_string()))
        }
        Kind::Label(l) => {
            lines.push(kv("target", l.target_id.as_deref().unwrap_or("?").to_string()));
            lines.push(kv("label", l.label.as_deref().unwrap_or("(cleared)").to_string()));
        }
        Kind::SessionInfo { name } => lines.push(kv("name", name.as_deref().unwrap_or("(cleared)").to_string())),
        Kind::Custom { .. } | Kind::Usage | Kind::Unknown(_) => {
            if let Kind::Unknown(t) = &e.kind {
                lines.push(Line::from(Span::styled(
                    format!("unknown entry type `{t}`, kept as is"),
                    fg(WARNING),
                )));
            }
            for l in pretty(v).lines() {
                lines.push(Line::raw(l.to_string()));
            }
        }
        Kind::Message(_) => {}
    }
}

/// `line` with every match of `find` inside a span marked (a match across two spans is not).
fn mark_matches(line: Line<'static>, find: &regex::Regex) -> Line<'static> {
    if !line.spans.iter().any(|s| find.is_match(&s.content)) {
        return line;
    }
    let mark = Style::default()
        .fg(ratatui::style::Color::Black)
        .bg(WARNING)
        .add_modifier(ratatui::style::Modifier::BOLD);
    let mut spans = Vec::with_capacity(line.spans.len() + 4);
    for s in line.spans {
        let text = s.content.to_string();
        let mut at = 0;
        for m in find.find_iter(&text) {
            if m.start() == m.end() {
                continue;
            }
            if m.start() > at {
                spans.push(Span::styled(text[at..m.start()].to_string(), s.style));
            }
            spans.push(Span::styled(text[m.range()].to_string(), s.style.patch(mark)));
            at = m.end();
        }
        if at < text.len() {
            spans.push(Span::styled(text[at..].to_string(), s.style));
        }
    }
    Line::from(spans).style(line.style)
}

pub fn draw(f: &mut Frame, area: Rect, doc: &Doc, scroll: usize, focused: bool, find: Option<&regex::Regex>) {
    let block = Block::default()
        .borders(Borders::LEFT)
        .border_style(if focused { fg(ACCENT) } else { fg(DIM) })
        .title(Span::styled(" detail ", if focused { title() } else { fg(MUTED) }));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let h = inner.height as usize;
    let total = doc.total_lines();
    let scroll = scroll.min(total.saturating_sub(h));
    let mut lines = doc.window(scroll, h);
    if let Some(re) = find {
        lines = lines.into_iter().map(|l| mark_matches(l, re)).collect();
    }
    f.render_widget(Paragraph::new(lines), inner);
    if total > h {
        let pos = format!(" {}-{}/{} ", scroll + 1, (scroll + h).min(total), total);
        let r = Rect {
            x: area.x + area.width.saturating_sub(pos.len() as u16 + 1),
            y: area.y,
            width: pos.len() as u16,
            height: 1,
        };
        f.render_widget(Paragraph::new(Span::styled(pos, fg(DIM))), r);
    }
}

/// What the root lends the detail pane for a frame.
pub struct DetailView<'a> {
    /// The pane has the keyboard.
    pub focused: bool,
    /// Find's pattern, marked in the text.
    pub find: Option<&'a regex::Regex>,
}

impl crate::ui::component::Drawable for DetailState {
    type View<'a> = DetailView<'a>;
    fn draw(&self, f: &mut Frame, area: Rect, v: DetailView<'_>) {
        if let Some(doc) = &self.doc {
            draw(f, area, doc, self.scroll, v.focused, v.find)
        }
    }
}

impl crate::ui::component::Component for DetailState {
    type Lent<'a> = usize;
    const NAME: &'static str = "detail pane";

    /// A key while the detail pane has the focus: it scrolls (`page` lines a page; End goes
    /// to the end, clamped when drawn).
    fn update(
        &mut self,
        action: &crate::ui::action::Action,
        page: Self::Lent<'_>,
    ) -> Vec<crate::ui::component::Effect> {
        use super::action::Action;
        match action {
            Action::Up => self.scroll = self.scroll.saturating_sub(1),
            Action::Down => self.scroll += 1,
            Action::PageUp => self.scroll = self.scroll.saturating_sub(page),
            Action::PageDown => self.scroll += page,
            Action::Home => self.scroll = 0,
            Action::End => self.scroll = usize::MAX / 2,
            _ => return super::component::ignored(),
        }
        super::component::changed()
    }
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{app_for, own, render};
    use crate::engine::load::entry::Kind;

    /// The first entry of each kind (messages by role) across the fixtures, drawn in the pane.
    #[test]
    fn detail_for_every_entry_type() {
        super::highlight::warm_up();
        let files = ["tour.jsonl", "split-turn.jsonl"];
        let mut seen = std::collections::BTreeSet::new();
        for f in files {
            let mut a = app_for(&own(f));
            a.tree
                .view
                .set_filter(&a.doc.session.clone(), crate::engine::view::tree_view::FilterMode::All);
            let n = a.doc.session.entries.len();
            for i in 0..n {
                let e = &a.doc.session.entries[i];
                let kind = match &e.kind {
                    Kind::Message(m) => format!("message_{}", m.role.as_str()),
                    k => k.type_name().to_string(),
                };
                let kind = match &e.kind {
                    Kind::Message(m) if m.stop_reason.as_deref() == Some("aborted") => {
                        "message_assistant_aborted".to_string()
                    }
                    Kind::Message(m) if a.doc.session.measures(m).content.images > 0 => format!("{kind}_image"),
                    _ => kind,
                };
                if !seen.insert(kind.clone()) {
                    continue;
                }
                let s = a.doc.session.clone();
                a.tree.view.select_entry(&s, i);
                if a.selected() != Some(i) {
                    // Hidden in every filter (usage): select via the detail document directly.
                    a.tree
                        .view
                        .set_filter(&s, crate::engine::view::tree_view::FilterMode::All);
                }
                a.selection_changed();
                let mut doc = super::build(&s, i, 78, crate::engine::view::context::tool_call_for(&s, i), None);
                doc.highlight_to(30);
                let text: Vec<String> = doc.window(0, 30).iter().map(|l| l.to_string()).collect();
                insta::assert_snapshot!(format!("detail_{kind}"), text.join("\n"));
            }
        }
        assert!(seen.len() >= 14, "{seen:?}");
        // And one whole screen with the pane focused and scrolled.
        let mut a = app_for(&own("split-turn.jsonl"));
        let s = a.doc.session.clone();
        a.tree.view.select_entry(&s, 3);
        a.selection_changed();
        a.handle_key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Tab));
        a.handle_key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Down));
        insta::assert_snapshot!("detail_focused_scrolled_120x40", render(&mut a, 120, 40));
    }

    /// Pi 1.5.2's new fields where they mean something: the model that answered and how long
    /// a reply took; a codemode result's nested calls and its duration.
    #[test]
    fn detail_of_pi_1_5_2_fields() {
        let f = crate::store::config::cwd().join("fixtures/pi-1.5.2/changed-in-1.5.2.jsonl");
        let s = std::sync::Arc::new(
            crate::store::load_session(&f)
                .unwrap()
                .read_as(crate::engine::load::pi_version::PiVersion::V1_5_2),
        );
        let find = |pred: &dyn Fn(&serde_json::Value) -> bool| {
            (0..s.entries.len()).find(|&i| pred(&s.entry_value(i))).unwrap()
        };
        let answered =
            find(&|v| v["message"]["responseModel"].is_string() && v["message"]["content"][0]["type"] == "text");
        let nested = find(&|v| v["message"]["nestedCalls"].is_object());
        for (name, i) in [("assistant", answered), ("nested_calls", nested)] {
            let doc = super::build(&s, i, 78, crate::engine::view::context::tool_call_for(&s, i), None);
            let text: Vec<String> = doc.window(0, 16).iter().map(|l| l.to_string()).collect();
            insta::assert_snapshot!(format!("detail_pi_1_5_2_{name}"), text.join("\n"));
        }
    }

    #[test]
    fn a_megabyte_of_output_highlights_only_what_is_shown() {
        super::highlight::warm_up();
        let line = "fn main() { let x = 42; println!(\"{x}\"); }";
        let lines: Vec<String> = (0..25_000).map(|_| line.to_string()).collect();
        let mut h = super::Highlighter::new("src/main.rs").unwrap();
        h.advance(&lines, 40);
        assert_eq!(h.done.len(), 40);
        h.advance(&lines, 25_000);
        assert_eq!(
            h.done.len(),
            40 + super::highlight::BUDGET_LINES,
            "one frame's budget at most"
        );
    }
}
