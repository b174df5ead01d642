//! The live context policy: what the model is sent on each call when bonsai runs inside Pi
//! (the Pi package's `context` hook, through `bonsai serve`) and what `bonsai context --live`
//! prints at a leaf. One function, [`live_context`], on Pi's in-memory messages (the
//! `AgentMessage`s of the `context` event: no system messages); nothing is written.
//!
//! Policies (`bonsai.live.policy`):
//! - `off`: the messages as Pi has them.
//! - `output`: OpenCode's prune of old tool output, or with `bonsai.live.compat:
//!   "pi-context-pruning"` that extension's own rules: the plan `bonsai prune` makes
//!   ([`prune::output`]), applied in memory instead of written as context edits.
//! - `zones` (default): the context-manager design. The zone comes from Pi's usage against
//!   T = window − reserveTokens; raw compaction and branch summaries are dropped; only the
//!   newest turns are kept (how many depends on the zone), long tool output in the kept older
//!   turns is distilled, the newest turn is never touched; one hidden packet carries what
//!   everything dropped established (the offline summarizer's ledger).

use crate::compaction::offline;
use crate::edit::prune::{self, PruneSettings, Zone};
use crate::load::session::Session;
use crate::view::context;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fmt::Write as _;

/// The `customType` of the packet message (Pi sends a `custom` message as a user message).
pub const PACKET_TYPE: &str = "bonsai.packet";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LivePolicy {
    Off,
    Output { compat: bool },
    Zones,
}

impl LivePolicy {
    pub fn name(self) -> &'static str {
        match self {
            LivePolicy::Off => "off",
            LivePolicy::Output { compat: false } => "output",
            LivePolicy::Output { compat: true } => "output (pi-context-pruning)",
            LivePolicy::Zones => "zones",
        }
    }
}

/// How many of the newest turns the zones policy keeps in each zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnsKept {
    pub green: usize,
    pub yellow: usize,
    pub red: usize,
}

impl Default for TurnsKept {
    fn default() -> Self {
        TurnsKept {
            green: 8,
            yellow: 4,
            red: 1,
        }
    }
}

impl TurnsKept {
    pub fn get(&self, z: Zone) -> usize {
        match z {
            Zone::Green => self.green,
            Zone::Yellow => self.yellow,
            Zone::Red => self.red,
        }
    }
}

/// Where the summary of an early compaction comes from (`bonsai.live.summarizer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Summarizer {
    /// Pi's own summary (its prompt, the session's model).
    Pi,
    /// bonsai's offline summarizer: no model call.
    Offline,
    /// One of bonsai's LLM strategies, by name.
    Strategy(String),
}

impl Summarizer {
    pub fn name(&self) -> &str {
        match self {
            Summarizer::Pi => "pi",
            Summarizer::Offline => "offline",
            Summarizer::Strategy(s) => s,
        }
    }
}

/// A setting the live policy could not use: named with its value, and what is done instead.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingProblem {
    pub key: String,
    pub value: String,
    pub why: String,
}

impl std::fmt::Display for SettingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is {}: {}", self.key, self.value, self.why)
    }
}

#[derive(Debug, Clone)]
pub struct LiveSettings {
    pub policy: LivePolicy,
    pub turns: TurnsKept,
    /// The packet's budget in Pi's estimated tokens.
    pub packet_tokens: u64,
    /// The gauge's zone bounds as fractions of T.
    pub zones: (f64, f64),
    /// The output policy's numbers (Pi's `contextPruning` settings).
    pub prune: PruneSettings,
    /// Compact once per pressure episode when the zone reaches red (before Pi's threshold).
    pub compact_early: bool,
    pub summarizer: Summarizer,
    /// Settings that could not be used, each with what is done instead.
    pub problems: Vec<SettingProblem>,
}

impl Default for LiveSettings {
    fn default() -> Self {
        LiveSettings {
            policy: LivePolicy::Zones,
            turns: TurnsKept::default(),
            packet_tokens: 1_500,
            zones: (0.7, 0.9),
            prune: PruneSettings::default(),
            compact_early: true,
            summarizer: Summarizer::Pi,
            problems: vec![],
        }
    }
}

