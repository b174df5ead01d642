//! What a session is made of, in Pi's vocabulary: entries, their kinds, the messages they
//! store, and the numbers Pi derives from content. A leaf module: the loader (`session`), the
//! line parsers (`lenient`, `scan`) and every walk over a session build on these types.

use serde_json::Value;
use std::ops::Range;

/// Message roles Pi knows; anything else is kept by name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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

pub(crate) fn ceil4(n: usize) -> u64 {
    n.div_ceil(4) as u64
}

impl ContentStats {
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
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    pub id: Option<Box<str>>,
    pub name: Box<str>,
    pub block: u32,
    pub path: Option<Box<str>>,
}

/// Usage numbers as JavaScript sees them (NaN where a field is missing).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
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
/// lazily computed [`MessageMeasures`], so opening a session never measures content nobody asked for.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StoredMessage {
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
    /// Boxed: only assistant replies have one, and a message record is one per entry.
    pub usage: Option<Box<Usage>>,
    pub tool_name: Option<Box<str>>,
    pub tool_call_id: Option<Box<str>>,
    pub is_error: bool,
    pub exclude_from_context: bool,
    pub custom_type: Option<Box<str>>,
    /// A tool result whose line names `nestedCalls` (Pi 1.5.2 tracks the files of those
    /// calls), when known without reading the line again: bonsai's session index records it.
    #[serde(skip)]
    pub(crate) names_nested_calls: Option<bool>,
    /// Byte range of the line holding this message, for measuring it later.
    pub(crate) line: Range<usize>,
    /// Where bonsai's session index holds this message's measures (the entry's position in
    /// it), `NO_SLOT` when it does not: they are read from there on first use instead of
    /// parsing the line again.
    #[serde(skip, default = "no_slot")]
    pub(crate) slot: u32,
    /// Measured on first use (`Session::measures`), or at load when the scanner could. Boxed:
    /// most messages of a session opened from its index are never measured, and a message
    /// record is one per entry.
    #[serde(skip)]
    pub(crate) measures: std::sync::OnceLock<Box<MessageMeasures>>,
}

/// No place in an index (see `StoredMessage::slot`).
pub(crate) const NO_SLOT: u32 = u32::MAX;

fn no_slot() -> u32 {
    NO_SLOT
}

impl Clone for StoredMessage {
    fn clone(&self) -> Self {
        StoredMessage {
            role: self.role.clone(),
            content_missing: self.content_missing,
            visible_text: self.visible_text,
            tool_call_ids: self.tool_call_ids.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            stop_reason: self.stop_reason.clone(),
            has_error_message: self.has_error_message,
            usage: self.usage.clone(),
            tool_name: self.tool_name.clone(),
            tool_call_id: self.tool_call_id.clone(),
            is_error: self.is_error,
            exclude_from_context: self.exclude_from_context,
            custom_type: self.custom_type.clone(),
            names_nested_calls: self.names_nested_calls,
            line: self.line.clone(),
            slot: self.slot,
            measures: self.measures.clone(),
        }
    }
}

impl StoredMessage {
    /// A message with nothing known but its role (what an index's record that did not decode
    /// reads as; never expected, as the index was checked whole when opened).
    pub(crate) fn blank(role: Role) -> StoredMessage {
        StoredMessage {
            role,
            content_missing: false,
            visible_text: false,
            tool_call_ids: Box::default(),
            provider: None,
            model: None,
            stop_reason: None,
            has_error_message: false,
            usage: None,
            tool_name: None,
            tool_call_id: None,
            is_error: false,
            exclude_from_context: false,
            custom_type: None,
            names_nested_calls: None,
            line: 0..0,
            slot: NO_SLOT,
            measures: std::sync::OnceLock::new(),
        }
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
        let u = *self.usage.as_deref()?;
        (u.context_tokens() > 0.0).then_some(u)
    }

