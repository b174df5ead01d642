//! The terminal UI. `draw` renders an `App` (it only reads); `run` owns the terminal and the
//! event loop, which turns keys (through the key table), the mouse, pastes, resizes, the
//! clock and finished jobs into `Action`s for `App::update`, starts the jobs the app queued,
//! and carries out its effects (clipboard, `$EDITOR`, `$PAGER`).

pub mod action;
pub mod app;
pub mod audit_view;
pub mod browse_keys;
pub mod chores;
pub mod component;
pub mod context_view;
pub mod cut_panel;
pub mod detail;
pub mod dialog;
pub mod fills;
pub mod find;
pub mod gauge;
pub mod help;
pub mod highlight;
pub mod input;
pub mod jobs;
pub mod keymap;
pub mod layout;
pub mod loading;
pub mod messages;
pub mod mode;
pub mod outside;
pub mod picker;
pub mod prune_list;
pub mod prune_panel;
pub mod request;
pub mod runner;
pub mod screen;
pub mod selection;
pub mod status_line;
pub mod theme;
pub mod tree_pane;
pub mod tree_search;
pub mod usage_view;

use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use action::Action;
use app::{App, Overlay, Terminal};
use color_eyre::eyre::{Result, eyre};
use component::Handover;
use ratatui::Frame;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The demo session shown when Pi has no sessions at all.
pub const DEMO: &[u8] = include_bytes!("../fixtures/demo.jsonl");

/// What `bonsai [PATH]` opens.
#[derive(Debug)]
pub enum Target {
    File(PathBuf),
    Picker,
    /// The picker on every session under a folder of project folders.
    PickerIn(PathBuf),
    Demo,
}

/// What `bonsai [PATH]` opens:
/// - `bonsai FILE`: the file;
/// - `bonsai DIR`: the newest session in it, else the picker on the sessions in its folders
///   (Pi's sessions root holds one folder per project);
/// - `bonsai`: this directory's newest session in Pi's session dir, else the picker if Pi has
///   sessions elsewhere, else the demo.
pub fn resolve_target(arg: Option<&Path>, cwd: &Path, settings: &Settings) -> Result<Target> {
    if let Some(p) = arg {
        if p.is_dir() {
            if let Some(f) = crate::store::newest_in_dir(p) {
                return Ok(Target::File(f));
            }
            if crate::store::sessions::has_sessions_under(p) {
                return Ok(Target::PickerIn(p.to_path_buf()));
            }
            return Err(eyre!(
                "no Pi session (*.jsonl with a session header) in {} or its folders",
                p.display()
            ));
        }
        if !p.exists() {
            return Err(eyre!("{} does not exist", p.display()));
        }
        return Ok(Target::File(p.to_path_buf()));
    }
    // Only the newest file's header is read to open it (the listing waits for the picker).
    if let Some(p) = crate::store::newest_session(cwd, settings) {
        return Ok(Target::File(p));
    }
    if crate::store::count_all_sessions(cwd, settings) > 0 {
        return Ok(Target::Picker);
    }
    Ok(Target::Demo)
}

