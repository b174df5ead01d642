//! Everything before and after a write, but the summaries (`summaries`):
//! - opening the dialogs (navigate, label, rename, keepRecentTokens, confirm; their keys are
//!   in `dialogs`);
//! - the write itself: a job that re-reads the file and decides again;
//! - fork and clone.
//!
//! A write is decided on what the user saw when its dialog opened (`Seen`): if Pi appended
//! since, it is refused, never written on a stale leaf. A write under an entry that is not the
//! file's last one starts a branch: the user is told what it leaves behind and asked.

use super::{App, plural};
use crate::engine::compaction::cut::CompactionSettings;
use crate::engine::compaction::summary::Summary;
use crate::engine::edit::entries;
use crate::engine::edit::plan::{self, Refusal, Write, WriteRequest};
use crate::engine::load::entry::Role;
use crate::engine::view::context;
use crate::ui::component::Effect;
use crate::ui::dialog::{Dialog, FileChore, InputPurpose, NavInfo, PendingWrite, Seen};
use crate::ui::input::LineEditor;

impl App {
    pub(super) fn writable(&mut self) -> bool {
        if let Some(why) = self.doc.read_only {
            self.log.status = Some(why.into());
            return false;
        }
        if self.file.gone {
            self.log.status = Some("the session file is gone (deleted or moved): nothing can be written to it".into());
            return false;
        }
        true
    }

    /// The refusal when the file grew (or changed) since `seen`.
    pub(super) fn changed_since(&self, seen: Seen) -> Option<Refusal> {
        let s = &self.doc.session;
        if s.buf.len() == seen.len {
            return None;
        }
        Some(if s.buf.len() > seen.len {
            Refusal::FileGrew {
                added: s.entries.len().saturating_sub(seen.entries),
            }
        } else {
            Refusal::FileChanged
        })
    }

    pub(super) fn budget(&self) -> i64 {
        let w = self.selection.gauge.as_ref().and_then(|g| g.window);
        crate::engine::compaction::branch_summary::token_budget(w, self.setup.settings.branch_reserve_tokens())
    }

    pub(super) fn compaction_settings(&self) -> CompactionSettings {
        CompactionSettings {
            reserve_tokens: self
                .selection
                .gauge
                .as_ref()
                .map(|g| g.reserve)
                .unwrap_or_else(|| CompactionSettings::default().reserve_tokens),
            keep_recent_tokens: self.selection.keep_recent,
        }
    }

    pub(super) fn id_of(&self, i: usize) -> String {
        self.doc.session.entries[i].id.to_string()
    }

    /// What a write under `parent` leaves behind, when it starts a branch.
    pub(super) fn branch_note(&self, parent: usize) -> Option<(String, Vec<String>)> {
        let s = &self.doc.session;
        let nb = plan::new_branch(s, parent)?;
        let first = nb
            .abandoned
            .first()
            .map(|&i| format!("{} (line {})", s.entries[i].id, s.entries[i].line));
        let tokens: u64 = nb
            .abandoned
            .iter()
            .flat_map(|&i| context::intrinsic_messages(s, i))
            .map(|m| m.est_tokens)
            .sum();
        let short = format!(
            "{} is not the session's last entry: writing here starts a new branch",
            s.entries[parent].id
        );
        let lines = vec![
            format!(
                "It is written under {} (line {}), not under the session's last entry {} (line {}).",
                s.entries[parent].id, s.entries[parent].line, s.entries[nb.last].id, s.entries[nb.last].line
            ),
            "Pi resumes at the file's last line, so this starts a new branch there.".to_string(),
            format!(
                "The current branch keeps its {} after the fork point{} (~{tokens} tokens), but they leave Pi's context.",
                plural(nb.abandoned.len(), "entry", "entries"),
                first.map(|f| format!(", from {f}")).unwrap_or_default()
            ),
            "Write it?".to_string(),
        ];
        Some((short, lines))
    }

    pub(super) fn open_navigate(&mut self) {
        let Some(t) = self.selected() else { return };
        let s = self.doc.session.clone();
        if Some(t) == s.leaf() {
            self.log.status = Some("Already at this point".into());
            return;
        }
        if !self.writable() {
            return;
        }
        let seen = Seen::of(&s);
        if self.setup.settings.branch_skip_prompt() {
            self.write_navigation(t, None, seen);
            return;
        }
        self.open_navigate_dialog(t, 0, seen);
    }

