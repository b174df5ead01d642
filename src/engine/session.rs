//! The session model: one compact record per entry, built in one pass over the file.
//!
//! Big content (tool output, images, file writes) is never copied: an entry keeps the byte
//! range of its line and the numbers Pi derives from it (token estimates, usage, tool calls).
//! Anything else is decoded on demand from the line (`Session::entry_value`).

use super::js;
use super::lenient::{LBlock, LContent, LEntry, LEntryHead, LMessage, json_str_stats};
use super::mapped::FileBytes;
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;

/// Message roles Pi knows; anything else is kept by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    ToolResult,
    BashExecution,
    Custom,
    BranchSummary,
    CompactionSummary,
    Other(Box<str>),
}

impl Role {
    pub fn parse(s: &str) -> Role {
        match s {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            "custom" => Role::Custom,
            "branchSummary" => Role::BranchSummary,
            "compactionSummary" => Role::CompactionSummary,
            other => Role::Other(other.into()),
        }
    }
    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::BashExecution => "bashExecution",
            Role::Custom => "custom",
            Role::BranchSummary => "branchSummary",
            Role::CompactionSummary => "compactionSummary",
            Role::Other(s) => s,
        }
    }
    /// Pi's `isCutPointMessage`: a compaction may keep from here.
    pub fn is_cut_point(&self) -> bool {
        matches!(
            self,
            Role::User
                | Role::Assistant
                | Role::BashExecution
                | Role::Custom
                | Role::BranchSummary
                | Role::CompactionSummary
        )
    }
    /// Pi's `isTurnStartMessage`.
    pub fn is_turn_start(&self) -> bool {
        matches!(
            self,
            Role::User | Role::BashExecution | Role::Custom | Role::BranchSummary | Role::CompactionSummary
        )
    }
}

/// What Pi's token estimate and the oracle's message description need of some content.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContentStats {
    pub is_string: bool,
    /// UTF-16 length of the string content, or the sum over `text` blocks.
    pub text_chars: usize,
    pub images: usize,
    pub thinking_chars: usize,
    /// Σ name.length + JSON.stringify(arguments).length over tool calls.
    pub tool_call_chars: usize,
    pub tool_calls: usize,
    /// Some text block has non-whitespace text (the tree hides assistants without).
    pub has_visible_text: bool,
    pub has_text_block: bool,
}

pub const IMAGE_CHARS: usize = 4800;

fn ceil4(n: usize) -> u64 {
    n.div_ceil(4) as u64
}

impl ContentStats {
    pub fn from_lcontent(c: &LContent) -> (ContentStats, Vec<ToolCall>) {
        let mut st = ContentStats::default();
        let mut calls = Vec::new();
        match c {
            LContent::Text(s) => {
                st.is_string = true;
                st.text_chars = js::utf16_len(s);
                st.has_visible_text = !js::js_trim(s).is_empty();
            }
            LContent::Blocks(blocks) => {
                for (bi, b) in blocks.iter().enumerate() {
                    st.add_block(b, bi, &mut calls);
                }
            }
            _ => {}
        }
        (st, calls)
    }

    fn add_block(&mut self, b: &LBlock, bi: usize, calls: &mut Vec<ToolCall>) {
        match b.kind.as_deref() {
            Some("text") => {
                self.has_text_block = true;
                if let Some((n, visible)) = b.text.get().and_then(json_str_stats) {
                    self.text_chars += n;
                    self.has_visible_text |= visible;
                }
            }
            Some("image") => self.images += 1,
            Some("thinking") => {
                if let Some((n, _)) = b.thinking.get().and_then(json_str_stats) {
                    self.thinking_chars += n;
                }
            }
            Some("toolCall") => {
                self.tool_calls += 1;
                let name = b.name.as_deref().unwrap_or("");
                let args: Option<Value> = b.arguments.get().and_then(|s| serde_json::from_str(s).ok());
                let args_len = args.as_ref().map(js::stringify_len).unwrap_or(0);
                self.tool_call_chars += js::utf16_len(name) + args_len;
                let path = args
                    .as_ref()
                    .and_then(|a| a.get("path"))
                    .and_then(|p| p.as_str())
                    .filter(|p| !p.is_empty())
                    .map(Box::from);
                calls.push(ToolCall {
                    id: b.id.as_deref().map(Box::from),
                    name: name.into(),
                    block: bi as u32,
                    path,
                });
            }
            _ => {}
        }
    }

    /// Pi's `estimateTokens` for content of a message with this role (not system).
    pub fn estimate(&self, role: &Role) -> u64 {
        match role {
            Role::User | Role::Custom | Role::ToolResult => {
                if self.is_string {
                    ceil4(self.text_chars)
                } else {
                    ceil4(self.text_chars + IMAGE_CHARS * self.images)
                }
            }
            Role::Assistant => {
                if self.is_string {
                    0
                } else {
                    ceil4(self.text_chars + self.thinking_chars + self.tool_call_chars)
                }
            }
            _ => 0,
        }
    }
}

/// A tool call in an assistant message; `path` feeds Pi's file tracking (read/write/edit).
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub id: Option<Box<str>>,
    pub name: Box<str>,
    pub block: u32,
    pub path: Option<Box<str>>,
}

/// Usage numbers as JavaScript sees them (NaN where a field is missing).
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total_tokens: f64,
}

impl Usage {
    /// Pi's `calculateContextTokens`: `totalTokens || input + output + cacheRead + cacheWrite`.
    pub fn context_tokens(&self) -> f64 {
        if self.total_tokens != 0.0 && !self.total_tokens.is_nan() {
            self.total_tokens
        } else {
            self.input + self.output + self.cache_read + self.cache_write
        }
    }
}

