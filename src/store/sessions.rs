//! Pi's session directories: which sessions a project has, and what a listing shows of each.
//!
//! A listing reads only what it needs of each file: the header, the lines that name the
//! session, the first and the newest user request, and the newest reply's usage (the context
//! it reported); the entries are counted by their line ends. Files are read on every core.
//! What is not a session is listed with the reason (unreadable, a broken link, a `.jsonl` that
//! is not a Pi session, a folder that cannot be read), never skipped silently.

use super::config;
use crate::engine::load::js;
use crate::engine::settings::Settings;
use memchr::memmem;
use rayon::prelude::*;
use serde_json::{Value, json};
use std::collections::HashMap;
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
    /// What the session's recorded model calls used and cost (every call in the file: replies,
    /// summaries, cache warming; a fork's copies of its source's calls included).
    pub spent: Spent,
    /// The goal the newest summary (compaction or branch summary) states, if it states one.
    pub goal: Option<String>,
    /// bonsai's title for a session without a name (see `engine::view::title`).
    pub made_title: Option<String>,
    pub problem: Option<Problem>,
}

/// Tokens and cost of a file's recorded calls, summed as the listing reads it.
pub type Spent = crate::engine::usage::Sums;

impl SessionInfo {
    pub fn is_session(&self) -> bool {
        self.problem.is_none()
    }
    /// Its name; without one, bonsai's title for it; else its first request.
    /// The title as a view shows it: on one line, every control, bidi and zero-width
    /// character written out (`engine::units::one_line`): a session names itself.
    pub fn title(&self) -> String {
        crate::engine::units::one_line(&self.raw_title()).into_owned()
    }

    /// The title as written: the name, bonsai's title, or the first request (JSON keeps it).
    pub fn raw_title(&self) -> String {
        self.name
            .clone()
            .or_else(|| self.made_title.clone())
            .or_else(|| self.first_message.clone())
            .unwrap_or_else(|| "(no messages)".into())
    }

    /// The session's folder as a view shows it (see [`SessionInfo::title`]).
    pub fn shown_cwd(&self) -> String {
        crate::engine::units::one_line(&self.cwd).into_owned()
    }
    /// Whether [`SessionInfo::title`] is bonsai's (the session has no name of its own).
    pub fn title_is_made(&self) -> bool {
        self.name.is_none() && self.made_title.is_some()
    }
    /// Fill in bonsai's title from the first request and the newest summary's goal.
    fn with_made_title(mut self) -> SessionInfo {
        self.made_title = match self.name {
            Some(_) => None,
            None => crate::engine::view::title::with_goal(self.first_message.as_deref(), self.goal.as_deref()),
        };
        self
    }
    pub fn modified_iso(&self) -> String {
        js::iso_from_ms(self.modified_ms)
    }
    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path, "id": self.id, "cwd": self.cwd, "parentSession": self.parent_session,
            "name": self.name,
            "title": self.raw_title(), "titleBy": if self.name.is_some() { Some("name") } else if self.made_title.is_some() { Some("bonsai") } else { None },
            "firstMessage": self.first_message, "lastMessage": self.last_message,
            "entries": self.entries, "bytes": self.bytes, "modified": self.modified_iso(),
            "created": self.created, "version": self.version, "contextTokens": self.context_tokens,
            "model": self.model.as_ref().map(|(p, m)| format!("{p}/{m}")),
            "calls": self.spent.calls, "tokensUsed": self.spent.tokens, "cost": self.spent.cost,
            "summaryCalls": {"calls": self.spent.summaries.calls, "tokens": self.spent.summaries.tokens, "cost": self.spent.summaries.cost},
            "copies": {"calls": self.spent.copies.calls, "tokens": self.spent.copies.tokens, "cost": self.spent.copies.cost},
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
    let t = crate::engine::view::context::content_text(m.get("content"), " ");
    (!t.trim().is_empty()).then(|| crate::engine::view::tree_view::one_line(&t, 80))
}

