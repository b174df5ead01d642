//! The one key table: for each mode, which keys mean which [`Action`]. The help overlay and
//! the hint bar are generated from it, so what they list is what the keys do.
//!
//! Keys follow Pi's `/tree` where Pi has them (moves, pages, Ctrl+←/→ folds, Ctrl+D/T/U/L/A
//! filters, Ctrl+O cycles, Shift+T label times, Ctrl+X copies); bonsai's own keys fill the
//! rest. In a text input, keys without a binding edit the text.

use super::action::Action;
use crate::engine::view::tree_view::FilterMode;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub use super::mode::Mode;

/// A key as the table writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const ALT: KeyModifiers = KeyModifiers::ALT;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;

const fn ch(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: NONE,
    }
}
const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: CTRL,
    }
}
const fn code(c: KeyCode) -> Key {
    Key { code: c, mods: NONE }
}
const fn with(c: KeyCode, mods: KeyModifiers) -> Key {
    Key { code: c, mods }
}

impl Key {
    /// Whether a key event is this key. Letters carry their shift in their case (terminals
    /// differ in whether they also report SHIFT); Ctrl+letter compares the letter's lower
    /// case and takes SHIFT from either.
    pub fn matches(&self, ev: &KeyEvent) -> bool {
        let mods = ev.modifiers & (CTRL | ALT | SHIFT);
        match (self.code, ev.code) {
            (KeyCode::Char(want), KeyCode::Char(got)) => {
                if self.mods.contains(CTRL) {
                    let shifted = mods.contains(SHIFT) || got.is_ascii_uppercase();
                    got.to_ascii_lowercase() == want
                        && mods.contains(CTRL)
                        && mods.contains(ALT) == self.mods.contains(ALT)
                        && shifted == self.mods.contains(SHIFT)
                } else {
                    got == want && (mods - SHIFT) == (self.mods - SHIFT)
                }
            }
            (a, b) => a == b && mods == self.mods,
        }
    }

    /// How the help and the hint bar write it (Pi's style: `ctrl+x`, `↑`, `pgup`).
    pub fn name(&self) -> String {
        let base = match self.code {
            KeyCode::Up => "↑".to_string(),
            KeyCode::Down => "↓".to_string(),
            KeyCode::Left => "←".to_string(),
            KeyCode::Right => "→".to_string(),
            KeyCode::PageUp => "pgup".to_string(),
            KeyCode::PageDown => "pgdn".to_string(),
            KeyCode::Home => "home".to_string(),
            KeyCode::End => "end".to_string(),
            KeyCode::Enter => "enter".to_string(),
            KeyCode::Esc => "esc".to_string(),
            KeyCode::Tab => "tab".to_string(),
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            other => format!("{other:?}").to_lowercase(),
        };
        let mut s = String::new();
        if self.mods.contains(SHIFT) {
            s.push_str("shift+");
        }
        if self.mods.contains(CTRL) {
            s.push_str("ctrl+");
        }
        if self.mods.contains(ALT) {
            s.push_str("alt+");
        }
        s + &base
    }
}

/// One row of the table.
pub struct Binding {
    pub modes: &'static [Mode],
    pub keys: &'static [Key],
    pub action: Action,
    /// What it does, as the help and the hint bar say it.
    pub label: &'static str,
    /// Shown in the hint bar (the help shows every binding).
    pub hint: bool,
}

use Mode::*;

const TREE: &[Mode] = &[Tree, CutPreview, Prune];
const BROWSE: &[Mode] = &[Tree, CutPreview, Prune, Detail];
/// The browsing modes but the pruning preview, which has its own Tab and hints its own `u`.
const BROWSE_NOT_PRUNE: &[Mode] = &[Tree, CutPreview, Detail];
const PREVIEW: &[Mode] = &[CutPreview];
const PRUNE: &[Mode] = &[Prune];
const DETAIL: &[Mode] = &[Detail];
const SCROLLS: &[Mode] = &[Context, Fills, Picker, PickerHits, SummaryPreview, Streaming];
const LISTS: &[Mode] = &[Context, Fills];

