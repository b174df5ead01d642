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
