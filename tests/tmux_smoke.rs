//! End-to-end: the real binary in a real terminal (tmux send-keys / capture-pane). Open a
//! fixture, move, filter, toggle the cut preview, quit, and check the terminal is restored.

mod common;

use common::tmux::Tmux;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A copy of one of the repository's sessions in a new directory.
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join(name);
    std::fs::copy(common::repo().join("fixtures/pi-0.87.1").join(name), &f).unwrap();
    (dir, f)
}

/// A made-up session of about `synth`'s size in a new directory.
/// The first line appended to `f` since it held `before`, after checking it only grew.
fn first_appended(f: &Path, before: &[u8]) -> serde_json::Value {
    let after = std::fs::read(f).unwrap();
    assert_eq!(&after[..before.len()], before, "append only");
    serde_json::from_slice(after[before.len()..].split(|b| *b == b'\n').next().unwrap()).unwrap()
}

fn synth_of(name: &str, synth: common::synth::Synth) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join(name);
    std::fs::write(&f, synth.make()).unwrap();
    (dir, f)
}

#[test]
fn open_move_filter_preview_quit_restores_terminal() {
    let Some(t) = Tmux::start(120, 40) else { return };
    let bin = env!("CARGO_BIN_EXE_bonsai");
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi-0.87.1/tour.jsonl");
    let rows = bonsai::store::load_session(&fixture).unwrap();
    // An empty HOME: no Pi settings or sessions of the developer's leak into the test.
    let home = tempfile::tempdir().unwrap();
    t.send(&[
        &format!(
            "HOME={} {bin} {}; echo EXITED:$?",
            home.path().display(),
            fixture.display()
        ),
        "Enter",
    ]);
    let screen = t.wait_for("ledger: fix rounding (");
    assert!(screen.contains("[branch summary]:"), "{screen}");
    // The status line's "(row/rows)": the leaf is selected, and Up moves one row.
    let at = |screen: &str| -> (usize, usize) {
        let s = &screen[screen.find("ledger: fix rounding (").unwrap() + 22..];
        let (a, b) = s[..s.find(')').unwrap()].split_once('/').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    let (row, total) = at(&screen);
    assert!(total > 20 && total <= rows.entries.len(), "{screen}");
    t.send(&["Up"]);
    t.wait_for(&format!("({}/{total})", row - 1));
    t.send(&["C-u"]);
    let screen = t.wait_for("[user]");
    assert!(screen.contains("user: Read src/ledger.py"), "{screen}");
    assert!(
        !screen.contains("assistant: Reading the main module"),
        "user-only:\n{screen}"
    );
    t.send(&["C-d"]);
    // Pi keeps the user message selected when going back to the default filter.
    let screen = t.wait_for("assistant: Reading the main module");
    let (row_back, _) = at(&screen);
    assert!(row_back < row, "{screen}");
    t.send(&["c"]);
    t.wait_for("cut preview ·");
    t.send(&["?"]);
    t.wait_for("any key closes");
    // A lone ESC followed at once by a key reads as Alt+key: q waits for the help to close.
    t.escape_closing("any key closes");
    t.send(&["q"]);
    let screen = t.wait_for("EXITED:0");
    // Back on the main screen: the tree is gone, the shell line is there.
    assert!(
        !screen.contains("[branch summary]:"),
        "alternate screen not left:\n{screen}"
    );
    // Raw mode is off again: the terminal echoes and reads lines.
    t.send(&[
        "stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo STTY-$((40+2))",
        "Enter",
    ]);
    let screen = t.wait_for("STTY-42");
    assert!(
        screen.contains("echo icanon") || screen.contains("icanon echo"),
        "terminal not restored:\n{screen}"
    );
}

#[test]
fn demo_opens_when_pi_has_no_sessions() {
    let Some(t) = Tmux::start(100, 30) else { return };
    let bin = env!("CARGO_BIN_EXE_bonsai");
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    t.send(&[
        &format!(
            "cd {} && HOME={} {bin}; echo EXITED:$?",
            work.path().display(),
            home.path().display()
        ),
        "Enter",
    ]);
    let screen = t.wait_for("bundled demo session");
    assert!(screen.contains("CSV importer: quoted commas"), "{screen}");
    t.send(&["v"]);
    t.wait_for("context at");
    t.escape_closing("context at");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
}

#[test]
fn compact_with_instructions_offline_accept_and_see_it_in_the_tree() {
    let Some(t) = Tmux::start(120, 40) else { return };
    let (_dir, f) = copy_of("long.jsonl");
    let before = std::fs::read(&f).unwrap();
    let home = tempfile::tempdir().unwrap();
    t.open_bonsai(home.path(), &f);
    t.wait_for("(185/185)");
    t.send(&["C"]);
    t.wait_for("Compact: custom instructions");
    t.send(&["-l", "keep the latency numbers"]);
    t.wait_for("> keep the latency numbers");
    t.send(&["Enter"]);
    let screen = t.wait_for("Compaction summary (offline)");
    assert!(screen.contains("## Goal"), "{screen}");
    t.send(&["C-s"]);
    let screen = t.wait_for("wrote a compaction");
    assert!(screen.contains("[compaction: "), "{screen}");
    assert!(
        screen.contains("(186/186)"),
        "the new compaction is the selected leaf:\n{screen}"
    );
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    let last = first_appended(&f, &before);
    assert_eq!(last["type"], "compaction");
    assert!(
        last["summary"]
            .as_str()
            .unwrap()
            .contains("Focus requested: keep the latency numbers")
    );
}

#[test]
fn a_compaction_previewed_before_pi_appended_is_refused() {
    use std::io::Write;
    let Some(t) = Tmux::start(120, 40) else { return };
    let (_dir, f) = copy_of("long.jsonl");
    let home = tempfile::tempdir().unwrap();
    t.open_bonsai(home.path(), &f);
    t.wait_for("(185/185)");
    t.send(&["C"]);
    t.wait_for("Compact: custom instructions");
    t.send(&["Enter"]);
    t.wait_for("ctrl+s write it");
    // Pi appends a message while the preview is open.
    let text = std::fs::read_to_string(&f).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let mut w = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
    writeln!(
        w,
        r#"{{"type":"message","id":"pi000042","parentId":"{}","timestamp":"2026-11-23T06:00:00.000Z","message":{{"role":"user","content":"Pi keeps going","timestamp":1}}}}"#,
        last["id"].as_str().unwrap()
    )
    .unwrap();
    drop(w);
    let with_pi = std::fs::read(&f).unwrap();
    t.wait_for("live: 1 new entry from Pi");
    t.send(&["C-s"]);
    t.wait_for("Pi appended 1 entry");
    // Issue 21, item 3: nothing written, the draft kept, and offered at Pi's new leaf.
    let screen = t.wait_for("your drafts are kept");
    assert!(screen.contains("nothing written"), "{screen}");
    assert_eq!(std::fs::read(&f).unwrap(), with_pi, "only Pi's line was added");
    t.send(&["C-s"]);
    t.wait_for("wrote a compaction");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.as_bytes().starts_with(&with_pi));
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["type"].as_str(), last["parentId"].as_str()),
        (Some("compaction"), Some("pi000042"))
    );
}