/// Paint the app. Reads only: everything it shows was made by `App::update`.
pub fn draw(f: &mut Frame, app: &App) {
    use component::Drawable;
    if let Some(l) = app.loading_frame() {
        l.draw(f, f.area(), ());
        if app.screen.no_color {
            strip_colour(f);
        }
        return;
    }
    let a = app.areas();
    let s = &app.doc.session;
    let no_color = app.screen.no_color;
    if let (Some(r), Some(b)) = (a.banner, &app.log.notice) {
        status_line::draw_banner(f, r, b);
    }
    app.tree.view.draw(
        f,
        a.tree,
        tree_pane::TreeDraw {
            session: s,
            frame: &app.tree.frame,
            cut_classes: &app.selection.cut_classes,
            cut_preview: app.screen.cut_preview,
            prune_preview: app.screen.prune_preview,
            no_color,
        },
    );
    if let Some(r) = a.cut_panel {
        if app.screen.prune_preview {
            app.parts.prune.draw(f, r, (s, no_color));
        } else {
            app.selection.draw(f, r, (s, no_color));
        }
    }
    if let Some(r) = a.detail {
        let find = app
            .parts
            .find
            .as_ref()
            .filter(|f| f.editor.is_none())
            .and_then(|f| f.regex.as_ref());
        let focused = app.screen.focus == app::Focus::Detail;
        app.parts.detail.draw(f, r, detail::DetailView { focused, find });
    }
    let after = app
        .parts
        .prune
        .plan
        .as_ref()
        .filter(|p| app.screen.prune_preview && !p.is_empty())
        .map(|p| (p.estimate_now(), p.tokens_after));
    let counting = app.selection.gauge.is_none() && app.selected_leaf().is_some();
    let live = app.selection.live.as_ref().map(|r| (r.tokens_sent, r.tokens_full));
    gauge::draw(
        f,
        a.gauge,
        app.selection.gauge.as_ref(),
        app.screen.zones,
        after,
        live,
        counting,
    );
    status_line::draw(
        f,
        a.status,
        status_line::lines(app.status_header(), app.log.status.as_deref(), a.status.width),
    );
    status_line::draw_hints(f, a.hints, &app.hints());
    let help = &app.screen.help;
    match app.screen.overlay {
        Overlay::Help(mode) => help.draw(f, a.main, help::HelpPage::Keys(mode)),
        Overlay::Messages => help.draw(f, a.main, help::HelpPage::Log(&app.log.messages)),
        Overlay::PrunePlan => {
            if let Some(l) = &app.parts.prune.list {
                l.draw(f, a.main, s)
            }
        }
        Overlay::Context => app.parts.context.draw(f, a.main, ()),
        Overlay::Picker => {
            if let Some(p) = &app.parts.picker {
                p.draw(f, a.main, ());
            }
        }
        Overlay::Usage => {
            if let Some((u, _)) = &app.parts.usage {
                u.draw(f, a.main, ());
            }
        }
        Overlay::Fills => app.parts.fills.draw(f, a.main, s),
        Overlay::Audit => app.parts.audit.draw(f, a.main, s),
        Overlay::None => {}
    }
    if let Some(d) = &app.parts.dialog {
        d.draw(f, a.main, s);
    }
    if no_color {
        strip_colour(f);
    }
}

/// NO_COLOR: every colour off, the modifiers (bold, reversed, crossed out) kept.
fn strip_colour(f: &mut Frame) {
    let area = f.area();
    let buf = f.buffer_mut();
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let c = &mut buf[(x, y)];
            c.fg = ratatui::style::Color::Reset;
            c.bg = ratatui::style::Color::Reset;
        }
    }
}

/// When the process began (`main`'s first line; for `BONSAI_EXIT_AFTER_FIRST_FRAME`).
static PROCESS_START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Milliseconds since [`mark_process_start`].
fn since_start_ms() -> f64 {
    PROCESS_START
        .get()
        .map(|t| t.elapsed().as_secs_f64() * 1e3)
        .unwrap_or(0.0)
}

/// Called first in `main`: the first-frame measure counts from here, command-line parsing,
/// settings and the model table included.
pub fn mark_process_start() {
    PROCESS_START.get_or_init(std::time::Instant::now);
}

/// The tick as an action: the clock and the open file looked at here, in the event loop,
/// so `App::update` stays without a clock or a disk.
pub fn tick(app: &App) -> Action {
    use action::{FileSeen, FileStamp, Observed};
    use std::os::unix::fs::MetadataExt;
    let meta = app.doc.path.as_deref().map(std::fs::metadata);
    let file = match &meta {
        None => FileSeen::NoFile,
        Some(Ok(m)) => FileSeen::Len(m.len()),
        Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => FileSeen::Gone,
        Some(Err(_)) => FileSeen::Unknown,
    };
    let stamp = match &meta {
        Some(Ok(m)) => Some(FileStamp {
            ino: m.ino(),
            mtime_ns: crate::store::files::mtime_ns(m),
        }),
        _ => None,
    };
    Action::Tick(Observed {
        now_ms: crate::store::clock::now_ms(),
        now: std::time::Instant::now(),
        file,
        mapping_damaged: crate::store::mapped::take_damaged(),
        stamp,
    })
}

