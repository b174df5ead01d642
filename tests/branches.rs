//! Archive, unarchive, delete-branch and restore on copies of the repository's sessions,
//! checked by Pi 0.87.1 itself (`pi-session.mjs inspect`): archiving leaves Pi's context,
//! labels and name as they were (and its undo too); deleting a dead branch leaves Pi's context
//! at the leaf as it was, keeps every other line byte for byte and in order, and restore
//! gives back the original bytes. Each refusal leaves the file untouched.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn refused(args: &[&str]) -> String {
    let o = bonsai_run(args);
    assert!(!o.status.success(), "{args:?} should be refused");
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Pi's context at the leaf (by entry id: a delete moves line numbers), labels and name.
fn state(pi: &PiSession, f: &Path) -> Value {
    let mut v = pi.inspect(f, &[]).unwrap();
    if let Some(ms) = v["context"]["messages"].as_array_mut() {
        for m in ms {
            m.as_object_mut().unwrap().remove("sourceIdx");
        }
    }
    serde_json::json!({
        "messages": v["context"]["messages"],
        "labels": v["labels"],
        "sessionName": v["sessionName"],
    })
}

/// The id of the first entry whose line contains `needle`.
fn id_of(f: &Path, needle: &str) -> String {
    let text = std::fs::read_to_string(f).unwrap();
    let line = text.lines().find(|l| l.contains(needle)).expect(needle);
    serde_json::from_str::<Value>(line).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn lines(b: &[u8]) -> Vec<&[u8]> {
    b.split_inclusive(|c| *c == b'\n').collect()
}

#[test]
fn archiving_and_its_undo_leave_pi_where_it_was_and_hide_the_branch() {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("tour.jsonl", dir.path());
    let fs = f.to_str().unwrap();
    let pi = pi_session("tests::branches::archiving_and_its_undo_leave_pi_where_it_was");
    let before = pi.as_ref().map(|pi| state(pi, &f));
    let dead = id_of(&f, "Instead of fixing tests");
    let tree_before = bonsai_ok(&["tree", fs, "--width", "100"]);
    assert!(tree_before.contains("Instead of fixing tests"));
    let said = bonsai_ok(&["archive", fs, &dead, "--yes"]);
    assert!(said.contains("appended an archive entry"), "{said}");
    let tree = bonsai_ok(&["tree", fs, "--width", "100"]);
    assert!(!tree.contains("Instead of fixing tests"), "hidden:\n{tree}");
    assert!(tree.contains("1 archived branch hidden"), "{tree}");
    let shown = bonsai_ok(&["tree", fs, "--width", "100", "--archived"]);
    assert!(shown.contains("Instead of fixing tests"), "{shown}");
    if let (Some(pi), Some(before)) = (&pi, &before) {
        assert_eq!(&state(pi, &f), before, "Pi's context, labels and name after archiving");
    }
    // Twice is refused; the leaf's own branch is refused; both leave the file alone.
    let len = std::fs::metadata(&f).unwrap().len();
    assert!(refused(&["archive", fs, &dead, "--yes"]).contains("already archived"));
    let live = id_of(&f, "Also list the largest postings");
    let e = refused(&["archive", fs, &live, "--yes"]);
    assert!(e.contains("holds the leaf"), "{e}");
    assert!(refused(&["unarchive", fs, &live, "--yes"]).contains("is not archived"));
    assert!(refused(&["archive", fs, "nosuchid", "--yes"]).contains("nosuchid"));
    assert_eq!(std::fs::metadata(&f).unwrap().len(), len);
    // Undo shows it again; unarchive after a second archive does the same.
    let said = bonsai_ok(&["undo", fs, "--yes"]);
    assert!(said.contains("shows in the tree again"), "{said}");
    assert!(bonsai_ok(&["tree", fs, "--width", "100"]).contains("Instead of fixing tests"));
    bonsai_ok(&["archive", fs, &dead, "--yes"]);
    bonsai_ok(&["unarchive", fs, &dead, "--yes"]);
    assert!(bonsai_ok(&["tree", fs, "--width", "100"]).contains("Instead of fixing tests"));
    if let (Some(pi), Some(before)) = (&pi, &before) {
        assert_eq!(&state(pi, &f), before, "Pi's context, labels and name after the undo");
    }
}

#[test]
fn deleting_a_dead_branch_keeps_every_other_line_and_pis_context_and_restore_gives_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("tour.jsonl", dir.path());
    let fs = f.to_str().unwrap();
    let original = std::fs::read(&f).unwrap();
    let pi = pi_session("tests::branches::deleting_a_dead_branch_keeps_every_other_line");
    let before = pi.as_ref().map(|pi| state(pi, &f));
    let dead = id_of(&f, "Instead of fixing tests");

    // Written just now: Pi may be running, so it is refused (and says why).
    let e = refused(&["delete-branch", fs, &dead, "--yes"]);
    assert!(e.contains("Pi may be running"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), original);

    quiet(&f);
    let dry = bonsai_ok(&["delete-branch", fs, &dead, "--dry-run"]);
    assert!(dry.contains("4 entries"), "{dry}");
    assert_eq!(std::fs::read(&f).unwrap(), original);
    let said = bonsai_ok(&["delete-branch", fs, &dead, "--yes"]);
    assert!(said.contains("deleted 4 entries"), "{said}");

    let now = std::fs::read(&f).unwrap();
    let kept = lines(&now);
    // Every kept line is one of the original's, in order; the removed ones are the branch.
    let orig = lines(&original);
    let mut at = 0;
    for l in &kept {
        let k = orig[at..]
            .iter()
            .position(|o| o == l)
            .expect("a kept line is byte-identical");
        at += k + 1;
    }
    assert_eq!(orig.len() - kept.len(), 4);
    let bak = dir.path().join("tour.jsonl.bak");
    assert_eq!(std::fs::read(&bak).unwrap(), original, "the backup is the original");
    let deleted: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".deleted-"))
        .collect();
    assert_eq!(deleted.len(), 1);
    let gone = std::fs::read(&deleted[0]).unwrap();
    assert_eq!(lines(&gone).len(), 4);
    assert!(String::from_utf8_lossy(&gone).contains("Instead of fixing tests"));
    if let (Some(pi), Some(before)) = (&pi, &before) {
        assert_eq!(&state(pi, &f), before, "Pi's context at the leaf after the delete");
        let t = pi.inspect(&f, &[]).unwrap();
        assert_eq!(t["entries"].as_u64().unwrap() as usize, kept.len() - 1);
    }
    // A removed file is not a session: bonsai's listing of the folder skips it.
    let listed = bonsai_ok(&["tree", dir.path().to_str().unwrap(), "--width", "60"]);
    assert!(!listed.is_empty());

    // Pi appends after the delete; restore puts the branch back and keeps Pi's line after it.
    let leaf = {
        let t = String::from_utf8_lossy(&now).to_string();
        let last = t.lines().last().unwrap().to_string();
        serde_json::from_str::<Value>(&last).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let pis_line = format!(
        "{{\"type\":\"message\",\"id\":\"feedf00d\",\"parentId\":\"{leaf}\",\"timestamp\":\"2026-11-20T10:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"one more\",\"timestamp\":1}}}}\n"
    );
    std::fs::OpenOptions::new()
        .append(true)
        .open(&f)
        .unwrap()
        .write_all(pis_line.as_bytes())
        .unwrap();
    quiet(&f);
    let said = bonsai_ok(&["restore", fs, "--yes"]);
    assert!(said.contains("restored"), "{said}");
    let mut expected = original.clone();
    expected.extend_from_slice(pis_line.as_bytes());
    assert_eq!(
        std::fs::read(&f).unwrap(),
        expected,
        "the original, then Pi's appended line"
    );
    // Twice: nothing left to restore.
    quiet(&f);
    let e = refused(&["restore", fs, "--yes"]);
    assert!(e.contains("nothing to restore"), "{e}");
}

