//! The open session's file: read, opened, read again, indexed, written, forked, deleted,
//! exported.

use crate::engine::edit::plan::WriteRequest;
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::store;
use crate::ui::runner::{Job, Report};
use crate::ui::selection::{self, SelectionInfo};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Sessions above this many entries compute the selection's gauge and cut off the key path
/// (as jobs; below it they are instant and run in place).
pub const LARGE_SESSION: usize = 20_000;

/// The file changed (Pi appended; another program wrote it): the session as it is now.
pub struct ReloadJob {
    pub session: Arc<Session>,
    pub path: PathBuf,
    /// How much of what is shown is compared with the file (every byte when its length stayed).
    pub compare: store::files::Compare,
}

/// Open another session (the picker), through its index where it has one.
pub struct OpenJob {
    pub path: PathBuf,
    pub index: Option<store::index::Place>,
    /// The file's index failed its check: removed first, so the file is parsed whole.
    pub forget_index: bool,
}

/// Write the index of a session just opened (in the background, after its first frame;
/// a quit does not wait for it).
pub struct SaveIndexJob {
    pub place: store::index::Place,
    pub source: store::index::Source,
    pub session: Arc<Session>,
}

/// The session bonsai was started on, read with its progress said (`LoadReport`).
/// `early`: a big session's gauge is worked out here right after the parse.
/// The app builds its tree meanwhile, so the first frame has the gauge.
/// The cut is left to a `CutJob` after the first frame.
pub struct LoadJob {
    pub path: PathBuf,
    pub size: u64,
    pub early: Option<(Settings, Arc<Registry>)>,
    pub index: Option<store::index::Place>,
    /// A big file's leaf rows for the loading frame (the tree's filter, how many rows),
    /// read from its end beside a whole parse (`LoadReport::Preview`); an open from the index is
    /// quicker than that read, so it has none.
    pub preview: Option<(crate::engine::view::tree_view::FilterMode, usize)>,
}

/// Append, decided again on the file as it is (see `engine::edit::plan`).
pub struct WriteJob {
    pub path: PathBuf,
    pub request: WriteRequest,
    pub what: String,
    /// The entry to select afterwards (by id; `None`: the new leaf).
    pub select: Option<String>,
    /// A refusal reads the file again (a summary dialog waits to be given back with what
    /// changed); without one, a refused write reads nothing more.
    pub reread_on_refusal: bool,
    /// The session what is written was made from: proven against the file first when it
    /// was opened through bonsai's index (every line, not only those read).
    pub built_from: Arc<Session>,
}

/// A new session file with the path up to `cut` (Pi's `/fork` and `/clone`), beside
/// `source`.
pub struct BranchedJob {
    pub session: Arc<Session>,
    pub cut: Option<usize>,
    pub source: PathBuf,
    pub what: &'static str,
    /// The text a fork hands back (the user message it forked before).
    pub editor_text: Option<String>,
}

/// Delete the branch at `target` from the file `session` was read from (refused if the
/// file is no longer exactly those bytes), then read the new file.
pub struct DeleteBranchJob {
    pub path: PathBuf,
    pub session: Arc<Session>,
    pub target: String,
}

/// The path to `leaf` as a document at `out` (a new file; the format from its extension).
pub struct ExportJob {
    pub session: Arc<Session>,
    /// The session's file: the export gets its mode.
    pub source: Option<PathBuf>,
    pub leaf: usize,
    pub out: PathBuf,
}

/// A finished write: the session after it and what was appended.
#[derive(Debug)]
pub struct Written {
    pub session: Arc<Session>,
    pub applied: store::Appended,
    pub prepared: crate::engine::edit::plan::Prepared,
    pub what: String,
    pub select: Option<String>,
}

/// The session read again after it changed.
#[derive(Debug)]
pub struct Reloaded {
    /// `None`: the file holds the very bytes shown (touched, or written again the same).
    pub result: Result<Option<Arc<Session>>, store::OpenError>,
    /// The file was not the shown session plus appended lines (rewritten, truncated).
    pub rewritten: bool,
    /// The file's last change was bonsai's own (`bonsai restore`, another window).
    pub by_bonsai: bool,
}

/// Another session read (the picker), through its index where it has one.
#[derive(Debug)]
pub struct Opened {
    pub path: PathBuf,
    pub result: Result<Arc<Session>, store::OpenError>,
    pub index: Option<Indexed>,
}

/// How the first session's read goes, then the session and its early gauge.
#[derive(Debug)]
pub enum LoadReport {
    /// Bytes parsed so far.
    Progress { parsed: usize },
    /// Read from its index, or parsed whole and why.
    Via(store::index::Used),
    /// The leaf's newest rows for the loading frame (`None`: they could not be read).
    Preview(Option<crate::engine::view::tree_view::TailPreview>),
    /// The session read, or why not.
    Loaded(Box<Opened>),
    /// The gauge of the leaf, worked out by the load.
    /// `None`: the leaf has none, or the load had nothing to work on.
    EarlySelection(Option<Box<(SelectionInfo, selection::CutToCome)>>),
}

