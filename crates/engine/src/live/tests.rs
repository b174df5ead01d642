use super::state::zone_after;
use super::*;
use proptest::prelude::*;
use serde_json::json;
use std::collections::HashSet;

fn role(v: &Value) -> &str {
    v.get("role").and_then(|r| r.as_str()).unwrap_or("")
}

fn user(text: &str, ts: i64) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})
}

fn usage(tokens: u64) -> Value {
    json!({"input": tokens, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": tokens + 20})
}

fn call(id: &str, tool: &str, args: Value, ts: i64, sent: u64) -> Value {
    json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": tool, "arguments": args}],
        "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": ts, "usage": usage(sent)})
}

fn result(id: &str, tool: &str, text: &str, ts: i64) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": tool, "content": [{"type": "text", "text": text}],
        "isError": false, "timestamp": ts})
}

fn answer(text: &str, ts: i64, sent: u64) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "p", "model": "m",
        "stopReason": "stop", "timestamp": ts, "usage": usage(sent)})
}

/// Anthropic's prices (per million tokens).
const ANTHROPIC: Prices = Prices {
    input: 3.0,
    output: 15.0,
    cache_read: 0.3,
    cache_write: 3.75,
};

/// No cache discount.
const FLAT: Prices = Prices {
    input: 3.0,
    output: 15.0,
    cache_read: 0.0,
    cache_write: 0.0,
};

fn env(prices: Prices) -> CallEnv {
    CallEnv {
        context_window: 200_000,
        reserve_tokens: 16_384,
        prices: Some(prices),
    }
}

/// One call: what was sent and the report.
struct Sent {
    context: usize,
    messages: Vec<Value>,
    report: LiveReport,
}

/// Pi's part: `turns` turns of a request, a `read` of `bytes` of output and an answer, each
/// reply recording the usage of what the policy sent (plus a 2,000-token system prompt),
/// calls `gap_ms` apart. Every call is answered both by a state kept between calls (as the
/// package's engine does) and from nothing (as `bonsai context --live` does): they must agree.
fn play(turns: usize, bytes: usize, settings: &LiveSettings, prices: Prices, gap_ms: i64) -> (Vec<Value>, Vec<Sent>) {
    let prices_of = move |_: &str, _: &str| Some(prices);
    let e = env(prices);
    let mut msgs: Vec<Value> = Vec::new();
    let mut state = LiveState::default();
    let mut out = Vec::new();
    let mut ts = 1_000_000_000i64;
    let ask = |msgs: &Vec<Value>, state: &mut LiveState, out: &mut Vec<Sent>| -> u64 {
        let src = ValueSource::new(msgs, &prices_of);
        let a = state.answer(&src, &e, settings);
        let fresh = live_context(msgs, &e, settings, &prices_of);
        assert_eq!(a.pieces, fresh.pieces, "kept state and replay differ at {}", msgs.len());
        assert_eq!(a.report, fresh.report);
        let sent = a.messages(msgs);
        let tokens = a.report.tokens_sent + 2_000;
        out.push(Sent {
            context: msgs.len(),
            messages: sent,
            report: a.report,
        });
        tokens
    };
    for t in 0..turns {
        ts += gap_ms;
        msgs.push(user(
            &format!("Turn {t}: look at src/mod{t}.rs and fix `handler_{t}`"),
            ts,
        ));
        let sent = ask(&msgs, &mut state, &mut out);
        let id = format!("call_{t}");
        msgs.push(call(
            &id,
            "read",
            json!({"path": format!("src/mod{t}.rs")}),
            ts + 1,
            sent,
        ));
        msgs.push(result(&id, "read", &format!("{t}:{}", "x".repeat(bytes)), ts + 2));
        let sent = ask(&msgs, &mut state, &mut out);
        msgs.push(answer(
            &format!("Fixed handler_{t} in src/mod{t}.rs; we decided to keep the API."),
            ts + 3,
            sent,
        ));
    }
    (msgs, out)
}

/// Every tool result sent has its call before it; every call sent has its results.
fn assert_paired(sent: &[Value]) {
    let mut calls: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    for m in sent {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "toolCall" {
                calls.insert(b["id"].as_str().unwrap().to_string());
            }
        }
        if role(m) == "toolResult" {
            let id = m["toolCallId"].as_str().unwrap().to_string();
            assert!(calls.contains(&id), "tool result {id} without its call");
            answered.insert(id);
        }
    }
    let in_flight = sent.last().filter(|m| role(m) == "assistant").map(|_| 1).unwrap_or(0);
    assert!(calls.len() - answered.len() <= in_flight, "a call without its result");
}

fn bytes(v: &[Value]) -> Vec<String> {
    v.iter().map(|m| m.to_string()).collect()
}