/// Open the TUI.
pub fn run(arg: Option<PathBuf>, at: Option<String>) -> Result<()> {
    PROCESS_START.get_or_init(std::time::Instant::now);
    let cwd = crate::store::config::cwd();
    let settings = crate::store::config::load_settings(&cwd);
    let target = resolve_target(arg.as_deref(), &cwd, &settings)?;
    run_target(target, at, None, settings)
}

/// The picker on every project's sessions, filtered by `query`, for `bonsai resume` (several
/// sessions matched): resuming one ends bonsai and runs Pi in its place.
pub fn run_resume_picker(query: String, matched: Vec<PathBuf>) -> Result<()> {
    PROCESS_START.get_or_init(std::time::Instant::now);
    let cwd = crate::store::config::cwd();
    let settings = crate::store::config::load_settings(&cwd);
    run_target(Target::Picker, None, Some((query, matched)), settings)
}

/// Whether the viewer can run here (standard output and a terminal to read keys from).
pub fn has_terminal() -> bool {
    no_terminal_said().is_ok()
}

fn run_target(
    target: Target,
    at: Option<String>,
    resume: Option<(String, Vec<PathBuf>)>,
    settings: Settings,
) -> Result<()> {
    let registry = crate::store::config::load_registry(&crate::store::config::agent_dir());
    no_terminal_said()?;
    // Load the syntax definitions while the session loads.
    std::thread::spawn(highlight::warm_up);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mouse = settings.mouse_capture();
    crate::store::config::TERMINAL_TAKEN.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut terminal = ratatui::try_init()?;
    let _ = enter_extras(mouse);
    let r = rt.block_on(event_loop(
        &mut terminal,
        target,
        settings,
        registry,
        rt.handle().clone(),
        at,
        resume,
    ));
    leave_extras(mouse);
    ratatui::restore();
    crate::store::config::TERMINAL_TAKEN.store(false, std::sync::atomic::Ordering::Relaxed);
    // A write under way finishes; the rest (a parse still running after q on the loading
    // frame, a count, a search) is not waited for: dropping the runtime would wait for every
    // blocking task, seconds on a big session.
    if !runner::wait_for_writes(Duration::from_millis(300)) {
        eprintln!("bonsai: finishing a write before quitting…");
        runner::wait_for_writes(Duration::MAX);
    }
    rt.shutdown_background();
    match r? {
        // Chosen in `bonsai resume`'s picker: Pi in bonsai's place, the terminal restored.
        Some(run) => {
            for n in &run.notes {
                eprintln!("bonsai: {n}");
            }
            Err(eyre!("{}", run.exec()))
        }
        None => Ok(()),
    }
}

/// Run Pi on a session in bonsai's terminal and wait for it; what to say when it is done.
fn run_pi(run: &crate::store::resume::PiRun) -> String {
    use std::io::Write;
    // Said before Pi draws (and kept in bonsai's status line after).
    let mut err = std::io::stderr();
    for n in &run.notes {
        let _ = writeln!(err, "bonsai: {n}");
    }
    match run.command().status() {
        Ok(s) => {
            let how = match s.code() {
                Some(0) => "Pi exited".to_string(),
                Some(c) => format!("Pi exited with status {c}"),
                None => "Pi was stopped by a signal".to_string(),
            };
            let mut said = format!("{how}; back in bonsai ({})", run.shown_file());
            if !run.notes.is_empty() {
                said = format!("{said} · {}", run.notes.join(" · "));
            }
            said
        }
        Err(e) => run.start_error(&e),
    }
}

