//! `bonsai undo` on copies of the repository's sessions, checked by Pi 0.87.1 itself
//! (`pi-session.mjs inspect`): after an action and its undo Pi's leaf context, labels and
//! session name are what they were before the action; undo repeats back through bonsai's
//! actions and stops at Pi's; once Pi writes, undo refuses.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

/// What a user of Pi gets from the session: the model's messages at the leaf (role, source,
/// estimate), the labels and the name.
fn state(pi: &PiSession, f: &Path) -> Value {
    let v = pi.inspect(f, &[]).unwrap();
    serde_json::json!({
        "messages": v["context"]["messages"],
        "labels": v["labels"],
        "sessionName": v["sessionName"],
    })
}

#[test]
fn each_action_and_its_undo_leave_pi_where_it_was() {
    for pi in pi_sessions("tests::undo::each_action_and_its_undo_leave_pi_where_it_was") {
        let _v = follow(&pi);
        each_action_and_its_undo_leave_pi_where_it_was_on(&pi);
    }
}

fn each_action_and_its_undo_leave_pi_where_it_was_on(pi: &PiSession) {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("long.jsonl", dir.path());
    let fs = f.to_str().unwrap();
    let user = last_user_message(&f);
    let original = state(pi, &f);
    let actions: Vec<Vec<String>> = vec![
        vec![
            "compact".into(),
            fs.into(),
            "--keep-recent-tokens".into(),
            "2000".into(),
            "--summarizer".into(),
            "offline".into(),
        ],
        vec!["label".into(), fs.into(), format!("idx:{user}"), "checked".into()],
        vec!["rename".into(), fs.into(), "renamed by bonsai".into()],
        vec![
            "navigate".into(),
            fs.into(),
            "idx:20".into(),
            "--summary".into(),
            "default".into(),
        ],
        vec![
            "prune".into(),
            fs.into(),
            "--policy".into(),
            "by-zone".into(),
            "--zone".into(),
            "yellow".into(),
            "--apply".into(),
        ],
    ];
    for a in &actions {
        let before = state(pi, &f);
        let bytes = std::fs::read(&f).unwrap();
        let mut args: Vec<&str> = a.iter().map(String::as_str).collect();
        args.push("--yes");
        bonsai_ok(&args);
        assert_ne!(state(pi, &f), before, "{a:?} changed nothing Pi sees");
        let said = bonsai_ok(&["undo", fs, "--yes"]);
        assert!(said.contains("appended the undo of"), "{said}");
        assert_eq!(state(pi, &f), before, "{a:?} undone: Pi is back where it was");
        assert!(std::fs::read(&f).unwrap().starts_with(&bytes), "append only");
    }
    assert_eq!(state(pi, &f), original);
}

#[test]
fn undo_repeats_back_through_bonsais_actions_and_stops_at_pis() {
    for pi in pi_sessions("tests::undo::undo_repeats_back_through_bonsais_actions_and_stops_at_pis") {
        let _v = follow(&pi);
        undo_repeats_back_through_bonsais_actions_and_stops_at_pis_on(&pi);
    }
}

fn undo_repeats_back_through_bonsais_actions_and_stops_at_pis_on(pi: &PiSession) {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("tour.jsonl", dir.path());
    let fs = f.to_str().unwrap();
    let original = state(pi, &f);
    bonsai_ok(&["rename", fs, "first", "--yes"]);
    let after_first = state(pi, &f);
    bonsai_ok(&["rename", fs, "second", "--yes"]);
    bonsai_ok(&["label", fs, "idx:3", "x", "--yes"]);
    // Three undos: the label, the second name, the first name.
    let said = bonsai_ok(&["undo", fs, "--yes"]);
    assert!(said.contains("the label"), "{said}");
    let said = bonsai_ok(&["undo", fs, "--yes"]);
    assert!(said.contains("named \"first\" again"), "{said}");
    assert_eq!(state(pi, &f), after_first);
    bonsai_ok(&["undo", fs, "--yes"]);
    assert_eq!(state(pi, &f), original);
    // Nothing of bonsai's is left: the entry before is Pi's.
    let o = bonsai_run(&["undo", fs, "--yes"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("nothing of bonsai's left to undo"), "{err}");
    // Pi writes: undo refuses to fight it, and writes nothing.
    bonsai_ok(&["rename", fs, "third", "--yes"]);
    pi.open(&f);
    let o = pi.command().args(["append", fs, "1"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&f).unwrap();
    let o = bonsai_run(&["undo", fs, "--yes"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is Pi's") && err.contains("would fight Pi"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), bytes);
}

#[test]
fn an_undo_without_yes_and_without_a_terminal_says_what_it_would_do() {
    let dir = tempfile::tempdir().unwrap();
    let f = own_copy("tour.jsonl", dir.path());
    let fs = f.to_str().unwrap();
    bonsai_ok(&["label", fs, "idx:3", "x", "--yes"]);
    let bytes = std::fs::read(&f).unwrap();
    let o = bonsai_run(&["undo", fs]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("undo the label") && err.contains("--yes"), "{err}");
    assert_eq!(std::fs::read(&f).unwrap(), bytes);
    let o = bonsai_run(&["undo", fs, "--dry-run"]);
    assert!(o.status.success());
    assert_eq!(std::fs::read(&f).unwrap(), bytes);
}

/// Issue 21, item 4: undoing a prune wrote every pruned output (images too) back into the file,
/// so each prune and undo grew the session for good. The undo is now one line (Pi resumes where
/// the edits started), by `bonsai undo` and `bonsai prune --undo` alike, and Pi's context is
/// what it was.
#[test]
fn undoing_a_prune_writes_one_line_and_gives_pi_its_context_back() {
    for pi in pi_sessions("tests::undo::undoing_a_prune_writes_one_line_and_gives_pi_its_context_back") {
        let _v = follow(&pi);
        let dir = tempfile::tempdir().unwrap();
        let f = own_copy("tour.jsonl", dir.path());
        let fs = f.to_str().unwrap();
        let original = state(&pi, &f);
        for undo in [&["undo", fs, "--yes"][..], &["prune", fs, "--undo", "--yes"][..]] {
            let before = std::fs::metadata(&f).unwrap().len();
            bonsai_ok(&[
                "prune",
                fs,
                "--policy",
                "output",
                "--minimum",
                "0",
                "--protect",
                "0",
                "--protected-turns",
                "0",
                "--apply",
                "--yes",
            ]);
            let pruned = std::fs::metadata(&f).unwrap().len();
            assert_ne!(state(&pi, &f), original, "the prune changed nothing Pi sees");
            let said = bonsai_ok(undo);
            assert!(said.contains("prune by the output policy"), "{said}");
            let text = std::fs::read_to_string(&f).unwrap();
            let grew = text.len() as u64 - pruned;
            assert!(
                grew < 600,
                "{undo:?} appended {grew} bytes (the prune itself {})",
                pruned - before
            );
            assert_eq!(text[pruned as usize..].lines().count(), 1, "{undo:?}: one line");
            assert_eq!(state(&pi, &f), original, "{undo:?}: Pi's context is back");
        }
    }
}
