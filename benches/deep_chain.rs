//! A session that is one chain of 100,000 or 200,000 entries (no branch): what
//! `bonsai compact --dry-run` does after the load (the cut, the offline summary). Issue 22 found
//! it quadratic (9.8 s at 100,000); the figures at both sizes show it linear.
//!
//!     cargo bench --bench deep_chain

use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::load::session::Session;
use std::sync::OnceLock;

fn main() {
    for n in SIZES {
        chain(n);
    }
    divan::main();
}

const SIZES: [usize; 2] = [100_000, 200_000];

/// Alternating user and assistant messages, each the child of the one before.
fn chain(n: usize) -> &'static Session {
    static CACHE: OnceLock<std::sync::Mutex<Vec<(usize, &'static Session)>>> = OnceLock::new();
    let mut c = CACHE.get_or_init(Default::default).lock().unwrap();
    if let Some((_, s)) = c.iter().find(|(m, _)| *m == n) {
        return s;
    }
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"deep","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}"#,
    );
    text.push('\n');
    for k in 0..n {
        let parent = if k == 0 {
            "null".to_string()
        } else {
            format!("\"e{:07}\"", k - 1)
        };
        let message = if k % 2 == 0 {
            format!(r#"{{"role":"user","content":"question {k} about the importer","timestamp":{k}}}"#)
        } else {
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"answer {k} with some words"}}],"usage":{{"input":10,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":20}},"stopReason":"stop","timestamp":{k}}}"#
            )
        };
        text.push_str(&format!(
            r#"{{"type":"message","id":"e{k:07}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        ));
        text.push('\n');
    }
    let s: &'static Session = Box::leak(Box::new(Session::from_bytes(text.into_bytes()).unwrap()));
    c.push((n, s));
    s
}

#[divan::bench(args = SIZES, sample_count = 5)]
fn compact_offline_summary(n: usize) -> usize {
    let s = chain(n);
    let settings = CompactionSettings {
        reserve_tokens: 16384,
        keep_recent_tokens: 20000,
    };
    let plan = cut::prepare(s, s.leaf().unwrap(), settings).unwrap();
    bonsai::engine::compaction::offline::compaction_summary(s, &plan, None)
        .text
        .len()
}