/// What Pi knows about the context at this call.
#[derive(Debug, Clone, Copy)]
pub struct LiveInput<'a> {
    /// Pi's messages for this call, oldest first, without system messages.
    pub messages: &'a [Value],
    /// `ctx.getContextUsage().tokens`: `None` when Pi does not know (right after a compaction,
    /// before the next reply).
    pub usage_tokens: Option<f64>,
    pub context_window: u64,
    pub reserve_tokens: u64,
}

impl LiveInput<'_> {
    /// T = window − reserveTokens, where Pi compacts.
    pub fn threshold(&self) -> u64 {
        self.context_window.saturating_sub(self.reserve_tokens)
    }
}

/// One message of the answer: an input message as it is, one changed, or one bonsai adds.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Keep(usize),
    Replace(usize, Value),
    Insert(Value),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveReport {
    pub policy: String,
    pub zone: Option<Zone>,
    /// T = window − reserveTokens.
    pub threshold: u64,
    /// Pi's own figure (`None`: unknown, the estimate `tokens_full` stands in for it).
    pub tokens_now: Option<f64>,
    /// Pi's estimate of the messages Pi gave (chars/4, as Pi estimates).
    pub tokens_full: u64,
    /// Pi's estimate of the messages sent.
    pub tokens_sent: u64,
    pub turns_total: usize,
    pub turns_kept: usize,
    pub messages_in: usize,
    pub messages_out: usize,
    /// Messages of older turns left out.
    pub dropped: usize,
    pub distilled: usize,
    pub pruned: usize,
    /// Raw compaction and branch summaries left out (their facts are in the packet).
    pub summaries_filtered: usize,
    /// Tool results left out because their call was not kept (never expected; a safety net).
    pub orphans_dropped: usize,
    /// The packet's estimated tokens, when one was added.
    pub packet_tokens: Option<u64>,
    pub note: String,
}

#[derive(Debug, Clone)]
pub struct LiveAnswer {
    pub pieces: Vec<Piece>,
    pub report: LiveReport,
}

impl LiveAnswer {
    /// Whether the messages sent differ from Pi's (Pi then keeps its own list untouched).
    pub fn changed(&self, input_len: usize) -> bool {
        self.pieces.len() != input_len || self.pieces.iter().enumerate().any(|(k, p)| *p != Piece::Keep(k))
    }

    /// The messages sent.
    pub fn messages(&self, input: &[Value]) -> Vec<Value> {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Keep(i) => input[*i].clone(),
                Piece::Replace(_, v) | Piece::Insert(v) => v.clone(),
            })
            .collect()
    }

    /// The packet's text, when one was added.
    pub fn packet(&self) -> Option<&str> {
        self.pieces.iter().find_map(|p| match p {
            Piece::Insert(v) if is_packet(v) => v.get("content").and_then(|c| c.as_str()),
            _ => None,
        })
    }
}

/// Whether a message is bonsai's packet.
pub fn is_packet(v: &Value) -> bool {
    v.get("role").and_then(|r| r.as_str()) == Some("custom")
        && v.get("customType").and_then(|c| c.as_str()) == Some(PACKET_TYPE)
}

fn role(v: &Value) -> &str {
    v.get("role").and_then(|r| r.as_str()).unwrap_or("")
}

fn estimate_all(msgs: impl Iterator<Item = impl std::borrow::Borrow<Value>>) -> u64 {
    msgs.map(|m| context::estimate_value(m.borrow())).sum()
}

/// The zone of this call: Pi's usage (its estimate of the messages when it has none) against T.
pub fn zone_at(input: &LiveInput, bounds: (f64, f64)) -> Zone {
    let tokens = input
        .usage_tokens
        .unwrap_or_else(|| estimate_all(input.messages.iter()) as f64);
    prune::zone_of(tokens, input.threshold(), bounds)
}

/// The live policy's answer for one model call.
pub fn live_context(input: &LiveInput, settings: &LiveSettings) -> LiveAnswer {
    let msgs = input.messages;
    let tokens_full = estimate_all(msgs.iter());
    let mut report = LiveReport {
        policy: settings.policy.name().to_string(),
        threshold: input.threshold(),
        tokens_now: input.usage_tokens,
        tokens_full,
        messages_in: msgs.len(),
        turns_total: msgs.iter().filter(|m| role(m) == "user").count(),
        ..LiveReport::default()
    };
    let pieces = match settings.policy {
        LivePolicy::Off => {
            report.turns_kept = report.turns_total;
            report.note = "policy off: the messages as Pi has them".into();
            (0..msgs.len()).map(Piece::Keep).collect()
        }
        LivePolicy::Output { compat } => output(msgs, settings, compat, &mut report),
        LivePolicy::Zones => zones(input, settings, &mut report),
    };
    report.messages_out = pieces.len();
    report.tokens_sent = pieces
        .iter()
        .map(|p| match p {
            Piece::Keep(i) => context::estimate_value(&msgs[*i]),
            Piece::Replace(_, v) | Piece::Insert(v) => context::estimate_value(v),
        })
        .sum();
    LiveAnswer { pieces, report }
}