/// A message as stored in a `message` entry (or a compaction's `systemMessage`).
///
/// What the tree and the context walk need of every message is read at load; what needs a
/// pass over the content (Pi's token estimate, character counts, tool-call arguments) is the
/// lazily computed [`MsgBody`], so opening a session never measures content nobody asked for.
#[derive(Debug)]
pub struct Msg {
    pub role: Role,
    /// The content was `null` or missing (Pi substitutes `[]` / `""`).
    pub content_missing: bool,
    /// Some text (string content or a `text` block) has non-whitespace text; the tree hides
    /// assistant replies without.
    pub visible_text: bool,
    /// String ids of tool calls and their block index (tool results point at them).
    pub tool_call_ids: Box<[(Box<str>, u32)]>,
    pub provider: Option<Box<str>>,
    pub model: Option<Box<str>>,
    pub stop_reason: Option<Box<str>>,
    pub has_error_message: bool,
    pub usage: Option<Usage>,
    pub tool_name: Option<Box<str>>,
    pub tool_call_id: Option<Box<str>>,
    pub is_error: bool,
    pub exclude_from_context: bool,
    pub custom_type: Option<Box<str>>,
    /// Byte range of the line holding this message, for the lazy body.
    line: Range<usize>,
    body: std::sync::OnceLock<MsgBody>,
}

impl Clone for Msg {
    fn clone(&self) -> Self {
        Msg {
            role: self.role.clone(),
            content_missing: self.content_missing,
            visible_text: self.visible_text,
            tool_call_ids: self.tool_call_ids.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            stop_reason: self.stop_reason.clone(),
            has_error_message: self.has_error_message,
            usage: self.usage,
            tool_name: self.tool_name.clone(),
            tool_call_id: self.tool_call_id.clone(),
            is_error: self.is_error,
            exclude_from_context: self.exclude_from_context,
            custom_type: self.custom_type.clone(),
            line: self.line.clone(),
            body: self.body.clone(),
        }
    }
}

/// What Pi derives from a message's content: its token estimate and the measures behind it.
#[derive(Debug, Clone, Default)]
pub struct MsgBody {
    pub content: ContentStats,
    pub est_tokens: u64,
    /// The oracle's `textChars` (role-specific, see `describe`).
    pub text_chars: usize,
    pub tool_calls: Vec<ToolCall>,
}

/// The fields every message has, whichever loader pass read them.
struct MsgHead<'x, 'a> {
    role: &'x super::lenient::LStr<'a>,
    provider: &'x super::lenient::LStr<'a>,
    model: &'x super::lenient::LStr<'a>,
    stop_reason: &'x super::lenient::LStr<'a>,
    error_message: &'x super::lenient::LStr<'a>,
    usage: &'x Option<super::lenient::LUsageOrOther<'a>>,
    tool_name: &'x super::lenient::LStr<'a>,
    tool_call_id: &'x super::lenient::LStr<'a>,
    is_error: super::lenient::LAny,
    exclude_from_context: super::lenient::LAny,
    custom_type: &'x super::lenient::LStr<'a>,
}

/// The common fields of `LMessage` and `LMessageHead` (same names in both).
macro_rules! msg_head {
    ($m:expr) => {
        MsgHead {
            role: &$m.role,
            provider: &$m.provider,
            model: &$m.model,
            stop_reason: &$m.stop_reason,
            error_message: &$m.error_message,
            usage: &$m.usage,
            tool_name: &$m.tool_name,
            tool_call_id: &$m.tool_call_id,
            is_error: $m.is_error,
            exclude_from_context: $m.exclude_from_context,
            custom_type: &$m.custom_type,
        }
    };
}

impl MsgHead<'_, '_> {
    fn build(
        &self,
        v2_hook_rename: bool,
        content_missing: bool,
        visible_text: bool,
        ids: Box<[(Box<str>, u32)]>,
    ) -> Msg {
        let mut role = Role::parse(self.role.as_deref().unwrap_or(""));
        if v2_hook_rename && role == Role::Other("hookMessage".into()) {
            role = Role::Custom;
        }
        let usage = self.usage.as_ref().and_then(|u| u.0.as_ref()).map(|u| {
            let f = |a: &super::lenient::LAny| a.number.unwrap_or(f64::NAN);
            Usage {
                input: f(&u.input),
                output: f(&u.output),
                cache_read: f(&u.cache_read),
                cache_write: f(&u.cache_write),
                total_tokens: f(&u.total_tokens),
            }
        });
        Msg {
            role,
            content_missing,
            visible_text,
            tool_call_ids: ids,
            provider: self.provider.as_deref().map(Box::from),
            model: self.model.as_deref().map(Box::from),
            stop_reason: self.stop_reason.as_deref().map(Box::from),
            has_error_message: self.error_message.as_deref().is_some_and(|s| !s.is_empty()),
            usage,
            tool_name: self.tool_name.as_deref().map(Box::from),
            tool_call_id: self.tool_call_id.as_deref().map(Box::from),
            is_error: self.is_error.truthy,
            exclude_from_context: self.exclude_from_context.truthy,
            custom_type: self.custom_type.as_deref().map(Box::from),
            line: 0..0,
            body: std::sync::OnceLock::new(),
        }
    }
}

impl Msg {
    pub fn from_raw(raw: &str, v2_hook_rename: bool) -> Option<Msg> {
        let m: LMessage = serde_json::from_str(raw).ok()?;
        Some(Msg::from_lmessage(&m, v2_hook_rename))
    }

    /// A message with its body measured now (the full loader pass).
    pub fn from_lmessage(m: &LMessage, v2_hook_rename: bool) -> Msg {
        let head = msg_head!(m);
        let content_missing = matches!(m.content, LContent::Missing | LContent::Null);
        let mut msg = head.build(v2_hook_rename, content_missing, false, Box::new([]));
        let body = MsgBody::measure(m, &msg.role);
        msg.visible_text = body.content.has_visible_text;
        msg.tool_call_ids = body
            .tool_calls
            .iter()
            .filter_map(|tc| tc.id.clone().map(|id| (id, tc.block)))
            .collect();
        let _ = msg.body.set(body);
        msg
    }