#[test]
fn off_passes_every_message_through() {
    let s = LiveSettings {
        policy: LivePolicy::Off,
        ..LiveSettings::default()
    };
    let (msgs, sent) = play(12, 400, &s, ANTHROPIC, 5_000);
    let last = sent.last().unwrap();
    assert_eq!(last.messages, msgs[..last.context]);
    assert!(sent.iter().all(|x| x.report.step.is_none()));
}

#[test]
fn below_the_high_mark_nothing_is_left_out() {
    let (msgs, sent) = play(5, 400, &LiveSettings::default(), ANTHROPIC, 5_000);
    for x in &sent {
        assert_eq!(x.messages, msgs[..x.context], "call at {}", x.context);
    }
}

/// The bill's first rule: between two steps each request is the previous one plus what Pi
/// appended, byte for byte; a step leaves out whole old turns down to the low mark; nothing
/// left out ever comes back.
#[test]
fn between_steps_each_request_starts_with_the_previous_one() {
    let settings = LiveSettings::default();
    let (msgs, sent) = play(60, 6_000, &settings, ANTHROPIC, 5_000);
    let marks = settings.marks;
    let mut steps = 0;
    let mut first_kept_seen = 0usize;
    for w in sent.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let (pa, pb) = (bytes(&a.messages), bytes(&b.messages));
        match &b.report.step {
            None => assert!(
                pb.len() >= pa.len() && pb[..pa.len()] == pa[..],
                "call at {}: not the previous request plus what Pi appended",
                b.context
            ),
            Some(s) => {
                steps += 1;
                assert!(s.turns >= 2, "a step leaves out several turns: {s:?}");
                assert!(s.after < s.before, "{s:?}");
            }
        }
        assert_paired(&b.messages);
        assert!(b.messages.iter().filter(|m| is_packet(m)).count() <= 1);
        // Nothing left out comes back: the oldest of Pi's messages sent only moves forward.
        let first_kept = msgs[..b.context]
            .iter()
            .position(|m| b.messages.iter().any(|x| x == m && !is_packet(x)))
            .unwrap_or(0);
        assert!(
            first_kept >= first_kept_seen,
            "call at {}: a left-out turn came back",
            b.context
        );
        first_kept_seen = first_kept;
    }
    assert!(steps >= 3, "{steps} steps in 60 turns");
    // After a step the turns sent fit under the low mark (or the floor).
    for x in sent.iter().filter(|x| x.report.step.is_some()) {
        let turns: u64 = x
            .messages
            .iter()
            .filter(|m| !is_packet(m))
            .map(context::estimate_value)
            .sum();
        assert!(
            turns <= marks.low || x.report.turns_kept <= settings.floor_turns + 1,
            "{turns} tokens of turns after a step, {} turns",
            x.report.turns_kept
        );
    }
    // Sixty turns: far less sent than Pi's whole context.
    let last = sent.last().unwrap();
    assert!(
        last.report.tokens_sent * 5 < last.report.tokens_full,
        "{:?}",
        last.report
    );
}

#[test]
fn a_model_without_a_cache_discount_slides_every_call() {
    let settings = LiveSettings::default();
    let (_, sent) = play(30, 6_000, &settings, FLAT, 5_000);
    let late = &sent[20..];
    assert!(
        late.iter()
            .filter(|x| x.report.step.is_some())
            .all(|x| x.report.step.as_ref().unwrap().reason == StepReason::NoDiscount)
    );
    for x in late {
        assert!(
            x.report.tokens_sent <= settings.marks.low + 2_500,
            "call at {}: {} sent",
            x.context,
            x.report.tokens_sent
        );
    }
}

#[test]
fn a_cold_cache_steps_down_to_the_low_mark_at_once() {
    let settings = LiveSettings::default();
    // Ten minutes between calls: every call finds the cache cold.
    let (_, sent) = play(12, 6_000, &settings, ANTHROPIC, 600_000);
    let steps: Vec<&StepRecord> = sent.iter().filter_map(|x| x.report.step.as_ref()).collect();
    assert!(!steps.is_empty());
    for s in &steps {
        assert_eq!(s.reason, StepReason::CacheCold);
        assert!(s.idle_minutes.unwrap() >= 5.0);
        assert!(
            s.notice().contains("cache cold: 10 min since the last call"),
            "{}",
            s.notice()
        );
    }
}

#[test]
fn a_step_waits_until_it_pays() {
    // Turns of ~5,000 tokens: past the high mark the next step is near, so leaving out now
    // would cost more than it saves; the report says why it waits.
    let settings = LiveSettings::default();
    let (_, sent) = play(12, 20_000, &settings, ANTHROPIC, 5_000);
    assert!(sent.iter().any(|x| x.report.waiting.is_some()), "never waited");
    let w = sent.iter().find_map(|x| x.report.waiting.clone()).unwrap();
    assert!(w.contains("would save"), "{w}");
}

