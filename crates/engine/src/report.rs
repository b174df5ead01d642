//! Stable JSON for scripts (`--json`). Field names and shapes follow the oracle's
//! (`shared/oracle/README.md`) so a test can compare the two field by field; bonsai's own
//! additions (exact token counts, windows, diagnostics) sit beside them.

use crate::compaction::branch_summary::BranchPlan;
use crate::compaction::cut::{CompactionPlan, NoCompaction};
use crate::compaction::serialize;
use crate::load::entry::{Kind, Role};
use crate::load::js::{self, num};
use crate::load::session::Session;
use crate::view::context::{self, ContextMessage, Part, Projection};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

pub fn text_digest(text: &str) -> Value {
    let mut h = Sha256::new();
    h.update(text.as_bytes());
    json!({"chars": js::utf16_len(text), "bytes": text.len(), "sha256": format!("{:x}", h.finalize())})
}

fn id_of(s: &Session, i: Option<usize>) -> Value {
    i.map(|i| Value::String(s.entries[i].id.to_string()))
        .unwrap_or(Value::Null)
}

fn idx_val(i: Option<usize>) -> Value {
    i.map(Value::from).unwrap_or(Value::Null)
}

/// The oracle's per-message description, plus bonsai's `exactTokens` when given.
pub fn describe_message(s: &Session, m: &ContextMessage) -> Map<String, Value> {
    let mut d = Map::new();
    d.insert("role".into(), Value::String(m.role.as_str().to_string()));
    let msg = context::msg_of(s, m);
    let replaced = m.replaced_by.is_some();
    // Content-derived numbers come from the replacement when an edit applies.
    let (content, text_chars) = if replaced {
        let v = context::materialize(s, m);
        let st = stats_of_value(&v);
        let tc = match m.role {
            Role::System | Role::BashExecution | Role::BranchSummary | Role::CompactionSummary => {
                msg.map(|x| s.measures(x).text_chars).unwrap_or(0)
            }
            _ => st.text_chars,
        };
        (Some(st), tc)
    } else {
        let tc = match (&s.entries[m.source].kind, m.part) {
            (Kind::Message(x), Part::Main) => s.measures(x).text_chars,
            (Kind::Compaction(c), Part::CompactionSystem) => {
                c.system_message.as_ref().map(|x| s.measures(x).text_chars).unwrap_or(0)
            }
            (Kind::Compaction(c), _) => c.summary_chars,
            (Kind::BranchSummary(b), _) => b.summary_chars,
            (Kind::CustomMessage(c), _) => c.content.text_chars,
            _ => 0,
        };
        let st = match (&s.entries[m.source].kind, m.part) {
            (Kind::CustomMessage(c), _) => Some(c.content.clone()),
            _ => msg.map(|x| s.measures(x).content.clone()),
        };
        (st, tc)
    };
    d.insert("textChars".into(), Value::from(text_chars));
    d.insert("estTokens".into(), Value::from(m.est_tokens));
    match m.role {
        Role::User | Role::Custom | Role::ToolResult => {
            if let Some(c) = &content
                && c.images > 0
                && !c.is_string
            {
                d.insert("images".into(), Value::from(c.images));
            }
            if m.role == Role::ToolResult {
                if let Some(tn) = msg.and_then(|x| x.tool_name.as_deref()) {
                    d.insert("toolName".into(), Value::String(tn.to_string()));
                }
                if msg.is_some_and(|x| x.is_error) {
                    d.insert("isError".into(), Value::Bool(true));
                }
            }
            if m.role == Role::Custom {
                let ct = match &s.entries[m.source].kind {
                    Kind::CustomMessage(c) => c.custom_type.as_deref(),
                    _ => msg.and_then(|x| x.custom_type.as_deref()),
                };
                if let Some(ct) = ct {
                    d.insert("customType".into(), Value::String(ct.to_string()));
                }
            }
        }
        Role::Assistant => {
            if let Some(c) = &content
                && !c.is_string
            {
                if c.thinking_chars > 0 {
                    d.insert("thinkingChars".into(), Value::from(c.thinking_chars));
                }
                if c.tool_calls > 0 {
                    d.insert("toolCalls".into(), Value::from(c.tool_calls));
                }
            }
            if let Some(sr) = msg.and_then(|x| x.stop_reason.as_deref()) {
                d.insert("stopReason".into(), Value::String(sr.to_string()));
            }
        }
        Role::BashExecution if msg.is_some_and(|x| x.exclude_from_context) => {
            d.insert("excludeFromContext".into(), Value::Bool(true));
        }
        _ => {}
    }
    d.insert(
        "sourceEntryId".into(),
        Value::String(s.entries[m.source].id.to_string()),
    );
    d.insert("sourceIdx".into(), Value::from(m.source));
    if replaced {
        let before = context::materialize_intrinsic(s, m.source, m.part);
        let after = context::materialize(s, m);
        let enc = |v: &Value| v.get("content").map(js::stringify).unwrap_or_default();
        if enc(&before) != enc(&after) {
            d.insert("edited".into(), Value::String("replaced".into()));
        }
    }
    d
}

