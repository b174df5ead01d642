//! The live policy's words: its settings, the prices and clock of a call, and what it
//! answers (the pieces sent, the steps taken, the report). The state (`state`), the packet
//! (`packet`) and the bill (`bill`) are built on these.

use crate::edit::prune::{self, PruneSettings, Zone};
use crate::load::models::ModelInfo;
use crate::load::session::Session;
use serde_json::Value;
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

    /// The policy a name gives (`--policy`, `bonsai.live.policy`).
    pub fn parse(name: &str) -> Option<LivePolicy> {
        match name {
            "off" => Some(LivePolicy::Off),
            "output" => Some(LivePolicy::Output { compat: false }),
            "output-compat" | "pi-context-pruning" => Some(LivePolicy::Output { compat: true }),
            "zones" => Some(LivePolicy::Zones),
            _ => None,
        }
    }

    /// The names [`LivePolicy::parse`] takes.
    pub const NAMES: [&'static str; 3] = ["off", "output", "zones"];
}

/// The known name nearest to `wrong` (a typo's fix), when one is near enough.
pub fn nearest_name<'a>(wrong: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .map(|n| (edit_distance(&wrong.to_lowercase(), n), *n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance in characters (the names compared are a few letters long).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Where the zones policy steps: tokens of the turns it sends (Pi's estimate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marks {
    /// A step is considered when the turns sent pass this.
    pub high: u64,
    /// A step leaves out whole old turns until the turns sent fit under this.
    pub low: u64,
}

impl Default for Marks {
    fn default() -> Self {
        Marks {
            high: 16_000,
            low: 6_000,
        }
    }
}

impl Marks {
    /// The marks for a threshold T: at most a quarter and a tenth of T. A window of 200,000
    /// keeps the set marks; a small one sends a like share of itself (a 64k window: 11,900
    /// and 4,760), so its requests are not half of what Pi alone sends (BENCHMARKS.md).
    pub fn within(self, threshold: u64) -> Marks {
        let high = self.high.min(threshold / 4).max(1);
        let low = self.low.min(threshold / 10).min(high.saturating_sub(1)).max(1);
        Marks { high, low }
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
    pub marks: Marks,
    /// Complete turns always sent before the newest one, whatever the zone.
    pub floor_turns: usize,
    /// How long the provider keeps a request's start cached, in milliseconds.
    pub cache_ttl_ms: f64,
    /// The packet's budget in Pi's estimated tokens, all of it (what does not fit is counted
    /// and left to `bonsai_recall`).
    pub packet_tokens: u64,
    /// The `bonsai_recall` tool: registered by the package, named in the packet.
    pub recall: bool,
    /// The most a `bonsai_recall` answer holds, in Pi's estimated tokens.
    pub recall_tokens: u64,
    /// A compaction's summary gets what its audit found lost given back, within `mend_tokens`.
    pub mend: bool,
    pub mend_tokens: u64,
    /// The gauge's zone bounds as fractions of T.
    pub zones: (f64, f64),
    /// The output policy's numbers (Pi's `contextPruning` settings).
    pub prune: PruneSettings,
    /// Compact once per pressure episode when the zone reaches red, before T. Off (the
    /// default), bonsai compacts where Pi alone would: when the whole context passes T.
    pub compact_early: bool,
    pub summarizer: Summarizer,
    /// Settings that could not be used, each with what is done instead.
    pub problems: Vec<SettingProblem>,
}

/// Anthropic's cache lifetime unless the request asks for more; OpenAI keeps 5 to 10 minutes.
pub const DEFAULT_CACHE_TTL_MS: f64 = 300_000.0;

impl Default for LiveSettings {
    fn default() -> Self {
        LiveSettings {
            policy: LivePolicy::Zones,
            marks: Marks::default(),
            floor_turns: 2,
            cache_ttl_ms: DEFAULT_CACHE_TTL_MS,
            packet_tokens: 1_000,
            recall: true,
            recall_tokens: 2_000,
            mend: true,
            mend_tokens: 800,
            zones: (0.7, 0.9),
            prune: PruneSettings::default(),
            compact_early: false,
            summarizer: Summarizer::Pi,
            problems: vec![],
        }
    }
}

impl LiveSettings {
    /// The same settings under another policy (`bonsai bill --policy`).
    pub fn with_policy(&self, policy: LivePolicy) -> LiveSettings {
        LiveSettings { policy, ..self.clone() }
    }
}

/// A model's prices in USD per million tokens, as Pi's model registry has them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Prices {
    pub fn of_model(m: &ModelInfo) -> Prices {
        Prices {
            input: m.cost[0],
            output: m.cost[1],
            cache_read: m.cost[2],
            cache_write: m.cost[3],
        }
    }

    /// No price is known (a local or free model).
    pub fn unpriced(&self) -> bool {
        self.input <= 0.0 && self.output <= 0.0 && self.cache_read <= 0.0 && self.cache_write <= 0.0
    }

