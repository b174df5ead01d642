//! Everything before and after a write: opening the dialogs (navigate, compact, label, rename,
//! keepRecentTokens, confirm; their keys are in `dialogs`), summaries (offline or a model's, as
//! jobs), the write itself (a job that re-reads the file and decides again), and fork/clone.
//!
//! A write is decided on what the user saw when its dialog opened (`Seen`): if Pi appended
//! since, it is refused, never written on a stale leaf. A write under an entry that is not the
//! file's last one starts a branch: the user is told what it leaves behind and asked.

use super::pending::AfterResolve;
use super::{App, plural};
use crate::engine::compaction::cut::{CompactionSettings, NoCompaction};
use crate::engine::compaction::slices::SliceParams;
use crate::engine::compaction::strategy::Strategy;
use crate::engine::compaction::summary::Summary;
use crate::engine::edit::entries;
use crate::engine::edit::plan::{self, Refusal, Write, WriteRequest};
use crate::engine::load::entry::Role;
use crate::engine::view::context;
use crate::ui::dialog::{
    Dialog, FileChore, InputPurpose, NavInfo, PendingWrite, PlannedCompaction, Seen, SummaryFor, SummaryTab,
    TabFigures, TabState,
};
use crate::ui::input::LineEditor;
use crate::ui::jobs::SummaryKind;
use crate::ui::runner::{Job, Receives};

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
    fn changed_since(&self, seen: Seen) -> Option<Refusal> {
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

    fn budget(&self) -> i64 {
        let w = self.selection.gauge.as_ref().and_then(|g| g.window);
        crate::engine::compaction::branch_summary::token_budget(w, self.setup.settings.branch_reserve_tokens())
    }

    fn compaction_settings(&self) -> CompactionSettings {
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

    fn id_of(&self, i: usize) -> String {
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

    /// `c`: plan the compaction at the selected leaf (a job on large sessions); the
    /// instructions are asked for when the plan is there.
    pub(super) fn open_compact(&mut self) {
        let Some(leaf) = self.selected_leaf() else { return };
        if !self.writable() {
            return;
        }
        let id = self.next_job_id();
        self.pending.planning = Some((id, Seen::of(&self.doc.session)));
        let job = crate::ui::jobs::PlanCompactionJob {
            id,
            session: self.doc.session.clone(),
            leaf,
            settings: self.compaction_settings(),
        };
        self.run_or_queue(job, true);
    }

    /// The plan for `c` is there: say why there is nothing to compact before any instructions
    /// or strategies are asked for (issue 21, item 12), else ask for the instructions.
    pub(super) fn on_compaction_planned(
        &mut self,
        id: u64,
        leaf: usize,
        plan: Result<crate::engine::compaction::cut::CompactionPlan, NoCompaction>,
    ) {
        let seen = match self.pending.planning.take() {
            Some((want, seen)) if want == id => seen,
            other => return self.pending.planning = other,
        };
        if let Some(r) = self.changed_since(seen) {
            self.log.status = Some(r.to_string());
            return;
        }
        let plan = match plan {
            Ok(p) => std::sync::Arc::new(p),
            Err(e) => {
                self.log.status = Some(no_compaction_in_tui_words(e, self.selection.keep_recent));
                return;
            }
        };
        let note = self.branch_note(leaf).map(|(short, _)| short);
        self.parts.dialog = Some(Dialog::Input {
            purpose: InputPurpose::CompactInstructions {
                at: PlannedCompaction { leaf, plan },
            },
            editor: LineEditor::new("", true),
            seen,
            note,
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
            let text = s.session_name().unwrap_or("").to_string();
            self.parts.dialog = Some(Dialog::Input {
                purpose: InputPurpose::Rename,
                editor: LineEditor::new(&text, false),
                seen: Seen::of(s),
                note: None,
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

    /// Find the summary model for the session at `leaf`, then go on with `then`: at once
    /// when a test set the summarizer or forbade models, else in a job (finding the key reads
    /// Pi's `auth.json` and the environment, which the update never does).
    fn with_summarizer(&mut self, leaf: usize, then: AfterResolve) {
        if let Some(s) = &self.setup.summarizer_override {
            let s = s.clone();
            return self.go_on(Some(s), then);
        }
        if self.setup.force_offline {
            return self.go_on(None, then);
        }
        let s = &self.doc.session;
        let (_, model) = context::path_settings(s, &s.path_to(leaf));
        let session_model = model.and_then(|(p, m)| Some((p?, m?)));
        let id = self.next_job_id();
        self.pending.resolving = Some((id, then));
        self.start(crate::ui::jobs::ResolveSummarizerJob {
            id,
            registry: self.setup.registry.clone(),
            agent_dir: self.outside.agent_dir.clone(),
            wanted: self.setup.settings.summary_model(),
            session_model,
        });
    }

    /// The summary model was looked for (`None`: no model or no key).
    pub(super) fn on_summarizer_resolved(&mut self, id: u64, summarizer: Option<crate::llm::summarize::Summarizer>) {
        match self.pending.resolving.take() {
            Some((want, then)) if want == id => self.go_on(summarizer, then),
            other => self.pending.resolving = other,
        }
    }

    fn go_on(&mut self, summarizer: Option<crate::llm::summarize::Summarizer>, then: AfterResolve) {
        match then {
            AfterResolve::Compact { at, focus, seen } => self.compact_with(summarizer, at, focus, seen),
            AfterResolve::Strategies {
                at,
                focus,
                strategies,
                seen,
            } => self.start_compaction_with(summarizer, at, focus, strategies, seen),
            AfterResolve::BranchSummary { kind, purpose, seen } => {
                self.start_summary_with(summarizer, *kind, purpose, seen)
            }
        }
    }

    /// Start a branch summary (a model's when a key is configured, else the offline one) and
    /// show it streaming in its dialog (one tab).
    fn start_summary(&mut self, leaf: usize, kind: SummaryKind, purpose: SummaryFor, seen: Seen) {
        self.with_summarizer(
            leaf,
            AfterResolve::BranchSummary {
                kind: Box::new(kind),
                purpose,
                seen,
            },
        );
    }

    fn start_summary_with(
        &mut self,
        summarizer: Option<crate::llm::summarize::Summarizer>,
        kind: SummaryKind,
        purpose: SummaryFor,
        seen: Seen,
    ) {
        let id = self.next_job_id();
        let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let by = summarizer
            .as_ref()
            .map(|m| format!("{}/{}", m.model.provider, m.model.id))
            .unwrap_or_else(|| "offline".into());
        let offline = summarizer.is_none();
        self.pending.summary = Some((id, cancel.clone()));
        let job = crate::ui::jobs::SummaryJob {
            id,
            session: self.doc.session.clone(),
            summarizer: summarizer.map(Box::new),
            kind,
            cancel,
        };
        self.parts.dialog = Some(Dialog::Summary {
            purpose,
            seen,
            tabs: vec![SummaryTab::new(&by, self.outside.clock)],
            by,
            active: 0,
            job: id,
        });
        self.run_or_queue(job, offline);
    }

    /// Work that needs no model (an offline summary, a compaction's plan) is instant on a
    /// small session: run the job's own code at once; anything else is queued.
    fn run_or_queue<J: Job>(&mut self, job: J, offline: bool)
    where
        App: Receives<J>,
    {
        if offline && self.doc.session.entries.len() <= super::LARGE_SESSION {
            self.run_in_place(job);
        } else {
            self.start(job);
        }
    }

    /// The compaction at `leaf` written by each of `strategies` side by side, one tab each.
    pub(super) fn start_compaction(
        &mut self,
        at: PlannedCompaction,
        focus: Option<String>,
        strategies: Vec<Strategy>,
        seen: Seen,
    ) {
        // Only a model's strategies need the model looked up; the offline one starts now.
        if !strategies.iter().any(|s| s.is_llm()) {
            return self.start_compaction_with(None, at, focus, strategies, seen);
        }
        let leaf = at.leaf;
        let then = AfterResolve::Strategies {
            at,
            focus,
            strategies,
            seen,
        };
        self.with_summarizer(leaf, then);
    }

    fn start_compaction_with(
        &mut self,
        summarizer: Option<crate::llm::summarize::Summarizer>,
        at: PlannedCompaction,
        focus: Option<String>,
        strategies: Vec<Strategy>,
        seen: Seen,
    ) {
        if let Some(r) = self.changed_since(seen) {
            self.log.status = Some(r.to_string());
            return;
        }
        let PlannedCompaction { leaf, plan } = at;
        let settings = plan.settings;
        let first_kept = self.id_of(plan.first_kept_entry);
        let thinking = context::path_settings(&self.doc.session, &self.doc.session.path_to(leaf)).0;
        let by = summarizer
            .as_ref()
            .map(|m| format!("{}/{}", m.model.provider, m.model.id))
            .unwrap_or_else(|| "offline".into());
        let offline = summarizer.is_none();
        let id = self.next_job_id();
        let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.pending.summary = Some((id, cancel.clone()));
        self.parts.dialog = Some(Dialog::Summary {
            purpose: SummaryFor::Compaction {
                leaf,
                first_kept,
                settings,
            },
            seen,
            tabs: strategies
                .iter()
                .map(|s| SummaryTab::new(s.name(), self.outside.clock))
                .collect(),
            by,
            active: 0,
            job: id,
        });
        let job = crate::ui::jobs::SummaryJob {
            id,
            session: self.doc.session.clone(),
            summarizer: summarizer.map(Box::new),
            kind: SummaryKind::Compaction(crate::ui::jobs::CompactionSummary {
                plan,
                focus,
                thinking,
                strategies,
                params: SliceParams::default(),
            }),
            cancel,
        };
        self.run_or_queue(job, offline);
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

    /// Summarize the branch left for `target` (with the user's instructions), then navigate.
    pub(super) fn summarize_branch(&mut self, target: usize, focus: Option<String>, seen: Seen) {
        let s = self.doc.session.clone();
        let Some(old) = s.leaf() else { return };
        let budget = self.budget();
        let nav = entries::plan_navigation(&s, Some(old), target, budget);
        if nav.branch.entries.is_empty() {
            // Nothing is left behind: Pi writes no summary either.
            self.write_navigation(target, None, seen);
            return;
        }
        self.start_summary(
            old,
            SummaryKind::Branch(crate::ui::jobs::BranchSummary {
                nav: Box::new(nav),
                focus,
                replace: false,
            }),
            SummaryFor::Branch { target, budget },
            seen,
        );
    }

    /// After the instructions: with a model, choose the strategies to run side by side;
    /// without one, the offline summary.
    fn compact(&mut self, at: PlannedCompaction, instructions: String, seen: Seen) {
        let focus = Some(instructions).filter(|t| !t.trim().is_empty());
        let leaf = at.leaf;
        self.with_summarizer(leaf, AfterResolve::Compact { at, focus, seen });
    }

    fn compact_with(
        &mut self,
        summarizer: Option<crate::llm::summarize::Summarizer>,
        at: PlannedCompaction,
        focus: Option<String>,
        seen: Seen,
    ) {
        match summarizer {
            Some(m) => {
                let checked = Strategy::ALL
                    .iter()
                    .map(|s| self.setup.strategy_choice.contains(s))
                    .collect();
                self.parts.dialog = Some(Dialog::Strategies {
                    at,
                    focus,
                    seen,
                    cursor: 0,
                    checked,
                    by: format!("{}/{}", m.model.provider, m.model.id),
                });
            }
            None => self.start_compaction(at, focus, vec![Strategy::Offline], seen),
        }
    }

    /// The summary dialog's active draft if it can be written (not failed, not empty): what it
    /// is for, what the dialog was decided on, and the summary. Says why not otherwise.
    fn writable_draft(&mut self) -> Option<(SummaryFor, Seen, Summary)> {
        let Some(Dialog::Summary {
            purpose,
            seen,
            tabs,
            active,
            ..
        }) = &self.parts.dialog
        else {
            return None;
        };
        let tab = tabs.get(*active)?;
        let why = match &tab.state {
            TabState::Failed(e) => Some(format!("{} failed ({e}): pick another tab, or d to discard", tab.name)),
            _ if tab.text.trim().is_empty() => Some(format!("{}'s summary is empty: nothing to write", tab.name)),
            _ => None,
        };
        if let Some(w) = why {
            self.log.status = Some(w);
            return None;
        }
        let summary = Summary {
            text: tab.text.clone(),
            usage: tab.usage.clone(),
        };
        Some((purpose.clone(), *seen, summary))
    }

    /// ctrl+s on a finished summary: a branch summary navigates with it; a compaction is
    /// written, refused if Pi appended since the dialog opened (the drafts are kept), asked
    /// first if it starts a branch.
    pub(super) fn accept_summary(&mut self) {
        let Some((purpose, seen, summary)) = self.writable_draft() else {
            return;
        };
        let (leaf, first_kept, settings) = match purpose {
            SummaryFor::Branch { target, .. } => return self.write_navigation(target, Some(summary), seen),
            SummaryFor::Compaction {
                leaf,
                first_kept,
                settings,
            } => (leaf, first_kept, settings),
        };
        if let Some(r) = self.changed_since(seen) {
            return self.keep_drafts(&refusal_words(&r));
        }
        let request = WriteRequest {
            write: Write::Compaction {
                leaf: self.id_of(leaf),
                first_kept,
                summary,
                settings,
            },
            seen: Some((seen.len, seen.entries)),
        };
        match self.branch_note(leaf) {
            Some((_, lines)) => {
                self.parts.dialog = Some(Dialog::Confirm {
                    title: "This compaction starts a new branch".into(),
                    lines,
                    then: Box::new(PendingWrite {
                        request,
                        what: "a compaction".into(),
                        select: None,
                    }),
                })
            }
            None => self.start_write(request, "a compaction", None),
        }
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
            InputPurpose::NavigateInstructions { target } => {
                self.parts.dialog = None;
                self.summarize_branch(target, Some(text), seen)
            }
            InputPurpose::CompactInstructions { at } => {
                self.parts.dialog = None;
                self.compact(at, text, seen)
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

    /// A branch summary job finished: the branch summary is written (a compaction's
    /// strategies report through `on_strategy_*`).
    pub(super) fn on_summary_done(
        &mut self,
        id: u64,
        wall_ms: u64,
        result: Result<Summary, crate::ui::jobs::SummaryError>,
    ) {
        if self.pending.summary.as_ref().map(|j| j.0) != Some(id) {
            return;
        }
        self.pending.summary = None;
        // The branch summary is shown before anything is written (as a compaction's is):
        // ctrl+s writes it and navigates, e edits it, d discards it.
        let Some(Dialog::Summary { tabs, .. }) = &mut self.parts.dialog else {
            return;
        };
        let Some(tab) = tabs.get_mut(0) else { return };
        tab.elapsed_ms = wall_ms;
        match result {
            Ok(sm) => {
                tab.text = sm.text;
                tab.usage = sm.usage;
                tab.state = TabState::Done;
                self.log.status =
                    Some("branch summary ready: ctrl+s writes it and navigates, e edits it, d discards it".into());
            }
            Err(e) => {
                tab.state = TabState::Failed(e.to_string());
                self.log.status = Some(format!("summary failed: {e}; nothing written (d closes)"));
            }
        }
    }

    /// Pi appended while a summary dialog was open (or its write was refused): the drafts are
    /// kept, the dialog says what changed, and is set to write at Pi's new leaf when that is
    /// still what the drafts summarize.
    pub(super) fn keep_drafts(&mut self, why: &str) {
        let s = self.doc.session.clone();
        let Some(Dialog::Summary { purpose, seen, .. }) = &mut self.parts.dialog else {
            self.log.status = Some(why.to_string());
            return;
        };
        let added: Vec<String> = s.entries[seen.entries.min(s.entries.len())..]
            .iter()
            .take(3)
            .map(|e| match e.message() {
                Some(m) => format!("{} {}", m.role.as_str(), e.id),
                None => format!("{} {}", e.kind.type_name(), e.id),
            })
            .collect();
        let n = s.entries.len().saturating_sub(seen.entries);
        let what = if added.is_empty() {
            String::new()
        } else {
            format!(" ({}{})", added.join(", "), if n > 3 { ", …" } else { "" })
        };
        let old_seen = *seen;
        *seen = Seen::of(&s);
        let said = match purpose {
            SummaryFor::Compaction {
                leaf,
                first_kept,
                settings,
            } => {
                let new_leaf = s.leaf().filter(|&l| s.path_to(l).contains(leaf));
                match new_leaf.map(|l| (l, entries::plan_compaction(&s, l, *settings))) {
                    Some((l, Ok(p))) if &*s.entries[p.first_kept_entry].id == first_kept.as_str() => {
                        *leaf = l;
                        format!(
                            "the cut is still at {first_kept}, so ctrl+s writes the draft at Pi's new leaf {}",
                            s.entries[l].id
                        )
                    }
                    Some((_, Ok(p))) => {
                        // Written at the old cut, the entries between the two would be in
                        // neither the summary nor what is kept: not written.
                        *seen = old_seen;
                        format!(
                            "the cut moved from {first_kept} to {}: the drafts do not summarize what lies between, so they are not written; they stay to read or copy (e) until d",
                            s.entries[p.first_kept_entry].id
                        )
                    }
                    _ => {
                        *seen = old_seen;
                        "Pi's new leaf does not continue this branch: the drafts stay to read or copy (e) until d"
                            .into()
                    }
                }
            }
            SummaryFor::Branch { .. } => {
                "the summary does not cover them; ctrl+s writes it anyway, leaving Pi's new leaf, d discards it".into()
            }
        };
        self.log.status = Some(format!("{why}{what}: nothing written; your drafts are kept; {said}"));
    }

    /// The summary dialog's tab `tab` of job `id`, while that job is the one shown.
    fn tab_of(&mut self, id: u64, tab: usize) -> Option<&mut SummaryTab> {
        if self.pending.summary.as_ref().map(|j| j.0) != Some(id) {
            return None;
        }
        match &mut self.parts.dialog {
            Some(Dialog::Summary { tabs, job, .. }) if *job == id => tabs.get_mut(tab),
            _ => None,
        }
    }

    pub(super) fn on_summary_chunk(&mut self, id: u64, chunk: &str) {
        if let Some(t) = self.tab_of(id, 0) {
            t.text.push_str(chunk);
        }
    }

    pub(super) fn on_strategy_progress(&mut self, id: u64, tab: usize, p: crate::llm::strategies::Progress) {
        use crate::llm::strategies::Progress;
        let Some(t) = self.tab_of(id, tab) else { return };
        match p {
            Progress::Calls { done, total, running } => t.calls = (done, total, running),
            Progress::Reset(text) => t.text = text,
            Progress::Text(more) => t.text.push_str(&more),
            Progress::Retry { attempt, wait, reason } => {
                t.note = Some(format!("retry {attempt} in {:.1} s: {reason}", wait.as_secs_f64()))
            }
        }
    }

    pub(super) fn on_strategy_done(
        &mut self,
        id: u64,
        tab: usize,
        result: Result<Box<crate::ui::jobs::StrategyResult>, crate::ui::jobs::StrategyFailed>,
    ) {
        let Some(t) = self.tab_of(id, tab) else { return };
        t.elapsed_ms = match &result {
            Ok(r) => r.wall_ms,
            Err(e) => e.wall_ms,
        };
        match result {
            Ok(r) if r.summary.text.trim().is_empty() => {
                t.state = TabState::Failed("the summary came back empty".into())
            }
            Ok(r) => {
                let r = *r;
                t.state = TabState::Done;
                t.text = r.summary.text;
                t.usage = r.summary.usage;
                t.calls = (r.calls, t.calls.1.max(r.calls), 0);
                t.elapsed_ms = r.wall_ms;
                t.figures = TabFigures {
                    input: r.usage.input,
                    output: r.usage.output,
                    cache_read: r.usage.cache_read,
                    cache_write: r.usage.cache_write,
                    cost: r.cost,
                    recall: Some(r.score.overall),
                    invented: r.score.invented_share(),
                    tokens: r.score.summary_tokens,
                    ratio: r.score.ratio(),
                };
            }
            Err(e) => t.state = TabState::Failed(e.to_string()),
        }
    }

    /// Every strategy of job `id` ended: what is left is the preview.
    pub(super) fn on_strategies_done(&mut self, id: u64) {
        if self.pending.summary.as_ref().map(|j| j.0) != Some(id) {
            return;
        }
        self.pending.summary = None;
        if let Some(Dialog::Summary { tabs, active, .. }) = &mut self.parts.dialog {
            for t in tabs.iter_mut().filter(|t| t.state == TabState::Running) {
                t.state = TabState::Failed("stopped".into());
            }
            if tabs.iter().all(|t| matches!(t.state, TabState::Failed(_))) {
                self.log.status = Some("every summary failed (see its tab); nothing written — d closes".into());
            } else if matches!(tabs[*active].state, TabState::Failed(_)) {
                // Show one that worked.
                *active = tabs.iter().position(|t| t.state == TabState::Done).unwrap_or(*active);
            }
        }
    }

    /// The tick: running tabs show how long they have run.
    pub(super) fn tick_summaries(&mut self, now: std::time::Instant) -> bool {
        let Some(Dialog::Summary { tabs, .. }) = &mut self.parts.dialog else {
            return false;
        };
        let mut any = false;
        for t in tabs.iter_mut().filter(|t| t.state == TabState::Running) {
            t.elapsed_ms = now.saturating_duration_since(t.started).as_millis() as u64;
            any = true;
        }
        any
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

/// Why there is nothing to compact, and what to do about it, in the TUI's keys (the CLI says
/// it in its flags: `NoCompaction::next_step`).
fn no_compaction_in_tui_words(e: NoCompaction, keep_recent: u64) -> String {
    match e {
        NoCompaction::AlreadyCompacted => {
            "Nothing to compact here: the leaf is a compaction already; continue the session in Pi first, or select another leaf".into()
        }
        NoCompaction::NothingToCompact => format!(
            "Nothing to compact here: the newest {} tokens are kept and that is everything since the last cut; c shows the cut, then - or # keeps fewer",
            crate::engine::edit::prune::thousands(keep_recent)
        ),
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

impl Receives<crate::ui::jobs::PlanCompactionJob> for App {
    fn receive(&mut self, r: crate::ui::jobs::CompactionPlanned) {
        self.on_compaction_planned(r.id, r.leaf, r.plan.map(|p| *p))
    }
}

impl Receives<crate::ui::jobs::ResolveSummarizerJob> for App {
    fn receive(&mut self, r: crate::ui::jobs::Resolved) {
        self.on_summarizer_resolved(r.id, r.summarizer.map(|s| *s))
    }
}

impl Receives<crate::ui::jobs::SummaryJob> for App {
    fn receive(&mut self, r: crate::ui::jobs::SummaryReport) {
        use crate::ui::jobs::SummaryReport;
        match r {
            SummaryReport::Chunk { id, text } => self.on_summary_chunk(id, &text),
            SummaryReport::Done { id, wall_ms, result } => self.on_summary_done(id, wall_ms, result),
            SummaryReport::StrategyProgress { id, tab, progress } => self.on_strategy_progress(id, tab, progress),
            SummaryReport::StrategyDone { id, tab, result } => self.on_strategy_done(id, tab, result),
            SummaryReport::StrategiesDone { id, finished } => {
                for (tab, r) in finished {
                    self.on_strategy_done(id, tab, r);
                }
                self.on_strategies_done(id)
            }
        }
    }
}
