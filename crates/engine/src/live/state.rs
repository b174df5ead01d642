//! The live policy's state between calls, rebuilt from Pi's messages by replaying the calls
//! they record.
//!
//! Every assistant reply in Pi's context is the answer to one call, whose context was the
//! messages before it. Replaying those calls in order, each decided by the same function as
//! the call being made now ([`PolicyState::call`]), gives the state the policy had when it
//! sent each of them: where its cut is, which outputs it distilled, its packet. Nothing is
//! stored beside the session, so the package (which keeps the state between calls and only
//! replays the calls Pi appended), `bonsai context --live` and `bonsai bill` (which replay
//! from the first call) agree.
//!
//! A compaction starts Pi's context afresh (its summary first): only the replies after it are
//! calls of this context; the kept messages' replies answered an older one.

use super::packet::{self, Packet, hash_of};
use super::policy::{CallEnv, LivePolicy, LiveReport, LiveSettings, Piece, StepReason, StepRecord, plural};
use super::source::{MessageSource, MsgFacts, MsgKind};
use crate::edit::prune::{self, Zone};
use crate::view::context;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The messages' facts, their running sums and turn starts; appended to, or cut back where
/// Pi's context changed.
#[derive(Debug, Clone, Default)]
struct Index {
    facts: Vec<MsgFacts>,
    /// `prefix[i]`: Pi's estimate of messages `0..i`.
    prefix: Vec<u64>,
    /// Where each turn starts (its user message).
    users: Vec<usize>,
    /// For each message, the newest assistant reply at or before it whose usage Pi trusts.
    last_reply: Vec<Option<usize>>,
    /// The time of the compaction summary the context starts with (−∞ without one).
    epoch_time: f64,
    /// Long tool outputs distilled (once per message; `None`: not distilled).
    distilled: HashMap<usize, Option<(Value, u64)>>,
    /// Each tool call (by its id's hash) and the reply that made it.
    calls: HashMap<u64, usize>,
}

impl Index {
    /// Forget the messages from `n` on.
    fn truncate(&mut self, n: usize) {
        self.facts.truncate(n);
        self.prefix.truncate(n + 1);
        self.users.truncate(self.users.partition_point(|&u| u < n));
        self.last_reply.truncate(n);
        self.distilled.retain(|&i, _| i < n);
        self.calls.retain(|_, i| *i < n);
    }

    fn extend(&mut self, src: &dyn MessageSource) {
        if self.prefix.is_empty() {
            self.prefix.push(0);
        }
        for i in self.facts.len()..src.len() {
            let f = src.facts(i);
            if i == 0 {
                self.epoch_time = if f.kind == MsgKind::CompactionSummary {
                    f.time
                } else {
                    f64::NEG_INFINITY
                };
            }
            self.prefix.push(self.prefix[i] + f.est);
            if f.kind == MsgKind::User {
                self.users.push(i);
            }
            if f.kind == MsgKind::Assistant {
                for c in src.call_ids(i) {
                    self.calls.insert(c, i);
                }
            }
            let prev = i.checked_sub(1).and_then(|p| self.last_reply[p]);
            self.last_reply
                .push(if f.kind == MsgKind::Assistant && f.context_tokens.is_some() {
                    Some(i)
                } else {
                    prev
                });
            self.facts.push(f);
        }
    }

    /// Whether the reply at `j` answered a call of this context (not one before its
    /// compaction).
    fn is_call(&self, j: usize) -> bool {
        let t = self.facts[j].time;
        j > 0 && self.facts[j].kind == MsgKind::Assistant && (t >= self.epoch_time || t.is_nan())
    }

    /// Turn starts in `from..to`.
    fn users_in(&self, from: usize, to: usize) -> &[usize] {
        let a = self.users.partition_point(|&u| u < from);
        let b = self.users.partition_point(|&u| u < to);
        &self.users[a..b]
    }

    fn sum(&self, from: usize, to: usize) -> u64 {
        self.prefix[to] - self.prefix[from]
    }

    /// A tool result distilled as a kept older turn's is (`None` when it stays whole).
    fn distill(&mut self, src: &dyn MessageSource, i: usize, settings: &LiveSettings) -> Option<&(Value, u64)> {
        if self.facts[i].kind != MsgKind::ToolResult {
            return None;
        }
        self.distilled
            .entry(i)
            .or_insert_with(|| {
                distilled_result(&src.value(i), settings).map(|v| {
                    let est = context::estimate_value(&v);
                    (v, est)
                })
            })
            .as_ref()
    }
}

