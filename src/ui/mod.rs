//! The terminal UI. `draw` renders an `App`; `run` owns the terminal and the event loop
//! (keys, finished background jobs, the live-follow tick). Slow work never runs in `draw`.

pub mod app;
pub mod context_view;
pub mod cut_panel;
pub mod detail;
pub mod dialog;
pub mod gauge;
pub mod help;
pub mod highlight;
pub mod picker;
pub mod status;
pub mod theme;
pub mod tree_pane;

use crate::engine::entry::{Kind, Role};
use crate::engine::models::Registry;
use crate::engine::session::Session;
use crate::engine::settings::Settings;
use app::{App, JobResult, Overlay};
use color_eyre::eyre::{Result, eyre};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The demo session shown when Pi has no sessions at all.
pub const DEMO: &[u8] = include_bytes!("../../fixtures/demo.jsonl");

/// What `bonsai [PATH]` opens.
#[derive(Debug)]
pub enum Target {
    File(PathBuf),
    Picker,
    Demo,
}

/// `bonsai FILE`, `bonsai DIR` (newest session in it), or `bonsai` (newest session of this
/// directory in Pi's session dir; else the picker if Pi has sessions elsewhere; else the demo).
pub fn resolve_target(arg: Option<&Path>, cwd: &Path, settings: &Settings) -> Result<Target> {
    if let Some(p) = arg {
        if p.is_dir() {
            return crate::store::newest_in_dir(p)
                .map(Target::File)
                .ok_or_else(|| eyre!("no Pi session (*.jsonl with a session header) in {}", p.display()));
        }
        if !p.exists() {
            return Err(eyre!("{} does not exist", p.display()));
        }
        return Ok(Target::File(p.to_path_buf()));
    }
    let here = crate::store::list_sessions(cwd, settings, false);
    if let Some(s) = here.first() {
        return Ok(Target::File(s.path.clone()));
    }
    if !crate::store::list_sessions(cwd, settings, true).is_empty() {
        return Ok(Target::Picker);
    }
    Ok(Target::Demo)
}

/// The tool call a tool result answers (for its title and syntax highlighting).
pub fn tool_call_for(app: &App, entry: usize) -> Option<(String, serde_json::Value)> {
    let s = &app.session;
    let Kind::Message(m) = &s.entries[entry].kind else {
        return None;
    };
    if m.role != Role::ToolResult {
        return None;
    }
    let id = m.tool_call_id.as_deref()?;
    // The call is almost always on the path just above the result.
    let mut cur = s.parent_of(entry);
    let mut hops = 0;
    while let Some(i) = cur {
        if let Kind::Message(am) = &s.entries[i].kind
            && am.role == Role::Assistant
            && let Some(tc) = s.measures(am).tool_calls.iter().find(|t| t.id.as_deref() == Some(id))
        {
            let v = s.entry_value(i);
            let args = v["message"]["content"][tc.block as usize]
                .get("arguments")
                .cloned()
                .unwrap_or_default();
            return Some((tc.name.to_string(), args));
        }
        hops += 1;
        if hops > 64 {
            break;
        }
        cur = s.parent_of(i);
    }
    None
}

pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    let banner = app.notice.clone();
    let mut constraints = vec![];
    if banner.is_some() {
        constraints.push(Constraint::Length(1));
    }
    constraints.extend([Constraint::Min(3), Constraint::Length(2), Constraint::Length(1)]);
    let rows = Layout::vertical(constraints).split(area);
    let mut k = 0;
    if let Some(b) = &banner {
        status::draw_banner(f, rows[0], b);
        k = 1;
    }
    let main = rows[k];
    let gauge_area = rows[k + 1];
    let status_area = rows[k + 2];

    let (tree_area, side_area) = if app.show_detail {
        if main.width >= 100 {
            let c = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).split(main);
            (c[0], Some(c[1]))
        } else {
            let c = Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).split(main);
            (c[0], Some(c[1]))
        }
    } else {
        (main, None)
    };
    tree_pane::draw(f, tree_area, app);
    if let Some(side) = side_area {
        let detail_area = if app.cut_preview {
            let c = Layout::vertical([
                Constraint::Length(side.height.saturating_sub(3).clamp(4, 9)),
                Constraint::Min(1),
            ])
            .split(side);
            cut_panel::draw(f, c[0], app);
            c[1]
        } else {
            side
        };
        draw_detail(f, detail_area, app);
    } else if app.cut_preview {
        let h = 8.min(tree_area.height / 2);
        let r = Rect {
            y: tree_area.y + tree_area.height - h,
            height: h,
            ..tree_area
        };
        cut_panel::draw(f, r, app);
    }
    gauge::draw(f, gauge_area, app.gauge.as_ref(), app.zones);
    status::draw(f, status_area, app);
    match app.overlay {
        Overlay::Help => help::draw(f, main),
        Overlay::Context => context_view::draw(f, main, app),
        Overlay::Picker => {
            if let Some(p) = &app.picker {
                p.draw(f, main);
            }
        }
        Overlay::None => {}
    }
    dialog::draw(f, main, app);
}

