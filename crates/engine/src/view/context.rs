//! What the model sees: Pi's `buildContextEntries` → `buildSessionProjection` →
//! `buildSessionContext`, and its two context-size estimates.
//!
//! The projection is a list of references (entry index + which part of it), never copies of
//! content; `materialize` turns one into the JSON message Pi would hold when text is needed.

use crate::load::entry::{ContentStats, Kind, Role, StoredMessage, Usage};
use crate::load::js;
use crate::load::session::Session;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Which message of an entry a projected message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A `message` entry's own message, or a `custom_message`/`branch_summary` conversion.
    Main,
    /// The compaction's stored `systemMessage` checkpoint.
    CompactionSystem,
    CompactionSummary,
}

#[derive(Debug, Clone)]
pub struct ContextMessage {
    pub source: usize,
    pub part: Part,
    pub role: Role,
    /// A `context_edit` entry whose replacement content this message carries.
    pub replaced_by: Option<usize>,
    pub est_tokens: u64,
}

/// An entry's messages in a context: almost always one, kept inline (a long path's
/// projection is one allocation, not one per entry: at 1 GB, 342,000 of them).
pub type EntryMessages = smallvec::SmallVec<[ContextMessage; 1]>;

#[derive(Debug, Clone)]
pub struct ProjectedEntry {
    pub source: usize,
    pub messages: EntryMessages,
}

#[derive(Debug, Clone)]
pub struct Projection {
    pub path: Vec<usize>,
    pub entries: Vec<ProjectedEntry>,
    pub thinking_level: String,
    pub model: Option<(Option<String>, Option<String>)>,
}

impl Projection {
    pub fn messages(&self) -> impl Iterator<Item = &ContextMessage> {
        self.entries.iter().flat_map(|e| e.messages.iter())
    }
    pub fn message_count(&self) -> usize {
        self.entries.iter().map(|e| e.messages.len()).sum()
    }
}

/// Pi's `sessionEntryToContextMessages` in reference form (roles and estimates only).
pub fn intrinsic_messages(s: &Session, idx: usize) -> EntryMessages {
    let e = &s.entries[idx];
    let mk = |part, role, est| ContextMessage {
        source: idx,
        part,
        role,
        replaced_by: None,
        est_tokens: est,
    };
    match &e.kind {
        // Its facts and estimate, read without decoding the message (a session opened from
        // its index decodes one when something reads it; a context is most of a session).
        Kind::Message(m) => smallvec::smallvec![mk(
            Part::Main,
            m.facts().role().unwrap_or_else(|| m.role.clone()),
            s.message_est_tokens(m),
        )],
        Kind::CustomMessage(c) => smallvec::smallvec![mk(Part::Main, Role::Custom, c.est_tokens)],
        Kind::BranchSummary(b) if b.summary_nonempty => {
            smallvec::smallvec![mk(
                Part::Main,
                Role::BranchSummary,
                (b.summary_chars as u64).div_ceil(4),
            )]
        }
        Kind::Compaction(c) => {
            let summary = mk(
                Part::CompactionSummary,
                Role::CompactionSummary,
                (c.summary_chars as u64).div_ceil(4),
            );
            match &c.system_message {
                Some(sm) => smallvec::smallvec![mk(Part::CompactionSystem, sm.role.clone(), s.est_tokens(sm)), summary],
                None => smallvec::smallvec![summary],
            }
        }
        _ => smallvec::smallvec![],
    }
}

/// Pi's `buildContextEntries`: the newest compaction, its kept range, and what follows.
pub fn context_entries(s: &Session, path: &[usize]) -> Vec<usize> {
    let Some(ci) = path.iter().rposition(|&i| s.entries[i].is_compaction()) else {
        return path.to_vec();
    };
    let c = path[ci];
    let first_kept = match &s.entries[c].kind {
        Kind::Compaction(cm) => cm.first_kept_entry_id.as_deref(),
        _ => None,
    };
    let mut out = vec![c];
    let mut found = false;
    for &i in &path[..ci] {
        if Some(&*s.entries[i].id) == first_kept {
            found = true;
        }
        if found && !s.entries[i].is_system_message() {
            out.push(i);
        }
    }
    out.extend_from_slice(&path[ci + 1..]);
    out
}

