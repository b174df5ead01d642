//! The dialogs driven by keys on temporary copies of Pi's sessions: what they show, what
//! they write, and that nothing is written without the deliberate key.

use crate::engine::entry::{Kind, Role};
use crate::ui::app::Effect;
use crate::ui::tests::{app_for, ctrl, key, own, render, shift, typed};
use crossterm::event::KeyCode;

pub fn temp_copy(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name.rsplit('/').next().unwrap());
    std::fs::copy(own(name), &p).unwrap();
    (dir, p)
}

#[test]
fn compact_dialog_preview_accept_writes_a_compaction() {
    let (_d, p) = temp_copy("long.jsonl");
    let before = std::fs::read(&p).unwrap();
    let mut a = app_for(&p);
    a.selection.keep_recent = 2000;
    a.handle_key(shift('C'));
    typed(&mut a, "keep the log findings");
    insta::assert_snapshot!("dialog_compact_instructions", render(&mut a, 100, 30));
    a.handle_key(key(KeyCode::Enter));
    insta::assert_snapshot!("dialog_compact_preview", render(&mut a, 100, 30));
    a.handle_key(ctrl('s'));
    a.run_jobs_now();
    let after = std::fs::read(&p).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "append only");
    let s = a.doc.session.clone();
    let leaf = s.leaf().unwrap();
    assert!(matches!(s.entries[leaf].kind, Kind::Compaction(_)));
    assert_eq!(a.selected(), Some(leaf), "the new compaction is selected");
    let text = s.entry_value(leaf)["summary"].as_str().unwrap().to_string();
    assert!(text.contains("Focus requested: keep the log findings"));
}

#[test]
fn compact_dialog_discard_writes_nothing() {
    let (_d, p) = temp_copy("long.jsonl");
    let before = std::fs::read(&p).unwrap();
    let mut a = app_for(&p);
    a.selection.keep_recent = 2000;
    a.handle_key(shift('C'));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    a.handle_key(key(KeyCode::Char('d')));
    assert!(a.dialog.is_none());
    a.run_jobs_now();
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn navigate_dialog_offers_pis_three_choices() {
    let (_d, p) = temp_copy("tour.jsonl");
    let mut a = app_for(&p);
    let s = a.doc.session.clone();
    let first_user = (0..s.entries.len())
        .find(|&i| s.entries[i].message().is_some_and(|m| m.role == Role::User))
        .unwrap();
    a.view.select_entry(&s, first_user);
    a.selection_changed();
    a.handle_key(key(KeyCode::Enter));
    insta::assert_snapshot!("dialog_navigate", render(&mut a, 100, 30));
    a.handle_key(key(KeyCode::Down));
    a.handle_key(key(KeyCode::Down));
    a.handle_key(key(KeyCode::Enter));
    typed(&mut a, "what was tried");
    insta::assert_snapshot!("dialog_navigate_custom", render(&mut a, 100, 30));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    let s2 = a.doc.session.clone();
    let leaf = s2.leaf().unwrap();
    assert!(
        matches!(s2.entries[leaf].kind, Kind::BranchSummary(_)),
        "{:?}",
        a.status
    );
    assert_eq!(
        s2.parent_of(leaf),
        s.parent_of(first_user),
        "a user target: the summary hangs under its parent"
    );
    assert!(a.status.as_deref().unwrap_or("").contains("clipboard"));
}

#[test]
fn label_dialog_sets_and_clears() {
    let (_d, p) = temp_copy("split-turn.jsonl");
    let mut a = app_for(&p);
    let target = a.selected().unwrap();
    let id = a.doc.session.entries[target].id.clone();
    a.handle_key(shift('L'));
    typed(&mut a, "checkpoint");
    insta::assert_snapshot!("dialog_label", render(&mut a, 80, 24));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    assert_eq!(a.doc.session.label_of(&id), Some("checkpoint"));
    assert_eq!(
        a.selected(),
        a.doc.session.idx_of(&id),
        "the labelled entry stays selected"
    );
    a.handle_key(shift('L'));
    for _ in 0..10 {
        a.handle_key(key(KeyCode::Backspace));
    }
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    assert_eq!(a.doc.session.label_of(&id), None);
}

#[test]
fn rename_and_streaming_dialogs() {
    let (_d, p) = temp_copy("split-turn.jsonl");
    let mut a = app_for(&p);
    a.handle_key(shift('R'));
    typed(&mut a, " Split turn demo");
    insta::assert_snapshot!("dialog_rename", render(&mut a, 80, 24));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    assert_eq!(a.doc.session.session_name(), Some("Split turn demo"));
    // A branch summary streaming from a model (state set directly: no network in tests).
    a.dialog = Some(super::Dialog::Summary {
        purpose: super::SummaryFor::Branch { target: 3, budget: 1 },
        seen: super::Seen::of(&a.doc.session),
        text: "## Goal\n- Audit the invtrack package".into(),
        by: "anthropic/claude-haiku-4-5".into(),
        usage: None,
        streaming: true,
        scroll: 0,
        job: 99,
    });
    insta::assert_snapshot!("dialog_branch_summary_streaming", render(&mut a, 80, 24));
    a.pending.summary = Some((99, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false))));
    a.handle_key(key(KeyCode::Esc));
    assert!(a.dialog.is_none());
    assert!(a.status.as_deref().unwrap().contains("cancelled"));
}

#[test]
fn ctrl_x_copies_like_pi() {
    let mut a = crate::ui::tests::demo_app();
    a.handle_key(ctrl('x'));
    assert_eq!(a.status.as_deref(), Some("Copied selected message to clipboard"));
    match a.take_effects().as_slice() {
        [Effect::Clipboard(t)] => assert!(t.starts_with("Added `tests/test_skipped.py`")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn demo_session_is_read_only() {
    let mut a = crate::ui::tests::demo_app();
    a.handle_key(shift('C'));
    assert!(a.dialog.is_none());
    assert!(a.status.as_deref().unwrap().contains("read-only"));
}
