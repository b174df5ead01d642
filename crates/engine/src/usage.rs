//! What a session's model calls used and cost, read from the `usage` Pi records: on every
//! assistant reply (the calls `@ccusage/pi` counts), and, since 0.87.1, on a compaction's and a
//! branch summary's own summary call and on `usage` entries (the cache warmer's calls).
//!
//! Pure: bytes in, calls out. Grouping by day needs a time zone, which comes in as a value.

use crate::load::models::Registry;
use jiff::tz::TimeZone;
use memchr::memmem;
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Which call a usage belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub enum CallKind {
    /// An assistant reply: the agent's own calls (what ccusage counts).
    Reply,
    /// The summary call behind a compaction entry.
    Compaction,
    /// The summary call behind a branch summary entry.
    BranchSummary,
    /// A `usage` entry, by its `kind` (Pi's cache warmer writes `cache_warm`).
    Other(String),
}

impl CallKind {
    pub fn name(&self) -> &str {
        match self {
            CallKind::Reply => "reply",
            CallKind::Compaction => "compaction",
            CallKind::BranchSummary => "branch summary",
            CallKind::Other(k) => k,
        }
    }
}

/// Token counts, summed as JavaScript sums them (doubles: exact for whole numbers below 2^53).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tokens {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Tokens {
    pub fn total(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
    fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
    }
}

/// One model call as the session recorded it (kept in bonsai's usage cache as it is).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Call {
    pub kind: CallKind,
    /// The entry's id and timestamp (a fork or clone copies both: what tells a copy).
    pub id: String,
    pub timestamp: String,
    /// When, in ms since the epoch: the entry's timestamp, else the message's own.
    pub at_ms: Option<i64>,
    /// `provider/model`, empty when the entry does not say (compaction and branch summaries).
    pub model: String,
    pub tokens: Tokens,
    /// Pi's `totalTokens` (else the four parts added): with the timestamp, ccusage's identity
    /// of a call.
    pub total_tokens: f64,
    /// `usage.cost.total` as Pi recorded it; `None` when the entry has none.
    pub cost: Option<f64>,
    /// Pi's cost of the input and of the cache reads, when recorded: the prices the call was
    /// charged at, for what the cache saved on a model bonsai's table does not know.
    pub cost_input_read: Option<(f64, f64)>,
    /// Its usage held a negative or not finite figure, counted as 0 (said once by the
    /// commands that add calls up).
    #[serde(default)]
    pub odd: bool,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    timestamp: Option<serde_json::Value>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    usage: Option<UsageJson>,
    #[serde(rename = "kind", borrow)]
    usage_kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    provider: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    provider: Option<Cow<'a, str>>,
    model: Option<serde_json::Value>,
    usage: Option<UsageJson>,
    timestamp: Option<serde_json::Value>,
}

/// Pi's `Usage`. Each field is kept as JSON so that a wrong type can be told from a missing one.
#[derive(Deserialize)]
struct UsageJson {
    input: Option<serde_json::Value>,
    output: Option<serde_json::Value>,
    #[serde(rename = "cacheRead")]
    cache_read: Option<serde_json::Value>,
    #[serde(rename = "cacheWrite")]
    cache_write: Option<serde_json::Value>,
    #[serde(rename = "totalTokens")]
    total_tokens: Option<serde_json::Value>,
    cost: Option<serde_json::Value>,
}

/// Whether `t` is an ISO timestamp as ccusage's schema takes it
/// (`YYYY-MM-DDTHH:MM:SS[.mmm](Z|±HH:MM)`).
fn iso_like(t: &str) -> bool {
    let b = t.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10) && b[10] == b'T')
        || !(digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':' && digits(17..19))
    {
        return false;
    }
    let mut rest = &b[19..];
    if rest.first() == Some(&b'.') {
        if !rest.get(1..4).is_some_and(|s| s.iter().all(u8::is_ascii_digit)) {
            return false;
        }
        rest = &rest[4..];
    }
    rest == b"Z"
        || (rest.len() == 6
            && matches!(rest[0], b'+' | b'-')
            && rest[1..3].iter().all(u8::is_ascii_digit)
            && rest[3] == b':'
            && rest[4..6].iter().all(u8::is_ascii_digit))
}