/// Estimate for a message whose content a `context_edit` replaced.
fn replaced_estimate(m: &StoredMessage, rep: &ContentStats) -> u64 {
    let mut st = rep.clone();
    if st.is_string && matches!(m.role, Role::Assistant | Role::ToolResult) {
        // Pi stores a string replacement for these roles as one text block.
        st.is_string = false;
    }
    st.estimate(&m.role)
}

/// Pi's `projectContextEntry`: an entry's messages with a `context_edit` applied (a null
/// replacement hides them).
pub(crate) fn project_entry(s: &Session, idx: usize, edit: Option<usize>) -> EntryMessages {
    let mut msgs = intrinsic_messages(s, idx);
    let Some(ei) = edit else { return msgs };
    let Kind::ContextEdit(ce) = &s.entries[ei].kind else {
        return msgs;
    };
    let Some(rep) = &ce.replacement else {
        return EntryMessages::new();
    };
    for m in &mut msgs {
        if !matches!(m.role, Role::User | Role::Assistant | Role::ToolResult | Role::Custom) {
            continue;
        }
        m.replaced_by = Some(ei);
        m.est_tokens = match &s.entries[idx].kind {
            Kind::Message(msg) => replaced_estimate(msg, rep),
            _ => {
                let mut st = rep.clone();
                st.is_string = rep.is_string;
                st.estimate(&Role::Custom)
            }
        };
    }
    msgs
}

/// The thinking level and model Pi restores from a path (the latest of each on it).
pub fn path_settings(s: &Session, path: &[usize]) -> (String, Option<(Option<String>, Option<String>)>) {
    // From the leaf back, stopping at the latest of each: a long path's every assistant
    // reply would otherwise make (and drop) its model's strings.
    let owned = |x: &Option<Box<str>>| x.as_deref().map(String::from);
    let mut thinking_level = None;
    let mut model = None;
    for &i in path.iter().rev() {
        match &s.entries[i].kind {
            Kind::ThinkingLevelChange { level } if thinking_level.is_none() => {
                thinking_level = Some(level.as_deref().unwrap_or("").to_string());
            }
            Kind::ModelChange(c) if model.is_none() => {
                model = Some((owned(&c.provider), owned(&c.model_id)));
            }
            Kind::Message(m) if model.is_none() && m.facts().is(&Role::Assistant) => {
                model = Some((owned(&m.provider), owned(&m.model)));
            }
            _ => {}
        }
        if thinking_level.is_some() && model.is_some() {
            break;
        }
    }
    (thinking_level.unwrap_or_else(|| "off".to_string()), model)
}

/// Pi's `buildSessionProjection` for a root→leaf path.
pub fn project(s: &Session, path: &[usize]) -> Projection {
    let (thinking_level, model) = path_settings(s, path);
    let ctx = context_entries(s, path);
    s.prefetch_measures(ctx.iter().copied());
    let mut edits: HashMap<&str, usize> = HashMap::new();
    for &i in &ctx {
        if let Some(t) = s.entries[i].kind.context_edit_target() {
            edits.insert(t, i);
        }
    }
    let entries = ctx
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let e = &s.entries[i];
            let messages = if e.is_compaction() && k > 0 {
                EntryMessages::new()
            } else {
                project_entry(s, i, edits.get(&*e.id).copied())
            };
            ProjectedEntry { source: i, messages }
        })
        .collect();
    Projection {
        path: path.to_vec(),
        entries,
        thinking_level,
        model,
    }
}

/// The message's own `StoredMessage` record (for assistants: usage, stop reason, tool calls).
pub fn msg_of<'a>(s: &'a Session, m: &ContextMessage) -> Option<&'a StoredMessage> {
    match (&s.entries[m.source].kind, m.part) {
        (Kind::Message(msg), Part::Main) => Some(msg),
        (Kind::Compaction(c), Part::CompactionSystem) => c.system_message.as_ref(),
        _ => None,
    }
}

