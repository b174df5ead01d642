//! Pi's session directories: which sessions a project has, and what a listing shows of each.
//!
//! A listing reads only what it needs of each file: the header, the lines that name the
//! session, the first and the newest user request, and the newest reply's usage (the context
//! it reported); the entries are counted by their line ends. Files are read on every core.
//! What is not a session is listed with the reason (unreadable, a broken link, a `.jsonl` that
//! is not a Pi session, a folder that cannot be read), never skipped silently.

use super::config;
use crate::engine::js;
use crate::engine::settings::Settings;
use memchr::memmem;
use rayon::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Why a listed path is not a readable session.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// A file in a session folder: unreadable, a broken link, not a Pi session.
    File(String),
    /// A session folder that cannot be read.
    Folder(String),
}

impl Problem {
    pub fn reason(&self) -> &str {
        match self {
            Problem::File(r) | Problem::Folder(r) => r,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    pub path: PathBuf,
    /// The folder it is in (Pi's folder of its project).
    pub dir: PathBuf,
    pub id: String,
    pub cwd: String,
    pub parent_session: Option<String>,
    pub name: Option<String>,
    pub first_message: Option<String>,
    /// The newest user request.
    pub last_message: Option<String>,
    pub entries: usize,
    pub bytes: u64,
    pub modified_ms: i64,
    /// The header's timestamp and version.
    pub created: Option<String>,
    pub version: Option<u64>,
    /// The context as of the newest reply: its usage (what the provider counted), plus Pi's
    /// estimate of the messages after it. `None` before any reply with usage.
    pub context_tokens: Option<u64>,
    /// provider/model of the newest reply.
    pub model: Option<(String, String)>,
    pub problem: Option<Problem>,
}

impl SessionInfo {
    pub fn is_session(&self) -> bool {
        self.problem.is_none()
    }
    pub fn title(&self) -> String {
        self.name
            .clone()
            .or_else(|| self.first_message.clone())
            .unwrap_or_else(|| "(no messages)".into())
    }
    pub fn modified_iso(&self) -> String {
        js::iso_from_ms(self.modified_ms)
    }
    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path, "id": self.id, "cwd": self.cwd, "parentSession": self.parent_session,
            "name": self.name, "firstMessage": self.first_message, "lastMessage": self.last_message,
            "entries": self.entries, "bytes": self.bytes, "modified": self.modified_iso(),
            "created": self.created, "version": self.version, "contextTokens": self.context_tokens,
            "model": self.model.as_ref().map(|(p, m)| format!("{p}/{m}")),
        })
    }
    fn problem(path: &Path, dir: &Path, p: Problem) -> SessionInfo {
        SessionInfo {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            problem: Some(p),
            ..Default::default()
        }
    }
}

/// The line around byte `at`.
fn line_at(buf: &[u8], at: usize) -> &[u8] {
    let start = memchr::memrchr(b'\n', &buf[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &buf[at..]).map_or(buf.len(), |i| at + i);
    &buf[start..end]
}

#[derive(serde::Deserialize)]
struct Peek<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
    name: Option<String>,
    message: Option<&'a serde_json::value::RawValue>,
}

/// A user request's text on one line (at most 80 columns), if `line` is one.
fn user_text(line: &[u8]) -> Option<String> {
    let p: Peek = serde_json::from_slice(line).ok()?;
    if p.kind.as_deref() != Some("message") {
        return None;
    }
    let m: Value = serde_json::from_str(p.message?.get()).ok()?;
    if m.get("role").and_then(|r| r.as_str()) != Some("user") {
        return None;
    }
    let t = crate::engine::context::content_text(m.get("content"), " ");
    (!t.trim().is_empty()).then(|| crate::engine::tree_view::one_line(&t, 80))
}

