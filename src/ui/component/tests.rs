//! Each component's update run on values alone (no disk, no clock, no terminal): what it
//! does to its own state and the effects it asks for.

use super::{Component, Effect};
use crate::engine::edit::prune::{self, Policy, PruneSettings, Zone};
use crate::engine::load::session::Session;
use crate::engine::view::tokens::{Encoding, TokenCache};
use crate::ui::action::Action;
use crate::ui::chores::{Chore, FileChore};
use crate::ui::context_view::{self, ContextState};
use crate::ui::dialog::{Dialog, InputPurpose, NavInfo, PendingWrite, PlannedCompaction, Seen};
use crate::ui::fills::{self, FillsState};
use crate::ui::input::LineEditor;
use crate::ui::mode::Mode;
use crate::ui::picker::{Picker, PickerFocus};
use crate::ui::prune_list::PlanList;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use std::sync::Arc;

fn session(bytes: &'static [u8]) -> Session {
    Session::from_bytes(bytes.to_vec()).unwrap()
}

fn tour() -> Session {
    session(include_bytes!("../../../fixtures/pi-0.87.1/tour.jsonl"))
}

fn long() -> Session {
    session(include_bytes!("../../../fixtures/pi-0.87.1/long.jsonl"))
}

fn typed(c: char) -> Action {
    Action::Edit(KeyEvent::from(KeyCode::Char(c)))
}

#[test]
fn the_context_view_moves_its_cursor_and_asks_the_app_to_rebuild_or_reveal() {
    let s = tour();
    let leaf = s.leaf().unwrap();
    let data = context_view::build(&s, 1, leaf, None, Encoding::O200k, &TokenCache::default(), None);
    let n = data.aligned.len();
    assert!(n > 3, "the tour's context has messages");
    let mut c = ContextState {
        data: Some(Box::new(data)),
        mark: Some(0),
        ..Default::default()
    };
    assert!(c.update(&Action::Down, (10, 2)).is_empty());
    assert!(c.update(&Action::Down, (10, 2)).is_empty());
    assert_eq!((c.cursor, c.scroll), (2, 1), "the cursor stays among the 2 rows shown");
    c.update(&Action::End, (10, 2));
    assert_eq!((c.cursor, c.scroll), (n - 1, n - 2));
    c.update(&Action::PageUp, (10, 2));
    assert_eq!(c.cursor, (n - 1).saturating_sub(10));
    let source = c.data.as_ref().unwrap().source_at(c.cursor);
    match (&c.update(&Action::Select, (10, 2))[..], source) {
        ([Effect::Reveal(e)], Some(s)) => assert_eq!(*e, s),
        ([Effect::Ignored], None) => {}
        (other, s) => panic!("Enter at a message from {s:?}: {other:?}"),
    }
    assert!(matches!(
        c.update(&Action::ClearMark, (10, 2))[..],
        [Effect::RebuildContext]
    ));
    assert_eq!(c.mark, None);
    let fx = c.update(&Action::ToggleLive, (10, 2));
    assert!(matches!(&fx[..], [Effect::RebuildContext, Effect::Say(t)] if t.contains("Pi package")));
    assert!(c.live && c.data.is_none(), "the live view is built anew");
    assert!(matches!(c.update(&Action::Close, (10, 2))[..], [Effect::Close]));
    assert!(matches!(
        c.update(&Action::OpenHelp, (10, 2))[..],
        [Effect::Help(Mode::Context)]
    ));
    assert!(matches!(c.update(&Action::Quit, (10, 2))[..], [Effect::Ignored]));
}

#[test]
fn the_fills_view_reveals_the_largest_message_under_its_cursor() {
    let s = long();
    let leaf = s.leaf().unwrap();
    let data = fills::build(&s, 1, leaf, Encoding::O200k, &TokenCache::default());
    let n = data.largest.len();
    assert!(n > 1);
    let second = data.largest[1].entry;
    let mut f = FillsState {
        data: Some(Box::new(data)),
        ..Default::default()
    };
    assert!(f.update(&Action::Down, ()).is_empty());
    assert!(matches!(f.update(&Action::Select, ())[..], [Effect::Reveal(e)] if e == second));
    f.update(&Action::End, ());
    assert_eq!(f.cursor, n - 1);
    f.update(&Action::Home, ());
    assert_eq!(f.cursor, 0);
    assert!(matches!(
        f.update(&Action::OpenHelp, ())[..],
        [Effect::Help(Mode::Fills)]
    ));
    let mut empty = FillsState::default();
    assert!(matches!(empty.update(&Action::Select, ())[..], [Effect::Ignored]));
}

