//! Carrying out what a component's update asked for: the app owns the session, the tree, the
//! overlays and the jobs, so the effects that touch them are done here, in order.

use super::{App, Overlay};
use crate::ui::component::{self, Effect};
use crate::ui::dialog::{Dialog, FileChore};
use crate::ui::keymap::Mode;

impl App {
    /// Carry out `effects`; returns whether the screen needs a redraw.
    pub(super) fn apply(&mut self, effects: Vec<Effect>) -> bool {
        let redraw = component::redraws(&effects);
        for effect in effects {
            match effect {
                Effect::Ignored => {}
                Effect::Close => self.close_top(),
                Effect::Quit => self.quit = true,
                Effect::Help(mode) => self.open_help(mode),
                Effect::Reveal(entry) => {
                    self.close_top();
                    self.reveal(entry);
                }
                Effect::Say(text) => self.log.status = Some(text),
                Effect::CountExactly {
                    generation,
                    messages,
                    encoding,
                } => self.count_exactly(generation, messages, encoding),
                Effect::GaugeKnown => self.after_gauge(),
                Effect::FindFirstHit => self.find_first_hit(),
                Effect::NotAuditable => {
                    self.screen.overlay = Overlay::None;
                    self.log.status = Some("that entry is not a summary bonsai can audit".into());
                }
                Effect::RebuildContext => {
                    self.request_context();
                    self.keep_context_cursor_visible();
                }
                Effect::ConfirmPrune { plan, left_out } => self.confirm_reviewed_plan(&plan, left_out),
                Effect::Open(path) => {
                    let index = self.index_place();
                    self.start(crate::ui::jobs::OpenJob {
                        path,
                        index,
                        forget_index: false,
                    })
                }
                Effect::List { all } => self.start_listing(all),
                Effect::ResumeInPi(path) => self.resume_in_pi(&path),
                Effect::SearchSessions => {
                    let id = self.next_job_id();
                    self.start_session_search(id);
                }
                Effect::Chore(chore) => self.chore(chore),
                Effect::FilterTree(text) => {
                    let s = self.doc.session.clone();
                    self.tree.view.set_search(&s, text);
                }
                Effect::Find(text) => self.run_find(text),
                Effect::EndFind => {
                    if let Some(f) = self.parts.find.take() {
                        f.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                Effect::MoveTree { down: true } => self.tree.view.move_down(),
                Effect::MoveTree { down: false } => self.tree.view.move_up(),
                Effect::Mark(mark) => self.parts.context.mark = mark,
                Effect::KeepRecent(k) => self.set_keep_recent(k),
                Effect::CutPreview(on) => self.cut_preview_changed(on),
                Effect::TogglePrune => self.toggle_prune(),
                Effect::Write(w) => self.start_write(w.request, &w.what, w.select),
                Effect::Declined(said) => {
                    self.parts.dialog = None;
                    self.parts.prune.compact_after = None;
                    self.log.status = Some(said);
                }
                Effect::Navigate { target, seen } => self.write_navigation(target, None, seen),
                Effect::SummarizeBranch { target, focus, seen } => self.summarize_branch(target, focus, seen),
                Effect::AskNavigate { target, choice, seen } => self.open_navigate_dialog(target, choice, seen),
                Effect::Submit { purpose, text, seen } => self.submit_input(purpose, text, seen),
                // The summary dialogs' own asks: their keys go to `on_summary_dialog`, which
                // does them; any that arrive here are done the same way.
                e @ (Effect::Compact { .. } | Effect::CancelSummary | Effect::AcceptSummary) => {
                    self.take_summary_effect(e);
                }
                Effect::FileChore(chore) => self.do_file_chore(chore),
                Effect::GiveBack { of, items } => self.confirm_give_back(of, &items),
                Effect::Terminal(t) => self.effects.push(t),
            }
        }
        redraw
    }

    /// The keys of `mode`, from the top.
    pub(super) fn open_help(&mut self, mode: Mode) {
        self.screen.help = Default::default();
        self.screen.overlay = Overlay::Help(mode);
    }

    /// Close what has the keyboard: the dialog, else the overlay (the usage view goes back to where it was
    /// opened from; the plan list is dropped), else the tree search's input.
    fn close_top(&mut self) {
        if self.parts.dialog.take().is_some() {
            return;
        }
        match self.screen.overlay {
            Overlay::None => {
                if self.mode() == Mode::Search {
                    self.parts.search = None;
                }
            }
            Overlay::Usage => {
                let back = self.parts.usage.take().map(|(_, back)| back);
                self.screen.overlay = back.unwrap_or(Overlay::None);
            }
            Overlay::PrunePlan => {
                self.parts.prune.list = None;
                self.screen.overlay = Overlay::None;
            }
            _ => self.screen.overlay = Overlay::None,
        }
    }

    /// A change of files the user said yes to.
    fn do_file_chore(&mut self, chore: FileChore) {
        match chore {
            FileChore::Delete(target) => self.start_delete(target),
            FileChore::Branched {
                clone,
                cut,
                editor_text,
            } => self.start_branched(clone, cut, editor_text),
            FileChore::RemoveBranched(f) => self.remove_branched(&f),
            chore @ (FileChore::Trash(_)
            | FileChore::RestoreTrashed(_)
            | FileChore::EmptyTrash(_)
            | FileChore::RemoveBackups(_)) => self.do_housekeeping(chore),
        }
    }

    /// The reviewed plan's confirmation, saying how many items the user left out.
    fn confirm_reviewed_plan(&mut self, plan: &crate::engine::edit::prune::Plan, left_out: usize) {
        self.confirm_plan(plan, None, "Write the pruning as context edits");
        if left_out > 0
            && let Some(Dialog::Confirm { lines, .. }) = &mut self.parts.dialog
        {
            lines.insert(
                1,
                format!(
                    "{left_out} item{} left out by you stay as they are.",
                    if left_out == 1 { "" } else { "s" }
                ),
            );
        }
    }
}
