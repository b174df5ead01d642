//! Real kills: the real binary is killed with SIGKILL while it writes (compact, navigate with a
//! branch summary, label, fork, clone, migrate), at a random moment and at the moment the file
//! (or a new file beside it) starts to grow, on the repo's small sessions and on a ≥ 50 MB one
//! made here. After every kill: the old bytes are an unchanged prefix, every line is whole JSON
//! or the one fragment bonsai names as its own (and `bonsai repair` restores the file), new
//! sessions are whole or absent, backups are complete, and Pi loads what it loaded before or
//! exactly the new entries (small sessions; node is too slow to load 50 MB hundreds of times).
//! The counts go to RELIABILITY.md (`scripts/reliability.sh`).

mod common;

use common::pi_checks::{PiChecks, PiExpect, bonsai_context, line_ids};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Appends to the session.
    Append,
    /// Writes a new session beside it.
    NewFile,
    /// Rewrites it in place after a backup.
    Migrate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// After a random time within a good run's duration.
    Random,
    /// As soon as the file, or a new file beside it, grows.
    Growth,
}

struct Case {
    name: String,
    kind: Kind,
    /// The session every kill starts from.
    master: PathBuf,
    /// Arguments, with `{}` for the session path.
    args: Vec<String>,
    kills: usize,
    /// Whether Pi checks the outcomes (small sessions only).
    pi: bool,
}

