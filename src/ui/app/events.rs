//! What arrives without a key: jobs reporting back, the tick (live follow, highlighting), and
//! a new version of the session (Pi appended, bonsai wrote, another session opened).

use super::{App, Doc, Overlay, Terminal, plural};
use crate::engine::load::session::Session;
use crate::engine::view::tree_view::TreeView;
use crate::ui::jobs;
use crate::ui::runner::Receives;
use std::sync::Arc;

impl Receives<jobs::ContextViewJob> for App {
    fn receive(&mut self, r: jobs::ContextReport) {
        match r {
            jobs::ContextReport::Progress {
                generation,
                done,
                total,
            } => {
                if generation == self.parts.context.generation {
                    self.parts.context.progress = Some((done, total));
                }
            }
            jobs::ContextReport::Built(data) => self.on_context_view(data),
        }
    }
}

impl Receives<jobs::ReloadJob> for App {
    fn receive(&mut self, r: jobs::Reloaded) {
        self.on_reloaded(r)
    }
}

impl Receives<jobs::OpenJob> for App {
    fn receive(&mut self, r: jobs::Opened) {
        self.on_opened(r)
    }
}

impl Receives<jobs::ListJob> for App {
    fn receive(&mut self, r: jobs::Listed) {
        self.on_listed(r)
    }
}

impl Receives<jobs::ExactAllJob> for App {
    fn receive(&mut self, r: jobs::ExactAllReport) {
        match r {
            jobs::ExactAllReport::Progress {
                generation,
                done,
                total,
            } => {
                if generation == self.exact.all.generation && self.exact.all.progress.is_some() {
                    self.exact.all.progress = Some((done, total));
                }
            }
            jobs::ExactAllReport::Done {
                generation,
                tokens,
                messages,
                elapsed_ms,
                cancelled,
            } => self.on_exact_all_done(generation, tokens, messages, elapsed_ms, cancelled),
        }
    }
}

impl Receives<jobs::WriteJob> for App {
    fn receive(&mut self, r: jobs::WriteOutcome) {
        self.on_written(r)
    }
}

impl Receives<jobs::BranchedJob> for App {
    fn receive(&mut self, r: jobs::BranchedOutcome) {
        self.on_branched(r)
    }
}

impl App {
    /// The selection's gauge, when it came with the session's first load.
    pub(super) fn on_selection_info(&mut self, generation: u64, info: crate::ui::selection::SelectionInfo) {
        let effects = self.selection.take_gauge(generation, info);
        self.apply(effects);
    }

    /// What follows the selection's gauge once it is known.
    pub(super) fn after_gauge(&mut self) {
        // The live figure needs the gauge's window and reserve.
        self.request_live_figure();
        // The zones policy follows the gauge: plan again once it is known (large
        // sessions compute it in a job).
        let follows_gauge = matches!(
            super::POLICIES[self.parts.prune.policy % super::POLICIES.len()].1,
            crate::engine::edit::prune::Policy::Zones(None)
        );
        if self.screen.prune_preview && follows_gauge && self.doc.session.entries.len() > super::LARGE_SESSION {
            self.request_plan();
        }
    }

    /// The gauge's exact count of `messages`: from the cache when every one is counted
    /// already, else as a job.
    pub(super) fn count_exactly(
        &mut self,
        generation: u64,
        messages: Vec<crate::engine::view::context::ContextMessage>,
        encoding: crate::engine::view::tokens::Encoding,
    ) {
        let cached: Option<Vec<u64>> = messages.iter().map(|m| self.exact.cache.get(m, encoding)).collect();
        if let Some(g) = &mut self.selection.gauge {
            g.exact = cached.as_ref().map(|v| v.iter().sum());
        }
        match cached {
            Some(v) => self.selection.exact = Some(v),
            None => self.start_for::<super::SelectionState, _>(jobs::ExactTokensJob {
                generation,
                session: self.doc.session.clone(),
                messages,
                encoding,
                cache: self.exact.cache.clone(),
            }),
        }
    }