#[test]
fn a_plain_delete_and_restore_is_byte_for_byte_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("tour.jsonl", dir.path());
    let fs = f.to_str().unwrap();
    let original = std::fs::read(&f).unwrap();
    let dead = id_of(&f, "Instead of fixing tests");
    quiet(&f);
    bonsai_ok(&["delete-branch", fs, &dead, "--yes"]);
    assert_ne!(std::fs::read(&f).unwrap(), original);
    quiet(&f);
    bonsai_ok(&["restore", fs, "--yes"]);
    assert_eq!(std::fs::read(&f).unwrap(), original);
}

#[test]
fn deletes_that_would_change_the_rest_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("tour.jsonl", dir.path());
    let fs = f.to_str().unwrap();
    quiet(&f);
    let original = std::fs::read(&f).unwrap();
    // The screenshot branch holds a label change that clears "start" on a kept entry.
    let screenshot = id_of(&f, "What does this screenshot");
    let e = refused(&["delete-branch", fs, &screenshot, "--yes"]);
    assert!(e.contains("would be labelled \"start\""), "{e}");
    // The leaf's branch.
    let live = id_of(&f, "Also list the largest postings");
    assert!(refused(&["delete-branch", fs, &live, "--yes"]).contains("holds the leaf"));
    // A kept label naming an entry of the branch.
    let dead = id_of(&f, "Instead of fixing tests");
    quiet(&f);
    bonsai_ok(&["label", fs, &dead, "keep me", "--yes"]);
    quiet(&f);
    let labelled = std::fs::read(&f).unwrap();
    let e = refused(&["delete-branch", fs, &dead, "--yes"]);
    assert!(e.contains("the label label"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), labelled);
    assert!(original.len() < labelled.len());
    // No such entry.
    assert!(refused(&["delete-branch", fs, "nosuchid", "--yes"]).contains("nosuchid"));
    // Without --yes and without a terminal: nothing written.
    let e = refused(&["delete-branch", fs, &screenshot]);
    assert!(e.contains("nothing deleted") || e.contains("nothing written"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), labelled);
}