#[test]
fn prune_apply_and_undo_in_the_terminal() {
    let Some(t) = Tmux::start(120, 40) else { return };
    let mut synth = common::synth::Synth::new(400_000);
    synth.tool_output = 6_000;
    let (_dir, f) = synth_of("made.jsonl", synth);
    let before = std::fs::read(&f).unwrap();
    let home = tempfile::tempdir().unwrap();
    t.open_bonsai(home.path(), &f);
    // The loading frame names the file; the session's status line, bonsai's title for it (`~`):
    // a key typed while it loads is kept for the session (CI once lost this "p" that way).
    t.wait_for_any(&["made.jsonl (", " ~ "]);
    t.send(&["p"]);
    t.wait_for("prune preview · output");
    // Tab to the yellow zone, apply after the question.
    t.send(&["Tab", "Tab", "Tab"]);
    t.wait_for("prune preview · by zone · yellow");
    t.send(&["a"]);
    t.wait_for("Write them?");
    t.send(&["y"]);
    t.wait_for("wrote ");
    let after = std::fs::read(&f).unwrap();
    assert!(after.starts_with(&before), "append only");
    let edits = |b: &[u8]| String::from_utf8_lossy(b).matches(r#""type":"context_edit""#).count();
    let written = edits(&after);
    assert!(written > 3, "{written} edits");
    // Undo: one line (Pi resumes where the edits started; issue 21, item 4).
    t.send(&["u"]);
    t.wait_for(&format!("({written} edits)"));
    let size = std::fs::metadata(&f).unwrap().len();
    t.send(&["y"]);
    t.wait_for("wrote the undo of");
    let undone = std::fs::read(&f).unwrap();
    assert_eq!(
        undone[size as usize..].iter().filter(|&&b| b == b'\n').count(),
        1,
        "one line"
    );
    // (Esc and q apart: together a terminal reads them as Alt+q.)
    t.escape_closing("prune preview");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    assert_eq!(edits(&std::fs::read(&f).unwrap()), written, "no edit written back");
}

/// A new user's first minute, on the repository alone: no Pi sessions → the demo with its
/// banner; the picker and back keep the banner; a mistyped command names the right one; a write
/// without --yes asks in the terminal, and "n" writes nothing.
#[test]
fn a_new_users_first_minute() {
    let Some(t) = Tmux::start(110, 30) else { return };
    let bin = env!("CARGO_BIN_EXE_bonsai");
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("demo.jsonl");
    std::fs::copy(common::repo().join("fixtures/demo.jsonl"), &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let env = format!("cd {} && export HOME={}", work.path().display(), home.path().display());
    t.send(&[&format!("{env} && {bin}; echo EXITED:$?"), "Enter"]);
    t.wait_for("bundled demo session");
    t.send(&["o"]);
    let screen = t.wait_for("no Pi sessions found in any project");
    assert!(screen.contains("sessions · this project"), "{screen}");
    t.escape_closing("sessions · this project");
    let screen = t.wait_for("CSV importer");
    assert!(screen.contains("bundled demo session"), "the banner stays:\n{screen}");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    t.send(&["clear", "Enter"]);
    t.send(&[&format!("{bin} stat demo.jsonl; echo EXITED:$?"), "Enter"]);
    let screen = t.wait_for("EXITED:2");
    assert!(screen.contains("did you mean `bonsai stats`"), "{screen}");
    t.send(&["clear", "Enter"]);
    t.send(&[&format!("{bin} rename demo.jsonl 'first try'"), "Enter"]);
    let screen = t.wait_for("[y/N]");
    assert!(
        screen.contains("\"session_info\""),
        "shows what it would write:\n{screen}"
    );
    t.send(&["n", "Enter"]);
    t.wait_for("nothing written");
    assert_eq!(std::fs::read(&copy).unwrap(), before);
    t.send(&[&format!("{bin} rename demo.jsonl 'first try'"), "Enter"]);
    t.wait_for("[y/N]");
    t.send(&["y", "Enter"]);
    let screen = t.wait_for("appended a session name to");
    assert!(screen.contains("demo.jsonl (1 line,"), "{screen}");
    assert!(std::fs::read(&copy).unwrap().len() > before.len());
}

/// A key typed while a large file loads is not lost: it acts on the session once it is open
/// (the loading frame takes only q and Ctrl+C itself).
#[test]
fn a_key_typed_while_loading_acts_once_the_session_is_open() {
    let Some(t) = Tmux::start(120, 40) else { return };
    let (_dir, f) = synth_of("big.jsonl", common::synth::Synth::new(120_000_000));
    let home = tempfile::tempdir().unwrap();
    t.open_bonsai(home.path(), &f);
    t.wait_for("Loading ");
    t.send(&["?"]);
    let screen = t.wait_for(" keys · tree ");
    // The session is open: its status line names it (bonsai's title for an unnamed one).
    assert!(
        screen.lines().any(|l| l.starts_with(" ~ ") && l.contains(" (")),
        "{screen}"
    );
    t.escape_closing(" keys · tree ");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
}

/// A session too big to parse in a blink shows the leaf's newest entries, read from the end
/// of the file, while the rest loads; the session then opens at that same leaf.
#[test]
fn a_big_session_shows_the_leafs_newest_entries_while_it_loads() {
    let Some(t) = Tmux::start(120, 40) else { return };
    // Past the size from which the preview is read (256 MB): ~0.4 s of parsing here.
    let (_dir, f) = synth_of("huge.jsonl", common::synth::Synth::new(320_000_000));
    let home = tempfile::tempdir().unwrap();
    t.open_bonsai(home.path(), &f);
    // The whole frame (a capture can catch one half drawn).
    let loading = t.wait_for_all_now(
        &["read from the end of the file", "› • ", "Keys typed now"],
        Instant::now(),
    );
    assert!(loading.contains("Loading "), "{loading}");
    // Nothing counted over the whole session is shown yet: no gauge, no entry count.
    let a_count = |l: &str| {
        l.split('(').skip(1).any(|c| {
            c.split(')')
                .next()
                .and_then(|c| c.split_once('/'))
                .is_some_and(|(a, b)| a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok())
        })
    };
    assert!(
        !loading.contains("tokens") && !loading.lines().any(a_count),
        "{loading}"
    );
    let leaf_row = |screen: &str, from: &str| -> String {
        let l = screen
            .lines()
            .find(|l| l.trim_start().starts_with('›'))
            .unwrap_or_else(|| panic!("{from}: no selected row:\n{screen}"));
        // After the path marker, up to the detail pane, less the token column.
        let l = &l[l.find("• ").unwrap_or_else(|| panic!("{screen}")) + "• ".len()..];
        let l = l.split('│').next().unwrap().trim_end();
        l.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end().to_string()
    };
    let preview = leaf_row(&loading, "the preview");
    let open = t.wait_for_all(&["? keys", "› "]);
    let tree = leaf_row(&open, "the tree");
    let n = preview.chars().count().min(tree.chars().count()).min(40);
    assert!(n >= 12, "{loading}\n{open}");
    assert_eq!(
        preview.chars().take(n).collect::<String>(),
        tree.chars().take(n).collect::<String>(),
        "the preview's leaf is not the tree's:\n{loading}\n{open}"
    );
    // Label the leaf and quit at once, while the gauge's exact count (seconds on this file)
    // still runs: the label is written whole, and the quit does not wait for the count (it
    // once did, for more than ten seconds on CI). The gauge comes from the load beside the
    // tree's building; on a busy machine it can follow the tree's frame by a moment.
    t.wait_for("exact …");
    t.send(&["L"]);
    t.wait_for("Label (empty to remove)");
    t.send(&["-l", "quit-test"]);
    let counting = t.capture();
    t.send(&["Enter"]);
    t.send(&["q"]);
    let asked = Instant::now();
    t.wait_for("EXITED:0");
    let took = asked.elapsed();
    assert!(
        counting.contains("exact …"),
        "the exact count was done before the quit; this test needs a bigger file:\n{counting}"
    );
    // The quit waits for the label's write (which reads this big file again: ~1.5 s on a
    // 2-core VM, 3.2 s seen with the other core busy), never for the count.
    assert!(took < Duration::from_secs(5), "the quit took {took:?}");
    let text = std::fs::read_to_string(&f).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.contains(r#""type":"label""#) && last.contains("quit-test"),
        "{last}"
    );
    assert!(text.ends_with('\n'));
}

/// Compact in the terminal, then undo it with `u`: the tree shows the same path as before (the
/// same rows, the leaf selected), the compaction stays in the file as a branch off the old
/// leaf, and Pi resumes where it was (its context is checked against Pi in tests/undo.rs).
#[test]
fn compact_then_undo_and_the_tree_is_back_as_it_was() {
    let Some(t) = Tmux::start(120, 40) else { return };
    let (_dir, f) = copy_of("long.jsonl");
    let home = tempfile::tempdir().unwrap();
    t.open_bonsai(home.path(), &f);
    let before = t.wait_for("(185/185)");
    // The tree pane's rows (left of the detail pane), the hint and status lines aside.
    let tree_rows = |screen: &str| -> Vec<String> {
        screen
            .lines()
            .map(|l| l.split('│').next().unwrap_or("").trim_end().to_string())
            .collect()
    };
    t.send(&["C"]);
    t.wait_for("Compact: custom instructions");
    t.send(&["Enter"]);
    t.wait_for("Compaction summary (offline)");
    t.send(&["C-s"]);
    let compacted = t.wait_for("wrote a compaction");
    assert!(compacted.contains("(186/186)"), "{compacted}");
    t.send(&["u"]);
    let dialog = t.wait_for("Undo bonsai's last action");
    assert!(dialog.contains("the compaction"), "{dialog}");
    t.send(&["y"]);
    let after = t.wait_for("wrote the undo of");
    // The same path, selected at the same leaf (the window scrolls one row: the compaction now
    // hangs off the leaf, off Pi's path).
    assert!(after.contains("(185/186)"), "{after}");
    let upto_selected = |screen: &str| -> Vec<String> {
        let rows = tree_rows(screen);
        let k = rows.iter().position(|r| r.starts_with('›')).expect("a selected row");
        rows[..=k].to_vec()
    };
    let (b, a) = (upto_selected(&before), upto_selected(&after));
    let n = b.len().min(a.len());
    assert!(n >= 25, "{before}\n{after}");
    assert_eq!(
        b[b.len() - n..],
        a[a.len() - n..],
        "the path up to the leaf changed:\nbefore:\n{before}\nafter:\n{after}"
    );
    let below = tree_rows(&after);
    let k = below.iter().position(|r| r.starts_with('›')).unwrap();
    let next = &below[k + 1];
    assert!(next.contains("[compaction: ") && !next.contains('•'), "{after}");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    let text = std::fs::read_to_string(&f).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["customType"], "bonsai.navigate", "Pi resumes at the old leaf");
}

/// A search hit opened in the terminal: `bonsai search --json` names the session and the entry,
/// `bonsai FILE --at ID` opens it with that entry selected and shown in the detail pane.
#[test]
fn a_search_hit_opens_at_its_entry() {
    let Some(t) = Tmux::start(120, 40) else { return };
    let (_dir, f) = copy_of("tour.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bonsai"))
        .args(["search", "--json", "Look at the failed import"])
        .arg(&f)
        .output()
        .unwrap();
    let hit: serde_json::Value = serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let id = hit["entryId"].as_str().unwrap().to_string();
    assert_eq!(hit["session"], f.to_str().unwrap());
    let home = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_bonsai");
    t.send(&[
        &format!(
            "HOME={} {bin} {} --at {id}; echo EXITED:$?",
            home.path().display(),
            f.display()
        ),
        "Enter",
    ]);
    let screen = t.wait_for(&format!("at {id} (line"));
    let selected = screen.lines().find(|l| l.starts_with('›')).unwrap_or("");
    assert!(selected.contains("user: Look at the failed import"), "{screen}");
    assert!(
        screen.contains(&format!("user  {id}")),
        "the detail pane shows it:\n{screen}"
    );
    t.send(&["q"]);
    t.wait_for("EXITED:0");
}

