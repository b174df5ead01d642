//! The bad-file corpus: a clear, specific message for each problem, the rest still usable,
//! no panic, no hang.

use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::load::entry::{DiagnosticKind, Kind, Role};
use bonsai::engine::load::session::{LoadError, Session};
use bonsai::engine::report;
use bonsai::engine::view::context;
use bonsai::engine::view::tree::Tree;
use bonsai::engine::view::tree_view::{FilterMode, TreeView};
use std::path::PathBuf;

fn bad(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bad")
        .join(name)
}

fn load(name: &str) -> Session {
    bonsai::store::load_session(&bad(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Everything a user can ask of a session works on it without panicking.
fn exercise(s: &Session) {
    let t = Tree::build(s);
    for mode in FilterMode::CYCLE {
        let v = TreeView::new(s, &t, s.leaf(), mode, 0);
        let _ = v.render_plain(s, 80, Some(20));
    }
    if let Some(l) = s.leaf() {
        let _ = cut::prepare(s, l, CompactionSettings::default());
        let o = report::InspectOptions {
            leaf: Some(l),
            keep_recent_tokens: 2000,
            reserve_tokens: 16384,
            branch_target: Some(0),
            branch_context_window: 128000,
        };
        let _ = report::inspect_json(s, &o);
    }
}

fn messages(s: &Session) -> Vec<String> {
    s.diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.line, d.message))
        .collect()
}

#[test]
fn empty_file_is_a_clear_error() {
    let e = bonsai::store::load_session(&bad("empty.jsonl")).unwrap_err();
    assert!(matches!(
        e,
        bonsai::store::OpenError::Invalid {
            source: LoadError::Empty,
            ..
        }
    ));
    assert!(e.to_string().contains("empty"), "{e}");
}

#[test]
fn not_a_session_names_the_line() {
    let e = bonsai::store::load_session(&bad("not-a-session.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 1") && e.contains("\"message\""), "{e}");
}

#[test]
fn header_only_has_no_entries_and_no_leaf() {
    let s = load("header-only.jsonl");
    assert_eq!(s.entries.len(), 0);
    assert_eq!(s.leaf(), None);
    exercise(&s);
}

#[test]
fn truncated_last_line_is_reported_and_skipped() {
    let s = load("truncated-last-line.jsonl");
    assert_eq!(s.entries.len(), 3);
    assert_eq!(s.skipped_lines, 1);
    let m = messages(&s);
    assert!(m.len() == 1 && m[0].starts_with("5: truncated JSON"), "{m:?}");
    assert!(!s.file_ends_with_newline);
    exercise(&s);
}

#[test]
fn binary_garbage_lines_are_skipped_with_line_numbers() {
    let s = load("binary-garbage.jsonl");
    assert_eq!(s.entries.len(), 4);
    let lines: Vec<u32> = s
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::MalformedLine)
        .map(|d| d.line)
        .collect();
    assert_eq!(lines, vec![3, 4, 5, 6]);
    assert_eq!(s.path_to(s.leaf().unwrap()).len(), 4);
    exercise(&s);
}

#[test]
fn invalid_utf8_decodes_like_node() {
    let s = load("invalid-utf8.jsonl");
    assert_eq!(s.entries.len(), 4, "{:?}", messages(&s));
    let v = s.entry_value(1);
    let text = v["message"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "caf\u{FFFD}\u{FFFD} costs 3");
}

#[test]
fn missing_parent_becomes_an_extra_root() {
    let s = load("missing-parents.jsonl");
    let t = Tree::build(&s);
    assert_eq!(t.roots.len(), 2);
    assert!(messages(&s).iter().any(|m| m.contains("missing parent ffffffff")));
    exercise(&s);
}

#[test]
fn duplicate_ids_resolve_to_the_later_entry() {
    let s = load("duplicate-ids.jsonl");
    assert_eq!(s.idx_of("a0000002"), Some(3));
    assert!(messages(&s).iter().any(|m| m.contains("duplicate id a0000002")));
    // The user message's parent is the id, so it hangs under the later entry, as in Pi.
    let path = s.path_to(2);
    assert_eq!(path, vec![0, 3, 2]);
    exercise(&s);
}

#[test]
fn self_parent_is_a_root_and_the_path_stops() {
    let s = load("self-parent.jsonl");
    let leaf = s.leaf().unwrap();
    assert_eq!(s.path_to(leaf), vec![leaf]);
    assert!(Tree::build(&s).roots.contains(&leaf));
    assert!(messages(&s).iter().any(|m| m.contains("its own parent")));
    exercise(&s);
}

