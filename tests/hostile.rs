//! Issue 22 (part), item 1: files planted beside a session where bonsai writes its own. The
//! write note `.NAME.jsonl.bonsai-write` was opened following links and truncated: a link
//! planted there had any write command overwrite the link's target, a FIFO hung every command,
//! and a link to /dev/zero was read forever. Now such a note is named and left alone.

mod common;

use std::os::unix::fs::FileTypeExt;
use std::os::unix::fs::symlink;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

fn session_copy() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::copy(common::repo().join("fixtures/demo.jsonl"), &p).unwrap();
    let note = dir.path().join(".s.jsonl.bonsai-write");
    (dir, p, note)
}

/// A quiet copy of the repository's tour session in a fresh folder, with the id of the entry
/// that starts the branch bonsai may delete (the one the branches tests delete).
fn tour_copy() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("tour.jsonl");
    std::fs::copy(common::repo().join("fixtures/pi-0.87.1/tour.jsonl"), &f).unwrap();
    common::quiet(&f);
    let dead = id_of_line(&f, |l| l.contains("Instead of fixing tests"));
    (dir, f, dead)
}

/// The id of the first line of `f` that `pick` chooses.
fn id_of_line(f: &std::path::Path, pick: impl Fn(&str) -> bool) -> String {
    let text = std::fs::read_to_string(f).unwrap();
    let line = text.lines().find(|l| pick(l)).expect("a line");
    serde_json::from_str::<serde_json::Value>(line).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn run_with_deadline(args: &[&str], home: &std::path::Path) -> std::process::Output {
    let mut c = common::bonsai_isolated(home)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if c.try_wait().unwrap().is_some() {
            return c.wait_with_output().unwrap();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = c.kill();
            panic!("bonsai {args:?} still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_link_planted_as_the_write_note_is_never_followed() {
    let home = tempfile::tempdir().unwrap();
    let (dir, p, note) = session_copy();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"precious\n").unwrap();
    symlink(&victim, &note).unwrap();
    let before = std::fs::read(&p).unwrap();
    let o = run_with_deadline(&["label", p.to_str().unwrap(), "idx:3", "x", "--yes"], home.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(".s.jsonl.bonsai-write") && err.contains("not a regular file"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious\n",
        "the link's target was written"
    );
    assert_eq!(std::fs::read(&p).unwrap(), before, "the session is as it was");
    assert!(
        std::fs::symlink_metadata(&note).unwrap().file_type().is_symlink(),
        "left alone"
    );
    // Reading the session (the note is looked at on load) is not bothered either.
    let o = run_with_deadline(&["stats", p.to_str().unwrap()], home.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_fifo_or_a_link_to_a_device_as_the_note_neither_hangs_nor_eats_memory() {
    let home = tempfile::tempdir().unwrap();
    for planted in ["fifo", "/dev/zero"] {
        let (_dir, p, note) = session_copy();
        if planted == "fifo" {
            let c = std::ffi::CString::new(note.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo with a valid C string path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        } else {
            symlink(planted, &note).unwrap();
        }
        let o = run_with_deadline(&["stats", p.to_str().unwrap()], home.path());
        assert!(o.status.success(), "{planted}: {}", String::from_utf8_lossy(&o.stderr));
        let o = run_with_deadline(&["rename", p.to_str().unwrap(), "n", "--yes"], home.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("not a regular file"),
            "{planted}: {err}"
        );
    }
    common::report_reliability(
        "side-files",
        "a link, a FIFO and a link to /dev/zero as the write note; a link as .bak (and as bonsai's own files, lib tests): never followed, hung on or read; named and left alone",
    );
}

/// Item 3: a session's text, names, tool names and file name carry terminal escapes (OSC 52
/// writes the clipboard, OSC 0 the title, CSI 2J clears, C1 CSI/OSC, DCS). No command prints
/// one raw, in text or in JSON (C1 characters are escaped there too).
const PAYLOAD: &str =
    "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{9d}0;t\u{9c}\u{1b}Pdcs\u{1b}\\\r";

fn escape_session(dir: &std::path::Path) -> std::path::PathBuf {
    use serde_json::json;
    let p = PAYLOAD;
    let lines = [
        json!({"type":"session","version":3,"id":"0e5c0000-0000-7000-8000-000000000001","timestamp":"2026-11-24T22:40:00.000Z","cwd": format!("/tmp/x{p}")}),
        json!({"type":"model_change","id":"a1","parentId":null,"timestamp":"2026-11-24T22:40:01.000Z","provider":format!("prov{p}"),"modelId":format!("model{p}")}),
        json!({"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-24T22:40:02.000Z","message":{"role":"user","content":[{"type":"text","text":format!("hello pwn {p} there")}],"timestamp":1795560002000u64}}),
        json!({"type":"message","id":"a3","parentId":"a2","timestamp":"2026-11-24T22:40:03.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":format!("think pwn {p}"),"signature":""},{"type":"text","text":format!("answer pwn {p}")},{"type":"toolCall","id":"t1","name":format!("tool{p}"),"arguments":{"path":format!("file{p}")}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-haiku-4-5","usage":{"input":40,"output":180,"cacheRead":0,"cacheWrite":0,"totalTokens":220,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1795560003000u64}}),
        json!({"type":"message","id":"a4","parentId":"a3","timestamp":"2026-11-24T22:40:04.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":format!("tool{p}"),"content":[{"type":"text","text":format!("output pwn {p}")}],"isError":false,"timestamp":1795560004000u64}}),
        json!({"type":"message","id":"a5","parentId":"a4","timestamp":"2026-11-24T22:40:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":format!("done pwn {p}")}],"api":"anthropic-messages","provider":"anthropic","model":"claude-haiku-4-5","usage":{"input":40,"output":18,"cacheRead":0,"cacheWrite":0,"totalTokens":58,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1795560005000u64}}),
        json!({"type":"label","id":"a6","parentId":"a5","timestamp":"2026-11-24T22:40:06.000Z","targetId":"a2","label":format!("label{p}")}),
        json!({"type":"session_info","id":"a7","parentId":"a6","timestamp":"2026-11-24T22:40:07.000Z","name":format!("name{p}")}),
        json!({"type":"message","id":"b1","parentId":"a2","timestamp":"2026-11-24T22:40:08.000Z","message":{"role":"assistant","content":[{"type":"text","text":format!("other branch pwn {p}")}],"api":"anthropic-messages","provider":"anthropic","model":"claude-haiku-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1795560008000u64}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let f = dir.join("2026-11-24T22-40-00-000Z_0e5c\u{1b}]0;file-title\u{7}.jsonl");
    std::fs::write(&f, text).unwrap();
    f
}

/// The escapes the payload carries, as bytes (our own colour is not among them).
fn raw_escapes(out: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(out);
    let mut found = Vec::new();
    for (name, needle) in [
        ("OSC 52", "\u{1b}]52"),
        ("OSC 0", "\u{1b}]0;"),
        ("CSI 2J", "\u{1b}[2J"),
        ("DCS", "\u{1b}P"),
        ("C1 CSI", "\u{9b}"),
        ("C1 OSC", "\u{9d}"),
        ("C1 ST", "\u{9c}"),
        ("BEL", "\u{7}"),
        ("CR", "\r"),
    ] {
        if s.contains(needle) {
            found.push(name.to_string());
        }
    }
    found
}

#[test]
fn session_text_never_reaches_the_terminal_raw_from_any_command() {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join(".pi/agent/sessions/--tmp-x--");
    std::fs::create_dir_all(&proj).unwrap();
    let f = escape_session(&proj);
    let fs = f.to_str().unwrap();
    let runs: Vec<Vec<&str>> = vec![
        vec!["tree", fs],
        vec!["tree", fs, "--json"],
        vec!["search", "pwn", fs],
        vec!["search", "pwn", fs, "--json"],
        vec!["export", fs],
        vec!["export", fs, "--format", "html"],
        vec!["export", fs, "--format", "json"],
        vec!["export", fs, "--tree"],
        vec!["context", fs],
        vec!["context", fs, "--json"],
        vec!["stats", fs],
        vec!["stats", fs, "--json"],
        vec!["branch", fs, "--target", "b1"],
        vec!["branch", fs, "--target", "b1", "--json"],
        vec!["inspect", fs],
        vec!["cut", fs],
        vec!["list", "--all"],
        vec!["list", "--all", "--json"],
        vec!["backups", fs],
    ];
    let mut bad = Vec::new();
    for args in &runs {
        let o = common::bonsai_isolated(home.path()).args(args).output().unwrap();
        for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let found = raw_escapes(bytes);
            if !found.is_empty() {
                bad.push(format!("{} ({stream}): {}", args[..1].join(" "), found.join(", ")));
            }
        }
        if args.contains(&"--json") && !args.contains(&"search") && !args.contains(&"export") {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(
                serde_json::from_str::<serde_json::Value>(&text).is_ok(),
                "{args:?}: not one JSON value: {text}"
            );
        }
    }
    assert!(bad.is_empty(), "raw escapes printed:\n{}", bad.join("\n"));
    common::report_reliability(
        "escapes",
        &format!(
            "{} command runs (text and --json) on a session carrying 9 kinds of escape in its text, names, tool names and file name: 0 printed raw",
            runs.len()
        ),
    );
    // Under a terminal (a pty through `script`), where search colours its match.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        for args in [vec!["search", "pwn", fs], vec!["tree", fs], vec!["context", fs]] {
            let cmd = format!(
                "{} {}",
                common::bonsai_bin().display(),
                args.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ")
            );
            let o = std::process::Command::new("script")
                .args(["-qec", &cmd, "/dev/null"])
                .env("HOME", home.path())
                .env_remove("NO_COLOR")
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            // A pty ends lines with CR LF: CR is not the payload's here.
            let found: Vec<String> = raw_escapes(&o.stdout).into_iter().filter(|f| f != "CR").collect();
            assert!(found.is_empty(), "{} under a pty: {found:?}", args[0]);
            if args[0] == "search" {
                assert!(
                    String::from_utf8_lossy(&o.stdout).contains("\u{1b}[1;33m"),
                    "colour under a pty"
                );
            }
        }
    } else {
        common::say("session_text_never_reaches…: the pty part skipped (no `script` here)");
    }
    // Escaped, not dropped: the user can still see what is there.
    let o = common::bonsai_isolated(home.path())
        .args(["search", "pwn", fs])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("\\u001b]52;c;cHduZWQ=\\u0007"), "{text}");
    // And a provider or loader error that quotes the file name escapes it too.
    let o = common::bonsai_isolated(home.path())
        .args(["stats", &format!("{}/missing\u{1b}]0;t\u{7}.jsonl", proj.display())])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        raw_escapes(&o.stderr).is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Item 7: no terminal at all, and a full standard output or error: a clear error and an exit
/// code, never a panic or a "This is a bug" report.
#[test]
fn no_terminal_and_a_full_output_are_said_not_panicked() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, p, _) = session_copy();
    let ps = p.to_str().unwrap();
    // No controlling terminal (setsid), output a pipe: as from cron.
    let mut c = common::bonsai_isolated(home.path());
    c.arg(ps);
    // SAFETY: setsid in the child before exec, nothing else.
    unsafe {
        c.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the viewer needs a terminal") && err.contains("bonsai tree FILE"),
        "{err}"
    );
    assert!(!err.contains("panicked") && !err.contains("This is a bug"), "{err}");
    if std::path::Path::new("/dev/full").exists() {
        // A write whose report cannot be printed: the label is written once, the exit says so.
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = common::bonsai_isolated(home.path())
            .args(["label", ps, "idx:3", "kept", "--yes"])
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(74), "{err}");
        assert!(
            err.contains("could not write to standard output") && err.contains("is written"),
            "{err}"
        );
        assert!(!err.contains("panicked") && !err.contains("This is a bug"), "{err}");
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.matches("\"label\":\"kept\"").count(), 1, "written once");
        // Standard error full too: no abort (a signal), a plain failing exit code.
        let o = common::bonsai_isolated(home.path())
            .args(["stats", "/nonexistent/file.jsonl"])
            .stderr(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        let o = common::bonsai_isolated(home.path())
            .args(["tree", ps])
            .stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
            .stderr(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(74));
    } else {
        common::say("no_terminal_and_a_full_output…: /dev/full part skipped, no /dev/full here");
    }
}

/// Item 5: `export --tree` on a duplicate-id cycle (the repository's own bad fixture) wrote
/// 5.8 GB in 30 s. Under a 1 GB address-space limit it now ends at once with each entry once.
#[test]
fn export_of_a_duplicate_id_cycle_ends_under_a_memory_limit() {
    let home = tempfile::tempdir().unwrap();
    let f = common::repo().join("fixtures/bad/duplicate-id-cycle.jsonl");
    for format in ["md", "html", "json"] {
        let mut c = common::bonsai_isolated(home.path());
        c.args(["export", f.to_str().unwrap(), "--tree", "--format", format]);
        // SAFETY: setrlimit in the child before exec.
        unsafe {
            c.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 1 << 30,
                    rlim_max: 1 << 30,
                };
                libc::setrlimit(libc::RLIMIT_AS, &lim);
                Ok(())
            });
        }
        c.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let start = Instant::now();
        let mut child = c.spawn().unwrap();
        // Read as it comes (a runaway export would fill the pipe), counting the bytes.
        let mut out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut n = 0usize;
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(k) = std::io::Read::read(&mut out, &mut buf) {
                if k == 0 || n > 50 << 20 {
                    break;
                }
                n += k;
            }
            n
        });
        loop {
            if child.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(20) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        let n = reader.join().unwrap();
        assert!(status.success(), "{format}: {status:?} after {:?}", start.elapsed());
        assert!(n < 1 << 20, "{format}: {n} bytes for a 5-line session");
    }
}