/// A long output of a prunable tool, distilled (its head and tail with what was elided
/// said); `None` unless it is all text and images (every tool result Pi writes), long, not
/// an error, of a tool that may be pruned.
fn distilled_result(m: &Value, settings: &LiveSettings) -> Option<Value> {
    let tool = m.get("toolName").and_then(|t| t.as_str()).unwrap_or("tool");
    let ps = &settings.prune;
    let prunable = ps.protected_tools.iter().all(|t| t != tool)
        && (ps.prunable_tools.is_empty() || ps.prunable_tools.iter().any(|t| t == tool));
    if !prunable || m.get("isError").and_then(|e| e.as_bool()).unwrap_or(false) {
        return None;
    }
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
    let rest = if settings.recall {
        format!("{} returns them word for word", super::packet::RECALL_TOOL)
    } else {
        prune::RUN_AGAIN.to_string()
    };
    let (short, _) = prune::distill(&text, tool, &rest)?;
    let mut content = vec![serde_json::json!({"type": "text", "text": short})];
    content.extend(images);
    let mut out = m.clone();
    out["content"] = Value::Array(content);
    Some(out)
}

/// A message sent in place of one of Pi's.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Replacement {
    pub value: Value,
    pub est: u64,
    /// Pruned by the output policy (else distilled).
    pub pruned: bool,
    /// Its bytes' hash: what tells it from another message (a provider's cache compares bytes).
    pub hash: u64,
}

impl Replacement {
    fn new(value: Value, pruned: bool) -> Replacement {
        Replacement {
            est: context::estimate_value(&value),
            hash: hash_of(&value),
            value,
            pruned,
        }
    }
}

/// What a call sends, in order: runs of Pi's messages as they are, and messages bonsai
/// sends instead (a replacement, the packet). Its size and its start shared with another
/// call's cost as many steps as it has parts, not as many as it has messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Part<'a> {
    /// Pi's messages `from..to`.
    Run(usize, usize),
    /// A message sent in place of Pi's message at this index.
    Replace(usize, &'a Value, u64, u64),
    /// The packet, its estimate and hash.
    Packet(&'a Value, u64, u64),
}

/// What is left out now; it changes only at a step.
#[derive(Debug, Clone, Default)]
struct LeftOut {
    /// Pi's messages before this one are left out (their summaries are sent ahead).
    cut: usize,
    /// Messages sent in place of Pi's (distilled or pruned outputs).
    replaced: BTreeMap<usize, Replacement>,
    /// What the replacements save, in Pi's estimate.
    saved: u64,
    /// The compaction and branch summaries before the cut, sent as written ahead of the packet.
    ahead: Vec<usize>,
    ahead_est: u64,
    /// The packet, made when a call that sends it is answered (a replayed call needs none:
    /// making one reads every message before the cut), then kept until the next step.
    packet: Option<Packet>,
    /// Messages before the cut that are not summaries, their estimate, and turns there.
    dropped: usize,
    dropped_tokens: u64,
    turns_out: usize,
    /// What the messages before the cut established, added to at each step (shared between
    /// the state of a call and the next until a step changes it).
    ledger: std::sync::Arc<packet::Ledger>,
}

impl LeftOut {
    /// What the packet weighs in the decisions: its budget plus room for its facts, the same
    /// whether it is made yet or not (a replay decides as the call did).
    fn packet_allowance(&self, settings: &LiveSettings) -> u64 {
        if self.dropped > 0 {
            settings.packet_tokens + 100
        } else {
            0
        }
    }
}

/// One call's figures, for the next call.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CallFacts {
    /// The messages of its context.
    end: usize,
    time: f64,
    /// Pi's estimate of Pi's messages, and of what was sent.
    full: u64,
    sent: u64,
}

/// The policy's state at a call: what is left out and what the calls so far were.
#[derive(Debug, Clone, Default)]
pub(super) struct PolicyState {
    /// Shared with the states of earlier calls until a step changes it.
    left: std::sync::Arc<LeftOut>,
    zone: Option<Zone>,
    last: Option<CallFacts>,
    calls: usize,
    /// Tokens Pi appended between the calls of this context (their growth per call).
    grown: u64,
    steps: usize,
    /// Output policy: tokens appended since it last planned (a plan is made only when a
    /// step could prune `contextPruning.minimum`).
    since_plan: u64,
    /// This call's whole context and decision, for its report.
    whole: f64,
    step: Option<StepRecord>,
    waiting: Option<String>,
}

/// Hysteresis of the zones: a zone is left only this far (a fraction of T) below its bound,
/// so a context at a bound does not flip on every call.
const ZONE_HYSTERESIS: f64 = 0.05;

