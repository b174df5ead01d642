use super::*;
use proptest::prelude::*;

fn user(text: &str, ts: i64) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts})
}

fn call(id: &str, tool: &str, args: Value, ts: i64) -> Value {
    json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": tool, "arguments": args}],
        "stopReason": "toolUse", "timestamp": ts,
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}})
}

fn result(id: &str, tool: &str, text: &str, ts: i64) -> Value {
    json!({"role": "toolResult", "toolCallId": id, "toolName": tool, "content": [{"type": "text", "text": text}],
        "isError": false, "timestamp": ts})
}

fn answer(text: &str, ts: i64) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop", "timestamp": ts,
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}})
}

/// `n` turns: each a request, a read of a file with `bytes` of output, and an answer.
fn session(n: usize, bytes: usize) -> Vec<Value> {
    let mut v = Vec::new();
    for t in 0..n {
        let ts = 1_000_000 + t as i64 * 1000;
        v.push(user(
            &format!("Turn {t}: look at src/mod{t}.rs and fix `handler_{t}`"),
            ts,
        ));
        let id = format!("call_{t}");
        v.push(call(&id, "read", json!({"path": format!("src/mod{t}.rs")}), ts + 1));
        v.push(result(&id, "read", &"x".repeat(bytes), ts + 2));
        v.push(answer(&format!("Fixed handler_{t} in src/mod{t}.rs."), ts + 3));
    }
    v
}

fn input(msgs: &[Value], usage: Option<f64>) -> LiveInput<'_> {
    LiveInput {
        messages: msgs,
        usage_tokens: usage,
        context_window: 100_000,
        reserve_tokens: 10_000,
    }
}

fn zones_settings() -> LiveSettings {
    LiveSettings::default()
}

/// Every tool result sent has its call before it; every call sent has its results.
fn assert_paired(sent: &[Value]) {
    let mut calls: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    for m in sent {
        for id in call_ids(m) {
            calls.insert(id.to_string());
        }
        if role(m) == "toolResult" {
            let id = m["toolCallId"].as_str().unwrap().to_string();
            assert!(calls.contains(&id), "tool result {id} without its call");
            answered.insert(id);
        }
    }
    assert_eq!(calls, answered, "a call without its result");
}

#[test]
fn off_passes_every_message_through() {
    let msgs = session(12, 100);
    let s = LiveSettings {
        policy: LivePolicy::Off,
        ..LiveSettings::default()
    };
    let a = live_context(&input(&msgs, Some(500.0)), &s);
    assert!(!a.changed(msgs.len()));
    assert_eq!(a.messages(&msgs), msgs);
}

#[test]
fn green_keeps_the_newest_turns_and_one_packet() {
    let msgs = session(12, 100);
    let a = live_context(&input(&msgs, Some(1_000.0)), &zones_settings());
    let sent = a.messages(&msgs);
    assert_eq!(a.report.zone, Some(Zone::Green));
    assert_eq!(a.report.turns_total, 12);
    assert_eq!(a.report.turns_kept, 8);
    assert_eq!(a.report.dropped, 16);
    // The packet first, then the oldest kept turn's request.
    assert!(is_packet(&sent[0]));
    assert_eq!(sent.iter().filter(|m| is_packet(m)).count(), 1);
    assert_eq!(sent[1], msgs[16]);
    assert_eq!(&sent[1..], &msgs[16..]);
    assert_paired(&sent);
    let p = a.packet().unwrap();
    assert!(p.starts_with("[bonsai: 4 earlier turns"), "{p}");
    // The dropped turns' requests and files are in it.
    for t in 0..4 {
        assert!(p.contains(&format!("src/mod{t}.rs")), "{p}");
    }
    assert!(!p.contains("src/mod5.rs"), "a kept turn's file in the packet: {p}");
    assert!(a.report.tokens_sent < a.report.tokens_full);
}

#[test]
fn fewer_turns_as_the_zone_worsens() {
    let msgs = session(12, 100);
    let t = input(&msgs, None).threshold() as f64;
    let yellow = live_context(&input(&msgs, Some(0.75 * t)), &zones_settings());
    assert_eq!(yellow.report.zone, Some(Zone::Yellow));
    assert_eq!(yellow.report.turns_kept, 4);
    let red = live_context(&input(&msgs, Some(0.95 * t)), &zones_settings());
    assert_eq!(red.report.zone, Some(Zone::Red));
    assert_eq!(red.report.turns_kept, 1);
    let sent = red.messages(&msgs);
    assert_eq!(&sent[1..], &msgs[44..]);
    assert_paired(&sent);
    // Over T (Pi would compact) is red too.
    let over = live_context(&input(&msgs, Some(2.0 * t)), &zones_settings());
    assert_eq!(over.report.zone, Some(Zone::Red));
}

