//! Interop with Pi 0.87.1 and 1.5.2 (bonsai following each in turn): bonsai writes on copies of the repository's sessions (and of
//! ../shared's when present), then Pi's own code (`scripts/pi-session.mjs inspect`) reads the
//! result. Nothing is ever written into ../shared.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn bonsai(args: &[&str]) -> (bool, Value, String) {
    let out = bonsai_command().args(args).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.success(),
        v,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn copy(src: &Path, dir: &Path) -> PathBuf {
    let dst = dir.join(src.file_name().unwrap());
    std::fs::copy(src, &dst).unwrap();
    dst
}

fn v3_fixtures() -> Vec<PathBuf> {
    ["pi-0.87.1", "pi-0.73.1"]
        .iter()
        .flat_map(|d| sessions_in(&shared().join("fixtures").join(d)))
        .chain(sessions_in(&repo().join("fixtures")))
        .chain(sessions_in(&repo().join("fixtures/pi-0.87.1")))
        .chain(sessions_in(&repo().join("fixtures/pi-1.5.2")))
        .collect()
}

#[test]
fn compaction_written_by_bonsai_is_pis_compaction() {
    for oracle in pi_sessions("tests::interop") {
        let _v = follow(&oracle);
        compaction_written_by_bonsai_is_pis_compaction_on(&oracle);
    }
}

fn compaction_written_by_bonsai_is_pis_compaction_on(oracle: &PiSession) {
    let mut checked = 0;
    for src in v3_fixtures() {
        let dir = tempfile::tempdir().unwrap();
        let f = copy(&src, dir.path());
        let name = src.display().to_string();
        let before = oracle.inspect(&f, &["--keep-recent-tokens", "2000"]).unwrap();
        let (ok, out, err) = bonsai(&[
            "compact",
            f.to_str().unwrap(),
            "--keep-recent-tokens",
            "2000",
            "--summarizer",
            "offline",
            "--yes",
            "--json",
        ]);
        if before["compaction"].is_null() {
            assert!(!ok, "{name}: Pi has nothing to compact, bonsai must refuse too");
            assert_eq!(
                std::fs::read(&f).unwrap(),
                std::fs::read(&src).unwrap(),
                "{name}: refused but wrote"
            );
            continue;
        }
        assert!(ok, "{name}: {err}");
        let entry = &out["entries"][0];
        let id = entry["id"].as_str().unwrap();
        assert_eq!(
            entry["firstKeptEntryId"], before["compaction"]["firstKeptEntryId"],
            "{name}: cut differs from Pi's"
        );
        assert_eq!(entry["tokensBefore"], before["compaction"]["tokensBefore"], "{name}");
        let after = oracle.inspect(&f, &["--keep-recent-tokens", "2000"]).unwrap();
        assert_eq!(after["leafId"], id, "{name}: Pi's leaf is the new compaction");
        assert_eq!(after["skippedLines"], 0, "{name}");
        let ctx = &after["context"];
        assert_eq!(ctx["entryIds"][0], id, "{name}");
        let roles: Vec<&str> = ctx["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        let k = if entry.get("systemMessage").is_some() {
            assert_eq!(roles[0], "system", "{name}");
            1
        } else {
            0
        };
        assert_eq!(roles[k], "compactionSummary", "{name}: context starts with the summary");
        assert_eq!(ctx["messages"][k]["sourceEntryId"], id, "{name}");
        assert_eq!(
            ctx["entryIds"][1], entry["firstKeptEntryId"],
            "{name}: kept exactly from firstKeptEntryId"
        );
        // The original file is a byte prefix of the new one: append only.
        let old = std::fs::read(&src).unwrap();
        let new = std::fs::read(&f).unwrap();
        assert_eq!(&new[..old.len()], &old[..], "{name}: existing bytes changed");
        // A second compaction right away: Pi says "Already compacted", so must bonsai.
        let (ok2, _, _) = bonsai(&["compact", f.to_str().unwrap(), "--summarizer", "offline", "--yes"]);
        assert!(!ok2, "{name}: compacted twice");
        checked += 1;
    }
    // ../shared adds its sessions to the repository's own.
    let want = if shared().join("fixtures").is_dir() { 6 } else { 2 };
    assert!(checked >= want, "only {checked} fixtures could be compacted");
}

