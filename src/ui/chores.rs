//! Small file work the TUI asks for (the trash, old backups, a fork or clone bonsai wrote, the
//! pins, a listed session's name), run by the jobs: the app's update only says what to do
//! (`ChoreJob`) and shows what came back, so it never touches a file itself.

use crate::store::{exports, pins, trash};
use std::path::{Path, PathBuf};

/// What a yes in `Dialog::ConfirmRewrite` does.
#[derive(Debug, Clone)]
pub enum FileChore {
    /// Delete the branch at this entry id from the file.
    Delete(String),
    /// Write the path to `cut` as a new session file (`clone`), or a fork before a user
    /// message whose text goes to the clipboard.
    Branched {
        clone: bool,
        cut: Option<usize>,
        editor_text: Option<String>,
    },
    /// Remove a fork or clone bonsai wrote, if nobody wrote to it since.
    RemoveBranched(BranchedFile),
    /// Move a session (and its backups) into bonsai's trash.
    Trash(std::path::PathBuf),
    /// Put a trashed session back (by its name in the trash).
    RestoreTrashed(String),
    /// Remove these trashed sessions for good.
    EmptyTrash(Vec<String>),
    /// Remove these backups.
    RemoveBackups(Vec<std::path::PathBuf>),
}

impl FileChore {
    /// What a yes does, for the confirm's hint bar.
    pub fn yes_words(&self) -> &'static str {
        match self {
            FileChore::Delete(_) => "yes, delete the branch",
            FileChore::Branched { clone: true, .. } => "yes, write the clone",
            FileChore::Branched { clone: false, .. } => "yes, write the fork",
            FileChore::RemoveBranched(_) => "yes, remove the file",
            FileChore::Trash(_) => "yes, move it to the trash",
            FileChore::RestoreTrashed(_) => "yes, put it back",
            FileChore::EmptyTrash(_) => "yes, remove for good",
            FileChore::RemoveBackups(_) => "yes, remove them",
        }
    }
}

/// A fork or clone bonsai wrote: its path, length and modification time right after.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchedFile {
    pub path: std::path::PathBuf,
    pub what: &'static str,
    pub len: u64,
    pub modified: Option<std::time::SystemTime>,
}

impl BranchedFile {
    pub fn of(path: std::path::PathBuf, what: &'static str) -> Option<BranchedFile> {
        let m = std::fs::metadata(&path).ok()?;
        Some(BranchedFile {
            len: m.len(),
            modified: m.modified().ok(),
            path,
            what,
        })
    }
    /// Nobody wrote to it since bonsai did (Pi resuming it appends).
    pub fn untouched(&self) -> bool {
        std::fs::metadata(&self.path).is_ok_and(|m| m.len() == self.len && m.modified().ok() == self.modified)
    }
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default()
    }
}

/// What to do.
#[derive(Debug, Clone)]
pub enum Chore {
    /// A yes in a housekeeping confirm: trash, restore, empty the trash, remove old backups,
    /// remove a fork or clone bonsai wrote.
    Confirmed(FileChore),
    /// Pin the session on top of the picker, or unpin it.
    TogglePin(PathBuf),
    /// Name a listed session (not the open one): Pi's `session_info`, one appended line.
    RenameListed { path: PathBuf, name: String },
    /// Whether the fork or clone bonsai wrote last is still as it wrote it (`u` offers to
    /// remove it then, else undoes the action before it).
    CheckBranched(BranchedFile),
}

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoreDone {
    /// What to tell the user.
    pub message: String,
    /// The pins after a toggle.
    pub pins: Option<Vec<PathBuf>>,
    /// The sessions listed changed: list them again.
    pub relist: bool,
    /// A checked fork or clone, and whether nobody wrote to it since bonsai did.
    pub branched: Option<(BranchedFile, bool)>,
    /// A session moved to the trash: it leaves the list at once, before the listing again.
    pub trashed: Option<PathBuf>,
}

impl ChoreDone {
    fn said(message: String, relist: bool) -> ChoreDone {
        ChoreDone {
            message,
            pins: None,
            relist,
            branched: None,
            trashed: None,
        }
    }
}

