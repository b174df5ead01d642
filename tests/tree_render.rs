//! `bonsai tree` against Pi's own /tree renders (65 golden files), byte for byte.

mod common;
use common::*;
use std::process::Command;

#[test]
fn tree_renders_match_pi_byte_for_byte() {
    if no_shared("tests::tree_render::tree_renders_match_pi_byte_for_byte") {
        return;
    }
    let mut failures = Vec::new();
    let mut n = 0;
    for dir in shared_fixture_dirs() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(rest) = name.strip_suffix(".w100.render.txt") else {
                continue;
            };
            let (session, filter) = rest.split_once(".tree-").unwrap();
            let expected = std::fs::read(entry.path()).unwrap();
            // Pi 0.87.1's renders, drawn without a home folder.
            let out = Command::new(bonsai_bin())
                .args(["tree", "--width", "100", "--filter", filter, "--pi-version", "0.87.1"])
                .arg(dir.join(format!("{session}.jsonl")))
                .env("HOME", "")
                .env_remove("USERPROFILE")
                .output()
                .unwrap();
            n += 1;
            if out.stdout != expected {
                failures.push(format!(
                    "{name}:\n--- pi\n{}\n--- bonsai\n{}",
                    String::from_utf8_lossy(&expected),
                    String::from_utf8_lossy(&out.stdout)
                ));
            }
        }
    }
    assert_eq!(n, 65, "expected 65 golden renders");
    assert!(
        failures.is_empty(),
        "{} renders differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
