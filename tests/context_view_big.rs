//! Issue 21, item 14: `v` on a 1 GB session froze the UI ~40 s with no feedback, and every
//! later press took 5–9 s. The view is built in the background at a low priority, says how
//! far its count got, and is reused while nothing it depends on changed. Here on a session
//! made in the test, large enough to count in several steps.

mod common;

use bonsai::ui::action::Action;
use bonsai::ui::jobs::ContextReport;
use bonsai::ui::runner::run_now;
use crossterm::event::{KeyCode, KeyEvent};

#[test]
fn the_context_view_says_its_progress_and_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("big.jsonl");
    std::fs::write(&f, common::synth::Synth::new(6_000_000).make()).unwrap();
    let s = bonsai::store::load_session(&f).unwrap();
    let mut app = bonsai::ui::app::App::new(
        s,
        Some(f.clone()),
        bonsai::engine::settings::Settings::default(),
        bonsai::engine::load::models::Registry::builtin_only(),
    );
    // Nothing counted yet (the background count of every entry is left aside here).
    app.take_jobs();
    app.handle_key(KeyEvent::from(KeyCode::Char('v')));
    assert!(app.context_data().is_none(), "built in a job, not on the key");
    let jobs = app.take_jobs();
    let view = jobs
        .into_iter()
        .find(|j| j.is::<bonsai::ui::jobs::ContextViewJob>())
        .expect("a view job");
    let results = run_now(view);
    let steps: Vec<(usize, usize)> = results
        .iter()
        .filter_map(|r| match r.output::<ContextReport>() {
            Some(ContextReport::Progress { done, total, .. }) => Some((*done, *total)),
            _ => None,
        })
        .collect();
    assert!(steps.len() >= 3, "progress said in steps: {steps:?}");
    assert!(steps.windows(2).all(|w| w[0].0 <= w[1].0), "{steps:?}");
    assert_eq!(
        steps.last().map(|s| s.0),
        steps.last().map(|s| s.1),
        "ends at the total"
    );
    // The first step shows in the overlay while the rest is counted.
    let mut results = results.into_iter();
    app.job_done(results.next().unwrap());
    let screen = render(&mut app);
    assert!(screen.contains("messages counted"), "{screen}");
    for r in results {
        app.job_done(r);
    }
    let n = app.context_data().expect("the view").aligned.len();
    assert!(n > 2_000, "{n}");
    // Closed and opened again on the same selection: shown at once, nothing rebuilt.
    app.handle_key(KeyEvent::from(KeyCode::Esc));
    app.handle_key(KeyEvent::from(KeyCode::Char('v')));
    assert!(app.context_data().is_some(), "reused");
    assert!(
        !app.take_jobs()
            .iter()
            .any(|j| j.is::<bonsai::ui::jobs::ContextViewJob>()),
        "built again"
    );
}

fn render(app: &mut bonsai::ui::app::App) -> String {
    let backend = ratatui::backend::TestBackend::new(120, 30);
    let mut t = ratatui::Terminal::new(backend).unwrap();
    app.update(Action::Resize { width: 120, height: 30 });
    t.draw(|f| bonsai::ui::draw(f, app)).unwrap();
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                + "\n"
        })
        .collect()
}
