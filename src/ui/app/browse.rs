//! Reading the session: the tree's keys (Pi's `/tree`), the detail pane, typing a search,
//! "what the model sees", the session picker, and the mouse.

use super::{App, Focus, Overlay};
use crate::engine::view::tree_view::FilterMode;
use crate::ui::action::Action;
use crate::ui::browse_keys::BrowseView;
use crate::ui::component;
use crate::ui::component::Component;
use crate::ui::input::LineEditor;
use crate::ui::keymap::Mode;
use crate::ui::layout::contains;
use crate::ui::picker::Picker;

impl App {
    /// Keys of the tree, the cut preview and the detail pane: the components' own updates
    /// first (the detail pane's scrolling; the tree pane's moves, folds and filters; the
    /// browser's keys on the screen), then what opens a view, a dialog or a write.
    pub(super) fn on_browse(&mut self, action: Action) -> bool {
        let s = self.doc.session.clone();
        let page = self.page();
        let effects = if self.mode() == Mode::Detail {
            self.parts.detail.update(&action, page)
        } else {
            component::ignored()
        };
        let effects = if component::redraws(&effects) {
            effects
        } else {
            self.tree.view.update(&action, (&s, page))
        };
        let effects = if component::redraws(&effects) {
            effects
        } else {
            let view = BrowseView {
                session: &s,
                selected: self.selected(),
                cut: self.selection.cut.as_ref(),
                mark: self.parts.context.mark,
                detail_text: matches!(action, Action::OpenPager)
                    .then(|| self.parts.detail.doc.as_ref().map(|d| d.plain_text()))
                    .flatten(),
                keep_recent: self.selection.keep_recent,
                searching: !self.tree.view.search.is_empty(),
                inside_pi: self.outside.pi_switch_file.is_some() || self.outside.pi_session.is_some(),
            };
            self.screen.update(&action, &view)
        };
        if component::redraws(&effects) {
            return self.apply(effects);
        }
        self.open_from_browser(action)
    }

    /// What the browser opens or starts: views, dialogs, writes, the prune preview's keys.
    fn open_from_browser(&mut self, action: Action) -> bool {
        match action {
            Action::StartSearch => {
                let editor = LineEditor::new(&self.tree.view.search, false);
                self.parts.search = Some(crate::ui::tree_search::TreeSearch(editor))
            }
            Action::TogglePrune => self.toggle_prune(),
            Action::CyclePolicy => {
                self.parts.prune.policy = (self.parts.prune.policy + 1) % super::POLICIES.len();
                self.request_plan();
            }
            Action::TogglePruneForce => {
                self.parts.prune.force = !self.parts.prune.force;
                self.log.status = Some(if self.parts.prune.force {
                    "forced: the minimum is ignored".into()
                } else {
                    "the minimum applies".into()
                });
                self.request_plan();
            }
            Action::ApplyPrune => self.apply_prune(),
            Action::ReviewPlan => self.open_plan_list(),
            Action::UndoLast => self.undo_last_action(),
            a @ (Action::HideEntry | Action::ReplaceEntry | Action::RestoreEntry) => self.edit_selected(&a),
            Action::OpenFills => self.open_fills(),
            Action::OpenAudit => self.open_audit(),
            Action::OpenUsage => self.open_usage(true),
            Action::StartFind => self.start_find(),
            Action::FindNext => return self.find_step(true),
            Action::FindPrev => return self.find_step(false),
            Action::OpenMessages => self.open_messages(),
            Action::CountExact => {
                self.start_exact_all();
                self.exact.all.announce = true;
                self.log.status = Some("counting the exact tokens of every entry…".into());
            }
            Action::KeepRecentEdit => self.open_keep_recent(),
            Action::KeepRecentReset => {
                let k = self.keep_recent_setting();
                self.set_keep_recent(k);
                self.log.status = Some(format!("keepRecentTokens {k} (from the settings)"));
            }
            Action::OpenContext => self.open_context(),
            Action::OpenPicker => self.open_picker(),
            Action::ResumeInPi => match self.doc.path.clone() {
                Some(p) if self.doc.read_only.is_none() => self.resume_in_pi(&p),
                _ => self.log.status = Some("this is not a session file Pi can resume (o picks one)".into()),
            },
            Action::OpenHelp => self.open_help(self.mode()),
            Action::Navigate => self.open_navigate(),
            Action::Compact => self.open_compact(),
            Action::Label => self.open_label(),
            Action::Rename => self.open_rename(),
            Action::Fork => self.fork_or_clone(false),
            Action::Clone => self.fork_or_clone(true),
            Action::ArchiveBranch => self.archive_selected_branch(),
            Action::ToggleArchived => self.toggle_archived(),
            Action::DeleteBranch => self.delete_selected_branch(),
            Action::Export => self.open_export(),
            Action::Quit => self.quit = true,
            _ => return false,
        }
        true
    }

