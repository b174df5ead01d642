//! The session files a usage report reads, and the time zone its days are in.
//!
//! Every `*.jsonl` under the paths given (folders walked as ccusage walks them), read on every
//! core, each mapped and only its lines holding `"usage"` decoded. A delete's removed-lines
//! file (`FILE.jsonl.deleted-TIME.jsonl`) counts for its session: those calls were paid for.

use crate::engine::usage::{self, SessionCalls};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// A file given or found that is not read, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// The time zone named `name` (IANA, e.g. `Europe/Berlin`, or `UTC`), else the system's
/// (`$TZ`, then `/etc/localtime`), as `Intl.DateTimeFormat().resolvedOptions().timeZone`.
pub fn time_zone(name: Option<&str>) -> Result<jiff::tz::TimeZone, UnknownZone> {
    match name {
        Some(n) => jiff::tz::TimeZone::get(n).map_err(|source| UnknownZone {
            name: n.to_string(),
            source,
        }),
        None => Ok(jiff::tz::TimeZone::system()),
    }
}

/// A time zone name the tz database does not hold.
#[derive(Debug, thiserror::Error)]
#[error("unknown time zone {name:?}: {source}")]
pub struct UnknownZone {
    pub name: String,
    source: jiff::Error,
}

/// Why a file's calls were not read (said beside the report, the file skipped).
#[derive(Debug, thiserror::Error)]
pub enum UsageReadError {
    #[error(transparent)]
    Open(#[from] super::files::OpenError),
    #[error("cannot read it: {0}")]
    Read(#[from] std::io::Error),
    #[error("not a Pi session: its first line is not a session header")]
    NotASession,
}

/// The session a removed-lines file belongs to (`X.jsonl.deleted-TIME.jsonl` → `X.jsonl`).
fn session_of(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let at = name.find(".jsonl.deleted-")?;
    Some(path.with_file_name(&name[..at + ".jsonl".len()]))
}

/// The `*.jsonl` files under `paths` (a file is taken as it is), sorted.
pub fn files_under(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<Skipped>) {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                for e in walkdir::WalkDir::new(p).follow_links(false).sort_by_file_name() {
                    match e {
                        Ok(e) if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "jsonl") => {
                            files.push(e.into_path())
                        }
                        Ok(_) => {}
                        Err(err) => skipped.push(Skipped {
                            path: err.path().map(Path::to_path_buf).unwrap_or_else(|| p.clone()),
                            reason: format!("cannot read it: {err}"),
                        }),
                    }
                }
            }
            Ok(_) => files.push(p.clone()),
            Err(e) => skipped.push(Skipped {
                path: p.clone(),
                reason: format!("cannot read it: {e}"),
            }),
        }
    }
    files.sort();
    files.dedup();
    (files, skipped)
}

/// A session header's fields a report names a session by.
fn header(buf: &[u8]) -> Option<serde_json::Value> {
    let line = buf
        .split(|b| *b == b'\n')
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))?;
    let v: serde_json::Value = serde_json::from_slice(line.trim_ascii()).ok()?;
    (v.get("type").and_then(|t| t.as_str()) == Some("session")).then_some(v)
}

/// The newest `session_info` name in `buf` (an empty one clears it).
fn name_in(buf: &[u8]) -> Option<String> {
    let finder = memchr::memmem::FinderRev::new(b"\"session_info\"");
    let mut end = buf.len();
    while let Some(at) = finder.rfind(&buf[..end]) {
        end = at;
        let start = memchr::memrchr(b'\n', &buf[..at]).map_or(0, |i| i + 1);
        let stop = memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |i| at + i);
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&buf[start..stop])
            && v.get("type").and_then(|t| t.as_str()) == Some("session_info")
        {
            let n = v.get("name").and_then(|n| n.as_str()).unwrap_or("").trim().to_string();
            return (!n.is_empty()).then_some(n);
        }
    }
    None
}