    /// A message read by the quick loader pass; its body is measured on first use.
    pub fn from_head(mut m: super::lenient::LMessageHead, v2_hook_rename: bool) -> Msg {
        let head = msg_head!(m);
        let c = std::mem::take(&mut m.content);
        let msg = head.build(
            v2_hook_rename,
            c.missing,
            c.visible_text,
            c.tool_call_ids.into_boxed_slice(),
        );
        if let Some(ms) = c.measured {
            let (est_tokens, text_chars) = match &msg.role {
                // A checkpoint's sections and tools are measured by the full pass.
                Role::System => return msg,
                Role::BashExecution => (ceil4(ms.bash_chars), ms.bash_chars),
                Role::BranchSummary | Role::CompactionSummary => (ceil4(ms.summary_chars), ms.summary_chars),
                r => (ms.content.estimate(r), ms.content.text_chars),
            };
            let _ = msg.body.set(MsgBody {
                content: ms.content,
                est_tokens,
                text_chars,
                tool_calls: ms.tool_calls,
            });
        }
        msg
    }

    /// The body when it was measured with the message (see [`Msg::from_lmessage`]).
    pub fn into_body(self) -> Option<MsgBody> {
        self.body.into_inner()
    }

    pub fn has_body(&self) -> bool {
        self.body.get().is_some()
    }

    /// Pi's `getAssistantUsage`: usable for the context estimate.
    pub fn valid_usage(&self) -> Option<Usage> {
        if self.role != Role::Assistant {
            return None;
        }
        let sr = self.stop_reason.as_deref();
        if sr == Some("aborted") || sr == Some("error") {
            return None;
        }
        let u = self.usage?;
        (u.context_tokens() > 0.0).then_some(u)
    }
}