/// The picker's search inside sessions, in the terminal: `o` lists this project's sessions,
/// `s` searches them, the hit streams in, Enter opens its session at its entry.
#[test]
fn a_search_in_the_picker_opens_the_hit_at_its_entry() {
    let Some(t) = Tmux::start(130, 40) else { return };
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("acme");
    std::fs::create_dir_all(&project).unwrap();
    let encoded = format!(
        "--{}--",
        project.to_string_lossy().trim_start_matches('/').replace('/', "-")
    );
    let sessions = home.path().join(".pi/agent/sessions").join(encoded);
    std::fs::create_dir_all(&sessions).unwrap();
    // The tour holds the hit; the long session is newer, so bonsai opens it first.
    let tour = sessions.join("2026-11-19T10-00-00-000Z_tour.jsonl");
    std::fs::copy(common::repo().join("fixtures/pi-0.87.1/tour.jsonl"), &tour).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::copy(
        common::repo().join("fixtures/pi-0.87.1/long.jsonl"),
        sessions.join("2026-11-20T10-00-00-000Z_long.jsonl"),
    )
    .unwrap();
    let s = bonsai::store::load_session(&tour).unwrap();
    let want = (0..s.entries.len())
        .find(|&i| {
            s.entries[i]
                .message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
                && bonsai::engine::view::context::content_text(s.entry_value(i)["message"].get("content"), "")
                    .contains("Look at the failed import")
        })
        .unwrap();
    let id = s.entries[want].id.to_string();
    t.open_bonsai_in(home.path(), &project);
    // long.jsonl, by bonsai's title of it.
    t.wait_for("~ Turn 1: check");
    t.send(&["o"]);
    t.wait_for("sessions · this project");
    t.send(&["s"]);
    t.wait_for("search:");
    t.send(&["-l", "Look at the failed import"]);
    t.send(&["Enter"]);
    let screen = t.wait_for("hits in 1 session");
    assert!(screen.contains(&id), "{screen}");
    t.send(&["Enter"]);
    let screen = t.wait_for(&format!("user  {id}"));
    let selected = screen.lines().find(|l| l.starts_with('›')).unwrap_or("");
    assert!(selected.contains("user: Look at the failed import"), "{screen}");
    assert!(
        screen.contains("ledger: fix rounding"),
        "the tour session is open:\n{screen}"
    );
    t.send(&["q"]);
    t.wait_for("EXITED:0");
}

