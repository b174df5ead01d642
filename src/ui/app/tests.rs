//! The app driven by keys, clicks and the clock on copies of Pi's sessions: every listed key
//! works in its mode, and the interaction bugs found by using it stay fixed.

use super::{App, Overlay, Terminal};
use crate::engine::load::entry::{Kind, Role};
use crate::ui::action::Action;
use crate::ui::component::Component;
use crate::ui::dialog::Dialog;
use crate::ui::keymap::{self, Mode};
use crate::ui::tests::{app_for, ch, ctrl, key, own, render, shift, typed};
use crossterm::event::{KeyCode, KeyEvent};
use std::io::Write;
use std::path::{Path, PathBuf};

pub(super) fn temp_copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name.rsplit('/').next().unwrap());
    std::fs::copy(own(name), &p).unwrap();
    (dir, p)
}

/// Pi appends a user message under its leaf (what Pi does while bonsai is open).
fn pi_appends(p: &Path, a: &App, id: &str) {
    let s = &a.doc.session;
    let leaf = &s.entries[s.leaf().unwrap()].id;
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    writeln!(
        f,
        r#"{{"type":"message","id":"{id}","parentId":"{leaf}","timestamp":"2026-11-23T06:00:00.000Z","message":{{"role":"user","content":"Pi keeps going","timestamp":1}}}}"#
    )
    .unwrap();
}

/// The first row on screen with a fold marker (`⊟`): its row and the marker's column in the
/// row's drawing.
fn fold_marker_on_screen(a: &App) -> (usize, usize) {
    a.tree
        .frame
        .rows
        .iter()
        .enumerate()
        .find_map(|(k, r)| r.row.prefix.chars().position(|c| c == '⊟').map(|c| (k, c)))
        .expect("a fold marker on screen")
}

/// The newest message of `role` on Pi's path.
fn newest_on_path(a: &App, role: Role) -> usize {
    let s = &a.doc.session;
    *s.path_to(s.leaf().unwrap())
        .iter()
        .rev()
        .find(|&&i| s.entries[i].message().is_some_and(|m| m.role == role))
        .unwrap()
}

/// An entry in the middle of the active path (not the leaf).
/// A user message two thirds down Pi's path.
fn middle_of_path(a: &App) -> usize {
    let s = &a.doc.session;
    let path = s.path_to(s.leaf().unwrap());
    *path[..path.len() * 2 / 3]
        .iter()
        .rev()
        .find(|&&i| s.entries[i].message().is_some_and(|m| m.role == Role::User))
        .unwrap()
}

fn select(a: &mut App, entry: usize) {
    let s = a.doc.session.clone();
    a.tree.view.select_entry(&s, entry);
    a.selection_changed();
    a.run_jobs_now();
}

// ---- Every key the help lists does something in its mode ----------------------------------

/// Everything a key can change that a user sees or gets.
fn fingerprint(a: &mut App) -> String {
    let effects = a.take_effects();
    let queued = a.pending.queue.len();
    let state = format!("{:?}|{:?}|{}|{:?}|{}", a.mode(), a.log.status, a.quit, effects, queued);
    let (w, h) = (a.screen.size.width, a.screen.size.height);
    format!("{state}\n{}", render(a, w, h))
}

/// Apps in each mode, set up so that each of the mode's keys has something to act on (a
/// selection in the middle, a scrolled pane, a search to clear, a mark to go to…).
fn apps_in(mode: Mode, p: &Path) -> Vec<App> {
    let base = || {
        let mut a = app_for(p);
        a.update(Action::Resize { width: 100, height: 30 });
        let m = middle_of_path(&a);
        select(&mut a, m);
        a
    };
    let mut out = vec![];
    match mode {
        Mode::Tree => {
            out.push(base());
            let mut a = base();
            a.handle_key(ch('/'));
            typed(&mut a, "the");
            a.handle_key(key(KeyCode::Enter));
            out.push(a);
            let mut a = base();
            a.handle_key(ctrl('a'));
            out.push(a);
        }
        Mode::CutPreview => {
            let mut a = base();
            a.handle_key(ch('c'));
            out.push(a);
            let mut a = base();
            a.handle_key(ctrl('a'));
            a.handle_key(ch('c'));
            out.push(a);
        }
        Mode::Prune => {
            let mut a = base();
            a.handle_key(ch('p'));
            out.push(a);
            // A plan with edits to apply (a small budget; forced).
            let mut a = base();
            a.handle_key(ch('l'));
            a.handle_key(ch('p'));
            a.handle_key(ch('!'));
            out.push(a);
        }
        Mode::PrunePlan => {
            let mut a = base();
            a.handle_key(ch('l'));
            a.handle_key(ch('p'));
            a.handle_key(ch('!'));
            a.handle_key(ch('r'));
            a.handle_key(key(KeyCode::Down));
            out.push(a);
        }
        Mode::Usage => {
            // Opened for real (the job reads this session's calls), and with a month of calls
            // over two projects and two models, a day in the middle selected, a table scrolled.
            let mut a = base();
            a.handle_key(ch('$'));
            a.run_jobs_now();
            out.push(a);
            for tab in 0..3 {
                let mut a = base();
                a.handle_key(ch('$'));
                let (v, _) = a.parts.usage.as_mut().unwrap();
                let generation = v.generation;
                let mut data = crate::ui::usage_view::snapshots::data(true);
                data.generation = generation;
                v.set_data(data);
                for _ in 0..=tab {
                    v.update(&Action::NextTab, ());
                }
                v.update(&Action::Down, ());
                v.update(&Action::Up, ());
                v.update(&Action::Up, ());
                out.push(a);
            }
        }
        Mode::Audit => {
            let mut a = base();
            let s = a.doc.session.clone();
            let leaf = s.leaf().unwrap();
            if let Some(&c) = crate::engine::compaction::audit::summaries_on_path(&s, leaf).last() {
                select(&mut a, c);
                a.handle_key(ch('a'));
                a.run_jobs_now();
                a.handle_key(key(KeyCode::Down));
                out.push(a);
            }
        }
        Mode::Fills => {
            let mut a = base();
            a.handle_key(ch('w'));
            a.run_jobs_now();
            a.handle_key(key(KeyCode::Down));
            out.push(a);
        }
        Mode::Detail => {
            let mut a = base();
            // A long entry: the biggest tool result.
            let s = a.doc.session.clone();
            let big = (0..s.entries.len())
                .filter(|&i| s.entries[i].message().is_some_and(|m| m.role == Role::ToolResult))
                .max_by_key(|&i| s.measures_of(i).map(|m| m.est_tokens).unwrap_or(0))
                .unwrap();
            select(&mut a, big);
            a.handle_key(key(KeyCode::Tab));
            for _ in 0..3 {
                a.handle_key(key(KeyCode::Down));
            }
            out.push(a);
        }
        Mode::Search => {
            let mut a = base();
            a.handle_key(ch('/'));
            typed(&mut a, "e");
            out.push(a);
        }
        Mode::Find => {
            let mut a = base();
            a.handle_key(ctrl('f'));
            typed(&mut a, "file");
            out.push(a);
        }
        Mode::Context => {
            let mut a = base();
            a.handle_key(ch('m'));
            a.handle_key(ch('l'));
            a.handle_key(ch('v'));
            a.run_jobs_now();
            for _ in 0..3 {
                a.handle_key(key(KeyCode::Down));
            }
            out.push(a);
        }
        Mode::Help => {
            let mut a = base();
            a.update(Action::Resize { width: 80, height: 24 });
            a.handle_key(ch('?'));
            a.handle_key(key(KeyCode::Down));
            out.push(a);
        }
        Mode::Picker | Mode::PickerFilter | Mode::PickerQuery | Mode::PickerHits => {
            let mut a = base();
            a.handle_key(ch('o'));
            a.run_jobs_now();
            let info = |n: &str, parent: Option<&str>, ms: i64| crate::store::SessionInfo {
                path: p.with_file_name(n),
                dir: p.parent().unwrap().to_path_buf(),
                id: n.into(),
                cwd: "/x".into(),
                parent_session: parent.map(|x| p.with_file_name(x).to_string_lossy().to_string()),
                name: Some(n.into()),
                entries: 1,
                bytes: 1,
                modified_ms: ms,
                ..Default::default()
            };
            if let Some(pk) = &mut a.parts.picker {
                // b forks a: a has something to fold.
                pk.set_sessions(
                    false,
                    vec![
                        info("a.jsonl", None, 3),
                        info("b.jsonl", Some("a.jsonl"), 2),
                        info("c.jsonl", None, 1),
                    ],
                    vec![None; 3],
                    vec![],
                );
                pk.move_by(1);
            }
            a.update(Action::Resize { width: 100, height: 30 });
            match mode {
                Mode::PickerFilter => {
                    a.handle_key(ch('/'));
                    // Matches every row: the arrows have rows to move over.
                    typed(&mut a, "jsonl");
                }
                Mode::PickerQuery => {
                    a.handle_key(ch('s'));
                    typed(&mut a, "x");
                }
                Mode::PickerHits => {
                    a.handle_key(ch('s'));
                    typed(&mut a, "needle");
                    a.handle_key(key(KeyCode::Enter));
                    a.take_jobs();
                    let hit = |id: &str| crate::engine::view::search::Hit {
                        entry_id: id.into(),
                        role: "user".into(),
                        timestamp: "2026-11-20T09:00:00.000Z".into(),
                        snippet: "a needle here".into(),
                        at: 2..8,
                        matches: 1,
                        line: 3,
                    };
                    if let Some(s) = a.parts.picker.as_mut().and_then(|p| p.search.as_mut()) {
                        s.hits = vec![
                            (p.to_path_buf(), hit("e1")),
                            (p.to_path_buf(), hit("e2")),
                            (p.to_path_buf(), hit("e3")),
                        ];
                        s.selected = 1;
                        s.running = false;
                    }
                }
                _ => {
                    // Also one with a folded node to unfold.
                    let mut b = base();
                    b.parts.picker = None;
                    b.handle_key(ch('o'));
                    b.run_jobs_now();
                    if let (Some(pk), Some(pa)) = (&mut b.parts.picker, &a.parts.picker) {
                        pk.set_sessions(false, pa.sessions.clone(), vec![None; 3], vec![]);
                        pk.fold(false);
                    }
                    b.update(Action::Resize { width: 100, height: 30 });
                    out.push(b);
                }
            }
            out.push(a);
        }
        Mode::NavigateDialog => {
            let mut a = base();
            a.handle_key(key(KeyCode::Enter));
            out.push(a);
        }
        Mode::LineInput => {
            let mut a = base();
            a.handle_key(shift('L'));
            typed(&mut a, "x");
            out.push(a);
        }
        Mode::Instructions => {
            let mut a = base();
            a.handle_key(shift('C'));
            out.push(a);
        }
        Mode::SummaryPreview | Mode::Confirm => {
            let mut a = base();
            a.selection.keep_recent = 2000;
            a.handle_key(shift('C'));
            a.handle_key(key(KeyCode::Enter));
            a.run_jobs_now();
            for _ in 0..2 {
                a.handle_key(key(KeyCode::Down));
            }
            if mode == Mode::Confirm {
                // Compacting in the middle of the path starts a branch: bonsai asks.
                a.handle_key(ctrl('s'));
            } else {
                // Strategies side by side: a second tab to move to.
                let mut b = base();
                b.selection.keep_recent = 2000;
                b.handle_key(shift('C'));
                b.handle_key(key(KeyCode::Enter));
                b.run_jobs_now();
                if let Some(Dialog::Summary { tabs, .. }) = &mut b.parts.dialog {
                    let mut second = tabs[0].clone();
                    second.name = "single-shot".into();
                    tabs.push(second);
                }
                out.push(b);
            }
            out.push(a);
        }
        Mode::Strategies => {
            let mut a = base();
            a.setup.summarizer_override = Some(unreachable_model());
            a.selection.keep_recent = 2000;
            a.handle_key(shift('C'));
            a.handle_key(key(KeyCode::Enter));
            out.push(a);
        }
        Mode::Streaming => {
            let mut a = base();
            let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
            let mut tab =
                crate::ui::dialog::SummaryTab::with_text("test/model", &text, crate::ui::dialog::TabState::Running);
            tab.scroll = 2;
            let second = crate::ui::dialog::SummaryTab::with_text(
                "parallel-stitch",
                &text,
                crate::ui::dialog::TabState::Running,
            );
            a.parts.dialog = Some(Dialog::Summary {
                purpose: crate::ui::dialog::SummaryFor::Branch { target: 3, budget: 1 },
                seen: crate::ui::dialog::Seen::of(&a.doc.session),
                by: "test/model".into(),
                tabs: vec![tab, second],
                active: 0,
                job: 7,
            });
            a.pending.summary = Some((7, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false))));
            out.push(a);
        }
    }
    for a in &out {
        assert_eq!(a.mode(), mode, "setup for {mode:?}");
    }
    out
}

/// A model on a loopback port nothing listens on: the strategies' chooser opens for it, and
/// no test here lets it be called.
pub(crate) fn unreachable_model() -> crate::llm::summarize::Summarizer {
    crate::llm::summarize::Summarizer {
        model: crate::engine::load::models::ModelInfo {
            provider: "fake".into(),
            id: "fake-sonnet".into(),
            api: "anthropic-messages".into(),
            base_url: "http://127.0.0.1:9".into(),
            context_window: 200_000,
            max_tokens: 64_000,
            reasoning: false,
            custom: true,
            api_key: None,
            headers: vec![],
            cost: [3.0, 15.0, 0.3, 3.75],
        },
        key: crate::llm::auth::ApiKey {
            key: "sk-test".into(),
            source: "test".into(),
            oauth: false,
        },
        policy: crate::llm::Policy::default(),
    }
}