#[test]
fn cycles_are_detected_without_hanging() {
    let s = load("cycle.jsonl");
    let leaf = s.leaf().unwrap();
    let path = s.path_to(leaf);
    assert_eq!(path.len(), 2, "the walk stops at the repeated entry");
    assert!(messages(&s).iter().any(|m| m.contains("parent cycle")));
    let t = Tree::build(&s);
    assert!(!t.in_tree[leaf], "Pi's getTree never reaches a rootless cycle");
    exercise(&s);
}

#[test]
fn a_duplicated_id_closing_a_cycle_draws_every_row() {
    // `bonsai tree` panicked here (a row whose layout was never made): every filter draws.
    let s = load("duplicate-id-cycle.jsonl");
    assert!(messages(&s).iter().any(|m| m.contains("parent cycle")));
    assert!(messages(&s).iter().any(|m| m.contains("duplicate id")));
    let t = Tree::build(&s);
    for mode in FilterMode::CYCLE {
        let v = TreeView::new(&s, &t, s.leaf(), mode, 0);
        let rows = v.render_plain(&s, 100, None);
        assert_eq!(rows.len(), v.visible.len().max(1) + 1, "{mode:?}");
    }
    exercise(&s);
}

#[test]
fn v2_hook_messages_become_custom() {
    let s = load("v2-hookmessage.jsonl");
    assert!(s.migrated);
    assert_eq!(s.entries[1].message().unwrap().role, Role::Custom);
    assert_eq!(s.entry_value(1)["message"]["role"], "custom");
    exercise(&s);
}

#[test]
fn unknown_types_and_fields_are_kept() {
    let s = load("unknown-types.jsonl");
    assert!(matches!(&s.entries[1].kind, Kind::Unknown(t) if &**t == "future_thing"));
    assert_eq!(s.entry_value(2)["extraField"]["kept"], true);
    assert_eq!(s.path_to(2).len(), 3);
    exercise(&s);
}

#[test]
fn crlf_and_blank_lines_parse() {
    let s = load("crlf-blank-lines.jsonl");
    assert_eq!(s.entries.len(), 2);
    assert_eq!(s.skipped_lines, 0);
    assert_eq!(s.entries[1].line, 5);
}

#[test]
fn entries_without_ids_are_reported() {
    let s = load("missing-ids.jsonl");
    assert_eq!(s.entries.len(), 2);
    let m = messages(&s);
    assert_eq!(m.len(), 3, "{m:?}");
    assert!(m[0].starts_with("3: `message` entry has no string `id`"));
    assert!(m[1].contains("JSON number") && m[2].contains("JSON array"));
}

#[test]
fn a_50_mb_line_loads_and_estimates() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("huge.jsonl");
    let big = "x".repeat(50 * 1024 * 1024);
    let text = format!(
        "{}\n{}\n{}\n",
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/x"}"#,
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-20T10:00:01.000Z","message":{"role":"user","content":"read it"}}"#,
        format!(
            r#"{{"type":"message","id":"t1","parentId":"u1","timestamp":"2026-11-20T10:00:02.000Z","message":{{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{{"type":"text","text":"{big}"}}],"isError":false}}}}"#
        )
    );
    std::fs::write(&p, text).unwrap();
    let s = bonsai::store::load_session(&p).unwrap();
    assert_eq!(s.entries.len(), 2);
    assert_eq!(s.measures_of(1).unwrap().est_tokens, (50 * 1024 * 1024 / 4) as u64);
    let proj = context::project(&s, &s.path_to(1));
    assert_eq!(proj.message_count(), 2);
    // A tool result is never a cut point, so the cut falls back to the user message that
    // starts the turn, and nothing is left before it (Pi: "Nothing to compact").
    let plan = cut::prepare(&s, 1, CompactionSettings::default());
    assert_eq!(plan.unwrap_err(), cut::NoCompaction::NothingToCompact);
}

