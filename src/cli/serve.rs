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
//! Methods (protocol 1):
//! - `hello {protocol, cwd, sessionFile, piVersion}` → the engine's version and protocol, the
//!   live settings in effect and the settings it could not use (each named with its value).
//! - `context {messages, usage: {tokens, contextWindow}, model: {provider, id}}` → `changed`,
//!   and when changed the messages to send as `pieces` (`{"keep": i}`, `{"message": {...}}`),
//!   and the `report`. The same function `bonsai context --live` calls.
//! - `turn_end {usage, leafId, sessionFile, model}` → whether to compact now (the latch, see
//!   `engine::live::early_compaction`), and how: a compaction `draft` Pi appends at that
//!   boundary (offline summary or one of bonsai's strategies), or for Pi's own summary its
//!   `preparation` (Pi's `CompactionPreparation`, which the package hands to Pi's `compact`).
//! - `compaction_done {ok, error}` → the latch after the package's compaction.
//! - `summarize {sessionFile, leafId, firstKeptEntryId, customInstructions}` → for Pi's
//!   `session_before_compact` hook: bonsai's summary when `bonsai.live.summarizer` is not `pi`.
//! - `status` → what `/ctx-status` shows.
//! - `shutdown` → replies, then exits.

use crate::engine::compaction::cut::CompactionPlan;
use crate::engine::compaction::offline;
use crate::engine::compaction::slices::SliceParams;
use crate::engine::compaction::strategy::Strategy;
use crate::engine::compaction::summary::Summary;
use crate::engine::compaction::summary::SummaryInput;
use crate::engine::edit::entries;
use crate::engine::live::{self, Latch, LiveInput, LiveReport, LiveSettings, Piece, Summarizer};
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::engine::view::context;
use crate::store::config::{agent_dir, load_registry, load_settings};
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
pub const PROTOCOL: u64 = 1;

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
    /// The method of the request being answered (for the log).
    method: Option<String>,
    /// The Pi release the package runs in (`hello`'s `piVersion`): sessions are read as it.
    pi: crate::engine::load::pi_version::PiVersion,
}

impl Served {
    fn new(cwd: PathBuf) -> Served {
        let settings = load_settings(&cwd);
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
            method: None,
            pi: crate::store::pi_version::followed(),
        }
    }

    fn settings_json(&self) -> Value {
        let l = &self.live;
        json!({
            "policy": l.policy.name(),
            "turns": {"green": l.turns.green, "yellow": l.turns.yellow, "red": l.turns.red},
            "packetTokens": l.packet_tokens,
            "gaugeZones": [l.zones.0, l.zones.1],
            "compactEarly": l.compact_early,
            "summarizer": l.summarizer.name(),
        })
    }
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
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(state, &method, &params)));
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

