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
    /// Named by the trash's record; `false` for a session found in the trash folder with no
    /// record (its way back is read from its header).
    #[serde(skip, default = "recorded")]
    pub recorded: bool,
}

fn recorded() -> bool {
    true
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
    #[error(
        "{path}: Pi wrote {1} bytes there after the session was trashed (its entries, no header). Nothing restored; `bonsai trash --restore NAME --join` puts the session back with those lines after it",
        path = .0.display()
    )]
    PiWroteAfter(PathBuf, u64),
    #[error("{path}: {1}. Nothing moved; close that Pi (or /resume another session there) and try again", path = .0.display())]
    Held(PathBuf, String),
    #[error("{path}: {1}", path = .0.display())]
    Io(PathBuf, std::io::Error),
}

pub fn trash_dir(agent: &Path) -> PathBuf {
    agent.join("bonsai").join("trash")
}

fn index_file(agent: &Path) -> PathBuf {
    trash_dir(agent).join("index.json")
}

/// Whether `name` is a plain file name bonsai could have made inside the trash: a record
/// naming `../x` or `/x` is a tampered record, and believing it would move or remove a file
/// outside the trash.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.starts_with('.') && !name.contains(['/', '\\', '\0'])
}

/// The records as written, each checked before it is believed: names plain, the original an
/// absolute path. A record that fails is left out (its file, if any, is then an orphan).
fn records(agent: &Path) -> Vec<Trashed> {
    let v: Vec<Trashed> = super::private::read(&index_file(agent))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    v.into_iter()
        .filter(|t| plain_name(&t.name) && t.original.is_absolute())
        .map(|mut t| {
            t.side.retain(|(n, p)| plain_name(n) && p.is_absolute());
            t
        })
        .collect()
}

/// Run `f` with the trash record locked: `trash`, `restore` and `empty` each read, change
/// and write it, and two bonsai processes at once would otherwise lose a record.
fn with_lock<T>(agent: &Path, f: impl FnOnce() -> Result<T, TrashError>) -> Result<T, TrashError> {
    let dir = trash_dir(agent);
    super::private::dir(&dir).map_err(|e| TrashError::Io(dir.clone(), e))?;
    super::private::locked(&index_file(agent), f).map_err(|e| TrashError::Io(index_file(agent), e))?
}

/// What is in the trash, oldest first: the records whose file is there, then the sessions
/// in the trash folder no record names (a record lost to a crash or an older bonsai), each
/// put back where its header's project keeps sessions.
pub fn list(agent: &Path) -> Vec<Trashed> {
    let dir = trash_dir(agent);
    let mut v = records(agent);
    v.retain(|t| std::fs::symlink_metadata(dir.join(&t.name)).is_ok_and(|m| m.is_file()));
    v.extend(orphans(agent, &v));
    v.sort_by(|a, b| a.at_ms.cmp(&b.at_ms).then(a.name.cmp(&b.name)));
    v
}

/// Session files in the trash folder that no record in `known` names.
fn orphans(agent: &Path, known: &[Trashed]) -> Vec<Trashed> {
    let dir = trash_dir(agent);
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return vec![];
    };
    let named: std::collections::HashSet<&str> = known
        .iter()
        .flat_map(|t| std::iter::once(t.name.as_str()).chain(t.side.iter().map(|(n, _)| n.as_str())))
        .collect();
    let settings = super::config::load_settings(&super::config::cwd());
    let mut out = vec![];
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !plain_name(&name) || named.contains(name.as_str()) || name == "index.json" || !name.ends_with(".jsonl") {
            continue;
        }
        let p = dir.join(&name);
        let Ok(m) = std::fs::symlink_metadata(&p) else { continue };
        let Some(cwd) = m.is_file().then(|| session_cwd(&p)).flatten() else {
            continue;
        };
        // bonsai names what it trashes "<ms>-<name>"; the name Pi gave it is the rest.
        let (at_ms, own) = match name.split_once('-') {
            Some((ms, rest)) if !rest.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()) => {
                (ms.parse().unwrap_or(0), rest.to_string())
            }
            _ => (super::files::mtime_ms(&m), name.clone()),
        };
        let (folder, _) = super::config::session_dir_in(agent, Path::new(&cwd), &settings);
        out.push(Trashed {
            original: folder.join(own),
            name,
            at_ms,
            bytes: m.len(),
            side: vec![],
            recorded: false,
        });
    }
    out
}