#[test]
fn the_floor_keeps_the_newest_turns_whatever_the_zone() {
    // Turns of ~12,000 tokens in a small window: red at once; the floor still keeps the
    // newest complete turns before the one in progress.
    let settings = LiveSettings::default();
    let prices_of = |_: &str, _: &str| Some(ANTHROPIC);
    let (msgs, _) = play(6, 48_000, &settings, ANTHROPIC, 5_000);
    let small = CallEnv {
        context_window: 60_000,
        reserve_tokens: 16_384,
        prices: Some(ANTHROPIC),
    };
    let a = live_context(&msgs, &small, &settings, &prices_of);
    assert_eq!(a.report.zone, Some(Zone::Red));
    assert_eq!(a.report.turns_kept, settings.floor_turns + 1);
    assert_paired(&a.messages(&msgs));
}

#[test]
fn zones_keep_their_zone_until_well_below_its_bound() {
    let t = 100_000;
    let b = (0.7, 0.9);
    assert_eq!(zone_after(None, 91_000.0, t, b), Zone::Red);
    assert_eq!(zone_after(Some(Zone::Red), 88_000.0, t, b), Zone::Red);
    assert_eq!(zone_after(Some(Zone::Red), 84_000.0, t, b), Zone::Yellow);
    assert_eq!(zone_after(Some(Zone::Yellow), 67_000.0, t, b), Zone::Yellow);
    assert_eq!(zone_after(Some(Zone::Yellow), 64_000.0, t, b), Zone::Green);
    assert_eq!(zone_after(Some(Zone::Green), 69_000.0, t, b), Zone::Green);
}

/// The zone is read from the whole context, not from what bonsai sent: a context far past
/// what is sent reaches red.
#[test]
fn the_zone_is_read_from_the_whole_context() {
    let settings = LiveSettings::default();
    let (_, sent) = play(40, 24_000, &settings, ANTHROPIC, 5_000);
    let last = sent.last().unwrap();
    assert!(last.report.tokens_sent < 30_000, "{}", last.report.tokens_sent);
    assert!(last.report.whole > 200_000.0, "{}", last.report.whole);
    assert_eq!(last.report.zone, Some(Zone::Red));
}

#[test]
fn summaries_are_sent_as_written_ahead_of_the_packet() {
    let settings = LiveSettings::default();
    let (mut msgs, _) = play(40, 6_000, &settings, ANTHROPIC, 5_000);
    let compaction = json!({"role": "compactionSummary", "summary": "## Goal\n- Port the parser to `nom`\n\n## Constraints & Preferences\n- Keep the public API\n\n## Next Steps\n1. Fuzz it\n\n## Critical Context\n- The lexer is shared\n\n<read-files>\nsrc/lex.rs\n</read-files>", "tokensBefore": 50_000, "timestamp": 900_000});
    let branch = json!({"role": "branchSummary", "summary": "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\n- Try `winnow` instead\n", "fromId": "abc", "timestamp": 1_000_001_500});
    msgs.insert(0, compaction.clone());
    msgs.insert(6, branch.clone());
    let prices_of = |_: &str, _: &str| Some(ANTHROPIC);
    let a = live_context(&msgs, &env(ANTHROPIC), &settings, &prices_of);
    let sent = a.messages(&msgs);
    assert_eq!(a.report.summaries_ahead, 2);
    assert_eq!(sent[0], compaction, "the compaction summary as Pi wrote it, first");
    assert_eq!(sent[1], branch, "the branch summary as Pi wrote it, with its framing");
    assert!(is_packet(&sent[2]));
    assert_eq!(sent.iter().filter(|m| is_packet(m)).count(), 1);
    assert_paired(&sent);
}

/// What the user said early, planted in the first turns of a long session; each is checked
/// as plain text in what is sent, not by the code that made the packet.
const PLANTED: [&str; 5] = [
    "The customer's account id is ACCT-77812, use it in every report.",
    "Never touch the legacy/ folder, another team owns it.",
    "The runbook is at https://runbooks.example.test/ledger/importer#retries.",
    "ERROR 2026-05-03T10:02:23Z import.batch=77 gateway timeout after 30s (code GW-504)",
    "src/report_writer.py",
];

