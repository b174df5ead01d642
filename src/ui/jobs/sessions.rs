//! The picker's jobs and the small chores: listing, searching, finding, pins and the trash.

use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::store::{self, SessionInfo};
use crate::ui::runner::{Job, Report};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Small file work (the trash, old backups, pins, a listed session's name).
pub struct ChoreJob {
    pub chore: crate::ui::chores::Chore,
    pub agent_dir: PathBuf,
}

/// List sessions (the picker; `all`: every project), with bonsai's pins.
pub struct ListJob {
    pub cwd: PathBuf,
    pub settings: Settings,
    pub all: bool,
    /// Pi's agent directory (bonsai's pins are under it).
    pub agent_dir: PathBuf,
    /// Every session under this folder instead (a folder of project folders).
    pub root: Option<PathBuf>,
}

/// Search inside `files` (the picker), each file's hits reported as it is done.
pub struct SearchSessionsJob {
    pub id: u64,
    pub files: Vec<PathBuf>,
    pub query: String,
    pub cancel: Arc<AtomicBool>,
}

/// Find text inside the open session (its bytes in memory), hits reported as they come.
pub struct FindInSessionJob {
    pub id: u64,
    pub session: Arc<Session>,
    pub query: String,
    pub cancel: Arc<AtomicBool>,
}

/// The sessions listed, with bonsai's records beside them.
#[derive(Debug)]
pub struct Listed {
    pub all: bool,
    pub sessions: Vec<SessionInfo>,
    /// Pi's sessions in every project, counted when this project has none.
    pub everywhere: Option<usize>,
    /// The pinned sessions (bonsai's own file).
    pub pins: Vec<PathBuf>,
    /// What is in bonsai's trash, with the bytes each holds and its title (as a listed
    /// session's row gives it).
    pub trash: Vec<(store::trash::Trashed, u64, Option<String>)>,
    /// When the listing was read (the picker lists again two seconds later).
    pub at: std::time::Instant,
    /// bonsai's backups beside the listed sessions.
    pub leftovers: Vec<store::backups::Backup>,
    /// The documents bonsai exported, still as it wrote them.
    pub exports: Vec<store::exports::Export>,
}

/// A search of the listed sessions: each file as it is done, then the end.
#[derive(Debug)]
pub enum SearchReport {
    File {
        id: u64,
        path: PathBuf,
        hits: Result<Vec<crate::engine::view::search::Hit>, store::search::SearchError>,
    },
    /// Every file searched, or the search stopped.
    Done {
        id: u64,
        elapsed_ms: u64,
        error: Option<store::search::SearchError>,
    },
}

/// A find in the open session: hits one piece at a time, then the end.
#[derive(Debug)]
pub enum FindReport {
    /// (entry, matches in it).
    Hits { id: u64, hits: Vec<(usize, usize)> },
    /// The find ended, or was stopped.
    Done {
        id: u64,
        elapsed_ms: u64,
        error: Option<store::search::SearchError>,
    },
}

/// The find owns its search: its hits go to it.
impl crate::ui::runner::Answers<FindInSessionJob> for crate::ui::find::Find {
    type Effects = Vec<crate::ui::component::Effect>;
    fn answer(&mut self, r: FindReport) -> Vec<crate::ui::component::Effect> {
        match r {
            FindReport::Hits { id, hits } => self.take_hits(id, hits),
            FindReport::Done { id, elapsed_ms, error } => self.take_done(id, elapsed_ms, error.map(|e| e.to_string())),
        }
    }
}

/// The picker's search owns its job: each file's hits go to it.
impl crate::ui::runner::Answers<SearchSessionsJob> for crate::ui::picker::SessionSearch {
    type Effects = Vec<crate::ui::component::Effect>;
    fn answer(&mut self, r: SearchReport) -> Vec<crate::ui::component::Effect> {
        match r {
            SearchReport::File { id, path, hits } => self.take_file(id, path, hits),
            SearchReport::Done { id, elapsed_ms, error } => self.take_done(id, elapsed_ms, error),
        }
        vec![]
    }
}

impl Job for ChoreJob {
    type Output = crate::ui::chores::ChoreDone;
    const NAME: &'static str = "chore";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        crate::ui::chores::run(self.chore, &self.agent_dir, store::clock::now_ms())
    }
}

