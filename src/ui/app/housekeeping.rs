//! Housekeeping from the picker: a session to the trash and back, the trash emptied, old
//! backups removed, a listed session renamed. Each asks first (what and how much), then the
//! listing is read again.

use super::App;
use crate::ui::chores::Chore;
use crate::ui::dialog::{Dialog, FileChore, InputPurpose, Seen};
use crate::ui::input::LineEditor;
use crate::ui::picker::OLD_BACKUP_DAYS;

fn mb(bytes: u64) -> String {
    crate::engine::units::bytes(bytes)
}

impl App {
    /// Read the listing again (after a move, a removal or a rename).
    fn relist(&mut self) {
        let all = self.parts.picker.as_ref().is_some_and(|p| p.all);
        if let Some(p) = &mut self.parts.picker {
            p.loading = true;
        }
        self.start_listing(all);
    }

    /// `d`: the selected session to the trash (asked first).
    pub(super) fn ask_trash(&mut self) {
        let Some(p) = &self.parts.picker else { return };
        let Some(s) = p.selected_session() else {
            self.log.status = Some("select a session to move it to the trash".into());
            return;
        };
        if self.doc.path.as_ref() == Some(&s.path) {
            self.log.status = Some("this session is open here: open another one first".into());
            return;
        }
        let (backups, _) = p.backups_of(&s.path, self.outside.now_ms);
        let mut lines = vec![
            format!("{} ({}, {} entries)", s.title(), mb(s.bytes), s.entries),
            format!("{}", s.path.display()),
            "Pi's /resume no longer lists it; u in the trash puts it back.".to_string(),
        ];
        if !backups.is_empty() {
            lines.push(format!("Its {} backup file(s) go with it.", backups.len()));
        }
        lines.extend(self.recent_write_rule(Some(&s.path)));
        lines.push("Move it to the trash?".into());
        self.parts.dialog = Some(Dialog::ConfirmRewrite {
            title: "Move to the trash".into(),
            lines,
            then: FileChore::Trash(s.path.clone()),
        });
    }

    /// `u`: a trashed session back where it was (asked first).
    pub(super) fn ask_restore_trashed(&mut self) {
        let Some(p) = &self.parts.picker else { return };
        let Some(t) = p.selected_trashed() else {
            self.log.status = Some(if p.trash.is_empty() {
                "the trash is empty".into()
            } else {
                "select a session in the trash to put it back".into()
            });
            return;
        };
        self.parts.dialog = Some(Dialog::ConfirmRewrite {
            title: "Restore from the trash".into(),
            lines: vec![
                format!("Back to {}", t.original.display()),
                "Pi lists it again.".into(),
                "Restore it?".into(),
            ],
            then: FileChore::RestoreTrashed(t.name.clone()),
        });
    }

    /// `D`: empty the trash (asked first, with what and how much).
    pub(super) fn ask_empty_trash(&mut self) {
        let Some(p) = &self.parts.picker else { return };
        if p.trash.is_empty() {
            self.log.status = Some("the trash is empty".into());
            return;
        }
        let bytes: u64 = p.trash.iter().map(|t| t.1).sum();
        let n = p.trash.len();
        self.parts.dialog = Some(Dialog::ConfirmRewrite {
            title: "Empty the trash".into(),
            lines: vec![
                format!(
                    "{n} session{} and their backups, {}, removed for good.",
                    if n == 1 { "" } else { "s" },
                    mb(bytes)
                ),
                "This cannot be undone.".into(),
                "Empty the trash?".into(),
            ],
            then: FileChore::EmptyTrash(p.trash.iter().map(|t| t.0.name.clone()).collect()),
        });
    }

    /// `B`: the selected session's backups older than 30 days (never what a restore needs).
    pub(super) fn ask_remove_backups(&mut self) {
        let Some(p) = &self.parts.picker else { return };
        let Some(s) = p.selected_session() else {
            self.log.status = Some("select a session to remove its old backups".into());
            return;
        };
        let (all, old) = p.backups_of(&s.path, self.outside.now_ms);
        if old.is_empty() {
            self.log.status = Some(format!(
                "no backup of this session is older than {OLD_BACKUP_DAYS} days and unneeded ({} in all)",
                all.len()
            ));
            return;
        }
        let bytes: u64 = old.iter().map(|b| b.bytes).sum();
        let mut lines: Vec<String> = old
            .iter()
            .map(|b| {
                format!(
                    "{}  {}  {:.0} d",
                    b.path
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default(),
                    mb(b.bytes),
                    b.age_days(self.outside.now_ms)
                )
            })
            .collect();
        lines.push(format!(
            "{} file(s), {}; what the next restore needs stays.",
            old.len(),
            mb(bytes)
        ));
        lines.push("Remove them?".into());
        self.parts.dialog = Some(Dialog::ConfirmRewrite {
            title: "Remove old backups".into(),
            lines,
            then: FileChore::RemoveBackups(old.iter().map(|b| b.path.clone()).collect()),
        });
    }

    /// `R` in the picker: a name for the selected session.
    pub(super) fn ask_rename_listed(&mut self) {
        let Some(s) = self.parts.picker.as_ref().and_then(|p| p.selected_session()) else {
            self.log.status = Some("select a session to rename it".into());
            return;
        };
        self.parts.dialog = Some(Dialog::Input {
            purpose: InputPurpose::RenameFile(s.path.clone()),
            // Unnamed: bonsai's title is offered; only Enter writes it.
            editor: match (&s.name, &s.made_title) {
                (Some(n), _) => LineEditor::new(n, false),
                (None, Some(t)) => LineEditor::prefilled(t),
                (None, None) => LineEditor::new("", false),
            },
            seen: Seen::of(&self.doc.session),
            note: Some(format!("appends Pi's session_info to {}", s.path.display())),
        });
    }

    /// The name written to a listed session (another than the open one): one appended line,
    /// as every write, after re-reading the file (by the job).
    pub(super) fn rename_listed(&mut self, path: &std::path::Path, name: String) {
        self.chore(Chore::RenameListed {
            path: path.to_path_buf(),
            name,
        });
    }

    /// Yes in one of the confirms above: the job does it (the update touches no file).
    pub(super) fn do_housekeeping(&mut self, chore: FileChore) {
        self.parts.dialog = None;
        self.chore(Chore::Confirmed(chore));
    }

    /// Queue a chore for the jobs.
    pub(super) fn chore(&mut self, chore: Chore) {
        self.start(crate::ui::jobs::ChoreJob {
            chore,
            agent_dir: self.outside.agent_dir.clone(),
        });
    }

    /// What a chore did.
    pub(super) fn on_small_chore_done(&mut self, done: crate::ui::chores::ChoreDone) {
        if !done.message.is_empty() {
            self.log.status = Some(done.message);
        }
        if let (Some(pins), Some(p)) = (done.pins, &mut self.parts.picker) {
            p.set_pins(pins);
        }
        // The preview follows the selection now, not once the listing again is done.
        if let (Some(gone), Some(p)) = (&done.trashed, &mut self.parts.picker) {
            p.drop_session(gone);
        }
        if done.relist {
            self.relist();
        }
        if let Some((f, untouched)) = done.branched {
            self.on_branched_checked(f, untouched);
        }
    }
}

impl crate::ui::runner::Receives<crate::ui::jobs::ChoreJob> for App {
    fn receive(&mut self, done: crate::ui::chores::ChoreDone) {
        self.on_small_chore_done(done)
    }
}