/// A key event for a table key (letters as terminals send them).
fn event(k: &keymap::Key) -> KeyEvent {
    KeyEvent::new(k.code, k.mods)
}

#[test]
fn every_listed_key_does_something_in_its_mode() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut dead = vec![];
    let mut hinted_ok = 0;
    for mode in Mode::ALL {
        let listed = crate::ui::help::entries(mode);
        let bindings: Vec<&keymap::Binding> = keymap::for_mode(mode).collect();
        assert_eq!(listed.len(), bindings.len(), "the help lists the table ({mode:?})");
        for b in bindings {
            for k in b.keys {
                let mut worked = false;
                for mut a in apps_in(mode, &p) {
                    let before = fingerprint(&mut a);
                    a.handle_key(event(k));
                    if fingerprint(&mut a) != before {
                        worked = true;
                        break;
                    }
                }
                if !worked {
                    dead.push(format!("{mode:?}: {} ({})", k.name(), b.label));
                } else if b.hint {
                    hinted_ok += 1;
                }
            }
        }
        // The bar lists only keys that work: each hint is a binding of this mode (tested above).
        for (keys, label) in keymap::hints(mode) {
            assert!(
                keymap::for_mode(mode).any(|b| b.hint && b.label == label && keys.starts_with(&b.keys[0].name())),
                "{mode:?}: hint {keys} {label} has no binding"
            );
        }
    }
    assert!(
        dead.is_empty(),
        "keys that do nothing in their mode:\n{}",
        dead.join("\n")
    );
    assert!(hinted_ok > 40, "{hinted_ok}");
}