/// A field that must be a number when present: `Err` when it is something else.
fn number(v: &Option<serde_json::Value>) -> Result<Option<f64>, ()> {
    match v {
        None => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or(()),
    }
}

/// The call recorded by `u`, or `None` when its counts are not numbers (ccusage skips those too).
type Recorded = (Tokens, f64, Option<f64>, Option<(f64, f64)>);

fn tokens_of(u: &UsageJson) -> Option<Recorded> {
    tokens_of_marked(u).map(|(r, _)| r)
}

/// [`tokens_of`], and whether a figure was negative or not finite: such a figure counts as 0
/// (a cost as not recorded), so one hostile line cannot make a sum negative or NaN.
fn tokens_of_marked(u: &UsageJson) -> Option<(Recorded, bool)> {
    let mut odd = false;
    let mut sane = |x: f64| -> f64 {
        if x.is_finite() && x >= 0.0 {
            x
        } else {
            odd = true;
            0.0
        }
    };
    let input = sane(number(&u.input).ok()??);
    let output = sane(number(&u.output).ok()??);
    let cache_read = sane(number(&u.cache_read).ok()?.unwrap_or(0.0));
    let cache_write = sane(number(&u.cache_write).ok()?.unwrap_or(0.0));
    let total = number(&u.total_tokens).ok()?.map(&mut sane);
    let cost = match &u.cost {
        None => None,
        Some(c) if c.is_object() => match c.get("total") {
            None => None,
            Some(t) => Some(t.as_f64()?).filter(|x| {
                let ok = x.is_finite() && *x >= 0.0;
                odd |= !ok;
                ok
            }),
        },
        Some(_) => return None,
    };
    let part = |k: &str| {
        u.cost
            .as_ref()
            .and_then(|c| c.get(k))
            .and_then(|v| v.as_f64())
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    let parts = part("input").zip(part("cacheRead"));
    let tokens = Tokens {
        input,
        output,
        cache_read,
        cache_write,
    };
    Some(((tokens, total.unwrap_or(tokens.total()), cost, parts), odd))
}

fn ms_of(entry_ts: Option<&str>, message_ts: Option<&serde_json::Value>) -> Option<i64> {
    entry_ts
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_millisecond())
        .or_else(|| message_ts.and_then(|v| v.as_f64()).map(|ms| ms as i64))
}

