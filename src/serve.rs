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

mod compaction;
mod context;
pub mod protocol;
mod recall;
mod served;
mod status;

use protocol::{Fail, Incoming, Request, ShutdownAnswer, bad};
use serde::Serialize;
use serde_json::{Value, json};
use served::Served;
use std::io::{BufRead, Write};
use std::path::PathBuf;

pub use protocol::PROTOCOL;

/// Serve one Pi session over stdin and stdout until stdin closes or `shutdown`.
/// - `log`: one JSON line per request appended to it (no session text).
/// - `record`: every exchange whole, `{"request": …, "reply": …}`, session text included
///   (for the recorded-exchange test, `tests/serve_protocol.rs`).
pub fn serve_stdio(log: Option<PathBuf>, record: Option<PathBuf>) -> color_eyre::eyre::Result<()> {
    let append = |p: Option<PathBuf>, what: &str| -> color_eyre::eyre::Result<Option<std::fs::File>> {
        p.map(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .map_err(|e| color_eyre::eyre::eyre!("{what} {}: {e}", p.display()))
        })
        .transpose()
    };
    let mut log = append(log, "--log")?;
    let mut record = append(record, "BONSAI_SERVE_RECORD")?;
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
                let msg = reply(&Value::Null, Err(bad(format!("request line {n} is not UTF-8"))));
                send(&mut out, &msg)?;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        n += 1;
        if line.trim().is_empty() {
            continue;
        }
        let started = std::time::Instant::now();
        let answered = handle_line(&mut state, &line, n);
        if let Some(f) = &mut log {
            let _ = writeln!(
                f,
                "{}",
                log_line(
                    answered.method.as_deref(),
                    line.len(),
                    &answered.result,
                    started.elapsed()
                )
            );
        }
        let msg = reply(&answered.id, answered.result);
        send(&mut out, &msg)?;
        if let Some(f) = &mut record {
            let request = serde_json::from_str::<Value>(&line).unwrap_or_else(|_| json!(line));
            let mut one = json!({"request": request, "reply": msg}).to_string();
            one.push('\n');
            // One write per exchange: the engines of several Pi sessions may share the file.
            let _ = f.write_all(one.as_bytes());
        }
        if answered.method.as_deref() == Some("shutdown") && answered.ok_shutdown {
            return Ok(());
        }
    }
}

/// One request line answered: its id, its method when one was read, the answer, and whether
/// it was a `shutdown` that was answered.
struct Answered {
    id: Value,
    method: Option<String>,
    result: Result<Value, Fail>,
    ok_shutdown: bool,
}

fn handle_line(state: &mut Served, line: &str, n: u64) -> Answered {
    let Incoming { id, method, request } = Incoming::read(line, n);
    let req = match request {
        Ok(r) => r,
        Err(f) => {
            return Answered {
                id,
                method,
                result: Err(f),
                ok_shutdown: false,
            };
        }
    };
    let method = method.unwrap_or_default();
    let shutdown = matches!(req, Request::Shutdown(_));
    // A bug in one request must not take the engine down: Pi would lose its live policy.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatch(state, req)));
    match r {
        Ok(result) => Answered {
            ok_shutdown: shutdown && result.is_ok(),
            id,
            method: Some(method),
            result,
        },
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into());
            Answered {
                result: Err(Fail("internal", format!("{method} failed inside bonsai: {what}"))),
                id,
                method: Some(method),
                ok_shutdown: false,
            }
        }
    }
}

/// The answer of one request, as JSON.
fn dispatch(state: &mut Served, req: Request) -> Result<Value, Fail> {
    fn out<T: Serialize>(r: Result<T, Fail>) -> Result<Value, Fail> {
        r.and_then(|a| serde_json::to_value(a).map_err(|e| Fail("internal", e.to_string())))
    }
    match req {
        Request::Hello(p) => out(state.hello(p)),
        Request::Context(p) => out(context::context(state, p)),
        Request::TurnEnd(p) => out(compaction::turn_end(state, p)),
        Request::CompactionDone(p) => out(Ok(compaction::compaction_done(state, p))),
        Request::Summarize(p) => out(compaction::summarize(state, p)),
        Request::Audit(p) => out(compaction::audit(state, p)),
        Request::Mend(p) => out(compaction::mend(state, p)),
        Request::Recall(p) => out(recall::recall(state, p)),
        Request::Status(p) => out(Ok(status::status(state, p))),
        Request::Shutdown(_) => out(Ok(ShutdownAnswer { bye: true })),
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

/// The reply line of an answer.
fn reply(id: &Value, r: Result<Value, Fail>) -> Value {
    match r {
        Ok(v) => json!({"id": id, "result": v}),
        Err(Fail(code, message)) => json!({"id": id, "error": {"code": code, "message": message}}),
    }
}

fn send(out: &mut impl Write, msg: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, msg)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::live;
    use context::chain_next;
    use served::CHAIN_START;

    fn ask(state: &mut Served, line: &str) -> Value {
        let a = handle_line(state, line, 1);
        reply(&a.id, a.result)
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
        // Read in one pass when the method comes first; params before it are read after.
        let r = ask(
            &mut st,
            r#"{"params": {"ok": true}, "id": 9, "method": "compaction_done"}"#,
        );
        assert_eq!(r["result"]["latch"], "idle", "{r}");
        assert_eq!(r["id"], 9);
        let r = ask(&mut st, r#"{"id": 10, "method": 3}"#);
        assert_eq!(r["error"]["message"], "the request has no \"method\" string");
        // Only an object is params, and only an object is a request (serde would read an
        // array as the fields in order).
        let r = ask(&mut st, r#"{"id": 11, "method": "hello", "params": [2]}"#);
        assert_eq!(r["error"]["code"], "bad-request", "{r}");
        assert_eq!(r["id"], 11);
        let r = ask(&mut st, r#"[12, "hello", {"protocol": 2}]"#);
        assert_eq!(
            r["error"]["message"],
            "request line 1 is not a request object: invalid type: sequence, expected a request object",
            "{r}"
        );
        let r = ask(&mut st, r#"{"id": 13, "method": "recall", "params": {"query": 3}}"#);
        assert_eq!(
            r["error"]["message"], "recall: invalid type: integer `3`, expected a string",
            "{r}"
        );
        assert_eq!(r["id"], 13);
        let r = ask(&mut st, r#"{"id": 14, "method": "status"} x"#);
        assert_eq!(r["error"]["code"], "bad-request", "{r}");
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