impl MsgBody {
    pub fn measure(m: &LMessage, role: &Role) -> MsgBody {
        let (content, tool_calls) = ContentStats::from_lcontent(&m.content);
        let (est_tokens, text_chars) = match role {
            Role::System => {
                let mut chars = if content.is_string {
                    content.text_chars
                } else {
                    content.text_chars + IMAGE_CHARS * content.images
                };
                let mut text = content.text_chars;
                if let Some(sec) = m.sections.value().and_then(|s| serde_json::from_str::<Value>(s).ok())
                    && let Value::Object(map) = sec
                {
                    for v in map.values() {
                        if let Value::String(s) = v {
                            let n = js::utf16_len(s);
                            chars += n;
                            text += n;
                        }
                    }
                }
                if let Some(tools) = m
                    .tools_added
                    .value()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                    && js::truthy(Some(&tools))
                {
                    chars += js::stringify_len(&tools);
                }
                (ceil4(chars), text)
            }
            Role::BashExecution => {
                let n = m.command.as_deref().map(js::utf16_len).unwrap_or(0)
                    + m.output.as_deref().map(js::utf16_len).unwrap_or(0);
                (ceil4(n), n)
            }
            Role::BranchSummary | Role::CompactionSummary => {
                let n = m.summary.as_deref().map(js::utf16_len).unwrap_or(0);
                (ceil4(n), n)
            }
            r => (content.estimate(r), content.text_chars),
        };
        MsgBody {
            content,
            est_tokens,
            text_chars,
            tool_calls,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct FileLists {
    pub read_files: Vec<Value>,
    pub modified_files: Vec<Value>,
}

#[derive(Debug, Clone)]
pub struct Compaction {
    pub summary_chars: usize,
    pub summary_present: bool,
    pub first_kept_entry_id: Option<Box<str>>,
    pub tokens_before: Option<f64>,
    pub from_hook: bool,
    pub details: Option<FileLists>,
    pub system_message: Option<Msg>,
}

#[derive(Debug, Clone)]
pub struct BranchSummary {
    pub summary_chars: usize,
    pub summary_nonempty: bool,
    pub from_id: Option<Box<str>>,
    pub from_hook: bool,
    pub details: Option<FileLists>,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Message(Box<Msg>),
    ModelChange {
        provider: Option<Box<str>>,
        model_id: Option<Box<str>>,
    },
    ThinkingLevelChange {
        level: Option<Box<str>>,
    },
    Compaction(Box<Compaction>),
    BranchSummary(Box<BranchSummary>),
    Custom {
        custom_type: Option<Box<str>>,
    },
    CustomMessage {
        custom_type: Option<Box<str>>,
        content: Box<ContentStats>,
        est_tokens: u64,
    },
    ContextEdit {
        target_id: Option<Box<str>>,
        replacement: Option<Box<ContentStats>>,
        replacement_null: bool,
    },
    Label {
        target_id: Option<Box<str>>,
        label: Option<Box<str>>,
    },
    SessionInfo {
        name: Option<Box<str>>,
    },
    Usage,
    Unknown(Box<str>),
}

impl Kind {
    pub fn type_name(&self) -> &str {
        match self {
            Kind::Message(_) => "message",
            Kind::ModelChange { .. } => "model_change",
            Kind::ThinkingLevelChange { .. } => "thinking_level_change",
            Kind::Compaction(_) => "compaction",
            Kind::BranchSummary(_) => "branch_summary",
            Kind::Custom { .. } => "custom",
            Kind::CustomMessage { .. } => "custom_message",
            Kind::ContextEdit { .. } => "context_edit",
            Kind::Label { .. } => "label",
            Kind::SessionInfo { .. } => "session_info",
            Kind::Usage => "usage",
            Kind::Unknown(t) => t,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line: u32,
    /// Byte range of the line (without the newline).
    pub span: Range<usize>,
    pub id: Box<str>,
    pub parent_id: Option<Box<str>>,
    /// `new Date(timestamp).getTime()`, NaN when unparseable.
    pub ts: f64,
    pub kind: Kind,
}

impl Entry {
    /// An entry from its envelope fields as either loader pass read them (line and span are
    /// set by the loader).
    fn read(
        id: &super::lenient::LStr,
        parent_id: &Option<super::lenient::LStr>,
        timestamp: &super::lenient::LStr,
        kind: Kind,
    ) -> Entry {
        Entry {
            line: 0,
            span: 0..0,
            id: id.as_deref().map(Box::from).unwrap_or_default(),
            parent_id: parent_id
                .as_ref()
                .and_then(|p| p.as_deref())
                .filter(|p| !p.is_empty())
                .map(Box::from),
            ts: timestamp.as_deref().map(js::parse_iso_ms).unwrap_or(f64::NAN),
            kind,
        }
    }

    pub fn message(&self) -> Option<&Msg> {
        match &self.kind {
            Kind::Message(m) => Some(m),
            _ => None,
        }
    }
    pub fn is_compaction(&self) -> bool {
        matches!(self.kind, Kind::Compaction(_))
    }
    pub fn is_system_message(&self) -> bool {
        self.message().is_some_and(|m| m.role == Role::System)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    pub line: u32,
    pub kind: DiagnosticKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiagnosticKind {
    /// Skipped as Pi skips it.
    MalformedLine,
    /// Kept, but the file is not what Pi would write.
    Suspicious,
}

#[derive(Debug, Clone)]
pub struct Header {
    pub raw: Value,
    pub version: f64,
    pub id: String,
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    pub line: u32,
}

/// A loaded session. Immutable; appends produce a new load.
#[derive(Debug)]
pub struct Session {
    pub buf: FileBytes,
    pub header: Header,
    pub entries: Vec<Entry>,
    pub diagnostics: Vec<Diagnostic>,
    /// Pi's `byId`: the last entry with each id, as indices hashed by id (see `idx_of`).
    by_id: hashbrown::HashTable<u32>,
    /// Parent entry index per entry (`u32::MAX`: none), resolved once through `by_id`.
    pub parent_idx: Vec<u32>,
    /// Resolved labels by target id: (label, timestamp of the label entry).
    pub labels: HashMap<Box<str>, (Box<str>, u32)>,
    pub migrated: bool,
    pub ids_synthesized: bool,
    /// Non-blank lines that did not become entries (oracle's `skippedLines`).
    pub skipped_lines: usize,
    /// Some id is used by more than one entry (then the later one owns it, as in Pi).
    pub has_duplicate_ids: bool,
    pub file_ends_with_newline: bool,
    /// The latest `session_info` name (empty clears), resolved once at load.
    name: Option<Box<str>>,
}

#[derive(Debug)]
pub enum LoadError {
    Io(std::io::Error),
    Empty,
    NotASession { line: u32, reason: String },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            LoadError::Io(e) => write!(f, "cannot read the session file: {e}"),
            LoadError::Empty => write!(f, "the file is empty: a Pi session starts with a `session` header line"),
            LoadError::NotASession { line, reason } => write!(
                f,
                "not a Pi session: line {line} should be the `session` header ({reason})"
            ),
        }
    }
}

impl std::error::Error for LoadError {}

impl Session {
    pub fn load_path(path: &std::path::Path) -> Result<Session, LoadError> {
        let buf = super::mapped::load(path).map_err(LoadError::Io)?;
        Session::from_bytes(buf)
    }

    /// Parse a whole file. Lines are split on `\n` like Pi; blank and malformed lines are
    /// skipped and reported with their line numbers.
    pub fn from_bytes(buf: impl Into<FileBytes>) -> Result<Session, LoadError> {
        Session::from_bytes_with(buf.into(), true)
    }

    /// `quick: false` reads every line with the full serde pass (tests compare the two).
    #[doc(hidden)]
    pub fn from_bytes_with(buf: FileBytes, quick: bool) -> Result<Session, LoadError> {
        let mut diagnostics = Vec::new();
        let file_ends_with_newline = buf.last() == Some(&b'\n') || buf.is_empty();
        let mut header: Option<Header> = None;
        let mut skipped = 0usize;
        let mut any_text = false;
        let mut parsed: Vec<(u32, Result<Parsed, String>)> = Vec::new();
        let mut lines_before = 0usize;
        use rayon::prelude::*;
        // A big file is read in blocks of whole lines; each block is split and parsed on all
        // cores, then its pages are handed back (the entries keep byte ranges, and a line
        // read later maps its page again), so a load never holds the whole file resident.
        // Mapping the next block and handing back the last one run beside the parse, so no
        // core waits on them.
        let block_from = |pos: usize| -> Range<usize> {
            match memchr::memchr(b'\n', buf.get(pos + LOAD_BLOCK..).unwrap_or(&[])) {
                Some(k) => pos..pos + LOAD_BLOCK + k + 1,
                None => pos..buf.len(),
            }
        };
        let prepare = |r: Range<usize>| {
            buf.prefetch(r.clone());
            let spans = line_ranges(&buf[r.clone()], r.start);
            (r, spans)
        };
        let mut next = (!buf.is_empty()).then(|| prepare(block_from(0)));
        // Room for every line at the first block's density, so the list is not copied as it
        // grows (each copy also touches fresh pages).
        if let Some((r, spans)) = &next {
            let estimate = (spans.len() as f64 * buf.len() as f64 / r.len().max(1) as f64 * 1.05) as usize;
            parsed.reserve(estimate.min(buf.len() / 8 + 16));
        }
        let mut parsed_block: Option<Range<usize>> = None;
        while let Some((range, spans)) = next.take() {
            let mut body_from = 0;
            if header.is_none() {
                // The header: first line that parses (Pi skips blank and malformed lines first).
                body_from = spans.len();
                for (i, sp) in spans.iter().enumerate() {
                    let ln = &((lines_before + i) as u32 + 1);
                    let bytes = &buf[sp.clone()];
                    if is_blank(bytes) {
                        continue;
                    }
                    any_text = true;
                    match parse_header(bytes) {
                        Ok(v) => {
                            let ok = v.get("type").and_then(|t| t.as_str()) == Some("session")
                                && v.get("id").is_some_and(|x| x.is_string());
                            if !ok {
                                let reason = if !v.is_object() {
                                    "it is not a JSON object".to_string()
                                } else if v.get("type").and_then(|t| t.as_str()) != Some("session") {
                                    format!(
                                        "its type is {}",
                                        v.get("type").map(|t| t.to_string()).unwrap_or_else(|| "missing".into())
                                    )
                                } else {
                                    "it has no string `id`".into()
                                };
                                return Err(LoadError::NotASession { line: *ln, reason });
                            }
                            header = Some(Header {
                                version: v.get("version").and_then(js::value_to_f64).unwrap_or(1.0),
                                id: v["id"].as_str().unwrap_or_default().to_string(),
                                cwd: v.get("cwd").and_then(|c| c.as_str()).map(String::from),
                                parent_session: v.get("parentSession").and_then(|c| c.as_str()).map(String::from),
                                raw: v,
                                line: *ln,
                            });
                            body_from = i + 1;
                            break;
                        }
                        Err(e) => {
                            skipped += 1;
                            diagnostics.push(Diagnostic {
                                line: *ln,
                                kind: DiagnosticKind::MalformedLine,
                                message: describe_json_error(bytes, &e),
                            });
                        }
                    }
                }
            }
            let following = (range.end < buf.len()).then(|| block_from(range.end));
            let done = parsed_block.take();
            let side = || {
                if let Some(d) = done {
                    buf.release(d);
                }
                following.map(prepare)
            };
            if let Some(h) = &header {
                let v2_hook = h.version < 3.0;
                let base = lines_before + body_from;
                // Indexed all the way (blank lines become `Blank`), so rayon writes straight
                // into the one list.
                let (n, ()) =
                    rayon::join(side, || {
                        parsed.par_extend(spans[body_from..].par_iter().with_min_len(256).enumerate().map(
                            |(k, sp)| {
                                let ln = (base + k) as u32 + 1;
                                if is_blank(&buf[sp.clone()]) {
                                    return (ln, Ok(Parsed::Blank));
                                }
                                let mut r = parse_entry(&buf[sp.clone()], v2_hook, quick);
                                if let Ok(Parsed::Entry(e, _)) = &mut r {
                                    e.line = ln;
                                    e.span = sp.clone();
                                    if let Kind::Message(m) = &mut e.kind {
                                        m.line = sp.clone();
                                    }
                                }
                                (ln, r)
                            },
                        ));
                    });
                next = n;
            } else {
                next = side();
            }
            lines_before += spans.len();
            parsed_block = Some(range);
        }
        if let Some(d) = parsed_block {
            buf.release(d);
        }
        let Some(header) = header else {
            return Err(if !any_text {
                LoadError::Empty
            } else {
                LoadError::NotASession {
                    line: 1,
                    reason: "no line parses as JSON".into(),
                }
            });
        };
        let version = header.version;
        let v1 = version < 2.0;

        // v1 compactions name their first kept entry by line position; resolved after ids exist.
        let mut v1_first_kept: Vec<(usize, usize)> = Vec::new();
        // Assembled in place: the parsed list's memory becomes the entry list (fresh pages
        // are a real cost on a big load).
        let mut kept = 0usize;
        let entries: Vec<Entry> = parsed
            .into_iter()
            .filter_map(|(ln, result)| match result {
                Ok(Parsed::Entry(e, fk_index)) => {
                    if v1 {
                        if let Some(n) = fk_index {
                            v1_first_kept.push((kept, n));
                        }
                    } else if e.id.is_empty() {
                        skipped += 1;
                        diagnostics.push(Diagnostic {
                            line: ln,
                            kind: DiagnosticKind::MalformedLine,
                            message: format!(
                                "`{}` entry has no string `id`; Pi cannot link it into the tree",
                                e.kind.type_name()
                            ),
                        });
                        return None;
                    }
                    kept += 1;
                    Some(e)
                }
                Ok(Parsed::Blank) => None,
                Ok(Parsed::ExtraHeader) => {
                    diagnostics.push(Diagnostic {
                        line: ln,
                        kind: DiagnosticKind::Suspicious,
                        message: "a second `session` header; Pi ignores it".into(),
                    });
                    None
                }
                Err(msg) => {
                    skipped += 1;
                    diagnostics.push(Diagnostic {
                        line: ln,
                        kind: DiagnosticKind::MalformedLine,
                        message: msg,
                    });
                    None
                }
            })
            .collect();
        let mut entries = entries;

        let mut ids_synthesized = false;
        if v1 {
            // Pi's v1→v2 migration: a fresh id per entry, chained in file order. We use the
            // oracle's deterministic counter so ids are stable from load to load.
            ids_synthesized = true;
            let mut prev: Option<Box<str>> = None;
            for (i, e) in entries.iter_mut().enumerate() {
                let id: Box<str> = format!("{:08x}", i + 1).into();
                e.id = id.clone();
                e.parent_id = prev.replace(id);
            }
            for (ei, n) in v1_first_kept {
                // `n` indexes the parsed lines with the header at 0.
                if n >= 1
                    && let Some(target) = entries.get(n - 1).map(|t| t.id.clone())
                    && let Kind::Compaction(c) = &mut entries[ei].kind
                {
                    c.first_kept_entry_id = Some(target);
                }
            }
        }

        // Indices hashed by their entry's id: no copy of any id.
        let mut by_id: hashbrown::HashTable<u32> = hashbrown::HashTable::with_capacity(entries.len());
        let mut labels: HashMap<Box<str>, (Box<str>, u32)> = HashMap::new();
        let mut has_duplicate_ids = false;
        for (i, e) in entries.iter().enumerate() {
            let found = by_id.entry(
                id_hash(&e.id),
                |&j| entries[j as usize].id == e.id,
                |&j| id_hash(&entries[j as usize].id),
            );
            let duplicate = matches!(found, hashbrown::hash_table::Entry::Occupied(_));
            found.insert(i as u32);
            if duplicate {
                has_duplicate_ids = true;
                diagnostics.push(Diagnostic {
                    line: e.line,
                    kind: DiagnosticKind::Suspicious,
                    message: format!("duplicate id {}: Pi uses this later entry for the id", e.id),
                });
            }
            if let Kind::Label {
                target_id: Some(t),
                label,
            } = &e.kind
            {
                match label {
                    Some(l) if !l.is_empty() => {
                        labels.insert(t.clone(), (l.clone(), i as u32));
                    }
                    _ => {
                        labels.remove(t);
                    }
                }
            }
        }
        diagnostics.sort_by_key(|d| d.line);
        let parent_idx = entries
            .par_iter()
            .with_min_len(4096)
            .map(|e| {
                // A self-parent is a root (Pi's getTree); Pi's own path walk would loop on it.
                e.parent_id
                    .as_deref()
                    .filter(|p| *p != &*e.id)
                    .and_then(|p| by_id.find(id_hash(p), |&j| &*entries[j as usize].id == p).copied())
                    .unwrap_or(u32::MAX)
            })
            .collect();
        let name = entries.iter().rev().find_map(|e| match &e.kind {
            Kind::SessionInfo { name } => Some(
                name.as_deref()
                    .map(js::js_trim)
                    .filter(|n| !n.is_empty())
                    .map(Box::from),
            ),
            _ => None,
        });
        let mut s = Session {
            name: name.flatten(),
            parent_idx,
            buf,
            header,
            entries,
            diagnostics,
            by_id,
            labels,
            migrated: version < 3.0,
            ids_synthesized,
            skipped_lines: skipped,
            has_duplicate_ids,
            file_ends_with_newline,
        };
        s.check_structure();
        Ok(s)
    }

    /// Report orphans, self-parents and cycles: Pi shows them as extra roots or hangs.
    fn check_structure(&mut self) {
        let n = self.entries.len();
        let mut notes = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            match e.parent_id.as_deref() {
                Some(p) if p == &*e.id => notes.push((
                    e.line,
                    format!("entry {} is its own parent: Pi shows it as a root", e.id),
                )),
                Some(p) if self.parent_idx[i] == u32::MAX => notes.push((
                    e.line,
                    format!(
                        "entry {} has a missing parent {}: Pi shows it as an extra root",
                        e.id, p
                    ),
                )),
                _ => {}
            }
        }
        // Cycles through resolved parents. state: 0 unknown, 1 on the current walk, 2 done.
        let mut state = vec![0u8; n];
        let mut stack = Vec::new();
        for i in 0..n {
            if state[i] != 0 {
                continue;
            }
            let mut cur = i;
            loop {
                state[cur] = 1;
                stack.push(cur);
                let p = self.parent_idx[cur];
                if p == u32::MAX {
                    break;
                }
                let p = p as usize;
                match state[p] {
                    0 => cur = p,
                    1 => {
                        notes.push((
                            self.entries[p].line,
                            format!(
                                "entry {} is part of a parent cycle: Pi would hang walking its path",
                                self.entries[p].id
                            ),
                        ));
                        break;
                    }
                    _ => break,
                }
            }
            for j in stack.drain(..) {
                state[j] = 2;
            }
        }
        for (line, message) in notes {
            self.diagnostics.push(Diagnostic {
                line,
                kind: DiagnosticKind::Suspicious,
                message,
            });
        }
        self.diagnostics.sort_by_key(|d| d.line);
    }

    pub fn line_bytes(&self, idx: usize) -> &[u8] {
        &self.buf[self.entries[idx].span.clone()]
    }

    /// The entry's JSON as Pi holds it after migration (ids, roles), decoded on demand.
    pub fn entry_value(&self, idx: usize) -> Value {
        let e = &self.entries[idx];
        let bytes = self.line_bytes(idx);
        let mut v: Value = serde_json::from_slice(bytes)
            .or_else(|_| serde_json::from_str(&String::from_utf8_lossy(bytes)))
            .unwrap_or(Value::Null);
        if self.migrated
            && let Value::Object(m) = &mut v
        {
            if self.ids_synthesized {
                m.insert("id".into(), Value::String(e.id.to_string()));
                m.insert(
                    "parentId".into(),
                    e.parent_id
                        .as_ref()
                        .map(|p| Value::String(p.to_string()))
                        .unwrap_or(Value::Null),
                );
                if let Kind::Compaction(c) = &e.kind {
                    m.shift_remove("firstKeptEntryIndex");
                    if let Some(fk) = &c.first_kept_entry_id {
                        m.insert("firstKeptEntryId".into(), Value::String(fk.to_string()));
                    }
                }
            }
            if let Some(Value::Object(msg)) = m.get_mut("message")
                && msg.get("role").and_then(|r| r.as_str()) == Some("hookMessage")
            {
                msg.insert("role".into(), Value::String("custom".into()));
            }
        }
        v
    }

    /// The measured body of a message of this session, measured now if nobody has yet.
    pub fn body<'a>(&'a self, m: &'a Msg) -> &'a MsgBody {
        m.body.get_or_init(|| {
            let bytes = &self.buf[m.line.clone()];
            match parse_entry(bytes, self.header.version < 3.0, false) {
                Ok(Parsed::Entry(
                    Entry {
                        kind: Kind::Message(full),
                        ..
                    },
                    _,
                )) => full.body.into_inner().unwrap_or_default(),
                _ => MsgBody::default(),
            }
        })
    }

    /// The body of entry `idx` when it is a message.
    pub fn body_of(&self, idx: usize) -> Option<&MsgBody> {
        self.entries[idx].message().map(|m| self.body(m))
    }

    /// Measure the bodies of these entries on every core (before a walk that needs them all).
    pub fn prefetch_bodies(&self, idxs: impl IntoIterator<Item = usize>) {
        use rayon::prelude::*;
        let todo: Vec<&Msg> = idxs
            .into_iter()
            .filter_map(|i| self.entries[i].message())
            .filter(|m| !m.has_body())
            .collect();
        if todo.len() < 64 {
            todo.iter().for_each(|m| {
                self.body(m);
            });
        } else {
            todo.par_iter().with_min_len(32).for_each(|m| {
                self.body(m);
            });
        }
    }

    /// Pi's `byId`: the last entry with this id.
    pub fn idx_of(&self, id: &str) -> Option<usize> {
        self.by_id
            .find(id_hash(id), |&j| &*self.entries[j as usize].id == id)
            .map(|&i| i as usize)
    }

    pub fn leaf(&self) -> Option<usize> {
        if self.entries.is_empty() {
            None
        } else {
            Some(self.entries.len() - 1)
        }
    }

    pub fn parent_of(&self, idx: usize) -> Option<usize> {
        let p = self.parent_idx[idx];
        (p != u32::MAX).then_some(p as usize)
    }

    /// Root→leaf path in linear time. Stops (instead of hanging like Pi) on a cycle.
    pub fn path_to(&self, leaf: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen = vec![false; self.entries.len()];
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            if seen[i] {
                break;
            }
            seen[i] = true;
            path.push(i);
            cur = self.parent_of(i);
        }
        path.reverse();
        path
    }

    /// The session name: the latest `session_info` in file order (empty clears it).
    pub fn session_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub fn label_of(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|(l, _)| &**l)
    }
}

/// Read a whole file; large files in two halves at once (the copy out of the page cache is
/// a third of opening a big session on a 2-core machine).
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len < (8 << 20) {
        return std::fs::read(path);
    }
    let mut buf = vec![0u8; len];
    let mid = len / 2;
    let (a, b) = buf.split_at_mut(mid);
    let read_all = |part: &mut [u8], mut off: u64| -> std::io::Result<usize> {
        let mut done = 0;
        while done < part.len() {
            let n = f.read_at(&mut part[done..], off)?;
            if n == 0 {
                break;
            }
            done += n;
            off += n as u64;
        }
        Ok(done)
    };
    let (ra, rb) = std::thread::scope(|sc| {
        let h = sc.spawn(|| read_all(b, mid as u64));
        let ra = read_all(a, 0);
        (
            ra,
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("read thread failed"))),
        )
    });
    let (na, nb) = (ra?, rb?);
    if na < mid {
        // The file shrank while reading: fall back to a plain read.
        return std::fs::read(path);
    }
    buf.truncate(mid + nb);
    Ok(buf)
}

fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(id)
}

/// Bytes of a big file parsed per block before its pages are handed back.
const LOAD_BLOCK: usize = 16 << 20;

/// The header line as JSON (Node decodes bad UTF-8 to U+FFFD before parsing).
fn parse_header(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Value>(bytes).or_else(|e| {
        if std::str::from_utf8(bytes).is_err() {
            serde_json::from_str::<Value>(&String::from_utf8_lossy(bytes))
        } else {
            Err(e)
        }
    })
}

/// Byte ranges of the lines, split on `\n` like Pi (a final newline ends the last line).
/// Large files are split in two at a newline and scanned on two cores.
fn line_ranges(buf: &[u8], base: usize) -> Vec<Range<usize>> {
    fn scan(part: &[u8], base: usize) -> Vec<Range<usize>> {
        let mut out = Vec::with_capacity(part.len() / 2048 + 16);
        let mut start = 0usize;
        for nl in memchr::memchr_iter(b'\n', part) {
            out.push(base + start..base + nl);
            start = nl + 1;
        }
        if start < part.len() {
            out.push(base + start..base + part.len());
        }
        out
    }
    let split = if buf.len() >= (4 << 20) {
        memchr::memchr(b'\n', &buf[buf.len() / 2..]).map(|k| buf.len() / 2 + k + 1)
    } else {
        None
    };
    match split {
        Some(mid) if mid < buf.len() => {
            let (a, b) = rayon::join(|| scan(&buf[..mid], base), || scan(&buf[mid..], base + mid));
            let mut all = Vec::with_capacity(a.len() + b.len());
            all.extend(a);
            all.extend(b);
            all
        }
        _ => scan(buf, base),
    }
}