/// Early compaction's latch: at most one compaction per pressure episode. An episode begins
/// when Pi's usage reaches red and ends when a known usage falls below red again (which a
/// successful compaction brings at the next reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Latch {
    /// No compaction for the current pressure (or none needed).
    #[default]
    Idle,
    /// Asked for; its outcome not reported yet.
    InFlight,
    /// This episode's compaction is written.
    Done,
    /// This episode's compaction failed: Pi's own threshold is the fallback until the episode
    /// ends.
    Failed,
}

impl Latch {
    pub fn name(self) -> &'static str {
        match self {
            Latch::Idle => "idle",
            Latch::InFlight => "in flight",
            Latch::Done => "done for this episode",
            Latch::Failed => "failed for this episode",
        }
    }
}

/// What `turn_end` decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyCompaction {
    pub compact: bool,
    pub latch: Latch,
    pub zone: Option<Zone>,
    pub reason: String,
}

/// At a turn's end: compact now? (`usage`: Pi's `getContextUsage().tokens`, `None` when
/// unknown, and then nothing changes.)
pub fn early_compaction(latch: Latch, usage: Option<f64>, threshold: u64, settings: &LiveSettings) -> EarlyCompaction {
    let Some(tokens) = usage else {
        return EarlyCompaction {
            compact: false,
            latch,
            zone: None,
            reason: "usage unknown (no reply since the last compaction)".into(),
        };
    };
    let zone = prune::zone_of(tokens, threshold, settings.zones);
    let red = zone == Zone::Red;
    let (compact, latch, reason) = match (latch, red) {
        (_, _) if !settings.compact_early => (
            false,
            latch,
            "early compaction is off (bonsai.live.compactEarly)".to_string(),
        ),
        (Latch::Idle, true) => (
            true,
            Latch::InFlight,
            format!(
                "red: {} of T {} ({:.0} %)",
                prune::thousands(tokens.round() as u64),
                prune::thousands(threshold),
                100.0 * tokens / threshold.max(1) as f64
            ),
        ),
        (Latch::Idle, false) => (false, Latch::Idle, format!("{}: no compaction needed", zone.name())),
        (Latch::InFlight, _) => (false, Latch::InFlight, "a compaction is in flight".into()),
        (Latch::Done | Latch::Failed, true) => {
            (false, latch, "this pressure episode already had its compaction".into())
        }
        (Latch::Done | Latch::Failed, false) => (false, Latch::Idle, format!("{}: the episode is over", zone.name())),
    };
    EarlyCompaction {
        compact,
        latch,
        zone: Some(zone),
        reason,
    }
}

/// The live answer at a leaf of a session file: Pi's messages there as Pi holds them in
/// memory, Pi's usage figure as `ctx.getContextUsage()` gives it, and the policy's answer on
/// them: exactly what the package computes at the `context` event of the request sent when
/// that entry was the newest.
pub struct AtLeaf {
    pub proj: context::Projection,
    /// The projected messages that are not system messages (what the `context` event holds),
    /// with their materialized values.
    pub refs: Vec<context::ContextMessage>,
    pub values: Vec<Value>,
    pub usage: Option<f64>,
    pub answer: LiveAnswer,
}

pub fn at_leaf(s: &Session, leaf: usize, window: u64, reserve: u64, settings: &LiveSettings) -> AtLeaf {
    let proj = context::project(s, &s.path_to(leaf));
    let refs: Vec<context::ContextMessage> = proj
        .messages()
        .filter(|m| m.role != crate::load::entry::Role::System)
        .cloned()
        .collect();
    let values: Vec<Value> = refs.iter().map(|m| context::materialize(s, m)).collect();
    let usage = context::pi_context_usage(s, &proj);
    let answer = live_context(
        &LiveInput {
            messages: &values,
            usage_tokens: usage,
            context_window: window,
            reserve_tokens: reserve,
        },
        settings,
    );
    AtLeaf {
        proj,
        refs,
        values,
        usage,
        answer,
    }
}

