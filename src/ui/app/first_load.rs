//! The session bonsai was started on, read as jobs like any other work: the app exists from
//! the first frame (the loading frame is its state), the parse is a job that reports how far
//! it is, a big file's leaf rows are another, and the early gauge comes from the load itself.
//! Keys typed meanwhile are kept by the event loop and given to the session once it is there.

use super::App;
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::engine::view::tree_view::FilterMode;
use crate::store::index::{Place, Used};
use crate::ui::jobs::{self, Indexed, LoadReport};
use crate::ui::loading::FirstLoad;
use crate::ui::loading::Loading;
use crate::ui::runner::{Queued, Receives};
use std::path::PathBuf;
use std::sync::Arc;

/// Files from this size show the leaf's newest entries while they load: below it the whole
/// parse is about as quick as reading the tail (100 MB: ~60 ms).
const TAIL_PREVIEW_FROM: u64 = 256 << 20;

/// What the app shows while the file is read: a session with a header and no entry (nothing
/// is drawn from it; the loading frame covers the screen).
fn placeholder() -> Arc<Session> {
    const HEADER: &str =
        r#"{"type":"session","version":3,"id":"loading","timestamp":"1970-01-01T00:00:00.000Z","cwd":"/"}"#;
    Arc::new(Session::from_bytes(format!("{HEADER}\n").into_bytes()).expect("a header alone is a session"))
}

impl App {
    /// The app for `path` (of `size` bytes, as the event loop found it), its reading queued:
    /// the parse (with the early gauge unless an entry was asked for) and, for a big file, the
    /// leaf's newest `rows` from its end.
    pub fn loading(
        path: PathBuf,
        size: u64,
        rows: usize,
        at: Option<String>,
        settings: Settings,
        registry: Registry,
    ) -> App {
        let mut app = App::with_session(placeholder(), None, settings, registry);
        // The placeholder's own work is not wanted (none of it ran).
        app.pending.queue.clear();
        app.log.status = None;
        let early = at
            .is_none()
            .then(|| (app.setup.settings.clone(), app.setup.registry.clone()));
        let preview = (size >= TAIL_PREVIEW_FROM).then(|| {
            let filter = FilterMode::parse(app.setup.settings.tree_filter_mode()).unwrap_or_default();
            (filter, rows)
        });
        let index = app.index_place();
        app.start(jobs::LoadJob {
            path: path.clone(),
            size,
            early,
            index,
            preview,
        });
        app.first_load = Some(FirstLoad {
            frame: Loading {
                name: path.display().to_string(),
                size,
                parsed: 0,
                preview: None,
                via: None,
            },
            at,
        });
        app
    }

    /// The loading frame is up (the first session is being read).
    pub fn is_loading(&self) -> bool {
        self.first_load.is_some()
    }

    /// What the loading frame shows, while it is up.
    pub fn loading_frame(&self) -> Option<&Loading> {
        self.first_load.as_ref().map(|l| &l.frame)
    }
}

/// The first load's reports.
impl Receives<jobs::LoadJob> for App {
    fn receive(&mut self, r: LoadReport) {
        match (r, &mut self.first_load) {
            (LoadReport::Progress { parsed }, Some(l)) => l.frame.parsed = parsed,
            (LoadReport::Via(used), Some(l)) => l.frame.via = Some(used),
            (LoadReport::Preview(preview), Some(l)) => l.frame.preview = preview,
            (LoadReport::Loaded(o), _) => self.on_loaded(o.path, o.result, o.index),
            (LoadReport::EarlySelection(info), _) => self.on_early_selection(info),
            _ => {}
        }
    }
}

/// An index written, or why not: the next open tells. A quit that waited for it goes on.
impl Receives<jobs::SaveIndexJob> for App {
    fn receive(&mut self, _: Result<u64, String>) {
        self.pending.index_saves = self.pending.index_saves.saturating_sub(1);
        if self.pending.index_saves == 0 && self.pending.quit_waits.is_some() {
            self.quit = true;
        }
    }
}

/// How long a quit waits for the session's index before it quits without one.
/// A 1 GB session's index takes about a second to write.
pub const INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

