//! The live policy as the Pi package's `context` hook runs it, on Pi's messages of 100,
//! 1,000 and 10,000 (a coding session's shape: a request, a tool call, ~2 KB of its output,
//! an answer): the request line parsed; the next call's answer with the state kept from the
//! call before (what `bonsai serve` does on every call); the answer from nothing, every
//! recorded call replayed (what `bonsai context --live` and `bonsai bill` do); the packet
//! alone; the output policy from nothing. The whole hook from the extension's side (JSON over
//! the pipe included) is `scripts/bench-live-hook.mjs`.
//!
//!     cargo bench --bench live

use bonsai::engine::live::{self, CallEnv, LiveSettings, LiveState, Prices, ValueSource};
use serde_json::{Value, json};

fn main() {
    divan::main();
}

fn session(n: usize) -> Vec<Value> {
    let line = "2026-11-25T10:00:00Z INFO  ledger.import row=1234 account=acct-7 amount=812.40 currency=EUR\n";
    let mut out = Vec::new();
    let mut t = 0;
    while out.len() < n {
        let ts = 1_795_000_000_000i64 + t * 60_000;
        out.push(json!({"role": "user", "content": [{"type": "text", "text": format!("Turn {t}: check data/part-{}.csv against logs/import-{}.log and fix `parse_row`.", t % 12, t % 12)}], "timestamp": ts}));
        out.push(json!({"role": "assistant", "content": [{"type": "toolCall", "id": format!("call_{t}"), "name": "bash", "arguments": {"command": format!("grep -c WARN logs/import-{}.log", t % 12)}}],
            "usage": {"input": 1000, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1020}, "stopReason": "toolUse", "timestamp": ts + 1}));
        out.push(json!({"role": "toolResult", "toolCallId": format!("call_{t}"), "toolName": "bash", "content": [{"type": "text", "text": line.repeat(22)}], "isError": false, "timestamp": ts + 2}));
        out.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("Part {}: 22 rows checked; we decided to keep `parse_row` and add a test.", t % 12)}],
            "usage": {"input": 1100, "output": 30, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1130}, "stopReason": "stop", "timestamp": ts + 3}));
        t += 1;
    }
    out.truncate(n);
    out
}

const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// Anthropic's prices: the policy steps when it pays.
const PRICES: Prices = Prices {
    input: 3.0,
    output: 15.0,
    cache_read: 0.3,
    cache_write: 3.75,
};

fn env() -> CallEnv {
    CallEnv {
        context_window: 200_000,
        reserve_tokens: 16_384,
        prices: Some(PRICES),
    }
}

fn prices_of(_: &str, _: &str) -> Option<Prices> {
    Some(PRICES)
}

#[divan::bench(args = SIZES, sample_count = 30)]
fn parse_request(b: divan::Bencher, n: usize) {
    let line = json!({"id": 1, "method": "context", "params": {"messages": session(n), "usage": {"tokens": 20000, "contextWindow": 200000}}}).to_string();
    b.bench(|| serde_json::from_str::<Value>(divan::black_box(&line)).unwrap());
}

/// What `bonsai serve` does with the line: read straight into the protocol's types.
#[divan::bench(args = SIZES, sample_count = 30)]
fn read_request(b: divan::Bencher, n: usize) {
    let line = json!({"id": 1, "method": "context", "params": {"messages": session(n), "usage": {"tokens": 20000, "contextWindow": 200000}}}).to_string();
    b.bench(|| {
        bonsai::serve::protocol::Incoming::read(divan::black_box(&line), 1)
            .request
            .is_ok()
    });
}

/// The next call with the state kept from the call before: the package's every call.
#[divan::bench(args = SIZES, sample_count = 30)]
fn zones_next_call(b: divan::Bencher, n: usize) {
    let msgs = session(n);
    let s = LiveSettings::default();
    // The call before was answered at a tool call (its context ends at the request before
    // it); this call comes after the call's result, as Pi makes them.
    let mut kept = LiveState::default();
    kept.answer(&ValueSource::new(&msgs[..n - 3], &prices_of), &env(), &s);
    b.with_inputs(|| kept.clone()).bench_local_values(|mut st| {
        st.answer(
            &ValueSource::new(divan::black_box(&msgs[..n - 1]), &prices_of),
            &env(),
            &s,
        )
    });
}

/// The answer from nothing: every call the messages record replayed first.
#[divan::bench(args = SIZES, sample_count = 10)]
fn zones_from_nothing(b: divan::Bencher, n: usize) {
    let msgs = session(n);
    let s = LiveSettings::default();
    b.bench(|| live::live_context(divan::black_box(&msgs), &env(), &s, &prices_of));
}

#[divan::bench(args = SIZES, sample_count = 30)]
fn packet_only(b: divan::Bencher, n: usize) {
    let msgs = session(n);
    b.bench(|| live::packet_text(divan::black_box(&msgs), n / 4, 100_000, 1_000, true));
}

#[divan::bench(args = SIZES, sample_count = 10)]
fn output_from_nothing(b: divan::Bencher, n: usize) {
    let msgs = session(n);
    let s = LiveSettings {
        policy: live::LivePolicy::Output { compat: false },
        ..LiveSettings::default()
    };
    b.bench(|| live::live_context(divan::black_box(&msgs), &env(), &s, &prices_of));
}