fn is_blank(b: &[u8]) -> bool {
    // `line.trim()` in JavaScript; non-ASCII whitespace lines are rare enough to decode.
    let Some(&first) = b.iter().find(|c| !matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)) else {
        return true;
    };
    // Only a line whose first non-ASCII-blank byte starts a non-ASCII char can still be blank.
    if first >= 0x80
        && let Ok(s) = std::str::from_utf8(b)
    {
        return js::js_trim(s).is_empty();
    }
    false
}

fn describe_json_error(bytes: &[u8], e: &serde_json::Error) -> String {
    if std::str::from_utf8(bytes).is_err() {
        return "invalid UTF-8; Pi skips the line".into();
    }
    if e.is_eof() {
        format!("truncated JSON ({e}); Pi skips the line")
    } else {
        format!("malformed JSON ({e}); Pi skips the line")
    }
}

enum Parsed {
    Entry(Entry, Option<usize>),
    ExtraHeader,
    Blank,
}

/// One line. With `quick`, a `message` line is read by the quick pass (its body is measured
/// later); anything the quick pass cannot read goes through the full pass, which decides.
fn parse_entry(bytes: &[u8], v2_hook: bool, quick: bool) -> Result<Parsed, String> {
    if quick
        && let Some(mut h) =
            super::scan::message_head(bytes).or_else(|| serde_json::from_slice::<LEntryHead>(bytes).ok())
        && h.kind.as_deref() == Some("message")
        && let Some(m) = h.message.take()
    {
        let kind = Kind::Message(Box::new(Msg::from_head(m, v2_hook)));
        return Ok(Parsed::Entry(
            Entry::read(&h.id, &h.parent_id, &h.timestamp, kind),
            None,
        ));
    }
    let r = parse_entry_text(bytes, v2_hook);
    if r.is_err() && std::str::from_utf8(bytes).is_err() {
        // Node decodes invalid UTF-8 to U+FFFD before JSON.parse, so such a line can still be
        // a valid entry for Pi. Decode the same way (maximal-subpart replacement).
        let text = String::from_utf8_lossy(bytes).into_owned();
        return parse_entry_text(text.as_bytes(), v2_hook);
    }
    r
}