#[test]
fn the_bar_never_offers_quit_where_q_does_not_quit() {
    for mode in Mode::ALL {
        let quits = keymap::action_for(mode, &ch('q')).is_some_and(|a| matches!(a, Action::Quit));
        let offers = keymap::hints(mode).iter().any(|(_, l)| *l == "quit");
        assert_eq!(quits, offers, "{mode:?}");
    }
}
#[test]
fn live_follow_keeps_selection_and_moves_with_the_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("live.jsonl");
    std::fs::copy(own("split-turn.jsonl"), &p).unwrap();
    let mut a = app_for(&p);
    // Select an earlier row, then Pi appends two entries.
    a.handle_key(KeyEvent::from(KeyCode::Up));
    a.handle_key(KeyEvent::from(KeyCode::Up));
    let chosen = a.selected().unwrap();
    let chosen_id = a.doc.session.entries[chosen].id.clone();
    let entries_before = a.doc.session.entries.len();
    let leaf_id = a.doc.session.entries[a.doc.session.leaf().unwrap()].id.clone();
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    writeln!(f, r#"{{"type":"message","id":"live0001","parentId":"{leaf_id}","timestamp":"2026-11-22T06:00:00.000Z","message":{{"role":"user","content":"one more thing","timestamp":1}}}}"#).unwrap();
    writeln!(f, r#"{{"type":"message","id":"live0002","parentId":"live0001","timestamp":"2026-11-22T06:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"sure"}}],"stopReason":"stop"}}}}"#).unwrap();
    drop(f);
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    assert_eq!(a.doc.session.entries.len(), entries_before + 2);
    assert!(a.file.live);
    assert_eq!(a.log.status.as_deref(), Some("live: 2 new entries from Pi"));
    assert_eq!(
        a.doc.session.entries[a.selected().unwrap()].id,
        chosen_id,
        "selection kept"
    );
    // At the leaf, the selection follows the new leaf.
    a.handle_key(KeyEvent::from(KeyCode::Char('l')));
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    writeln!(f, r#"{{"type":"message","id":"live0003","parentId":"live0002","timestamp":"2026-11-22T06:00:02.000Z","message":{{"role":"user","content":"and another","timestamp":2}}}}"#).unwrap();
    drop(f);
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    assert_eq!(&*a.doc.session.entries[a.selected().unwrap()].id, "live0003");
    assert_eq!(a.log.status.as_deref(), Some("live: 1 new entry from Pi"));
    // A partial line (Pi half-way through a write) is said as such, not as "0 new entries".
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    write!(f, r#"{{"type":"message","id":"live0004","par"#).unwrap();
    drop(f);
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    assert_eq!(
        a.log.status.as_deref(),
        Some("live: the file grew by a partial line (waiting for the rest)")
    );
    // Issue 22, item 10: cut back (the partial line removed) or replaced by the same entries
    // with other bytes is a rewrite, never "grew by a partial line".
    let whole = std::fs::read(&p).unwrap();
    let cut = whole.iter().rposition(|b| *b == b'\n').unwrap() + 1;
    std::fs::write(&p, &whole[..cut]).unwrap();
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    let said = a.log.status.clone().unwrap_or_default();
    assert!(said.starts_with("live: the file was rewritten"), "{said}");
    // Issue 57: the same entries with other bytes at the same length: only the file's time
    // says it changed; it is compared whole and said as a rewrite.
    let replaced = String::from_utf8(whole[..cut].to_vec())
        .unwrap()
        .replace("and another", "and ANOTHER");
    assert_eq!(replaced.len(), a.doc.session.buf.len());
    a.log.status = None;
    // The file's time is kept at the kernel's clock tick (a few ms): a later tick shows.
    std::thread::sleep(std::time::Duration::from_millis(30));
    std::fs::write(&p, &replaced).unwrap();
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    let said = a.log.status.clone().unwrap_or_default();
    assert!(said.starts_with("live: the file was rewritten"), "{said}");
    assert!(a.doc.session.buf.windows(11).any(|w| w == b"and ANOTHER"));
    // Written again with the very same bytes (or touched): nothing new, nothing said.
    a.log.status = None;
    std::thread::sleep(std::time::Duration::from_millis(30));
    std::fs::write(&p, &replaced).unwrap();
    a.update(crate::ui::tick(&a));
    assert!(!a.pending.queue.is_empty(), "a changed time is looked at");
    a.run_jobs_now();
    assert_eq!(a.log.status, None);
    // A rewrite that also grew (the start changed, a line appended) is a rewrite, not an
    // append of one entry.
    let grown = format!(
        "{}{}\n",
        replaced.replacen("live", "LIVE", 1),
        r#"{"type":"message","id":"live0005","parentId":"live0003","timestamp":"2026-11-22T06:00:05.000Z","message":{"role":"user","content":"fifth","timestamp":5}}"#
    );
    std::fs::write(&p, grown).unwrap();
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    let said = a.log.status.clone().unwrap_or_default();
    assert!(said.starts_with("live: the file was rewritten"), "{said}");
}

// ---- 1. A write never lands on a state nobody looked at -----------------------------------

fn preview_compaction(a: &mut App) {
    a.selection.keep_recent = 2000;
    a.handle_key(shift('C'));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    assert!(
        matches!(&a.parts.dialog, Some(Dialog::Summary { tabs, .. }) if tabs.iter().all(|t| t.state == crate::ui::dialog::TabState::Done)),
        "{:?}",
        a.log.status
    );
}

#[test]
fn a_compaction_accepted_after_pi_appended_is_refused_whether_or_not_the_app_noticed() {
    for noticed in [true, false] {
        let (_d, p) = temp_copy("long.jsonl");
        let mut a = app_for(&p);
        preview_compaction(&mut a);
        pi_appends(&p, &a, "pi000001");
        let with_pi = std::fs::read(&p).unwrap();
        let entries = a.doc.session.entries.len();
        if noticed {
            // Live follow reloads the session under the open preview.
            a.update(crate::ui::tick(&a));
            a.run_jobs_now();
            assert_eq!(a.doc.session.entries.len(), entries + 1, "Pi's entry is in");
            assert!(matches!(a.parts.dialog, Some(Dialog::Summary { .. })));
        }
        a.handle_key(ctrl('s'));
        a.run_jobs_now();
        assert_eq!(
            std::fs::read(&p).unwrap(),
            with_pi,
            "nothing written (noticed: {noticed})"
        );
        let st = a.log.status.clone().unwrap_or_default();
        assert!(st.contains("Pi appended 1 entry"), "{st}");
        // Issue 21, item 3: the drafts are kept, with what changed, and can be written at
        // Pi's new leaf (the cut did not move).
        assert!(
            st.contains("user pi000001") && st.contains("your drafts are kept"),
            "{st}"
        );
        assert!(st.contains("ctrl+s writes the draft at Pi's new leaf pi000001"), "{st}");
        let Some(Dialog::Summary { tabs, .. }) = &a.parts.dialog else {
            panic!("the drafts were thrown away: {:?}", a.parts.dialog)
        };
        assert!(tabs[0].text.contains("## Goal"), "{}", tabs[0].text);
        a.handle_key(ctrl('s'));
        a.run_jobs_now();
        let text = std::fs::read_to_string(&p).unwrap();
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["type"], "compaction", "{:?}", a.log.status);
        assert_eq!(last["parentId"], "pi000001", "written at Pi's new leaf");
    }
}

#[test]
fn a_compaction_that_starts_a_branch_says_what_it_leaves_and_asks() {
    let (_d, p) = temp_copy("long.jsonl");
    let before = std::fs::read(&p).unwrap();
    let mut a = app_for(&p);
    let m = middle_of_path(&a);
    select(&mut a, m);
    preview_compaction(&mut a);
    a.handle_key(ctrl('s'));
    let Some(Dialog::Confirm { lines, .. }) = &a.parts.dialog else {
        panic!("{:?}", a.parts.dialog)
    };
    let text = lines.join("\n");
    assert!(text.contains("starts a new branch"), "{text}");
    assert!(text.contains("entries after the fork point"), "{text}");
    let screen = render(&mut a, 100, 30);
    assert!(screen.contains("y yes, write it"), "{screen}");
    a.handle_key(ch('n'));
    a.run_jobs_now();
    assert_eq!(std::fs::read(&p).unwrap(), before, "no: nothing written");
    preview_compaction(&mut a);
    a.handle_key(ctrl('s'));
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let s = a.doc.session.clone();
    let leaf = s.leaf().unwrap();
    assert!(matches!(s.entries[leaf].kind, Kind::Compaction(_)));
    assert_eq!(s.parent_of(leaf), Some(m), "written under the selected entry");
    assert!(std::fs::read(&p).unwrap().starts_with(&before), "append only");
}

// ---- 2. Branch summaries keep the instructions and earlier summaries ----------------------

#[test]
fn custom_instructions_reach_the_branch_summary() {
    let (_d, p) = temp_copy("tour.jsonl");
    let mut a = app_for(&p);
    let s = a.doc.session.clone();
    let first_user = (0..s.entries.len())
        .find(|&i| s.entries[i].message().is_some_and(|m| m.role == Role::User))
        .unwrap();
    select(&mut a, first_user);
    a.handle_key(key(KeyCode::Enter));
    a.handle_key(key(KeyCode::Down));
    a.handle_key(key(KeyCode::Down));
    a.handle_key(key(KeyCode::Enter));
    typed(&mut a, "list what was tried");
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    a.handle_key(ctrl('s'));
    a.run_jobs_now();
    let s = a.doc.session.clone();
    let v = s.entry_value(s.leaf().unwrap());
    assert_eq!(v["type"], "branch_summary");
    let summary = v["summary"].as_str().unwrap();
    assert!(summary.contains("Focus requested: list what was tried"), "{summary}");
}

#[test]
fn the_navigate_dialog_says_when_there_is_nothing_to_summarize() {
    let (_d, p) = temp_copy("tour.jsonl");
    let mut a = app_for(&p);
    // The leaf's parent: leaving the leaf alone leaves one entry, and no message when the
    // leaf is not a message the summary would take.
    let s = a.doc.session.clone();
    let leaf = s.leaf().unwrap();
    let parent = s.parent_of(leaf).unwrap();
    select(&mut a, parent);
    a.handle_key(key(KeyCode::Enter));
    let screen = render(&mut a, 120, 30);
    assert!(
        screen.contains("leaves 1 entry with no message to summarize"),
        "the dialog says so before anything is chosen:\n{screen}"
    );
}

// ---- 3. The context comparison is an aligned −/+ diff with counts on both sides -----------

#[test]
fn the_context_diff_is_aligned_with_exact_counts_on_both_sides() {
    let mut a = app_for(&own("tour.jsonl"));
    let s = a.doc.session.clone();
    a.tree
        .view
        .set_filter(&s, crate::engine::view::tree_view::FilterMode::All);
    // Four entries back on the same path: most messages are shared, the newest are not.
    let path = s.path_to(s.leaf().unwrap());
    select(&mut a, path[path.len() - 5]);
    a.handle_key(ch('m'));
    select(&mut a, s.leaf().unwrap());
    a.handle_key(ch('v'));
    a.run_jobs_now();
    let d = a.context_data().unwrap();
    let m = d.marked.as_ref().unwrap();
    assert!(
        m.rows
            .iter()
            .filter(|r| r.omitted_by.is_none())
            .all(|r| r.exact.is_some()),
        "marked side counted"
    );
    assert!(
        d.selected
            .rows
            .iter()
            .filter(|r| r.omitted_by.is_none())
            .all(|r| r.exact.is_some())
    );
    // Aligned: a row is either on both sides or on one; both sides keep their order.
    let lefts: Vec<usize> = d.aligned.iter().filter_map(|x| x.0).collect();
    let rights: Vec<usize> = d.aligned.iter().filter_map(|x| x.1).collect();
    assert_eq!(lefts, (0..m.rows.len()).collect::<Vec<_>>());
    assert_eq!(rights, (0..d.selected.rows.len()).collect::<Vec<_>>());
    assert!(
        d.aligned.iter().any(|x| x.0.is_some() && x.1.is_some()),
        "common rows side by side"
    );
    let screen = render(&mut a, 160, 40);
    assert!(screen.contains("vs. the mark"), "{screen}");
    assert!(
        screen.contains("+user") || screen.contains("+assistant") || screen.contains("+toolResult"),
        "{screen}"
    );
    // Every count shown, but for a message a context edit leaves out (it costs nothing).
    assert!(
        screen
            .lines()
            .filter(|l| l.contains("     · "))
            .all(|l| l.contains("(omitted by")),
        "every count shown:\n{screen}"
    );
}

// ---- 4. Inputs are line editors --------------------------------------------------------

#[test]
fn inputs_edit_like_a_line_editor() {
    let (_d, p) = temp_copy("split-turn.jsonl");
    let mut a = app_for(&p);
    let target = a.selected().unwrap();
    a.handle_key(shift('L'));
    typed(&mut a, "alpha beta");
    a.handle_key(ctrl('w'));
    a.update(Action::Paste("gamma\nend".into()));
    a.handle_key(key(KeyCode::Home));
    typed(&mut a, "x-");
    a.handle_key(ctrl('e'));
    a.handle_key(key(KeyCode::Left));
    a.handle_key(key(KeyCode::Left));
    a.handle_key(key(KeyCode::Left));
    a.handle_key(key(KeyCode::Backspace));
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    let id = a.doc.session.entries[target].id.clone();
    assert_eq!(a.doc.session.label_of(&id), Some("x-alpha gammaend"));
}

#[test]
fn the_tree_search_is_a_line_editor_too() {
    let mut a = app_for(&own("tour.jsonl"));
    a.handle_key(ch('/'));
    typed(&mut a, "validation csv");
    a.handle_key(ctrl('w'));
    assert_eq!(a.tree.view.search, "validation ");
    a.handle_key(ctrl('u'));
    assert_eq!(a.tree.view.search, "");
}

// ---- 5. Only a deliberate key writes a previewed summary --------------------------------

#[test]
fn stray_keys_in_the_summary_preview_write_nothing() {
    let (_d, p) = temp_copy("long.jsonl");
    let before = std::fs::read(&p).unwrap();
    let mut a = app_for(&p);
    preview_compaction(&mut a);
    let bar = render(&mut a, 120, 30);
    let hint_line = bar.lines().last().unwrap().to_string();
    assert!(hint_line.contains("ctrl+s write it"), "{hint_line}");
    assert!(!hint_line.contains("quit"), "{hint_line}");
    for k in [
        ch('a'),
        key(KeyCode::Enter),
        ch('y'),
        ch('q'),
        ch(' '),
        ch('w'),
        key(KeyCode::Tab),
    ] {
        a.handle_key(k);
        a.run_jobs_now();
        assert!(!a.quit, "{k:?} does not quit from the preview");
        assert!(
            matches!(a.parts.dialog, Some(Dialog::Summary { .. })),
            "{k:?} keeps the preview"
        );
    }
    assert_eq!(std::fs::read(&p).unwrap(), before);
    a.handle_key(ctrl('s'));
    a.run_jobs_now();
    assert_ne!(std::fs::read(&p).unwrap(), before, "ctrl+s writes");
}

// ---- 6. keepRecentTokens: reversible steps, a typed value, the setting back ---------------

/// Issue 21, item 15: `#`, `3`, `7` gave 200037 (typing appended to the value shown).
#[test]
fn typing_after_hash_replaces_the_value_shown() {
    let mut a = app_for(&own("long.jsonl"));
    a.handle_key(ch('c'));
    a.handle_key(ch('#'));
    typed(&mut a, "37");
    a.handle_key(key(KeyCode::Enter));
    assert_eq!(a.selection.keep_recent, 37);
    // Moving first keeps the value for editing.
    a.handle_key(ch('#'));
    a.handle_key(key(KeyCode::End));
    typed(&mut a, "0");
    a.handle_key(key(KeyCode::Enter));
    assert_eq!(a.selection.keep_recent, 370);
}

#[test]
fn keep_recent_steps_are_reversible_and_can_be_typed_or_reset() {
    let mut a = app_for(&own("long.jsonl"));
    a.handle_key(ch('c'));
    a.handle_key(ch('#'));
    for _ in 0..10 {
        a.handle_key(key(KeyCode::Backspace));
    }
    typed(&mut a, "5,365");
    a.handle_key(key(KeyCode::Enter));
    assert_eq!(a.selection.keep_recent, 5365);
    a.handle_key(ch('+'));
    assert_eq!(a.selection.keep_recent, 5865);
    a.handle_key(ch('-'));
    assert_eq!(a.selection.keep_recent, 5365, "+ then - comes back");
    a.handle_key(ch('-'));
    a.handle_key(ch('+'));
    assert_eq!(a.selection.keep_recent, 5365, "- then + comes back");
    a.handle_key(ch('#'));
    typed(&mut a, "x");
    a.handle_key(key(KeyCode::Enter));
    assert!(
        a.log.status.as_deref().unwrap().contains("whole number"),
        "{:?}",
        a.log.status
    );
    a.handle_key(key(KeyCode::Esc));
    a.handle_key(ch('0'));
    assert_eq!(a.selection.keep_recent, 20000, "the setting (Pi's default)");
}

// ---- 7. The context view has a cursor; Enter goes to the entry; omitted rows struck -------

#[test]
fn the_context_view_cursor_goes_to_the_entry_and_shows_omitted_messages() {
    let mut a = app_for(&own("tour.jsonl"));
    // Just before the compaction: the user message a context edit hides is omitted.
    let s = a.doc.session.clone();
    a.tree
        .view
        .set_filter(&s, crate::engine::view::tree_view::FilterMode::All);
    let c = (0..s.entries.len())
        .rfind(|&i| matches!(s.entries[i].kind, Kind::Compaction(_)))
        .unwrap();
    select(&mut a, s.parent_of(c).unwrap());
    a.handle_key(ch('v'));
    a.run_jobs_now();
    let screen = render(&mut a, 120, 40);
    assert_eq!(screen.matches("(omitted by ").count(), 1, "{screen}");
    let d = a.context_data().unwrap().clone();
    let omitted = d.selected.rows.iter().find(|r| r.omitted_by.is_some()).unwrap();
    // The struck row really is crossed out.
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    t.draw(|f| crate::ui::draw(f, &a)).unwrap();
    let buf = t.backend().buffer();
    let crossed =
        (0..40).any(|y| (0..120).any(|x| buf[(x, y)].modifier.contains(ratatui::style::Modifier::CROSSED_OUT)));
    assert!(crossed, "omitted rows are struck through");
    // Move to a row and Enter: the tree selects its entry.
    for _ in 0..4 {
        a.handle_key(key(KeyCode::Down));
    }
    let want = d.source_at(4).unwrap();
    a.handle_key(key(KeyCode::Enter));
    assert_eq!(a.screen.overlay, Overlay::None);
    assert_eq!(a.selected(), Some(want));
    assert!(omitted.source < a.doc.session.entries.len());
}

// ---- 8. The mouse -------------------------------------------------------------------------

#[test]
fn click_selects_clicking_a_fold_marker_folds_and_the_wheel_scrolls() {
    let mut a = app_for(&own("tour.jsonl"));
    a.update(Action::Resize { width: 120, height: 40 });
    let tree = a.areas().tree;
    let k = 3usize;
    let want = a.tree.frame.rows[k].row.entry;
    a.update(Action::Click {
        col: tree.x + 10,
        row: tree.y + k as u16,
    });
    assert_eq!(a.selected(), Some(want));
    // A row with a fold marker: clicking the marker folds the branch.
    let (k, col) = fold_marker_on_screen(&a);
    let entry = a.tree.frame.rows[k].row.entry;
    let visible = a.tree.view.visible.len();
    a.update(Action::Click {
        col: tree.x + 2 + col as u16,
        row: tree.y + k as u16,
    });
    assert!(a.tree.view.folded.contains(&entry), "folded");
    assert!(a.tree.view.visible.len() < visible);
    let k2 = a.tree.frame.rows.iter().position(|r| r.row.entry == entry).unwrap();
    a.update(Action::Click {
        col: tree.x + 2 + col as u16,
        row: tree.y + k2 as u16,
    });
    assert!(!a.tree.view.folded.contains(&entry), "unfolded");
    // The wheel moves the selection three rows.
    a.tree.view.selected = 0;
    a.update(Action::Wheel {
        down: true,
        col: tree.x + 1,
        row: tree.y + 1,
    });
    assert_eq!(a.tree.view.selected, 3);
    // Over the detail pane it scrolls the detail.
    let d = a.areas().detail.unwrap();
    a.update(Action::Wheel {
        down: true,
        col: d.x + 2,
        row: d.y + 2,
    });
    assert_eq!(a.tree.view.selected, 3);
    // Mouse capture can be turned off in Pi's settings.
    let s = crate::engine::settings::Settings::from_layers(
        &serde_json::json!({"bonsai": {"mouse": false}}),
        &serde_json::json!({}),
        vec![],
    );
    assert!(!s.mouse_capture());
    assert!(crate::engine::settings::Settings::default().mouse_capture());
}

// ---- 9. Jumps and copies ------------------------------------------------------------------

#[test]
fn jumps_to_compactions_the_cut_and_the_mark_and_copies() {
    let mut a = app_for(&own("long.jsonl"));
    let s = a.doc.session.clone();
    a.handle_key(ch('g'));
    a.handle_key(ch('}'));
    let c1 = a.selected().unwrap();
    assert!(matches!(s.entries[c1].kind, Kind::Compaction(_)));
    a.handle_key(ch('}'));
    let c2 = a.selected().unwrap();
    assert!(matches!(s.entries[c2].kind, Kind::Compaction(_)) && c2 != c1);
    a.handle_key(ch('{'));
    assert_eq!(a.selected(), Some(c1));
    a.handle_key(ch('m'));
    a.handle_key(ch('l'));
    a.handle_key(ch('\''));
    assert_eq!(a.selected(), Some(c1), "back to the mark");
    a.handle_key(ch('l'));
    a.run_jobs_now();
    let plan = a.selection.cut.clone().unwrap().unwrap();
    a.handle_key(ch('f'));
    // The first kept entry, or the nearest row above it when Pi does not show it as a row.
    let at = a.selected().unwrap();
    assert!(s.path_to(plan.first_kept_entry).contains(&at), "{at}");
    if at != plan.first_kept_entry {
        assert!(a.log.status.as_deref().unwrap().contains("not a row of the tree"));
    }
    a.handle_key(ch('y'));
    let id = s.entries[at].id.to_string();
    assert_eq!(a.take_effects(), vec![Terminal::Clipboard(id.clone())]);
    a.handle_key(ch('|'));
    match a.take_effects().as_slice() {
        [Terminal::Pager(t)] => assert!(t.contains(&id)),
        other => panic!("{other:?}"),
    }
    // A split turn: `t` goes to where the turn starts.
    let mut b = app_for(&own("long.jsonl"));
    b.handle_key(ch('c'));
    b.handle_key(ch('#'));
    for _ in 0..6 {
        b.handle_key(key(KeyCode::Backspace));
    }
    typed(&mut b, "2000");
    b.handle_key(key(KeyCode::Enter));
    b.run_jobs_now();
    let plan = b.selection.cut.clone().unwrap().unwrap();
    assert!(plan.is_split_turn);
    b.handle_key(ch('t'));
    assert_eq!(b.selected(), plan.turn_start_entry());
}

// ---- 10. The gauge explains itself; NO_COLOR ------------------------------------------------

/// long.jsonl with its model declared in models.json as a user would (so the gauge has a
/// window and zones).
fn long_with_its_window() -> App {
    let registry = crate::engine::load::models::Registry::with_models_json(
        r#"{"providers":{"fakellm":{"baseUrl":"http://127.0.0.1:9","api":"openai-completions",
            "models":[{"id":"fakecoder-large","contextWindow":200000,"maxTokens":8192}]}}}"#,
        "models.json",
    );
    let p = own("long.jsonl");
    let mut a = App::new(
        crate::store::load_session(&p).unwrap(),
        Some(p.clone()),
        crate::engine::settings::Settings::default(),
        registry,
    );
    a.setup.force_offline = true;
    a
}

#[test]
fn at_80_columns_the_zone_word_stays_on_screen() {
    let mut a = long_with_its_window();
    let screen = render(&mut a, 80, 24);
    let lines: Vec<&str> = screen.lines().collect();
    let n = lines
        .iter()
        .position(|l| l.contains(" tokens (Pi's figure) · "))
        .unwrap();
    let gauge_numbers = lines[n];
    assert!(
        gauge_numbers.contains("tokens (Pi's figure) · green"),
        "{gauge_numbers}"
    );
    let bar = lines[n - 1];
    assert_eq!(bar.matches('┊').count(), 2, "ticks at the zone bounds: {bar}");
    assert!(gauge_numbers.contains("▓ keep"), "the band's legend: {gauge_numbers}");
}

#[test]
fn without_colour_the_cut_classes_are_a_symbol_column() {
    let mut a = app_for(&own("split-turn.jsonl"));
    a.screen.no_color = true;
    a.selection.keep_recent = 2000;
    a.handle_key(ch('c'));
    let screen = render(&mut a, 100, 40);
    insta::assert_snapshot!("no_color_cut_preview", screen);
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 40)).unwrap();
    t.draw(|f| crate::ui::draw(f, &a)).unwrap();
    let buf = t.backend().buffer();
    for y in 0..40 {
        for x in 0..100 {
            let c = &buf[(x, y)];
            assert_eq!(
                (c.fg, c.bg),
                (ratatui::style::Color::Reset, ratatui::style::Color::Reset)
            );
        }
    }
}