#[test]
fn the_plan_list_leaves_items_out_and_asks_to_confirm_what_is_left() {
    let s = long();
    let leaf = s.leaf().unwrap();
    let plan = prune::plan(&s, leaf, Policy::Output, &PruneSettings::default(), true, Zone::Green);
    let rows: Vec<usize> = (0..plan.items.len())
        .filter(|&k| plan.items[k].change.writes())
        .collect();
    assert!(rows.len() >= 2, "the long fixture has outputs to prune: {}", plan.note);
    let mut l = PlanList {
        plan: Arc::new(plan),
        rows: rows.clone(),
        cursor: 0,
        left_out: Default::default(),
    };
    assert!(l.update(&Action::Toggle, 5).is_empty());
    assert!(
        l.left_out.contains(&rows[0]) && l.cursor == 1,
        "Space leaves it out and moves on"
    );
    let entry = l.plan.items[rows[1]].entry;
    assert!(matches!(l.update(&Action::Select, 5)[..], [Effect::Reveal(e)] if e == entry));
    match &l.update(&Action::ApplyPrune, 5)[..] {
        [Effect::Close, Effect::ConfirmPrune { plan, left_out: 1 }] => {
            assert!(plan.items.iter().filter(|i| i.change.writes()).count() == rows.len() - 1)
        }
        other => panic!("a: {other:?}"),
    }
    // Everything left out: nothing to write, said.
    for k in &rows {
        l.left_out.insert(*k);
    }
    assert!(
        matches!(&l.update(&Action::ApplyPrune, 5)[..], [Effect::Close, Effect::Say(t)] if t.contains("nothing to write"))
    );
}

#[test]
fn the_picker_opens_lists_pins_and_quits_through_effects() {
    let mut p = Picker::from_sessions(crate::ui::picker::snapshots::acme());
    p.focus = PickerFocus::Tree;
    // The first rows are projects; find a session.
    while p.selected_path().is_none() {
        assert!(matches!(p.update(&Action::Down, 10)[..], []), "moves down to a session");
    }
    let path = p.selected_path().unwrap();
    assert!(matches!(&p.update(&Action::PinSession, 10)[..], [Effect::Chore(Chore::TogglePin(q))] if *q == path));
    assert!(matches!(&p.update(&Action::Select, 10)[..], [Effect::Open(q)] if *q == path));
    assert_eq!(p.opening.as_ref(), Some(&path), "the picker says it is opening it");
    let all = p.all;
    assert!(matches!(p.update(&Action::ToggleAllProjects, 10)[..], [Effect::List { all: a }] if a != all));
    assert!(p.loading, "listing again");
    p.loading = false;
    assert!(p.update(&Action::StartSearch, 10).is_empty());
    assert_eq!(p.focus, PickerFocus::Filter);
    assert!(p.update(&typed('z'), 10).is_empty());
    assert!(p.update(&Action::Close, 10).is_empty(), "Esc clears the filter");
    assert_eq!(p.focus, PickerFocus::Tree);
    assert!(matches!(p.update(&Action::Close, 10)[..], [Effect::Close]));
    p.launched_without_session = true;
    assert!(
        matches!(p.update(&Action::Close, 10)[..], [Effect::Quit]),
        "nothing under it: Esc quits"
    );
    // A search inside the sessions starts once typed, not before.
    p.update(&Action::SearchSessions, 10);
    assert_eq!(p.focus, PickerFocus::Query);
    assert!(
        matches!(p.update(&Action::Select, 10)[..], [Effect::Ignored]),
        "no query yet"
    );
    p.update(&typed('x'), 10);
    assert!(matches!(p.update(&Action::Select, 10)[..], [Effect::SearchSessions]));
}