/// Pi's own session listing (its SessionManager, both releases) for `project`, under the agent
/// folder `agent`: this project's sessions' file names.
fn pi_lists(agent: &Path, project: &Path) -> Vec<Vec<String>> {
    common::pi_sessions("trash_and_restore_from_the_picker_as_pi_lists_it")
        .iter()
        .map(|pi| {
            let out = pi
                .command()
                .arg("list")
                .arg(project)
                .env("PI_CODING_AGENT_DIR", agent)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let mut names: Vec<String> = v["project"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    Path::new(p.as_str().unwrap())
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .to_string()
                })
                .collect();
            names.sort();
            names
        })
        .collect()
}

#[test]
fn trash_and_restore_from_the_picker_as_pi_lists_it() {
    let Some(t) = Tmux::start(130, 40) else { return };
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("acme");
    std::fs::create_dir_all(&project).unwrap();
    let agent = home.path().join(".pi/agent");
    let sessions = agent.join("sessions").join(bonsai::store::config::encode_cwd(&project));
    std::fs::create_dir_all(&sessions).unwrap();
    // The tour, written a minute ago (not "in the last 10 s"), and the newer long session.
    let tour = sessions.join("2026-11-19T10-00-00-000Z_tour.jsonl");
    std::fs::copy(common::repo().join("fixtures/pi-0.87.1/tour.jsonl"), &tour).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&tour)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
        .unwrap();
    let long = sessions.join("2026-11-20T10-00-00-000Z_long.jsonl");
    std::fs::copy(common::repo().join("fixtures/pi-0.87.1/long.jsonl"), &long).unwrap();
    let tour_bytes = std::fs::read(&tour).unwrap();
    let both = vec![
        "2026-11-19T10-00-00-000Z_tour.jsonl".to_string(),
        "2026-11-20T10-00-00-000Z_long.jsonl".to_string(),
    ];
    for listed in pi_lists(&agent, &project) {
        assert_eq!(listed, both);
    }
    t.open_bonsai_in(home.path(), &project);
    // long.jsonl, by bonsai's title of it.
    t.wait_for("~ Turn 1: check");
    t.send(&["o"]);
    t.wait_for_all(&["sessions · this project", "ledger: fix rounding"]);
    // The tour's row (the long session, newer, is first).
    let mut screen = t.capture();
    for _ in 0..4 {
        if screen
            .lines()
            .any(|l| l.starts_with("│›") && l.contains("ledger: fix rounding"))
        {
            break;
        }
        t.send(&["j"]);
        std::thread::sleep(Duration::from_millis(150));
        screen = t.capture();
    }
    t.send(&["d"]);
    t.wait_for_all(&["Move to the trash", "Pi's /resume no longer lists it"]);
    t.send(&["y"]);
    let screen = t.wait_for_all(&[
        "moved 2026-11-19T10-00-00-000Z_tour.jsonl to the trash",
        "trash  1 session",
    ]);
    assert!(!tour.exists(), "{screen}");
    for listed in pi_lists(&agent, &project) {
        assert_eq!(listed, vec![both[1].clone()], "Pi lists the trashed session:\n{screen}");
    }
    // The trash row: last, folded; open it and put the tour back.
    t.send(&["End"]);
    t.send(&["l"]);
    t.send(&["j"]);
    let screen = t.wait_for("u restores it");
    // Its row says what a listed row says: its title, not only its file name.
    assert!(
        screen
            .lines()
            .any(|l| l.contains("ledger: fix rounding") && l.contains(" kB ")),
        "the trash row has the session's title:\n{screen}"
    );
    t.send(&["u"]);
    t.wait_for("Restore from the trash");
    t.send(&["y"]);
    let screen = t.wait_for("restored ");
    assert!(
        screen.contains("ledger: fix rounding"),
        "the tour is listed again:\n{screen}"
    );
    assert_eq!(std::fs::read(&tour).unwrap(), tour_bytes);
    for listed in pi_lists(&agent, &project) {
        assert_eq!(listed, both);
    }
    t.escape_closing("sessions · this project");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
}

