//! Pruning: which messages of the live context to shorten or hide in the model's *future*
//! context, decided on the projection at a leaf and written as Pi's own `context_edit` entries
//! (history stays as it was; the latest edit of a target wins in Pi).
//!
//! Two policies make plans: `output` (OpenCode's prune of old tool output, with an exact
//! compatibility mode for the pi-context-pruning extension) and `zones` (the context-manager
//! design: what to keep, distill or prune depends on how full the context is). Manual edits
//! (hide, replace, restore) and undo make plans too; every plan is a list of per-entry changes
//! with their tokens before and after, and becomes one write.

use crate::edit::entries;
use crate::load::entry::{ContentStats, Kind, Role};
use crate::load::js;
use crate::load::session::Session;
use crate::view::context::{self, ContextMessage, Part, Projection};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// What starts the text of a pruned output (and tells a pruned one apart).
pub const MARKER_PREFIX: &str = "[output pruned — ";

/// Tools whose output the `output` policy may prune by default.
pub const DEFAULT_PRUNABLE: [&str; 8] = ["read", "bash", "grep", "find", "ls", "edit", "write", "apply_patch"];

/// Tool results longer than this (UTF-16 units of text) are distilled in the kept turns.
pub const DISTILL_OVER: usize = 12_000;
/// What a distilled result keeps at each end.
pub const DISTILL_KEEP: usize = 2_000;

#[derive(Debug, Clone, PartialEq)]
pub struct PruneSettings {
    /// Prune only when the candidates' tokens exceed this.
    pub minimum: u64,
    /// The newest tool output up to this many tokens is kept.
    pub protect: u64,
    /// The newest turns are never touched.
    pub protected_turns: usize,
    pub protected_tools: Vec<String>,
    /// Empty: every tool.
    pub prunable_tools: Vec<String>,
    /// Reproduce pi-context-pruning's own code (see [`output`]).
    pub compat: bool,
}

impl Default for PruneSettings {
    fn default() -> Self {
        PruneSettings {
            minimum: 20_000,
            protect: 40_000,
            protected_turns: 2,
            protected_tools: vec![],
            prunable_tools: DEFAULT_PRUNABLE.iter().map(|s| s.to_string()).collect(),
            compat: false,
        }
    }
}

impl PruneSettings {
    fn prunable(&self, tool: &str) -> bool {
        !self.protected_tools.iter().any(|t| t == tool)
            && (self.prunable_tools.is_empty() || self.prunable_tools.iter().any(|t| t == tool))
    }
}

/// How full the context is, as the gauge says it (the zones policy follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Zone {
    Green,
    Yellow,
    Red,
    /// At or over T: Pi compacts at the next turn. Only the gauge says it ([`Zone::of_gauge`]);
    /// for pruning and the live policy it is red ([`zone_of`]).
    Compact,
}

impl Zone {
    pub fn name(self) -> &'static str {
        match self {
            Zone::Green => "green",
            Zone::Yellow => "yellow",
            Zone::Red => "red",
            Zone::Compact => "compact",
        }
    }

    /// The zone as every view names it: its colour, then what it means.
    pub fn words(self) -> &'static str {
        match self {
            Zone::Green => "green",
            Zone::Yellow => "yellow: filling",
            Zone::Red => "red: near compaction",
            Zone::Compact => "compact: Pi compacts at the next turn",
        }
    }

    /// The gauge's zone: [`zone_of`]'s bands, and compact at or over T.
    pub fn of_gauge(tokens: f64, threshold: u64, bounds: (f64, f64)) -> Zone {
        if tokens >= threshold as f64 {
            Zone::Compact
        } else {
            zone_of(tokens, threshold, bounds)
        }
    }
}

/// The gauge's zone for `tokens` against the threshold T = window − reserve: bounds are
/// fractions of T; at or over T (Pi compacts) counts as red here.
pub fn zone_of(tokens: f64, threshold: u64, bounds: (f64, f64)) -> Zone {
    let t = threshold as f64;
    if tokens >= bounds.1 * t {
        Zone::Red
    } else if tokens >= bounds.0 * t {
        Zone::Yellow
    } else {
        Zone::Green
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Output,
    /// `None`: the zone the gauge shows.
    Zones(Option<Zone>),
}

/// What happens to one entry's message.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Its output replaced by the marker.
    Pruned,
    /// Cut to its two ends around a note of what was elided.
    Distilled {
        elided: usize,
    },
    Hidden,
    Replaced,
    /// Back to a state it had (its original content, or an earlier edit).
    Restored,
    /// Counted by the output policy and kept (inside the protect budget, or too little to prune).
    Protected,
}

impl Change {
    pub fn name(&self) -> &'static str {
        match self {
            Change::Pruned => "pruned",
            Change::Distilled { .. } => "distilled",
            Change::Hidden => "hidden",
            Change::Replaced => "replaced",
            Change::Restored => "restored",
            Change::Protected => "protected",
        }
    }
    /// Whether it becomes an edit (a protected entry is only shown).
    pub fn writes(&self) -> bool {
        !matches!(self, Change::Protected)
    }
}

