//! The tree search's input (`/`), a component over a line editor.

use super::action::Action;
use super::component::{self, Effect};
use super::input::LineEditor;

/// The tree search's text: a line editor whose every edit filters the tree.
pub struct TreeSearch(pub LineEditor);

impl crate::ui::component::Component for TreeSearch {
    type Lent<'a> = ();
    const NAME: &'static str = "tree search";

    /// The tree search's input (Pi's `/tree` search, `/`) as a component: every edit filters
    /// the tree again; Enter keeps the filter, Esc clears it; ↑/↓ move in the filtered tree.
    fn update(&mut self, action: &crate::ui::action::Action, (): Self::Lent<'_>) -> Vec<crate::ui::component::Effect> {
        let editor = &mut self.0;
        match action {
            Action::Select => vec![Effect::Close],
            Action::Close => vec![Effect::Close, Effect::FilterTree(String::new())],
            Action::Up => vec![Effect::MoveTree { down: false }],
            Action::Down => vec![Effect::MoveTree { down: true }],
            Action::Edit(key) if editor.input(*key) => vec![Effect::FilterTree(editor.text())],
            Action::Paste(text) => {
                editor.paste(text);
                vec![Effect::FilterTree(editor.text())]
            }
            _ => component::ignored(),
        }
    }
}
