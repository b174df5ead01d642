//! The browser's own keys, decided on what the screen shows: which panes and previews are up
//! (its state, `Screen`), jumps to the cut, the turn start and the mark, copying and the
//! pager, the mark, keepRecentTokens by steps, and what Esc closes. Moves, folds and filters
//! are the tree pane's; opening a dialog, a view or a write is the app's (it owns them).

use super::action::Action;
use super::component::{self, Effect, Terminal};
use super::screen::{Focus, Screen};
use crate::engine::compaction::cut::{CompactionPlan, NoCompaction};
use crate::engine::load::session::Session;

/// keepRecentTokens moves by this much per `+`/`-`: a constant step, so `+` then `-` always
/// comes back to the same value.
pub const KEEP_STEP: u64 = 500;

/// What the browser's keys read (never change).
pub struct BrowseView<'a> {
    pub session: &'a Session,
    pub selected: Option<usize>,
    /// The cut at the selection, once worked out.
    pub cut: Option<&'a Result<CompactionPlan, NoCompaction>>,
    /// The entry marked for the context comparison.
    pub mark: Option<usize>,
    /// The detail pane's text, when an entry is shown.
    pub detail_text: Option<String>,
    pub keep_recent: u64,
    /// The tree is filtered by a search.
    pub searching: bool,
    /// bonsai runs inside Pi (its `/bonsai`): Esc with nothing to close goes back to Pi, as
    /// Esc leaves Pi's own views.
    pub inside_pi: bool,
}

impl crate::ui::component::Component for Screen {
    type Lent<'a> = &'a BrowseView<'a>;
    const NAME: &'static str = "browser keys";

    /// A key of the browser. Ignored when it is not one of these.
    fn update(&mut self, action: &crate::ui::action::Action, v: Self::Lent<'_>) -> Vec<crate::ui::component::Effect> {
        let screen = self;
        let say = |text: &str| vec![Effect::Say(text.to_string())];
        match action {
            Action::JumpFirstKept | Action::JumpTurnStart => match v.cut {
                None => say("the cut is still being computed; try again in a moment"),
                Some(Err(e)) => vec![Effect::Say(format!("no cut here: {}", e.reason()))],
                Some(Ok(p)) => {
                    let to = match action {
                        Action::JumpFirstKept => Some(p.first_kept_entry),
                        _ => p.turn_start_entry(),
                    };
                    match to {
                        Some(e) => vec![Effect::Reveal(e)],
                        None => say("the cut here does not split a turn"),
                    }
                }
            },
            Action::JumpMark => match v.mark {
                Some(m) => vec![Effect::Reveal(m)],
                None => say("no marked entry (m marks one)"),
            },
            Action::CopyText => match v.selected {
                None => component::changed(),
                Some(i) => match crate::engine::view::tree_view::copy_text(v.session, i) {
                    Some(t) => vec![
                        Effect::Terminal(Terminal::Clipboard(t)),
                        Effect::Say("Copied selected message to clipboard".into()),
                    ],
                    None => say("Selected entry has no text to copy"),
                },
            },
            Action::CopyId => match v.selected {
                None => component::changed(),
                Some(i) => {
                    let id = v.session.entries[i].id.to_string();
                    vec![
                        Effect::Say(format!("copied the entry id {id}")),
                        Effect::Terminal(Terminal::Clipboard(id)),
                    ]
                }
            },
            Action::OpenPager => match &v.detail_text {
                Some(t) => vec![Effect::Terminal(Terminal::Pager(t.clone()))],
                None => say("no entry selected"),
            },
            Action::ToggleMark => {
                let mark = if v.mark == v.selected { None } else { v.selected };
                let said = match mark {
                    Some(i) => format!("marked {} for the context comparison (v)", v.session.entries[i].id),
                    None => "mark cleared".into(),
                };
                vec![Effect::Mark(mark), Effect::Say(said)]
            }
            Action::KeepRecentStep(d) => {
                let k = v.keep_recent as i64 + *d as i64 * KEEP_STEP as i64;
                vec![Effect::KeepRecent(k.max(0) as u64)]
            }
            Action::ToggleFocus => {
                if screen.show_detail {
                    screen.focus = match screen.focus {
                        Focus::Tree => Focus::Detail,
                        Focus::Detail => Focus::Tree,
                    };
                }
                component::changed()
            }
            Action::ToggleDetail => {
                screen.show_detail = !screen.show_detail;
                if !screen.show_detail {
                    screen.focus = Focus::Tree;
                }
                component::changed()
            }
            Action::ToggleCutPreview => {
                screen.prune_preview = false;
                screen.cut_preview = !screen.cut_preview;
                vec![Effect::CutPreview(screen.cut_preview)]
            }
            Action::Close => close(screen, v),
            _ => component::ignored(),
        }
    }
}

/// Esc closes the innermost thing open: the detail pane's focus, the prune preview, the cut
/// preview, the tree's search; with none of them, it is not the browser's.
fn close(screen: &mut Screen, v: &BrowseView) -> Vec<Effect> {
    if screen.focus == Focus::Detail {
        screen.focus = Focus::Tree;
        component::changed()
    } else if screen.prune_preview {
        vec![Effect::TogglePrune]
    } else if screen.cut_preview {
        screen.cut_preview = false;
        vec![Effect::CutPreview(false)]
    } else if v.searching {
        vec![Effect::FilterTree(String::new())]
    } else if v.inside_pi {
        vec![Effect::Quit]
    } else {
        component::ignored()
    }
}
