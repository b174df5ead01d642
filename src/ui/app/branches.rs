//! The branch chores and export from the tree: archive or unarchive the selection's branch
//! (one appended entry, confirmed), show archived branches, delete a branch from the file
//! (the one rewrite: confirmed with what it frees, run as a job), and export the path to the
//! selection as a document.

use super::App;
use crate::engine::edit::plan::{Write, WriteRequest};
use crate::engine::view::archive;
use crate::ui::dialog::{Dialog, InputPurpose, PendingWrite, Seen};
use crate::ui::input::LineEditor;
use crate::ui::jobs;
use crate::ui::runner::Receives;

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Bytes in words, as everywhere: 812 bytes, 14.2 kB, 3.1 MB.
fn size(b: usize) -> String {
    crate::engine::units::bytes(b as u64)
}

/// Why there is no branch to act on at the selection (said after "nothing to archive: ").
#[derive(Debug, thiserror::Error)]
enum NoBranchHere {
    #[error("no entry selected")]
    NothingSelected,
    #[error("the selection is not on a side branch: there is no fork above it")]
    NoForkAbove,
}

impl App {
    /// The branch the selection is in: an archived branch it is inside (shown dimmed), else the
    /// first entry of the side branch it is on (the child of the nearest fork above it).
    fn branch_at_selection(&self) -> Result<(usize, bool), NoBranchHere> {
        let s = &self.doc.session;
        let sel = self.selected().ok_or(NoBranchHere::NothingSelected)?;
        let roots = archive::archived_roots(s);
        if let Some(r) = s.path_to(sel).into_iter().rev().find(|i| roots.contains(i)) {
            return Ok((r, true));
        }
        let mut cur = sel;
        while let Some(p) = s.parent_of(cur) {
            if self.doc.tree.children[p].len() > 1 {
                return Ok((cur, false));
            }
            cur = p;
        }
        Err(NoBranchHere::NoForkAbove)
    }

    /// [`Self::branch_at_selection`] for a write: `None` (and the reason in the status) when
    /// the session is read-only or the selection is on no side branch.
    fn branch_to_write(&mut self, verb: &str) -> Option<(usize, bool)> {
        if !self.writable() {
            return None;
        }
        match self.branch_at_selection() {
            Ok(b) => Some(b),
            Err(e) => {
                self.log.status = Some(format!("nothing to {verb}: {e}"));
                None
            }
        }
    }

    /// The first row's text of the branch at `i` (what the user recognises it by).
    fn branch_text(&self, i: usize) -> String {
        let t = self.tree.view.display_text(&self.doc.session, i).plain();
        crate::engine::view::tree_view::one_line(&t, 60)
    }

    /// A: archive the selection's branch, or unarchive the archived branch it is in.
    pub(super) fn archive_selected_branch(&mut self) {
        let Some((target, archived_now)) = self.branch_to_write("archive") else {
            return;
        };
        let s = self.doc.session.clone();
        if let Err(e) = archive::check(&s, target, !archived_now) {
            self.log.status = Some(e.to_string());
            return;
        }
        let id = s.entries[target].id.to_string();
        let n = archive::subtree(&self.doc.tree, target).len();
        let text = self.branch_text(target);
        let mut lines = vec![format!(
            "{} the branch at {id} ({}): {text}",
            if archived_now { "Unarchive" } else { "Archive" },
            plural(n, "entry", "entries")
        )];
        lines.push(if archived_now {
            "It shows in bonsai's tree again. One entry is appended; u undoes it.".into()
        } else {
            "bonsai's tree hides it (H shows archived branches, dimmed). One entry is appended under the leaf: Pi's leaf and context do not change, and u undoes it.".into()
        });
        lines.push("Write it?".into());
        let seen = Seen::of(&s);
        self.parts.dialog = Some(Dialog::Confirm {
            title: if archived_now {
                "Unarchive a branch"
            } else {
                "Archive a branch"
            }
            .into(),
            lines,
            then: Box::new(PendingWrite {
                request: WriteRequest {
                    write: Write::Archive {
                        target: id.clone(),
                        archived: !archived_now,
                    },
                    seen: Some((seen.len, seen.entries)),
                },
                what: if archived_now {
                    "an unarchive entry".into()
                } else {
                    "an archive entry".into()
                },
                select: Some(id),
            }),
        });
    }