#[derive(Debug, Clone)]
pub struct PlanItem {
    pub entry: usize,
    pub role: Role,
    pub tool: Option<String>,
    /// The argument that names what the tool looked at (`path`, `command`, `pattern`, `query`).
    pub key_arg: Option<(String, String)>,
    pub change: Change,
    /// Pi's estimate of the message now and after the change.
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The edit's `replacement` (`null` hides); `Value::Null` for a protected entry too.
    pub replacement: Value,
    /// The turn the message is in, counted from the oldest (0 = before the first user message).
    pub turn: usize,
}

impl PlanItem {
    /// `target` back to `replacement` (its original, or an earlier edit's text).
    fn restored(s: &Session, target: usize, role: Role, now: u64, after: u64, replacement: Value) -> PlanItem {
        PlanItem {
            entry: target,
            role,
            tool: tool_of(s, target),
            key_arg: None,
            change: Change::Restored,
            tokens_before: now,
            tokens_after: after,
            replacement,
            turn: 0,
        }
    }
    pub fn saved(&self) -> u64 {
        self.tokens_before.saturating_sub(self.tokens_after)
    }
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub what: String,
    pub leaf: usize,
    pub zone: Option<Zone>,
    /// Every entry the plan changes or keeps on purpose, oldest first.
    pub items: Vec<PlanItem>,
    /// Red zone: keep from this user message and compact the rest.
    pub compact_from: Option<usize>,
    /// Pi's context estimate at the leaf now (usage-based when Pi's last reply is newest).
    pub tokens_now: f64,
    /// Pi's pure estimate of the context after the edits (what Pi reports once they are
    /// written: the edits are newer than its last usage figure).
    pub tokens_after: u64,
    /// Pi's pure estimate of the context now: the basis `tokens_after` is on.
    pub estimate: u64,
    /// Why the plan is what it is, in a line (e.g. why nothing is pruned).
    pub note: String,
}

impl Plan {
    pub fn edits(&self) -> impl Iterator<Item = &PlanItem> {
        self.items.iter().filter(|i| i.change.writes())
    }
    pub fn saved(&self) -> u64 {
        self.edits().map(|i| i.saved()).sum()
    }
    /// What the edits change, by Pi's per-message estimate: negative saves, positive adds
    /// (a restore gives an output back).
    pub fn change(&self) -> i64 {
        self.edits()
            .map(|i| i.tokens_after as i64 - i.tokens_before as i64)
            .sum()
    }
    /// The plan with the items at `left_out` (indices into `items`) left out by the user:
    /// they are kept as they are (shown, not written), and "after" counts them unchanged.
    pub fn without(&self, left_out: &std::collections::HashSet<usize>) -> Plan {
        let mut p = self.clone();
        for (k, item) in p.items.iter_mut().enumerate() {
            if left_out.contains(&k) && item.change.writes() {
                p.tokens_after =
                    (p.tokens_after as i64 + item.tokens_before as i64 - item.tokens_after as i64).max(0) as u64;
                item.change = Change::Protected;
                item.tokens_after = item.tokens_before;
                item.replacement = Value::Null;
            }
        }
        if !left_out.is_empty() {
            p.note = format!("{} (left out by you: {})", p.note, left_out.len());
        }
        p
    }
    /// The context now by Pi's per-message estimate: the same basis as `tokens_after`, so the
    /// two differ by exactly `change()` (`tokens_now` is Pi's figure, often the last reply's
    /// usage, a different basis).
    pub fn estimate_now(&self) -> u64 {
        self.estimate
    }
    /// Tokens by which "after" drops more (or less) than the edits save, when that is over 5 %
    /// of "now": Pi's "now" rests on the last reply's usage, and once an edit follows that
    /// reply Pi counts estimates only.
    pub fn usage_gap(&self) -> Option<i64> {
        if self.is_empty() {
            return None;
        }
        let now = self.tokens_now.round() as i64;
        let gap = now - self.tokens_after as i64 - self.saved() as i64;
        (gap.abs() > now / 20).then_some(gap)
    }
    pub fn is_empty(&self) -> bool {
        self.edits().next().is_none()
    }
}

/// The live context at a leaf, message by message, with the turn each one is in.
struct Live<'a> {
    s: &'a Session,
    proj: Projection,
    /// (message, turn), in context order.
    msgs: Vec<(ContextMessage, usize)>,
    turns: usize,
    /// Tool call id → the assistant entry holding it.
    calls: HashMap<String, usize>,
}

impl<'a> Live<'a> {
    /// Pi's estimate of `target`'s message in the live context now (0 when it has none).
    fn tokens_of(&self, target: usize) -> u64 {
        self.msgs
            .iter()
            .find(|(m, _)| m.source == target && m.part == Part::Main)
            .map(|(m, _)| m.est_tokens)
            .unwrap_or(0)
    }

