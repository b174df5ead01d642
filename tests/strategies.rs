//! The summary strategies against a fake model on 127.0.0.1 (Anthropic's wire format,
//! streamed): how many calls each makes, in what order, how many at once and with what output
//! budget; where slices start and what they overlap; that the stitch and update prompts carry
//! every earlier answer; that cancelling stops every call; that a 429 in one slice is retried
//! and a provider error fails only its strategy. Run on ../shared's pi-v1 `before-compaction`
//! and `large-session` (skipped by name without it), the repository's 0.87.1 `long` session
//! and a long coding session made in the test.

mod common;
use bonsai::engine::compaction::cut::{self, CompactionPlan, CompactionSettings};
use bonsai::engine::compaction::recall::Range;
use bonsai::engine::compaction::slices::SliceParams;
use bonsai::engine::compaction::strategy::Strategy;
use bonsai::engine::compaction::summary::SummaryInput;
use bonsai::engine::compaction::summary::estimate_text;
use bonsai::engine::load::session::Session;
use bonsai::llm::strategies::{self, Outcome, Progress};
use common::fake_model::{self, Answer, Call};
use common::*;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

const LLM: [Strategy; 5] = [
    Strategy::SingleShot,
    Strategy::ParallelStitch,
    Strategy::SequentialAccumulated,
    Strategy::SequentialRolling,
    Strategy::AnchoredIterative,
];

/// The sessions: name, file (made in `dir` when it is the test's own).
fn sessions(dir: &std::path::Path) -> Vec<(String, PathBuf)> {
    let mut v = vec![(
        "long (0.87.1)".to_string(),
        repo().join("fixtures/pi-0.87.1/long.jsonl"),
    )];
    let coding = dir.join("coding.jsonl");
    std::fs::write(&coding, synth::coding_session(3, 700)).unwrap();
    v.push(("coding (700 turns)".into(), coding));
    if no_shared("strategies::pi_v1_fixtures") {
        return v;
    }
    for f in ["before-compaction", "large-session"] {
        v.push((format!("pi-v1 {f}"), shared().join(format!("fixtures/pi-v1/{f}.jsonl"))));
    }
    v
}

fn plan(s: &Session) -> CompactionPlan {
    cut::prepare(
        s,
        s.leaf().unwrap(),
        CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 2000,
        },
    )
    .unwrap()
}

/// Every answer names its call: `MARK<n>`.
fn answer(index: usize) -> Answer {
    Answer::Text {
        text: format!("## Goal\n- summary MARK{index}.\n\n## Next Steps\n1. go on after MARK{index}"),
        took: Duration::from_millis(80),
    }
}

fn is_prefix(c: &Call) -> bool {
    c.prompt().contains("first part of a turn")
}

/// The `<tag>…</tag>` block of a prompt.
fn block<'a>(prompt: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>\n");
    let a = prompt.find(&open)? + open.len();
    let b = prompt[a..].find(&format!("\n</{tag}>"))?;
    Some(&prompt[a..a + b])
}

/// The most calls whose time spans overlap at one instant.
fn most_at_once(calls: &[&Call]) -> usize {
    calls
        .iter()
        .map(|c| {
            calls
                .iter()
                .filter(|d| d.started <= c.started && d.ended.unwrap() > c.started)
                .count()
        })
        .max()
        .unwrap_or(0)
}

