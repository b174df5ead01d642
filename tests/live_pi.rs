//! bonsai's Pi package in real Pi (0.87.1 and 1.5.2), end to end: a fake model on 127.0.0.1
//! records every request and answers with scripted tool calls (Pi runs them for real: `cat`
//! of bulky log files) and text.
//!
//! - Every request's messages equal `bonsai context --live` at the entry that was the leaf when
//!   it was sent (print mode and RPC mode, with `-e` and after `pi install`).
//! - The bill Pi records over 60 turns with a provider that caches prompts, priced as
//!   Anthropic's and with no cache discount, with and without the package (written to
//!   `target/live-bill-<version>.csv` for BENCHMARKS.md); between two steps each request
//!   starts with the previous one's bytes; `bonsai bill` replays what was sent call by call.
//! - Early compaction fires once per pressure episode in red, before Pi's threshold, with the
//!   offline summary and with Pi's own; in print mode it is in the file when Pi exits.
//! - One packet, no raw summary; the same packet bytes from both Pi versions.
//! - The engine killed mid-session: pass-through, one notice, the session goes on.

mod common;

use common::fake_openai::{self, Reply, is_summary_request};
use common::live_pi::{self, PiBin, Rpc, World, same, sent_of_agent, sent_of_request};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Marks the text of a summary the fake model writes (Pi's own compaction).
const SUMMARY_MARK: &str = "FAKE-MODEL-SUMMARY";

/// The step number of the newest user request in a request.
fn step_of(body: &Value) -> usize {
    live_pi::newest_number(body, "Step ")
}

/// A request: one `cat` of a log (Pi runs it), then an answer that states a decision.
fn script(body: &Value) -> Reply {
    if is_summary_request(body) {
        return Reply::Text(format!(
            "## Goal\n- Check the import logs ({SUMMARY_MARK})\n\n## Constraints & Preferences\n- Never edit the logs\n\n## Progress\n### Done\n- [x] Earlier parts\n\n## Next Steps\n1. Go on"
        ));
    }
    let last = body["messages"].as_array().unwrap().last().unwrap();
    let n = step_of(body);
    if last["role"] == "user" {
        Reply::Tools(vec![(
            "bash".into(),
            json!({"command": format!("cat data/part-{:02}.log", n % 12)}),
        )])
    } else {
        Reply::Text(format!(
            "Step {n}: part-{:02}.log has {} warnings. We decided to keep the importer as it is.",
            n % 12,
            3 + n % 5
        ))
    }
}

/// Twelve logs of ~6 KB each (deterministic).
fn write_logs(w: &World) {
    live_pi::write_part_logs(w);
}

fn prompt(n: usize) -> String {
    format!(
        "Step {n}: check data/part-{:02}.log for warnings and say what you decide.",
        n % 12
    )
}

/// The chat requests (not summary requests) with the entry that was the leaf when each was
/// sent: the parent of the reply it got (a compaction appended at a turn's end is that leaf).
fn requests_with_leaves(w: &World) -> Vec<(Value, String)> {
    let bodies: Vec<Value> = w.chat_requests();
    let leaves: Vec<String> = w
        .entries()
        .iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .map(|e| e["parentId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(bodies.len(), leaves.len(), "one request per reply");
    bodies.into_iter().zip(leaves).collect()
}

/// Every request equals `bonsai context --live` at its leaf; returns the live answers.
fn assert_requests_are_live(w: &World, pi: &PiBin, what: &str) -> Vec<Value> {
    assert_requests_are_live_from(w, pi, what, 0)
}

/// [`assert_requests_are_live`] for the chat requests from the `from`-th on (the settings in
/// force now applied to them).
fn assert_requests_are_live_from(w: &World, pi: &PiBin, what: &str, from: usize) -> Vec<Value> {
    assert_requests_are(w, pi, what, from, &[])
}

/// The chat requests from the `from`-th on were Pi's own context: what `bonsai context --live
/// --policy off` says.
fn assert_requests_pass_through(w: &World, pi: &PiBin, what: &str, from: usize) {
    assert_requests_are(w, pi, what, from, &["--policy", "off"]);
}

fn assert_requests_are(w: &World, pi: &PiBin, what: &str, from: usize, extra: &[&str]) -> Vec<Value> {
    let mut out = vec![];
    for (k, (body, leaf)) in requests_with_leaves(w).iter().enumerate().skip(from) {
        let live = w.live_context(leaf, extra);
        let msgs: Vec<Value> = live["context"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["message"].clone())
            .collect();
        let want = sent_of_agent(&msgs);
        let got = sent_of_request(body);
        assert_eq!(
            got.len(),
            want.len(),
            "Pi {} {what}: request {k} (leaf {leaf}) sent {} messages, bonsai context --live says {}",
            pi.version,
            got.len(),
            want.len()
        );
        for (i, (g, e)) in got.iter().zip(&want).enumerate() {
            assert!(
                same(g, e),
                "Pi {} {what}: request {k} (leaf {leaf}) message {i} differs:\n sent {g:?}\n live {e:?}",
                pi.version
            );
        }
        out.push(live);
    }
    out
}

fn packets(live: &Value) -> Vec<String> {
    live["context"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["live"] == "packet")
        .map(|m| m["message"]["content"].as_str().unwrap().to_string())
        .collect()
}

/// A notice the engine gives at a step (info, not a failure).
fn is_step_notice(n: &str) -> bool {
    n.starts_with("bonsai: ") && n.contains(" tokens sent (")
}

/// The line said after a compaction: what its summary lost (the engine's audit).
fn is_audit_notice(n: &str) -> bool {
    n.starts_with("bonsai: the compaction ") && (n.contains(" specifics"))
}

/// The package's notices that are not step notices nor a compaction's audit.
fn other_notices(notices: &[String]) -> Vec<&String> {
    notices
        .iter()
        .filter(|n| n.starts_with("bonsai:") && !is_step_notice(n) && !is_audit_notice(n))
        .collect()
}

/// One RPC run of `turns` turns: what Pi recorded (its bill), the requests' tokens, and the
/// step notices shown.
struct Run {
    world: World,
    bill: f64,
    tokens: Vec<u64>,
    steps_noticed: usize,
}

fn run_turns(pi: &PiBin, turns: usize, with: bool, prices: live_pi::Prices) -> Run {
    run_policy(pi, turns, with.then_some("zones"), prices)
}

/// [`run_turns`] with the package's policy `policy` (`None`: Pi alone).
fn run_policy(pi: &PiBin, turns: usize, policy: Option<&str>, prices: live_pi::Prices) -> Run {
    run_wire(pi, turns, policy, prices, fake_openai::Wire::OpenAi)
}

/// [`run_policy`] against a model that speaks `wire`.
fn run_wire(pi: &PiBin, turns: usize, policy: Option<&str>, prices: live_pi::Prices, wire: fake_openai::Wire) -> Run {
    let settings = match policy {
        Some(p) => json!({"bonsai": {"live": {"policy": p}}}),
        None => json!({}),
    };
    let with = policy.is_some();
    let w = World::priced_wire(200_000, settings, Some(prices), wire, script);
    write_logs(&w);
    let mut rpc = Rpc::start(w.pi(pi, with));
    for n in 1..=turns {
        rpc.prompt(&prompt(n));
    }
    let notices = rpc.notices();
    rpc.quit();
    let others: Vec<&String> = other_notices(&notices)
        .into_iter()
        .filter(|n| !n.starts_with("bonsai compacts early"))
        .collect();
    assert!(others.is_empty(), "Pi {}: {others:?}", pi.version);
    let reqs: Vec<Value> = w
        .server
        .requests()
        .into_iter()
        .filter(|b| !is_summary_request(b))
        .collect();
    assert_eq!(reqs.len(), 2 * turns, "Pi {}: two requests per turn", pi.version);
    Run {
        bill: w.recorded_bill(),
        tokens: reqs.iter().map(fake_openai::request_tokens).collect(),
        steps_noticed: notices.iter().filter(|n| is_step_notice(n)).count(),
        world: w,
    }
}

/// Sixty turns in RPC mode with a provider that caches prompts, with and without the package:
/// (a) every request is what `bonsai context --live` says at its leaf; (b) between two steps
/// each request starts with the previous one's messages, byte for byte, and every step was
/// said; (c) the bill Pi recorded with the default settings is at most 0.6× Pi alone's priced
/// as Anthropic's, 0.35× with no cache discount, and at turn 60 at most 40 % of Pi alone's
/// tokens are sent; (d) `bonsai bill` replays each call's tokens as the provider counted them;
/// (e) exactly one packet whenever turns are left out, the same bytes from both Pi versions.
#[test]
fn sixty_turns_cost_less_and_keep_the_cache() {
    let pis = live_pi::pis("tests::live_pi::sixty_turns");
    let mut packets_by_version: Vec<Vec<Vec<String>>> = vec![];
    for pi in &pis {
        let alone = run_turns(pi, 60, false, live_pi::CACHING);
        let with = run_turns(pi, 60, true, live_pi::CACHING);
        let flat_alone = run_turns(pi, 60, false, live_pi::NO_DISCOUNT);
        let flat_with = run_turns(pi, 60, true, live_pi::NO_DISCOUNT);
        let w = &with.world;
        // (a) and (e).
        let lives = assert_requests_are_live(w, pi, "rpc, 60 turns");
        let mut pk = vec![];
        let mut steps = 0;
        for live in &lives {
            let p = packets(live);
            let dropped = live["live"]["dropped"].as_u64().unwrap();
            assert_eq!(
                p.len(),
                usize::from(dropped > 0),
                "one packet when anything is left out"
            );
            steps += usize::from(live["live"]["step"].is_object());
            pk.push(p);
        }
        packets_by_version.push(pk);
        assert!(steps >= 2, "Pi {}: {steps} steps in 60 turns", pi.version);
        assert_eq!(with.steps_noticed, steps, "Pi {}: every step is said", pi.version);
        // (b): the chat requests in order; between steps each one extends the one before.
        let chats: Vec<Value> = w
            .server
            .requests()
            .into_iter()
            .filter(|b| !is_summary_request(b))
            .collect();
        for k in 1..chats.len() {
            if lives[k]["live"]["step"].is_object() {
                continue;
            }
            let (a, b) = (
                chats[k - 1]["messages"].as_array().unwrap(),
                chats[k]["messages"].as_array().unwrap(),
            );
            assert!(
                b.len() >= a.len() && b[..a.len()] == a[..],
                "Pi {}: request {k} does not start with request {}'s messages",
                pi.version,
                k - 1
            );
        }
        // (c): the bills Pi recorded, and the tokens sent at turn 60.
        let cached = with.bill / alone.bill;
        let flat = flat_with.bill / flat_alone.bill;
        let sent = *with.tokens.last().unwrap() as f64 / *alone.tokens.last().unwrap() as f64;
        assert!(
            cached <= 0.6,
            "Pi {}: {cached:.3} × Pi alone's bill with caching",
            pi.version
        );
        assert!(flat <= 0.35, "Pi {}: {flat:.3} × with no cache discount", pi.version);
        assert!(
            sent <= 0.4,
            "Pi {}: {sent:.3} of Pi alone's tokens at turn 60",
            pi.version
        );
        // (d): the replay of the session recorded with the package sends, call by call, what
        // the provider counted (the system prompt from the first call).
        let o = w
            .bonsai()
            .args(["bill", "--json", "--policy", "zones"])
            .arg(&w.session)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let b: Value = serde_json::from_slice(&o.stdout).unwrap();
        let per_call = b["sessions"][0]["policies"][0]["perCall"].as_array().unwrap();
        let counted: Vec<u64> = w.server.usage().iter().map(|u| u.0).collect();
        let replayed: Vec<u64> = per_call.iter().map(|c| c["sent"].as_u64().unwrap()).collect();
        assert_eq!(replayed, counted, "Pi {}: the replay's tokens per call", pi.version);
        // The table for BENCHMARKS.md.
        let mut csv = String::from("request,turn,alone,with,alone_no_discount,with_no_discount\n");
        for k in 0..alone.tokens.len() {
            csv.push_str(&format!(
                "{},{},{},{},{},{}\n",
                k + 1,
                k / 2 + 1,
                alone.tokens[k],
                with.tokens[k],
                flat_alone.tokens[k],
                flat_with.tokens[k]
            ));
        }
        let dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| common::repo().join("target"));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join(format!("live-bill-{}.csv", pi.version));
        std::fs::write(&out, csv).unwrap();
        common::say(&format!(
            "live_pi: Pi {}: 60 turns: bill ${:.4} with the package against ${:.4} alone ({cached:.3}×), no cache discount ${:.4} against ${:.4} ({flat:.3}×); turn 60 sends {} of {} tokens ({sent:.3}); {steps} steps (table in {})",
            pi.version,
            with.bill,
            alone.bill,
            flat_with.bill,
            flat_alone.bill,
            with.tokens.last().unwrap(),
            alone.tokens.last().unwrap(),
            out.display()
        ));
    }
    // The packet is built from the same facts in both versions: the same bytes.
    if packets_by_version.len() == 2 {
        assert_eq!(
            packets_by_version[0], packets_by_version[1],
            "the packets differ between Pi versions"
        );
    }
}

/// The same sixty turns against a model that speaks Anthropic's Messages API: Pi's Anthropic
/// client records the cache reads and writes the provider reports (`cache_read_input_tokens`,
/// `cache_creation_input_tokens`), and the bill it records with the package is at most 0.6×
/// Pi alone's.
#[test]
fn sixty_turns_over_anthropics_wire_cost_less() {
    for pi in live_pi::pis("tests::live_pi::anthropic_wire") {
        let wire = fake_openai::Wire::Anthropic;
        let alone = run_wire(&pi, 60, None, live_pi::CACHING, wire);
        let with = run_wire(&pi, 60, Some("zones"), live_pi::CACHING, wire);
        for r in [&alone, &with] {
            let replies: Vec<Value> = r
                .world
                .entries()
                .into_iter()
                .filter(|e| e["message"]["role"] == "assistant")
                .collect();
            assert!(
                replies.iter().all(|e| e["message"]["api"] == "anthropic-messages"),
                "Pi {}: a reply not through Pi's Anthropic client",
                pi.version
            );
            let cached: f64 = replies
                .iter()
                .filter_map(|e| e["message"]["usage"]["cacheRead"].as_f64())
                .sum();
            let written: f64 = replies
                .iter()
                .filter_map(|e| e["message"]["usage"]["cacheWrite"].as_f64())
                .sum();
            assert!(
                cached > 0.0 && written > 0.0,
                "Pi {}: cache reads {cached}, writes {written}",
                pi.version
            );
        }
        assert!(
            with.steps_noticed >= 2,
            "Pi {}: {} steps",
            pi.version,
            with.steps_noticed
        );
        let ratio = with.bill / alone.bill;
        assert!(ratio <= 0.6, "Pi {}: {ratio:.3} × Pi alone's bill", pi.version);
        common::say(&format!(
            "live_pi: Pi {}: 60 turns over Anthropic's wire: ${:.4} with the package against ${:.4} alone ({ratio:.3}×)",
            pi.version, with.bill, alone.bill
        ));
    }
}

/// One Pi version's early-compaction run in RPC mode with the policy off (so the context
/// grows into red): returns the session's compaction entries and the engine's log.
fn early_compaction_run(pi: &PiBin, summarizer: &str, early: bool) -> (World, Vec<Value>, Vec<Value>) {
    let settings = json!({"bonsai": {"live": {"summarizer": summarizer, "compactEarly": early}}});
    let w = World::new(60_000, settings, script);
    write_logs(&w);
    let log = w.dir.path().join("serve.log");
    let mut rpc = Rpc::start({
        let mut c = w.pi(pi, true);
        c.env("BONSAI_SERVE_LOG", &log);
        c
    });
    for n in 1..=70 {
        rpc.prompt(&prompt(n));
    }
    let notices = rpc.notices();
    let stderr = rpc.stderr.lock().unwrap().clone();
    rpc.quit();
    // Each compaction is said, attributed to bonsai with its reason and summarizer.
    let others: Vec<&String> = other_notices(&notices)
        .into_iter()
        .filter(|n| !n.starts_with("bonsai compacts ("))
        .collect();
    assert!(
        others.is_empty(),
        "Pi {} summarizer {summarizer}: {others:?} {stderr}",
        pi.version
    );
    let compactions: Vec<Value> = w.entries().into_iter().filter(|e| e["type"] == "compaction").collect();
    // Each compaction's audit said once, after it.
    let audits = notices.iter().filter(|n| is_audit_notice(n)).count();
    assert_eq!(
        audits,
        compactions.len(),
        "Pi {} summarizer {summarizer}: {notices:?}",
        pi.version
    );
    let log: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (w, compactions, log)
}

/// (c): bonsai compacts where Pi alone would: once the whole context (what Pi would send
/// without bonsai) passes T, one compaction per pressure episode, never twice while latched;
/// with `compactEarly` once it reaches red (0.9 × T), before T. With bonsai's offline summary
/// and with Pi's own. Pi's own figure is what bonsai sent: without bonsai's compaction the
/// whole context would pass T unseen.
#[test]
fn early_compaction_fires_once_per_episode_before_pis_threshold() {
    for pi in live_pi::pis("tests::live_pi::early_compaction") {
        for (summarizer, early) in [("offline", false), ("pi", false), ("pi", true)] {
            let (w, compactions, log) = early_compaction_run(&pi, summarizer, early);
            let what = format!("Pi {} summarizer {summarizer}, compactEarly {early}", pi.version);
            let t = 60_000.0 - 16_384.0;
            assert!(
                compactions.len() >= 2,
                "{what}: {} compactions in 70 turns",
                compactions.len()
            );
            for c in &compactions {
                // Appended from the package's draft (Pi's own threshold never came).
                assert_eq!(c["fromHook"], true, "{what}: {c}");
                if summarizer == "pi" {
                    assert!(
                        c["summary"].as_str().unwrap().contains(SUMMARY_MARK),
                        "{what}: not Pi's summary"
                    );
                } else {
                    assert!(c["summary"].as_str().unwrap().starts_with("## Goal"), "{what}");
                }
            }
            if summarizer == "offline" {
                assert!(
                    w.server.requests().iter().all(|b| !is_summary_request(b)),
                    "{what}: the offline summary called the model"
                );
            }
            // The engine's decisions: a fire only from idle, on the whole context past T (or
            // red, early); between two fires a known whole context below that ended the
            // episode.
            let ends: Vec<&Value> = log.iter().filter(|l| l["method"] == "turn_end").collect();
            let mut fired = 0;
            let mut episode_open = false;
            for l in &ends {
                let r = &l["result"];
                let whole = r["whole"].as_f64();
                if r["compact"] == true {
                    assert!(!episode_open, "{what}: a second compaction in one episode");
                    let w = whole.unwrap();
                    if early {
                        assert!(w >= 0.9 * t && w < t, "{what}: compacted at {w}, T {t}");
                    } else {
                        assert!(w > t, "{what}: compacted at {w}, T {t}");
                    }
                    fired += 1;
                    episode_open = true;
                } else if let Some(w) = whole
                    && ((early && r["zone"] != "red") || (!early && w <= t))
                {
                    episode_open = false;
                }
            }
            assert_eq!(
                fired,
                compactions.len(),
                "{what}: every fire is one compaction in the file"
            );
            // Requests after each compaction are what bonsai context --live says.
            assert_requests_are_live(&w, &pi, &format!("{what}, compaction"));
        }
    }
}

/// `off` is Pi alone: the package neither compacts nor changes a request; Pi compacts at
/// its own threshold.
#[test]
fn the_off_policy_leaves_compaction_to_pi() {
    for pi in live_pi::pis("tests::live_pi::off_leaves_compaction_to_pi") {
        let settings = json!({"bonsai": {"live": {"policy": "off", "compactEarly": true}}});
        let w = World::new(60_000, settings, script);
        write_logs(&w);
        let mut rpc = Rpc::start(w.pi(&pi, true));
        for n in 1..=30 {
            rpc.prompt(&prompt(n));
        }
        rpc.quit();
        let compactions: Vec<Value> = w.entries().into_iter().filter(|e| e["type"] == "compaction").collect();
        assert!(
            !compactions.is_empty(),
            "Pi {}: Pi compacted at its threshold",
            pi.version
        );
        assert!(
            compactions.iter().all(|c| c["fromHook"] != true),
            "Pi {}: a compaction not Pi's own",
            pi.version
        );
        assert_requests_pass_through(&w, &pi, "policy off", 0);
    }
}

/// Print mode: the compaction a turn's end asks for is in the file when Pi exits, and every
/// request is what `bonsai context --live` says. Then with the zones policy on, the
/// compaction's summary is sent as Pi wrote it, in Pi's framing, once, with at most one packet
/// beside it.
#[test]
fn print_mode_compacts_before_exit_and_sends_the_live_context() {
    for pi in live_pi::pis("tests::live_pi::print_mode") {
        // The policy off lets the context grow into red.
        let mut settings = json!({"compaction": {"keepRecentTokens": 2000},
            "bonsai": {"live": {"policy": "off", "summarizer": "offline", "steps": {"high": 2000, "low": 1000}}}});
        let w = World::new(24_000, settings.clone(), script);
        write_logs(&w);
        let mut compacted_at = None;
        for n in 1..=8 {
            let o = w.pi(&pi, true).args(["-p", &prompt(n)]).output().unwrap();
            assert!(
                o.status.success(),
                "Pi {} print: {}",
                pi.version,
                String::from_utf8_lossy(&o.stderr)
            );
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!err.contains("bonsai:"), "Pi {}: {err}", pi.version);
            if compacted_at.is_none() && w.entries().iter().any(|e| e["type"] == "compaction") {
                compacted_at = Some(n);
            }
        }
        let n = compacted_at.unwrap_or_else(|| panic!("Pi {}: no early compaction in print mode", pi.version));
        assert!(n < 8, "compacted at run {n}");
        assert_requests_are_live(&w, &pi, "print mode, policy off");
        // Zones on: the summary as written, never folded into the packet.
        settings["bonsai"]["live"]["policy"] = json!("zones");
        w.set_settings(&settings);
        let before = w.server.requests().len();
        let before_chat = requests_with_leaves(&w).len();
        for n in 9..=10 {
            let o = w.pi(&pi, true).args(["-p", &prompt(n)]).output().unwrap();
            assert!(o.status.success());
        }
        let lives = assert_requests_are_live_from(&w, &pi, "print mode, zones", before_chat);
        let summaries: Vec<String> = w
            .entries()
            .into_iter()
            .filter(|e| e["type"] == "compaction")
            .map(|e| e["summary"].as_str().unwrap().to_string())
            .collect();
        for (k, body) in w.server.requests().iter().enumerate().skip(before) {
            let text = body.to_string();
            assert_eq!(
                text.matches("was compacted into the following summary").count(),
                1,
                "request {k}: the summary once, in Pi's framing"
            );
            let sent: Vec<String> = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| fake_openai::content_text(&m["content"]))
                .collect();
            assert!(
                sent.iter().any(|t| summaries.iter().any(|s| t.contains(s.as_str()))),
                "request {k}: the summary as written"
            );
            assert!(
                text.matches("[bonsai: ").count() <= 1,
                "request {k}: at most one packet"
            );
        }
        assert_eq!(lives.len(), 4);
    }
}