/// The call one line records, if any.
fn call_of(line: &[u8]) -> Option<Call> {
    let l: Line = serde_json::from_slice(line).ok()?;
    let timestamp = match &l.timestamp {
        Some(serde_json::Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    // What the line is, the usage it records, its model, and the message's own time.
    let (kind, usage, model, message_ts) = match l.kind.as_deref() {
        None | Some("message") => {
            let m = l.message?;
            // As ccusage: a reply counts when its timestamp is an ISO time and its model, when
            // present, a string.
            if m.role.as_deref() != Some("assistant") || !iso_like(&timestamp) {
                return None;
            }
            let model = match (&m.model, m.provider.as_deref()) {
                (None, _) => String::new(),
                (Some(serde_json::Value::String(id)), Some(p)) => format!("{p}/{id}"),
                (Some(serde_json::Value::String(id)), None) => id.clone(),
                (Some(_), _) => return None,
            };
            (CallKind::Reply, m.usage?, model, m.timestamp)
        }
        Some(k @ ("compaction" | "branch_summary" | "usage")) => {
            let kind = match k {
                "compaction" => CallKind::Compaction,
                "branch_summary" => CallKind::BranchSummary,
                _ => CallKind::Other(l.usage_kind.as_deref().unwrap_or("usage").to_string()),
            };
            let model = match (l.provider.as_deref(), l.model.as_deref()) {
                (Some(p), Some(m)) => format!("{p}/{m}"),
                _ => String::new(),
            };
            (kind, l.usage?, model, None)
        }
        _ => return None,
    };
    let ((tokens, total_tokens, cost, cost_input_read), odd) = tokens_of_marked(&usage)?;
    Some(Call {
        kind,
        at_ms: ms_of(Some(&timestamp), message_ts.as_ref()),
        id: l.id.as_deref().unwrap_or_default().to_string(),
        timestamp,
        model,
        tokens,
        total_tokens,
        cost,
        cost_input_read,
        odd,
    })
}

/// Every call recorded in `body` (whole JSONL lines), in file order. Only the lines holding
/// `"usage"` are decoded: a session's tool output, the bulk of its bytes, is only searched.
pub fn calls(body: &[u8]) -> Vec<Call> {
    let mut out = Vec::new();
    let mut next_line = 0;
    for at in memmem::find_iter(body, b"\"usage\"") {
        if at < next_line {
            continue;
        }
        let start = memchr::memrchr(b'\n', &body[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &body[at..]).map_or(body.len(), |i| at + i);
        next_line = end + 1;
        let line = body[start..end].trim_ascii();
        if let Some(c) = call_of(line) {
            out.push(c);
        }
    }
    out
}

/// What a session's recorded calls add up to, for a listing ([`sums`]): the agent's replies'
/// tokens, recorded cost, calls, and calls without a recorded cost (not in `cost`); then the
/// summary calls and the copies, each apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sums {
    pub tokens: f64,
    pub cost: f64,
    pub calls: u64,
    pub uncosted: u64,
    /// Compaction, branch summary and other recorded calls: `usage`'s side calls.
    pub summaries: SideSums,
    /// Calls a fork or clone copied from its source: `usage`'s copies left out.
    pub copies: SideSums,
}

/// Calls counted apart from the replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SideSums {
    pub calls: u64,
    pub tokens: f64,
    /// As recorded (a call without a recorded cost adds nothing).
    pub cost: f64,
}

impl SideSums {
    fn add(&mut self, tokens: &Tokens, cost: Option<f64>) {
        self.calls += 1;
        self.tokens += tokens.total();
        self.cost += cost.unwrap_or(0.0);
    }
    fn add_sums(&mut self, o: &SideSums) {
        self.calls += o.calls;
        self.tokens += o.tokens;
        self.cost += o.cost;
    }
}

impl Sums {
    pub fn add(&mut self, o: &Sums) {
        self.tokens += o.tokens;
        self.cost += o.cost;
        self.calls += o.calls;
        self.uncosted += o.uncosted;
        self.summaries.add_sums(&o.summaries);
        self.copies.add_sums(&o.copies);
    }
}

/// [`calls`] added up as `bonsai usage` counts them, for one file: the agent's replies, the
/// summary calls apart, and the copies apart.
/// - A copy is a call a fork or clone copied from its source. In a session forked at
///   `forked_at` (its header's time, when it names a parent session), a call older than that
///   is one. `usage` counts it in the oldest file that holds it, the source.
/// - Each line holding `"usage"` is read by its head (type, time, role: the keys Pi writes
///   first) and its last usage object, not decoded whole. Decoding whole lines made a first
///   listing of 1,000 sessions 66 % slower (BENCHMARKS.md). A line whose head says less is
///   decoded whole, as [`calls`] does.
pub fn sums(body: &[u8], forked_at: Option<&str>) -> Sums {
    let mut s = Sums::default();
    let mut next_line = 0;
    let usage_key = memmem::FinderRev::new(b"\"usage\":{");
    for at in memmem::find_iter(body, b"\"usage\"") {
        if at < next_line {
            continue;
        }
        let start = memchr::memrchr(b'\n', &body[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &body[at..]).map_or(body.len(), |i| at + i);
        next_line = end + 1;
        let line = body[start..end].trim_ascii();
        let (kind, timestamp, tokens, cost) = match quick_call(line, &usage_key) {
            Some(q) => q,
            None => match call_of(line) {
                Some(c) => (c.kind, c.timestamp, c.tokens, c.cost),
                None => continue,
            },
        };
        if forked_at.is_some_and(|t| !timestamp.is_empty() && timestamp.as_str() < t) {
            s.copies.add(&tokens, cost);
        } else if kind != CallKind::Reply {
            s.summaries.add(&tokens, cost);
        } else {
            s.tokens += tokens.total();
            s.calls += 1;
            match cost {
                Some(x) => s.cost += x,
                None => s.uncosted += 1,
            }
        }
    }
    s
}

/// The string value of `key` (`"key":"`) in `head`, when it holds no escape.
fn head_str<'a>(head: &'a [u8], key: &[u8]) -> Option<&'a str> {
    let from = memmem::find(head, key)? + key.len();
    let len = memchr::memchr2(b'"', b'\\', &head[from..])?;
    (head[from + len] == b'"').then(|| std::str::from_utf8(&head[from..from + len]).ok())?
}

