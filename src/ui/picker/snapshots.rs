//! The session tree picker drawn on a `TestBackend`: forks nested under their session, pins on
//! top, the preview, what is not a session greyed with its reason, all projects, the name
//! filter, the search hits.

use super::*;
use crate::store::Problem;
use crossterm::event::{KeyCode, KeyEvent};

const DAY: i64 = 86_400_000;
const T0: i64 = 1_795_300_000_000;

fn info(
    dir: &str,
    name: &str,
    parent: Option<&str>,
    title: &str,
    entries: usize,
    bytes: u64,
    age_days: i64,
) -> SessionInfo {
    SessionInfo {
        path: PathBuf::from(format!("{dir}/{name}")),
        dir: PathBuf::from(dir),
        id: format!("01a3bd00-{name}"),
        cwd: if dir.contains("acme") {
            "/home/dev/acme".into()
        } else {
            "/home/dev/ledger".into()
        },
        parent_session: parent.map(|p| format!("{dir}/{p}")),
        name: None,
        first_message: Some(title.into()),
        last_message: Some(format!("newest request in {name}")),
        entries,
        bytes,
        modified_ms: T0 - age_days * DAY,
        created: Some("2026-11-01T09:30:00.000Z".into()),
        version: Some(3),
        context_tokens: Some(entries as u64 * 700),
        model: Some(("anthropic".into(), "claude-sonnet-4-5".into())),
        spent: bonsai_spent(entries),
        goal: None,
        // What the listing makes for an unnamed session.
        made_title: crate::engine::view::title::suggested(Some(title), None),
        problem: None,
    }
}

/// What a listed session spent: a reply every other entry at about 1.4 cents.
fn bonsai_spent(entries: usize) -> crate::store::sessions::Spent {
    let calls = entries as u64 / 2;
    crate::store::sessions::Spent {
        tokens: calls as f64 * 9_500.0,
        cost: calls as f64 * 0.0142,
        calls,
        uncosted: 0,
        ..Default::default()
    }
}

const ACME: &str = "/home/dev/.pi/agent/sessions/--home-dev-acme--";
const LEDGER: &str = "/home/dev/.pi/agent/sessions/--home-dev-ledger--";

pub(crate) fn acme() -> Vec<SessionInfo> {
    let mut v = vec![
        info(ACME, "a.jsonl", None, "The CSV importer drops rows", 45, 41_163, 3),
        info(ACME, "b.jsonl", Some("a.jsonl"), "Fork: try pandas", 12, 9_000, 1),
        info(
            ACME,
            "b2.jsonl",
            Some("b.jsonl"),
            "Clone of the pandas try",
            14,
            9_500,
            0,
        ),
        info(ACME, "c.jsonl", None, "Refactor the auth module", 3100, 5_400_000, 2),
        info(ACME, "d.jsonl", None, "Release notes for 0.9", 60, 60_000, 5),
    ];
    v[3].name = Some("auth refactor".into());
    v[3].context_tokens = Some(181_000);
    v.push(SessionInfo {
        path: PathBuf::from(format!("{ACME}/notes.jsonl")),
        dir: PathBuf::from(ACME),
        problem: Some(Problem::File(
            "not a Pi session: its first line is not a session header".into(),
        )),
        ..Default::default()
    });
    v
}

pub(crate) fn picker(all: bool, sessions: Vec<SessionInfo>, pins: Vec<PathBuf>) -> Picker {
    let mut p = Picker::new(
        Some(PathBuf::from(format!("{ACME}/c.jsonl"))),
        crate::store::clock::now_ms(),
    );
    p.home_dir = Some(PathBuf::from(ACME));
    p.user_home = Some(PathBuf::from("/home/dev"));
    let windows = vec![Some(200_000); sessions.len()];
    p.set_sessions(all, sessions, windows, pins);
    p
}

fn draw(p: &mut Picker, w: u16, h: u16) -> String {
    p.layout(Rect::new(0, 0, w, h));
    crate::ui::tests::screen(w, h, |f| p.render(f, f.area()))
}

