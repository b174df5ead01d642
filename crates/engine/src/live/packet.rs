//! The packet: one hidden message that stands for the turns a step left out.
//!
//! It is made only at a step, from the messages before the cut. Those never change within
//! a context, so the packet is the same bytes from one step to the next and the request
//! start stays cached. Compaction and branch summaries are not folded into it: they are sent
//! as Pi wrote them, with Pi's own framing, ahead of it.

use super::state::MsgFacts;
use super::{LiveSettings, MessageSource, PACKET_TYPE, plural, state::Packet};
use crate::compaction::offline;
use crate::edit::prune;
use crate::view::context;
use serde_json::{Value, json};

/// The packet for the messages before `cut` (`None` when all of them are summaries, which
/// are sent as written); `turns` is how many turns start before the cut.
pub(super) fn build(
    src: &dyn MessageSource,
    facts: &[MsgFacts],
    cut: usize,
    end: usize,
    turns: usize,
    settings: &LiveSettings,
) -> Option<Packet> {
    let left: Vec<usize> = (0..cut).filter(|&i| !facts[i].kind.is_summary()).collect();
    if left.is_empty() {
        return None;
    }
    let values: Vec<Value> = left.iter().map(|&i| src.value(i).into_owned()).collect();
    let tokens: u64 = left.iter().map(|&i| facts[i].est).sum();
    let text = text(&values, turns, tokens, settings.packet_tokens);
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
    Some(Packet { value, est })
}

/// The packet's text: what it stands for, then the ledger of those turns.
pub fn text(left_out: &[Value], turns: usize, tokens: u64, budget: u64) -> String {
    let (what, n) = if turns > 0 {
        (plural(turns, "earlier turn", "earlier turns"), turns)
    } else {
        (
            plural(left_out.len(), "earlier message", "earlier messages"),
            left_out.len(),
        )
    };
    let (verb, pronoun) = if n == 1 { ("is", "it") } else { ("are", "they") };
    let head = format!(
        "[bonsai: {what} of this conversation (~{} tokens) {verb} not repeated in this request. This note lists what {pronoun} covered: requests, decisions, tasks, errors, files and commands.]\n\n",
        prune::thousands(tokens)
    );
    let refs: Vec<&Value> = left_out.iter().collect();
    // The head line counts against the budget too.
    let body_budget = budget.saturating_sub(head.len().div_ceil(4) as u64).max(64);
    format!("{head}{}", offline::packet_ledger(&refs, body_budget))
}
