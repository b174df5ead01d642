//! The live context policy: what the model is sent on each call when bonsai runs inside Pi
//! (the Pi package's `context` hook, through `bonsai serve`), what `bonsai context --live`
//! prints at a leaf, and what `bonsai bill` replays. Nothing is written.
//!
//! Providers cache the start of a request: the part equal to an earlier request's start is
//! billed at a tenth to a half of the input price. A policy that changes what it sends near
//! the start on every call makes every call pay for the whole request again. So what bonsai
//! leaves out changes only at planned *steps*:
//! - between two steps, each request is the previous one plus what Pi appended, byte for byte;
//! - a step leaves out several whole turns at once, from a high mark down to a low mark
//!   (tokens of the turns sent), never below a floor of turns;
//! - a step is taken when the cache is cold anyway (the provider's cache lifetime has passed
//!   since the last call), when what it saves over the next calls outweighs writing the
//!   request again, or in red (the whole context near Pi's threshold);
//! - a model with no cache discount slides: it steps down to the low mark on every call.
//!
//! The state between calls is never stored: it is rebuilt from Pi's messages alone
//! ([`state::LiveState`] replays the calls the messages record: every assistant reply is one
//! call whose context was the messages before it). So the package, `bonsai context --live`
//! and `bonsai bill` give the same answer from the same messages.
//!
//! Policies (`bonsai.live.policy`):
//! - `off`: the messages as Pi has them.
//! - `output`: OpenCode's prune of old tool output (or with `bonsai.live.compat:
//!   "pi-context-pruning"` that extension's rules), applied in memory in steps.
//! - `zones` (default): whole turns left out in steps; the newest turn lossless; long output
//!   in the older kept turns distilled at a step (whole lines, the rest named); one hidden
//!   packet stands for the turns left out (the user's words first, within its budget);
//!   compaction and branch summaries are sent as Pi wrote them.
//!
//! Nothing left out is out of reach: the package's `bonsai_recall` tool returns any message
//! of the path the model is not sent now, word for word ([`recall`]).

pub mod bill;
mod packet;
mod policy;
pub mod recall;
pub mod source;
pub mod state;

use crate::edit::prune::{self, Zone};
use crate::load::session::Session;
use crate::view::context;
use serde_json::Value;

pub use packet::{RECALL_TOOL, text as packet_text};
pub use policy::*;
pub use source::{MessageSource, ValueSource};
pub use state::LiveState;

/// The live policy's answer for the call whose context is `messages`, rebuilt from nothing:
/// the calls the messages record are replayed first. `prices_of` gives a model's prices by
/// provider and id (the replies name the model each call went to).
pub fn live_context(
    messages: &[Value],
    env: &CallEnv,
    settings: &LiveSettings,
    prices_of: &dyn Fn(&str, &str) -> Option<Prices>,
) -> LiveAnswer {
    let src = ValueSource::new(messages, prices_of);
    let mut state = LiveState::default();
    state.answer(&src, env, settings)
}

/// Compaction's latch: at most one compaction per pressure episode. An episode begins when
/// the whole context passes where bonsai compacts (T, or red with `compactEarly`) and ends
/// when it falls below again (which a successful compaction brings at the next reply).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Latch {
    /// No compaction for the current pressure (or none needed).
    #[default]
    Idle,
    /// Asked for; its outcome not reported yet.
    InFlight,
    /// This episode's compaction is written.
    Done,
    /// This episode's compaction could not be made, for the reason held: Pi's own threshold
    /// is the fallback until the episode ends.
    Failed(String),
}