#[test]
fn the_find_and_tree_search_inputs_say_what_to_search() {
    let mut f = crate::ui::app::Find::typing();
    assert!(
        matches!(f.update(&Action::Close, ())[..], [Effect::EndFind]),
        "nothing found yet: Esc ends it"
    );
    let mut f = crate::ui::app::Find::typing();
    f.update(&typed('p'), ());
    f.update(&Action::Paste("ath".into()), ());
    assert!(matches!(&f.update(&Action::Select, ())[..], [Effect::Find(q)] if q == "path"));
    assert!(f.editor.is_none(), "typing is over");
    let mut f = crate::ui::app::Find::typing();
    assert!(matches!(f.update(&Action::Select, ())[..], [Effect::EndFind]));

    let mut ed = crate::ui::tree_search::TreeSearch(LineEditor::new("", false));
    let update = |ed: &mut crate::ui::tree_search::TreeSearch, a: &Action| ed.update(a, ());
    assert!(matches!(&update(&mut ed, &typed('b'))[..], [Effect::FilterTree(q)] if q == "b"));
    assert!(matches!(
        update(&mut ed, &Action::Down)[..],
        [Effect::MoveTree { down: true }]
    ));
    assert!(
        matches!(update(&mut ed, &Action::Select)[..], [Effect::Close]),
        "Enter keeps the filter"
    );
    assert!(matches!(&update(&mut ed, &Action::Close)[..], [Effect::Close, Effect::FilterTree(q)] if q.is_empty()));
}

#[test]
fn the_dialogs_change_themselves_and_ask_for_writes_as_effects() {
    let seen = Seen { len: 100, entries: 5 };
    let rect = Rect::new(0, 0, 80, 20);
    let mut d = Dialog::Navigate {
        target: 3,
        choice: 0,
        seen,
        info: NavInfo {
            entries: 1,
            messages: 1,
            tokens: 10,
            to_user_message: false,
        },
    };
    assert!(matches!(
        d.update(&Action::Select, rect)[..],
        [Effect::Navigate { target: 3, .. }]
    ));
    assert!(d.update(&Action::Up, rect).is_empty(), "Pi's choices wrap");
    assert!(matches!(d, Dialog::Navigate { choice: 2, .. }));
    assert!(
        d.update(&Action::Select, rect).is_empty(),
        "custom instructions: the dialog becomes an input"
    );
    assert!(matches!(
        d,
        Dialog::Input {
            purpose: InputPurpose::NavigateInstructions { target: 3 },
            ..
        }
    ));
    assert!(matches!(
        d.update(&Action::Close, rect)[..],
        [Effect::AskNavigate {
            target: 3,
            choice: 2,
            ..
        }]
    ));
    d.update(&typed('w'), rect);
    assert!(matches!(&d.update(&Action::Select, rect)[..], [Effect::Submit { text, .. }] if text == "w"));

    let s = long();
    let leaf = s.leaf().unwrap();
    let plan = crate::engine::edit::entries::plan_compaction(&s, leaf, Default::default()).unwrap();
    let at = PlannedCompaction {
        leaf,
        plan: Arc::new(plan),
    };
    let mut d = Dialog::Strategies {
        at: at.clone(),
        focus: None,
        seen,
        cursor: 0,
        checked: vec![false; crate::engine::compaction::strategy::Strategy::ALL.len()],
        by: "offline".into(),
    };
    assert!(matches!(&d.update(&Action::Select, rect)[..], [Effect::Say(t)] if t.contains("at least one")));
    d.update(&Action::Toggle, rect);
    assert!(
        matches!(&d.update(&Action::Select, rect)[..], [Effect::Compact { at: asked, strategies, .. }] if *asked == at && strategies.len() == 1)
    );

    let request = crate::engine::edit::plan::WriteRequest {
        write: crate::engine::edit::plan::Write::Label {
            target: "abc".into(),
            label: Some("x".into()),
        },
        seen: None,
    };
    let mut d = Dialog::Confirm {
        title: "t".into(),
        lines: vec![],
        then: Box::new(PendingWrite {
            request,
            what: "label".into(),
            select: None,
        }),
    };
    assert!(matches!(d.update(&Action::Yes, rect)[..], [Effect::Write(_)]));
    assert!(matches!(&d.update(&Action::No, rect)[..], [Effect::Close, Effect::Declined(t)] if t == "nothing written"));
    let mut d = Dialog::ConfirmRewrite {
        title: "t".into(),
        lines: vec![],
        then: FileChore::Delete("abc".into()),
    };
    assert!(
        matches!(&d.update(&Action::Yes, rect)[..], [Effect::Close, Effect::FileChore(FileChore::Delete(t))] if t == "abc")
    );
    assert!(matches!(&d.update(&Action::No, rect)[..], [Effect::Close, Effect::Say(t)] if t == "nothing deleted"));
    assert!(matches!(d.update(&Action::Up, rect)[..], [Effect::Ignored]));
}

