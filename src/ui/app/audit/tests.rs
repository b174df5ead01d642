use super::*;
use crate::ui::tests::{app_for, ch, key, own, render};
use crossterm::event::KeyCode;

/// a on a compaction: the kinds with kept/total, the lost items with their entries, the
/// summary beside them; Enter goes to an item's entry; space and A choose; w asks, y writes an
/// amended compaction that keeps what was chosen; u undoes it.
#[test]
fn the_audit_view_lists_what_a_compaction_lost_and_gives_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("long.jsonl");
    std::fs::copy(own("long.jsonl"), &p).unwrap();
    let mut a = app_for(&p);
    // On a message, a says what it is for.
    a.select_entry_ref("c094d3d6");
    a.handle_key(ch('a'));
    assert_eq!(a.mode(), Mode::Tree);
    assert!(a.log.status.as_deref().unwrap_or("").contains("select a compaction"));
    a.select_entry_ref("e033391b");
    a.handle_key(ch('a'));
    a.run_jobs_now();
    assert_eq!(a.mode(), Mode::Audit);
    let d = a.audit_data().unwrap();
    assert_eq!(d.lost.len(), 9, "{:?}", d.audit.headline());
    let first = d.lost[0].entry;
    insta::assert_snapshot!(render(&mut a, 120, 32));
    // Enter: the entry the item came from (a reply of tool calls alone is no row of Pi's
    // tree: the entry above it, and the status says why).
    a.handle_key(key(KeyCode::Enter));
    let s = a.doc.session.clone();
    assert_eq!(a.selected(), s.parent_of(first));
    assert!(
        a.log
            .status
            .as_deref()
            .unwrap_or("")
            .contains("c094d3d6 is not a row of the tree")
    );
    assert_eq!(a.mode(), Mode::Tree);
    // A later compaction replaced this one's summary: the view says so, and w names where to
    // give back instead (the engine refuses it too: tests/audit.rs).
    a.select_entry_ref("e033391b");
    a.handle_key(ch('a'));
    a.run_jobs_now();
    let screen = render(&mut a, 120, 32);
    assert!(screen.contains("replaced by 56b3ebba, which carries it"), "{screen}");
    a.handle_key(ch(' '));
    a.handle_key(ch('w'));
    assert_eq!(a.mode(), Mode::Audit, "nothing asked");
    assert!(
        a.log
            .status
            .as_deref()
            .unwrap_or("")
            .contains("a later compaction replaced this summary"),
        "{:?}",
        a.log.status
    );
    a.handle_key(key(KeyCode::Esc));
    // The newest: choose two, write.
    a.select_entry_ref("56b3ebba");
    a.handle_key(ch('a'));
    a.run_jobs_now();
    a.handle_key(ch('w'));
    assert!(a.log.status.as_deref().unwrap_or("").contains("nothing chosen"));
    a.handle_key(ch(' '));
    a.handle_key(ch(' '));
    a.handle_key(ch('w'));
    assert_eq!(a.mode(), Mode::Confirm);
    let screen = render(&mut a, 120, 32);
    assert!(screen.contains("2 lost items word for word."), "{screen}");
    let before = std::fs::read(&p).unwrap();
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let after = std::fs::read_to_string(&p).unwrap();
    let last: serde_json::Value = serde_json::from_str(after.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "compaction");
    assert_eq!(last["bonsai"]["action"], "amend");
    let summary = last["summary"].as_str().unwrap();
    assert!(
        summary.contains(
            "### Commands\n- `grep -c WARN logs/import-11.log` (ok)\n- `grep -c WARN logs/import-12.log` (ok)"
        ),
        "{summary}"
    );
    assert_eq!(&after.as_bytes()[..before.len()], &before[..], "append only");
    // The new compaction audits as keeping the two.
    let s = crate::store::load_session(&p).unwrap();
    let x = crate::engine::compaction::audit::audit(&s, s.leaf().unwrap()).unwrap();
    assert_eq!(x.lost().count(), 10, "{}", x.headline());
}