/// A write's end.
#[derive(Debug)]
pub struct WriteOutcome {
    pub result: Result<Written, store::WriteError>,
    /// After a refused write: the session as the file holds it now, read by the job.
    /// A dialog given back shows what changed.
    pub now: Option<Arc<Session>>,
}

/// A fork's or clone's new file.
#[derive(Debug)]
pub struct BranchedOutcome {
    pub what: &'static str,
    pub result: Result<PathBuf, store::WriteError>,
    pub editor_text: Option<String>,
}

impl Job for ReloadJob {
    type Output = Reloaded;
    const NAME: &'static str = "reload";
    /// The session read again after it changed: whether it was rewritten, whether bonsai
    /// wrote it.
    fn run(self, _: Report<Reloaded>) -> Reloaded {
        let r = store::files::reload_shown(&self.session, &self.path, self.compare);
        let rewritten = r.as_ref().is_ok_and(|x| x.as_ref().is_some_and(|(_, w)| *w));
        let by_bonsai = std::fs::metadata(&self.path).is_ok_and(|m| store::own_writes::is_ours(&self.path, &m));
        Reloaded {
            result: r.map(|x| x.map(|(s, _)| Arc::new(s))),
            rewritten,
            by_bonsai,
        }
    }
}

impl Job for OpenJob {
    type Output = Opened;
    const NAME: &'static str = "open";
    fn run(self, _: Report<Opened>) -> Opened {
        if let Some(place) = self.index.as_ref().filter(|_| self.forget_index) {
            store::index::forget(place, &self.path);
        }
        let (result, index) = open_indexed(&self.path, self.index.as_ref(), None, None);
        Opened {
            path: self.path,
            result,
            index,
        }
    }
}

impl Job for SaveIndexJob {
    type Output = Result<u64, String>;
    const NAME: &'static str = "save index";
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        store::index::save(&self.place, &self.source, &self.session).map_err(|e| e.to_string())
    }
}

impl Job for WriteJob {
    type Output = WriteOutcome;
    const NAME: &'static str = "write";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<WriteOutcome>) -> WriteOutcome {
        let WriteJob {
            path,
            request,
            what,
            select,
            reread_on_refusal,
            built_from,
        } = self;
        let result = if built_from.prove_all() {
            store::write::apply(&path, &request)
        } else {
            Err(store::WriteError::IndexMismatch)
        };
        let result = result.map(|a| Written {
            session: Arc::new(a.session),
            applied: a.appended,
            prepared: a.prepared,
            what,
            select,
        });
        let mismatch = matches!(result, Err(store::WriteError::IndexMismatch));
        let now = (result.is_err() && (reread_on_refusal || mismatch))
            .then(|| store::load_session(&path).ok().map(Arc::new))
            .flatten();
        WriteOutcome { result, now }
    }
}

impl Job for BranchedJob {
    type Output = BranchedOutcome;
    const NAME: &'static str = "fork or clone";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<BranchedOutcome>) -> BranchedOutcome {
        BranchedOutcome {
            what: self.what,
            result: write_branched(&self.session, self.cut, &self.source),
            editor_text: self.editor_text,
        }
    }
}

impl Job for DeleteBranchJob {
    type Output = Result<(store::rewrite::Deleted, Arc<Session>), DeleteJobError>;
    const NAME: &'static str = "delete branch";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        delete_branch(&self.path, &self.session, &self.target)
    }
}

impl Job for ExportJob {
    type Output = Result<(PathBuf, usize), ExportError>;
    const NAME: &'static str = "export";
    const WRITES_FILES: bool = true;
    fn run(self, _: Report<Self::Output>) -> Self::Output {
        export_document(&self.session, self.source.as_deref(), self.leaf, &self.out)
    }
}

impl Job for LoadJob {
    type Output = LoadReport;
    const NAME: &'static str = "load";
    /// Progress is said about every 2% (the loading frame's figure); then the session, then
    /// its leaf's gauge when asked. A panic in the parse is said as an error, not a loading
    /// frame left waiting.
    fn run(self, report: Report<LoadReport>) -> LoadReport {
        run_load(self, &report)
    }
}