/// (e): the engine killed mid-session: the context passes through, one notice, Pi goes on.
/// Also /ctx-status in RPC mode.
#[test]
fn a_killed_engine_passes_the_context_through_with_one_notice() {
    for pi in live_pi::pis("tests::live_pi::killed_engine") {
        // A cache that never holds (its lifetime 0 s): every call may step.
        let settings = json!({"bonsai": {"live": {"steps": {"high": 3000, "low": 1000}, "cacheTtlSeconds": 0}}});
        let w = World::new(200_000, settings, script);
        write_logs(&w);
        let mut rpc = Rpc::start(w.pi(&pi, true));
        for n in 1..=5 {
            rpc.prompt(&prompt(n));
        }
        rpc.command(json!({"type": "prompt", "message": "/ctx-status"}));
        let status = wait_notice(&rpc, "policy zones");
        // The floor: the turn in progress and the two complete ones before it.
        assert!(status.contains("turns sent 3 of 5"), "{status}");
        assert!(status.contains("whole context "), "{status}");
        // The engine words the lines; Pi's own figure comes from the package, labelled.
        assert!(
            status.contains("Pi's figure now ") && !status.contains("Pi's figure now unknown"),
            "{status}"
        );
        assert!(status.contains("tokens of messages (estimate;"), "{status}");
        assert!(status.contains("steps "), "{status}");
        assert!(status.contains("bill so far"), "{status}");
        assert!(status.contains("latch idle"), "{status}");
        let before = requests_with_leaves(&w).len();
        let kids = live_pi::serve_children(rpc.child.id());
        assert_eq!(kids.len(), 1, "one engine per Pi session: {kids:?}");
        unsafe { libc::kill(kids[0] as i32, libc::SIGKILL) };
        // Pi reaps it (and the package hears of it) before the next model call: the death is
        // found between calls, not by a request in flight.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::path::Path::new(&format!("/proc/{}", kids[0])).exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        for n in 6..=10 {
            rpc.prompt(&prompt(n));
        }
        let notices: Vec<String> = rpc
            .notices()
            .into_iter()
            .filter(|n| n.starts_with("bonsai:") && !n.contains("policy zones") && !is_step_notice(n))
            .collect();
        rpc.quit();
        assert_eq!(notices.len(), 1, "Pi {}: {notices:?}", pi.version);
        assert!(
            notices[0].contains("was killed") && notices[0].contains("passed through unchanged"),
            "{}",
            notices[0]
        );
        // Ten turns answered; the requests after the kill are Pi's own context.
        let users = w
            .entries()
            .iter()
            .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
            .count();
        assert_eq!(users, 10);
        assert_requests_pass_through(&w, &pi, "after the engine was killed", before);
    }
}