    /// Whether the content has been measured yet (see [`MessageMeasures`]).
    pub fn is_measured(&self) -> bool {
        self.measures.get().is_some()
    }
}

/// What Pi derives from a message's content: its token estimate and the measures behind it.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct MessageMeasures {
    pub content: ContentStats,
    pub est_tokens: u64,
    /// The oracle's `textChars` (role-specific, see `describe`).
    pub text_chars: usize,
    pub tool_calls: Vec<ToolCall>,
}

/// Where a message entry's message comes from when it is not decoded yet: bonsai's session
/// index (its records, and the entry's place in them). A trait, though the index's records
/// are its one kind, so that this file needs nothing of `load::session`, which needs it
/// (`tests/architecture.rs` holds the engine's files free of import circles).
pub(crate) trait MessageSource: Send + Sync + std::fmt::Debug {
    fn message(&self, slot: u32, facts: MessageFacts) -> StoredMessage;
    /// The message's record as stored, to copy into a new index without decoding it.
    fn record(&self, slot: u32) -> Option<&[u8]>;
}

/// A message's source as its cell holds it: one pointer (to the source's handle, boxed once
/// and shared by every cell), where `Arc<dyn MessageSource>` would be two, so a cell is
/// three words.
pub(crate) type SourceRef = std::sync::Arc<Box<dyn MessageSource>>;

/// What views that look at every entry (`/tree`'s filters, a cut's file tracking) read of a
/// message, kept beside it so a session opened from its index answers them without
/// decoding the message: at 1 GB, decoding every message is ~190 MB of fresh memory, which
/// is most of an open's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct MessageFacts {
    role: RoleCode,
    flags: u8,
}

/// A role's place in `ROLES`, or `Other` for a role kept by name. An enum, not a `u8`, so
/// its unused values leave room for [`Kind`]'s tag inside a message's cell: a `Kind` is
/// then 24 bytes, not 32, in each of a 10 GB session's 4.4 million entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
enum RoleCode {
    #[default]
    System,
    User,
    Assistant,
    ToolResult,
    BashExecution,
    Custom,
    BranchSummary,
    CompactionSummary,
    Other,
}

impl RoleCode {
    /// Every code in order: `ROLES`' places, then `Other`.
    const ALL: [RoleCode; 9] = [
        RoleCode::System,
        RoleCode::User,
        RoleCode::Assistant,
        RoleCode::ToolResult,
        RoleCode::BashExecution,
        RoleCode::Custom,
        RoleCode::BranchSummary,
        RoleCode::CompactionSummary,
        RoleCode::Other,
    ];
}

impl MessageFacts {
    const VISIBLE_TEXT: u8 = 1;
    /// A stop reason other than none, "stop" or "toolUse" (an error or an abort).
    const STOPPED_ABNORMALLY: u8 = 2;
    const NESTED_KNOWN: u8 = 4;
    const NESTED: u8 = 8;

    fn of(m: &StoredMessage) -> MessageFacts {
        let mut flags = 0;
        if m.visible_text {
            flags |= Self::VISIBLE_TEXT;
        }
        if m.stop_reason
            .as_deref()
            .is_some_and(|r| !r.is_empty() && r != "stop" && r != "toolUse")
        {
            flags |= Self::STOPPED_ABNORMALLY;
        }
        if let Some(nested) = m.names_nested_calls {
            flags |= Self::NESTED_KNOWN | if nested { Self::NESTED } else { 0 };
        }
        MessageFacts {
            role: role_code(&m.role),
            flags,
        }
    }