    fn new(s: &'a Session, leaf: usize) -> Live<'a> {
        let proj = context::project(s, &s.path_to(leaf));
        let mut msgs = Vec::new();
        let mut turn = 0;
        let mut calls = HashMap::new();
        for m in proj.messages() {
            if m.role == Role::User && m.part == Part::Main {
                turn += 1;
            }
            if let Kind::Message(sm) = &s.entries[m.source].kind {
                for (id, _) in sm.tool_call_ids.iter() {
                    calls.insert(id.to_string(), m.source);
                }
            }
            msgs.push((m.clone(), turn));
        }
        Live {
            s,
            proj,
            msgs,
            turns: turn,
            calls,
        }
    }

    /// Pi's pure estimate of this context (the replayed system message once, then every
    /// other message): what Pi reports after an edit.
    fn pure_estimate(&self) -> u64 {
        let refs: Vec<&ContextMessage> = self.msgs.iter().map(|(m, _)| m).collect();
        let mut t = context::current_system_estimate(self.s, &refs);
        for m in &refs {
            if m.role != Role::System {
                t += m.est_tokens;
            }
        }
        t
    }

    fn tokens_now(&self) -> f64 {
        context::estimate_projected_tokens(self.s, &self.proj).tokens
    }

    /// The tool-result messages Pi could edit, with what the policies need of each.
    fn tool_result(&self, m: &ContextMessage) -> Option<ToolResultInfo> {
        if m.role != Role::ToolResult || m.part != Part::Main {
            return None;
        }
        let Kind::Message(sm) = &self.s.entries[m.source].kind else {
            return None;
        };
        Some(ToolResultInfo {
            tool: sm.tool_name.as_deref().unwrap_or("").to_string(),
            is_error: sm.is_error,
            call_id: sm.tool_call_id.as_deref().map(String::from),
        })
    }

    /// The message's content as the model sees it now (edits applied).
    fn content(&self, m: &ContextMessage) -> Value {
        context::materialize(self.s, m)
            .get("content")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The first of `path`, `command`, `pattern`, `query` that is a string argument of the
    /// tool call a result answers.
    fn key_arg(&self, call_id: Option<&str>) -> Option<(String, String)> {
        // Read only the tool calls' ids and arguments from the assistant's line: a plan on a
        // big session looks up thousands, and a full decode of each line (thinking, text)
        // would be most of its time.
        #[derive(serde::Deserialize)]
        struct Line<'a> {
            #[serde(borrow)]
            message: Msg<'a>,
        }
        #[derive(serde::Deserialize)]
        struct Msg<'a> {
            #[serde(borrow, default)]
            content: Vec<Block<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct Block<'a> {
            #[serde(borrow, default)]
            id: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow, default)]
            arguments: Option<&'a serde_json::value::RawValue>,
        }
        let call_id = call_id?;
        let at = *self.calls.get(call_id)?;
        let line: Line = serde_json::from_slice(self.s.line_bytes(at)).ok()?;
        let args = line
            .message
            .content
            .iter()
            .find(|b| b.id.as_deref() == Some(call_id))?
            .arguments?;
        let args: serde_json::Map<String, Value> = serde_json::from_str(args.get()).ok()?;
        ["path", "command", "pattern", "query"].iter().find_map(|k| {
            args.get(*k)
                .and_then(|a| a.as_str())
                .map(|a| (k.to_string(), a.to_string()))
        })
    }

    /// Whether a message shows a pruned output now (only an edit can have made it one).
    fn is_pruned(&self, m: &ContextMessage) -> bool {
        m.replaced_by.is_some() && is_pruned(&self.content(m))
    }
}

struct ToolResultInfo {
    tool: String,
    is_error: bool,
    call_id: Option<String>,
}

/// `12500` as `12,500` (en-US grouping, whatever the locale).
pub fn thousands(n: u64) -> String {
    crate::units::count(n)
}

/// The marker a pruned output is replaced by:
/// `[output pruned — ~12,500 tokens | read | path="src/app.ts"]`. A key value longer than 80
/// UTF-16 units is cut to its first 77 plus `...` (a surrogate pair is not split: the cut
/// takes one unit less).
pub fn marker(tokens: u64, tool: &str, key: Option<&(String, String)>) -> String {
    let mut m = format!("{MARKER_PREFIX}~{} tokens | {tool}", thousands(tokens));
    if let Some((k, v)) = key {
        let v = if js::utf16_len(v) > 80 {
            format!("{}...", utf16_head(v, 77))
        } else {
            v.clone()
        };
        m.push_str(&format!(" | {k}=\"{v}\""));
    }
    m.push(']');
    m
}

/// The longest prefix of `s` of at most `n` UTF-16 units that does not split a character.
fn utf16_head(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > n {
            return &s[..i];
        }
    }
    s
}