/// The zone of `tokens` given the zone before: entered at its bound, left below it less
/// [`ZONE_HYSTERESIS`].
pub fn zone_after(before: Option<Zone>, tokens: f64, threshold: u64, bounds: (f64, f64)) -> Zone {
    let raw = prune::zone_of(tokens, threshold, bounds);
    let t = threshold as f64;
    match (before, raw) {
        (Some(Zone::Red), Zone::Yellow | Zone::Green) if tokens >= (bounds.1 - ZONE_HYSTERESIS) * t => Zone::Red,
        (Some(Zone::Red | Zone::Yellow), Zone::Green) if tokens >= (bounds.0 - ZONE_HYSTERESIS) * t => Zone::Yellow,
        _ => raw,
    }
}

impl PolicyState {
    /// Pi's estimate of what is sent for the context `0..end`, the packet by its allowance
    /// (what the decisions read).
    fn sent(&self, idx: &Index, end: usize, settings: &LiveSettings) -> u64 {
        let l = &self.left;
        l.ahead_est + l.packet_allowance(settings) + idx.sum(l.cut.min(end), end) - l.saved
    }

    /// The packet for the cut, made now if it was not.
    fn make_packet(&mut self, src: &dyn MessageSource, end: usize, settings: &LiveSettings) {
        if self.left.packet.is_none() && self.left.dropped > 0 {
            let l = std::sync::Arc::make_mut(&mut self.left);
            l.packet = packet::build(
                src,
                &l.ledger,
                l.dropped,
                l.dropped_tokens,
                l.turns_out,
                l.cut,
                end,
                settings,
            );
        }
    }

    /// Pi's estimate of what is sent, the packet as made.
    fn sent_exactly(&self, idx: &Index, end: usize) -> u64 {
        let l = &self.left;
        l.ahead_est + l.packet.as_ref().map_or(0, |p| p.est) + idx.sum(l.cut.min(end), end) - l.saved
    }

    /// Tokens of the turns sent (what the marks are read against).
    fn kept(&self, idx: &Index, end: usize) -> u64 {
        idx.sum(self.left.cut.min(end), end) - self.left.saved
    }

    /// The whole context at `end`: Pi's figure for the newest reply of this context, with
    /// what bonsai left out of the call it answered added back, plus an estimate of the
    /// messages after it; the estimate of every message when there is no such reply.
    fn whole(&self, idx: &Index, end: usize) -> f64 {
        let Some(a) = end.checked_sub(1).and_then(|e| idx.last_reply[e]) else {
            return idx.prefix[end] as f64;
        };
        let f = &idx.facts[a];
        if f.time < idx.epoch_time {
            return idx.prefix[end] as f64;
        }
        let usage = f.context_tokens.unwrap_or(0.0);
        // A reply whose usage covers every message of its call's context (Pi alone sent it,
        // as in a session recorded without bonsai) needs nothing added back.
        let left_out = match self.last {
            Some(c) if c.end == a && usage < c.full as f64 => c.full.saturating_sub(c.sent),
            _ => 0,
        };
        usage + (left_out + idx.sum(a + 1, end)) as f64
    }

    /// Decide the call whose context is Pi's messages `0..end`; returns whether it stepped.
    fn call(
        &mut self,
        idx: &mut Index,
        src: &dyn MessageSource,
        end: usize,
        env: &CallEnv,
        settings: &LiveSettings,
    ) -> Option<StepRecord> {
        self.step = None;
        self.waiting = None;
        let full = idx.prefix[end];
        let time = end.checked_sub(1).map_or(f64::NAN, |e| idx.facts[e].time);
        let appended = self.last.map_or(0, |l| full.saturating_sub(l.full));
        self.grown += appended;
        self.since_plan += appended;
        let whole = self.whole(idx, end);
        self.whole = whole;
        let zone = zone_after(self.zone, whole, env.threshold(), settings.zones);
        self.zone = Some(zone);
        // No call before this one in this context: nothing is cached that a step could lose.
        let idle = self.last.map(|l| time - l.time);
        let cold = idle.is_none_or(|ms| ms > settings.cache_ttl_ms);
        let before = self.sent(idx, end, settings);
        let step = match settings.policy {
            LivePolicy::Off => None,
            LivePolicy::Zones => self.step_zones(idx, src, end, env, settings, cold, before),
            LivePolicy::Output { compat } => self.step_output(idx, src, end, env, settings, compat, zone, cold, before),
        };
        let mut step = step.map(|(reason, turns, pruned)| StepRecord {
            at: end,
            reason,
            turns,
            pruned,
            before,
            after: self.sent(idx, end, settings),
            idle_minutes: None,
        });
        if let Some(s) = &mut step {
            if s.reason == StepReason::CacheCold {
                s.idle_minutes = idle.filter(|ms| ms.is_finite()).map(|ms| ms / 60_000.0);
            }
            self.steps += 1;
        }
        self.last = Some(CallFacts {
            end,
            time,
            full,
            sent: self.sent(idx, end, settings),
        });
        self.calls += 1;
        self.step = step.clone();
        step
    }

