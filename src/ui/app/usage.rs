//! The usage view's place in the app: opening it (a job reads every session's calls),
//! its keys (the view's own `update`), closing back to where it was opened.

use super::{App, Overlay};
use crate::engine::load::entry::Kind;
use crate::ui::action::Action;
use crate::ui::component::Component;
use crate::ui::usage_view::UsageView;

impl App {
    /// `$`: from a session, its own cost over time first; from the picker, cost by day.
    pub(super) fn open_usage(&mut self, from_session: bool) {
        let generation = self.next_job_id();
        let session = self.doc.path.clone().map(|p| {
            let compactions: Vec<i64> = self
                .doc
                .session
                .entries
                .iter()
                .filter(|e| matches!(e.kind, Kind::Compaction(_)) && e.ts.is_finite())
                .map(|e| e.ts as i64)
                .collect();
            (p, compactions)
        });
        let mut view = UsageView::new(generation, session.is_some());
        if !from_session {
            view.tab = crate::ui::usage_view::Tab::Days;
        }
        self.parts.usage = Some((view, self.screen.overlay));
        self.screen.overlay = Overlay::Usage;
        self.start_for::<crate::ui::usage_view::UsageView, _>(crate::ui::jobs::UsageJob {
            generation,
            cwd: self.outside.cwd.clone(),
            settings: self.setup.settings.clone(),
            agent_dir: self.outside.agent_dir.clone(),
            session,
        });
    }

    /// The usage view (its own update; closing goes back to where it was opened from).
    pub(super) fn on_usage(&mut self, action: Action) -> bool {
        let Some((view, _)) = &mut self.parts.usage else {
            self.screen.overlay = super::Overlay::None;
            return true;
        };
        let effects = view.update(&action, ());
        self.apply(effects)
    }
}