/// The bytes of `path` (mapped when large).
fn load(path: &Path) -> Result<impl std::ops::Deref<Target = [u8]>, UsageReadError> {
    let f = super::files::open_regular(path)?;
    Ok(super::mapped::load_file(f, path)?)
}

/// One file's calls, or why it is not read. `project` falls back to the folder's name.
fn read_one(path: &Path) -> Result<SessionCalls, UsageReadError> {
    calls_in(path, &load(path)?)
}

/// The calls in `buf`, the bytes of `path`.
fn calls_in(path: &Path, buf: &[u8]) -> Result<SessionCalls, UsageReadError> {
    let removed_lines_of = session_of(path);
    let head = header(buf);
    if head.is_none() && removed_lines_of.is_none() {
        return Err(UsageReadError::NotASession);
    }
    let s = |k: &str| {
        head.as_ref()
            .and_then(|h| h.get(k))
            .and_then(|v| v.as_str())
            .map(String::from)
    };
    let folder = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    Ok(SessionCalls {
        path: removed_lines_of.as_deref().unwrap_or(path).display().to_string(),
        project: s("cwd").filter(|c| !c.is_empty()).unwrap_or(folder),
        name: name_in(buf),
        created: s("timestamp").unwrap_or_default(),
        calls: usage::calls(buf),
    })
}

/// Every session's calls under `paths`, and what was not read. A removed-lines file is merged
/// into its session (its project and name from the session's own file when that was read).
pub fn read_sessions(paths: &[PathBuf]) -> (Vec<SessionCalls>, Vec<Skipped>) {
    let (files, mut skipped) = files_under(paths);
    let read: Vec<(PathBuf, Result<SessionCalls, UsageReadError>)> =
        files.par_iter().map(|p| (p.clone(), read_one(p))).collect();
    let mut sessions: Vec<SessionCalls> = Vec::new();
    let mut removed: Vec<SessionCalls> = Vec::new();
    for (path, r) in read {
        match r {
            Ok(s) if session_of(&path).is_some() => removed.push(s),
            Ok(s) => sessions.push(s),
            Err(e) => skipped.push(Skipped {
                path,
                reason: e.to_string(),
            }),
        }
    }
    for r in removed {
        match sessions.iter_mut().find(|s| s.path == r.path) {
            Some(s) => s.calls.extend(r.calls),
            None => sessions.push(r),
        }
    }
    (sessions, skipped)
}

/// One file's calls in bonsai's usage cache, and up to where it read the file.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct CachedFile {
    path: PathBuf,
    /// The file as it was when read: the same inode, length and times mean not read again.
    ino: u64,
    file_len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    /// The bytes up to its last newline were read; the hash of its first 4 KB and the 32 bytes
    /// before the end of that part tell appended bytes from a rewrite.
    settled: u64,
    head: [u8; 32],
    end: Vec<u8>,
    calls: SessionCalls,
}

/// bonsai's usage cache (`<agentDir>/bonsai/usage.bin`; bonsai's private files): what every
/// session's calls were, so that the usage view does not read every file again.
fn cache_file(agent: &Path) -> PathBuf {
    agent.join("bonsai").join("usage.bin")
}

/// The cache starts with this; the last byte is its format. A SHA-256 of the rest follows:
/// the cache carries the totals a report adds up, so a flipped bit must not become a wrong
/// bill that stays until a session changes.
const CACHE_MAGIC: &[u8; 8] = b"bonsaiU\x02";

/// Bytes of a file's start whose hash the cache keeps.
const HEAD: usize = 4096;