    /// Growth per call so far (tokens Pi appends between two calls), and the calls until
    /// the next step at that pace.
    ///
    /// A compaction at T starts the context afresh and writes the request again anyway: the
    /// calls left until the whole context reaches T (`to_t` tokens away) bound the horizon,
    /// so a step just before that compaction is not taken for savings it would not have time
    /// to make.
    fn horizon(&self, marks: super::policy::Marks, newest_turn: u64, to_t: Option<f64>) -> f64 {
        let per_call = if self.calls >= 2 {
            self.grown as f64 / (self.calls - 1) as f64
        } else {
            newest_turn as f64
        };
        let next_step = (marks.high - marks.low) as f64 / per_call.max(1.0);
        let until_t = to_t.map_or(f64::INFINITY, |t| t / per_call.max(1.0));
        next_step.min(until_t).max(1.0)
    }

    /// Whether a step from `before` to `after` tokens sent pays: what it saves on this call
    /// and the next `horizon` ones (each reads less from the cache) against writing `after`
    /// again instead of reading it.
    fn pays(env: &CallEnv, before: u64, after: u64, horizon: f64) -> (bool, f64, f64) {
        let (read, write) = env.prices.unwrap_or_default().weights();
        let saves = read * before.saturating_sub(after) as f64 * (horizon + 1.0);
        let costs = (write - read) * after as f64;
        (saves >= costs, saves, costs)
    }

