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

/// 2,000 sessions of about 5 GB over 40 projects (1 % ~38 MB, 50 % ~3.9 MB, the rest ~0.4 MB:
/// `gen_session.py` files as in [`many_sessions`]), each with a header id of its own, every
/// third named `project P task K` (a `session_info` line appended), cached as
/// `target/bench-data/agent2000x5g/`. The shape of issue 47's store: three hundred sessions in
/// twenty projects, times seven.
pub fn many_sessions_5gb() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    let agent = dir.join("agent2000x5g");
    if agent.join("done").exists() {
        return agent;
    }
    // The bases `many_sessions` makes.
    let _ = many_sessions(1);
    let read = |name: &str| std::fs::read(dir.join(format!("base-{name}.jsonl"))).unwrap();
    let bases = [read("500k"), read("5m"), read("50m")];
    for k in 0..2000usize {
        let p = k % 40;
        let project = agent.join("sessions").join(format!("--home-dev-project{p}--"));
        std::fs::create_dir_all(&project).unwrap();
        let base = match k {
            k if k % 100 == 0 => &bases[2],
            k if k % 2 == 1 => &bases[1],
            _ => &bases[0],
        };
        let split = base.iter().position(|&b| b == b'\n').unwrap();
        let mut header: serde_json::Value = serde_json::from_slice(&base[..split]).unwrap();
        header["id"] = format!("0b{k:06x}-5e55-7000-8000-{k:012x}").into();
        header["cwd"] = format!("/home/dev/project{p}").into();
        let mut bytes = header.to_string().into_bytes();
        bytes.extend_from_slice(&base[split..]);
        if k % 3 == 0 {
            let last_id = {
                let end = bytes.len() - 1;
                let start = bytes[..end].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                let v: serde_json::Value = serde_json::from_slice(&bytes[start..end]).unwrap();
                v["id"].as_str().unwrap().to_string()
            };
            bytes.extend_from_slice(
                format!(
                    "{}\n",
                    serde_json::json!({"type": "session_info", "id": format!("n{k:07}"), "parentId": last_id,
                        "timestamp": "2026-11-20T10:00:00.000Z", "name": format!("project {p} task {k}")})
                )
                .as_bytes(),
            );
        }
        let file = project.join(format!("2026-11-{:02}T10-00-00-000Z_0b{k:06x}.jsonl", k % 28 + 1));
        std::fs::write(&file, bytes).unwrap();
    }
    std::fs::write(agent.join("done"), "").unwrap();
    agent
}
