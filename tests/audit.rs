//! `bonsai audit`: what a summary already in a session lost, and `--give-back`.
//!
//! - On a session made for the test (specifics planted in the summarized range, a summary
//!   that leaves out known ones) the audit lists exactly those as lost, the named ones as
//!   kept, each with the entry it came from.
//! - The amended compaction loads in Pi's own code (0.87.1 and 1.5.2) with the items in the
//!   model's context and nothing else changed; undo restores Pi's context byte for byte.
//! - Every summary of the repository's sessions is audited without error.

mod common;
use common::synth::planted_session;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;

fn audit_json(f: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["audit", f.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let o = bonsai_run(&args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

type Item = (String, String, String);

/// What Pi loads from `f` (pi-session.mjs `load`): each context message's source, role and
/// content hash.
fn pi_load(oracle: &PiSession, f: &std::path::Path) -> Value {
    let o = oracle.command().arg("load").arg(f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    v
}

/// pi-session.mjs's content hash: SHA-256 of JSON.stringify(content), 16 hex digits.
fn content_hash(content: &Value) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(bonsai::engine::load::js::stringify(content).as_bytes());
    h.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn items(v: &Value) -> BTreeSet<Item> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["kind"].as_str().unwrap().to_string(),
                i["text"].as_str().unwrap().to_string(),
                i["entryId"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn planted_items(v: &[(&str, &str, &str)]) -> BTreeSet<Item> {
    v.iter()
        .map(|(k, t, e)| (k.to_string(), t.to_string(), e.to_string()))
        .collect()
}

#[test]
fn the_audit_lists_exactly_the_left_out_specifics_as_lost() {
    let dir = tempfile::tempdir().unwrap();
    let p = planted_session("/home/u/shop");
    let f = dir.path().join("planted.jsonl");
    std::fs::write(&f, &p.text).unwrap();
    let out = audit_json(&f, &[]);
    let audits = out["audits"].as_array().unwrap();
    assert_eq!(audits.len(), 1, "one summary on the path");
    let a = &audits[0];
    assert_eq!(a["entryId"], "p0000014");
    assert_eq!(a["type"], "compaction");
    assert_eq!(a["summarizedEntries"], 11);
    assert_eq!(items(&a["lost"]), planted_items(&p.lost));
    assert_eq!(items(&a["kept"]), planted_items(&p.kept));
    assert_eq!(a["invented"], serde_json::json!([]));
    for (kind, kept, total) in [
        ("filesRead", 0, 1),
        ("filesModified", 1, 1),
        ("commands", 1, 2),
        ("errors", 1, 1),
        ("decisions", 1, 2),
        ("values", 0, 2),
        ("openTasks", 0, 0),
    ] {
        assert_eq!(
            a["score"][kind],
            serde_json::json!({"kept": kept, "total": total}),
            "{kind}"
        );
    }
    // The text names each lost item with its entry, numbered for --give-back.
    let text = bonsai_ok(&["audit", f.to_str().unwrap()]);
    assert!(
        text.contains("lost 5 of 9 specifics: 2 values, 1 file, 1 command, 1 decision"),
        "{text}"
    );
    assert!(text.contains("`git stash list` (ok)  ← p0000008"), "{text}");
    // The way to give them back names this file, ready to copy (quoted when it must be).
    assert!(
        text.contains(&format!("give them back: bonsai audit {} --entry ", f.display())),
        "{text}"
    );
    let spaced = f.with_file_name("my planted session.jsonl");
    std::fs::copy(&f, &spaced).unwrap();
    let text = bonsai_ok(&["audit", spaced.to_str().unwrap()]);
    assert!(
        text.contains(&format!("give them back: bonsai audit '{}' --entry ", spaced.display())),
        "{text}"
    );
    let o = bonsai_run(&["audit", spaced.to_str().unwrap(), "--give-back", "99", "--dry-run"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "(`bonsai audit '{}' --entry ID` numbers them)",
            spaced.display()
        )),
        "{err}"
    );
    // --entry on something else says what it is.
    let o = bonsai_run(&["audit", f.to_str().unwrap(), "--entry", "p0000003"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("p0000003 is a message entry"));
}

#[test]
fn given_back_specifics_load_in_pi_and_undo_restores_its_context() {
    for oracle in pi_sessions("tests::audit::given_back") {
        let _v = follow(&oracle);
        let dir = tempfile::tempdir().unwrap();
        let p = planted_session("/home/u/shop");
        let f = dir.path().join("planted.jsonl");
        std::fs::write(&f, &p.text).unwrap();
        let v = oracle.version;
        let before = pi_load(&oracle, &f);
        // Two by number and one kind: the numbers are the listing's (files, commands, …).
        let o = bonsai_run(&[
            "audit",
            f.to_str().unwrap(),
            "--give-back",
            "1,2,values",
            "--yes",
            "--json",
        ]);
        assert!(o.status.success(), "Pi {v}: {}", String::from_utf8_lossy(&o.stderr));
        let written: Value = serde_json::from_slice(&o.stdout).unwrap();
        let entry = &written["entries"][0];
        assert_eq!(entry["type"], "compaction");
        assert_eq!(entry["parentId"], "p0000016", "at the leaf");
        assert_eq!(entry["firstKeptEntryId"], "p0000012", "the same cut");
        assert!(entry.get("usage").is_none(), "no model call to count");
        let summary = entry["summary"].as_str().unwrap();
        for item in ["config/currencies.toml", "`git stash list` (ok)", "ACCT-77812", "6433"] {
            assert!(
                summary.contains(&format!("- {item}")),
                "Pi {v}: {item} given back:\n{summary}"
            );
        }
        assert!(!summary.contains("Never round"), "only what was chosen");
        let after = pi_load(&oracle, &f);
        assert_eq!(after["leafId"], entry["id"], "Pi {v}");
        let (b, a) = (
            before["detail"].as_array().unwrap(),
            after["detail"].as_array().unwrap(),
        );
        assert_eq!(a.len(), b.len(), "Pi {v}: the same messages");
        for (x, y) in a.iter().zip(b) {
            if x["role"] == "compactionSummary" {
                assert_eq!(x["source"], entry["id"], "Pi {v}");
                assert_eq!(
                    x["content"],
                    content_hash(&Value::from(summary)),
                    "Pi {v}: the amended summary in the context"
                );
            } else {
                assert_eq!(
                    (&x["role"], &x["content"], &x["source"]),
                    (&y["role"], &y["content"], &y["source"]),
                    "Pi {v}: every other message unchanged"
                );
            }
        }
        // The amended summary audits as keeping what it was given.
        let re = audit_json(&f, &["--entry", entry["id"].as_str().unwrap()]);
        let lost = items(&re["audits"][0]["lost"]);
        assert_eq!(lost.len(), 1, "Pi {v}: only the decision left out: {lost:?}");
        // Undo: Pi's context as it was, byte for byte.
        let o = bonsai_run(&["undo", f.to_str().unwrap(), "--yes"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let undone = pi_load(&oracle, &f);
        assert_eq!(
            undone["detail"], before["detail"],
            "Pi {v}: undo restores the context byte for byte"
        );
    }
}

#[test]
fn every_summary_in_the_repositorys_sessions_is_audited() {
    let mut audited = 0;
    // ../shared's sessions too, when it is there.
    let dirs: Vec<std::path::PathBuf> = ["fixtures/pi-0.87.1", "fixtures/pi-1.5.2"]
        .iter()
        .map(|d| repo().join(d))
        .chain(shared_fixture_dirs())
        .collect();
    for dir in dirs {
        for f in sessions_in(&dir) {
            let out = audit_json(&f, &[]);
            for a in out["audits"].as_array().unwrap() {
                let total: u64 = a["score"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|s| s["total"].as_u64().unwrap())
                    .sum();
                let listed = a["lost"].as_array().unwrap().len() + a["kept"].as_array().unwrap().len();
                assert_eq!(total as usize, listed, "{}: the score counts every item", f.display());
                audited += 1;
            }
        }
    }
    assert!(audited >= 6, "{audited}");
}

/// The offline summary keeps ≥ 95 % of every kind on the repository's long sessions, at cuts
/// from 1,000 to 8,000 kept tokens (what `bonsai compact` prints as its audit).
#[test]
fn the_offline_summary_keeps_every_kind_on_the_repositorys_long_sessions() {
    for dir in ["fixtures/pi-0.87.1", "fixtures/pi-1.5.2"] {
        let src = repo().join(dir).join("long.jsonl");
        for keep in ["1000", "2000", "4000", "8000"] {
            let tmp = tempfile::tempdir().unwrap();
            let f = tmp.path().join("long.jsonl");
            std::fs::copy(&src, &f).unwrap();
            let out: Value = serde_json::from_slice(
                &bonsai_run(&[
                    "compact",
                    f.to_str().unwrap(),
                    "--summarizer",
                    "offline",
                    "--keep-recent-tokens",
                    keep,
                    "--dry-run",
                    "--json",
                ])
                .stdout,
            )
            .unwrap();
            let a = &out["audit"];
            let mut total = 0;
            for (kind, s) in a["score"].as_object().unwrap() {
                let (kept, n) = (s["kept"].as_u64().unwrap(), s["total"].as_u64().unwrap());
                total += n;
                assert!(
                    kept * 100 >= n * 95,
                    "{dir} keep {keep}: {kind} {kept}/{n}: {}",
                    a["lost"]
                );
            }
            assert!(total >= 50, "{dir} keep {keep}: {total} specifics");
        }
    }
}

/// On a session Pi wrote (the repository's long.jsonl, both releases): Pi's first compaction
/// kept every file read and every log the user named, and lost exactly the nine `grep`
/// commands, each from the reply that ran it.
#[test]
fn pis_compaction_in_the_repositorys_long_session_lost_its_commands() {
    for dir in ["fixtures/pi-0.87.1", "fixtures/pi-1.5.2"] {
        let f = repo().join(dir).join("long.jsonl");
        let a = &audit_json(&f, &["--entry", "e033391b"])["audits"][0];
        let lost = items(&a["lost"]);
        assert_eq!(lost.len(), 9, "{dir}: {lost:?}");
        let s = bonsai::store::load_session(&f).unwrap();
        for (k, (kind, text, entry)) in lost.iter().enumerate() {
            assert_eq!(kind, "commands");
            assert_eq!(text, &format!("grep -c WARN logs/import-{:02}.log", k + 2), "{dir}");
            let e = s.idx_of(entry).unwrap();
            let line = String::from_utf8_lossy(s.line_bytes(e)).to_string();
            assert!(
                line.contains(text.as_str()) && line.contains("\"toolCall\""),
                "{dir}: {entry} ran it"
            );
        }
        let kept = items(&a["kept"]);
        let read: Vec<&String> = kept.iter().filter(|i| i.0 == "filesRead").map(|i| &i.1).collect();
        assert_eq!(read.len(), 9, "{dir}");
        assert!(
            kept.iter()
                .filter(|i| i.0 == "values")
                .all(|i| i.1.starts_with("logs/import-")),
            "{dir}: {kept:?}"
        );
    }
}