macro_rules! b {
    ($modes:expr, [$($k:expr),+], $action:expr, $label:literal) => {
        Binding { modes: $modes, keys: &const { [$($k),+] }, action: $action, label: $label, hint: false }
    };
    ($modes:expr, [$($k:expr),+], $action:expr, $label:literal, hint) => {
        Binding { modes: $modes, keys: &const { [$($k),+] }, action: $action, label: $label, hint: true }
    };
}

/// The table. Order is the order of the help and of the hint bar.
pub fn bindings() -> &'static [Binding] {
    static TABLE: std::sync::LazyLock<Vec<Binding>> = std::sync::LazyLock::new(|| {
        vec![
            // The tree (Pi's /tree keys first).
            b!(TREE, [code(KeyCode::Up), ch('k')], Action::Up, "move", hint),
            b!(TREE, [code(KeyCode::Down), ch('j')], Action::Down, "move", hint),
            b!(
                TREE,
                [code(KeyCode::Left), code(KeyCode::PageUp), ctrl('b')],
                Action::PageUp,
                "page up"
            ),
            b!(
                TREE,
                [code(KeyCode::Right), code(KeyCode::PageDown)],
                Action::PageDown,
                "page down"
            ),
            b!(
                TREE,
                [with(KeyCode::Left, CTRL), with(KeyCode::Left, ALT)],
                Action::FoldOrUp,
                "fold / branch up"
            ),
            b!(
                TREE,
                [with(KeyCode::Right, CTRL), with(KeyCode::Right, ALT)],
                Action::UnfoldOrDown,
                "unfold / branch down"
            ),
            b!(TREE, [ch('g'), code(KeyCode::Home)], Action::Home, "first row"),
            b!(TREE, [ch('G'), code(KeyCode::End)], Action::End, "last row"),
            b!(TREE, [ch('l')], Action::GoToLeaf, "go to the leaf"),
            b!(
                TREE,
                [ch('}')],
                Action::JumpCompaction { next: true },
                "next compaction"
            ),
            b!(
                TREE,
                [ch('{')],
                Action::JumpCompaction { next: false },
                "previous compaction"
            ),
            b!(TREE, [ch('f')], Action::JumpFirstKept, "the cut's first kept entry"),
            b!(TREE, [ch('t')], Action::JumpTurnStart, "the cut's turn start"),
            b!(TREE, [ch('\'')], Action::JumpMark, "the marked entry"),
            b!(
                TREE,
                [ctrl('d')],
                Action::SetFilter(FilterMode::Default),
                "filter: default"
            ),
            b!(
                TREE,
                [ctrl('t')],
                Action::ToggleFilter(FilterMode::NoTools),
                "filter: no tools"
            ),
            b!(
                TREE,
                [ctrl('u')],
                Action::ToggleFilter(FilterMode::UserOnly),
                "filter: user only"
            ),
            b!(
                TREE,
                [ctrl('l')],
                Action::ToggleFilter(FilterMode::LabeledOnly),
                "filter: labeled only"
            ),
            b!(TREE, [ctrl('a')], Action::ToggleFilter(FilterMode::All), "filter: all"),
            b!(TREE, [ctrl('o')], Action::CycleFilter { back: false }, "cycle filters"),
            b!(
                TREE,
                [Key {
                    code: KeyCode::Char('o'),
                    mods: CTRL.union(SHIFT)
                }],
                Action::CycleFilter { back: true },
                "cycle filters back"
            ),
            b!(TREE, [ch('/')], Action::StartSearch, "search", hint),
            b!(TREE, [ch('T')], Action::ToggleLabelTimes, "label times"),
            b!(BROWSE, [ctrl('x')], Action::CopyText, "copy the text"),
            b!(BROWSE, [ch('y')], Action::CopyId, "copy the entry id"),
            b!(BROWSE, [ch('|')], Action::OpenPager, "the text in $PAGER"),
            b!(TREE, [code(KeyCode::Enter)], Action::Navigate, "navigate here", hint),
            b!(BROWSE, [ch('C')], Action::Compact, "compact here", hint),
            b!(BROWSE, [ch('L')], Action::Label, "label"),
            b!(BROWSE, [ch('R')], Action::Rename, "rename the session"),
            b!(BROWSE, [ch('F')], Action::Fork, "fork at a user message"),
            b!(BROWSE, [ch('K')], Action::Clone, "clone the branch"),
            b!(BROWSE, [ch('e')], Action::Export, "export the path to a file"),
            b!(
                BROWSE,
                [ch('A')],
                Action::ArchiveBranch,
                "archive / unarchive the branch"
            ),
            b!(TREE, [ch('H')], Action::ToggleArchived, "show / hide archived branches"),
            b!(
                BROWSE,
                [ch('D')],
                Action::DeleteBranch,
                "delete the branch from the file"
            ),
            b!(TREE, [ch('c')], Action::ToggleCutPreview, "cut preview", hint),
            b!(
                PREVIEW,
                [ch('+'), ch('=')],
                Action::KeepRecentStep(1),
                "keep +500",
                hint
            ),
            b!(PREVIEW, [ch('-')], Action::KeepRecentStep(-1), "keep −500", hint),
            b!(PREVIEW, [ch('#')], Action::KeepRecentEdit, "type keep", hint),
            b!(
                PREVIEW,
                [ch('0')],
                Action::KeepRecentReset,
                "keep from the settings",
                hint
            ),
            b!(BROWSE, [ch('v')], Action::OpenContext, "what the model sees", hint),
            b!(TREE, [ch('m')], Action::ToggleMark, "mark to compare in v"),
            b!(BROWSE, [ch('o')], Action::OpenPicker, "sessions"),
            b!(
                BROWSE,
                [ch('P')],
                Action::ResumeInPi,
                "resume in Pi (in /bonsai: switch to it)"
            ),
            // Pruning: the preview's keys come before the tree's (Tab is its own there).
            b!(TREE, [ch('p')], Action::TogglePrune, "prune preview"),
            b!(PRUNE, [code(KeyCode::Tab)], Action::CyclePolicy, "next policy", hint),
            b!(PRUNE, [ch('!')], Action::TogglePruneForce, "force (no minimum)", hint),
            b!(PRUNE, [ch('a')], Action::ApplyPrune, "apply as context edits", hint),
            b!(PRUNE, [ch('r')], Action::ReviewPlan, "review the plan as a list", hint),
            b!(&[PrunePlan], [code(KeyCode::Up), ch('k')], Action::Up, "move", hint),
            b!(&[PrunePlan], [code(KeyCode::Down), ch('j')], Action::Down, "move", hint),
            b!(&[PrunePlan], [code(KeyCode::PageUp)], Action::PageUp, "page up"),
            b!(&[PrunePlan], [code(KeyCode::PageDown)], Action::PageDown, "page down"),
            b!(
                &[PrunePlan],
                [ch(' '), ch('x')],
                Action::Toggle,
                "leave out / put back",
                hint
            ),
            b!(&[PrunePlan], [ch('a')], Action::ApplyPrune, "write the rest", hint),
            b!(
                &[PrunePlan],
                [code(KeyCode::Enter)],
                Action::Select,
                "show the entry",
                hint
            ),
            b!(
                &[PrunePlan],
                [code(KeyCode::Esc), ch('r'), ch('q')],
                Action::Close,
                "close the list",
                hint
            ),
            b!(PRUNE, [ch('u')], Action::UndoLast, "undo bonsai's last action", hint),
            b!(PRUNE, [code(KeyCode::Esc)], Action::Close, "close the preview", hint),
            b!(
                BROWSE_NOT_PRUNE,
                [ch('u')],
                Action::UndoLast,
                "undo bonsai's last action"
            ),
            b!(BROWSE, [ch('x')], Action::HideEntry, "hide it from the model's context"),
            b!(
                BROWSE,
                [ch('E')],
                Action::ReplaceEntry,
                "replace its text for the model ($EDITOR)"
            ),
            b!(BROWSE, [ch('X')], Action::RestoreEntry, "restore its original content"),
            b!(BROWSE, [ch('w')], Action::OpenFills, "what fills the context"),
            b!(
                BROWSE_NOT_PRUNE,
                [ch('a')],
                Action::OpenAudit,
                "audit a summary: what it lost"
            ),
            b!(BROWSE, [ch('M')], Action::OpenMessages, "the messages said so far"),
            b!(BROWSE, [ch('$')], Action::OpenUsage, "usage and cost of the sessions"),
            b!(BROWSE, [ctrl('f')], Action::StartFind, "find text in the session", hint),
            b!(BROWSE, [ch('n')], Action::FindNext, "next find hit"),
            b!(BROWSE, [ch('N')], Action::FindPrev, "previous find hit"),
            b!(&[Find], [code(KeyCode::Enter)], Action::Select, "find", hint),
            b!(&[Find], [code(KeyCode::Esc), ctrl('c')], Action::Close, "cancel", hint),
            b!(BROWSE, [ch('S')], Action::CountExact, "exact tokens of every entry"),
            b!(
                BROWSE_NOT_PRUNE,
                [code(KeyCode::Tab)],
                Action::ToggleFocus,
                "focus tree / detail"
            ),
            b!(BROWSE, [ch('d')], Action::ToggleDetail, "detail pane on / off"),
            // The detail pane.
            b!(DETAIL, [code(KeyCode::Up), ch('k')], Action::Up, "scroll", hint),
            b!(DETAIL, [code(KeyCode::Down), ch('j')], Action::Down, "scroll", hint),
            b!(
                DETAIL,
                [code(KeyCode::PageUp), code(KeyCode::Left)],
                Action::PageUp,
                "page up"
            ),
            b!(
                DETAIL,
                [code(KeyCode::PageDown), code(KeyCode::Right), ch(' ')],
                Action::PageDown,
                "page down"
            ),
            b!(DETAIL, [ch('g'), code(KeyCode::Home)], Action::Home, "top"),
            b!(DETAIL, [ch('G'), code(KeyCode::End)], Action::End, "bottom"),
            b!(DETAIL, [code(KeyCode::Esc)], Action::Close, "back to the tree", hint),
            b!(PREVIEW, [code(KeyCode::Esc)], Action::Close, "close the preview", hint),
            b!(
                &[Tree],
                [code(KeyCode::Esc)],
                Action::Close,
                "clear the search; in /bonsai, back to Pi"
            ),
            // Typing a search.
            b!(
                &[Search],
                [code(KeyCode::Enter)],
                Action::Select,
                "keep the filter",
                hint
            ),
            b!(&[Search], [code(KeyCode::Esc), ctrl('c')], Action::Close, "clear", hint),
            b!(&[Search], [code(KeyCode::Up)], Action::Up, "move", hint),
            b!(&[Search], [code(KeyCode::Down)], Action::Down, "move", hint),
            // What the model sees; what fills the context.
            b!(LISTS, [code(KeyCode::Up), ch('k')], Action::Up, "move", hint),
            b!(LISTS, [code(KeyCode::Down), ch('j')], Action::Down, "move", hint),
            b!(SCROLLS, [code(KeyCode::PageUp)], Action::PageUp, "page up"),
            b!(SCROLLS, [code(KeyCode::PageDown)], Action::PageDown, "page down"),
            b!(LISTS, [code(KeyCode::Home), ch('g')], Action::Home, "first"),
            b!(LISTS, [code(KeyCode::End), ch('G')], Action::End, "last"),
            b!(LISTS, [code(KeyCode::Enter)], Action::Select, "go to the entry", hint),
            b!(&[Fills], [ch('w')], Action::Close, "close"),
            // The audit of a summary.
            b!(&[Audit], [code(KeyCode::Up), ch('k')], Action::Up, "move", hint),
            b!(&[Audit], [code(KeyCode::Down), ch('j')], Action::Down, "move", hint),
            b!(&[Audit], [code(KeyCode::PageUp)], Action::PageUp, "page up"),
            b!(&[Audit], [code(KeyCode::PageDown)], Action::PageDown, "page down"),
            b!(&[Audit], [code(KeyCode::Home), ch('g')], Action::Home, "first"),
            b!(&[Audit], [code(KeyCode::End), ch('G')], Action::End, "last"),
            b!(
                &[Audit],
                [code(KeyCode::Enter)],
                Action::Select,
                "go to its entry",
                hint
            ),
            b!(&[Audit], [ch(' ')], Action::Toggle, "choose it", hint),
            b!(&[Audit], [ch('A')], Action::ToggleAll, "choose all / none", hint),
            b!(&[Audit], [ch('w')], Action::AcceptWrite, "give the chosen back", hint),
            b!(
                &[Audit],
                [code(KeyCode::Esc), ch('q'), ch('a')],
                Action::Close,
                "close",
                hint
            ),
            b!(&[Context], [ch('m')], Action::ClearMark, "clear the mark"),
            b!(
                &[Context],
                [code(KeyCode::Tab)],
                Action::ToggleLive,
                "session ↔ live (Pi package)",
                hint
            ),
            b!(LISTS, [code(KeyCode::Esc), ch('q')], Action::Close, "close", hint),
            b!(&[Context], [ch('v')], Action::Close, "close"),
            // The session picker.
            b!(
                &[Picker, PickerHits],
                [code(KeyCode::Up), ch('k')],
                Action::Up,
                "move",
                hint
            ),
            b!(
                &[Picker, PickerHits],
                [code(KeyCode::Down), ch('j')],
                Action::Down,
                "move",
                hint
            ),
            b!(&[PickerFilter], [code(KeyCode::Up)], Action::Up, "move", hint),
            b!(&[PickerFilter], [code(KeyCode::Down)], Action::Down, "move", hint),
            b!(
                &[Picker, PickerHits],
                [code(KeyCode::Home), ch('g')],
                Action::Home,
                "first"
            ),
            b!(
                &[Picker, PickerHits],
                [code(KeyCode::End), ch('G')],
                Action::End,
                "last"
            ),
            b!(&[Picker], [code(KeyCode::Left), ch('h')], Action::FoldOrUp, "fold / up"),
            b!(
                &[Picker],
                [code(KeyCode::Right), ch('l')],
                Action::UnfoldOrDown,
                "unfold"
            ),
            b!(&[Picker], [code(KeyCode::Enter)], Action::Select, "open", hint),
            b!(&[Picker], [ch('P')], Action::ResumeInPi, "resume it in Pi", hint),
            b!(
                &[PickerHits],
                [ch('P')],
                Action::ResumeInPi,
                "resume its session in Pi",
                hint
            ),
            b!(
                &[Picker],
                [code(KeyCode::Tab)],
                Action::ToggleAllProjects,
                "this project / all",
                hint
            ),
            b!(&[Picker], [ch('/')], Action::StartSearch, "filter by name", hint),
            b!(
                &[Picker, PickerHits],
                [ch('s'), ctrl('f')],
                Action::SearchSessions,
                "search inside sessions",
                hint
            ),
            b!(&[Picker], [ch('p')], Action::PinSession, "pin / unpin", hint),
            b!(&[Picker], [ch('$')], Action::OpenUsage, "usage and cost", hint),
            b!(&[Picker], [ch('R')], Action::Rename, "rename the session"),
            b!(
                &[Picker],
                [ch('d'), code(KeyCode::Delete)],
                Action::TrashSession,
                "move it to the trash"
            ),
            b!(&[Picker], [ch('u')], Action::RestoreTrashed, "restore from the trash"),
            b!(&[Picker], [ch('D')], Action::EmptyTrash, "empty the trash"),
            b!(&[Picker], [ch('B')], Action::RemoveOldBackups, "remove its old backups"),
            // The usage view.
            b!(
                &[Usage],
                [code(KeyCode::Tab), code(KeyCode::Right), ch('l')],
                Action::NextTab,
                "next view",
                hint
            ),
            b!(
                &[Usage],
                [with(KeyCode::BackTab, SHIFT), code(KeyCode::Left), ch('h')],
                Action::PrevTab,
                "previous view"
            ),
            b!(
                &[Usage],
                [ch('p')],
                Action::NextPeriod,
                "period: 7, 30, 365 days, all",
                hint
            ),
            b!(
                &[Usage],
                [code(KeyCode::Up), ch('k')],
                Action::Up,
                "older day / scroll up",
                hint
            ),
            b!(
                &[Usage],
                [code(KeyCode::Down), ch('j')],
                Action::Down,
                "newer day / scroll down"
            ),
            b!(
                &[Usage],
                [code(KeyCode::PageUp), code(KeyCode::Home)],
                Action::PageUp,
                "oldest day / top"
            ),
            b!(
                &[Usage],
                [code(KeyCode::PageDown)],
                Action::PageDown,
                "today / page down"
            ),
            b!(
                &[Usage],
                [code(KeyCode::Esc), ch('q'), ch('$')],
                Action::Close,
                "close",
                hint
            ),
            b!(
                &[Picker],
                [code(KeyCode::Esc), ch('q'), ctrl('c')],
                Action::Close,
                "close",
                hint
            ),
            b!(
                &[PickerFilter],
                [code(KeyCode::Enter)],
                Action::Select,
                "keep the filter",
                hint
            ),
            b!(
                &[PickerFilter],
                [code(KeyCode::Esc), ctrl('c')],
                Action::Close,
                "clear the filter",
                hint
            ),
            b!(&[PickerQuery], [code(KeyCode::Enter)], Action::Select, "search", hint),
            b!(
                &[PickerQuery],
                [code(KeyCode::Esc), ctrl('c')],
                Action::Close,
                "back",
                hint
            ),
            b!(
                &[PickerHits],
                [code(KeyCode::Enter)],
                Action::Select,
                "open at the hit",
                hint
            ),
            b!(
                &[PickerHits],
                [code(KeyCode::Esc), ch('q'), ctrl('c')],
                Action::Close,
                "stop / back",
                hint
            ),
            // Help: any key closes it.
            b!(&[Help], [code(KeyCode::Up), ch('k')], Action::Up, "scroll", hint),
            b!(&[Help], [code(KeyCode::Down), ch('j')], Action::Down, "scroll", hint),
            b!(&[Help], [code(KeyCode::PageUp)], Action::PageUp, "page up"),
            b!(
                &[Help],
                [code(KeyCode::PageDown), ch(' ')],
                Action::PageDown,
                "page down"
            ),
            b!(
                &[Help],
                [code(KeyCode::Esc), ch('?'), ch('q')],
                Action::Close,
                "close",
                hint
            ),
            // Dialogs.
            b!(
                &[NavigateDialog],
                [code(KeyCode::Up), ch('k')],
                Action::Up,
                "choose",
                hint
            ),
            b!(
                &[NavigateDialog],
                [code(KeyCode::Down), ch('j')],
                Action::Down,
                "choose",
                hint
            ),
            b!(
                &[NavigateDialog],
                [code(KeyCode::Enter)],
                Action::Select,
                "select",
                hint
            ),
            b!(&[LineInput], [code(KeyCode::Enter)], Action::Select, "save", hint),
            b!(
                &[Instructions],
                [code(KeyCode::Enter)],
                Action::Select,
                "continue",
                hint
            ),
            b!(
                &[Instructions],
                [ctrl('j'), with(KeyCode::Enter, SHIFT)],
                Action::Newline,
                "new line",
                hint
            ),
            b!(&[Strategies], [code(KeyCode::Up), ch('k')], Action::Up, "move", hint),
            b!(
                &[Strategies],
                [code(KeyCode::Down), ch('j')],
                Action::Down,
                "move",
                hint
            ),
            b!(&[Strategies], [ch(' '), ch('x')], Action::Toggle, "run it or not", hint),
            b!(&[Strategies], [ch('a')], Action::ToggleAll, "all or one", hint),
            b!(&[Strategies], [code(KeyCode::Enter)], Action::Select, "run", hint),
            b!(
                &[NavigateDialog, LineInput, Instructions, Strategies, Streaming],
                [code(KeyCode::Esc), ctrl('c')],
                Action::Close,
                "cancel",
                hint
            ),
            b!(
                &[SummaryPreview, Streaming],
                [code(KeyCode::Right), code(KeyCode::Tab), ch('l')],
                Action::NextTab,
                "next strategy",
                hint
            ),
            b!(
                &[SummaryPreview, Streaming],
                [code(KeyCode::Left), with(KeyCode::BackTab, SHIFT), ch('h')],
                Action::PrevTab,
                "previous strategy",
                hint
            ),
            b!(&[SummaryPreview], [ctrl('s')], Action::AcceptWrite, "write it", hint),
            b!(
                &[SummaryPreview],
                [ch('e')],
                Action::EditInEditor,
                "edit in $EDITOR",
                hint
            ),
            b!(
                &[SummaryPreview],
                [ch('d'), code(KeyCode::Esc), ctrl('c')],
                Action::Discard,
                "discard",
                hint
            ),
            b!(
                &[SummaryPreview, Streaming],
                [code(KeyCode::Up), ch('k')],
                Action::Up,
                "scroll",
                hint
            ),
            b!(
                &[SummaryPreview, Streaming],
                [code(KeyCode::Down), ch('j')],
                Action::Down,
                "scroll",
                hint
            ),
            b!(&[Confirm], [ch('y')], Action::Yes, "yes, write it", hint),
            b!(
                &[Confirm],
                [ch('n'), code(KeyCode::Esc), ctrl('c')],
                Action::No,
                "no",
                hint
            ),
            // Everywhere outside inputs and dialogs.
            b!(
                &[Tree, CutPreview, Prune, Detail, Context, Fills, PrunePlan, Usage],
                [ch('?')],
                Action::OpenHelp,
                "keys",
                hint
            ),
            b!(BROWSE, [ch('q'), ctrl('c')], Action::Quit, "quit", hint),
        ]
    });
    &TABLE
}

