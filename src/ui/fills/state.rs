//! The fills view as a component: its state and what a key does to it (apart from the
//! view's data, which the jobs build, so that the key handling may name actions).

use super::data::FillsData;
use crate::ui::action::Action;
use crate::ui::component::{self, Effect};
use crate::ui::mode::Mode;

/// The fills view's own state: what was counted, the cursor over the largest messages.
#[derive(Default)]
pub struct FillsState {
    pub data: Option<Box<FillsData>>,
    pub cursor: usize,
    pub scroll: usize,
    pub generation: u64,
}

impl FillsState {}

impl crate::ui::component::Component for FillsState {
    type Lent<'a> = ();
    const NAME: &'static str = "fills view";

    /// A key in the view: a cursor over the largest messages; Enter goes to one.
    fn update(&mut self, action: &crate::ui::action::Action, (): Self::Lent<'_>) -> Vec<crate::ui::component::Effect> {
        let n = self.data.as_ref().map(|d| d.largest.len()).unwrap_or(0);
        let c = &mut self.cursor;
        match action {
            Action::Up => *c = c.saturating_sub(1),
            Action::Down => *c = (*c + 1).min(n.saturating_sub(1)),
            Action::PageUp | Action::Home => *c = 0,
            Action::PageDown | Action::End => *c = n.saturating_sub(1),
            Action::Select => {
                return match self.data.as_ref().and_then(|d| d.largest.get(self.cursor)) {
                    Some(l) => vec![Effect::Reveal(l.entry)],
                    None => component::ignored(),
                };
            }
            Action::Close => return vec![Effect::Close],
            Action::OpenHelp => return vec![Effect::Help(Mode::Fills)],
            _ => return component::ignored(),
        }
        component::changed()
    }
}
