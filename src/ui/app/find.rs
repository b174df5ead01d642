//! Find inside the open session (Ctrl+F): the decoded text of every entry, tool output and
//! thinking included, searched in the background on every core with hits streaming in; `n` and
//! `N` go from hit to hit in tree order (unfolding what hides one), the detail pane marks the
//! matches, the status line counts "3/17".

use super::App;
use crate::ui::action::Action;
use crate::ui::component::Component;
use crate::ui::find::Find;

use crate::ui::input::LineEditor;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

impl App {
    /// Ctrl+F: type what to find (the last query to start from).
    pub(super) fn start_find(&mut self) {
        let last = self.parts.find.as_ref().map(|f| f.query.clone()).unwrap_or_default();
        match &mut self.parts.find {
            Some(f) => f.editor = Some(LineEditor::new(&last, false)),
            None => self.parts.find = Some(Find::typing()),
        }
    }

    /// Keys while the query is typed (the find's own update).
    pub(super) fn on_find_input(&mut self, action: Action) -> bool {
        let Some(f) = &mut self.parts.find else { return false };
        let effects = f.update(&action, ());
        self.apply(effects)
    }

    /// Search the open session for `q` (a search still running is stopped).
    pub(super) fn run_find(&mut self, q: String) {
        let id = self.next_job_id();
        let query = match crate::engine::view::search::Query::new(&q, false, None) {
            Ok(query) => query,
            Err(e) => {
                self.log.status = Some(format!("find: {e}"));
                return;
            }
        };
        let s = self.doc.session.clone();
        let Some(f) = &mut self.parts.find else { return };
        f.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        let cancel = Arc::new(AtomicBool::new(false));
        *f = Find::searching(
            id,
            q.clone(),
            query.decoded().clone(),
            cancel.clone(),
            s.entries.len(),
            &self.tree.view.flat,
        );
        self.start_for::<super::Find, _>(crate::ui::jobs::FindInSessionJob {
            id,
            session: s,
            query: q,
            cancel,
        });
    }

    /// The first hit of a find, shown: its hits came while none was.
    pub(super) fn find_first_hit(&mut self) {
        let before = self.selected();
        self.find_step(true);
        if self.selected() != before {
            self.selection_changed();
        }
    }

    /// `n` / `N`: the next (previous) hit in tree order from the one shown, round the end.
    pub(super) fn find_step(&mut self, forward: bool) -> bool {
        let Some(f) = &mut self.parts.find else {
            self.log.status = Some("Ctrl+F finds text inside this session first".into());
            return true;
        };
        if f.hits.is_empty() {
            self.log.status = Some(if f.running {
                "find: no hit yet, still searching".into()
            } else {
                format!("find: {:?} is nowhere in this session", f.query)
            });
            return true;
        }
        let next = match (f.current, forward) {
            (None, _) => f.hits.keys().next().copied(),
            (Some(c), true) => f.hits.range(c + 1..).next().or(f.hits.iter().next()).map(|(k, _)| *k),
            (Some(c), false) => f
                .hits
                .range(..c)
                .next_back()
                .or(f.hits.iter().next_back())
                .map(|(k, _)| *k),
        };
        let Some(k) = next else { return false };
        f.current = Some(k);
        f.scroll_pending = true;
        let (entry, _) = f.hits[&k];
        self.reveal(entry);
        true
    }

    /// Once the detail pane shows the hit: scrolled to the first line holding a match.
    pub(super) fn scroll_detail_to_match(&mut self) {
        let Some(f) = &mut self.parts.find else { return };
        if !f.scroll_pending {
            return;
        }
        let (Some(doc), Some(re)) = (&self.parts.detail.doc, &f.regex) else {
            return;
        };
        f.scroll_pending = false;
        let lines = doc.window(0, doc.total_lines());
        if let Some(k) = lines
            .iter()
            .position(|l| re.is_match(&l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()))
        {
            self.parts.detail.scroll = k.saturating_sub(2);
        }
    }
}
