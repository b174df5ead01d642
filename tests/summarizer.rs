//! The offline summarizer, measured by the recall score (`engine::compaction::recall`): on every session of
//! ../shared/fixtures, the repository's own sessions and sessions no fixture has (made in the
//! test; and by ../shared's generator when it is there), at the file's leaf and where each of
//! its compactions was made, it keeps at least 95 % of the facts in at most 10 % of the tokens
//! it replaces, names no path the range does not, and writes Pi's sections.

mod common;
use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::compaction::offline;
use bonsai::engine::compaction::recall::{Category, Range};
use common::*;
use std::path::PathBuf;

/// Below this many replaced tokens a tenth cannot hold Pi's nine section headings and a
/// request (the headings alone are ~60 tokens).
const MIN_REPLACED: u64 = 2_000;

/// Sessions no fixture has: the test's own coding sessions and, with ../shared, sessions from
/// its generator (other seeds and shapes than the benchmarks').
fn unseen(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for (seed, turns) in [(1u64, 60usize), (2, 250), (3, 700)] {
        let p = dir.join(format!("coding-{seed}.jsonl"));
        std::fs::write(&p, synth::coding_session(seed, turns)).unwrap();
        out.push(p);
    }
    let generator = shared().join("tools/gen_session.py");
    if generator.is_file() {
        for (seed, entries, compactions) in [(7u64, 1500usize, "1"), (11, 4000, "2"), (13, 600, "0")] {
            let p = dir.join(format!("gen-{seed}.jsonl"));
            let ok = std::process::Command::new("python3")
                .arg(&generator)
                .args([
                    "--entries",
                    &entries.to_string(),
                    "--branch-every",
                    "80",
                    "--compactions",
                    compactions,
                ])
                .args(["--tool-output-bytes", "1500", "--seed", &seed.to_string(), "-q", "-o"])
                .arg(&p)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "gen_session.py failed");
            out.push(p);
        }
    } else {
        say(
            "SKIPPED (part) tests::summarizer: ../shared/tools/gen_session.py is absent; the test's own unseen sessions only",
        );
    }
    out
}

#[test]
fn the_offline_summary_keeps_95_percent_of_the_facts_in_a_tenth() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files: Vec<PathBuf> = shared_fixture_dirs().iter().flat_map(|d| sessions_in(d)).collect();
    files.extend(sessions_in(&repo().join("fixtures/pi-0.87.1")));
    files.extend(sessions_in(&repo().join("fixtures/pi-0.27.9")));
    files.extend(unseen(tmp.path()));
    let (mut checked, mut facts_total) = (0, 0);
    let mut worst: Option<(f64, String)> = None;
    let mut table = vec![];
    for f in &files {
        let s = bonsai::store::load_session(f).unwrap();
        // The file's leaf, and where each of its compactions was made (Pi's own cuts).
        let mut leaves = vec![s.leaf().unwrap()];
        leaves.extend(
            (0..s.entries.len())
                .filter(|&i| s.entries[i].is_compaction())
                .filter_map(|i| s.parent_of(i)),
        );
        for (leaf, keep) in leaves.into_iter().flat_map(|l| [(l, 2000), (l, 20000)]) {
            let Ok(plan) = cut::prepare(
                &s,
                leaf,
                CompactionSettings {
                    reserve_tokens: 16384,
                    keep_recent_tokens: keep,
                },
            ) else {
                continue;
            };
            let range = Range::of_plan(&s, &plan);
            if range.replaced_tokens < MIN_REPLACED {
                continue;
            }
            let summary = offline::compaction_summary(&s, &plan, None).text;
            let score = range.score(&summary);
            let name = format!(
                "{} leaf {} k{keep}",
                f.file_name().unwrap().to_string_lossy(),
                s.entries[leaf].id
            );
            assert!(
                score.overall >= 0.95,
                "{name}: recall {:.3} < 0.95: {:?}",
                score.overall,
                score
                    .categories
                    .iter()
                    .map(|c| (c.category.name(), &c.missing))
                    .collect::<Vec<_>>()
            );
            assert!(
                score.ratio() <= 0.10,
                "{name}: {} summary tokens for {} replaced ({:.1} %)",
                score.summary_tokens,
                score.replaced_tokens,
                score.ratio() * 100.0
            );
            assert!(score.invented.is_empty(), "{name}: invented paths {:?}", score.invented);
            if plan.messages_to_summarize.is_empty() {
                // Only a turn prefix: Pi's format has no history part then.
                assert!(summary.contains("## Original Request"), "{name}");
            } else {
                for h in [
                    "## Goal\n",
                    "## Constraints & Preferences\n",
                    "## Progress\n### Done\n",
                    "### In Progress\n",
                    "### Blocked\n",
                    "## Key Decisions\n",
                    "## Next Steps\n",
                    "## Critical Context\n",
                ] {
                    assert!(summary.contains(h), "{name}: no {h}");
                }
            }
            // Deterministic.
            assert_eq!(summary, offline::compaction_summary(&s, &plan, None).text, "{name}");
            let facts = range.facts.total();
            facts_total += facts;
            checked += 1;
            if worst.as_ref().is_none_or(|(r, _)| score.overall < *r) {
                worst = Some((score.overall, name.clone()));
            }
            table.push(format!(
                "{name}: recall {:.1} % of {facts} facts ({}), {} tokens for {} replaced ({:.2} %)",
                score.overall * 100.0,
                Category::ALL
                    .iter()
                    .zip(&score.categories)
                    .map(|(c, x)| format!("{} {}/{}", c.key(), x.found, x.total))
                    .collect::<Vec<_>>()
                    .join(", "),
                score.summary_tokens,
                score.replaced_tokens,
                score.ratio() * 100.0
            ));
        }
    }
    for row in &table {
        say(&format!("summarizer: {row}"));
    }
    assert!(checked >= 10, "only {checked} compaction points were large enough");
    assert!(facts_total > 1000, "only {facts_total} facts in all");
    say(&format!(
        "summarizer: {checked} compaction points, {facts_total} facts, lowest recall {:?}",
        worst
    ));
}

#[test]
fn split_turns_get_a_turn_prefix_summary_and_updates_keep_the_previous_one() {
    // The long session at keepRecentTokens 2000 cuts inside its last turn, after two compactions.
    let f = repo().join("fixtures/pi-0.87.1/long.jsonl");
    let s = bonsai::store::load_session(&f).unwrap();
    let plan = cut::prepare(
        &s,
        s.leaf().unwrap(),
        CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 2000,
        },
    )
    .unwrap();
    assert!(plan.is_split_turn);
    let text = offline::compaction_summary(&s, &plan, Some("focus on storage")).text;
    assert!(
        text.contains("\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\n"),
        "{text}"
    );
    assert!(text.contains("Focus requested: focus on storage"));
    // The previous summary's goals are carried into the update.
    let prev = cut::previous_summary(&s, &plan).unwrap();
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
        offline::compaction_summary(&s, &plan, Some("focus on storage")).text
    );
}