/// The longest suffix of `s` of at most `n` UTF-16 units that does not split a character.
fn utf16_tail(s: &str, n: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices().rev() {
        units += c.len_utf16();
        if units > n {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

/// Whether content is already a pruned output (one text block, or a string, starting with
/// the marker's prefix).
pub fn is_pruned(content: &Value) -> bool {
    match content {
        Value::String(t) => t.starts_with(MARKER_PREFIX),
        Value::Array(a) => {
            a.len() == 1
                && a[0]["type"] == "text"
                && a[0]["text"].as_str().is_some_and(|t| t.starts_with(MARKER_PREFIX))
        }
        _ => false,
    }
}

/// The text of content (string, or its text blocks joined by newlines) and its image blocks.
fn text_and_images(content: &Value) -> (String, Vec<Value>) {
    match content {
        Value::String(t) => (t.clone(), vec![]),
        Value::Array(a) => {
            let text = a
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let images = a.iter().filter(|b| b["type"] == "image").cloned().collect();
            (text, images)
        }
        _ => (String::new(), vec![]),
    }
}

/// Pi's estimate of a tool result (or user message) whose content is `blocks`.
fn estimate_blocks(blocks: &[Value], role: &Role) -> u64 {
    let mut st = ContentStats::default();
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => st.text_chars += b["text"].as_str().map(js::utf16_len).unwrap_or(0),
            Some("image") => st.images += 1,
            Some("thinking") => st.thinking_chars += b["thinking"].as_str().map(js::utf16_len).unwrap_or(0),
            Some("toolCall") => {
                st.tool_call_chars += b["name"].as_str().map(js::utf16_len).unwrap_or(0)
                    + js::stringify_len(b.get("arguments").unwrap_or(&Value::Null));
            }
            _ => {}
        }
    }
    st.estimate(role)
}

/// A long output distilled: whole lines from its start and its end, each end at most
/// [`DISTILL_KEEP`] UTF-16 units, and between them a line that says which lines were left
/// out and how to get them back (`rest`, e.g. "bonsai_recall returns them word for word").
/// A first or last line longer than that on its own is cut at a character. `None` for text
/// of at most [`DISTILL_OVER`] units. Returns the text and the units left out.
pub fn distill(text: &str, tool: &str, rest: &str) -> Option<(String, usize)> {
    let len = js::utf16_len(text);
    if len <= DISTILL_OVER {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    // Whole lines from the start while they fit.
    let mut head_units = 0;
    let mut head_lines = 0;
    for l in &lines {
        let u = js::utf16_len(l) + 1;
        if head_units + u > DISTILL_KEEP {
            break;
        }
        head_units += u;
        head_lines += 1;
    }
    let mut tail_units = 0;
    let mut tail_lines = 0;
    for l in lines[head_lines..].iter().rev() {
        let u = js::utf16_len(l) + 1;
        if tail_units + u > DISTILL_KEEP {
            break;
        }
        tail_units += u;
        tail_lines += 1;
    }
    let (head, tail): (String, String) = if head_lines == 0 || tail_lines == 0 {
        // One line longer than an end: cut at characters.
        (
            utf16_head(text, DISTILL_KEEP).to_string(),
            utf16_tail(text, DISTILL_KEEP).to_string(),
        )
    } else {
        (
            lines[..head_lines].join("\n"),
            lines[lines.len() - tail_lines..].join("\n"),
        )
    };
    let elided = len.saturating_sub(js::utf16_len(&head) + js::utf16_len(&tail));
    let what = if head_lines == 0 || tail_lines == 0 {
        format!("{} characters", thousands(elided as u64))
    } else {
        format!(
            "lines {}–{} of {} ({} characters)",
            head_lines + 1,
            lines.len() - tail_lines,
            lines.len(),
            thousands(elided as u64)
        )
    };
    Some((
        format!("{head}\n[distilled: {what} of this {tool} output left out; {rest}]\n{tail}"),
        elided,
    ))
}

/// How `bonsai prune` says a distilled output's middle comes back.
pub const RUN_AGAIN: &str = "run the tool again to see them";

fn pruned_item(live: &Live, m: &ContextMessage, turn: usize, info: &ToolResultInfo) -> PlanItem {
    let key = live.key_arg(info.call_id.as_deref());
    let text = marker(m.est_tokens, &info.tool, key.as_ref());
    let blocks = vec![json!({"type": "text", "text": text})];
    PlanItem {
        entry: m.source,
        role: Role::ToolResult,
        tool: Some(info.tool.clone()),
        key_arg: key,
        change: Change::Pruned,
        tokens_before: m.est_tokens,
        tokens_after: estimate_blocks(&blocks, &Role::ToolResult),
        replacement: json!({ "content": blocks }),
        turn,
    }
}

fn distilled_item(live: &Live, m: &ContextMessage, turn: usize, info: &ToolResultInfo) -> Option<PlanItem> {
    // Only long text is distilled: skip the decode for what cannot be.
    if m.est_tokens < (DISTILL_OVER / 4) as u64 || live.is_pruned(m) {
        return None;
    }
    let content = live.content(m);
    let (text, images) = text_and_images(&content);
    let (short, elided) = distill(&text, &info.tool, RUN_AGAIN)?;
    let mut blocks = vec![json!({"type": "text", "text": short})];
    blocks.extend(images);
    Some(PlanItem {
        entry: m.source,
        role: Role::ToolResult,
        tool: Some(info.tool.clone()),
        key_arg: live.key_arg(info.call_id.as_deref()),
        change: Change::Distilled { elided },
        tokens_before: m.est_tokens,
        tokens_after: estimate_blocks(&blocks, &Role::ToolResult),
        replacement: json!({ "content": blocks }),
        turn,
    })
}

fn finish(live: &Live, what: String, zone: Option<Zone>, mut items: Vec<PlanItem>, note: String) -> Plan {
    items.sort_by_key(|i| live.msgs.iter().position(|(m, _)| m.source == i.entry));
    // Restoring adds tokens back, pruning takes them away.
    let delta: i64 = items
        .iter()
        .filter(|i| i.change.writes())
        .map(|i| i.tokens_after as i64 - i.tokens_before as i64)
        .sum();
    let writes = items.iter().any(|i| i.change.writes());
    Plan {
        what,
        leaf: *live.proj.path.last().unwrap_or(&0),
        zone,
        items,
        compact_from: None,
        tokens_now: live.tokens_now(),
        // Nothing written: Pi's figure stays what it is now.
        tokens_after: if writes {
            (live.pure_estimate() as i64 + delta).max(0) as u64
        } else {
            live.tokens_now().round() as u64
        },
        estimate: live.pure_estimate(),
        note,
    }
}

/// The `output` policy (OpenCode's prune): walking from the newest message back to the
/// compaction boundary, skip the newest `protected_turns` turns; count prunable tool output
/// that is not an error and not already pruned; the newest `protect` tokens of it are kept,
/// the rest is pruned if it adds up to more than `minimum`.
///
/// With `compat`, pi-context-pruning's own code instead: the budget is checked before a
/// result is added (so the result that fills it is kept), errors are counted (in the budget
/// and in the sum) but never pruned, the minimum is reached at `>=`, and an already pruned
/// result is counted like any other.
pub fn output(s: &Session, leaf: usize, settings: &PruneSettings, force: bool) -> Plan {
    let live = Live::new(s, leaf);
    output_on(&live, settings, force)
}

fn output_on(live: &Live, settings: &PruneSettings, force: bool) -> Plan {
    let minimum = if force { 0 } else { settings.minimum };
    let mut turns = 0;
    let mut total = 0u64;
    let mut kept = Vec::new();
    let mut candidates = Vec::new();
    let mut candidate_sum = 0u64;
    for (m, turn) in live.msgs.iter().rev() {
        if matches!(m.role, Role::CompactionSummary) {
            break;
        }
        if m.role == Role::User && m.part == Part::Main {
            turns += 1;
        }
        if turns < settings.protected_turns {
            continue;
        }
        let Some(info) = live.tool_result(m) else { continue };
        if !settings.prunable(&info.tool) {
            continue;
        }
        if settings.compat {
            let over = total >= settings.protect;
            total += m.est_tokens;
            if over {
                candidate_sum += m.est_tokens;
                if !info.is_error {
                    candidates.push((m, *turn, info));
                }
            } else if !info.is_error {
                kept.push((m, *turn, info));
            }
        } else {
            if info.is_error || live.is_pruned(m) {
                continue;
            }
            total += m.est_tokens;
            if total <= settings.protect {
                kept.push((m, *turn, info));
            } else {
                candidate_sum += m.est_tokens;
                candidates.push((m, *turn, info));
            }
        }
    }
    let enough = if settings.compat {
        candidate_sum >= minimum
    } else {
        candidate_sum > minimum
    };
    let prune = enough && !candidates.is_empty();
    let mut items: Vec<PlanItem> = kept
        .iter()
        .map(|(m, turn, info)| protected_item(live, m, *turn, info))
        .collect();
    for (m, turn, info) in &candidates {
        let item = if prune {
            pruned_item(live, m, *turn, info)
        } else {
            protected_item(live, m, *turn, info)
        };
        // An output shorter than its marker stays: the edit would add tokens, not save them.
        // pi-context-pruning's own code prunes it all the same (compat means its answers); an
        // output bonsai already pruned is counted there but not written again.
        let keep = if settings.compat {
            live.is_pruned(m)
        } else {
            item.tokens_after >= item.tokens_before
        };
        items.push(if keep {
            protected_item(live, m, *turn, info)
        } else {
            item
        });
    }
    let pruned: Vec<&PlanItem> = items.iter().filter(|i| i.change == Change::Pruned).collect();
    let note = if prune {
        format!(
            "{} tool outputs older than the newest {} turns and the newest {} tokens of output: {} pruned ({} tokens of output){}",
            candidates.len(),
            settings.protected_turns,
            thousands(settings.protect),
            pruned.len(),
            thousands(pruned.iter().map(|i| i.tokens_before).sum()),
            if pruned.len() < candidates.len() {
                ", the rest kept (shorter than their marker)"
            } else {
                ""
            }
        )
    } else if candidates.is_empty() {
        format!(
            "nothing to prune: the tool output before the newest {} turns fits in the {} tokens kept",
            settings.protected_turns,
            thousands(settings.protect)
        )
    } else {
        format!(
            "nothing pruned: {} tokens could be, not more than the minimum of {} (--force prunes anyway)",
            thousands(candidate_sum),
            thousands(minimum)
        )
    };
    let what = if settings.compat {
        "output (pi-context-pruning)".to_string()
    } else {
        "output".to_string()
    };
    finish(live, what, None, items, note)
}

fn protected_item(live: &Live, m: &ContextMessage, turn: usize, info: &ToolResultInfo) -> PlanItem {
    PlanItem {
        entry: m.source,
        role: Role::ToolResult,
        tool: Some(info.tool.clone()),
        key_arg: live.key_arg(info.call_id.as_deref()),
        change: Change::Protected,
        tokens_before: m.est_tokens,
        tokens_after: m.est_tokens,
        replacement: Value::Null,
        turn,
    }
}

/// The `zones` policy at `zone`. Green: the output policy. Yellow: keep the newest 4 turns
/// (the newest lossless, long tool output distilled in the other three) and prune every
/// prunable output before them. Red: keep the newest 2 turns (the older one distilled) and
/// propose a compaction from the second-newest user message. Whole turns are never hidden:
/// that would drop the user's instructions; compaction is the tool for that.
pub fn zones(s: &Session, leaf: usize, zone: Zone, settings: &PruneSettings) -> Plan {
    let live = Live::new(s, leaf);
    if zone == Zone::Green {
        let mut p = output_on(&live, settings, false);
        p.what = "by zone (green: output)".into();
        p.zone = Some(Zone::Green);
        return p;
    }
    let keep = if zone == Zone::Yellow { 4 } else { 2 };
    let newest = live.turns;
    let first_kept_turn = newest.saturating_sub(keep - 1);
    let mut items = Vec::new();
    let mut pruned = 0;
    let mut distilled = 0;
    for (m, turn) in &live.msgs {
        let Some(info) = live.tool_result(m) else { continue };
        if !settings.prunable(&info.tool) || info.is_error {
            continue;
        }
        if *turn >= first_kept_turn {
            if *turn < newest
                && let Some(item) = distilled_item(&live, m, *turn, &info)
            {
                distilled += 1;
                items.push(item);
            }
        } else if zone == Zone::Yellow && !live.is_pruned(m) {
            pruned += 1;
            items.push(pruned_item(&live, m, *turn, &info));
        }
    }
    let mut plan = finish(
        &live,
        format!("by zone ({})", zone.name()),
        Some(zone),
        items,
        String::new(),
    );
    if zone == Zone::Red {
        // The second-newest user message starts the turns kept.
        let users: Vec<usize> = live
            .msgs
            .iter()
            .filter(|(m, _)| m.role == Role::User && m.part == Part::Main)
            .map(|(m, _)| m.source)
            .collect();
        plan.compact_from = users.len().checked_sub(2).map(|k| users[k]);
    }
    plan.note = match zone {
        Zone::Yellow => format!(
            "yellow: the newest 4 turns kept (the newest lossless, {distilled} long outputs distilled), {pruned} older outputs pruned"
        ),
        _ => match plan.compact_from {
            // Red edits less than yellow on purpose: the compaction it proposes summarizes the
            // older turns whole, so pruning their outputs first would only lose detail.
            Some(u) => format!(
                "red: the newest 2 turns kept ({distilled} long outputs distilled); older outputs are not pruned, because the compaction from {} summarizes them: red saves less by edits and the most once compacted",
                s.entries[u].id
            ),
            None => format!("red: {distilled} long outputs distilled; too few turns to compact"),
        },
    };
    plan
}

/// A plan for `policy` (`zones` without a zone takes `gauge_zone`, the gauge's).
pub fn plan(s: &Session, leaf: usize, policy: Policy, settings: &PruneSettings, force: bool, gauge_zone: Zone) -> Plan {
    match policy {
        Policy::Output => output(s, leaf, settings, force),
        // Compact (the gauge at or over T) edits as red does.
        Policy::Zones(z) => match z.unwrap_or(gauge_zone) {
            Zone::Compact => zones(s, leaf, Zone::Red, settings),
            z => zones(s, leaf, z, settings),
        },
    }
}

/// Why an entry cannot be edited.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditRefusal {
    #[error("entry {0} is not on the path to the leaf: Pi applies edits only on the current branch")]
    OffPath(String),
    #[error("entry {0} is behind the last compaction's kept range: Pi ignores edits there (it is already summarized)")]
    Compacted(String),
    #[error("{what} cannot be edited in Pi: only user, assistant and tool-result messages and custom messages can")]
    NotEditable { what: String },
    #[error(
        "a tool result cannot be hidden: Pi would invent an error result (\"No result provided\") in its place; replace its text instead"
    )]
    HideToolResult,
    #[error(
        "this assistant message holds tool calls: hiding it would orphan their results; replace its text instead (the tool calls are kept)"
    )]
    HideToolCalls,
    #[error("entry {0} has no edit to restore: the model already sees its original content")]
    NothingToRestore(String),
    #[error("no action of bonsai's to undo on this branch")]
    NothingToUndo,
}