    /// Why a step that is due is taken now, by precedence: what is sent crowds the window
    /// (`crowded`), a cold cache, no cache discount, else only when it pays (`waits` says
    /// why not, and that is said).
    fn reason(
        &mut self,
        crowded: bool,
        cold: bool,
        caches: bool,
        waits: impl FnOnce() -> Option<String>,
    ) -> Option<StepReason> {
        if crowded {
            Some(StepReason::Crowded)
        } else if cold {
            Some(StepReason::CacheCold)
        } else if !caches {
            Some(StepReason::NoDiscount)
        } else if let Some(why) = waits() {
            self.waiting = Some(why);
            None
        } else {
            Some(StepReason::Pays)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn step_zones(
        &mut self,
        idx: &mut Index,
        src: &dyn MessageSource,
        end: usize,
        env: &CallEnv,
        settings: &LiveSettings,
        cold: bool,
        before: u64,
    ) -> Option<(StepReason, usize, usize)> {
        let marks = settings.marks.within(env.threshold());
        let caches = env.prices.is_none_or(|p| p.caches());
        let kept = self.kept(idx, end);
        let over = if caches { marks.high } else { marks.low };
        // Red does not make a step due (what is sent is under the high mark already); it only
        // takes one without waiting for it to pay.
        if !(kept > over || (cold && kept > marks.low)) {
            return None;
        }
        let Some(plan) = self.plan_cut(idx, src, end, marks.low, settings) else {
            if kept > over {
                self.waiting = Some(format!(
                    "{} tokens of turns, over the {} mark, but the floor keeps the newest {} (bonsai.live.floorTurns)",
                    prune::thousands(kept),
                    prune::thousands(over),
                    plural(settings.floor_turns + 1, "turn", "turns")
                ));
            }
            return None;
        };
        let packet_guess = settings.packet_tokens + 100;
        let ahead_after = self.left.ahead_est
            + (self.left.cut..plan.cut)
                .filter(|&i| idx.facts[i].kind.is_summary())
                .map(|i| idx.facts[i].est)
                .sum::<u64>();
        let after = plan.kept + packet_guess + ahead_after;
        let newest = idx.users_in(0, end).last().map_or(0, |&u| idx.sum(u, end));
        // bonsai compacts where Pi alone would (at T) unless it compacts early (at red).
        let compacts_at = if settings.compact_early {
            settings.zones.1 * env.threshold() as f64
        } else {
            env.threshold() as f64
        };
        // Past it already (a compaction that could not be made): no compaction is coming.
        let to_t = (self.whole < compacts_at).then_some(compacts_at - self.whole);
        let horizon = self.horizon(marks, newest, to_t);
        // The turns sent past half of T crowd the window: a step then waits for nothing.
        let crowded = kept > env.threshold() / 2;
        let reason = self.reason(crowded, cold, caches, || {
            let (ok, saves, costs) = Self::pays(env, before, after, horizon);
            (!ok).then(|| {
                format!(
                    "{} tokens of turns, over the {} mark; a step now would save ~{} token-reads over the next ~{:.0} calls and cost ~{} to write the request again",
                    prune::thousands(kept),
                    prune::thousands(marks.high),
                    prune::thousands(saves as u64),
                    horizon,
                    prune::thousands(costs as u64)
                )
            })
        })?;
        let turns_before = self.left.turns_out;
        let cut = plan.cut;
        self.apply_cut(idx, src, plan);
        // Outputs before the cut are never sent again.
        idx.distilled.retain(|&i, _| i >= cut);
        Some((reason, self.left.turns_out - turns_before, 0))
    }

    /// The cut a step makes: the most newest turns whose tokens fit under `low` (the
    /// newest whole, the older ones with long outputs distilled), never fewer than the
    /// floor; `None` when that leaves out nothing more than now.
    fn plan_cut(
        &self,
        idx: &mut Index,
        src: &dyn MessageSource,
        end: usize,
        low: u64,
        settings: &LiveSettings,
    ) -> Option<CutPlan> {
        let us: Vec<usize> = idx.users_in(self.left.cut, end).to_vec();
        let last = us.len().checked_sub(1)?;
        // The floor: this many complete turns before the newest stay.
        let latest = last.checked_sub(settings.floor_turns)?;
        let mut size = idx.sum(us[last], end);
        let mut from = last;
        let mut distilled: Vec<(usize, Replacement)> = Vec::new();
        for k in (0..last).rev() {
            let mut turn = 0u64;
            let mut turn_distilled = Vec::new();
            for i in us[k]..us[k + 1] {
                match idx.distill(src, i, settings) {
                    Some((v, est)) => {
                        turn += est;
                        turn_distilled.push((i, Replacement::new(v.clone(), false)));
                    }
                    None => turn += idx.facts[i].est,
                }
            }
            if size + turn > low && from <= latest {
                break;
            }
            size += turn;
            from = k;
            distilled.extend(turn_distilled);
        }
        let cut = us[from.min(latest)];
        (cut > self.left.cut).then(|| CutPlan {
            cut,
            kept: size,
            distilled: distilled.into_iter().filter(|(i, _)| *i >= cut).collect(),
        })
    }

    fn apply_cut(&mut self, idx: &Index, src: &dyn MessageSource, plan: CutPlan) {
        let l = std::sync::Arc::make_mut(&mut self.left);
        let mut part = Vec::new();
        for i in l.cut..plan.cut {
            let f = &idx.facts[i];
            if f.kind.is_summary() {
                l.ahead.push(i);
                l.ahead_est += f.est;
            } else {
                l.dropped += 1;
                l.dropped_tokens += f.est;
                part.push((i, src.value(i)));
            }
        }
        let refs: Vec<(usize, &Value)> = part.iter().map(|(i, v)| (*i, v.as_ref())).collect();
        std::sync::Arc::make_mut(&mut l.ledger).add(&refs);
        l.turns_out = idx.users_in(0, plan.cut).len();
        l.cut = plan.cut;
        l.replaced = plan.distilled.into_iter().collect();
        l.saved = l
            .replaced
            .iter()
            .map(|(i, r)| idx.facts[*i].est.saturating_sub(r.est))
            .sum();
        l.packet = None;
    }

    #[allow(clippy::too_many_arguments)]
    fn step_output(
        &mut self,
        idx: &mut Index,
        src: &dyn MessageSource,
        end: usize,
        env: &CallEnv,
        settings: &LiveSettings,
        compat: bool,
        zone: Zone,
        cold: bool,
        before: u64,
    ) -> Option<(StepReason, usize, usize)> {
        let minimum = settings.prune.minimum.max(1);
        // A plan can prune at most what was appended since the last one.
        if end == 0 || (self.since_plan < minimum && zone != Zone::Red && !(cold && self.calls == 0)) {
            return None;
        }
        self.since_plan = 0;
        let owned: Vec<Value>;
        let msgs: &[Value] = match src.slice() {
            Some(s) => &s[..end],
            None => {
                owned = (0..end).map(|i| src.value(i).into_owned()).collect();
                &owned
            }
        };
        let s = super::policy::as_session(msgs);
        let mut ps = settings.prune.clone();
        ps.compat = compat;
        let plan = prune::output(&s, end - 1, &ps, false);
        let mut new: Vec<(usize, Replacement)> = Vec::new();
        for item in plan.edits() {
            if self.left.replaced.contains_key(&item.entry) {
                continue;
            }
            let Some(Value::Object(mut m)) = msgs.get(item.entry).cloned() else {
                continue;
            };
            if let Some(c) = item.replacement.get("content") {
                m.insert("content".into(), c.clone());
            }
            new.push((item.entry, Replacement::new(Value::Object(m), true)));
        }
        let saves: u64 = new.iter().map(|(i, r)| idx.facts[*i].est.saturating_sub(r.est)).sum();
        if new.is_empty() || (saves < minimum && zone != Zone::Red) {
            return None;
        }
        let after = before.saturating_sub(saves);
        let caches = env.prices.is_none_or(|p| p.caches());
        let horizon = (minimum as f64 / (self.grown as f64 / self.calls.max(1) as f64).max(1.0)).max(1.0);
        let reason = self.reason(zone == Zone::Red, cold, caches, || {
            // From the oldest output pruned now on, the request is written again.
            let first = new.iter().map(|(i, _)| *i).min().unwrap_or(0);
            let rewritten = after.saturating_sub(idx.sum(0, first));
            let (read, write) = env.prices.unwrap_or_default().weights();
            (read * saves as f64 * (horizon + 1.0) < (write - read) * rewritten as f64).then(|| {
                format!(
                    "{} tokens of old output could be pruned; waiting until it pays",
                    prune::thousands(saves)
                )
            })
        })?;
        let pruned = new.len();
        let l = std::sync::Arc::make_mut(&mut self.left);
        l.saved += saves;
        l.replaced.extend(new);
        Some((reason, 0, pruned))
    }

    /// What is sent for the context `0..end`: the summaries left out (as written), the
    /// packet, then Pi's messages from the cut (replacements in place). The report's counts
    /// go into `r`.
    fn shape<'a>(&'a self, idx: &Index, end: usize, r: &mut LiveReport) -> Vec<Part<'a>> {
        let l = &self.left;
        let mut out: Vec<Part> = Vec::with_capacity(l.ahead.len() + l.replaced.len() * 2 + 4);
        let push_run = |out: &mut Vec<Part<'a>>, a: usize, b: usize| {
            if a >= b {
                return;
            }
            match out.last_mut() {
                Some(Part::Run(_, to)) if *to == a => *to = b,
                _ => out.push(Part::Run(a, b)),
            }
        };
        for &i in &l.ahead {
            push_run(&mut out, i, i + 1);
        }
        if let Some(p) = &l.packet {
            out.push(Part::Packet(&p.value, p.est, p.hash));
        }
        let from = l.cut.min(end);
        // Never a tool result without its call: a cut falls before a user message, so this
        // acts only on input that already had an orphan (and only a cut can make one).
        let orphans: Vec<usize> = if l.cut > 0 {
            (from..end)
                .filter(|&i| idx.facts[i].kind == MsgKind::ToolResult)
                .filter(|&i| {
                    idx.facts[i]
                        .result_of
                        .and_then(|c| idx.calls.get(&c))
                        .is_none_or(|&a| a < from)
                })
                .collect()
        } else {
            Vec::new()
        };
        r.orphans_dropped = orphans.len();
        // The replacements and orphans in the sent part, in order; Pi's runs between them.
        let mut marks: Vec<(usize, Option<&Replacement>)> = l
            .replaced
            .range(from..end)
            .map(|(&i, rep)| (i, Some(rep)))
            .chain(orphans.iter().map(|&i| (i, None)))
            .collect();
        marks.sort_by_key(|m| m.0);
        let mut at = from;
        for (i, rep) in marks {
            push_run(&mut out, at, i);
            at = i + 1;
            if let Some(rep) = rep {
                if rep.pruned {
                    r.pruned += 1;
                } else {
                    r.distilled += 1;
                }
                out.push(Part::Replace(i, &rep.value, rep.est, rep.hash));
            }
        }
        push_run(&mut out, at, end);
        out
    }
}