impl App {
    /// On quit: the jobs that write the session's index, when one is still to be written.
    /// Without it the next open parses the whole file again (1.2–1.8 s for 1 GB instead of
    /// ~65 ms).
    /// The quit then waits for them, saying so in the status line; any key quits at once.
    /// `None`: quit now.
    pub fn hold_quit_for_the_index(&mut self) -> Option<Vec<Queued<App>>> {
        if self.fatal.is_some() || self.pending.index_saves == 0 {
            return None;
        }
        // Waiting already: the index came, a key was pressed, or the wait ran out.
        if self.pending.quit_waits.is_some() {
            return None;
        }
        self.quit = false;
        self.pending.quit_waits = Some(self.outside.clock);
        self.log.status = Some("writing this session's index so it opens fast next time… (any key quits now)".into());
        let (index, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending.after_frame)
            .into_iter()
            .partition(|j| j.is::<jobs::SaveIndexJob>());
        self.pending.after_frame = rest;
        Some(index.into_iter().map(|j| j.for_doc(&self.pending.doc)).collect())
    }

    /// The first session is read: it replaces the placeholder (the status said so far, such as
    /// which Pi is followed, stays), or the run ends with the reason.
    fn on_loaded(
        &mut self,
        path: PathBuf,
        result: Result<Arc<Session>, crate::store::OpenError>,
        index: Option<Indexed>,
    ) {
        let Some(load) = self.first_load.take() else { return };
        let s = match result {
            Ok(s) => s,
            Err(e) => {
                self.fatal = Some(e);
                self.quit = true;
                return;
            }
        };
        let status = self.log.status.take();
        let messages = std::mem::take(&mut self.log.messages);
        let big = s.entries.len() > super::LARGE_SESSION;
        let from_index = index
            .as_ref()
            .map(|i| i.used.clone())
            .filter(|u| !u.wants_saving() || matches!(u, Used::Extended(_)));
        self.open_session(s.clone(), path, true);
        self.save_index_later(&s, index);
        self.log.messages = messages;
        self.log.status = status
            .or(self.log.status.take())
            .or_else(|| from_index.map(|u| format!("Opened {}", u.describe())));
        match load.at {
            Some(at) => self.select_entry_ref(&at),
            // The load works out the leaf's gauge beside this: its job waits for that answer.
            None if big => self.hold_selection_for_the_load(),
            None => {}
        }
    }

    /// Where this app keeps session indexes (none when the setting turns them off).
    pub(crate) fn index_place(&self) -> Option<Place> {
        self.setup.index.clone()
    }

    /// Hold the writing of `s`'s index, when it was opened without one that still fits,
    /// until its first whole frame is drawn: a job, so it never slows that frame.
    /// A quit waits for it a while (`hold_quit_for_the_index`).
    pub(super) fn save_index_later(&mut self, s: &Arc<Session>, index: Option<Indexed>) {
        let Some(place) = self.index_place() else { return };
        if let Some(ix) = index.filter(|i| i.used.wants_saving()) {
            self.pending.index_saves += 1;
            self.pending.after_frame.push(Queued::new(jobs::SaveIndexJob {
                place,
                source: ix.source,
                session: s.clone(),
            }));
        }
    }

    /// Take the selection job just queued for the leaf: the load is computing the same.
    fn hold_selection_for_the_load(&mut self) {
        let queued = self
            .pending
            .queue
            .iter()
            .position(|j| j.job::<jobs::SelectionJob>().is_some_and(|s| !s.want_classes));
        if let Some(k) = queued {
            self.pending.early = Some(self.pending.queue.remove(k));
        }
    }

    /// The load's gauge for the leaf: used when it is what the held job would give (the same
    /// selection, leaf and keepRecentTokens), its cut left to a job after the first whole
    /// frame (no view of that frame shows it: the cut preview says "computing the cut…");
    /// else the held job runs after all.
    fn on_early_selection(
        &mut self,
        early: Option<Box<(crate::ui::selection::SelectionInfo, crate::ui::selection::CutToCome)>>,
    ) {
        let Some(held) = self.pending.early.take() else { return };
        let Some(&jobs::SelectionJob {
            generation,
            leaf,
            keep_recent,
            ..
        }) = held.job::<jobs::SelectionJob>()
        else {
            return;
        };
        if generation != self.selection.generation {
            return;
        }
        match early.map(|b| *b) {
            Some((info, to_come)) if info.leaf == leaf && info.gauge.keep_recent == keep_recent => {
                self.on_selection_info(generation, info);
                self.pending
                    .after_frame
                    .push(Queued::to::<_, super::SelectionState>(jobs::CutJob {
                        generation,
                        session: self.doc.session.clone(),
                        to_come: Box::new(to_come),
                    }));
            }
            _ => self.pending.queue.push(held),
        }
    }
}