/// The `cwd` of a session file's header (`None` when it is not a session).
fn session_cwd(p: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = super::files::open_regular(p).ok()?;
    let mut line = String::new();
    let mut r = std::io::BufReader::new(f);
    while r.read_line(&mut line).is_ok_and(|n| n > 0) {
        if !line.trim().is_empty() {
            let v = serde_json::from_str::<serde_json::Value>(line.trim()).ok()?;
            if v.get("type").and_then(|t| t.as_str()) != Some("session") {
                return None;
            }
            return Some(v.get("cwd").and_then(|c| c.as_str()).unwrap_or("/").to_string());
        }
        line.clear();
    }
    None
}

fn save(agent: &Path, v: &[Trashed]) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(v).unwrap_or_default();
    super::faults::op("trash-record", || super::private::write(&index_file(agent), &bytes))
}

/// The records other than `name` that still hold a file in the trash: one whose session
/// and side files are all gone (a restore killed after its moves) is dropped with it.
fn records_but(agent: &Path, name: &str) -> Vec<Trashed> {
    let dir = trash_dir(agent);
    let held = |n: &String| std::fs::symlink_metadata(dir.join(n)).is_ok();
    records(agent)
        .into_iter()
        .filter(|t| t.name != name && (held(&t.name) || t.side.iter().any(|(n, _)| held(n))))
        .collect()
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
    match super::faults::op("trash-move", || std::fs::rename(from, to)) {
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
    // `sync_dir` syncs the folder a path is in: both folders the move changed.
    super::write::sync_dir(to);
    super::write::sync_dir(from);
    Ok(())
}

fn is_session_file(p: &Path) -> bool {
    session_cwd(p).is_some()
}

/// Move `session` (and its backups and removed-lines files) into the trash. Refused for a
/// file Pi may still be writing (see [`held_by`]) and for what is not a session.
pub fn trash(agent: &Path, session: &Path, now_ms: i64) -> Result<Trashed, TrashError> {
    let io = |e| TrashError::Io(session.to_path_buf(), e);
    let session = std::path::absolute(session).map_err(io)?;
    let dir = trash_dir(agent);
    // Compared after links are resolved: a path through a link into the trash is inside too.
    let real = std::fs::canonicalize(&session).unwrap_or_else(|_| session.clone());
    let real_dir = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
    if session.starts_with(&dir) || real.starts_with(&real_dir) {
        return Err(TrashError::InsideTrash(session));
    }
    let meta = std::fs::symlink_metadata(&session).map_err(io)?;
    if !meta.is_file() || !is_session_file(&session) {
        return Err(TrashError::NotASession(session));
    }
    if !super::own_writes::is_ours(&session, &meta) {
        let age = meta.modified().ok().and_then(|t| t.elapsed().ok()).unwrap_or_default();
        if age < super::rewrite::QUIET {
            return Err(TrashError::RecentlyWritten(session, age.as_secs_f64()));
        }
    }
    // Asked whoever wrote last: an idle Pi writes again after bonsai's own write too.
    if let Some(who) = held_by(&session) {
        return Err(TrashError::Held(session, who));
    }
    let file_name = session
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    with_lock(agent, || {
        // A name taken already (two sessions of one name trashed in the same millisecond) gets
        // a counter: a move never lands on another's file.
        let mut stamp = now_ms;
        while std::fs::symlink_metadata(dir.join(format!("{stamp}-{file_name}"))).is_ok() {
            stamp += 1;
        }
        let name = format!("{stamp}-{file_name}");
        // Its side files follow it (a restore needs them beside it again).
        let folder = session.parent().map(Path::to_path_buf).unwrap_or_default();
        let side: Vec<(String, PathBuf)> = backups::find(&[folder])
            .into_iter()
            .filter(|b| b.session == session)
            .filter_map(|b| {
                let n = b.path.file_name()?.to_string_lossy().to_string();
                Some((format!("{stamp}-{n}"), b.path))
            })
            .collect();
        let t = Trashed {
            name,
            original: session.clone(),
            at_ms: now_ms,
            bytes: meta.len(),
            side,
            recorded: true,
        };
        // The record first, then the moves: killed in between, the record names a file the
        // trash does not hold (listed as nothing), never a moved session that nothing lists.
        let mut all = records(agent);
        all.push(t.clone());
        save(agent, &all).map_err(|e| TrashError::Io(index_file(agent), e))?;
        if let Err(e) = move_file(&session, &dir.join(&t.name)) {
            all.pop();
            let _ = save(agent, &all);
            return Err(io(e));
        }
        for (inside, from) in &t.side {
            if let Err(e) = move_file(from, &dir.join(inside))
                && super::faults::is_crash(&e)
            {
                return Err(io(e));
            }
        }
        Ok(t)
    })
}

/// Who may still write `session`, asked of the kernel rather than the clock:
/// - a process holding it open for writing;
/// - Pi waiting on it (`/bonsai` started this bonsai for it): Pi writes there when bonsai exits;
/// - a Pi whose command line names it;
/// - another Pi whose sessions go to this session's folder: it may have any of them open.
///
/// Pi appends by opening the path anew each time, so an idle Pi holds no descriptor; its next
/// append after a move would start a headerless file at the old path.
pub fn held_by(session: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(session).ok()?;
    if let Some(w) = super::procs::writers_of(m.dev(), m.ino()).into_iter().next() {
        return Some(format!("process {w} has it open for writing"));
    }
    if super::files::pi_waits_on(session) {
        return Some("Pi waits on this session for bonsai to exit, then writes to it".into());
    }
    super::procs::pi_may_write(session)
}

/// Put a trashed session (by its name in the trash, or its original path) back where it was,
/// its side files too. Refused when something is at its old name now, except a file Pi
/// started there after the move (no header): that is joined back when `join` says so.
pub fn restore(agent: &Path, which: &str) -> Result<Trashed, TrashError> {
    restore_joining(agent, which, false)
}

/// [`restore`], with `join`: lines Pi appended at the old path after the session was trashed
/// (a file with no session header) are appended to the session as it comes back.
pub fn restore_joining(agent: &Path, which: &str, join: bool) -> Result<Trashed, TrashError> {
    with_lock(agent, || {
        let all = list(agent);
        let t = all
            .iter()
            .rev()
            .find(|t| t.name == which || t.original.as_os_str() == which)
            .cloned()
            .ok_or_else(|| TrashError::NotInTrash(which.to_string()))?;
        let dir = trash_dir(agent);
        let inside = dir.join(&t.name);
        if let Ok(m) = std::fs::symlink_metadata(&t.original) {
            if !(m.is_file() && !is_session_file(&t.original) && starts_as_entries(&t.original)) {
                return Err(TrashError::Occupied(t.original));
            }
            if !join {
                return Err(TrashError::PiWroteAfter(t.original, m.len()));
            }
            join_back(&inside, &t.original).map_err(|e| TrashError::Io(t.original.clone(), e))?;
        }
        if let Some(parent) = t.original.parent() {
            std::fs::create_dir_all(parent).map_err(|e| TrashError::Io(parent.to_path_buf(), e))?;
        }
        // The side files go back before the session: the session in the trash is what keeps
        // the record listed, so a restore killed half way is listed still and run again,
        // never a session back with its backups stranded in the trash under no record.
        let mut back = t.clone();
        for (inside, original) in &mut back.side {
            let from = dir.join(&*inside);
            if std::fs::symlink_metadata(&from).is_err() {
                continue;
            }
            // A name taken meanwhile: the side file comes back beside it, under a free
            // name of the same kind, rather than staying in the trash under no record.
            let to = free_side_name(original);
            // One that cannot move stops the restore with the session still listed.
            move_file(&from, &to).map_err(|e| TrashError::Io(to.clone(), e))?;
            *original = to;
        }
        move_file(&inside, &t.original).map_err(|e| TrashError::Io(t.original.clone(), e))?;
        save(agent, &records_but(agent, &t.name)).map_err(|e| TrashError::Io(index_file(agent), e))?;
        Ok(back)
    })
}

/// `original`, or when that name is taken the first free name of the same kind beside it
/// (`a.jsonl.bak-2`, `a.jsonl.deleted-T-2.jsonl`): still found by `bonsai backups`.
fn free_side_name(original: &Path) -> PathBuf {
    if std::fs::symlink_metadata(original).is_err() {
        return original.to_path_buf();
    }
    let name = original
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    // The counter goes after the kind's first word ("bak", "deleted-TIME"): the tail
    // (".jsonl", ".jsonl.restored") is what says the kind.
    let (head, tail) = match name.find(".jsonl.") {
        Some(at) => {
            let rest_at = at + ".jsonl.".len();
            let cut = name[rest_at..].find('.').map_or(name.len(), |i| rest_at + i);
            (name[..cut].to_string(), name[cut..].to_string())
        }
        None => (name.clone(), String::new()),
    };
    (2..)
        .map(|n| original.with_file_name(format!("{head}-{n}{tail}")))
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .unwrap_or_else(|| original.to_path_buf())
}

/// Whether `p` holds Pi entries (JSON objects with an `id`): what Pi appends to a path whose
/// session was moved away.
fn starts_as_entries(p: &Path) -> bool {
    use std::io::BufRead;
    let Ok(f) = super::files::open_regular(p) else {
        return false;
    };
    let r = std::io::BufReader::new(f);
    let mut any = false;
    for line in r.lines() {
        let Ok(line) = line else { return false };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            return false;
        };
        if v.get("id").is_none() || v.get("type").and_then(|t| t.as_str()) == Some("session") {
            return false;
        }
        any = true;
    }
    any
}