// ---- 11. Small ones -------------------------------------------------------------------------

#[test]
fn previews_stop_scrolling_at_their_end() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    a.update(Action::Resize { width: 100, height: 30 });
    preview_compaction(&mut a);
    for _ in 0..500 {
        a.handle_key(key(KeyCode::Down));
    }
    let Some(Dialog::Summary { tabs, active, .. }) = &a.parts.dialog else {
        panic!()
    };
    let r = a.parts.dialog.as_ref().unwrap().rect(a.areas().main);
    assert_eq!(
        tabs[*active].scroll,
        crate::ui::dialog::max_scroll(&tabs[*active].text, r)
    );
    let screen = render(&mut a, 100, 30);
    assert!(
        screen.contains("</modified-files>") || screen.contains("</read-files>"),
        "the end shows:\n{screen}"
    );
}

#[test]
fn ctrl_c_in_a_dialog_cancels_it_and_does_not_quit() {
    let (_d, p) = temp_copy("split-turn.jsonl");
    let mut a = app_for(&p);
    // Keep few tokens, so that C has something to compact.
    for k in [
        ch('c'),
        ch('#'),
        ch('1'),
        ch('0'),
        ch('0'),
        key(KeyCode::Enter),
        ch('c'),
    ] {
        a.handle_key(k);
    }
    for open in [shift('L'), shift('R'), shift('C')] {
        a.handle_key(open);
        assert!(a.parts.dialog.is_some());
        a.handle_key(ctrl('c'));
        assert!(a.parts.dialog.is_none(), "{open:?}");
        assert!(!a.quit);
    }
    a.handle_key(ctrl('c'));
    assert!(a.quit, "outside a dialog it quits");
}

#[test]
fn fork_and_clone_name_the_new_file_in_a_status_that_fits() {
    let (d, p) = temp_copy("split-turn.jsonl");
    let mut a = app_for(&p);
    a.handle_key(shift('K'));
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let st = a.log.status.clone().unwrap();
    assert!(st.starts_with("clone written beside this session: "), "{st}");
    assert!(!st.contains(&*d.path().to_string_lossy()), "no long path: {st}");
    let name = st.split(": ").nth(1).unwrap().split(' ').next().unwrap();
    assert!(d.path().join(name).exists(), "{name}");
}

#[test]
fn a_reload_read_before_bonsai_wrote_does_not_roll_the_session_back() {
    let (_d, p) = temp_copy("split-turn.jsonl");
    let mut a = app_for(&p);
    pi_appends(&p, &a, "pi000007");
    // The tick starts a reload; it reads the file now but reports later.
    a.update(crate::ui::tick(&a));
    let reload: Vec<_> = a.take_jobs();
    let late: Vec<_> = reload.into_iter().flat_map(crate::ui::runner::run_now).collect();
    // Meanwhile bonsai writes a label (its job reads the file again after appending).
    a.handle_key(shift('L'));
    typed(&mut a, "mine");
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    let entries = a.doc.session.entries.len();
    for r in late {
        a.job_done(r);
    }
    assert_eq!(a.doc.session.entries.len(), entries, "the stale reload is ignored");
    assert!(matches!(a.doc.session.entries.last().unwrap().kind, Kind::Label { .. }));
}

// ---- Pruning: the preview, apply, undo, and edits of one entry -----------------------------

/// The context edits in the file, as (target, replacement is null).
fn edits_in_file(p: &Path) -> Vec<(String, bool)> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "context_edit")
        .map(|v| (v["targetId"].as_str().unwrap().to_string(), v["replacement"].is_null()))
        .collect()
}

#[test]
fn the_prune_preview_applies_after_a_yes_and_undo_takes_it_back() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    a.handle_key(ch('p'));
    assert_eq!(a.mode(), Mode::Prune);
    // Tab to the yellow zone: older tool output is pruned.
    for _ in 0..3 {
        a.handle_key(key(KeyCode::Tab));
    }
    assert_eq!(a.parts.prune.policy_name(), "by zone · yellow");
    let plan = a.parts.prune.plan.clone().unwrap();
    assert!(plan.edits().count() > 5, "{}", plan.note);
    let before = std::fs::read(&p).unwrap();
    a.handle_key(ch('a'));
    assert_eq!(a.mode(), Mode::Confirm);
    // No: nothing written.
    a.handle_key(ch('n'));
    assert_eq!(std::fs::read(&p).unwrap(), before);
    a.handle_key(ch('a'));
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let written = edits_in_file(&p);
    assert_eq!(written.len(), plan.edits().count());
    assert!(std::fs::read(&p).unwrap().starts_with(&before));
    // The tree marks the entries whose context changed, and the panel plans again on the
    // new leaf: the pruned outputs are not pruned twice.
    assert_eq!(a.doc.edits.len(), written.len());
    let marked = a.tree.frame.rows.iter().filter(|r| r.edited == Some(false)).count();
    assert!(marked > 0 || a.tree.frame.rows.len() < 10);
    // The plan at the last row now sees the edits under it: nothing new to prune.
    let again = a.parts.prune.plan.clone().unwrap();
    assert!(again.is_empty(), "{}", again.note);
    // Undo: one line (Pi resumes where the prune started; issue 21, item 4), nothing in
    // effect any more.
    a.handle_key(ch('u'));
    assert_eq!(a.mode(), Mode::Confirm);
    let size = std::fs::metadata(&p).unwrap().len();
    a.handle_key(ch('y'));
    a.run_jobs_now();
    assert_eq!(edits_in_file(&p).len(), written.len());
    let added = std::fs::read(&p).unwrap()[size as usize..].to_vec();
    assert_eq!(added.iter().filter(|&&b| b == b'\n').count(), 1, "the undo is one line");
    assert!(a.doc.edits.is_empty(), "undone: no entry's context differs");
    a.handle_key(ch('u'));
    let st = a.log.status.as_deref().unwrap_or("");
    assert!(st.contains("nothing of bonsai's left to undo"), "{st}");
}

#[test]
fn hide_replace_and_restore_the_selected_entry() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    let s = a.doc.session.clone();
    let user = newest_on_path(&a, Role::User);
    let result = newest_on_path(&a, Role::ToolResult);
    // A tool result cannot be hidden: the reason, nothing written.
    select(&mut a, result);
    a.handle_key(ch('x'));
    assert!(
        a.log.status.as_deref().unwrap().contains("No result provided"),
        "{:?}",
        a.log.status
    );
    // Hide the user message, after a yes.
    select(&mut a, user);
    a.handle_key(ch('x'));
    a.handle_key(ch('y'));
    a.run_jobs_now();
    assert_eq!(edits_in_file(&p), vec![(s.entries[user].id.to_string(), true)]);
    assert_eq!(a.doc.edits.len(), 1);
    // The detail says what the model gets.
    select(&mut a, user);
    let screen = render(&mut a, 120, 40);
    assert!(
        screen.contains("hidden from the") && screen.contains("⊘ user:"),
        "{screen}"
    );
    // Replace it through $EDITOR: the editor opens on its text, the new text is confirmed.
    a.handle_key(ch('X'));
    a.handle_key(ch('y'));
    a.run_jobs_now();
    assert!(a.doc.edits.is_empty(), "restored");
    assert_eq!(a.selected(), Some(user), "the selection stays on the edited entry");
    a.handle_key(ch('E'));
    let effects = a.take_effects();
    assert!(
        matches!(&effects[..], [Terminal::EditSummary(t)] if !t.is_empty()),
        "{effects:?}"
    );
    a.update(Action::EditorClosed(Some("a shorter question".into())));
    assert_eq!(a.mode(), Mode::Confirm);
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let last = std::fs::read_to_string(&p).unwrap();
    let edit: serde_json::Value =
        serde_json::from_str(last.lines().rev().find(|l| l.contains("\"context_edit\"")).unwrap()).unwrap();
    assert_eq!(edit["replacement"]["content"][0]["text"], "a shorter question");
    select(&mut a, user);
    let screen = render(&mut a, 120, 40);
    assert!(screen.contains("a shorter question"), "{screen}");
}

#[test]
fn pruning_snapshots_in_each_policy_and_the_confirm() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    a.handle_key(ch('p'));
    insta::assert_snapshot!("prune_output", render(&mut a, 120, 40));
    a.handle_key(ch('!'));
    insta::assert_snapshot!("prune_output_forced", render(&mut a, 120, 40));
    a.handle_key(ch('!'));
    for name in [
        "prune_compat",
        "prune_zones_gauge",
        "prune_zones_yellow",
        "prune_zones_red",
    ] {
        a.handle_key(key(KeyCode::Tab));
        insta::assert_snapshot!(name, render(&mut a, 120, 40));
    }
    // Back to yellow, and the confirm before writing.
    for _ in 0..4 {
        a.handle_key(key(KeyCode::Tab));
    }
    a.handle_key(ch('a'));
    insta::assert_snapshot!("prune_confirm", render(&mut a, 120, 40));
}

#[test]
fn red_zone_writes_the_edits_then_opens_the_compaction_keeping_from_the_proposed_entry() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    a.handle_key(ch('p'));
    for _ in 0..4 {
        a.handle_key(key(KeyCode::Tab));
    }
    assert_eq!(a.parts.prune.policy_name(), "by zone · red");
    let plan = a.parts.prune.plan.clone().unwrap();
    let from = plan.compact_from.expect("red proposes a compaction");
    let from_id = a.doc.session.entries[from].id.to_string();
    if plan.is_empty() {
        // Nothing to prune first: straight to the compaction.
        a.handle_key(ch('a'));
    } else {
        a.handle_key(ch('a'));
        assert_eq!(a.mode(), Mode::Confirm);
        let screen = render(&mut a, 120, 40);
        assert!(screen.contains("Then the compaction dialog opens"), "{screen}");
        a.handle_key(ch('y'));
        a.run_jobs_now();
    }
    assert_eq!(edits_in_file(&p).len(), plan.edits().count());
    // The compaction's instructions are asked for next, with the cut on the proposed entry.
    assert_eq!(a.mode(), Mode::Instructions);
    assert!(!a.screen.prune_preview);
    let cut = a.selection.cut.as_ref().unwrap().as_ref().unwrap();
    assert_eq!(a.doc.session.entries[cut.first_kept_entry].id.as_str(), from_id);
    assert!(
        a.log.status.as_deref().unwrap().contains(&from_id),
        "{:?}",
        a.log.status
    );
    // Esc leaves it: nothing more is written.
    let written = std::fs::read(&p).unwrap();
    a.handle_key(key(KeyCode::Esc));
    assert_eq!(std::fs::read(&p).unwrap(), written);
}

#[test]
fn u_undoes_bonsais_last_action_a_compaction_then_says_nothing_is_left() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    let context = |s: &crate::engine::load::session::Session| {
        let leaf = s.leaf().unwrap();
        crate::engine::view::context::project(s, &s.path_to(leaf))
            .messages()
            .map(|m| (m.source, m.est_tokens))
            .collect::<Vec<_>>()
    };
    let before = context(&a.doc.session);
    preview_compaction(&mut a);
    a.handle_key(ctrl('s'));
    a.run_jobs_now();
    let s = a.doc.session.clone();
    assert!(matches!(s.entries[s.leaf().unwrap()].kind, Kind::Compaction(_)));
    assert_ne!(context(&s), before);
    // u: a confirm that says what it undoes; y appends the undo.
    a.handle_key(ch('u'));
    assert_eq!(a.mode(), Mode::Confirm);
    let screen = render(&mut a, 120, 40);
    assert!(screen.contains("Undo the compaction"), "{screen}");
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let s = a.doc.session.clone();
    let v = s.entry_value(s.leaf().unwrap());
    assert_eq!(v["customType"], "bonsai.navigate");
    assert_eq!(v["bonsai"]["action"], "undo");
    assert_eq!(context(&s), before, "Pi's context is what it was");
    // Again: only Pi's entries are left before bonsai's.
    a.handle_key(ch('u'));
    let st = a.log.status.clone().unwrap_or_default();
    assert!(st.contains("nothing of bonsai's left to undo"), "{st}");
}

#[test]
fn every_entry_gets_its_exact_count_in_the_background_with_progress() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    a.update(Action::Resize { width: 120, height: 40 });
    let s = a.doc.session.clone();
    let msgs: Vec<_> = (0..s.entries.len())
        .flat_map(|i| crate::engine::view::context::intrinsic_messages(&s, i))
        .collect();
    let enc = crate::engine::view::tokens::Encoding::O200k;
    assert!(a.exact.cache.missing(&msgs, enc) > 0, "not counted before");
    a.handle_key(shift('S'));
    assert_eq!(a.exact.all.progress, Some((0, 0)), "running, said in the status line");
    let screen = render(&mut a, 200, 40);
    assert_eq!(
        a.exact.cache.missing(&msgs, enc),
        0,
        "every message of every entry counted"
    );
    assert!(a.exact.all.progress.is_none());
    let status = a.log.status.clone().unwrap_or_default();
    assert!(status.starts_with("exact tokens of every entry: "), "{status}");
    // Each count is the tokenizer's own.
    for m in msgs.iter().take(40) {
        let v = crate::engine::view::context::materialize(&s, m);
        assert_eq!(
            a.exact.cache.get(m, enc),
            Some(crate::engine::view::tokens::exact_count(enc, &v))
        );
    }
    // The tree's right column shows them: every visible row with an estimate has two numbers.
    let rows_with_both = screen
        .lines()
        .filter(|l| {
            l.split('│').next().is_some_and(|t| {
                t.split_whitespace()
                    .rev()
                    .take(2)
                    .all(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
            })
        })
        .count();
    assert!(rows_with_both > 10, "{screen}");
}

