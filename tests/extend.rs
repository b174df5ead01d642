//! A session extended by appended bytes (`Session::extend`) is the session loaded whole from
//! the longer file: same entries, parents, labels, name, diagnostics and Pi's numbers. Each
//! file is cut at line boundaries and inside lines (a partial last line that grows).

mod common;

use bonsai::engine::load::session::Session;
use bonsai::engine::report;
use std::path::PathBuf;

fn summary(s: &Session) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = s
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            serde_json::json!([
                e.line,
                e.span().start,
                e.span().end,
                &*e.id,
                s.parent_of(i),
                s.parent_id(i),
                e.kind.type_name(),
                s.measures_of(i).map(|m| m.est_tokens)
            ])
        })
        .collect();
    let mut labels: Vec<_> = s.labels.iter().map(|(k, v)| format!("{k}={}@{}", v.0, v.1)).collect();
    labels.sort();
    let inspect = s.leaf().map(|l| common::inspect_at(s, l));
    // Pi's `byId` for every id, and for ids no entry has.
    let mut by_id: Vec<Option<usize>> = s.entries.iter().map(|e| s.idx_of(&e.id)).collect();
    by_id.extend(["", "no such id"].map(|id| s.idx_of(id)));
    serde_json::json!({
        "by_id": by_id,
        "entries": entries,
        "labels": labels,
        "name": s.session_name(),
        "diagnostics": report::diagnostics_json(s),
        "skipped": s.skipped_lines,
        "dups": s.has_duplicate_ids,
        "newline": s.file_ends_with_newline,
        "inspect": inspect,
    })
}

fn files() -> Vec<PathBuf> {
    let mut v = vec![common::repo().join("fixtures/demo.jsonl")];
    v.extend(common::sessions_in(&common::repo().join("fixtures/bad")));
    v.extend(common::sessions_in(&common::repo().join("fixtures/pi-0.87.1")));
    for d in common::shared_fixture_dirs() {
        v.extend(common::sessions_in(&d));
    }
    v
}

#[test]
fn an_extended_session_is_the_longer_file_loaded_whole() {
    let mut checked = 0;
    for f in files() {
        let bytes = std::fs::read(&f).unwrap();
        let Ok(whole) = Session::from_bytes(bytes.clone()) else {
            continue;
        };
        let want = summary(&whole);
        // Up to 40 line boundaries spread over the file, plus cuts inside some lines.
        let ends: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).map(|k| k + 1).collect();
        let step = ends.len().div_ceil(40).max(1);
        let mut cuts: Vec<usize> = ends.iter().copied().step_by(step).collect();
        let inside: Vec<usize> = cuts.iter().step_by(5).map(|&k| k.saturating_sub(9)).collect();
        cuts.extend(inside);
        for cut in cuts {
            let Ok(prefix) = Session::from_bytes(bytes[..cut].to_vec()) else {
                continue;
            };
            let grown = prefix.extend(bytes.clone().into()).unwrap();
            assert_eq!(
                summary(&grown),
                want,
                "{} cut at byte {cut} of {}",
                f.display(),
                bytes.len()
            );
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} cuts");
}

#[test]
fn bytes_that_do_not_continue_the_session_are_read_whole() {
    let demo = std::fs::read(common::repo().join("fixtures/demo.jsonl")).unwrap();
    let s = Session::from_bytes(demo.clone()).unwrap();
    // A shorter, different file (rewritten by another program): no stale entries survive.
    let lines: Vec<&[u8]> = demo.split(|b| *b == b'\n').collect();
    let shorter = [lines[0], lines[1], b""].join(&b'\n');
    let again = s.extend(shorter.clone().into()).unwrap();
    assert_eq!(summary(&again), summary(&Session::from_bytes(shorter).unwrap()));
}