fn run(
    sm: &bonsai::llm::summarize::Summarizer,
    st: Strategy,
    s: &Session,
    plan: &CompactionPlan,
    input: &SummaryInput,
    p: &SliceParams,
) -> (Outcome, Vec<Progress>) {
    let events = Mutex::new(vec![]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let on = |e: Progress| events.lock().unwrap().push(e);
    let o = rt
        .block_on(strategies::run(Some(sm), st, s, plan, input, p, None, Some("off"), &on))
        .unwrap_or_else(|e| panic!("{}: {e}", st.name()));
    (o, events.into_inner().unwrap())
}

#[test]
fn each_strategy_makes_its_calls_in_order_at_its_budgets() {
    let tmp = tempfile::tempdir().unwrap();
    let p = SliceParams::default();
    let mut table = vec![];
    for (name, file) in sessions(tmp.path()) {
        let s = bonsai::store::load_session(&file).unwrap();
        let plan = plan(&s);
        let input = SummaryInput::of_plan(&s, &plan);
        let slices = input.slices(&p);
        let n = slices.len();
        let range = Range::of_input(&s, &plan, &input);
        // Slice boundaries: each starts where a compaction could keep from (never a tool
        // result), its overlap is whole messages within the overlap budget starting at one.
        for (k, sl) in slices.iter().enumerate() {
            assert!(
                input.units[sl.messages.start].cut_point,
                "{name}: slice {k} starts at a tool result"
            );
            assert!(
                !input.text(sl.messages.clone()).starts_with("[Tool result]"),
                "{name}: slice {k}"
            );
            let ov: u64 = input.units[sl.overlap.clone()].iter().map(|u| u.tokens).sum();
            assert!(ov <= p.overlap_tokens, "{name}: overlap {ov}");
            if k > 0 {
                assert_eq!(
                    sl.overlap.end,
                    slices[k - 1].messages.end,
                    "{name}: overlap ends where the slice before does"
                );
                if !sl.overlap.is_empty() {
                    assert!(
                        input.units[sl.overlap.start].cut_point,
                        "{name}: overlap {k} starts at a tool result"
                    );
                }
            }
        }
        assert_eq!(
            slices.last().unwrap().messages.end,
            input.history.len(),
            "{name}: every message sliced"
        );
        let split = input.turn_prefix.is_some();
        for st in LLM {
            let server = fake_model::serve(|i, _| answer(i));
            let sm = fake_model::summarizer(&server.url);
            let (out, events) = run(&sm, st, &s, &plan, &input, &p);
            let calls = server.calls();
            let what = format!("{name} {}", st.name());
            assert_eq!(calls.len(), strategies::planned_calls(st, &input, &p), "{what}: calls");
            assert_eq!(out.calls, calls.len(), "{what}");
            assert!(calls.iter().all(|c| !c.hung_up), "{what}");
            // The split turn's prefix: one call beside the history's, at Pi's 0.5 × reserve.
            let prefix: Vec<&Call> = calls.iter().filter(|c| is_prefix(c)).collect();
            assert_eq!(prefix.len(), usize::from(split), "{what}: turn prefix calls");
            for c in &prefix {
                assert_eq!(c.max_tokens(), 8192, "{what}");
            }
            let history: Vec<&Call> = calls.iter().filter(|c| !is_prefix(c)).collect();
            let part_of = |c: &Call| {
                c.prompt()
                    .split("This is part ")
                    .nth(1)
                    .and_then(|r| r.split(' ').next())
                    .and_then(|k| k.parse::<usize>().ok())
            };
            match st {
                Strategy::SingleShot => {
                    assert_eq!(history.len(), 1, "{what}");
                    assert_eq!(history[0].max_tokens(), 13107, "{what}: Pi's 0.8 × reserve");
                    assert_eq!(
                        block(history[0].prompt(), "conversation"),
                        Some(input.text(0..input.history.len()).as_str())
                    );
                }
                Strategy::ParallelStitch => {
                    let (parts, stitch): (Vec<&Call>, Vec<&Call>) =
                        history.iter().partition(|c| !c.prompt().contains("<part-summaries>"));
                    assert_eq!(parts.len(), n, "{what}: one call per slice");
                    assert_eq!(
                        stitch.len(),
                        usize::from(n > 1 || input.previous.is_some()),
                        "{what}: the stitch"
                    );
                    for c in &parts {
                        let k = part_of(c).unwrap() - 1;
                        assert_eq!(c.max_tokens(), slices[k].budget, "{what}: slice {k}'s budget");
                        assert_eq!(
                            block(c.prompt(), "conversation"),
                            Some(input.text(slices[k].messages.clone()).as_str()),
                            "{what}: slice {k}"
                        );
                        let ov = input.text(slices[k].overlap.clone());
                        assert_eq!(
                            block(c.prompt(), "already-summarized").unwrap_or(""),
                            ov,
                            "{what}: overlap {k}"
                        );
                    }
                    assert_eq!(most_at_once(&parts), n.min(p.concurrency), "{what}: slices at once");
                    if let Some(st) = stitch.first() {
                        assert_eq!(st.max_tokens(), 4000, "{what}: the stitch's budget");
                        assert!(
                            parts.iter().all(|c| c.ended.unwrap() <= st.started),
                            "{what}: stitched after every slice"
                        );
                        // Every slice's answer, in the slices' order.
                        let mut at = 0;
                        for k in 0..n {
                            let c = parts.iter().find(|c| part_of(c) == Some(k + 1)).unwrap();
                            let pos = st.prompt()[at..]
                                .find(&c.answer)
                                .unwrap_or_else(|| panic!("{what}: slice {k}'s answer not stitched"));
                            at += pos;
                        }
                        if let Some(prev) = &input.previous {
                            assert_eq!(block(st.prompt(), "previous-summary"), Some(prev.as_str()), "{what}");
                        }
                        assert!(out.text.starts_with(&st.answer), "{what}: the stitch is the summary");
                    }
                }
                _ => {
                    assert_eq!(history.len(), n, "{what}: one call per slice");
                    assert_eq!(most_at_once(&history), 1, "{what}: one at a time");
                    for (k, c) in history.iter().enumerate() {
                        let conv = input.text(slices[k].messages.clone());
                        assert_eq!(
                            block(c.prompt(), "conversation"),
                            Some(conv.as_str()),
                            "{what}: call {k} is slice {k}"
                        );
                        match st {
                            Strategy::SequentialAccumulated => {
                                assert_eq!(c.max_tokens(), slices[k].budget, "{what}: {k}");
                                for earlier in &history[..k] {
                                    assert!(
                                        c.prompt().contains(&earlier.answer),
                                        "{what}: call {k} sees every earlier part"
                                    );
                                }
                            }
                            _ => {
                                assert_eq!(
                                    c.max_tokens(),
                                    strategies::running_budget(&slices, k, &p),
                                    "{what}: {k}"
                                );
                                let tag = if st == Strategy::SequentialRolling {
                                    "running-summary"
                                } else {
                                    "previous-summary"
                                };
                                let want = if k == 0 {
                                    input.previous.clone()
                                } else {
                                    Some(history[k - 1].answer.clone())
                                };
                                assert_eq!(
                                    block(c.prompt(), tag).map(String::from),
                                    want,
                                    "{what}: call {k} updates the one before"
                                );
                            }
                        }
                    }
                    if st == Strategy::SequentialAccumulated {
                        for k in 0..n {
                            assert!(
                                out.text
                                    .contains(&format!("## Segment {}\n\n### Goal\n- summary MARK", k + 1)),
                                "{what}"
                            );
                        }
                    } else {
                        assert!(
                            out.text.starts_with(&history[n - 1].answer),
                            "{what}: the last update is the summary"
                        );
                    }
                }
            }
            // Pi's layout: the turn context, then the file tags.
            if split {
                assert!(
                    out.text
                        .contains("\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\n- summary MARK"),
                    "{what}"
                );
            }
            assert!(
                out.text.contains("<read-files>") || out.text.contains("<modified-files>"),
                "{what}: file tags"
            );
            assert!(
                events.iter().any(
                    |e| matches!(e, Progress::Calls { done, total, .. } if done == total && *total == calls.len())
                ),
                "{what}: progress"
            );
            let sc = range.score(&out.text);
            table.push(format!(
                "{name} | {} | {} calls | {} in / {} out | {:.2} s | {} tokens | recall {:.1} %",
                st.name(),
                out.calls,
                out.usage.input,
                out.usage.output,
                out.wall.as_secs_f64(),
                estimate_text(&out.text),
                sc.overall * 100.0
            ));
        }
        let offline = bonsai::engine::compaction::strategy::offline(&s, &plan, &input, None);
        let sc = range.score(&offline);
        table.push(format!(
            "{name} | offline | 0 calls | {n} slices of {} history tokens | {} tokens | recall {:.1} % | ratio {:.2} %",
            input.history_tokens(),
            sc.summary_tokens,
            sc.overall * 100.0,
            sc.ratio() * 100.0
        ));
    }
    for row in table {
        say(&format!("strategies: {row}"));
    }
}

#[test]
fn the_harness_preset_slices_at_ten_thousand_with_fixed_budgets() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, file) = sessions(tmp.path()).remove(1);
    let s = bonsai::store::load_session(&file).unwrap();
    let plan = plan(&s);
    let input = SummaryInput::of_plan(&s, &plan);
    let p = SliceParams::harness();
    let slices = input.slices(&p);
    assert!(slices.len() > 10);
    assert!(slices.iter().all(|s| s.budget == 2000 && s.overlap.is_empty()));
    let server = fake_model::serve(|i, _| answer(i));
    let sm = fake_model::summarizer(&server.url);
    let (_, _) = run(&sm, Strategy::ParallelStitch, &s, &plan, &input, &p);
    let calls = server.calls();
    let stitch: Vec<&Call> = calls
        .iter()
        .filter(|c| c.prompt().contains("<part-summaries>"))
        .collect();
    assert_eq!(stitch.len(), 1);
    assert_eq!(stitch[0].max_tokens(), 4000);
    assert!(
        calls
            .iter()
            .filter(|c| !c.prompt().contains("<part-summaries>") && !is_prefix(c))
            .all(|c| c.max_tokens() == 2000)
    );
}