#[test]
fn a_session_whose_file_disappears_says_so_and_writes_nothing() {
    let (d, p) = temp_copy("split-turn.jsonl");
    let mut a = app_for(&p);
    let moved = d.path().join("elsewhere.jsonl");
    std::fs::rename(&p, &moved).unwrap();
    a.update(crate::ui::tick(&a));
    let status = a.log.status.clone().unwrap_or_default();
    assert!(status.contains("the session file is gone"), "{status}");
    let screen = render(&mut a, 100, 30);
    assert!(screen.contains("List the modules"), "what is shown stays:\n{screen}");
    a.handle_key(shift('L'));
    assert!(a.parts.dialog.is_none(), "no write dialog");
    assert!(a.log.status.as_deref().unwrap_or("").contains("nothing can be written"));
    assert!(!p.exists(), "nothing was written where it was");
    std::fs::rename(&moved, &p).unwrap();
    a.update(crate::ui::tick(&a));
    assert_eq!(a.log.status.as_deref(), Some("the session file is back"));
}

/// A session whose branches nest hundreds of levels deep: the tree pane, panned to the
/// selected row, shows what Pi's render shows at the pane's width (each row's drawing is made
/// only for the columns on screen), and clicking a fold marker past the pan still folds.
#[test]
fn a_deep_tree_is_drawn_panned_as_pis_render() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("deep.jsonl");
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"deep","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/tmp"}"#,
    );
    text.push('\n');
    let msg = |id: &str, parent: Option<&str>, role: &str, body: &str| {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        let content = if role == "user" {
            format!("\"{body}\"")
        } else {
            format!(
                r#"[{{"type":"text","text":"{body}"}}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2}},"stopReason":"stop""#
            )
        };
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-11-20T10:00:00.000Z","message":{{"role":"{role}","content":{content},"timestamp":1}}}}"#
        ) + "\n"
    };
    text += &msg("u0", None, "user", "start");
    let mut prev = "u0".to_string();
    for i in 1..=300 {
        text += &msg(&format!("a{i}"), Some(&prev), "assistant", &format!("answer {i}"));
        text += &msg(&format!("s{i}"), Some(&format!("a{i}")), "user", &format!("side {i}"));
        text += &msg(
            &format!("u{i}"),
            Some(&format!("a{i}")),
            "user",
            &format!("ask {i} with some words"),
        );
        prev = format!("u{i}");
    }
    std::fs::write(&p, text).unwrap();
    let mut a = app_for(&p);
    render(&mut a, 120, 40);
    assert!(a.tree.frame.pan > 0, "the selected row is deep enough to pan");
    assert!(a.tree.frame.rows.iter().any(|r| r.row.prefix_cols > 500));
    // Each row's drawing is at most the pane's width.
    assert!(a.tree.frame.rows.iter().all(|r| r.row.prefix.chars().count() <= 120));
    let tree = a.areas().tree;
    let body_width = tree.width as usize - crate::ui::layout::token_column(tree.width);
    let want = a
        .tree
        .view
        .render_plain(&a.doc.session, body_width, Some(tree.height as usize));
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    t.draw(|f| crate::ui::draw(f, &a)).unwrap();
    let buf = t.backend().buffer().clone();
    for (j, want) in want.iter().take(a.tree.frame.rows.len()).enumerate() {
        let y = tree.y + j as u16;
        let got: String = (tree.x..tree.x + body_width as u16)
            .map(|x| buf[(x, y)].symbol())
            .collect();
        assert_eq!(got.trim_end(), want.trim_end(), "row {j}");
    }
    // A fold marker on screen, clicked where it is drawn, folds its branch.
    let (k, col) = fold_marker_on_screen(&a);
    let entry = a.tree.frame.rows[k].row.entry;
    a.update(Action::Click {
        col: tree.x + 2 + col as u16,
        row: tree.y + k as u16,
    });
    assert!(a.tree.view.folded.contains(&entry), "folded");
}

