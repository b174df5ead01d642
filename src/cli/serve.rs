//! `bonsai serve --stdio`: the engine for bonsai's Pi package, one process per Pi session,
//! JSON lines over stdin and stdout.
//!
//! A request is `{"id": ID, "method": NAME, "params": {...}}`, its reply
//! `{"id": ID, "result": {...}}` or `{"id": ID, "error": {"code": CODE, "message": TEXT}}`
//! (`bad-request`, `unknown-method`, `protocol`, `failed`, `internal`). Requests are answered
//! in order. A bad line gets an error reply (id `null` when none could be read) and the
//! process goes on; a panic in one request is caught and answered as `internal`. The process
//! ends when stdin closes or on `shutdown`.
//!
//! Methods (protocol 2):
//! - `hello {protocol, cwd, sessionFile, piVersion, projectTrusted}` → the engine's version and
//!   protocol, the live settings in effect and the settings it could not use (each named with
//!   its value). The project's settings are read only when `projectTrusted` (Pi's own
//!   decision, `ctx.isProjectTrusted()`); without it, as Pi decides outside its TUI.
//! - `context {base, baseHash, messages, hashes, usage: {tokens, contextWindow}, model:
//!   {provider, id}}` → `changed`, and when changed the messages to send as `pieces`
//!   (`{"keep": i}`, `{"keep": [from, to]}` for Pi's messages `from..to`, `{"message": {...}}`),
//!   the `report`, and a `notice` when this call took a step. Only what Pi appended since the
//!   last call is sent: `messages` are Pi's from `base` on, `hashes` their fingerprints (the
//!   package's). The engine keeps the messages it was sent and the chain of their
//!   fingerprints; a `baseHash` that is not its chain at `base` is answered with the error
//!   `resync`, and the package sends the whole list (`base` 0). The answer comes from the
//!   same engine function `bonsai context --live` calls.
//! - `turn_end {usage, leafId, sessionFile, model}` → whether to compact now (the latch, see
//!   `engine::live::early_compaction`: the whole context past T), and how: a compaction
//!   `draft` Pi appends at that boundary (offline summary or one of bonsai's strategies,
//!   mended), or for Pi's own summary its `preparation` (Pi's `CompactionPreparation`, which
//!   the package hands to Pi's `compact`, then to `mend`); a `notice` to show.
//! - `compaction_done {ok, error}` → the latch after the package's compaction.
//! - `summarize {sessionFile, leafId, firstKeptEntryId, customInstructions}` → for Pi's
//!   `session_before_compact` hook: bonsai's summary when `bonsai.live.summarizer` is not `pi`
//!   (mended), and the `line` to say.
//! - `mend {sessionFile, leafId, summary, firstKeptEntryId, model}` → a summary about to be
//!   written (Pi's, for bonsai's compaction or in Pi's hook) with what its audit found lost
//!   given back (`summary`, `changed`), and the `line` to say.
//! - `recall {query, sessionFile, leafId}` → `bonsai_recall`'s answer: `text`, `matches`,
//!   `shown`, `searched`.
//! - `status {sessionFile}` → what `/ctx-status` shows, the bill so far as last computed apart
//!   (a new computation starts in a thread when the file changed).
//! - `shutdown` → replies, then exits.

use crate::engine::compaction::cut::CompactionPlan;
use crate::engine::compaction::offline;
use crate::engine::compaction::slices::SliceParams;
use crate::engine::compaction::strategy::Strategy;
use crate::engine::compaction::summary::Summary;
use crate::engine::compaction::summary::SummaryInput;
use crate::engine::edit::entries;
use crate::engine::live::{self, CallEnv, Latch, LiveReport, LiveSettings, LiveState, Piece, Prices, Summarizer};
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::engine::view::context;
use crate::store::config::{agent_dir, load_registry};
use clap::Args;
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Speak JSON lines over stdin and stdout (the only transport).
    #[arg(long, required = true)]
    pub stdio: bool,
    /// Append one JSON line per request to FILE: the method, how long it took and what was
    /// decided (no session text). Also `$BONSAI_SERVE_LOG`.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

/// The protocol this engine speaks; the package sends the one it speaks in `hello`.
pub const PROTOCOL: u64 = 2;

/// One Pi session's engine state.
struct Served {
    cwd: PathBuf,
    session_file: Option<PathBuf>,
    settings: Settings,
    live: LiveSettings,
    registry: Registry,
    latch: Latch,
    last: Option<LiveReport>,
    calls: u64,
    compactions: u64,
    last_decision: Option<String>,
    /// Pi's messages as the package sent them, the chain of their fingerprints
    /// (`chain[k]`: of the first `k`), and the policy's state after them.
    messages: Vec<Value>,
    chain: Vec<u32>,
    state: LiveState,
    /// The method of the request being answered (for the log).
    method: Option<String>,
    /// The Pi release the package runs in (`hello`'s `piVersion`): sessions are read as it.
    pi: crate::engine::load::pi_version::PiVersion,
    /// What the newest compaction lost (the notice said after it; `/ctx-status` keeps it).
    last_audit: Option<String>,
    /// How each of Pi's messages went out on the last call (what `bonsai_recall` searches).
    last_sending: Vec<live::recall::Sending>,
    /// The bill so far, computed apart from the requests (`/ctx-status` never waits for it).
    bill: std::sync::Arc<std::sync::Mutex<BillSlot>>,
}

/// The bill so far of one session file, as last computed, and whether a computation runs.
#[derive(Default)]
struct BillSlot {
    /// The file and its size and modification time when the figures were computed.
    of: Option<(PathBuf, u64, std::time::SystemTime)>,
    value: Option<Value>,
    running: bool,
}

impl Served {
    fn new(cwd: PathBuf) -> Served {
        Served::trusting(cwd, None)
    }

    /// The state for a Pi session in `cwd`, its project settings read only when the Pi it
    /// runs in trusts the folder (`trusted`; `None`: decided as Pi decides it).
    fn trusting(cwd: PathBuf, trusted: Option<bool>) -> Served {
        let settings = crate::store::config::load_settings_trusting(&cwd, trusted);
        let live = settings.live_settings();
        Served {
            cwd,
            session_file: None,
            settings,
            live,
            registry: load_registry(&agent_dir()),
            latch: Latch::Idle,
            last: None,
            calls: 0,
            compactions: 0,
            last_decision: None,
            messages: Vec::new(),
            chain: vec![CHAIN_START],
            state: LiveState::default(),
            method: None,
            pi: crate::store::pi_version::followed(),
            last_audit: None,
            last_sending: Vec::new(),
            bill: Default::default(),
        }
    }