fn parse_entry_text(bytes: &[u8], v2_hook: bool) -> Result<Parsed, String> {
    match serde_json::from_slice::<LEntry>(bytes) {
        Ok(le) => build_entry(&le, v2_hook),
        Err(e) => {
            // Valid JSON our typed pass refused (a non-object line, or a shape serde could
            // not map): decide with a full parse so we skip exactly what Pi skips.
            match serde_json::from_slice::<Value>(bytes) {
                Err(_) => Err(describe_json_error(bytes, &e)),
                Ok(Value::Object(_)) => {
                    // Re-serialize (duplicate keys collapse as in JSON.parse) and retry.
                    let text = serde_json::to_string(&serde_json::from_slice::<Value>(bytes).unwrap())
                        .map_err(|e| e.to_string())?;
                    let le: LEntry = serde_json::from_str(&text).map_err(|e| format!("unreadable entry: {e}"))?;
                    build_entry(&le, v2_hook)
                }
                Ok(other) => Err(format!(
                    "a JSON {} where an entry object belongs; skipped",
                    match other {
                        Value::Array(_) => "array",
                        Value::String(_) => "string",
                        Value::Number(_) => "number",
                        Value::Bool(_) => "boolean",
                        _ => "null",
                    }
                )),
            }
        }
    }
}

