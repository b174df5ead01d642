//! The protocol between bonsai's Pi package and `bonsai serve`, written once in Rust
//! (`bonsai::serve::protocol`), checked against what the package's TypeScript says:
//! - `fixtures/serve/exchanges.jsonl` holds exchanges recorded from the package in real Pi
//!   (`BONSAI_KEEP_EXCHANGES=DIR cargo test --test live_pi --test live_recall`, trimmed by
//!   `scripts/exchanges-fixture.py`): every request reads as the protocol's types with no
//!   field they do not name, every reply is what its answer type writes, every method is seen;
//! - every live test that runs the package records its exchanges and checks them the same way
//!   when its world ends (`common::live_pi::World`), on each Pi release;
//! - here, `bonsai serve` is driven through every method and its recording checked.

mod common;

use common::protocol::{check_exchange, check_recording};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn the_recorded_exchanges_of_the_package_are_the_protocol() {
    let path = common::repo().join("fixtures/serve/exchanges.jsonl");
    let (problems, seen) = check_recording(&path);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let unseen: Vec<&str> = bonsai::serve::protocol::METHODS
        .iter()
        .copied()
        .filter(|m| !seen.contains(*m))
        .collect();
    assert!(unseen.is_empty(), "methods no recorded exchange shows: {unseen:?}");
}

#[test]
fn a_field_either_side_does_not_name_is_caught() {
    let ok = json!({"request": {"id": 1, "method": "compaction_done", "params": {"ok": true}},
        "reply": {"id": 1, "result": {"latch": "done"}}});
    assert_eq!(check_exchange(&ok).unwrap(), "compaction_done");
    // The package says a field the protocol does not name.
    let mut x = ok.clone();
    x["request"]["params"]["okay"] = json!(true);
    let e = check_exchange(&x).unwrap_err();
    assert!(e.contains("params.okay"), "{e}");
    // The engine answers a field its answer type does not write.
    let mut x = ok.clone();
    x["reply"]["result"]["since"] = json!(3);
    let e = check_exchange(&x).unwrap_err();
    assert!(e.contains("result.since"), "{e}");
    // A field of the wrong kind.
    let mut x = ok.clone();
    x["request"]["params"]["ok"] = json!("yes");
    assert!(check_exchange(&x).unwrap_err().contains("compaction_done"));
    // An error reply with a code the protocol has not.
    let mut x = ok;
    x["reply"] = json!({"id": 1, "error": {"code": "oops", "message": "?"}});
    assert!(check_exchange(&x).is_err());
}

/// `bonsai serve --stdio` in a Pi agent folder with `settings`, recording its exchanges.
struct Served {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Served {
    fn start(dir: &std::path::Path, record: &std::path::Path) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bonsai"))
            .args(["serve", "--stdio"])
            .current_dir(dir.join("project"))
            .env("PI_CODING_AGENT_DIR", dir.join("agent"))
            .env("HOME", dir)
            .env("BONSAI_SERVE_RECORD", record)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Served { child, out, id: 0 }
    }

    fn ask(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let line = json!({"id": self.id, "method": method, "params": params}).to_string();
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        let mut reply = String::new();
        self.out.read_line(&mut reply).unwrap();
        serde_json::from_str(&reply).unwrap()
    }
}