/// A manual edit of one entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    Hide,
    Replace(String),
    Restore,
}

/// The context's message for `target`, checked editable on the leaf's branch.
fn editable<'l>(live: &'l Live, target: usize) -> Result<(&'l ContextMessage, usize), EditRefusal> {
    let s = live.s;
    let id = || s.entries[target].id.to_string();
    if !live.proj.path.contains(&target) {
        return Err(EditRefusal::OffPath(id()));
    }
    let what = match &s.entries[target].kind {
        Kind::Message(m) if matches!(m.role, Role::User | Role::Assistant | Role::ToolResult) => None,
        Kind::Message(m) => Some(format!("a {} message", m.role.as_str())),
        Kind::CustomMessage { .. } => None,
        k => Some(format!("a {} entry", k.type_name())),
    };
    if let Some(what) = what {
        return Err(EditRefusal::NotEditable { what });
    }
    if !live.proj.entries.iter().any(|e| e.source == target) {
        return Err(EditRefusal::Compacted(id()));
    }
    match live
        .msgs
        .iter()
        .find(|(m, _)| m.source == target && m.part == Part::Main)
    {
        Some((m, t)) => Ok((m, *t)),
        // In the context but without a message now: an earlier edit hid it.
        None => Err(EditRefusal::NotEditable {
            what: "a hidden entry (restore it first)".into(),
        }),
    }
}