impl Latch {
    pub fn name(&self) -> String {
        match self {
            Latch::Idle => "idle".into(),
            Latch::InFlight => "in flight".into(),
            Latch::Done => "done for this episode".into(),
            Latch::Failed(why) => format!("failed for this episode ({why})"),
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

/// At a turn's end: compact now? `whole` is the whole context (see [`LiveReport::whole`]),
/// `None` when unknown (right after a compaction, before the next reply: nothing changes);
/// `zone` its zone with the state's hysteresis.
///
/// Compaction is the lossy step, so bonsai compacts only where Pi alone would: when the
/// whole context passes T. Pi's own figure is what bonsai sent, so without this the whole
/// context would grow past T unseen, and a context passed through (the engine gone, the
/// policy turned off) would overflow the window. `compactEarly` compacts once the zone is
/// red instead (before T). The `off` policy never compacts: Pi does, as it does alone.
pub fn early_compaction(
    latch: &Latch,
    whole: Option<f64>,
    zone: Option<Zone>,
    threshold: u64,
    settings: &LiveSettings,
) -> EarlyCompaction {
    if settings.policy == LivePolicy::Off {
        return EarlyCompaction {
            compact: false,
            latch: latch.clone(),
            zone,
            reason: "policy off: Pi compacts as it does alone".into(),
        };
    }
    let (Some(tokens), Some(zone)) = (whole, zone) else {
        return EarlyCompaction {
            compact: false,
            latch: latch.clone(),
            zone: None,
            reason: "the context's size is unknown until the next reply".into(),
        };
    };
    let pct = 100.0 * tokens / threshold.max(1) as f64;
    let (pressed, why) = if settings.compact_early {
        (
            zone == Zone::Red,
            format!(
                "red: the whole context is {} of T {} ({pct:.0} %)",
                prune::thousands(tokens.round() as u64),
                prune::thousands(threshold),
            ),
        )
    } else {
        (
            tokens > threshold as f64,
            format!(
                "the whole context is {}, past T {} where Pi alone compacts",
                prune::thousands(tokens.round() as u64),
                prune::thousands(threshold),
            ),
        )
    };
    let calm = if settings.compact_early {
        format!("{}: no compaction needed", zone.name())
    } else {
        format!("{pct:.0} % of T: no compaction needed")
    };
    let (compact, latch, reason) = match (latch, pressed) {
        (Latch::Idle, true) => (true, Latch::InFlight, why),
        (Latch::Idle, false) => (false, Latch::Idle, calm),
        (Latch::InFlight, _) => (false, Latch::InFlight, "a compaction is in flight".into()),
        (Latch::Done, true) => (
            false,
            Latch::Done,
            format!("{why}; this episode already had its compaction"),
        ),
        (Latch::Failed(f), true) => (
            false,
            latch.clone(),
            format!("{why}; this episode's compaction could not be made ({f})"),
        ),
        (Latch::Done | Latch::Failed(_), false) => {
            (false, Latch::Idle, format!("{calm}; the pressure episode is over"))
        }
    };
    EarlyCompaction {
        compact,
        latch,
        zone: Some(zone),
        reason,
    }
}

/// The live answer at a leaf of a session file: Pi's messages there as Pi holds them in
/// memory and the policy's answer on them: exactly what the package computes at the
/// `context` event of the request sent when that entry was the newest.
pub struct AtLeaf {
    pub proj: context::Projection,
    /// The projected messages that are not system messages (what the `context` event holds).
    pub refs: Vec<context::ContextMessage>,
    pub values: Vec<Value>,
    pub answer: LiveAnswer,
}

pub fn at_leaf(
    s: &Session,
    leaf: usize,
    env: &CallEnv,
    settings: &LiveSettings,
    prices_of: &dyn Fn(&str, &str) -> Option<Prices>,
) -> AtLeaf {
    let proj = context::project(s, &s.path_to(leaf));
    let refs: Vec<context::ContextMessage> = proj
        .messages()
        .filter(|m| m.role != crate::load::entry::Role::System)
        .cloned()
        .collect();
    let values: Vec<Value> = refs.iter().map(|m| context::materialize(s, m)).collect();
    let answer = live_context(&values, env, settings, prices_of);
    AtLeaf {
        proj,
        refs,
        values,
        answer,
    }
}

#[cfg(test)]
mod tests;
