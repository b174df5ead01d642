use super::*;
use serde_json::json;

/// A history with requests, answers, edits, bash work and errors; `k` messages share each
/// timestamp (so ties must resolve the same way whatever the order).
fn history(turns: usize, same_ts: usize) -> Vec<Value> {
    let mut msgs = vec![];
    for k in 0..turns {
        let ts = 1_700_000_000_000i64 + (k / same_ts.max(1)) as i64 * 1000;
        msgs.push(json!({"role": "user", "timestamp": ts, "content": format!("Request {k}: please look at module_{k}.rs and fix the failing check number {k} without touching the public API")}));
        msgs.push(json!({"role": "assistant", "stopReason": "stop", "timestamp": ts, "content": [
            {"type": "text", "text": format!("Fixed module_{k}.rs: the check now passes and the API is unchanged. Decided to keep the old name instead of renaming.")},
            {"type": "toolCall", "id": format!("c{k}"), "name": "edit", "arguments": {"path": format!("src/module_{k}.rs")}},
            {"type": "toolCall", "id": format!("b{k}"), "name": "bash", "arguments": {"command": format!("cargo test -p core_{k} && cat tests/data/case_{k}.json")}}]}));
        if k % 10 == 0 {
            msgs.push(json!({"role": "toolResult", "toolName": "bash", "isError": true, "timestamp": ts, "content": format!("error[E0{k}]: mismatched types in module_{k}")}));
        }
    }
    msgs
}

#[test]
fn a_long_history_fits_pis_budget_keeping_the_goal_the_newest_work_and_errors() {
    let msgs = history(3000, 1);
    let unbounded = history_summary(&msgs, None, None, None);
    let budget = 13107;
    let text = history_summary(&msgs, None, None, Some(budget));
    assert!(unbounded.len() / 4 > 10 * budget as usize, "{}", unbounded.len());
    assert!(text.len().div_ceil(4) <= budget as usize, "{} tokens", text.len() / 4);
    assert!(text.contains("Request 2999:"), "the newest request stays");
    assert!(text.contains("error[E02990]"), "the newest error stays");
    // Errors outrank old request terms: every error stays, the oldest terms go, counted.
    assert!(text.contains("error[E00]:"), "the oldest error stays too");
    assert!(text.contains("older not listed): "), "{text}");
    assert!(text.contains("and 2988 more"), "the tool work names the newest edits");
    for section in [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ] {
        assert!(text.contains(section), "{section}");
    }
    // Deterministic.
    assert_eq!(text, history_summary(&msgs, None, None, Some(budget)));
    // A small history is not touched by the budget.
    let small = &msgs[..6];
    assert_eq!(
        history_summary(small, None, None, Some(budget)),
        history_summary(small, None, None, None)
    );
}

#[test]
fn every_fact_of_a_modest_history_is_kept() {
    let msgs = history(40, 1);
    let mut ops = FileOps::default();
    for k in 0..40 {
        ops.add_tool_call("edit", &format!("src/module_{k}.rs"));
    }
    let text = compose_compaction_summary(&history_summary(&msgs, None, None, Some(13107)), None, &ops);
    let known = serialize::serialize_conversation(&serialize::convert_to_llm(&msgs), Default::default());
    let range = recall::Range::new(&msgs, &known, "/home/u/p", 100_000, 100_000);
    let score = range.score(&text);
    assert_eq!(score.overall, 1.0, "{:?}\n{text}", score.categories);
    assert!(score.invented.is_empty(), "{:?}", score.invented);
    // The command paths the file lists do not hold are named once.
    assert!(
        text.contains("Paths used in commands: tests/data/case_0.json,"),
        "{text}"
    );
    // Older requests keep their wording while the budget allows.
    assert!(text.contains("- Request 0: please look at module_0.rs"), "{text}");
}

#[test]
fn under_pressure_old_requests_keep_their_terms() {
    let msgs = history(200, 1);
    let full = history_summary(&msgs, None, None, None);
    let budget = (full.len() / 4 / 3) as u64;
    let text = history_summary(&msgs, None, None, Some(budget));
    assert!(text.len().div_ceil(4) as u64 <= budget, "{} > {budget}", text.len() / 4);
    assert!(text.contains("Earlier requests also named: "), "{text}");
    assert!(text.contains("module_1.rs"), "an old request's term stays: {text}");
    assert!(text.contains("- Request 199:"), "the newest in full: {text}");
}

#[test]
fn the_order_messages_come_in_does_not_change_the_summary() {
    // Three messages per timestamp: ties resolve by content, whatever the order.
    let msgs = history(60, 3);
    let want = history_summary(
        &msgs,
        Some("## Goal\n- Earlier goal\n\n## Critical Context\n- keep it fast"),
        None,
        Some(600),
    );
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..50 {
        let mut shuffled = msgs.clone();
        // Fisher–Yates with xorshift.
        for i in (1..shuffled.len()).rev() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            shuffled.swap(i, (rng % (i as u64 + 1)) as usize);
        }
        let got = history_summary(
            &shuffled,
            Some("## Goal\n- Earlier goal\n\n## Critical Context\n- keep it fast"),
            None,
            Some(600),
        );
        assert_eq!(got, want);
    }
}

