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

/// Pi's session folders with `n` sessions over 30 projects, of mixed sizes (70 % ~50 KB,
/// 25 % ~0.5 MB, 4.5 % ~5 MB, 0.5 % ~50 MB: copies of four `gen_session.py` files), cached as
/// `target/bench-data/agent{n}/` (its `sessions/` is what Pi's agent folder holds).
pub fn many_sessions(n: usize) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let agent = dir.join(format!("agent{n}"));
    if agent.join("done").exists() {
        return agent;
    }
    let generator = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/gen_session.py");
    let bases: Vec<PathBuf> = [(20usize, "50k"), (200, "500k"), (2000, "5m"), (20000, "50m")]
        .iter()
        .map(|(entries, name)| {
            let p = dir.join(format!("base-{name}.jsonl"));
            if !p.exists() {
                let ok = std::process::Command::new("python3")
                    .arg(&generator)
                    .args([
                        "--entries",
                        &entries.to_string(),
                        "--branch-every",
                        "100",
                        "--seed",
                        "7",
                        "-q",
                        "-o",
                    ])
                    .arg(&p)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "gen_session.py failed");
            }
            p
        })
        .collect();
    for k in 0..n {
        let project = agent.join("sessions").join(format!("--home-dev-project{}--", k % 30));
        std::fs::create_dir_all(&project).unwrap();
        let base = match k % 200 {
            0 => &bases[3],
            1..=9 => &bases[2],
            10..=59 => &bases[1],
            _ => &bases[0],
        };
        std::fs::copy(
            base,
            project.join(format!("2026-11-{:02}T10-00-00-000Z_{k:04}.jsonl", k % 28 + 1)),
        )
        .unwrap();
    }
    std::fs::write(agent.join("done"), "").unwrap();
    agent
}
