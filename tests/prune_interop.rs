//! Pruning against Pi itself: each policy's plan is written (on a copy) as context edits, and
//! Pi 0.87.1 loads the file: exactly the planned entries carry the planned content (or are
//! gone, when hidden), nothing else changed, Pi's context estimate is the plan's "after"
//! figure; after undo Pi's context is message for message what it was. On a session made
//! here, and on ../shared's fixtures when present. Skipped by name without Pi.

mod common;

use bonsai::engine::edit::plan::WriteRequest;
use bonsai::engine::edit::prune::{self, Edit, Plan, PruneSettings, Zone};
use bonsai::engine::load::js;
use bonsai::engine::load::session::Session;
use bonsai::store;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// pi-session.mjs's content hash: SHA-256 of JSON.stringify(content), 16 hex digits.
fn content_hash(content: &Value) -> String {
    let h = Sha256::digest(js::stringify(content).as_bytes());
    h.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn write(p: &Path, plan: &Plan, undoes: Option<&str>) {
    let s = store::load_session(p).unwrap();
    let req = WriteRequest {
        write: plan.to_write(&s, undoes),
        seen: Some((s.buf.len(), s.entries.len())),
    };
    store::write::apply(p, &req).unwrap();
}

/// (source, role, tokens, content hash) of each message Pi puts in the context.
fn detail(v: &Value) -> Vec<(String, String, u64, String)> {
    v["detail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["source"].as_str().unwrap_or("").to_string(),
                m["role"].as_str().unwrap_or("").to_string(),
                m["tokens"].as_u64().unwrap_or(0),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn sessions(dir: &Path) -> Vec<PathBuf> {
    let made = dir.join("made.jsonl");
    let mut synth = common::synth::Synth::new(1 << 20);
    synth.tool_output = 24_000;
    std::fs::write(&made, synth.make()).unwrap();
    let mut v = vec![made];
    let own = common::repo().join("fixtures/pi-0.87.1");
    v.extend(["long.jsonl", "tour.jsonl", "split-turn.jsonl"].map(|n| own.join(n)));
    let shared = common::shared().join("fixtures/pi-0.87.1");
    if shared.exists() {
        for n in ["compacted-long.jsonl", "context-edits.jsonl", "split-turn.jsonl"] {
            v.push(shared.join(n));
        }
    } else {
        common::say(
            "SKIPPED (part) tests::prune_interop: ../shared is absent; the repository's own sessions and the one made here are checked",
        );
    }
    v
}

#[test]
fn pi_sees_exactly_the_planned_edits_and_undo_gives_its_context_back() {
    for pi in common::pi_sessions("pi_sees_exactly_the_planned_edits_and_undo_gives_its_context_back") {
        let _v = common::follow(&pi);
        pi_sees_exactly_the_planned_edits_and_undo_gives_its_context_back_on(&pi);
    }
}

fn pi_sees_exactly_the_planned_edits_and_undo_gives_its_context_back_on(pi: &common::PiSession) {
    let work = tempfile::tempdir().unwrap();
    let mut failures = vec![];
    let mut checked = 0;
    for src in sessions(work.path()) {
        let s0 = store::load_session(&src).unwrap();
        let Some(leaf) = s0.leaf() else { continue };
        let small = PruneSettings {
            protect: 2_000,
            minimum: 500,
            ..Default::default()
        };
        let compat = PruneSettings {
            compat: true,
            ..small.clone()
        };
        let plans: Vec<(&str, Plan)> = vec![
            ("output", prune::output(&s0, leaf, &PruneSettings::default(), false)),
            ("output small budget", prune::output(&s0, leaf, &small, false)),
            ("output compat", prune::output(&s0, leaf, &compat, false)),
            ("zones yellow", prune::zones(&s0, leaf, Zone::Yellow, &small)),
            ("zones red", prune::zones(&s0, leaf, Zone::Red, &small)),
        ];
        let name = src.file_name().unwrap().to_string_lossy().to_string();
        for (what, plan) in plans {
            if plan.is_empty() {
                continue;
            }
            let what = format!("{name} {what}");
            let copy = work.path().join("copy.jsonl");
            std::fs::copy(&src, &copy).unwrap();
            let original = pi.load(std::slice::from_ref(&copy)).remove(0);
            write(&copy, &plan, None);
            let after = pi.load(std::slice::from_ref(&copy)).remove(0);
            checked += 1;
            if after["estimate"].as_u64() != Some(plan.tokens_after) {
                failures.push(format!(
                    "{what}: Pi estimates {} after, the plan {}",
                    after["estimate"], plan.tokens_after
                ));
            }
            // Every planned edit, as planned; every other message as it was.
            let s = store::load_session(&copy).unwrap();
            let mut want = detail(&original);
            for item in plan.edits() {
                let id = s.entries[item.entry].id.to_string();
                match &item.replacement {
                    Value::Null => want.retain(|m| m.0 != id),
                    r => {
                        for m in want.iter_mut().filter(|m| m.0 == id) {
                            m.2 = item.tokens_after;
                            m.3 = content_hash(&r["content"]);
                        }
                    }
                }
            }
            if detail(&after) != want {
                failures.push(format!(
                    "{what}: Pi's context is not the original with exactly the planned edits"
                ));
            }
            // Undo: Pi's context is message for message the original.
            let s = store::load_session(&copy).unwrap();
            let (undo, action) = prune::undo(&s, s.leaf().unwrap()).unwrap();
            write(&copy, &undo, Some(&s.entries[action.record].id));
            let back = pi.load(std::slice::from_ref(&copy)).remove(0);
            if detail(&back) != detail(&original) {
                failures.push(format!("{what}: after undo Pi's context differs from the original"));
            }
            if back["estimate"].as_u64() != Some(undo.tokens_after) {
                failures.push(format!(
                    "{what}: after undo Pi estimates {}, bonsai {}",
                    back["estimate"], undo.tokens_after
                ));
            }
        }
        // A manual replace and hide on the made session, then undo.
        if name == "made.jsonl" {
            let copy = work.path().join("manual.jsonl");
            std::fs::copy(&src, &copy).unwrap();
            let s = store::load_session(&copy).unwrap();
            let leaf = s.leaf().unwrap();
            let path = s.path_to(leaf);
            let user = *path
                .iter()
                .find(|&&i| {
                    s.entries[i]
                        .message()
                        .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
                })
                .unwrap();
            let original = pi.load(std::slice::from_ref(&copy)).remove(0);
            let plan = prune::edit(&s, leaf, user, &Edit::Replace("a shorter question".into())).unwrap();
            write(&copy, &plan, None);
            let after = pi.load(std::slice::from_ref(&copy)).remove(0);
            let id = s.entries[user].id.to_string();
            let m = detail(&after).into_iter().find(|m| m.0 == id).unwrap();
            if m.3 != content_hash(&plan.items[0].replacement["content"]) {
                failures.push("manual replace: Pi sees other content".into());
            }
            checked += 1;
            let s = store::load_session(&copy).unwrap();
            let (undo, action) = prune::undo(&s, s.leaf().unwrap()).unwrap();
            write(&copy, &undo, Some(&s.entries[action.record].id));
            if detail(&pi.load(std::slice::from_ref(&copy)).remove(0)) != detail(&original) {
                failures.push("manual replace: undo does not give Pi's context back".into());
            }
        }
    }
    eprintln!("prune_interop: {checked} plans written and read back by Pi");
    assert!(checked >= 4, "only {checked} plans written");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn refused_edits_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, common::synth::Synth::new(200_000).make()).unwrap();
    let before = std::fs::read(&p).unwrap();
    let s: Session = store::load_session(&p).unwrap();
    let leaf = s.leaf().unwrap();
    let result = s
        .entries
        .iter()
        .position(|e| {
            e.message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::ToolResult)
        })
        .unwrap();
    assert!(matches!(
        prune::edit(&s, leaf, result, &Edit::Hide),
        Err(prune::EditRefusal::HideToolResult)
    ));
    // Off the leaf's branch: the synthetic session branches every 100 turns.
    let t = bonsai::engine::view::tree::Tree::build(&s);
    let path: std::collections::HashSet<usize> = s.path_to(leaf).into_iter().collect();
    let off = (0..s.entries.len()).find(|i| !path.contains(i) && t.in_tree[*i]);
    if let Some(off) = off {
        assert!(matches!(
            prune::edit(&s, leaf, off, &Edit::Replace("x".into())),
            Err(prune::EditRefusal::OffPath(_))
        ));
    }
    assert_eq!(std::fs::read(&p).unwrap(), before);
}
