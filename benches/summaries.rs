//! Summary strategies on the reference session (`common::reference_file`, 100 MB), compacted
//! at keepRecentTokens 2000 (a range of ~2.1M history tokens): issue 11's targets.
//!
//!     cargo bench --bench summaries
//!
//! - `compare_offline`: what `bonsai compare --strategies offline` does after the load — the
//!   cut, the summary input (every message materialized and serialized), the facts, the offline
//!   summary and its score (target ≤ 1 s as a whole process; the load is in `benches/load.rs`).
//! - `slice_1m_tokens`: slicing the first 1M tokens of that range (target ≤ 50 ms).
//! - `audit_path`: the audit of every compaction and branch summary on the leaf's path
//!   (issue 46's target: ≤ 1 s after the load).
//! - `summary_input`: materializing and serializing the whole range (what slicing needs first).

use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::compaction::slices::{self, SliceParams, Unit};
use bonsai::engine::compaction::strategy;
use bonsai::engine::compaction::summary::SummaryInput;
use bonsai::engine::load::session::Session;
use std::sync::OnceLock;

#[path = "common.rs"]
mod common;

fn main() {
    session();
    units_1m();
    divan::main();
}

fn session() -> &'static Session {
    static S: OnceLock<Session> = OnceLock::new();
    S.get_or_init(|| bonsai::store::load_session(&common::reference_file(100)).unwrap())
}

fn settings() -> CompactionSettings {
    CompactionSettings {
        reserve_tokens: 16384,
        keep_recent_tokens: 2000,
    }
}

/// The range's first messages up to 1M serialized tokens.
fn units_1m() -> &'static [Unit] {
    static U: OnceLock<Vec<Unit>> = OnceLock::new();
    U.get_or_init(|| {
        let s = session();
        let plan = cut::prepare(s, s.leaf().unwrap(), settings()).unwrap();
        let input = SummaryInput::of_plan(s, &plan);
        let mut sum = 0;
        let units: Vec<Unit> = input
            .units
            .iter()
            .take_while(|u| {
                sum += u.tokens;
                sum <= 1_000_000
            })
            .copied()
            .collect();
        assert!(sum > 1_000_000, "the range holds more than 1M tokens");
        units
    })
}

#[divan::bench(sample_count = 10)]
fn compare_offline() -> f64 {
    let s = session();
    let plan = cut::prepare(s, s.leaf().unwrap(), settings()).unwrap();
    let input = SummaryInput::of_plan(s, &plan);
    let range = bonsai::engine::compaction::recall::Range::of_input(s, &plan, &input);
    let text = strategy::offline(s, &plan, &input, None);
    range.score(&text).overall
}

#[divan::bench(sample_count = 10)]
fn audit_path() -> usize {
    use bonsai::engine::compaction::audit;
    let s = session();
    audit::audit_all(s, &audit::summaries_on_path(s, s.leaf().unwrap()))
        .iter()
        .map(|a| a.items.len())
        .sum()
}

#[divan::bench(sample_count = 20)]
fn slice_1m_tokens() -> usize {
    slices::slice(units_1m(), &SliceParams::default()).len()
}

#[divan::bench(sample_count = 10)]
fn summary_input() -> usize {
    let s = session();
    let plan = cut::prepare(s, s.leaf().unwrap(), settings()).unwrap();
    SummaryInput::of_plan(s, &plan).history.len()
}
