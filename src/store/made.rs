//! The side files bonsai made beside sessions (backups, removed-lines files), by device and
//! inode, in `<agentDir>/bonsai/made.json` (bonsai's private files, under its lock). `clean`
//! and `backups --remove` remove only what this record names: a file that merely has a
//! backup's name (a session someone saved as `x.jsonl.bak`) is never bonsai's to remove.
//! Inodes survive renames, so a backup moved to the trash and back is still known.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many files the record keeps (the newest): far more than any folder holds.
const KEEP: usize = 20_000;

fn record() -> PathBuf {
    super::config::agent_dir().join("bonsai").join("made.json")
}

fn load() -> Vec<(u64, u64)> {
    super::private::read_at_most(&record(), 4 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<(u64, u64)>>(&b).ok())
        .unwrap_or_default()
}

/// Note that bonsai made `path` (best effort: a record that cannot be written only leaves the
/// file to be removed by hand).
pub fn note(path: &Path) {
    let Ok(m) = std::fs::symlink_metadata(path) else { return };
    if !m.is_file() {
        return;
    }
    let id = (m.dev(), m.ino());
    let _ = super::private::locked(&record(), || {
        let mut all = load();
        all.retain(|x| *x != id);
        all.push(id);
        let from = all.len().saturating_sub(KEEP);
        super::private::write(&record(), &serde_json::to_vec(&all[from..]).unwrap_or_default())
    });
}

/// Whether the file at `path` (its metadata `m`) is one bonsai made.
pub fn is_made(m: &std::fs::Metadata) -> bool {
    let id = (m.dev(), m.ino());
    load().contains(&id)
}

/// The record, for many lookups at once.
pub fn all() -> std::collections::HashSet<(u64, u64)> {
    load().into_iter().collect()
}