/// Item 4: from a private (0600) session under umask 022, every file bonsai makes from it is
/// private too, and a rewrite keeps the session's owner and group (as root: a session of
/// another user stays theirs, or their Pi could not append). bonsai's own folder is 0700.
#[test]
fn files_made_from_a_private_session_stay_private_and_keep_the_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let home = tempfile::tempdir().unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (uid, gid) = (4242u32, 4343u32);
    let private = |p: &std::path::Path| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
        if root {
            std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
        }
    };
    let run = |args: &[&str]| {
        let mut c = common::bonsai_isolated(home.path());
        c.args(args);
        // SAFETY: umask in the child before exec.
        unsafe {
            c.pre_exec(|| {
                libc::umask(0o022);
                Ok(())
            });
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let mut wrong = Vec::new();
    let mut check = |what: &str, p: &std::path::Path, owned: bool| {
        let m = std::fs::metadata(p).unwrap();
        if m.mode() & 0o777 != 0o600 {
            wrong.push(format!("{what} {}: mode {:o}", p.display(), m.mode() & 0o777));
        }
        if root && owned && (m.uid(), m.gid()) != (uid, gid) {
            wrong.push(format!("{what} {}: owner {}:{}", p.display(), m.uid(), m.gid()));
        }
    };
    let (dir, f, dead) = tour_copy();
    private(&f);
    common::quiet(&f);
    let fs = f.to_str().unwrap();
    run(&["delete-branch", fs, &dead, "--yes"]);
    check("rewritten session", &f, true);
    let beside = |prefix: &str| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
            .collect()
    };
    for p in beside("tour.jsonl.") {
        check("made beside it", &p, true);
    }
    common::quiet(&f);
    run(&["restore", fs, "--yes"]);
    check("restored session", &f, true);
    let before: Vec<_> = beside("20");
    run(&["clone", fs, "--yes"]);
    for p in beside("20").into_iter().filter(|p| !before.contains(p)) {
        check("clone", &p, true);
    }
    let out = dir.path().join("out.md");
    run(&["export", fs, "-o", out.to_str().unwrap()]);
    check("export", &out, false);
    // A repair's backup.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&f)
        .and_then(|mut h| std::io::Write::write_all(&mut h, b"{\"type\":\"mess"))
        .unwrap();
    run(&["repair", fs, "--force", "--yes"]);
    for p in beside("tour.jsonl.bak-repair") {
        check("repair backup", &p, true);
    }
    // A migration: the rewritten v1 file and its backup.
    let v1 = dir.path().join("v1.jsonl");
    std::fs::copy(common::repo().join("fixtures/pi-0.27.9/v1.jsonl"), &v1).unwrap();
    private(&v1);
    run(&["migrate", v1.to_str().unwrap(), "--yes"]);
    check("migrated session", &v1, true);
    check("migration backup", &dir.path().join("v1.jsonl.bak"), true);
    // bonsai's own folder in the agent dir (the listing cache is written by `list`).
    let proj = home.path().join(".pi/agent/sessions/--p--");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::copy(common::repo().join("fixtures/demo.jsonl"), proj.join("s.jsonl")).unwrap();
    run(&["list", "--all"]);
    let own = home.path().join(".pi/agent/bonsai");
    let m = std::fs::metadata(&own).unwrap();
    assert_eq!(m.mode() & 0o777, 0o700, "bonsai's folder");
    for e in std::fs::read_dir(&own).unwrap().flatten() {
        let m = e.metadata().unwrap();
        if m.is_file() && m.mode() & 0o777 != 0o600 {
            wrong.push(format!("{}: mode {:o}", e.path().display(), m.mode() & 0o777));
        }
    }
    if !root {
        common::say("files_made_from_a_private_session…: owners not checked (not root)");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    common::report_reliability(
        "modes",
        &format!(
            "delete-branch, restore, clone, export, repair, migrate and list from a 0600 session: every file 0600, bonsai's folder 0700; owner and group kept: {}",
            if root {
                "checked (as root, for another user's session)"
            } else {
                "not checked (not root)"
            }
        ),
    );
}

/// Item 10: a `.bak` that is a link (even to an identical copy) is not used as the backup,
/// and a restore that cannot be done says which side is at fault: a missing backup, a changed
/// backup, or the lines being back already.
#[test]
fn backups_must_be_regular_files_and_a_refused_restore_names_the_real_cause() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| common::bonsai_isolated(home.path()).args(args).output().unwrap();
    let setup = tour_copy;
    // A link at FILE.bak to an identical copy elsewhere: left alone, a stamped backup is made.
    let (dir, f, dead) = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("copy");
    std::fs::copy(&f, &copy).unwrap();
    let bak = dir.path().join("tour.jsonl.bak");
    symlink(&copy, &bak).unwrap();
    let o = run(&["delete-branch", f.to_str().unwrap(), &dead, "--yes"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::symlink_metadata(&bak).unwrap().file_type().is_symlink());
    let stamped: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("tour.jsonl.bak-"))
        .collect();
    assert_eq!(stamped.len(), 1, "a stamped backup beside the link");
    assert!(stamped[0].metadata().unwrap().is_file());
    // The copy the link points at goes away: the restore still works from the real backup.
    std::fs::remove_file(&copy).unwrap();
    common::quiet(&f);
    let o = run(&["restore", f.to_str().unwrap(), "--yes"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // A FIFO at FILE.bak (a read would wait for a writer forever) is neither waited on nor
    // taken as the backup: a stamped one is made, and the restore uses it.
    let (dir, f, dead) = setup();
    let bak = dir.path().join("tour.jsonl.bak");
    let c = std::ffi::CString::new(bak.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid C string path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let o = run_with_deadline(&["delete-branch", f.to_str().unwrap(), &dead, "--yes"], home.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    common::quiet(&f);
    let o = run_with_deadline(&["restore", f.to_str().unwrap(), "--yes"], home.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::symlink_metadata(&bak).unwrap().file_type().is_fifo(),
        "left alone"
    );

    // As root: a `.bak` of the same bytes owned by a third user (neither bonsai's user nor
    // the session's owner) is not taken as the backup either.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let (dir, f, dead) = setup();
        let bak = dir.path().join("tour.jsonl.bak");
        std::fs::copy(&f, &bak).unwrap();
        std::os::unix::fs::chown(&bak, Some(5555), Some(5555)).unwrap();
        let o = run(&["delete-branch", f.to_str().unwrap(), &dead, "--yes"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stamped = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("tour.jsonl.bak-"))
            .count();
        assert_eq!(stamped, 1, "a backup of its own beside the foreign one");
        common::quiet(&f);
        assert!(run(&["restore", f.to_str().unwrap(), "--yes"]).status.success());
    }

    // The backup removed after the delete: said so, not blamed on the session.
    let (dir, f, dead) = setup();
    assert!(
        run(&["delete-branch", f.to_str().unwrap(), &dead, "--yes"])
            .status
            .success()
    );
    std::fs::remove_file(dir.path().join("tour.jsonl.bak")).unwrap();
    common::quiet(&f);
    let o = run(&["restore", f.to_str().unwrap(), "--yes"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("nothing restored") && err.contains("tour.jsonl.bak) is missing"),
        "{err}"
    );
    assert!(!err.contains("nothing deleted"), "{err}");

    // The backup changed after the delete.
    let (dir, f, dead) = setup();
    assert!(
        run(&["delete-branch", f.to_str().unwrap(), &dead, "--yes"])
            .status
            .success()
    );
    let b = dir.path().join("tour.jsonl.bak");
    let mut t = std::fs::read(&b).unwrap();
    t.truncate(t.len() / 2);
    std::fs::write(&b, t).unwrap();
    common::quiet(&f);
    let o = run(&["restore", f.to_str().unwrap(), "--yes"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the backup no longer holds the file"), "{err}");
}

/// Item 2: a writer that opened the session before (or while) `delete-branch` or `restore`
/// rewrote it, and writes up to a second later into the old file: its line is carried into
/// the new file, once, with nothing lost (it was lost in 9 of 20 restores with a 100 ms hold).
#[test]
fn a_slow_appender_loses_nothing_across_delete_and_restore() {
    let home = tempfile::tempdir().unwrap();
    let mut n = 0;
    for hold_ms in [100u64, 400, 1000] {
        for open_early in [true, false] {
            let (_dir, f, dead) = tour_copy();
            let last = std::fs::read_to_string(&f).unwrap().lines().last().unwrap().to_string();
            let leaf = id_of_line(&f, |l| l == last);
            for (k, cmd) in ["delete-branch", "restore"].into_iter().enumerate() {
                let line = format!(
                    "{{\"type\":\"label\",\"id\":\"slow{k}{hold_ms}\",\"parentId\":\"{leaf}\",\"timestamp\":\"2026-11-26T00:00:0{k}.000Z\",\"targetId\":\"{leaf}\",\"label\":\"slow {k}\"}}\n"
                );
                let path = f.clone();
                let opened = std::sync::Arc::new(std::sync::Barrier::new(2));
                let o2 = opened.clone();
                let writer = std::thread::spawn(move || {
                    if !open_early {
                        std::thread::sleep(Duration::from_millis(30));
                    }
                    let mut h = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                    if open_early {
                        o2.wait();
                    }
                    std::thread::sleep(Duration::from_millis(hold_ms));
                    std::io::Write::write_all(&mut h, line.as_bytes()).unwrap();
                });
                if open_early {
                    opened.wait();
                }
                let mut args = vec![cmd, f.to_str().unwrap()];
                if cmd == "delete-branch" {
                    args.push(&dead);
                }
                args.push("--yes");
                let o = common::bonsai_isolated(home.path()).args(&args).output().unwrap();
                writer.join().unwrap();
                assert!(o.status.success(), "{cmd}: {}", String::from_utf8_lossy(&o.stderr));
                let now = std::fs::read_to_string(&f).unwrap();
                for j in 0..=k {
                    let id = format!("\"id\":\"slow{j}{hold_ms}\"");
                    assert_eq!(
                        now.matches(&id).count(),
                        1,
                        "{cmd}, hold {hold_ms} ms, opened {}: the slow writer's line {j} is in the session once",
                        if open_early { "before" } else { "during" }
                    );
                }
                assert!(
                    now.lines()
                        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
                );
                if cmd == "restore" {
                    assert!(now.contains(&format!("\"id\":\"{dead}\"")), "the branch is back");
                }
                common::quiet(&f);
                n += 1;
            }
        }
    }
    common::report_reliability(
        "slow-appenders",
        &format!(
            "slow appenders (holding the old file 0.1–1 s across delete-branch and restore): {n} runs, 0 lines lost or doubled"
        ),
    );
}

/// Item 1, exports: a link planted at the export's name is never written through. Without
/// `--force` the name is taken (a dangling link too); with it the link itself is replaced.
#[test]
fn an_export_never_writes_through_a_link_at_its_name() {
    let home = tempfile::tempdir().unwrap();
    let (dir, p, _) = session_copy();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"precious\n").unwrap();
    let out = dir.path().join("out.md");
    symlink(&victim, &out).unwrap();
    let dangling = dir.path().join("dangling.md");
    symlink(dir.path().join("nowhere/x"), &dangling).unwrap();
    for (name, force) in [(&out, false), (&dangling, false), (&out, true)] {
        let mut args = vec!["export", p.to_str().unwrap(), "-o", name.to_str().unwrap()];
        if force {
            args.push("--force");
        }
        let o = common::bonsai_isolated(home.path()).args(&args).output().unwrap();
        assert_eq!(
            o.status.success(),
            force,
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"precious\n",
            "{args:?} wrote through the link"
        );
    }
    assert!(
        std::fs::symlink_metadata(&out).unwrap().is_file(),
        "--force replaced the link itself"
    );
    assert!(!dir.path().join("nowhere").exists());
}

/// Issue 57 item 3: a session's name and folder holding a line break, a right-to-left
/// override and a zero-width space (and escapes) print on one line, in order, visible, from
/// every command that lists sessions: no forged `bonsai:` line, no bidi or zero-width
/// character, no raw escape.
#[test]
fn names_and_folders_stay_on_their_line_visible_and_in_order() {
    use serde_json::json;
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join(".pi/agent/sessions/--tmp-h--");
    std::fs::create_dir_all(&proj).unwrap();
    let hostile = "ledger\nbonsai: forged line\u{202e}gpj.exe\u{200b}\u{1b}]52;c;eA==\u{7}";
    for k in 0..2 {
        let lines = [
            json!({"type":"session","version":3,"id":format!("0e5c0000-0000-7000-8000-00000000000{k}"),"timestamp":"2026-11-24T22:40:00.000Z","cwd": format!("/tmp/h\n\u{202e}{k}")}),
            json!({"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-24T22:40:02.000Z","message":{"role":"user","content":[{"type":"text","text":"hello ledger"}],"timestamp":1795560002000u64}}),
            json!({"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-24T22:40:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-haiku-4-5","usage":{"input":4,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":5,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1795560003000u64}}),
            json!({"type":"session_info","id":"a3","parentId":"a2","timestamp":"2026-11-24T22:40:07.000Z","name":format!("{hostile} {k}")}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(
            proj.join(format!("2026-11-2{k}T22-40-00-000Z_h{k}\n\u{202e}.jsonl")),
            text,
        )
        .unwrap();
    }
    let runs: Vec<Vec<&str>> = vec![
        vec!["list", "--all"],
        vec!["resume", "ledger", "--print"],
        vec!["search", "ledger", proj.to_str().unwrap()],
        vec!["usage", "--by", "session", proj.to_str().unwrap()],
    ];
    for args in &runs {
        let o = common::bonsai_isolated(home.path()).args(args).output().unwrap();
        for (stream, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(raw_escapes(bytes).is_empty(), "{args:?} {stream}: {text}");
            assert!(
                !text.contains('\u{202e}') && !text.contains('\u{200b}'),
                "{args:?} {stream}: a bidi or zero-width character: {text}"
            );
            assert!(
                !text.lines().any(|l| l.starts_with("bonsai: forged")),
                "{args:?} {stream}: a forged line: {text}"
            );
        }
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        // Written out, not dropped: the name where a command names sessions, the file always.
        if args[0] != "search" {
            assert!(
                all.contains("\\u000abonsai: forged line\\u202egpj.exe\\u200b"),
                "{args:?}: the name, written out: {all}"
            );
        }
        assert!(
            all.contains("\\u000a\\u202e.jsonl"),
            "{args:?}: the file, written out: {all}"
        );
    }
    common::report_reliability(
        "one-line",
        &format!(
            "{} commands listing sessions whose name, folder and file name hold a line break, U+202E, U+200B and OSC 52: 0 forged lines, 0 bidi or zero-width characters, 0 raw escapes",
            runs.len()
        ),
    );
}
