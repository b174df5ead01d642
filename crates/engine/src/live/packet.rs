//! The packet: one hidden message that stands for the turns a step left out.
//!
//! It holds the user's own words and the facts of those turns, word for word, within a
//! budget (`bonsai.live.packetTokens`), by priority:
//! 1. what the user decided or asked to keep, as whole sentences (every clause);
//! 2. the values the user gave (ids, URLs, paths, amounts), in the sentence they gave them;
//! 3. the lines that say the errors;
//! 4. the files modified and read;
//! 5. the commands run, with their exit state;
//! 6. open tasks.
//!
//! The assistant's prose is not in it: a reply cut to its first sentence loses its numbers,
//! and a tool-call preamble says nothing. What does not fit is counted, and the
//! `bonsai_recall` tool returns it (and any left-out message) word for word.
//!
//! It is made only at a step, from the messages before the cut. Those never change within a
//! context, so the packet is the same bytes from one step to the next and the request start
//! stays cached. Within a kind the oldest come first, so a later step adds after what an
//! earlier one said. Compaction and branch summaries are not folded into it: they are sent as
//! Pi wrote them, with Pi's own framing, ahead of it.

use super::policy::{LiveSettings, PACKET_TYPE, plural};
use super::source::MessageSource;
use crate::compaction::audit::{self, Gather, Kind};
use crate::units;
use crate::view::context;
use serde_json::{Value, json};

/// What the turns left out established, added to at each step: a step reads only the turns
/// it newly leaves out (a context of 10,000 messages is not read again at every step).
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    gather: Gather,
}

impl Ledger {
    /// Add the messages a step newly leaves out (each with its index in Pi's list), oldest
    /// first.
    pub fn add(&mut self, part: &[(usize, &Value)]) {
        self.gather.add_messages(part);
    }
}

/// The name of the tool that fetches what the packet stands for.
pub const RECALL_TOOL: &str = "bonsai_recall";

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
    let text = text_of(ledger, left, turns, tokens, settings.packet_tokens, settings.recall);
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
pub fn text(left_out: &[Value], turns: usize, tokens: u64, budget: u64, recall: bool) -> String {
    let mut ledger = Ledger::default();
    let part: Vec<(usize, &Value)> = left_out.iter().enumerate().collect();
    ledger.add(&part);
    text_of(&ledger, left_out.len(), turns, tokens, budget, recall)
}

/// A kind's heading in the packet.
fn heading(k: Kind) -> &'static str {
    match k {
        Kind::Decisions => "What the user decided or asked to keep",
        Kind::Values => "Values the user gave",
        Kind::Errors => "Errors",
        Kind::FilesModified => "Files modified",
        Kind::FilesRead => "Files read",
        Kind::Commands => "Commands run",
        Kind::OpenTasks => "Open tasks",
    }
}

/// What the packet stands for, then what was kept of those turns, all within `budget`
/// tokens (Pi's estimate: a quarter of its characters).
fn text_of(ledger: &Ledger, left: usize, turns: usize, tokens: u64, budget: u64, recall: bool) -> String {
    let (what, n) = if turns > 0 {
        (plural(turns, "earlier turn", "earlier turns"), turns)
    } else {
        (plural(left, "earlier message", "earlier messages"), left)
    };
    let (verb, pronoun) = if n == 1 { ("is", "it") } else { ("are", "them") };
    let fetch = if recall {
        format!(
            " The {RECALL_TOOL} tool returns any of {pronoun} word for word (give it a word, a path, an id or a phrase)."
        )
    } else {
        String::new()
    };
    let head = format!(
        "[bonsai: {what} of this conversation (~{} tokens) {verb} not in this request.{fetch} Kept from {pronoun} below, word for word: what the user decided or asked to keep, the values they gave, errors, files and commands.]",
        units::count(tokens)
    );
    let items = ledger.gather.clone().finish("");
    let refs: Vec<&audit::Specific> = items.iter().collect();
    // The budget holds the head, the lists and the line that counts what is not listed.
    let tail_room = 90;
    let room = (budget as usize * 4).saturating_sub(head.chars().count() + 2 + tail_room);
    let picked = audit::pick_within(&refs, room);
    let mut out = head;
    if !picked.groups.is_empty() {
        out.push_str("\n\n");
        out.push_str(&picked.render(heading));
    }
    if picked.left > 0 {
        out.push_str(&format!(
            "\n\n({} not listed{})",
            plural(picked.left, "more item", "more items"),
            if recall {
                format!("; {RECALL_TOOL} finds them")
            } else {
                String::new()
            }
        ));
    }
    out
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
