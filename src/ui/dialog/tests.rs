//! The dialogs driven by keys on temporary copies of Pi's sessions: what they show, what
//! they write, and that nothing is written without the deliberate key.

use crate::engine::load::entry::{Kind, Role};
use crate::ui::app::Terminal;
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
    insta::assert_snapshot!("dialog_compact_preview", redact_times(&render(&mut a, 100, 30)));
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
    assert!(a.parts.dialog.is_none());
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
    a.tree.view.select_entry(&s, first_user);
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
    // Issue 21, item 5: the summary is shown before anything is written.
    assert_eq!(a.doc.session.entries.len(), s.entries.len(), "written at once");
    assert!(
        matches!(a.parts.dialog, Some(crate::ui::dialog::Dialog::Summary { .. })),
        "{:?}",
        a.log.status
    );
    insta::assert_snapshot!("dialog_branch_summary_preview", redact_times(&render(&mut a, 100, 30)));
    a.handle_key(ctrl('s'));
    a.run_jobs_now();
    let s2 = a.doc.session.clone();
    let leaf = s2.leaf().unwrap();
    assert!(
        matches!(s2.entries[leaf].kind, Kind::BranchSummary(_)),
        "{:?}",
        a.log.status
    );
    assert_eq!(
        s2.parent_of(leaf),
        s.parent_of(first_user),
        "a user target: the summary hangs under its parent"
    );
    assert!(a.log.status.as_deref().unwrap_or("").contains("clipboard"));
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
    // Unnamed: bonsai's title is offered, and Enter writes it as Pi's name.
    a.handle_key(shift('R'));
    insta::assert_snapshot!("dialog_rename_offers_bonsai_s_title", render(&mut a, 80, 24));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    assert_eq!(a.doc.session.session_name(), Some("List the modules"));
    // Named: the name is there to edit.
    a.handle_key(shift('R'));
    typed(&mut a, " Split turn demo");
    insta::assert_snapshot!("dialog_rename", render(&mut a, 80, 24));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    assert_eq!(a.doc.session.session_name(), Some("List the modules Split turn demo"));
    // A branch summary streaming from a model (state set directly: no network in tests).
    a.parts.dialog = Some(super::Dialog::Summary {
        purpose: super::SummaryFor::Branch { target: 3, budget: 1 },
        seen: super::Seen::of(&a.doc.session),
        by: "anthropic/claude-haiku-4-5".into(),
        tabs: vec![super::SummaryTab::with_text(
            "anthropic/claude-haiku-4-5",
            "## Goal\n- Audit the invtrack package",
            super::TabState::Running,
        )],
        active: 0,
        job: 99,
    });
    insta::assert_snapshot!("dialog_branch_summary_streaming", redact_times(&render(&mut a, 80, 24)));
    a.pending.summary = Some((99, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false))));
    a.handle_key(key(KeyCode::Esc));
    assert!(a.parts.dialog.is_none());
    assert!(a.log.status.as_deref().unwrap().contains("cancelled"));
}