/// Read the first session (see `LoadJob`'s `run`).
fn run_load(job: LoadJob, report: &Report<LoadReport>) -> LoadReport {
    let LoadJob {
        path,
        size,
        early,
        index,
        preview,
    } = job;
    let step = (size as usize / 50).max(1);
    let last = std::sync::atomic::AtomicUsize::new(0);
    let progress = |parsed: usize| {
        let before = last.load(Ordering::Relaxed);
        if parsed >= before + step
            && last
                .compare_exchange(before, parsed, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            report.say(LoadReport::Progress { parsed });
        }
    };
    let (result, index) = std::thread::scope(|scope| {
        let told = |used: &store::index::Used| {
            report.say(LoadReport::Via(used.clone()));
            if let (store::index::Used::Parsed(_), Some((filter, rows))) = (used, preview) {
                let path = &path;
                scope.spawn(move || {
                    report.say(LoadReport::Preview(store::files::leaf_path_preview(path, filter, rows)))
                });
            }
        };
        open_indexed(&path, index.as_ref(), Some(&progress), Some(&told))
    });
    let early = early.zip(result.as_ref().ok().cloned());
    let loaded = LoadReport::Loaded(Box::new(Opened { path, result, index }));
    let Some(((settings, registry), s)) = early.filter(|(_, s)| s.entries.len() > LARGE_SESSION) else {
        return loaded;
    };
    report.say(loaded);
    LoadReport::EarlySelection(crate::ui::selection::of_leaf(&s, &settings, &registry).map(Box::new))
}

/// How a session was opened through its index, and what a new index of it describes.
#[derive(Debug, Clone)]
pub struct Indexed {
    pub used: store::index::Used,
    pub source: store::index::Source,
}

/// The session at `path`, through its index when `index` is given; a parse that panics is an
/// error, not a crash.
fn open_indexed(
    path: &std::path::Path,
    index: Option<&store::index::Place>,
    progress: Option<&(dyn Fn(usize) + Sync)>,
    told: Option<&(dyn Fn(&store::index::Used) + Sync)>,
) -> (Result<Arc<Session>, store::OpenError>, Option<Indexed>) {
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store::index::open(path, index, progress, told)
    }));
    match read {
        Ok(Ok(o)) => (
            Ok(Arc::new(o.session)),
            index.map(|_| Indexed {
                used: o.used,
                source: o.source,
            }),
        ),
        Ok(Err(e)) => (Err(e), None),
        Err(_) => (
            Err(store::OpenError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other("the parse stopped on an internal error"),
            }),
            None,
        ),
    }
}

/// Delete the branch at `target` (the one rewrite), then read the file again.
fn delete_branch(
    path: &std::path::Path,
    session: &Session,
    target: &str,
) -> Result<(store::rewrite::Deleted, Arc<Session>), DeleteJobError> {
    let d = store::rewrite::delete_branch(path, &session.buf, target)?;
    let s = store::load_session(path).map_err(DeleteJobError::ReadAgain)?;
    Ok((d, Arc::new(s)))
}

/// Why the TUI's delete did not end with the session read again.
#[derive(Debug, thiserror::Error)]
pub enum DeleteJobError {
    #[error(transparent)]
    Delete(#[from] store::rewrite::DeleteError),
    /// The branch is deleted, but the file could not be read again.
    #[error("deleted, but reading the file again failed: {0}")]
    ReadAgain(store::OpenError),
}

/// Why the TUI's export wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{} exists: nothing written (type another name)", .0.display())]
    Exists(PathBuf),
    #[error(transparent)]
    Write(#[from] store::WriteError),
}

fn export_document(
    s: &Session,
    source: Option<&std::path::Path>,
    leaf: usize,
    out: &std::path::Path,
) -> Result<(PathBuf, usize), ExportError> {
    use crate::engine::export::{self, Scope};
    let scope = Scope::Path(leaf);
    let text = match export::format_for(out).unwrap_or("md") {
        "html" => export::html(s, scope).into_bytes(),
        "json" => export::json(s, scope),
        _ => export::markdown(s, scope).into_bytes(),
    };
    if out.exists() {
        return Err(ExportError::Exists(out.to_path_buf()));
    }
    store::write_document(out, &text, false, source.unwrap_or(std::path::Path::new("")))?;
    Ok((out.to_path_buf(), text.len()))
}

/// Pi's `/fork` or `/clone` file: the path to `cut`, written new (exclusive create, fsync)
/// beside `source` under Pi's file name.
fn write_branched(s: &Session, cut: Option<usize>, source: &std::path::Path) -> Result<PathBuf, store::WriteError> {
    let now = store::clock::now_ms();
    let sid = crate::engine::edit::entries::session_id(now, store::clock::entropy());
    let abs = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    let cwd = s.header.cwd.clone().unwrap_or_default();
    let header = crate::engine::edit::entries::session_header(&sid, &cwd, Some(&abs.to_string_lossy()), now);
    let lines = crate::engine::edit::entries::branched_session(s, cut, header, store::clock::entropy());
    let out = store::new_session_path(abs.parent().unwrap_or(std::path::Path::new(".")), &sid, now);
    store::write_new(&out, &lines, &abs)?;
    Ok(out)
}