    fn settings_json(&self) -> Value {
        let l = &self.live;
        json!({
            "policy": l.policy.name(),
            "steps": {"high": l.marks.high, "low": l.marks.low},
            "floorTurns": l.floor_turns,
            "cacheTtlSeconds": l.cache_ttl_ms / 1000.0,
            "packetTokens": l.packet_tokens,
            "gaugeZones": [l.zones.0, l.zones.1],
            "compactEarly": l.compact_early,
            "summarizer": l.summarizer.name(),
            "recall": l.recall && l.policy != live::LivePolicy::Off,
            "recallTool": live::RECALL_TOOL,
            "recallTokens": l.recall_tokens,
            "mend": l.mend && l.policy != live::LivePolicy::Off,
            "mendTokens": l.mend_tokens,
        })
    }

    /// A model's prices from Pi's registry.
    fn prices(&self, provider: &str, id: &str) -> Option<Prices> {
        self.registry.find(provider, id).map(Prices::of_model)
    }
}

/// The fingerprint chain's start: FNV-1a's offset basis.
const CHAIN_START: u32 = 0x811c_9dc5;

/// The chain after one more message's fingerprint: FNV-1a over the chain's and the
/// fingerprint's bytes, little-endian (the package computes the same).
fn chain_next(chain: u32, fingerprint: u32) -> u32 {
    let mut h = CHAIN_START;
    for b in chain.to_le_bytes().into_iter().chain(fingerprint.to_le_bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// A request's failure: its code and what to say.
struct Fail(&'static str, String);

fn bad(msg: impl Into<String>) -> Fail {
    Fail("bad-request", msg.into())
}

pub fn serve_stdio(log: Option<PathBuf>) -> color_eyre::eyre::Result<()> {
    let mut log = match log {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .map_err(|e| color_eyre::eyre::eyre!("--log {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut state = Served::new(crate::store::config::cwd());
    let mut line = String::new();
    let mut n = 0u64;
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            // Not UTF-8: say so and go on with the next line.
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                n += 1;
                reply(
                    &mut out,
                    &Value::Null,
                    Err(bad(format!("request line {n} is not UTF-8"))),
                )?;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        n += 1;
        if line.trim().is_empty() {
            continue;
        }
        let started = std::time::Instant::now();
        let (id, result, stop) = handle_line(&mut state, &line, n);
        if let Some(f) = &mut log {
            let _ = writeln!(
                f,
                "{}",
                log_line(state.method.as_deref(), line.len(), &result, started.elapsed())
            );
        }
        reply(&mut out, &id, result)?;
        if stop {
            return Ok(());
        }
    }
}

/// One request line: its id, its answer, and whether the engine stops after it.
fn handle_line(state: &mut Served, line: &str, n: u64) -> (Value, Result<Value, Fail>, bool) {
    state.method = None;
    let mut req: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return (
                Value::Null,
                Err(bad(format!("request line {n} is not JSON: {e}"))),
                false,
            );
        }
    };
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = req.get("method").and_then(|m| m.as_str()) else {
        return (id, Err(bad("the request has no \"method\" string")), false);
    };
    let method = method.to_string();
    // Taken, not cloned: a context request carries every message (megabytes on long sessions).
    let params = req.get_mut("params").map(Value::take).unwrap_or(json!({}));
    if !params.is_object() {
        return (id, Err(bad("\"params\" must be an object")), false);
    }
    // A bug in one request must not take the engine down: Pi would lose its live policy.
    let mut params = params;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(state, &method, &mut params)));
    // `hello` starts the state afresh.
    state.method = Some(method.clone());
    match r {
        Ok(r) => (id, r, method == "shutdown"),
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            (
                id,
                Err(Fail("internal", format!("{method} failed inside bonsai: {what}"))),
                false,
            )
        }
    }
}

/// What the log keeps of a request: its method, its time, and the answer without messages.
fn log_line(method: Option<&str>, bytes: usize, r: &Result<Value, Fail>, took: std::time::Duration) -> Value {
    let mut v = json!({"method": method, "ms": took.as_secs_f64() * 1000.0, "bytes": bytes});
    match r {
        Ok(res) => {
            let mut res = res.clone();
            if let Value::Object(o) = &mut res {
                for k in ["pieces", "preparation", "draft"] {
                    if let Some(x) = o.remove(k) {
                        o.insert(format!("{k}Count"), json!(x.as_array().map(|a| a.len()).unwrap_or(1)));
                    }
                }
                if let Some(Value::Object(c)) = o.get_mut("compaction") {
                    c.remove("summary");
                }
            }
            v["result"] = res;
        }
        Err(Fail(code, msg)) => v["error"] = json!({"code": code, "message": msg}),
    }
    v
}

fn reply(out: &mut impl Write, id: &Value, r: Result<Value, Fail>) -> std::io::Result<()> {
    let msg = match r {
        Ok(v) => json!({"id": id, "result": v}),
        Err(Fail(code, message)) => json!({"id": id, "error": {"code": code, "message": message}}),
    };
    serde_json::to_writer(&mut *out, &msg)?;
    out.write_all(b"\n")?;
    out.flush()
}

fn dispatch(state: &mut Served, method: &str, p: &mut Value) -> Result<Value, Fail> {
    match method {
        "hello" => hello(state, p),
        "context" => context_call(state, p),
        "turn_end" => turn_end(state, p),
        "compaction_done" => {
            let ok = p
                .get("ok")
                .and_then(|o| o.as_bool())
                .ok_or_else(|| bad("compaction_done needs \"ok\": true or false"))?;
            if state.latch == Latch::InFlight {
                state.latch = if ok {
                    Latch::Done
                } else {
                    let why = p.get("error").and_then(|e| e.as_str()).unwrap_or("the summary failed");
                    Latch::Failed(why.to_string())
                };
            }
            if ok {
                state.compactions += 1;
            }
            Ok(json!({"latch": state.latch.name()}))
        }
        "summarize" => summarize_call(state, p),
        "audit" => audit_call(state, p),
        "mend" => mend_call(state, p),
        "recall" => recall_call(state, p),
        "status" => Ok(status(state, p)),
        "shutdown" => Ok(json!({"bye": true})),
        other => Err(Fail(
            "unknown-method",
            format!(
                "unknown method `{other}` (this engine speaks protocol {PROTOCOL}: hello, context, turn_end, compaction_done, summarize, audit, mend, recall, status, shutdown)"
            ),
        )),
    }
}