#[test]
fn ctrl_x_copies_like_pi() {
    let mut a = crate::ui::tests::demo_app();
    a.handle_key(ctrl('x'));
    assert_eq!(a.log.status.as_deref(), Some("Copied selected message to clipboard"));
    match a.take_effects().as_slice() {
        [Terminal::Clipboard(t)] => assert!(t.starts_with("Added `tests/test_skipped.py`")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn demo_session_is_read_only() {
    let mut a = crate::ui::tests::demo_app();
    a.handle_key(shift('C'));
    assert!(a.parts.dialog.is_none());
    assert!(a.log.status.as_deref().unwrap().contains("read-only"));
}

/// Summary times vary with the machine: snapshots show `[t] s` (for `24 ms` and `2.4 s` alike),
/// the padding after it dropped, so that a time's width does not move the border.
fn redact_times(screen: &str) -> String {
    regex::Regex::new(r"\b(\d+ ms|\d+\.\d s)\b *")
        .unwrap()
        .replace_all(screen, "[t] s ")
        .into_owned()
}

#[test]
fn strategy_tabs_while_running_and_when_done() {
    use crate::engine::compaction::strategy::Strategy;

    use crate::ui::jobs::{StrategyResult, SummaryReport};
    use crate::ui::keymap::Mode;

    let (_d, p) = temp_copy("long.jsonl");
    let before = std::fs::read(&p).unwrap();
    let mut a = app_for(&p);
    a.setup.summarizer_override = Some(crate::ui::app::tests::unreachable_model());
    a.selection.keep_recent = 2000;
    a.handle_key(shift('C'));
    a.handle_key(key(KeyCode::Enter));
    assert_eq!(a.mode(), Mode::Strategies);
    a.handle_key(crate::ui::tests::ch('a'));
    insta::assert_snapshot!("dialog_strategies", render(&mut a, 100, 30));
    a.handle_key(key(KeyCode::Enter));
    // The group is a job; here its reports are fed in by hand (no model is called).
    let job = a.take_jobs();
    assert_eq!(job.len(), 1);
    let id = a.pending.summary.as_ref().unwrap().0;
    let feed = |a: &mut crate::ui::app::App, r: SummaryReport| {
        a.report::<crate::ui::jobs::SummaryJob>(r);
    };
    use crate::llm::strategies::Progress;
    let s = a.doc.session.clone();
    let plan = crate::engine::compaction::cut::prepare(
        &s,
        s.leaf().unwrap(),
        crate::engine::compaction::cut::CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 2000,
        },
    )
    .unwrap();
    let input = crate::engine::compaction::summary::SummaryInput::of_plan(&s, &plan);
    let range = crate::engine::compaction::recall::Range::of_input(&s, &plan, &input);
    let offline = crate::engine::compaction::strategy::offline(&s, &plan, &input, None);
    let leaf = plan.projection.path.last().copied().unwrap();
    let audited = crate::engine::compaction::audit::Before::of_plan(&s, &plan, leaf);
    let done = |text: &str, calls: usize, input: u64, output: u64, wall_ms: u64| StrategyResult {
        audit: {
            let a = audited.audit(text);
            (a.headline(), a.lost_lines(6))
        },
        summary: crate::engine::compaction::summary::Summary {
            text: text.into(),
            usage: (calls > 0).then(|| serde_json::json!({"input": input, "output": output})),
        },
        calls,
        usage: crate::llm::Usage {
            input,
            output,
            cache_read: 0,
            cache_write: 0,
        },
        cost: input as f64 * 3e-6 + output as f64 * 15e-6,
        wall_ms,
        score: range.score(text),
    };
    let tab = |st: Strategy| Strategy::ALL.iter().position(|x| *x == st).unwrap();
    feed(
        &mut a,
        SummaryReport::StrategyProgress {
            id,
            tab: tab(Strategy::SingleShot),
            progress: Progress::Calls {
                done: 0,
                total: 2,
                running: 2,
            },
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyProgress {
            id,
            tab: tab(Strategy::ParallelStitch),
            progress: Progress::Calls {
                done: 2,
                total: 4,
                running: 1,
            },
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyProgress {
            id,
            tab: tab(Strategy::ParallelStitch),
            progress: Progress::Reset("## Goal\n- Check the monthly imports".into()),
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyProgress {
            id,
            tab: tab(Strategy::ParallelStitch),
            progress: Progress::Text(" against their logs".into()),
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyProgress {
            id,
            tab: tab(Strategy::SequentialRolling),
            progress: Progress::Retry {
                attempt: 1,
                wait: std::time::Duration::from_secs(2),
                reason: "429: rate limited".into(),
            },
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyDone {
            id,
            tab: tab(Strategy::Offline),
            result: Ok(Box::new(done(&offline, 0, 0, 0, 12))),
        },
    );
    a.handle_key(key(KeyCode::Right));
    assert_eq!(a.mode(), Mode::Streaming);
    insta::assert_snapshot!("dialog_strategy_tabs_running", redact_times(&render(&mut a, 100, 30)));
    // Each strategy ends; one fails.
    let model_text = |name: &str| {
        format!(
            "## Goal\n- Check the monthly imports ({name})\n\n## Next Steps\n1. Month 08\n\n<read-files>\ndata/2026-08.csv\n</read-files>"
        )
    };
    feed(
        &mut a,
        SummaryReport::StrategyDone {
            id,
            tab: 0,
            result: Ok(Box::new(done(&model_text("single-shot"), 2, 24_310, 412, 8_400))),
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyDone {
            id,
            tab: 1,
            result: Ok(Box::new(done(&model_text("parallel-stitch"), 4, 27_904, 1_230, 6_100))),
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyDone {
            id,
            tab: 2,
            result: Ok(Box::new(done(
                &model_text("sequential-accumulated"),
                3,
                26_001,
                980,
                15_200,
            ))),
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyDone {
            id,
            tab: 3,
            result: Err(crate::ui::jobs::StrategyFailed {
                why: crate::llm::LlmError::Http {
                    status: 429,
                    message: "rate limited (gave up after 3 retries)".into(),
                }
                .into(),
                wall_ms: 3_000,
            }),
        },
    );
    feed(
        &mut a,
        SummaryReport::StrategyDone {
            id,
            tab: 4,
            result: Ok(Box::new(done(
                &model_text("anchored-iterative"),
                3,
                25_512,
                1_002,
                14_900,
            ))),
        },
    );
    feed(&mut a, SummaryReport::StrategiesDone { id, finished: vec![] });
    assert_eq!(a.mode(), Mode::SummaryPreview);
    insta::assert_snapshot!("dialog_strategy_tabs_done", redact_times(&render(&mut a, 100, 30)));
    // The failed tab cannot be written; the anchored one can.
    a.handle_key(key(KeyCode::Right));
    a.handle_key(key(KeyCode::Right));
    a.handle_key(ctrl('s'));
    assert!(
        a.log
            .status
            .as_deref()
            .unwrap_or("")
            .contains("sequential-rolling failed"),
        "{:?}",
        a.log.status
    );
    a.handle_key(key(KeyCode::Right));
    a.handle_key(ctrl('s'));
    a.run_jobs_now();
    let after = std::fs::read(&p).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "append only");
    let s = a.doc.session.clone();
    let leaf = s.leaf().unwrap();
    let e = s.entry_value(leaf);
    assert_eq!(e["type"], "compaction");
    assert!(e["summary"].as_str().unwrap().contains("(anchored-iterative)"));
    assert_eq!(e["usage"]["input"], 25_512);
}