/// A session over `LARGE_SESSION` entries, where the app's work goes to jobs, made in memory.
fn big_session() -> std::sync::Arc<crate::engine::load::session::Session> {
    let mut file =
        String::from(r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#);
    file.push('\n');
    let mut parent = "null".to_string();
    for k in 0..(super::LARGE_SESSION + 10) {
        let role = if k % 2 == 0 { "user" } else { "assistant" };
        file.push_str(&format!(
            r#"{{"type":"message","id":"e{k}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"{role}","content":[{{"type":"text","text":"words for entry {k}"}}],"timestamp":{k}}}}}"#
        ));
        file.push('\n');
        parent = format!(r#""e{k}""#);
    }
    std::sync::Arc::new(crate::engine::load::session::Session::from_bytes(file.into_bytes()).unwrap())
}

/// `c` on a big session plans the compaction in a job, not in the update; its answer opens
/// the instructions with that plan, and the strategies go on with the same plan (it is not
/// worked out again).
#[test]
fn a_compaction_is_planned_by_a_job_and_carried_to_the_summaries() {
    use crate::engine::load::models::Registry;
    use crate::engine::settings::Settings;
    use crate::ui::dialog::InputPurpose;
    let s = big_session();
    let nowhere = Some(PathBuf::from("/nonexistent-bonsai-test/s/big.jsonl"));
    let mut a = App::with_session(s.clone(), nowhere, Settings::default(), Registry::builtin_only());
    a.run_jobs_now();
    a.setup.force_offline = true;
    a.pending.queue.clear();
    a.update(Action::Compact);
    assert!(a.parts.dialog.is_none());
    let [q] = a.pending.queue.as_slice() else {
        panic!("no plan queued: {:?} {:?}", a.pending.queue, a.log.status)
    };
    let Some(crate::ui::jobs::PlanCompactionJob { leaf, .. }) = q.job() else {
        panic!("not a plan: {q:?}")
    };
    assert_eq!(*leaf, s.leaf().unwrap());
    a.run_jobs_now();
    let Some(Dialog::Input {
        purpose: InputPurpose::CompactInstructions { at },
        ..
    }) = &a.parts.dialog
    else {
        panic!("no instructions asked: {:?}", a.log.status)
    };
    let plan = at.plan.clone();
    assert_eq!(at.leaf, s.leaf().unwrap());
    // Offline: the summary job gets the plan the dialog carried, and its tab is written on it.
    a.update(Action::Select);
    let [q] = a.pending.queue.as_slice() else {
        panic!("no summary queued: {:?} {:?}", a.pending.queue, a.log.status)
    };
    let Some(crate::ui::jobs::SummaryJob { kind, .. }) = q.job() else {
        panic!("not a summary: {q:?}")
    };
    let crate::ui::jobs::SummaryKind::Compaction(crate::ui::jobs::CompactionSummary { plan: queued, .. }) = kind else {
        panic!("not a compaction summary")
    };
    assert_eq!(queued.first_kept_entry, plan.first_kept_entry);
    assert_eq!(queued.history, plan.history);
    let Some(Dialog::Summary {
        purpose: crate::ui::dialog::SummaryFor::Compaction { first_kept, .. },
        ..
    }) = &a.parts.dialog
    else {
        panic!("no summary dialog: {:?}", a.log.status)
    };
    assert_eq!(first_kept.as_str(), &*s.entries[plan.first_kept_entry].id);
}

/// The first open of a session parses it and holds the writing of its index until the
/// session's first whole frame (its gauge included) is drawn; the next open reads the index,
/// the loading frame says so, and nothing is written again.
#[test]
fn the_first_open_writes_the_index_after_the_frame_and_the_next_reads_it() {
    use crate::store::index::Used;
    use crate::ui::jobs::LoadReport;
    use crate::ui::runner::Queued;

    let (s, _dir, path, place) = big_file_and_index_place();
    let open = || {
        let mut a = loading_indexed(&path, s.buf.len() as u64, &place);
        let results = crate::ui::runner::run_now(a.pending.queue.pop().unwrap());
        (a, results)
    };

    let (mut a, results) = open();
    let via = results.iter().find_map(|r| match r.output() {
        Some(LoadReport::Via(u)) => Some(u.clone()),
        _ => None,
    });
    assert!(matches!(via, Some(Used::Parsed(_))), "{via:?}");
    let mut results = results.into_iter().peekable();
    while let Some(r) = results.next_if(|r| !matches!(r.output(), Some(LoadReport::EarlySelection(_)))) {
        a.job_done(r);
    }
    assert!(!a.is_loading());
    assert!(!a.pending.queue.iter().any(|j| j.is::<crate::ui::jobs::SaveIndexJob>()));
    assert!(a.take_after_frame().is_empty(), "the gauge is still being worked out");
    a.job_done(results.next().unwrap());
    // After the frame: the index written, and the leaf's cut worked out.
    let (held, cut): (Vec<Queued<App>>, Vec<Queued<App>>) = a
        .take_after_frame()
        .into_iter()
        .partition(|j| j.is::<crate::ui::jobs::SaveIndexJob>());
    assert!(
        matches!(cut.as_slice(), [c] if c.is::<crate::ui::jobs::CutJob>()),
        "{} other jobs",
        cut.len()
    );
    let [h] = held.as_slice() else {
        panic!("no index written after the frame: {} jobs", held.len())
    };
    assert!(h.is::<crate::ui::jobs::SaveIndexJob>(), "{h:?}");
    for job in held {
        for r in crate::ui::runner::run_now(job) {
            assert!(
                matches!(r.output::<Result<u64, String>>(), Some(Ok(n)) if *n > 0),
                "{r:?}"
            );
        }
    }

    let (mut b, results) = open();
    for r in results {
        if let (Some(LoadReport::Via(u)), Some(frame)) = (r.output(), b.loading_frame()) {
            assert_eq!(u, &Used::Unchanged);
            assert!(frame.via.is_none());
        }
        let loading_before = b.is_loading();
        b.job_done(r);
        if loading_before
            && b.is_loading()
            && let Some(v) = &b.loading_frame().unwrap().via
        {
            assert_eq!(v, &Used::Unchanged);
        }
    }
    assert_eq!(b.doc.session.entries.len(), s.entries.len());
    assert!(
        b.log
            .status
            .as_deref()
            .is_some_and(|t| t.contains("from bonsai's index")),
        "{:?}",
        b.log.status
    );
    // The gauge came from the leaf's context the index kept (nothing projected before the
    // frame), and is the one the first open projected; its messages come with the cut, and
    // then their exact count is the first open's.
    let leaf = b.doc.session.leaf().unwrap();
    assert!(crate::engine::view::context::LeafContext::kept(&b.doc.session, leaf).is_some());
    let (ga, gb) = (a.selection.gauge.clone().unwrap(), b.selection.gauge.clone().unwrap());
    assert_eq!(
        (ga.tokens, ga.after_edits, ga.usage_before_compaction),
        (gb.tokens, gb.after_edits, gb.usage_before_compaction)
    );
    assert!(
        !b.pending
            .queue
            .iter()
            .any(|j| j.is::<crate::ui::jobs::ExactTokensJob>()),
        "no messages yet to count"
    );
    let after = b.take_after_frame();
    assert!(
        !after.iter().any(|j| j.is::<crate::ui::jobs::SaveIndexJob>()),
        "an index that fits is not written again"
    );
    for j in after.into_iter().filter(|j| j.is::<crate::ui::jobs::CutJob>()) {
        for r in crate::ui::runner::run_now(j) {
            b.job_done(r);
        }
    }
    assert!(b.selection.cut.is_some());
    let to_count = |app: &App| {
        app.pending
            .queue
            .iter()
            .find_map(|j| j.job::<crate::ui::jobs::ExactTokensJob>().map(|e| e.messages.len()))
    };
    assert_eq!(to_count(&b), to_count(&a));
    assert!(to_count(&b).is_some_and(|n| n > 0));
    a.run_jobs_now();
    b.run_jobs_now();
    let exact = |app: &App| app.selection.gauge.as_ref().and_then(|g| g.exact);
    assert!(exact(&a).is_some());
    assert_eq!(exact(&b), exact(&a));
}

/// The first session is read by the app's jobs behind the loading frame: the parse reports
/// its progress, then the session replaces the placeholder; a big session's gauge comes from
/// the load itself (the leaf's selection job is held, not run twice), and is the gauge that
/// job gives. An answer the held job would not give lets the job run after all.
#[test]
fn the_first_session_is_read_by_jobs_and_its_gauge_comes_from_the_load() {
    use crate::engine::load::models::Registry;
    use crate::engine::settings::Settings;
    use crate::ui::jobs::LoadReport;
    use crate::ui::runner::Queued;

    let s = big_session();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    std::fs::write(&path, &s.buf[..]).unwrap();
    let size = s.buf.len() as u64;
    let loading = |at: Option<&str>| {
        App::loading(
            path.clone(),
            size,
            20,
            at.map(str::to_string),
            Settings::default(),
            Registry::builtin_only(),
        )
    };
    let selection_jobs = |a: &App| {
        a.pending
            .queue
            .iter()
            .filter(|j| j.is::<crate::ui::jobs::SelectionJob>())
            .count()
    };
    // The gauge a selection job gives on the session opened as the picker opens one.
    let mut by_job = App::with_session(
        s.clone(),
        Some(path.clone()),
        Settings::default(),
        Registry::builtin_only(),
    );
    assert_eq!(selection_jobs(&by_job), 1);
    by_job.run_jobs_now();
    let want = by_job.selection.gauge.as_ref().unwrap().tokens.tokens;

    let mut a = loading(None);
    assert!(a.is_loading());
    let [q] = a.pending.queue.as_slice() else {
        panic!("no load queued")
    };
    let Some(crate::ui::jobs::LoadJob { early: Some(_), .. }) = q.job() else {
        panic!("no load with an early gauge queued (a small file has no leaf preview)")
    };
    let results = crate::ui::runner::run_now(a.pending.queue.pop().unwrap());
    let [progress @ .., loaded, early] = results.as_slice() else {
        panic!("the load said: {results:?}")
    };
    assert!(matches!(loaded.output(), Some(LoadReport::Loaded(_))), "{results:?}");
    assert!(
        matches!(early.output(), Some(LoadReport::EarlySelection(Some(_)))),
        "{results:?}"
    );
    let reports = progress.len();
    assert!(reports > 0 && reports <= 51, "{reports} progress reports");
    let mut results = results.into_iter();
    for r in results.by_ref().take(reports) {
        a.job_done(r);
    }
    assert!(a.loading_frame().unwrap().parsed > 0);
    a.job_done(results.next().unwrap());
    assert!(!a.is_loading());
    assert_eq!(a.doc.path.as_deref(), Some(path.as_path()));
    assert_eq!(a.doc.session.entries.len(), s.entries.len());
    assert_eq!(selection_jobs(&a), 0, "the leaf's job is held for the load's answer");
    let exact_counts = a
        .pending
        .queue
        .iter()
        .filter(|j| j.is::<crate::ui::jobs::ExactAllJob>())
        .count();
    assert_eq!(exact_counts, 1, "every entry's exact count starts once");
    assert!(a.selection.gauge.is_none());
    a.job_done(results.next().unwrap());
    let g = a.selection.gauge.as_ref().expect("the gauge from the load");
    assert_eq!(g.tokens.tokens, want);
    assert_eq!(selection_jobs(&a), 0);
    // Its cut is a job of its own after the first frame, and the same as a selection job's.
    assert!(a.selection.cut.is_none(), "the first frame does not wait for the cut");
    let cuts: Vec<Queued<App>> = a
        .take_after_frame()
        .into_iter()
        .filter(|j| j.is::<crate::ui::jobs::CutJob>())
        .collect();
    assert_eq!(cuts.len(), 1);
    for j in cuts {
        for r in crate::ui::runner::run_now(j) {
            a.job_done(r);
        }
    }
    let first_kept = |app: &App| {
        let cut = app.selection.cut.as_ref().expect("the cut came");
        cut.as_ref()
            .map(|p| p.first_kept_entry)
            .map_err(|e| e.reason().to_string())
    };
    assert_eq!(first_kept(&a), first_kept(&by_job));

    // No answer from the load: the held job runs after all.
    let mut b = loading(None);
    let mut results = crate::ui::runner::run_now(b.pending.queue.pop().unwrap());
    results.pop();
    for r in results {
        b.job_done(r);
    }
    b.report::<crate::ui::jobs::LoadJob>(LoadReport::EarlySelection(None));
    assert_eq!(selection_jobs(&b), 1);
    b.run_jobs_now();
    assert_eq!(b.selection.gauge.as_ref().unwrap().tokens.tokens, want);

    // An entry asked for: no early gauge; that entry is selected.
    let mut c = loading(Some("e5"));
    let [q] = c.pending.queue.as_slice() else {
        panic!("no load queued")
    };
    let Some(crate::ui::jobs::LoadJob { early: None, .. }) = q.job() else {
        panic!("an early gauge asked for although an entry was")
    };
    c.run_jobs_now();
    assert_eq!(c.selected().map(|i| &*c.doc.session.entries[i].id), Some("e5"));

    // A file that cannot be read ends the run with its reason.
    let mut d = App::loading(
        dir.path().join("gone.jsonl"),
        0,
        20,
        None,
        Settings::default(),
        Registry::builtin_only(),
    );
    d.run_jobs_now();
    assert!(d.quit);
    let why = d.fatal.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(why.contains("gone.jsonl") && why.contains("cannot read"), "{why}");
}

/// Issue 21, item 12: "nothing to compact" came only after instructions and strategies were
/// chosen, in the CLI's words (`--keep-recent-tok…`). It is said when C is pressed, in the
/// TUI's keys, and no dialog opens.
#[test]
fn nothing_to_compact_is_said_when_c_is_pressed_in_the_tuis_words() {
    let (_d, p) = temp_copy("tour.jsonl");
    let mut a = app_for(&p);
    a.handle_key(shift('C'));
    assert!(a.parts.dialog.is_none(), "a dialog opened: {:?}", a.mode());
    let st = a.log.status.clone().unwrap_or_default();
    assert!(st.starts_with("Nothing to compact here"), "{st}");
    assert!(st.contains("- or # keeps fewer") && !st.contains("--keep"), "{st}");
    // Keeping fewer tokens: the dialog opens.
    a.handle_key(ch('c'));
    a.handle_key(ch('#'));
    for c in "100".chars() {
        a.handle_key(ch(c));
    }
    a.handle_key(key(KeyCode::Enter));
    a.handle_key(shift('C'));
    assert!(a.parts.dialog.is_some(), "{:?}", a.log.status);
}

/// Issue 21, item 16: `bonsai FILE --at ID` on a tool call's hit selected the tool result
/// before it, and the filter widened to "all" without a word. The hit's own row is selected,
/// and a widened filter is said.
#[test]
fn at_a_tool_calls_hit_selects_its_own_row_and_says_when_the_filter_widened() {
    let (_d, p) = temp_copy("tour.jsonl");
    let mut a = app_for(&p);
    let s = a.doc.session.clone();
    let call = s.idx_of("8207837f").unwrap();
    // Pi's /tree lists no row for the call: its result (the entry under it) shows it.
    let result = (call + 1..s.entries.len())
        .find(|&j| s.parent_of(j) == Some(call))
        .unwrap();
    a.select_entry_ref("8207837f");
    let st = a.log.status.clone().unwrap_or_default();
    assert_eq!(a.tree.view.selected_entry(), Some(result), "{st}");
    assert!(render(&mut a, 120, 40).contains("sort -t"), "the row shows the call");
    assert!(st.contains("its tool call shows on its result's row"), "{st}");
    assert_eq!(
        a.tree.view.filter,
        crate::engine::view::tree_view::FilterMode::Default,
        "not widened"
    );
    // A label entry: the default filter hides it; widened, and said.
    let label = s.idx_of("5cad1209").unwrap();
    a.select_entry_ref("5cad1209");
    let st = a.log.status.clone().unwrap_or_default();
    assert_eq!(a.tree.view.selected_entry(), Some(label), "{st}");
    assert!(
        st.contains("the default filter hides it, so the filter is now all"),
        "{st}"
    );
}

/// Issue 21, item 8: `bonsai restore` from the CLI showed in an open TUI as "live: 5 new
/// entries from Pi", and a malformed-line banner stayed after Pi completed the line.
#[test]
fn a_restore_elsewhere_is_said_as_bonsais_and_the_banner_follows_the_file() {
    let (_d, p) = temp_copy("tour.jsonl");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let mut a = app_for(&p);
    let n = a.doc.session.entries.len();
    let seen = std::fs::read(&p).unwrap();
    crate::store::rewrite::delete_branch(&p, &seen, "2e33ee61").unwrap();
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    let st = a.log.status.clone().unwrap_or_default();
    assert!(
        st.contains("rewritten by bonsai elsewhere") && st.contains(" fewer)"),
        "{st}"
    );
    crate::store::rewrite::restore(&p).unwrap();
    a.update(crate::ui::tick(&a));
    a.run_jobs_now();
    assert_eq!(a.doc.session.entries.len(), n);
    let st = a.log.status.clone().unwrap_or_default();
    assert!(!st.contains("from Pi"), "{st}");
    assert!(
        st.contains("rewritten by bonsai elsewhere") && st.contains(" more)"),
        "{st}"
    );
    // Pi half-way through a line when bonsai opens: the banner says a malformed line; once
    // the line is whole, the banner goes.
    let leaf = a.doc.session.entries[a.doc.session.leaf().unwrap()].id.clone();
    let line = format!(
        r#"{{"type":"message","id":"half0001","parentId":"{leaf}","timestamp":"2026-11-22T06:00:00.000Z","message":{{"role":"user","content":"done","timestamp":1}}}}"#
    );
    let (head, tail) = line.split_at(40);
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    write!(f, "{head}").unwrap();
    drop(f);
    let mut b = app_for(&p);
    b.log.notice = b.diagnostics_notice(); // as `bonsai FILE` starts
    let banner = b.log.notice.clone().unwrap_or_default();
    assert!(banner.contains("malformed line"), "{banner:?}");
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    writeln!(f, "{tail}").unwrap();
    drop(f);
    b.update(crate::ui::tick(&b));
    b.run_jobs_now();
    assert!(b.doc.session.idx_of("half0001").is_some());
    assert_eq!(b.log.notice, None, "the line is whole: no banner");
}

/// Issue 21, item 6: the prune panel and the x / X confirms mixed Pi's usage ("now") with the
/// per-message estimate ("after"), and X said "0 saved" when it added tokens. One basis per
/// line, Pi's figure beside it labelled; a restore says what it adds; after a write the gauge
/// says the new figure applies from Pi's next call.
#[test]
fn hide_and_restore_say_their_change_on_one_basis_and_the_gauge_says_when_it_applies() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    let user = newest_on_path(&a, Role::User);
    let confirm_lines = |a: &App| match &a.parts.dialog {
        Some(Dialog::Confirm { lines, .. }) => lines.join("\n"),
        d => panic!("no confirm: {d:?} {:?}", a.log.status),
    };
    select(&mut a, user);
    a.handle_key(ch('x'));
    let text = confirm_lines(&a);
    assert!(text.contains("By Pi's estimate the context goes"), "{text}");
    assert!(text.contains("(−") && !text.contains("saved"), "{text}");
    assert!(
        text.contains("Pi's figure now is"),
        "a different basis, labelled: {text}"
    );
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let leaf = a.doc.session.leaf().unwrap();
    select(&mut a, leaf);
    let g = a.selection.gauge.clone().unwrap();
    assert!(
        g.after_edits.is_some(),
        "the gauge knows the edit applies from the next call"
    );
    let screen = render(&mut a, 200, 40);
    // Pi's figure says it comes from before the edits; the estimate beside it has them.
    assert!(
        screen.contains("(Pi's figure) from the reply before the edits; Pi counts them from its next call"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!(
            "· estimate {}",
            crate::engine::units::count(g.estimate.unwrap())
        )),
        "{screen}"
    );
    select(&mut a, user);
    a.handle_key(ch('X'));
    let text = confirm_lines(&a);
    assert!(
        text.contains("(+") && !text.contains("0 saved"),
        "a restore adds: {text}"
    );
}

/// Issue 21, item 1: K and F wrote a new session file at once (three presses, three files, and
/// the newest is what Pi resumes). They ask first, saying so, and u removes the fork or clone
/// while nobody has written to it.
#[test]
fn clone_and_fork_ask_first_and_u_removes_an_untouched_one() {
    let (d, p) = temp_copy("split-turn.jsonl");
    let files = || std::fs::read_dir(d.path()).unwrap().count();
    let before = files();
    let mut a = app_for(&p);
    a.handle_key(shift('K'));
    let Some(Dialog::ConfirmRewrite { lines, .. }) = &a.parts.dialog else {
        panic!("no question: {:?}", a.log.status)
    };
    let text = lines.join(" ");
    assert!(text.contains("resume the newest session file"), "{text}");
    // No: nothing written.
    a.handle_key(ch('n'));
    a.run_jobs_now();
    assert_eq!(files(), before);
    // Yes: one file; u asks, then removes it.
    a.handle_key(shift('K'));
    a.handle_key(ch('y'));
    a.run_jobs_now();
    assert_eq!(files(), before + 1);
    let session = std::fs::read(&p).unwrap();
    a.handle_key(ch('u'));
    // Whether the clone is untouched is a job's question (it reads the file's metadata).
    assert!(
        matches!(
            a.pending.queue.as_slice(),
            [q] if matches!(
                q.job(),
                Some(crate::ui::jobs::ChoreJob {
                    chore: crate::ui::chores::Chore::CheckBranched(_),
                    ..
                })
            )
        ),
        "u asks a job first"
    );
    assert!(a.parts.dialog.is_none());
    a.run_jobs_now();
    let Some(Dialog::ConfirmRewrite { lines, .. }) = &a.parts.dialog else {
        panic!("u did not offer to remove the clone: {:?}", a.log.status)
    };
    assert!(lines[0].starts_with("Remove the clone "), "{lines:?}");
    a.handle_key(ch('y'));
    // The update only queued the removal: the job does it.
    assert_eq!(files(), before + 1, "{:?}", a.log.status);
    assert!(matches!(a.pending.queue.as_slice(), [q] if q.is::<crate::ui::jobs::ChoreJob>()));
    a.run_jobs_now();
    assert_eq!(files(), before, "{:?}", a.log.status);
    assert!(a.log.status.as_deref().unwrap_or("").starts_with("removed the clone"));
    assert_eq!(std::fs::read(&p).unwrap(), session, "this session untouched");
    // A fork that Pi has written to since is kept: u goes on to bonsai's actions in this file.
    let s = a.doc.session.clone();
    let user = (0..s.entries.len())
        .rev()
        .find(|&i| s.entries[i].message().is_some_and(|m| m.role == Role::User))
        .unwrap();
    select(&mut a, user);
    a.handle_key(shift('F'));
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let st = a.log.status.clone().unwrap_or_default();
    let name = st.split(": ").nth(1).unwrap().split(' ').next().unwrap().to_string();
    let fork = d.path().join(&name);
    let mut f = std::fs::OpenOptions::new().append(true).open(&fork).unwrap();
    writeln!(
        f,
        r#"{{"type":"custom","id":"pi000009","parentId":null,"timestamp":"2026-11-25T00:00:00.000Z","customType":"x"}}"#
    )
    .unwrap();
    drop(f);
    a.handle_key(ch('u'));
    a.run_jobs_now();
    assert!(
        !matches!(a.parts.dialog, Some(Dialog::ConfirmRewrite { .. })),
        "offered to remove a fork Pi wrote to"
    );
    assert!(fork.exists());
}

/// Issue 21, item 13: messages cut at the screen edge could not be read. A long one wraps in
/// the status area, M shows every message whole, the hint bar keeps `q quit` and `? keys` at
/// 80 columns, and the help never clips a line.
#[test]
fn long_messages_wrap_the_log_keeps_them_and_the_way_out_always_shows() {
    let (_d, p) = temp_copy("tour.jsonl");
    let mut a = app_for(&p);
    let long = "the fork was written to /a/very/long/folder/name/that/goes/on/and/on/2026-11-25T00-00-00-000Z_0199aaaa-bbbb-cccc-dddd-eeeeffff0000.jsonl and Pi resumes it next";
    a.log.status = Some(long.into());
    a.update(crate::ui::tick(&a));
    let screen = render(&mut a, 80, 24);
    let flat: String = screen
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains("and Pi resumes it next"), "{screen}");
    let last = screen.lines().last().unwrap();
    assert!(last.contains("q quit") && last.contains("? keys"), "{last}");
    a.log.status = Some("a second message".into());
    a.update(crate::ui::tick(&a));
    a.handle_key(shift('M'));
    let screen = render(&mut a, 80, 24);
    let flat: String = screen
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        flat.contains("messages (UTC)") && flat.contains("a second message"),
        "{screen}"
    );
    assert!(flat.contains("and Pi resumes it next"), "the first, whole: {screen}");
    a.handle_key(ch('x'));
    assert_eq!(a.screen.overlay, Overlay::None);
    // The help at 60 columns: every label whole.
    a.handle_key(ch('?'));
    for k in 0..4 {
        let screen = render(&mut a, 60, 60);
        let flat: String = screen
            .replace('│', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for (_, label) in crate::ui::help::entries(keymap::Mode::Tree)
            .iter()
            .skip(k * 40)
            .take(40)
        {
            let words: Vec<&str> = label.split_whitespace().collect();
            if flat.contains(words[0]) {
                assert!(flat.contains(&words.join(" ")), "{label:?} clipped:\n{screen}");
            }
        }
        a.handle_key(key(KeyCode::PageDown));
    }
}