#[test]
fn find_in_session_opens_the_folded_branch_that_holds_the_hit() {
    let Some(t) = Tmux::start(130, 40) else { return };
    let (_d, p) = copy_of("tour.jsonl");
    let home = tempfile::tempdir().unwrap();
    t.open_bonsai(home.path(), &p);
    t.wait_for("What does this screenshot");
    // Fold the screenshot branch (the row under the leaf): its rows go.
    t.send(&["j"]);
    t.send(&["C-Left"]);
    let screen = t.wait_for("⊞ user: What does this screenshot");
    assert!(!screen.contains("Look at the failed import"), "{screen}");
    t.send(&["C-f"]);
    t.wait_for("find:");
    t.send(&["-l", "does not know"]);
    t.send(&["Enter"]);
    let screen = t.wait_for("find \"does not know\": 1/1");
    let selected = screen.lines().find(|l| l.starts_with('›')).unwrap_or("");
    assert!(selected.contains("Rows 41, 97 and 180"), "{screen}");
    assert!(
        screen.contains("Look at the failed import"),
        "the branch is open again:\n{screen}"
    );
    t.send(&["q"]);
    t.wait_for("EXITED:0");
}

/// A session opened a second time opens from bonsai's index (written after the first frame,
/// in bonsai's folder under Pi's), and says so; after Pi appended, the index and the new
/// bytes, which show in the tree.
#[test]
fn a_session_opened_again_opens_from_its_index() {
    let Some(t) = Tmux::start(120, 40) else { return };
    let (_dir, f) = synth_of("again.jsonl", common::synth::Synth::new(3_000_000));
    let home = tempfile::tempdir().unwrap();
    let index_dir = home.path().join(".pi/agent/bonsai/index");
    // Pi's release named, so the status line is free for what the open says.
    let open = |t: &Tmux| {
        let bin = env!("CARGO_BIN_EXE_bonsai");
        t.send(&[
            &format!(
                "HOME={} BONSAI_PI_VERSION=1.5.2 {bin} {}; echo EXITED:$?",
                home.path().display(),
                f.display()
            ),
            "Enter",
        ]);
    };
    let indexes = || {
        std::fs::read_dir(&index_dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter(|e| e.path().extension().is_some_and(|x| x == "idx"))
                    .count()
            })
            .unwrap_or(0)
    };
    open(&t);
    t.wait_for_all(&["? keys", "› "]);
    // Written in the background after the first whole frame.
    let asked = Instant::now();
    while indexes() == 0 {
        assert!(asked.elapsed() < Duration::from_secs(30), "no index written");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Then quit and open again.
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    t.send(&["clear", "Enter"]);
    open(&t);
    let again = t.wait_for("Opened from bonsai's index (unchanged");
    assert!(again.contains("› "), "{again}");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    // Pi appends a line: the next open reads the index and parses only that line.
    let text = std::fs::read_to_string(&f).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let line = serde_json::json!({
        "type": "session_info",
        "id": "grown001",
        "parentId": last["id"],
        "timestamp": "2026-11-26T12:00:00.000Z",
        "name": "grown since the index"
    });
    let mut fh = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
    use std::io::Write as _;
    writeln!(fh, "{line}").unwrap();
    drop(fh);
    t.send(&["clear", "Enter"]);
    open(&t);
    // The status once open (the loading frame before it says "Opening … appended since",
    // and on a busy machine can stay long enough to be taken for settled).
    let grown = t.wait_for("Opened from bonsai's index and the");
    assert!(grown.contains("appended since"), "{grown}");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    assert_eq!(indexes(), 1, "one index per session");
}