/// Where a step cuts, what the turns kept weigh, and the outputs it distills.
struct CutPlan {
    cut: usize,
    kept: u64,
    distilled: Vec<(usize, Replacement)>,
}

/// The live policy between calls: what it read of Pi's messages, and its state after the
/// calls they record.
#[derive(Debug, Clone, Default)]
pub struct LiveState {
    index: Index,
    /// The calls answered by replies before this message are replayed.
    replayed: usize,
    policy: PolicyState,
    /// The state after each of the last [`HISTORY`] replayed calls, by its reply's index:
    /// where a context that changed part way (`/tree`, another branch) goes on from. What is
    /// left out is shared between them; each step's ledger is its own.
    history: std::collections::VecDeque<(usize, PolicyState)>,
    /// The newest reply whose state was let go from the history.
    forgotten: Option<usize>,
    /// The state after the call answered last, kept for when its reply comes back in the
    /// next context (its decision is then not made again).
    pending: Option<(usize, PolicyState)>,
    /// How many calls' states to keep (`None`: [`HISTORY`]).
    keep: Option<usize>,
}

/// Calls whose state a [`LiveState`] keeps to go back to (Pi's `/tree` and a session's side
/// branches go back a few turns; further back is replayed from the start).
const HISTORY: usize = 256;

impl LiveState {
    /// A state that keeps only the last `calls` calls' states to go back to (the fuzz target
    /// reaches past a short history with a short input).
    pub fn keeping(calls: usize) -> LiveState {
        LiveState::keeping_as(Some(calls.max(1)))
    }

