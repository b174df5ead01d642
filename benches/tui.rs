//! TUI frame benchmarks on synthetic sessions (10, 100, 500 MB by default):
//! the first frame after start, and key press to frame for moves and filter changes.
//!
//!     cargo bench --bench tui
//!     BONSAI_BENCH_SIZES=10,100 cargo bench --bench tui

use bonsai::engine::load::models::Registry;
use bonsai::engine::settings::Settings;
use bonsai::ui::app::App;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::sync::Mutex;

#[path = "common.rs"]
mod common;
use common::session_file;

fn sizes() -> Vec<usize> {
    common::sizes_or("10,100,500")
}

static APPS: Mutex<Vec<(usize, &'static mut App)>> = Mutex::new(Vec::new());

fn with_app<R>(mb: usize, f: impl FnOnce(&mut App) -> R) -> R {
    let mut apps = APPS.lock().unwrap();
    if !apps.iter().any(|(m, _)| *m == mb) {
        let s = bonsai::store::load_session(&session_file(mb)).unwrap();
        let app = Box::leak(Box::new(App::new(
            s,
            None,
            Settings::default(),
            Registry::builtin_only(),
        )));
        apps.push((mb, app));
    }
    let app = apps.iter_mut().find(|(m, _)| *m == mb).unwrap();
    f(app.1)
}

fn main() {
    // Make the files first; apps for the key benches load on first use, after `first_frame`
    // (which runs first) so no other session sits in memory while it is timed.
    for mb in sizes() {
        session_file(mb);
    }
    divan::main();
}

fn frame(app: &mut App) {
    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
    t.draw(|f| bonsai::ui::draw(f, app)).unwrap();
}

/// Start to first frame: read, index, build the tree view, draw. The app is returned so
/// freeing it is not timed (the user has the frame by then).
#[divan::bench(args = sizes(), sample_count = 5, sample_size = 1)]
fn first_frame(mb: usize) -> App {
    let s = bonsai::store::load_session(&session_file(mb)).unwrap();
    let mut app = App::new(s, None, Settings::default(), Registry::builtin_only());
    frame(&mut app);
    app
}

/// One key press (Down, then Up, alternating) and the frame it causes.
#[divan::bench(args = sizes(), sample_count = 50)]
fn key_move_to_frame(mb: usize) {
    with_app(mb, |app| {
        app.handle_key(KeyEvent::from(KeyCode::Down));
        frame(app);
        app.take_jobs();
        app.handle_key(KeyEvent::from(KeyCode::Up));
        frame(app);
        app.take_jobs();
    })
}

/// A filter toggle (Ctrl+T: no-tools and back) and the frame it causes.
#[divan::bench(args = sizes(), sample_count = 10)]
fn key_filter_to_frame(mb: usize) {
    with_app(mb, |app| {
        app.handle_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
        frame(app);
        app.take_jobs();
    })
}

/// The pruning preview on and off (`p`) and the frame each causes; on large sessions the plan
/// itself is a job (timed in `benches/engine.rs`), so the key press must stay within a frame.
#[divan::bench(args = sizes(), sample_count = 10)]
fn key_prune_preview_to_frame(mb: usize) {
    with_app(mb, |app| {
        app.handle_key(KeyEvent::from(KeyCode::Char('p')));
        frame(app);
        app.take_jobs();
        app.handle_key(KeyEvent::from(KeyCode::Char('p')));
        frame(app);
        app.take_jobs();
    })
}

static SESSIONS: Mutex<Vec<(usize, &'static bonsai::engine::load::session::Session)>> = Mutex::new(Vec::new());

fn session(mb: usize) -> &'static bonsai::engine::load::session::Session {
    let mut all = SESSIONS.lock().unwrap();
    if let Some((_, s)) = all.iter().find(|(m, _)| *m == mb) {
        return s;
    }
    let s: &'static _ = Box::leak(Box::new(bonsai::store::load_session(&session_file(mb)).unwrap()));
    all.push((mb, s));
    s
}

/// `v` at the leaf with nothing counted yet (issue 21, item 14): project, count every message
/// exactly (in steps, reporting progress) and make the rows. A job at a low priority in the
/// app; `v` again on the same state reuses the result (no work).
#[divan::bench(args = sizes(), sample_count = 3, sample_size = 1)]
fn context_view_from_nothing_counted(mb: usize) {
    let s = session(mb);
    let leaf = s.leaf().unwrap();
    let cache = bonsai::engine::view::tokens::TokenCache::default();
    let steps = std::sync::atomic::AtomicUsize::new(0);
    let d = bonsai::ui::context_view::build_with_progress(
        s,
        0,
        leaf,
        None,
        bonsai::engine::view::tokens::Encoding::O200k,
        &cache,
        None,
        &|_, _| {
            steps.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        },
    );
    divan::black_box(d);
}
