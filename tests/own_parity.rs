//! Parity on the repository's own sessions (fixtures/pi-0.87.1, made by scripts/make-fixtures.mjs
//! with Pi 0.87.1): Pi's answers from the repository's own oracle (`pi-session.mjs inspect`)
//! against `bonsai inspect`, field by field, at the file's leaf and at every leaf of the branchy
//! session, with the cut at two keepRecentTokens and the branch-summary input to every user
//! message. Runs from a plain clone; ../shared is not needed.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn own_sessions() -> Vec<PathBuf> {
    let mut v = sessions_in(&repo().join("fixtures/pi-0.87.1"));
    // Written by Pi 1.5.2 (every release reads them).
    v.extend(sessions_in(&repo().join("fixtures/pi-1.5.2")));
    // Pi's first format (no ids), written by Pi 0.27.9: Pi 0.87.1 migrates it as it reads.
    v.push(repo().join("fixtures/pi-0.27.9/v1.jsonl"));
    v.push(repo().join("fixtures/demo.jsonl"));
    v
}

fn bonsai_inspect(file: &Path, args: &[&str], pi: &str) -> Value {
    let out = Command::new(bonsai_bin())
        .arg("inspect")
        .arg(file)
        .args(args)
        .args(["--pi-version", pi])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_repositorys_sessions_cover_every_entry_type_and_are_reproducible() {
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("fixtures/pi-0.87.1/generated.json")).unwrap())
            .unwrap();
    let mut types = std::collections::BTreeSet::new();
    for (_, s) in summary["sessions"].as_object().unwrap() {
        types.extend(s["types"].as_object().unwrap().keys().cloned());
    }
    for t in [
        "model_change",
        "thinking_level_change",
        "message/system",
        "message/user",
        "message/assistant",
        "message/toolResult",
        "message/bashExecution",
        "label",
        "session_info",
        "custom",
        "custom_message",
        "branch_summary",
        "context_edit",
        "usage",
        "compaction",
    ] {
        assert!(types.contains(t), "no {t} in the repository's sessions: {types:?}");
    }
    assert_eq!(summary["sessions"]["tour.jsonl"]["notes"]["split"], true);
    let forked = std::fs::read_to_string(repo().join("fixtures/pi-0.87.1/forked.jsonl")).unwrap();
    assert!(forked.lines().next().unwrap().contains("\"parentSession\""));
    // Regenerating gives the same bytes (Pi's ids and clock are seeded by the script), with
    // each release.
    for pi in pi_sessions("tests::own_parity::the_repositorys_sessions_cover_every_entry_type_and_are_reproducible") {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new(&pi.node)
            .arg(repo().join("scripts/make-fixtures.mjs"))
            .arg(dir.path())
            .env("PI_HOME", &pi.pi_home)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let ours = repo().join(format!("fixtures/pi-{}", pi.version));
        let files = sessions_in(&ours);
        assert!(files.len() >= 4, "{}", ours.display());
        for f in files {
            let again = dir.path().join(f.file_name().unwrap());
            assert!(
                std::fs::read(&f).unwrap() == std::fs::read(&again).unwrap(),
                "{} is not what scripts/make-fixtures.mjs makes now with Pi {}",
                f.display(),
                pi.version
            );
        }
    }
}

/// Each Pi release's answers (the repository's own oracle run on it) against bonsai following
/// that release.
#[test]
fn pi_and_bonsai_agree_on_the_repositorys_sessions() {
    for pi in pi_sessions("tests::own_parity::pi_and_bonsai_agree_on_the_repositorys_sessions") {
        agree_on_the_repositorys_sessions(&pi);
    }
}