#[test]
fn cancelling_the_group_stops_every_call() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, file) = sessions(tmp.path()).remove(1);
    let s = bonsai::store::load_session(&file).unwrap();
    let plan = plan(&s);
    let input = SummaryInput::of_plan(&s, &plan);
    let p = SliceParams::default();
    // Slow answers: every call is still streaming when the group is cancelled.
    let server = fake_model::serve(|i, _| Answer::Text {
        text: format!("## Goal\n- {}", format!("slow answer {i} ").repeat(40)),
        took: Duration::from_secs(4),
    });
    let sm = fake_model::summarizer(&server.url);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let on = |_: usize, _: Progress| {};
    let group = strategies::run_group(
        Some(&sm),
        &LLM,
        &s,
        &plan,
        &input,
        &p,
        None,
        Some("off"),
        &on,
        &|_, _| {},
    );
    let r = rt.block_on(async { tokio::time::timeout(Duration::from_millis(600), group).await });
    assert!(r.is_err(), "the group was still running when cancelled");
    let started = server.calls.lock().unwrap().len() + server.in_flight.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        server.max_in_flight.load(std::sync::atomic::Ordering::SeqCst) >= 5,
        "every strategy had a call in flight"
    );
    // The server sees each connection closed on its next write (a piece every ~100 ms).
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        server.in_flight.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no call is still answered"
    );
    let calls = server.calls();
    assert_eq!(calls.len(), started, "no call started after the cancel");
    assert!(
        calls.iter().all(|c| c.hung_up),
        "every call was cut off: {:?}",
        calls.iter().map(|c| c.hung_up).collect::<Vec<_>>()
    );
}