fn dispatch(state: &mut Served, method: &str, p: &Value) -> Result<Value, Fail> {
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
                state.latch = if ok { Latch::Done } else { Latch::Failed };
            }
            if ok {
                state.compactions += 1;
            }
            Ok(json!({"latch": state.latch.name()}))
        }
        "summarize" => summarize_call(state, p),
        "status" => Ok(status(state)),
        "shutdown" => Ok(json!({"bye": true})),
        other => Err(Fail(
            "unknown-method",
            format!(
                "unknown method `{other}` (this engine speaks protocol {PROTOCOL}: hello, context, turn_end, compaction_done, summarize, status, shutdown)"
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
        *state = Served::new(PathBuf::from(cwd));
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

fn context_call(state: &mut Served, p: &Value) -> Result<Value, Fail> {
    let msgs = p
        .get("messages")
        .and_then(|m| m.as_array())
        .ok_or_else(|| bad("context needs \"messages\": an array"))?;
    if let Some((k, _)) = msgs.iter().enumerate().find(|(_, m)| !m.is_object()) {
        return Err(bad(format!("messages[{k}] is not an object")));
    }
    let (window, reserve) = window_and_reserve(state, p);
    let input = LiveInput {
        messages: msgs,
        usage_tokens: usage_tokens(p),
        context_window: window,
        reserve_tokens: reserve,
    };
    let answer = live::live_context(&input, &state.live);
    state.calls += 1;
    let changed = answer.changed(msgs.len());
    let mut out = json!({
        "changed": changed,
        "report": super::read::live_report_json(&answer.report),
    });
    if changed {
        let pieces: Vec<Value> = answer
            .pieces
            .into_iter()
            .map(|piece| match piece {
                Piece::Keep(i) => json!({"keep": i}),
                Piece::Replace(_, v) | Piece::Insert(v) => json!({"message": v}),
            })
            .collect();
        out["pieces"] = Value::Array(pieces);
    }
    state.last = Some(answer.report);
    Ok(out)
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
    let cs = state.settings.compaction_settings(model, None, None);
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
    let d = live::early_compaction(state.latch, usage_tokens(p), threshold, &state.live);
    state.latch = d.latch;
    state.last_decision = Some(d.reason.clone());
    let mut out = json!({
        "compact": false,
        "zone": d.zone.map(|z| z.name()),
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
    let planned = plan_at(state, &file, p.get("leafId").and_then(|l| l.as_str()), mref);
    let (s, _leaf, plan) = match planned {
        Ok(x) => x,
        Err(Fail(_, why)) => {
            state.latch = Latch::Failed;
            out["latch"] = json!(state.latch.name());
            out["reason"] = json!(format!("red, but {why}"));
            return Ok(out);
        }
    };
    out["compact"] = json!(true);
    if state.live.summarizer == Summarizer::Pi {
        out["preparation"] = preparation_json(&s, &plan);
        return Ok(out);
    }
    match bonsai_summary(state, &s, &plan, None, mref) {
        Ok(summary) => {
            let mut draft = compaction_json(&s, &plan, &summary);
            draft["type"] = json!("compaction");
            if let Value::Object(o) = &mut draft {
                o.remove("tokensBefore");
            }
            out["draft"] = draft;
            // Pi appends a returned draft at this boundary: the episode has its compaction.
            state.latch = Latch::Done;
            state.compactions += 1;
        }
        Err(Fail(_, why)) => {
            state.latch = Latch::Failed;
            out["compact"] = json!(false);
            out["reason"] = json!(format!("red, but the summary failed: {why}"));
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
    let summary = bonsai_summary(state, &s, &plan, instructions, mref)?;
    state.compactions += 1;
    Ok(json!({"compaction": compaction_json(&s, &plan, &summary), "summarizer": state.live.summarizer.name()}))
}

fn status(state: &Served) -> Value {
    json!({
        "engine": format!("bonsai {}", env!("CARGO_PKG_VERSION")),
        "protocol": PROTOCOL,
        "piVersion": state.pi.name(),
        "settings": state.settings_json(),
        "problems": state.live.problems.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
        "calls": state.calls,
        "last": state.last.as_ref().map(super::read::live_report_json),
        "latch": state.latch.name(),
        "lastDecision": state.last_decision,
        "compactions": state.compactions,
        "cwd": state.cwd,
        "sessionFile": state.session_file,
    })
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
        let r = ask(&mut st, r#"{"id": 5, "method": "hello", "params": {"protocol": 99}}"#);
        assert_eq!(r["error"]["code"], "protocol");
        assert!(r["error"]["message"].as_str().unwrap().contains("speaks 1"));
        let r = ask(
            &mut st,
            r#"{"id": 6, "method": "context", "params": {"messages": [1]}}"#,
        );
        assert_eq!(r["error"]["message"], "messages[0] is not an object");
        let r = ask(&mut st, r#"{"id": 7, "method": "context", "params": []}"#);
        assert_eq!(r["error"]["code"], "bad-request");
    }

    #[test]
    fn context_replies_keep_pieces_by_index() {
        let mut st = Served::new(PathBuf::from("/nonexistent-bonsai-test"));
        let r = ask(&mut st, r#"{"id": "h", "method": "hello", "params": {"protocol": 1}}"#);
        assert_eq!(r["result"]["protocol"], 1);
        assert_eq!(r["result"]["settings"]["policy"], "zones");
        let mut msgs = Vec::new();
        for t in 0..10 {
            msgs.push(
                json!({"role": "user", "content": [{"type": "text", "text": format!("request {t}")}], "timestamp": t}),
            );
            msgs.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {t}")}], "stopReason": "stop", "timestamp": t}));
        }
        let req = json!({"id": 1, "method": "context", "params": {"messages": msgs, "usage": {"tokens": 100, "contextWindow": 200000}}});
        let r = ask(&mut st, &req.to_string());
        let res = &r["result"];
        assert_eq!(res["changed"], true);
        let pieces = res["pieces"].as_array().unwrap();
        assert!(pieces[0]["message"]["customType"] == live::PACKET_TYPE);
        assert_eq!(pieces[1], json!({"keep": 4}));
        assert_eq!(pieces.len(), 1 + 16);
        assert_eq!(res["report"]["turnsKept"], 8);
        // Few messages: unchanged, no pieces.
        let req = json!({"id": 2, "method": "context", "params": {"messages": &msgs[..4], "usage": {"tokens": 100, "contextWindow": 200000}}});
        let r = ask(&mut st, &req.to_string());
        assert_eq!(r["result"]["changed"], false);
        assert!(r["result"].get("pieces").is_none());
        let s = ask(&mut st, r#"{"id": 9, "method": "status"}"#);
        assert_eq!(s["result"]["calls"], 2);
        assert_eq!(s["result"]["last"]["turnsKept"], 2);
    }
}