impl Job for ListJob {
    type Output = Listed;
    const NAME: &'static str = "list";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Listed>) -> Listed {
        let ListJob {
            cwd,
            settings,
            all,
            agent_dir,
            root,
        } = self;
        let sessions = match &root {
            Some(root) => store::sessions::list_sessions_under(&agent_dir, root),
            None => store::sessions::list_sessions_in(&agent_dir, &cwd, &settings, all),
        };
        // None here: say how many there are elsewhere (counted, not opened).
        let everywhere = (sessions.is_empty() && !all && root.is_none())
            .then(|| store::sessions::count_all_sessions_in(&agent_dir, &cwd, &settings));
        // The trash and each listed folder's leftovers, for housekeeping in the picker.
        let trash = store::trash::list(&agent_dir)
            .into_iter()
            .map(|t| {
                let bytes = store::trash::size(&agent_dir, &t);
                let title = store::sessions::title_of(&store::trash::trash_dir(&agent_dir).join(&t.name));
                (t, bytes, title)
            })
            .collect();
        let mut dirs: Vec<PathBuf> = sessions.iter().map(|s| s.dir.clone()).collect();
        dirs.sort();
        dirs.dedup();
        Listed {
            at: std::time::Instant::now(),
            all,
            sessions,
            everywhere,
            pins: store::pins::load(&agent_dir),
            trash,
            leftovers: store::backups::find(&dirs),
            exports: store::exports::list(&agent_dir),
        }
    }
}

impl Job for SearchSessionsJob {
    type Output = SearchReport;
    const NAME: &'static str = "search sessions";
    /// Each file is said when it is done.
    fn run(self, report: Report<SearchReport>) -> SearchReport {
        let SearchSessionsJob {
            id,
            files,
            query,
            cancel,
        } = self;
        let started = std::time::Instant::now();
        let error = match crate::engine::view::search::Query::new(&query, false, None) {
            Ok(q) => {
                store::search::search(&files, &q, &cancel, |path, hits| {
                    report.say(SearchReport::File {
                        id,
                        path: path.to_path_buf(),
                        hits,
                    })
                });
                None
            }
            Err(e) => Some(e.into()),
        };
        SearchReport::Done {
            id,
            elapsed_ms: started.elapsed().as_millis() as u64,
            error,
        }
    }
}

impl Job for FindInSessionJob {
    type Output = FindReport;
    const NAME: &'static str = "find in session";
    fn run(self, report: Report<FindReport>) -> FindReport {
        let started = std::time::Instant::now();
        let error = find_in_session(self.id, &self.session, &self.query, &self.cancel, &report).err();
        FindReport::Done {
            id: self.id,
            elapsed_ms: started.elapsed().as_millis() as u64,
            error,
        }
    }
}

/// Find `query` in the session's bytes on every core; each piece's hits are reported as
/// entries (by the line each hit is on) as soon as the piece is done.
fn find_in_session(
    id: u64,
    session: &Session,
    query: &str,
    cancel: &AtomicBool,
    report: &Report<FindReport>,
) -> Result<(), store::search::SearchError> {
    let q = crate::engine::view::search::Query::new(query, false, None)?;
    store::search::search_bytes(&session.buf, &q, cancel, |hits| {
        let entries = hits
            .into_iter()
            .filter_map(|h| {
                let line = h.line as u32;
                let at = session.entries.partition_point(|e| e.line < line);
                session
                    .entries
                    .get(at)
                    .filter(|e| e.line == line)
                    .map(|_| (at, h.matches))
            })
            .collect();
        report.say(FindReport::Hits { id, hits: entries });
    })
}