/// Issue 21, item 11: the prune preview could not be reviewed (pruned rows above the screen,
/// and moving the selection planned again for the new row). r lists the plan, fixed while open:
/// every output with its entry, tool, key argument and tokens before → after; space leaves an
/// item out; a writes the rest.
#[test]
fn the_prune_plan_is_a_list_to_review_and_leave_items_out_of() {
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    a.handle_key(ch('l'));
    a.handle_key(ch('p'));
    a.handle_key(ch('!'));
    let plan = a.parts.prune.plan.clone().unwrap();
    let edits: Vec<usize> = plan.edits().map(|i| i.entry).collect();
    assert!(edits.len() >= 3, "{}", plan.note);
    a.handle_key(ch('r'));
    assert_eq!(a.mode(), Mode::PrunePlan);
    let screen = render(&mut a, 120, 30);
    insta::assert_snapshot!("prune_plan_list", screen);
    let first = a.doc.session.entries[edits[0]].id.to_string();
    assert!(screen.contains(first.as_str()) && screen.contains("→"), "{screen}");
    // Leave the first out; move; the plan's leaf stays.
    a.handle_key(ch(' '));
    a.handle_key(key(KeyCode::Down));
    assert_eq!(a.parts.prune.list.as_ref().unwrap().plan.leaf, plan.leaf);
    let screen = render(&mut a, 120, 30);
    assert!(screen.contains("1 left out"), "{screen}");
    a.handle_key(ch('a'));
    let Some(Dialog::Confirm { lines, .. }) = &a.parts.dialog else {
        panic!("no confirm: {:?}", a.log.status)
    };
    assert!(lines.iter().any(|l| l.contains("1 item left out by you")), "{lines:?}");
    a.handle_key(ch('y'));
    a.run_jobs_now();
    let written = edits_in_file(&p);
    assert_eq!(written.len(), edits.len() - 1, "{:?}", a.log.status);
    assert!(
        !written.iter().any(|(t, _)| *t == first),
        "the left-out item was written"
    );
}

/// Issue 21, item 17: a v1 file was read-only only once a label had been typed (the write was
/// refused then). It says so when it opens, and L refuses before asking for anything.
#[test]
fn an_old_session_file_says_it_is_read_only_when_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v1.jsonl");
    std::fs::copy(own("../pi-0.27.9/v1.jsonl"), &p).unwrap();
    let mut a = app_for(&p);
    a.log.notice = a.diagnostics_notice();
    let st = a.log.status.clone().unwrap_or_default();
    assert!(st.contains("read-only") && st.contains("bonsai migrate"), "{st}");
    assert!(
        a.log.notice.as_deref().unwrap_or("").contains("read-only"),
        "{:?}",
        a.log.notice
    );
    let before = std::fs::read(&p).unwrap();
    a.handle_key(shift('L'));
    assert!(a.parts.dialog.is_none(), "a label was asked for");
    assert!(a.log.status.as_deref().unwrap_or("").contains("read-only"));
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn find_in_session_goes_from_hit_to_hit_in_tree_order_unfolding_and_marking() {
    let mut a = app_for(&own("tour.jsonl"));
    a.update(Action::Resize { width: 140, height: 40 });
    let s = a.doc.session.clone();
    let id = |i: usize| s.entries[i].id.to_string();
    let idx = |want: &str| s.idx_of(want).unwrap();
    // The branch with the screenshot is folded: one hit hides inside it.
    let screenshot = (0..s.entries.len())
        .find(|&i| {
            crate::engine::view::context::content_text(s.entry_value(i)["message"].get("content"), "")
                .starts_with("What does this screenshot")
        })
        .unwrap();
    a.tree.view.folded.insert(screenshot);
    a.tree.view.apply_filter(&s);
    a.handle_key(ctrl('f'));
    assert_eq!(a.mode(), Mode::Find);
    typed(&mut a, "rows");
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    let f = a.parts.find.as_ref().unwrap();
    assert!(!f.running);
    // Tool output, custom messages and summaries are searched too: 6 entries hold "rows".
    assert_eq!(f.hits.len(), 6, "{:?}", f.hits);
    // Tree order as the view shows it (the active branch first): the trunk's file read, the
    // active branch's two, the screenshot branch's two, then the branch summary.
    let order: Vec<String> = f.hits.values().map(|(e, _)| id(*e)).collect();
    assert_eq!(
        order,
        ["128a1ee2", "cd71733a", "809ec3d7", "732f24c9", "0ce3192c", "73b50f69"]
    );
    assert_eq!(a.selected(), Some(idx("128a1ee2")), "the first hit is shown at once");
    assert!(render(&mut a, 140, 40).contains("find \"rows\": 1/6 (n/N)"));
    a.handle_key(ch('n'));
    a.handle_key(ch('n'));
    assert_eq!(a.selected(), Some(idx("809ec3d7")));
    // Into the folded branch: it opens.
    assert!(a.tree.view.folded.contains(&screenshot));
    a.handle_key(ch('n'));
    assert_eq!(a.selected(), Some(idx("732f24c9")));
    assert!(
        !a.tree.view.folded.contains(&screenshot),
        "the branch was unfolded to show the hit"
    );
    assert!(render(&mut a, 140, 40).contains("4/6"));
    // Back, and round the start to the last hit.
    for _ in 0..4 {
        a.handle_key(ch('N'));
    }
    assert_eq!(a.selected(), Some(idx("73b50f69")));
    // The match is marked in the detail pane.
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(140, 40)).unwrap();
    t.draw(|f| crate::ui::draw(f, &a)).unwrap();
    let buf = t.backend().buffer();
    let marked = (0..40u16)
        .flat_map(|y| (0..140u16).map(move |x| (x, y)))
        .filter(|&(x, y)| buf[(x, y)].bg == crate::ui::theme::WARNING)
        .map(|(x, y)| buf[(x, y)].symbol().to_string())
        .collect::<String>();
    assert!(marked.to_lowercase().contains("rows"), "marked: {marked:?}");
    // Esc while typing a new query keeps the old find; a query found nowhere says so.
    a.handle_key(ctrl('f'));
    a.handle_key(key(KeyCode::Esc));
    assert_eq!(a.parts.find.as_ref().unwrap().hits.len(), 6);
    a.handle_key(ctrl('f'));
    for _ in 0..4 {
        a.handle_key(key(KeyCode::Backspace));
    }
    typed(&mut a, "zebra crossing");
    a.handle_key(key(KeyCode::Enter));
    a.run_jobs_now();
    assert!(
        a.log
            .status
            .as_deref()
            .unwrap_or("")
            .contains("nowhere in this session")
    );
}

/// The update reads no file and no clock: the tick brings what the event loop saw, and file
/// work (pins, the trash) leaves as a job. Run here on a session whose file and agent directory
/// do not exist, so any disk access would show.
#[test]
fn the_update_works_without_a_disk_and_says_what_to_do() {
    use crate::ui::action::{FileSeen, Observed};
    use crate::ui::chores::Chore;
    use crate::ui::picker::snapshots::{acme, picker};
    let bytes = std::fs::read(own("tour.jsonl")).unwrap();
    let s = crate::engine::load::session::Session::from_bytes(bytes).unwrap();
    let nowhere = PathBuf::from("/nonexistent-bonsai-test/s/tour.jsonl");
    let mut a = App::new(
        s,
        Some(nowhere.clone()),
        crate::engine::settings::Settings::default(),
        crate::engine::load::models::Registry::builtin_only(),
    );
    a.outside.agent_dir = PathBuf::from("/nonexistent-bonsai-test/agent");
    a.pending.queue.clear();
    let len = a.doc.session.buf.len() as u64;
    let tick = |file, mapping_damaged| {
        Action::Tick(Observed {
            now_ms: 1_800_000_000_000,
            now: std::time::Instant::now(),
            file,
            mapping_damaged,
            stamp: None,
        })
    };
    // The same length: nothing to do; the clock taken from the tick.
    a.update(tick(FileSeen::Len(len), false));
    assert!(a.pending.queue.is_empty(), "{:?}", a.pending.queue.len());
    assert_eq!(a.outside.now_ms, 1_800_000_000_000);
    // Pi appended: read it again (a job).
    a.update(tick(FileSeen::Len(len + 120), false));
    assert!(
        matches!(a.pending.queue.as_slice(), [q] if q.job::<crate::ui::jobs::ReloadJob>().is_some_and(|r| r.path == nowhere))
    );
    // Gone: said once, nothing queued.
    a.pending.queue.clear();
    a.pending.reload = false;
    a.update(tick(FileSeen::Gone, false));
    assert!(
        a.log.status.as_deref().unwrap_or("").contains("gone"),
        "{:?}",
        a.log.status
    );
    assert!(a.pending.queue.is_empty());
    // A mapping that lost pages: open it again.
    a.update(tick(FileSeen::Len(len), true));
    assert!(matches!(a.pending.queue.as_slice(), [q] if q.is::<crate::ui::jobs::OpenJob>()));
    assert!(
        a.log
            .status
            .as_deref()
            .unwrap_or("")
            .contains("the session file is back")
    );
    // Cannot look at it: nothing concluded.
    a.pending.queue.clear();
    a.update(tick(FileSeen::Unknown, false));
    assert!(a.pending.queue.is_empty() && !a.file.gone);
    // The picker's pin key: a chore for the jobs, no pins file written.
    a.parts.picker = Some(picker(false, acme(), vec![]));
    a.screen.overlay = Overlay::Picker;
    a.handle_key(key(KeyCode::Down));
    a.pending.queue.clear();
    a.handle_key(ch('p'));
    let [q] = a.pending.queue.as_slice() else {
        panic!("no pin chore: {:?} {:?}", a.pending.queue, a.log.status)
    };
    let Some(crate::ui::jobs::ChoreJob {
        chore: Chore::TogglePin(path),
        agent_dir,
    }) = q.job()
    else {
        panic!("not a pin chore: {q:?}")
    };
    assert!(path.to_string_lossy().ends_with(".jsonl"), "{path:?}");
    assert_eq!(agent_dir, &a.outside.agent_dir);
    assert!(!a.outside.agent_dir.exists());
    // What the job says comes back as an action.
    let pinned = path.clone();
    a.pending.queue.clear();
    a.report::<crate::ui::jobs::ChoreJob>(crate::ui::chores::ChoreDone {
        message: "pinned on top".into(),
        pins: Some(vec![pinned.clone()]),
        relist: false,
        branched: None,
        trashed: None,
    });
    assert_eq!(a.log.status.as_deref(), Some("pinned on top"));
    assert!(a.parts.picker.as_ref().unwrap().pins.contains(&pinned));
    // A session moved to the trash leaves the list and the preview at once, before the
    // listing again comes back (it took ~2 s on a big folder).
    let selected = a.parts.picker.as_ref().unwrap().selected_path().unwrap();
    let name = selected.file_name().unwrap().to_string_lossy().to_string();
    a.pending.queue.clear();
    a.report::<crate::ui::jobs::ChoreJob>(crate::ui::chores::ChoreDone {
        message: format!("moved {name} to the trash"),
        pins: None,
        relist: true,
        branched: None,
        trashed: Some(selected.clone()),
    });
    let p = a.parts.picker.as_ref().unwrap();
    assert!(!p.sessions.iter().any(|s| s.path == selected));
    let now = p.selected_path().unwrap();
    assert_ne!(now, selected, "the selection went to a neighbour");
    assert!(p.gone.is_none(), "not 'gone (deleted or moved)': the user moved it");
    a.screen.overlay = Overlay::Picker;
    let screen = render(&mut a, 160, 40);
    let preview: String = screen.lines().map(|l| l.split('│').nth(2).unwrap_or("")).collect();
    assert!(!preview.contains(&name), "the preview follows the selection: {screen}");
    // A compaction's summary model is looked for by a job (finding the key reads Pi's
    // auth.json and the environment); the update only asks, then goes on with the answer.
    a.screen.overlay = Overlay::None;
    a.pending.queue.clear();
    a.update(Action::GoToLeaf);
    a.selection.keep_recent = 200;
    a.pending.queue.clear();
    a.update(Action::Compact);
    assert!(
        matches!(a.parts.dialog, Some(Dialog::Input { .. })),
        "{:?}",
        a.log.status
    );
    a.update(Action::Select);
    let [q] = a.pending.queue.as_slice() else {
        panic!("no model lookup queued: {:?} {:?}", a.pending.queue, a.log.status)
    };
    let Some(crate::ui::jobs::ResolveSummarizerJob { id, agent_dir, .. }) = q.job() else {
        panic!("not a model lookup: {q:?}")
    };
    assert_eq!(agent_dir, &a.outside.agent_dir);
    let id = *id;
    a.pending.queue.clear();
    // No key: the offline summary, its tab timed from the last tick's clock.
    a.report::<crate::ui::jobs::ResolveSummarizerJob>(crate::ui::jobs::Resolved { id, summarizer: None });
    let Some(Dialog::Summary { by, tabs, .. }) = &a.parts.dialog else {
        panic!("no summary dialog: {:?}", a.log.status)
    };
    assert_eq!(by, "offline");
    assert_eq!(tabs[0].started, a.outside.clock);
}