/// The newest reply's usage in `buf`: (tokens it reported, provider/model, where its line ends).
fn last_usage(buf: &[u8]) -> Option<(u64, Option<(String, String)>, usize)> {
    let finder = memmem::FinderRev::new(b"\"usage\":");
    let mut end = buf.len();
    while let Some(at) = finder.rfind(&buf[..end]) {
        let line = line_at(buf, at);
        let line_end = at + memchr::memchr(b'\n', &buf[at..]).unwrap_or(buf.len() - at);
        end = at;
        let Ok(p) = serde_json::from_slice::<Peek>(line) else {
            continue;
        };
        let Some(m) = p.message.and_then(|m| serde_json::from_str::<Value>(m.get()).ok()) else {
            continue;
        };
        if m.get("role").and_then(|r| r.as_str()) != Some("assistant") {
            continue;
        }
        let Some(u) = m.get("usage").filter(|u| u.is_object()) else {
            continue;
        };
        // Pi's `calculateContextTokens`: totalTokens, else the parts added up.
        let n = |k: &str| u.get(k).and_then(|x| x.as_f64()).unwrap_or(0.0);
        let total = match u.get("totalTokens").and_then(|x| x.as_f64()) {
            Some(t) if t > 0.0 => t,
            _ => n("input") + n("output") + n("cacheRead") + n("cacheWrite"),
        };
        if total <= 0.0 {
            continue;
        }
        let s = |k: &str| m.get(k).and_then(|x| x.as_str()).map(String::from);
        let model = s("provider").zip(s("model"));
        return Some((total as u64, model, line_end));
    }
    None
}

/// Pi's estimate of the messages in `tail` (the lines after the newest usage): chars / 4 of
/// their content.
fn estimate_tail(tail: &[u8]) -> u64 {
    tail.split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Peek>(l).ok())
        .filter_map(|p| p.message.and_then(|m| serde_json::from_str::<Value>(m.get()).ok()))
        .map(|m| crate::engine::context::estimate_value(&m))
        .sum()
}

/// What a listing shows of one session file (or why it is not one).
pub fn session_info(path: &Path) -> Option<SessionInfo> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let info = read_info(path, &dir);
    info.is_session().then_some(info)
}

/// [`session_info`], problems included.
fn read_info(path: &Path, dir: &Path) -> SessionInfo {
    let problem = |why: String| SessionInfo::problem(path, dir, Problem::File(why));
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && std::fs::symlink_metadata(path).is_ok() => {
            return problem("a broken link: what it points to is gone".into());
        }
        Err(e) => return problem(format!("cannot read it: {}", io_reason(&e))),
    };
    let f = match super::files::open_regular(path) {
        Ok(f) => f,
        Err(super::OpenError::Io { source, .. }) => return problem(format!("cannot read it: {}", io_reason(&source))),
        Err(super::OpenError::NotAFile { what, .. }) => return problem(format!("{what}, not a session file")),
        Err(e) => return problem(e.to_string()),
    };
    // Mapped when large: listing a folder of 100 MB sessions copies none of them.
    let buf = match super::mapped::load_file(f, path) {
        Ok(b) => b,
        Err(e) => return problem(format!("cannot read it: {}", io_reason(&e))),
    };
    let buf: &[u8] = &buf;
    let mut start = 0;
    let header: Value = loop {
        if start >= buf.len() {
            return problem("empty: not a Pi session".into());
        }
        let end = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        let line = &buf[start..end];
        start = end + 1;
        if line.iter().all(|c| c.is_ascii_whitespace()) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => break v,
            Err(_) => return problem("not a Pi session: its first line is not JSON".into()),
        }
    };
    if header.get("type").and_then(|t| t.as_str()) != Some("session") {
        return problem("not a Pi session: its first line is not a session header".into());
    }
    let body = &buf[start.min(buf.len())..];
    // Entries: lines after the header (a last line without its newline counts too).
    let entries = memchr::memchr_iter(b'\n', body).count() + usize::from(body.last().is_some_and(|b| *b != b'\n'))
        - memmem::find_iter(body, b"\n\n").count();
    // The name: the newest `session_info` line.
    let mut name = None;
    let info_finder = memmem::FinderRev::new(b"\"session_info\"");
    let mut end = body.len();
    while let Some(at) = info_finder.rfind(&body[..end]) {
        end = at;
        if let Ok(p) = serde_json::from_slice::<Peek>(line_at(body, at))
            && p.kind.as_deref() == Some("session_info")
        {
            name = p.name.map(|n| js::js_trim(&n).to_string()).filter(|n| !n.is_empty());
            break;
        }
    }
    // The first and the newest user request.
    let user = b"\"role\":\"user\"";
    let first_message = memmem::find_iter(body, user).find_map(|at| user_text(line_at(body, at)));
    let rev = memmem::FinderRev::new(user);
    let mut end = body.len();
    let mut last_message = None;
    while let Some(at) = rev.rfind(&body[..end]) {
        end = at;
        if let Some(t) = user_text(line_at(body, at)) {
            last_message = Some(t);
            break;
        }
    }
    let (context_tokens, model) = match last_usage(body) {
        Some((tokens, model, line_end)) => (Some(tokens + estimate_tail(&body[line_end.min(body.len())..])), model),
        None => (None, None),
    };
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let s = |k: &str| header.get(k).and_then(|v| v.as_str()).map(String::from);
    SessionInfo {
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        id: s("id").unwrap_or_default(),
        cwd: s("cwd").unwrap_or_default(),
        parent_session: s("parentSession"),
        name,
        first_message,
        last_message,
        entries,
        bytes: meta.len(),
        modified_ms,
        created: s("timestamp"),
        version: header.get("version").and_then(|v| v.as_u64()),
        context_tokens,
        model,
        problem: None,
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::NotFound => "it is gone".into(),
        _ => e.to_string(),
    }
}