/// A line as Pi writes it: its kind, time and last usage object read without decoding the
/// rest. `None`: a line to decode whole (another shape, or not a call at all).
fn quick_call(line: &[u8], usage_key: &memmem::FinderRev) -> Option<(CallKind, String, Tokens, Option<f64>)> {
    const HEAD: usize = 512;
    let head = &line[..line.len().min(HEAD)];
    if !head.starts_with(b"{\"type\":\"") {
        return None;
    }
    let kind = match head_str(head, b"{\"type\":\"")? {
        "message" => {
            // The role comes right after `"message":{`; a reply's usage after its content.
            memmem::find(head, b"\"message\":{\"role\":\"assistant\"")?;
            CallKind::Reply
        }
        "compaction" => CallKind::Compaction,
        "branch_summary" => CallKind::BranchSummary,
        _ => return None,
    };
    let timestamp = head_str(head, b"\"timestamp\":\"")?;
    if kind == CallKind::Reply && !iso_like(timestamp) {
        return None;
    }
    let at = usage_key.rfind(line)?;
    if at > 0 && line[at - 1] == b'\\' {
        return None;
    }
    let from = at + b"\"usage\":".len();
    let mut it = serde_json::Deserializer::from_slice(&line[from..]).into_iter::<UsageJson>();
    let u = it.next()?.ok()?;
    let (tokens, _, cost, _) = tokens_of(&u)?;
    Some((kind, timestamp.to_string(), tokens, cost))
}

/// What a call cost: as Pi recorded it, else from the model's prices (estimated), else unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cost {
    Recorded(f64),
    Estimated(f64),
    Unknown,
}

/// `call`'s cost. Pi records a cost on every call it makes; a call without one (another tool's
/// file, a hand-made entry) is priced from the model table, as `bonsai compare` prices its own.
pub fn cost_of(call: &Call, models: &Registry) -> Cost {
    cost_at(call, price(&call.model, models))
}

/// [`cost_of`] with the model's prices already looked up.
fn cost_at(call: &Call, price: Option<[f64; 4]>) -> Cost {
    if let Some(c) = call.cost {
        return Cost::Recorded(c);
    }
    match price {
        Some(p) => Cost::Estimated(
            (call.tokens.input * p[0]
                + call.tokens.output * p[1]
                + call.tokens.cache_read * p[2]
                + call.tokens.cache_write * p[3])
                / 1e6,
        ),
        None => Cost::Unknown,
    }
}

/// The model's prices per million tokens (input, output, cache read, cache write).
pub fn price(model: &str, models: &Registry) -> Option<[f64; 4]> {
    let (p, m) = model.split_once('/')?;
    models.find(p, m).map(|m| m.cost)
}