fn hello(state: &mut Served, p: &Value) -> Result<Value, Fail> {
    let protocol = p
        .get("protocol")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| bad("hello needs \"protocol\": a number"))?;
    if protocol != PROTOCOL {
        return Err(Fail(
            "protocol",
            format!(
                "the package speaks protocol {protocol}, this bonsai ({}) speaks {PROTOCOL}: install matching versions",
                env!("CARGO_PKG_VERSION")
            ),
        ));
    }
    if let Some(cwd) = p.get("cwd").and_then(|c| c.as_str()) {
        // The Pi the package runs in decided whether the folder is trusted.
        let trusted = p.get("projectTrusted").and_then(|t| t.as_bool());
        *state = Served::trusting(PathBuf::from(cwd), trusted);
    }
    state.session_file = p.get("sessionFile").and_then(|f| f.as_str()).map(PathBuf::from);
    let mut problems: Vec<String> = state.live.problems.iter().map(|x| x.to_string()).collect();
    // The Pi the package runs in is the one to reproduce (its summaries, its file lists).
    if let Some(v) = p.get("piVersion").and_then(|v| v.as_str()) {
        match crate::engine::load::pi_version::PiVersion::nearest(v) {
            Ok((pi, note)) => {
                state.pi = pi;
                problems.extend(note);
            }
            Err(e) => problems.push(format!("piVersion: {e}; following Pi {}", state.pi)),
        }
    }
    problems.extend(state.settings.warnings.iter().cloned());
    problems.extend(state.settings.project_ignored.iter().cloned());
    Ok(json!({
        "protocol": PROTOCOL,
        "engine": format!("bonsai {}", env!("CARGO_PKG_VERSION")),
        "settings": state.settings_json(),
        "piVersion": state.pi.name(),
        "problems": problems,
    }))
}

fn model_of(p: &Value) -> Option<(String, String)> {
    let m = p.get("model")?;
    Some((
        m.get("provider")?.as_str()?.to_string(),
        m.get("id")?.as_str()?.to_string(),
    ))
}

/// The window and reserve of this call: Pi's window for its model (else the model table's,
/// else Pi's fallback), the reserve from Pi's settings for that model.
fn window_and_reserve(state: &Served, p: &Value) -> (u64, u64) {
    let model = model_of(p);
    let mref = model.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
    let window = p
        .get("usage")
        .and_then(|u| u.get("contextWindow"))
        .and_then(|w| w.as_u64())
        .filter(|w| *w > 0)
        .or_else(|| {
            mref.and_then(|(a, b)| state.registry.find(a, b))
                .map(|m| m.context_window)
        });
    let window = crate::engine::load::models::window_or_default(window);
    (window, state.settings.reserve_tokens(mref))
}

fn usage_tokens(p: &Value) -> Option<f64> {
    p.get("usage").and_then(|u| u.get("tokens")).and_then(|t| t.as_f64())
}

/// A call's window, reserve and prices.
fn call_env(state: &Served, p: &Value) -> CallEnv {
    let (context_window, reserve_tokens) = window_and_reserve(state, p);
    CallEnv {
        context_window,
        reserve_tokens,
        prices: model_of(p).and_then(|(a, b)| state.prices(&a, &b)),
    }
}

/// A fingerprint as the package writes it: 8 hex digits.
fn fingerprint(v: Option<&Value>) -> Result<u32, Fail> {
    match v {
        None => Ok(0),
        Some(Value::String(h)) => {
            u32::from_str_radix(h, 16).map_err(|_| bad(format!("hash {h:?} is not 8 hex digits")))
        }
        Some(other) => Err(bad(format!("hash {other} is not 8 hex digits"))),
    }
}

fn context_call(state: &mut Served, p: &mut Value) -> Result<Value, Fail> {
    let base = match p.get("base") {
        None => 0,
        Some(b) => b.as_u64().ok_or_else(|| bad("\"base\" must be a whole number"))? as usize,
    };
    let msgs = match p.get_mut("messages").map(Value::take) {
        Some(Value::Array(m)) => m,
        _ => return Err(bad("context needs \"messages\": an array")),
    };
    if let Some((k, _)) = msgs.iter().enumerate().find(|(_, m)| !m.is_object()) {
        return Err(bad(format!("messages[{k}] is not an object")));
    }
    let hashes = p.get("hashes").and_then(|h| h.as_array());
    if hashes.is_some_and(|h| h.len() != msgs.len()) {
        return Err(bad("\"hashes\" must have one fingerprint per message"));
    }
    if base > 0 {
        let want = p.get("baseHash").and_then(|h| h.as_str());
        let held = state.chain.get(base).map(|c| format!("{c:08x}"));
        if held.is_none() || want != held.as_deref() {
            return Err(Fail(
                "resync",
                format!(
                    "the engine holds {} messages and another chain: send the whole list",
                    state.messages.len()
                ),
            ));
        }
    }
    if base < state.messages.len() {
        state.messages.truncate(base);
        state.chain.truncate(base + 1);
        state.state.truncate(base);
    }
    for (k, m) in msgs.into_iter().enumerate() {
        let h = fingerprint(hashes.and_then(|h| h.get(k)))?;
        let next = chain_next(*state.chain.last().expect("the chain has its start"), h);
        state.chain.push(next);
        state.messages.push(m);
    }
    let env = call_env(state, p);
    let registry = &state.registry;
    let prices_of = |a: &str, b: &str| registry.find(a, b).map(Prices::of_model);
    let src = live::ValueSource::new(&state.messages, &prices_of);
    let answer = state.state.answer(&src, &env, &state.live);
    state.calls += 1;
    let changed = answer.changed(state.messages.len());
    state.last_sending = vec![live::recall::Sending::Not; state.messages.len()];
    for piece in &answer.pieces {
        match piece {
            Piece::Keep(i) => state.last_sending[*i] = live::recall::Sending::Whole,
            Piece::Replace(i, _) => state.last_sending[*i] = live::recall::Sending::Changed,
            Piece::Insert(_) => {}
        }
    }
    let mut out = json!({
        "changed": changed,
        "report": super::read::live_report_json(&answer.report),
        "held": state.messages.len(),
    });
    if let Some(step) = &answer.report.step {
        out["notice"] = json!(step.notice());
    }
    if changed {
        out["pieces"] = Value::Array(pieces_json(answer.pieces));
    }
    state.last = Some(answer.report);
    Ok(out)
}

/// The answer's pieces, Pi's messages in runs: `{"keep": i}`, `{"keep": [from, to]}`,
/// `{"message": …}` (a reply lists what is sent, not Pi's ten thousand messages one by one).
fn pieces_json(pieces: Vec<Piece>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    let flush = |out: &mut Vec<Value>, run: &mut Option<(usize, usize)>| {
        if let Some((a, b)) = run.take() {
            out.push(if b == a + 1 {
                json!({"keep": a})
            } else {
                json!({"keep": [a, b]})
            });
        }
    };
    for piece in pieces {
        match piece {
            Piece::Keep(i) => match &mut run {
                Some((_, b)) if *b == i => *b = i + 1,
                _ => {
                    flush(&mut out, &mut run);
                    run = Some((i, i + 1));
                }
            },
            Piece::Replace(_, v) | Piece::Insert(v) => {
                flush(&mut out, &mut run);
                out.push(json!({"message": v}));
            }
        }
    }
    flush(&mut out, &mut run);
    out
}

/// The session file of a request (its own, else the one `hello` named).
fn session_of(state: &Served, p: &Value) -> Result<PathBuf, Fail> {
    p.get("sessionFile")
        .and_then(|f| f.as_str())
        .map(PathBuf::from)
        .or_else(|| state.session_file.clone())
        .ok_or_else(|| bad("no session file: Pi's session is not saved to a file"))
}

