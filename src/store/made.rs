//! The side files bonsai made beside sessions (backups, removed-lines files), in
//! `<agentDir>/bonsai/made.json` (bonsai's private files, under its lock). `clean` and
//! `backups --remove` remove only what this record names: a file that merely has a backup's
//! name (a session someone saved as `x.jsonl.bak`) is never bonsai's to remove.
//!
//! A record names a file by all that tells it: its path, device, inode, size and modification
//! time. A file counts as bonsai's only when all five still match, so a file system that gave
//! a removed backup's inode to the user's next file (at another path, of another size and
//! age) never makes that file bonsai's. Records hold only what is true now: one is dropped
//! when bonsai removes its file, and whenever the record is written, every entry whose path no
//! longer holds that file goes.

use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many files the record keeps (the newest): far more than any folder holds.
const KEEP: usize = 20_000;

/// One file bonsai made, as it was when made.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Made {
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
}

/// `path` with its folder made absolute and free of links (a file named from another folder,
/// or through `./`, is the same file).
fn canonical(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            std::fs::canonicalize(dir).map_or_else(|_| path.to_path_buf(), |d| d.join(name))
        }
        _ => path.to_path_buf(),
    }
}

impl Made {
    fn of(path: &Path, m: &std::fs::Metadata) -> Made {
        Made {
            path: canonical(path),
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime_ns: super::files::mtime_ns(m),
        }
    }

    /// Whether `path` holds this file now.
    fn still_there(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.is_file() && Made::of(&self.path, &m) == *self)
    }
}

fn record() -> PathBuf {
    super::config::agent_dir().join("bonsai").join("made.json")
}

/// The record as written. One from before files were named by path (device and inode pairs
/// only) is no evidence of anything: it reads as empty.
fn load() -> Vec<Made> {
    super::private::read_at_most(&record(), 16 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<Made>>(&b).ok())
        .unwrap_or_default()
}

/// Change the record under its lock, keeping only entries whose path still holds their file.
fn change(f: impl FnOnce(&mut Vec<Made>)) {
    let _ = super::private::locked(&record(), || {
        let mut all = load();
        f(&mut all);
        all.retain(Made::still_there);
        let from = all.len().saturating_sub(KEEP);
        super::private::write(&record(), &serde_json::to_vec(&all[from..]).unwrap_or_default())
    });
}

/// Note that bonsai made `path` (best effort: a record that cannot be written only leaves the
/// file to be removed by hand).
pub fn note(path: &Path) {
    let Ok(m) = std::fs::symlink_metadata(path) else { return };
    if !m.is_file() {
        return;
    }
    let made = Made::of(path, &m);
    change(|all| {
        all.retain(|x| x.path != made.path && (x.dev, x.ino) != (made.dev, made.ino));
        all.push(made);
    });
}

/// Forget `path`: bonsai removed it.
pub fn forget(path: &Path) {
    let path = canonical(path);
    change(|all| all.retain(|x| x.path != path));
}

/// The record, for many lookups at once ([`Made::of`] a file to look one up).
pub fn all() -> std::collections::HashSet<Made> {
    load().into_iter().collect()
}

/// What the record says of the file at `path` now (for a lookup in [`all`]).
pub fn identity(path: &Path, m: &std::fs::Metadata) -> Made {
    Made::of(path, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_bonsais_only_while_path_inode_size_and_time_all_match() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.jsonl.bak");
        std::fs::write(&f, "backup\n").unwrap();
        let m = std::fs::symlink_metadata(&f).unwrap();
        let made = Made::of(&f, &m);
        assert!(made.still_there());
        // Another path with the same inode (a hard link, or the freed inode's next owner).
        let other = Made {
            path: dir.path().join("notes.jsonl.bak"),
            ..made.clone()
        };
        assert!(!other.still_there());
        // The same path written again: another size or time.
        std::fs::write(&f, "the user's own file\n").unwrap();
        assert!(!made.still_there());
    }
}
