//! What a summary is made from and what it is: a compaction's input serialized as Pi
//! serializes it, one message at a time (so a strategy can slice it), the messages as JSON with
//! their timestamps, Pi's text estimate, and the summary itself. Below the offline summary,
//! the strategies and the recall score, which all read it.

use crate::compaction::cut::{self, CompactionPlan};
use crate::compaction::serialize;
use crate::compaction::slices::{self, SliceParams, Unit};
use crate::load::js;
use crate::load::session::Session;
use crate::view::context::{self, ContextMessage};
use rayon::prelude::*;
use serde_json::Value;

/// The summary text and where it came from.
#[derive(Debug, Clone)]
pub struct Summary {
    pub text: String,
    /// The summarizer call's usage, when an LLM wrote it.
    pub usage: Option<Value>,
}

/// What a compaction summarizes, serialized as Pi serializes summary input, one message at a
/// time (so it can be sliced).
#[derive(Debug, Clone)]
pub struct SummaryInput {
    /// Each history message's serialized text (possibly empty: Pi leaves such a message out).
    pub history: Vec<String>,
    pub units: Vec<Unit>,
    /// The split turn's prefix, serialized whole (`None`: not a split turn).
    pub turn_prefix: Option<String>,
    /// The previous compaction's summary (an update then).
    pub previous: Option<String>,
    /// Pi's limit for the history summary (0.8 × reserveTokens) and the turn prefix's (0.5 ×).
    pub history_limit: u64,
    pub prefix_limit: u64,
    /// The messages as JSON, each with its timestamp (`summary::materialize_all`): the
    /// history's, then the turn prefix's. The offline summary and the recall score read these.
    pub values: Vec<Value>,
    /// How many of `values` are the history's.
    pub history_values: usize,
}

impl SummaryInput {
    /// The input of the compaction `plan`. Messages are materialized and serialized on both
    /// cores.
    pub fn of_plan(s: &Session, plan: &CompactionPlan) -> SummaryInput {
        let all: Vec<&crate::view::context::ContextMessage> = plan
            .messages_to_summarize
            .iter()
            .chain(&plan.turn_prefix_messages)
            .collect();
        let values: Vec<Value> = all.par_iter().map(|m| materialize_one(s, m)).collect();
        let serialized: Vec<String> = values
            .par_iter()
            .map(|v| serialize::serialize_conversation(&serialize::convert_to_llm(std::slice::from_ref(v)), s.pi))
            .collect();
        let n = plan.messages_to_summarize.len();
        let units = plan
            .messages_to_summarize
            .iter()
            .zip(&serialized)
            .map(|(m, text)| Unit {
                tokens: estimate_text(text),
                cut_point: m.role.is_cut_point(),
            })
            .collect();
        let mut history = serialized;
        let prefix_parts = history.split_off(n);
        let turn_prefix = (plan.is_split_turn && !plan.turn_prefix_messages.is_empty()).then(|| {
            prefix_parts
                .iter()
                .filter(|p| !p.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join("\n\n")
        });
        SummaryInput {
            history,
            units,
            turn_prefix,
            previous: cut::previous_summary(s, plan),
            history_limit: plan.settings.history_summary_limit(),
            prefix_limit: plan.settings.turn_prefix_limit(),
            values,
            history_values: n,
        }
    }

    /// The history messages `r` as one conversation text (Pi joins parts by a blank line).
    pub fn text(&self, r: std::ops::Range<usize>) -> String {
        let mut out = String::new();
        for part in self.history[r].iter().filter(|p| !p.is_empty()) {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(part);
        }
        out
    }

    pub fn history_tokens(&self) -> u64 {
        self.units.iter().map(|u| u.tokens).sum()
    }

    pub fn slices(&self, p: &SliceParams) -> Vec<slices::Slice> {
        slices::slice(&self.units, p)
    }
}

/// Materialize projected messages as Pi's summarizer sees them, each with its timestamp (the
/// entry's when the message has none), so the summary can order them.
pub fn materialize_all(s: &Session, msgs: &[ContextMessage]) -> Vec<Value> {
    msgs.iter().map(|m| materialize_one(s, m)).collect()
}

/// One message of [`materialize_all`].
pub fn materialize_one(s: &Session, m: &ContextMessage) -> Value {
    let mut v = context::materialize(s, m);
    if let Value::Object(o) = &mut v
        && !matches!(o.get("timestamp"), Some(Value::Number(_)) | Some(Value::String(_)))
        && let Some(ts) = s.entries.get(m.source).map(|e| e.ts).filter(|t| t.is_finite())
    {
        o.insert("timestamp".into(), Value::from(ts));
    }
    v
}

/// Pi's estimate of a text: UTF-16 units / 4, rounded up.
pub fn estimate_text(text: &str) -> u64 {
    js::utf16_len(text).div_ceil(4) as u64
}