/// A reply's provider and model.
type ModelName = (String, String);

/// The newest reply's usage in `buf`: (tokens it reported, provider/model, where its line ends).
fn last_usage(buf: &[u8]) -> Option<(u64, Option<ModelName>, usize)> {
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
        .map(|m| crate::engine::view::context::estimate_value(&m))
        .sum()
}

/// What a listing shows of one session file (or why it is not one).
pub fn session_info(path: &Path) -> Option<SessionInfo> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let info = read_info(path, &dir, None);
    info.is_session().then_some(info)
}

/// The name the newest `session_info` line gives (`Some(None)`: an empty name cleared it).
fn name_in(body: &[u8]) -> Option<Option<String>> {
    let info_finder = memmem::FinderRev::new(b"\"session_info\"");
    let mut end = body.len();
    while let Some(at) = info_finder.rfind(&body[..end]) {
        end = at;
        if let Ok(p) = serde_json::from_slice::<Peek>(line_at(body, at))
            && p.kind.as_deref() == Some("session_info")
        {
            return Some(p.name.map(|n| js::js_trim(&n).to_string()).filter(|n| !n.is_empty()));
        }
    }
    None
}

/// The first user request's text.
fn first_request(body: &[u8]) -> Option<String> {
    key_value_at(body, "role", "user").find_map(|at| user_text(line_at(body, at)))
}

/// Whether the `"value"` at `at` in `body` is the value of `"key"` (JSON's whitespace
/// allowed around the colon, as a valid session may be written; Pi writes none).
fn is_value_of(body: &[u8], at: usize, key: &[u8]) -> bool {
    let ws = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let mut i = at;
    while i > 0 && ws(body[i - 1]) {
        i -= 1;
    }
    if i == 0 || body[i - 1] != b':' {
        return false;
    }
    i -= 1;
    while i > 0 && ws(body[i - 1]) {
        i -= 1;
    }
    i >= key.len() && &body[i - key.len()..i] == key
}

/// Where `"key": "value"` stands in `body`, first to last, found by the value's bytes and
/// checked back to its key (a search, not a parse: only the lines found are decoded).
fn key_value_at<'a>(body: &'a [u8], key: &'a str, value: &str) -> impl Iterator<Item = usize> + 'a {
    let finder = memmem::Finder::new(format!("\"{value}\"").as_bytes()).into_owned();
    let key = format!("\"{key}\"").into_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(i) = finder.find(&body[from..]) {
            let at = from + i;
            from = at + 1;
            if is_value_of(body, at, &key) {
                return Some(at);
            }
        }
        None
    })
}

/// [`key_value_at`], last to first.
fn key_value_rev<'a>(body: &'a [u8], key: &'a str, value: &str) -> impl Iterator<Item = usize> + 'a {
    let f = memmem::FinderRev::new(format!("\"{value}\"").as_bytes()).into_owned();
    let key = format!("\"{key}\"").into_bytes();
    let mut end = body.len();
    std::iter::from_fn(move || {
        while let Some(at) = f.rfind(&body[..end]) {
            end = at;
            if is_value_of(body, at, &key) {
                return Some(at);
            }
        }
        None
    })
}

/// A session file's title as the listing gives it (its name, else its first request), read
/// by two searches, not a listing of the whole file: a trashed session's row.
pub fn title_of(path: &Path) -> Option<String> {
    let f = super::files::open_regular(path).ok()?;
    let buf = super::mapped::load_file(f, path).ok()?;
    name_in(&buf).flatten().or_else(|| first_request(&buf))
}

/// What the body of a session (or what was appended to it) says for a listing.
#[derive(Debug, Default)]
struct BodyFacts {
    /// Lines (a last line without its newline counts).
    entries: usize,
    name: Option<Option<String>>,
    first_message: Option<String>,
    last_message: Option<String>,
    /// The newest reply's usage and model, and Pi's estimate of the messages after it; or,
    /// without a reply in the body, the estimate of all of it.
    usage: Option<(u64, Option<(String, String)>)>,
    tail_estimate: u64,
    spent: Spent,
    /// The newest summary's goal (`Some(None)`: the newest summary states none); `None`
    /// without a summary in the body.
    goal: Option<Option<String>>,
}