fn valid_usage(s: &Session, m: &ContextMessage) -> Option<Usage> {
    msg_of(s, m).and_then(|x| x.valid_usage())
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextTokens {
    pub tokens: f64,
    pub usage_tokens: f64,
    pub trailing_tokens: f64,
    pub last_usage_index: Option<usize>,
}

/// Pi's `estimateContextTokens`: the last valid assistant usage plus estimates after it.
pub fn estimate_context_tokens(s: &Session, msgs: &[&ContextMessage]) -> ContextTokens {
    let last = msgs
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| valid_usage(s, m).map(|u| (i, u)));
    match last {
        None => {
            let est: u64 = msgs.iter().map(|m| m.est_tokens).sum();
            ContextTokens {
                tokens: est as f64,
                usage_tokens: 0.0,
                trailing_tokens: est as f64,
                last_usage_index: None,
            }
        }
        Some((i, u)) => {
            let usage = u.context_tokens();
            let trailing: u64 = msgs[i + 1..].iter().map(|m| m.est_tokens).sum();
            ContextTokens {
                tokens: usage + trailing as f64,
                usage_tokens: usage,
                trailing_tokens: trailing as f64,
                last_usage_index: Some(i),
            }
        }
    }
}

/// Pi's `AgentSession.getContextUsage().tokens` at the end of `proj`'s path: `None` when the
/// newest compaction on the path has no assistant reply with usage after it in the context
/// (Pi does not know the size until the next reply), else its projected estimate.
pub fn pi_context_usage(s: &Session, proj: &Projection) -> Option<f64> {
    let latest = proj
        .path
        .iter()
        .rposition(|&i| matches!(s.entries[i].kind, Kind::Compaction(_)));
    if let Some(c) = latest {
        let answered: std::collections::HashSet<usize> = proj
            .entries
            .iter()
            .filter(|pe| {
                pe.messages
                    .iter()
                    .any(|m| m.role == Role::Assistant && valid_usage(s, m).is_some())
            })
            .map(|pe| pe.source)
            .collect();
        if !proj.path[c + 1..].iter().any(|i| answered.contains(i)) {
            return None;
        }
    }
    Some(estimate_projected_tokens(s, proj).tokens)
}

/// Pi's `estimateProjectedContextTokens`: distrusts usage older than the newest edit or
/// compaction on the branch and then estimates everything (system prompt replayed once).
pub fn estimate_projected_tokens(s: &Session, proj: &Projection) -> ContextTokens {
    let msgs: Vec<&ContextMessage> = proj.messages().collect();
    let est = estimate_context_tokens(s, &msgs);
    if let Some(li) = est.last_usage_index {
        let usage_source = msgs[li].source;
        let usage_id = &*s.entries[usage_source].id;
        let usage_pos = proj.path.iter().position(|&i| &*s.entries[i].id == usage_id);
        let invalidating = proj
            .path
            .iter()
            .rposition(|&i| matches!(s.entries[i].kind, Kind::ContextEdit { .. } | Kind::Compaction(_)));
        let after = match (usage_pos, invalidating) {
            (Some(u), Some(v)) => u > v,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if after {
            return est;
        }
    }
    let mut tokens = current_system_estimate(s, &msgs);
    for m in &msgs {
        if m.role != Role::System {
            tokens += m.est_tokens;
        }
    }
    ContextTokens {
        tokens: tokens as f64,
        usage_tokens: 0.0,
        trailing_tokens: tokens as f64,
        last_usage_index: None,
    }
}

/// Pi's `getCurrentSystemMessage` replay (prompt text, sections by name, tools by name).
pub fn current_system_message(s: &Session, msgs: &[&ContextMessage]) -> Option<Value> {
    let mut content: Vec<String> = Vec::new();
    let mut sections: Map<String, Value> = Map::new();
    let mut tools: Map<String, Value> = Map::new();
    let mut timestamp: Option<Value> = None;
    for m in msgs.iter().filter(|m| m.role == Role::System) {
        let v = materialize(s, m);
        if timestamp.is_none() {
            timestamp = v.get("timestamp").cloned();
        }
        let text = content_text(v.get("content"), "\n");
        if !text.is_empty() {
            content.push(text);
        }
        if let Some(Value::Object(sec)) = v.get("sections") {
            for (k, val) in js::js_key_order(sec) {
                if val.is_null() {
                    sections.shift_remove(k);
                } else {
                    sections.insert(k.clone(), val.clone());
                }
            }
        }
        if let Some(Value::Array(rm)) = v.get("toolsRemoved") {
            for t in rm {
                if let Some(n) = t.get("name").and_then(|n| n.as_str()) {
                    tools.shift_remove(n);
                }
            }
        }
        if let Some(Value::Array(add)) = v.get("toolsAdded") {
            for t in add {
                let name = t
                    .get("name")
                    .map(js::js_to_string)
                    .unwrap_or_else(|| "undefined".into());
                tools.insert(name, t.clone());
            }
        }
    }
    if timestamp.is_none() && tools.is_empty() {
        return None;
    }
    let mut out = Map::new();
    out.insert("role".into(), "system".into());
    out.insert("content".into(), Value::String(content.join("\n\n")));
    if !sections.is_empty() {
        out.insert("sections".into(), Value::Object(sections));
    }
    if !tools.is_empty() {
        out.insert(
            "toolsAdded".into(),
            Value::Array(tools.into_iter().map(|(_, v)| v).collect()),
        );
    }
    out.insert("timestamp".into(), timestamp.unwrap_or(Value::from(0)));
    Some(Value::Object(out))
}

pub(crate) fn current_system_estimate(s: &Session, msgs: &[&ContextMessage]) -> u64 {
    current_system_message(s, msgs).map(|v| estimate_value(&v)).unwrap_or(0)
}

/// `contentText(content, sep)`: a string, or the text blocks joined.
pub fn content_text(c: Option<&Value>, sep: &str) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
            .map(|b| match b.get("text") {
                None | Some(Value::Null) => String::new(),
                Some(t) => js::js_to_string(t),
            })
            .collect::<Vec<_>>()
            .join(sep),
        _ => String::new(),
    }
}

