//! The entries bonsai writes, built exactly as Pi 0.87.1's SessionManager builds them (field
//! order included), so Pi reads them as its own. Pure: `store` does the writing.

use crate::compaction::branch_summary;
use crate::compaction::cut::{self, CompactionPlan, CompactionSettings, NoCompaction};
use crate::compaction::offline;
use crate::compaction::serialize;
use crate::compaction::summary::{self, Summary};
use crate::load::entry::{Kind, Role};
use crate::load::js;
use crate::load::session::Session;
use crate::view::context;
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// splitmix64: one step of a small, well-mixed sequence from a seed.
fn mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `customType` of the record bonsai appends after the context edits of one action (a
/// prune), so undo can find them from the file alone.
pub const CONTEXT_EDITS_RECORD: &str = "bonsai.context-edits";

/// Ids of entries bonsai is about to write, unique against the file and each other. The
/// seed comes from the store's entropy (the engine reads no clock).
pub struct IdSource {
    taken: HashSet<String>,
    state: u64,
}

impl IdSource {
    pub fn new(s: &Session, seed: u64) -> IdSource {
        IdSource {
            taken: s.entries.iter().map(|e| e.id.to_string()).collect(),
            state: seed,
        }
    }
    /// 8 hex digits, like Pi's `randomUUID().slice(0, 8)`.
    pub fn fresh(&mut self) -> String {
        loop {
            let id = format!("{:08x}", mix(&mut self.state) as u32);
            if self.taken.insert(id.clone()) {
                return id;
            }
        }
    }
}

fn base(kind: &str, id: &str, parent: Option<&str>, ts_ms: i64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), kind.into());
    m.insert("id".into(), id.into());
    m.insert("parentId".into(), parent.map(Value::from).unwrap_or(Value::Null));
    m.insert("timestamp".into(), js::iso_from_ms(ts_ms).into());
    m
}

/// Pi's `appendCompaction(summary, firstKeptEntryId, tokensBefore, details, fromHook, usage)`
/// under `leaf`, with the `systemMessage` checkpoint Pi 0.87 stores.
pub fn compaction_entry(
    s: &Session,
    leaf: usize,
    plan: &CompactionPlan,
    summary: &Summary,
    id: &str,
    ts_ms: i64,
) -> Value {
    let (read, modified) = plan.file_ops.lists();
    let mut m = base("compaction", id, Some(&s.entries[leaf].id), ts_ms);
    m.insert("summary".into(), summary.text.clone().into());
    m.insert(
        "firstKeptEntryId".into(),
        s.entries[plan.first_kept_entry].id.to_string().into(),
    );
    m.insert("tokensBefore".into(), crate::load::js::num(plan.tokens_before));
    m.insert("details".into(), json!({"readFiles": read, "modifiedFiles": modified}));
    if let Some(u) = &summary.usage {
        m.insert("usage".into(), u.clone());
    }
    let msgs: Vec<&context::ContextMessage> = plan.projection.messages().collect();
    if let Some(Value::Object(mut sys)) = context::current_system_message(s, &msgs) {
        sys.insert("timestamp".into(), Value::from(ts_ms));
        m.insert("systemMessage".into(), Value::Object(sys));
    }
    Value::Object(m)
}

