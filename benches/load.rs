//! Opening a session: read, index, the cut point and the leaf's gauge, on synthetic
//! sessions made at bench time by `../shared/tools/gen_session.py` (cached under
//! target/bench-data). A binary of its own so that, as in a fresh `bonsai` process, no other
//! session sits in memory.
//!
//!     cargo bench --bench load                       # 1, 10, 100, 500 MB
//!     BONSAI_BENCH_SIZES=100 cargo bench --bench load

use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::load::session::Session;

#[path = "common.rs"]
mod common;
use common::session_file;

fn main() {
    // Make the files before timing, so no sample pays for generation.
    for mb in sizes() {
        session_file(mb);
    }
    divan::main();
}

fn sizes() -> Vec<usize> {
    common::sizes_or("1,10,100,500")
}

/// The session is returned so freeing it is not timed (the CLI exits without freeing it).
#[divan::bench(args = sizes(), sample_count = 9, sample_size = 1)]
fn load_and_index(mb: usize) -> Session {
    bonsai::store::load_session(&session_file(mb)).unwrap()
}

#[divan::bench(args = sizes(), sample_count = 9, sample_size = 1)]
fn load_index_and_cut(mb: usize) -> (Session, usize) {
    let s = bonsai::store::load_session(&session_file(mb)).unwrap();
    let plan = cut::prepare(&s, s.leaf().unwrap(), CompactionSettings::default()).unwrap();
    let first_kept = plan.first_kept_entry;
    (s, first_kept)
}

/// Live follow: Pi appended two lines to a session on screen. The reload parses only them
/// (and rebuilds the indexes), keeping the session shown meanwhile (`Session::extended`).
#[divan::bench(args = sizes(), sample_count = 9, sample_size = 1)]
fn reload_after_two_appended_lines(bencher: divan::Bencher, mb: usize) {
    let bytes = std::fs::read(session_file(mb)).unwrap();
    let mut ends: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).map(|k| k + 1).collect();
    ends.pop();
    let cut = ends[ends.len() - 2];
    let shown = Session::from_bytes(bytes[..cut].to_vec()).unwrap();
    bencher
        .with_inputs(|| bytes.clone())
        .bench_local_values(|all| shown.extended(all.into()).unwrap());
}

/// The session from bonsai's index (`store::index`), made before timing: a second open with
/// nothing appended, so no parse (the open decodes the index and rebuilds the lookups).
#[divan::bench(args = sizes(), sample_count = 9, sample_size = 1)]
fn open_from_the_index(bencher: divan::Bencher, mb: usize) {
    let (_dir, place, file) = indexed(mb);
    bencher.bench(|| {
        let o = bonsai::store::index::open(&file, Some(&place), None, None).unwrap();
        assert_eq!(o.used, bonsai::store::index::Used::Unchanged);
        o.session
    });
}

/// The first frame's gauge (the leaf's context and its estimate; its cut is worked out after
/// the frame) on a session opened from its index, as the first load works it out beside the
/// tree.
#[divan::bench(args = sizes(), sample_count = 9, sample_size = 1)]
fn leaf_gauge_from_the_index(bencher: divan::Bencher, mb: usize) {
    let (_dir, place, file) = indexed(mb);
    let (settings, registry) = (
        bonsai::engine::settings::Settings::default(),
        bonsai::engine::load::models::Registry::builtin_only(),
    );
    bencher
        .with_inputs(|| {
            bonsai::store::index::open(&file, Some(&place), None, None)
                .unwrap()
                .session
        })
        .bench_local_values(|s| {
            let info = bonsai::ui::selection::of_leaf(&s, &settings, &registry);
            // The session is returned so freeing it is not timed.
            (s, info.map(|(i, _cut)| i.gauge.tokens.tokens))
        });
}

/// The tree and `/tree`'s first view on a session opened from an unchanged file's index: read
/// in place from it (checked when the index was opened, which is not timed here).
#[divan::bench(args = sizes(), sample_count = 9, sample_size = 1)]
fn tree_and_view_from_the_index(bencher: divan::Bencher, mb: usize) {
    let (_dir, place, file) = indexed(mb);
    tree_and_view(bencher, || {
        bonsai::store::index::open(&file, Some(&place), None, None)
            .unwrap()
            .session
    });
}

/// The same built over every entry, as without the index's view (the session parsed).
#[divan::bench(args = sizes(), sample_count = 9, sample_size = 1)]
fn tree_and_view_built(bencher: divan::Bencher, mb: usize) {
    let file = session_file(mb);
    tree_and_view(bencher, || bonsai::store::load_session(&file).unwrap());
}

fn tree_and_view(bencher: divan::Bencher, open: impl Fn() -> Session) {
    use bonsai::engine::view::{
        tree::Tree,
        tree_view::{FilterMode, TreeView},
    };
    bencher.with_inputs(&open).bench_local_values(|s| {
        let tree = Tree::build(&s);
        let view = TreeView::new(&s, &tree, s.leaf(), FilterMode::default(), 0);
        // Returned so freeing them is not timed.
        (s, tree, view)
    });
}

/// `/tree`'s first search on a session opened from its index: every entry's text, so every
/// message decoded (they are not, until something reads them).
#[divan::bench(args = sizes(), sample_count = 5, sample_size = 1)]
fn first_tree_search_from_the_index(bencher: divan::Bencher, mb: usize) {
    let (_dir, place, file) = indexed(mb);
    first_tree_search(bencher, || {
        bonsai::store::index::open(&file, Some(&place), None, None)
            .unwrap()
            .session
    });
}

/// The same search on a session parsed whole (every message decoded by the parse).
#[divan::bench(args = sizes(), sample_count = 5, sample_size = 1)]
fn first_tree_search_parsed(bencher: divan::Bencher, mb: usize) {
    let file = session_file(mb);
    first_tree_search(bencher, || bonsai::store::load_session(&file).unwrap());
}

fn first_tree_search(bencher: divan::Bencher, open: impl Fn() -> Session) {
    use bonsai::engine::view::{
        tree::Tree,
        tree_view::{FilterMode, TreeView},
    };
    bencher
        .with_inputs(|| {
            let s = open();
            let tree = Tree::build(&s);
            let view = TreeView::new(&s, &tree, s.leaf(), FilterMode::default(), 0);
            (s, view)
        })
        .bench_local_values(|(s, mut view)| {
            view.search = "no such text zq".to_string();
            view.apply_filter(&s);
            assert!(view.visible.is_empty());
            (s, view)
        });
}

/// The bench session of `mb` with its index made (in a folder kept while the first value
/// lives), before timing.
fn indexed(mb: usize) -> (tempfile::TempDir, bonsai::store::index::Place, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let place = bonsai::store::index::Place {
        dir: dir.path().join("index"),
        limit: u64::MAX,
        view: Default::default(),
    };
    let file = session_file(mb);
    let o = bonsai::store::index::open(&file, Some(&place), None, None).unwrap();
    bonsai::store::index::save(&place, &o.source, &o.session).unwrap();
    (dir, place, file)
}
