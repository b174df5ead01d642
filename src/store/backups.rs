//! The files bonsai leaves beside sessions when it rewrites one: `FILE.bak` / `FILE.bak-TIME`
//! (the whole file before a delete, a migration or a repair), `FILE.deleted-TIME.jsonl` (the
//! lines a delete removed) and `….restored` (those lines once put back). Nothing removes them
//! on its own; `bonsai backups` lists them and removes old ones, never those the next
//! `bonsai restore` needs.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackupKind {
    /// The whole session before bonsai rewrote it.
    Original,
    /// The lines a delete removed.
    Removed,
    /// Removed lines that were restored since.
    Restored,
}

impl BackupKind {
    pub fn describe(self) -> &'static str {
        match self {
            BackupKind::Original => "the whole session before a rewrite",
            BackupKind::Removed => "the lines a delete removed",
            BackupKind::Restored => "removed lines, restored since",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Backup {
    pub path: PathBuf,
    /// The session it belongs to (it may be gone).
    pub session: PathBuf,
    pub kind: BackupKind,
    pub bytes: u64,
    pub modified: SystemTime,
    /// The next `bonsai restore` of its session reads it: never removed here.
    pub needed_for_restore: bool,
    /// bonsai's record says it made this file (see `made`): only such a file is removed by
    /// `clean` or `backups --remove`; one that only has a backup's name is the user's.
    pub made: bool,
}

impl Backup {
    /// Days since it was last written, counted to `now_ms` (ms since the epoch, as exports
    /// and the trash count theirs); 0 for a time in the future.
    pub fn age_days(&self, now_ms: i64) -> f64 {
        let modified = self
            .modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        (now_ms - modified).max(0) as f64 / 86_400_000.0
    }
}

/// What a file name says it is, and its session's name.
fn classify(name: &str) -> Option<(BackupKind, String)> {
    let at = name.find(".jsonl.")?;
    let session = name[..at + ".jsonl".len()].to_string();
    let rest = &name[at + ".jsonl.".len()..];
    let kind = if rest == "bak" || rest.starts_with("bak-") {
        BackupKind::Original
    } else if rest.starts_with("deleted-") && rest.ends_with(".jsonl.restored") {
        BackupKind::Restored
    } else if rest.starts_with("deleted-") && rest.ends_with(".jsonl") {
        BackupKind::Removed
    } else {
        return None;
    };
    Some((kind, session))
}

/// bonsai's backups in `dirs`, oldest first.
pub fn find(dirs: &[PathBuf]) -> Vec<Backup> {
    let made = super::made::all();
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(rd) = std::fs::read_dir(dir) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some((kind, session)) = classify(&name) else {
                continue;
            };
            let Ok(m) = e.metadata() else { continue };
            if !m.is_file() {
                continue;
            }
            out.push(Backup {
                path: e.path(),
                session: dir.join(session),
                kind,
                bytes: m.len(),
                modified: m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                needed_for_restore: false,
                made: made.contains(&super::made::identity(&e.path(), &m)),
            });
        }
    }
    // The next restore of a session takes its newest removed lines and a whole copy from
    // before: keep those.
    let sessions: std::collections::HashSet<PathBuf> = out.iter().map(|b| b.session.clone()).collect();
    for s in sessions {
        let newest_removed = out
            .iter()
            .filter(|b| b.session == s && b.kind == BackupKind::Removed)
            .map(|b| b.path.clone())
            .max();
        if let Some(r) = newest_removed {
            for b in out.iter_mut().filter(|b| b.session == s) {
                if b.path == r || b.kind == BackupKind::Original {
                    b.needed_for_restore = true;
                }
            }
        }
    }
    out.sort_by_key(|b| (b.modified, b.path.clone()));
    out
}

/// Remove `backups` (those the next restore needs are skipped by the caller's choice). Each is
/// looked at again just before it goes, since the user may have taken a while to answer: one
/// written since it was listed (a delete-branch reused it) or that the next restore needs now
/// is kept, and said.
pub fn remove(backups: &[&Backup]) -> Vec<(PathBuf, std::io::Result<()>)> {
    backups
        .iter()
        .map(|b| {
            let folder = b.path.parent().map(Path::to_path_buf).unwrap_or_default();
            let now = find(&[folder]).into_iter().find(|n| n.path == b.path);
            let r = match now {
                None => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "gone already")),
                Some(n) if n.bytes != b.bytes || n.modified != b.modified => Err(std::io::Error::other(
                    "written again since it was listed (a new delete or repair uses it): kept",
                )),
                Some(n) if n.needed_for_restore && !b.needed_for_restore => {
                    Err(std::io::Error::other("the next bonsai restore needs it now: kept"))
                }
                Some(_) => std::fs::remove_file(&b.path).inspect(|()| super::made::forget(&b.path)),
            };
            (b.path.clone(), r)
        })
        .collect()
}

/// The folders whose backups `bonsai backups` lists: this project's sessions, or all.
pub fn folders(cwd: &Path, settings: &crate::engine::settings::Settings, all: bool) -> Vec<PathBuf> {
    super::sessions::session_folders(cwd, settings, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_what_a_backup_is() {
        assert_eq!(classify("a.jsonl.bak"), Some((BackupKind::Original, "a.jsonl".into())));
        assert_eq!(
            classify("a.jsonl.bak-2026-11-25T00-00-00-000Z"),
            Some((BackupKind::Original, "a.jsonl".into()))
        );
        assert_eq!(
            classify("a.jsonl.deleted-2026-11-25T00-00-00-000Z.jsonl"),
            Some((BackupKind::Removed, "a.jsonl".into()))
        );
        assert_eq!(
            classify("a.jsonl.deleted-2026-11-25T00-00-00-000Z.jsonl.restored"),
            Some((BackupKind::Restored, "a.jsonl".into()))
        );
        assert_eq!(classify("a.jsonl"), None);
        assert_eq!(classify(".a.jsonl.bonsai-write"), None);
    }
}