/// Summary `of` given back what its audit found lost, as a new entry at `leaf` holding
/// `summary`:
/// - a compaction: Pi's own fields copied (its `firstKeptEntryId`, `tokensBefore`, details
///   and checkpoint), so Pi's context after it is the old one with the new summary;
/// - a branch summary: a new branch summary with the same `fromId` (the old one stays in the
///   context, so `summary` holds only what it adds).
///
/// The copy has no `usage`: no model was called, and `bonsai usage` must not count the old
/// call twice.
pub fn amended_entry(
    s: &Session,
    of: usize,
    leaf: usize,
    summary: &str,
    id: &str,
    ts_ms: i64,
) -> Result<Value, String> {
    let path = s.path_to(leaf);
    let Some(at) = path.iter().position(|&i| i == of) else {
        return Err(format!(
            "{} is not on the leaf's path ({}): its summary is not in the model's context there; amend it from a leaf after it",
            s.entries[of].id, s.entries[leaf].id
        ));
    };
    let old = s.entry_value(of);
    let kind = old.get("type").and_then(|t| t.as_str()).unwrap_or("");
    let mut m = base(kind, id, Some(&s.entries[leaf].id), ts_ms);
    match kind {
        "compaction" => {
            if let Some(&later) = path[at + 1..].iter().find(|&&i| s.entries[i].is_compaction()) {
                return Err(format!(
                    "compaction {} came after {} and replaced its summary (it carries it as its previous summary): audit and amend {} instead",
                    s.entries[later].id, s.entries[of].id, s.entries[later].id
                ));
            }
            if let Value::Object(o) = &old {
                for (k, v) in o {
                    if !matches!(
                        k.as_str(),
                        "type" | "id" | "parentId" | "timestamp" | "usage" | "bonsai"
                    ) {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        "branch_summary" => {
            m.insert(
                "fromId".into(),
                old.get("fromId").cloned().unwrap_or_else(|| "root".into()),
            );
        }
        _ => return Err(format!("{} is a {kind} entry, not a summary", s.entries[of].id)),
    }
    m.insert("summary".into(), summary.into());
    Ok(Value::Object(m))
}

pub fn plan_compaction(s: &Session, leaf: usize, settings: CompactionSettings) -> Result<CompactionPlan, NoCompaction> {
    cut::prepare(s, leaf, settings)
}

/// Where `/tree` navigation to `target` puts the leaf, and the text Pi hands back.
#[derive(Debug, Clone)]
pub struct Navigation {
    pub old_leaf: Option<usize>,
    pub target: usize,
    /// The new leaf (None: before the first entry).
    pub new_leaf: Option<usize>,
    /// A user (or custom) message's text, returned to the editor.
    pub editor_text: Option<String>,
    pub branch: branch_summary::BranchPlan,
}

pub fn plan_navigation(s: &Session, old_leaf: Option<usize>, target: usize, token_budget: i64) -> Navigation {
    let e = &s.entries[target];
    let (new_leaf, editor_text) = match &e.kind {
        Kind::Message(m) if m.role == Role::User => {
            let v = s.entry_value(target);
            (
                s.parent_of(target),
                Some(context::content_text(v["message"].get("content"), "")),
            )
        }
        Kind::CustomMessage { .. } => {
            let v = s.entry_value(target);
            (s.parent_of(target), Some(context::content_text(v.get("content"), "")))
        }
        _ => (Some(target), None),
    };
    Navigation {
        old_leaf,
        target,
        new_leaf,
        editor_text,
        branch: branch_summary::prepare(s, old_leaf, target, token_budget),
    }
}

/// Pi's `branchWithSummary`: a `branch_summary` under the new leaf, `fromId` = the old leaf.
pub fn branch_summary_entry(s: &Session, nav: &Navigation, summary: &Summary, id: &str, ts_ms: i64) -> Value {
    let (read, modified) = nav.branch.file_ops.lists();
    let parent = nav.new_leaf.map(|l| s.entries[l].id.to_string());
    let mut m = base("branch_summary", id, parent.as_deref(), ts_ms);
    let from = nav
        .old_leaf
        .map(|l| s.entries[l].id.to_string())
        .unwrap_or_else(|| "root".into());
    m.insert("fromId".into(), from.into());
    m.insert("summary".into(), summary.text.clone().into());
    m.insert("details".into(), json!({"readFiles": read, "modifiedFiles": modified}));
    if let Some(u) = &summary.usage {
        m.insert("usage".into(), u.clone());
    }
    Value::Object(m)
}

/// The offline branch summary ("No content to summarize" when nothing is left, as Pi).
pub fn offline_branch_summary(s: &Session, nav: &Navigation, instructions: Option<&str>) -> Summary {
    if nav.branch.messages.is_empty() {
        return Summary {
            text: "No content to summarize".into(),
            usage: None,
        };
    }
    let msgs = summary::materialize_all(s, &nav.branch.messages);
    let body = offline::branch_summary_body(&msgs, instructions);
    let text = offline::compose_branch_summary(&body, &nav.branch.file_ops);
    // What the prose did not name of the whole branch left (the audit's kinds, its tool
    // results' errors and exit states included), word for word, within a tenth of the branch.
    let replaced = crate::compaction::audit::Replaced {
        kind: crate::compaction::audit::SummaryKind::BranchSummary,
        entry: nav.target,
        entries: nav.branch.entries.clone(),
        previous: None,
        cwd: s.header.cwd.clone().unwrap_or_default(),
    };
    let specifics = crate::compaction::audit::specifics_of(s, &replaced);
    let branch_tokens: u64 = nav
        .branch
        .entries
        .iter()
        .flat_map(|&e| context::intrinsic_messages(s, e))
        .map(|m| m.est_tokens)
        .sum();
    let room = (branch_tokens / 10)
        .max(512)
        .saturating_sub(summary::estimate_text(&text));
    Summary {
        text: crate::compaction::audit::keep_specifics(&text, &specifics, &replaced.cwd, room),
        usage: None,
    }
}

/// Pi resumes at the file's last line, so a navigation without a summary is made durable
/// with an invisible `custom` entry under the new leaf (it adds nothing to the context).
pub fn navigation_marker(s: &Session, nav: &Navigation, id: &str, ts_ms: i64) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "custom".into());
    m.insert("customType".into(), "bonsai.navigate".into());
    m.insert(
        "data".into(),
        json!({"target": s.entries[nav.target].id.to_string(), "from": nav.old_leaf.map(|l| s.entries[l].id.to_string())}),
    );
    let b = base("custom", id, nav.new_leaf.map(|l| &*s.entries[l].id), ts_ms);
    for (k, v) in b {
        if k != "type" {
            m.insert(k, v);
        }
    }
    Value::Object(m)
}

/// A `bonsai.navigate` marker under `at` (Pi resumes there), saying where it came from.
pub fn resume_marker(s: &Session, at: usize, from: Option<&str>, id: &str, ts_ms: i64) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "custom".into());
    m.insert("customType".into(), "bonsai.navigate".into());
    m.insert(
        "data".into(),
        json!({"target": s.entries[at].id.to_string(), "from": from}),
    );
    for (k, v) in base("custom", id, Some(&s.entries[at].id), ts_ms) {
        if k != "type" {
            m.insert(k, v);
        }
    }
    Value::Object(m)
}

