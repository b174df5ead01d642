//! Faults on purpose, in process: every file operation of every write path (append, new file,
//! migrate, repair) is made to fail in turn — a short write, EINTR, a full disk, EIO, a failed
//! fsync, a kill — and after each one the session is checked: the old bytes are an unchanged
//! prefix, every line is whole JSON or the one fragment bonsai reports as its own, new files
//! appear whole or not at all, and backups are complete. The counts go to RELIABILITY.md
//! (`scripts/reliability.sh`).

mod common;

use common::pi_checks::{PiChecks, PiExpect, bonsai_context, line_ids};

use bonsai::engine::compaction::cut::CompactionSettings;
use bonsai::engine::edit::entries;
use bonsai::engine::edit::plan::{Write, WriteRequest};
use bonsai::store::faults::{self, Fault, with_plan};
use bonsai::store::{self, journal};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Compact,
    Navigate,
    NavigateWithSummary,
    Label,
    Rename,
    Fork,
    Clone,
    Migrate,
    Repair,
}

const APPENDS: [Cmd; 5] = [
    Cmd::Compact,
    Cmd::Navigate,
    Cmd::NavigateWithSummary,
    Cmd::Label,
    Cmd::Rename,
];

/// v3 sessions to write to: the repo's demo, and Pi's fixtures when ../shared is there.
fn v3_sessions() -> Vec<PathBuf> {
    let mut v = vec![
        common::repo().join("fixtures/demo.jsonl"),
        // No final newline: bonsai writes one first, and takes it back with its entry.
        common::repo().join("fixtures/bad/no-final-newline.jsonl"),
        common::repo().join("fixtures/bad/duplicate-ids.jsonl"),
        common::repo().join("fixtures/pi-0.87.1/tour.jsonl"),
        common::repo().join("fixtures/pi-0.87.1/split-turn.jsonl"),
    ];
    let d = common::shared().join("fixtures/pi-0.87.1");
    for n in ["split-turn.jsonl", "context-edits.jsonl", "compacted-long.jsonl"] {
        if d.join(n).exists() {
            v.push(d.join(n));
        }
    }
    v
}

/// Old-version sessions to migrate.
fn old_sessions() -> Vec<PathBuf> {
    let mut v = vec![common::repo().join("fixtures/bad/v2-hookmessage.jsonl")];
    let p = common::shared().join("fixtures/pi-v1/large-session.jsonl");
    if p.exists() {
        v.push(p);
    }
    v
}

fn copy_to(dir: &Path, src: &Path) -> PathBuf {
    let p = dir.join(src.file_name().unwrap());
    std::fs::copy(src, &p).unwrap();
    let mut perm = std::fs::metadata(&p).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&p, perm).unwrap();
    p
}

/// The request a command appends, decided on the session as it is.
fn request(cmd: Cmd, path: &Path) -> Option<WriteRequest> {
    let s = store::load_session(path).unwrap();
    let leaf = s.leaf()?;
    let seen = Some((s.buf.len(), s.entries.len()));
    let id = |i: usize| s.entries[i].id.to_string();
    let write = match cmd {
        Cmd::Compact => {
            let settings = CompactionSettings {
                reserve_tokens: 16384,
                keep_recent_tokens: 500,
            };
            let plan = entries::plan_compaction(&s, leaf, settings).ok()?;
            Write::Compaction {
                leaf: id(leaf),
                first_kept: id(plan.first_kept_entry),
                summary: bonsai::engine::compaction::offline::compaction_summary(&s, &plan, None),
                settings,
            }
        }
        Cmd::Navigate | Cmd::NavigateWithSummary => {
            let path = s.path_to(leaf);
            if path.len() < 2 {
                return None;
            }
            let target = path[(path.len() - 1) / 2];
            let nav = entries::plan_navigation(&s, Some(leaf), target, 100_000);
            Write::Navigation {
                from: Some(id(leaf)),
                target: id(target),
                summary: (cmd == Cmd::NavigateWithSummary).then(|| entries::offline_branch_summary(&s, &nav, None)),
                budget: 100_000,
            }
        }
        Cmd::Label => Write::Label {
            target: id(leaf),
            label: Some("fault suite".into()),
        },
        Cmd::Rename => Write::SessionName {
            name: "fault suite".into(),
        },
        _ => return None,
    };
    Some(WriteRequest { write, seen })
}

