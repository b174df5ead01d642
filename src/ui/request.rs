//! What a dialog asks of the app, in the words both use: the write a yes confirms, what an
//! input was for, the compaction planned, and what the user saw when it opened. The
//! component contract (`component::Effect`) carries them, so they live below both.

use crate::engine::edit::plan::WriteRequest;
use crate::engine::load::session::Session;

/// What the user saw when a dialog opened: the file's length and its entries. A write
/// decided in the dialog is refused if the file has grown since (Pi appended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub len: usize,
    pub entries: usize,
}

impl Seen {
    pub fn of(s: &Session) -> Seen {
        Seen {
            len: s.buf.len(),
            entries: s.entries.len(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum InputPurpose {
    Label {
        target: usize,
    },
    Rename,
    /// A name for a session listed in the picker (not necessarily the open one).
    RenameFile(std::path::PathBuf),
    KeepRecent,
    CompactInstructions {
        at: PlannedCompaction,
    },
    NavigateInstructions {
        target: usize,
    },
    /// The file name to export the path to `leaf` to.
    Export {
        leaf: usize,
    },
}

/// The compaction a dialog is about: the leaf and Pi's plan for it, worked out by a job when
/// `c` was pressed and carried to the summaries, so no update plans it again.
#[derive(Debug, Clone)]
pub struct PlannedCompaction {
    pub leaf: usize,
    pub plan: std::sync::Arc<crate::engine::compaction::cut::CompactionPlan>,
}

/// One plan is one decision: two are the same when they are the same plan (it is not compared
/// field by field; it was made once).
impl PartialEq for PlannedCompaction {
    fn eq(&self, other: &Self) -> bool {
        self.leaf == other.leaf && std::sync::Arc::ptr_eq(&self.plan, &other.plan)
    }
}

/// A write waiting for a yes.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    pub request: WriteRequest,
    pub what: String,
    /// The entry to select afterwards (by id; `None`: the new leaf).
    pub select: Option<String>,
}