/// Pi's messages as a session of their own (a header, then one message entry per message,
/// each the child of the one before), so the plans `bonsai prune` makes on a file run on them
/// unchanged. Entry `k` is message `k`.
pub fn as_session(msgs: &[Value]) -> Session {
    let mut buf = String::with_capacity(msgs.len() * 256 + 128);
    buf.push_str(
        r#"{"type":"session","version":3,"id":"bonsai-live","timestamp":"1970-01-01T00:00:00.000Z","cwd":"/"}"#,
    );
    buf.push('\n');
    for (k, m) in msgs.iter().enumerate() {
        let parent = if k == 0 {
            "null".to_string()
        } else {
            format!("\"m{:x}\"", k - 1)
        };
        let _ = write!(
            buf,
            r#"{{"type":"message","id":"m{k:x}","parentId":{parent},"timestamp":"1970-01-01T00:00:00.000Z","message":"#
        );
        buf.push_str(&serde_json::to_string(m).unwrap_or_else(|_| "null".into()));
        buf.push_str("}\n");
    }
    // A header we wrote ourselves always loads (the loader refuses only a missing header).
    Session::from_bytes(buf.into_bytes()).expect("bonsai's own header loads")
}

fn output(msgs: &[Value], settings: &LiveSettings, compat: bool, report: &mut LiveReport) -> Vec<Piece> {
    report.turns_kept = report.turns_total;
    if msgs.is_empty() {
        report.note = "no messages".into();
        return vec![];
    }
    let s = as_session(msgs);
    let mut ps = settings.prune.clone();
    ps.compat = compat;
    let plan = prune::output(&s, msgs.len() - 1, &ps, false);
    report.note = plan.note.clone();
    let mut pieces: Vec<Piece> = (0..msgs.len()).map(Piece::Keep).collect();
    for item in plan.edits() {
        let Some(Value::Object(mut m)) = msgs.get(item.entry).cloned() else {
            continue;
        };
        if let Some(c) = item.replacement.get("content") {
            m.insert("content".into(), c.clone());
        }
        pieces[item.entry] = Piece::Replace(item.entry, Value::Object(m));
        report.pruned += 1;
    }
    pieces
}

/// The tool-call ids of an assistant message.
fn call_ids(m: &Value) -> impl Iterator<Item = &str> {
    m.get("content")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("toolCall"))
        .filter_map(|b| b.get("id").and_then(|i| i.as_str()))
}

/// A tool result's text and image blocks, for distilling (`None` unless it is all text and
/// images, which is every tool result Pi writes).
fn distilled_result(m: &Value) -> Option<(Value, usize)> {
    let tool = m.get("toolName").and_then(|t| t.as_str()).unwrap_or("tool");
    let blocks = m.get("content")?.as_array()?;
    let mut text = String::new();
    let mut images = Vec::new();
    for b in blocks {
        match b.get("type").and_then(|t| t.as_str()) {
            Some("text") => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(b.get("text").and_then(|t| t.as_str()).unwrap_or(""));
            }
            Some("image") => images.push(b.clone()),
            _ => return None,
        }
    }
    let (short, elided) = prune::distill(&text, tool)?;
    let mut content = vec![json!({"type": "text", "text": short})];
    content.extend(images);
    let mut out = m.clone();
    out["content"] = Value::Array(content);
    Some((out, elided))
}