#[test]
fn the_browsers_keys_change_the_screen_and_ask_for_jumps_copies_and_the_mark() {
    use crate::ui::browse_keys::BrowseView;
    use crate::ui::component::Terminal;
    use crate::ui::screen::{Focus, Screen};
    let s = long();
    let leaf = s.leaf().unwrap();
    let plan = crate::engine::edit::entries::plan_compaction(&s, leaf, Default::default());
    fn update(s: &mut Screen, a: &Action, v: &BrowseView) -> Vec<Effect> {
        s.update(a, v)
    }
    let mut screen = Screen::new(Rect::new(0, 0, 100, 30), (0.5, 0.8));
    let view = |mark: Option<usize>, cut: Option<&'static _>| BrowseView {
        session: &s,
        selected: Some(leaf),
        cut,
        mark,
        detail_text: Some("the entry".into()),
        keep_recent: 1_000,
        searching: true,
        inside_pi: false,
    };
    let v = view(None, None);
    // Jumps: said while the cut is being worked out; to the first kept entry once it is.
    assert!(
        matches!(&update(&mut screen, &Action::JumpFirstKept, &v)[..], [Effect::Say(t)] if t.contains("being computed"))
    );
    let cut: &'static _ = Box::leak(Box::new(plan));
    let first_kept = cut.as_ref().unwrap().first_kept_entry;
    let with_cut = view(None, Some(cut));
    assert!(
        matches!(update(&mut screen, &Action::JumpFirstKept, &with_cut)[..], [Effect::Reveal(e)] if e == first_kept)
    );
    assert!(matches!(&update(&mut screen, &Action::JumpMark, &v)[..], [Effect::Say(t)] if t.contains("m marks")));
    // The mark: set on the selection, then cleared.
    assert!(matches!(update(&mut screen, &Action::ToggleMark, &v)[..], [Effect::Mark(Some(e)), _] if e == leaf));
    assert!(matches!(
        update(&mut screen, &Action::ToggleMark, &view(Some(leaf), None))[..],
        [Effect::Mark(None), _]
    ));
    assert!(matches!(
        update(&mut screen, &Action::JumpMark, &view(Some(3), None))[..],
        [Effect::Reveal(3)]
    ));
    // Copies and the pager are the terminal's.
    let id = s.entries[leaf].id.to_string();
    assert!(matches!(&update(&mut screen, &Action::CopyId, &v)[..],
        [Effect::Say(_), Effect::Terminal(Terminal::Clipboard(t))] if *t == id));
    assert!(matches!(&update(&mut screen, &Action::OpenPager, &v)[..],
        [Effect::Terminal(Terminal::Pager(t))] if t == "the entry"));
    // keepRecentTokens by steps, never below 0.
    assert!(matches!(
        update(&mut screen, &Action::KeepRecentStep(1), &v)[..],
        [Effect::KeepRecent(1_500)]
    ));
    assert!(matches!(
        update(&mut screen, &Action::KeepRecentStep(-3), &v)[..],
        [Effect::KeepRecent(0)]
    ));
    // The panes: focus, the detail pane, the cut preview; Esc closes the innermost.
    assert!(update(&mut screen, &Action::ToggleFocus, &v).is_empty());
    assert_eq!(screen.focus, Focus::Detail);
    assert!(update(&mut screen, &Action::Close, &v).is_empty());
    assert_eq!(screen.focus, Focus::Tree);
    screen.prune_preview = true;
    assert!(matches!(
        update(&mut screen, &Action::ToggleCutPreview, &v)[..],
        [Effect::CutPreview(true)]
    ));
    assert!(screen.cut_preview && !screen.prune_preview);
    assert!(matches!(
        update(&mut screen, &Action::Close, &v)[..],
        [Effect::CutPreview(false)]
    ));
    assert!(!screen.cut_preview);
    assert!(matches!(&update(&mut screen, &Action::Close, &v)[..], [Effect::FilterTree(t)] if t.is_empty()));
    // Nothing left to close: Esc means nothing here, and inside Pi's /bonsai it goes back
    // to Pi, as Esc leaves Pi's own views.
    let top = BrowseView {
        searching: false,
        ..view(None, None)
    };
    assert!(matches!(
        update(&mut screen, &Action::Close, &top)[..],
        [Effect::Ignored]
    ));
    let in_pi = BrowseView { inside_pi: true, ..top };
    assert!(matches!(
        update(&mut screen, &Action::Close, &in_pi)[..],
        [Effect::Quit]
    ));
    screen.focus = Focus::Detail;
    update(&mut screen, &Action::ToggleDetail, &v);
    assert!(!screen.show_detail && screen.focus == Focus::Tree);
    // Anything else is not the browser's.
    assert!(matches!(
        update(&mut screen, &Action::Compact, &v)[..],
        [Effect::Ignored]
    ));
}