fn stats_of_value(v: &Value) -> crate::load::entry::ContentStats {
    let raw = serde_json::to_string(v).unwrap_or_default();
    crate::load::session::measure_message_json(&raw)
        .map(|b| b.content)
        .unwrap_or_default()
}

/// The oracle's `context` object for a projection.
pub fn context_json(s: &Session, proj: &Projection, exact: Option<&[Option<u64>]>) -> Value {
    let mut messages = Vec::new();
    let mut entry_ids = Vec::new();
    let mut entry_idx = Vec::new();
    let mut omitted = Vec::new();
    let mut omitted_idx = Vec::new();
    let mut est_sum = 0u64;
    let mut llm_count = 0usize;
    let mut k = 0usize;
    // Provider usage between consecutive assistant replies: what each turn really added.
    let mut prev_prompt: Option<f64> = None;
    for pe in &proj.entries {
        let e = &s.entries[pe.source];
        entry_ids.push(Value::String(e.id.to_string()));
        entry_idx.push(Value::from(pe.source));
        if !e.is_compaction() && pe.messages.is_empty() && !context::intrinsic_messages(s, pe.source).is_empty() {
            omitted.push(Value::String(e.id.to_string()));
            omitted_idx.push(Value::from(pe.source));
        }
        for m in &pe.messages {
            let mut d = describe_message(s, m);
            if let Some(ex) = exact {
                d.insert(
                    "exactTokens".into(),
                    ex.get(k).copied().flatten().map(Value::from).unwrap_or(Value::Null),
                );
            }
            if let Some(u) = context::msg_of(s, m).and_then(|x| x.valid_usage()) {
                let prompt = u.input + u.cache_read + u.cache_write;
                if !prompt.is_nan() {
                    d.insert("promptTokens".into(), num(prompt));
                    if let Some(p) = prev_prompt {
                        d.insert("addedTokens".into(), num(prompt - p));
                    }
                    prev_prompt = Some(prompt);
                }
            }
            k += 1;
            est_sum += m.est_tokens;
            let excl = context::msg_of(s, m).is_some_and(|x| x.exclude_from_context);
            if serialize::kept_by_llm(m.role.as_str(), excl) {
                llm_count += 1;
            }
            messages.push(Value::Object(d));
        }
    }
    let model = match &proj.model {
        None => Value::Null,
        Some((p, m)) => {
            let mut o = Map::new();
            if let Some(p) = p {
                o.insert("provider".into(), Value::String(p.clone()));
            }
            if let Some(m) = m {
                o.insert("modelId".into(), Value::String(m.clone()));
            }
            Value::Object(o)
        }
    };
    json!({
        "thinkingLevel": proj.thinking_level,
        "model": model,
        "messageCount": messages.len(),
        "llmMessageCount": llm_count,
        "estTokensSum": est_sum,
        "entryIds": entry_ids,
        "entryIdx": entry_idx,
        "omittedByContextEdit": omitted,
        "omittedByContextEditIdx": omitted_idx,
        "messages": messages,
    })
}