/// The session at Pi's leaf and the compaction plan there, with Pi's settings for the model.
fn plan_at(
    state: &Served,
    file: &Path,
    leaf_id: Option<&str>,
    model: Option<(&str, &str)>,
) -> Result<(Session, usize, CompactionPlan), Fail> {
    plan_keeping(state, file, leaf_id, model, None)
}

/// What bonsai's own compaction keeps of the recent turns: the zones policy's low mark (what
/// it sends of them after a step), at most Pi's `keepRecentTokens`. The turns past it are
/// left out of every request anyway; keeping them in Pi's context would only bring the next
/// compaction sooner. `None` (Pi's setting) for the other policies.
fn live_keep(state: &Served, model: Option<(&str, &str)>, window: u64) -> Option<u64> {
    (state.live.policy == live::LivePolicy::Zones).then(|| {
        let cs = state.settings.compaction_settings(model, None, None);
        let low = state.live.marks.within(window.saturating_sub(cs.reserve_tokens)).low;
        low.min(cs.keep_recent_tokens)
    })
}

/// [`plan_at`] keeping `keep` recent tokens (`None`: Pi's setting).
fn plan_keeping(
    state: &Served,
    file: &Path,
    leaf_id: Option<&str>,
    model: Option<(&str, &str)>,
    keep: Option<u64>,
) -> Result<(Session, usize, CompactionPlan), Fail> {
    let s = crate::store::load_session(file)
        .map_err(|e| Fail("failed", format!("{}: {e}", file.display())))?
        .read_as(state.pi);
    let leaf = match leaf_id {
        Some(id) => s
            .idx_of(id)
            .ok_or_else(|| Fail("failed", format!("entry {id} is not in {}", file.display())))?,
        None => s
            .leaf()
            .ok_or_else(|| Fail("failed", "the session has no entries".into()))?,
    };
    let cs = state.settings.compaction_settings(model, None, keep);
    let plan = entries::plan_compaction(&s, leaf, cs)
        .map_err(|e| Fail("failed", format!("nothing to compact: {}", e.reason())))?;
    Ok((s, leaf, plan))
}

/// bonsai's summary of a plan: offline, or a strategy on the summary model (Pi's settings'
/// `bonsai.summaryModel`, else the session's model) with Pi's keys.
fn bonsai_summary(
    state: &Served,
    s: &Session,
    plan: &CompactionPlan,
    instructions: Option<&str>,
    model: Option<(&str, &str)>,
) -> Result<Summary, Fail> {
    let strategy = match &state.live.summarizer {
        Summarizer::Strategy(name) => Strategy::parse(name).unwrap_or(Strategy::Offline),
        _ => Strategy::Offline,
    };
    if strategy == Strategy::Offline {
        return Ok(offline::compaction_summary(s, plan, instructions));
    }
    let wanted = state.settings.summary_model();
    let sm = crate::llm::summarize::Summarizer::resolve(&state.registry, &agent_dir(), wanted.as_deref(), model)
        .map_err(|e| Fail("failed", format!("{}: no model for it ({e})", strategy.name())))?;
    let input = SummaryInput::of_plan(s, plan);
    let thinking = context::project(s, &plan.projection.path).thinking_level;
    let rows = super::compare::run_all(
        s,
        plan,
        &input,
        Some(&sm),
        &[strategy],
        &SliceParams::default(),
        instructions,
        Some(&thinking),
    )
    .map_err(|e| Fail("failed", e.to_string()))?;
    match rows.into_iter().next().map(|r| r.result) {
        Some(Ok((o, _))) => Ok(Summary {
            usage: (o.calls > 0).then(|| o.usage.to_pi(&sm.model)),
            text: o.text,
        }),
        Some(Err(e)) => Err(Fail("failed", format!("{} failed: {e}", strategy.name()))),
        None => Err(Fail("failed", "no summary".into())),
    }
}

/// Pi's `CompactionResult` fields for a summary.
fn compaction_json(s: &Session, plan: &CompactionPlan, summary: &Summary) -> Value {
    let (read, modified) = plan.file_ops.lists();
    let mut v = json!({
        "summary": summary.text,
        "firstKeptEntryId": s.entries[plan.first_kept_entry].id.to_string(),
        "tokensBefore": crate::engine::load::js::num(plan.tokens_before),
        "details": {"readFiles": read, "modifiedFiles": modified},
    });
    if let Some(u) = &summary.usage {
        v["usage"] = u.clone();
    }
    v
}

fn turn_end(state: &mut Served, p: &Value) -> Result<Value, Fail> {
    let (window, reserve) = window_and_reserve(state, p);
    let threshold = window.saturating_sub(reserve);
    // The whole context: Pi's figure is what was sent; what bonsai left out counts too.
    let whole = usage_tokens(p).map(|u| {
        state
            .state
            .whole_after_reply(u, threshold, &state.live)
            .unwrap_or((u, crate::engine::edit::prune::zone_of(u, threshold, state.live.zones)))
    });
    let d = live::early_compaction(
        &state.latch,
        whole.map(|w| w.0),
        whole.map(|w| w.1),
        threshold,
        &state.live,
    );
    state.latch = d.latch.clone();
    state.last_decision = Some(d.reason.clone());
    let mut out = json!({
        "compact": false,
        "zone": d.zone.map(|z| z.name()),
        "whole": whole.map(|w| w.0),
        "reason": d.reason,
        "latch": d.latch.name(),
        "summarizer": state.live.summarizer.name(),
    });
    if !d.compact {
        return Ok(out);
    }
    // From here the latch is in flight: any failure ends this episode's attempt.
    let model = model_of(p);
    let mref = model.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
    let file = session_of(state, p)?;
    let keep = live_keep(state, mref, window);
    let planned = plan_keeping(state, &file, p.get("leafId").and_then(|l| l.as_str()), mref, keep);
    let (s, leaf, plan) = match planned {
        Ok(x) => x,
        Err(Fail(_, why)) => {
            state.latch = Latch::Failed(why.clone());
            state.last_decision = Some(format!("red, but {why}"));
            out["latch"] = json!(state.latch.name());
            out["reason"] = json!(format!("red, but {why}"));
            out["notice"] = json!(format!(
                "bonsai: the context is in red ({}) but {why}; the newest turns that fit are sent, and Pi compacts at its own threshold",
                d.reason.trim_start_matches("red: ")
            ));
            return Ok(out);
        }
    };
    let notice = format!(
        "bonsai compacts ({}): ~{} tokens summarized by {}, ~{} kept",
        d.reason,
        crate::engine::units::count(plan.summarized_tokens() + plan.turn_prefix_tokens()),
        match &state.live.summarizer {
            Summarizer::Pi => "Pi's summarizer".to_string(),
            Summarizer::Offline => "bonsai's offline summarizer".to_string(),
            Summarizer::Strategy(x) => format!("bonsai's {x} strategy"),
        },
        crate::engine::units::count(plan.kept_tokens()),
    );
    out["notice"] = json!(notice);
    out["compact"] = json!(true);
    if state.live.summarizer == Summarizer::Pi {
        out["preparation"] = preparation_json(&s, &plan);
        return Ok(out);
    }
    match bonsai_summary(state, &s, &plan, None, mref) {
        Ok(mut summary) => {
            let a = crate::engine::compaction::audit::Before::of_plan(&s, &plan, leaf).audit(&summary.text);
            let (text, line) = mended(state, &a);
            summary.text = text;
            let mut draft = compaction_json(&s, &plan, &summary);
            draft["type"] = json!("compaction");
            if let Value::Object(o) = &mut draft {
                o.remove("tokensBefore");
            }
            out["draft"] = draft;
            state.last_audit = Some(line.clone());
            out["audit"] = json!(line);
            // Pi appends a returned draft at this boundary: the episode has its compaction.
            state.latch = Latch::Done;
            state.compactions += 1;
        }
        Err(Fail(_, why)) => {
            state.latch = Latch::Failed(format!("the summary failed: {why}"));
            out["compact"] = json!(false);
            out["reason"] = json!(format!("red, but the summary failed: {why}"));
            out["notice"] = json!(format!(
                "bonsai: early compaction failed ({why}); Pi compacts at its own threshold"
            ));
        }
    }
    out["latch"] = json!(state.latch.name());
    Ok(out)
}

