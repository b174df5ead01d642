//! Handing sessions back to Pi: `bonsai resume [QUERY]`, `bonsai search --resume N`, and the
//! titles bonsai makes for unnamed sessions. A `pi` on PATH that records its folder and
//! arguments stands in for Pi here; `tests/tmux_resume.rs` runs real Pi.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Pi's folder name for a project at `cwd`.
fn folder_of(cwd: &Path) -> String {
    let s = cwd.to_string_lossy();
    format!("--{}--", s.trim_start_matches('/').replace(['/', '\\', ':'], "-"))
}

struct World {
    home: tempfile::TempDir,
    /// Project folders that exist (the sessions' cwds).
    projects: Vec<PathBuf>,
    /// Where the stand-in `pi` writes its folder and arguments.
    record: PathBuf,
    bin: PathBuf,
}

impl World {
    /// Two projects: `ledger` with the repository's Pi 1.5.2 sessions, `acme` with the demo.
    fn new() -> World {
        let home = tempfile::tempdir().unwrap();
        let bin = home.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let record = home.path().join("pi-called.txt");
        let pi = bin.join("pi");
        std::fs::write(
            &pi,
            format!(
                "#!/bin/sh\n{{ pwd; for a in \"$@\"; do echo \"$a\"; done; }} > '{}'\n",
                record.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut projects = vec![];
        let sessions = home.path().join(".pi/agent/sessions");
        for (name, files) in [
            (
                "ledger",
                &["tour.jsonl", "long.jsonl", "split-turn.jsonl", "user-only.jsonl"][..],
            ),
            ("acme", &["demo"][..]),
        ] {
            let cwd = home.path().join("work").join(name);
            std::fs::create_dir_all(&cwd).unwrap();
            let dir = sessions.join(folder_of(&cwd));
            std::fs::create_dir_all(&dir).unwrap();
            for (k, f) in files.iter().enumerate() {
                let src = if *f == "demo" {
                    repo().join("fixtures/demo.jsonl")
                } else {
                    repo().join("fixtures/pi-1.5.2").join(f)
                };
                let text = std::fs::read_to_string(src).unwrap();
                let (head, rest) = text.split_once('\n').unwrap();
                let mut h: Value = serde_json::from_str(head).unwrap();
                h["cwd"] = Value::from(cwd.to_string_lossy().to_string());
                let id = h["id"].as_str().unwrap().to_string();
                let file = dir.join(format!("2026-11-2{k}T10-00-00-000Z_{id}.jsonl"));
                std::fs::write(&file, format!("{h}\n{rest}")).unwrap();
                // Newest first in the order given.
                let t = std::time::SystemTime::now() - std::time::Duration::from_secs(60 * (k as u64 + 1));
                std::fs::File::options()
                    .write(true)
                    .open(&file)
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
            }
            projects.push(cwd);
        }
        World {
            home,
            projects,
            record,
            bin,
        }
    }

    fn bonsai(&self, cwd: &Path, args: &[&str]) -> std::process::Output {
        let path = format!("{}:{}", self.bin.display(), std::env::var("PATH").unwrap_or_default());
        bonsai_isolated(self.home.path())
            .env("PATH", path)
            .current_dir(cwd)
            .args(args)
            .output()
            .unwrap()
    }

    /// What the stand-in `pi` was run with: its folder, then its arguments (and forgets it).
    fn pi_called(&self) -> Option<Vec<String>> {
        let t = std::fs::read_to_string(&self.record).ok()?;
        let _ = std::fs::remove_file(&self.record);
        Some(t.lines().map(String::from).collect())
    }

    /// The session file of `project` whose name starts with `file_start`.
    fn session_named(&self, project: usize, file_start: &str) -> PathBuf {
        let dir = self
            .home
            .path()
            .join(".pi/agent/sessions")
            .join(folder_of(&self.projects[project]));
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(file_start))
            .unwrap()
    }
}

fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn resume_runs_pi_on_the_session_a_query_names_from_its_folder() {
    let w = World::new();
    let elsewhere = w.home.path().to_path_buf();
    // No query: this project's newest session.
    let o = w.bonsai(&w.projects[0], &["resume"]);
    assert!(o.status.success(), "{}", text(&o));
    let called = w.pi_called().expect("pi was run");
    let tour = w.session_named(0, "2026-11-20T");
    assert_eq!(
        called,
        [
            w.projects[0].to_string_lossy().to_string(),
            "--session".into(),
            tour.to_string_lossy().to_string()
        ]
    );
    // Words of a first request, from another folder: the session in the other project, run
    // from that project's folder.
    let o = w.bonsai(&elsewhere, &["resume", "quoted comma"]);
    assert!(o.status.success(), "{}", text(&o));
    let called = w.pi_called().unwrap();
    assert_eq!(called[0], w.projects[1].to_string_lossy());
    assert!(called[2].contains("/--") && called[2].ends_with(".jsonl"), "{called:?}");
    let demo_id = std::fs::read_to_string(&called[2]).unwrap();
    assert!(demo_id.contains("Smith, Jane"), "the demo session");
    // bonsai's title words, and an id prefix.
    let long = w.session_named(0, "2026-11-21T");
    let o = w.bonsai(&elsewhere, &["resume", "--print", "check data/2026-02.csv"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        long.to_string_lossy(),
        "{}",
        text(&o)
    );
    let id =
        serde_json::from_str::<Value>(std::fs::read_to_string(&long).unwrap().lines().next().unwrap()).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
    let o = w.bonsai(&elsewhere, &["resume", &id[..13]]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(w.pi_called().unwrap()[2], long.to_string_lossy());
    // --print runs nothing.
    assert!(w.pi_called().is_none());
    // No match: said, non-zero, Pi not run.
    let o = w.bonsai(&elsewhere, &["resume", "pandas tutorial"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no session matches \"pandas tutorial\""),
        "{}",
        text(&o)
    );
    assert!(w.pi_called().is_none());
    // Several, without a terminal: each named, non-zero (with a terminal, the picker opens).
    let o = w.bonsai(&elsewhere, &["resume", "the"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("sessions match \"the\""), "{err}");
    assert!(err.matches(".jsonl").count() >= 2, "{err}");
    assert!(w.pi_called().is_none());
    // The session's folder is gone: Pi runs here, and bonsai says so.
    std::fs::remove_dir_all(&w.projects[1]).unwrap();
    let o = w.bonsai(&elsewhere, &["resume", "quoted comma"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is gone: Pi runs in"),
        "{}",
        text(&o)
    );
    assert_eq!(
        w.pi_called().unwrap()[0],
        elsewhere.canonicalize().unwrap().to_string_lossy()
    );
}

#[test]
fn pi_command_setting_and_a_missing_pi_are_used_and_said() {
    let w = World::new();
    let settings = w.home.path().join(".pi/agent/settings.json");
    std::fs::write(
        &settings,
        format!(
            r#"{{"bonsai": {{"piCommand": ["{}", "--model", "fake"]}}}}"#,
            w.bin.join("pi").display()
        ),
    )
    .unwrap();
    // No `pi` on PATH: only the setting can run one.
    let resume = || {
        bonsai_isolated(w.home.path())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&w.projects[0])
            .args(["resume"])
            .output()
            .unwrap()
    };
    let o = resume();
    assert!(o.status.success(), "{}", text(&o));
    let called = w.pi_called().unwrap();
    assert_eq!(called[1..3], ["--model".to_string(), "fake".into()]);
    assert_eq!(called[3], "--session");
    std::fs::remove_file(&settings).unwrap();
    let o = resume();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("cannot run `pi`: no such program (install Pi, or set bonsai.piCommand"),
        "{}",
        text(&o)
    );
}

#[test]
fn search_resumes_at_the_numbered_hit() {
    let w = World::new();
    let o = w.bonsai(&w.projects[0], &["search", "--json", "ledger"]);
    assert!(o.status.success(), "{}", text(&o));
    let hits: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Numbered 1.. in the order listed, the same on every run.
    assert!(hits.len() > 5);
    for (k, h) in hits.iter().enumerate() {
        assert_eq!(h["hit"], k + 1);
    }
    let again = w.bonsai(&w.projects[0], &["search", "--json", "ledger"]);
    assert_eq!(again.stdout, o.stdout, "the same order on every run");
    // The last hit's session is resumed.
    let n = hits.len();
    let o = w.bonsai(&w.projects[0], &["search", "ledger", "--resume", &n.to_string()]);
    assert!(o.status.success(), "{}", text(&o));
    let called = w.pi_called().unwrap();
    assert_eq!(called[2], hits[n - 1]["session"].as_str().unwrap());
    assert!(String::from_utf8_lossy(&o.stderr).contains(hits[n - 1]["entryId"].as_str().unwrap()));
    let o = w.bonsai(&w.projects[0], &["search", "ledger", "--resume", &(n + 1).to_string()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("no hit {}", n + 1)));
}

#[test]
fn unnamed_sessions_get_stable_short_titles_that_are_never_written_unless_asked() {
    let w = World::new();
    let files: Vec<PathBuf> = walk(&w.home.path().join(".pi/agent/sessions"));
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let list = |_: ()| -> Vec<Value> {
        let o = w.bonsai(&w.projects[0], &["list", "--all", "--json"]);
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let first = list(());
    // Twice more: the second from the listing cache.
    assert_eq!(list(()), first);
    assert_eq!(list(()), first);
    let made: Vec<&Value> = first.iter().filter(|s| s["titleBy"] == "bonsai").collect();
    assert_eq!(made.len(), 3, "the unnamed sessions: {first:#?}");
    for s in &made {
        let t = s["title"].as_str().unwrap();
        assert!(!t.is_empty() && t.chars().count() <= 60, "{t}");
        assert!(s["name"].is_null());
    }
    let titles: Vec<&str> = made.iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert!(
        titles.contains(&"Turn 1: check data/2026-02.csv against logs/import-02.log"),
        "{titles:?}"
    );
    assert!(titles.contains(&"List the modules"), "{titles:?}");
    assert!(titles.contains(&"Start on the export feature tomorrow"), "{titles:?}");
    // Named sessions keep their names.
    assert!(
        first
            .iter()
            .any(|s| s["titleBy"] == "name" && s["title"] == "ledger: fix rounding")
    );
    // Text output marks bonsai's titles.
    let o = w.bonsai(&w.projects[0], &["list"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("~ List the modules"));
    // usage and exports show them too, marked.
    let o = w.bonsai(&w.projects[0], &["usage", "--by", "session", "--json"]);
    let u: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        u["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["titleBy"] == "bonsai" && r["title"] == "List the modules"),
        "{u:#}"
    );
    let split = w.session_named(0, "2026-11-22T");
    let o = w.bonsai(
        &w.projects[0],
        &["export", &split.to_string_lossy(), "--format", "json"],
    );
    let e: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    assert_eq!(
        (e["title"].as_str(), e["titleBy"].as_str()),
        (Some("List the modules"), Some("bonsai"))
    );
    // Nothing was written by any of that.
    let after: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(before == after, "a session file changed");
    // Asked: Pi's own session_info, with the title as the name.
    let o = w.bonsai(
        &w.projects[0],
        &["rename", &split.to_string_lossy(), "--suggest", "--yes"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let last = std::fs::read_to_string(&split).unwrap();
    let info: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(
        (info["type"].as_str(), info["name"].as_str()),
        (Some("session_info"), Some("List the modules"))
    );
    let listed = list(());
    let s = listed
        .iter()
        .find(|s| s["path"] == split.to_string_lossy().as_ref())
        .unwrap();
    assert_eq!(
        (s["titleBy"].as_str(), s["name"].as_str()),
        (Some("name"), Some("List the modules"))
    );
    // A named one is not renamed by --suggest.
    let tour = w.session_named(0, "2026-11-20T");
    let o = w.bonsai(
        &w.projects[0],
        &["rename", &tour.to_string_lossy(), "--suggest", "--yes"],
    );
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("already named"));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Several matches with a terminal (tmux): the picker on every project, filtered to them; P
/// on one ends bonsai and runs Pi (the stand-in) on it from its folder, with the terminal
/// given back first.
#[test]
fn an_ambiguous_query_opens_the_picker_filtered_and_p_runs_pi() {
    let w = World::new();
    let Some(t) = common::tmux::Tmux::start(120, 40) else {
        return;
    };
    t.send(&[
        &format!(
            "cd '{}' && env HOME='{}' PATH='{}':\"$PATH\" '{}' resume the; echo EXITED:$?",
            w.home.path().display(),
            w.home.path().display(),
            w.bin.display(),
            bonsai_bin().display()
        ),
        "Enter",
    ]);
    let screen = t.wait_for_all(&["~ List the modules", "~ Start on the export fe", "P resume it in Pi"]);
    assert!(
        !screen.lines().any(|l| l.starts_with('│') && l.contains("quoted comm")),
        "only the matches: {screen}"
    );
    assert!(screen.contains("the 2 sessions \"the\" matches"), "{screen}");
    // Down to the first session row (the project's row comes first), then P.
    let mut row = String::new();
    for _ in 0..4 {
        let s = t.capture();
        row = s.lines().find(|l| l.contains('›')).unwrap_or("").to_string();
        if row.contains("~ ") {
            break;
        }
        t.send(&["j"]);
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(row.contains("~ "), "a session row: {row}");
    t.send(&["P"]);
    t.wait_for("EXITED:0");
    let called = w.pi_called().expect("pi was run");
    assert_eq!(called[0], w.projects[0].to_string_lossy());
    assert_eq!(called[1], "--session");
    let title_words = if row.contains("List the modules") {
        "List the modules"
    } else {
        "Start on the export"
    };
    let first_line_with_user = std::fs::read_to_string(&called[2]).unwrap();
    assert!(first_line_with_user.contains(title_words), "{row} → {}", called[2]);
}

/// A Pi already started on the session: a second one is not run (two writers would branch
/// the file), and bonsai says which process to go on in.
#[test]
fn a_session_another_pi_runs_on_is_not_resumed_twice() {
    let w = World::new();
    let tour = w.session_named(0, "2026-11-20T");
    let other = w.home.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let running = other.join("pi");
    std::fs::write(&running, "#!/bin/sh\nsleep 30\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&running, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = std::process::Command::new(&running)
        .arg("--session")
        .arg(&tour)
        .current_dir(&w.projects[0])
        .spawn()
        .unwrap();
    // Until /proc shows it with its command line.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let o = w.bonsai(&w.projects[0], &["resume"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("Pi (process {}) is already running on", child.id())),
        "{err}"
    );
    assert!(w.pi_called().is_none(), "no second Pi");
    // Once it is gone, the session resumes.
    let o = w.bonsai(&w.projects[0], &["resume"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(w.pi_called().is_some());
}

/// A project whose `.pi/settings.json` names its own `bonsai.piCommand`: `bonsai resume`
/// started in it runs `pi` instead, and says why, unless Pi trusts the folder (its
/// `trust.json`, or `defaultProjectTrust: "always"`); then the folder's command runs.
#[test]
fn a_folder_pi_does_not_trust_never_names_the_pi_command() {
    let w = World::new();
    let project = &w.projects[0];
    let marker = w.home.path().join("evil-ran");
    let evil = project.join("evil.sh");
    std::fs::write(&evil, format!("#!/bin/sh\necho ran > '{}'\n", marker.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(project.join(".pi")).unwrap();
    std::fs::write(
        project.join(".pi/settings.json"),
        format!(r#"{{"bonsai": {{"piCommand": "{}"}}}}"#, evil.display()),
    )
    .unwrap();
    let o = w.bonsai(project, &["resume"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!marker.exists(), "the folder's piCommand ran: {}", text(&o));
    assert!(w.pi_called().is_some(), "`pi` on PATH ran instead: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.matches("bonsai.piCommand not used: Pi does not trust this folder")
            .count(),
        1,
        "{}",
        text(&o)
    );
    assert!(err.contains("defaultProjectTrust is \"ask\""), "{}", text(&o));
    // Trusted as Pi's /trust saves it (the folder's canonical path, or a parent's).
    let agent = w.home.path().join(".pi/agent");
    let parent = std::fs::canonicalize(project.parent().unwrap()).unwrap();
    std::fs::write(agent.join("trust.json"), format!(r#"{{"{}": true}}"#, parent.display())).unwrap();
    let o = w.bonsai(project, &["resume"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        marker.exists(),
        "a trusted folder's piCommand did not run: {}",
        text(&o)
    );
    // A closer decision wins: the folder itself not trusted.
    std::fs::remove_file(&marker).unwrap();
    let canonical = std::fs::canonicalize(project).unwrap();
    std::fs::write(
        agent.join("trust.json"),
        format!(r#"{{"{}": true, "{}": false}}"#, parent.display(), canonical.display()),
    )
    .unwrap();
    let o = w.bonsai(project, &["resume"]);
    assert!(!marker.exists(), "{}", text(&o));
    // defaultProjectTrust "always" trusts what has no saved decision.
    std::fs::remove_file(agent.join("trust.json")).unwrap();
    std::fs::write(agent.join("settings.json"), r#"{"defaultProjectTrust": "always"}"#).unwrap();
    let o = w.bonsai(project, &["resume"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(marker.exists(), "{}", text(&o));
}

/// Issue 57: `bonsai resume notes.txt` hands no file but a session to Pi (real Pi writes a
/// session header into an empty one).
#[test]
fn resume_hands_only_a_session_to_pi() {
    let w = World::new();
    for (name, body) in [("notes.txt", "my notes\n"), ("empty.jsonl", "")] {
        let f = w.projects[0].join(name);
        std::fs::write(&f, body).unwrap();
        let o = w.bonsai(&w.projects[0], &["resume", f.to_str().unwrap()]);
        assert!(!o.status.success(), "{}", self::text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("is not a Pi session"),
            "{}",
            self::text(&o)
        );
        assert!(w.pi_called().is_none(), "Pi ran on {name}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), body, "{name} unchanged");
    }
}

/// Issue 57 item 3, in a real terminal: a project folder and session names holding OSC 0
/// (the title), OSC 52 (the clipboard), a line break and U+202E. Resume's own notes, its
/// picker with P, the tree's P, and list, search and usage print in tmux, which acts on
/// the escapes it receives: the pane's title stays, no clipboard buffer is made, no
/// forged line and no bidi override is on screen.
#[test]
fn a_hostile_folder_and_name_reach_a_real_terminal_only_escaped() {
    use serde_json::json;
    let Some(t) = common::tmux::Tmux::start(120, 40) else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let record = home.path().join("pi-called.txt");
    // The stand-in Pi records its folder; it prints nothing a session controls.
    std::fs::write(
        bin.join("pi"),
        format!(
            "#!/bin/sh\n{{ pwd; echo \"$@\"; }} >> '{}'\necho PI-RAN\n",
            record.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("pi"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let hostile = "\u{1b}]0;PWNED\u{7}\u{1b}]52;c;UFdORUQ=\u{7}\nbonsai: forged\u{202e}txt";
    let project = home.path().join("work").join(format!("ledger{hostile}"));
    std::fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(&project, home.path().join("work/plain")).unwrap();
    let dir = home.path().join(".pi/agent/sessions").join(folder_of(&project));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = vec![];
    for k in 0..2 {
        let lines = [
            json!({"type":"session","version":3,"id":format!("0e5c0000-0000-7000-8000-00000000000{k}"),"timestamp":"2026-11-24T22:40:00.000Z","cwd": project.to_string_lossy()}),
            json!({"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-24T22:40:02.000Z","message":{"role":"user","content":[{"type":"text","text":format!("ledger work {k}{hostile}")}],"timestamp":1795560002000u64}}),
            json!({"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-24T22:40:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-haiku-4-5","usage":{"input":4,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":5,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1795560003000u64}}),
            json!({"type":"session_info","id":"a3","parentId":"a2","timestamp":"2026-11-24T22:40:07.000Z","name":format!("ledger {k}{hostile}")}),
        ];
        let f = dir.join(format!("2026-11-2{k}T22-40-00-000Z_0e5c000{k}.jsonl"));
        std::fs::write(&f, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60 * (3 - k as u64));
        std::fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(old)
            .unwrap();
        files.push(f);
    }
    let tmux = |args: &[&str]| {
        let o = std::process::Command::new("tmux")
            .args(["-L", &t.name])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    tmux(&["set-option", "-g", "set-clipboard", "on"]);
    tmux(&["select-pane", "-t", &t.name, "-T", "clean"]);
    // `cd -P` through the link: the shell's folder is the hostile one, typed as plain words.
    t.send(&[
        &format!(
            "cd -P '{}' && export HOME='{}' PATH='{}':\"$PATH\" B='{}' && clear",
            home.path().join("work/plain").display(),
            home.path().display(),
            bin.display(),
            bonsai_bin().display()
        ),
        "Enter",
    ]);
    let untouched = |step: &str| {
        let screen = t.capture();
        assert_eq!(
            tmux(&["display-message", "-p", "-t", &t.name, "#{pane_title}"]),
            "clean",
            "{step} set the title:\n{screen}"
        );
        assert_eq!(tmux(&["list-buffers"]), "", "{step} wrote the clipboard:\n{screen}");
        assert!(
            !screen.lines().any(|l| l.trim_start().starts_with("bonsai: forged")),
            "{step} forged a line:\n{screen}"
        );
        assert!(!screen.contains('\u{202e}'), "{step} printed U+202E:\n{screen}");
        screen
    };
    // 1. The project's newest session straight to Pi: bonsai's notes before Pi starts.
    t.send(&["\"$B\" resume; echo DONE1:$?", "Enter"]);
    let screen = t.wait_for("DONE1:0");
    assert!(screen.contains("PI-RAN"), "{screen}");
    assert!(screen.contains("\\u001b]0;PWNED"), "the folder, written out:\n{screen}");
    untouched("resume");
    // 2. Two matches: resume's picker, then P on a session row.
    t.send(&["clear; \"$B\" resume ledger; echo DONE2:$?", "Enter"]);
    t.wait_for("P resume it in Pi");
    untouched("resume's picker");
    for _ in 0..4 {
        let s = t.capture();
        if s.lines()
            .find(|l| l.contains('›'))
            .is_some_and(|l| l.contains("ledger 1") || l.contains("ledger 0"))
        {
            break;
        }
        t.send(&["j"]);
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    untouched("resume's picker rows");
    t.send(&["P"]);
    let screen = t.wait_for("DONE2:0");
    assert!(screen.contains("PI-RAN"), "{screen}");
    untouched("P in resume's picker");
    // 3. The tree of one session, then P (Pi runs and bonsai comes back), then q.
    t.send(&[
        &format!("clear; \"$B\" '{}'; echo DONE3:$?", files[0].display()),
        "Enter",
    ]);
    t.wait_for("ledger 0");
    untouched("the tree");
    t.send(&["P"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    t.wait_for("ledger 0");
    untouched("P in the tree");
    t.send(&["q"]);
    t.wait_for("DONE3:0");
    untouched("leaving the tree");
    // 4. The listing commands.
    t.send(&["clear; \"$B\" list; \"$B\" search ledger; \"$B\" usage --by session \"$HOME/.pi/agent/sessions\"; echo DONE4:$?", "Enter"]);
    let screen = t.wait_for("DONE4:");
    untouched("list, search and usage");
    // Long lines wrap at the pane's width: read as one.
    let joined = screen.replace('\n', "");
    assert!(
        joined.contains("\\u000abonsai: forged\\u202etxt"),
        "the name, written out:\n{screen}"
    );
    assert!(joined.contains("2 session file(s)"), "usage reads both:\n{screen}");
    let called = std::fs::read_to_string(&record).unwrap();
    assert_eq!(called.matches("--session").count(), 3, "Pi ran three times: {called:?}");
    common::report_reliability(
        "terminal",
        "tmux acting on what it receives: resume's notes, its picker and P, the tree and its P, list, search and usage on a folder and names holding OSC 0, OSC 52, a line break and U+202E: pane title unchanged, 0 clipboard buffers, 0 forged lines, 0 bidi characters on screen",
    );
}