    /// The role, when Pi knows it (`None`: a role kept by name).
    pub fn role(&self) -> Option<Role> {
        ROLES.get(self.role as usize).cloned()
    }
    pub fn is(&self, role: &Role) -> bool {
        role_code(role) == self.role && self.role != RoleCode::Other
    }
    pub fn visible_text(&self) -> bool {
        self.flags & Self::VISIBLE_TEXT != 0
    }
    /// Pi's `/tree` shows an assistant reply without text when it ended in an error or abort.
    pub fn stopped_abnormally(&self) -> bool {
        self.flags & Self::STOPPED_ABNORMALLY != 0
    }
    /// See `StoredMessage::names_nested_calls`.
    pub fn names_nested_calls(&self) -> Option<bool> {
        (self.flags & Self::NESTED_KNOWN != 0).then_some(self.flags & Self::NESTED != 0)
    }
    /// The facts of a role code and flags as [`record`] stores them (`None`: not such).
    fn from_raw(role: u8, flags: u8) -> Option<MessageFacts> {
        let role = *RoleCode::ALL.get(role as usize)?;
        (flags & !(Self::VISIBLE_TEXT | Self::STOPPED_ABNORMALLY | Self::NESTED_KNOWN | Self::NESTED) == 0)
            .then_some(MessageFacts { role, flags })
    }

    pub(crate) fn with_nested_calls(mut self, nested: bool) -> MessageFacts {
        self.flags &= !(Self::NESTED_KNOWN | Self::NESTED);
        self.flags |= Self::NESTED_KNOWN | if nested { Self::NESTED } else { 0 };
        self
    }
}

const ROLES: [Role; 8] = [
    Role::System,
    Role::User,
    Role::Assistant,
    Role::ToolResult,
    Role::BashExecution,
    Role::Custom,
    Role::BranchSummary,
    Role::CompactionSummary,
];

fn role_code(r: &Role) -> RoleCode {
    ROLES
        .iter()
        .position(|k| k == r)
        .map_or(RoleCode::Other, |i| RoleCode::ALL[i])
}

/// The hash a tool call's id is found by (`/tree`'s table of calls; stored in bonsai's
/// session index, so it must not change within a build).
pub fn tool_call_id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(id)
}

/// A message entry's message: parsed from its line, or held by bonsai's session index and
/// decoded the first time something reads more than its [`MessageFacts`] (then kept).
/// Reads as the [`StoredMessage`] it is.
pub struct MessageCell {
    /// One pointer, not `OnceLock`'s two words: a 10 GB session has 4.4 million entries,
    /// and fresh memory is most of opening it from the index.
    message: once_cell::race::OnceBox<StoredMessage>,
    facts: MessageFacts,
    /// The message's place in the index it is read from (`StoredMessage::slot` once
    /// decoded), here so its estimate and measures are found without decoding it.
    slot: u32,
    /// Where the message is decoded from while it is not yet: bonsai's session index.
    source: Option<SourceRef>,
}

impl MessageCell {
    pub fn known(m: StoredMessage) -> MessageCell {
        MessageCell {
            facts: MessageFacts::of(&m),
            slot: m.slot,
            message: once_cell::race::OnceBox::with_value(Box::new(m)),
            source: None,
        }
    }

    /// A message at `slot` of `source`, decoded when first read.
    pub(crate) fn stored(facts: MessageFacts, slot: u32, source: SourceRef) -> MessageCell {
        MessageCell {
            message: once_cell::race::OnceBox::new(),
            facts,
            slot,
            source: Some(source),
        }
    }

    pub fn facts(&self) -> MessageFacts {
        self.facts
    }

    /// Decoded (or parsed) already: reading it costs nothing more.
    pub fn is_decoded(&self) -> bool {
        self.message.get().is_some()
    }

    /// Its measures, when its message is decoded and they are taken (nothing is decoded or
    /// measured to answer).
    pub(crate) fn known_measures(&self) -> Option<&MessageMeasures> {
        self.message.get().and_then(|m| m.measures.get()).map(|b| &**b)
    }

    /// Where bonsai's session index holds this message (`NO_SLOT`: nowhere).
    pub(crate) fn slot(&self) -> u32 {
        self.slot
    }

    /// The source it would be decoded from, when it is not yet.
    pub(crate) fn undecoded_source(&self) -> Option<&dyn MessageSource> {
        self.source.as_deref().map(|b| &**b).filter(|_| !self.is_decoded())
    }

