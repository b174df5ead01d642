//! The protocol between bonsai's Pi package and `bonsai serve`, written once: every request's
//! parameters and every answer as types. The package's TypeScript sends and reads these
//! names; `tests/serve_protocol.rs` replays exchanges recorded from the package in real Pi
//! against them.
//!
//! Parameters are read leniently: a field the engine does not know is ignored, so a package
//! that says more (within one protocol number) still works. The recorded-exchange test is
//! what keeps both sides naming the same fields.

use crate::engine::live::{LiveReport, StepRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol this engine speaks; the package sends the one it speaks in `hello`.
pub const PROTOCOL: u64 = 2;

/// A request's failure: its code and what to say.
#[derive(Debug)]
pub struct Fail(pub &'static str, pub String);

/// A request the engine could not read (`bad-request`).
pub fn bad(msg: impl Into<String>) -> Fail {
    Fail("bad-request", msg.into())
}

/// A request line read: its id, and its method and request, or why it could not be read
/// (with the method when one was named).
pub struct Incoming {
    pub id: Value,
    pub method: Option<String>,
    pub request: Result<Request, Fail>,
}

impl Incoming {
    /// Request line `n` (counted from 1, for the error): `{"id": ID, "method": NAME,
    /// "params": {...}}`.
    ///
    /// Read in one pass: the package writes the method before the params, so the params are
    /// parsed straight into the method's type (a context request carries every message,
    /// megabytes on long sessions). Params that come first are kept as text and parsed once
    /// the method is known.
    pub fn read(line: &str, n: u64) -> Incoming {
        let mut got = Got::default();
        let mut de = serde_json::Deserializer::from_str(line);
        // The object, then nothing but white space.
        let read = serde::Deserializer::deserialize_map(&mut de, LineVisitor(&mut got)).and_then(|()| de.end());
        let Got {
            id,
            method,
            method_seen,
            request,
            params_text,
        } = got;
        let refused = |id: Value, method: Option<String>, f: Fail| Incoming {
            id,
            method,
            request: Err(f),
        };
        if let Err(e) = read {
            use serde_json::error::Category;
            return match (&method, e.classify()) {
                (_, Category::Syntax | Category::Eof | Category::Io) => {
                    refused(Value::Null, None, bad(format!("request line {n} is not JSON: {e}")))
                }
                // The params were not what the method reads (the method and id were read).
                (Some(m), _) if request.is_none() && method_seen => {
                    let m = m.clone();
                    refused(id, Some(m.clone()), bad(format!("{m}: {}", without_place(&e))))
                }
                _ => refused(
                    Value::Null,
                    None,
                    bad(format!(
                        "request line {n} is not a request object: {}",
                        without_place(&e)
                    )),
                ),
            };
        }
        let Some(method) = method else {
            return refused(id, None, bad("the request has no \"method\" string"));
        };
        let request = match request {
            Some(r) => Ok(r),
            None => Request::parse(&method, params_text.as_deref().map(|p| p.get())),
        };
        Incoming {
            id,
            method: Some(method),
            request,
        }
    }
}

/// What a serde error says, without where in the line: the package needs what is wrong.
fn without_place(e: &serde_json::Error) -> String {
    let what = e.to_string();
    what.split(" at line ").next().unwrap_or(&what).to_string()
}

/// What the line visitor read.
#[derive(Default)]
struct Got {
    id: Value,
    method: Option<String>,
    /// A `method` field was read (a string or not).
    method_seen: bool,
    request: Option<Request>,
    /// The params when they came before the method.
    params_text: Option<Box<serde_json::value::RawValue>>,
}

struct LineVisitor<'g>(&'g mut Got);

impl<'de> serde::de::Visitor<'de> for LineVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a request object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let got = self.0;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" => got.id = map.next_value()?,
                "method" => {
                    got.method_seen = true;
                    got.method = map.next_value::<Value>()?.as_str().map(str::to_string);
                }
                "params" => match got.method.as_deref().filter(|m| METHODS.contains(m)) {
                    Some(m) => got.request = Some(map.next_value_seed(Params(m))?),
                    None => got.params_text = Some(map.next_value()?),
                },
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The params of a known method, read straight into its type; only an object is params.
struct Params<'m>(&'m str);