    /// Pi's three choices, with what leaving the branch for `target` covers.
    pub(super) fn open_navigate_dialog(&mut self, target: usize, choice: usize, seen: Seen) {
        let s = self.doc.session.clone();
        let nav = entries::plan_navigation(&s, s.leaf(), target, self.budget());
        let info = NavInfo {
            entries: nav.branch.entries.len(),
            messages: nav.branch.messages.len(),
            tokens: nav.branch.total_tokens,
            to_user_message: nav.editor_text.is_some(),
        };
        self.parts.dialog = Some(Dialog::Navigate {
            target,
            choice,
            seen,
            info,
        });
    }

    /// Undo bonsai's last action on the file (a compaction, a navigation, a label, a name or
    /// context edits), after a confirm that says what it undoes and how.
    pub(super) fn undo_last_action(&mut self) {
        if !self.writable() {
            return;
        }
        // bonsai's newest action may be a fork or clone (a file beside this one).
        if self.offer_remove_branched() {
            return;
        }
        let s = self.doc.session.clone();
        let u = match crate::engine::edit::undo::plan(&s) {
            Ok(u) => u,
            Err(e) => {
                self.log.status = Some(e.to_string());
                return;
            }
        };
        let mut lines = vec![format!("Undo {}: {}.", u.what, u.how)];
        if let crate::engine::edit::plan::Write::Undo { write, .. } = &u.write
            && let crate::engine::edit::plan::Write::Resume { at, .. } = &**write
            && let Some(at) = s.idx_of(at)
            && let Some((short, _)) = self.branch_note(at)
        {
            lines.push(format!("{short}."));
        }
        lines.push("Nothing is removed: the undo is appended, and u again undoes the action before.".into());
        lines.push("Write it?".into());
        let seen = Seen::of(&s);
        self.parts.dialog = Some(Dialog::Confirm {
            title: "Undo bonsai's last action".into(),
            lines,
            then: Box::new(PendingWrite {
                request: WriteRequest {
                    write: u.write,
                    seen: Some((seen.len, seen.entries)),
                },
                what: format!("the undo of {}", u.what),
                select: None,
            }),
        });
    }

    pub(super) fn open_label(&mut self) {
        let Some(t) = self.selected() else { return };
        if self.writable() {
            let s = &self.doc.session;
            let text = s.label_of(&s.entries[t].id).unwrap_or("").to_string();
            self.parts.dialog = Some(Dialog::Input {
                purpose: InputPurpose::Label { target: t },
                editor: LineEditor::new(&text, false),
                seen: Seen::of(s),
                note: None,
            });
        }
    }

    pub(super) fn open_rename(&mut self) {
        if self.writable() {
            let s = &self.doc.session;
            // Unnamed: bonsai's title is offered, written only if the user presses Enter.
            // Typing replaces the offer; Enter takes it.
            let (editor, note) = match (s.session_name(), &self.doc.made_title) {
                (Some(n), _) => (LineEditor::new(n, false), None),
                (None, Some(t)) => (
                    LineEditor::prefilled(t),
                    Some("bonsai's title (no name yet): enter writes it, typing replaces it".to_string()),
                ),
                (None, None) => (LineEditor::new("", false), None),
            };
            self.parts.dialog = Some(Dialog::Input {
                purpose: InputPurpose::Rename,
                editor,
                seen: Seen::of(s),
                note,
            });
        }
    }

    pub(super) fn open_keep_recent(&mut self) {
        self.parts.dialog = Some(Dialog::Input {
            purpose: InputPurpose::KeepRecent,
            // Typing replaces the value shown (`#`, `3`, `7` is 37, not 200037).
            editor: LineEditor::prefilled(&self.selection.keep_recent.to_string()),
            seen: Seen::of(&self.doc.session),
            note: Some(format!(
                "the setting says {}; 0 resets to it in the preview",
                self.keep_recent_setting()
            )),
        });
    }

