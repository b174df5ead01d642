//! The dialogs' keys: what each key does in the navigate, input, strategies, summary and
//! confirm dialogs (the dialogs themselves are drawn in `ui::dialog`; what a yes starts is in
//! `writes`, `branches` and `housekeeping`).

use super::{App, Terminal};
use crate::engine::compaction::strategy::Strategy;
use crate::ui::action::Action;
use crate::ui::dialog::{self, Dialog, FileChore, InputPurpose, SummaryFor, TabState};
use crate::ui::input::LineEditor;

impl App {
    /// Keys while a dialog is open.
    pub(super) fn on_dialog(&mut self, action: Action) -> bool {
        let area = self.areas().main;
        let rect = self.dialog.as_ref().map(|d| d.rect(area)).unwrap_or(area);
        let Some(d) = &mut self.dialog else { return false };
        match d {
            Dialog::Navigate { .. } => return self.on_navigate_dialog(action),
            Dialog::Input { .. } => return self.on_input_dialog(action),
            Dialog::Strategies { .. } => return self.on_strategies_dialog(action),
            Dialog::Summary { .. } => return self.on_summary_dialog(action, rect),
            Dialog::ConfirmRewrite { .. } => return self.on_confirm_rewrite_dialog(action),
            Dialog::Confirm { then, .. } => match action {
                Action::Yes => {
                    let p = (**then).clone();
                    self.start_write(p.request, &p.what, p.select);
                }
                Action::No => {
                    self.dialog = None;
                    self.prune.compact_after = None;
                    self.status = Some("nothing written".into());
                }
                _ => return false,
            },
        }
        true
    }

    fn on_navigate_dialog(&mut self, action: Action) -> bool {
        let Some(Dialog::Navigate {
            target, choice, seen, ..
        }) = &mut self.dialog
        else {
            return false;
        };
        let (target, seen) = (*target, *seen);
        match action {
            Action::Up => *choice = (*choice + 2) % 3,
            Action::Down => *choice = (*choice + 1) % 3,
            Action::Close => self.dialog = None,
            Action::Select => match *choice {
                0 => self.write_navigation(target, None, seen),
                1 => self.summarize_branch(target, None, seen),
                _ => {
                    self.dialog = Some(Dialog::Input {
                        purpose: InputPurpose::NavigateInstructions { target },
                        editor: LineEditor::new("", true),
                        seen,
                        note: None,
                    })
                }
            },
            _ => return false,
        }

        true
    }

    fn on_input_dialog(&mut self, action: Action) -> bool {
        let Some(Dialog::Input {
            purpose, editor, seen, ..
        }) = &mut self.dialog
        else {
            return false;
        };
        match action {
            Action::Edit(key) => return editor.input(key),
            Action::Paste(t) => editor.paste(&t),
            Action::Newline => editor.newline(),
            Action::Close => {
                // Esc in the custom instructions goes back to Pi's three choices.
                let back = match purpose {
                    InputPurpose::NavigateInstructions { target } => Some((*target, *seen)),
                    _ => None,
                };
                self.dialog = None;
                if let Some((target, seen)) = back {
                    self.open_navigate_dialog(target, 2, seen);
                }
            }
            Action::Select => {
                let (purpose, text, seen) = (purpose.clone(), editor.text(), *seen);
                self.submit_input(purpose, text, seen);
            }
            _ => return false,
        };
        true
    }

    fn on_strategies_dialog(&mut self, action: Action) -> bool {
        let Some(Dialog::Strategies {
            leaf,
            focus,
            seen,
            cursor,
            checked,
            ..
        }) = &mut self.dialog
        else {
            return false;
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
                self.dialog = None;
                self.status = Some("compaction cancelled; nothing written".into());
            }
            Action::Select => {
                let chosen: Vec<Strategy> = Strategy::ALL
                    .iter()
                    .zip(checked.iter())
                    .filter(|(_, c)| **c)
                    .map(|(s, _)| *s)
                    .collect();
                if chosen.is_empty() {
                    self.status = Some("check at least one strategy (space)".into());
                    return true;
                }
                let (leaf, focus, seen) = (*leaf, focus.clone(), *seen);
                self.strategy_choice = chosen.clone();
                self.start_compaction(leaf, focus, chosen, seen);
            }
            _ => return false,
        }

        true
    }

    fn on_summary_dialog(&mut self, action: Action, rect: ratatui::layout::Rect) -> bool {
        let Some(Dialog::Summary { tabs, active, .. }) = &mut self.dialog else {
            return false;
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
            }
            Action::NextTab | Action::PrevTab => return false,
            a @ (Action::Up | Action::Down | Action::PageUp | Action::PageDown) => {
                let t = &mut tabs[*active];
                return scroll_preview(&mut t.scroll, &t.text, rect, &a);
            }
            Action::Close if running => {
                if let Some((_, c)) = self.pending.summary.take() {
                    c.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                self.dialog = None;
                self.status = Some(
                    if n > 1 {
                        "summaries cancelled (every strategy); nothing written"
                    } else {
                        "summary cancelled; nothing written"
                    }
                    .into(),
                );
            }
            Action::AcceptWrite if !running => self.accept_summary(),
            Action::EditInEditor if !running => {
                let t = tabs[*active].text.clone();
                self.effects.push(Terminal::EditSummary(t));
            }
            Action::Discard if !running => {
                let branch = matches!(
                    self.dialog,
                    Some(Dialog::Summary {
                        purpose: SummaryFor::Branch { .. },
                        ..
                    })
                );
                self.dialog = None;
                self.status = Some(
                    if branch {
                        "branch summary discarded; nothing written, Pi stays where it is"
                    } else {
                        "compaction discarded; nothing written"
                    }
                    .into(),
                );
            }
            _ => return false,
        }

        true
    }

    fn on_confirm_rewrite_dialog(&mut self, action: Action) -> bool {
        let Some(Dialog::ConfirmRewrite { then, .. }) = &mut self.dialog else {
            return false;
        };
        match (action, then.clone()) {
            (Action::Yes, FileChore::Delete(t)) => self.start_delete(t),
            (
                Action::Yes,
                FileChore::Branched {
                    clone,
                    cut,
                    editor_text,
                },
            ) => self.start_branched(clone, cut, editor_text),
            (Action::Yes, FileChore::RemoveBranched(f)) => self.remove_branched(&f),
            (
                Action::Yes,
                chore @ (FileChore::Trash(_)
                | FileChore::RestoreTrashed(_)
                | FileChore::EmptyTrash(_)
                | FileChore::RemoveBackups(_)),
            ) => self.do_housekeeping(chore),
            (Action::No, chore) => {
                self.dialog = None;
                self.status = Some(
                    match chore {
                        FileChore::Delete(_) => "nothing deleted",
                        FileChore::Branched { .. } => "nothing written",
                        FileChore::RemoveBranched(_) | FileChore::EmptyTrash(_) | FileChore::RemoveBackups(_) => {
                            "nothing removed"
                        }
                        FileChore::Trash(_) | FileChore::RestoreTrashed(_) => "nothing moved",
                    }
                    .into(),
                );
            }
            _ => return false,
        };
        true
    }
}

/// Scroll a summary preview drawn in `rect`, never past its end.
fn scroll_preview(scroll: &mut usize, text: &str, rect: ratatui::layout::Rect, action: &Action) -> bool {
    let max = dialog::max_scroll(text, rect);
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
