//! The dialogs' place in the app: a key goes to the open dialog's own update
//! (`ui::dialog::update`); what it asks for (a write, a summary, a change of files) is carried
//! out by `App::apply`, with the starts in `writes`, `branches` and `housekeeping`.

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