/// The `*.jsonl` files of a session folder (a delete's removed-lines files are not sessions),
/// links included (a broken one is listed as such).
fn jsonl_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter(|p| !p.is_dir())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".jsonl.deleted-"))
        })
        .collect())
}

/// The session folders to list: this project's, or every project's.
fn folders(cwd: &Path, settings: &Settings, all: bool) -> (Vec<PathBuf>, bool) {
    let (dir, flat) = config::session_dir_for(cwd, settings);
    if !all || flat {
        return (vec![dir], flat);
    }
    let root = config::agent_dir().join("sessions");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    (v, false)
}

/// Sessions of the project at `cwd` (or of every project), newest first, then what is not a
/// readable session (with the reason).
pub fn list_sessions(cwd: &Path, settings: &Settings, all: bool) -> Vec<SessionInfo> {
    let (dirs, flat) = folders(cwd, settings, all);
    let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut out: Vec<SessionInfo> = Vec::new();
    for d in &dirs {
        match jsonl_files(d) {
            Ok(fs) => files.extend(fs.into_iter().map(|f| (f, d.clone()))),
            // A project's folder that is missing has no sessions; one that cannot be read says so.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => out.push(SessionInfo::problem(
                d,
                d,
                Problem::Folder(format!("cannot list it: {}", io_reason(&e))),
            )),
        }
    }
    let cwd_s = cwd.to_string_lossy().to_string();
    let mut infos: Vec<SessionInfo> = files
        .par_iter()
        .map(|(f, d)| read_info(f, d))
        // A flat folder holds every project's sessions: this project's are its cwd's.
        .filter(|i| all || !flat || !i.is_session() || i.cwd == cwd_s)
        .collect();
    infos.sort_by(|a, b| {
        a.problem
            .is_some()
            .cmp(&b.problem.is_some())
            .then(b.modified_ms.cmp(&a.modified_ms))
            .then(b.path.cmp(&a.path))
    });
    infos.extend(out);
    infos
}

/// How many session files Pi has in every project (the `*.jsonl` files of its session
/// folders, not opened): what "none here" is measured against.
pub fn count_all_sessions(cwd: &Path, settings: &Settings) -> usize {
    let (dirs, _) = folders(cwd, settings, true);
    dirs.iter().map(|d| jsonl_files(d).map(|v| v.len()).unwrap_or(0)).sum()
}

/// The newest session file in a directory (by modification time), as Pi's `--continue`.
pub fn newest_in_dir(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = jsonl_files(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0));
    files.into_iter().map(|(_, p)| p).find(|p| is_session_file(p))
}

/// Whether the file starts with a Pi session header (only its first line is read).
fn is_session_file(p: &Path) -> bool {
    use std::io::BufRead;
    let Ok(f) = std::fs::File::open(p) else { return false };
    let mut r = std::io::BufReader::new(f);
    let mut line = String::new();
    while r.read_line(&mut line).is_ok_and(|n| n > 0) {
        if !line.trim().is_empty() {
            return serde_json::from_str::<Value>(&line)
                .is_ok_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("session"));
        }
        line.clear();
    }
    false
}