/// Run the binary, killing it if it has not finished in `secs` (a hang fails the test).
fn bonsai_within(secs: u64, args: &[&str]) -> std::process::Output {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_bonsai"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("bonsai {args:?} did not finish in {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn special_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for (path, what) in [
        (fifo.to_str().unwrap(), "a FIFO"),
        ("/dev/zero", "a character device"),
        (dir.path().to_str().unwrap(), "a directory"),
    ] {
        for cmd in ["stats", "context", "tree", "migrate"] {
            let out = bonsai_within(10, &[cmd, path, "--yes"][..if cmd == "migrate" { 3 } else { 2 }]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{cmd} {path}");
            if path == dir.path().to_str().unwrap() {
                // A directory stands for its newest session: there is none (the FIFO is no file).
                assert!(err.contains("no Pi session"), "{cmd} {path}: {err}");
            } else {
                assert!(
                    err.contains(what) && err.contains("not a session file"),
                    "{cmd} {path}: {err}"
                );
            }
        }
    }
    // Appending refuses too (opening a FIFO to write would wait for a reader).
    let out = bonsai_within(10, &["label", fifo.to_str().unwrap(), "idx:0", "x", "--yes"]);
    assert!(!out.status.success());
}

#[test]
fn migrate_through_a_link_migrates_the_file_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.jsonl");
    std::fs::copy(bad("v2-hookmessage.jsonl"), &real).unwrap();
    let before = std::fs::read(&real).unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = bonsai_within(20, &["migrate", link.to_str().unwrap(), "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
        "still a link"
    );
    let s = bonsai::store::load_session(&real).unwrap();
    assert_eq!(s.header.version, 3.0, "the file it points at is migrated");
    assert_eq!(std::fs::read(dir.path().join("real.jsonl.bak")).unwrap(), before);
}

#[test]
fn a_byte_order_mark_is_named_as_such() {
    // Pi's loader keeps the BOM in line 1, JSON.parse refuses it, and SessionManager.open
    // says the file is not a valid session. So does bonsai, naming the three bytes.
    let e = bonsai::store::load_session(&bad("bom.jsonl")).unwrap_err();
    assert!(
        matches!(
            &e,
            bonsai::store::OpenError::Invalid {
                source: LoadError::ByteOrderMark,
                ..
            }
        ),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("bom.jsonl") && text.contains("byte order mark") && text.contains("EF BB BF"),
        "{text}"
    );
    assert!(!text.contains("line 2"), "{text}");
}

#[test]
fn typeless_entries_are_kept_and_named() {
    let s = load("odd-shapes.jsonl");
    exercise(&s);
    // Pi keeps all five: the two typeless entries and the message that is a string.
    assert_eq!(s.entries.len(), 5);
    let m = messages(&s);
    assert!(
        m.iter().any(|d| d.starts_with("3: ") && d.contains("an empty `type`")),
        "{m:?}"
    );
    assert!(
        m.iter().any(|d| d.starts_with("4: ") && d.contains("no `type`")),
        "{m:?}"
    );
    let t = Tree::build(&s);
    let leaf = s.entries.iter().position(|e| &*e.id == "e0000003");
    let v = TreeView::new(&s, &t, leaf, FilterMode::Default, 0);
    let text = v.render_plain(&s, 80, Some(20)).join("\n");
    assert!(text.contains("• [undefined]"), "{text}");
}

#[test]
fn messages_name_no_rust_types_and_give_columns_not_line_1() {
    // Lines whose shape the typed reader refuses: what it says is about JSON, not Rust.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    let header = std::fs::read_to_string(bad("odd-shapes.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let lines = [
        header.as_str(),
        r#"{"type":"message","id":"b1","parentId":null,"timestamp":"2026-11-20T10:00:01.000Z","message":{"role":"user","content":"x","usage":[1]}}"#,
        r#"{"type":"message","id":"b2","parentId":"b1","timestamp":"2026-11-20T10:00:02.000Z","message":{"role":"user","content":"#,
        r#"{"type":"message","id":"b3","parentId":"b1" "timestamp":1}"#,
    ];
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    let s = bonsai::store::load_session(&f).unwrap();
    for d in &s.diagnostics {
        for rust in [
            "LMessage",
            "LEntry",
            "MessageJson",
            "EntryJson",
            "LUsage",
            "LHeadBlock",
            "line 1 column",
        ] {
            assert!(!d.message.contains(rust), "{rust} in {:?}", d.message);
        }
    }
    let m = messages(&s);
    assert!(
        m.iter()
            .any(|d| d.starts_with("3: truncated JSON") && d.contains("at column")),
        "{m:?}"
    );
    assert!(
        m.iter()
            .any(|d| d.starts_with("4: malformed JSON") && d.contains("at column 45")),
        "{m:?}"
    );
}

#[test]
fn an_error_exit_is_one_fast_line_even_with_rust_backtrace() {
    let start = std::time::Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bonsai"))
        .args(["stats", bad("bom.jsonl").to_str().unwrap()])
        .env("RUST_BACKTRACE", "1")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    let took = start.elapsed();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("bonsai: ") && !err.contains("BACKTRACE") && !err.contains('\x1b'),
        "{err}"
    );
    // A generous bound for a loaded CI machine; it takes a few milliseconds.
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
}

#[test]
fn a_panic_says_it_is_a_bug_and_where_to_report_it() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bonsai"))
        .args(["stats", bad("odd-shapes.jsonl").to_str().unwrap()])
        .env("BONSAI_CRASH_FOR_TEST", "1")
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(101));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bug in bonsai") && err.contains("report it"), "{err}");
    assert!(err.contains("bonsai repair"), "{err}");
    assert!(!err.contains('\x1b'), "piped stderr gets no colour: {err}");
}