/// A compaction by a model through the real event loop: the summary job waits on the model's
/// requests on a worker while they run as tasks, its strategies report into their tabs, and
/// the chosen one is written.
#[test]
fn compact_with_a_model_in_the_terminal() {
    use common::fake_openai::{self, Reply};
    let Some(t) = Tmux::start(120, 40) else { return };
    let server = fake_openai::serve(|_| Reply::Text("## Goal\n- written by the fake model".into()));
    let (_dir, f) = copy_of("long.jsonl");
    let before = std::fs::read(&f).unwrap();
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("models.json"),
        format!(
            r#"{{ "providers": {{ "fakellm": {{ "baseUrl": "{}", "api": "openai-completions", "apiKey": "sk-test-key",
                 "models": [{{ "id": "fakecoder", "contextWindow": 200000, "maxTokens": 32000 }}] }} }} }}"#,
            server.base_url
        ),
    )
    .unwrap();
    std::fs::write(
        agent.join("settings.json"),
        r#"{ "bonsai": { "summaryModel": "fakellm/fakecoder" } }"#,
    )
    .unwrap();
    t.open_bonsai(home.path(), &f);
    t.wait_for("(185/185)");
    t.send(&["C"]);
    t.wait_for("Compact: custom instructions");
    t.send(&["Enter"]);
    let screen = t.wait_for("fakellm/fakecoder");
    t.send(&["Enter"]);
    let screen2 = t.wait_for("written by the fake model");
    t.send(&["C-s"]);
    let done = t.wait_for("wrote a compaction");
    assert!(done.contains("(186/186)"), "{screen}\n{screen2}\n{done}");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    assert!(!server.requests().is_empty());
    let last = first_appended(&f, &before);
    assert_eq!(last["type"], "compaction");
    assert!(
        last["summary"].as_str().unwrap().contains("written by the fake model"),
        "{last}"
    );
}