fn content_chars_with_images(c: Option<&Value>) -> usize {
    match c {
        Some(Value::String(s)) => js::utf16_len(s),
        Some(Value::Array(a)) => a
            .iter()
            .map(|b| match b.get("type").and_then(|t| t.as_str()) {
                Some("text") => b.get("text").and_then(|t| t.as_str()).map(js::utf16_len).unwrap_or(0),
                Some("image") => crate::load::entry::IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

/// Pi's `estimateTokens` over a materialized message (used where the message is built, not
/// stored: the replayed system prompt).
pub fn estimate_value(v: &Value) -> u64 {
    let role = v.get("role").and_then(|r| r.as_str()).unwrap_or("");
    let chars = match role {
        "system" => {
            let mut n = content_chars_with_images(v.get("content"));
            if let Some(Value::Object(sec)) = v.get("sections") {
                for val in sec.values() {
                    if let Value::String(s) = val {
                        n += js::utf16_len(s);
                    }
                }
            }
            if let Some(t) = v.get("toolsAdded")
                && js::truthy(Some(t))
            {
                n += js::stringify_len(t);
            }
            n
        }
        "user" | "custom" | "toolResult" => content_chars_with_images(v.get("content")),
        "assistant" => match v.get("content") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|b| match b.get("type").and_then(|t| t.as_str()) {
                    Some("text") => b.get("text").and_then(|t| t.as_str()).map(js::utf16_len).unwrap_or(0),
                    Some("thinking") => b
                        .get("thinking")
                        .and_then(|t| t.as_str())
                        .map(js::utf16_len)
                        .unwrap_or(0),
                    Some("toolCall") => {
                        b.get("name").and_then(|t| t.as_str()).map(js::utf16_len).unwrap_or(0)
                            + b.get("arguments").map(js::stringify_len).unwrap_or(0)
                    }
                    _ => 0,
                })
                .sum(),
            _ => 0,
        },
        "bashExecution" => {
            v.get("command")
                .and_then(|t| t.as_str())
                .map(js::utf16_len)
                .unwrap_or(0)
                + v.get("output").and_then(|t| t.as_str()).map(js::utf16_len).unwrap_or(0)
        }
        "branchSummary" | "compactionSummary" => v
            .get("summary")
            .and_then(|t| t.as_str())
            .map(js::utf16_len)
            .unwrap_or(0),
        _ => 0,
    };
    chars.div_ceil(4) as u64
}

fn ts_ms_value(s: &Session, idx: usize) -> Value {
    let t = s.entries[idx].ts;
    if t.is_nan() { Value::Null } else { Value::from(t as i64) }
}

/// The JSON message Pi holds for a projected reference (with edits applied).
pub fn materialize(s: &Session, m: &ContextMessage) -> Value {
    let mut v = materialize_intrinsic(s, m.source, m.part);
    if let Some(ei) = m.replaced_by {
        let ev = s.entry_value(ei);
        let rep = ev
            .get("replacement")
            .and_then(|r| r.get("content"))
            .cloned()
            .unwrap_or(Value::Null);
        let rep = match (&rep, m.role.clone()) {
            (Value::String(t), Role::Assistant | Role::ToolResult) => {
                serde_json::json!([{"type": "text", "text": t}])
            }
            _ => rep,
        };
        if let Value::Object(o) = &mut v {
            o.insert("content".into(), rep);
        }
    }
    v
}

/// Pi's `sessionEntryToContextMessages` for one part, as JSON.
pub fn materialize_intrinsic(s: &Session, idx: usize, part: Part) -> Value {
    let ev = s.entry_value(idx);
    let e = &s.entries[idx];
    match (&e.kind, part) {
        (Kind::Message(m), _) => {
            let mut msg = ev.get("message").cloned().unwrap_or(Value::Null);
            if let Value::Object(o) = &mut msg
                && m.content_missing
            {
                match m.role {
                    Role::System => {
                        o.insert("content".into(), Value::String(String::new()));
                    }
                    Role::User | Role::Assistant | Role::ToolResult => {
                        o.insert("content".into(), Value::Array(vec![]));
                    }
                    _ => {}
                }
            }
            msg
        }
        (Kind::CustomMessage { .. }, _) => {
            let mut o = Map::new();
            o.insert("role".into(), "custom".into());
            o.insert(
                "customType".into(),
                ev.get("customType").cloned().unwrap_or(Value::Null),
            );
            let content = match ev.get("content") {
                None | Some(Value::Null) => Value::Array(vec![]),
                Some(c) => c.clone(),
            };
            o.insert("content".into(), content);
            o.insert("display".into(), ev.get("display").cloned().unwrap_or(Value::Null));
            if let Some(d) = ev.get("details") {
                o.insert("details".into(), d.clone());
            }
            o.insert("timestamp".into(), ts_ms_value(s, idx));
            Value::Object(o)
        }
        (Kind::BranchSummary(_), _) => {
            let mut o = Map::new();
            o.insert("role".into(), "branchSummary".into());
            o.insert("summary".into(), ev.get("summary").cloned().unwrap_or(Value::Null));
            o.insert("fromId".into(), ev.get("fromId").cloned().unwrap_or(Value::Null));
            o.insert("timestamp".into(), ts_ms_value(s, idx));
            Value::Object(o)
        }
        (Kind::Compaction(_), Part::CompactionSystem) => ev.get("systemMessage").cloned().unwrap_or(Value::Null),
        (Kind::Compaction(_), _) => {
            let mut o = Map::new();
            o.insert("role".into(), "compactionSummary".into());
            o.insert("summary".into(), ev.get("summary").cloned().unwrap_or(Value::Null));
            o.insert(
                "tokensBefore".into(),
                ev.get("tokensBefore").cloned().unwrap_or(Value::Null),
            );
            o.insert("timestamp".into(), ts_ms_value(s, idx));
            Value::Object(o)
        }
        _ => Value::Null,
    }
}

/// What the first frame needs of the context at a leaf, before any setting is applied: the
/// gauge's figures and the context edits in effect. Worked out from the leaf's projection;
/// bonsai's session index keeps the one at the file's leaf (`tree_view::stored`), so a second
/// open of an unchanged file projects nothing before its first frame. Measured on the 10 GB
/// reference, the projection of the leaf's 3.4-million-entry path took 40–400 ms there, and
/// walking the path for the edits and the model as long again on the UI thread.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LeafContext {
    pub leaf: usize,
    /// The provider and model the path restores (see [`path_settings`]).
    pub model: Option<(Option<String>, Option<String>)>,
    /// Pi's `estimateContextTokens` over the context's messages.
    pub tokens: ContextTokens,
    /// Pi's figure rests on a reply from before the latest compaction on the path.
    pub usage_before_compaction: bool,
    /// Context edits follow the reply Pi's figure rests on: the estimate with them.
    pub after_edits: Option<u64>,
    /// Each context edit in effect: (its target, the edit), as [`edits_in_effect`] finds them.
    pub edits: Vec<(usize, usize)>,
}

impl LeafContext {
    /// The leaf context of `proj` (the projection of the path to `leaf`).
    pub fn of_projection(s: &Session, leaf: usize, proj: &Projection) -> LeafContext {
        let ctx: Vec<usize> = proj.entries.iter().map(|e| e.source).collect();
        LeafContext {
            edits: edits_in_effect(s, &ctx),
            ..LeafContext::gauge_of(s, leaf, proj)
        }
    }

    /// Only what the gauge reads of [`LeafContext::of_projection`]: its `edits` are left
    /// empty (a selection's gauge, worked out on every move, needs none of them).
    pub fn gauge_of(s: &Session, leaf: usize, proj: &Projection) -> LeafContext {
        let msgs: Vec<&ContextMessage> = proj.messages().collect();
        let tokens = estimate_context_tokens(s, &msgs);
        let at = |entry: usize| proj.path.iter().position(|&i| i == entry);
        let latest_compaction = proj.path.iter().rposition(|&i| s.entries[i].is_compaction());
        let usage_before_compaction = match (tokens.last_usage_index, latest_compaction) {
            (Some(u), Some(c)) => at(msgs[u].source).is_some_and(|p| p < c),
            _ => false,
        };
        let after_edits = tokens.last_usage_index.and_then(|u| {
            let usage_at = at(msgs[u].source)?;
            let edited = proj.path[usage_at..]
                .iter()
                .any(|&i| matches!(s.entries[i].kind, Kind::ContextEdit { .. }));
            edited.then(|| estimate_projected_tokens(s, proj).tokens as u64)
        });
        LeafContext {
            leaf,
            model: proj.model.clone(),
            tokens,
            usage_before_compaction,
            after_edits,
            edits: Vec::new(),
        }
    }

    /// The one an index kept for `leaf` of `s` (opened from an unchanged file's index).
    pub fn kept(s: &Session, leaf: usize) -> Option<&LeafContext> {
        s.kept::<LeafContext>().filter(|c| c.leaf == leaf)
    }
}

/// The context edits in effect in a context of entries `ctx`: each edit's target and the
/// (last) edit of it, when the target itself takes part in the context.
pub fn edits_in_effect(s: &Session, ctx: &[usize]) -> Vec<(usize, usize)> {
    let edits: Vec<(usize, usize)> = ctx
        .iter()
        .filter_map(|&i| match &s.entries[i].kind {
            Kind::ContextEdit(ce) => Some((s.idx_of(ce.target_id.as_deref()?)?, i)),
            _ => None,
        })
        .collect();
    // Most contexts have no edit: then the context's entries are not gathered (on a long
    // path that was most of what opening a session spent here).
    if edits.is_empty() {
        return Vec::new();
    }
    let mut taking_part = vec![false; s.entries.len()];
    for &i in ctx {
        taking_part[i] = true;
    }
    let mut out: HashMap<usize, usize> = HashMap::new();
    for (target, i) in edits {
        if taking_part[target] {
            out.insert(target, i);
        }
    }
    let mut out: Vec<(usize, usize)> = out.into_iter().collect();
    out.sort_unstable();
    out
}

/// The tool call a tool result answers (for its title and syntax highlighting).
pub fn tool_call_for(s: &Session, entry: usize) -> Option<(String, serde_json::Value)> {
    let crate::load::entry::Kind::Message(m) = &s.entries[entry].kind else {
        return None;
    };
    if m.role != crate::load::entry::Role::ToolResult {
        return None;
    }
    let id = m.tool_call_id.as_deref()?;
    // The call is almost always on the path just above the result.
    let mut cur = s.parent_of(entry);
    let mut hops = 0;
    while let Some(i) = cur {
        if let crate::load::entry::Kind::Message(am) = &s.entries[i].kind
            && am.role == crate::load::entry::Role::Assistant
            && let Some(tc) = s.measures(am).tool_calls.iter().find(|t| t.id.as_deref() == Some(id))
        {
            let v = s.entry_value(i);
            let args = v["message"]["content"][tc.block as usize]
                .get("arguments")
                .cloned()
                .unwrap_or_default();
            return Some((tc.name.to_string(), args));
        }
        hops += 1;
        if hops > 64 {
            break;
        }
        cur = s.parent_of(i);
    }
    None
}