/// Pi's `CompactionPreparation` for the plan (what Pi's `prepareCompaction` returns on the
/// same path): the package hands it to Pi's own `compact`.
fn preparation_json(s: &Session, plan: &CompactionPlan) -> Value {
    let m = |v: &[context::ContextMessage]| -> Vec<Value> { v.iter().map(|x| context::materialize(s, x)).collect() };
    json!({
        "firstKeptEntryId": s.entries[plan.first_kept_entry].id.to_string(),
        "messagesToSummarize": m(&plan.messages_to_summarize),
        "turnPrefixMessages": m(&plan.turn_prefix_messages),
        "isSplitTurn": plan.is_split_turn,
        "tokensBefore": crate::engine::load::js::num(plan.tokens_before),
        "previousSummary": crate::engine::compaction::cut::previous_summary(s, plan),
        "fileOps": {"read": plan.file_ops.read, "written": plan.file_ops.written, "edited": plan.file_ops.edited},
        "settings": {"enabled": true, "reserveTokens": plan.settings.reserve_tokens, "keepRecentTokens": plan.settings.keep_recent_tokens},
    })
}

/// The one line said after a compaction: what its summary lost, or that it kept everything.
fn audit_line(a: &crate::engine::compaction::audit::Audit) -> String {
    if a.lost().next().is_some() {
        format!("bonsai: the compaction {} — /bonsai to review (a on it)", a.headline())
    } else {
        format!("bonsai: the compaction {}", a.headline())
    }
}

/// A summary about to be written, mended (`bonsai.live.mend`): what its audit found lost
/// given back word for word within `bonsai.live.mendTokens`. Returns the text to write and
/// the line that says what was lost and given back.
fn mended(state: &Served, a: &crate::engine::compaction::audit::Audit) -> (String, String) {
    let on = state.live.mend && state.live.policy != live::LivePolicy::Off;
    match crate::engine::compaction::audit::mend(a, state.live.mend_tokens).filter(|_| on) {
        Some(m) if m.given > 0 => {
            let rest = if m.left > 0 {
                format!("; {} more did not fit (bonsai_recall finds them)", m.left)
            } else {
                String::new()
            };
            (
                m.summary,
                format!(
                    "bonsai: the compaction {}; {} given back word for word{rest}",
                    a.headline(),
                    crate::engine::units::plural(m.given as u64, "item", "items")
                ),
            )
        }
        _ => (a.summary.clone(), audit_line(a)),
    }
}

/// A compaction's summary not written yet (Pi's, made for bonsai's compaction or in Pi's
/// compaction hook), audited against the range the plan at `leafId` summarizes and mended.
/// `firstKeptEntryId`, when given, must be the plan's: another range is not audited.
fn mend_call(state: &mut Served, p: &Value) -> Result<Value, Fail> {
    use crate::engine::compaction::audit;
    let file = session_of(state, p)?;
    let summary = p
        .get("summary")
        .and_then(|t| t.as_str())
        .ok_or_else(|| bad("mend needs \"summary\": the summary's text"))?;
    let model = model_of(p);
    let mref = model.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
    let leaf_id = p.get("leafId").and_then(|l| l.as_str());
    let (mut s, mut leaf, mut plan) = plan_at(state, &file, leaf_id, mref)?;
    let mut first_kept = s.entries[plan.first_kept_entry].id.to_string();
    let wanted = p.get("firstKeptEntryId").and_then(|f| f.as_str());
    // bonsai's own compaction keeps what the zones policy sends (`live_keep`).
    if let Some(w) = wanted
        && w != first_kept
        && let Some(keep) = live_keep(state, mref, window_and_reserve(state, p).0)
    {
        (s, leaf, plan) = plan_keeping(state, &file, leaf_id, mref, Some(keep))?;
        first_kept = s.entries[plan.first_kept_entry].id.to_string();
    }
    if let Some(pi_first) = wanted
        && pi_first != first_kept
    {
        return Ok(json!({
            "summary": summary,
            "changed": false,
            "line": format!("bonsai: Pi cuts at {pi_first}, bonsai at {first_kept}: the summary was not audited"),
        }));
    }
    let a = audit::Before::of_plan(&s, &plan, leaf).audit(summary);
    let (text, line) = mended(state, &a);
    state.last_audit = Some(line.clone());
    Ok(json!({
        "changed": text != summary,
        "summary": text,
        "line": line,
        "lost": a.lost().count(),
        "total": a.items.len(),
    }))
}

/// `bonsai_recall`: the messages of the current path the model is not sent now that match
/// the query, word for word (`engine::live::recall`), within `bonsai.live.recallTokens`.
fn recall_call(state: &mut Served, p: &Value) -> Result<Value, Fail> {
    use live::recall::{self, Sending};
    let query = p
        .get("query")
        .and_then(|q| q.as_str())
        .ok_or_else(|| bad("recall needs \"query\": a string"))?;
    let sending = state.last_sending.clone();
    let how = |k: usize| sending.get(k).copied().unwrap_or(Sending::Whole);
    let file = p
        .get("sessionFile")
        .and_then(|f| f.as_str())
        .map(PathBuf::from)
        .or_else(|| state.session_file.clone());
    let mut from = "Pi's messages";
    let candidates = match file.as_deref().and_then(|f| read_session(state, f).ok()) {
        Some(s) => {
            let leaf = p
                .get("leafId")
                .and_then(|l| l.as_str())
                .and_then(|id| s.idx_of(id))
                .or_else(|| s.leaf());
            match leaf {
                Some(leaf) if in_step(&s, leaf, &state.messages) => {
                    from = "the session file";
                    recall::candidates_of_session(&s, leaf, &how)
                }
                _ => recall::candidates_of_messages(&state.messages, &how),
            }
        }
        None => recall::candidates_of_messages(&state.messages, &how),
    };
    let r = recall::recall(&candidates, query, state.live.recall_tokens as usize * 4);
    Ok(json!({"text": r.text, "matches": r.matches, "shown": r.shown, "searched": candidates.len(), "from": from}))
}