    fn on_context_view(&mut self, data: Box<crate::ui::context_view::ContextData>) {
        if data.generation == self.parts.context.generation {
            let n = data.aligned.len();
            self.parts.context.progress = None;
            if let Some(leaf) = self.selected_leaf() {
                let key = super::ContextKey {
                    leaf,
                    mark: self.parts.context.mark,
                    encoding: self.selection_encoding().name(),
                    live: self.parts.context.live,
                    len: self.doc.session.buf.len(),
                };
                self.parts.context.built = Some((key, data.clone()));
            }
            self.parts.context.data = Some(data);
            self.parts.context.cursor = self.parts.context.cursor.min(n.saturating_sub(1));
            self.keep_context_cursor_visible();
        }
    }

    fn on_reloaded(&mut self, r: jobs::Reloaded) {
        let jobs::Reloaded {
            result,
            rewritten,
            by_bonsai,
        } = r;
        self.pending.reload = false;
        match result {
            // A reload read before a newer version was shown (bonsai's own write came
            // back first) is stale: the file only grows unless it was rewritten.
            Ok(None) => {}
            Ok(Some(s)) if !rewritten && s.buf.len() < self.doc.session.buf.len() => {}
            Ok(Some(s)) => self.replace_session_as(s, false, rewritten, by_bonsai),
            Err(e) => self.log.status = Some(format!("reload failed: {e}")),
        }
    }

    fn on_opened(&mut self, r: jobs::Opened) {
        let jobs::Opened { path, result, index } = r;
        self.pending.reparsing = false;
        match result {
            Ok(s) => {
                // A search hit opens its session at its entry.
                let at = self.parts.picker.as_mut().and_then(|p| p.open_at.take());
                self.open_session(s.clone(), path, false);
                self.save_index_later(&s, index);
                if let Some(at) = at {
                    self.select_entry_ref(&at);
                }
            }
            Err(e) => match &mut self.parts.picker {
                Some(p) => {
                    p.opening = None;
                    p.error = Some(e.to_string());
                }
                None => self.log.status = Some(e.to_string()),
            },
        };
    }

    fn on_listed(&mut self, r: jobs::Listed) {
        let jobs::Listed {
            at,
            all,
            sessions,
            everywhere,
            pins,
            trash,
            leftovers,
            exports,
        } = r;
        // Each session's model's window, for its share of the context.
        let windows = sessions
            .iter()
            .map(|s| {
                let (p, m) = s.model.as_ref()?;
                self.setup
                    .registry
                    .find(p, m)
                    .map(|x| x.context_window)
                    .filter(|w| *w > 0)
            })
            .collect();
        let mut waiting_search = false;
        if let Some(p) = &mut self.parts.picker {
            p.trash = trash;
            p.leftovers = leftovers;
            p.exports = exports;
            p.set_sessions(all, sessions, windows, pins);
            p.everywhere = everywhere;
            p.listed_at = Some(at);
            p.now_ms = self.outside.now_ms;
            // A search asked for before the first listing arrived starts now.
            waiting_search = p.search.as_ref().is_some_and(|s| s.running && s.id == 0);
        }
        if waiting_search {
            let id = self.next_job_id();
            self.start_session_search(id);
        }
    }

    fn on_exact_all_done(&mut self, generation: u64, tokens: u64, messages: usize, elapsed_ms: u64, cancelled: bool) {
        if generation == self.exact.all.generation {
            self.exact.all.progress = None;
            self.exact.all.cancel = None;
            if !cancelled && messages > 0 && std::mem::take(&mut self.exact.all.announce) {
                self.log.status = Some(format!(
                    "exact tokens of every entry: {} in {} messages ({})",
                    super::short_tokens(tokens),
                    crate::engine::units::count(messages as u64),
                    crate::engine::units::duration(elapsed_ms as f64)
                ));
            }
        }
    }