/// The viewer draws on standard output and reads keys from the controlling terminal: from
/// cron, `ssh` without `-t` or with its output redirected there is none, and the commands are
/// the way in (ratatui's own init would panic).
fn no_terminal_said() -> Result<()> {
    use std::io::IsTerminal;
    let tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty");
    let missing = if !std::io::stdout().is_terminal() {
        Some("standard output is not a terminal".to_string())
    } else if let Err(e) = tty {
        Some(format!("there is no terminal to read keys from ({e})"))
    } else {
        None
    };
    match missing {
        Some(why) => Err(color_eyre::eyre::eyre!(
            "the viewer needs a terminal, and {why}. Use the commands instead: `bonsai tree FILE`, \
             `bonsai context FILE`, `bonsai stats FILE` (`bonsai --help` lists them all)"
        )),
        None => Ok(()),
    }
}

/// Bracketed paste (a pasted text arrives whole) and, unless `bonsai.mouse` is false, the mouse.
fn enter_extras(mouse: bool) -> std::io::Result<()> {
    crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste)?;
    if mouse {
        crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture)?;
    }
    Ok(())
}

fn leave_extras(mouse: bool) {
    if mouse {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    }
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableBracketedPaste);
}

/// What a terminal event means for the app.
fn action_for_event(app: &App, ev: crossterm::event::Event) -> Option<Action> {
    use crossterm::event::{Event, KeyEventKind, MouseButton, MouseEventKind};
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => app.action_for_key(&k),
        Event::Paste(t) => Some(Action::Paste(t)),
        Event::Resize(width, height) => Some(Action::Resize { width, height }),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::Down(MouseButton::Left) => Some(Action::Click {
                col: m.column,
                row: m.row,
            }),
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => Some(Action::Wheel {
                down: m.kind == MouseEventKind::ScrollDown,
                col: m.column,
                row: m.row,
            }),
            _ => None,
        },
        _ => None,
    }
}

/// The app to start with: the demo (with its notice) or the picker over it, at once; a file
/// read by the app's own jobs behind its loading frame (`rows`: the frame's room for the
/// leaf's newest entries).
fn first_app(target: Target, at: Option<String>, settings: Settings, registry: Registry, rows: usize) -> Result<App> {
    let notice = match target {
        Target::File(p) => {
            let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
            return Ok(App::loading(p, size, rows, at, settings, registry));
        }
        Target::Demo => Some("No Pi sessions found: showing bonsai's bundled demo session (read-only).".to_string()),
        Target::Picker | Target::PickerIn(_) => None,
    };
    let demo = Session::from_bytes(DEMO.to_vec())
        .map_err(|e| eyre!("demo session: {e}"))?
        .read_as(crate::store::pi_version::followed());
    let mut app = App::with_session(Arc::new(demo), None, settings, registry);
    if let Target::PickerIn(root) = &target {
        app.outside.sessions_root = Some(root.clone());
    }
    app.log.notice = notice.or_else(|| app.diagnostics_notice());
    if let Some(at) = at {
        app.update(Action::SelectEntry(at));
    }
    Ok(app)
}