    fn get(&self) -> &StoredMessage {
        self.message.get_or_init(|| {
            Box::new(match &self.source {
                Some(src) => src.message(self.slot, self.facts),
                None => StoredMessage::blank(self.facts.role().unwrap_or(Role::Other("".into()))),
            })
        })
    }
}

impl std::ops::Deref for MessageCell {
    type Target = StoredMessage;
    fn deref(&self) -> &StoredMessage {
        self.get()
    }
}

impl Clone for MessageCell {
    fn clone(&self) -> Self {
        MessageCell {
            message: self.message.clone(),
            facts: self.facts,
            slot: self.slot,
            source: self.source.clone(),
        }
    }
}

impl std::fmt::Debug for MessageCell {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.message.get() {
            Some(m) => m.fmt(f),
            None => write!(f, "MessageCell(slot {}, {:?})", self.slot, self.facts),
        }
    }
}

/// In an index, a message entry's record holds only its facts: the message is a record of
/// its own, decoded when read (see `stored`).
impl serde::Serialize for MessageCell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.facts.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for MessageCell {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<MessageCell, D::Error> {
        Ok(MessageCell::of_facts(MessageFacts::deserialize(d)?))
    }
}

impl MessageCell {
    /// A cell of only its facts, its message to be decoded from a source set later.
    fn of_facts(facts: MessageFacts) -> MessageCell {
        MessageCell {
            message: once_cell::race::OnceBox::new(),
            facts,
            slot: NO_SLOT,
            source: None,
        }
    }
}

/// A summary's `details` as its line holds them (a JSON object), read when asked: a 10 GB
/// session holds 40 thousand branch summaries, and their file lists decoded into JSON values
/// at open were a tenth of opening it from the index (only a cut's file tracking and the
/// detail pane read them, one summary at a time).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct FileLists {
    json: Box<str>,
}

/// A summary's file lists as read from its `details` ([`FileLists::lists`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileListsRead {
    pub read_files: Vec<Value>,
    pub modified_files: Vec<Value>,
}

impl FileLists {
    /// `None` unless `json` is a JSON object (Pi reads no file lists from anything else).
    pub fn of_json(json: &str) -> Option<FileLists> {
        let v: Value = serde_json::from_str(json).ok()?;
        v.is_object().then(|| FileLists { json: json.into() })
    }

