//! The dialogs' place in the app: a key goes to the open dialog's own update
//! (`ui::dialog::update`), and `App::apply` carries out what it asks for.
//! - Writes start in `writes`, branch work in `branches`, file chores in `housekeeping`.
//! - The summary dialogs' keys go to `summaries` instead, which does their asks itself.

use super::App;
use crate::ui::action::Action;
use crate::ui::component::Component;

impl App {
    /// Keys while a dialog is open.
    pub(super) fn on_dialog(&mut self, action: Action) -> bool {
        let area = self.areas().main;
        let Some(d) = &mut self.parts.dialog else { return false };
        let rect = d.rect(area);
        let effects = d.update(&action, rect);
        self.apply(effects)
    }
}