pub fn tokens_json(t: &context::ContextTokens) -> Value {
    json!({
        "tokens": num(t.tokens),
        "usageTokens": num(t.usage_tokens),
        "trailingTokens": num(t.trailing_tokens),
        "lastUsageIndex": idx_val(t.last_usage_index),
    })
}

fn msg_range(s: &Session, msgs: &[ContextMessage], path_pos: &dyn Fn(usize) -> Option<usize>) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("count".into(), Value::from(msgs.len()));
    o.insert(
        "roles".into(),
        Value::Array(msgs.iter().map(|m| Value::String(m.role.as_str().into())).collect()),
    );
    let first = msgs.first().map(|m| m.source);
    let last = msgs.last().map(|m| m.source);
    o.insert("firstSourceEntryId".into(), id_of(s, first));
    o.insert("firstSourceIndex".into(), idx_val(first.and_then(path_pos)));
    o.insert("firstSourceIdx".into(), idx_val(first));
    o.insert("lastSourceEntryId".into(), id_of(s, last));
    o.insert("lastSourceIndex".into(), idx_val(last.and_then(path_pos)));
    o.insert("lastSourceIdx".into(), idx_val(last));
    o
}

/// Materialize, convert and serialize messages as Pi builds summary input.
pub fn serialized_text(s: &Session, msgs: &[ContextMessage]) -> String {
    // One message at a time: the parts are joined by blank lines either way, and holding
    // every decoded message at once would double the memory of a large cut.
    let mut out = String::new();
    for m in msgs {
        let part = serialize::serialize_conversation(&serialize::convert_to_llm(&[context::materialize(s, m)]), s.pi);
        if !part.is_empty() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&part);
        }
    }
    out
}

/// The oracle's `compaction` object (with `compactionNullReason` when there is none).
pub fn compaction_json(s: &Session, plan: &Result<CompactionPlan, NoCompaction>) -> (Value, Option<&'static str>) {
    let plan = match plan {
        Ok(p) => p,
        Err(e) => return (Value::Null, Some(e.reason())),
    };
    let path = &plan.projection.path;
    let path_pos = |i: usize| {
        let id = &*s.entries[i].id;
        path.iter().rposition(|&p| &*s.entries[p].id == id)
    };
    let fk = plan.first_kept_entry;
    let ts = plan.turn_start_entry().filter(|_| plan.is_split_turn);
    let prev = plan.previous_compaction_entry();
    let prev_summary = crate::compaction::cut::previous_summary(s, plan);
    let (read, modified) = plan.file_ops.lists();
    let ser = serialized_text(s, &plan.messages_to_summarize);
    let ser_prefix = serialized_text(s, &plan.turn_prefix_messages);
    let mut o = Map::new();
    o.insert("firstKeptEntryId".into(), id_of(s, Some(fk)));
    o.insert("firstKeptIndex".into(), idx_val(path_pos(fk)));
    o.insert("firstKeptEntryIdx".into(), Value::from(fk));
    o.insert("isSplitTurn".into(), Value::Bool(plan.is_split_turn));
    o.insert("turnStartEntryId".into(), id_of(s, ts));
    o.insert("turnStartIndex".into(), idx_val(ts.and_then(path_pos)));
    o.insert("turnStartEntryIdx".into(), idx_val(ts));
    o.insert("tokensBefore".into(), num(plan.tokens_before));
    o.insert(
        "messagesToSummarize".into(),
        Value::Object(msg_range(s, &plan.messages_to_summarize, &path_pos)),
    );
    o.insert(
        "turnPrefixMessages".into(),
        Value::Object(msg_range(s, &plan.turn_prefix_messages, &path_pos)),
    );
    o.insert(
        "previousSummary".into(),
        match &prev_summary {
            None => json!({"present": false}),
            Some(t) => {
                let d = text_digest(t);
                json!({"present": true, "chars": d["chars"], "bytes": d["bytes"], "sha256": d["sha256"]})
            }
        },
    );
    o.insert("previousCompactionEntryId".into(), id_of(s, prev));
    o.insert("previousCompactionIndex".into(), idx_val(prev.and_then(path_pos)));
    o.insert("previousCompactionIdx".into(), idx_val(prev));
    o.insert("readFiles".into(), Value::Array(read));
    o.insert("modifiedFiles".into(), Value::Array(modified));
    o.insert("serialized".into(), text_digest(&ser));
    o.insert("turnPrefixSerialized".into(), text_digest(&ser_prefix));
    // bonsai's additions for the preview.
    let kept_tokens = plan.kept_tokens();
    let summarized_tokens = plan.summarized_tokens();
    let prefix_tokens = plan.turn_prefix_tokens();
    o.insert(
        "bonsai".into(),
        json!({
            "keptEstTokens": kept_tokens,
            "summarizedEstTokens": summarized_tokens,
            "turnPrefixEstTokens": prefix_tokens,
            "summaryBudgetTokens": plan.settings.history_summary_limit(),
            "estimatedTokensAfter": kept_tokens + plan.settings.history_summary_limit(),
        }),
    );
    (Value::Object(o), None)
}