/// The action a key has in a mode, if any.
pub fn action_for(mode: Mode, key: &KeyEvent) -> Option<Action> {
    bindings()
        .iter()
        .find(|b| b.modes.contains(&mode) && b.keys.iter().any(|k| k.matches(key)))
        .map(|b| b.action.clone())
}

/// The bindings of a mode, in table order.
pub fn for_mode(mode: Mode) -> impl Iterator<Item = &'static Binding> {
    bindings().iter().filter(move |b| b.modes.contains(&mode))
}

/// `↑/k` style: the keys of a binding joined with `/`.
pub fn keys_text(b: &Binding) -> String {
    b.keys.iter().map(Key::name).collect::<Vec<_>>().join("/")
}

/// The hint bar's items for a mode: `keys label`, with bindings of the same label merged
/// (`↑/k/↓/j move`).
pub fn hints(mode: Mode) -> Vec<(String, &'static str)> {
    // The mode's own keys first (bindings shared by fewer modes), then the common ones.
    let mut own: Vec<&Binding> = for_mode(mode).filter(|b| b.hint).collect();
    own.sort_by_key(|b| b.modes.len());
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for b in own {
        let first = b.keys[0].name();
        match out.iter_mut().find(|(_, l)| *l == b.label) {
            Some((k, _)) => {
                k.push('/');
                k.push_str(&first);
            }
            None => out.push((first, b.label)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key means one thing in a mode: a second binding would be dead (the first wins) and
    /// listed twice in the help.
    #[test]
    fn no_mode_binds_a_key_twice() {
        let mut twice = Vec::new();
        for mode in Mode::ALL {
            let mut seen: Vec<(Key, &str)> = Vec::new();
            for b in for_mode(mode) {
                for k in b.keys {
                    if let Some((_, first)) = seen.iter().find(|(s, _)| s == k) {
                        twice.push(format!("{mode:?}: {} is \"{first}\" and \"{}\"", k.name(), b.label));
                    } else {
                        seen.push((*k, b.label));
                    }
                }
            }
        }
        assert!(twice.is_empty(), "{}", twice.join("\n"));
    }
}
