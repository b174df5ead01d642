//! Pruning in the TUI: the preview (a plan for the selection taken as a leaf, as a job on big
//! sessions), Tab through the policies, `!` to ignore the minimum, `a` to write the plan as
//! context edits after a confirm, `u` to undo; hide, replace and restore the selected entry;
//! "what fills the context". Every write goes through the confirm dialog and the write job.

use super::{App, EditorFor, Overlay, POLICIES, Terminal};
use crate::engine::edit::plan::WriteRequest;
use crate::engine::edit::prune::{self, Edit, Plan, thousands};
use crate::engine::view::context;
use crate::ui::action::Action;
use crate::ui::component::Component;
use crate::ui::dialog::{Dialog, PendingWrite, Seen};
use std::sync::Arc;

/// Said once per run, in the first confirm of an edit.
const OLD_PI: &str = "Pi 0.87 and newer apply context edits; older Pi keeps them in the file and ignores them.";

impl App {
    pub(super) fn toggle_prune(&mut self) {
        self.screen.prune_preview = !self.screen.prune_preview;
        if self.screen.prune_preview {
            self.screen.cut_preview = false;
            self.selection.cut_classes.clear();
            self.request_plan();
        } else {
            self.parts.prune.plan = None;
            self.parts.prune.marks.clear();
        }
    }

    /// The gauge's zone at the selection (green when the window is unknown).
    fn gauge_zone(&self) -> prune::Zone {
        let Some(g) = &self.selection.gauge else {
            return prune::Zone::Green;
        };
        match g.threshold() {
            Some(t) => prune::zone_of(g.tokens.tokens, t, self.screen.zones),
            None => prune::Zone::Green,
        }
    }

    /// Plan for the selection with the current policy (a job on large sessions).
    pub(super) fn request_plan(&mut self) {
        let Some(leaf) = self.selected_leaf() else {
            self.parts.prune.plan = None;
            return;
        };
        self.parts.prune.generation += 1;
        let (_, policy, compat) = POLICIES[self.parts.prune.policy % POLICIES.len()];
        let mut settings = self.setup.settings.prune_settings();
        settings.compat = compat;
        let job = crate::ui::jobs::PruneJob {
            generation: self.parts.prune.generation,
            session: self.doc.session.clone(),
            leaf,
            policy,
            settings,
            force: self.parts.prune.force,
            zone: self.gauge_zone(),
        };
        if self.doc.session.entries.len() > super::LARGE_SESSION {
            self.start(job);
        } else {
            self.run_in_place(job);
        }
    }

    pub(super) fn on_plan(&mut self, generation: u64, plan: Plan) {
        if generation != self.parts.prune.generation || !self.screen.prune_preview {
            return;
        }
        self.parts.prune.marks = plan.items.iter().enumerate().map(|(k, i)| (i.entry, k)).collect();
        self.parts.prune.plan = Some(Arc::new(plan));
    }

    /// The confirm before writing a plan (or an undo): what it writes and saves.
    pub(super) fn confirm_plan(&mut self, plan: &Plan, undoes: Option<String>, title: &str) {
        if !self.writable() {
            return;
        }
        if plan.is_empty() {
            self.log.status = Some(format!("nothing to write: {}", plan.note));
            return;
        }
        let s = self.doc.session.clone();
        let n = plan.edits().count();
        let mut lines = vec![format!(
            "{n} context edit{} at {}: {}.",
            if n == 1 { "" } else { "s" },
            s.entries[plan.leaf].id,
            plan.note
        )];
        // One basis (Pi's per-message estimate) for before, after and the change; Pi's own
        // figure beside it when it differs (`x` and `X` alike: a restore adds, and says so).
        lines.push(format!(
            "By Pi's estimate the context goes {} → {} tokens ({} by the edit{}).",
            thousands(plan.estimate_now()),
            thousands(plan.tokens_after),
            prune::signed_tokens(plan.change()),
            if n == 1 { "" } else { "s" }
        ));
        let pis = plan.tokens_now.round() as u64;
        if pis != plan.estimate_now() {
            lines.push(format!(
                "Pi's figure now is {} (the last reply's usage): it counts the edits from its next call.",
                thousands(pis)
            ));
        }
        lines.push("History stays as it is: the edits change what the model gets from now on; u undoes them.".into());
        if let Some((short, _)) = self.branch_note(plan.leaf) {
            lines.push(format!("{short}."));
        }
        if !self.parts.prune.told_old_pi {
            lines.push(OLD_PI.into());
            self.parts.prune.told_old_pi = true;
        }
        lines.push("Write them?".into());
        let seen = Seen::of(&s);
        self.parts.dialog = Some(Dialog::Confirm {
            title: title.into(),
            lines,
            then: Box::new(PendingWrite {
                request: WriteRequest {
                    write: plan.to_write(&s, undoes.as_deref()),
                    seen: Some((seen.len, seen.entries)),
                },
                what: format!("{n} context edit{}", if n == 1 { "" } else { "s" }),
                // An edit changes no row: the selection stays where it is.
                select: self.selected().map(|i| s.entries[i].id.to_string()),
            }),
        });
    }