#[test]
fn an_update_keeps_each_item_once_and_the_newer_wins() {
    let previous = "## Goal\n- Add CSV export\n\n## Constraints & Preferences\n- Keep the stdlib only\n\n## Progress\n### Done\n- [x] Wrote exporter.py\n\n### In Progress\n- [ ] Wire the CLI\n\n### Blocked\n- (none)\n\n## Key Decisions\n- Use the csv module\n\n## Next Steps\n1. Wire the CLI\n\n## Critical Context\n- Paths used in commands: scripts/check.sh\n- Names in use: old_name";
    let msgs = vec![
        json!({"role": "user", "timestamp": 10, "content": "Add CSV export"}),
        json!({"role": "assistant", "stopReason": "stop", "timestamp": 11, "content": [{"type": "text", "text": "Wrote exporter.py"}]}),
    ];
    let text = history_summary(&msgs, Some(previous), None, None);
    assert_eq!(text.matches("Add CSV export").count(), 1, "{text}");
    assert_eq!(text.matches("Wrote exporter.py").count(), 1, "{text}");
    assert!(text.contains("- Keep the stdlib only"), "{text}");
    assert!(text.contains("- [ ] Wire the CLI"), "carried in progress: {text}");
    assert!(text.contains("Paths used in commands: scripts/check.sh"), "{text}");
    assert!(
        !text.contains("old_name"),
        "names are counted again, not carried: {text}"
    );
    // The request said again is the newer item: it comes after the carried ones (order by time).
    let goal = text.split("## Goal\n").nth(1).unwrap().split("\n\n").next().unwrap();
    assert_eq!(goal, "- Add CSV export");
}

#[test]
fn a_branch_summary_keeps_the_instructions() {
    let msgs = vec![
        json!({"role": "user", "content": "Try a SQLite store"}),
        json!({"role": "assistant", "content": [{"type": "text", "text": "Sketched SqliteStore."}], "stopReason": "stop"}),
    ];
    let body = branch_summary_body(&msgs, Some("list what was tried"));
    assert!(
        body.contains("## Critical Context\n- Focus requested: list what was tried"),
        "{body}"
    );
    // Without instructions the body ends at Next Steps, as Pi lays branch summaries out.
    let plain = branch_summary_body(&msgs, None);
    assert!(!plain.contains("## Critical Context"), "{plain}");
    assert!(plain.contains("## Next Steps"));
}

#[test]
fn a_branch_holding_only_an_earlier_summary_carries_it() {
    let earlier = format!(
        "{BRANCH_PREAMBLE}## Goal\n- Add CSV export\n\n## Constraints & Preferences\n- Keep the stdlib only\n\n## Progress\n### Done\n- [x] Wrote exporter.py\n\n### In Progress\n- (none)\n\n### Blocked\n- (none)\n\n## Key Decisions\n- Use the csv module\n\n## Next Steps\n1. Wire the CLI\n\n<read-files>\nacme/cli.py\n</read-files>"
    );
    let msgs = vec![json!({"role": "branchSummary", "summary": earlier})];
    let body = branch_summary_body(&msgs, None);
    for fact in [
        "Add CSV export",
        "Keep the stdlib only",
        "Wrote exporter.py",
        "Use the csv module",
    ] {
        assert!(body.contains(fact), "{fact} missing:\n{body}");
    }
    assert!(!body.contains("## Goal\n- (none)"), "{body}");
    assert!(
        !body.contains("acme/cli.py"),
        "file lists are rebuilt, not carried as items:\n{body}"
    );
}

#[test]
fn the_budget_is_pis_and_a_tenth_of_what_is_replaced() {
    assert_eq!(offline_budget(13107, 1_000_000, 500, 256), 13107);
    assert_eq!(offline_budget(13107, 20_000, 500, 256), 1500);
    assert_eq!(offline_budget(13107, 2_000, 500, 256), 256, "the floor");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A message of a small vocabulary, at one of a few timestamps (many ties).
    fn message() -> impl Strategy<Value = Value> {
        let words = prop::sample::select(vec![
            "fix",
            "src/a.rs",
            "`parse_row`",
            "OrderImporter",
            "42",
            "don't",
            "keep ",
            "tests/b.py",
            "error",
            "instead of",
        ]);
        (0..4u8, 0..5i64, prop::collection::vec(words, 1..6)).prop_map(|(kind, ts, w)| {
            let text = w.join(" ");
            match kind {
                0 => json!({"role": "user", "timestamp": ts, "content": text}),
                1 => json!({"role": "assistant", "stopReason": "stop", "timestamp": ts, "content": [{"type": "text", "text": text}]}),
                2 => json!({"role": "assistant", "stopReason": "toolUse", "timestamp": ts, "content": [
                    {"type": "toolCall", "id": "x", "name": "bash", "arguments": {"command": format!("ls {text}")}}]}),
                _ => json!({"role": "toolResult", "toolName": "bash", "isError": true, "timestamp": ts, "content": text}),
            }
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Shuffled messages (ties included) and a previous summary merge to the same text,
        /// with and without a budget.
        #[test]
        fn shuffling_the_messages_changes_nothing(
            msgs in prop::collection::vec(message(), 1..30),
            seed in any::<u64>(),
            budget in prop::option::of(60u64..400),
        ) {
            let previous = "## Goal\n- fix src/a.rs\n\n## Key Decisions\n- keep 42\n\n## Critical Context\n- Paths used in commands: tests/b.py";
            let want = history_summary(&msgs, Some(previous), None, budget);
            let mut shuffled = msgs.clone();
            let mut rng = seed | 1;
            for i in (1..shuffled.len()).rev() {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                shuffled.swap(i, (rng % (i as u64 + 1)) as usize);
            }
            prop_assert_eq!(history_summary(&shuffled, Some(previous), None, budget), want);
        }
    }
}
