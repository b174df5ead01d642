//! Finding a session to resume among many (issue 47's targets), on 2,000 sessions of ~5 GB in
//! 40 projects (`common::many_sessions_5gb`), with bonsai's listing cache warm:
//!
//!     cargo bench --bench resume
//!
//! - `list_2000_sessions_5gb_cached`: every project's listing, as `bonsai list --all` reads it.
//! - `picker_first_frame_2000_sessions_5gb`: the picker on every project, from opening to its
//!   first frame drawn with the listing (target ≤ 100 ms).
//! - `resume_choice_2000_sessions_5gb`: what `bonsai resume QUERY` does before it runs Pi:
//!   the listing and the choice of the session the query names (target ≤ 100 ms).
//!
//! Pi's own listing of the same folder (`SessionManager.listAll`) is timed by
//! `scripts/listing-vs-pi.sh`, beside these in BENCHMARKS.md.

use bonsai::engine::load::models::Registry;
use bonsai::engine::load::session::Session;
use bonsai::engine::settings::Settings;
use bonsai::ui::action::Action;
use bonsai::ui::app::App;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::Arc;

#[path = "common.rs"]
mod common;

fn main() {
    let agent = common::many_sessions_5gb();
    // SAFETY: set before any thread of the benchmark starts.
    unsafe {
        std::env::set_var("PI_CODING_AGENT_DIR", &agent);
    }
    // The listing cache made (a warm cache is the case measured).
    assert_eq!(list_all().len(), 2000);
    divan::main();
}

fn list_all() -> Vec<bonsai::store::SessionInfo> {
    bonsai::store::list_sessions(std::path::Path::new("/home/dev/project0"), &Settings::default(), true)
}

#[divan::bench(sample_count = 20)]
fn list_2000_sessions_5gb_cached() -> usize {
    list_all().len()
}

#[divan::bench(sample_count = 20)]
fn resume_choice_2000_sessions_5gb() -> usize {
    let listed = list_all();
    let by_name = bonsai::store::resume::best_matches(&listed, "task 1233");
    assert_eq!(by_name.len(), 1);
    let by_id = bonsai::store::resume::best_matches(&listed, "0b0004d2");
    assert_eq!(by_id.len(), 1);
    by_name.len() + by_id.len()
}

#[divan::bench(sample_count = 20)]
fn picker_first_frame_2000_sessions_5gb(bencher: divan::Bencher) {
    let demo = Arc::new(Session::from_bytes(bonsai::ui::DEMO.to_vec()).unwrap());
    bencher.bench_local(|| {
        let mut app = App::with_session(demo.clone(), None, Settings::default(), Registry::builtin_only());
        app.update(Action::Resize { width: 160, height: 48 });
        app.open_picker_listing(true);
        app.run_jobs_now();
        let mut t = Terminal::new(TestBackend::new(160, 48)).unwrap();
        t.draw(|f| bonsai::ui::draw(f, &app)).unwrap();
        assert_eq!(app.picker_listed(), Some(2000));
        app
    });
}