#[test]
fn this_project_with_forks_pins_preview_and_a_file_that_is_not_a_session() {
    let mut p = picker(false, acme(), vec![PathBuf::from(format!("{ACME}/d.jsonl"))]);
    // Pinned first, then newest first; forks under the session they came from; the current
    // session (c) selected, its preview beside.
    insta::assert_snapshot!("picker_this_project", draw(&mut p, 130, 18));
    assert_eq!(p.selected_path(), Some(PathBuf::from(format!("{ACME}/c.jsonl"))));
    // Fold the fork chain: a's row stays, b and b2 go.
    p.move_by(1);
    assert_eq!(p.selected_path(), Some(PathBuf::from(format!("{ACME}/a.jsonl"))));
    assert!(p.fold(false));
    let folded = draw(&mut p, 130, 18);
    assert!(!folded.contains("Fork: try pandas"), "{folded}");
    assert!(folded.contains("⊞ "), "{folded}");
    insta::assert_snapshot!("picker_folded", folded);
    // A narrow terminal puts the preview below.
    p.fold(true);
    insta::assert_snapshot!("picker_narrow", draw(&mut p, 90, 28));
}

#[test]
fn all_projects_with_the_pins_on_top_and_a_folder_that_cannot_be_read() {
    let mut sessions = acme();
    sessions.push(info(
        LEDGER,
        "l1.jsonl",
        None,
        "Ledger rounding in cents",
        220,
        700_000,
        9,
    ));
    sessions.push(SessionInfo {
        path: PathBuf::from("/home/dev/.pi/agent/sessions/--home-dev-secret--"),
        dir: PathBuf::from("/home/dev/.pi/agent/sessions/--home-dev-secret--"),
        problem: Some(Problem::Folder("cannot list it: permission denied".into())),
        ..Default::default()
    });
    let mut p = picker(true, sessions, vec![PathBuf::from(format!("{LEDGER}/l1.jsonl"))]);
    // This project open, the others folded; pinned sessions from every project first.
    insta::assert_snapshot!("picker_all_projects", draw(&mut p, 130, 20));
    // Wide: each session's cost and tokens in columns of their own.
    insta::assert_snapshot!("picker_all_projects_wide", draw(&mut p, 170, 20));
}

#[test]
fn the_filter_keeps_matches_and_the_way_to_them() {
    let mut p = picker(false, acme(), vec![]);
    for c in "pandas".chars() {
        p.edit_filter(KeyEvent::from(KeyCode::Char(c)));
    }
    let screen = draw(&mut p, 130, 12);
    // b matches; a stays as the way to it; c and d go.
    assert!(
        screen.contains("Fork: try pandas") && screen.contains("The CSV importer"),
        "{screen}"
    );
    assert!(
        !screen.contains("auth refactor") && !screen.contains("Release notes"),
        "{screen}"
    );
    insta::assert_snapshot!("picker_filter", screen);
    for _ in 0..6 {
        p.edit_filter(KeyEvent::from(KeyCode::Backspace));
    }
    for c in "zzz".chars() {
        p.edit_filter(KeyEvent::from(KeyCode::Char(c)));
    }
    let screen = draw(&mut p, 130, 12);
    assert!(screen.contains("no session matches \"zzz\""), "{screen}");
    // Issue 21, item 17: a word of the project's folder matched every session of it.
    for _ in 0..3 {
        p.edit_filter(KeyEvent::from(KeyCode::Backspace));
    }
    for c in "acme".chars() {
        p.edit_filter(KeyEvent::from(KeyCode::Char(c)));
    }
    let screen = draw(&mut p, 130, 12);
    assert!(
        screen.contains("no session matches \"acme\""),
        "the cwd matched: {screen}"
    );
}