#[test]
fn the_store_refuses_a_file_that_changed_since_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("tour.jsonl", dir.path());
    let seen = std::fs::read(&f).unwrap();
    let dead = id_of(&f, "Instead of fixing tests");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&f)
        .unwrap()
        .write_all(b"{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"c1\",\"parentId\":null,\"timestamp\":\"2026-11-20T10:00:00.000Z\"}\n")
        .unwrap();
    quiet(&f);
    let grown = std::fs::read(&f).unwrap();
    let e = bonsai::store::rewrite::delete_branch(&f, &seen, &dead).unwrap_err();
    assert!(e.to_string().contains("changed since bonsai read it"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), grown);
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(
        leftovers, 1,
        "no backup or removed-lines file is left by a refused delete"
    );
}

use std::io::Write as _;

/// Every branch of every version-3 session (the repository's, and ../shared's when present)
/// that bonsai will delete: Pi 0.87.1 loads the result with the same leaf and the same
/// context (sources, estimates, content hashes), every other entry is still there, every
/// kept line is byte-identical, and a restore gives back the original bytes. The branches
/// it refuses are counted by reason.
#[test]
fn every_deletable_branch_of_every_session() {
    use bonsai::engine::edit::delete;
    use bonsai::engine::load::session::Session;
    use bonsai::engine::view::tree::Tree;
    let pi = pi_session("tests::branches::every_deletable_branch_of_every_session");
    let mut files = sessions_in(&repo().join("fixtures/pi-0.87.1"));
    if let Some(d) = shared_fixture_dirs().first() {
        files.extend(sessions_in(d));
    }
    let work = tempfile::tempdir().unwrap();
    let mut originals = Vec::new();
    let mut deleted = Vec::new();
    let mut removed_ids: Vec<Vec<String>> = Vec::new();
    let mut refused: std::collections::BTreeMap<String, usize> = Default::default();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let Ok(s) = Session::from_bytes(bytes.clone()) else {
            continue;
        };
        if s.header.version < 3.0 || s.has_duplicate_ids {
            continue;
        }
        let tree = Tree::build(&s);
        for i in 0..s.entries.len() {
            let branch_child = s.parent_of(i).is_some_and(|p| tree.children[p].len() > 1);
            if !branch_child {
                continue;
            }
            let plan = match delete::plan(&s, &tree, i) {
                Ok(p) => p,
                Err(e) => {
                    let reason = format!("{e:?}");
                    *refused
                        .entry(reason.split(['(', ' ', '{']).next().unwrap().to_string())
                        .or_default() += 1;
                    continue;
                }
            };
            let n = deleted.len();
            let copy = work.path().join(format!("d{n}.jsonl"));
            std::fs::write(&copy, &bytes).unwrap();
            quiet(&copy);
            let d = bonsai::store::rewrite::delete_branch(&copy, &bytes, &s.entries[i].id).unwrap();
            assert_eq!(d.plan.removed, plan.removed);
            let now = std::fs::read(&copy).unwrap();
            let (orig, kept) = (lines(&bytes), lines(&now));
            let mut at = 0;
            for l in &kept {
                at += orig[at..]
                    .iter()
                    .position(|o| o == l)
                    .expect("kept lines are byte-identical")
                    + 1;
            }
            assert_eq!(orig.len() - kept.len(), plan.removed.len(), "{}", f.display());
            // Restore a second copy: the original bytes.
            let again = work.path().join(format!("r{n}.jsonl"));
            std::fs::write(&again, &bytes).unwrap();
            quiet(&again);
            bonsai::store::rewrite::delete_branch(&again, &bytes, &s.entries[i].id).unwrap();
            quiet(&again);
            bonsai::store::rewrite::restore(&again).unwrap();
            assert_eq!(
                std::fs::read(&again).unwrap(),
                bytes,
                "restore of {} in {}",
                s.entries[i].id,
                f.display()
            );
            originals.push(f.clone());
            deleted.push(copy);
            removed_ids.push(plan.removed.iter().map(|&r| s.entries[r].id.to_string()).collect());
        }
    }
    // The repository's sessions hold one deletable branch; ../shared's add more.
    let want = if shared_fixture_dirs().is_empty() { 1 } else { 3 };
    assert!(deleted.len() >= want, "too few deletable branches: {}", deleted.len());
    say(&format!(
        "tests::branches: {} branches deleted and restored in {} sessions; refused: {refused:?}",
        deleted.len(),
        files.len()
    ));
    let Some(pi) = pi else { return };
    let before = pi.load(&originals);
    let after = pi.load(&deleted);
    for ((b, a), gone) in before.iter().zip(&after).zip(&removed_ids) {
        assert_eq!(a["ok"], true, "{a}");
        for k in ["leafId", "contextIds", "messages", "estimate", "detail"] {
            assert_eq!(a[k], b[k], "{k} after deleting {gone:?} from {}", b["file"]);
        }
        let kept: Vec<&Value> = b["ids"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|id| !gone.iter().any(|g| id.as_str() == Some(g)))
            .collect();
        let now: Vec<&Value> = a["ids"].as_array().unwrap().iter().collect();
        assert_eq!(now, kept, "every other entry stays, in order ({})", b["file"]);
    }
}