#[test]
fn a_429_in_one_slice_is_retried_and_an_error_fails_only_its_strategy() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, file) = sessions(tmp.path()).remove(1);
    let s = bonsai::store::load_session(&file).unwrap();
    let plan = plan(&s);
    let input = SummaryInput::of_plan(&s, &plan);
    let p = SliceParams::default();
    let n = input.slices(&p).len();
    // Slice 3's first request is rate limited.
    let limited = std::sync::atomic::AtomicBool::new(false);
    let server = fake_model::serve(move |i, body| {
        let prompt = body["messages"][0]["content"][0]["text"].as_str().unwrap_or("");
        if prompt.contains(&format!("This is part 3 of {n}"))
            && !limited.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return Answer::Status {
                status: 429,
                body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#.into(),
                headers: vec![("retry-after".into(), "0".into())],
            };
        }
        answer(i)
    });
    let sm = fake_model::summarizer(&server.url);
    let (out, events) = run(&sm, Strategy::ParallelStitch, &s, &plan, &input, &p);
    let planned = strategies::planned_calls(Strategy::ParallelStitch, &input, &p);
    assert_eq!(out.calls, planned);
    assert_eq!(server.calls().len(), planned + 1, "one retried request");
    assert!(
        events.iter().any(|e| matches!(e, Progress::Retry { attempt: 1, reason, .. } if reason.contains("429") && reason.contains("slow down"))),
        "{events:?}"
    );
    // A rejected slice fails its strategy with the provider's message; the others finish.
    let server = fake_model::serve(|i, body| {
        let prompt = body["messages"][0]["content"][0]["text"].as_str().unwrap_or("");
        if prompt.contains("This is part 2 of") {
            return Answer::Status {
                status: 400,
                body:
                    r#"{"type":"error","error":{"type":"invalid_request_error","message":"slice 2 is not acceptable"}}"#
                        .into(),
                headers: vec![],
            };
        }
        answer(i)
    });
    let sm = fake_model::summarizer(&server.url);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let on = |_: usize, _: Progress| {};
    let group = [Strategy::ParallelStitch, Strategy::SingleShot, Strategy::Offline];
    let results = rt.block_on(strategies::run_group(
        Some(&sm),
        &group,
        &s,
        &plan,
        &input,
        &p,
        None,
        Some("off"),
        &on,
        &|_, _| {},
    ));
    let err = results[0].as_ref().unwrap_err().to_string();
    assert!(
        err.contains("400") && err.contains("slice 2 is not acceptable"),
        "{err}"
    );
    assert!(results[1].is_ok() && results[2].is_ok());
}

