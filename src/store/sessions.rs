//! Pi's session directories: which sessions a project has, and what a listing shows of each.

use super::config;
use crate::engine::js;
use crate::engine::settings::Settings;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    pub cwd: String,
    pub parent_session: Option<String>,
    pub name: Option<String>,
    pub first_message: Option<String>,
    pub entries: usize,
    pub bytes: u64,
    pub modified_ms: i64,
}

impl SessionInfo {
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
            "name": self.name, "firstMessage": self.first_message, "entries": self.entries,
            "bytes": self.bytes, "modified": self.modified_iso(),
        })
    }
}

/// Read a session's header and summary fields without building the whole model.
pub fn session_info(path: &Path) -> Option<SessionInfo> {
    let meta = std::fs::metadata(path).ok()?;
    // Mapped when large: listing a folder of 100 MB sessions copies none of them.
    let buf = super::mapped::load(path).ok()?;
    let mut lines = buf
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(|c| c.is_ascii_whitespace()));
    let header: Value = loop {
        let l = lines.next()?;
        if let Ok(v) = serde_json::from_slice::<Value>(l) {
            break v;
        }
    };
    if header.get("type")?.as_str()? != "session" {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
        name: Option<String>,
        message: Option<&'a serde_json::value::RawValue>,
    }
    // Only lines that can matter are parsed: listing a directory of 100 MB sessions must
    // not parse 100 MB each.
    let info_finder = memchr::memmem::Finder::new(b"\"session_info\"");
    let user_finder = memchr::memmem::Finder::new(b"\"user\"");
    let mut entries = 0;
    let mut name = None;
    let mut first_message = None;
    for l in lines {
        entries += 1;
        if info_finder.find(l).is_some()
            && let Ok(p) = serde_json::from_slice::<Peek>(l)
            && p.kind.as_deref() == Some("session_info")
        {
            name = p.name.map(|n| js::js_trim(&n).to_string()).filter(|n| !n.is_empty());
        }
        if first_message.is_none()
            && user_finder.find(l).is_some()
            && let Ok(p) = serde_json::from_slice::<Peek>(l)
            && p.kind.as_deref() == Some("message")
            && let Some(m) = p.message.and_then(|m| serde_json::from_str::<Value>(m.get()).ok())
            && m.get("role").and_then(|r| r.as_str()) == Some("user")
        {
            let t = crate::engine::context::content_text(m.get("content"), " ");
            if !t.is_empty() {
                first_message = Some(crate::engine::tree_view::one_line(&t, 80));
            }
        }
    }
    let modified_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Some(SessionInfo {
        path: path.to_path_buf(),
        id: header.get("id").and_then(|v| v.as_str()).unwrap_or("").into(),
        cwd: header.get("cwd").and_then(|v| v.as_str()).unwrap_or("").into(),
        parent_session: header.get("parentSession").and_then(|v| v.as_str()).map(String::from),
        name,
        first_message,
        entries,
        bytes: meta.len(),
        modified_ms,
    })
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return vec![] };
    rd.filter_map(|e| e.ok())
        .map(|e| e.path())
        // A delete's removed lines (`FILE.deleted-TIME.jsonl`) are not a session.
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".jsonl.deleted-"))
        })
        .collect()
}

/// Sessions of the project at `cwd` (or of every project), newest first.
pub fn list_sessions(cwd: &Path, settings: &Settings, all: bool) -> Vec<SessionInfo> {
    let (dir, flat) = config::session_dir_for(cwd, settings);
    let files: Vec<PathBuf> = if all {
        if flat {
            jsonl_files(&dir)
        } else {
            let root = config::agent_dir().join("sessions");
            std::fs::read_dir(&root)
                .map(|rd| rd.filter_map(|e| e.ok()).flat_map(|e| jsonl_files(&e.path())).collect())
                .unwrap_or_default()
        }
    } else {
        jsonl_files(&dir)
    };
    let cwd_s = cwd.to_string_lossy().to_string();
    let mut infos: Vec<SessionInfo> = files
        .iter()
        .filter_map(|p| session_info(p))
        .filter(|i| all || !flat || i.cwd == cwd_s)
        .collect();
    infos.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then(b.path.cmp(&a.path)));
    infos
}

/// How many session files Pi has in every project (the `*.jsonl` files of its session
/// folders, not opened): what "none here" is measured against.
pub fn count_all_sessions(cwd: &Path, settings: &Settings) -> usize {
    let (dir, flat) = config::session_dir_for(cwd, settings);
    if flat {
        return jsonl_files(&dir).len();
    }
    let root = config::agent_dir().join("sessions");
    std::fs::read_dir(&root)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| jsonl_files(&e.path()).len()).sum())
        .unwrap_or(0)
}

/// The newest session file in a directory (by modification time), as Pi's `--continue`.
pub fn newest_in_dir(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = jsonl_files(dir)
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0));
    files.into_iter().map(|(_, p)| p).find(|p| session_info(p).is_some())
}