fn zones(input: &LiveInput, settings: &LiveSettings, report: &mut LiveReport) -> Vec<Piece> {
    let msgs = input.messages;
    let zone = zone_at(input, settings.zones);
    report.zone = Some(zone);
    let keep = settings.turns.get(zone).max(1);
    let users: Vec<usize> = (0..msgs.len()).filter(|&i| role(&msgs[i]) == "user").collect();
    // Where the kept messages start: the oldest kept turn's user message; everything when
    // there are no more turns than kept; in red with no user message at all (a turn that
    // began before the last compaction), the smallest suffix that holds no tool result
    // without its call: from the newest message that is not a tool result.
    let start = if users.len() > keep {
        users[users.len() - keep]
    } else if users.is_empty() && zone == Zone::Red {
        (0..msgs.len())
            .rev()
            .find(|&i| role(&msgs[i]) != "toolResult")
            .unwrap_or(0)
    } else {
        0
    };
    report.turns_kept = users.iter().filter(|&&u| u >= start).count();
    let newest_turn = users.last().copied().unwrap_or(0);
    let is_summary = |m: &Value| matches!(role(m), "compactionSummary" | "branchSummary");
    let mut dropped: Vec<&Value> = Vec::new();
    let mut kept: Vec<usize> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if is_summary(m) {
            report.summaries_filtered += 1;
            dropped.push(m);
        } else if i < start {
            report.dropped += 1;
            dropped.push(m);
        } else {
            kept.push(i);
        }
    }
    // Never a tool result without its call (a call's results follow it within its turn, so
    // this only acts on input that already had an orphan).
    let calls: HashSet<&str> = kept.iter().flat_map(|&i| call_ids(&msgs[i])).collect();
    let mut pieces = Vec::with_capacity(kept.len() + 1);
    for &i in &kept {
        let m = &msgs[i];
        if role(m) == "toolResult" {
            let id = m.get("toolCallId").and_then(|t| t.as_str()).unwrap_or("");
            if !calls.contains(id) {
                report.orphans_dropped += 1;
                continue;
            }
            // The older kept turns: long output of a prunable tool is distilled; the newest
            // turn stays lossless.
            let tool = m.get("toolName").and_then(|t| t.as_str()).unwrap_or("");
            let prunable = settings.prune.protected_tools.iter().all(|t| t != tool)
                && (settings.prune.prunable_tools.is_empty()
                    || settings.prune.prunable_tools.iter().any(|t| t == tool));
            let is_error = m.get("isError").and_then(|e| e.as_bool()).unwrap_or(false);
            if i < newest_turn
                && prunable
                && !is_error
                && let Some((short, _)) = distilled_result(m)
            {
                report.distilled += 1;
                pieces.push(Piece::Replace(i, short));
                continue;
            }
        }
        pieces.push(Piece::Keep(i));
    }
    if !dropped.is_empty() {
        let ts = kept
            .first()
            .and_then(|&i| msgs[i].get("timestamp"))
            .cloned()
            .unwrap_or(json!(0));
        let text = packet_text(&dropped, report, settings.packet_tokens);
        let packet = json!({
            "role": "custom",
            "customType": PACKET_TYPE,
            "content": text,
            "display": false,
            "timestamp": ts,
        });
        report.packet_tokens = Some(context::estimate_value(&packet));
        pieces.insert(0, packet_piece(packet));
    }
    report.note = format!(
        "{}: the newest {} of {} turns kept ({} distilled), {} older messages and {} summaries in the packet",
        zone.name(),
        report.turns_kept,
        report.turns_total,
        report.distilled,
        report.dropped,
        report.summaries_filtered
    );
    pieces
}

fn packet_piece(v: Value) -> Piece {
    Piece::Insert(v)
}

/// The packet: a line saying what is left out, then the ledger of what it established.
fn packet_text(dropped: &[&Value], report: &LiveReport, budget: u64) -> String {
    let turns = report.turns_total - report.turns_kept;
    let tokens: u64 = estimate_all(dropped.iter().copied());
    let mut what = Vec::new();
    if turns > 0 {
        what.push(format!("{turns} earlier turn{}", if turns == 1 { "" } else { "s" }));
    } else if report.dropped > 0 {
        what.push(format!(
            "{} earlier message{}",
            report.dropped,
            if report.dropped == 1 { "" } else { "s" }
        ));
    }
    if report.summaries_filtered > 0 {
        what.push(format!(
            "{} earlier summar{}",
            report.summaries_filtered,
            if report.summaries_filtered == 1 { "y" } else { "ies" }
        ));
    }
    let head = format!(
        "[bonsai: {} of this session (~{} tokens) are left out of this request to keep the context small. What they established, for continuing the work:]\n\n",
        what.join(" and "),
        prune::thousands(tokens)
    );
    // The head line counts against the budget too.
    let body_budget = budget.saturating_sub(head.len().div_ceil(4) as u64).max(64);
    format!("{head}{}", offline::packet_ledger(dropped, body_budget))
}

#[cfg(test)]
mod tests;