/// The listing's facts of `body` (whole lines after the header, or after what a cached listing
/// already read), each found by a byte search and only its line decoded.
/// `forked_at`: the header's time of a session forked or cloned from another (its calls from
/// before then are copies).
fn scan_body(body: &[u8], forked_at: Option<&str>) -> BodyFacts {
    let entries = memchr::memchr_iter(b'\n', body).count() + usize::from(body.last().is_some_and(|b| *b != b'\n'))
        - memmem::find_iter(body, b"\n\n").count();
    let name = name_in(body);
    // The first and the newest user request.
    let first_message = first_request(body);
    let last_message = key_value_rev(body, "role", "user").find_map(|at| user_text(line_at(body, at)));
    let (usage, tail_estimate) = match last_usage(body) {
        Some((tokens, model, line_end)) => (Some((tokens, model)), estimate_tail(&body[line_end.min(body.len())..])),
        None => (None, estimate_tail(body)),
    };
    BodyFacts {
        entries,
        name,
        first_message,
        last_message,
        usage,
        tail_estimate,
        spent: crate::engine::usage::sums(body, forked_at),
        goal: newest_goal(body),
    }
}

/// The goal the newest compaction or branch summary in `body` states (found from the end;
/// only that line is decoded).
fn newest_goal(body: &[u8]) -> Option<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Summary {
        #[serde(rename = "type")]
        kind: Option<String>,
        summary: Option<String>,
    }
    let newest = |kind: &str| {
        key_value_rev(body, "type", kind).find_map(|at| {
            let line = line_at(body, at);
            serde_json::from_slice::<Summary>(line)
                .ok()
                .filter(|s| matches!(s.kind.as_deref(), Some("compaction" | "branch_summary")))
                .map(|s| (at, s.summary))
        })
    };
    let c = newest("compaction");
    let b = newest("branch_summary");
    let (_, summary) = match (c, b) {
        (Some(c), Some(b)) => {
            if c.0 > b.0 {
                c
            } else {
                b
            }
        }
        (c, b) => c.or(b)?,
    };
    Some(summary.as_deref().and_then(crate::engine::view::title::goal_of))
}

/// A cached listing of a file, and the bytes it was read up to.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Cached {
    path: PathBuf,
    /// The length read, and the last bytes before it (whether the file only grew since).
    len: u64,
    end_bytes: String,
    mtime_ms: i64,
    id: String,
    cwd: String,
    parent_session: Option<String>,
    name: Option<String>,
    first_message: Option<String>,
    last_message: Option<String>,
    entries: usize,
    created: Option<String>,
    version: Option<u64>,
    context_tokens: Option<u64>,
    model: Option<(String, String)>,
    /// Absent in a cache written before bonsai counted summary calls and copies apart (or
    /// before it summed usage): such an entry is read again.
    #[serde(default, rename = "spentApart")]
    spent: Option<Spent>,
    /// The newest summary's goal.
    #[serde(default, rename = "summaryGoal")]
    goal: Option<String>,
    /// False in a cache written before bonsai made titles (it did not read the goal): such an
    /// entry is read again.
    #[serde(default, rename = "goalRead")]
    goal_read: bool,
}