    /// r in the prune preview: the plan as a list of its own, fixed while it is open.
    pub(super) fn open_plan_list(&mut self) {
        let Some(plan) = self.parts.prune.plan.clone() else {
            self.log.status = Some("the plan is still being made; try again in a moment".into());
            return;
        };
        let rows: Vec<usize> = (0..plan.items.len())
            .filter(|&k| plan.items[k].change.writes())
            .collect();
        if rows.is_empty() {
            self.log.status = Some(format!("nothing to review: {}", plan.note));
            return;
        }
        self.parts.prune.list = Some(super::PlanList {
            plan,
            rows,
            cursor: 0,
            left_out: Default::default(),
        });
        self.screen.overlay = Overlay::PrunePlan;
    }

    /// Keys in the plan list (its own update).
    pub(super) fn on_plan_list(&mut self, action: Action) -> bool {
        let page = self.areas().main.height.saturating_sub(6).max(1) as usize;
        let Some(l) = &mut self.parts.prune.list else {
            return false;
        };
        let effects = l.update(&action, page);
        self.apply(effects)
    }

    pub(super) fn apply_prune(&mut self) {
        let Some(p) = self.parts.prune.plan.clone() else {
            self.log.status = Some("the plan is still being made; try again in a moment".into());
            return;
        };
        // Red: the edits (if any), then the compaction dialog keeping from the proposed entry.
        if let Some(from) = p.compact_from {
            let id = self.doc.session.entries[from].id.to_string();
            if p.is_empty() {
                return self.open_compact_keeping(&id);
            }
            self.parts.prune.compact_after = Some(id);
        }
        self.confirm_plan(&p, None, "Write the pruning as context edits");
        if let (Some(Dialog::Confirm { lines, then, .. }), Some(id)) =
            (&mut self.parts.dialog, &self.parts.prune.compact_after)
        {
            lines.insert(
                lines.len() - 1,
                format!("Then the compaction dialog opens, keeping from {id}."),
            );
            // The compaction goes under the edits: select the new leaf after writing them.
            then.select = None;
        }
    }

    /// Open the compaction dialog at the selection with keepRecentTokens set so that Pi's cut
    /// keeps from `id` (the tokens from it to the leaf, which puts the cut on it).
    pub(super) fn open_compact_keeping(&mut self, id: &str) {
        let s = self.doc.session.clone();
        let (Some(leaf), Some(from)) = (self.selected_leaf(), s.idx_of(id)) else {
            return;
        };
        let path = s.path_to(leaf);
        let Some(at) = path.iter().position(|&i| i == from) else {
            self.log.status = Some(format!("{id} is not on this branch any more"));
            return;
        };
        let after: std::collections::HashSet<usize> = path[at..].iter().copied().collect();
        let proj = context::project(&s, &path);
        let keep: u64 = proj
            .messages()
            .filter(|m| after.contains(&m.source))
            .map(|m| m.est_tokens)
            .sum();
        self.screen.prune_preview = false;
        self.parts.prune.plan = None;
        self.parts.prune.marks.clear();
        self.selection.keep_recent = keep;
        self.selection_changed();
        self.log.status = Some(format!("keepRecentTokens {keep}: the cut keeps from {id}"));
        self.open_compact();
    }