    /// The message log, scrolled to its end.
    fn open_messages(&mut self) {
        let main = self.areas().main;
        let n = crate::ui::messages::lines(&self.log.messages, main.width).len();
        self.screen.help = crate::ui::help::HelpScroll::at_end(n, main.height);
        self.screen.overlay = Overlay::Messages;
    }

    /// What the model sees at the selection, from its top.
    fn open_context(&mut self) {
        self.screen.overlay = Overlay::Context;
        self.parts.context.cursor = 0;
        self.parts.context.scroll = 0;
        self.parts.context.data = None;
        self.request_context();
    }

    /// The cut preview turned on or off: the prune preview's plan goes; the cut's classes are
    /// worked out for the selection, or dropped.
    pub(super) fn cut_preview_changed(&mut self, on: bool) {
        self.parts.prune.plan = None;
        self.parts.prune.marks.clear();
        if on {
            self.selection_changed();
        } else {
            self.selection.cut_classes.clear();
        }
    }

    pub(super) fn set_keep_recent(&mut self, k: u64) {
        self.selection.keep_recent = k;
        if let Some(g) = &mut self.selection.gauge {
            g.keep_recent = k;
        }
        self.log.status = Some(format!("keepRecentTokens {k}"));
        self.selection_changed();
    }

    /// Select `entry`, making it visible first: unfold its ancestors, clear a search that hides
    /// it, and show every entry when only the filter hides it (the status line says so). An
    /// entry Pi never shows (an assistant reply with only tool calls) leaves the selection on
    /// the nearest entry above it.
    pub(super) fn reveal(&mut self, entry: usize) {
        let s = self.doc.session.clone();
        for a in s.path_to(entry) {
            self.tree.view.folded.remove(&a);
        }
        self.tree.view.apply_filter(&s);
        self.tree.view.select_entry(&s, entry);
        if self.selected() != Some(entry) && !self.tree.view.search.is_empty() {
            self.tree.view.set_search(&s, String::new());
            self.tree.view.select_entry(&s, entry);
        }
        let filter = self.tree.view.filter;
        if self.selected() != Some(entry) && filter != FilterMode::All {
            self.tree.view.set_filter(&s, FilterMode::All);
            self.tree.view.select_entry(&s, entry);
            if self.selected() == Some(entry) {
                self.log.status = Some("filter: all (the entry is hidden in the other filters)".into());
                return;
            }
            self.tree.view.set_filter(&s, filter);
            self.tree.view.select_entry(&s, entry);
        }
        if self.selected() != Some(entry) {
            self.log.status = Some(format!(
                "{} is not a row of the tree (Pi hides it); the nearest entry above it is selected",
                s.entries[entry].id
            ));
        }
    }

    /// The help and the message log (their own update: scrolling, or closing).
    pub(super) fn on_help(&mut self, action: Action) -> bool {
        let area = self.areas().main;
        let rows = match self.screen.overlay {
            Overlay::Help(mode) => crate::ui::help::layout(mode, area.width).rows.len(),
            Overlay::Messages => crate::ui::messages::lines(&self.log.messages, area.width).len(),
            _ => return false,
        };
        let effects = self.screen.help.update(&action, (rows, area.height));
        self.apply(effects)
    }

    /// Typing a search: the filter follows every key (the input's own update).
    pub(super) fn on_search(&mut self, action: Action) -> bool {
        let Some(ed) = &mut self.parts.search else { return false };
        let effects = ed.update(&action, ());
        self.apply(effects)
    }

    /// "What the model sees" (its own update; the app builds the view again when asked).
    pub(super) fn on_context(&mut self, action: Action) -> bool {
        let (page, height) = (self.page(), self.context_rows());
        let effects = self.parts.context.update(&action, (page, height));
        self.apply(effects)
    }

    /// The rows the context view's list shows.
    pub(super) fn context_rows(&self) -> usize {
        (self.areas().main.height as usize).saturating_sub(3).max(1)
    }

