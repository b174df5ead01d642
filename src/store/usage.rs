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
pub fn time_zone(name: Option<&str>) -> Result<jiff::tz::TimeZone, String> {
    match name {
        Some(n) => jiff::tz::TimeZone::get(n).map_err(|e| format!("unknown time zone {n:?}: {e}")),
        None => Ok(jiff::tz::TimeZone::system()),
    }
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

/// One file's calls, or why it is not read. `project` falls back to the folder's name.
fn read_one(path: &Path) -> Result<SessionCalls, String> {
    let f = super::files::open_regular(path).map_err(|e| e.to_string())?;
    let buf = super::mapped::load_file(f, path).map_err(|e| format!("cannot read it: {e}"))?;
    let buf: &[u8] = &buf;
    let removed_lines_of = session_of(path);
    let head = header(buf);
    if head.is_none() && removed_lines_of.is_none() {
        return Err("not a Pi session: its first line is not a session header".into());
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
    let read: Vec<(PathBuf, Result<SessionCalls, String>)> =
        files.par_iter().map(|p| (p.clone(), read_one(p))).collect();
    let mut sessions: Vec<SessionCalls> = Vec::new();
    let mut removed: Vec<SessionCalls> = Vec::new();
    for (path, r) in read {
        match r {
            Ok(s) if session_of(&path).is_some() => removed.push(s),
            Ok(s) => sessions.push(s),
            Err(reason) => skipped.push(Skipped { path, reason }),
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