/// Do `chore` under Pi's agent directory `agent` at `now_ms`.
pub fn run(chore: Chore, agent: &Path, now_ms: i64) -> ChoreDone {
    match chore {
        Chore::Confirmed(c) => confirmed(c, agent, now_ms),
        Chore::TogglePin(path) => match pins::toggle(agent, &path) {
            Ok(pins) => ChoreDone {
                message: if pins.contains(&path) {
                    "pinned on top".into()
                } else {
                    "unpinned".into()
                },
                pins: Some(pins),
                ..ChoreDone::said(String::new(), false)
            },
            Err(e) => ChoreDone::said(format!("could not save the pins: {e}"), false),
        },
        Chore::RenameListed { path, name } => {
            use crate::engine::edit::plan::{Write, WriteRequest};
            let req = WriteRequest {
                write: Write::SessionName { name: name.clone() },
                seen: None,
            };
            let message = match crate::store::write::apply(&path, &req) {
                Ok(_) => format!("named {:?}", name.trim()),
                Err(e) => format!("not renamed: {e}"),
            };
            ChoreDone::said(message, true)
        }
        Chore::CheckBranched(f) => {
            let untouched = f.untouched();
            ChoreDone {
                branched: Some((f, untouched)),
                ..ChoreDone::said(String::new(), false)
            }
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default()
}

fn confirmed(chore: FileChore, agent: &Path, now_ms: i64) -> ChoreDone {
    let message = match chore {
        FileChore::Trash(path) => match trash::trash(agent, &path, now_ms) {
            Ok(t) => {
                return ChoreDone {
                    trashed: Some(t.original.clone()),
                    ..ChoreDone::said(
                        format!(
                            "moved {} to the trash (u in the trash puts it back)",
                            file_name(&t.original)
                        ),
                        true,
                    )
                };
            }
            Err(e) => e.to_string(),
        },
        FileChore::RestoreTrashed(name) => match trash::restore(agent, &name) {
            Ok(t) => format!("restored {}", t.original.display()),
            Err(e) => e.to_string(),
        },
        FileChore::EmptyTrash(names) => {
            let which: Vec<trash::Trashed> = trash::list(agent)
                .into_iter()
                .filter(|t| names.contains(&t.name))
                .collect();
            let r = trash::empty(agent, &which);
            let failed = r.iter().filter(|(_, r)| r.is_err()).count();
            if failed == 0 {
                format!("the trash is empty ({} removed)", r.len())
            } else {
                format!("{failed} of {} could not be removed", r.len())
            }
        }
        FileChore::RemoveBackups(paths) => {
            // An export goes only while it is still what bonsai wrote.
            let listed: Vec<exports::Export> = exports::list(agent)
                .into_iter()
                .filter(|e| paths.contains(&e.path))
                .collect();
            let failed = exports::remove(agent, &listed)
                .into_iter()
                .filter(|(_, r)| r.is_err())
                .count()
                + paths
                    .iter()
                    .filter(|p| !listed.iter().any(|e| &e.path == *p))
                    .filter(|p| std::fs::remove_file(p).is_err())
                    .count();
            if failed == 0 {
                format!("removed {} old backup file(s)", paths.len())
            } else {
                format!("{failed} of {} backups could not be removed", paths.len())
            }
        }
        FileChore::RemoveBranched(f) => return ChoreDone::said(remove_branched(&f), false),
        // Deletes and forks have jobs of their own (they write sessions).
        FileChore::Delete(_) | FileChore::Branched { .. } => return ChoreDone::said(String::new(), false),
    };
    ChoreDone::said(message, true)
}

/// A fork or clone bonsai wrote goes only while nobody wrote to it since.
fn remove_branched(f: &BranchedFile) -> String {
    if !f.untouched() {
        return format!(
            "{} was written to since bonsai wrote it (Pi resumed it?): kept",
            f.name()
        );
    }
    match std::fs::remove_file(&f.path) {
        Ok(()) => format!("removed the {} {}", f.what, f.name()),
        Err(e) => format!("the {} {} not removed: {e}", f.what, f.name()),
    }
}
