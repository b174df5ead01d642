//! Sessions at scale (issue 13's targets), on the reference sessions (`common::reference_file`)
//! and a thousand sessions of mixed sizes (`common::many_sessions`).
//!
//!     cargo bench --bench scale
//!     BONSAI_BENCH_10G=1 cargo bench --bench scale     # also key presses on the 10 GB session
//!
//! - `list_1000_sessions_cached` / `_uncached`: the picker's listing of every project (1,000
//!   sessions, page cache warm), with bonsai's listing cache and with every file read.
//! - `exact_tokens_every_entry_100mb`: every message of every entry counted exactly, as the
//!   TUI's background count does (target ≤ 3 s on 2 cores).
//! - `key_move_while_counting_100mb`: a key press and its frame while that count runs.
//! - `key_move_10gb`: a key press and its frame on the 10 GB session once loaded (≤ 5 ms).
//! - `usage_view_1000_sessions`: the usage view's data on those 1,000 sessions.
//! - `find_in_session_1gb_*`: Ctrl+F on the 1 GB reference session, first hits and all.

use bonsai::engine::load::models::Registry;
use bonsai::engine::settings::Settings;
use bonsai::ui::app::App;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::{Arc, Mutex, OnceLock};

#[path = "common.rs"]
mod common;

fn main() {
    let agent = common::many_sessions(1000);
    // SAFETY: set before any thread of the benchmark starts.
    unsafe {
        std::env::set_var("PI_CODING_AGENT_DIR", &agent);
    }
    common::reference_file(100);
    divan::main();
}

fn list_all() -> usize {
    let settings = Settings::default();
    bonsai::store::list_sessions(std::path::Path::new("/home/dev/project0"), &settings, true).len()
}

/// With bonsai's listing cache (`<agentDir>/bonsai/listing.json`) of an earlier listing.
#[divan::bench(sample_count = 10)]
fn list_1000_sessions_cached() -> usize {
    list_all()
}

/// Every file read (the cache removed first): a first listing, or one after Pi wrote everywhere.
#[divan::bench(sample_count = 10)]
fn list_1000_sessions_uncached(bencher: divan::Bencher) {
    let cache = std::path::PathBuf::from(std::env::var("PI_CODING_AGENT_DIR").unwrap()).join("bonsai/listing.json");
    bencher
        .with_inputs(|| {
            let _ = std::fs::remove_file(&cache);
        })
        .bench_local_values(|()| list_all());
}

fn session100() -> Arc<bonsai::engine::load::session::Session> {
    static S: OnceLock<Arc<bonsai::engine::load::session::Session>> = OnceLock::new();
    S.get_or_init(|| Arc::new(bonsai::store::load_session(&common::reference_file(100)).unwrap()))
        .clone()
}

fn count_every_entry(
    s: &Arc<bonsai::engine::load::session::Session>,
    cancel: Arc<std::sync::atomic::AtomicBool>,
) -> Vec<bonsai::ui::jobs::ExactAllReport> {
    bonsai::ui::runner::run_here(bonsai::ui::jobs::ExactAllJob {
        generation: 1,
        session: s.clone(),
        encoding: bonsai::engine::view::tokens::Encoding::O200k,
        cache: Arc::new(bonsai::engine::view::tokens::TokenCache::default()),
        cancel,
    })
}

#[divan::bench(sample_count = 3)]
fn exact_tokens_every_entry_100mb() -> usize {
    count_every_entry(&session100(), Arc::new(std::sync::atomic::AtomicBool::new(false))).len()
}

fn frame(app: &mut App) {
    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
    t.draw(|f| bonsai::ui::draw(f, app)).unwrap();
}

static APP100: Mutex<Option<&'static mut App>> = Mutex::new(None);