    /// H: archived branches shown dimmed, or hidden.
    pub(super) fn toggle_archived(&mut self) {
        let s = self.doc.session.clone();
        let show = !self.tree.view.show_archived;
        self.tree.view.set_show_archived(&s, show);
        let n = self.tree.view.archived_branches;
        // The status bar's "N archived shown / hidden (H)" says the rest.
        self.log.status =
            (n == 0).then(|| "no archived branches in this session (A archives the selection's branch)".into());
        self.selection_changed();
    }

    /// D: delete the selection's branch from the file, after a confirm that says what it frees.
    pub(super) fn delete_selected_branch(&mut self) {
        let Some((target, _)) = self.branch_to_write("delete") else {
            return;
        };
        let s = self.doc.session.clone();
        let plan = match crate::engine::edit::delete::plan(&s, &self.doc.tree, target) {
            Ok(p) => p,
            Err(e) => {
                self.log.status = Some(format!("not deleted: {e}"));
                return;
            }
        };
        let id = s.entries[target].id.to_string();
        let name = self
            .doc
            .path
            .as_ref()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let mut lines = vec![
            format!(
                "Delete the branch at {id}: {}, {}, ~{} tokens. {}",
                plural(plan.removed.len(), "entry", "entries"),
                size(plan.bytes),
                plan.tokens,
                self.branch_text(target)
            ),
            format!(
                "This rewrites the session file: every other line stays byte for byte. The original is kept as {name}.bak and the removed lines as {name}.deleted-….jsonl; `bonsai restore` puts them back (u does not)."
            ),
        ];
        for r in &plan.notes {
            lines.push(if r.what == "archive entry" {
                "bonsai's archive entry for it stays, naming an entry that is gone (harmless).".to_string()
            } else {
                format!(
                    "The {} {} names {}: it stays, naming an entry that is gone (Pi only records it).",
                    r.what, s.entries[r.from].id, s.entries[r.to].id
                )
            });
        }
        lines.extend(self.recent_write_rule(self.doc.path.as_deref()));
        lines.push("Delete it?".into());
        self.parts.dialog = Some(Dialog::ConfirmRewrite {
            title: "Delete a branch".into(),
            lines,
            then: crate::ui::dialog::FileChore::Delete(id),
        });
    }

    /// Yes in the delete confirm: the rewrite runs as a job.
    pub(super) fn start_delete(&mut self, target: String) {
        let Some(path) = self.doc.path.clone() else { return };
        self.parts.dialog = None;
        self.pending.writes += 1;
        self.log.status = Some(format!("deleting the branch at {target}…"));
        self.start(crate::ui::jobs::DeleteBranchJob {
            path,
            session: self.doc.session.clone(),
            target,
        });
    }

    /// e: the path to the selection as a document; the name typed decides the format.
    pub(super) fn open_export(&mut self) {
        let Some(leaf) = self.selected() else { return };
        let s = &self.doc.session;
        let stem = export_stem(s.session_name(), self.doc.path.as_deref());
        let n = s.path_to(leaf).len();
        self.parts.dialog = Some(Dialog::Input {
            purpose: InputPurpose::Export { leaf },
            editor: LineEditor::new(&format!("{stem}.md"), false),
            seen: Seen::of(s),
            note: Some(format!(
                "the path to {} ({}) · .md Markdown, .html one page, .json entries · in {}",
                s.entries[leaf].id,
                plural(n, "entry", "entries"),
                self.outside.cwd.clone().display()
            )),
        });
    }

    pub(super) fn start_export(&mut self, leaf: usize, name: &str) {
        self.parts.dialog = None;
        let name = name.trim();
        if name.is_empty() {
            self.log.status = Some("nothing exported: no file name".into());
            return;
        }
        let out = self.outside.cwd.clone().join(name);
        self.log.status = Some(format!("exporting to {}…", out.display()));
        self.start(crate::ui::jobs::ExportJob {
            session: self.doc.session.clone(),
            source: self.doc.path.clone(),
            leaf,
            out,
        });
    }

