//! The documents bonsai exported (Markdown, HTML, JSON), so that they can be listed under
//! their session and removed when old: `<agentDir>/bonsai/exports.json` (bonsai's private
//! files), the newest 500. An export is only ever removed while it is still what bonsai wrote
//! (the same path, device, inode, size and modification time): one the user edited or
//! replaced is theirs. A record written before the inode was kept names none, and its file is
//! never removed.

use std::path::{Path, PathBuf};

const KEEP: usize = 500;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Export {
    pub path: PathBuf,
    /// The session it was made from.
    pub session: PathBuf,
    pub bytes: u64,
    /// Its modification time right after bonsai wrote it (ms since the epoch).
    pub mtime_ms: i64,
    /// The file's device and inode when bonsai wrote it (0: not recorded).
    #[serde(default)]
    pub dev: u64,
    #[serde(default)]
    pub ino: u64,
}

impl Export {
    /// Still the file bonsai wrote (not edited, replaced or gone).
    pub fn untouched(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| {
            m.is_file()
                && m.len() == self.bytes
                && mtime_ms(&m) == self.mtime_ms
                && self.ino != 0
                && (m.dev(), m.ino()) == (self.dev, self.ino)
        })
    }
    pub fn age_days(&self, now_ms: i64) -> f64 {
        (now_ms - self.mtime_ms) as f64 / 86_400_000.0
    }
}

use super::files::mtime_ms;

fn record(agent: &Path) -> PathBuf {
    agent.join("bonsai").join("exports.json")
}

/// The exports bonsai wrote that are still as it wrote them, oldest first.
pub fn list(agent: &Path) -> Vec<Export> {
    // 500 records of ~300 bytes: anything past 4 MB was not written by bonsai.
    let all: Vec<Export> = super::private::read_at_most(&record(agent), 4 << 20)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    all.into_iter().filter(Export::untouched).collect()
}

/// Remember that bonsai wrote `path` from `session` (best effort: a record that cannot be
/// written only leaves the export unlisted).
pub fn note(agent: &Path, path: &Path, session: &Path) {
    let (Ok(path), Ok(m)) = (std::path::absolute(path), std::fs::metadata(path)) else {
        return;
    };
    let session = std::path::absolute(session).unwrap_or_else(|_| session.to_path_buf());
    // Under the record's lock: two exports at once each keep the other's line.
    let _ = super::private::locked(&record(agent), || {
        let mut all = list(agent);
        all.retain(|e| e.path != path);
        use std::os::unix::fs::MetadataExt;
        all.push(Export {
            path,
            session,
            bytes: m.len(),
            mtime_ms: mtime_ms(&m),
            dev: m.dev(),
            ino: m.ino(),
        });
        if all.len() > KEEP {
            all.drain(..all.len() - KEEP);
        }
        super::private::write(&record(agent), &serde_json::to_vec(&all).unwrap_or_default())
    });
}

/// Remove `which` (each only if still as bonsai wrote it) and forget them.
pub fn remove(agent: &Path, which: &[Export]) -> Vec<(PathBuf, std::io::Result<()>)> {
    let out: Vec<(PathBuf, std::io::Result<()>)> = which
        .iter()
        .map(|e| {
            let r = if e.untouched() {
                std::fs::remove_file(&e.path)
            } else {
                Err(std::io::Error::other("changed since bonsai wrote it: kept"))
            };
            (e.path.clone(), r)
        })
        .collect();
    let _ = super::private::locked(&record(agent), || {
        let left: Vec<Export> = list(agent);
        super::private::write(&record(agent), &serde_json::to_vec(&left).unwrap_or_default())
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_are_listed_while_they_are_what_bonsai_wrote() {
        let agent = tempfile::tempdir().unwrap();
        let a = agent.path().join("a.md");
        let b = agent.path().join("b.md");
        std::fs::write(&a, "# a").unwrap();
        std::fs::write(&b, "# b").unwrap();
        note(agent.path(), &a, Path::new("/s/x.jsonl"));
        note(agent.path(), &b, Path::new("/s/x.jsonl"));
        assert_eq!(list(agent.path()).len(), 2);
        // The user edits b: it is theirs now, neither listed nor removed.
        std::fs::write(&b, "# b, edited by hand").unwrap();
        let l = list(agent.path());
        assert_eq!(l.iter().map(|e| e.path.clone()).collect::<Vec<_>>(), vec![a.clone()]);
        let r = remove(agent.path(), &l);
        assert!(r[0].1.is_ok() && !a.exists() && b.exists());
        assert!(list(agent.path()).is_empty());
    }
}