fn agree_on_the_repositorys_sessions(pi: &PiSession) {
    use rayon::prelude::*;
    // Every run to make, then made at once: Pi's in one node process (a process each took
    // three quarters of a minute of CI), bonsai's on every core.
    let mut runs: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for f in own_sessions() {
        for k in ["2000", "20000"] {
            runs.push((f.clone(), args(&["--keep-recent-tokens", k])));
        }
    }
    // The branchy sessions: every leaf, and the branch summary's input from the last entry to
    // every user message (1.5.2's session has context edits inside the branch it left).
    for branchy in [
        "fixtures/pi-0.87.1/tour.jsonl",
        "fixtures/pi-1.5.2/changed-in-1.5.2.jsonl",
    ] {
        let file = repo().join(branchy);
        let s = bonsai::store::load_session(&file).unwrap();
        let has_child: std::collections::HashSet<usize> = (0..s.entries.len()).filter_map(|i| s.parent_of(i)).collect();
        let leaves: Vec<usize> = (0..s.entries.len()).filter(|i| !has_child.contains(i)).collect();
        assert!(leaves.len() >= 2, "{branchy} has branches");
        for l in &leaves {
            let leaf = format!("idx:{l}");
            runs.push((file.clone(), args(&["--leaf", &leaf, "--keep-recent-tokens", "600"])));
            // From each leaf back to every user message: what a branch summary covers.
            for i in 0..s.entries.len() {
                if s.entries[i]
                    .message()
                    .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
                {
                    runs.push((
                        file.clone(),
                        args(&["--leaf", &leaf, "--branch-target", &format!("idx:{i}")]),
                    ));
                }
            }
        }
    }
    // The split turn: just before its compaction, with the keepRecentTokens it was made with.
    let split = repo().join("fixtures/pi-0.87.1/split-turn.jsonl");
    let s = bonsai::store::load_session(&split).unwrap();
    let c = (0..s.entries.len())
        .find(|&i| s.entries[i].kind.type_name() == "compaction")
        .unwrap();
    let before = s.parent_of(c).unwrap();
    runs.push((
        split.clone(),
        args(&["--leaf", &format!("idx:{before}"), "--keep-recent-tokens", "3000"]),
    ));
    // Pi's answers in one process, bonsai's on every core.
    let theirs = pi.inspect_many(&runs);
    let failures: Vec<String> = runs
        .par_iter()
        .zip(theirs)
        .filter_map(|((file, args), theirs)| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let name = format!(
                "Pi {}: {} {}",
                pi.version,
                file.file_name().unwrap().to_string_lossy(),
                args.join(" ")
            );
            let ours = bonsai_inspect(file, &args, pi.version);
            match theirs {
                Err(e) => Some(format!("{name}: Pi failed: {e}")),
                Ok(theirs) => {
                    let d = diff(&theirs, &ours);
                    (!d.is_empty())
                        .then(|| format!("{name}:\n  {}", d.into_iter().take(8).collect::<Vec<_>>().join("\n  ")))
                }
            }
        })
        .collect();
    let checked = runs.len();
    let at_split = bonsai_inspect(
        &split,
        &["--leaf", &format!("idx:{before}"), "--keep-recent-tokens", "3000"],
        pi.version,
    );
    assert_eq!(at_split["compaction"]["isSplitTurn"], true);
    say(&format!(
        "own_parity: Pi {}: {} of {checked} runs equal field by field",
        pi.version,
        checked - failures.len()
    ));
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 20, "{checked}");
}

/// Each Pi release's /tree (its own component) against bonsai following that release, with
/// the same home folder for both (paths under it are shortened).
#[test]
fn bonsai_tree_draws_pis_tree_byte_for_byte_on_the_repositorys_sessions() {
    for pi in pi_sessions("tests::own_parity::bonsai_tree_draws_pis_tree_byte_for_byte_on_the_repositorys_sessions") {
        tree_byte_for_byte(&pi);
    }
}

fn tree_byte_for_byte(pi: &PiSession) {
    // The sessions' cwd is under /home/user: a home there shortens their absolute paths. A home
    // of /home/dev is a string prefix of 1.5.2's session's /home/developer/…, which 0.87.1
    // shortened (`~eloper/…`) and 1.5.2 does not.
    let changed = repo().join("fixtures/pi-1.5.2/changed-in-1.5.2.jsonl");
    let mut runs: Vec<(PathBuf, &str)> = own_sessions().into_iter().map(|f| (f, "/home/user")).collect();
    runs.push((changed, "/home/dev"));
    let filters = ["default", "no-tools", "user-only", "labeled-only", "all"];
    let mut specs = vec![];
    for w in ["100", "72", "44"] {
        for f in filters {
            specs.push(format!("{w}:{f}"));
        }
    }
    // A node process per file (its renders in one), the files on every core.
    use rayon::prelude::*;
    let done: Vec<(usize, Vec<String>)> = runs
        .par_iter()
        .with_max_len(1)
        .map(|(file, home)| {
            let (mut n, mut failures) = (0, vec![]);
            let (file, home) = (file.as_path(), *home);
            let o = pi
                .command()
                .arg("tree")
                .arg(file)
                .args(&specs)
                .env("PI_TREE_HOME", home)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            for line in String::from_utf8_lossy(&o.stdout).lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                let (w, f) = v["spec"].as_str().unwrap().split_once(':').unwrap();
                let want: String = v["lines"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| format!("{}\n", l.as_str().unwrap()))
                    .collect();
                let out = Command::new(bonsai_bin())
                    .args(["tree", "--width", w, "--filter", f, "--pi-version", pi.version])
                    .arg(file)
                    .env("HOME", home)
                    .output()
                    .unwrap();
                n += 1;
                if out.stdout != want.as_bytes() {
                    failures.push(format!(
                        "Pi {}: {} {w} {f} (home {home}):\n--- pi\n{want}--- bonsai\n{}",
                        pi.version,
                        file.display(),
                        String::from_utf8_lossy(&out.stdout)
                    ));
                }
            }
            (n, failures)
        })
        .collect();
    let n: usize = done.iter().map(|d| d.0).sum();
    let failures: Vec<String> = done.into_iter().flat_map(|d| d.1).collect();
    assert_eq!(n, runs.len() * specs.len());
    assert!(
        failures.is_empty(),
        "{} of {n} renders differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