#[divan::bench(sample_count = 50)]
fn key_move_while_counting_100mb(bencher: divan::Bencher) {
    let mut slot = APP100.lock().unwrap();
    let app = slot.get_or_insert_with(|| {
        let mut a = App::with_session(session100(), None, Settings::default(), Registry::builtin_only());
        a.take_jobs();
        Box::leak(Box::new(a))
    });
    // The whole-session count runs (again and again) beside the key presses.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let counting = {
        let (s, stop) = (session100(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                count_every_entry(&s, stop.clone());
            }
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    bencher.bench_local(|| {
        app.handle_key(KeyEvent::from(KeyCode::Down));
        frame(app);
        app.take_jobs();
        app.handle_key(KeyEvent::from(KeyCode::Up));
        frame(app);
        app.take_jobs();
    });
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    counting.join().unwrap();
}

#[divan::bench(sample_count = 50)]
fn key_move_10gb(bencher: divan::Bencher) {
    if std::env::var("BONSAI_BENCH_10G").is_err() {
        return;
    }
    static APP: OnceLock<Mutex<&'static mut App>> = OnceLock::new();
    let app = APP.get_or_init(|| {
        let s = bonsai::store::load_session(&common::reference_file(10000)).unwrap();
        let mut a = App::new(s, None, Settings::default(), Registry::builtin_only());
        a.take_jobs();
        Mutex::new(Box::leak(Box::new(a)))
    });
    let mut app = app.lock().unwrap();
    bencher.bench_local(|| {
        app.handle_key(KeyEvent::from(KeyCode::Down));
        frame(&mut app);
        app.take_jobs();
        app.handle_key(KeyEvent::from(KeyCode::Up));
        frame(&mut app);
        app.take_jobs();
    });
}

/// The usage view (`$`) on the 1,000 sessions, as its job does: every session's recorded
/// calls through bonsai's usage cache (warm: an earlier view), the report by day made.
#[divan::bench(sample_count = 10)]
fn usage_view_1000_sessions_cached() -> usize {
    let agent = std::path::PathBuf::from(std::env::var("PI_CODING_AGENT_DIR").unwrap());
    let (sessions, _) = bonsai::store::usage::read_sessions_cached(&agent, &[agent.join("sessions")]);
    usage_report(&sessions)
}

/// Every file read (only the lines holding "usage" decoded): a first view.
#[divan::bench(sample_count = 10)]
fn usage_view_1000_sessions_uncached() -> usize {
    let agent = std::path::PathBuf::from(std::env::var("PI_CODING_AGENT_DIR").unwrap());
    let (sessions, _) = bonsai::store::usage::read_sessions(&[agent.join("sessions")]);
    usage_report(&sessions)
}

fn usage_report(sessions: &[bonsai::engine::usage::SessionCalls]) -> usize {
    use bonsai::engine::usage::{By, Period, report};
    let period = Period {
        since: None,
        until: None,
        tz: jiff::tz::TimeZone::UTC,
    };
    report(sessions, By::Day, &period, &Registry::builtin_only()).rows.len()
}

fn session1g() -> Arc<bonsai::engine::load::session::Session> {
    static S: OnceLock<Arc<bonsai::engine::load::session::Session>> = OnceLock::new();
    S.get_or_init(|| Arc::new(bonsai::store::load_session(&common::reference_file(1000)).unwrap()))
        .clone()
}

/// Find in the open 1 GB session (Ctrl+F): the first hits to arrive, and every hit; a word in
/// many entries ("import") and one in none (the whole file searched for nothing).
#[divan::bench(sample_count = 5, args = ["import", "zebra crossing"])]
fn find_in_session_1gb_first_hits(query: &str) -> usize {
    let s = session1g();
    let q = bonsai::engine::view::search::Query::new(query, false, None).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let first = Mutex::new(0usize);
    bonsai::store::search::search_bytes(&s.buf, &q, &stop, |hits| {
        *first.lock().unwrap() += hits.len();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    first.into_inner().unwrap()
}

#[divan::bench(sample_count = 5, args = ["import", "zebra crossing"])]
fn find_in_session_1gb_all_hits(query: &str) -> usize {
    let s = session1g();
    let q = bonsai::engine::view::search::Query::new(query, false, None).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let n = Mutex::new(0usize);
    bonsai::store::search::search_bytes(&s.buf, &q, &stop, |hits| *n.lock().unwrap() += hits.len()).unwrap();
    n.into_inner().unwrap()
}
