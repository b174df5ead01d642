//! The component contract ([`Component`]) and what a component answers an action with
//! ([`Effect`]). A component owns its state and changes only itself; it says what else should
//! happen. The app carries the effects out (`App::apply`): it owns the session, the
//! tree and the jobs, so a component never reads a file, the clock or the settings, and its
//! update is tested with values alone.

use super::action::Action;
use super::chores::{Chore, FileChore};
use super::mode::Mode;
use super::request::{InputPurpose, PendingWrite, Seen};
use crate::engine::compaction::strategy::Strategy;
use crate::engine::edit::prune::Plan;
use std::path::PathBuf;

/// The contract every component keeps (a test lists them all).
///
/// A component changes only itself on an action and says what else should happen as
/// effects. What it needs to read comes lent by the app, as values: a page's height, the
/// dialog's rectangle, a view of the session. It never reads the app.
pub trait Component {
    /// What the app lends for one update.
    type Lent<'a>;
    /// The component's name, as the test that lists them says it.
    const NAME: &'static str;
    /// Answer `action`: an empty list when only the component changed, `Ignored` when the
    /// action means nothing here.
    fn update(&mut self, action: &Action, lent: Self::Lent<'_>) -> Vec<Effect>;
}

/// The drawing half of the contract, as gitui's `DrawableComponent`.
///
/// A component draws from its own state and a read-only view the root lends for the frame.
/// It never reads the app. Components drawn inside another one's frame (the tree search's
/// text, find's bar, the browser's keys) have no drawing of their own.
pub trait Drawable {
    /// What the root lends for one frame.
    type View<'a>;
    fn draw(&self, f: &mut ratatui::Frame, area: ratatui::layout::Rect, view: Self::View<'_>);
}

#[derive(Debug, Clone)]
pub enum Effect {
    /// The action means nothing here: nothing changed, no redraw.
    Ignored,
    /// The component's overlay closes (back to what it was opened from).
    Close,
    /// Leave bonsai (the picker opened without a session, closed).
    Quit,
    /// Show the keys of this mode.
    Help(Mode),
    /// Close the overlay and select this entry in the tree (unfolding and unfiltering).
    Reveal(usize),
    /// Say this in the status line.
    Say(String),
    /// The context view's inputs changed (mark, live): build it again.
    RebuildContext,
    /// Ask to write this prune plan; `left_out` items were left out by the user.
    ConfirmPrune { plan: Box<Plan>, left_out: usize },
    /// Open this session file (the picker's selection or a search hit).
    Open(PathBuf),
    /// Resume this session file in Pi.
    ResumeInPi(PathBuf),
    /// List the sessions again: every project's, or this project's.
    List { all: bool },
    /// Search the listed sessions for the picker's query.
    SearchSessions,
    /// A small file chore (pins), done by a job.
    Chore(Chore),
    /// Filter the tree by this text (Pi's `/tree` search).
    FilterTree(String),
    /// Search the open session for this text (Ctrl+F).
    Find(String),
    /// Stop the find and forget it.
    EndFind,
    /// Move the tree's selection one row.
    MoveTree { down: bool },
    /// Mark this entry for the context comparison (none: clear the mark).
    Mark(Option<usize>),
    /// Preview the cut with this keepRecentTokens.
    KeepRecent(u64),
    /// The cut preview was turned on or off (the prune preview is off either way).
    CutPreview(bool),
    /// Turn the prune preview on or off.
    TogglePrune,
    /// Write what a confirmed dialog holds.
    Write(Box<PendingWrite>),
    /// The user said no to a write: the dialog closes, nothing is written, and a compaction
    /// waiting for this write (the red zone's) is dropped too.
    Declined(String),
    /// Go to `target` without a branch summary (Pi's first navigation choice).
    Navigate { target: usize, seen: Seen },
    /// Summarize the branch left for `target` (with instructions), then go there.
    SummarizeBranch {
        target: usize,
        focus: Option<String>,
        seen: Seen,
    },
    /// Pi's three navigation choices for `target`, on `choice`.
    AskNavigate { target: usize, choice: usize, seen: Seen },
    /// What an input dialog was for, with the text typed.
    Submit {
        purpose: InputPurpose,
        text: String,
        seen: Seen,
    },
    /// Summarize the compaction at `leaf` by each strategy, side by side.
    Compact {
        at: crate::ui::request::PlannedCompaction,
        focus: Option<String>,
        strategies: Vec<Strategy>,
        seen: Seen,
    },
    /// Stop the summary being written.
    CancelSummary,
    /// Write the summary the dialog shows.
    AcceptSummary,
    /// Change files as confirmed (delete a branch, a fork or clone, trash, backups).
    FileChore(FileChore),
    /// Give `items` (lost by summary `of`) back: confirm, then write an amended summary.
    GiveBack {
        of: usize,
        items: Vec<crate::engine::compaction::audit::Specific>,
    },
    /// Terminal work for the event loop (clipboard, `$EDITOR`, `$PAGER`).
    Terminal(Terminal),
    /// Count these messages of the selection of `generation` exactly (from the cache, or
    /// as a job).
    CountExactly {
        generation: u64,
        messages: Vec<crate::engine::view::context::ContextMessage>,
        encoding: crate::engine::view::tokens::Encoding,
    },
    /// The selection's gauge is known: what follows it (the live figure, a plan that
    /// follows the gauge) is asked for.
    GaugeKnown,
    /// The first hits of a find came while none is shown: show the first.
    FindFirstHit,
    /// The entry the audit view was opened on is no summary bonsai can audit.
    NotAuditable,
}

/// An update that changed the component and asks nothing else.
pub fn changed() -> Vec<Effect> {
    vec![]
}

/// An update the component did not take.
pub fn ignored() -> Vec<Effect> {
    vec![Effect::Ignored]
}

/// Whether an update did anything (the screen is drawn again).
pub fn redraws(effects: &[Effect]) -> bool {
    effects.is_empty() || !effects.iter().all(|e| matches!(e, Effect::Ignored))
}

/// `changed()` when the component changed, else `ignored()`.
pub fn changed_if(changed: bool) -> Vec<Effect> {
    if changed { vec![] } else { ignored() }
}

/// What the event loop does with the terminal on the app's behalf.
#[derive(Debug, Clone, PartialEq)]
pub enum Terminal {
    /// Text to the clipboard (OSC 52).
    Clipboard(String),
    /// Edit this summary in `$EDITOR`; the result comes back as `Action::EditorClosed`.
    EditSummary(String),
    /// Show this text in `$PAGER`.
    Pager(String),
    /// Run Pi on a session: bonsai's screen is left while Pi runs and comes back after it
    /// (or, inside Pi's `/bonsai`, or from `bonsai resume`, bonsai ends and Pi goes on there).
    ResumeInPi {
        run: crate::store::resume::PiRun,
        handover: Handover,
    },
}

/// What becomes of bonsai when it hands a session to Pi.
#[derive(Debug, Clone, PartialEq)]
pub enum Handover {
    /// Pi runs in bonsai's terminal; bonsai comes back when Pi exits.
    Return,
    /// bonsai ends, then Pi runs in its place (`bonsai resume`).
    End,
    /// bonsai runs inside Pi's `/bonsai`: it writes the session file here and ends; the
    /// package switches the running Pi to it.
    SwitchPi(PathBuf),
}

#[cfg(test)]
mod tests;