    fn on_written(&mut self, r: jobs::WriteOutcome) {
        let jobs::WriteOutcome { result, now } = r;
        self.pending.writes = self.pending.writes.saturating_sub(1);
        match result {
            Ok(w) => {
                // A reload that already showed what Pi appended after this write is
                // newer than the write's own read: keep it.
                if w.session.buf.len() >= self.doc.session.buf.len() {
                    self.replace_session(w.session, true);
                }
                let s = self.doc.session.clone();
                let select = w.select.as_deref().and_then(|id| s.idx_of(id)).or(s.leaf());
                if let Some(i) = select {
                    self.tree.view.select_entry(&s, i);
                    self.selection_changed();
                }
                let mut msg = format!("wrote {}", w.what);
                if w.applied.raced_after.is_some() {
                    msg.push_str(" · Pi appended at the same instant: it branches from before Pi's line");
                } else if w.applied.recently_written {
                    msg.push_str(" · Pi seems to be running: it sees this after reopening the session");
                }
                if let Some(t) = w.prepared.editor_text.filter(|t| !t.is_empty()) {
                    msg = format!(
                        "navigated · the user message is on the clipboard: {}",
                        crate::engine::view::tree_view::one_line(&t, 60)
                    );
                    self.effects.push(Terminal::Clipboard(t));
                }
                self.log.status = Some(msg);
                self.pending.parked = None;
                self.file.live = false;
                if let Some(id) = self.parts.prune.compact_after.take() {
                    self.open_compact_keeping(&id);
                }
            }
            Err(e) => {
                self.parts.prune.compact_after = None;
                self.log.status = Some(e.to_string());
                // A summary whose write was refused comes back with its drafts (the
                // session read again first, so the dialog shows what changed).
                if let Some(d) = self.pending.parked.take() {
                    if let Some(s) = now
                        && s.buf.len() != self.doc.session.buf.len()
                    {
                        self.replace_session(s, true);
                    }
                    self.parts.dialog = Some(d);
                    let why = match &e {
                        crate::store::WriteError::Refused(r) => super::writes::refusal_words(r),
                        crate::store::WriteError::Changed { .. } => "the session changed as bonsai wrote".to_string(),
                        other => other.to_string(),
                    };
                    self.keep_drafts(&why);
                }
            }
        }
    }

    fn on_branched(&mut self, r: jobs::BranchedOutcome) {
        let jobs::BranchedOutcome {
            what,
            result,
            editor_text,
        } = r;
        match result {
            Ok(path) => {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                self.log.status = Some(format!(
                    "{what} written beside this session: {name} (o opens it, u removes it)"
                ));
                self.pending.last_branched = crate::ui::dialog::BranchedFile::of(path.clone(), what);
                if let Some(t) = editor_text {
                    self.effects.push(Terminal::Clipboard(t));
                }
            }
            Err(e) => self.log.status = Some(format!("{what} not written: {e}")),
        };
    }

