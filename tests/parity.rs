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

/// Pi 1.6.0, the newest release, answers as 1.5.2 on every session of the repository and of
/// ../shared: the tree, the context, the cut, the summary inputs, the branch input and
/// `/tree`'s rows, field by field. bonsai follows 1.6.0 with 1.5.2's rules (`PiVersion`), and
/// the live test above holds those against 1.5.2; this holds the step between the two
/// releases, at a third of the cost of running every check on 1.6.0 as well.
#[test]
fn pi_1_6_0_answers_as_1_5_2() {
    use rayon::prelude::*;
    let Some(v152) = oracles().into_iter().find(|o| o.version == "1.5.2") else {
        return;
    };
    let pi_home = oracle_dir().join("pi-1.6.0");
    if !pi_home
        .join("node_modules/@earendil-works/pi-coding-agent/package.json")
        .exists()
    {
        assert!(
            std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() != Ok("1"),
            "Pi 1.6.0 is not installed under {} (scripts/install-oracle.sh)",
            oracle_dir().display()
        );
        say("SKIPPED pi_1_6_0_answers_as_1_5_2: Pi 1.6.0 is not installed (scripts/install-oracle.sh)");
        return;
    }
    let v160 = Oracle {
        pi_home,
        version: "1.6.0",
        ..v152.clone()
    };
    let mut sessions: Vec<PathBuf> = shared_fixture_dirs().iter().flat_map(|d| sessions_in(d)).collect();
    sessions.extend(sessions_in(&repo().join("fixtures")));
    sessions.extend(sessions_in(&repo().join("fixtures/pi-0.87.1")));
    sessions.extend(sessions_in(&repo().join("fixtures/pi-1.5.2")));
    let answers = |o: &Oracle, session: &Path| -> Result<Value, String> {
        let s = bonsai::store::load_session(session).map_err(|e| e.to_string())?;
        let target = s.entries.iter().position(|e| {
            e.message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
        });
        let t = target.map(|t| format!("idx:{t}"));
        let mut args = vec!["--keep-recent-tokens", "2000", "--tree-render", "120", "--nested-tree"];
        if let Some(t) = &t {
            args.extend(["--branch-target", t]);
        }
        let mut v = o.run(session, &args)?;
        for k in ["oracleFormat", "piVersion"] {
            v.as_object_mut().map(|m| m.remove(k));
        }
        Ok(v)
    };
    let failures: Vec<String> = sessions
        .par_iter()
        .with_max_len(1)
        .filter_map(|session| {
            let name = session.display().to_string();
            match (answers(&v152, session), answers(&v160, session)) {
                (Ok(a), Ok(b)) => {
                    let d = diff(&a, &b);
                    (!d.is_empty() || a != b).then(|| format!("{name}: {}", d.join("; ")))
                }
                (a, b) => Some(format!("{name}: 1.5.2 {:?} / 1.6.0 {:?}", a.err(), b.err())),
            }
        })
        .collect();
    say(&format!(
        "parity: Pi 1.6.0 against 1.5.2 on {} sessions",
        sessions.len()
    ));
    assert!(sessions.len() >= 10, "{} sessions", sessions.len());
    assert!(
        failures.is_empty(),
        "Pi 1.6.0 answers otherwise than 1.5.2:\n{}",
        failures.join("\n")
    );
}
