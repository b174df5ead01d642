//! The session's data: the loaded session, why bytes are not one, and what bonsai's index
//! holds for it. Loading (`load`), the index (`stored`) and the session's own methods
//! (`session.rs`) work on these.

use super::ids::IdTable;
use super::proof::LineProof;
use crate::load::bytes::FileBytes;
use crate::load::entry::*;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// A loaded session. Immutable; appends produce a new load.
#[derive(Debug)]
pub struct Session {
    pub buf: FileBytes,
    pub header: Header,
    pub entries: Vec<Entry>,
    pub diagnostics: Vec<Diagnostic>,
    /// Pi's `byId`: the last entry with each id, as indices hashed by id (see `idx_of`).
    pub(super) by_id: IdTable,
    /// Parent entry index per entry (`u32::MAX`: none), resolved once through `by_id`.
    pub parent_idx: crate::load::table::Table<u32>,
    /// The parentId of each entry whose parent it does not resolve to (a missing parent, or
    /// itself), by entry index in order: what `parent_idx` cannot say of them.
    pub(super) orphan_parents: Vec<(u32, EntryId)>,
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
    pub(super) name: Option<Box<str>>,
    /// Diagnostics about single lines (malformed, second header); `diagnostics` adds the ones
    /// about the entries as a whole (duplicates, orphans, cycles), which are derived again
    /// when the session is extended.
    pub(super) line_diagnostics: Vec<Diagnostic>,
    /// The bytes up to the last newline, and their line count: where an extension resumes.
    pub(super) settled_len: usize,
    pub(super) settled_lines: u32,
    /// The Pi release this session is read as (what its summaries are made from, its `/tree`
    /// rows): the store sets the one bonsai follows; the engine's default is 0.87.1.
    pub pi: crate::load::pi_version::PiVersion,
    /// The messages and measures bonsai's session index holds for this session, read one
    /// by one on first use (see `StoredMessage::slot`); `None` for a session parsed whole.
    pub(super) stored_records: Option<Arc<StoredRecords>>,
    /// What a later layer kept in bonsai's index beside this very session's parse (the tree
    /// and `/tree`'s first view), when it was opened from an unchanged file's index.
    pub(super) kept: Vec<Kept>,
    /// For a session opened from bonsai's index: the check every line read passes first
    /// (see `proof`). `None` for a session parsed whole.
    pub(super) proof: Option<Arc<LineProof>>,
}

/// Why bytes are not a Pi session.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("the file is empty: a Pi session starts with a `session` header line")]
    Empty,
    #[error("not a Pi session: line {line} should be the `session` header ({reason})")]
    NotASession { line: u32, reason: String },
    /// JSON.parse refuses a byte order mark, so Pi skips line 1 and finds no header. Named,
    /// because "line 2 should be the header" points at the wrong line.
    #[error(
        "not a Pi session as it stands: line 1 starts with a byte order mark (bytes EF BB BF), which Pi \
         cannot read, so it finds no `session` header (some editors add one). Remove those 3 bytes \
         (e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`) and the session loads"
    )]
    ByteOrderMark,
}

/// One part of an index: where its offset table and its records are in the index's bytes.
#[derive(Debug, Clone)]
pub(super) struct Part {
    pub(super) offsets: Range<usize>,
    pub(super) records: Range<usize>,
}

/// The messages and measures an index holds, read one message at a time (a message entry's
/// place in them is its position in the index). Checked whole when the index was opened.
pub(crate) struct StoredRecords {
    pub(super) bytes: Arc<FileBytes>,
    pub(super) messages: Part,
    pub(super) measures: Part,
    pub(super) calls: Part,
    /// How many bytes of the file the index describes (a message's line must lie in them).
    pub(super) len: u64,
}

impl std::fmt::Debug for StoredRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "StoredRecords({} + {} bytes)",
            self.messages.records.len(),
            self.measures.records.len()
        )
    }
}

/// One thing kept beside a session's parse (see [`Session::kept`]).
pub type Kept = Arc<dyn std::any::Any + Send + Sync>;