#[test]
fn search_hits_grouped_by_session() {
    let mut p = picker(false, acme(), vec![]);
    let hit = |id: &str, role: &str, snippet: &str, at: std::ops::Range<usize>| Hit {
        entry_id: id.into(),
        role: role.into(),
        timestamp: "2026-11-20T09:15:00.000Z".into(),
        snippet: snippet.into(),
        at,
        matches: 1,
        line: 7,
    };
    let a = PathBuf::from(format!("{ACME}/a.jsonl"));
    let c = PathBuf::from(format!("{ACME}/c.jsonl"));
    p.search = Some(SessionSearch {
        query: LineEditor::new("rows", false),
        id: 1,
        running: false,
        cancel: Arc::new(AtomicBool::new(false)),
        hits: vec![
            (
                a.clone(),
                hit("e0a1b2c3", "user", "The CSV importer drops rows with quotes", 27..31),
            ),
            (
                a.clone(),
                hit(
                    "e0a1b2c9",
                    "toolResult",
                    "…skipped 3 rows: bad quote at line 12…",
                    17..21,
                ),
            ),
            (
                c.clone(),
                hit("c0ffee01", "assistant", "Auth rows are cached per request", 5..9),
            ),
        ],
        files: (5, 5),
        selected: 1,
        error: None,
        elapsed_ms: 120,
    });
    p.focus = PickerFocus::Hits;
    insta::assert_snapshot!("picker_search_hits", draw(&mut p, 130, 14));
    assert_eq!(p.selected_hit(), Some((a, "e0a1b2c9".to_string())));
}

#[test]
fn leftovers_under_their_session_and_the_trash_last() {
    use crate::store::backups::{Backup, BackupKind};
    let day = std::time::Duration::from_secs(86_400);
    let now = std::time::SystemTime::now();
    let mut p = Picker::new(
        Some(PathBuf::from(format!("{ACME}/c.jsonl"))),
        crate::store::clock::now_ms(),
    );
    p.home_dir = Some(PathBuf::from(ACME));
    p.user_home = Some(PathBuf::from("/home/dev"));
    let session = PathBuf::from(format!("{ACME}/a.jsonl"));
    let backup = |name: &str, kind, bytes, age: u32, needed| Backup {
        path: PathBuf::from(format!("{ACME}/{name}")),
        session: session.clone(),
        kind,
        bytes,
        modified: now - day * age,
        needed_for_restore: needed,
        made: true,
    };
    p.leftovers = vec![
        backup("a.jsonl.bak", BackupKind::Original, 41_000, 45, true),
        backup(
            "a.jsonl.deleted-2026-10-01T10-00-00-000Z.jsonl",
            BackupKind::Removed,
            3_000,
            56,
            false,
        ),
        backup(
            "a.jsonl.deleted-2026-10-11T10-00-00-000Z.jsonl",
            BackupKind::Removed,
            2_000,
            46,
            true,
        ),
    ];
    p.trash = vec![(
        crate::store::trash::Trashed {
            name: "1795000000000-e.jsonl".into(),
            original: PathBuf::from(format!("{ACME}/e.jsonl")),
            at_ms: 1_795_000_000_000,
            bytes: 120_000,
            side: vec![],
            recorded: true,
        },
        120_000,
        Some("Tidy the importer's error messages".into()),
    )];
    let sessions = acme();
    let windows = vec![Some(200_000); sessions.len()];
    p.set_sessions(false, sessions, windows, vec![]);
    // The session with leftovers selected: each listed with its size and age, what a restore
    // needs dimmed.
    while p.selected_path().as_deref() != Some(session.as_path()) {
        assert!(p.move_by(1), "a.jsonl is listed");
    }
    let screen = draw(&mut p, 130, 24);
    assert!(screen.contains("B removes the 1 older than 30 days"), "{screen}");
    insta::assert_snapshot!("picker_leftovers", screen);
    // The trash, last: its row and what u and D do.
    p.first_or_last(true);
    p.fold(true);
    p.move_by(1);
    let screen = draw(&mut p, 130, 24);
    assert!(screen.contains("u restores it · D empties the trash"), "{screen}");
    insta::assert_snapshot!("picker_trash", screen);
}