impl<'de> serde::de::DeserializeSeed<'de> for Params<'_> {
    type Value = Request;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Request, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Params<'_> {
    type Value = Request;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("\"params\", an object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Request, A::Error> {
        Request::of(self.0, serde::de::value::MapAccessDeserializer::new(map))
    }
}

/// Every method, with its parameters.
#[derive(Debug, Serialize)]
#[serde(tag = "method", content = "params", rename_all = "snake_case")]
pub enum Request {
    Hello(Hello),
    Context(Context),
    TurnEnd(TurnEnd),
    CompactionDone(CompactionDone),
    Summarize(Summarize),
    Audit(Audit),
    Mend(Mend),
    Recall(Recall),
    Status(Status),
    Shutdown(Empty),
}

/// The methods, as `unknown-method` lists them.
pub const METHODS: [&str; 10] = [
    "hello",
    "context",
    "turn_end",
    "compaction_done",
    "summarize",
    "audit",
    "mend",
    "recall",
    "status",
    "shutdown",
];

impl Request {
    /// The request `method` with `params`, JSON text (absent: `{}`).
    pub fn parse(method: &str, params: Option<&str>) -> Result<Request, Fail> {
        let params = params.unwrap_or("{}");
        if !params.trim_start().starts_with('{') {
            return Err(bad("\"params\" must be an object"));
        }
        if !METHODS.contains(&method) {
            return Err(Fail(
                "unknown-method",
                format!(
                    "unknown method `{method}` (this engine speaks protocol {PROTOCOL}: {})",
                    METHODS.join(", ")
                ),
            ));
        }
        let mut d = serde_json::Deserializer::from_str(params);
        Request::of(method, &mut d)
            .and_then(|r| d.end().map(|()| r))
            .map_err(|e| bad(format!("{method}: {}", without_place(&e))))
    }

    /// The request of a known `method`, its params read from `d`.
    fn of<'de, D: serde::Deserializer<'de>>(method: &str, d: D) -> Result<Request, D::Error> {
        use serde::de::Error;
        Ok(match method {
            "hello" => Request::Hello(Deserialize::deserialize(d)?),
            "context" => Request::Context(Deserialize::deserialize(d)?),
            "turn_end" => Request::TurnEnd(Deserialize::deserialize(d)?),
            "compaction_done" => Request::CompactionDone(Deserialize::deserialize(d)?),
            "summarize" => Request::Summarize(Deserialize::deserialize(d)?),
            "audit" => Request::Audit(Deserialize::deserialize(d)?),
            "mend" => Request::Mend(Deserialize::deserialize(d)?),
            "recall" => Request::Recall(Deserialize::deserialize(d)?),
            "status" => Request::Status(Deserialize::deserialize(d)?),
            "shutdown" => Request::Shutdown(Deserialize::deserialize(d)?),
            other => return Err(D::Error::custom(format!("unknown method `{other}`"))),
        })
    }
}

/// Pi's figure for its context and the model's window (`ctx.getContextUsage()`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// `null` right after a compaction (Pi does not know it until the next reply).
    pub tokens: Option<f64>,
    pub context_window: Option<u64>,
}

/// The session's model (`ctx.model`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelRef {
    pub provider: String,
    pub id: String,
}

impl ModelRef {
    pub fn pair(m: Option<&ModelRef>) -> Option<(&str, &str)> {
        m.map(|m| (m.provider.as_str(), m.id.as_str()))
    }
}

/// `hello`: the first request of a Pi session; it starts the state afresh.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    pub protocol: u64,
    /// Who asks (the package names itself; only logged).
    pub client: Option<String>,
    /// The Pi release the package runs in: sessions are read as it.
    pub pi_version: Option<String>,
    pub cwd: Option<String>,
    pub session_file: Option<String>,
    /// Pi's run mode (`interactive`, `print`, `rpc`); only logged.
    pub mode: Option<String>,
    /// Pi's own decision on the folder (`ctx.isProjectTrusted()`): project settings are read
    /// only then. `None`: decided as Pi decides outside its TUI.
    pub project_trusted: Option<bool>,
}

/// `context`: Pi's messages from `base` on, before a model call.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    #[serde(default)]
    pub base: usize,
    /// The package's chain of fingerprints at `base`, 8 hex digits.
    pub base_hash: Option<String>,
    /// Pi's messages as Pi hands them to the hook; passed through, read by the engine.
    pub messages: Vec<Value>,
    /// One fingerprint per message, 8 hex digits.
    pub hashes: Option<Vec<String>>,
    pub usage: Option<Usage>,
    pub model: Option<ModelRef>,
}