/// Run one command on `path` (faults apply to whatever it does on disk).
fn run(cmd: Cmd, path: &Path, req: Option<&WriteRequest>) -> Result<(), String> {
    match cmd {
        c if APPENDS.contains(&c) => store::write::apply(path, req.unwrap())
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Cmd::Fork | Cmd::Clone => {
            let s = store::load_session(path).unwrap();
            let leaf = s.leaf().unwrap();
            let cut = if cmd == Cmd::Clone {
                Some(leaf)
            } else {
                s.parent_of(leaf)
            };
            let header = entries::session_header("fork-00000000", "/tmp", Some(&path.to_string_lossy()), 0);
            let lines = entries::branched_session(&s, cut, header, 7);
            let out = store::new_session_path(path.parent().unwrap(), "fork-00000000", 0);
            store::write_new(&out, &lines, path).map_err(|e| e.to_string())
        }
        Cmd::Migrate => store::migrate(path).map(|_| ()).map_err(|e| e.to_string()),
        Cmd::Repair => store::repair(path, false).map(|_| ()).map_err(|e| e.to_string()),
        _ => unreachable!(),
    }
}

/// `*.jsonl` files in a folder.
fn sessions_of(dir: &Path) -> Vec<PathBuf> {
    common::sessions_in(dir)
}

/// Every line of `bytes` is whole JSON (a last line without a newline may be a fragment).
fn whole_lines_but_last(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    // After a final newline the last piece is empty; without one it is the fragment.
    lines.pop();
    lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
}

/// A session whose last line is a fragment of bonsai's own write (a kill mid-append).
fn with_bonsai_fragment(dir: &Path, src: &Path) -> (PathBuf, Vec<u8>) {
    let p = copy_to(dir, src);
    let old = std::fs::read(&p).unwrap();
    let req = request(Cmd::Compact, &p).or_else(|| request(Cmd::Label, &p)).unwrap();
    // The append's first `write` is the 4th operation (open, journal create/write/sync): kill it.
    let (r, log) = with_plan(Some((4, Fault::Crash)), || store::write::apply(&p, &req));
    assert!(r.is_err() && log[4] == "write", "{log:?}");
    let now = std::fs::read(&p).unwrap();
    assert!(
        now.len() > old.len() && now.last() != Some(&b'\n'),
        "a fragment was left"
    );
    (p, old)
}

#[derive(Default)]
struct Counts {
    faults: usize,
    by_kind: std::collections::BTreeMap<String, usize>,
    failures: Vec<String>,
}

impl Counts {
    fn fail(&mut self, what: String) {
        self.failures.push(what);
    }
}

