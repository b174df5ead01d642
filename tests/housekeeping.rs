//! Housekeeping: `bonsai trash` (Pi's own session listing, through Pi's SessionManager in each
//! release, and bonsai's listing agree before, while and after), `bonsai clean` (old leftovers
//! only, never what the next restore needs, asked first).

mod common;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

struct World {
    _tmp: tempfile::TempDir,
    agent: PathBuf,
    project: PathBuf,
    folder: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let agent = tmp.path().join("agent");
        let project = tmp.path().join("proj");
        std::fs::create_dir_all(&project).unwrap();
        let folder = agent.join("sessions").join(bonsai::store::config::encode_cwd(&project));
        std::fs::create_dir_all(&folder).unwrap();
        World {
            _tmp: tmp,
            agent,
            project,
            folder,
        }
    }

    /// A copy of a repository session in the project's folder, its header's cwd the project,
    /// last written `age` ago.
    fn session(&self, fixture: &str, name: &str, age: Duration) -> PathBuf {
        let text = std::fs::read_to_string(common::repo().join("fixtures").join(fixture)).unwrap();
        let (head, rest) = text.split_once('\n').unwrap();
        let mut h: Value = serde_json::from_str(head).unwrap();
        h["cwd"] = self.project.to_string_lossy().into();
        let p = self.folder.join(name);
        std::fs::write(&p, format!("{h}\n{rest}")).unwrap();
        aged(&p, age);
        p
    }

    fn bonsai(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bonsai"));
        c.env("PI_CODING_AGENT_DIR", &self.agent)
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .current_dir(&self.project)
            .stdin(std::process::Stdio::null());
        c
    }

    /// What bonsai's session listing (the picker's) shows of this project.
    fn bonsai_listed(&self) -> Vec<PathBuf> {
        let out = self.bonsai().args(["list", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = v
            .as_array()
            .cloned()
            .or_else(|| v["sessions"].as_array().cloned())
            .unwrap();
        let mut p: Vec<PathBuf> = rows
            .iter()
            .map(|r| PathBuf::from(r["path"].as_str().unwrap()))
            .collect();
        p.sort();
        p
    }

    /// What Pi's /resume lists (this project, all projects), in each installed release.
    fn pi_listed(&self, pis: &[common::PiSession]) -> Vec<(Vec<PathBuf>, Vec<PathBuf>)> {
        pis.iter()
            .map(|pi| {
                let out = pi
                    .command()
                    .arg("list")
                    .arg(&self.project)
                    .env("PI_CODING_AGENT_DIR", &self.agent)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "Pi {}: {}",
                    pi.version,
                    String::from_utf8_lossy(&out.stderr)
                );
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                let paths = |k: &str| {
                    let mut p: Vec<PathBuf> = v[k]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| PathBuf::from(x.as_str().unwrap()))
                        .collect();
                    p.sort();
                    p
                };
                (paths("project"), paths("all"))
            })
            .collect()
    }
}

fn aged(p: &Path, age: Duration) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(SystemTime::now() - age)
        .unwrap();
}

const OLD: Duration = Duration::from_secs(40 * 86_400);
const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn a_trashed_session_leaves_pis_listing_and_bonsais_and_comes_back_whole() {
    let w = World::new();
    let keep = w.session("pi-0.87.1/tour.jsonl", "keep.jsonl", MINUTE);
    let go = w.session("pi-0.87.1/long.jsonl", "go.jsonl", MINUTE);
    let bak = w.folder.join("go.jsonl.bak");
    std::fs::write(&bak, "a backup of go").unwrap();
    let bytes = std::fs::read(&go).unwrap();
    let pis = common::pi_sessions("a_trashed_session_leaves_pis_listing_and_bonsais_and_comes_back_whole");
    let both = vec![go.clone(), keep.clone()];
    assert_eq!(w.bonsai_listed(), both);
    for (project, all) in w.pi_listed(&pis) {
        assert_eq!((project, all), (both.clone(), both.clone()));
    }

    let out = w.bonsai().arg("trash").arg(&go).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("moved") && said.contains("with 1 backup file"), "{said}");
    assert!(!go.exists() && !bak.exists());
    let trash = w.agent.join("bonsai/trash");
    assert!(trash.is_dir());
    assert_eq!(w.bonsai_listed(), vec![keep.clone()]);
    for (project, all) in w.pi_listed(&pis) {
        assert_eq!(
            (project, all),
            (vec![keep.clone()], vec![keep.clone()]),
            "Pi still lists the trashed session"
        );
    }
    let listed: Value =
        serde_json::from_slice(&w.bonsai().args(["trash", "--list", "--json"]).output().unwrap().stdout).unwrap();
    let name = listed["trash"][0]["name"].as_str().unwrap().to_string();
    assert_eq!(listed["trash"][0]["original"], go.to_string_lossy().as_ref());

    let out = w.bonsai().args(["trash", "--restore", &name]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&go).unwrap(), bytes, "the same bytes back");
    assert!(bak.exists());
    assert_eq!(w.bonsai_listed(), both);
    for (project, all) in w.pi_listed(&pis) {
        assert_eq!((project, all), (both.clone(), both.clone()));
    }
}