    pub(super) fn start_write(&mut self, request: WriteRequest, what: &str, select: Option<String>) {
        self.pending.last_branched = None;
        let Some(path) = self.doc.path.clone() else {
            self.log.status = Some("the demo session is read-only".into());
            return;
        };
        // A summary's drafts wait beside the write: a refusal (Pi appended at the last
        // moment) gives them back instead of losing what was paid for.
        let d = self.parts.dialog.take();
        self.pending.parked = match d {
            Some(Dialog::Summary { .. }) => d,
            Some(Dialog::Confirm { .. }) => self.pending.parked.take(),
            _ => None,
        };
        self.pending.writes += 1;
        self.log.status = Some(format!("writing {what}…"));
        self.start(crate::ui::jobs::WriteJob {
            path,
            request,
            what: what.to_string(),
            select,
            reread_on_refusal: self.pending.parked.is_some(),
            built_from: self.doc.session.clone(),
        });
    }

    /// Navigation with an optional branch summary, decided on what the user saw.
    pub(super) fn write_navigation(&mut self, target: usize, summary: Option<Summary>, seen: Seen) {
        if let Some(r) = self.changed_since(seen) {
            if summary.is_some() && matches!(self.parts.dialog, Some(Dialog::Summary { .. })) {
                return self.keep_drafts(&refusal_words(&r));
            }
            self.parts.dialog = None;
            self.log.status = Some(r.to_string());
            return;
        }
        let s = self.doc.session.clone();
        let what = if summary.is_some() {
            "a branch summary"
        } else {
            "a navigation marker"
        };
        let request = WriteRequest {
            write: Write::Navigation {
                from: s.leaf().map(|l| self.id_of(l)),
                target: self.id_of(target),
                summary,
                budget: self.budget(),
            },
            seen: Some((seen.len, seen.entries)),
        };
        self.start_write(request, what, None);
    }

    pub(super) fn submit_input(&mut self, purpose: InputPurpose, text: String, seen: Seen) {
        match purpose {
            InputPurpose::Export { leaf } => self.start_export(leaf, &text),
            InputPurpose::Label { target } => {
                self.parts.dialog = None;
                let label = text.trim().to_string();
                let what = if label.is_empty() { "a label clear" } else { "a label" };
                let target = self.id_of(target);
                self.start_write(
                    WriteRequest {
                        write: Write::Label {
                            target: target.clone(),
                            label: Some(label).filter(|l| !l.is_empty()),
                        },
                        seen: None,
                    },
                    what,
                    Some(target),
                );
            }
            InputPurpose::RenameFile(path) if Some(&path) != self.doc.path.as_ref() => {
                self.parts.dialog = None;
                self.rename_listed(&path, text);
            }
            InputPurpose::Rename | InputPurpose::RenameFile(_) => {
                self.parts.dialog = None;
                let keep = self.selected().map(|i| self.id_of(i));
                self.start_write(
                    WriteRequest {
                        write: Write::SessionName { name: text },
                        seen: None,
                    },
                    "the session name",
                    keep,
                );
            }
            InputPurpose::KeepRecent => match text.trim().replace([',', '_'], "").parse::<u64>() {
                Ok(k) => {
                    self.parts.dialog = None;
                    self.set_keep_recent_value(k);
                }
                Err(_) => {
                    self.log.status = Some(format!(
                        "keepRecentTokens takes a whole number of tokens, not \"{text}\""
                    ))
                }
            },
            purpose @ (InputPurpose::NavigateInstructions { .. } | InputPurpose::CompactInstructions { .. }) => {
                self.take_summary_effect(Effect::Submit { purpose, text, seen });
            }
        }
    }

    fn set_keep_recent_value(&mut self, k: u64) {
        self.selection.keep_recent = k;
        if let Some(g) = &mut self.selection.gauge {
            g.keep_recent = k;
        }
        self.log.status = Some(format!("keepRecentTokens {k}"));
        self.selection_changed();
    }

    /// The edited summary comes back from $EDITOR.
    pub(super) fn on_editor_closed(&mut self, edited: Option<String>) {
        if let super::EditorFor::Replacement { target } = self.parts.editor_for {
            return self.on_replacement_edited(target, edited);
        }
        match (&mut self.parts.dialog, edited) {
            (Some(Dialog::Summary { tabs, active, .. }), Some(t)) => {
                if let Some(tab) = tabs.get_mut(*active) {
                    tab.text = t;
                    tab.scroll = 0;
                }
            }
            (_, None) => self.log.status = Some("the editor did not finish; the summary is unchanged".into()),
            _ => {}
        }
    }