#[allow(clippy::too_many_arguments)]
fn check_append(
    c: &mut Counts,
    pi: &mut PiChecks,
    before: &Path,
    what: &str,
    p: &Path,
    old: &[u8],
    r: &Result<(), String>,
    crashed: bool,
) {
    let now = std::fs::read(p).unwrap();
    if now.starts_with(old) {
        let before = before.to_path_buf();
        let added = &now[old.len()..];
        // A write that was killed after its last byte is as good as written.
        let whole = !added.is_empty() && added.ends_with(b"\n") && whole_lines_but_last(added);
        let expect = if r.is_ok() || whole {
            PiExpect::Written {
                before,
                new_ids: line_ids(&now[old.len()..]),
                context: bonsai_context(p),
            }
        } else {
            PiExpect::Unchanged { before }
        };
        pi.expect(what, &now, expect);
    }
    if !now.starts_with(old) {
        return c.fail(format!("{what}: the old bytes changed"));
    }
    let added = &now[old.len()..];
    match r {
        Ok(()) => {
            if !added.ends_with(b"\n") || !whole_lines_but_last(added) {
                c.fail(format!("{what}: written, but not whole lines"));
            }
        }
        Err(e) if !crashed => {
            // A failed write is taken back; only a failed take-back leaves bonsai's bytes,
            // and then it says so and names the repair.
            if !added.is_empty() && !e.contains("bonsai repair") {
                c.fail(format!("{what}: failed ({e}) and left {} bytes", added.len()));
            }
        }
        Err(_) => {
            // Killed: nothing, or the start of what bonsai was writing (its note says what).
            if added.is_empty() {
                return;
            }
            let Some(note) = journal::read(p) else {
                return c.fail(format!("{what}: killed after writing, and no note of it"));
            };
            if !note.data.as_bytes().starts_with(added) {
                return c.fail(format!("{what}: the bytes left are not bonsai's"));
            }
            if added.len() < note.data.len() {
                // A fragment: loading names it, and repair removes exactly it.
                let s = store::load_session(p).unwrap();
                if !s.diagnostics.iter().any(|d| d.message.contains("bonsai was writing")) {
                    c.fail(format!("{what}: the fragment is not named as bonsai's"));
                }
                match store::repair(p, false) {
                    Ok(_) if std::fs::read(p).unwrap() == old => {}
                    other => c.fail(format!("{what}: repair did not restore the file: {other:?}")),
                }
            }
        }
    }
    // Whatever happened, the file loads.
    if let Err(e) = store::load_session(p) {
        c.fail(format!("{what}: does not load: {e}"));
    }
}