#[test]
fn trash_refuses_a_session_written_seconds_ago_and_asks_before_emptying() {
    let w = World::new();
    let fresh = w.session("pi-0.87.1/tour.jsonl", "fresh.jsonl", Duration::ZERO);
    let out = w.bonsai().arg("trash").arg(&fresh).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Pi may be running it"));
    assert!(fresh.exists());
    aged(&fresh, MINUTE);
    assert!(w.bonsai().arg("trash").arg(&fresh).status().unwrap().success());
    // No terminal to ask on and no --yes: nothing removed.
    let out = w.bonsai().args(["trash", "--empty"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing removed"));
    let out = w
        .bonsai()
        .args(["trash", "--empty", "--older-than", "1d", "--yes"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing to remove"),
        "trashed just now is not older"
    );
    let out = w.bonsai().args(["trash", "--empty", "--yes"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed"));
    let mut left: Vec<_> = std::fs::read_dir(w.agent.join("bonsai/trash"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    assert_eq!(left, [".index.json.lock", "index.json"], "the record and its lock");
}

#[test]
fn clean_removes_old_leftovers_only_and_never_what_restore_needs() {
    let w = World::new();
    let a = w.session("pi-0.87.1/tour.jsonl", "a.jsonl", OLD);
    let b = w.session("pi-0.87.1/split-turn.jsonl", "b.jsonl", OLD);
    let file = |name: &str, age: Duration| {
        let p = w.folder.join(name);
        std::fs::write(&p, format!("{name}\n")).unwrap();
        aged(&p, age);
        p
    };
    let a_bak = file("a.jsonl.bak", OLD); // a migrate's backup, no delete to restore: old, goes
    let b_bak = file("b.jsonl.bak", OLD); // needed by b's next restore
    let b_removed_new = file("b.jsonl.deleted-2026-11-02T10-00-00-000Z.jsonl", OLD); // needed
    let b_removed_old = file("b.jsonl.deleted-2026-10-01T10-00-00-000Z.jsonl", OLD); // older: goes
    let a_recent = file("a.jsonl.bak-2026-11-25T10-00-00-000Z", Duration::from_secs(86_400)); // young
    common::mark_made(&w.agent, &[&a_bak, &b_bak, &b_removed_new, &b_removed_old, &a_recent]);
    // A session saved under a backup's name, old: bonsai has no record of making it.
    let theirs = file("c.jsonl.bak", OLD);
    let out = w.bonsai().args(["clean", "--dry-run", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut listed: Vec<PathBuf> = v["old"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| PathBuf::from(r["path"].as_str().unwrap()))
        .collect();
    listed.sort();
    assert_eq!(listed, vec![a_bak.clone(), b_removed_old.clone()]);
    assert_eq!(v["keptForRestore"], 2);
    // Asked first: without a terminal or --yes, nothing goes.
    let out = w.bonsai().arg("clean").output().unwrap();
    assert!(!out.status.success());
    assert!(a_bak.exists() && b_removed_old.exists());
    let out = w.bonsai().args(["clean", "--yes"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 leftovers older than 30 days"));
    assert!(!a_bak.exists() && !b_removed_old.exists());
    for kept in [&a, &b, &b_bak, &b_removed_new, &a_recent, &theirs] {
        assert!(kept.exists(), "{} kept", kept.display());
    }
    // The trash: a session trashed long enough ago goes with --older-than.
    assert!(w.bonsai().arg("trash").arg(&a).status().unwrap().success());
    let out = w
        .bonsai()
        .args(["clean", "--older-than", "0", "--yes", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let whats: Vec<&str> = v["old"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["what"].as_str().unwrap())
        .collect();
    assert!(whats.iter().any(|w| w.starts_with("trashed session")), "{whats:?}");
    let out = w.bonsai().args(["trash", "--list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["trash"].as_array().unwrap().len(), 0);
    // Bad ages are refused by name.
    let out = w.bonsai().args(["clean", "--older-than", "3y"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("the unit is d, h, m or w"));
}

#[test]
fn clean_lists_and_removes_exports_bonsai_wrote_but_never_one_edited_since() {
    let w = World::new();
    let s = w.session("pi-0.87.1/tour.jsonl", "s.jsonl", MINUTE);
    let out_md = w.project.join("tour.md");
    let ok = w
        .bonsai()
        .arg("export")
        .arg(&s)
        .arg("-o")
        .arg(&out_md)
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let listed = |w: &World| -> Vec<String> {
        let out = w
            .bonsai()
            .args(["clean", "--older-than", "0", "--dry-run", "--json"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["old"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["what"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(listed(&w), [format!("an export of {}", s.display())]);
    // Edited by hand: the user's now, neither listed nor removed.
    std::fs::write(&out_md, "my notes").unwrap();
    assert!(listed(&w).is_empty());
    let out = w
        .bonsai()
        .args(["clean", "--older-than", "0", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&out_md).unwrap(), "my notes");
    // Exported again (over it), then cleaned: gone.
    let ok = w
        .bonsai()
        .arg("export")
        .arg(&s)
        .arg("-o")
        .arg(&out_md)
        .arg("--force")
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert_eq!(listed(&w).len(), 1);
    let out = w
        .bonsai()
        .args(["clean", "--older-than", "0", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!out_md.exists());
    assert!(s.exists(), "the session itself is never a leftover");
}

/// Issue 57 item 4: a record that outlives its file never removes the user's. The backup
/// bonsai made is removed; the file system gives its inode to the user's next file, saved under
/// a backup's name and old: `clean` keeps it (the record names another path, size and age).
/// A record tampered to name the user's file by its inode alone does not make it bonsai's.
#[test]
fn a_record_that_outlives_its_file_never_removes_the_users() {
    use std::os::unix::fs::MetadataExt;
    let w = World::new();
    let _a = w.session("pi-0.87.1/tour.jsonl", "a.jsonl", OLD);
    let bak = w.folder.join("a.jsonl.bak");
    std::fs::write(&bak, "bonsai's backup\n").unwrap();
    aged(&bak, OLD);
    common::mark_made(&w.agent, &[&bak]);
    let record = w.agent.join("bonsai").join("made.json");
    let before: Vec<Value> = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    // The backup goes (by hand); the user's notes are saved under a backup's name, 40 days old.
    std::fs::remove_file(&bak).unwrap();
    let notes = w.folder.join("notes.jsonl.bak");
    std::fs::write(&notes, "the user's notes, a different size\n").unwrap();
    aged(&notes, Duration::from_secs(40 * 86_400));
    let m = std::fs::metadata(&notes).unwrap();
    // The freed inode's next owner: the record keeps the old file's inode but the user's file
    // has it now.
    // The record as given, then `clean`: the user's file is still there.
    let clean_keeps_notes = |record_now: &Vec<Value>| {
        std::fs::write(&record, serde_json::to_vec(record_now).unwrap()).unwrap();
        let out = w
            .bonsai()
            .args(["clean", "--older-than", "0", "--yes"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(notes.exists(), "clean removed the user's file");
    };
    let mut tampered = before.clone();
    tampered[0]["ino"] = json!(m.ino());
    tampered[0]["dev"] = json!(m.dev());
    clean_keeps_notes(&tampered);
    // A record naming the user's path and inode, but not its size and time: still not bonsai's.
    tampered[0]["path"] = json!(std::fs::canonicalize(&w.folder).unwrap().join("notes.jsonl.bak"));
    clean_keeps_notes(&tampered);
    // What bonsai made and removes leaves the record: a backup made and cleaned.
    let bak2 = w.folder.join("a.jsonl.bak-2026-11-25T10-00-00-000Z");
    std::fs::write(&bak2, "x\n").unwrap();
    aged(&bak2, OLD);
    common::mark_made(&w.agent, &[&bak2]);
    let out = w
        .bonsai()
        .args(["clean", "--older-than", "0", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!bak2.exists(), "bonsai's own backup stays");
    let after: Vec<Value> = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert!(after.is_empty(), "the record still names removed files: {after:?}");
    common::report_reliability(
        "outlived-records",
        "a removed backup's inode given to the user's older notes.jsonl.bak, and a record tampered to name its path and inode: clean --older-than 0 kept it both times; a backup bonsai removed left the record",
    );
}
