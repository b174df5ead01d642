//! Disk full for real: a small tmpfs (mounted here when the machine allows it, as root) is
//! filled to within a few pages, and the real binary writes to a session on it (compact,
//! navigate with a summary, label, fork, clone, migrate, delete-branch). Every write fails or succeeds
//! whole: the session is byte-identical after a failure, no partial new session appears,
//! backups are complete, and once space is freed the same command works. Where no tmpfs can
//! be mounted the test says so and passes: the injected ENOSPC cases of tests/faults.rs stand.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A tmpfs mounted for the test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, kib: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).ok()?;
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={kib}k,mode=0755"),
                "bonsai-test",
                dir.to_str()?,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Fill the file system with `filler` until it is full, then give back `free` bytes.
fn fill_leaving(filler: &Path, free: u64) {
    use std::io::Write;
    let _ = std::fs::remove_file(filler);
    let mut f = std::fs::File::create(filler).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
    let len = std::fs::metadata(filler).unwrap().len();
    f.set_len(len.saturating_sub(free)).unwrap();
}

fn bonsai(args: &[String], home: &Path) -> std::process::Output {
    common::bonsai_isolated(home).args(args).output().unwrap()
}

#[test]
fn writes_on_a_full_disk_fail_whole_and_work_once_there_is_room() {
    let work = tempfile::tempdir().unwrap();
    let mnt = work.path().join("small-disk");
    let Some(fs) = Tmpfs::mount(&mnt, 256) else {
        eprintln!(
            "note: writes_on_a_full_disk_fail_whole…: cannot mount a tmpfs here (needs root); the injected ENOSPC cases in tests/faults.rs stand"
        );
        common::report_reliability("disk-full", "disk full (real tmpfs): skipped, no tmpfs here");
        return;
    };
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let demo = common::repo().join("fixtures/demo.jsonl");
    let v2 = common::repo().join("fixtures/bad/v2-hookmessage.jsonl");
    let tour = common::repo().join("fixtures/pi-0.87.1/tour.jsonl");
    let s = bonsai::store::load_session(&demo).unwrap();
    let path = s.path_to(s.leaf().unwrap());
    let middle = s.entries[path[path.len() / 2]].id.to_string();
    let user = path
        .iter()
        .find(|&&i| {
            s.entries[i]
                .message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
        })
        .map(|&i| s.entries[i].id.to_string())
        .unwrap();
    drop(s);
    let cases: Vec<(&str, &Path, Vec<String>)> = vec![
        (
            "compact",
            &demo,
            vec![
                "compact".into(),
                "{}".into(),
                "--keep-recent-tokens".into(),
                "500".into(),
                "--yes".into(),
            ],
        ),
        (
            "navigate --summary default",
            &demo,
            vec![
                "navigate".into(),
                "{}".into(),
                middle.clone(),
                "--summary".into(),
                "default".into(),
                "--yes".into(),
            ],
        ),
        (
            "label",
            &demo,
            vec![
                "label".into(),
                "{}".into(),
                middle.clone(),
                "full".into(),
                "--yes".into(),
            ],
        ),
        (
            "fork",
            &demo,
            vec!["fork".into(), "{}".into(), user.clone(), "--yes".into()],
        ),
        ("clone", &demo, vec!["clone".into(), "{}".into(), "--yes".into()]),
        ("migrate", &v2, vec!["migrate".into(), "{}".into(), "--yes".into()]),
        // The one rewrite: removed lines, backup and new file all need room.
        (
            "delete-branch",
            &tour,
            vec!["delete-branch".into(), "{}".into(), "2e33ee61".into(), "--yes".into()],
        ),
    ];
    let mut failures = vec![];
    let (mut runs, mut full, mut fine) = (0, 0, 0);
    for (name, src, args) in &cases {
        let dir = mnt.join("sessions");
        let filler = mnt.join("filler");
        // From no room at all to a few pages: each fails at a different step.
        for free in [0u64, 512, 4096, 8192, 12288, 16384, 32768, 65536] {
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::remove_file(&filler);
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join(src.file_name().unwrap());
            std::fs::copy(src, &p).unwrap();
            if *name == "delete-branch" {
                // Not written in the last 10 s (else refused: Pi may be running).
                let t = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
                std::fs::File::options()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_modified(t)
                    .unwrap();
            }
            let old = std::fs::read(&p).unwrap();
            fill_leaving(&filler, free);
            let args: Vec<String> = args.iter().map(|a| a.replace("{}", p.to_str().unwrap())).collect();
            let out = bonsai(&args, &home);
            runs += 1;
            let what = format!("{name} with {free} bytes free");
            let err = String::from_utf8_lossy(&out.stderr).to_string();
            let now = std::fs::read(&p).unwrap();
            if out.status.success() {
                fine += 1;
            } else {
                full += 1;
                if !err.contains("No space left") {
                    failures.push(format!("{what}: failed without naming the full disk: {err}"));
                }
                if now != old {
                    failures.push(format!(
                        "{what}: failed and the session changed ({} → {} bytes)",
                        old.len(),
                        now.len()
                    ));
                }
            }
            // Whatever happened: whole lines, whole new sessions, complete backups.
            let text = String::from_utf8_lossy(&now);
            if !text.ends_with('\n')
                || text
                    .lines()
                    .any(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
            {
                failures.push(format!("{what}: a broken line in the session"));
            }
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if e.path() == p || n.starts_with('.') {
                    continue;
                }
                let b = std::fs::read(e.path()).unwrap();
                if n.contains(".deleted-") {
                    if !out.status.success() {
                        failures.push(format!("{what}: a failed delete left its removed-lines file {n}"));
                    }
                } else if n.contains(".bak") {
                    if b != old {
                        failures.push(format!("{what}: an incomplete backup {n}"));
                    }
                } else if n.ends_with(".jsonl")
                    && bonsai::store::load_session(&e.path())
                        .map_or(true, |s| !s.diagnostics.is_empty() || !b.ends_with(b"\n"))
                {
                    failures.push(format!("{what}: a partial new session {n} ({} bytes)", b.len()));
                }
            }
            if !out.status.success() {
                // Room again: the same command now works.
                std::fs::remove_file(&filler).unwrap();
                let again = bonsai(&args, &home);
                if !again.status.success() {
                    failures.push(format!(
                        "{what}: after freeing space: {}",
                        String::from_utf8_lossy(&again.stderr)
                    ));
                }
            }
        }
    }
    drop(fs);
    common::report_reliability(
        "disk-full",
        &format!(
            "disk full (real tmpfs): {runs} writes on a nearly full disk ({full} refused with ENOSPC, {fine} fitted), failures: {}",
            failures.len()
        ),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(full >= cases.len(), "every command met a full disk at least once");
}
