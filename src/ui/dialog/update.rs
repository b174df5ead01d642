//! The dialogs' keys: each dialog's own update. A dialog moves its choice, edits its text,
//! checks strategies and scrolls its preview itself; what a yes or an Enter starts (a write, a
//! summary, a change of files) is an effect the app carries out.

use super::{Dialog, FileChore, InputPurpose, TabState, max_scroll};
use crate::engine::compaction::strategy::Strategy;
use crate::ui::action::Action;
use crate::ui::component::{self, Effect, Terminal, changed_if};
use crate::ui::input::LineEditor;
use ratatui::layout::Rect;

impl Dialog {
    /// Pi's three choices when leaving a branch.
    fn on_navigate(&mut self, action: &Action) -> Vec<Effect> {
        let Dialog::Navigate {
            target, choice, seen, ..
        } = self
        else {
            return component::ignored();
        };
        let (target, seen) = (*target, *seen);
        match action {
            Action::Up => *choice = (*choice + 2) % 3,
            Action::Down => *choice = (*choice + 1) % 3,
            Action::Close => return vec![Effect::Close],
            Action::Select => match *choice {
                0 => return vec![Effect::Navigate { target, seen }],
                1 => {
                    return vec![Effect::SummarizeBranch {
                        target,
                        focus: None,
                        seen,
                    }];
                }
                _ => {
                    *self = Dialog::Input {
                        purpose: InputPurpose::NavigateInstructions { target },
                        editor: LineEditor::new("", true),
                        seen,
                        note: None,
                    }
                }
            },
            _ => return component::ignored(),
        }
        component::changed()
    }

    /// A text to type (a label, a name, instructions, a file name).
    fn on_input(&mut self, action: &Action) -> Vec<Effect> {
        let Dialog::Input {
            purpose, editor, seen, ..
        } = self
        else {
            return component::ignored();
        };
        match action {
            Action::Edit(key) => return changed_if(editor.input(*key)),
            Action::Paste(t) => editor.paste(t),
            Action::Newline => editor.newline(),
            // Esc in the custom instructions goes back to Pi's three choices.
            Action::Close => match purpose {
                InputPurpose::NavigateInstructions { target } => {
                    return vec![Effect::AskNavigate {
                        target: *target,
                        choice: 2,
                        seen: *seen,
                    }];
                }
                _ => return vec![Effect::Close],
            },
            Action::Select => {
                return vec![Effect::Submit {
                    purpose: purpose.clone(),
                    text: editor.text(),
                    seen: *seen,
                }];
            }
            _ => return component::ignored(),
        }
        component::changed()
    }

    /// Which strategies the compaction runs side by side.
    fn on_strategies(&mut self, action: &Action) -> Vec<Effect> {
        let Dialog::Strategies {
            at,
            focus,
            seen,
            cursor,
            checked,
            ..
        } = self
        else {
            return component::ignored();
        };
        let n = checked.len();
        match action {
            Action::Up => *cursor = (*cursor + n - 1) % n,
            Action::Down => *cursor = (*cursor + 1) % n,
            Action::Toggle => checked[*cursor] = !checked[*cursor],
            Action::ToggleAll => {
                let all = checked.iter().all(|c| *c);
                for (k, c) in checked.iter_mut().enumerate() {
                    *c = !all || k == *cursor;
                }
            }
            Action::Close => {
                return vec![
                    Effect::Close,
                    Effect::Say("compaction cancelled; nothing written".into()),
                ];
            }
            Action::Select => {
                let strategies: Vec<Strategy> = Strategy::ALL
                    .iter()
                    .zip(checked.iter())
                    .filter(|(_, c)| **c)
                    .map(|(s, _)| *s)
                    .collect();
                if strategies.is_empty() {
                    return vec![Effect::Say("check at least one strategy (space)".into())];
                }
                return vec![Effect::Compact {
                    at: at.clone(),
                    focus: focus.clone(),
                    strategies,
                    seen: *seen,
                }];
            }
            _ => return component::ignored(),
        }
        component::changed()
    }