/// Every component keeps the one contract: this list names them all (the architecture test
/// holds that no other `update` exists outside it).
#[test]
fn every_component_keeps_the_contract() {
    fn name<C: Component>() -> &'static str {
        C::NAME
    }
    let names = [
        name::<crate::ui::screen::Screen>(),
        name::<crate::engine::view::tree_view::TreeView>(),
        name::<crate::ui::tree_search::TreeSearch>(),
        name::<crate::ui::detail::DetailState>(),
        name::<crate::ui::help::HelpScroll>(),
        name::<ContextState>(),
        name::<FillsState>(),
        name::<crate::ui::audit_view::AuditState>(),
        name::<crate::ui::prune_list::PlanList>(),
        name::<crate::ui::usage_view::UsageView>(),
        name::<crate::ui::picker::Picker>(),
        name::<crate::ui::find::Find>(),
        name::<Dialog>(),
    ];
    assert_eq!(
        names,
        [
            "browser keys",
            "tree pane",
            "tree search",
            "detail pane",
            "help and message log",
            "context view",
            "fills view",
            "audit view",
            "prune plan list",
            "usage view",
            "picker",
            "find",
            "dialog"
        ]
    );
    // Each draws itself from its own state and what the root lends (`Drawable`), but those
    // drawn inside another's frame: the browser's keys (the whole screen), the tree search's
    // text and find's bar (the status line).
    fn drawn<C: Component + super::Drawable>() -> &'static str {
        C::NAME
    }
    let drawn = [
        drawn::<crate::engine::view::tree_view::TreeView>(),
        drawn::<crate::ui::detail::DetailState>(),
        drawn::<crate::ui::help::HelpScroll>(),
        drawn::<ContextState>(),
        drawn::<FillsState>(),
        drawn::<crate::ui::audit_view::AuditState>(),
        drawn::<crate::ui::prune_list::PlanList>(),
        drawn::<crate::ui::usage_view::UsageView>(),
        drawn::<crate::ui::picker::Picker>(),
        drawn::<Dialog>(),
    ];
    let not_drawn: Vec<_> = names.iter().filter(|n| !drawn.contains(n)).collect();
    assert_eq!(not_drawn, [&"browser keys", &"tree search", &"find"]);
}

/// A confirm that is not a write says what its yes does (the trash confirm said "yes, write
/// it").
#[test]
fn a_confirm_says_what_its_yes_does() {
    let trash = Dialog::ConfirmRewrite {
        title: "Move to the trash".into(),
        lines: vec!["a.jsonl".into()],
        then: FileChore::Trash("a.jsonl".into()),
    };
    let hints = trash.hints();
    assert!(
        hints.iter().any(|(k, l)| k == "y" && *l == "yes, move it to the trash"),
        "{hints:?}"
    );
    assert!(!hints.iter().any(|(_, l)| l.contains("write")), "{hints:?}");
}
