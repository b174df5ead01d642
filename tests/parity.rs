//! Parity with Pi 0.87.1: bonsai's answers against the oracle's, field by field.
//!
//! Two layers: the stored oracle outputs in ../shared/fixtures (always), and the oracle run
//! live on every session, ours included, at keepRecentTokens 2000 and 20000, with branch
//! targets (needs `scripts/install-oracle.sh`; CI requires it).

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// bonsai as Pi `pi` against that Pi's oracle output.
fn check(session: &Path, oracle: &Value, pi: &str, what: &str, failures: &mut Vec<String>) {
    let ours = bonsai_inspect_as(session, &args_for(oracle), pi);
    let d = diff(oracle, &ours);
    if !d.is_empty() {
        failures.push(format!(
            "{what}: {} differences\n  {}",
            d.len(),
            d.iter().take(12).cloned().collect::<Vec<_>>().join("\n  ")
        ));
    }
}

#[test]
fn stored_oracle_outputs_match_field_by_field() {
    if no_shared("tests::parity::stored_oracle_outputs_match_field_by_field") {
        return;
    }
    let mut failures = Vec::new();
    let mut n = 0;
    for dir in shared_fixture_dirs() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files.iter().filter(|f| f.to_string_lossy().ends_with(".oracle.json")) {
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            let session = dir.join(format!("{}.jsonl", name.split('.').next().unwrap()));
            let oracle: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            // The stored outputs are Pi 0.87.1's.
            check(
                &session,
                &oracle,
                "0.87.1",
                &format!("{}/{name}", dir.file_name().unwrap().to_string_lossy()),
                &mut failures,
            );
            n += 1;
        }
    }
    assert!(n >= 44, "expected the 44 stored oracle files, found {n}");
    assert!(
        failures.is_empty(),
        "{} of {n} oracle files differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Sessions to check live: every shared fixture and every session of our own.
fn live_sessions() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = shared_fixture_dirs().iter().flat_map(|d| sessions_in(d)).collect();
    v.extend(sessions_in(&repo().join("fixtures")));
    v.extend(sessions_in(&repo().join("fixtures/pi-0.87.1")));
    v.extend(sessions_in(&repo().join("fixtures/pi-1.5.2")));
    // The bad corpus: the files Pi itself opens without hanging, and where the oracle's
    // presentation (first index of a duplicated id) does not differ by design.
    for name in [
        "truncated-last-line",
        "binary-garbage",
        "invalid-utf8",
        "missing-parents",
        "v2-hookmessage",
        "unknown-types",
        "crlf-blank-lines",
        "no-final-newline",
        "odd-shapes",
    ] {
        v.push(repo().join(format!("fixtures/bad/{name}.jsonl")));
    }
    v
}

/// Every session against each Pi release's own answers, bonsai following that release. The
/// runs (a node process each, then bonsai's) go on every core: one after another they were
/// the suite's longest binary (155 s of CI's 2 cores, one of them idle).
#[test]
fn live_oracle_agrees_on_every_session() {
    use rayon::prelude::*;
    let oracles = oracles();
    let sessions = live_sessions();
    let runs: Vec<(&Oracle, &PathBuf, &str)> = oracles
        .iter()
        .flat_map(|o| sessions.iter().flat_map(move |s| ["2000", "20000"].map(|k| (o, s, k))))
        .collect();
    let failures: Vec<String> = runs
        .par_iter()
        .with_max_len(1)
        .flat_map_iter(|&(oracle, session, k)| {
            let mut failures = Vec::new();
            let name = session.file_name().unwrap().to_string_lossy().to_string();
            // A branch target: the first user message, so the summary crosses the most.
            let s = bonsai::store::load_session(session).unwrap();
            let target = s.entries.iter().position(|e| {
                e.message()
                    .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
            });
            let mut args = vec!["--keep-recent-tokens", k];
            let t;
            if let Some(ti) = target {
                t = format!("idx:{ti}");
                args.extend(["--branch-target", &t]);
            }
            let v = oracle.version;
            match oracle.run(session, &args) {
                Ok(o) => check(session, &o, v, &format!("Pi {v}: {name} k{k}"), &mut failures),
                Err(e) => failures.push(format!("Pi {v}: {name}: oracle failed: {e}")),
            }
            failures
        })
        .collect();
    for oracle in &oracles {
        say(&format!(
            "parity: Pi {}: {} live oracle runs",
            oracle.version,
            runs.iter().filter(|r| r.0.version == oracle.version).count()
        ));
    }
    assert!(
        failures.is_empty(),
        "{} of {} live oracle runs differ:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
}

#[test]
fn live_oracle_agrees_at_every_leaf_of_a_branchy_session() {
    if no_shared("tests::parity::live_oracle_agrees_at_every_leaf_of_a_branchy_session") {
        return;
    }
    // Every leaf of the tree (a leaf = an entry without children) of the branchy fixtures, as
    // each Pi release answers.
    let mut failures = Vec::new();
    for oracle in oracles() {
        for session in [
            shared().join("fixtures/pi-0.87.1/branching-small.jsonl"),
            shared().join("fixtures/pi-0.87.1/context-edits.jsonl"),
            // Entries without a type and a message that is a string, kept by Pi as blank rows.
            repo().join("fixtures/bad/odd-shapes.jsonl"),
        ] {
            let s = bonsai::store::load_session(&session).unwrap();
            let t = bonsai::engine::view::tree::Tree::build(&s);
            for (i, ch) in t.children.iter().enumerate() {
                if !ch.is_empty() {
                    continue;
                }
                let leaf = s.entries[i].id.to_string();
                match oracle.run(
                    &session,
                    &[
                        "--keep-recent-tokens",
                        "2000",
                        "--leaf",
                        &leaf,
                        "--branch-target",
                        "idx:3",
                    ],
                ) {
                    Ok(o) => check(
                        &session,
                        &o,
                        oracle.version,
                        &format!("Pi {}: {} leaf {leaf}", oracle.version, session.display()),
                        &mut failures,
                    ),
                    Err(e) => failures.push(format!("Pi {}: oracle failed: {e}", oracle.version)),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