/// Whether a session has an answer to navigate around (Pi 1.5.2's user-only file has none).
fn answered(f: &Path) -> bool {
    let s = bonsai::store::load_session(f).unwrap();
    s.entries.iter().any(|e| {
        e.message()
            .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::Assistant)
    })
}

fn first_user(f: &Path) -> usize {
    let s = bonsai::store::load_session(f).unwrap();
    s.entries
        .iter()
        .position(|e| {
            e.message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
        })
        .unwrap()
}

#[test]
fn navigation_with_summary_lands_in_pis_context() {
    for oracle in pi_sessions("tests::interop") {
        let _v = follow(&oracle);
        navigation_with_summary_lands_in_pis_context_on(&oracle);
    }
}

fn navigation_with_summary_lands_in_pis_context_on(oracle: &PiSession) {
    for src in v3_fixtures() {
        let dir = tempfile::tempdir().unwrap();
        let f = copy(&src, dir.path());
        let name = src.display().to_string();
        if !answered(&f) {
            continue;
        }
        let target = format!("idx:{}", first_user(&f));
        let (ok, out, err) = bonsai(&[
            "navigate",
            f.to_str().unwrap(),
            &target,
            "--summary",
            "default",
            "--summarizer",
            "offline",
            "--yes",
            "--json",
        ]);
        assert!(ok, "{name}: {err}");
        let entry = &out["entries"][0];
        let after = oracle.inspect(&f, &["--keep-recent-tokens", "20000"]).unwrap();
        assert_eq!(after["leafId"], entry["id"], "{name}");
        // The first user message is an ancestor of the leaf, so the branch left is never empty.
        assert_eq!(entry["type"], "branch_summary", "{name}: a summary, not a marker");
        {
            let has = after["context"]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "branchSummary" && m["sourceEntryId"] == entry["id"]);
            assert!(has, "{name}: branch summary not in Pi's context");
            assert!(
                out["editorText"].is_string(),
                "{name}: a user target hands its text back"
            );
        }
    }
}

#[test]
fn navigation_without_summary_resumes_at_the_target() {
    for oracle in pi_sessions("tests::interop") {
        let _v = follow(&oracle);
        navigation_without_summary_resumes_at_the_target_on(&oracle);
    }
}

fn navigation_without_summary_resumes_at_the_target_on(oracle: &PiSession) {
    for src in v3_fixtures() {
        let dir = tempfile::tempdir().unwrap();
        let f = copy(&src, dir.path());
        if !answered(&f) {
            continue;
        }
        let s = bonsai::store::load_session(&f).unwrap();
        // An assistant message in the middle of the file.
        let mid = (s.entries.len() / 2..s.entries.len())
            .find(|&i| {
                s.entries[i]
                    .message()
                    .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::Assistant)
            })
            .unwrap();
        let tid = s.entries[mid].id.to_string();
        let (ok, out, err) = bonsai(&["navigate", f.to_str().unwrap(), &tid, "--yes", "--json"]);
        if Some(mid) == s.leaf() {
            assert!(!ok);
            continue;
        }
        assert!(ok, "{}: {err}", src.display());
        let after = oracle.inspect(&f, &["--keep-recent-tokens", "20000"]).unwrap();
        let path = after["pathIds"].as_array().unwrap();
        assert_eq!(path[path.len() - 1], out["entries"][0]["id"]);
        assert_eq!(
            path[path.len() - 2],
            tid.as_str(),
            "{}: Pi resumes at the target",
            src.display()
        );
        let before = oracle
            .inspect(&src, &["--keep-recent-tokens", "20000", "--leaf", &tid])
            .unwrap();
        assert_eq!(
            after["context"]["messageCount"], before["context"]["messageCount"],
            "the marker adds nothing to the context"
        );
    }
}

#[test]
fn labels_names_forks_and_clones_load_in_pi() {
    for oracle in pi_sessions("tests::interop") {
        let _v = follow(&oracle);
        labels_names_forks_and_clones_load_in_pi_on(&oracle);
    }
}