#[test]
fn unknown_usage_takes_the_estimate_of_the_messages() {
    let msgs = session(12, 20_000);
    let full: u64 = msgs.iter().map(context::estimate_value).sum();
    let a = live_context(&input(&msgs, None), &zones_settings());
    assert_eq!(a.report.tokens_full, full);
    assert_eq!(a.report.zone, Some(prune::zone_of(full as f64, 90_000, (0.7, 0.9))));
}

#[test]
fn long_output_of_older_kept_turns_is_distilled_and_the_newest_turn_is_lossless() {
    let msgs = session(6, 30_000);
    let a = live_context(&input(&msgs, Some(1_000.0)), &zones_settings());
    assert_eq!(a.report.turns_kept, 6);
    // Five older turns distilled, the newest turn's read kept whole.
    assert_eq!(a.report.distilled, 5);
    let sent = a.messages(&msgs);
    let last_read = sent.iter().rev().find(|m| role(m) == "toolResult").unwrap();
    assert_eq!(last_read, &msgs[22]);
    let first_read = sent.iter().find(|m| role(m) == "toolResult").unwrap();
    let text = first_read["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("chars elided from read"), "{}", &text[..100]);
    // Nothing dropped: no packet.
    assert!(a.packet().is_none());
    assert_paired(&sent);
}

#[test]
fn raw_summaries_are_dropped_and_their_facts_go_to_the_packet() {
    let mut msgs = vec![
        json!({"role": "compactionSummary", "summary": "## Goal\n- Port the parser to `nom`\n\n## Constraints & Preferences\n- Keep the public API\n", "tokensBefore": 50_000, "timestamp": 900_000}),
    ];
    msgs.extend(session(3, 100));
    msgs.insert(
        5,
        json!({"role": "branchSummary", "summary": "The user explored a branch.\n\n## Goal\n- Try `winnow` instead\n", "fromId": "abc", "timestamp": 1_001_500}),
    );
    let a = live_context(&input(&msgs, Some(1_000.0)), &zones_settings());
    let sent = a.messages(&msgs);
    assert_eq!(a.report.summaries_filtered, 2);
    assert!(
        sent.iter()
            .all(|m| !matches!(role(m), "compactionSummary" | "branchSummary"))
    );
    let p = a.packet().unwrap();
    assert!(p.contains("Port the parser to `nom`"), "{p}");
    assert!(p.contains("Keep the public API"), "{p}");
    assert!(p.contains("Try `winnow` instead"), "{p}");
    assert!(p.contains("2 earlier summaries"), "{p}");
    assert_eq!(sent.len(), msgs.len() - 2 + 1);
    assert_paired(&sent);
}

#[test]
fn red_without_a_request_keeps_the_smallest_safe_suffix() {
    // What a compaction left mid-turn: no user message in the context.
    let msgs = vec![
        json!({"role": "compactionSummary", "summary": "## Goal\n- Refactor\n", "tokensBefore": 1, "timestamp": 1}),
        call("a", "bash", json!({"command": "ls"}), 2),
        result("a", "bash", "x", 3),
        call("b", "bash", json!({"command": "cargo test"}), 4),
        result("b", "bash", "ok", 5),
    ];
    let a = live_context(&input(&msgs, Some(1e9)), &zones_settings());
    let sent = a.messages(&msgs);
    assert_eq!(a.report.zone, Some(Zone::Red));
    assert!(is_packet(&sent[0]));
    assert_eq!(&sent[1..], &msgs[3..]);
    assert_paired(&sent);
}

#[test]
fn a_tool_result_whose_call_is_gone_is_never_sent() {
    let mut msgs = session(2, 100);
    msgs.insert(0, result("lost", "read", "orphan", 1));
    let a = live_context(&input(&msgs, Some(1_000.0)), &zones_settings());
    assert_eq!(a.report.orphans_dropped, 1);
    assert_paired(&a.messages(&msgs));
}

#[test]
fn the_output_policy_is_bonsai_prunes_plan() {
    let msgs = session(40, 8_000);
    let s = LiveSettings {
        policy: LivePolicy::Output { compat: false },
        ..LiveSettings::default()
    };
    let a = live_context(&input(&msgs, None), &s);
    let plan = prune::output(&as_session(&msgs), msgs.len() - 1, &PruneSettings::default(), false);
    let pruned: Vec<usize> = plan
        .edits()
        .filter(|i| i.change == prune::Change::Pruned)
        .map(|i| i.entry)
        .collect();
    assert!(!pruned.is_empty());
    assert_eq!(a.report.pruned, pruned.len());
    let sent = a.messages(&msgs);
    for (k, m) in sent.iter().enumerate() {
        if pruned.contains(&k) {
            assert!(prune::is_pruned(&m["content"]), "message {k} not pruned");
        } else {
            assert_eq!(m, &msgs[k]);
        }
    }
    // Compat prunes by the extension's own rules: at least as much here.
    let c = LiveSettings {
        policy: LivePolicy::Output { compat: true },
        ..LiveSettings::default()
    };
    let b = live_context(&input(&msgs, None), &c);
    assert!(b.report.pruned >= a.report.pruned);
}

#[test]
fn the_synthetic_session_estimates_as_pi() {
    let mut msgs = session(3, 5_000);
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
    let s = set(json!({"policy": "zone", "turns": {"green": 0, "blue": 2}, "summarizer": "gpt"})).live_settings();
    assert_eq!(s.policy, LivePolicy::Off);
    let shown: Vec<String> = s.problems.iter().map(|p| p.to_string()).collect();
    assert!(
        shown.iter().any(|p| p.starts_with("bonsai.live.policy is \"zone\": ")),
        "{shown:?}"
    );
    assert!(
        shown.iter().any(|p| p.starts_with("bonsai.live.turns.green is 0: ")),
        "{shown:?}"
    );
    assert!(
        shown.iter().any(|p| p.starts_with("bonsai.live.turns.blue is 2: ")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|p| p.starts_with("bonsai.live.summarizer is \"gpt\": ")),
        "{shown:?}"
    );
    let ok = set(json!({"policy": "output", "compat": "pi-context-pruning", "turns": {"green": 3, "yellow": 5}, "summarizer": "offline"})).live_settings();
    assert!(ok.problems.is_empty());
    assert_eq!(ok.policy, LivePolicy::Output { compat: true });
    // Never more turns as the zone worsens.
    assert_eq!((ok.turns.green, ok.turns.yellow, ok.turns.red), (3, 3, 1));
    assert_eq!(ok.summarizer, Summarizer::Offline);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// The packet is the same bytes whatever order same-timestamp facts come in.
    #[test]
    fn the_packet_does_not_depend_on_the_order_of_same_timestamp_facts(seed in any::<u64>()) {
        // Twelve turns whose messages share four timestamps.
        let mut msgs = Vec::new();
        for t in 0..12 {
            let ts = 5_000 + (t as i64 / 3) * 10;
            msgs.push(user(&format!("Request {t}: keep `item_{t}` and never touch vendor/{t}"), ts));
            let id = format!("c{t}");
            msgs.push(call(&id, if t % 2 == 0 { "edit" } else { "read" }, json!({"path": format!("src/f{t}.rs")}), ts));
            msgs.push(result(&id, "read", if t % 4 == 0 { "Error: no such file" } else { "fine" }, ts));
            msgs.push(answer(&format!("We decided to use approach {t}. Done with item_{t}."), ts));
        }
        let dropped: Vec<Value> = msgs[..32].to_vec();
        let mut shuffled = dropped.clone();
        // A seeded Fisher-Yates shuffle.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let a = offline::packet_ledger(&dropped.iter().collect::<Vec<_>>(), 1_500);
        let b = offline::packet_ledger(&shuffled.iter().collect::<Vec<_>>(), 1_500);
        prop_assert_eq!(a, b);
    }
}

#[test]
fn the_packet_stays_within_its_budget() {
    let msgs = session(200, 100);
    let s = LiveSettings {
        packet_tokens: 400,
        ..LiveSettings::default()
    };
    let a = live_context(&input(&msgs, Some(1_000.0)), &s);
    let tokens = a.report.packet_tokens.unwrap();
    assert!(tokens <= 440, "packet {tokens} tokens for a budget of 400");
    let p = a.packet().unwrap();
    assert!(p.contains("## Goal") && p.contains("## Files"), "{p}");
}

#[test]
fn early_compaction_fires_once_per_pressure_episode() {
    let s = LiveSettings::default();
    let t = 100_000;
    let mut latch = Latch::Idle;
    let mut fired = 0;
    // Green, yellow, then red at three turn ends in a row: one compaction.
    for tokens in [50_000.0, 80_000.0, 91_000.0, 92_000.0, 95_000.0] {
        let d = early_compaction(latch, Some(tokens), t, &s);
        fired += d.compact as usize;
        latch = d.latch;
    }
    assert_eq!(fired, 1);
    assert_eq!(latch, Latch::InFlight);
    // Its outcome, then usage unknown until the next reply: nothing changes.
    latch = Latch::Done;
    let d = early_compaction(latch, None, t, &s);
    assert!(!d.compact);
    assert_eq!(d.latch, Latch::Done);
    // Still red after it: not again in this episode.
    let d = early_compaction(latch, Some(93_000.0), t, &s);
    assert!(!d.compact);
    // Below red: the episode is over; red again is a new episode.
    let d = early_compaction(Latch::Done, Some(30_000.0), t, &s);
    assert_eq!(d.latch, Latch::Idle);
    let d = early_compaction(d.latch, Some(91_000.0), t, &s);
    assert!(d.compact);
    // A failed one waits for the episode to end too.
    let d = early_compaction(Latch::Failed, Some(99_000.0), t, &s);
    assert!(!d.compact);
    // Off: never.
    let off = LiveSettings {
        compact_early: false,
        ..LiveSettings::default()
    };
    assert!(!early_compaction(Latch::Idle, Some(99_000.0), t, &off).compact);
}