/// The oracle's `branch` object.
pub fn branch_json(s: &Session, plan: &BranchPlan) -> Value {
    let (read, modified) = plan.file_ops.lists();
    let ser = serialized_text(s, &plan.messages);
    json!({
        "fromLeafId": id_of(s, plan.from_leaf),
        "fromLeafIdx": idx_val(plan.from_leaf),
        "targetId": id_of(s, Some(plan.target)),
        "targetIdx": plan.target,
        "commonAncestorId": id_of(s, plan.common_ancestor),
        "commonAncestorIdx": idx_val(plan.common_ancestor),
        "entryIds": plan.entries.iter().map(|&i| Value::String(s.entries[i].id.to_string())).collect::<Vec<_>>(),
        "entryIdx": plan.entries.clone(),
        "tokenBudget": plan.token_budget,
        "messageCount": plan.messages.len(),
        "messageRoles": plan.messages.iter().map(|m| Value::String(m.role.as_str().into())).collect::<Vec<_>>(),
        "totalTokens": plan.total_tokens,
        "readFiles": read,
        "modifiedFiles": modified,
        "serialized": text_digest(&ser),
    })
}

/// Tree in the oracle's flat form (`tree`, `treeIdx`, `maxBranchDepth`).
pub fn tree_json(s: &Session, t: &crate::view::tree::Tree) -> (Value, Value, usize) {
    let roots: Vec<Value> = t
        .roots
        .iter()
        .map(|&r| Value::String(s.entries[r].id.to_string()))
        .collect();
    let mut children = Vec::new();
    let mut children_idx = vec![Value::Array(vec![]); s.entries.len()];
    for (i, ch) in t.children.iter().enumerate() {
        if !ch.is_empty() && t.in_tree[i] {
            children.push(json!([
                s.entries[i].id.to_string(),
                ch.iter().map(|&c| s.entries[c].id.to_string()).collect::<Vec<_>>()
            ]));
            children_idx[i] = Value::Array(ch.iter().map(|&c| Value::from(c)).collect());
        }
    }
    (
        json!({"roots": roots, "children": children}),
        json!({"roots": t.roots.to_vec(), "children": children_idx}),
        t.max_branch_depth(),
    )
}