fn labels_names_forks_and_clones_load_in_pi_on(oracle: &PiSession) {
    let src = repo().join("fixtures/pi-0.87.1/tour.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let f = copy(&src, dir.path());
    let fs = f.to_str().unwrap();
    let target = format!("idx:{}", first_user(&f));
    assert!(bonsai(&["label", fs, &target, "first-ask", "--yes"]).0);
    assert!(bonsai(&["rename", fs, "Renamed\r\nby bonsai ", "--yes"]).0);
    let o = oracle.inspect(&f, &[]).unwrap();
    let s = bonsai::store::load_session(&f).unwrap();
    let tid = s.entries[first_user(&f)].id.to_string();
    assert_eq!(o["labels"][&tid], "first-ask");
    assert_eq!(o["sessionName"], "Renamed by bonsai");
    // Clear the label again.
    assert!(bonsai(&["label", fs, &target, "--yes"]).0);
    assert!(oracle.inspect(&f, &[]).unwrap()["labels"].get(&tid).is_none());

    // Clone: the active branch as a new file, labels carried, same context.
    let out = bonsai_command()
        .args(["clone", fs, "--yes", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["written"], true);
    let clone = PathBuf::from(said["file"].as_str().unwrap());
    let oc = oracle.inspect(&clone, &[]).unwrap();
    let orig = oracle.inspect(&f, &[]).unwrap();
    assert_eq!(
        oc["header"]["parentSession"],
        std::fs::canonicalize(&f).unwrap().to_str().unwrap()
    );
    assert_eq!(oc["context"]["messageCount"], orig["context"]["messageCount"]);
    assert_eq!(
        oc["tree"]["roots"].as_array().unwrap().len(),
        1,
        "re-chained around dropped labels"
    );
    assert_eq!(
        oc["labels"].as_object().unwrap().len(),
        orig["labels"].as_object().unwrap().len(),
        "labels carried"
    );

    // Fork before a user message: the path up to its parent.
    let s = bonsai::store::load_session(&f).unwrap();
    let users: Vec<usize> = (0..s.entries.len())
        .filter(|&i| {
            s.entries[i]
                .message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
        })
        .collect();
    let u = users[users.len() / 2];
    let out = bonsai_command()
        .args(["fork", fs, &s.entries[u].id, "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success());
    // Without --json: one line saying what was written where.
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.starts_with("wrote a new session ("), "{said}");
    let fork = PathBuf::from(said.trim().rsplit(" to ").next().unwrap());
    let of = oracle.inspect(&fork, &[]).unwrap();
    let parent = s.entries[s.parent_of(u).unwrap()].id.to_string();
    let expected = oracle.inspect(&f, &["--leaf", &parent]).unwrap();
    assert_eq!(of["context"]["messageCount"], expected["context"]["messageCount"]);
    assert!(
        of["pathIds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == &Value::String(parent.clone()))
    );
}

#[test]
fn v1_files_need_migrate_then_work() {
    for oracle in pi_sessions("tests::interop::v1_files_need_migrate_then_work") {
        let _v = follow(&oracle);
        v1_files_need_migrate_then_work_on(&oracle);
    }
}

fn v1_files_need_migrate_then_work_on(oracle: &PiSession) {
    // A v1 file written by Pi 0.27.9 (scripts/make-v1-fixture.mjs). Pi migrates v1 ids at
    // random; pi-session.mjs makes them a counter for reading, as bonsai numbers them.
    let src = repo().join("fixtures/pi-0.27.9/v1.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let f = copy(&src, dir.path());
    let fs = f.to_str().unwrap();
    let (ok, _, err) = bonsai(&["rename", fs, "x", "--yes"]);
    assert!(!ok && err.contains("bonsai migrate"), "{err}");
    assert_eq!(
        std::fs::read(&f).unwrap(),
        std::fs::read(&src).unwrap(),
        "refused but wrote"
    );
    let out = bonsai_command().args(["migrate", fs, "--yes"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        std::fs::read(dir.path().join("v1.jsonl.bak")).unwrap(),
        std::fs::read(&src).unwrap()
    );
    let before = oracle.inspect(&src, &[]).unwrap();
    let after = oracle.inspect(&f, &[]).unwrap();
    assert_eq!(after["headerVersion"], 3);
    for k in ["entries", "pathIds", "context", "compaction", "entryTypeCounts"] {
        assert_eq!(
            diff(&before[k], &after[k]),
            Vec::<String>::new(),
            "{k} changed by migration"
        );
    }
    assert!(bonsai(&["rename", fs, "migrated", "--yes"]).0);
    assert_eq!(oracle.inspect(&f, &[]).unwrap()["sessionName"], "migrated");
}