    /// Whether a request's start equal to an earlier one's costs less than new input. An
    /// unpriced model counts as caching: a local server reuses its cache the same way, and
    /// time is what it saves.
    pub fn caches(&self) -> bool {
        self.input <= 0.0 || (self.cache_read > 0.0 && self.cache_read < self.input)
    }

    /// The price of an input token the cache did not hold (written to the cache where the
    /// provider charges for that).
    pub fn uncached(&self) -> f64 {
        if self.cache_write > 0.0 {
            self.cache_write
        } else {
            self.input
        }
    }

    /// A cached and an uncached input token against an input token, for comparing costs:
    /// Anthropic's ratios (0.1 and 1.25) where no price is known.
    pub fn weights(&self) -> (f64, f64) {
        if self.input <= 0.0 {
            (0.1, 1.25)
        } else if self.caches() {
            (self.cache_read / self.input, self.uncached() / self.input)
        } else {
            (1.0, self.uncached() / self.input)
        }
    }

    /// The cost in USD of a call: `cached` input tokens read from the cache, `uncached`
    /// input tokens, `output` tokens.
    pub fn cost(&self, cached: f64, uncached: f64, output: f64) -> f64 {
        let read = if self.caches() && self.cache_read > 0.0 {
            self.cache_read
        } else {
            self.input
        };
        (cached * read + uncached * self.uncached() + output * self.output) / 1e6
    }
}

/// What a call is asked with, besides Pi's messages.
#[derive(Debug, Clone, Copy)]
pub struct CallEnv {
    pub context_window: u64,
    pub reserve_tokens: u64,
    /// The prices of the model this call goes to (`None`: unknown, taken as caching).
    pub prices: Option<Prices>,
}

impl CallEnv {
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

/// Why a step was taken now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepReason {
    /// The provider's cache had expired: the request is written whole anyway.
    CacheCold,
    /// Leaving out now saves more over the next calls than writing the request again costs.
    Pays,
    /// What is sent crowds the window (the turns sent past half of T for `zones`, the
    /// whole context in red for `output`): a step due is taken without waiting for it to pay.
    Crowded,
    /// The model has no cache discount: every call is billed whole, so less is cheaper.
    NoDiscount,
}

impl StepReason {
    pub fn name(self) -> &'static str {
        match self {
            StepReason::CacheCold => "cache cold",
            StepReason::Pays => "it pays",
            StepReason::Crowded => "crowded",
            StepReason::NoDiscount => "no cache discount",
        }
    }
}

/// A step: what it left out and what it changed.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// The number of messages in the context of the call that took it.
    pub at: usize,
    pub reason: StepReason,
    /// Turns left out by this step.
    pub turns: usize,
    /// Tool outputs pruned by this step (the output policy).
    pub pruned: usize,
    /// Pi's estimate of what was sent before and after the step (messages only).
    pub before: u64,
    pub after: u64,
    /// Minutes since the last call, when the cache was cold.
    pub idle_minutes: Option<f64>,
}

impl StepRecord {
    /// What the package tells the user.
    pub fn notice(&self) -> String {
        let what = if self.pruned > 0 {
            plural(self.pruned, "old tool output", "old tool outputs") + " pruned"
        } else {
            plural(self.turns, "earlier turn", "earlier turns") + " left out"
        };
        let why = match (self.reason, self.idle_minutes) {
            (StepReason::CacheCold, Some(m)) => format!("cache cold: {} since the last call", minutes(m)),
            (r, _) => r.name().to_string(),
        };
        format!(
            "bonsai: {what}, {} → {} tokens sent ({why})",
            prune::thousands(self.before),
            prune::thousands(self.after)
        )
    }
}

fn minutes(m: f64) -> String {
    if m >= 90.0 {
        format!("{:.1} h", m / 60.0)
    } else {
        format!("{:.0} min", m.max(1.0))
    }
}

/// `n` with the singular or plural noun.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveReport {
    pub policy: String,
    pub zone: Option<Zone>,
    /// T = window − reserveTokens.
    pub threshold: u64,
    /// The whole context: what Pi would send without bonsai (Pi's figure for the last reply,
    /// with what bonsai left out of that call added back, and an estimate of what came
    /// after). The zone is read from it.
    pub whole: f64,
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
    /// Compaction and branch summaries of the left-out part, sent as Pi wrote them ahead of
    /// the packet.
    pub summaries_ahead: usize,
    /// Tool results left out because their call was not kept (never expected; a safety net).
    pub orphans_dropped: usize,
    /// The packet's estimated tokens, when one was added.
    pub packet_tokens: Option<u64>,
    /// The step this call took.
    pub step: Option<StepRecord>,
    /// Steps taken in this context so far (this call's included).
    pub steps: usize,
    /// Why no step was taken although the turns sent are over the high mark.
    pub waiting: Option<String>,
    /// The calls this context records (this one included).
    pub calls: usize,
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