fn sha(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn load_cache(agent: &Path) -> std::collections::HashMap<PathBuf, CachedFile> {
    let Ok(b) = super::private::read(&cache_file(agent)) else {
        return Default::default();
    };
    let Some(body) = b.strip_prefix(&CACHE_MAGIC[..]).filter(|r| r.len() >= 32) else {
        return Default::default();
    };
    let (sum, body) = body.split_at(32);
    if sum != sha(body) {
        return Default::default();
    }
    postcard::from_bytes::<Vec<CachedFile>>(body)
        .map(|v| v.into_iter().map(|c| (c.path.clone(), c)).collect())
        .unwrap_or_default()
}

fn cache_bytes(v: &[&CachedFile]) -> Option<Vec<u8>> {
    let body = postcard::to_stdvec(v).ok()?;
    Some([&CACHE_MAGIC[..], &sha(&body), &body].concat())
}

fn times(m: &std::fs::Metadata) -> (i128, i128) {
    use std::os::unix::fs::MetadataExt;
    (
        m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
    )
}

/// `path` read whole, as the cache keeps it.
fn read_fresh(path: &Path, meta: &std::fs::Metadata) -> Result<CachedFile, UsageReadError> {
    use std::os::unix::fs::MetadataExt;
    let buf = load(path)?;
    let settled = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
    let calls = calls_in(path, &buf)?;
    let (mtime_ns, ctime_ns) = times(meta);
    Ok(CachedFile {
        path: path.to_path_buf(),
        ino: meta.ino(),
        file_len: meta.len(),
        mtime_ns,
        ctime_ns,
        settled: settled as u64,
        head: sha(&buf[..settled.min(HEAD)]),
        end: buf[settled.saturating_sub(32)..settled].to_vec(),
        calls,
    })
}

/// `path` from the cache: as it was when unchanged, with only the new lines read when Pi
/// appended, whole again otherwise. Unchanged means the same inode, length, modification and
/// change times. A file of the same length with other times was edited in place: read whole.
fn read_cached(path: &Path, cached: Option<&CachedFile>) -> Result<CachedFile, UsageReadError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    let Some(c) = cached else {
        return read_fresh(path, &meta);
    };
    let (mtime_ns, ctime_ns) = times(&meta);
    if c.ino == meta.ino() && c.file_len == meta.len() && c.mtime_ns == mtime_ns && c.ctime_ns == ctime_ns {
        return Ok(c.clone());
    }
    if c.ino != meta.ino() || meta.len() <= c.file_len || c.settled == 0 {
        return read_fresh(path, &meta);
    }
    use std::io::{Read, Seek, SeekFrom};
    let mut f = super::files::open_regular(path)?;
    let mut head = vec![0u8; (c.settled as usize).min(HEAD)];
    f.read_exact(&mut head)?;
    if sha(&head) != c.head {
        return read_fresh(path, &meta);
    }
    let from = c.settled.saturating_sub(c.end.len() as u64);
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::with_capacity((meta.len() - from) as usize);
    f.read_to_end(&mut buf)?;
    if buf.get(..c.end.len()) != Some(&c.end[..]) {
        return read_fresh(path, &meta);
    }
    let tail = &buf[c.end.len()..];
    let settled = memchr::memrchr(b'\n', tail).map_or(0, |i| i + 1);
    let new = &tail[..settled];
    let mut next = c.clone();
    next.calls.calls.extend(usage::calls(new));
    if memchr::memmem::find(new, b"\"session_info\"").is_some() {
        let named = name_in(new);
        if named.is_some() || memchr::memmem::find(new, b"\"name\"").is_some() {
            next.calls.name = named;
        }
    }
    next.file_len = meta.len();
    next.mtime_ns = mtime_ns;
    next.ctime_ns = ctime_ns;
    next.settled = c.settled + settled as u64;
    if c.settled < HEAD as u64 {
        let mut h = vec![0u8; (next.settled as usize).min(HEAD)];
        f.seek(SeekFrom::Start(0))?;
        f.read_exact(&mut h)?;
        next.head = sha(&h);
    }
    let all_before = [&c.end[..], new].concat();
    next.end = all_before[all_before.len().saturating_sub(32)..].to_vec();
    Ok(next)
}

