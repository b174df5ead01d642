//! bonsai's trash: sessions moved out of Pi's session folders into `<agentDir>/bonsai/trash/`
//! (never outside Pi's agent folder), with their backups and removed-lines files, and moved
//! back on request. Pi lists only its session folders, so `/resume` no longer offers a
//! trashed session; emptying the trash is the one step that removes anything.
//!
//! The record of what came from where is `trash/index.json` (bonsai's private files: 0700
//! folder, 0600 file, written whole through a rename). A move is a `rename(2)` (the trash is
//! under Pi's agent folder, on the same file system as its sessions unless `sessionDir` says
//! otherwise; then a copy, synced, then the original removed).

use super::backups;
use std::path::{Path, PathBuf};

/// A session in the trash.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Trashed {
    /// Its file name inside the trash (the time it was trashed, then its own name).
    pub name: String,
    /// Where it was, and where `restore` puts it back.
    pub original: PathBuf,
    /// When it was trashed (ms since the epoch).
    pub at_ms: i64,
    pub bytes: u64,
    /// Its side files moved along (names inside the trash → names where they were).
    #[serde(default)]
    pub side: Vec<(String, PathBuf)>,
}

#[derive(Debug, thiserror::Error)]
pub enum TrashError {
    #[error(
        "{path} was written {1:.1} s ago: Pi may be running it. Nothing moved; close Pi's session (or wait until it has been idle for 10 s) and try again",
        path = .0.display()
    )]
    RecentlyWritten(PathBuf, f64),
    #[error("{} is not a Pi session file: nothing moved", .0.display())]
    NotASession(PathBuf),
    #[error("{} is already in the trash", .0.display())]
    InsideTrash(PathBuf),
    #[error("nothing named {0:?} in the trash (`bonsai trash --list` shows what is there)")]
    NotInTrash(String),
    #[error("{} exists again: nothing restored over it (move it away first)", .0.display())]
    Occupied(PathBuf),
    #[error("{path}: {1}", path = .0.display())]
    Io(PathBuf, std::io::Error),
}

pub fn trash_dir(agent: &Path) -> PathBuf {
    agent.join("bonsai").join("trash")
}

fn index_file(agent: &Path) -> PathBuf {
    trash_dir(agent).join("index.json")
}

/// What is in the trash, oldest first (entries whose file is gone are left out).
pub fn list(agent: &Path) -> Vec<Trashed> {
    let dir = trash_dir(agent);
    let mut v: Vec<Trashed> = super::private::read(&index_file(agent))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    v.retain(|t| dir.join(&t.name).is_file());
    v.sort_by(|a, b| a.at_ms.cmp(&b.at_ms).then(a.name.cmp(&b.name)));
    v
}

fn save(agent: &Path, v: &[Trashed]) -> std::io::Result<()> {
    super::private::write(&index_file(agent), &serde_json::to_vec_pretty(v).unwrap_or_default())
}

/// `from` to `to` (which must not exist): a rename, or across file systems a copy, synced,
/// then the original removed.
fn move_file(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() || std::fs::symlink_metadata(to).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "the name is taken",
        ));
    }
    match std::fs::rename(from, to) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            // Copied under a hidden name, synced, then renamed: killed mid-copy, no partial
            // file stands at the name (and the original is still where it was).
            let name = to
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let tmp = to.with_file_name(format!(".{name}.partial"));
            std::fs::copy(from, &tmp)?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, to)?;
            std::fs::remove_file(from)?;
        }
        Err(e) => return Err(e),
    }
    if let Some(d) = to.parent() {
        super::write::sync_dir(d);
    }
    if let Some(d) = from.parent() {
        super::write::sync_dir(d);
    }
    Ok(())
}

fn is_session_file(p: &Path) -> bool {
    use std::io::BufRead;
    let Ok(f) = super::files::open_regular(p) else {
        return false;
    };
    let mut line = String::new();
    let mut r = std::io::BufReader::new(f);
    while r.read_line(&mut line).is_ok_and(|n| n > 0) {
        if !line.trim().is_empty() {
            return serde_json::from_str::<serde_json::Value>(line.trim())
                .is_ok_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("session"));
        }
        line.clear();
    }
    false
}

/// Move `session` (and its backups and removed-lines files) into the trash. Refused for a
/// file written in the last 10 s (Pi may be running it) and for what is not a session.
pub fn trash(agent: &Path, session: &Path, now_ms: i64) -> Result<Trashed, TrashError> {
    let io = |e| TrashError::Io(session.to_path_buf(), e);
    let session = std::path::absolute(session).map_err(io)?;
    let dir = trash_dir(agent);
    if session.starts_with(&dir) {
        return Err(TrashError::InsideTrash(session));
    }
    let meta = std::fs::symlink_metadata(&session).map_err(io)?;
    if !meta.is_file() || !is_session_file(&session) {
        return Err(TrashError::NotASession(session));
    }
    let age = meta.modified().ok().and_then(|t| t.elapsed().ok()).unwrap_or_default();
    if age < super::rewrite::QUIET && !super::own_writes::is_ours(&session, &meta) {
        return Err(TrashError::RecentlyWritten(session, age.as_secs_f64()));
    }
    super::private::dir(&dir).map_err(|e| TrashError::Io(dir.clone(), e))?;
    let file_name = session
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let name = format!("{now_ms}-{file_name}");
    // Its side files follow it (a restore needs them beside it again).
    let folder = session.parent().map(Path::to_path_buf).unwrap_or_default();
    let side: Vec<(String, PathBuf)> = backups::find(&[folder])
        .into_iter()
        .filter(|b| b.session == session)
        .filter_map(|b| {
            let n = b.path.file_name()?.to_string_lossy().to_string();
            Some((format!("{now_ms}-{n}"), b.path))
        })
        .collect();
    let t = Trashed {
        name,
        original: session.clone(),
        at_ms: now_ms,
        bytes: meta.len(),
        side,
    };
    // The record first, then the moves: killed in between, the record names a file the trash
    // does not hold (listed as nothing), never a moved session that nothing lists.
    let mut all = list(agent);
    all.push(t.clone());
    save(agent, &all).map_err(|e| TrashError::Io(index_file(agent), e))?;
    if let Err(e) = move_file(&session, &dir.join(&t.name)) {
        all.pop();
        let _ = save(agent, &all);
        return Err(io(e));
    }
    for (inside, from) in &t.side {
        let _ = move_file(from, &dir.join(inside));
    }
    Ok(t)
}