/// The last bytes before `len` (hex), to tell appended bytes from a rewrite.
fn end_bytes(buf: &[u8], len: usize) -> String {
    buf[len.saturating_sub(32)..len]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// [`session_info`], problems included; with `cached`, a file Pi only appended to since is read
/// from where the cache left off (and one unchanged not at all).
fn read_info(path: &Path, dir: &Path, cached: Option<&Cached>) -> SessionInfo {
    let problem = |why: String| SessionInfo::problem(path, dir, Problem::File(why));
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && std::fs::symlink_metadata(path).is_ok() => {
            return problem("a broken link: what it points to is gone".into());
        }
        Err(e) => return problem(format!("cannot read it: {}", io_reason(&e))),
    };
    let modified_ms = super::files::mtime_ms(&meta);
    let cached = cached.filter(|c| c.spent.is_some() && c.goal_read);
    if let Some(c) = cached
        && c.len == meta.len()
        && c.mtime_ms == modified_ms
    {
        return c.to_info(dir, meta.len(), modified_ms).with_made_title();
    }
    let f = match super::files::open_regular(path) {
        Ok(f) => f,
        Err(super::files::OpenError::Io { source, .. }) => {
            return problem(format!("cannot read it: {}", io_reason(&source)));
        }
        Err(super::files::OpenError::NotAFile { what, .. }) => return problem(format!("{what}, not a session file")),
        Err(e) => return problem(e.to_string()),
    };
    // Mapped when large: listing a folder of 100 MB sessions copies none of them.
    let buf = match super::mapped::load_file(f, path) {
        Ok(b) => b,
        Err(e) => return problem(format!("cannot read it: {}", io_reason(&e))),
    };
    let buf: &[u8] = &buf;
    // Only appended to since the cache read it (it ended with a whole line, the same bytes
    // are where it ended): only the new lines are read.
    if let Some(c) = cached
        && (c.len as usize) < buf.len()
        && c.len > 0
        && buf[c.len as usize - 1] == b'\n'
        && end_bytes(buf, c.len as usize) == c.end_bytes
    {
        let forked_at = c.created.as_deref().filter(|_| c.parent_session.is_some());
        let more = scan_body(&buf[c.len as usize..], forked_at);
        let mut info = c.to_info(dir, meta.len(), modified_ms);
        info.entries += more.entries;
        if let Some(n) = more.name {
            info.name = n;
        }
        info.spent.add(&more.spent);
        info.first_message = info.first_message.or(more.first_message);
        if let Some(g) = more.goal {
            info.goal = g;
        }
        info.last_message = more.last_message.or(info.last_message);
        match more.usage {
            Some((tokens, model)) => {
                info.context_tokens = Some(tokens + more.tail_estimate);
                info.model = model.or(info.model);
            }
            None => info.context_tokens = info.context_tokens.map(|t| t + more.tail_estimate),
        }
        return info.with_made_title();
    }
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
    let s = |k: &str| header.get(k).and_then(|v| v.as_str()).map(String::from);
    let forked_at = s("timestamp").filter(|_| s("parentSession").is_some());
    let facts = scan_body(body, forked_at.as_deref());
    SessionInfo {
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        id: s("id").unwrap_or_default(),
        cwd: s("cwd").unwrap_or_default(),
        parent_session: s("parentSession"),
        name: facts.name.flatten(),
        first_message: facts.first_message,
        last_message: facts.last_message,
        entries: facts.entries,
        bytes: meta.len(),
        modified_ms,
        created: s("timestamp"),
        version: header.get("version").and_then(|v| v.as_u64()),
        context_tokens: facts.usage.as_ref().map(|(t, _)| t + facts.tail_estimate),
        model: facts.usage.and_then(|(_, m)| m),
        spent: facts.spent,
        goal: facts.goal.flatten(),
        made_title: None,
        problem: None,
    }
    .with_made_title()
}

impl Cached {
    fn of(info: &SessionInfo, end_bytes: String) -> Cached {
        Cached {
            path: info.path.clone(),
            len: info.bytes,
            end_bytes,
            mtime_ms: info.modified_ms,
            id: info.id.clone(),
            cwd: info.cwd.clone(),
            parent_session: info.parent_session.clone(),
            name: info.name.clone(),
            first_message: info.first_message.clone(),
            last_message: info.last_message.clone(),
            entries: info.entries,
            created: info.created.clone(),
            version: info.version,
            context_tokens: info.context_tokens,
            model: info.model.clone(),
            spent: Some(info.spent),
            goal: info.goal.clone(),
            goal_read: true,
        }
    }