/// Pi's `appendLabelChange`: under the leaf; an empty label clears.
pub fn label_entry(
    s: &Session,
    leaf: Option<usize>,
    target: usize,
    label: Option<&str>,
    id: &str,
    ts_ms: i64,
) -> Value {
    let mut m = base("label", id, leaf.map(|l| &*s.entries[l].id), ts_ms);
    m.insert("targetId".into(), s.entries[target].id.to_string().into());
    if let Some(l) = label.map(js::js_trim).filter(|l| !l.is_empty()) {
        m.insert("label".into(), l.into());
    }
    Value::Object(m)
}

/// Pi's `appendSessionInfo`: runs of CR/LF become one space, then trimmed.
pub fn session_info_entry(s: &Session, leaf: Option<usize>, name: &str, id: &str, ts_ms: i64) -> Value {
    let mut clean = String::new();
    let mut in_break = false;
    for c in name.chars() {
        if c == '\r' || c == '\n' {
            if !in_break {
                clean.push(' ');
            }
            in_break = true;
        } else {
            clean.push(c);
            in_break = false;
        }
    }
    let mut m = base("session_info", id, leaf.map(|l| &*s.entries[l].id), ts_ms);
    m.insert("name".into(), js::js_trim(&clean).into());
    Value::Object(m)
}

/// Pi's `createBranchedSession(leaf)`: the root→leaf path without label entries, re-chained,
/// compactions pointing past dropped labels, then the resolved labels of the path.
pub fn branched_session(s: &Session, leaf: Option<usize>, header: Value, seed: u64) -> Vec<Value> {
    let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let mut out = vec![header];
    let mut replacement: std::collections::HashMap<String, String> = Default::default();
    let mut pending: Vec<String> = vec![];
    let mut parent: Option<String> = None;
    let mut kept_ids: Vec<String> = vec![];
    for &i in &path {
        let e = &s.entries[i];
        if matches!(e.kind, Kind::Label { .. }) {
            pending.push(e.id.to_string());
            continue;
        }
        for l in pending.drain(..) {
            replacement.insert(l, e.id.to_string());
        }
        let mut v = s.entry_value(i);
        if let Value::Object(m) = &mut v {
            m.insert(
                "parentId".into(),
                parent.clone().map(Value::from).unwrap_or(Value::Null),
            );
            if let Kind::Compaction(c) = &e.kind
                && let Some(fk) = &c.first_kept_entry_id
                && **fk != *e.id
                && let Some(r) = replacement.get(&**fk)
            {
                m.insert("firstKeptEntryId".into(), r.clone().into());
            }
        }
        out.push(v);
        parent = Some(e.id.to_string());
        kept_ids.push(e.id.to_string());
    }
    // Labels of kept entries, in Pi's label-map order (first set, re-set keeps position).
    let mut order: Vec<String> = vec![];
    for e in &s.entries {
        if let Kind::Label(l) = &e.kind
            && let Some(t) = &l.target_id
        {
            let label = &l.label;
            let t = t.to_string();
            if label.as_deref().is_some_and(|l| !l.is_empty()) {
                if !order.contains(&t) {
                    order.push(t);
                }
            } else {
                order.retain(|x| x != &t);
            }
        }
    }
    let mut ids = IdSource::new(s, seed);
    for t in order.into_iter().filter(|t| kept_ids.contains(t)) {
        let Some((label, li)) = s.labels.get(t.as_str()) else {
            continue;
        };
        let ts = s
            .entry_value(*li as usize)
            .get("timestamp")
            .cloned()
            .unwrap_or(Value::Null);
        let id = ids.fresh();
        let mut m = Map::new();
        m.insert("type".into(), "label".into());
        m.insert("id".into(), id.clone().into());
        m.insert(
            "parentId".into(),
            parent.clone().map(Value::from).unwrap_or(Value::Null),
        );
        m.insert("timestamp".into(), ts);
        m.insert("targetId".into(), t.into());
        m.insert("label".into(), label.to_string().into());
        out.push(Value::Object(m));
        parent = Some(id);
    }
    out
}