/// Every branch of every version-3 session that bonsai will archive: archived, then the archive
/// undone, Pi 0.87.1 loads the file with the same context each time (sources, estimates,
/// content hashes); its leaf is the archive entry (a `custom` entry under the old leaf) or the
/// undo's, whose path is the old leaf's plus that entry.
#[test]
fn every_archivable_branch_leaves_pis_context_alone() {
    use bonsai::engine::edit::plan::{Write, WriteRequest};
    use bonsai::engine::edit::undo;
    use bonsai::engine::load::session::Session;
    use bonsai::engine::view::archive;
    use bonsai::engine::view::tree::Tree;
    let pis = pi_sessions("tests::branches::every_archivable_branch_leaves_pis_context_alone");
    let mut files = sessions_in(&repo().join("fixtures/pi-0.87.1"));
    files.extend(sessions_in(&repo().join("fixtures/pi-1.5.2")));
    if let Some(d) = shared_fixture_dirs().first() {
        files.extend(sessions_in(d));
    }
    let work = tempfile::tempdir().unwrap();
    let (mut originals, mut archived, mut undone) = (vec![], vec![], vec![]);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let Ok(s) = Session::from_bytes(bytes.clone()) else {
            continue;
        };
        if s.header.version < 3.0 {
            continue;
        }
        let tree = Tree::build(&s);
        for i in 0..s.entries.len() {
            if s.parent_of(i).is_none_or(|p| tree.children[p].len() <= 1) || archive::check(&s, i, true).is_err() {
                continue;
            }
            let n = archived.len();
            let a = work.path().join(format!("a{n}.jsonl"));
            std::fs::write(&a, &bytes).unwrap();
            let req = WriteRequest {
                write: Write::Archive {
                    target: s.entries[i].id.to_string(),
                    archived: true,
                },
                seen: None,
            };
            bonsai::store::write::apply(&a, &req).unwrap();
            let u = work.path().join(format!("u{n}.jsonl"));
            std::fs::copy(&a, &u).unwrap();
            let su = bonsai::store::load_session(&u).unwrap();
            let plan = undo::plan(&su).unwrap();
            assert!(plan.how.contains("shows in the tree again"), "{}", plan.how);
            bonsai::store::write::apply(
                &u,
                &WriteRequest {
                    write: plan.write,
                    seen: None,
                },
            )
            .unwrap();
            assert!(archive::archived_roots(&bonsai::store::load_session(&u).unwrap()).is_empty());
            originals.push(f.clone());
            archived.push(a);
            undone.push(u);
        }
    }
    let want = if shared_fixture_dirs().is_empty() { 2 } else { 5 };
    assert!(
        archived.len() >= want,
        "too few archivable branches: {}",
        archived.len()
    );
    say(&format!(
        "tests::branches: {} branches archived and unarchived in {} sessions",
        archived.len(),
        files.len()
    ));
    // Each Pi release reads the archived and the unarchived files as it read the originals.
    for pi in pis {
        let before = pi.load(&originals);
        for after in [pi.load(&archived), pi.load(&undone)] {
            for (b, a) in before.iter().zip(&after) {
                assert_eq!(a["ok"], true, "Pi {}: {a}", pi.version);
                for k in ["messages", "estimate", "detail"] {
                    assert_eq!(a[k], b[k], "Pi {}: {k} of {}", pi.version, b["file"]);
                }
                // The path's entries are the old ones, then bonsai's custom entries (no messages).
                let (bi, ai) = (b["contextIds"].as_array().unwrap(), a["contextIds"].as_array().unwrap());
                assert!(
                    ai.starts_with(bi) && ai.len() > bi.len(),
                    "Pi {}: {}",
                    pi.version,
                    b["file"]
                );
            }
        }
    }
}