    fn to_info(&self, dir: &Path, bytes: u64, modified_ms: i64) -> SessionInfo {
        SessionInfo {
            path: self.path.clone(),
            dir: dir.to_path_buf(),
            id: self.id.clone(),
            cwd: self.cwd.clone(),
            parent_session: self.parent_session.clone(),
            name: self.name.clone(),
            first_message: self.first_message.clone(),
            last_message: self.last_message.clone(),
            entries: self.entries,
            bytes,
            modified_ms,
            created: self.created.clone(),
            version: self.version,
            context_tokens: self.context_tokens,
            model: self.model.clone(),
            spent: self.spent.unwrap_or_default(),
            goal: self.goal.clone(),
            // Made by the caller, once what was appended since is in.
            made_title: None,
            problem: None,
        }
    }
}

/// bonsai's own listing cache under Pi's agent folder (never a session file): what each
/// session's listing said, up to which byte.
fn cache_file(agent: &Path) -> PathBuf {
    agent.join("bonsai").join("listing.json")
}

fn load_cache(agent: &Path) -> HashMap<PathBuf, Cached> {
    super::private::read(&cache_file(agent))
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<Cached>>(&b).ok())
        .map(|v| v.into_iter().map(|c| (c.path.clone(), c)).collect())
        .unwrap_or_default()
}