/// The newest session of the project at `cwd` (what `bonsai` opens): by modification time,
/// only the header of each candidate read.
pub fn newest_session(cwd: &Path, settings: &Settings) -> Option<PathBuf> {
    let (dirs, flat) = folders(cwd, settings, false);
    let cwd_s = cwd.to_string_lossy().to_string();
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = dirs
        .iter()
        .flat_map(|d| jsonl_files(d).unwrap_or_default())
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0));
    files.into_iter().map(|(_, p)| p).find(|p| {
        if !flat {
            return is_session_file(p);
        }
        // A flat folder: the header's cwd says whose it is.
        session_info(p).is_some_and(|i| i.cwd == cwd_s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_session_is_read_for_its_listing_fields() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "s.jsonl",
            concat!(
                r#"{"type":"session","version":3,"id":"abc","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/u/p","parentSession":"/x/parent.jsonl"}"#,
                "\n",
                r#"{"type":"message","id":"1","parentId":null,"timestamp":"t","message":{"role":"user","content":"first \"role\":\"user\" ask"}}"#,
                "\n",
                r#"{"type":"message","id":"2","parentId":"1","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":20,"cacheRead":1000,"cacheWrite":0,"totalTokens":1030}}}"#,
                "\n",
                r#"{"type":"session_info","id":"3","parentId":"2","timestamp":"t","name":"Old name"}"#,
                "\n",
                r#"{"type":"session_info","id":"4","parentId":"3","timestamp":"t","name":"  New name "}"#,
                "\n",
                r#"{"type":"message","id":"5","parentId":"4","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"second ask, 40 chars of content here!!"}]}}"#,
                "\n",
            ),
        );
        let i = session_info(&p).unwrap();
        assert_eq!(i.id, "abc");
        assert_eq!(i.entries, 5);
        assert_eq!(i.name.as_deref(), Some("New name"));
        assert_eq!(i.first_message.as_deref(), Some("first \"role\":\"user\" ask"));
        assert_eq!(
            i.last_message.as_deref(),
            Some("second ask, 40 chars of content here!!")
        );
        assert_eq!(i.parent_session.as_deref(), Some("/x/parent.jsonl"));
        assert_eq!(i.version, Some(3));
        assert_eq!(i.model, Some(("anthropic".into(), "claude-sonnet-4-5".into())));
        // The reply's 1,030 and Pi's estimate of the request after it (38 chars -> 10).
        assert_eq!(i.context_tokens, Some(1030 + 10));
    }

    #[test]
    fn what_is_not_a_session_is_listed_with_the_reason() {
        let d = tempfile::tempdir().unwrap();
        let ok = write(
            d.path(),
            "ok.jsonl",
            "{\"type\":\"session\",\"version\":3,\"id\":\"a\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
        );
        write(d.path(), "notes.jsonl", "{\"hello\":1}\n");
        write(d.path(), "garbage.jsonl", "not json at all\n");
        write(d.path(), "empty.jsonl", "");
        std::os::unix::fs::symlink(d.path().join("nowhere.jsonl"), d.path().join("dangling.jsonl")).unwrap();
        let locked = write(d.path(), "locked.jsonl", "{}\n");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let root = nix_is_root();
        let mut infos: Vec<SessionInfo> = jsonl_files(d.path())
            .unwrap()
            .iter()
            .map(|f| read_info(f, d.path()))
            .collect();
        infos.sort_by(|a, b| a.path.cmp(&b.path));
        let reason = |n: &str| {
            infos
                .iter()
                .find(|i| i.path.file_name().unwrap() == n)
                .unwrap()
                .problem
                .as_ref()
                .map(|p| p.reason().to_string())
        };
        assert_eq!(reason("ok.jsonl"), None);
        assert_eq!(
            reason("notes.jsonl").as_deref(),
            Some("not a Pi session: its first line is not a session header")
        );
        assert_eq!(
            reason("garbage.jsonl").as_deref(),
            Some("not a Pi session: its first line is not JSON")
        );
        assert_eq!(reason("empty.jsonl").as_deref(), Some("empty: not a Pi session"));
        assert_eq!(
            reason("dangling.jsonl").as_deref(),
            Some("a broken link: what it points to is gone")
        );
        if !root {
            assert_eq!(
                reason("locked.jsonl").as_deref(),
                Some("cannot read it: permission denied")
            );
        }
        assert_eq!(session_info(&ok).unwrap().entries, 0);
        // A folder that cannot be read.
        let sub = d.path().join("locked-dir");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o000)).unwrap();
        if !root {
            assert!(jsonl_files(&sub).is_err());
        }
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Root reads anything: the permission cases only hold for other users.
    fn nix_is_root() -> bool {
        unsafe { libc::geteuid() == 0 }
    }
}