/// Whether Pi's context in the file at `leaf` starts with the messages the engine holds (the
/// file and the engine's list in step): then message `k` of one is message `k` of the other.
fn in_step(s: &Session, leaf: usize, held: &[Value]) -> bool {
    let proj = context::project(s, &s.path_to(leaf));
    let ctx: Vec<&context::ContextMessage> = proj
        .messages()
        .filter(|m| m.role != crate::engine::load::entry::Role::System)
        .collect();
    // The same roles, and the same words at every request (the messages that tell one
    // conversation from another).
    ctx.len() >= held.len()
        && ctx.iter().zip(held).all(|(m, v)| {
            let role = v.get("role").and_then(|r| r.as_str()).unwrap_or("");
            role == m.role.as_str()
                && (role != "user"
                    || context::content_text(context::materialize(s, m).get("content"), "\n")
                        == context::content_text(v.get("content"), "\n"))
        })
}

/// A session file for a request that only reads it: through bonsai's index where one still
/// describes it (a line that fails its check makes it parsed whole), read as the Pi the
/// package runs in.
fn read_session(state: &Served, file: &Path) -> Result<Session, Fail> {
    use crate::store::index;
    let place = index::Place::in_agent(&agent_dir(), &state.settings);
    let fail = |e: &dyn std::fmt::Display| Fail("failed", format!("{}: {e}", file.display()));
    let opened = index::open_proven(file, &place).map_err(|e| fail(&e))?;
    let s = opened.session.read_as(state.pi);
    Ok(s)
}

/// What a compaction lost: the entry `entryId` of the session (one Pi wrote), or `summary`
/// as a compaction at `leafId` would write it (one not appended yet). The line is kept for
/// `/ctx-status`.
fn audit_call(state: &mut Served, p: &Value) -> Result<Value, Fail> {
    use crate::engine::compaction::audit;
    let file = session_of(state, p)?;
    let a = match (
        p.get("entryId").and_then(|e| e.as_str()),
        p.get("summary").and_then(|t| t.as_str()),
    ) {
        (Some(id), _) => {
            let s = crate::store::load_session(&file)
                .map_err(|e| Fail("failed", format!("{}: {e}", file.display())))?
                .read_as(state.pi);
            let e = s
                .idx_of(id)
                .ok_or_else(|| Fail("failed", format!("entry {id} is not in {}", file.display())))?;
            audit::audit(&s, e).ok_or_else(|| bad(format!("entry {id} is not a compaction or a branch summary")))?
        }
        (None, Some(summary)) => {
            let model = model_of(p);
            let mref = model.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
            let (s, leaf, plan) = plan_at(state, &file, p.get("leafId").and_then(|l| l.as_str()), mref)?;
            audit::Before::of_plan(&s, &plan, leaf).audit(summary)
        }
        (None, None) => return Err(bad("audit needs \"entryId\", or \"summary\" with \"leafId\"")),
    };
    let line = audit_line(&a);
    state.last_audit = Some(line.clone());
    Ok(json!({"line": line, "lost": a.lost().count(), "total": a.items.len(), "headline": a.headline()}))
}

fn summarize_call(state: &mut Served, p: &Value) -> Result<Value, Fail> {
    if state.live.summarizer == Summarizer::Pi {
        return Ok(json!({"compaction": null, "reason": "bonsai.live.summarizer is pi: Pi's own summary"}));
    }
    let model = model_of(p);
    let mref = model.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
    let file = session_of(state, p)?;
    let (s, _, plan) = plan_at(state, &file, p.get("leafId").and_then(|l| l.as_str()), mref)?;
    let first_kept = s.entries[plan.first_kept_entry].id.to_string();
    if let Some(pi_first) = p.get("firstKeptEntryId").and_then(|f| f.as_str())
        && pi_first != first_kept
    {
        // Never summarize a different range than the one Pi keeps from.
        return Ok(json!({
            "compaction": null,
            "reason": format!("Pi cuts at {pi_first}, bonsai at {first_kept}: Pi's own summary is used"),
        }));
    }
    let instructions = p.get("customInstructions").and_then(|c| c.as_str());
    let mut summary = bonsai_summary(state, &s, &plan, instructions, mref)?;
    let leaf = p
        .get("leafId")
        .and_then(|l| l.as_str())
        .and_then(|id| s.idx_of(id))
        .or_else(|| s.leaf())
        .unwrap_or(0);
    let a = crate::engine::compaction::audit::Before::of_plan(&s, &plan, leaf).audit(&summary.text);
    let (text, line) = mended(state, &a);
    summary.text = text;
    state.last_audit = Some(line.clone());
    state.compactions += 1;
    Ok(
        json!({"compaction": compaction_json(&s, &plan, &summary), "summarizer": state.live.summarizer.name(), "line": line}),
    )
}

fn status(state: &Served, p: &Value) -> Value {
    let file = p
        .get("sessionFile")
        .and_then(|f| f.as_str())
        .map(PathBuf::from)
        .or_else(|| state.session_file.clone());
    // The bill as last computed; a new computation starts apart when the file changed.
    let bill = match &file {
        Some(f) => {
            refresh_bill(state, f);
            let slot = state.bill.lock().unwrap_or_else(|e| e.into_inner());
            let mut v = slot.value.clone();
            if let Some(Value::Object(o)) = &mut v {
                o.insert("updating".into(), json!(slot.running));
            }
            v
        }
        None => None,
    };
    let mut out = json!({
        "engine": format!("bonsai {}", env!("CARGO_PKG_VERSION")),
        "protocol": PROTOCOL,
        "piVersion": state.pi.name(),
        "settings": state.settings_json(),
        "problems": state.live.problems.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
        "calls": state.calls,
        "steps": state.state.steps(),
        "last": state.last.as_ref().map(super::read::live_report_json),
        "latch": state.latch.name(),
        "lastDecision": state.last_decision,
        "compactions": state.compactions,
        "bill": bill,
        "cwd": state.cwd,
        "sessionFile": state.session_file,
    });
    let pi_figure = p.get("piFigure").and_then(|v| v.as_f64());
    out["lines"] = json!(status_lines(state, &out, pi_figure));
    out
}

