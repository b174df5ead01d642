//! The tree pane's keys (Pi's `/tree`): moving, folding, filtering, going to the leaf,
//! showing label times, jumping between compactions. Its state is the engine's `TreeView`; the session is read, never
//! changed. What needs more than the tree (jumps to the cut or the mark, previews, writes) is
//! the app's.

use crate::engine::load::entry::Kind;
use crate::engine::load::session::Session;
use crate::engine::view::tree_view::TreeView;
use crate::ui::action::Action;
use crate::ui::component::{self, Effect};

impl crate::ui::component::Component for TreeView {
    type Lent<'a> = (&'a Session, usize);
    const NAME: &'static str = "tree pane";

    /// A key in the tree pane. `page`: rows a page moves.
    fn update(
        &mut self,
        action: &crate::ui::action::Action,
        (s, page): Self::Lent<'_>,
    ) -> Vec<crate::ui::component::Effect> {
        let view = self;
        match action {
            Action::Up => view.move_up(),
            Action::Down => view.move_down(),
            Action::PageUp => view.page_up(page),
            Action::PageDown => view.page_down(page),
            Action::Home => view.selected = 0,
            Action::End => view.selected = view.visible.len().saturating_sub(1),
            Action::FoldOrUp => view.fold_or_up(s),
            Action::UnfoldOrDown => view.unfold_or_down(s),
            Action::GoToLeaf => {
                if let Some(leaf) = s.leaf() {
                    view.select_entry(s, leaf);
                }
            }
            Action::SetFilter(f) => view.set_filter(s, *f),
            Action::ToggleFilter(f) => view.toggle_filter(s, *f),
            Action::CycleFilter { back } => {
                let f = if *back { view.filter.prev() } else { view.filter.next() };
                view.set_filter(s, f)
            }
            Action::ToggleLabelTimes => view.show_label_times = !view.show_label_times,
            Action::JumpCompaction { next } => return jump_compaction(view, s, *next),
            _ => return component::ignored(),
        }
        component::changed()
    }
}

/// The next (or previous) compaction among the shown rows, or why there is none.
fn jump_compaction(view: &mut TreeView, s: &Session, next: bool) -> Vec<Effect> {
    let rows = &view.visible;
    let is_compaction = |k: usize| matches!(s.entries[view.flat[rows[k]]].kind, Kind::Compaction(_));
    let cur = view.selected;
    let found = if next {
        (cur + 1..rows.len()).find(|&k| is_compaction(k))
    } else {
        (0..cur).rev().find(|&k| is_compaction(k))
    };
    match found {
        Some(k) => {
            view.selected = k;
            component::changed()
        }
        None => vec![Effect::Say(format!(
            "no compaction {} this row",
            if next { "below" } else { "above" }
        ))],
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::load::session::Session;
    use crate::engine::view::tree_view::{FilterMode, TreeView};
    use crate::ui::action::Action;
    use crate::ui::component::Component;

    fn update(v: &mut TreeView, s: &Session, a: &Action, page: usize) -> Vec<Effect> {
        v.update(a, (s, page))
    }
    use crate::ui::component::Effect;

    #[test]
    fn the_tree_pane_moves_folds_and_filters_on_the_session_alone() {
        let s = Session::from_bytes(include_bytes!("../../../fixtures/pi-0.87.1/tour.jsonl").to_vec()).unwrap();
        let tree = crate::engine::view::tree::Tree::build(&s);
        let mut v = TreeView::new(&s, &tree, s.leaf(), FilterMode::Default, 0);
        // It opens at Pi's leaf (or the row nearest it that the filter shows).
        let leaf_row = v.selected;
        assert!(leaf_row > 1);
        assert!(update(&mut v, &s, &Action::Home, 10).is_empty());
        assert_eq!(v.selected, 0);
        update(&mut v, &s, &Action::Down, 10);
        assert_eq!(v.selected, 1);
        update(&mut v, &s, &Action::GoToLeaf, 10);
        assert_eq!(v.selected, leaf_row, "back at the leaf");
        let shown = v.visible.len();
        update(&mut v, &s, &Action::SetFilter(FilterMode::All), 10);
        assert!(v.visible.len() >= shown, "all shows at least what default shows");
        assert_eq!(v.filter, FilterMode::All);
        update(&mut v, &s, &Action::CycleFilter { back: true }, 10);
        assert_ne!(v.filter, FilterMode::All);
        assert!(!v.show_label_times);
        update(&mut v, &s, &Action::ToggleLabelTimes, 10);
        assert!(v.show_label_times);
        assert!(matches!(
            update(&mut v, &s, &Action::Compact, 10)[..],
            [Effect::Ignored]
        ));
        // Between compactions: the one above the leaf, then none above it.
        update(&mut v, &s, &Action::SetFilter(FilterMode::All), 10);
        update(&mut v, &s, &Action::GoToLeaf, 10);
        assert!(update(&mut v, &s, &Action::JumpCompaction { next: false }, 10).is_empty());
        let at = v.flat[v.visible[v.selected]];
        assert!(matches!(
            s.entries[at].kind,
            crate::engine::load::entry::Kind::Compaction(_)
        ));
        assert!(matches!(
            &update(&mut v, &s, &Action::JumpCompaction { next: false }, 10)[..],
            [Effect::Say(t)] if t == "no compaction above this row"
        ));
    }
}