fn draw_detail(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(entry) = app.selected() else { return };
    let width = area.width.saturating_sub(1);
    let rebuild = !matches!(&app.doc, Some(d) if d.entry == entry && d.width == width);
    if rebuild {
        let tc = tool_call_for(app, entry);
        app.doc = Some(detail::build(&app.session, entry, width, tc));
    }
    let focused = app.focus == app::Focus::Detail;
    let mut scroll = app.detail_scroll;
    if let Some(doc) = &mut app.doc {
        detail::draw(f, area, doc, &mut scroll, focused);
    }
    app.detail_scroll = scroll;
}

/// Open the TUI.
/// When `run` began (for `BONSAI_EXIT_AFTER_FIRST_FRAME`).
static PROCESS_START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

pub fn run(arg: Option<PathBuf>) -> Result<()> {
    PROCESS_START.get_or_init(std::time::Instant::now);
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let settings = crate::store::config::load_settings(&cwd);
    let registry = crate::store::config::load_registry(&crate::store::config::agent_dir());
    let target = resolve_target(arg.as_deref(), &cwd, &settings)?;
    // Load the syntax definitions while the session loads.
    std::thread::spawn(highlight::warm_up);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut terminal = ratatui::init();
    let r = rt.block_on(event_loop(&mut terminal, target, settings, registry));
    ratatui::restore();
    r
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    target: Target,
    settings: Settings,
    registry: Registry,
) -> Result<()> {
    use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
    use futures_util::StreamExt;
    let mut events = EventStream::new();
    let (session, path, notice) = match target {
        Target::Demo => (
            Session::from_bytes(DEMO.to_vec()).map_err(|e| eyre!("demo session: {e}"))?,
            None,
            Some("No Pi sessions found: showing bonsai's bundled demo session (read-only).".to_string()),
        ),
        Target::Picker => (
            Session::from_bytes(DEMO.to_vec()).map_err(|e| eyre!("{e}"))?,
            None,
            None,
        ),
        Target::File(p) => {
            // Load off the draw thread, with a progress frame; Ctrl+C or q aborts.
            let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            let name = p.display().to_string();
            terminal.draw(|f| {
                let msg = format!(" Loading {name} ({:.1} MB)…", size as f64 / 1048576.0);
                f.render_widget(ratatui::widgets::Paragraph::new(msg), f.area());
            })?;
            let pc = p.clone();
            let mut load = tokio::task::spawn_blocking(move || crate::store::load_session(&pc));
            let s = loop {
                tokio::select! {
                    r = &mut load => break r?,
                    Some(Ok(Event::Key(k))) = events.next() => {
                        if k.code == KeyCode::Char('q') || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)) {
                            return Ok(());
                        }
                    }
                }
            };
            let s = s.map_err(|e| eyre!("{}: {e}", p.display()))?;
            (s, Some(p), None)
        }
    };
    let is_picker = path.is_none() && notice.is_none();
    let mut app = App::new(session, path, settings, registry);
    app.notice = notice.or_else(|| app.diagnostics_notice());
    if is_picker {
        app.open_picker();
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<JobResult>();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut dirty = true;
    let mut reloading = false;
    let mut rewritten = false;
    // For timing start to first session frame from outside (scripts/bench.sh).
    let exit_after_first_frame = std::env::var_os("BONSAI_EXIT_AFTER_FIRST_FRAME").is_some();
    loop {
        for mut job in std::mem::take(&mut app.jobs) {
            let tx = tx.clone();
            if let app::Job::Llm { chunks, .. } = &mut job {
                *chunks = Some(tx.clone());
            }
            let cache = app.exact.clone();
            tokio::task::spawn_blocking(move || {
                let _ = tx.send(app::run_job(job, &cache));
            });
        }
        if dirty {
            terminal.draw(|f| draw(f, &mut app))?;
            dirty = false;
        }
        if exit_after_first_frame {
            let ms = PROCESS_START
                .get()
                .map(|t| t.elapsed().as_secs_f64() * 1e3)
                .unwrap_or(0.0);
            ratatui::restore();
            eprintln!("first session frame after {ms:.1} ms");
            std::process::exit(0);
        }
        if app.quit {
            return Ok(());
        }
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => {
                    dirty |= app.on_key(k);
                    if let Some(dialog::External::EditSummary(text)) = app.external.take() {
                        let edited = edit_in_editor(terminal, &text);
                        app.edited_summary(edited.unwrap_or(text));
                        dirty = true;
                    }
                    if let Some(text) = app.clipboard.take() {
                        use std::io::Write;
                        let _ = crossterm::execute!(std::io::stdout(), crossterm::clipboard::CopyToClipboard::to_clipboard_from(text));
                        let _ = std::io::stdout().flush();
                    }
                }
                Some(Ok(Event::Resize(_, _))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(()),
            },
            Some(r) = rx.recv() => {
                if matches!(r, JobResult::Reloaded(_)) {
                    reloading = false;
                }
                app.apply(r);
                dirty = true;
            }
            _ = tick.tick() => {
                // A mapped file that lost pages under us (see engine::mapped) reads as zeros
                // there: say so and reload it.
                if crate::store::mapped::take_damaged() {
                    rewritten = true;
                    app.status = Some("the session file was truncated or rewritten by another program; reloading it".into());
                    dirty = true;
                }
                // Live follow: Pi appends whole lines; reload when the file grew.
                if let Some(p) = app.path.clone()
                    && !reloading
                    && let Ok(m) = std::fs::metadata(&p)
                    && (m.len() != app.file_len || rewritten)
                {
                    rewritten = false;
                    reloading = true;
                    let tx = tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let _ = tx.send(JobResult::Reloaded(crate::store::load_session(&p).map_err(|e| e.to_string())));
                    });
                }
                // Let the highlighter catch up on a long output.
                if app.show_detail && app.doc.as_ref().is_some_and(|d| d.code.as_ref().is_some_and(|c| c.2.as_ref().is_some_and(|h| h.done.len() < c.1.len()))) {
                    dirty = true;
                }
            }
        }
    }
}

