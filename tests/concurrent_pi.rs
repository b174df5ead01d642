//! A real concurrent writer: Pi itself (its SessionManager, through scripts/pi-session.mjs)
//! appends messages to a session while the real bonsai binary compacts, labels, renames and
//! navigates with a branch summary, over and over. Afterwards every line Pi wrote is in the
//! file once and byte for byte; each bonsai write was either refused with its reason or
//! written with the line before it as its parent (a branch summary: its target), unless
//! bonsai reported that Pi appended in the same instant; and Pi loads every entry. Skipped by
//! name when Pi is not installed. The counts go to RELIABILITY.md.

mod common;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

fn bonsai(args: &[&str], home: &std::path::Path) -> std::process::Output {
    common::bonsai_isolated(home).args(args).output().unwrap()
}

/// How many lines bonsai says it appended ("appended … (N line(s), …").
fn lines_appended(stderr: &str) -> Option<usize> {
    let at = stderr.find("appended ")?;
    let rest = &stderr[at..];
    let open = rest.find(" (")?;
    rest[open + 2..].split(' ').next()?.parse().ok()
}

#[test]
fn pi_appends_while_bonsai_writes() {
    let Some(pi) = common::pi_session("pi_appends_while_bonsai_writes") else {
        common::report_reliability("concurrent", "concurrent interleavings: skipped, Pi not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let file = dir.path().join("session.jsonl");
    std::fs::copy(common::repo().join("fixtures/demo.jsonl"), &file).unwrap();
    let original = std::fs::read(&file).unwrap();
    let f = file.to_str().unwrap();
    let s = bonsai::store::load_session(&file).unwrap();
    let path = s.path_to(s.leaf().unwrap());
    let target = s.entries[path[path.len() / 2]].id.to_string();
    let labelled = s.entries[path[1]].id.to_string();
    drop(s);

    let commands: [Vec<&str>; 4] = [
        vec!["label", f, &labelled, "concurrent", "--yes"],
        vec!["compact", f, "--keep-recent-tokens", "500", "--yes"],
        vec!["navigate", f, &target, "--summary", "default", "--yes"],
        vec!["rename", f, "concurrent", "--yes"],
    ];
    // Rounds of Pi writing 600 messages a few milliseconds apart (printing each line it
    // wrote), with bonsai writing all the while, until bonsai has run 220 times.
    let mut runs: Vec<(usize, std::process::Output)> = vec![];
    let mut pi_lines: Vec<String> = vec![];
    let mut round = 0;
    while runs.len() < 220 {
        round += 1;
        let len_before = std::fs::metadata(&file).unwrap().len();
        let seed = round.to_string();
        let mut writer = pi
            .command()
            .args(["append", f, "600", "--pause-ms", "2", "--seed", &seed])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = writer.stdout.take().unwrap();
        let reader =
            std::thread::spawn(move || BufReader::new(out).lines().map(|l| l.unwrap()).collect::<Vec<String>>());
        // Wait for Pi's first line, so every bonsai write below meets a writing Pi.
        while std::fs::metadata(&file).unwrap().len() == len_before && writer.try_wait().unwrap().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut k = runs.len();
        while writer.try_wait().unwrap().is_none() {
            let c = k % commands.len();
            runs.push((c, bonsai(&commands[c], &home)));
            k += 1;
        }
        let lines = reader.join().unwrap();
        let status = writer.wait_with_output().unwrap();
        assert!(
            status.status.success(),
            "Pi's writer: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        assert_eq!(lines.len(), 600);
        pi_lines.extend(lines);
    }

    let now = std::fs::read_to_string(&file).unwrap();
    assert!(now.as_bytes().starts_with(&original), "the old bytes changed");
    let added: Vec<&str> = now[original.len()..].lines().collect();
    let mut failures = vec![];
    // Every Pi line is there once, as Pi wrote it, in Pi's order.
    let pi_set: std::collections::HashSet<&str> = pi_lines.iter().map(|s| s.as_str()).collect();
    let in_file: Vec<&str> = added.iter().copied().filter(|l| pi_set.contains(l)).collect();
    if in_file != pi_lines.iter().map(|s| s.as_str()).collect::<Vec<_>>() {
        failures.push(format!(
            "Pi's lines: {} of {} present in order",
            in_file.len(),
            pi_lines.len()
        ));
    }
    // Bonsai's lines, in order, belong to its successful runs in order.
    let ours: Vec<(usize, &str)> = added
        .iter()
        .enumerate()
        .filter(|(_, l)| !pi_set.contains(*l))
        .map(|(i, l)| (i, *l))
        .collect();
    let (mut written, mut refused, mut raced) = (0, 0, 0);
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    let mut next = ours.iter();
    for (c, o) in &runs {
        let err = String::from_utf8_lossy(&o.stderr);
        // What was written is said on stdout; warnings and refusals on stderr.
        let said = format!("{}{err}", String::from_utf8_lossy(&o.stdout));
        if !o.status.success() {
            refused += 1;
            // A refusal names its reason in one line and writes nothing.
            // (An earlier line may say which summarizer runs.)
            let reason = err.lines().last().unwrap_or("").to_string();
            if !reason.starts_with("bonsai: ") || reason.len() < 20 {
                failures.push(format!("a refusal without a reason: {err:?}"));
            }
            // The reason without its numbers ("Pi appended N entries …").
            let mut key = String::new();
            for c in reason.split(':').nth(1).unwrap_or("").trim().chars() {
                let c = if c.is_ascii_digit() { 'N' } else { c };
                if !(c == 'N' && key.ends_with('N')) {
                    key.push(c);
                }
            }
            let key: String = key.replace("entry ", "entries ").chars().take(44).collect();
            *reasons.entry(key).or_default() += 1;
            continue;
        }
        let Some(n) = lines_appended(&said) else {
            failures.push(format!(
                "{:?}: success without saying what it appended: {err}",
                commands[*c]
            ));
            continue;
        };
        written += 1;
        let was_raced = err.contains("at the same instant");
        raced += usize::from(was_raced);
        for _ in 0..n {
            let Some(&(i, line)) = next.next() else {
                failures.push("a successful write whose line is missing".into());
                break;
            };
            let v: Value = serde_json::from_str(line).unwrap();
            let parent = v["parentId"].as_str().unwrap_or("");
            let before_id = if i == 0 {
                // The last entry of the original file.
                let last = String::from_utf8_lossy(&original);
                let l = last.lines().last().unwrap().to_string();
                serde_json::from_str::<Value>(&l).unwrap()["id"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            } else {
                serde_json::from_str::<Value>(added[i - 1]).unwrap()["id"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            let want = if v["type"] == "branch_summary" {
                target.clone()
            } else {
                before_id
            };
            if parent != want && !was_raced {
                failures.push(format!("bonsai's {} has parent {parent}, not {want}", v["type"]));
            }
        }
    }
    if next.next().is_some() {
        failures.push("lines in the file that neither Pi nor a successful bonsai run wrote".into());
    }
    // Pi loads every entry.
    let loaded = &pi.load(std::slice::from_ref(&file))[0];
    let all_lines = now.lines().count() - 1;
    if loaded["entries"].as_u64() != Some(all_lines as u64) {
        failures.push(format!("Pi loads {} entries of {all_lines}", loaded["entries"]));
    }
    common::report_reliability(
        "concurrent",
        &format!(
            "concurrent interleavings: {} (bonsai wrote {written}, refused {refused}: {reasons:?}; raced and reported: {raced}), Pi lines: {}, failures: {}",
            runs.len(),
            pi_lines.len(),
            failures.len()
        ),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(runs.len() >= 200);
}