    /// The clock: follow the file (Pi appends whole lines), notice a truncated mapping, and
    /// let the highlighter catch up on a long output.
    pub(super) fn on_tick(&mut self, seen: crate::ui::action::Observed) -> bool {
        use crate::ui::action::FileSeen;
        self.outside.now_ms = seen.now_ms;
        self.outside.clock = seen.now;
        if let Some(since) = self.pending.quit_waits
            && seen.now.saturating_duration_since(since) >= super::first_load::INDEX_WAIT
        {
            self.quit = true;
        }
        let mut redraw = self.tick_summaries(seen.now);
        // The picker follows the session folders: listed again every two seconds.
        if let Some(p) = &mut self.parts.picker
            && self.screen.overlay == Overlay::Picker
            && !p.loading
            && p.opening.is_none()
            && p.listed_at
                .is_some_and(|t| seen.now.saturating_duration_since(t) >= std::time::Duration::from_secs(2))
        {
            p.loading = true;
            let all = p.all;
            self.start_listing(all);
        }
        // A mapped file that lost pages under us (see store::mapped) reads as zeros there:
        // say so and read it whole again.
        if seen.mapping_damaged
            && let Some(p) = self.doc.path.clone()
        {
            self.log.status =
                Some("the session file was truncated or rewritten by another program; reloading it".into());
            let index = self.index_place();
            self.start(crate::ui::jobs::OpenJob {
                path: p,
                index,
                forget_index: false,
            });
            redraw = true;
        }
        // A line read through bonsai's index no longer matched the file: what is shown may
        // hold another line's text. Said once; the index dropped and the file parsed whole.
        if self.doc.session.index_failed()
            && !self.pending.reparsing
            && let Some(p) = self.doc.path.clone()
        {
            self.pending.reparsing = true;
            self.log.status = Some(crate::store::index::MISMATCH.into());
            self.start(crate::ui::jobs::OpenJob {
                path: p,
                index: self.index_place(),
                forget_index: true,
            });
            redraw = true;
        }
        // The file disappeared (deleted or moved): say so once; what is shown stays.
        let gone = seen.file == FileSeen::Gone;
        if gone != self.file.gone {
            self.file.gone = gone;
            self.log.status = Some(if gone {
                "the session file is gone (deleted or moved): what is shown stays, nothing can be written; o opens another".into()
            } else {
                "the session file is back".into()
            });
            redraw = true;
        }
        // Pi appended, or another program wrote the file: read it again. A change that kept
        // the length (its inode or time changed, not its size) is compared byte by byte.
        let shown = self.doc.session.buf.len() as u64;
        let before = std::mem::replace(
            &mut self.file.seen,
            seen.stamp.zip(match seen.file {
                FileSeen::Len(len) => Some(len),
                _ => None,
            }),
        );
        if let Some(p) = &self.doc.path
            && !self.pending.reload
            && self.pending.writes == 0
            && let FileSeen::Len(len) = seen.file
        {
            let kept_length =
                len == shown && before.is_some_and(|(stamp, was)| was == len && seen.stamp.is_some_and(|s| s != stamp));
            if len != shown || kept_length {
                self.pending.reload = true;
                self.start(crate::ui::jobs::ReloadJob {
                    session: self.doc.session.clone(),
                    path: p.clone(),
                    compare: if kept_length {
                        crate::store::files::Compare::Whole
                    } else {
                        crate::store::files::Compare::Ends
                    },
                });
            }
        }
        let upto = self
            .areas()
            .detail
            .map(|a| self.parts.detail.scroll + a.height as usize);
        if let (Some(doc), Some(upto)) = (&mut self.parts.detail.doc, upto)
            && doc.highlight_pending(upto)
        {
            doc.highlight_to(upto);
            redraw = true;
        }
        redraw
    }