    /// Select the entry `r` names (an id or idx:N), showing it if the filter or an archive
    /// hides it: `bonsai FILE --at ID` opens a search hit there.
    pub(crate) fn select_entry_ref(&mut self, r: &str) {
        let s = self.doc.session.clone();
        let found = match r.strip_prefix("idx:") {
            Some(n) => n.parse::<usize>().ok().filter(|&i| i < s.entries.len()),
            None => s.idx_of(r),
        };
        let Some(i) = found else {
            self.log.status = Some(format!("entry {r} is not in this session"));
            return;
        };
        let mut said = Vec::new();
        if self.tree.view.is_archived(i) && !self.tree.view.show_archived {
            self.tree.view.set_show_archived(&s, true);
            said.push("its branch is archived: archived branches are shown (H hides them)".to_string());
        }
        // Pi's /tree has no row for an assistant message with only tool calls: its call shows on
        // its result's row (`[bash: …]`), the entry after it, not on the nearest row above.
        let row = self.row_for(&s, i);
        if row != i {
            said.push(format!("its tool call shows on its result's row {}", s.entries[row].id));
        }
        self.tree.view.select_entry(&s, row);
        if self.tree.view.selected_entry() != Some(row) {
            // The filter hides it (a label, a model change…): show every entry, and say so.
            let was = self.tree.view.filter;
            self.tree
                .view
                .set_filter(&s, crate::engine::view::tree_view::FilterMode::All);
            self.tree.view.select_entry(&s, row);
            said.push(format!("the {} filter hides it, so the filter is now all", was.name()));
        }
        self.selection_changed();
        let mut status = format!("at {} (line {})", s.entries[i].id, s.entries[i].line);
        for w in said {
            status.push_str(" · ");
            status.push_str(&w);
        }
        self.log.status = Some(status);
    }

    /// The row that stands for entry `i`: itself, or for an assistant message Pi's /tree does
    /// not list (tool calls and no text), the first tool result under it.
    fn row_for(&self, s: &crate::engine::load::session::Session, i: usize) -> usize {
        use crate::engine::load::entry::Role;
        let hidden_call = s.entries[i]
            .message()
            .is_some_and(|m| m.role == Role::Assistant && !m.visible_text)
            && s.leaf() != Some(i);
        if !hidden_call {
            return i;
        }
        (i + 1..s.entries.len())
            .find(|&j| s.parent_of(j) == Some(i) && s.entries[j].message().is_some_and(|m| m.role == Role::ToolResult))
            .unwrap_or(i)
    }
}

/// The branch deleted and the file read again, or why not.
impl Receives<jobs::DeleteBranchJob> for App {
    fn receive(&mut self, r: <jobs::DeleteBranchJob as crate::ui::runner::Job>::Output) {
        self.pending.writes = self.pending.writes.saturating_sub(1);
        match r {
            Ok((d, s)) => {
                self.pending.writes = self.pending.writes.saturating_sub(1);
                self.replace_session(s.clone(), true);
                self.log.status = Some(format!(
                    "deleted {} ({}) · original in {}, removed lines in {} (bonsai restore puts them back; bonsai backups lists and removes old backups){}",
                    plural(d.plan.removed.len(), "entry", "entries"),
                    size(d.plan.bytes),
                    d.backup
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default(),
                    d.removed_file
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default(),
                    if !d.still_open.is_empty() {
                        format!(
                            " · {} still writes to the old file: restart that session",
                            d.still_open.join(", ")
                        )
                    } else if d.carried > 0 {
                        " · lines written to the old file meanwhile were moved over".to_string()
                    } else {
                        String::new()
                    }
                ));
            }
            Err(e) => self.log.status = Some(format!("not deleted: {e}")),
        }
    }
}

/// The document written, or why not.
impl Receives<jobs::ExportJob> for App {
    fn receive(&mut self, r: Result<(std::path::PathBuf, usize), jobs::ExportError>) {
        self.log.status = Some(match r {
            Ok((p, bytes)) => format!("exported to {} ({})", p.display(), size(bytes)),
            Err(e) => format!("not exported: {e}"),
        });
    }
}