    fn keeping_as(keep: Option<usize>) -> LiveState {
        LiveState {
            keep,
            ..LiveState::default()
        }
    }

    /// Forget the messages from `n` on (Pi's context changed there): the state goes back to
    /// what it was after the last call whose reply is before `n`, as a replay of the first
    /// `n` messages would make it.
    pub fn truncate(&mut self, n: usize) {
        if n >= self.index.facts.len() && n >= self.replayed {
            return;
        }
        if n == 0 {
            *self = LiveState::keeping_as(self.keep);
            return;
        }
        let kept = self.history.partition_point(|(j, _)| *j < n);
        if kept == 0 && self.forgotten.is_some() {
            // Further back than the history reaches (the state after the last call before
            // `n` was let go, or is older still): replayed from nothing at the next answer.
            *self = LiveState::keeping_as(self.keep);
            return;
        }
        self.index.truncate(n);
        self.history.truncate(kept);
        self.policy = self.history.back().map(|(_, p)| p.clone()).unwrap_or_default();
        self.replayed = n;
        self.pending = None;
    }

    /// Replay the calls answered by replies before `end`, each as it was decided.
    fn replay(&mut self, src: &dyn MessageSource, end: usize, env: &CallEnv, settings: &LiveSettings) {
        if src.len() < self.index.facts.len() {
            *self = LiveState::keeping_as(self.keep);
        }
        self.index.extend(src);
        for j in self.replayed..end {
            if !self.index.is_call(j) {
                continue;
            }
            match self.pending.take() {
                Some((e, st)) if e == j => self.policy = st,
                _ => {
                    let env_j = CallEnv {
                        prices: self.index.facts[j].prices.or(env.prices),
                        ..*env
                    };
                    self.policy.call(&mut self.index, src, j, &env_j, settings);
                }
            }
            self.history.push_back((j, self.policy.clone()));
            if self.history.len() > self.keep.unwrap_or(HISTORY) {
                self.forgotten = self.history.pop_front().map(|(j, _)| j);
            }
        }
        self.replayed = self.replayed.max(end);
    }

    /// The answer for the call whose context is all of `src`: the calls its replies record
    /// are replayed first.
    pub fn answer(
        &mut self,
        src: &dyn MessageSource,
        env: &CallEnv,
        settings: &LiveSettings,
    ) -> super::policy::LiveAnswer {
        let (end, p) = self.decide(src, env, settings);
        let (shape, report) = self.report(&p, end, env, settings);
        let pieces: Vec<Piece> = shape
            .iter()
            .flat_map(|x| -> Box<dyn Iterator<Item = Piece>> {
                match x {
                    Part::Run(a, b) => Box::new((*a..*b).map(Piece::Keep)),
                    Part::Replace(i, v, _, _) => Box::new(std::iter::once(Piece::Replace(*i, (*v).clone()))),
                    Part::Packet(v, _, _) => Box::new(std::iter::once(Piece::Insert((*v).clone()))),
                }
            })
            .collect();
        drop(shape);
        self.pending = Some((end, p));
        super::policy::LiveAnswer { pieces, report }
    }

    /// [`LiveState::answer`] as `bonsai bill` reads it: what is sent as runs of Pi's messages
    /// and messages bonsai makes (by hash), and the report, no message copied.
    pub fn answer_parts(
        &mut self,
        src: &dyn MessageSource,
        env: &CallEnv,
        settings: &LiveSettings,
    ) -> (Vec<SentPart>, LiveReport) {
        self.answer_parts_seeing(src, env, settings, &mut |_, _| {})
    }

    /// [`LiveState::answer_parts`], showing `made` each message bonsai makes (by its hash)
    /// with its text, for a bill that reads what was sent.
    pub fn answer_parts_seeing(
        &mut self,
        src: &dyn MessageSource,
        env: &CallEnv,
        settings: &LiveSettings,
        made: &mut dyn FnMut(u64, &Value),
    ) -> (Vec<SentPart>, LiveReport) {
        let (end, p) = self.decide(src, env, settings);
        let (shape, report) = self.report(&p, end, env, settings);
        let parts = shape
            .iter()
            .map(|x| match x {
                Part::Run(a, b) => SentPart::Run(*a, *b),
                Part::Replace(_, v, est, hash) | Part::Packet(v, est, hash) => {
                    made(*hash, v);
                    SentPart::Made { hash: *hash, est: *est }
                }
            })
            .collect();
        drop(shape);
        self.pending = Some((end, p));
        (parts, report)
    }

    /// Pi's estimate of Pi's messages `from..to` (read so far).
    pub fn tokens(&self, from: usize, to: usize) -> u64 {
        self.index.sum(from, to)
    }

