//! The offline summarizer on every shared fixture: every user request, every modified file and
//! every error's first line survive, in at most 10 % of the summarized tokens.

mod common;
use bonsai::engine::actions;
use bonsai::engine::compaction::{self, CompactionSettings};
use bonsai::engine::context;
use common::*;
use serde_json::Value;

fn first_line(s: &str) -> String {
    let l = s.lines().map(|l| l.trim()).find(|l| !l.is_empty()).unwrap_or("");
    if l.chars().count() <= 160 {
        l.to_string()
    } else {
        format!("{}…", l.chars().take(159).collect::<String>())
    }
}

#[test]
fn offline_summaries_keep_requests_files_and_errors_in_a_tenth() {
    let mut checked = 0;
    let mut dirs = shared_fixture_dirs();
    dirs.push(repo().join("fixtures/pi-0.87.1"));
    for dir in dirs {
        for f in sessions_in(&dir) {
            let s = bonsai::store::load_session(&f).unwrap();
            // The file's leaf, and where each of its compactions was made (Pi's own cuts).
            let mut leaves = vec![s.leaf().unwrap()];
            leaves.extend(
                (0..s.entries.len())
                    .filter(|&i| s.entries[i].kind.type_name() == "compaction")
                    .filter_map(|i| s.parent_of(i)),
            );
            for (leaf, keep) in leaves.into_iter().flat_map(|l| [(l, 2000), (l, 4000)]) {
                let Ok(plan) = compaction::prepare(
                    &s,
                    leaf,
                    CompactionSettings {
                        reserve_tokens: 16384,
                        keep_recent_tokens: keep,
                    },
                ) else {
                    continue;
                };
                let summarized: u64 = plan
                    .messages_to_summarize
                    .iter()
                    .chain(&plan.turn_prefix_messages)
                    .map(|m| m.est_tokens)
                    .sum();
                if summarized < 5000 {
                    continue; // below this a tenth cannot hold the fixed headings (~120 tokens)
                }
                let summary = actions::offline_compaction_summary(&s, &plan, None).text;
                let name = format!("{} leaf {leaf} k{keep}", f.display());
                let est = summary.encode_utf16().count().div_ceil(4) as u64;
                assert!(
                    est * 10 <= summarized,
                    "{name}: summary {est} tokens for {summarized} summarized"
                );
                for m in plan.messages_to_summarize.iter().chain(&plan.turn_prefix_messages) {
                    let v = context::materialize(&s, m);
                    match v["role"].as_str().unwrap_or("") {
                        "user" => {
                            let req = first_line(&context::content_text(v.get("content"), "\n"));
                            assert!(summary.contains(&req), "{name}: request lost: {req}");
                        }
                        "toolResult" if v["isError"] == Value::Bool(true) => {
                            let err = first_line(&context::content_text(v.get("content"), "\n"));
                            assert!(summary.contains(&err), "{name}: error lost: {err}");
                        }
                        "assistant" => {
                            if let Some(e) = v.get("errorMessage").and_then(|e| e.as_str()) {
                                assert!(summary.contains(&first_line(e)), "{name}: error lost: {e}");
                            }
                        }
                        _ => {}
                    }
                }
                let (_, modified) = actions::file_lists_text(&plan.file_ops);
                for m in modified {
                    assert!(summary.contains(&format!("\n{m}\n")), "{name}: modified file lost: {m}");
                }
                if plan.messages_to_summarize.is_empty() {
                    // Only a turn prefix: Pi's format has no history part then.
                    assert!(summary.starts_with("No prior history."), "{name}: {summary}");
                    assert!(summary.contains("## Original Request"), "{name}");
                    checked += 1;
                    continue;
                }
                for h in [
                    "## Goal",
                    "## Constraints & Preferences",
                    "## Progress",
                    "### Done",
                    "## Key Decisions",
                    "## Next Steps",
                    "## Critical Context",
                ] {
                    assert!(summary.contains(h), "{name}: no {h}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 4, "only {checked} cases were large enough");
}

#[test]
fn split_turns_get_a_turn_prefix_summary_and_updates_keep_the_previous_one() {
    // The long session at keepRecentTokens 2000 cuts inside its last turn, after two compactions.
    let f = repo().join("fixtures/pi-0.87.1/long.jsonl");
    let s = bonsai::store::load_session(&f).unwrap();
    let plan = compaction::prepare(
        &s,
        s.leaf().unwrap(),
        CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 2000,
        },
    )
    .unwrap();
    assert!(plan.is_split_turn);
    let text = actions::offline_compaction_summary(&s, &plan, Some("focus on storage")).text;
    assert!(
        text.contains("\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\n"),
        "{text}"
    );
    assert!(text.contains("Focus requested: focus on storage"));
    // The previous summary's goals are carried into the update.
    let prev = compaction::previous_summary(&s, &plan).unwrap();
    let goal = prev
        .split("## Goal\n")
        .nth(1)
        .and_then(|g| g.lines().next())
        .unwrap()
        .trim_start_matches("- ")
        .to_string();
    assert!(text.contains(&goal), "previous goal {goal:?} lost:\n{text}");
    // Deterministic.
    assert_eq!(
        text,
        actions::offline_compaction_summary(&s, &plan, Some("focus on storage")).text
    );
}
