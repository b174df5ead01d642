//! What has the keyboard (the key table's modes). Apart from the key table so that a
//! component can name a mode (to open its help) without depending on the table.

/// What has the keyboard: the topmost thing on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Tree,
    /// The tree with the cut preview on (its keys add to the tree's).
    CutPreview,
    /// The tree with the pruning preview on (its keys add to the tree's).
    Prune,
    /// The detail pane focused.
    Detail,
    /// Typing a tree search.
    Search,
    /// Typing what to find inside the session.
    Find,
    /// "What the model sees".
    Context,
    /// What fills the context: tokens by role, tool and file, the largest entries.
    Fills,
    /// The audit of a summary: what it lost, to give back.
    Audit,
    /// The prune plan as a list: review, leave items out, write.
    PrunePlan,
    /// What the model calls cost.
    Usage,
    Help,
    /// The session picker's tree.
    Picker,
    /// Typing the picker's name filter.
    PickerFilter,
    /// Typing a search inside the sessions.
    PickerQuery,
    /// Going through a search's hits.
    PickerHits,
    /// Pi's three navigation choices.
    NavigateDialog,
    /// A one-line input (label, name, keepRecentTokens).
    LineInput,
    /// Instructions for a summary (several lines).
    Instructions,
    /// The summary strategies a compaction runs side by side.
    Strategies,
    /// A finished summary, to write, edit or discard.
    SummaryPreview,
    /// A summary being written by a model.
    Streaming,
    /// A yes/no question before a write.
    Confirm,
}

impl Mode {
    pub const ALL: [Mode; 23] = [
        Mode::Tree,
        Mode::CutPreview,
        Mode::Prune,
        Mode::Detail,
        Mode::Search,
        Mode::Find,
        Mode::Context,
        Mode::Fills,
        Mode::Audit,
        Mode::PrunePlan,
        Mode::Usage,
        Mode::Help,
        Mode::Picker,
        Mode::PickerFilter,
        Mode::PickerQuery,
        Mode::PickerHits,
        Mode::NavigateDialog,
        Mode::LineInput,
        Mode::Instructions,
        Mode::Strategies,
        Mode::SummaryPreview,
        Mode::Streaming,
        Mode::Confirm,
    ];

    /// Keys without a binding are text for an input.
    pub fn takes_text(self) -> bool {
        matches!(
            self,
            Mode::Search | Mode::Find | Mode::PickerFilter | Mode::PickerQuery | Mode::LineInput | Mode::Instructions
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Tree => "tree",
            Mode::CutPreview => "cut preview",
            Mode::Prune => "prune preview",
            Mode::Fills => "what fills the context",
            Mode::Audit => "audit of a summary",
            Mode::PrunePlan => "prune plan",
            Mode::Usage => "usage and cost",
            Mode::Detail => "detail",
            Mode::Search => "search",
            Mode::Find => "find in session",
            Mode::Context => "what the model sees",
            Mode::Help => "help",
            Mode::Picker => "sessions",
            Mode::PickerFilter => "sessions: filter",
            Mode::PickerQuery => "sessions: search",
            Mode::PickerHits => "sessions: hits",
            Mode::NavigateDialog => "navigate",
            Mode::LineInput => "input",
            Mode::Instructions => "instructions",
            Mode::Strategies => "summary strategies",
            Mode::SummaryPreview => "summary preview",
            Mode::Streaming => "summary being written",
            Mode::Confirm => "confirm",
        }
    }
}