/// A new session header as Pi writes it.
pub fn session_header(id: &str, cwd: &str, parent_session: Option<&str>, ts_ms: i64) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "session".into());
    m.insert("version".into(), 3.into());
    m.insert("id".into(), id.into());
    m.insert("timestamp".into(), js::iso_from_ms(ts_ms).into());
    m.insert("cwd".into(), cwd.into());
    if let Some(p) = parent_session {
        m.insert("parentSession".into(), p.into());
    }
    Value::Object(m)
}

/// A UUIDv7-shaped session id (time-ordered, as Pi's); `seed` gives the random part.
pub fn session_id(ts_ms: i64, seed: u64) -> String {
    let mut state = seed ^ ts_ms as u64;
    let r = mix(&mut state);
    let t = ts_ms as u64;
    format!(
        "{:08x}-{:04x}-7{:03x}-{:04x}-{:012x}",
        t >> 16,
        t & 0xffff,
        (r >> 52) & 0xfff,
        0x8000 | ((r >> 36) & 0x3fff),
        r & 0xffff_ffff_ffff
    )
}

/// The whole file migrated to v3 (for `bonsai migrate`): header version 3, ids as loaded.
pub fn migrated_lines(s: &Session) -> Vec<Value> {
    let mut header = s.header.raw.clone();
    if let Value::Object(m) = &mut header {
        m.insert("version".into(), 3.into());
    }
    let mut out = vec![header];
    out.extend((0..s.entries.len()).map(|i| s.entry_value(i)));
    out
}

/// JSON lines exactly as `JSON.stringify` writes them.
pub fn to_line(v: &Value) -> String {
    js::stringify(v)
}

pub fn file_lists_text(ops: &serialize::FileOps) -> (Vec<String>, Vec<String>) {
    let (r, m) = ops.lists();
    (serialize::list_strings(&r), serialize::list_strings(&m))
}

/// Pi's `appendContextEdit` for each `(target id, replacement)`, chained from `leaf`, then the
/// record of the action (a `custom` entry, as Pi's extensions keep their state) naming the
/// edits, so undo finds them from the file alone.
pub fn context_edit_entries(
    s: &Session,
    leaf: usize,
    edits: &[(String, Value)],
    mut record: Value,
    ids: &mut IdSource,
    ts_ms: i64,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(edits.len() + 1);
    let mut parent = s.entries[leaf].id.to_string();
    let mut written = Vec::new();
    for (target, replacement) in edits {
        let id = ids.fresh();
        let mut m = base("context_edit", &id, Some(&parent), ts_ms);
        m.insert("targetId".into(), target.clone().into());
        m.insert("replacement".into(), replacement.clone());
        out.push(Value::Object(m));
        written.push(Value::String(id.clone()));
        parent = id;
    }
    if let Value::Object(r) = &mut record {
        r.insert("edits".into(), Value::Array(written));
    }
    let mut m = Map::new();
    m.insert("type".into(), "custom".into());
    m.insert("customType".into(), CONTEXT_EDITS_RECORD.into());
    m.insert("data".into(), record);
    for (k, v) in base("custom", &ids.fresh(), Some(&parent), ts_ms) {
        if k != "type" {
            m.insert(k, v);
        }
    }
    out.push(Value::Object(m));
    out
}
