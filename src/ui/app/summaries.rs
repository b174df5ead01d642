//! The summary dialogs, from the key to the write: a compaction's and a branch summary's.
//!
//! - `c` plans the compaction (a job), asks for instructions, finds the summary model once
//!   (a job), offers the strategies and runs them side by side (a job), then writes the chosen
//!   draft through `start_write`.
//! - A branch summary, asked for when leaving a branch, streams into the same dialog.
//! - The dialogs' keys come here first; their jobs report here (`Receives`).
//! - A refused write or Pi appending keeps the drafts (`keep_drafts`).

use super::App;
use super::pending::AfterResolve;
use crate::engine::compaction::cut::NoCompaction;
use crate::engine::compaction::slices::SliceParams;
use crate::engine::compaction::strategy::Strategy;
use crate::engine::compaction::summary::Summary;
use crate::engine::edit::entries;
use crate::engine::edit::plan::{Write, WriteRequest};
use crate::engine::view::context;
use crate::ui::action::Action;
use crate::ui::component::{self, Component, Effect};
use crate::ui::dialog::{
    Dialog, InputPurpose, PendingWrite, PlannedCompaction, Seen, SummaryFor, SummaryTab, TabFigures, TabState,
};
use crate::ui::input::LineEditor;
use crate::ui::jobs::SummaryKind;
use crate::ui::runner::{Job, Receives};

impl App {
    /// Keys while a summary dialog has the keyboard (instructions, strategies, tabs): the
    /// dialog's own update, then what it asks for is done here; anything else by `apply`.
    pub(super) fn on_summary_dialog(&mut self, action: Action) -> bool {
        let area = self.areas().main;
        let Some(d) = &mut self.parts.dialog else { return false };
        let rect = d.rect(area);
        let effects = d.update(&action, rect);
        let mut redraw = component::redraws(&effects);
        for e in effects {
            if let Some(other) = self.take_summary_effect(e) {
                redraw |= self.apply(vec![other]);
            }
        }
        redraw
    }

    /// Do what a summary dialog asked for; any other effect is given back.
    pub(super) fn take_summary_effect(&mut self, e: Effect) -> Option<Effect> {
        match e {
            Effect::Submit {
                purpose: InputPurpose::CompactInstructions { at },
                text,
                seen,
            } => {
                self.parts.dialog = None;
                self.compact(at, text, seen)
            }
            Effect::Submit {
                purpose: InputPurpose::NavigateInstructions { target },
                text,
                seen,
            } => {
                self.parts.dialog = None;
                self.summarize_branch(target, Some(text), seen)
            }
            Effect::Compact {
                at,
                focus,
                strategies,
                seen,
            } => {
                self.setup.strategy_choice = strategies.clone();
                self.start_compaction(at, focus, strategies, seen);
            }
            Effect::CancelSummary => {
                if let Some((_, cancel)) = self.pending.summary.take() {
                    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
            Effect::AcceptSummary => self.accept_summary(),
            other => return Some(other),
        }
        None
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

    /// Find the summary model for the session at `leaf`, then go on with `then`: at once
    /// when a test set the summarizer or forbade models, else in a job (finding the key reads
    /// Pi's `auth.json` and the environment, which the update never does).
    pub(super) fn with_summarizer(&mut self, leaf: usize, then: AfterResolve) {
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

    pub(super) fn go_on(&mut self, summarizer: Option<crate::llm::summarize::Summarizer>, then: AfterResolve) {
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
    pub(super) fn start_summary(&mut self, leaf: usize, kind: SummaryKind, purpose: SummaryFor, seen: Seen) {
        self.with_summarizer(
            leaf,
            AfterResolve::BranchSummary {
                kind: Box::new(kind),
                purpose,
                seen,
            },
        );
    }

    pub(super) fn start_summary_with(
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
    pub(super) fn run_or_queue<J: Job>(&mut self, job: J, offline: bool)
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
        if let Some(m) = self.pending.summarizer.take() {
            return self.start_compaction_with(Some(*m), at, focus, strategies, seen);
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

    pub(super) fn start_compaction_with(
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
    pub(super) fn compact(&mut self, at: PlannedCompaction, instructions: String, seen: Seen) {
        let focus = Some(instructions).filter(|t| !t.trim().is_empty());
        let leaf = at.leaf;
        self.with_summarizer(leaf, AfterResolve::Compact { at, focus, seen });
    }

    pub(super) fn compact_with(
        &mut self,
        summarizer: Option<crate::llm::summarize::Summarizer>,
        at: PlannedCompaction,
        focus: Option<String>,
        seen: Seen,
    ) {
        match summarizer {
            Some(m) => {
                let by = format!("{}/{}", m.model.provider, m.model.id);
                // Kept for the strategies chosen next: the model is looked up once.
                self.pending.summarizer = Some(Box::new(m));
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
                    by,
                });
            }
            None => self.start_compaction(at, focus, vec![Strategy::Offline], seen),
        }
    }

    /// The summary dialog's active draft if it can be written (not failed, not empty): what it
    /// is for, what the dialog was decided on, and the summary. Says why not otherwise.
    pub(super) fn writable_draft(&mut self) -> Option<(SummaryFor, Seen, Summary)> {
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
            return self.keep_drafts(&super::writes::refusal_words(&r));
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
        let Some(Dialog::Summary { tabs, by, .. }) = &mut self.parts.dialog else {
            return;
        };
        let by_model = by.as_str() != "offline";
        let Some(tab) = tabs.get_mut(0) else { return };
        tab.elapsed_ms = wall_ms;
        match result {
            Ok(sm) => {
                // A model's summary is one call; its figures are the usage it reported.
                if by_model {
                    tab.calls = (1, 1, 0);
                }
                if let Some(u) = &sm.usage {
                    let n = |k: &str| u[k].as_u64().unwrap_or(0);
                    tab.figures.input = n("input");
                    tab.figures.output = n("output");
                    tab.figures.cache_read = n("cacheRead");
                    tab.figures.cache_write = n("cacheWrite");
                    tab.figures.cost = u["cost"]["total"].as_f64().unwrap_or(0.0);
                }
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
    pub(super) fn tab_of(&mut self, id: u64, tab: usize) -> Option<&mut SummaryTab> {
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
                    audit: Some(r.audit),
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
}

/// Why there is nothing to compact, and what to do about it, in the TUI's keys.
/// The CLI says it in its flags (`NoCompaction::next_step`).
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