/// Written whole through a temporary file and a rename: a kill leaves the old cache or the
/// new one. A cache that cannot be written only makes the next listing read the files again.
fn save_cache(agent: &Path, entries: &[Cached]) {
    // Only the user reads it: it holds the first and newest request of every session.
    let _ = super::private::write(&cache_file(agent), &serde_json::to_vec(entries).unwrap_or_default());
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
/// The folders holding this project's sessions (or every project's).
pub fn session_folders(cwd: &Path, settings: &Settings, all: bool) -> Vec<PathBuf> {
    folders(&config::agent_dir(), cwd, settings, all).0
}

fn folders(agent: &Path, cwd: &Path, settings: &Settings, all: bool) -> (Vec<PathBuf>, bool) {
    let (dir, flat) = config::session_dir_in(agent, cwd, settings);
    if !all || flat {
        return (vec![dir], flat);
    }
    (subfolders(&agent.join("sessions")), false)
}

/// The folders in `root`, sorted (none when it cannot be read).
fn subfolders(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Sessions of the project at `cwd` (or of every project), newest first, then what is not a
/// readable session (with the reason).
pub fn list_sessions(cwd: &Path, settings: &Settings, all: bool) -> Vec<SessionInfo> {
    list_sessions_in(&config::agent_dir(), cwd, settings, all)
}

/// [`list_sessions`] with Pi's agent folder given (bonsai's listing cache is kept under it).
pub fn list_sessions_in(agent: &Path, cwd: &Path, settings: &Settings, all: bool) -> Vec<SessionInfo> {
    let (dirs, flat) = folders(agent, cwd, settings, all);
    list_folders(agent, &dirs, flat, cwd, all)
}

/// The folders under `root` that hold sessions, `root` first: a folder of project folders
/// such as Pi's sessions root.
pub fn folders_under(root: &Path) -> Vec<PathBuf> {
    let mut v = subfolders(root);
    v.insert(0, root.to_path_buf());
    v
}

/// Whether a folder under `root`, or `root` itself, holds a Pi session.
pub fn has_sessions_under(root: &Path) -> bool {
    folders_under(root).iter().any(|d| newest_in_dir(d).is_some())
}

/// Every session in `root` and in its folders, newest first, then what is not a readable
/// session: the picker on a folder of project folders (`bonsai ~/.pi/agent/sessions`).
pub fn list_sessions_under(agent: &Path, root: &Path) -> Vec<SessionInfo> {
    // Not `all`: the listing cache keeps the entries of folders outside `root`.
    list_folders(agent, &folders_under(root), false, root, false)
}

fn list_folders(agent: &Path, dirs: &[PathBuf], flat: bool, cwd: &Path, all: bool) -> Vec<SessionInfo> {
    let mut files: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut out: Vec<SessionInfo> = Vec::new();
    for d in dirs {
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
    let cache = load_cache(agent);
    let mut infos: Vec<SessionInfo> = files
        .par_iter()
        .map(|(f, d)| read_info(f, d, cache.get(f)))
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
    // What was read is kept for the next listing (with the bytes it ended on).
    let fresh: Vec<Cached> = infos
        .par_iter()
        .filter(|i| i.is_session())
        .filter_map(|i| {
            if let Some(c) = cache.get(&i.path)
                && c.len == i.bytes
                && c.mtime_ms == i.modified_ms
                && c.spent.is_some()
                && c.goal_read
            {
                return Some(c.clone());
            }
            let tail = read_end_bytes(&i.path, i.bytes)?;
            Some(Cached::of(i, tail))
        })
        .collect();
    let unchanged = fresh.len() == cache.len()
        && fresh.iter().all(|c| {
            cache
                .get(&c.path)
                .is_some_and(|o| o.len == c.len && o.mtime_ms == c.mtime_ms && o.spent.is_some() && o.goal_read)
        });
    if !unchanged {
        // Keep other projects' entries when only this project was listed.
        let mut all: HashMap<PathBuf, Cached> = if all { HashMap::new() } else { cache };
        for c in fresh {
            all.insert(c.path.clone(), c);
        }
        let mut v: Vec<Cached> = all.into_values().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        save_cache(agent, &v);
    }
    infos.extend(out);
    infos
}

/// The 32 bytes before `len` of the file at `path` (hex).
fn read_end_bytes(path: &Path, len: u64) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = super::files::open_regular(path).ok()?;
    let from = len.saturating_sub(32);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut b = vec![0u8; (len - from) as usize];
    f.read_exact(&mut b).ok()?;
    Some(end_bytes(&b, b.len()))
}

/// How many session files Pi has in every project (the `*.jsonl` files of its session
/// folders, not opened): what "none here" is measured against.
pub fn count_all_sessions(cwd: &Path, settings: &Settings) -> usize {
    count_all_sessions_in(&config::agent_dir(), cwd, settings)
}

/// [`count_all_sessions`] with Pi's agent folder given.
pub fn count_all_sessions_in(agent: &Path, cwd: &Path, settings: &Settings) -> usize {
    let (dirs, _) = folders(agent, cwd, settings, true);
    dirs.iter().map(|d| jsonl_files(d).map(|v| v.len()).unwrap_or(0)).sum()
}

/// The newest session file in a directory (by modification time), as Pi's `--continue`.
pub fn newest_in_dir(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = jsonl_files(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files.into_iter().map(|(_, p)| p).find(|p| is_session_file(p))
}

/// Whether the file starts with a Pi session header (only its first line is read). A FIFO or
/// a device named `*.jsonl` is not one, and is never waited on.
fn is_session_file(p: &Path) -> bool {
    use std::io::BufRead;
    let Ok(f) = super::files::open_regular(p) else {
        return false;
    };
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
    let (dirs, flat) = folders(&config::agent_dir(), cwd, settings, false);
    let cwd_s = cwd.to_string_lossy().to_string();
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = dirs
        .iter()
        .flat_map(|d| jsonl_files(d).unwrap_or_default())
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
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

    /// Issue 57: a valid session written with JSON's whitespace (`"role": "user"`) lists its
    /// requests like one Pi wrote; text that only mentions `"role": "user"` is no request.
    #[test]
    fn a_session_written_with_whitespace_lists_its_requests() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            d.path(),
            "w.jsonl",
            concat!(
                r#"{"type": "session", "version": 3, "id": "ws1", "timestamp": "2026-11-20T10:00:00.000Z", "cwd": "/home/u/p"}"#,
                "\n",
                r#"{"type": "message", "id": "1", "parentId": null, "timestamp": "t", "message": {"role" : "user", "content": "fix the \"role\": \"user\" parser"}}"#,
                "\n",
                r#"{"type": "message", "id": "2", "parentId": "1", "timestamp": "t", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}}"#,
                "\n",
                r#"{"type": "message", "id": "3", "parentId": "2", "timestamp": "t", "message": {"role":	"user", "content": "now the exporter"}}"#,
                "\n",
            ),
        );
        let i = session_info(&p).unwrap();
        assert_eq!(i.first_message.as_deref(), Some("fix the \"role\": \"user\" parser"));
        assert_eq!(i.last_message.as_deref(), Some("now the exporter"));
        assert_eq!(title_of(&p).as_deref(), Some("fix the \"role\": \"user\" parser"));
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
            .map(|f| read_info(f, d.path(), None))
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

    /// The listing cache gives what reading every file gives: unchanged files are not read,
    /// appended ones only from where it left off, a rewritten one whole again.
    /// A cache entry written before bonsai read summaries' goals is read again once, and kept
    /// with the goal (then the file is not read again); a summary appended later gives the
    /// title its goal.
    #[test]
    fn an_old_cache_entry_is_read_again_once_and_a_new_summary_s_goal_is_read() {
        use std::io::Write;
        let agent = tempfile::tempdir().unwrap();
        let cwd = Path::new("/home/u/p");
        let settings = Settings::default();
        let (dir, _) = config::session_dir_in(agent.path(), cwd, &settings);
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"type":"session","version":3,"id":"abc","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/u/p"}"#,
                "\n",
                r#"{"type":"message","id":"1","parentId":null,"timestamp":"t","message":{"role":"user","content":"go on"}}"#,
                "\n"
            ),
        )
        .unwrap();
        let listed = || list_sessions_in(agent.path(), cwd, &settings, false).remove(0);
        assert_eq!(listed().made_title.as_deref(), Some("Go on"));
        let mut old = load_cache(agent.path()).remove(&p).unwrap();
        assert!(old.goal_read);
        old.goal_read = false;
        old.first_message = Some("from an old cache".into());
        save_cache(agent.path(), &[old]);
        assert_eq!(listed().first_message.as_deref(), Some("go on"), "read again");
        assert!(load_cache(agent.path())[&p].goal_read, "and kept with the goal read");
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        writeln!(
            f,
            r###"{{"type":"compaction","id":"2","parentId":"1","timestamp":"t","summary":"## Goal\n- Ship the importer fix\n","firstKeptEntryId":"1","tokensBefore":5}}"###
        )
        .unwrap();
        drop(f);
        let s = listed();
        assert_eq!(
            (s.goal.as_deref(), s.made_title.as_deref()),
            (Some("Ship the importer fix"), Some("Ship the importer fix"))
        );
    }

    #[test]
    fn the_listing_cache_agrees_with_reading_every_file() {
        use std::io::Write;
        let agent = tempfile::tempdir().unwrap();
        let cwd = Path::new("/home/u/p");
        let settings = Settings::default();
        let (dir, _) = config::session_dir_in(agent.path(), cwd, &settings);
        std::fs::create_dir_all(&dir).unwrap();
        let head =
            r#"{"type":"session","version":3,"id":"abc","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/u/p"}"#;
        let user = |id: &str, parent: &str, text: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"t","message":{{"role":"user","content":"{text}"}}}}"#
            )
        };
        let reply = |id: &str, parent: &str, total: u64| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-11-20T10:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":{total},"cost":{{"total":0.25}}}}}}}}"#
            )
        };
        let p = dir.join("s.jsonl");
        std::fs::write(
            &p,
            format!("{head}\n{}\n{}\n", user("1", "null", "first ask"), reply("2", "1", 500)),
        )
        .unwrap();
        let uncached = |p: &Path| read_info(p, &dir, None);
        let same = |a: &SessionInfo, b: &SessionInfo| {
            assert_eq!(
                (
                    &a.name,
                    &a.first_message,
                    &a.last_message,
                    a.entries,
                    a.context_tokens,
                    &a.model,
                    a.bytes,
                    a.spent
                ),
                (
                    &b.name,
                    &b.first_message,
                    &b.last_message,
                    b.entries,
                    b.context_tokens,
                    &b.model,
                    b.bytes,
                    b.spent
                )
            );
        };
        let listed = list_sessions_in(agent.path(), cwd, &settings, false);
        same(&listed[0], &uncached(&p));
        assert!(cache_file(agent.path()).exists());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(cache_file(agent.path()))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        // Unchanged: what the cache says is what is listed, even where the file now differs
        // unseen (proof that it was not read: same length, same time).
        let cache = load_cache(agent.path());
        let c = cache.get(&p).unwrap();
        assert_eq!((c.len, c.entries), (std::fs::metadata(&p).unwrap().len(), 2));
        let mut forged = c.clone();
        forged.first_message = Some("from the cache".into());
        save_cache(agent.path(), &[forged]);
        assert_eq!(
            list_sessions_in(agent.path(), cwd, &settings, false)[0]
                .first_message
                .as_deref(),
            Some("from the cache")
        );
        save_cache(agent.path(), std::slice::from_ref(c));
        // Pi appends a name, a request and a reply, then a request: read from where it left off.
        let more = format!(
            "{}\n{}\n{}\n{}\n",
            r#"{"type":"session_info","id":"3","parentId":"2","timestamp":"t","name":"Named"}"#,
            user("4", "3", "second ask"),
            reply("5", "4", 900),
            user("6", "5", "third ask, forty characters of content!"),
        );
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(more.as_bytes())
            .unwrap();
        let listed = list_sessions_in(agent.path(), cwd, &settings, false);
        same(&listed[0], &uncached(&p));
        assert_eq!(listed[0].entries, 6);
        assert_eq!(listed[0].name.as_deref(), Some("Named"));
        // The usage sums grew by the appended reply alone.
        assert_eq!((listed[0].spent.calls, listed[0].spent.cost), (2, 0.5));
        assert_eq!(
            listed[0].last_message.as_deref(),
            Some("third ask, forty characters of content!")
        );
        // A request after the cached reply, with no reply of its own yet: the estimate grows.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(format!("{}\n", user("7", "6", "fourth")).as_bytes())
            .unwrap();
        same(&list_sessions_in(agent.path(), cwd, &settings, false)[0], &uncached(&p));
        // Rewritten longer with other bytes where the cached part ended: read whole.
        let rewritten = format!(
            "{head}\n{}\n{}\n{}\n",
            user("1", "null", "another first"),
            reply("2", "1", 70),
            user("3", "2", "x".repeat(600).as_str())
        );
        std::fs::write(&p, rewritten).unwrap();
        let listed = list_sessions_in(agent.path(), cwd, &settings, false);
        same(&listed[0], &uncached(&p));
        assert_eq!(listed[0].first_message.as_deref(), Some("another first"));
        // A cache from before the usage sums is read again, not taken as "no calls".
        let mut old = load_cache(agent.path()).remove(&p).unwrap();
        old.spent = None;
        save_cache(agent.path(), &[old]);
        assert_eq!(list_sessions_in(agent.path(), cwd, &settings, false)[0].spent.calls, 1);
        assert!(load_cache(agent.path())[&p].spent.is_some());
        // A cache that is not JSON is read as none.
        std::fs::write(cache_file(agent.path()), "garbage").unwrap();
        same(&list_sessions_in(agent.path(), cwd, &settings, false)[0], &uncached(&p));
    }

    /// Root reads anything: the permission cases only hold for other users.
    fn nix_is_root() -> bool {
        unsafe { libc::geteuid() == 0 }
    }
}
