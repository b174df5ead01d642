//! The packet: one hidden message that stands for the turns a step left out.
//!
//! It is made only at a step, from the messages before the cut. Those never change within
//! a context, so the packet is the same bytes from one step to the next and the request
//! start stays cached. Compaction and branch summaries are not folded into it: they are sent
//! as Pi wrote them, with Pi's own framing, ahead of it.

use super::policy::{LiveSettings, PACKET_TYPE, plural};
use super::source::MessageSource;
use crate::compaction::offline::Ledger;
use crate::edit::prune;
use crate::view::context;
use serde_json::{Value, json};

/// The packet for the turns before `cut`, from their ledger (`left`: how many messages it
/// stands for, `tokens` their estimate, `turns` the turns among them); `None` when it stands
/// for none (only summaries were left out, and they are sent as written).
#[allow(clippy::too_many_arguments)]
pub(super) fn build(
    src: &dyn MessageSource,
    ledger: &Ledger,
    left: usize,
    tokens: u64,
    turns: usize,
    cut: usize,
    end: usize,
    settings: &LiveSettings,
) -> Option<Packet> {
    if left == 0 {
        return None;
    }
    let text = text_of(ledger, left, turns, tokens, settings.packet_tokens);
    // The first message sent after it dates it; it never changes while the cut stays.
    let ts = (cut < end)
        .then(|| src.value(cut).get("timestamp").cloned())
        .flatten()
        .unwrap_or(json!(0));
    let value = json!({
        "role": "custom",
        "customType": PACKET_TYPE,
        "content": text,
        "display": false,
        "timestamp": ts,
    });
    let est = context::estimate_value(&value);
    let hash = hash_of(&value);
    Some(Packet { value, est, hash })
}

/// The packet's text for `left_out` read at once (a step's ledger adds its part at a time).
pub fn text(left_out: &[Value], turns: usize, tokens: u64, budget: u64) -> String {
    let mut ledger = Ledger::default();
    ledger.add(left_out);
    text_of(&ledger, left_out.len(), turns, tokens, budget)
}

/// What the packet stands for, then the ledger of those turns.
fn text_of(ledger: &Ledger, left: usize, turns: usize, tokens: u64, budget: u64) -> String {
    let (what, n) = if turns > 0 {
        (plural(turns, "earlier turn", "earlier turns"), turns)
    } else {
        (plural(left, "earlier message", "earlier messages"), left)
    };
    let (verb, pronoun) = if n == 1 { ("is", "it") } else { ("are", "they") };
    let head = format!(
        "[bonsai: {what} of this conversation (~{} tokens) {verb} not repeated in this request. This note lists what {pronoun} covered: requests, decisions, tasks, errors, files and commands.]\n\n",
        prune::thousands(tokens)
    );
    // The head line counts against the budget too.
    let body_budget = budget.saturating_sub(head.len().div_ceil(4) as u64).max(64);
    format!("{head}{}", ledger.packet(body_budget))
}

/// The packet as sent.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Packet {
    pub value: Value,
    pub est: u64,
    pub hash: u64,
}

/// A message's bytes hashed (deterministic: std's SipHash with its fixed keys).
pub(super) fn hash_of(v: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    h.finish()
}