/// The newest `context_edit` of `target` on `path` (the one in effect, if inside the kept range).
fn latest_edit(s: &Session, path: &[usize], target: usize) -> Option<usize> {
    let id = &*s.entries[target].id;
    path.iter()
        .rev()
        .copied()
        .find(|&i| matches!(&s.entries[i].kind, Kind::ContextEdit(ce) if ce.target_id.as_deref() == Some(id)))
}

/// The raw content of a message entry as stored (before any edit).
fn original_content(s: &Session, target: usize) -> Value {
    let v = s.entry_value(target);
    match &s.entries[target].kind {
        Kind::CustomMessage { .. } => v.get("content").cloned().unwrap_or(Value::Null),
        _ => v["message"].get("content").cloned().unwrap_or(Value::Null),
    }
}

/// A manual edit of `target` as a plan (one item).
pub fn edit(s: &Session, leaf: usize, target: usize, e: &Edit) -> Result<Plan, EditRefusal> {
    let live = Live::new(s, leaf);
    let role = match &s.entries[target].kind {
        Kind::Message(m) => m.role.clone(),
        _ => Role::Custom,
    };
    let id = s.entries[target].id.to_string();
    let item = match e {
        Edit::Restore => {
            if latest_edit(s, &live.proj.path, target).is_none() {
                return Err(EditRefusal::NothingToRestore(id));
            }
            let content = original_content(s, target);
            let after = context::intrinsic_messages(s, target)
                .first()
                .map(|m| m.est_tokens)
                .unwrap_or(0);
            PlanItem::restored(
                s,
                target,
                role,
                live.tokens_of(target),
                after,
                json!({ "content": content }),
            )
        }
        Edit::Hide => {
            let (m, turn) = editable(&live, target)?;
            if let Kind::Message(sm) = &s.entries[target].kind {
                if sm.role == Role::ToolResult {
                    return Err(EditRefusal::HideToolResult);
                }
                if !sm.tool_call_ids.is_empty() || s.measures(sm).content.tool_calls > 0 {
                    return Err(EditRefusal::HideToolCalls);
                }
            }
            PlanItem {
                entry: target,
                role,
                tool: tool_of(s, target),
                key_arg: None,
                change: Change::Hidden,
                tokens_before: m.est_tokens,
                tokens_after: 0,
                replacement: Value::Null,
                turn,
            }
        }
        Edit::Replace(text) => {
            let (m, turn) = editable(&live, target)?;
            let mut blocks = vec![json!({"type": "text", "text": text})];
            if role == Role::Assistant
                && let Value::Array(a) = live.content(m)
            {
                // The tool calls stay: their results answer them.
                blocks.extend(a.into_iter().filter(|b| b["type"] == "toolCall"));
            }
            PlanItem {
                entry: target,
                role: role.clone(),
                tool: tool_of(s, target),
                key_arg: None,
                change: Change::Replaced,
                tokens_before: m.est_tokens,
                tokens_after: estimate_blocks(&blocks, &role),
                replacement: json!({ "content": blocks }),
                turn,
            }
        }
    };
    let what = match e {
        Edit::Hide => "hide",
        Edit::Replace(_) => "replace",
        Edit::Restore => "restore",
    };
    Ok(finish(&live, what.into(), None, vec![item], format!("{what} {id}")))
}

