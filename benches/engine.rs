//! Engine benchmarks on synthetic sessions made at bench time by
//! `../shared/tools/gen_session.py` (never committed; cached under target/bench-data).
//!
//!     cargo bench --bench engine                       # 1, 10, 100, 500 MB
//!     BONSAI_BENCH_SIZES=1,10,100,500,1500 cargo bench --bench engine
//!
//! Loading is timed in `benches/load.rs`, a binary of its own, so no cached session sits in
//! memory while it runs. `scripts/bench.sh` runs this, measures peak RSS of the CLI and times Pi on the same files.

use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::load::session::Session;
use bonsai::engine::view::context;
use bonsai::engine::view::tree;
use bonsai::engine::view::tree_view;
use std::sync::OnceLock;

#[path = "common.rs"]
mod common;
use common::session_file;

fn main() {
    // Load every size before timing, so no sample pays for generation or the first load.
    for mb in sizes() {
        loaded(mb);
    }
    divan::main();
}

fn sizes() -> Vec<usize> {
    common::sizes_or("1,10,100,500")
}

fn loaded(mb: usize) -> &'static Session {
    static CACHE: OnceLock<std::sync::Mutex<Vec<(usize, &'static Session)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut c = cache.lock().unwrap();
    if let Some((_, s)) = c.iter().find(|(m, _)| *m == mb) {
        return s;
    }
    let s: &'static Session = Box::leak(Box::new(bonsai::store::load_session(&session_file(mb)).unwrap()));
    c.push((mb, s));
    s
}

#[divan::bench(args = sizes(), sample_count = 10)]
fn path(mb: usize) -> usize {
    let s = loaded(mb);
    s.path_to(s.leaf().unwrap()).len()
}

#[divan::bench(args = sizes(), sample_count = 10)]
fn context_projection(mb: usize) -> usize {
    let s = loaded(mb);
    context::project(s, &s.path_to(s.leaf().unwrap())).message_count()
}

#[divan::bench(args = sizes(), sample_count = 10)]
fn cut_point(mb: usize) -> usize {
    let s = loaded(mb);
    cut::prepare(s, s.leaf().unwrap(), CompactionSettings::default())
        .unwrap()
        .first_kept_entry
}

#[divan::bench(args = sizes(), sample_count = 10)]
fn tree_and_view(mb: usize) -> usize {
    let s = loaded(mb);
    let t = tree::Tree::build(s);
    let v = tree_view::TreeView::new(s, &t, s.leaf(), tree_view::FilterMode::Default, 0);
    v.visible.len()
}

/// The pruning preview's plan at the leaf (issue target: ≤ 50 ms at 100 MB). Output policy
/// with a small budget, so it walks and decides on every tool result of the context.
#[divan::bench(args = sizes(), sample_count = 10)]
fn prune_plan_output(mb: usize) -> usize {
    let s = loaded(mb);
    let settings = bonsai::engine::edit::prune::PruneSettings {
        protect: 2_000,
        ..Default::default()
    };
    bonsai::engine::edit::prune::output(s, s.leaf().unwrap(), &settings, false)
        .items
        .len()
}

#[divan::bench(args = sizes(), sample_count = 10)]
fn prune_plan_zones_yellow(mb: usize) -> usize {
    let s = loaded(mb);
    let settings = bonsai::engine::edit::prune::PruneSettings::default();
    bonsai::engine::edit::prune::zones(
        s,
        s.leaf().unwrap(),
        bonsai::engine::edit::prune::Zone::Yellow,
        &settings,
    )
    .items
    .len()
}

/// Exact tokens of one 1 MB run of a single character (no whitespace to split on): counted in
/// pieces, linear; whole, tiktoken's merge loop took seconds.
#[divan::bench(sample_count = 10)]
fn exact_tokens_of_a_1mb_run_of_one_character(b: divan::Bencher) {
    let run = "a".repeat(1_000_000);
    b.bench(|| bonsai::engine::view::tokens::Encoding::O200k.count(divan::black_box(&run)));
}