fn wait_notice(rpc: &Rpc, containing: &str) -> String {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(n) = rpc.notices().into_iter().find(|n| n.contains(containing)) {
            return n;
        }
        assert!(
            std::time::Instant::now() < until,
            "no notice with {containing:?}: {:?}",
            rpc.notices()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `pi install <folder>` loads the package with no `-e` (bonsai found on PATH), and a
/// setting the package cannot use is named with its value, once.
#[test]
fn installed_with_pi_install_and_settings_named_when_unusable() {
    for pi in live_pi::pis("tests::live_pi::pi_install") {
        let settings =
            json!({"bonsai": {"live": {"steps": {"high": 2000, "low": 1000}, "floorTurns": 0, "cacheTtlSeconds": 0}}});
        let w = World::new(200_000, settings, script);
        write_logs(&w);
        let o = w
            .pi_plain(&pi)
            .args(["install"])
            .arg(live_pi::package_dir())
            .output()
            .unwrap();
        assert!(o.status.success(), "pi install: {}", String::from_utf8_lossy(&o.stderr));
        let installed = std::fs::read_to_string(w.agent.join("settings.json")).unwrap();
        assert!(installed.contains("pi-package"), "Pi {}: {installed}", pi.version);
        let path = format!(
            "{}:{}",
            live_pi::bonsai_bin().parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        for n in 1..=3 {
            let o = w
                .pi(&pi, false)
                .env_remove("BONSAI_BIN")
                .env("PATH", &path)
                .args(["-p", &prompt(n)])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let lives = assert_requests_are_live(&w, &pi, "pi install");
        assert_eq!(
            packets(lives.last().unwrap()).len(),
            1,
            "the installed package sends its packet"
        );
        // A policy it cannot use, and a binary that is not there: named, context unchanged.
        let mut s: Value = serde_json::from_str(&installed).unwrap();
        s["bonsai"]["live"]["policy"] = json!("zone");
        w.set_settings(&s);
        let o = w.pi(&pi, false).args(["-p", &prompt(4)]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.matches("bonsai.live.policy is \"zone\"").count(), 1, "{err}");
        s["bonsai"]["binary"] = json!("/nonexistent/bonsai");
        w.set_settings(&s);
        let o = w
            .pi(&pi, false)
            .env_remove("BONSAI_BIN")
            .args(["-p", &prompt(5)])
            .output()
            .unwrap();
        assert!(o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.matches("bonsai.binary is \"/nonexistent/bonsai\"").count(),
            1,
            "{err}"
        );
        assert!(err.contains("passed through unchanged"), "{err}");
    }
}

/// Pi's TUI in tmux: `cmd` (a `World::pi` command) run in the project folder, until Pi's
/// editor and footer show.
/// A cloned repository whose `.pi/settings.json` names its own program as `bonsai.binary`:
/// Pi with `--no-approve`, and in print mode without a flag (which cannot ask), never runs it;
/// the package says once that it was not used. With the folder trusted in Pi's `trust.json`
/// it runs, as the user asked. Pi 0.87.1, 1.5.2 and 1.6.0.
#[test]
fn a_folder_pi_does_not_trust_never_names_the_program() {
    for pi in live_pi::pis_with_newest("tests::live_pi::a_folder_pi_does_not_trust_never_names_the_program") {
        let w = World::new(200_000, json!({}), script);
        write_logs(&w);
        // The repository's program: it leaves a mark, then runs bonsai.
        let marker = w.dir.path().join("ran");
        let evil = w.project.join("tools/bonsai-helper.sh");
        std::fs::create_dir_all(evil.parent().unwrap()).unwrap();
        std::fs::write(
            &evil,
            format!(
                "#!/bin/sh\necho ran >> '{}'\nexec '{}' \"$@\"\n",
                marker.display(),
                live_pi::bonsai_bin().display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(w.project.join(".pi")).unwrap();
        std::fs::write(
            w.project.join(".pi/settings.json"),
            json!({"bonsai": {"binary": evil}}).to_string(),
        )
        .unwrap();
        let path = format!(
            "{}:{}",
            live_pi::bonsai_bin().parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let run = |extra: &[&str], n: usize| {
            w.pi(&pi, true)
                .env_remove("BONSAI_BIN")
                .env("PATH", &path)
                .args(extra)
                .args(["-p", &prompt(n)])
                .output()
                .unwrap()
        };
        for (k, extra) in [vec![], vec!["--no-approve"]].iter().enumerate() {
            let o = run(extra, k + 1);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "Pi {} {extra:?}: {err}", pi.version);
            assert!(
                !marker.exists(),
                "Pi {} {extra:?}: the folder's program ran",
                pi.version
            );
            assert_eq!(
                err.matches("bonsai.binary not used: Pi does not trust this folder")
                    .count(),
                1,
                "Pi {} {extra:?}: {err}",
                pi.version
            );
        }
        // The package still ran bonsai from PATH: its requests are the live policy's.
        assert_requests_are_live(&w, &pi, "an untrusted folder");
        // Trusted in trust.json (as Pi's /trust saves it): the folder's program is the one run.
        let canonical = std::fs::canonicalize(&w.project).unwrap();
        std::fs::write(
            w.agent.join("trust.json"),
            json!({canonical.display().to_string(): true}).to_string(),
        )
        .unwrap();
        let o = run(&[], 3);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            marker.exists(),
            "Pi {}: a trusted folder's program did not run",
            pi.version
        );
    }
}

fn start_pi_tui(t: &common::tmux::Tmux, w: &World, pi: &PiBin, cmd: std::process::Command) {
    let env: Vec<String> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some(format!("{}='{}'", k.to_str()?, v?.to_str()?)))
        .collect();
    let args: Vec<String> = cmd.get_args().map(|a| format!("'{}'", a.to_string_lossy())).collect();
    t.send(&[
        &format!(
            "cd '{}' && env {} '{}' {}; echo EXITED:$?",
            w.project.display(),
            env.join(" "),
            pi.node.display(),
            args.join(" ")
        ),
        "Enter",
    ]);
    // Pi's editor (its border) and footer: the command line echoed above names the model too.
    t.wait_for_all(&["────", "fake-model"]);
}

/// `/bonsai` typed while Pi is working says it waits for the turn to end, and opens bonsai
/// when it has; with the bonsai program missing it says so in the words of the package's
/// notice (not Node's `spawnSync bonsai ENOENT`).
#[test]
fn slash_bonsai_waits_for_the_turn_and_says_when_bonsai_is_missing() {
    for pi in live_pi::pis("tests::live_pi::slash_bonsai_waits") {
        // A request with "slowly" in it is answered after 4 s.
        let w = World::new(200_000, json!({}), |body: &Value| {
            let asks_slowly = body["messages"]
                .as_array()
                .and_then(|m| m.iter().rev().find(|x| x["role"] == "user"))
                .is_some_and(|u| fake_openai::content_text(&u["content"]).contains("slowly"));
            if asks_slowly && body["messages"].as_array().unwrap().last().unwrap()["role"] == "user" {
                std::thread::sleep(std::time::Duration::from_secs(4));
            }
            script(body)
        });
        write_logs(&w);
        let o = w.pi(&pi, true).args(["-p", &prompt(1)]).output().unwrap();
        assert!(o.status.success());
        let Some(t) = common::tmux::Tmux::start(120, 40) else {
            return;
        };
        start_pi_tui(&t, &w, &pi, w.pi(&pi, true));
        t.send(&["Step 2: slowly check data/part-02.log"]);
        t.wait_for("slowly check");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        // The request is out and the model is slow to answer.
        t.wait_for("Working");
        t.send(&["/bonsai"]);
        t.wait_for("/bonsai");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        t.wait_for("the tree opens when this turn ends");
        // The turn ended, then bonsai took the terminal on the session.
        t.wait_for_all(&["q quit", "Step 2"]);
        t.send(&["q"]);
        t.wait_for("────");
        t.send(&["C-c"]);
        t.send(&["C-c"]);
        t.wait_for("EXITED:");
        // No bonsai program: the package says so, once, and /bonsai says the same.
        t.send(&["clear", "Enter"]);
        start_pi_tui(&t, &w, &pi, {
            let mut c = w.pi(&pi, true);
            c.env("BONSAI_BIN", "/nonexistent/bonsai");
            c
        });
        t.send(&["/bonsai"]);
        t.wait_for("/bonsai");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        let screen = t.wait_for("bonsai: the bonsai program /nonexistent/bonsai was not found (BONSAI_BIN names it)");
        assert!(!screen.contains("ENOENT"), "{screen}");
        t.send(&["C-c"]);
        t.send(&["C-c"]);
    }
}

/// `/bonsai` in Pi's own terminal UI (tmux): bonsai takes the terminal on the session, a label
/// is written there, bonsai quits, Pi reloads the session: its `/tree` shows the label and its
/// next entry hangs off the leaf bonsai left. bonsai knew Pi was waiting (no "Pi seems to be
/// running" after writing to a file Pi wrote a moment before).
#[test]
fn slash_bonsai_in_pis_tui_labels_and_pi_goes_on_from_bonsais_leaf() {
    let Some(pis) = Some(live_pi::pis("tests::live_pi::slash_bonsai")) else {
        return;
    };
    for pi in pis {
        let w = World::new(200_000, json!({}), script);
        write_logs(&w);
        for n in 1..=2 {
            let o = w.pi(&pi, true).args(["-p", &prompt(n)]).output().unwrap();
            assert!(o.status.success());
        }
        let Some(t) = common::tmux::Tmux::start(120, 40) else {
            return;
        };
        start_pi_tui(&t, &w, &pi, w.pi(&pi, true));
        std::thread::sleep(std::time::Duration::from_millis(500));
        t.send(&["/bonsai"]);
        // Pi's editor shows the command (and its completion) before Enter runs it.
        t.wait_for("/bonsai");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        // bonsai's tree, its hint bar.
        t.wait_for_all(&["q quit", "Step 2"]);
        t.send(&["L"]);
        t.wait_for("Label (empty to remove)");
        t.send(&["from-bonsai", "Enter"]);
        let screen = t.wait_for("wrote a label");
        assert!(!screen.contains("Pi seems to be running"), "{screen}");
        t.send(&["q"]);
        t.wait_for("Resumed session");
        t.send(&["/tree"]);
        t.wait_for("/tree");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        let tree = t.wait_for("[from-bonsai]");
        assert!(tree.contains("[from-bonsai] assistant:"), "{tree}");
        // Typed before Pi has closed its /tree, the words would be its search.
        t.escape_closing("Type to search:");
        t.send(&["Step 3: after bonsai"]);
        t.wait_for("Step 3: after bonsai");
        t.send(&["Enter"]);
        let label_id = {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
            loop {
                let e = w.entries();
                let label = e.iter().find(|x| x["type"] == "label").map(|x| x["id"].clone());
                let answered = e.iter().any(|x| {
                    x["type"] == "message"
                        && fake_openai::content_text(&x["message"]["content"]).contains("after bonsai")
                });
                if let (Some(l), true) = (label, answered) {
                    break l;
                }
                assert!(
                    std::time::Instant::now() < until,
                    "Pi {}: no new user message after /bonsai",
                    pi.version
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        };
        let user = w
            .entries()
            .into_iter()
            .find(|x| {
                x["type"] == "message" && fake_openai::content_text(&x["message"]["content"]).contains("after bonsai")
            })
            .unwrap();
        assert_eq!(
            user["parentId"], label_id,
            "Pi {}: the next entry hangs off bonsai's leaf",
            pi.version
        );
        t.send(&["C-c"]);
        t.send(&["C-c"]);
    }
}

/// A missing, too old or too slow engine: Pi's context passes through unchanged, the user is
/// told once why (print mode: on stderr), and Pi answers.
#[test]
fn a_missing_old_or_slow_engine_is_said_once_and_passed_through() {
    for pi in live_pi::pis("tests::live_pi::failing_engine") {
        let settings = json!({"bonsai": {"live": {"timeoutMs": 300, "steps": {"high": 2000, "low": 1000}}}});
        let w = World::new(200_000, settings, script);
        write_logs(&w);
        let bin = w.dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = |name: &str, body: &str| {
            let p = bin.join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
            p
        };
        let old = fake("old", "echo \"error: unrecognized subcommand 'serve'\" >&2; exit 2");
        let slow = fake(
            "slow",
            r#"read line; echo '{"id":1,"result":{"protocol":1,"engine":"bonsai slow","settings":{"summarizer":"pi"},"problems":[]}}'; exec sleep 30"#,
        );
        let cases = [
            (
                PathBuf::from("/nonexistent/bonsai"),
                "the bonsai program /nonexistent/bonsai was not found",
            ),
            (old, "is too old: it has no `serve` command"),
            (slow, "context took over 300 ms"),
        ];
        for (k, (binary, said)) in cases.iter().enumerate() {
            let before = requests_with_leaves(&w).len();
            let o = w
                .pi(&pi, true)
                .env("BONSAI_BIN", binary)
                .args(["-p", &prompt(k + 1)])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "Pi {}: {err}", pi.version);
            let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("bonsai:")).collect();
            assert_eq!(lines.len(), 1, "Pi {} {}: {err}", pi.version, binary.display());
            assert!(
                lines[0].contains(said) && lines[0].contains("passed through unchanged"),
                "{}",
                lines[0]
            );
            // Pi's own context went out.
            assert_requests_pass_through(&w, &pi, &binary.display().to_string(), before);
        }
        // `/bonsai` in print mode says it needs Pi's terminal UI, and Pi exits non-zero.
        let o = w.pi(&pi, true).args(["-p", "/bonsai"]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "Pi {}: pi -p /bonsai exited 0", pi.version);
        assert!(err.contains("/bonsai needs Pi's terminal UI"), "{err}");
    }
}

/// Pi's own compaction (`/compact`, here the RPC command) with `bonsai.live.summarizer` set:
/// Pi's `session_before_compact` hook gets bonsai's summary, offline (no model call) or from
/// one of bonsai's strategies on the session's model.
#[test]
fn pis_own_compaction_takes_bonsais_summary_through_the_hook() {
    for pi in live_pi::pis("tests::live_pi::compaction_hook") {
        for summarizer in ["offline", "single-shot"] {
            let settings = json!({"compaction": {"keepRecentTokens": 2000},
                "bonsai": {"live": {"policy": "off", "summarizer": summarizer}}});
            let w = World::new(200_000, settings, script);
            write_logs(&w);
            let mut rpc = Rpc::start(w.pi(&pi, true));
            for n in 1..=6 {
                rpc.prompt(&prompt(n));
            }
            rpc.command(json!({"type": "compact"}));
            // After Pi's compaction: one line on what its summary lost, kept by /ctx-status.
            let audit = wait_notice(&rpc, "bonsai: the compaction ");
            rpc.command(json!({"type": "prompt", "message": "/ctx-status"}));
            let status = wait_notice(&rpc, "policy off");
            let notices = rpc.notices();
            rpc.quit();
            let what = format!("Pi {} summarizer {summarizer}", pi.version);
            assert!(is_audit_notice(&audit), "{what}: {audit}");
            assert!(
                status.contains(&format!(
                    "last compaction: {}",
                    audit.trim_start_matches("bonsai: the compaction ")
                )),
                "{what}: {status}"
            );
            let said: Vec<&String> = notices.iter().filter(|n| n.starts_with("bonsai:")).collect();
            assert_eq!(said, [&audit], "{what}: only the audit is said");
            let c: Vec<Value> = w.entries().into_iter().filter(|e| e["type"] == "compaction").collect();
            assert_eq!(c.len(), 1, "{what}");
            assert_eq!(c[0]["fromHook"], true, "{what}: {}", c[0]);
            let text = c[0]["summary"].as_str().unwrap();
            let summary_calls: Vec<Value> = w.server.requests().into_iter().filter(is_summary_request).collect();
            if summarizer == "offline" {
                assert!(
                    text.starts_with("## Goal") && summary_calls.is_empty(),
                    "{what}: {text}"
                );
            } else {
                assert!(text.contains(SUMMARY_MARK), "{what}: {text}");
                // One call for the history, one for a split turn's prefix.
                assert!(
                    (1..=2).contains(&summary_calls.len()),
                    "{what}: {} calls",
                    summary_calls.len()
                );
                // bonsai's words, not Pi's summarizer prompt.
                assert!(
                    summary_calls
                        .iter()
                        .all(|c| !c.to_string().contains("context summarization assistant")),
                    "{what}"
                );
            }
            assert!(text.contains("<read-files>") || text.contains("## Goal"), "{what}");
        }
    }
}

/// Pi's own compaction (`/compact`) with the `zones` policy and Pi's summarizer: the package
/// makes Pi's summary in Pi's hook (Pi's `compact`, Pi's prompt) and the engine mends it
/// before Pi writes it; its line is said once.
#[test]
fn pis_own_compaction_is_mended_before_pi_writes_it() {
    for pi in live_pi::pis("tests::live_pi::pis_own_compaction_is_mended") {
        let settings = json!({"compaction": {"keepRecentTokens": 2000}});
        let w = World::new(200_000, settings, script);
        write_logs(&w);
        let mut rpc = Rpc::start(w.pi(&pi, true));
        for n in 1..=6 {
            rpc.prompt(&prompt(n));
        }
        rpc.command(json!({"type": "compact"}));
        let line = wait_notice(&rpc, "bonsai: the compaction ");
        let notices = rpc.notices();
        rpc.quit();
        let what = format!("Pi {}", pi.version);
        assert!(line.contains("given back word for word"), "{what}: {line}");
        let said = notices
            .iter()
            .filter(|n| n.starts_with("bonsai: the compaction "))
            .count();
        assert_eq!(said, 1, "{what}: {notices:?}");
        let c: Vec<Value> = w.entries().into_iter().filter(|e| e["type"] == "compaction").collect();
        assert_eq!(c.len(), 1, "{what}");
        assert_eq!(c[0]["fromHook"], true, "{what}: {}", c[0]);
        let text = c[0]["summary"].as_str().unwrap();
        // Pi's summary (its prompt: the fake model's mark), then what it lost, word for word.
        assert!(text.contains(SUMMARY_MARK), "{what}: {text}");
        assert!(text.contains("## Specifics"), "{what}: {text}");
        assert!(text.contains("`cat data/part-01.log` (ok)"), "{what}: {text}");
        let calls: Vec<Value> = w.server.requests().into_iter().filter(is_summary_request).collect();
        assert!(
            calls
                .iter()
                .all(|c| c.to_string().contains("context summarization assistant")),
            "{what}: Pi's own summarizer prompt"
        );
    }
}

/// The bill matrix for BENCHMARKS.md (`scripts/bench-live-bill.sh`): 60 and 200 turns, Pi
/// alone and each policy, priced as Anthropic's and with no cache discount, as Pi records it
/// (summary calls included), with the tokens sent at the last turn. Minutes per Pi version:
/// not part of the test run.
#[test]
#[ignore]
fn bill_matrix() {
    for pi in live_pi::pis("tests::live_pi::bill_matrix") {
        for turns in [60, 200] {
            for (priced, prices) in [("caching", live_pi::CACHING), ("no discount", live_pi::NO_DISCOUNT)] {
                let alone = run_policy(&pi, turns, None, prices);
                let compactions = |r: &Run| r.world.entries().iter().filter(|e| e["type"] == "compaction").count();
                println!(
                    "BILL pi={} turns={turns} prices={priced} policy=alone bill={:.4} ratio=1.000 last={} sent_ratio=1.000 compactions={} steps=0",
                    pi.version,
                    alone.bill,
                    alone.tokens.last().unwrap(),
                    compactions(&alone)
                );
                for policy in ["zones", "output"] {
                    let r = run_policy(&pi, turns, Some(policy), prices);
                    println!(
                        "BILL pi={} turns={turns} prices={priced} policy={policy} bill={:.4} ratio={:.3} last={} sent_ratio={:.3} compactions={} steps={}",
                        pi.version,
                        r.bill,
                        r.bill / alone.bill,
                        r.tokens.last().unwrap(),
                        *r.tokens.last().unwrap() as f64 / *alone.tokens.last().unwrap() as f64,
                        compactions(&r),
                        r.steps_noticed
                    );
                }
            }
        }
    }
}

/// Pi's TUI renders a reply's bold and italic, with bonsai's package loaded, both as Pi's
/// bundle (`pi`) and as its modules (`dist/cli.js`).
/// The modules import pi-tui and marked from the install, where Pi 1.5.2 has a stand-in for
/// `marked-cjk-friendly`. One without an `emStrong` tokenizer crashed Pi's TUI on the first
/// emphasis ("Cannot read properties of undefined (reading 'apply')").
#[test]
fn pis_tui_renders_a_reply_with_bold_and_italic() {
    let bins = live_pi::pis("tests::live_pi::pis_tui_renders_a_reply_with_bold_and_italic");
    let modules = bins.iter().map(|p| live_pi::PiBin {
        version: p.version,
        node: p.node.clone(),
        cli: p.cli.parent().and_then(|b| b.parent()).unwrap().join("cli.js"),
    });
    let modules: Vec<_> = modules.collect();
    for pi in bins.into_iter().chain(modules) {
        let w = World::new(200_000, json!({}), |_: &Value| {
            fake_openai::Reply::Text("Here are **strong words** and *leaning words* at last.".into())
        });
        let Some(t) = common::tmux::Tmux::start(120, 40) else {
            return;
        };
        start_pi_tui(&t, &w, &pi, w.pi(&pi, true));
        t.send(&["say it with emphasis"]);
        t.wait_for("say it with emphasis");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        let screen = t.wait_for("leaning words at last");
        assert!(
            screen.contains("Here are strong words and leaning words at last."),
            "Pi {} ({}): the emphasis is drawn, not its asterisks:\n{screen}",
            pi.version,
            pi.cli.display()
        );
        assert!(
            !screen.contains("Cannot read properties"),
            "Pi {}:\n{screen}",
            pi.version
        );
        t.send(&["C-c"]);
        t.send(&["C-c"]);
        t.wait_for("EXITED:");
    }
}

/// Issue 46: lost specifics given back with `bonsai audit --give-back` reach the model from
/// Pi's next call (real Pi, print mode, no package), and `bonsai undo` right after the
/// amendment takes them back: the next request starts with the messages of the one before.
#[test]
fn given_back_specifics_reach_the_model_and_undo_takes_them_back() {
    for pi in live_pi::pis("tests::live_pi::given_back") {
        let w = World::new(200_000, json!({}), |_| Reply::Text("Noted.".into()));
        let planted = common::synth::planted_session(w.project.to_str().unwrap());
        std::fs::write(&w.session, &planted.text).unwrap();
        let ask = |text: &str| -> Value {
            let o = w.pi(&pi, false).args(["-p", text]).output().unwrap();
            assert!(
                o.status.success(),
                "Pi {}: {}",
                pi.version,
                String::from_utf8_lossy(&o.stderr)
            );
            w.server.requests().last().unwrap().clone()
        };
        let texts = |body: &Value| -> String {
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| fake_openai::content_text(&m["content"]))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let items = [
            "config/currencies.toml",
            "`git stash list` (ok)",
            "ACCT-77812",
            "6433",
            "Never round amounts",
        ];
        let first = ask("first");
        for i in items {
            assert!(!texts(&first).contains(i), "Pi {}: {i} was lost", pi.version);
        }
        let o = w
            .bonsai()
            .args(["audit"])
            .arg(&w.session)
            .args(["--give-back", "all", "--yes"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // Undo is refused once Pi has written: the amended file is kept to undo on it after.
        let amended = std::fs::read(&w.session).unwrap();
        let second = ask("second");
        for i in items {
            assert!(
                texts(&second).contains(i),
                "Pi {}: {i} given back to the model",
                pi.version
            );
        }
        std::fs::write(&w.session, &amended).unwrap();
        let o = w
            .bonsai()
            .args(["undo"])
            .arg(&w.session)
            .args(["--yes"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let third = ask("third");
        for i in items {
            assert!(
                !texts(&third).contains(i),
                "Pi {}: {i} gone again after undo",
                pi.version
            );
        }
        let (a, c) = (
            first["messages"].as_array().unwrap(),
            third["messages"].as_array().unwrap(),
        );
        assert_eq!(
            &c[..a.len()],
            &a[..],
            "Pi {}: the context before the amendment, unchanged",
            pi.version
        );
    }
}

/// This world's project folder in Pi's sessions folder (Pi's naming: `--` the cwd's path
/// with `/` as `-` `--`).
fn project_sessions(w: &World) -> PathBuf {
    let cwd = w.project.to_string_lossy().to_string();
    let dir = w.agent.join("sessions").join(format!(
        "--{}--",
        cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Wait until the session file holds `text` (Pi wrote the prompt and its answer).
fn wait_for_text(f: &Path, text: &str, pi: &PiBin) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(f).unwrap_or_default().contains(text) {
        assert!(
            std::time::Instant::now() < until,
            "Pi {}: {text:?} never reached {}",
            pi.version,
            f.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// In bonsai's picker (outside Pi), P runs real Pi on the selected session from the
/// session's folder (Pi from `bonsai.piCommand`); the next prompt lands in that file, and
/// when Pi exits bonsai is back, its keys work, and after it quits the terminal is as the
/// shell had it (canonical mode and echo on).
#[test]
fn p_in_the_picker_resumes_the_session_in_real_pi_and_comes_back() {
    for pi in live_pi::pis("tests::live_pi::p_in_the_picker") {
        let settings = json!({"bonsai": {"piCommand": [pi.node, pi.cli, "--offline", "--model", "fakeco/fake-model"]}});
        let w = World::new(200_000, settings, script);
        write_logs(&w);
        let file = project_sessions(&w).join("2026-11-29T10-00-00-000Z_picker.jsonl");
        let o = w.pi_on(&pi, &file, false).args(["-p", &prompt(1)]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let entries_before = std::fs::read_to_string(&file).unwrap().lines().count();
        let Some(t) = common::tmux::Tmux::start(120, 40) else {
            return;
        };
        t.send(&[
            &format!(
                "cd /tmp && env PI_CODING_AGENT_DIR='{}' HOME='{}' '{}' '{}'; echo EXITED:$?",
                w.agent.display(),
                w.dir.path().display(),
                live_pi::bonsai_bin().display(),
                w.agent.join("sessions").display()
            ),
            "Enter",
        ]);
        // The picker: the project unfolded, the session's row (bonsai's title of its first
        // request) selected.
        t.wait_for("~/project  1 session");
        t.send(&["l"]);
        t.wait_for_all(&["~ Step 1: check data/part", "P resume it in Pi"]);
        t.send(&["j"]);
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["P"]);
        // Pi's own TUI on the file.
        t.wait_for_all(&["────", "fake-model"]);
        t.send(&["Step 3: resumed from bonsai's picker"]);
        t.wait_for("resumed from bonsai");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        wait_for_text(&file, "resumed from bonsai's picker", &pi);
        // The answer too (Pi's turn ended): then Pi is left.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::fs::read_to_string(&file).unwrap().lines().count() < entries_before + 4 {
            assert!(std::time::Instant::now() < until, "Pi {}: no answer", pi.version);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        t.send(&["C-c"]);
        t.send(&["C-c"]);
        // bonsai is back, says how Pi ended, and lists the session grown.
        let back = t.wait_for("Pi exited; back in bonsai");
        assert!(back.contains("~ Step 1"), "Pi {}: {back}", pi.version);
        // The listing read again: the session has the new entries.
        let entries_now = std::fs::read_to_string(&file).unwrap().lines().count() - 1;
        t.wait_for(&format!(" {entries_now}  "));
        // Its keys work: the filter opens.
        t.send(&["/"]);
        t.wait_for("keep the filter");
        t.send(&["Escape"]);
        std::thread::sleep(std::time::Duration::from_millis(300));
        t.send(&["q"]);
        t.wait_for("EXITED:0");
        t.send(&[
            "clear; stty -a | tr ' ' '\\n' | grep -x -e '-\\?icanon' -e '-\\?echo'",
            "Enter",
        ]);
        let stty = t.wait_for("icanon");
        let lines: Vec<&str> = stty.lines().map(str::trim).collect();
        assert!(
            lines.contains(&"icanon") && lines.contains(&"echo"),
            "Pi {}: the terminal after bonsai: {stty}",
            pi.version
        );
        // The new prompt hangs off the session's old leaf: Pi resumed, not started anew.
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().filter(|l| l.contains("\"type\":\"session\"")).count(), 1);
    }
}

/// Inside Pi, `/bonsai`, then `o` and P on another session: the running Pi switches to it with
/// its own session switching (no second Pi), and the next prompt lands in that file.
#[test]
fn p_inside_pi_switches_the_running_pi_to_the_session_chosen() {
    for pi in live_pi::pis("tests::live_pi::p_inside_pi") {
        let w = World::new(200_000, json!({}), script);
        write_logs(&w);
        let dir = project_sessions(&w);
        let first = dir.join("2026-11-29T10-00-00-000Z_first.jsonl");
        let other = dir.join("2026-11-29T11-00-00-000Z_other.jsonl");
        for (f, n) in [(&other, 5), (&first, 1)] {
            let o = w.pi_on(&pi, f, false).args(["-p", &prompt(n)]).output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        let Some(t) = common::tmux::Tmux::start(120, 40) else {
            return;
        };
        start_pi_tui(&t, &w, &pi, w.pi_on(&pi, &first, true));
        std::thread::sleep(std::time::Duration::from_millis(500));
        t.send(&["/bonsai"]);
        t.wait_for("/bonsai");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        t.wait_for_all(&["q quit", "Step 1"]);
        t.send(&["o"]);
        t.wait_for("~ Step 5: check data/part-0");
        // The filter picks the other session; P hands it to this Pi.
        t.send(&["/"]);
        t.wait_for("keep the filter");
        t.send(&["part-05", "Enter"]);
        std::thread::sleep(std::time::Duration::from_millis(300));
        t.send(&["P"]);
        t.wait_for_all(&["────", "fake-model"]);
        std::thread::sleep(std::time::Duration::from_millis(500));
        t.send(&["Step 9: after switching"]);
        t.wait_for("after switching");
        std::thread::sleep(std::time::Duration::from_millis(200));
        t.send(&["Enter"]);
        wait_for_text(&other, "Step 9: after switching", &pi);
        assert!(
            !std::fs::read_to_string(&first).unwrap().contains("after switching"),
            "Pi {}: the prompt went to the session left",
            pi.version
        );
        t.send(&["C-c"]);
        t.send(&["C-c"]);
        t.wait_for("EXITED:");
    }
}