pub fn labels_json(s: &Session) -> (Value, Value) {
    let mut items: Vec<(usize, &str, &str)> = Vec::new();
    for (i, e) in s.entries.iter().enumerate() {
        if s.idx_of(&e.id) == Some(i)
            && let Some(l) = s.label_of(&e.id)
        {
            items.push((i, &e.id, l));
        }
    }
    let mut a = Map::new();
    let mut b = Map::new();
    for (i, id, l) in items {
        a.insert(id.to_string(), Value::String(l.to_string()));
        b.insert(i.to_string(), Value::String(l.to_string()));
    }
    (Value::Object(a), Value::Object(b))
}

pub fn counts_json(s: &Session) -> (Value, Value) {
    let mut types = Map::new();
    let mut roles = Map::new();
    for e in &s.entries {
        let t = e.kind.type_name().to_string();
        let n = types.get(&t).and_then(|v| v.as_u64()).unwrap_or(0) + 1;
        types.insert(t, Value::from(n));
        if let Kind::Message(m) = &e.kind {
            let r = m.role.as_str().to_string();
            let n = roles.get(&r).and_then(|v| v.as_u64()).unwrap_or(0) + 1;
            roles.insert(r, Value::from(n));
        }
    }
    (Value::Object(types), Value::Object(roles))
}

pub fn diagnostics_json(s: &Session) -> Value {
    serde_json::to_value(&s.diagnostics).unwrap_or(Value::Null)
}

/// Options of a full inspection (the oracle's command-line options).
#[derive(Debug, Clone)]
pub struct InspectOptions {
    pub leaf: Option<usize>,
    pub keep_recent_tokens: u64,
    pub reserve_tokens: u64,
    pub branch_target: Option<usize>,
    pub branch_context_window: u64,
}

/// Everything the oracle reports for one file, under the oracle's field names.
pub fn inspect_json(s: &Session, o: &InspectOptions) -> Value {
    let leaf = o.leaf.or(s.leaf());
    let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let proj = context::project(s, &path);
    let msgs: Vec<&ContextMessage> = proj.messages().collect();
    let (types, roles) = counts_json(s);
    let (labels, labels_idx) = labels_json(s);
    let t = crate::view::tree::Tree::build(s);
    let (tj, tij, depth) = tree_json(s, &t);
    let cs = crate::compaction::cut::CompactionSettings {
        reserve_tokens: o.reserve_tokens,
        keep_recent_tokens: o.keep_recent_tokens,
    };
    let plan = crate::compaction::cut::prepare_path(s, &path, cs);
    let (cj, reason) = compaction_json(s, &plan);
    let mut out = json!({
        "headerVersion": num(s.header.version),
        "migrated": s.migrated,
        "skippedLines": s.skipped_lines,
        "entries": s.entries.len(),
        "entryTypeCounts": types,
        "messageRoleCounts": roles,
        "sessionName": s.session_name(),
        "leafId": id_of(s, leaf),
        "leafIdx": idx_val(leaf),
        "pathIds": path.iter().map(|&i| s.entries[i].id.to_string()).collect::<Vec<_>>(),
        "pathIdx": path.clone(),
        "labels": labels,
        "labelsIdx": labels_idx,
        "tree": tj,
        "treeIdx": tij,
        "maxBranchDepth": depth,
        "context": context_json(s, &proj, None),
        "contextTokens": tokens_json(&context::estimate_context_tokens(s, &msgs)),
        "projectedContextTokens": tokens_json(&context::estimate_projected_tokens(s, &proj)),
        "compactionSettings": {"enabled": true, "reserveTokens": o.reserve_tokens, "keepRecentTokens": o.keep_recent_tokens},
        "compaction": cj,
        "diagnostics": diagnostics_json(s),
    });
    if let Some(r) = reason {
        out["compactionNullReason"] = json!(r);
    }
    if let Some(target) = o.branch_target {
        let budget = o.branch_context_window as i64 - o.reserve_tokens as i64;
        let plan = crate::compaction::branch_summary::prepare(s, leaf, target, budget);
        out["branch"] = branch_json(s, &plan);
    }
    out
}