/// Put a trashed session (by its name in the trash, or its original path) back where it was,
/// its side files too. Refused when something is at its old name now.
pub fn restore(agent: &Path, which: &str) -> Result<Trashed, TrashError> {
    let mut all = list(agent);
    let at = all
        .iter()
        .rposition(|t| t.name == which || t.original.as_os_str() == which)
        .ok_or_else(|| TrashError::NotInTrash(which.to_string()))?;
    let t = all[at].clone();
    if std::fs::symlink_metadata(&t.original).is_ok() {
        return Err(TrashError::Occupied(t.original));
    }
    let dir = trash_dir(agent);
    if let Some(parent) = t.original.parent() {
        std::fs::create_dir_all(parent).map_err(|e| TrashError::Io(parent.to_path_buf(), e))?;
    }
    move_file(&dir.join(&t.name), &t.original).map_err(|e| TrashError::Io(t.original.clone(), e))?;
    for (inside, original) in &t.side {
        if std::fs::symlink_metadata(original).is_err() {
            let _ = move_file(&dir.join(inside), original);
        }
    }
    all.remove(at);
    save(agent, &all).map_err(|e| TrashError::Io(index_file(agent), e))?;
    Ok(t)
}

/// The bytes `t` holds in the trash (the session and its side files).
pub fn size(agent: &Path, t: &Trashed) -> u64 {
    let dir = trash_dir(agent);
    std::iter::once(&t.name)
        .chain(t.side.iter().map(|(n, _)| n))
        .filter_map(|n| std::fs::symlink_metadata(dir.join(n)).ok())
        .map(|m| m.len())
        .sum()
}

/// Remove `which` from the trash for good (each with its side files).
pub fn empty(agent: &Path, which: &[Trashed]) -> Vec<(Trashed, std::io::Result<()>)> {
    let dir = trash_dir(agent);
    let mut out = vec![];
    for t in which {
        let r = std::fs::remove_file(dir.join(&t.name));
        for (n, _) in &t.side {
            let _ = std::fs::remove_file(dir.join(n));
        }
        out.push((t.clone(), r));
    }
    let gone: Vec<&str> = out
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(t, _)| t.name.as_str())
        .collect();
    let left: Vec<Trashed> = list(agent)
        .into_iter()
        .filter(|t| !gone.contains(&t.name.as_str()))
        .collect();
    let _ = save(agent, &left);
    super::write::sync_dir(&dir);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(
            &p,
            "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        )
        .unwrap();
        // Old enough: not "written in the last 10 s".
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(old)
            .unwrap();
        p
    }

    #[test]
    fn a_session_and_its_backups_go_to_the_trash_and_come_back() {
        let agent = tempfile::tempdir().unwrap();
        let folder = agent.path().join("sessions").join("--p--");
        std::fs::create_dir_all(&folder).unwrap();
        let s = session(&folder, "a.jsonl");
        let bak = folder.join("a.jsonl.bak");
        std::fs::write(&bak, "old").unwrap();
        let other = session(&folder, "b.jsonl");
        let t = trash(agent.path(), &s, 1000).unwrap();
        assert!(!s.exists() && !bak.exists() && other.exists());
        assert_eq!(t.side.len(), 1);
        assert_eq!(list(agent.path()), vec![t.clone()]);
        assert_eq!(
            size(agent.path(), &t),
            std::fs::metadata(trash_dir(agent.path()).join(&t.name)).unwrap().len() + 3
        );
        // Something new at the old name: not restored over it.
        std::fs::write(&s, "new").unwrap();
        assert!(matches!(restore(agent.path(), &t.name), Err(TrashError::Occupied(_))));
        std::fs::remove_file(&s).unwrap();
        restore(agent.path(), s.to_str().unwrap()).unwrap();
        assert!(s.exists() && bak.exists());
        assert!(list(agent.path()).is_empty());
        // Trashed again and emptied: gone for good.
        let t = trash(agent.path(), &s, 2000).unwrap();
        let r = empty(agent.path(), &[t]);
        assert!(r[0].1.is_ok());
        assert!(list(agent.path()).is_empty());
        assert_eq!(
            std::fs::read_dir(trash_dir(agent.path())).unwrap().count(),
            1,
            "only the index is left"
        );
    }

    #[test]
    fn refused_for_a_fresh_file_and_what_is_not_a_session() {
        let agent = tempfile::tempdir().unwrap();
        let p = agent.path().join("fresh.jsonl");
        std::fs::write(
            &p,
            "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        )
        .unwrap();
        assert!(matches!(
            trash(agent.path(), &p, 1),
            Err(TrashError::RecentlyWritten(..))
        ));
        let n = agent.path().join("notes.jsonl");
        std::fs::write(&n, "{\"a\":1}\n").unwrap();
        assert!(matches!(trash(agent.path(), &n, 1), Err(TrashError::NotASession(_))));
        assert!(p.exists() && n.exists());
    }
}