    /// The call whose context is all of `src`, decided after the calls its replies record.
    fn decide(&mut self, src: &dyn MessageSource, env: &CallEnv, settings: &LiveSettings) -> (usize, PolicyState) {
        let end = src.len();
        self.replay(src, end, env, settings);
        let mut p = self.policy.clone();
        p.call(&mut self.index, src, end, env, settings);
        p.make_packet(src, end, settings);
        if p.step.is_some() {
            // The notice's figures as sent: the request before the step, its packet made too.
            self.policy.make_packet(src, end, settings);
            let before = self.policy.sent_exactly(&self.index, end);
            let after = p.sent_exactly(&self.index, end);
            if let Some(step) = &mut p.step {
                (step.before, step.after) = (before, after);
            }
        }
        (end, p)
    }

    /// The whole context after the reply to the last answered call (Pi's figure for it,
    /// `usage`, with what bonsai left out of that call added back), and its zone; `None`
    /// when no call was answered.
    pub fn whole_after_reply(&self, usage: f64, threshold: u64, settings: &LiveSettings) -> Option<(f64, Zone)> {
        let (_, p) = self.pending.as_ref()?;
        let last = p.last?;
        let left_out = if usage < last.full as f64 {
            last.full.saturating_sub(last.sent)
        } else {
            0
        };
        let whole = usage + left_out as f64;
        Some((whole, zone_after(p.zone, whole, threshold, settings.zones)))
    }

    /// Steps taken in this context, the last answered call's included.
    pub fn steps(&self) -> usize {
        self.pending.as_ref().map_or(self.policy.steps, |(_, p)| p.steps)
    }

    fn report<'a>(
        &self,
        p: &'a PolicyState,
        end: usize,
        env: &CallEnv,
        settings: &LiveSettings,
    ) -> (Vec<Part<'a>>, LiveReport) {
        let idx = &self.index;
        let mut r = LiveReport {
            policy: settings.policy.name().to_string(),
            zone: p.zone,
            threshold: env.threshold(),
            whole: p.whole,
            tokens_full: idx.prefix[end],
            messages_in: end,
            turns_total: idx.users_in(0, end).len(),
            step: p.step.clone(),
            steps: p.steps,
            waiting: p.waiting.clone(),
            calls: p.calls,
            ..LiveReport::default()
        };
        let shape = if settings.policy == LivePolicy::Off {
            vec![Part::Run(0, end)]
        } else {
            p.shape(idx, end, &mut r)
        };
        let l = &p.left;
        r.turns_kept = r.turns_total - idx.users_in(0, l.cut.min(end)).len();
        r.dropped = l.dropped;
        r.summaries_ahead = l.ahead.len();
        r.packet_tokens = l.packet.as_ref().map(|p| p.est);
        r.tokens_sent = shape
            .iter()
            .map(|x| match x {
                Part::Run(a, b) => idx.sum(*a, *b),
                Part::Replace(_, _, est, _) | Part::Packet(_, est, _) => *est,
            })
            .sum();
        r.messages_out = shape
            .iter()
            .map(|x| match x {
                Part::Run(a, b) => b - a,
                _ => 1,
            })
            .sum();
        r.note = note(&r, settings, env);
        (shape, r)
    }
}

/// What a call sends, as `bonsai bill` compares it with the call before: a run of Pi's
/// messages, or a message bonsai makes, known by its bytes' hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentPart {
    Run(usize, usize),
    Made { hash: u64, est: u64 },
}

/// One line on what this call sent and why.
fn note(r: &LiveReport, settings: &LiveSettings, env: &CallEnv) -> String {
    let zone = r.zone.map_or("no zone", |z| z.name());
    if settings.policy == LivePolicy::Off {
        return "policy off: the messages as Pi has them".into();
    }
    let sent = format!(
        "{} of {} tokens sent",
        prune::thousands(r.tokens_sent),
        prune::thousands(r.tokens_full)
    );
    let what = if let Some(s) = &r.step {
        s.notice().trim_start_matches("bonsai: ").to_string()
    } else if let Some(w) = &r.waiting {
        format!("no step: {w}")
    } else if settings.policy == LivePolicy::Zones {
        let marks = settings.marks.within(env.threshold());
        format!(
            "the newest {} of {} sent; the next step over {} tokens of turns",
            r.turns_kept,
            plural(r.turns_total, "turn", "turns"),
            prune::thousands(marks.high)
        )
    } else {
        plural(r.pruned, "old output pruned", "old outputs pruned")
    };
    let distilled = if r.distilled > 0 {
        format!(" ({} distilled)", plural(r.distilled, "long output", "long outputs"))
    } else {
        String::new()
    };
    format!("{zone}: {sent}; {what}{distilled}")
}