#[test]
fn compare_on_the_command_line_scores_each_and_writes_the_chosen_one() {
    let server = fake_model::serve(|i, _| answer(i));
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("models.json"),
        format!(
            r#"{{ "providers": {{ "fakeant": {{ "baseUrl": "{}", "api": "anthropic-messages", "apiKey": "${{FAKE_KEY_VAR}}",
                 "models": [{{ "id": "fake-sonnet", "contextWindow": 200000, "maxTokens": 32000, "cost": {{"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}} }}] }} }} }}"#,
            server.url
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = own_copy("long.jsonl", dir.path());
    let before = std::fs::read(&file).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(bonsai_bin())
            .arg("compare")
            .arg(&file)
            .args(["--keep-recent-tokens", "2000"])
            .args(args)
            .env("PI_CODING_AGENT_DIR", agent.path())
            .env("FAKE_KEY_VAR", "sk-test-SECRET")
            .env("HOME", agent.path())
            .output()
            .unwrap()
    };
    // Without --write nothing is written; every strategy is scored.
    let out = run(&["--model", "fakeant/fake-sonnet", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("SECRET") && !String::from_utf8_lossy(&out.stdout).contains("SECRET"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["strategies"].as_array().unwrap();
    assert_eq!(
        rows.iter().map(|r| r["strategy"].as_str().unwrap()).collect::<Vec<_>>(),
        Strategy::ALL.map(|s| s.name())
    );
    for r in rows {
        assert_eq!(r["ok"], true, "{r}");
        assert!(r["recall"]["overall"].as_f64().unwrap() > 0.0);
        assert!(r["recall"]["categories"]["requestTerms"]["total"].as_u64().unwrap() > 0);
        if r["strategy"] != "offline" {
            assert!(r["calls"].as_u64().unwrap() >= 2, "{r}");
            assert!(r["usage"]["input"].as_u64().unwrap() > 1000);
            // 3 $ per million input tokens, 15 per million output.
            let want = r["usage"]["input"].as_f64().unwrap() * 3e-6 + r["usage"]["output"].as_f64().unwrap() * 15e-6;
            assert!((r["costUsd"].as_f64().unwrap() - want).abs() < 1e-9, "{r}");
        }
    }
    assert_eq!(v["range"]["slices"].as_array().unwrap().len(), 2);
    assert_eq!(std::fs::read(&file).unwrap(), before, "compare alone writes nothing");
    // The table: every strategy's name stands apart from the next column (issue 21, item 17:
    // "sequential-accumulated" ran into the recall figures).
    let out = run(&["--model", "fakeant/fake-sonnet"]);
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    for name in Strategy::ALL.map(|s| s.name()) {
        let rows: Vec<&str> = table.lines().filter(|l| l.trim_start().starts_with(name)).collect();
        assert!(rows.len() >= 2, "{name}: {table}");
        for l in rows {
            let after = &l[l.find(name).unwrap() + name.len()..];
            assert!(after.starts_with("  "), "{name} runs into the next column: {l:?}");
        }
    }
    // --write STRATEGY --yes appends that strategy's summary as Pi's compaction entry.
    let out = run(&[
        "--model",
        "fakeant/fake-sonnet",
        "--strategies",
        "offline,parallel-stitch",
        "--write",
        "parallel-stitch",
        "--yes",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("parallel-stitch") && text.contains("appended the parallel-stitch compaction"),
        "{text}"
    );
    let after = std::fs::read(&file).unwrap();
    assert_eq!(&after[..before.len()], &before[..], "append only");
    let s = bonsai::store::load_session(&file).unwrap();
    let leaf = s.leaf().unwrap();
    let e = s.entry_value(leaf);
    assert_eq!(e["type"], "compaction");
    let summary = e["summary"].as_str().unwrap();
    assert!(summary.starts_with("## Goal\n- summary MARK"), "{summary}");
    assert!(
        e["usage"]["input"].as_u64().unwrap() > 0,
        "the calls' usage is recorded"
    );
    // No model: the offline strategy only, and the way to a model said.
    let fresh = tempfile::tempdir().unwrap();
    let file = own_copy("long.jsonl", fresh.path());
    let out = std::process::Command::new(bonsai_bin())
        .args([
            "compare",
            file.to_str().unwrap(),
            "--keep-recent-tokens",
            "2000",
            "--json",
        ])
        .env("PI_CODING_AGENT_DIR", dir.path())
        .env("HOME", dir.path())
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["strategies"].as_array().unwrap().len(), 1);
    assert_eq!(v["strategies"][0]["strategy"], "offline");
    assert!(String::from_utf8_lossy(&out.stderr).contains("only the offline strategy runs"));
}

/// With the analysis step on, every call asks for an `<analysis>` block first with room for it
/// (twice the budget, within the model's cap), and only what follows the block is kept: in
/// each result, and in what a later call is given of an earlier answer.
#[test]
fn the_analysis_step_is_asked_for_and_dropped_from_every_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, file) = sessions(tmp.path()).remove(1);
    let s = bonsai::store::load_session(&file).unwrap();
    let plan = plan(&s);
    let input = SummaryInput::of_plan(&s, &plan);
    let plain = SliceParams::default();
    let p = SliceParams {
        analysis: true,
        ..SliceParams::default()
    };
    for st in LLM {
        let server = fake_model::serve(|i, _| Answer::Text {
            text: format!("<analysis>\nthinking SECRET{i}\n</analysis>\n## Goal\n- summary MARK{i}."),
            took: Duration::from_millis(20),
        });
        let sm = fake_model::summarizer(&server.url);
        let (o, _) = run(&sm, st, &s, &plan, &input, &p);
        assert!(
            !o.text.contains("SECRET") && !o.text.contains("<analysis>"),
            "{}: {}",
            st.name(),
            o.text
        );
        assert!(o.text.contains("MARK"), "{}", st.name());
        let calls = server.calls();
        assert_eq!(calls.len(), strategies::planned_calls(st, &input, &p), "{}", st.name());
        for c in &calls {
            assert!(
                c.prompt().contains("<analysis>...</analysis>"),
                "{}: a call without the analysis step",
                st.name()
            );
            // No earlier answer's analysis is carried into a later prompt.
            assert!(
                !c.prompt().contains("SECRET"),
                "{}: an analysis carried forward",
                st.name()
            );
        }
        // Each call has room for the block beside the summary: the plain run's budgets, doubled
        // (within the model's 64,000-token output cap).
        let server2 = fake_model::serve(|i, _| answer(i));
        let sm2 = fake_model::summarizer(&server2.url);
        run(&sm2, st, &s, &plan, &input, &plain);
        let mut with: Vec<u64> = calls.iter().map(|c| c.max_tokens()).collect();
        let mut without: Vec<u64> = server2.calls().iter().map(|c| c.max_tokens()).collect();
        with.sort_unstable();
        without.sort_unstable();
        assert_eq!(
            with,
            without
                .iter()
                .map(|m| (m * 2).min(sm.cap(u64::MAX)))
                .collect::<Vec<_>>(),
            "{}",
            st.name()
        );
        if st != Strategy::SingleShot && st != Strategy::ParallelStitch {
            // A later slice reads an earlier answer's summary (its MARK), not its analysis.
            assert!(
                calls.iter().skip(1).any(|c| c.prompt().contains("MARK")),
                "{}",
                st.name()
            );
        }
    }
}