    /// Pi's `details.readFiles` and `details.modifiedFiles` (every reader wants both, so
    /// the text is parsed once): each empty when it is not an array.
    pub fn lists(&self) -> FileListsRead {
        let mut o = match serde_json::from_str::<Value>(&self.json) {
            Ok(Value::Object(o)) => o,
            _ => Default::default(),
        };
        let mut list = |key: &str| match o.remove(key) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        FileListsRead {
            read_files: list("readFiles"),
            modified_files: list("modifiedFiles"),
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Compaction {
    pub summary_chars: usize,
    pub summary_present: bool,
    pub first_kept_entry_id: Option<Box<str>>,
    pub tokens_before: Option<f64>,
    pub from_hook: bool,
    pub details: Option<FileLists>,
    #[serde(with = "with_measures")]
    pub system_message: Option<StoredMessage>,
}

/// A message that is no entry's own (a compaction's `systemMessage`) is stored in an index
/// with its measures: it has no line to measure it from again, and no place of its own.
mod with_measures {
    use super::{MessageMeasures, StoredMessage};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(m: &Option<StoredMessage>, s: S) -> Result<S::Ok, S::Error> {
        m.as_ref().map(|m| (m, m.measures.get().map(|b| &**b))).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<StoredMessage>, D::Error> {
        let pair = Option::<(StoredMessage, Option<MessageMeasures>)>::deserialize(d)?;
        Ok(pair.map(|(m, measures)| {
            if let Some(x) = measures {
                let _ = m.measures.set(Box::new(x));
            }
            m
        }))
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BranchSummary {
    pub summary_chars: usize,
    pub summary_nonempty: bool,
    pub from_id: Option<Box<str>>,
    pub from_hook: bool,
    pub details: Option<FileLists>,
}

// The kinds few entries are, boxed: every entry holds a `Kind`, and the fewer bytes it takes
// the less fresh memory a 10 GB session's 4.4 million entries need at open.

/// A `context_edit` entry's own fields.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ContextEditEntry {
    pub target_id: Option<Box<str>>,
    pub replacement: Option<Box<ContentStats>>,
    pub replacement_null: bool,
}

/// A `model_change` entry's own fields.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ModelChangeEntry {
    pub provider: Option<Box<str>>,
    pub model_id: Option<Box<str>>,
}

/// A `custom_message` entry's own fields.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CustomMessageEntry {
    pub custom_type: Option<Box<str>>,
    pub content: ContentStats,
    pub est_tokens: u64,
}

/// A `label` entry's own fields.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LabelEntry {
    pub target_id: Option<Box<str>>,
    pub label: Option<Box<str>>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    Message(MessageCell),
    ModelChange(Box<ModelChangeEntry>),
    ThinkingLevelChange { level: Option<Box<str>> },
    Compaction(Box<Compaction>),
    BranchSummary(Box<BranchSummary>),
    Custom { custom_type: Option<Box<str>> },
    CustomMessage(Box<CustomMessageEntry>),
    ContextEdit(Box<ContextEditEntry>),
    Label(Box<LabelEntry>),
    SessionInfo { name: Option<Box<str>> },
    Usage,
    Unknown(Box<str>),
}

impl Kind {
    /// The entry a context edit names, when it names one.
    pub fn context_edit_target(&self) -> Option<&str> {
        match self {
            Kind::ContextEdit(ce) => ce.target_id.as_deref(),
            _ => None,
        }
    }

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

/// An entry's id, held inline up to 15 bytes (Pi's are 8) in a 16-byte string (a longer one
/// is shared on the heap): a 10 GB session has 4.4 million entries, and a heap string for
/// each id and parent was a sixth of opening it from the index (fresh memory the kernel
/// zeroes; measured with perf); `compact_str`'s 24 bytes were 8 more per entry.
pub type EntryId = ecow::EcoString;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line: u32,
    // The line's byte range ([`Entry::span`]) as its start and length apart: with `line`
    // they take 16 bytes, not 24, in each of a 10 GB session's 4.4 million entries. A line
    // is under 4 GiB (`parse_entry` skips a longer one).
    span_len: u32,
    span_start: u64,
    pub id: EntryId,
    // Its parentId is not kept here: `Session::parent_idx` resolves it, and
    // `Session::parent_id` reads it (24 bytes an entry less at open).
    /// `new Date(timestamp).getTime()`, NaN when unparseable.
    pub ts: f64,
    pub kind: Kind,
}

/// An entry as bonsai's session index stores it: a message entry with an id of up to 15
/// bytes (every entry Pi writes but a few kinds) in fixed fields, any other in postcard.
/// Hand-written because a 10 GB session's index holds 4.4 million of them and decoding them
/// was most of opening it through postcard's generic decode of an `Entry` (varints, the
/// enum's tag, serde's visitors): with these records a 10 GB second open's median went from
/// 544 to 371 ms (11 alternating runs).
pub(crate) mod record {
    use super::{Entry, EntryId, Kind, MessageCell, MessageFacts};

    /// A message entry: this byte, its role code, its facts' flags, its id's length, then
    /// line, span length (u32), span start, timestamp (f64 bits; u64), all little-endian,
    /// then the id's bytes.
    const MESSAGE: u8 = 0;
    /// Any other entry: this byte, then the entry in postcard.
    const POSTCARD: u8 = 1;
    const FIXED: usize = 4 + 4 + 4 + 8 + 8;

    pub(crate) fn encode(e: &Entry, out: &mut Vec<u8>) {
        match &e.kind {
            Kind::Message(cell) if e.id.len() <= 15 => {
                let facts = cell.facts();
                out.extend_from_slice(&[MESSAGE, facts.role as u8, facts.flags, e.id.len() as u8]);
                out.extend_from_slice(&e.line.to_le_bytes());
                out.extend_from_slice(&e.span_len.to_le_bytes());
                out.extend_from_slice(&e.span_start.to_le_bytes());
                out.extend_from_slice(&e.ts.to_bits().to_le_bytes());
                out.extend_from_slice(e.id.as_bytes());
            }
            _ => {
                out.push(POSTCARD);
                postcard::to_io(e, &mut *out).expect("an entry encodes");
            }
        }
    }

    /// `None`: not a record [`encode`] makes.
    pub(crate) fn decode(r: &[u8]) -> Option<Entry> {
        let (&tag, rest) = r.split_first()?;
        if tag == POSTCARD {
            return postcard::from_bytes(rest).ok();
        }
        if tag != MESSAGE || r.len() < FIXED {
            return None;
        }
        let (fixed, id) = r.split_at(FIXED);
        if id.len() != fixed[3] as usize {
            return None;
        }
        let u32_at = |at: usize| u32::from_le_bytes(fixed[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(fixed[at..at + 8].try_into().expect("8 bytes"));
        let facts = MessageFacts::from_raw(fixed[1], fixed[2])?;
        Some(Entry {
            line: u32_at(4),
            span_len: u32_at(8),
            span_start: u64_at(12),
            ts: f64::from_bits(u64_at(20)),
            id: EntryId::from(std::str::from_utf8(id).ok()?),
            kind: Kind::Message(MessageCell::of_facts(facts)),
        })
    }
}

impl Entry {
    /// An entry of the line at `span` (under 4 GiB long); its line number is set by the loader.
    pub fn new(span: Range<usize>, id: EntryId, ts: f64, kind: Kind) -> Entry {
        Entry {
            line: 0,
            span_len: u32::try_from(span.len()).unwrap_or(u32::MAX),
            span_start: span.start as u64,
            id,
            ts,
            kind,
        }
    }

    /// Byte range of the line (without the newline).
    pub fn span(&self) -> Range<usize> {
        let start = self.span_start as usize;
        start..start.saturating_add(self.span_len as usize)
    }

    pub fn message(&self) -> Option<&StoredMessage> {
        match &self.kind {
            Kind::Message(m) => Some(m),
            _ => None,
        }
    }
    pub fn is_compaction(&self) -> bool {
        matches!(self.kind, Kind::Compaction(_))
    }
    pub fn is_system_message(&self) -> bool {
        matches!(&self.kind, Kind::Message(m) if m.facts().is(&Role::System))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    pub line: u32,
    pub kind: DiagnosticKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

#[cfg(test)]
mod file_lists_tests {
    use super::FileLists;
    use serde_json::json;

    #[test]
    fn a_summarys_file_lists_are_read_when_asked_as_pi_reads_them() {
        assert!(FileLists::of_json("[1]").is_none(), "details that are not an object");
        assert!(FileLists::of_json("{").is_none());
        let d = FileLists::of_json(r#"{"readFiles":"a.rs","modifiedFiles":["b.rs",3],"other":1}"#).unwrap();
        let lists = d.lists();
        assert!(lists.read_files.is_empty(), "a list that is not an array is empty");
        assert_eq!(lists.modified_files, vec![json!("b.rs"), json!(3)]);
        let lists = FileLists::of_json("{}").unwrap().lists();
        assert!(lists.read_files.is_empty() && lists.modified_files.is_empty());
    }
}

#[cfg(test)]
mod record_tests {
    use super::{Entry, Kind, MessageCell, Role, StoredMessage, record};

    fn message(role: Role, visible: bool, stop: Option<&str>) -> Kind {
        let mut m = StoredMessage::blank(role);
        m.visible_text = visible;
        m.stop_reason = stop.map(Into::into);
        Kind::Message(MessageCell::known(m))
    }

    fn same(a: &Entry, b: &Entry) {
        assert_eq!((a.line, a.span(), &a.id), (b.line, b.span(), &b.id));
        assert_eq!(a.ts.to_bits(), b.ts.to_bits());
        assert_eq!(a.kind.type_name(), b.kind.type_name());
        if let (Some(x), Kind::Message(y)) = (a.message(), &b.kind) {
            assert_eq!(super::MessageFacts::of(x), y.facts());
        }
    }

    #[test]
    fn every_entry_reads_back_as_it_was_stored() {
        let far = 7usize << 30;
        let mut entries = vec![
            Entry::new(
                far..far + 4_000_000,
                "a1b2c3d4".into(),
                1.7e12,
                message(Role::User, true, None),
            ),
            Entry::new(
                3..9,
                "".into(),
                f64::NAN,
                message(Role::Assistant, false, Some("error")),
            ),
            Entry::new(
                9..99,
                "id-of-exactly15".into(),
                -1.0,
                message(Role::ToolResult, true, None),
            ),
            // Longer than the fixed layout holds: postcard.
            Entry::new(
                9..99,
                "an-id-of-sixteen".into(),
                0.0,
                message(Role::Other("x".into()), true, None),
            ),
            Entry::new(0..1, "é".into(), 5.0, message(Role::CompactionSummary, false, None)),
            Entry::new(1..2, "f00".into(), 5.0, Kind::Usage),
            Entry::new(1..2, "f01".into(), 5.0, Kind::Unknown("odd".into())),
        ];
        for (i, e) in entries.iter_mut().enumerate() {
            e.line = 1 + i as u32 * 1000;
        }
        for e in &entries {
            let mut out = Vec::new();
            record::encode(e, &mut out);
            let fixed = e.message().is_some() && e.id.len() <= 15;
            assert_eq!(
                out[0] == 0,
                fixed,
                "{}: fixed fields for a message with a short id",
                e.id
            );
            let back = record::decode(&out).expect("decodes");
            same(e, &back);
        }
    }

    #[test]
    fn every_role_reads_back_as_itself() {
        for (i, code) in super::RoleCode::ALL.iter().enumerate() {
            assert_eq!(*code as usize, i, "{code:?} out of place");
        }
        let mut roles = super::ROLES.to_vec();
        roles.push(Role::Other("someRole".into()));
        for role in roles {
            let e = Entry::new(0..1, "a".into(), 1.0, message(role.clone(), true, None));
            let mut out = Vec::new();
            record::encode(&e, &mut out);
            let Some(Entry {
                kind: Kind::Message(back),
                ..
            }) = record::decode(&out)
            else {
                panic!("{role:?} did not read back");
            };
            let known = (!matches!(role, Role::Other(_))).then(|| role.clone());
            assert_eq!(back.facts().role(), known, "{role:?}");
            assert_eq!(back.facts().is(&role), known.is_some(), "{role:?}");
        }
    }

    #[test]
    fn a_record_that_is_not_one_is_refused() {
        let e = Entry::new(3..9, "a1b2c3d4".into(), 1.0, message(Role::User, true, None));
        let mut good = Vec::new();
        record::encode(&e, &mut good);
        assert!(record::decode(&good).is_some());
        let mut bad = vec![Vec::new(), good[..good.len() - 1].to_vec(), [&good[..], b"x"].concat()];
        for (at, value) in [(0, 7), (1, 9), (2, 0x10), (3, 9)] {
            let mut b = good.clone();
            b[at] = value;
            bad.push(b);
        }
        let mut b = good.clone();
        let last = b.len() - 1;
        b[last] = 0xff;
        bad.push(b);
        for b in bad {
            assert!(record::decode(&b).is_none(), "{b:?}");
        }
    }
}