/// Suspend the UI, edit `text` in $EDITOR (or vi), resume. None if the editor failed.
fn edit_in_editor(terminal: &mut ratatui::DefaultTerminal, text: &str) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("bonsai-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join("summary.md");
    std::fs::write(&file, text).ok()?;
    ratatui::restore();
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    let ok = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&file)
        .status()
        .is_ok_and(|s| s.success());
    *terminal = ratatui::init();
    let _ = terminal.clear();
    let out = ok.then(|| std::fs::read_to_string(&file).ok()).flatten();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    pub fn shared(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/fixtures")
            .join(rel)
    }

    pub fn app_for(path: &Path) -> App {
        let s = crate::store::load_session(path).unwrap();
        let mut a = App::new(
            s,
            Some(path.to_path_buf()),
            Settings::default(),
            Registry::builtin_only(),
        );
        a.force_offline = true;
        a.run_jobs_now();
        a
    }

    pub fn demo_app() -> App {
        let mut a = App::new(
            Session::from_bytes(DEMO.to_vec()).unwrap(),
            None,
            Settings::default(),
            Registry::builtin_only(),
        );
        a.force_offline = true;
        a.run_jobs_now();
        a
    }

    pub fn render(app: &mut App, w: u16, h: u16) -> String {
        app.run_jobs_now();
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, app)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..buf.area.height {
            let mut line = String::new();
            for x in 0..buf.area.width {
                line.push_str(buf[(x, y)].symbol());
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}
