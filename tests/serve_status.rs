//! `/ctx-status` never delays a model call: `bonsai serve` computes the bill so far apart
//! (a thread), so a `status` request answers at once on a big session, and a `context`
//! request made while the bill is computed answers in its usual time.

mod common;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

struct Serve {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    id: u64,
}

impl Serve {
    fn start(home: &Path) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bonsai"))
            .args(["serve", "--stdio"])
            .env("HOME", home)
            .env("PI_CODING_AGENT_DIR", home.join("agent"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Serve {
            child,
            stdin,
            out,
            id: 0,
        }
    }

    /// A request, its answer, and how long it took.
    fn ask(&mut self, method: &str, params: Value) -> (Value, Duration) {
        self.id += 1;
        let t = Instant::now();
        writeln!(
            self.stdin,
            "{}",
            json!({"id": self.id, "method": method, "params": params})
        )
        .unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        let took = t.elapsed();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(v["error"].is_null(), "{method}: {v}");
        (v["result"].clone(), took)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lines(status: &Value) -> String {
    status["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A few turns of Pi's messages, as the package sends them.
fn messages(n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for t in 0..n {
        let ts = 1_000_000 + 60_000 * t as i64;
        out.push(
            json!({"role": "user", "content": [{"type": "text", "text": format!("request {t}")}], "timestamp": ts}),
        );
        out.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {t}")}], "stopReason": "stop", "timestamp": ts + 1,
            "usage": {"input": 100 * t, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 100 * t + 5}}));
    }
    out
}

/// `status` on `file` answers within 0.5 s whatever the session's size, and a `context`
/// request meanwhile within `limit`; the bill comes once computed apart. Returns the times.
fn status_apart(file: &Path, limit: Duration) -> (Duration, Duration, Duration) {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("agent")).unwrap();
    let mut s = Serve::start(home.path());
    s.ask("hello", json!({"protocol": 2, "sessionFile": file, "cwd": home.path()}));
    let msgs = messages(20);
    let (_, usual) = s.ask("context", json!({"base": 0, "messages": msgs, "usage": null}));
    let (st, first) = s.ask("status", json!({"sessionFile": file}));
    assert!(first <= Duration::from_millis(500), "status took {first:?}");
    assert!(
        lines(&st).contains("being computed apart"),
        "the bill is not ready at once on a big session: {}",
        lines(&st)
    );
    // A model call while the bill is computed: its usual time.
    let (_, during) = s.ask("context", json!({"base": 0, "messages": msgs, "usage": null}));
    assert!(
        during <= limit.max(usual * 4),
        "context took {during:?} (usually {usual:?})"
    );
    let started = Instant::now();
    let ready = loop {
        let (st, took) = s.ask("status", json!({"sessionFile": file}));
        assert!(took <= Duration::from_millis(500), "status took {took:?}");
        if lines(&st).contains("bill so far $") && !lines(&st).contains("brought up to date") {
            break started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(600), "no bill after 10 minutes");
        std::thread::sleep(Duration::from_millis(100));
    };
    (first, during, ready)
}

/// A 40 MB session: `status` at once, a model call meanwhile in its usual time.
#[test]
fn status_never_makes_a_model_call_wait() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.jsonl");
    std::fs::write(&file, common::synth::Synth::new(40 << 20).make()).unwrap();
    let (first, during, ready) = status_apart(&file, Duration::from_millis(200));
    common::say(&format!(
        "serve_status: 40 MB: status {first:?}, a context call meanwhile {during:?}, the bill ready after {ready:?}"
    ));
}

/// The same on a session named by `BONSAI_BIG_SESSION` (the 1 GB reference, for
/// BENCHMARKS.md).
#[test]
#[ignore]
fn status_on_the_big_reference() {
    let Some(file) = std::env::var_os("BONSAI_BIG_SESSION") else {
        common::say("SKIPPED serve_status::status_on_the_big_reference: BONSAI_BIG_SESSION names no session");
        return;
    };
    let (first, during, ready) = status_apart(Path::new(&file), Duration::from_millis(200));
    println!("STATUS first {first:?} during {during:?} bill ready after {ready:?}");
}