/// q or Ctrl+C: the way out of the loading frame.
fn is_quit_key(ev: &crossterm::event::Event) -> bool {
    use crossterm::event::{Event, KeyCode, KeyModifiers};
    matches!(ev, Event::Key(k) if k.code == KeyCode::Char('q')
        || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    target: Target,
    settings: Settings,
    registry: Registry,
    handle: tokio::runtime::Handle,
    at: Option<String>,
    resume: Option<(String, Vec<PathBuf>)>,
) -> Result<Option<crate::store::resume::PiRun>> {
    use crossterm::event::{Event, EventStream};
    use futures_util::StreamExt;
    let mut events = EventStream::new();
    // Keys typed while the first session loads: given to it once it is there, not lost.
    let mut typed_ahead = Vec::new();
    let mouse = settings.mouse_capture();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    // For timing start to first session frame from outside (scripts/first-frame.sh).
    let exit_after_first_frame = std::env::var_os("BONSAI_EXIT_AFTER_FIRST_FRAME").is_some();
    let is_picker = matches!(target, Target::Picker | Target::PickerIn(_));
    let size = terminal.size()?;
    let rows = size.height.saturating_sub(loading::CHROME_ROWS) as usize;
    let mut app = first_app(target, at, settings, registry, rows)?;
    app.screen.no_color = no_color;
    // Said once: which Pi is followed when it is not the one asked for (or none was found).
    if let Some(n) = crate::store::pi_version::decided().and_then(|f| f.note.clone()) {
        app.log.status = Some(n);
    }
    app.update(Action::Resize {
        width: size.width,
        height: size.height,
    });
    if let Some((query, matched)) = resume {
        // `bonsai resume WORDS` with several matches: every project's, only those.
        app.open_picker_to_resume(&query, matched);
        if let Some(p) = &mut app.parts.picker {
            p.launched_without_session = true;
        }
    } else if is_picker {
        app.update(Action::OpenPicker);
        if let Some(p) = &mut app.parts.picker {
            p.launched_without_session = true;
        }
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<runner::Done<App>>();
    let mut jobs = runner::Runner::new(handle.clone(), tx);
    let mut ticks = tokio::time::interval(Duration::from_millis(250));
    let mut dirty = true;
    let mut told = FirstFrameTold::default();
    loop {
        jobs.start_all(app.take_jobs());
        for effect in app.take_effects() {
            if let Terminal::ResumeInPi { run, handover } = effect {
                if let Some(why) = run.refusal() {
                    app.log.status = Some(why);
                    dirty = true;
                    continue;
                }
                match handover {
                    Handover::End => return Ok(Some(run)),
                    Handover::SwitchPi(handoff) => {
                        match std::fs::write(&handoff, run.file.to_string_lossy().as_bytes()) {
                            Ok(()) => return Ok(None),
                            Err(e) => {
                                app.log.status = Some(format!("cannot tell Pi which session to open ({e})"));
                                dirty = true;
                            }
                        }
                    }
                    Handover::Return => {
                        // The key reader stops while Pi has the terminal (else it would take
                        // some of Pi's keys), and starts again after.
                        drop(events);
                        let said = suspended(terminal, mouse, || run_pi(&run));
                        events = EventStream::new();
                        app.update(Action::PiExited(said));
                        dirty = true;
                    }
                }
                continue;
            }
            dirty |= carry_out(effect, terminal, mouse, &mut app);
        }
        if dirty {
            terminal.draw(|f| draw(f, &app))?;
            dirty = false;
            jobs.start_all(app.take_after_frame());
        }
        if exit_after_first_frame {
            told.after_draw(&app);
        }
        if app.quit {
            match app.hold_quit_for_the_index() {
                Some(saves) => {
                    for job in saves {
                        jobs.start(job);
                    }
                    dirty = true;
                    continue;
                }
                None => {
                    return match app.fatal.take() {
                        Some(e) => Err(e.into()),
                        None => Ok(None),
                    };
                }
            }
        }
        tokio::select! {
            ev = events.next() => match ev {
                // While the session loads only q and Ctrl+C act (the job is left to the
                // runtime's shutdown); other keys wait for the session, a resize is the frame's.
                Some(Ok(ev)) if app.is_loading() && is_quit_key(&ev) => return Ok(None),
                Some(Ok(ev)) if app.is_loading() && !matches!(ev, Event::Resize(..)) => typed_ahead.push(ev),
                Some(Ok(ev)) => {
                    if let Some(a) = action_for_event(&app, ev) {
                        dirty |= app.update(a);
                    }
                    // Keys already waiting (a held key, keys sent at once) are taken before
                    // the frame and the jobs: one frame, and one selection job, for all of
                    // them. 40 j at once on the 100 MB reference cost 111 CPU ticks when
                    // each drew its frame (one j: 1–3). A key that hands the terminal over
                    // (an effect) or quits stops the batch.
                    app.hold_refresh();
                    let mut ended = None;
                    for _ in 0..256 {
                        if app.quit || app.has_effects() || app.is_loading() {
                            break;
                        }
                        // Polled with this task's waker: crossterm's stream wakes the task
                        // it was last polled from, and a waker that wakes nothing left keys
                        // waiting for the next tick (a tmux test caught it).
                        let next = match futures_util::poll!(events.next()) {
                            std::task::Poll::Ready(r) => Some(r),
                            std::task::Poll::Pending => None,
                        };
                        match next {
                            Some(Some(Ok(ev))) => {
                                if let Some(a) = action_for_event(&app, ev) {
                                    dirty |= app.update(a);
                                }
                            }
                            Some(Some(Err(e))) => {
                                ended = Some(Err(e.into()));
                                break;
                            }
                            Some(None) => {
                                ended = Some(Ok(None));
                                break;
                            }
                            None => break,
                        }
                    }
                    app.release_refresh();
                    if let Some(r) = ended {
                        return r;
                    }
                }
                Some(Err(e)) => return Err(e.into()),
                None => return Ok(None),
            },
            Some(r) = rx.recv() => {
                jobs.finished(&r);
                let was_loading = app.is_loading();
                dirty |= app.job_done(r);
                if was_loading && !app.is_loading() {
                    for ev in std::mem::take(&mut typed_ahead) {
                        if let Some(a) = action_for_event(&app, ev) {
                            app.update(a);
                        }
                    }
                }
            }
            _ = ticks.tick() => {
                dirty |= app.update(tick(&app));
            }
        }
    }
}

/// What `BONSAI_EXIT_AFTER_FIRST_FRAME` has said (on standard error, for
/// `scripts/first-frame.sh`): the leaf's newest entries on the loading frame, the first
/// session frame (tree and detail), then the whole one (with the gauge; a big session's
/// selection reports it a moment later), after which the process ends.
#[derive(Default)]
struct FirstFrameTold {
    preview: bool,
    session: bool,
}

impl FirstFrameTold {
    fn after_draw(&mut self, app: &App) {
        if let Some(l) = app.loading_frame() {
            if l.preview.is_some() && !self.preview {
                eprintln!("leaf's newest entries on screen after {:.1} ms", since_start_ms());
                self.preview = true;
            }
            return;
        }
        if !self.session {
            eprintln!("first session frame after {:.1} ms", since_start_ms());
            self.session = true;
        }
        if app.selection.gauge.is_some() || app.selected_leaf().is_none() {
            let ms = since_start_ms();
            ratatui::restore();
            eprintln!("whole first frame (tree, detail, gauge) after {ms:.1} ms");
            std::process::exit(0);
        }
    }
}

/// What the app asked of the terminal (the clipboard, `$EDITOR`, `$PAGER`); true when the
/// screen must be drawn again.
fn carry_out(effect: Terminal, terminal: &mut ratatui::DefaultTerminal, mouse: bool, app: &mut App) -> bool {
    match effect {
        Terminal::Clipboard(text) => {
            use std::io::Write;
            let _ = crossterm::execute!(
                std::io::stdout(),
                crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
            );
            let _ = std::io::stdout().flush();
            false
        }
        Terminal::EditSummary(text) => {
            let edited = suspended(terminal, mouse, || edit_in_editor(&text));
            app.update(Action::EditorClosed(edited));
            true
        }
        Terminal::Pager(text) => {
            suspended(terminal, mouse, || show_in_pager(&text));
            true
        }
        // Carried out by the event loop itself (it stops its key reader first).
        Terminal::ResumeInPi { .. } => false,
    }
}

/// Leave the UI for a program that needs the terminal (mouse and paste modes off), then come
/// back.
fn suspended<T>(terminal: &mut ratatui::DefaultTerminal, mouse: bool, run: impl FnOnce() -> T) -> T {
    leave_extras(mouse);
    ratatui::restore();
    let out = run();
    *terminal = ratatui::init();
    let _ = enter_extras(mouse);
    let _ = terminal.clear();
    out
}

/// Edit `text` in $VISUAL / $EDITOR (or vi). None if the editor failed.
fn edit_in_editor(text: &str) -> Option<String> {
    // A fresh private folder (random name, 0700): a fixed name in the shared temp folder could
    // be planted beforehand as a link to another file.
    let dir = tempfile::Builder::new().prefix("bonsai-").tempdir().ok()?;
    let file = dir.path().join("summary.md");
    std::fs::write(&file, text).ok()?;
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
    ok.then(|| std::fs::read_to_string(&file).ok()).flatten()
}

/// Show `text` in $PAGER (or less).
fn show_in_pager(text: &str) {
    use std::io::Write;
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less".into());
    if let Ok(mut child) = std::process::Command::new("sh")
        .arg("-c")
        .arg(&pager)
        .stdin(std::process::Stdio::piped())
        .spawn()
    {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(text.as_bytes());
        }
        let _ = child.wait();
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    pub fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::from(c)
    }

    pub fn ch(c: char) -> KeyEvent {
        KeyEvent::from(KeyCode::Char(c))
    }

    pub fn shift(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::SHIFT)
    }

    pub fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    /// Each character of `text` as a key press.
    pub fn typed(a: &mut App, text: &str) {
        for c in text.chars() {
            a.handle_key(ch(c));
        }
    }

    /// True (and the skip said by name, past libtest's capture) when ../shared is absent: a
    /// clone of the repository alone skips the snapshots made on its fixtures.
    /// `BONSAI_REQUIRE_SHARED=1` makes the absence a failure.
    pub fn no_shared(test: &str) -> bool {
        use std::io::Write;
        if shared("").is_dir() {
            return false;
        }
        if std::env::var("BONSAI_REQUIRE_SHARED").as_deref() == Ok("1") {
            panic!("{test}: ../shared is required (BONSAI_REQUIRE_SHARED=1) but absent");
        }
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: it is made on ../shared's fixtures, absent here"
        );
        true
    }

    /// One of the repository's own Pi 0.87.1 sessions (fixtures/pi-0.87.1, made by
    /// scripts/make-fixtures.mjs).
    pub fn own(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/pi-0.87.1")
            .join(name)
    }

    /// A file of ../shared/fixtures (or of `$BONSAI_SHARED/fixtures`).
    pub fn shared(rel: &str) -> PathBuf {
        std::env::var_os("BONSAI_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared"))
            .join("fixtures")
            .join(rel)
    }

    pub fn app_for(path: &Path) -> App {
        let s = crate::store::load_session(path).unwrap();
        for_snapshots(App::new(
            s,
            Some(path.to_path_buf()),
            Settings::default(),
            Registry::builtin_only(),
        ))
    }

    pub fn demo_app() -> App {
        for_snapshots(App::new(
            Session::from_bytes(DEMO.to_vec()).unwrap(),
            None,
            Settings::default(),
            Registry::builtin_only(),
        ))
    }

    /// Offline, without the background count of every entry, with a throwaway agent
    /// directory, its jobs run.
    fn for_snapshots(mut a: App) -> App {
        a.setup.force_offline = true;
        // Snapshots show what their tests counted, not every entry.
        a.setup.auto_exact = false;
        if let Some(c) = a.exact.all.cancel.take() {
            c.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        a.pending.queue.retain(|j| !j.is::<crate::ui::jobs::ExactAllJob>());
        a.exact.all.progress = None;
        // Never the user's own agent directory (pins are written there).
        a.outside.agent_dir = tempfile::tempdir()
            .map(|d| d.keep())
            .unwrap_or_else(|_| std::env::temp_dir());
        a.run_jobs_now();
        a
    }

    pub fn render(app: &mut App, w: u16, h: u16) -> String {
        app.update(Action::Resize { width: w, height: h });
        app.run_jobs_now();
        let mut out = screen(w, h, |f| draw(f, app));
        out.push('\n');
        out
    }

    /// What `draw` puts on a `w`×`h` screen, as text: one line per row, trailing blanks cut.
    pub fn screen(w: u16, h: u16, draw: impl FnOnce(&mut ratatui::Frame)) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(draw).unwrap();
        let buf = t.backend().buffer();
        (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