#[test]
fn every_method_answers_in_its_type() {
    let dir = tempfile::tempdir().unwrap();
    let (agent, project) = (dir.path().join("agent"), dir.path().join("project"));
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let session = dir.path().join("long.jsonl");
    std::fs::copy(common::repo().join("fixtures/pi-1.5.2/long.jsonl"), &session).unwrap();
    let record = dir.path().join("exchanges.jsonl");
    let file = session.to_str().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    // Pi's own summarizer (the default), then bonsai's offline one.
    for summarizer in ["pi", "offline"] {
        std::fs::write(
            agent.join("settings.json"),
            json!({"bonsai": {"live": {"summarizer": summarizer}}}).to_string(),
        )
        .unwrap();
        let _ = std::fs::remove_file(&record);
        let mut s = Served::start(dir.path(), &record);
        let hello = s.ask(
            "hello",
            json!({"protocol": 2, "client": "test", "piVersion": "1.5.2", "cwd": project, "sessionFile": file,
                "mode": "rpc", "projectTrusted": false}),
        );
        assert_eq!(hello["result"]["settings"]["summarizer"], summarizer, "{hello}");
        let msgs: Vec<Value> = (0..6)
            .map(|k| {
                json!({"role": if k % 2 == 0 { "user" } else { "assistant" },
                "content": [{"type": "text", "text": format!("message {k} about src/parse.rs")}], "timestamp": 1000 + k})
            })
            .collect();
        let hashes: Vec<String> = (0..6).map(|k| format!("{k:08x}")).collect();
        let usage = json!({"tokens": 90_000, "contextWindow": 100_000});
        let model = json!({"provider": "fakeco", "id": "fake-model"});
        let r = s.ask(
            "context",
            json!({"base": 0, "baseHash": "811c9dc5", "messages": msgs, "hashes": hashes, "usage": usage, "model": model}),
        );
        assert!(r["result"]["held"] == 6, "{r}");
        // A base the engine does not hold: resync.
        let r = s.ask(
            "context",
            json!({"base": 3, "baseHash": "00000000", "messages": [], "hashes": []}),
        );
        assert_eq!(r["error"]["code"], "resync", "{r}");
        let r = s.ask(
            "turn_end",
            json!({"usage": usage, "model": model, "leafId": null, "sessionFile": file}),
        );
        assert_eq!(r["result"]["compact"], true, "{r}");
        match summarizer {
            "pi" => {
                assert!(r["result"]["preparation"]["firstKeptEntryId"].is_string(), "{r}");
                s.ask("compaction_done", json!({"ok": true}));
                let r = s.ask(
                    "summarize",
                    json!({"sessionFile": file, "leafId": null, "firstKeptEntryId": null,
                    "customInstructions": null, "model": model, "reason": "threshold"}),
                );
                assert!(r["result"]["compaction"].is_null(), "{r}");
            }
            _ => {
                assert_eq!(r["result"]["draft"]["type"], "compaction", "{r}");
                s.ask("compaction_done", json!({"ok": false, "error": "aborted"}));
                let r = s.ask(
                    "summarize",
                    json!({"sessionFile": file, "leafId": null, "firstKeptEntryId": null,
                    "customInstructions": "keep the parser", "model": model, "reason": "manual"}),
                );
                assert!(r["result"]["compaction"]["summary"].is_string(), "{r}");
            }
        }
        let r = s.ask(
            "mend",
            json!({"sessionFile": file, "leafId": null, "summary": "The user works on the parser.",
            "firstKeptEntryId": null, "model": model}),
        );
        assert!(r["result"]["line"].is_string(), "{r}");
        let r = s.ask("audit", json!({"sessionFile": file, "entryId": "56b3ebba"}));
        assert!(r["result"]["total"].is_number(), "{r}");
        let r = s.ask(
            "audit",
            json!({"sessionFile": file, "summary": "nothing", "leafId": null}),
        );
        assert!(r["result"]["lost"].is_number(), "{r}");
        let r = s.ask("recall", json!({"query": "parse", "sessionFile": file, "leafId": null}));
        assert!(r["result"]["text"].is_string(), "{r}");
        let r = s.ask("status", json!({"sessionFile": file, "piFigure": 1234}));
        assert!(r["result"]["lines"].is_array(), "{r}");
        assert_eq!(s.ask("shutdown", json!({}))["result"]["bye"], true);
        assert!(s.child.wait().unwrap().success());
        let (problems, methods) = check_recording(&record);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        seen.extend(methods);
    }
    assert_eq!(seen.len(), bonsai::serve::protocol::METHODS.len(), "{seen:?}");
    // A request outside the protocol is answered with an error that names what is wrong (and
    // the recording shows it as outside the protocol).
    let bad = dir.path().join("bad.jsonl");
    let mut s = Served::start(dir.path(), &bad);
    let r = s.ask("frobnicate", json!({}));
    assert_eq!(r["error"]["code"], "unknown-method");
    let r = s.ask("recall", json!({"query": 3}));
    assert_eq!(r["error"]["code"], "bad-request", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("recall: invalid type: integer `3`"),
        "{r}"
    );
    let r = s.ask("context", json!({"messages": [1]}));
    assert_eq!(r["error"]["message"], "messages[0] is not an object", "{r}");
    drop(s.child.stdin.take());
    assert!(s.child.wait().unwrap().success());
    let (problems, _) = check_recording(&bad);
    assert_eq!(problems.len(), 2, "{problems:?}");
}
