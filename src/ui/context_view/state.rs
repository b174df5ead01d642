//! The context view as a component: its state and what a key does to it (apart from the
//! view's data, which the jobs build, so that the key handling may name actions).

use super::data::ContextData;
use crate::ui::action::Action;
use crate::ui::component::{self, Effect};
use crate::ui::mode::Mode;

/// The context view's own state: the mark and the live switch it was built for, its cursor,
/// what was built and what is being counted.
#[derive(Default)]
pub struct ContextState {
    /// Showing what bonsai's Pi package sends instead of the session's context.
    pub live: bool,
    pub mark: Option<usize>,
    pub cursor: usize,
    pub scroll: usize,
    pub data: Option<Box<ContextData>>,
    /// The generation the shown data is for (a newer one is being counted when behind).
    pub generation: u64,
    /// Messages counted of those to count, while a view is being built.
    pub progress: Option<(usize, usize)>,
    /// The last view built and what it was built for: `v` again on the same state shows it
    /// at once.
    pub built: Option<(ContextKey, Box<ContextData>)>,
    /// The live view's bill line (`bonsai bill` of the open session), and the session's length
    /// it was asked for.
    pub bill: Option<String>,
    pub bill_for: Option<usize>,
}

/// What a context view depends on: the leaf, the mark, the encoding, live or not, and the
/// session's version (its length).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextKey {
    pub leaf: usize,
    pub mark: Option<usize>,
    pub encoding: &'static str,
    pub live: bool,
    pub len: usize,
}

impl ContextState {
    /// Scroll so the cursor is among the `height` rows shown.
    pub fn keep_cursor_visible(&mut self, height: usize) {
        let h = height.max(1);
        if self.cursor < self.scroll {
            self.scroll = self.cursor;
        } else if self.cursor >= self.scroll + h {
            self.scroll = self.cursor + 1 - h;
        }
    }
}

impl crate::ui::component::Component for ContextState {
    type Lent<'a> = (usize, usize);
    const NAME: &'static str = "context view";

    /// A key in the view: a cursor over the messages; Enter goes to the message's entry.
    /// `page`: rows a page moves; `height`: the rows the list shows.
    fn update(
        &mut self,
        action: &crate::ui::action::Action,
        (page, height): Self::Lent<'_>,
    ) -> Vec<crate::ui::component::Effect> {
        let n = self.data.as_ref().map(|d| d.aligned.len()).unwrap_or(0);
        let last = n.saturating_sub(1);
        let c = &mut self.cursor;
        let effects = match action {
            Action::Up => {
                *c = c.saturating_sub(1);
                component::changed()
            }
            Action::Down => {
                *c = (*c + 1).min(last);
                component::changed()
            }
            Action::PageUp => {
                *c = c.saturating_sub(page);
                component::changed()
            }
            Action::PageDown => {
                *c = (*c + page).min(last);
                component::changed()
            }
            Action::Home => {
                *c = 0;
                component::changed()
            }
            Action::End => {
                *c = last;
                component::changed()
            }
            Action::Select => {
                return match self.data.as_ref().and_then(|d| d.source_at(self.cursor)) {
                    Some(e) => vec![Effect::Reveal(e)],
                    None => component::ignored(),
                };
            }
            Action::ClearMark => {
                self.mark = None;
                vec![Effect::RebuildContext]
            }
            Action::ToggleLive => {
                self.live = !self.live;
                self.data = None;
                let said = if self.live {
                    "what bonsai's Pi package sends at this entry (bonsai.live.policy in Pi's settings)"
                } else {
                    "the session's context at this entry"
                };
                vec![Effect::RebuildContext, Effect::Say(said.into())]
            }
            Action::Close => return vec![Effect::Close],
            Action::OpenHelp => return vec![Effect::Help(Mode::Context)],
            _ => return component::ignored(),
        };
        self.keep_cursor_visible(height);
        effects
    }
}