fn bonsai(args: &[String], file: &Path, home: &Path) -> Command {
    let mut c = common::bonsai_isolated(home);
    let file = file.to_string_lossy();
    c.args(args.iter().map(|a| a.replace("{}", &file)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Sizes of every file in `dir` (hidden ones too): what "grows" means for a new file.
fn sizes(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().to_string(),
                        e.metadata().map(|m| m.len()).unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A user message and an entry halfway along the leaf's path of `s` (targets to go to).
fn targets(path: &Path) -> (String, String) {
    let s = bonsai::store::load_session(path).unwrap();
    let leaf = s.leaf().unwrap();
    let p = s.path_to(leaf);
    let is_user = |i: &usize| {
        s.entries[*i]
            .message()
            .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
    };
    let half = p.len() / 2;
    let user = p[..half]
        .iter()
        .rev()
        .find(|i| is_user(i))
        .or_else(|| p.iter().find(|i| is_user(i)))
        .unwrap();
    (s.entries[*user].id.to_string(), s.entries[p[half]].id.to_string())
}

fn cases(dir: &Path) -> Vec<Case> {
    let demo = common::repo().join("fixtures/demo.jsonl");
    let big = dir.join("synth-50mb.jsonl");
    std::fs::write(&big, common::synth::Synth::new(50 << 20).make()).unwrap();
    let big_v2 = dir.join("synth-50mb-v2.jsonl");
    std::fs::write(
        &big_v2,
        common::synth::Synth {
            version: 2,
            ..common::synth::Synth::new(50 << 20)
        }
        .make(),
    )
    .unwrap();
    let mut v = vec![];
    for (master, kills, pi) in [(demo, 16, true), (big, 4, false)] {
        let (user, middle) = targets(&master);
        let tag = if pi { "small" } else { "50 MB" };
        let c = |name: &str, kind, args: &[&str]| Case {
            name: format!("{name} ({tag})"),
            kind,
            master: master.clone(),
            args: args.iter().map(|s| s.to_string()).collect(),
            kills,
            pi,
        };
        v.push(c(
            "compact",
            Kind::Append,
            &["compact", "{}", "--keep-recent-tokens", "500", "--yes"],
        ));
        v.push(c(
            "navigate --summary default",
            Kind::Append,
            &["navigate", "{}", &middle, "--summary", "default", "--yes"],
        ));
        v.push(c("label", Kind::Append, &["label", "{}", &middle, "killed", "--yes"]));
        v.push(c("fork", Kind::NewFile, &["fork", "{}", &user, "--yes"]));
        v.push(c("clone", Kind::NewFile, &["clone", "{}", "--yes"]));
    }
    for (master, kills, pi, tag) in [
        (
            common::repo().join("fixtures/bad/v2-hookmessage.jsonl"),
            16,
            true,
            "small",
        ),
        (big_v2, 4, false, "50 MB"),
    ] {
        v.push(Case {
            name: format!("migrate ({tag})"),
            kind: Kind::Migrate,
            master,
            args: vec!["migrate".into(), "{}".into(), "--yes".into()],
            kills,
            pi,
        });
    }
    v
}

/// Every line of `bytes` is whole JSON but maybe the last (a fragment when there is no final newline).
fn whole_lines(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let mut lines: Vec<&str> = body.split('\n').collect();
    if !text.ends_with('\n') {
        lines.pop();
    }
    lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
}

struct Outcome {
    failures: Vec<String>,
    fragments: usize,
    written: usize,
}

/// Check a session bonsai appended to when it was killed.
/// Where Pi's checks go, with the kept copy of the session before the kill.
type PiCheck<'a> = Option<(&'a mut PiChecks, &'a Path)>;

fn check_append(what: &str, p: &Path, old: &[u8], home: &Path, pi: PiCheck, o: &mut Outcome) {
    let now = std::fs::read(p).unwrap();
    if !now.starts_with(old) {
        o.failures.push(format!("{what}: the old bytes changed"));
        return;
    }
    let added = &now[old.len()..];
    if !whole_lines(added) {
        o.failures
            .push(format!("{what}: a broken line in the middle of what was added"));
    }
    let whole = added.is_empty() || added.ends_with(b"\n");
    if whole {
        if !added.is_empty() {
            o.written += 1;
        }
        if let Some((pi, before)) = pi {
            let e = if added.is_empty() {
                PiExpect::Unchanged {
                    before: before.to_path_buf(),
                }
            } else {
                PiExpect::Written {
                    before: before.to_path_buf(),
                    new_ids: line_ids(added),
                    context: bonsai_context(p),
                }
            };
            pi.expect(what, &now, e);
        }
        return;
    }
    // A fragment: it must be bonsai's, named as such, and `bonsai repair` must restore the file.
    o.fragments += 1;
    let s = bonsai::store::load_session(p).unwrap();
    if !s.diagnostics.iter().any(|d| d.message.contains("bonsai was writing")) {
        o.failures
            .push(format!("{what}: a fragment not named as bonsai's: {:?}", s.diagnostics));
    }
    if let Some((pi, before)) = pi {
        // Pi skips the fragment: it loads what it loaded before.
        pi.expect(
            what,
            &now,
            PiExpect::Unchanged {
                before: before.to_path_buf(),
            },
        );
    }
    let r = bonsai(&["repair".into(), "{}".into(), "--yes".into()], p, home)
        .output()
        .unwrap();
    if !r.status.success() || std::fs::read(p).unwrap() != old {
        o.failures.push(format!(
            "{what}: bonsai repair did not restore the file: {}",
            String::from_utf8_lossy(&r.stderr)
        ));
    }
}

/// New sessions beside the source are whole or absent; temporary files are hidden and not
/// sessions.
fn check_new_files(what: &str, dir: &Path, src: &Path, old: &[u8], pi: Option<&mut PiChecks>, o: &mut Outcome) {
    if std::fs::read(src).unwrap() != old {
        o.failures.push(format!("{what}: the source changed"));
    }
    let mut pi = pi;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let f = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if f == src {
            continue;
        }
        if name.starts_with('.') {
            if name.ends_with(".jsonl") {
                o.failures
                    .push(format!("{what}: a temporary file named like a session: {name}"));
            }
            continue;
        }
        if !name.ends_with(".jsonl") {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap();
        let s = bonsai::store::load_session(&f);
        if !bytes.ends_with(b"\n") || s.as_ref().map_or(true, |s| !s.diagnostics.is_empty()) {
            o.failures
                .push(format!("{what}: a partial new session {name} ({} bytes)", bytes.len()));
            continue;
        }
        o.written += 1;
        if let Some(pi) = pi.as_deref_mut() {
            pi.expect(
                what,
                &bytes,
                PiExpect::AsBonsai {
                    context: bonsai_context(&f),
                },
            );
        }
    }
}

/// The file is the original or migrated whole; every backup is complete; a later migrate works.
fn check_migrate(what: &str, dir: &Path, p: &Path, old: &[u8], home: &Path, pi: PiCheck, o: &mut Outcome) {
    let now = std::fs::read(p).unwrap();
    let migrated = bonsai::store::load_session(p).is_ok_and(|s| s.header.version >= 3.0 && s.diagnostics.is_empty());
    if now != old && !migrated {
        o.failures.push(format!("{what}: neither the original nor migrated"));
    }
    if migrated {
        o.written += 1;
    }
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.contains(".bak") && !name.starts_with('.') && std::fs::read(e.path()).unwrap() != old {
            o.failures.push(format!("{what}: an incomplete backup {name}"));
        }
    }
    if let Some((pi, before)) = pi {
        pi.expect(
            what,
            &now,
            PiExpect::SameShape {
                before: before.to_path_buf(),
            },
        );
    }
    if !migrated {
        let r = bonsai(&["migrate".into(), "{}".into(), "--yes".into()], p, home)
            .output()
            .unwrap();
        let backups: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|f| f.file_name().unwrap().to_string_lossy().contains(".bak"))
            .collect();
        if !r.status.success() || backups.iter().any(|b| std::fs::read(b).unwrap() != old) || backups.is_empty() {
            o.failures.push(format!(
                "{what}: the next migrate: {}",
                String::from_utf8_lossy(&r.stderr)
            ));
        }
    }
}

/// Start the command and kill it: after `delay`, or (growth) once `grew` says so. Returns
/// whether it was still running when killed.
fn run_and_kill(mut cmd: Command, when: When, delay: Duration, grew: impl Fn() -> bool) -> bool {
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let limit = Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let now = match when {
            When::Random => start.elapsed() >= delay,
            When::Growth => grew(),
        };
        if now || start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return true;
        }
        if when == When::Random {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

#[test]
fn sigkill_at_random_and_as_the_file_grows() {
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pi_session = common::pi_session("sigkill_at_random_and_as_the_file_grows");
    let mut pi = PiChecks::new();
    let mut o = Outcome {
        failures: vec![],
        fragments: 0,
        written: 0,
    };
    let mut kills = 0;
    let mut killed_running = 0;
    let mut seed = 0x5eed_u64;
    let mut random = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let masters = work.path().join("masters");
    std::fs::create_dir_all(&masters).unwrap();
    let t0 = Instant::now();
    let all = cases(&masters);
    eprintln!("made the sessions in {:?}", t0.elapsed());
    for case in all {
        let t_case = Instant::now();
        let old = std::fs::read(&case.master).unwrap();
        let before = case.pi.then(|| pi.keep(&old));
        // A good run: the command works, and how long it takes.
        let dir = work.path().join("good");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(case.master.file_name().unwrap());
        std::fs::copy(&case.master, &p).unwrap();
        let t = Instant::now();
        let good = bonsai(&case.args, &p, &home).output().unwrap();
        let took = t.elapsed();
        assert!(
            good.status.success(),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&good.stderr)
        );
        // One working folder per case; restored before each kill.
        let dir = work.path().join("kill");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(case.master.file_name().unwrap());
        for k in 0..case.kills * 2 {
            let when = if k % 2 == 0 { When::Random } else { When::Growth };
            // Restore: only the session, as it was (an append is cut back; others copied).
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                if e.path() != p {
                    let _ = std::fs::remove_file(e.path());
                }
            }
            let restore_by_cut = case.kind == Kind::Append
                && std::fs::read(&p).is_ok_and(|b| b.len() >= old.len() && b.starts_with(&old));
            if restore_by_cut {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_len(old.len() as u64)
                    .unwrap();
            } else {
                let _ = std::fs::remove_file(&p);
                std::fs::copy(&case.master, &p).unwrap();
            }
            let start_sizes = sizes(&dir);
            let delay = Duration::from_nanos(random() % (took.as_nanos() as u64 + 1));
            let grew = || match case.kind {
                Kind::Append => std::fs::metadata(&p)
                    .map(|m| m.len() > old.len() as u64)
                    .unwrap_or(false),
                Kind::NewFile | Kind::Migrate => sizes(&dir) != start_sizes,
            };
            let what = format!("{} kill {k} ({when:?})", case.name);
            if run_and_kill(bonsai(&case.args, &p, &home), when, delay, grew) {
                killed_running += 1;
            }
            kills += 1;
            let pi_now = before.as_deref().map(|b| (&mut pi, b));
            match case.kind {
                Kind::Append => check_append(&what, &p, &old, &home, pi_now, &mut o),
                Kind::NewFile => check_new_files(&what, &dir, &p, &old, pi_now.map(|(pi, _)| pi), &mut o),
                Kind::Migrate => check_migrate(&what, &dir, &p, &old, &home, pi_now, &mut o),
            }
        }
        eprintln!(
            "{}: {} kills in {:?} (a good run takes {took:?})",
            case.name,
            case.kills * 2,
            t_case.elapsed()
        );
    }
    let mut pi_checked = 0;
    if let Some(s) = pi_session {
        let (n, f) = pi.run(&s);
        pi_checked = n;
        o.failures.extend(f);
    }
    common::report_reliability(
        "kills",
        &format!(
            "kills: {kills} (still running when killed: {killed_running}; written whole: {}, fragments named and repaired: {}), checked by Pi: {pi_checked}, failures: {}",
            o.written,
            o.fragments,
            o.failures.len()
        ),
    );
    assert!(o.failures.is_empty(), "{}", o.failures.join("\n"));
    assert!(kills >= 200, "{kills} kills");
}