    pub(super) fn keep_context_cursor_visible(&mut self) {
        let height = self.context_rows();
        self.parts.context.keep_cursor_visible(height);
    }

    pub(super) fn open_picker(&mut self) {
        self.open_picker_listing(false);
    }

    /// The picker, listing this project's sessions or (`all`) every project's.
    pub fn open_picker_listing(&mut self, all: bool) {
        let mut p = Picker::new(self.doc.path.clone(), self.outside.now_ms);
        p.loading = true;
        p.home_dir = Some(
            crate::store::config::session_dir_with(
                &self.outside.agent_dir,
                &self.outside.cwd,
                &self.setup.settings,
                &self.outside.env,
            )
            .0,
        );
        p.user_home = Some(self.outside.env.home.clone());
        self.parts.picker = Some(p);
        self.screen.overlay = Overlay::Picker;
        self.start_listing(all);
    }

    /// List the sessions for the picker: this project's or every project's, or every one
    /// under the folder bonsai was opened on.
    pub(super) fn start_listing(&mut self, all: bool) {
        self.start(crate::ui::jobs::ListJob {
            cwd: self.outside.cwd.clone(),
            settings: self.setup.settings.clone(),
            // Under a folder bonsai was opened on, every project there is listed.
            all: all || self.outside.sessions_root.is_some(),
            agent_dir: self.outside.agent_dir.clone(),
            root: self.outside.sessions_root.clone(),
        });
    }

    /// The picker (its own update), after the keys that open the usage view or a
    /// housekeeping dialog.
    pub(super) fn on_picker(&mut self, action: Action) -> bool {
        let page = self.page() as isize;
        let tree = self
            .parts
            .picker
            .as_ref()
            .is_some_and(|p| p.focus == crate::ui::picker::PickerFocus::Tree);
        if self.on_picker_housekeeping(&action, tree) {
            return true;
        }
        let Some(p) = &mut self.parts.picker else {
            self.screen.overlay = Overlay::None;
            return true;
        };
        let effects = p.update(&action, page);
        self.apply(effects)
    }

    /// The picker's keys for the usage view and housekeeping (asked first, done by jobs).
    fn on_picker_housekeeping(&mut self, action: &Action, tree: bool) -> bool {
        match action {
            Action::OpenUsage => {
                self.open_usage(false);
            }
            Action::TrashSession if tree => {
                self.ask_trash();
            }
            Action::RestoreTrashed if tree => {
                self.ask_restore_trashed();
            }
            // Enter on a trashed session puts it back (on the trash itself it folds, as on a
            // project).
            Action::Select
                if tree
                    && self
                        .parts
                        .picker
                        .as_ref()
                        .is_some_and(|p| p.selected_trashed().is_some()) =>
            {
                self.ask_restore_trashed();
            }
            Action::EmptyTrash if tree => {
                self.ask_empty_trash();
            }
            Action::RemoveOldBackups if tree => {
                self.ask_remove_backups();
            }
            Action::Rename if tree => {
                self.ask_rename_listed();
            }
            _ => return false,
        }
        true
    }

    /// Search the sessions the picker lists (this project's, or every project's) for its query.
    pub(super) fn start_session_search(&mut self, id: u64) {
        let Some(p) = &mut self.parts.picker else { return };
        let files: Vec<std::path::PathBuf> = p
            .sessions
            .iter()
            .filter(|x| x.is_session())
            .map(|x| x.path.clone())
            .collect();
        let Some(s) = &mut p.search else { return };
        s.id = id;
        s.files = (0, files.len());
        let job = crate::ui::jobs::SearchSessionsJob {
            id,
            files,
            query: s.query.text(),
            cancel: s.cancel.clone(),
        };
        self.start_for::<crate::ui::picker::SessionSearch, _>(job);
    }