    /// Fork before the selected user message, or clone the branch at the selection.
    pub(super) fn fork_or_clone(&mut self, clone: bool) {
        let Some(sel) = self.selected() else { return };
        if !self.writable() {
            return;
        }
        if self.doc.path.is_none() {
            return;
        }
        let s = self.doc.session.clone();
        let (cut, editor_text) = if clone {
            (Some(sel), None)
        } else {
            if s.entries[sel].message().map(|m| &m.role) != Some(&Role::User) {
                self.log.status = Some("fork works at a user message (like Pi's /fork)".into());
                return;
            }
            let v = s.entry_value(sel);
            (
                s.parent_of(sel),
                Some(context::content_text(v["message"].get("content"), "")),
            )
        };
        let what = if clone { "clone" } else { "fork" };
        let n = cut.map(|c| s.path_to(c).len()).unwrap_or(0);
        let mut lines = vec![if clone {
            format!(
                "Write the path to {} ({n} entries) as a new session file beside this one.",
                s.entries[sel].id
            )
        } else {
            format!(
                "Write the path before {} ({n} entries) as a new session file beside this one; the message goes to the clipboard, to send it again there.",
                s.entries[sel].id
            )
        }];
        lines.push(
            "Pi (pi -c) and bonsai resume the newest session file of this project: that is the new file, until this session is written to again."
                .into(),
        );
        lines.push(format!("u removes the {what} again while nobody has written to it."));
        lines.push(format!("Write the {what}?"));
        self.parts.dialog = Some(Dialog::ConfirmRewrite {
            title: format!("Write a {what}"),
            lines,
            then: FileChore::Branched {
                clone,
                cut,
                editor_text,
            },
        });
    }

    /// Yes in the fork / clone confirm: the new file is written as a job.
    pub(super) fn start_branched(&mut self, clone: bool, cut: Option<usize>, editor_text: Option<String>) {
        self.parts.dialog = None;
        let Some(path) = self.doc.path.clone() else { return };
        let what = if clone { "clone" } else { "fork" };
        self.log.status = Some(format!("writing the {what}…"));
        self.start(crate::ui::jobs::BranchedJob {
            session: self.doc.session.clone(),
            cut,
            source: path,
            what,
            editor_text,
        });
    }

    /// `u` after a fork or clone: whether nobody has written to it since is asked of a job
    /// (it reads the file's metadata); the answer comes back to `on_branched_checked`.
    pub(super) fn offer_remove_branched(&mut self) -> bool {
        let Some(f) = self.pending.last_branched.clone() else {
            return false;
        };
        self.chore(crate::ui::chores::Chore::CheckBranched(f));
        true
    }

    /// The fork or clone checked: untouched, ask to remove it; written to since, it is no
    /// longer bonsai's to remove, and `u` undoes the action before it.
    pub(super) fn on_branched_checked(&mut self, f: crate::ui::dialog::BranchedFile, untouched: bool) {
        if self.pending.last_branched.as_ref() != Some(&f) {
            return;
        }
        if !untouched {
            self.pending.last_branched = None;
            return self.undo_last_action();
        }
        self.parts.dialog = Some(Dialog::ConfirmRewrite {
            title: format!("Undo the {}", f.what),
            lines: vec![
                format!(
                    "Remove the {} {} ({} bytes): nobody has written to it since bonsai did.",
                    f.what,
                    f.name(),
                    f.len
                ),
                "This session is not changed; Pi resumes it next again.".into(),
                "Remove it?".into(),
            ],
            then: FileChore::RemoveBranched(f),
        });
    }

    pub(super) fn remove_branched(&mut self, f: &crate::ui::dialog::BranchedFile) {
        self.parts.dialog = None;
        self.pending.last_branched = None;
        self.chore(crate::ui::chores::Chore::Confirmed(FileChore::RemoveBranched(
            f.clone(),
        )));
    }
}

/// A refusal as the start of a sentence about kept drafts.
pub(super) fn refusal_words(r: &Refusal) -> String {
    match r {
        Refusal::FileGrew { added } => {
            format!("Pi appended {} while this was open", plural(*added, "entry", "entries"))
        }
        other => other.to_string(),
    }
}