/// The compaction looks its summary model up once: the model found for the strategies
/// dialog is the one the chosen strategies run on, with no second lookup between.
#[test]
fn a_compaction_looks_its_model_up_once() {
    use crate::ui::jobs::{ResolveSummarizerJob, Resolved, SummaryJob};
    let (_d, p) = temp_copy("long.jsonl");
    let mut a = app_for(&p);
    // A model is looked for (in a job), as outside the tests.
    a.setup.force_offline = false;
    a.selection.keep_recent = 2000;
    a.pending.queue.clear();
    a.handle_key(shift('C'));
    assert_eq!(a.mode(), Mode::Instructions, "{:?}", a.log.status);
    a.handle_key(key(KeyCode::Enter));
    let [q] = a.pending.queue.as_slice() else {
        panic!("no model lookup: {:?}", a.pending.queue)
    };
    let id = q.job::<ResolveSummarizerJob>().expect("a model lookup").id;
    a.pending.queue.clear();
    a.report::<ResolveSummarizerJob>(Resolved {
        id,
        summarizer: Some(Box::new(unreachable_model())),
    });
    assert_eq!(a.mode(), Mode::Strategies);
    a.handle_key(key(KeyCode::Enter));
    let [q] = a.pending.queue.as_slice() else {
        panic!("one job after the strategies: {:?}", a.pending.queue)
    };
    let job = q
        .job::<SummaryJob>()
        .expect("the summary starts at once, without a second lookup");
    let model = job.summarizer.as_ref().map(|m| m.model.id.clone());
    assert_eq!(model.as_deref(), Some("fake-sonnet"));
    assert!(a.pending.summarizer.is_none(), "used, not kept");
}

/// A quit right after a big session's first frame waits for its index, saying so, so the
/// next open reads the index instead of parsing the file again; a key quits at once.
/// Before, the index job was dropped with the runtime.
#[test]
fn a_quick_quit_waits_for_the_sessions_index() {
    use crate::ui::jobs::SaveIndexJob;

    let (s, _dir, path, place) = big_file_and_index_place();
    let open = || {
        let mut a = loading_indexed(&path, s.buf.len() as u64, &place);
        let load = a.pending.queue.remove(0);
        for d in crate::ui::runner::run_now(load) {
            a.job_done(d);
        }
        a
    };
    // Quit before the index job left: it is handed out, the quit waits and says why.
    let mut a = open();
    a.update(Action::Quit);
    assert!(a.quit);
    let jobs = a.hold_quit_for_the_index().expect("the quit waits for the index");
    assert!(!a.quit);
    assert!(matches!(jobs.as_slice(), [j] if j.is::<SaveIndexJob>()), "{jobs:?}");
    assert!(
        a.log
            .status
            .as_deref()
            .unwrap_or("")
            .contains("writing this session's index"),
        "{:?}",
        a.log.status
    );
    for job in jobs {
        for d in crate::ui::runner::run_now(job) {
            a.job_done(d);
        }
    }
    assert!(a.quit, "the index written, the quit goes on");
    assert!(a.hold_quit_for_the_index().is_none());
    assert!(place.dir.read_dir().unwrap().next().is_some(), "an index was written");
    // The next open reads it: nothing left to write, the quit is at once.
    let mut b = open();
    assert!(b.log.status.as_deref().unwrap_or("").contains("from bonsai's index"));
    b.update(Action::Quit);
    assert!(b.hold_quit_for_the_index().is_none());
    // Waiting, any key quits at once.
    std::fs::remove_dir_all(&place.dir).unwrap();
    let mut c = open();
    c.update(Action::Quit);
    assert!(c.hold_quit_for_the_index().is_some());
    c.update(Action::Down);
    assert!(c.quit);
    assert!(c.hold_quit_for_the_index().is_none());
}

/// The big session written to a file, and a place for its index, in a folder of their own.
fn big_file_and_index_place() -> (
    std::sync::Arc<crate::engine::load::session::Session>,
    tempfile::TempDir,
    PathBuf,
    crate::store::index::Place,
) {
    let s = big_session();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    std::fs::write(&path, &s.buf[..]).unwrap();
    let place = crate::store::index::Place {
        dir: dir.path().join("index"),
        limit: 1 << 30,
        view: Default::default(),
    };
    (s, dir, path, place)
}

/// The app loading `path` with its index at `place`: the load job is its one job.
fn loading_indexed(path: &std::path::Path, size: u64, place: &crate::store::index::Place) -> App {
    let mut a = App::loading(
        path.to_path_buf(),
        size,
        20,
        None,
        crate::engine::settings::Settings::default(),
        crate::engine::load::models::Registry::builtin_only(),
    );
    a.setup.index = Some(place.clone());
    let [q] = a.pending.queue.as_mut_slice() else {
        panic!("no load queued")
    };
    let Some(crate::ui::jobs::LoadJob { index, .. }) = q.job_mut() else {
        panic!("not a load: {q:?}")
    };
    *index = Some(place.clone());
    a
}

/// Every view that shows the context's tokens, at one selection of one session, says the same
/// figure for the same quantity, with the same basis label: the gauge, the context view, the
/// cut preview, the prune panel and the gauge's ◆ mark.
#[test]
fn every_view_says_the_same_figures_on_the_same_basis() {
    use crate::engine::units::{Basis, count, tokens};
    let mut a = long_with_its_window();
    render(&mut a, 300, 50);
    a.run_jobs_now();
    let g = a.selection.gauge.clone().unwrap();
    let pi = tokens(g.tokens.tokens);
    let estimate = count(g.estimate.expect("the gauge knows the estimate"));
    let exact = count(g.exact.expect("the exact count is in"));
    // Pi's figure and the estimate differ on this session (its last usage counts what the
    // provider counted): a view that swapped them would show.
    assert_ne!(pi, estimate);
    let gauge_line = |s: &str| {
        s.lines()
            .find(|l| l.contains("(Pi's figure)"))
            .unwrap_or_default()
            .to_string()
    };
    let line = gauge_line(&render(&mut a, 300, 50));
    assert!(line.contains(&format!("{pi} tokens ({})", Basis::Pi.label())), "{line}");
    assert!(
        line.contains(&format!("{} {estimate} ", Basis::Estimate.label())),
        "{line}"
    );
    assert!(line.contains(&format!("{} {exact} ", Basis::Exact.label())), "{line}");
    assert!(line.contains("· green ·"), "the zone as /ctx-status names it: {line}");

    // The context view: its header leads with the sum of its rows, the same estimate.
    a.handle_key(ch('v'));
    a.run_jobs_now();
    let data = a.parts.context.data.clone().unwrap();
    let rows: u64 = data
        .selected
        .rows
        .iter()
        .filter(|r| r.omitted_by.is_none())
        .map(|r| r.est)
        .sum();
    assert_eq!(count(rows), estimate, "the rows add up to the gauge's estimate");
    let screen = render(&mut a, 300, 50);
    assert!(
        screen.contains(&format!(
            "{estimate} tokens ({}, the rows' sum) · {} {pi} · {} {exact}",
            Basis::Estimate.label(),
            Basis::Pi.label(),
            Basis::Exact.label()
        )),
        "{screen}"
    );
    a.handle_key(key(KeyCode::Esc));

    // The cut preview: before on the estimate, Pi's figure apart.
    a.handle_key(ch('c'));
    a.run_jobs_now();
    let screen = render(&mut a, 300, 60);
    assert!(
        screen.contains(&format!("{} {estimate} → kept ", Basis::Estimate.label())),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("{} now {pi}: ", Basis::Pi.label())),
        "{screen}"
    );
    a.handle_key(key(KeyCode::Esc));

    // The prune panel and the gauge's mark: the same estimate before, the same after.
    a.handle_key(ch('p'));
    a.run_jobs_now();
    a.handle_key(ch('!'));
    a.run_jobs_now();
    let plan = a.parts.prune.plan.clone().unwrap();
    assert!(plan.edits().count() > 0, "a forced plan edits");
    assert_eq!(
        count(plan.estimate_now()),
        estimate,
        "the plan's before is the gauge's estimate"
    );
    let after = count(plan.tokens_after);
    let screen = render(&mut a, 300, 60);
    assert!(
        screen.contains(&format!("{} {estimate} → {after} · ", Basis::Estimate.label())),
        "the panel: {screen}"
    );
    assert!(
        gauge_line(&screen).contains(&format!(
            "◆ {} {estimate} → {after} after pruning",
            Basis::Estimate.label()
        )),
        "the gauge: {screen}"
    );
}

/// Issue 58: a session left behind cannot give its figures to the one opened in its place.
/// Its exact count (generation 1, as the new session's first selection is) came after the
/// new session opened and was shown as the new one's; now it is dropped, and its waiting
/// jobs are told to stop.
#[test]
fn a_left_sessions_results_never_reach_the_session_opened_after_it() {
    use crate::ui::runner::{Queued, run_now};
    let load = |name: &str| {
        let bytes = std::fs::read(own(name)).unwrap();
        std::sync::Arc::new(crate::engine::load::session::Session::from_bytes(bytes).unwrap())
    };
    let long = load("long.jsonl");
    let mut a = App::new(
        crate::engine::load::session::Session::from_bytes(std::fs::read(own("long.jsonl")).unwrap()).unwrap(),
        Some(own("long.jsonl")),
        crate::engine::settings::Settings::default(),
        crate::engine::load::models::Registry::builtin_only(),
    );
    a.run_jobs_now();
    let left = a.pending.doc.clone();
    // The long session's exact count of its first selection, still running.
    let count = Queued::<App>::to::<_, crate::ui::selection::SelectionState>(crate::ui::jobs::ExactTokensJob {
        generation: 1,
        session: long.clone(),
        messages: (0..long.entries.len())
            .flat_map(|i| crate::engine::view::context::intrinsic_messages(&long, i))
            .collect(),
        encoding: crate::engine::view::tokens::Encoding::O200k,
        cache: a.exact.cache.clone(),
    })
    .for_doc(&left);
    // The tour opened from the picker.
    let tour = load("tour.jsonl");
    a.report::<crate::ui::jobs::OpenJob>(crate::ui::jobs::Opened {
        path: own("tour.jsonl"),
        result: Ok(tour.clone()),
        index: None,
    });
    assert!(std::sync::Arc::ptr_eq(&a.doc.session, &tour));
    assert!(left.is_left(), "the long session's jobs are told to stop");
    assert!(a.pending.doc.id() != left.id());
    // The same generation as the count: the old check alone would take it.
    assert_eq!(a.selection.generation, 1);
    let shown = a.selection.gauge.as_ref().and_then(|g| g.exact);
    for d in run_now(count) {
        assert!(!a.job_done(d), "the long session's count was taken");
    }
    assert_eq!(a.selection.gauge.as_ref().and_then(|g| g.exact), shown);
    // A reload of the same file keeps its session: its jobs still count.
    let kept = a.pending.doc.id();
    a.replace_session(tour.clone(), false);
    assert_eq!(a.pending.doc.id(), kept);
}