fn tool_of(s: &Session, idx: usize) -> Option<String> {
    match &s.entries[idx].kind {
        Kind::Message(m) => m.tool_name.as_deref().map(String::from),
        _ => None,
    }
}

/// The context edit in effect for each entry at `leaf` (target → edit), as Pi applies them:
/// among the entries the context is built from, the latest edit of a target wins.
pub fn edits_in_effect(s: &Session, leaf: usize) -> HashMap<usize, usize> {
    // The file's leaf of a session opened from its index: as the index kept them.
    if let Some(kept) = context::LeafContext::kept(s, leaf) {
        return kept.edits.iter().copied().collect();
    }
    let ctx = context::context_entries(s, &s.path_to(leaf));
    context::edits_in_effect(s, &ctx).into_iter().collect()
}

/// [`edits_in_effect`] without the edits that give a target its original content back
/// (what undo and restore write): the entries whose context really differs.
pub fn edits_changing(s: &Session, leaf: usize) -> HashMap<usize, usize> {
    let mut out = edits_in_effect(s, leaf);
    out.retain(|&target, &mut edit| match s.entry_value(edit).get("replacement") {
        Some(Value::Object(r)) => r.get("content") != Some(&original_content(s, target)),
        _ => true,
    });
    out
}

/// An action of bonsai's on the leaf's branch: its record entry and the edits it wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub record: usize,
    pub what: String,
    pub edits: Vec<usize>,
}