/// What the call's cache reads would have cost as plain input, minus what they cost: at the
/// table's prices, else at the prices its recorded cost implies (input cost / input tokens).
pub fn cache_saved(call: &Call, models: &Registry) -> f64 {
    cache_saved_at(call, price(&call.model, models))
}

fn cache_saved_at(call: &Call, price: Option<[f64; 4]>) -> f64 {
    let read = call.tokens.cache_read;
    if read <= 0.0 {
        return 0.0;
    }
    if let Some(p) = price {
        return read * (p[0] - p[2]) / 1e6;
    }
    match call.cost_input_read {
        Some((ci, cr)) if call.tokens.input > 0.0 => read * ci / call.tokens.input - cr,
        _ => 0.0,
    }
}

/// A row of a usage report: what a group of calls used and cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub tokens: Tokens,
    /// Recorded and estimated cost together.
    pub cost: f64,
    /// The part of `cost` estimated from the model table.
    pub estimated: f64,
    pub calls: u64,
    /// Calls whose cost is unknown (no recorded cost, a model not in the table).
    pub unpriced: u64,
    /// What the cache reads would have cost as plain input, minus what they cost (at the
    /// model's prices; models not in the table are left out).
    pub cache_saved: f64,
    /// The newest call (ms).
    pub last_ms: Option<i64>,
}

impl Totals {
    pub fn add(&mut self, call: &Call, models: &Registry) {
        self.add_at(call, price(&call.model, models));
    }
    /// [`Totals::add`] with the call's model's prices already looked up (a report looks each
    /// model up once: the table has hundreds).
    pub fn add_at(&mut self, call: &Call, price: Option<[f64; 4]>) {
        self.tokens.add(&call.tokens);
        self.calls += 1;
        match cost_at(call, price) {
            Cost::Recorded(c) => self.cost += c,
            Cost::Estimated(c) => {
                self.cost += c;
                self.estimated += c;
            }
            Cost::Unknown => self.unpriced += 1,
        }
        self.cache_saved += cache_saved_at(call, price);
        self.last_ms = self.last_ms.max(call.at_ms);
    }
    pub fn merge(&mut self, o: &Totals) {
        self.tokens.add(&o.tokens);
        self.cost += o.cost;
        self.estimated += o.estimated;
        self.calls += o.calls;
        self.unpriced += o.unpriced;
        self.cache_saved += o.cache_saved;
        self.last_ms = self.last_ms.max(o.last_ms);
    }
    /// The share of the prompt read from the cache: cache reads over all input tokens.
    pub fn cache_read_share(&self) -> f64 {
        let prompt = self.tokens.input + self.tokens.cache_read + self.tokens.cache_write;
        if prompt > 0.0 {
            self.tokens.cache_read / prompt
        } else {
            0.0
        }
    }
}

/// How a report groups calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Day,
    Month,
    Session,
    Project,
    Model,
}

/// The calendar day of `ms` in `tz` (`YYYY-MM-DD`), as `toLocaleDateString("en-CA", {timeZone})`.
pub fn day(ms: i64, tz: &TimeZone) -> Option<String> {
    let t = jiff::Timestamp::from_millisecond(ms).ok()?;
    Some(t.to_zoned(tz.clone()).date().to_string())
}

/// A date bound as the user typed it (`YYYY-MM-DD` or `YYYYMMDD`), as a comparable `YYYYMMDD`.
pub fn date_key(s: &str) -> Option<String> {
    let k: String = s.chars().filter(|c| *c != '-').collect();
    (k.len() == 8 && k.bytes().all(|b| b.is_ascii_digit())).then_some(k)
}

/// One session's calls, with what a report needs to name and group them.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SessionCalls {
    pub path: String,
    /// The header's cwd (else the folder's name): the project.
    pub project: String,
    pub name: Option<String>,
    /// The header's timestamp: of two files holding one call, the older made it.
    pub created: String,
    pub calls: Vec<Call>,
}

