//! Pi's messages as the live policy reads them: what each message is (its kind, estimate,
//! time and reply usage), read once, from JSON values or from a session's entries.

use super::policy::Prices;
use crate::view::context;
use serde_json::Value;
use std::borrow::Cow;

/// What a message is to the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgKind {
    User,
    Assistant,
    ToolResult,
    CompactionSummary,
    BranchSummary,
    Other,
}

impl MsgKind {
    pub fn of_role(role: &str) -> MsgKind {
        match role {
            "user" => MsgKind::User,
            "assistant" => MsgKind::Assistant,
            "toolResult" => MsgKind::ToolResult,
            "compactionSummary" => MsgKind::CompactionSummary,
            "branchSummary" => MsgKind::BranchSummary,
            _ => MsgKind::Other,
        }
    }
    pub fn is_summary(self) -> bool {
        matches!(self, MsgKind::CompactionSummary | MsgKind::BranchSummary)
    }
}

/// What the policy reads of one message, read once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MsgFacts {
    pub kind: MsgKind,
    /// Pi's estimate (chars/4).
    pub est: u64,
    /// When it was written, in milliseconds (NaN: unknown).
    pub time: f64,
    /// An assistant reply's usage as Pi counts a context (`calculateContextTokens`), when Pi
    /// trusts it (not an aborted or failed reply).
    pub context_tokens: Option<f64>,
    /// An assistant reply's output tokens.
    pub output_tokens: f64,
    /// An assistant reply's model's prices, when the registry knows them.
    pub prices: Option<Prices>,
    /// A tool result's call, by its id's hash ([`id_hash`]).
    pub result_of: Option<u64>,
}

/// A tool call id's hash (what tells a tool result's call among the calls).
pub fn id_hash(id: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

/// Pi's messages as the policy reads them.
pub trait MessageSource {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn facts(&self, i: usize) -> MsgFacts;
    fn value(&self, i: usize) -> Cow<'_, Value>;
    /// An assistant reply's tool calls, by their ids' hashes ([`id_hash`]).
    fn call_ids(&self, i: usize) -> Vec<u64> {
        call_ids(&self.value(i)).iter().map(|c| id_hash(c)).collect()
    }
    /// The messages as one slice, when they are held as one (saves a copy).
    fn slice(&self) -> Option<&[Value]> {
        None
    }
}

/// Pi's messages as JSON values (what the `context` event holds).
pub struct ValueSource<'a> {
    msgs: &'a [Value],
    prices_of: &'a dyn Fn(&str, &str) -> Option<Prices>,
}

impl<'a> ValueSource<'a> {
    pub fn new(msgs: &'a [Value], prices_of: &'a dyn Fn(&str, &str) -> Option<Prices>) -> ValueSource<'a> {
        ValueSource { msgs, prices_of }
    }
}

/// A message's `timestamp` in milliseconds (a number, or ISO text as Pi's entries write it).
pub fn time_of(m: &Value) -> f64 {
    match m.get("timestamp") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => crate::load::js::parse_iso_ms(s),
        _ => f64::NAN,
    }
}

/// The facts of a message held as JSON.
pub fn facts_of_value(m: &Value, prices_of: &dyn Fn(&str, &str) -> Option<Prices>) -> MsgFacts {
    let kind = MsgKind::of_role(m.get("role").and_then(|r| r.as_str()).unwrap_or(""));
    let mut f = MsgFacts {
        kind,
        est: context::estimate_value(m),
        time: time_of(m),
        context_tokens: None,
        output_tokens: 0.0,
        prices: None,
        result_of: m.get("toolCallId").and_then(|t| t.as_str()).map(id_hash),
    };
    if kind == MsgKind::Assistant {
        let num = |u: &Value, k: &str| u.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0);
        let stop = m.get("stopReason").and_then(|s| s.as_str());
        if let Some(u) = m.get("usage").filter(|u| u.is_object()) {
            f.output_tokens = num(u, "output");
            if stop != Some("aborted") && stop != Some("error") {
                let usage = crate::load::entry::Usage {
                    input: num(u, "input"),
                    output: num(u, "output"),
                    cache_read: num(u, "cacheRead"),
                    cache_write: num(u, "cacheWrite"),
                    total_tokens: num(u, "totalTokens"),
                };
                f.context_tokens = Some(usage.context_tokens());
            }
        }
        let s = |k: &str| m.get(k).and_then(|x| x.as_str());
        if let (Some(p), Some(id)) = (s("provider"), s("model")) {
            f.prices = prices_of(p, id);
        }
    }
    f
}

impl MessageSource for ValueSource<'_> {
    fn len(&self) -> usize {
        self.msgs.len()
    }
    fn facts(&self, i: usize) -> MsgFacts {
        facts_of_value(&self.msgs[i], self.prices_of)
    }
    fn value(&self, i: usize) -> Cow<'_, Value> {
        Cow::Borrowed(&self.msgs[i])
    }
    fn slice(&self) -> Option<&[Value]> {
        Some(self.msgs)
    }
}

/// The tool-call ids of an assistant message.
pub(super) fn call_ids(m: &Value) -> Vec<String> {
    m.get("content")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("toolCall"))
        .filter_map(|b| b.get("id").and_then(|i| i.as_str()).map(String::from))
        .collect()
}