#[test]
fn every_operation_of_every_write_path_fails_safely() {
    let mut c = Counts::default();
    let pi_session = common::pi_session("every_operation_of_every_write_path_fails_safely");
    let mut pi = PiChecks::new();
    let mut plans = vec![];
    for src in v3_sessions() {
        for cmd in APPENDS.into_iter().chain([Cmd::Fork, Cmd::Clone, Cmd::Repair]) {
            plans.push((src.clone(), cmd));
        }
    }
    for src in old_sessions() {
        plans.push((src, Cmd::Migrate));
    }
    for (src, cmd) in plans {
        // How many operations this command makes on a good day.
        let dir = tempfile::tempdir().unwrap();
        let p = if cmd == Cmd::Repair {
            with_bonsai_fragment(dir.path(), &src).0
        } else {
            copy_to(dir.path(), &src)
        };
        let req = request(cmd, &p);
        if APPENDS.contains(&cmd) && req.is_none() {
            continue;
        }
        let (ok, steps) = with_plan(None, || run(cmd, &p, req.as_ref()));
        assert!(ok.is_ok(), "{cmd:?} on {}: {ok:?}", src.display());
        drop(dir);
        for k in 0..steps.len() {
            for fault in Fault::ALL {
                let what = format!(
                    "{cmd:?} on {} at operation {k} ({}) with {fault:?}",
                    src.file_name().unwrap().to_string_lossy(),
                    steps[k]
                );
                let dir = tempfile::tempdir().unwrap();
                let (p, old) = if cmd == Cmd::Repair {
                    with_bonsai_fragment(dir.path(), &src)
                } else {
                    let p = copy_to(dir.path(), &src);
                    let old = std::fs::read(&p).unwrap();
                    (p, old)
                };
                let req = request(cmd, &p);
                let before = pi.keep(&old);
                let (r, _) = with_plan(Some((k, fault)), || run(cmd, &p, req.as_ref()));
                c.faults += 1;
                *c.by_kind.entry(format!("{fault:?}")).or_default() += 1;
                let crashed = fault == Fault::Crash && r.is_err();
                match cmd {
                    c2 if APPENDS.contains(&c2) => check_append(&mut c, &mut pi, &before, &what, &p, &old, &r, crashed),
                    Cmd::Fork | Cmd::Clone => {
                        // The original is untouched; a new session is whole or absent.
                        if std::fs::read(&p).unwrap() != old {
                            c.fail(format!("{what}: the source changed"));
                        }
                        for f in sessions_of(dir.path()).into_iter().filter(|f| *f != p) {
                            let bytes = std::fs::read(&f).unwrap();
                            let s = store::load_session(&f);
                            if !bytes.ends_with(b"\n") || s.is_err() || !s.unwrap().diagnostics.is_empty() {
                                c.fail(format!("{what}: a partial new session {}", f.display()));
                            } else {
                                let context = bonsai_context(&f);
                                pi.expect(&what, &bytes, PiExpect::AsBonsai { context });
                            }
                        }
                        if r.is_ok() && sessions_of(dir.path()).len() != 2 {
                            c.fail(format!("{what}: reported written but absent"));
                        }
                    }
                    Cmd::Migrate => {
                        let now = std::fs::read(&p).unwrap();
                        let migrated = store::load_session(&p).is_ok_and(|s| s.header.version >= 3.0);
                        pi.expect(&what, &now, PiExpect::SameShape { before: before.clone() });
                        if now != old && !migrated {
                            c.fail(format!("{what}: neither the original nor migrated"));
                        }
                        // Every backup there is, is complete.
                        for e in std::fs::read_dir(dir.path()).unwrap() {
                            let f = e.unwrap().path();
                            let name = f.file_name().unwrap().to_string_lossy().to_string();
                            // Hidden names are temporary files (never listed, never a backup).
                            if name.contains(".bak") && !name.starts_with('.') && std::fs::read(&f).unwrap() != old {
                                c.fail(format!("{what}: an incomplete backup {name}"));
                            }
                        }
                        // A later migrate succeeds and names a complete backup.
                        if !migrated {
                            match store::migrate(&p) {
                                Ok(bak) if std::fs::read(&bak).unwrap() == old => {}
                                other => c.fail(format!("{what}: the next migrate: {other:?}")),
                            }
                        }
                    }
                    Cmd::Repair => {
                        let now = std::fs::read(&p).unwrap();
                        let fragment_end = std::fs::read(&p).unwrap();
                        if r.is_ok() && now != old {
                            c.fail(format!("{what}: repaired, but not to the old bytes"));
                        }
                        if now != old && !now.starts_with(&old) {
                            c.fail(format!("{what}: the old bytes changed"));
                        }
                        // Repaired or not, Pi loads what it loaded before the killed write.
                        pi.expect(&what, &now, PiExpect::Unchanged { before: before.clone() });
                        let _ = fragment_end;
                        for e in std::fs::read_dir(dir.path()).unwrap() {
                            let f = e.unwrap().path();
                            let name = f.file_name().unwrap().to_string_lossy().to_string();
                            if name.contains(".bak-repair") && !name.starts_with('.') {
                                let b = std::fs::read(&f).unwrap();
                                if !b.starts_with(&old) || b.len() <= old.len() {
                                    c.fail(format!("{what}: an incomplete repair backup"));
                                }
                            }
                        }
                        // A repair that did not finish can be run again.
                        if now != old {
                            match store::repair(&p, false) {
                                Ok(_) if std::fs::read(&p).unwrap() == old => {}
                                other => c.fail(format!("{what}: the next repair: {other:?}")),
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let mut pi_checked = 0;
    if let Some(pi_session) = pi_session {
        let (n, failures) = pi.run(&pi_session);
        pi_checked = n;
        c.failures.extend(failures);
    }
    common::report_reliability(
        "faults",
        &format!(
            "faults injected: {} ({:?}), checked by Pi: {pi_checked}, failures: {}",
            c.faults,
            c.by_kind,
            c.failures.len()
        ),
    );
    assert!(c.failures.is_empty(), "{}", c.failures.join("\n"));
    // ≥ 1,000 with Pi's fixtures (CI); the repo's own sessions alone make fewer.
    let want = if common::shared().join("fixtures").exists() {
        1000
    } else {
        300
    };
    assert!(c.faults >= want, "{} faults", c.faults);
    let _ = faults::is_crash;
}

/// After a kill, Pi opening the session ends the cut-short line with a newline (its loader
/// does). The fragment is still bonsai's: named, appends refuse, repair removes it and the
/// newline. Once Pi has written after it (its lines after the closed fragment, or its line
/// glued straight onto it), repair takes out bonsai's bytes only and keeps Pi's lines.
#[test]
fn a_killed_write_then_pi_opening_and_writing() {
    let pi = common::pi_session("a_killed_write_then_pi_opening_and_writing");
    let dir = tempfile::tempdir().unwrap();
    let (p, old) = with_bonsai_fragment(dir.path(), &common::repo().join("fixtures/demo.jsonl"));
    match &pi {
        Some(pi) => pi.open(&p),
        // Without Pi, do what its loader does.
        None => {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .append(true)
                .open(&p)
                .unwrap()
                .write_all(b"\n")
                .unwrap();
        }
    }
    let now = std::fs::read(&p).unwrap();
    assert!(
        now.ends_with(b"\n") && now.len() > old.len() + 1,
        "Pi ended the fragment"
    );
    let s = store::load_session(&p).unwrap();
    assert!(
        s.diagnostics
            .iter()
            .any(|d| d.message.contains("bonsai was writing") && d.message.contains("bonsai repair")),
        "{:?}",
        s.diagnostics
    );
    // An append now would bury the fragment: refused, naming the repair.
    let req = request(Cmd::Label, &p).unwrap();
    let e = store::write::apply(&p, &req).unwrap_err().to_string();
    assert!(e.contains("bonsai repair"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), now);
    // Repair removes the fragment and Pi's newline: the file as it was before the write.
    let plan = store::write::repair_plan(&p, false).unwrap();
    assert!(plan.ours && plan.removed == (old.len()..now.len()));
    store::repair(&p, false).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), old);

    // Again, and this time Pi writes after it.
    let dir = tempfile::tempdir().unwrap();
    let (p, old) = with_bonsai_fragment(dir.path(), &common::repo().join("fixtures/demo.jsonl"));
    match &pi {
        Some(pi) => {
            let o = pi.command().arg("append").arg(&p).arg("2").output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        None => {
            use std::io::Write;
            let line = r#"{"type":"message","id":"p1000001","parentId":null,"timestamp":"2026-11-23T00:00:00.000Z","message":{"role":"user","content":"after"}}"#;
            let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
            f.write_all(format!("\n{line}\n").as_bytes()).unwrap();
        }
    }
    let now = std::fs::read(&p).unwrap();
    assert!(now.starts_with(&old));
    let s = store::load_session(&p).unwrap();
    let entries_before = s.entries.len();
    assert!(
        s.diagnostics
            .iter()
            .any(|d| d.message.contains("bonsai was writing") && d.message.contains("bonsai repair")),
        "{:?}",
        s.diagnostics
    );
    let r = store::repair(&p, false).unwrap();
    assert!(r.ours && r.rewritten);
    let fixed = std::fs::read(&p).unwrap();
    assert!(
        fixed.starts_with(&old),
        "bonsai's bytes gone, the file as before up to them"
    );
    assert_eq!(
        &fixed[old.len()..],
        &now[r.removed.end..],
        "Pi's lines kept byte for byte"
    );
    let s = store::load_session(&p).unwrap();
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert_eq!(s.entries.len(), entries_before);
    // bonsai writes again (after Pi's lines), and Pi's lines are intact.
    let req = request(Cmd::Label, &p).unwrap();
    store::write::apply(&p, &req).unwrap();
    assert!(std::fs::read(&p).unwrap().starts_with(&fixed));
}

/// Issue 22, item 6: a killed write's fragment with Pi's next line glued straight onto it (Pi
/// appends without a newline first): Pi skips the joined line, losing its entry. Loading
/// names it; repair splits it at the note's offset, removes bonsai's bytes and keeps Pi's
/// entry, with every line after it.
#[test]
fn a_pi_line_glued_onto_a_killed_write_is_split_out_by_repair() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (p, old) = with_bonsai_fragment(dir.path(), &common::repo().join("fixtures/demo.jsonl"));
    let cut = std::fs::read(&p).unwrap();
    let leaf = store::load_session(&p)
        .unwrap()
        .leaf()
        .map(|l| store::load_session(&p).unwrap().entries[l].id.to_string());
    let pi1 = format!(
        r#"{{"type":"message","id":"p1000001","parentId":"{}","timestamp":"2026-11-23T00:00:00.000Z","message":{{"role":"user","content":"glued"}}}}"#,
        leaf.unwrap()
    );
    let pi2 = r#"{"type":"message","id":"p1000002","parentId":"p1000001","timestamp":"2026-11-23T00:00:01.000Z","message":{"role":"user","content":"after"}}"#;
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(format!("{pi1}\n{pi2}\n").as_bytes()).unwrap();
    drop(f);
    let s = store::load_session(&p).unwrap();
    assert!(s.idx_of("p1000001").is_none(), "Pi's glued entry is lost to a reader");
    assert!(
        s.diagnostics
            .iter()
            .any(|d| d.message.contains("appended straight onto") && d.message.contains("bonsai repair")),
        "{:?}",
        s.diagnostics
    );
    // Inside real Pi (each release installed): the glued line costs Pi its entry.
    let pis = common::pi_sessions("a_pi_line_glued_onto_a_killed_write_is_split_out_by_repair");
    let has = |v: &serde_json::Value, id: &str| v["ids"].as_array().is_some_and(|a| a.iter().any(|x| x == id));
    for pi in &pis {
        let before = &pi.load(std::slice::from_ref(&p))[0];
        assert!(
            !has(before, "p1000001") && has(before, "p1000002"),
            "Pi {}: {before}",
            pi.version
        );
    }
    let plan = store::write::repair_plan(&p, false).unwrap();
    assert_eq!(plan.removed, old.len()..cut.len(), "exactly bonsai's bytes");
    let r = store::repair(&p, false).unwrap();
    assert!(r.ours && r.rewritten);
    let fixed = std::fs::read(&p).unwrap();
    let mut want = old.clone();
    want.extend_from_slice(format!("{pi1}\n{pi2}\n").as_bytes());
    assert_eq!(fixed, want);
    let s = store::load_session(&p).unwrap();
    assert!(s.idx_of("p1000001").is_some() && s.idx_of("p1000002").is_some());
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    assert!(std::fs::read(r.backup).unwrap() == [cut.as_slice(), format!("{pi1}\n{pi2}\n").as_bytes()].concat());
    // Pi loads the repaired file whole: both of its entries, nothing skipped.
    for pi in &pis {
        let after = &pi.load(std::slice::from_ref(&p))[0];
        assert_eq!(after["ok"], true, "Pi {}: {after}", pi.version);
        assert!(
            has(after, "p1000001") && has(after, "p1000002"),
            "Pi {}: {after}",
            pi.version
        );
    }
}

/// The first branch bonsai would delete in `p` (by id), if any.
fn deletable_branch(p: &Path) -> Option<String> {
    use bonsai::engine::edit::delete;
    use bonsai::engine::view::tree::Tree;
    let s = store::load_session(p).ok()?;
    let tree = Tree::build(&s);
    (0..s.entries.len())
        .filter(|&i| s.parent_of(i).is_some_and(|q| tree.children[q].len() > 1))
        .find(|&i| delete::plan(&s, &tree, i).is_ok())
        .map(|i| s.entries[i].id.to_string())
}

/// delete-branch and restore, the one rewrite, with every operation failing in turn: the
/// session is always either the original or the complete new file (never a mix, never
/// partial); a backup that exists is complete; a failed delete leaves no removed-lines file
/// behind (a killed one may, and a restore then refuses); a restore that fails leaves the
/// deleted file as it was, and the next restore gives back the original bytes.
#[test]
fn every_operation_of_delete_and_restore_fails_safely() {
    let mut c = Counts::default();
    let mut sources: Vec<(PathBuf, String)> = vec![];
    for src in v3_sessions() {
        if let Some(id) = deletable_branch(&src) {
            sources.push((src, id));
        }
    }
    assert!(!sources.is_empty(), "no session with a deletable branch");
    for (src, id) in &sources {
        let name = src.file_name().unwrap().to_string_lossy().to_string();
        // The delete's operations on a good day, and the file it leaves.
        let dir = tempfile::tempdir().unwrap();
        let p = copy_to(dir.path(), src);
        let old = std::fs::read(&p).unwrap();
        common::quiet(&p);
        let (ok, steps) = with_plan(None, || store::rewrite::delete_branch(&p, &old, id).map(|_| ()));
        assert!(ok.is_ok(), "delete on {name}: {ok:?}");
        let new = std::fs::read(&p).unwrap();
        common::quiet(&p);
        let (ok, restore_steps) = with_plan(None, || store::rewrite::restore(&p).map(|_| ()));
        assert!(ok.is_ok(), "restore on {name}: {ok:?}");
        assert_eq!(std::fs::read(&p).unwrap(), old);
        drop(dir);
        for k in 0..steps.len() {
            for fault in Fault::ALL {
                let what = format!("delete-branch on {name} at operation {k} ({}) with {fault:?}", steps[k]);
                let dir = tempfile::tempdir().unwrap();
                let p = copy_to(dir.path(), src);
                common::quiet(&p);
                let (r, _) = with_plan(Some((k, fault)), || {
                    store::rewrite::delete_branch(&p, &old, id).map(|_| ())
                });
                c.faults += 1;
                *c.by_kind.entry(format!("{fault:?}")).or_default() += 1;
                let now = std::fs::read(&p).unwrap();
                if now != old && now != new {
                    c.fail(format!("{what}: the session is neither the original nor the new file"));
                }
                if r.is_ok() && now != new {
                    c.fail(format!("{what}: reported deleted but the file is not the new one"));
                }
                let names: Vec<String> = std::fs::read_dir(dir.path())
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                    .collect();
                for n in &names {
                    let bytes = std::fs::read(dir.path().join(n)).unwrap();
                    if n.contains(".bak") && !n.starts_with('.') && bytes != old {
                        c.fail(format!("{what}: an incomplete backup {n}"));
                    }
                }
                let removed_file = names.iter().any(|n| n.contains(".deleted-"));
                let crashed = fault == Fault::Crash && r.is_err();
                if r.is_err() && now == old && removed_file && !crashed {
                    c.fail(format!("{what}: a failed delete left its removed-lines file"));
                }
                // Issue 43: a full disk left the complete backup a failed delete had made.
                if r.is_err()
                    && now == old
                    && !crashed
                    && names.iter().any(|n| n.contains(".bak") && !n.starts_with('.'))
                {
                    c.fail(format!("{what}: a failed delete left the backup it made"));
                }
                // What the user does next works: a restore refuses on the original and gives
                // the original back on the new file; a delete again succeeds.
                common::quiet(&p);
                let again = store::rewrite::restore(&p);
                if now == old && again.is_ok() {
                    c.fail(format!("{what}: a restore of a file that was never changed went ahead"));
                }
                if now == new && (again.is_err() || std::fs::read(&p).unwrap() != old) {
                    c.fail(format!("{what}: the restore after it: {again:?}"));
                }
            }
        }
        for k in 0..restore_steps.len() {
            for fault in Fault::ALL {
                let what = format!(
                    "restore on {name} at operation {k} ({}) with {fault:?}",
                    restore_steps[k]
                );
                let dir = tempfile::tempdir().unwrap();
                let p = copy_to(dir.path(), src);
                common::quiet(&p);
                store::rewrite::delete_branch(&p, &old, id).unwrap();
                common::quiet(&p);
                let (r, _) = with_plan(Some((k, fault)), || store::rewrite::restore(&p).map(|_| ()));
                c.faults += 1;
                *c.by_kind.entry(format!("{fault:?}")).or_default() += 1;
                let now = std::fs::read(&p).unwrap();
                if now != old && now != new {
                    c.fail(format!(
                        "{what}: the session is neither the deleted file nor the original"
                    ));
                }
                if r.is_ok() && now != old {
                    c.fail(format!("{what}: reported restored but it is not the original"));
                }
                if now == new {
                    common::quiet(&p);
                    match store::rewrite::restore(&p) {
                        Ok(_) if std::fs::read(&p).unwrap() == old => {}
                        other => c.fail(format!("{what}: the next restore: {other:?}")),
                    }
                }
            }
        }
    }
    common::report_reliability(
        "faults-delete",
        &format!(
            "faults injected: {} ({:?}) in {} sessions, failures: {}",
            c.faults,
            c.by_kind,
            sources.len(),
            c.failures.len()
        ),
    );
    assert!(c.failures.is_empty(), "{}", c.failures.join("\n"));
}