    /// Hide, restore, or (through `$EDITOR`) replace the selected entry in Pi's context.
    pub(super) fn edit_selected(&mut self, action: &Action) {
        let Some(target) = self.selected() else { return };
        let s = self.doc.session.clone();
        let Some(leaf) = s.leaf() else { return };
        let edit = match action {
            Action::HideEntry => Edit::Hide,
            Action::RestoreEntry => Edit::Restore,
            _ => {
                // Check it can be edited before opening the editor on its current text.
                if let Err(e) = prune::edit(&s, leaf, target, &Edit::Replace(String::new())) {
                    self.log.status = Some(e.to_string());
                    return;
                }
                if !self.writable() {
                    return;
                }
                let text = self.model_text(target);
                self.parts.editor_for = EditorFor::Replacement { target };
                self.effects.push(Terminal::EditSummary(text));
                return;
            }
        };
        match prune::edit(&s, leaf, target, &edit) {
            Ok(plan) => {
                let title = match edit {
                    Edit::Hide => "Hide this entry from the model's context",
                    _ => "Restore this entry's original content",
                };
                self.confirm_plan(&plan, None, title)
            }
            Err(e) => self.log.status = Some(e.to_string()),
        }
    }

    /// The text the model gets from an entry now (its edit applied), to edit.
    fn model_text(&self, target: usize) -> String {
        let s = &self.doc.session;
        let Some(leaf) = s.leaf() else { return String::new() };
        let proj = context::project(s, &s.path_to(leaf));
        proj.messages()
            .find(|m| m.source == target && m.part == context::Part::Main)
            .map(|m| {
                let v = context::materialize(s, m);
                context::content_text(v.get("content"), "\n")
            })
            .unwrap_or_default()
    }

    /// `$EDITOR` came back with the replacement text for `target`.
    pub(super) fn on_replacement_edited(&mut self, target: usize, text: Option<String>) {
        self.parts.editor_for = EditorFor::Summary;
        let Some(text) = text else {
            self.log.status = Some("the editor did not finish; nothing written".into());
            return;
        };
        if text == self.model_text(target) {
            self.log.status = Some("unchanged; nothing written".into());
            return;
        }
        let s = self.doc.session.clone();
        let Some(leaf) = s.leaf() else { return };
        match prune::edit(&s, leaf, target, &Edit::Replace(text)) {
            Ok(plan) => self.confirm_plan(&plan, None, "Replace this entry's text in the model's context"),
            Err(e) => self.log.status = Some(e.to_string()),
        }
    }

    pub(super) fn open_fills(&mut self) {
        let Some(leaf) = self.selected_leaf() else { return };
        self.screen.overlay = Overlay::Fills;
        self.parts.fills.cursor = 0;
        self.parts.fills.scroll = 0;
        self.parts.fills.data = None;
        self.parts.fills.generation += 1;
        let encoding = self.selection_encoding();
        self.start_for::<super::FillsState, _>(crate::ui::jobs::FillsJob {
            generation: self.parts.fills.generation,
            session: self.doc.session.clone(),
            leaf,
            encoding,
            cache: self.exact.cache.clone(),
        });
    }

    pub fn fills_data(&self) -> Option<&crate::ui::fills::FillsData> {
        self.parts.fills.data.as_deref()
    }

    /// What fills the context (its own update).
    pub(super) fn on_fills(&mut self, action: Action) -> bool {
        let effects = self.parts.fills.update(&action, ());
        self.apply(effects)
    }
}

impl crate::ui::runner::Receives<crate::ui::jobs::PruneJob> for App {
    fn receive(&mut self, r: crate::ui::jobs::PrunePlanned) {
        self.on_plan(r.generation, *r.plan)
    }
}