fn file_lists(raw: Option<&str>) -> Option<FileLists> {
    let v: Value = serde_json::from_str(raw?).ok()?;
    let obj = v.as_object()?;
    let arr = |k: &str| obj.get(k).and_then(|a| a.as_array()).cloned().unwrap_or_default();
    Some(FileLists {
        read_files: arr("readFiles"),
        modified_files: arr("modifiedFiles"),
    })
}

fn bx(s: &super::lenient::LStr) -> Option<Box<str>> {
    s.as_deref().map(Box::from)
}

fn build_entry(le: &LEntry, v2_hook: bool) -> Result<Parsed, String> {
    let ty = le.kind.as_deref().unwrap_or("");
    if ty == "session" {
        return Ok(Parsed::ExtraHeader);
    }
    let kind = match ty {
        "message" => {
            let lm = le
                .message
                .as_ref()
                .ok_or_else(|| "`message` entry without a message object".to_string())?;
            Kind::Message(Box::new(Msg::from_lmessage(lm, v2_hook)))
        }
        "model_change" => Kind::ModelChange {
            provider: bx(&le.provider),
            model_id: bx(&le.model_id),
        },
        "thinking_level_change" => Kind::ThinkingLevelChange {
            level: bx(&le.thinking_level),
        },
        "compaction" => Kind::Compaction(Box::new(Compaction {
            summary_chars: le.summary.as_deref().map(js::utf16_len).unwrap_or(0),
            summary_present: le.summary.0.is_some(),
            first_kept_entry_id: bx(&le.first_kept_entry_id),
            tokens_before: le.tokens_before.number,
            from_hook: le.from_hook.truthy,
            details: if le.details.value().is_some() {
                file_lists(le.details.value())
            } else {
                None
            },
            system_message: le.system_message.value().and_then(|r| Msg::from_raw(r, false)),
        })),
        "branch_summary" => Kind::BranchSummary(Box::new(BranchSummary {
            summary_chars: le.summary.as_deref().map(js::utf16_len).unwrap_or(0),
            summary_nonempty: le.summary.as_deref().is_some_and(|s| !s.is_empty()),
            from_id: bx(&le.from_id),
            from_hook: le.from_hook.truthy,
            details: file_lists(le.details.value()),
        })),
        "custom" => Kind::Custom {
            custom_type: bx(&le.custom_type),
        },
        "custom_message" => {
            let (content, _) = ContentStats::from_lcontent(&le.content);
            let est_tokens = content.estimate(&Role::Custom);
            Kind::CustomMessage {
                custom_type: bx(&le.custom_type),
                content: Box::new(content),
                est_tokens,
            }
        }
        "context_edit" => {
            let replacement = le.replacement.value().map(|r| {
                #[derive(serde::Deserialize)]
                struct Rep<'a> {
                    #[serde(borrow, default)]
                    content: LContent<'a>,
                }
                serde_json::from_str::<Rep>(r)
                    .map(|rep| Box::new(ContentStats::from_lcontent(&rep.content).0))
                    .unwrap_or_default()
            });
            Kind::ContextEdit {
                target_id: bx(&le.target_id),
                replacement_null: le.replacement.is_null(),
                replacement,
            }
        }
        "label" => Kind::Label {
            target_id: bx(&le.target_id),
            label: bx(&le.label),
        },
        "session_info" => Kind::SessionInfo { name: bx(&le.name) },
        "usage" => Kind::Usage,
        other => Kind::Unknown(other.into()),
    };
    let fk_index = le
        .first_kept_entry_index
        .number
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .map(|n| n as usize);
    Ok(Parsed::Entry(
        Entry::read(&le.id, &le.parent_id, &le.timestamp, kind),
        fk_index,
    ))
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn record_sizes_stay_small() {
        // One record per entry: keep the index well under the file size.
        assert!(
            std::mem::size_of::<super::Entry>() <= 112,
            "Entry {}",
            std::mem::size_of::<super::Entry>()
        );
        eprintln!(
            "Entry {} Msg {} ContentStats {}",
            std::mem::size_of::<super::Entry>(),
            std::mem::size_of::<super::Msg>(),
            std::mem::size_of::<super::ContentStats>()
        );
    }
}