    /// Another session from the picker: a fresh view of it, the settings kept.
    /// `same_file`: the first load's placeholder gives way to the file it loaded (its jobs'
    /// results still count); else the session shown is left and its jobs with it.
    pub(super) fn open_session(&mut self, s: Arc<Session>, path: std::path::PathBuf, same_file: bool) {
        let settings = std::mem::take(&mut self.setup.settings);
        let registry = (*self.setup.registry).clone();
        let size = self.screen.size;
        let no_color = self.screen.no_color;
        if let Some(c) = self.exact.all.cancel.take() {
            c.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        // Built with this app's exact-count choice, so the count starts once.
        let mut fresh = App::with_outside(s, Some(path), settings, registry, self.outside(), self.setup.auto_exact);
        fresh.screen.size = size;
        fresh.screen.no_color = no_color;
        fresh.setup.summarizer_override = self.setup.summarizer_override.take();
        fresh.setup.force_offline = self.setup.force_offline;
        fresh.setup.strategy_choice = std::mem::take(&mut self.setup.strategy_choice);
        fresh.setup.index = self.setup.index.take();
        fresh.log.notice = fresh.diagnostics_notice();
        if same_file {
            fresh.pending.doc = self.pending.doc.clone();
        } else {
            self.pending.doc.leave();
        }
        *self = fresh;
    }

    /// A newer version of the file (Pi appended, or bonsai wrote): keep the selection, filter,
    /// folds and scroll; follow the leaf when it was selected. `own` is bonsai's own write.
    pub(super) fn replace_session(&mut self, s: Arc<Session>, own: bool) {
        self.replace_session_as(s, own, false, false)
    }

    /// [`Self::replace_session`], told whether the file's bytes were rewritten (truncated or
    /// replaced, not only appended to: then it is never "grew").
    /// `by_bonsai`: the job that read it found the change was bonsai's own.
    pub(super) fn replace_session_as(&mut self, s: Arc<Session>, own: bool, rewritten: bool, by_bonsai: bool) {
        let old = self.doc.session.clone();
        // An append keeps every old entry where it was; anything else rebuilt the positions.
        let rebuilt = rewritten
            || old
                .entries
                .last()
                .is_some_and(|e| s.entries.get(old.entries.len() - 1).is_none_or(|n| n.id != e.id));
        let grew = s.buf.len() > old.buf.len();
        let selected_id = self.selected().map(|i| old.entries[i].id.clone());
        let was_at_leaf = self.selected() == old.leaf();
        let added = s.entries.len().saturating_sub(old.entries.len());
        let folded_ids: Vec<crate::engine::load::entry::EntryId> = self
            .tree
            .view
            .folded
            .iter()
            .map(|&i| old.entries[i].id.clone())
            .collect();
        let filter = self.tree.view.filter;
        let search = self.tree.view.search.clone();
        let show_times = self.tree.view.show_label_times;
        let show_archived = self.tree.view.show_archived;
        let mark_id = self.parts.context.mark.map(|m| old.entries[m].id.clone());
        let old_notice = self.diagnostics_notice();
        self.doc = Doc::new(s, self.doc.path.take(), self.doc.read_only);
        // The banner about malformed lines follows the file (a line Pi was still writing is
        // whole now); a demo notice stays.
        if self.log.notice == old_notice {
            self.log.notice = self.diagnostics_notice();
        }
        let s = self.doc.session.clone();
        let home = self.tree.view.home.take();
        self.tree.view = TreeView::new(&s, &self.doc.tree, s.leaf(), filter, self.outside.now_ms);
        self.tree.view.home = home;
        self.tree.view.show_label_times = show_times;
        self.tree.view.show_archived = show_archived;
        for id in folded_ids {
            if let Some(i) = s.idx_of(&id) {
                self.tree.view.folded.insert(i);
            }
        }
        self.tree.view.search = search;
        self.tree.view.apply_filter(&s);
        let target = if was_at_leaf {
            s.leaf()
        } else {
            selected_id.and_then(|id| s.idx_of(&id))
        };
        if let Some(t) = target {
            self.tree.view.select_entry(&s, t);
        }
        self.parts.context.mark = mark_id.and_then(|id| s.idx_of(&id));
        self.tree.row_cache.clear();
        self.parts.detail.doc = None;
        // What is counted stays when Pi only appended; a rewritten file starts over.
        if rebuilt {
            self.exact.cache = Arc::new(crate::engine::view::tokens::TokenCache::default());
        }
        if self.exact.all.cancel.is_some() || (rebuilt && self.setup.auto_exact) {
            self.auto_exact_all();
        }
        if rebuilt && self.parts.dialog.is_some() {
            // Entry positions changed under the dialog: it cannot be trusted any more.
            self.parts.dialog = None;
            self.log.status = Some("the session file was rewritten by another program; the dialog was closed".into());
        } else if !own {
            self.file.live = true;
            // bonsai's own write from elsewhere (`bonsai restore`, another window) is not Pi's.
            let removed = old.entries.len().saturating_sub(s.entries.len());
            self.log.status = Some(if rebuilt {
                format!(
                    "live: the file was rewritten {} ({} entries, {})",
                    if by_bonsai {
                        "by bonsai elsewhere (a delete or restore)"
                    } else {
                        "by another program"
                    },
                    s.entries.len(),
                    if added > 0 {
                        format!("{added} more")
                    } else if removed > 0 {
                        format!("{removed} fewer")
                    } else {
                        "as many as before".into()
                    }
                )
            } else if added > 0 {
                format!(
                    "live: {} from {}",
                    plural(added, "new entry", "new entries"),
                    if by_bonsai { "bonsai elsewhere" } else { "Pi" }
                )
            } else if grew {
                "live: the file grew by a partial line (waiting for the rest)".into()
            } else {
                "live: the file was written again with nothing new".into()
            });
        }
        let keep = self.parts.detail.scroll;
        self.selection_changed();
        self.parts.detail.scroll = keep;
        if self.screen.overlay == Overlay::Context {
            self.request_context();
        }
    }
}
