//! Everything that can change the app's state, as one type: what a key means (through the
//! key table in `keymap`), mouse clicks and the wheel, text edits, the terminal's size, the
//! clock, and background jobs reporting back. `App::update` is the only consumer.

use crate::engine::view::tree_view::FilterMode;
use crossterm::event::KeyEvent;

#[derive(Debug, Clone)]
pub enum Action {
    // Moving: tree rows, detail lines, context rows, picker rows, dialog choices, previews.
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    /// Pi's Ctrl+←: fold the branch, or jump to the segment start above.
    FoldOrUp,
    /// Pi's Ctrl+→: unfold, or jump to the next segment start.
    UnfoldOrDown,
    GoToLeaf,
    JumpCompaction {
        next: bool,
    },
    JumpFirstKept,
    JumpTurnStart,
    JumpMark,

    // The tree view.
    SetFilter(FilterMode),
    ToggleFilter(FilterMode),
    CycleFilter {
        back: bool,
    },
    StartSearch,
    /// Ctrl+F: find text inside the open session (every entry's decoded text).
    StartFind,
    /// The next (previous) hit of the find, in tree order.
    FindNext,
    FindPrev,
    ToggleLabelTimes,
    ToggleFocus,
    ToggleDetail,
    ToggleCutPreview,
    KeepRecentStep(i8),
    KeepRecentEdit,
    KeepRecentReset,
    OpenContext,
    ToggleMark,
    ClearMark,
    /// "What the model sees": the session's context ↔ what bonsai's Pi package sends.
    ToggleLive,
    OpenPicker,
    /// Resume the selected session (the picker's, a hit's, or the open one) in Pi.
    ResumeInPi,
    OpenHelp,
    ToggleAllProjects,
    /// Search inside the listed sessions (the picker).
    SearchSessions,
    /// Pin the selected session on top of the picker, or unpin it.
    PinSession,
    /// Housekeeping in the picker: the selected session to the trash, a trashed one back,
    /// the trash emptied, the selected session's old backups removed (each asked first).
    TrashSession,
    RestoreTrashed,
    EmptyTrash,
    RemoveOldBackups,
    CopyText,
    CopyId,
    OpenPager,

    // Pruning and context edits (previewed; each write is confirmed first).
    TogglePrune,
    CyclePolicy,
    TogglePruneForce,
    ApplyPrune,
    UndoLast,
    HideEntry,
    ReplaceEntry,
    RestoreEntry,
    OpenFills,
    /// The audit of the compaction or branch summary under the cursor: what it lost.
    OpenAudit,
    /// What the sessions' model calls cost (by day, model, project; this session over time).
    OpenUsage,
    /// The usage view's next period (7, 30, 365 days, all).
    NextPeriod,
    /// The prune plan as a list to review.
    ReviewPlan,
    /// The messages said in this run.
    OpenMessages,
    /// Count the exact tokens of every entry of the session (in the background).
    CountExact,

    // Actions that write (each opens its dialog first).
    Navigate,
    Compact,
    Label,
    Rename,
    Fork,
    Clone,

    // Branch chores and export.
    /// Archive the selection's branch (or unarchive the archived one it is in).
    ArchiveBranch,
    /// Show archived branches dimmed, or hide them.
    ToggleArchived,
    /// Delete the selection's branch from the file (confirmed; the one rewrite).
    DeleteBranch,
    /// Export the path to the selection (Markdown, HTML or JSON, by the name typed).
    Export,
    /// Select this entry (an id or idx:N), unfolding and clearing filters as needed: how
    /// `bonsai FILE --at ID` opens a search hit.
    SelectEntry(String),

    // Choosing and comparing summary strategies.
    /// Check or uncheck the strategy under the cursor.
    Toggle,
    /// Check every strategy, or only the one under the cursor when all are.
    ToggleAll,
    /// The next (previous) strategy's tab.
    NextTab,
    PrevTab,

    // Generic answers.
    /// Enter: open, submit, jump, choose.
    Select,
    /// Esc: back out of whatever is open.
    Close,
    Quit,
    Newline,
    /// The deliberate key that writes a previewed summary.
    AcceptWrite,
    EditInEditor,
    Discard,
    Yes,
    No,

    // Not from the key table.
    /// A key for the focused text input.
    Edit(KeyEvent),
    Paste(String),
    Click {
        col: u16,
        row: u16,
    },
    Wheel {
        down: bool,
        col: u16,
        row: u16,
    },
    Resize {
        width: u16,
        height: u16,
    },
    /// The live-follow and highlighting tick, with what the event loop saw (`ui::tick`): the
    /// update reads no clock and no file.
    Tick(Observed),
    /// `$EDITOR` returned (the text, or `None` when it failed).
    EditorClosed(Option<String>),
    /// Pi, run on a session from bonsai, exited (what to say: its exit status, notes).
    PiExited(String),
}

/// What the event loop saw when the clock ticked.
#[derive(Debug, Clone)]
pub struct Observed {
    pub now_ms: i64,
    pub now: std::time::Instant,
    /// The open session file.
    pub file: FileSeen,
    /// A mapped file lost pages under us (truncated or rewritten by another program).
    pub mapping_damaged: bool,
    /// The open file's inode and modification time, when it could be looked at.
    pub stamp: Option<FileStamp>,
}

/// What tells a file written again at the same length: its inode and its time (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub ino: u64,
    pub mtime_ns: i128,
}

/// The open session file as the event loop found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSeen {
    /// No file is open (the demo, a session from standard input).
    NoFile,
    /// It is there, this long.
    Len(u64),
    /// Deleted or moved.
    Gone,
    /// It could not be looked at (permissions): nothing is concluded.
    Unknown,
}