/// `turn_end`: after a reply, whether to compact now.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnd {
    pub usage: Option<Usage>,
    pub model: Option<ModelRef>,
    pub leaf_id: Option<String>,
    pub session_file: Option<String>,
}

/// `compaction_done`: how the package's compaction (Pi's summary) ended.
#[derive(Debug, Serialize, Deserialize)]
pub struct CompactionDone {
    pub ok: bool,
    pub error: Option<String>,
}

/// `summarize`: Pi's `session_before_compact` hook asks for bonsai's summary.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summarize {
    pub session_file: Option<String>,
    pub leaf_id: Option<String>,
    /// Where Pi cuts: another range than bonsai's is not summarized.
    pub first_kept_entry_id: Option<String>,
    pub custom_instructions: Option<String>,
    pub model: Option<ModelRef>,
    /// Why Pi compacts (`threshold`, `overflow`, `manual`); only logged.
    pub reason: Option<String>,
}

/// `audit`: what a compaction lost, of an entry written (`entryId`) or a summary at `leafId`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Audit {
    pub session_file: Option<String>,
    pub entry_id: Option<String>,
    pub summary: Option<String>,
    pub leaf_id: Option<String>,
    pub model: Option<ModelRef>,
}

/// `mend`: a summary about to be written, with what its audit found lost given back.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mend {
    pub session_file: Option<String>,
    pub leaf_id: Option<String>,
    pub summary: String,
    pub first_kept_entry_id: Option<String>,
    pub model: Option<ModelRef>,
    pub usage: Option<Usage>,
}

/// `recall`: `bonsai_recall`'s query.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recall {
    pub query: String,
    pub session_file: Option<String>,
    pub leaf_id: Option<String>,
}

/// `status`: what `/ctx-status` shows.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub session_file: Option<String>,
    /// Pi's own figure now, as the package reads it from Pi.
    pub pi_figure: Option<f64>,
}

/// A request without parameters.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Empty {}

// The answers. Fields are in the order the engine writes them.

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloAnswer {
    pub protocol: u64,
    pub engine: String,
    pub settings: LiveSettingsView,
    pub pi_version: String,
    /// The settings the engine could not use, each named with its value.
    pub problems: Vec<String>,
}