/// Start computing the bill of `file` apart, unless it is being computed or its figures
/// are of the file as it is now. The request that asks returns at once: `/ctx-status` on a
/// 1 GB session must not make the next model call wait seconds.
fn refresh_bill(state: &Served, file: &Path) {
    let stamp = std::fs::metadata(file).ok().map(|m| {
        (
            file.to_path_buf(),
            m.len(),
            m.modified().unwrap_or(std::time::UNIX_EPOCH),
        )
    });
    let Some(stamp) = stamp else { return };
    {
        let mut slot = state.bill.lock().unwrap_or_else(|e| e.into_inner());
        if slot.running || slot.of.as_ref() == Some(&stamp) {
            return;
        }
        slot.running = true;
    }
    let slot = state.bill.clone();
    let (settings, live, registry, pi) = (
        state.settings.clone(),
        state.live.clone(),
        state.registry.clone(),
        state.pi,
    );
    let file = file.to_path_buf();
    std::thread::spawn(move || {
        let value = bill_so_far(&settings, &live, &registry, pi, &file);
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.running = false;
        slot.of = Some(stamp);
        slot.value = value;
    });
}

/// `/ctx-status`'s lines, worded and formatted here so that they say what the TUI and the CLI
/// say (`engine::units`); the package prints them. `pi_figure`: Pi's own figure now, as the
/// package reads it from Pi.
fn status_lines(state: &Served, st: &Value, pi_figure: Option<f64>) -> Vec<String> {
    use crate::engine::units::{self, Basis};
    let mut out = vec![format!(
        "bonsai {} (protocol {PROTOCOL}, following Pi {}) · policy {} · summarizer {}",
        env!("CARGO_PKG_VERSION"),
        state.pi.name(),
        state.live.policy.name(),
        state.live.summarizer.name()
    )];
    match &state.last {
        Some(l) => {
            out.push(format!(
                "whole context {} tokens ({} for the last call, with what bonsai left out added back) · {} now {} · zone {} of T {}",
                units::tokens(l.whole),
                Basis::Pi.label(),
                Basis::Pi.label(),
                pi_figure.map(units::tokens).unwrap_or_else(|| "unknown".into()),
                l.zone.map(|z| z.words()).unwrap_or("-"),
                units::count(l.threshold),
            ));
            let mut sent = format!(
                "{} {} of {} tokens of messages ({}; the system prompt and tools come on top) · turns sent {} of {} · packet {}",
                Basis::Sent.label(),
                units::count(l.tokens_sent),
                units::count(l.tokens_full),
                Basis::Estimate.label(),
                l.turns_kept,
                l.turns_total,
                l.packet_tokens
                    .map(|t| format!("{} tokens", units::count(t)))
                    .unwrap_or_else(|| "none".into()),
            );
            if l.summaries_ahead > 0 {
                sent += &format!(
                    " · {} sent as written",
                    units::plural(l.summaries_ahead as u64, "summary", "summaries")
                );
            }
            if l.distilled > 0 {
                sent += &format!(
                    " · {} distilled",
                    units::plural(l.distilled as u64, "long output", "long outputs")
                );
            }
            if l.pruned > 0 {
                sent += &format!(" · {} pruned", units::count(l.pruned as u64));
            }
            out.push(sent);
            out.push(format!(
                "steps {}{} · {}",
                state.state.steps(),
                l.step
                    .as_ref()
                    .map(|s| format!(" (this call: {})", s.reason.name()))
                    .unwrap_or_default(),
                l.note
            ));
        }
        None => out.push("no model call yet".into()),
    }
    let b = &st["bill"];
    if b.is_object() {
        let hits = (b["cacheHits"].as_f64().unwrap_or(0.0) * 1000.0).round() as u64;
        let calls = b["calls"].as_u64().unwrap_or(0);
        let unpriced = b["unpriced"].as_u64().unwrap_or(0);
        out.push(format!(
            "cache hits {} % of input tokens · bill so far {} (Pi's records, {}) · ~{} without the package (estimated){}",
            units::percent(hits, 1000).unwrap_or(0),
            units::money(b["recorded"].as_f64().unwrap_or(0.0)),
            units::plural(calls, "call", "calls"),
            units::money(b["withoutPackage"].as_f64().unwrap_or(0.0)),
            if unpriced > 0 { format!(" · {} unpriced", units::count(unpriced)) } else { String::new() },
        ));
        if b["updating"].as_bool() == Some(true) {
            out.push("the bill is being brought up to date apart; /ctx-status again shows it".into());
        }
    } else if state.session_file.is_some() {
        out.push("bill so far: being computed apart (a long session takes seconds); /ctx-status again shows it".into());
    }
    out.push(format!(
        "early compaction {} · latch {}{} · {} · {}",
        if state.live.compact_early { "on" } else { "off" },
        state.latch.name(),
        state
            .last_decision
            .as_ref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default(),
        units::plural(state.compactions, "compaction", "compactions"),
        units::plural(state.calls, "call", "calls"),
    ));
    if let Some(a) = &state.last_audit {
        out.push(format!(
            "last compaction: {}",
            a.trim_start_matches("bonsai: the compaction ")
        ));
    }
    let problems = &st["problems"];
    if let Some(p) = problems.as_array().filter(|p| !p.is_empty()) {
        let words: Vec<&str> = p.iter().filter_map(|x| x.as_str()).collect();
        out.push(format!("settings not used: {}", words.join("; ")));
    }
    out
}