/// `bonsai ~/.pi/agent/sessions`: Pi's sessions root holds one folder per project and no
/// session of its own, so the picker opens on every session under it. Before, it said "no Pi session" and exited 1.
#[test]
fn bonsai_on_pis_sessions_root_opens_the_picker_on_every_project() {
    let Some(t) = Tmux::start(130, 40) else { return };
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join(".pi/agent/sessions");
    for (project, fixture) in [("--work-acme--", "tour.jsonl"), ("--work-ledger--", "long.jsonl")] {
        let dir = root.join(project);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(
            common::repo().join("fixtures/pi-0.87.1").join(fixture),
            dir.join(format!("2026-11-20T10-00-00-000Z_{fixture}")),
        )
        .unwrap();
    }
    t.open_bonsai(home.path(), &root);
    let screen = t.wait_for("sessions · all projects");
    assert!(screen.contains("all projects (Tab: this project) · 2 "), "{screen}");
    assert_eq!(
        screen.matches("1 session · $").count(),
        2,
        "one row per project:\n{screen}"
    );
    assert!(!screen.contains("no Pi session"), "{screen}");
    t.send(&["q"]);
    t.wait_for("EXITED:0");
    // A folder with no session anywhere under it still says so.
    let empty = home.path().join("empty");
    std::fs::create_dir_all(empty.join("project")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bonsai"))
        .arg(&empty)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("or its folders"), "{err}");
}