/// The live settings in effect, as `hello` and `status` give them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveSettingsView {
    pub policy: String,
    pub steps: Marks,
    pub floor_turns: usize,
    pub cache_ttl_seconds: f64,
    pub packet_tokens: u64,
    pub gauge_zones: (f64, f64),
    pub compact_early: bool,
    pub summarizer: String,
    pub recall: bool,
    pub recall_tool: String,
    pub recall_tokens: u64,
    pub mend: bool,
    pub mend_tokens: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Marks {
    pub high: u64,
    pub low: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ContextAnswer {
    pub changed: bool,
    pub report: Report,
    /// How many of Pi's messages the engine holds now.
    pub held: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// When changed: the messages to send, Pi's in runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pieces: Option<Vec<PieceOut>>,
}

/// One piece of the messages to send: Pi's message `i` or `from..to`, or a message of bonsai's.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PieceOut {
    Keep { keep: Kept },
    Message { message: Value },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Kept {
    One(usize),
    Run([usize; 2]),
}

/// The live report's fields as the CLI, `serve` and `/ctx-status` name them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub policy: String,
    pub zone: Option<String>,
    pub threshold: u64,
    pub whole: f64,
    pub tokens_full: u64,
    pub tokens_sent: u64,
    pub turns_total: usize,
    pub turns_kept: usize,
    pub messages_in: usize,
    pub messages_out: usize,
    pub dropped: usize,
    pub distilled: usize,
    pub pruned: usize,
    pub summaries_ahead: usize,
    pub orphans_dropped: usize,
    pub packet_tokens: Option<u64>,
    pub step: Option<StepView>,
    pub steps: usize,
    pub waiting: Option<String>,
    pub calls: usize,
    pub note: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepView {
    pub reason: String,
    pub turns: usize,
    pub pruned: usize,
    pub before: u64,
    pub after: u64,
    pub idle_minutes: Option<f64>,
}

impl Report {
    pub fn of(r: &LiveReport) -> Report {
        Report {
            policy: r.policy.clone(),
            zone: r.zone.map(|z| z.name().to_string()),
            threshold: r.threshold,
            whole: r.whole,
            tokens_full: r.tokens_full,
            tokens_sent: r.tokens_sent,
            turns_total: r.turns_total,
            turns_kept: r.turns_kept,
            messages_in: r.messages_in,
            messages_out: r.messages_out,
            dropped: r.dropped,
            distilled: r.distilled,
            pruned: r.pruned,
            summaries_ahead: r.summaries_ahead,
            orphans_dropped: r.orphans_dropped,
            packet_tokens: r.packet_tokens,
            step: r.step.as_ref().map(StepView::of),
            steps: r.steps,
            waiting: r.waiting.clone(),
            calls: r.calls,
            note: r.note.clone(),
        }
    }
}

impl StepView {
    fn of(s: &StepRecord) -> StepView {
        StepView {
            reason: s.reason.name().to_string(),
            turns: s.turns,
            pruned: s.pruned,
            before: s.before,
            after: s.after,
            idle_minutes: s.idle_minutes,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnEndAnswer {
    pub compact: bool,
    pub zone: Option<String>,
    pub whole: Option<f64>,
    pub reason: String,
    pub latch: String,
    pub summarizer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// For Pi's own summary: what Pi's `compact` needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preparation: Option<Preparation>,
    /// For bonsai's summary: the compaction entry Pi appends at this boundary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft: Option<Compaction>,
    /// What the draft's summary lost and was given back, in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<String>,
}

/// Pi's `CompactionPreparation` (what Pi's `prepareCompaction` returns on the same path).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preparation {
    pub first_kept_entry_id: String,
    pub messages_to_summarize: Vec<Value>,
    pub turn_prefix_messages: Vec<Value>,
    pub is_split_turn: bool,
    /// A whole number when it is one, as JavaScript writes it.
    pub tokens_before: Value,
    pub previous_summary: Option<String>,
    pub file_ops: FileOps,
    pub settings: PreparationSettings,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct FileOps {
    /// Paths as Pi recorded them (a value Pi kept that is not a string stays as it is).
    pub read: Vec<Value>,
    pub written: Vec<Value>,
    pub edited: Vec<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparationSettings {
    pub enabled: bool,
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

/// Pi's `CompactionResult` for a summary; as a `draft`, the entry with its `type` and no
/// `tokensBefore` (Pi computes it when it appends).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// `compaction` in a draft (an entry begins with its type, as Pi writes one).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub summary: String,
    pub first_kept_entry_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<Value>,
    pub details: CompactionDetails,
    /// The summary call's usage as Pi records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionDetails {
    pub read_files: Vec<Value>,
    pub modified_files: Vec<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CompactionDoneAnswer {
    pub latch: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SummarizeAnswer {
    /// `null`: Pi's own summary is used (`reason` says why).
    pub compaction: Option<Compaction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct AuditAnswer {
    pub line: String,
    pub lost: usize,
    pub total: usize,
    pub headline: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct MendAnswer {
    pub changed: bool,
    pub summary: String,
    pub line: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct RecallAnswer {
    pub text: String,
    pub matches: usize,
    pub shown: usize,
    pub searched: usize,
    /// Where the messages searched came from: `the session file` or `Pi's messages`.
    pub from: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusAnswer {
    pub engine: String,
    pub protocol: u64,
    pub pi_version: String,
    pub settings: LiveSettingsView,
    pub problems: Vec<String>,
    pub calls: u64,
    pub steps: usize,
    pub last: Option<Report>,
    pub latch: String,
    pub last_decision: Option<String>,
    pub compactions: u64,
    pub bill: Option<BillSoFar>,
    pub cwd: std::path::PathBuf,
    pub session_file: Option<std::path::PathBuf>,
    /// `/ctx-status`'s lines, worded and formatted by the engine.
    pub lines: Vec<String>,
}

/// The session's bill so far: as Pi recorded it (replies and summary calls), and the same
/// calls replayed without the package (estimated).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BillSoFar {
    pub calls: u64,
    pub recorded: f64,
    pub cache_hits: f64,
    pub without_package: f64,
    pub unpriced: u64,
    /// A newer computation runs apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updating: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ShutdownAnswer {
    pub bye: bool,
}
