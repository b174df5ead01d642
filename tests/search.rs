//! `bonsai search`: matches in the decoded text of messages (escapes resolved), smart case,
//! regular expressions, the role filter, a hit inside a 20 MB line, many files at once, and
//! the JSON lines it prints.

mod common;

use common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

fn run(args: &[&str]) -> Output {
    std::process::Command::new(bonsai_bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn hits(args: &[&str]) -> Vec<Value> {
    let mut a = vec!["search", "--json"];
    a.extend_from_slice(args);
    let o = run(&a);
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-11-20T09:00:00.000Z","cwd":"/x"}"#;

fn session(dir: &Path, name: &str, entries: &[Value]) -> std::path::PathBuf {
    let mut t = format!("{HEADER}\n");
    for e in entries {
        t.push_str(&e.to_string());
        t.push('\n');
    }
    let p = dir.join(name);
    std::fs::write(&p, t).unwrap();
    p
}

fn msg(id: &str, role: &str, text: &str) -> Value {
    json!({"type":"message","id":id,"parentId":null,"timestamp":"2026-11-20T09:01:00.000Z",
        "message":{"role":role,"content":[{"type":"text","text":text}]}})
}

#[test]
fn escapes_case_regex_and_roles() {
    let dir = tempfile::tempdir().unwrap();
    let f = session(
        dir.path(),
        "a.jsonl",
        &[
            msg("u1", "user", "Please fix \"the Parser\" in C:\\src\nthen run the tests"),
            msg("a1", "assistant", "The parser is fixed; tests pass."),
            json!({"type":"message","id":"t1","parentId":"a1","timestamp":"2026-11-20T09:02:00.000Z",
                "message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"3 passed, parser ok"}],"isError":false}}),
        ],
    );
    let fs = f.to_str().unwrap();
    let ids = |v: &[Value]| {
        v.iter()
            .map(|h| h["entryId"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    // A quote, a backslash and a newline match as the message has them.
    assert_eq!(ids(&hits(&["\"the Parser\"", fs])), ["u1"]);
    assert_eq!(ids(&hits(&["C:\\src\nthen", fs])), ["u1"]);
    // Smart case.
    assert_eq!(ids(&hits(&["parser", fs])), ["u1", "a1", "t1"]);
    assert_eq!(ids(&hits(&["Parser", fs])), ["u1"]);
    // Roles.
    assert_eq!(ids(&hits(&["parser", fs, "--role", "assistant"])), ["a1"]);
    assert_eq!(ids(&hits(&["parser", fs, "--role", "tool"])), ["t1"]);
    // A regex, also one that spans an escaped newline.
    assert_eq!(ids(&hits(&["--regex", r"\d+ passed", fs])), ["t1"]);
    assert_eq!(ids(&hits(&["--regex", r"src\s+then", fs])), ["u1"]);
    // The JSON around the text is not searched; no match exits 1 and says so.
    let o = run(&["search", "parentId", fs]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no match for \"parentId\""));
    // The fields of a hit.
    let h = &hits(&["tests pass", fs])[0];
    assert_eq!(h["session"], fs);
    assert_eq!(h["role"], "assistant");
    assert_eq!(h["timestamp"], "2026-11-20T09:01:00.000Z");
    assert_eq!(h["line"], 3);
    let snippet = h["snippet"].as_str().unwrap();
    let (a, b) = (
        h["match"][0].as_u64().unwrap() as usize,
        h["match"][1].as_u64().unwrap() as usize,
    );
    assert_eq!(&snippet[a..b], "tests pass");
    // Text output brackets the match without colour.
    let o = run(&["search", "tests pass", fs]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("[tests pass]"));
    // A bad regex is an error, not a crash.
    let o = run(&["search", "--regex", "(", fs]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a valid regex"));
}

#[test]
fn a_hit_inside_a_20_mb_line_and_many_files() {
    let dir = tempfile::tempdir().unwrap();
    let big = format!("{}needle-in-the-middle{}", "x".repeat(10 << 20), "y".repeat(10 << 20));
    session(dir.path(), "big.jsonl", &[msg("b1", "toolResult", &big)]);
    for k in 0..300 {
        let text = if k % 3 == 0 { "a needle here" } else { "nothing" };
        session(
            dir.path(),
            &format!("s{k:03}.jsonl"),
            &[msg(&format!("e{k}"), "user", text)],
        );
    }
    // A delete's removed lines are not a session.
    std::fs::write(
        dir.path().join("s000.jsonl.deleted-2026.jsonl"),
        msg("gone", "user", "needle").to_string(),
    )
    .unwrap();
    let all = hits(&["needle", dir.path().to_str().unwrap()]);
    assert_eq!(all.len(), 101, "100 small hits and the big one");
    let b = all.iter().find(|h| h["entryId"] == "b1").unwrap();
    assert!(b["snippet"].as_str().unwrap().len() < 200, "the snippet is short");
    assert!(!all.iter().any(|h| h["entryId"] == "gone"));
    // The repository's sessions: the tour's user asks about rounding.
    let tour = repo().join("fixtures/pi-0.87.1/tour.jsonl");
    let h = hits(&["fix what fails", tour.to_str().unwrap(), "--role", "user"]);
    assert_eq!(h.len(), 1);
}