    /// A click: select a tree row (on its fold marker: fold or unfold), focus the detail
    /// pane, put the context view's cursor or the picker's selection on a row.
    pub(super) fn on_click(&mut self, col: u16, row: u16) -> bool {
        if self.parts.dialog.is_some() {
            return false;
        }
        let a = self.areas();
        match self.screen.overlay {
            Overlay::Help(_) | Overlay::Messages => {
                self.screen.overlay = Overlay::None;
                return true;
            }
            Overlay::Context => {
                if !contains(a.main, col, row) || row < a.main.y + 2 {
                    return false;
                }
                let k = self.parts.context.scroll + (row - a.main.y - 2) as usize;
                let n = self.parts.context.data.as_ref().map(|d| d.aligned.len()).unwrap_or(0);
                if k < n {
                    self.parts.context.cursor = k;
                    return true;
                }
                return false;
            }
            Overlay::Picker => {
                let Some(p) = &mut self.parts.picker else { return false };
                return p.click(a.main, col, row);
            }
            Overlay::Fills | Overlay::Audit | Overlay::PrunePlan | Overlay::Usage => return false,
            Overlay::None => {}
        }
        if let Some(d) = a.detail
            && contains(d, col, row)
        {
            self.screen.focus = Focus::Detail;
            return true;
        }
        if !contains(a.tree, col, row) {
            return false;
        }
        let k = (row - a.tree.y) as usize;
        let Some(fr) = self.tree.frame.rows.get(k) else {
            return false;
        };
        let entry = fr.row.entry;
        let before = self.selected();
        self.screen.focus = Focus::Tree;
        self.tree.view.selected = self.tree.frame.start + k;
        // The fold marker: `⊟`/`⊞` in the connector, or `⊞ ` after the prefix. The body is
        // drawn after the 2-column selection gutter and shifted left by the pan.
        let x = (col - a.tree.x) as usize + self.tree.frame.pan;
        let marker = fr
            .row
            .prefix
            .chars()
            .position(|c| c == '⊟' || c == '⊞')
            .map(|m| m + fr.row.prefix_from)
            .or((!fr.row.fold_marker.is_empty()).then_some(fr.row.prefix_cols));
        if marker.is_some_and(|m| x == m + 2) {
            let s = self.doc.session.clone();
            if self.tree.view.folded.contains(&entry) {
                self.tree.view.unfold_or_down(&s);
            } else if self.tree.view.is_foldable(entry) {
                self.tree.view.fold_or_up(&s);
            }
            self.tree.view.select_entry(&s, entry);
        }
        if self.selected() != before {
            self.selection_changed();
        }
        true
    }

    /// The wheel scrolls what is under the pointer: the tree, the detail pane, the context
    /// view, the picker, a summary preview.
    pub(super) fn on_wheel(&mut self, down: bool, col: u16, row: u16) -> bool {
        const STEP: usize = 3;
        let a = self.areas();
        if let Some(crate::ui::dialog::Dialog::Summary { .. }) = &self.parts.dialog {
            for _ in 0..STEP {
                self.update(if down { Action::Down } else { Action::Up });
            }
            return true;
        }
        if self.parts.dialog.is_some() {
            return false;
        }
        match self.screen.overlay {
            Overlay::Context => {
                for _ in 0..STEP {
                    self.on_context(if down { Action::Down } else { Action::Up });
                }
                return true;
            }
            Overlay::Picker => {
                if let Some(p) = &mut self.parts.picker {
                    p.move_by(if down { STEP as isize } else { -(STEP as isize) });
                }
                return true;
            }
            Overlay::Fills => {
                for _ in 0..STEP {
                    self.on_fills(if down { Action::Down } else { Action::Up });
                }
                return true;
            }
            Overlay::Audit => {
                for _ in 0..STEP {
                    self.on_audit(if down { Action::Down } else { Action::Up });
                }
                return true;
            }
            Overlay::PrunePlan => {
                for _ in 0..STEP {
                    self.on_plan_list(if down { Action::Down } else { Action::Up });
                }
                return true;
            }
            Overlay::Usage => {
                if let Some((u, _)) = &mut self.parts.usage {
                    u.update(if down { &Action::Down } else { &Action::Up }, ());
                }
                return true;
            }
            Overlay::Help(_) | Overlay::Messages => return false,
            Overlay::None => {}
        }
        if let Some(d) = a.detail
            && contains(d, col, row)
        {
            self.parts.detail.scroll = if down {
                self.parts.detail.scroll + STEP
            } else {
                self.parts.detail.scroll.saturating_sub(STEP)
            };
            return true;
        }
        let before = self.selected();
        for _ in 0..STEP {
            if down {
                if self.tree.view.selected + 1 < self.tree.view.visible.len() {
                    self.tree.view.selected += 1;
                }
            } else {
                self.tree.view.selected = self.tree.view.selected.saturating_sub(1);
            }
        }
        if self.selected() != before {
            self.selection_changed();
        }
        true
    }
}