/// A usage report: rows of agent replies (what ccusage counts), the summary and other calls
/// on their own, and the copies left out.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Rows by key, with each model's part when asked.
    pub rows: BTreeMap<String, (Totals, BTreeMap<String, Totals>)>,
    /// Session rows' names and projects (key: the session file).
    pub sessions: BTreeMap<String, (Option<String>, String)>,
    pub total: Totals,
    /// Compaction and branch summary calls, and other recorded calls, by kind.
    pub side_calls: BTreeMap<String, Totals>,
    /// Calls found again in a fork or clone (the same entry id, time and tokens) and left out.
    pub copies: Totals,
    /// Calls without a usable time (left out of day and month rows, counted in the total).
    pub undated: u64,
}

/// Options of a report.
#[derive(Debug, Clone)]
pub struct Period {
    pub since: Option<String>,
    pub until: Option<String>,
    pub tz: TimeZone,
}

/// The report over `sessions`. A call present in several files (a fork or clone copies its
/// source's entries, ids and times included) is counted once, in the oldest session.
pub fn report<'a>(
    sessions: impl IntoIterator<Item = &'a SessionCalls>,
    by: By,
    period: &Period,
    models: &Registry,
) -> Report {
    let mut order: Vec<&SessionCalls> = sessions.into_iter().collect();
    order.sort_by(|a, b| a.created.cmp(&b.created).then(a.path.cmp(&b.path)));
    let mut seen: rustc_hash::FxHashSet<(&str, &str, u64, u64, u64)> = Default::default();
    let mut r = Report::default();
    // Each model's prices looked up once, each quarter hour's day once (every zone's offset
    // is a whole number of quarter hours, so a quarter hour lies in one day).
    let mut prices: rustc_hash::FxHashMap<&str, Option<[f64; 4]>> = Default::default();
    let mut days: rustc_hash::FxHashMap<i64, Option<String>> = Default::default();
    let dashed = |k: &Option<String>| {
        k.as_ref()
            .filter(|k| k.len() == 8)
            .map(|k| format!("{}-{}-{}", &k[..4], &k[4..6], &k[6..]))
    };
    let (since, until) = (dashed(&period.since), dashed(&period.until));
    for s in order {
        for c in &s.calls {
            let when = c.at_ms.and_then(|ms| {
                days.entry(ms.div_euclid(900_000))
                    .or_insert_with(|| day(ms, &period.tz))
                    .clone()
            });
            if let Some(d) = &when {
                if since.as_deref().is_some_and(|s| d.as_str() < s) || until.as_deref().is_some_and(|u| d.as_str() > u)
                {
                    continue;
                }
            } else if period.since.is_some() || period.until.is_some() {
                continue;
            }
            let price = *prices
                .entry(c.model.as_str())
                .or_insert_with(|| price(&c.model, models));
            let identity = (
                c.id.as_str(),
                c.timestamp.as_str(),
                c.total_tokens.to_bits(),
                c.tokens.input.to_bits(),
                c.tokens.output.to_bits(),
            );
            if !c.id.is_empty() && !seen.insert(identity) {
                r.copies.add_at(c, price);
                continue;
            }
            if c.kind != CallKind::Reply {
                r.side_calls
                    .entry(c.kind.name().to_string())
                    .or_default()
                    .add_at(c, price);
                continue;
            }
            r.total.add_at(c, price);
            let key = match by {
                By::Day => when.clone(),
                By::Month => when.as_ref().map(|d| d[..7].to_string()),
                By::Session => Some(s.path.clone()),
                By::Project => Some(s.project.clone()),
                By::Model => Some(if c.model.is_empty() {
                    "unknown".into()
                } else {
                    c.model.clone()
                }),
            };
            let Some(key) = key else {
                r.undated += 1;
                continue;
            };
            if by == By::Session {
                r.sessions
                    .entry(key.clone())
                    .or_insert_with(|| (s.name.clone(), s.project.clone()));
            }
            let row = r.rows.entry(key).or_default();
            row.0.add_at(c, price);
            let model = if c.model.is_empty() {
                "unknown"
            } else {
                c.model.as_str()
            };
            row.1.entry(model.to_string()).or_default().add_at(c, price);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(id: &str, ts: &str, input: u64, cost: Option<f64>) -> String {
        let cost = cost.map(|c| format!(",\"cost\":{{\"total\":{c}}}")).unwrap_or_default();
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":null,\"timestamp\":\"{ts}\",\"message\":{{\"role\":\"assistant\",\"content\":[],\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":{input},\"output\":10,\"cacheRead\":100,\"cacheWrite\":0,\"totalTokens\":{}{cost}}}}}}}\n",
            input + 110
        )
    }

    #[test]
    fn replies_summaries_and_usage_entries_are_told_apart() {
        let body = [
            reply("a", "2026-11-20T23:30:00.000Z", 1000, Some(0.5)),
            "{\"type\":\"compaction\",\"id\":\"c\",\"timestamp\":\"2026-11-20T23:40:00.000Z\",\"summary\":\"s\",\"usage\":{\"input\":5,\"output\":6,\"cost\":{\"total\":0.01}}}\n".into(),
            "{\"type\":\"usage\",\"id\":\"u\",\"timestamp\":\"2026-11-20T23:41:00.000Z\",\"kind\":\"cache_warm\",\"provider\":\"p\",\"model\":\"m\",\"usage\":{\"input\":0,\"output\":1}}\n".into(),
            // A user message that mentions "usage" is not a call.
            "{\"type\":\"message\",\"id\":\"x\",\"timestamp\":\"2026-11-20T23:42:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"\\\"usage\\\": 3\"}}\n".into(),
            // Counts that are not numbers: skipped, as ccusage skips them.
            "{\"type\":\"message\",\"id\":\"y\",\"timestamp\":\"2026-11-20T23:43:00.000Z\",\"message\":{\"role\":\"assistant\",\"usage\":{\"input\":\"1\",\"output\":2}}}\n".into(),
        ]
        .concat();
        let c = calls(body.as_bytes());
        let kinds: Vec<&str> = c.iter().map(|c| c.kind.name()).collect();
        assert_eq!(kinds, ["reply", "compaction", "cache_warm"]);
        assert_eq!(c[0].model, "anthropic/claude-sonnet-4-5");
        assert_eq!(c[0].total_tokens, 1110.0);
        assert_eq!(c[1].cost, Some(0.01));
        assert_eq!(c[2].cost, None);
    }

    #[test]
    fn a_copied_call_counts_once_in_the_older_session_and_days_follow_the_zone() {
        let models = Registry::builtin_only();
        let a = reply("a", "2026-11-20T23:30:00.000Z", 1000, Some(0.5));
        let b = reply("b", "2026-11-21T08:00:00.000Z", 2000, None);
        let src = SessionCalls {
            path: "src.jsonl".into(),
            project: "/p".into(),
            name: None,
            created: "2026-11-20T00:00:00.000Z".into(),
            calls: calls(a.as_bytes()),
        };
        let fork = SessionCalls {
            path: "fork.jsonl".into(),
            project: "/p".into(),
            name: None,
            created: "2026-11-21T00:00:00.000Z".into(),
            calls: calls(format!("{a}{b}").as_bytes()),
        };
        let utc = Period {
            since: None,
            until: None,
            tz: TimeZone::UTC,
        };
        let r = report(&[fork.clone(), src.clone()], By::Session, &utc, &models);
        assert_eq!(r.total.calls, 2);
        assert_eq!(r.copies.calls, 1);
        assert_eq!(r.rows["src.jsonl"].0.calls, 1);
        assert_eq!(r.rows["fork.jsonl"].0.calls, 1);
        // The second call has no recorded cost: priced from Pi's table, marked as estimated.
        let est = r.rows["fork.jsonl"].0.estimated;
        assert!(est > 0.0 && (r.rows["fork.jsonl"].0.cost - est).abs() < 1e-12);
        let days = report(&[src.clone(), fork.clone()], By::Day, &utc, &models);
        assert_eq!(days.rows.keys().collect::<Vec<_>>(), ["2026-11-20", "2026-11-21"]);
        // 23:30 UTC is the next day an hour east (the store looks zones up by name).
        let berlin = Period {
            tz: TimeZone::fixed(jiff::tz::offset(1)),
            ..utc
        };
        let days = report(&[src, fork], By::Day, &berlin, &models);
        assert_eq!(days.rows.keys().collect::<Vec<_>>(), ["2026-11-21"]);
        assert_eq!(days.rows["2026-11-21"].0.calls, 2);
    }

    /// The listing's quick sums are the calls' sums on Pi's files.
    #[test]
    fn quick_sums_agree_with_the_calls() {
        // (The repository's Pi-written sessions, built in: the engine reads no file.)
        for (f, body) in [
            ("tour", &include_bytes!("../../../fixtures/pi-0.87.1/tour.jsonl")[..]),
            ("long", &include_bytes!("../../../fixtures/pi-0.87.1/long.jsonl")[..]),
            (
                "changed-in-1.5.2",
                &include_bytes!("../../../fixtures/pi-1.5.2/changed-in-1.5.2.jsonl")[..],
            ),
        ] {
            let all = calls(body);
            let c: Vec<&Call> = all.iter().filter(|c| c.kind == CallKind::Reply).collect();
            let s = sums(body, None);
            assert_eq!(s.calls, c.len() as u64, "{f}");
            assert_eq!(s.tokens, c.iter().map(|c| c.tokens.total()).sum::<f64>(), "{f}");
            assert!(
                (s.cost - c.iter().filter_map(|c| c.cost).sum::<f64>()).abs() < 1e-12,
                "{f}"
            );
            assert_eq!(s.uncosted, c.iter().filter(|c| c.cost.is_none()).count() as u64, "{f}");
            assert_eq!(s.summaries.calls + s.calls, all.len() as u64, "{f}");
            assert_eq!(s.copies.calls, 0, "{f}");
            // Every reply and summary call Pi wrote is read by its head, not decoded whole
            // (a `usage` entry, rare, is).
            let key = memmem::FinderRev::new(b"\"usage\":{");
            for line in body.split(|b| *b == b'\n') {
                if let Some(c) = call_of(line.trim_ascii()).filter(|c| !matches!(c.kind, CallKind::Other(_))) {
                    let q = quick_call(line.trim_ascii(), &key).unwrap_or_else(|| panic!("{f}: {c:?}"));
                    assert_eq!(
                        (q.0, q.1, q.2, q.3),
                        (c.kind.clone(), c.timestamp.clone(), c.tokens, c.cost),
                        "{f}"
                    );
                }
            }
            // Forked after every call: all are copies.
            let forked = sums(body, Some("9999"));
            assert_eq!(forked.copies.calls, all.len() as u64, "{f}");
            assert_eq!(forked.calls, 0, "{f}");
        }
        // An escaped "usage" inside a message's text is not a call.
        assert_eq!(
            sums(
                br#"{"message":{"content":"\"usage\":{\"input\":1,\"output\":2}"}}"#,
                None
            )
            .calls,
            0
        );
    }

    #[test]
    fn iso_times_as_ccusage_takes_them() {
        assert!(iso_like("2026-11-20T09:00:24.010Z"));
        assert!(iso_like("2026-11-20T09:00:24Z"));
        assert!(iso_like("2026-11-20T09:00:24.010+05:30"));
        assert!(!iso_like("2026-11-20T09:00:24.01Z"));
        assert!(!iso_like("2026-11-20 09:00:24Z"));
        assert!(!iso_like(""));
    }
}