/// The newest action on the branch to `leaf` that has not been undone.
pub fn last_action(s: &Session, leaf: usize) -> Option<Action> {
    let path = s.path_to(leaf);
    let mut undone: HashSet<String> = HashSet::new();
    for &i in path.iter().rev() {
        let Kind::Custom { custom_type: Some(t) } = &s.entries[i].kind else {
            continue;
        };
        if &**t != entries::CONTEXT_EDITS_RECORD {
            continue;
        }
        let v = s.entry_value(i);
        let data = &v["data"];
        let what = data["action"].as_str().unwrap_or("").to_string();
        if what == "undo" {
            if let Some(u) = data["undoes"].as_str() {
                undone.insert(u.to_string());
            }
            continue;
        }
        if undone.contains(&*s.entries[i].id) {
            continue;
        }
        let edits = data["edits"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .filter_map(|id| s.idx_of(id))
                    .collect()
            })
            .unwrap_or_default();
        return Some(Action { record: i, what, edits });
    }
    None
}

/// Undo the newest action on the branch: each of its edits gets an edit back to the state its
/// target had before (an earlier edit's replacement, or the original content).
pub fn undo(s: &Session, leaf: usize) -> Result<(Plan, Action), EditRefusal> {
    let action = last_action(s, leaf).ok_or(EditRefusal::NothingToUndo)?;
    let live = Live::new(s, leaf);
    let path = &live.proj.path;
    let mut items = Vec::new();
    for &e in &action.edits {
        let Some(t) = s.entries[e].kind.context_edit_target() else {
            continue;
        };
        let Some(target) = s.idx_of(t) else { continue };
        let pos = path.iter().position(|&i| i == e).unwrap_or(path.len());
        let before = latest_edit(s, &path[..pos], target);
        let replacement = match before {
            Some(b) => s.entry_value(b).get("replacement").cloned().unwrap_or(Value::Null),
            None => json!({ "content": original_content(s, target) }),
        };
        let now = live.tokens_of(target);
        let role = match &s.entries[target].kind {
            Kind::Message(m) => m.role.clone(),
            _ => Role::Custom,
        };
        let after = match &replacement {
            Value::Null => 0,
            r => match r.get("content") {
                Some(Value::Array(a)) => estimate_blocks(a, &role),
                Some(Value::String(t)) => {
                    let st = ContentStats {
                        is_string: !matches!(role, Role::Assistant | Role::ToolResult),
                        text_chars: js::utf16_len(t),
                        ..Default::default()
                    };
                    if st.is_string {
                        st.estimate(&role)
                    } else {
                        (js::utf16_len(t) as u64).div_ceil(4)
                    }
                }
                _ => 0,
            },
        };
        items.push(PlanItem::restored(s, target, role, now, after, replacement));
    }
    let note = format!("undo {} ({} edits)", action.what, items.len());
    Ok((finish(&live, "undo".into(), None, items, note), action))
}

/// The record appended after an action's edits (its `data`): what it was, what it saved,
/// and which edits it wrote (their ids are filled in when the entries are made).
pub fn record_data(plan: &Plan, undoes: Option<&str>) -> Value {
    let mut d = json!({
        "action": if undoes.is_some() { "undo" } else { plan.what.as_str() },
        "tokensBefore": plan.tokens_now.round() as u64,
        "tokensAfter": plan.tokens_after,
    });
    if let Some(u) = undoes {
        d["undoes"] = json!(u);
    }
    d
}

impl Plan {
    /// The write that makes this plan Pi's: one edit per changed entry, then the record.
    pub fn to_write(&self, s: &Session, undoes: Option<&str>) -> crate::edit::plan::Write {
        crate::edit::plan::Write::ContextEdits {
            leaf: s.entries[self.leaf].id.to_string(),
            edits: self
                .edits()
                .map(|i| (s.entries[i.entry].id.to_string(), i.replacement.clone()))
                .collect(),
            record: record_data(self, undoes),
        }
    }
}

#[cfg(test)]
mod tests;

/// A signed change in tokens as the user reads it: "−21,817", "+1,207", "±0".
pub fn signed_tokens(n: i64) -> String {
    crate::units::signed(n)
}