/// `appended`'s lines added to the end of the trashed `session` (synced), then `appended`
/// removed: the session comes back whole, with what Pi wrote while it was in the trash.
fn join_back(session: &Path, appended: &Path) -> std::io::Result<()> {
    // The joined file is written beside the trashed one and renamed over it (the rewrite's
    // own temporary file): a full disk or a kill leaves the trashed session as it was, never
    // half of Pi's lines glued to its end.
    let mut joined = super::files::read_regular(session).map_err(std::io::Error::other)?;
    if joined.last().is_some_and(|&b| b != b'\n') {
        // A session ends with a newline; one missing is added so lines stay whole.
        joined.push(b'\n');
    }
    joined.extend_from_slice(&super::files::read_regular(appended).map_err(std::io::Error::other)?);
    let tmp = super::write::write_temp(session, &joined, super::write::FileMode::same_as(session))?;
    if let Err(e) = std::fs::rename(&tmp, session) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    super::write::sync_dir(session);
    std::fs::remove_file(appended)
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

/// Remove `which` from the trash for good (each with its side files). Under the record's
/// lock, each is looked up again first: one restored meanwhile is not removed.
pub fn empty(agent: &Path, which: &[Trashed]) -> Vec<(Trashed, std::io::Result<()>)> {
    let dir = trash_dir(agent);
    let r = with_lock(agent, || {
        let now = list(agent);
        let mut out = vec![];
        for t in which {
            if !plain_name(&t.name) || !now.iter().any(|n| n.name == t.name) {
                out.push((
                    t.clone(),
                    Err(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "no longer in the trash (restored or removed meanwhile)",
                    )),
                ));
                continue;
            }
            // The side files go first: the session is what keeps the record listed, so an
            // emptying killed half way leaves it listed, never side files under no record.
            let mut r = Ok(());
            for (n, _) in &t.side {
                let p = dir.join(n);
                if plain_name(n) && std::fs::symlink_metadata(&p).is_ok() {
                    r = super::faults::op("trash-remove", || std::fs::remove_file(&p));
                    if r.is_err() {
                        break;
                    }
                }
            }
            if r.is_ok() {
                r = super::faults::op("trash-remove", || std::fs::remove_file(dir.join(&t.name)));
            }
            match r {
                Err(e) if super::faults::is_crash(&e) => return Err(TrashError::Io(dir.join(&t.name), e)),
                r => out.push((t.clone(), r)),
            }
        }
        let gone: Vec<&str> = out
            .iter()
            .filter(|(_, r)| r.is_ok())
            .map(|(t, _)| t.name.as_str())
            .collect();
        let left: Vec<Trashed> = records(agent)
            .into_iter()
            .filter(|t| !gone.contains(&t.name.as_str()))
            .collect();
        if let Err(e) = save(agent, &left)
            && super::faults::is_crash(&e)
        {
            return Err(TrashError::Io(index_file(agent), e));
        }
        super::write::sync_dir(&index_file(agent));
        Ok(out)
    });
    match r {
        Ok(out) => out,
        Err(e) => {
            let msg = e.to_string();
            which
                .iter()
                .map(|t| (t.clone(), Err(std::io::Error::other(msg.clone()))))
                .collect()
        }
    }
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
            2,
            "only the record and its lock are left"
        );
    }

    /// Every file in the trash folder that a listed record names, and those it does not.
    fn unlisted_in_trash(agent: &Path) -> Vec<String> {
        let listed = list(agent);
        let named: Vec<&String> = listed
            .iter()
            .flat_map(|t| std::iter::once(&t.name).chain(t.side.iter().map(|(n, _)| n)))
            .collect();
        let mut out: Vec<String> = std::fs::read_dir(trash_dir(agent))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| !n.starts_with("index.json") && !n.starts_with(".index.json") && !named.contains(&n))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn killed_at_any_step_nothing_is_lost_or_left_unlisted_and_a_rerun_finishes() {
        use super::super::faults::{Fault, with_plan};
        let make = || {
            let agent = tempfile::tempdir().unwrap();
            let folder = agent.path().join("sessions").join("--p--");
            std::fs::create_dir_all(&folder).unwrap();
            let s = session(&folder, "a.jsonl");
            std::fs::write(folder.join("a.jsonl.bak"), "whole").unwrap();
            std::fs::write(folder.join("a.jsonl.deleted-5.jsonl"), "{\"id\":\"r\"}\n").unwrap();
            (agent, folder, s)
        };
        let originals = ["a.jsonl", "a.jsonl.bak", "a.jsonl.deleted-5.jsonl"];
        let (_, ops) = {
            let (agent, _, s) = make();
            with_plan(None, || trash(agent.path(), &s, 1000).unwrap())
        };
        // A folder's fsync is best effort (its error is not acted on): the kills are at the rest.
        let kills = |ops: &[&str]| (0..ops.len()).filter(|&i| ops[i] != "sync-dir").collect::<Vec<_>>();
        for at in kills(&ops) {
            let (agent, folder, s) = make();
            let (r, _) = with_plan(Some((at, Fault::Crash)), || trash(agent.path(), &s, 1000));
            assert!(r.is_err(), "step {at} ({}) crashes", ops[at]);
            assert_eq!(
                unlisted_in_trash(agent.path()),
                Vec::<String>::new(),
                "trash killed at {}",
                ops[at]
            );
            // Each file is at its place or in the trash, listed.
            let held = |n: &str| {
                folder.join(n).exists()
                    || list(agent.path()).iter().any(|t| {
                        let dir = trash_dir(agent.path());
                        (t.original == folder.join(n) && dir.join(&t.name).exists())
                            || t.side.iter().any(|(i, o)| o == &folder.join(n) && dir.join(i).exists())
                    })
            };
            assert!(originals.iter().all(|n| held(n)), "trash killed at {}", ops[at]);
        }
        let (_, ops) = {
            let (agent, _, s) = make();
            trash(agent.path(), &s, 1000).unwrap();
            with_plan(None, || restore(agent.path(), "1000-a.jsonl").unwrap())
        };
        assert!(ops.iter().filter(|o| **o == "trash-move").count() == 3, "{ops:?}");
        for at in kills(&ops) {
            let (agent, folder, s) = make();
            trash(agent.path(), &s, 1000).unwrap();
            let (r, _) = with_plan(Some((at, Fault::Crash)), || restore(agent.path(), "1000-a.jsonl"));
            assert!(r.is_err(), "step {at} ({}) crashes", ops[at]);
            assert_eq!(
                unlisted_in_trash(agent.path()),
                Vec::<String>::new(),
                "restore killed at {}",
                ops[at]
            );
            // Run again, it finishes: every file back at its own name, the trash empty.
            if !s.exists() {
                restore(agent.path(), "1000-a.jsonl").unwrap();
            }
            assert!(
                originals.iter().all(|n| folder.join(n).exists()),
                "restore killed at {}",
                ops[at]
            );
            assert!(list(agent.path()).is_empty());
            assert_eq!(unlisted_in_trash(agent.path()), Vec::<String>::new());
        }
        let (_, ops) = {
            let (agent, _, s) = make();
            let t = trash(agent.path(), &s, 1000).unwrap();
            with_plan(None, || empty(agent.path(), &[t]))
        };
        for at in kills(&ops) {
            let (agent, _, s) = make();
            let t = trash(agent.path(), &s, 1000).unwrap();
            let (r, _) = with_plan(Some((at, Fault::Crash)), || {
                empty(agent.path(), std::slice::from_ref(&t))
            });
            assert!(r[0].1.is_err(), "step {at} ({}) crashes", ops[at]);
            assert_eq!(
                unlisted_in_trash(agent.path()),
                Vec::<String>::new(),
                "empty killed at {}",
                ops[at]
            );
            if list(agent.path()).len() == 1 {
                assert!(empty(agent.path(), &[t])[0].1.is_ok());
            }
            assert!(list(agent.path()).is_empty());
            assert_eq!(unlisted_in_trash(agent.path()), Vec::<String>::new());
        }
    }

    #[test]
    fn a_side_file_whose_name_was_taken_comes_back_beside_it() {
        let agent = tempfile::tempdir().unwrap();
        let folder = agent.path().join("sessions").join("--p--");
        std::fs::create_dir_all(&folder).unwrap();
        let s = session(&folder, "a.jsonl");
        std::fs::write(folder.join("a.jsonl.bak"), "old").unwrap();
        std::fs::write(folder.join("a.jsonl.deleted-5.jsonl"), "{}\n").unwrap();
        let t = trash(agent.path(), &s, 1000).unwrap();
        std::fs::write(folder.join("a.jsonl.bak"), "someone else's").unwrap();
        std::fs::write(folder.join("a.jsonl.deleted-5.jsonl"), "someone else's").unwrap();
        let back = restore(agent.path(), &t.name).unwrap();
        assert_eq!(
            std::fs::read_to_string(folder.join("a.jsonl.bak")).unwrap(),
            "someone else's"
        );
        assert_eq!(std::fs::read_to_string(folder.join("a.jsonl.bak-2")).unwrap(), "old");
        assert_eq!(
            std::fs::read_to_string(folder.join("a.jsonl.deleted-5-2.jsonl")).unwrap(),
            "{}\n"
        );
        assert!(back.side.iter().any(|(_, o)| o.ends_with("a.jsonl.bak-2")));
        // Still found as what they are.
        let kinds: Vec<_> = backups::find(std::slice::from_ref(&folder))
            .into_iter()
            .filter(|b| b.path.to_string_lossy().contains("-2"))
            .map(|b| (b.kind, b.session))
            .collect();
        assert_eq!(kinds.len(), 2, "both found as backups of a.jsonl: {kinds:?}");
        assert!(kinds.iter().all(|(_, s)| s == &folder.join("a.jsonl")));
        assert_eq!(unlisted_in_trash(agent.path()), Vec::<String>::new());
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