/// A file name from the session's name (or its file's), safe in any shell.
fn export_stem(name: Option<&str>, path: Option<&std::path::Path>) -> String {
    let from = name.map(str::to_string).unwrap_or_else(|| {
        path.and_then(|p| p.file_stem())
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "session".into())
    });
    let mut out = String::new();
    for c in from.chars() {
        if c.is_alphanumeric() || c == '.' || c == '_' {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches('-').chars().take(60).collect();
    if out.is_empty() { "session".into() } else { out }
}

#[cfg(test)]
mod tests {
    use crate::ui::dialog::Dialog;
    use crate::ui::tests::{app_for, ch, ctrl, key, own, render, typed};
    use crossterm::event::KeyCode;

    fn copy_of(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::copy(own(name), &p).unwrap();
        (dir, p)
    }

    /// Last written a minute ago: Pi is not running it.
    fn quiet(p: &std::path::Path) {
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    fn select_id(a: &mut super::App, id: &str) {
        let s = a.doc.session.clone();
        a.tree.view.select_entry(&s, s.idx_of(id).unwrap());
        a.selection_changed();
        a.run_jobs_now();
    }

    /// Under `/bonsai` (Pi waits on this very file) the delete confirm does not name the
    /// "written in the last 10 s" rule: it is not applied to the file Pi waits on. Another file
    /// keeps it.
    #[test]
    fn the_delete_confirm_inside_pi_names_no_rule_it_does_not_apply() {
        let (_d, p) = copy_of("tour.jsonl");
        let lines_with = |pi_session: Option<std::path::PathBuf>| {
            let base = app_for(&p);
            let mut outside = base.outside();
            outside.pi_session = pi_session;
            let mut a = super::App::with_outside(
                base.doc.session.clone(),
                Some(p.clone()),
                base.setup.settings.clone(),
                (*base.setup.registry).clone(),
                outside,
                false,
            );
            select_id(&mut a, "2e33ee61");
            a.handle_key(ch('D'));
            let Some(Dialog::ConfirmRewrite { lines, .. }) = &a.parts.dialog else {
                panic!("no delete confirm: {:?}", a.log.status)
            };
            lines.join("\n")
        };
        let inside = lines_with(Some(p.clone()));
        assert!(!inside.contains("10 s"), "{inside}");
        let elsewhere = lines_with(Some(p.with_file_name("other.jsonl")));
        assert!(elsewhere.contains("written in the last 10 s"), "{elsewhere}");
    }

    /// The tour's dead branch (a branch summary, then "Instead of fixing tests…": 5 entries;
    /// the selection is inside it, A and D act on the whole side branch): A asks, y hides it,
    /// H shows it dimmed and tagged, u brings it back; D asks with what it frees, refuses a
    /// file written just now, and deletes once the file is quiet.
    #[test]
    fn archive_toggle_and_delete_confirm() {
        let (_d, p) = copy_of("tour.jsonl");
        let mut a = app_for(&p);
        select_id(&mut a, "2e33ee61");
        a.handle_key(ch('A'));
        insta::assert_snapshot!("archive_confirm", render(&mut a, 100, 30));
        a.handle_key(ch('y'));
        a.run_jobs_now();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(r#""customType":"bonsai.archive""#));
        let screen = render(&mut a, 100, 30);
        assert!(!screen.contains("Instead of fixing tests"), "{screen}");
        insta::assert_snapshot!("archived_hidden", screen);
        a.handle_key(ch('H'));
        let screen = render(&mut a, 100, 46);
        assert!(screen.contains("[archived] [branch summary]"), "{screen}");
        assert!(screen.contains("Instead of fixing tests"), "{screen}");
        insta::assert_snapshot!("archived_shown", screen);
        // On the archived branch, D asks with the entry count, bytes and tokens.
        select_id(&mut a, "2e33ee61");
        a.handle_key(ch('D'));
        let Some(Dialog::ConfirmRewrite { lines, .. }) = &a.parts.dialog else {
            panic!("no delete confirm: {:?}", a.log.status)
        };
        assert!(
            lines[0].starts_with("Delete the branch at 73b50f69: 5 entries, "),
            "{lines:?}"
        );
        insta::assert_snapshot!("delete_confirm", render(&mut a, 100, 30));
        // Just written by someone else (bonsai's own archive entry alone is no sign of Pi):
        // refused, nothing changed.
        let before = std::fs::read(&p).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(std::time::SystemTime::now())
            .unwrap();
        a.handle_key(ch('y'));
        a.run_jobs_now();
        assert!(
            a.log.status.as_deref().unwrap_or("").contains("Pi may be running"),
            "{:?}",
            a.log.status
        );
        assert_eq!(std::fs::read(&p).unwrap(), before);
        // Quiet: deleted, the session reloaded without the branch.
        quiet(&p);
        a.handle_key(ch('D'));
        a.handle_key(ch('y'));
        a.run_jobs_now();
        let status = a.log.status.clone().unwrap_or_default();
        assert!(status.starts_with("deleted 5 entries ("), "{status}");
        assert!(a.doc.session.idx_of("2e33ee61").is_none());
        assert!(a.doc.session.idx_of("73b50f69").is_none());
        assert_eq!(a.tree.view.archived_branches, 0, "the archived branch is gone");
        assert!(p.with_file_name("tour.jsonl.bak").exists());
        assert_eq!(std::fs::read(p.with_file_name("tour.jsonl.bak")).unwrap(), before);
        // Issue 21, item 2: the archive entry left behind points into the deleted branch; undo
        // goes past it (nothing to undo there) instead of blocking on it for good.
        a.handle_key(ch('u'));
        let st = a.log.status.clone().unwrap_or_default();
        assert!(!st.contains("does not say where it came from"), "{st}");
        assert!(st.contains("nothing of bonsai's left to undo"), "{st}");
        // The leaf's own branch: refused with the reason.
        select_id(&mut a, "7d7709f7");
        a.handle_key(ch('A'));
        assert!(a.parts.dialog.is_none());
        assert!(
            a.log.status.as_deref().unwrap_or("").contains("holds the leaf"),
            "{:?}",
            a.log.status
        );
    }

    #[test]
    fn undo_unarchives() {
        let (_d, p) = copy_of("tour.jsonl");
        let mut a = app_for(&p);
        let rows = a.tree.view.visible.len();
        select_id(&mut a, "2e33ee61");
        a.handle_key(ch('A'));
        a.handle_key(ch('y'));
        a.run_jobs_now();
        assert_eq!(a.tree.view.archived_branches, 1);
        assert_eq!(a.tree.view.visible.len(), rows - 5);
        a.handle_key(ch('u'));
        a.handle_key(ch('y'));
        a.run_jobs_now();
        assert_eq!(a.tree.view.archived_branches, 0);
        assert_eq!(a.tree.view.visible.len(), rows, "every row is back");
    }

    #[test]
    fn e_exports_the_path_to_the_selection_by_the_name_typed() {
        let (d, p) = copy_of("tour.jsonl");
        let mut a = app_for(&p);
        select_id(&mut a, "2e33ee61");
        a.handle_key(ch('e'));
        let Some(Dialog::Input { editor, .. }) = &a.parts.dialog else {
            panic!("no export dialog")
        };
        assert_eq!(editor.text(), "ledger-fix-rounding.md");
        // An absolute name goes where it says; .html makes the page.
        a.handle_key(ctrl('u'));
        let out = d.path().join("path.html");
        typed(&mut a, out.to_str().unwrap());
        a.handle_key(key(KeyCode::Enter));
        a.run_jobs_now();
        let status = a.log.status.clone().unwrap_or_default();
        assert!(status.starts_with("exported to "), "{status}");
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.starts_with("<!doctype html>"));
        assert!(html.contains("Instead of fixing tests"));
        assert!(
            !html.contains("Also list the largest postings"),
            "only the path to the selection"
        );
        // The same name again: not replaced.
        a.handle_key(ch('e'));
        a.handle_key(ctrl('u'));
        typed(&mut a, out.to_str().unwrap());
        a.handle_key(key(KeyCode::Enter));
        a.run_jobs_now();
        assert!(
            a.log.status.as_deref().unwrap_or("").contains("exists"),
            "{:?}",
            a.log.status
        );
    }

    #[test]
    fn at_selects_an_entry_even_one_the_filter_hides() {
        let (_d, p) = copy_of("tour.jsonl");
        let mut a = app_for(&p);
        a.update(crate::ui::action::Action::SelectEntry("cf39b9f8".into()));
        assert_eq!(a.selected(), a.doc.session.idx_of("cf39b9f8"));
        assert_eq!(a.tree.view.filter, crate::engine::view::tree_view::FilterMode::Default);
        // A label entry: hidden by the default filter, so every entry is shown.
        a.update(crate::ui::action::Action::SelectEntry("925fc4b0".into()));
        assert_eq!(a.selected(), a.doc.session.idx_of("925fc4b0"));
        assert_eq!(a.tree.view.filter, crate::engine::view::tree_view::FilterMode::All);
        a.update(crate::ui::action::Action::SelectEntry("nosuch".into()));
        assert_eq!(a.log.status.as_deref(), Some("entry nosuch is not in this session"));
        assert_eq!(a.selected(), a.doc.session.idx_of("925fc4b0"), "the selection stays");
    }

    #[test]
    fn export_names_are_safe() {
        assert_eq!(
            super::export_stem(Some("ledger: fix rounding"), None),
            "ledger-fix-rounding"
        );
        assert_eq!(
            super::export_stem(None, Some(std::path::Path::new("/x/2026-11-20_abc.jsonl"))),
            "2026-11-20_abc"
        );
        assert_eq!(super::export_stem(Some("///"), None), "session");
    }
}
