#![allow(dead_code)]
//! Synthetic sessions for benchmarks, made by ../shared/tools/gen_session.py at bench time.

use std::path::PathBuf;

/// The session file of about `mb` megabytes (43,700 entries ≈ 100 MB with these settings).
pub fn session_file(mb: usize) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("s{mb}mb.jsonl"));
    if !p.exists() {
        let generator = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/gen_session.py");
        let entries = (mb * 437).max(50);
        let ok = std::process::Command::new("python3")
            .arg(generator)
            .args([
                "--entries",
                &entries.to_string(),
                "--branch-every",
                "200",
                "--compactions",
                "3",
                "--images",
                "0.01",
            ])
            .args(["--seed", "42", "-q", "-o"])
            .arg(&p)
            .status()
            .unwrap()
            .success();
        assert!(ok, "gen_session.py failed");
    }
    p
}

/// Sizes in MB from `BONSAI_BENCH_SIZES` (comma-separated), else `default`.
pub fn sizes_or(default: &str) -> Vec<usize> {
    std::env::var("BONSAI_BENCH_SIZES")
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// The issues' reference session of about `mb` megabytes: `gen_session.py --entries (437 × mb)
/// --branch-every 100 --compactions 2 --tool-output-bytes 2048 --images 0.01 --seed 42`
/// (43,700 entries ≈ 100 MB), cached as `target/bench-data/ref{mb}mb.jsonl`.
pub fn reference_file(mb: usize) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("ref{mb}mb.jsonl"));
    if !p.exists() {
        let generator = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/gen_session.py");
        let ok = std::process::Command::new("python3")
            .arg(generator)
            .args(["--entries", &(mb * 437).max(50).to_string()])
            .args([
                "--branch-every",
                "100",
                "--compactions",
                "2",
                "--tool-output-bytes",
                "2048",
            ])
            .args(["--images", "0.01", "--seed", "42", "-q", "-o"])
            .arg(&p)
            .status()
            .unwrap()
            .success();
        assert!(ok, "gen_session.py failed");
    }
    p
}