/// The session's bill so far: as Pi recorded it, and the same calls replayed without the
/// package (estimated), with the cache hits Pi recorded.
fn bill_so_far(
    settings: &Settings,
    live_settings: &LiveSettings,
    registry: &Registry,
    pi: crate::engine::load::pi_version::PiVersion,
    file: &Path,
) -> Option<Value> {
    use crate::store::index;
    let place = index::Place::in_agent(&agent_dir(), settings);
    let s = index::open_proven(file, &place).ok()?.session.read_as(pi);
    let env_of = |m: Option<(&str, &str)>| {
        let (window, reserve) = m
            .and_then(|(a, b)| registry.find(a, b))
            .map(|x| (x.context_window, settings.reserve_tokens(m)))
            .unwrap_or((
                crate::engine::load::models::DEFAULT_CONTEXT_WINDOW,
                settings.reserve_tokens(m),
            ));
        CallEnv {
            context_window: crate::engine::load::models::window_or_default(Some(window)),
            reserve_tokens: reserve,
            prices: m.and_then(|(a, b)| registry.find(a, b).map(Prices::of_model)),
        }
    };
    let off = live_settings.with_policy(live::LivePolicy::Off);
    let b = live::bill::bill_with(&s, &[off], registry, &env_of, false);
    let r = &b.recorded;
    let prompt = r.tokens.input + r.tokens.cache_read + r.tokens.cache_write;
    Some(json!({
        "calls": r.calls,
        "recorded": r.cost + r.summary_cost,
        "cacheHits": if prompt > 0.0 { r.tokens.cache_read / prompt } else { 0.0 },
        "withoutPackage": b.policies[0].cost + r.summary_cost,
        "unpriced": r.unpriced,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(state: &mut Served, line: &str) -> Value {
        let (id, r, _) = handle_line(state, line, 1);
        match r {
            Ok(v) => json!({"id": id, "result": v}),
            Err(Fail(code, message)) => json!({"id": id, "error": {"code": code, "message": message}}),
        }
    }

    #[test]
    fn bad_requests_get_error_replies() {
        let mut st = Served::new(PathBuf::from("/nonexistent-bonsai-test"));
        assert_eq!(ask(&mut st, "{not json")["error"]["code"], "bad-request");
        assert_eq!(ask(&mut st, "{not json")["id"], Value::Null);
        assert_eq!(ask(&mut st, r#"{"id": 3}"#)["error"]["code"], "bad-request");
        assert_eq!(ask(&mut st, r#"{"id": 3}"#)["id"], 3);
        let r = ask(&mut st, r#"{"id": 4, "method": "frobnicate"}"#);
        assert_eq!(r["error"]["code"], "unknown-method");
        let r = ask(&mut st, r#"{"id": 5, "method": "hello", "params": {"protocol": 1}}"#);
        assert_eq!(r["error"]["code"], "protocol");
        assert!(r["error"]["message"].as_str().unwrap().contains("speaks 2"));
        let r = ask(
            &mut st,
            r#"{"id": 6, "method": "context", "params": {"messages": [1]}}"#,
        );
        assert_eq!(r["error"]["message"], "messages[0] is not an object");
        let r = ask(&mut st, r#"{"id": 7, "method": "context", "params": []}"#);
        assert_eq!(r["error"]["code"], "bad-request");
        let r = ask(
            &mut st,
            r#"{"id": 8, "method": "context", "params": {"messages": [{}], "hashes": ["xyz"]}}"#,
        );
        assert_eq!(r["error"]["code"], "bad-request");
    }

    /// A coding session's messages: `n` turns of a request and an answer, a minute apart.
    fn turns(n: usize) -> Vec<Value> {
        let mut msgs = Vec::new();
        for t in 0..n {
            let ts = 1_000_000 + 60_000 * t as i64;
            msgs.push(json!({"role": "user", "content": [{"type": "text", "text": format!("request {t}: {}", "x".repeat(4000))}], "timestamp": ts}));
            msgs.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {t}")}], "stopReason": "stop", "timestamp": ts + 1,
                "usage": {"input": 1000 * t, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1000 * t + 5}}));
        }
        msgs
    }

    fn hex(n: u32) -> String {
        format!("{n:08x}")
    }

    /// The package's side: fingerprints are its own; here, a message's index.
    fn context_request(id: u64, msgs: &[Value], base: usize) -> String {
        let mut chain = vec![CHAIN_START];
        for k in 0..msgs.len() {
            chain.push(chain_next(chain[k], k as u32));
        }
        let hashes: Vec<String> = (base..msgs.len()).map(|k| hex(k as u32)).collect();
        json!({"id": id, "method": "context", "params": {"base": base, "baseHash": hex(chain[base]),
            "messages": &msgs[base..], "hashes": hashes, "usage": {"tokens": 100, "contextWindow": 200000}}})
        .to_string()
    }

    #[test]
    fn context_takes_what_was_appended_and_answers_in_runs() {
        let mut st = Served::new(PathBuf::from("/nonexistent-bonsai-test"));
        let r = ask(&mut st, r#"{"id": "h", "method": "hello", "params": {"protocol": 2}}"#);
        assert_eq!(r["result"]["protocol"], 2);
        assert_eq!(r["result"]["settings"]["policy"], "zones");
        assert_eq!(r["result"]["settings"]["steps"]["high"], 16_000);
        // Every call a minute after the one before: the cache is warm, steps wait until
        // they pay; the whole list first, then what was appended.
        let msgs = turns(40);
        let mut last = Value::Null;
        let mut stepped = 0;
        // Each call's context ends at a request; the engine holds the call before's.
        let mut held = 0;
        for len in (1..msgs.len()).step_by(2) {
            let r = ask(&mut st, &context_request(len as u64, &msgs[..len], held));
            assert!(r["error"].is_null(), "{r}");
            assert_eq!(r["result"]["held"], len);
            held = len;
            stepped += usize::from(r["result"]["notice"].is_string());
            last = r["result"].clone();
        }
        assert!(stepped >= 1, "no step in 40 turns of 1,000 tokens");
        assert_eq!(last["changed"], true);
        let pieces = last["pieces"].as_array().unwrap();
        assert!(pieces[0]["message"]["customType"] == live::PACKET_TYPE);
        // Pi's messages kept come as one run.
        let runs: Vec<&Value> = pieces.iter().filter(|p| p["keep"].is_array()).collect();
        assert_eq!(runs.len(), 1, "{pieces:?}");
        assert_eq!(runs[0]["keep"][1], held);
        // A chain that is not the engine's: resync, and the whole list mends it.
        let wrong = context_request(99, &msgs, msgs.len() - 1).replace(&hex(7), &hex(8));
        let mut bad: Value = serde_json::from_str(&wrong).unwrap();
        bad["params"]["baseHash"] = json!("00000000");
        let r = ask(&mut st, &bad.to_string());
        assert_eq!(r["error"]["code"], "resync", "{r}");
        let r = ask(&mut st, &context_request(100, &msgs, 0));
        assert_eq!(r["result"]["held"], msgs.len());
        // The same answer from a state kept over the calls and from the whole list at once.
        let mut fresh = Served::new(PathBuf::from("/nonexistent-bonsai-test"));
        let once = ask(&mut fresh, &context_request(1, &msgs, 0));
        assert_eq!(once["result"]["pieces"], r["result"]["pieces"]);
        let s = ask(&mut st, r#"{"id": 9, "method": "status"}"#);
        assert!(s["result"]["steps"].as_u64().unwrap() >= 1);
        assert!(s["result"]["last"]["turnsKept"].as_u64().unwrap() < 40);
        // `/ctx-status` prints these lines as they are: the engine's words and formats.
        let s = ask(
            &mut st,
            r#"{"id": 10, "method": "status", "params": {"piFigure": 12345.4}}"#,
        );
        let lines: Vec<&str> = s["result"]["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert!(
            lines[1].starts_with("whole context ") && lines[1].contains("Pi's figure now 12,345 ·"),
            "{lines:?}"
        );
        assert!(
            lines[2].starts_with("as sent ") && lines[2].contains("tokens of messages (estimate;"),
            "{lines:?}"
        );
        assert!(lines.iter().any(|l| l.starts_with("early compaction ")), "{lines:?}");
    }

    #[test]
    fn the_chain_is_fnv1a_over_little_endian_bytes() {
        // The package computes the same (pi-package/lib/engine.ts, chainNext).
        // The values node prints for `hex(chainNext(CHAIN_START, "00000000"))` and
        // `hex(chainNext(0x12345678, "deadbeef"))`.
        assert_eq!(hex(chain_next(CHAIN_START, 0)), "f4b97920");
        assert_eq!(hex(chain_next(0x1234_5678, 0xdead_beef)), "2ca9bf8b");
    }
}
