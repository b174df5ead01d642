//! The picker's keys: its own update. It moves, folds, filters and types its search itself;
//! opening a session, listing again, searching the sessions and pinning are effects the app
//! carries out (jobs), so this runs without a disk.

use super::{Picker, PickerFocus};
use crate::ui::action::Action;
use crate::ui::chores::Chore;
use crate::ui::component::{self, Effect, changed_if};

impl Picker {
    /// Open `path` (at the search hit's entry): the picker shows it is opening until the
    /// session is read.
    fn open(&mut self, path: std::path::PathBuf, at: Option<String>) -> Vec<Effect> {
        self.error = None;
        self.opening = Some(path.clone());
        self.open_at = at;
        vec![Effect::Open(path)]
    }
}

impl crate::ui::component::Component for Picker {
    type Lent<'a> = isize;
    const NAME: &'static str = "picker";

    /// A key in the picker. `page`: rows a page moves.
    fn update(
        &mut self,
        action: &crate::ui::action::Action,
        page: Self::Lent<'_>,
    ) -> Vec<crate::ui::component::Effect> {
        match (self.focus, action) {
            // Typing the name filter.
            (PickerFocus::Filter, Action::Edit(key)) => changed_if(self.edit_filter(*key)),
            (PickerFocus::Filter, Action::Paste(text)) => {
                self.paste(text);
                component::changed()
            }
            (PickerFocus::Filter, Action::Select) => {
                self.focus = PickerFocus::Tree;
                component::changed()
            }
            (PickerFocus::Filter, Action::Close) => {
                self.focus = PickerFocus::Tree;
                self.clear_filter();
                component::changed()
            }
            // Typing a search inside the sessions.
            (PickerFocus::Query, Action::Edit(key)) => {
                changed_if(self.search.as_mut().is_some_and(|s| s.query.input(*key)))
            }
            (PickerFocus::Query, Action::Paste(text)) => {
                self.paste(text);
                component::changed()
            }
            (PickerFocus::Query, Action::Close) => {
                self.focus = PickerFocus::Tree;
                self.search = None;
                component::changed()
            }
            (PickerFocus::Query, Action::Select) => {
                if !self.begin_search() {
                    return component::ignored();
                }
                // The sessions listed now; a listing still being read is waited for.
                if self.loading {
                    vec![]
                } else {
                    vec![Effect::SearchSessions]
                }
            }
            // Going through the hits.
            (PickerFocus::Hits, Action::Select) => match self.selected_hit() {
                Some((path, entry)) => self.open(path, Some(entry)),
                None => component::ignored(),
            },
            (PickerFocus::Hits, Action::Close) => changed_if(self.stop_or_close_search()),
            (PickerFocus::Hits, Action::ResumeInPi) => match self.selected_hit() {
                Some((path, _)) => vec![Effect::ResumeInPi(path)],
                None => component::ignored(),
            },
            (PickerFocus::Tree, Action::ResumeInPi) => match self.selected_path() {
                Some(path) => vec![Effect::ResumeInPi(path)],
                None => vec![Effect::Say("select a session to resume it in Pi".into())],
            },
            (_, Action::SearchSessions) => {
                self.open_search();
                component::changed()
            }
            // The tree (and moving in the hits).
            (_, Action::Up) => changed_if(self.move_by(-1)),
            (_, Action::Down) => changed_if(self.move_by(1)),
            (_, Action::PageUp) => changed_if(self.move_by(-page)),
            (_, Action::PageDown) => changed_if(self.move_by(page)),
            (_, Action::Home) => changed_if(self.first_or_last(false)),
            (_, Action::End) => changed_if(self.first_or_last(true)),
            (PickerFocus::Tree, Action::FoldOrUp) => changed_if(self.fold(false)),
            (PickerFocus::Tree, Action::UnfoldOrDown) => changed_if(self.fold(true)),
            (PickerFocus::Tree, Action::StartSearch) => {
                self.focus = PickerFocus::Filter;
                component::changed()
            }
            (PickerFocus::Tree, Action::PinSession) => match self.selected_path() {
                Some(path) => vec![Effect::Chore(Chore::TogglePin(path))],
                None => vec![Effect::Say("pins are for sessions: select one".into())],
            },
            (PickerFocus::Tree, Action::ToggleAllProjects) => {
                self.loading = true;
                self.search = None;
                vec![Effect::List { all: !self.all }]
            }
            (PickerFocus::Tree, Action::Select) => match self.selected_path() {
                Some(path) => self.open(path, None),
                // A project, the pins or a problem: Enter folds or unfolds it.
                None => changed_if(self.toggle_selected()),
            },
            (PickerFocus::Tree, Action::Close) if self.launched_without_session => vec![Effect::Quit],
            (PickerFocus::Tree, Action::Close) => vec![Effect::Close],
            _ => component::ignored(),
        }
    }
}

impl crate::ui::component::Drawable for Picker {
    type View<'a> = ();
    fn draw(&self, f: &mut ratatui::Frame, area: ratatui::layout::Rect, _: ()) {
        self.render(f, area)
    }
}