/// [`read_sessions`] through bonsai's usage cache under `agent`: unchanged files are not read,
/// appended ones only from where the cache left off. The cache is written back when anything
/// changed (a cache that cannot be written only makes the next view read the files again).
pub fn read_sessions_cached(agent: &Path, paths: &[PathBuf]) -> (Vec<SessionCalls>, Vec<Skipped>) {
    let (files, mut skipped) = files_under(paths);
    let cache = load_cache(agent);
    let read: Vec<(PathBuf, Result<CachedFile, UsageReadError>)> = files
        .par_iter()
        .map(|p| (p.clone(), read_cached(p, cache.get(p))))
        .collect();
    let changed = read.iter().any(|(p, r)| match (r, cache.get(p)) {
        (Ok(n), Some(o)) => (n.ino, n.file_len, n.mtime_ns, n.ctime_ns) != (o.ino, o.file_len, o.mtime_ns, o.ctime_ns),
        (Err(_), None) => false,
        _ => true,
    });
    let mut kept = Vec::new();
    let mut sessions = Vec::new();
    let mut removed = Vec::new();
    for (path, r) in read {
        match r {
            Ok(c) => {
                if session_of(&path).is_some() {
                    removed.push(c.calls.clone());
                } else {
                    sessions.push(c.calls.clone());
                }
                kept.push(c);
            }
            Err(e) => skipped.push(Skipped {
                path,
                reason: e.to_string(),
            }),
        }
    }
    if changed {
        // Under the cache's lock, with what another report wrote meanwhile: its files this one
        // did not read stay (while they exist), so two reports of two folders keep both.
        let _ = super::private::locked(&cache_file(agent), || {
            let on_disk = load_cache(agent);
            let mine: std::collections::HashSet<&PathBuf> = files.iter().collect();
            let others: Vec<&CachedFile> = on_disk
                .values()
                .filter(|c| !mine.contains(&c.path) && c.path.is_file())
                .collect();
            let all: Vec<&CachedFile> = kept.iter().chain(others).collect();
            if let Some(bytes) = cache_bytes(&all) {
                let _ = super::private::write(&cache_file(agent), &bytes);
            }
        });
    }
    for r in removed {
        match sessions.iter_mut().find(|s| s.path == r.path) {
            Some(s) => s.calls.extend(r.calls),
            None => sessions.push(r),
        }
    }
    (sessions, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(id: &str, n: u64) -> String {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":null,\"timestamp\":\"2026-11-20T10:00:0{n}.000Z\",\"message\":{{\"role\":\"assistant\",\"content\":[],\"provider\":\"p\",\"model\":\"m\",\"usage\":{{\"input\":{n}00,\"output\":1,\"cost\":{{\"total\":0.{n}}}}}}}}}\n"
        )
    }

    /// The cache gives what reading every file gives: unchanged, appended (a name too), cut
    /// short, rewritten; a cache of garbage is read as none.
    #[test]
    fn the_usage_cache_agrees_with_reading_every_file() {
        let agent = tempfile::tempdir().unwrap();
        let dir = agent.path().join("sessions").join("--p--");
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s.jsonl");
        let head = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-11-20T09:00:00.000Z\",\"cwd\":\"/p\"}\n";
        std::fs::write(&f, format!("{head}{}", reply("a", 1))).unwrap();
        let roots = [agent.path().join("sessions")];
        let same = |why: &str| {
            let (a, _) = read_sessions_cached(agent.path(), &roots);
            let (b, _) = read_sessions(&roots);
            assert_eq!(a.len(), b.len(), "{why}");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!((&x.path, &x.name, &x.calls), (&y.path, &y.name, &y.calls), "{why}");
            }
            a
        };
        assert_eq!(same("first")[0].calls.len(), 1);
        assert!(cache_file(agent.path()).exists());
        // Unchanged: from the cache (proof: a forged cache entry is what comes back).
        let mut c = load_cache(agent.path());
        c.get_mut(&f).unwrap().calls.name = Some("from the cache".into());
        let v: Vec<CachedFile> = c.into_values().collect();
        super::super::private::write(
            &cache_file(agent.path()),
            &cache_bytes(&v.iter().collect::<Vec<_>>()).unwrap(),
        )
        .unwrap();
        assert_eq!(
            read_sessions_cached(agent.path(), &roots).0[0].name.as_deref(),
            Some("from the cache")
        );
        std::fs::remove_file(cache_file(agent.path())).unwrap();
        same("again");
        // Pi appends a reply, a name and half a line.
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
        write!(w, "{}{{\"type\":\"session_info\",\"id\":\"n\",\"parentId\":\"a\",\"timestamp\":\"t\",\"name\":\"Named\"}}\n{{\"type\":\"mess", reply("b", 2)).unwrap();
        drop(w);
        let s = same("appended");
        assert_eq!((s[0].calls.len(), s[0].name.as_deref()), (2, Some("Named")));
        // The half line finished as a reply.
        let mut w = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
        writeln!(w, "age\",\"id\":\"c\",\"parentId\":null,\"timestamp\":\"2026-11-20T10:00:03.000Z\",\"message\":{{\"role\":\"assistant\",\"usage\":{{\"input\":3,\"output\":1}}}}}}").unwrap();
        drop(w);
        assert_eq!(same("finished")[0].calls.len(), 3);
        // Rewritten shorter, then with other bytes where the cache's part ended.
        std::fs::write(&f, format!("{head}{}", reply("z", 5))).unwrap();
        assert_eq!(same("rewritten")[0].calls[0].id, "z");
        std::fs::write(&f, format!("{head}{}{}{}", reply("y", 4), reply("x", 6), reply("w", 7))).unwrap();
        assert_eq!(same("rewritten longer")[0].calls.len(), 3);
        std::fs::write(cache_file(agent.path()), "garbage").unwrap();
        same("garbage cache");
    }

    /// Issue 43: a flipped bit in the cache changed totals that stayed (4 of 150 flips), and an
    /// edit that kept the length was never read again. Every flip is now refused by the
    /// checksum, and such an edit is read.
    #[test]
    fn a_damaged_cache_or_an_edit_in_place_never_gives_other_totals() {
        let agent = tempfile::tempdir().unwrap();
        let dir = agent.path().join("sessions").join("--p--");
        std::fs::create_dir_all(&dir).unwrap();
        let head = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-11-20T09:00:00.000Z\",\"cwd\":\"/p\"}\n";
        for i in 0..3 {
            let body: String = (1..8).map(|n| reply(&format!("r{i}{n}"), n)).collect();
            std::fs::write(dir.join(format!("s{i}.jsonl")), format!("{head}{body}")).unwrap();
        }
        let roots = [agent.path().join("sessions")];
        let totals = |v: &[SessionCalls]| {
            let mut t: Vec<(String, Vec<(String, String)>)> = v
                .iter()
                .map(|s| {
                    (
                        s.path.clone(),
                        s.calls
                            .iter()
                            .map(|c| (c.id.clone(), format!("{:?} {:?} {}", c.tokens, c.cost, c.total_tokens)))
                            .collect(),
                    )
                })
                .collect();
            t.sort();
            t
        };
        let fresh = totals(&read_sessions(&roots).0);
        assert_eq!(totals(&read_sessions_cached(agent.path(), &roots).0), fresh);
        let good = std::fs::read(cache_file(agent.path())).unwrap();
        let bits = good.len() * 8;
        for k in 0..150 {
            let bit = (k * 7919 + 13) % bits;
            let mut bad = good.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            super::super::private::write(&cache_file(agent.path()), &bad).unwrap();
            assert_eq!(
                totals(&read_sessions_cached(agent.path(), &roots).0),
                fresh,
                "bit {bit} flipped"
            );
        }
        // An edit in place that keeps the length (a cost changed), with a new time: read again.
        let f = dir.join("s1.jsonl");
        let text = std::fs::read_to_string(&f).unwrap();
        let edited = text.replacen("\"total\":0.3", "\"total\":0.9", 1);
        assert_eq!(edited.len(), text.len());
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&f, &edited).unwrap();
        let now = totals(&read_sessions_cached(agent.path(), &roots).0);
        assert_eq!(now, totals(&read_sessions(&roots).0));
        assert_ne!(now, fresh);
    }
}