/// A 400-turn session shaped like daily work: the planted specifics in the first turns (an
/// id and a URL in the user's sentences, a constraint, an error line inside a successful
/// log's output, a file the model wrote), then turns that read 12 KB logs and answer with
/// numbers and a tool-call preamble, every call a minute after the one before.
fn planted_session(turns: usize) -> Vec<Value> {
    let mut msgs = Vec::new();
    let mut ts = 1_000_000_000i64;
    for t in 0..turns {
        ts += 60_000;
        let text = match t {
            0 => format!("Let's fix the ledger importer. {}", PLANTED[0]),
            1 => format!("One rule first. {} Thanks.", PLANTED[1]),
            2 => format!("If imports stall, see the runbook. {}", PLANTED[2]),
            _ => format!(
                "Step {t}: check data/day-{:02}.log and tell me how many rows failed.",
                t % 12
            ),
        };
        msgs.push(user(&text, ts));
        let id = format!("c{t}");
        let (tool, args, out) = match t {
            3 => (
                "bash",
                json!({"command": "cat data/import-run.log"}),
                format!(
                    "INFO start\n{}\nINFO retry scheduled\n{}",
                    PLANTED[3],
                    "INFO row ok\n".repeat(300)
                ),
            ),
            4 => (
                "write",
                json!({"path": PLANTED[4], "content": "def write_report(rows):\n    ...\n"}),
                "Successfully wrote 36 bytes".to_string(),
            ),
            _ => (
                "read",
                json!({"path": format!("data/day-{:02}.log", t % 12)}),
                (0..300)
                    .map(|i| {
                        format!(
                            "2026-05-{:02}T10:{:02}:23Z INFO import.row={i} posted {}.{:02}",
                            t % 28 + 1,
                            i % 60,
                            i * 7,
                            i % 100
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        };
        let mut c = call(&id, tool, args, ts + 1, 1_000);
        c["content"].as_array_mut().unwrap().insert(
            0,
            json!({"type": "text", "text": format!("Next I'll use {tool} on it.")}),
        );
        msgs.push(c);
        msgs.push(result(&id, tool, &out, ts + 2));
        msgs.push(answer(
            &format!(
                "Step {t}: {} rows failed, 3 retried; totals 14, 42 and 77812 match.",
                t % 5
            ),
            ts + 3,
            1_000,
        ));
    }
    msgs
}

/// Specifics planted in the first turns are in the request word for word at turns 30, 60,
/// 120, 200, 300 and 400; the packet stays within its budget (1,200 tokens at most, and the
/// setting's) at every call; it holds no tool-call preamble, no cut answer and no bare list
/// of terms; what it does not list it counts and names the recall tool for.
#[test]
fn planted_words_stay_verbatim_and_the_packet_within_its_budget_over_400_turns() {
    let prices_of = |_: &str, _: &str| Some(ANTHROPIC);
    let msgs = planted_session(400);
    for compact_early in [false, true] {
        let settings = LiveSettings {
            compact_early,
            ..LiveSettings::default()
        };
        let mut state = LiveState::default();
        let mut most = 0u64;
        // Every call: the request of each turn and the one after its tool result.
        for end in 1..msgs.len() {
            if !matches!(role(&msgs[end - 1]), "user" | "toolResult") {
                continue;
            }
            let src = ValueSource::new(&msgs[..end], &prices_of);
            let a = state.answer(&src, &env(ANTHROPIC), &settings);
            let Some(p) = a.packet() else { continue };
            let est = (p.chars().count() as u64).div_ceil(4);
            most = most.max(est);
            assert!(
                est <= settings.packet_tokens.min(1_200),
                "packet of {est} tokens at {end}"
            );
            assert!(
                !p.contains("Next I'll use"),
                "a tool-call preamble in the packet at {end}"
            );
            assert!(
                !p.contains("rows failed, 3 retried"),
                "an answer in the packet at {end}"
            );
            assert!(!p.contains("14, 42"), "bare terms in the packet at {end}");
            let turn = end / 4;
            if [30, 60, 120, 200, 300, 399].contains(&turn) && role(&msgs[end - 1]) == "user" {
                let sent: String = a.messages(&msgs[..end]).iter().map(|m| m.to_string()).collect();
                for planted in PLANTED {
                    let quoted = serde_json::to_string(planted).unwrap();
                    assert!(
                        sent.contains(&quoted[1..quoted.len() - 1]),
                        "turn {turn}: {planted:?} is not in the request word for word; packet:\n{p}"
                    );
                }
                if turn == 399 {
                    assert!(p.contains("not listed; bonsai_recall finds them"), "{p}");
                    assert!(p.contains("The bonsai_recall tool returns any of them"), "{p}");
                }
            }
        }
        assert!(most > 0, "no packet in 400 turns");
    }
}

#[test]
fn a_tool_result_whose_call_is_gone_is_never_sent() {
    let settings = LiveSettings::default();
    let (mut msgs, _) = play(40, 6_000, &settings, ANTHROPIC, 5_000);
    // A result after a request whose call was before it (never written by Pi).
    let at = msgs.len() - 8;
    msgs.insert(at, result("call_0", "read", "orphan", 1_000_000_000));
    let prices_of = |_: &str, _: &str| Some(ANTHROPIC);
    let a = live_context(&msgs, &env(ANTHROPIC), &settings, &prices_of);
    assert_eq!(a.report.orphans_dropped, 1);
}

#[test]
fn the_output_policy_prunes_in_steps_of_at_least_its_minimum() {
    let settings = LiveSettings {
        policy: LivePolicy::Output { compat: false },
        ..LiveSettings::default()
    };
    let (_, sent) = play(40, 16_000, &settings, ANTHROPIC, 5_000);
    let steps: Vec<&StepRecord> = sent.iter().filter_map(|x| x.report.step.as_ref()).collect();
    assert!(!steps.is_empty());
    for s in &steps {
        assert!(s.pruned > 0);
        assert!(s.before - s.after >= settings.prune.minimum, "{s:?}");
    }
    for w in sent.windows(2) {
        if w[1].report.step.is_none() {
            let (pa, pb) = (bytes(&w[0].messages), bytes(&w[1].messages));
            assert_eq!(pb[..pa.len()], pa[..], "call at {}", w[1].context);
        }
    }
}

#[test]
fn the_synthetic_session_estimates_as_pi() {
    let (mut msgs, _) = play(3, 5_000, &LiveSettings::default(), ANTHROPIC, 5_000);
    msgs.push(
        json!({"role": "custom", "customType": "note", "content": "hello there", "display": true, "timestamp": 9}),
    );
    msgs.push(json!({"role": "bashExecution", "command": "ls -la", "output": "total 0", "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": 10}));
    let s = as_session(&msgs);
    assert_eq!(s.entries.len(), msgs.len());
    let proj = context::project(&s, &s.path_to(msgs.len() - 1));
    let est: Vec<u64> = proj.messages().map(|m| m.est_tokens).collect();
    let want: Vec<u64> = msgs.iter().map(context::estimate_value).collect();
    assert_eq!(est, want);
}

#[test]
fn settings_problems_are_named_with_their_values() {
    let set = |v: Value| crate::settings::Settings::from_layers(&json!({"bonsai": {"live": v}}), &json!({}), vec![]);
    let s = set(
        json!({"policy": "zonez", "turns": {"green": 2}, "summarizer": "gpt", "steps": {"high": 5000, "low": 9000}}),
    )
    .live_settings();
    assert_eq!(s.policy, LivePolicy::Off);
    let shown: Vec<String> = s.problems.iter().map(|p| p.to_string()).collect();
    let has = |prefix: &str| shown.iter().any(|p| p.starts_with(prefix));
    assert!(
        has("bonsai.live.policy is \"zonez\": did you mean \"zones\"?"),
        "{shown:?}"
    );
    assert!(has("bonsai.live.turns is {\"green\":2}: no longer read"), "{shown:?}");
    assert!(has("bonsai.live.summarizer is \"gpt\": "), "{shown:?}");
    assert!(has("bonsai.live.steps is "), "{shown:?}");
    assert_eq!(s.marks, Marks::default());
    let ok = set(json!({"policy": "output", "compat": "pi-context-pruning", "steps": {"high": 30000, "low": 8000}, "floorTurns": 3, "cacheTtlSeconds": 3600, "summarizer": "offline"})).live_settings();
    assert!(ok.problems.is_empty(), "{:?}", ok.problems);
    assert_eq!(ok.policy, LivePolicy::Output { compat: true });
    assert_eq!(
        ok.marks,
        Marks {
            high: 30_000,
            low: 8_000
        }
    );
    assert_eq!(ok.floor_turns, 3);
    assert_eq!(ok.cache_ttl_ms, 3_600_000.0);
    assert_eq!(ok.summarizer, Summarizer::Offline);
    // A name far from every policy gets no guess.
    let far = set(json!({"policy": "aggressive"})).live_settings();
    assert!(!far.problems[0].why.contains("did you mean"), "{:?}", far.problems);
}

#[test]
fn notices_say_one_and_many() {
    let one = StepRecord {
        at: 10,
        reason: StepReason::Pays,
        turns: 1,
        pruned: 0,
        before: 17_000,
        after: 6_400,
        idle_minutes: None,
    };
    assert_eq!(
        one.notice(),
        "bonsai: 1 earlier turn left out, 17,000 → 6,400 tokens sent (it pays)"
    );
    let many = StepRecord {
        turns: 12,
        ..one.clone()
    };
    assert!(many.notice().starts_with("bonsai: 12 earlier turns left out"));
    let pruned = StepRecord {
        pruned: 1,
        reason: StepReason::Crowded,
        ..one
    };
    assert!(
        pruned.notice().starts_with("bonsai: 1 old tool output pruned"),
        "{}",
        pruned.notice()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Pi's context changes part way (`/tree` to an earlier turn, then new turns there): the
    /// kept state cut back to where the two agree answers the new context as a replay of it
    /// from nothing does.
    #[test]
    fn a_state_cut_back_to_a_branch_point_answers_as_a_replay(turns in 12usize..40, back in 1usize..30, seed in 0u64..1000) {
        let settings = LiveSettings { marks: Marks { high: 4_000, low: 1_500 }, ..LiveSettings::default() };
        let prices_of = |_: &str, _: &str| Some(ANTHROPIC);
        let (msgs, _) = play(turns, 2_000, &settings, ANTHROPIC, 5_000);
        let mut state = LiveState::default();
        state.answer(&ValueSource::new(&msgs, &prices_of), &env(ANTHROPIC), &settings);
        // Back to a request `back` turns ago; two new turns from there.
        let users: Vec<usize> = (0..msgs.len()).filter(|&i| role(&msgs[i]) == "user").collect();
        let at = users[users.len() - back.min(users.len() - 1)];
        let mut other: Vec<Value> = msgs[..at].to_vec();
        let ts = 2_000_000_000 + seed as i64;
        other.push(user(&format!("Instead: look at src/other{seed}.rs"), ts));
        other.push(call("x1", "read", json!({"path": format!("src/other{seed}.rs")}), ts + 1, 5_000));
        other.push(result("x1", "read", &"z".repeat(3_000), ts + 2));
        state.truncate(at);
        let kept = state.answer(&ValueSource::new(&other, &prices_of), &env(ANTHROPIC), &settings);
        let fresh = live_context(&other, &env(ANTHROPIC), &settings, &prices_of);
        prop_assert_eq!(kept.pieces, fresh.pieces);
        prop_assert_eq!(kept.report, fresh.report);
    }

    /// A state kept between calls answers as a replay from nothing, whatever the marks, the
    /// pace and the prices (`play` asserts it at every call).
    #[test]
    fn kept_state_and_replay_agree(
        turns in 5usize..40,
        kb in 1usize..12,
        high in 4_000u64..20_000,
        gap in prop_oneof![Just(2_000i64), Just(400_000i64)],
        flat in any::<bool>(),
    ) {
        let settings = LiveSettings {
            marks: Marks { high, low: high / 3 },
            ..LiveSettings::default()
        };
        let (_, sent) = play(turns, kb * 1_000, &settings, if flat { FLAT } else { ANTHROPIC }, gap);
        prop_assert!(!sent.is_empty());
    }
}

#[test]
fn early_compaction_fires_once_per_pressure_episode() {
    // Where Pi alone compacts (the default): once the whole context passes T.
    let s = LiveSettings::default();
    let t = 100_000;
    let z = |x: f64| Some(prune::zone_of(x, t, s.zones));
    let mut latch = Latch::Idle;
    let mut fired = 0;
    // Green, yellow, red, then past T at three turn ends in a row: one compaction.
    for tokens in [50_000.0, 80_000.0, 95_000.0, 100_500.0, 104_000.0, 110_000.0] {
        let d = early_compaction(&latch, Some(tokens), z(tokens), t, &s);
        assert_eq!(d.compact, tokens == 100_500.0, "{tokens}: {}", d.reason);
        fired += d.compact as usize;
        latch = d.latch;
    }
    assert_eq!(fired, 1);
    assert_eq!(latch, Latch::InFlight);
    // Its outcome, then the size unknown until the next reply: nothing changes.
    latch = Latch::Done;
    let d = early_compaction(&latch, None, None, t, &s);
    assert!(!d.compact);
    assert_eq!(d.latch, Latch::Done);
    // Still past T after it: not again in this episode.
    let d = early_compaction(&latch, Some(103_000.0), z(103_000.0), t, &s);
    assert!(!d.compact);
    assert!(d.reason.contains("already had its compaction"), "{}", d.reason);
    // Below T: the episode is over; past T again is a new episode.
    let d = early_compaction(&Latch::Done, Some(30_000.0), z(30_000.0), t, &s);
    assert_eq!(d.latch, Latch::Idle);
    let d = early_compaction(&d.latch, Some(101_000.0), z(101_000.0), t, &s);
    assert!(d.compact);
    assert!(
        d.reason.contains("past T 100,000 where Pi alone compacts"),
        "{}",
        d.reason
    );
    // A failed one waits for the episode to end too, and says why it failed.
    let failed = Latch::Failed("nothing to compact: every turn is within keepRecentTokens".into());
    let d = early_compaction(&failed, Some(109_000.0), z(109_000.0), t, &s);
    assert!(!d.compact);
    assert!(d.reason.contains("nothing to compact"), "{}", d.reason);
    assert!(d.latch.name().contains("nothing to compact"), "{}", d.latch.name());
    // compactEarly: once red, before T.
    let early = LiveSettings {
        compact_early: true,
        ..LiveSettings::default()
    };
    let d = early_compaction(&Latch::Idle, Some(91_000.0), z(91_000.0), t, &early);
    assert!(d.compact && d.reason.starts_with("red: "), "{}", d.reason);
    assert!(!early_compaction(&Latch::Idle, Some(85_000.0), z(85_000.0), t, &early).compact);
    // The off policy is Pi alone: bonsai never compacts, Pi does at its own threshold.
    let off = LiveSettings {
        policy: LivePolicy::Off,
        compact_early: true,
        ..LiveSettings::default()
    };
    let d = early_compaction(&Latch::Idle, Some(150_000.0), z(150_000.0), t, &off);
    assert!(!d.compact, "{}", d.reason);
}

/// Pi alone's session of `turns` ordinary turns (a request, a `bash` call with `bytes` of
/// output, an answer), each reply's usage what Pi alone sent (a 2,000-token system prompt
/// and every message).
fn pi_alone(turns: usize, bytes: usize) -> Vec<Value> {
    let mut msgs: Vec<Value> = Vec::new();
    let mut ts = 1_000_000_000i64;
    let sent = |m: &Vec<Value>| m.iter().map(context::estimate_value).sum::<u64>() + 2_000;
    for t in 0..turns {
        ts += 5_000;
        msgs.push(user(
            &format!(
                "Step {t}: check data/part-{:02}.log for warnings and say what you decide.",
                t % 12
            ),
            ts,
        ));
        let id = format!("call_{t}");
        let s = sent(&msgs);
        msgs.push(call(
            &id,
            "bash",
            json!({"command": format!("cat data/part-{:02}.log", t % 12)}),
            ts + 1,
            s,
        ));
        msgs.push(result(
            &id,
            "bash",
            &format!(
                "{t}:{}",
                "2026-11-01T10:00:00Z INFO  import.row=1 account=acct-1 amount=1.00\n".repeat(bytes / 64)
            ),
            ts + 2,
        ));
        let s = sent(&msgs);
        msgs.push(answer(
            &format!(
                "Step {t}: part-{:02}.log has {} warnings. We decided to keep the importer as it is.",
                t % 12,
                3 + t % 5
            ),
            ts + 3,
            s,
        ));
    }
    msgs
}

fn bill_ratios(turns: usize, prices: Prices) -> (f64, f64, bill::PolicyBill) {
    let msgs = pi_alone(turns, 6_000);
    let s = as_session(&msgs);
    let reg = crate::load::models::Registry::default();
    let env_of = |_: Option<(&str, &str)>| env(prices);
    let zones = LiveSettings::default();
    let off = zones.with_policy(LivePolicy::Off);
    let b = bill::bill(&s, &[off, zones], &reg, &env_of);
    assert_eq!(b.overhead, 2_000);
    let (o, z) = (&b.policies[0], &b.policies[1]);
    assert_eq!(o.calls, 2 * turns);
    let sent_ratio = z.per_call.last().unwrap().sent as f64 / o.per_call.last().unwrap().sent as f64;
    (z.cost / o.cost, sent_ratio, z.clone())
}

#[test]
fn the_bill_with_steps_is_a_fraction_of_pi_alones() {
    for (turns, cached_max, flat_max) in [(60, 0.6, 0.35), (200, 0.35, 0.2)] {
        let (cached, sent, z) = bill_ratios(turns, ANTHROPIC);
        let (flat, _, _) = bill_ratios(turns, FLAT);
        eprintln!(
            "{turns} turns: {cached:.3} × Pi alone's bill with a cache discount, {flat:.3} × without; tokens sent at the last call {sent:.3} ×; {} steps, cached share {:.2}",
            z.steps,
            z.cached_share()
        );
        assert!(cached <= cached_max, "{turns} turns, cached prices: {cached:.3}");
        assert!(flat <= flat_max, "{turns} turns, flat prices: {flat:.3}");
        assert!(sent <= 0.4, "{turns} turns: {sent:.3} of Pi alone's tokens sent");
    }
}

/// The repository's sessions, as Pi 0.87.1 and 1.5.2 wrote them.
fn repository_sessions() -> Vec<(&'static str, Session)> {
    let files: [(&str, &[u8]); 9] = [
        (
            "0.87.1/tour",
            include_bytes!("../../../../fixtures/pi-0.87.1/tour.jsonl"),
        ),
        (
            "0.87.1/long",
            include_bytes!("../../../../fixtures/pi-0.87.1/long.jsonl"),
        ),
        (
            "0.87.1/split-turn",
            include_bytes!("../../../../fixtures/pi-0.87.1/split-turn.jsonl"),
        ),
        (
            "0.87.1/forked",
            include_bytes!("../../../../fixtures/pi-0.87.1/forked.jsonl"),
        ),
        ("1.5.2/tour", include_bytes!("../../../../fixtures/pi-1.5.2/tour.jsonl")),
        ("1.5.2/long", include_bytes!("../../../../fixtures/pi-1.5.2/long.jsonl")),
        (
            "1.5.2/split-turn",
            include_bytes!("../../../../fixtures/pi-1.5.2/split-turn.jsonl"),
        ),
        (
            "1.5.2/changed",
            include_bytes!("../../../../fixtures/pi-1.5.2/changed-in-1.5.2.jsonl"),
        ),
        (
            "1.5.2/forked",
            include_bytes!("../../../../fixtures/pi-1.5.2/forked.jsonl"),
        ),
    ];
    files
        .into_iter()
        .map(|(name, bytes)| (name, Session::from_bytes(bytes.to_vec()).expect("a fixture loads")))
        .collect()
}

/// On the repository's sessions, at every call of each file, with marks low enough
/// that turns are left out: the packet stays within its budget and holds none of the
/// assistant's prose, summaries go out as Pi wrote them, and `bill`'s replay of the file
/// sends exactly what `at_leaf` says at each call.
#[test]
fn on_the_repositorys_sessions_the_packet_keeps_its_facts_and_the_replay_agrees() {
    let settings = LiveSettings {
        marks: Marks {
            high: 3_000,
            low: 1_000,
        },
        ..LiveSettings::default()
    };
    let prices_of = |_: &str, _: &str| Some(ANTHROPIC);
    let reg = crate::load::models::Registry::default();
    let env_of = |_: Option<(&str, &str)>| env(ANTHROPIC);
    let mut packets = 0;
    for (name, s) in repository_sessions() {
        let b = bill::bill(&s, std::slice::from_ref(&settings), &reg, &env_of);
        let per_call: std::collections::HashMap<usize, u64> = b.policies[0]
            .per_call
            .iter()
            .map(|c| (c.entry, c.sent - b.overhead))
            .collect();
        // Every call of the file, side branches included (a replay goes back to where each
        // branches off).
        let mut calls: Vec<usize> = per_call.keys().copied().collect();
        calls.sort();
        for a in calls {
            let replayed = per_call[&a];
            let leaf = s.parent_of(a).unwrap();
            let at = at_leaf(&s, leaf, &env(ANTHROPIC), &settings, &prices_of);
            let sent = at.answer.messages(&at.values);
            let est: u64 = sent.iter().map(context::estimate_value).sum();
            assert_eq!(
                est, replayed,
                "{name}: the call at {}: replay and at_leaf differ",
                s.entries[a].id
            );
            for m in &at.values {
                if matches!(role(m), "compactionSummary" | "branchSummary") {
                    assert!(sent.contains(m), "{name}: a summary not sent as written");
                }
            }
            let Some(packet) = at.answer.packet() else { continue };
            packets += 1;
            let est = (packet.chars().count() as u64).div_ceil(4);
            assert!(
                est <= settings.packet_tokens,
                "{name} at {}: a packet of {est} tokens",
                s.entries[a].id
            );
            // The assistant's prose is not in it: no reply's first line.
            for m in &at.values {
                if role(m) == "assistant" {
                    let text = context::content_text(m.get("content"), "\n");
                    if let Some(line) = text.lines().map(str::trim).find(|l| l.len() > 30) {
                        assert!(!packet.contains(line), "{name}: a reply's line in the packet: {line}");
                    }
                }
            }
        }
    }
    eprintln!("{packets} packets checked");
    assert!(packets >= 20, "{packets} packets checked");
}

/// A conversation of `turns` turns, each a request and an answer (one call a turn), the
/// answers' usage what was sent; turn `t`'s words carry `tag` so that two branches differ.
fn chat(turns: usize, tag: &str, t0: usize) -> Vec<Value> {
    let mut msgs = Vec::new();
    for t in t0..t0 + turns {
        let ts = 1_000_000_000 + 60_000 * t as i64;
        msgs.push(user(&format!("{tag} {t}: {}", "word ".repeat(200)), ts));
        msgs.push(answer(&format!("{tag} answer {t}"), ts + 1, 1_000 + 300 * t as u64));
    }
    msgs
}

/// Going back further than the calls a state keeps (Pi's `/tree` to a turn hundreds of calls
/// ago) answers as a replay from nothing: jumps back of 10, 257, 300 and 500 turns in a
/// conversation of 600, then two turns of another branch from there.
#[test]
fn a_jump_back_past_the_kept_calls_replays_from_the_start() {
    let settings = LiveSettings::default();
    let prices_of = |_: &str, _: &str| Some(ANTHROPIC);
    let msgs = chat(600, "main", 0);
    for back in [10usize, 257, 300, 500] {
        let mut state = LiveState::default();
        // Every call on the way, as the package asks.
        for end in (1..msgs.len()).step_by(2) {
            state.answer(&ValueSource::new(&msgs[..end], &prices_of), &env(ANTHROPIC), &settings);
        }
        let at = msgs.len() - 2 * back;
        let mut other: Vec<Value> = msgs[..at].to_vec();
        other.extend(chat(2, "other", 10_000));
        other.pop();
        state.truncate(at);
        let kept = state.answer(&ValueSource::new(&other, &prices_of), &env(ANTHROPIC), &settings);
        let fresh = live_context(&other, &env(ANTHROPIC), &settings, &prices_of);
        assert_eq!(kept.pieces, fresh.pieces, "back {back}: the pieces");
        assert_eq!(kept.report, fresh.report, "back {back}: the report");
    }
}