    /// A summary being written (Esc stops it) or written (write, edit, discard; tabs when
    /// several strategies ran).
    fn on_summary(&mut self, action: &Action, rect: Rect) -> Vec<Effect> {
        let Dialog::Summary {
            tabs, active, purpose, ..
        } = self
        else {
            return component::ignored();
        };
        let running = tabs.iter().any(|t| t.state == TabState::Running);
        let n = tabs.len();
        match action {
            Action::NextTab | Action::PrevTab if n > 1 => {
                *active = if matches!(action, Action::NextTab) {
                    (*active + 1) % n
                } else {
                    (*active + n - 1) % n
                };
                component::changed()
            }
            Action::NextTab | Action::PrevTab => component::ignored(),
            Action::Up | Action::Down | Action::PageUp | Action::PageDown => {
                let t = &mut tabs[*active];
                changed_if(scroll_preview(&mut t.scroll, &t.text, rect, action))
            }
            Action::Close if running => {
                let said = if n > 1 {
                    "summaries cancelled (every strategy); nothing written"
                } else {
                    "summary cancelled; nothing written"
                };
                vec![Effect::CancelSummary, Effect::Close, Effect::Say(said.into())]
            }
            Action::AcceptWrite if !running => vec![Effect::AcceptSummary],
            Action::EditInEditor if !running => {
                vec![Effect::Terminal(Terminal::EditSummary(tabs[*active].text.clone()))]
            }
            Action::Discard if !running => {
                let said = if matches!(purpose, super::SummaryFor::Branch { .. }) {
                    "branch summary discarded; nothing written, Pi stays where it is"
                } else {
                    "compaction discarded; nothing written"
                };
                vec![Effect::Close, Effect::Say(said.into())]
            }
            _ => component::ignored(),
        }
    }
}

/// Scroll a summary preview drawn in `rect`, never past its end.
fn scroll_preview(scroll: &mut usize, text: &str, rect: Rect, action: &Action) -> bool {
    let max = max_scroll(text, rect);
    let page = rect.height.saturating_sub(3) as usize;
    let to = match action {
        Action::Up => scroll.saturating_sub(1),
        Action::Down => *scroll + 1,
        Action::PageUp => scroll.saturating_sub(page),
        _ => *scroll + page,
    }
    .min(max);
    let moved = to != *scroll;
    *scroll = to;
    moved
}

impl crate::ui::component::Component for Dialog {
    type Lent<'a> = Rect;
    const NAME: &'static str = "dialog";

    /// A key in the dialog, drawn in `rect` (the summary preview scrolls by its size).
    fn update(
        &mut self,
        action: &crate::ui::action::Action,
        rect: Self::Lent<'_>,
    ) -> Vec<crate::ui::component::Effect> {
        match self {
            Dialog::Navigate { .. } => self.on_navigate(action),
            Dialog::Input { .. } => self.on_input(action),
            Dialog::Strategies { .. } => self.on_strategies(action),
            Dialog::Summary { .. } => self.on_summary(action, rect),
            Dialog::ConfirmRewrite { then, .. } => match action {
                Action::Yes => vec![Effect::Close, Effect::FileChore(then.clone())],
                Action::No => {
                    let said = match then {
                        FileChore::Delete(_) => "nothing deleted",
                        FileChore::Branched { .. } => "nothing written",
                        FileChore::RemoveBranched(_) | FileChore::EmptyTrash(_) | FileChore::RemoveBackups(_) => {
                            "nothing removed"
                        }
                        FileChore::Trash(_) | FileChore::RestoreTrashed(_) => "nothing moved",
                    };
                    vec![Effect::Close, Effect::Say(said.into())]
                }
                _ => component::ignored(),
            },
            Dialog::Confirm { then, .. } => match action {
                Action::Yes => vec![Effect::Write(then.clone())],
                Action::No => vec![Effect::Close, Effect::Declined("nothing written".into())],
                _ => component::ignored(),
            },
        }
    }
}
