//! Issue 22 (part), item 1: files planted beside a session where bonsai writes its own. The
//! write note `.NAME.jsonl.bonsai-write` was opened following links and truncated: a link
//! planted there had any write command overwrite the link's target, a FIFO hung every command,
//! and a link to /dev/zero was read forever. Now such a note is named and left alone.

mod common;

use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

fn session_copy() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::copy(common::repo().join("fixtures/demo.jsonl"), &p).unwrap();
    let note = dir.path().join(".s.jsonl.bonsai-write");
    (dir, p, note)
}

fn run_with_deadline(args: &[&str], home: &std::path::Path) -> std::process::Output {
    let mut c = common::bonsai_isolated(home)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if c.try_wait().unwrap().is_some() {
            return c.wait_with_output().unwrap();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = c.kill();
            panic!("bonsai {args:?} still running after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_link_planted_as_the_write_note_is_never_followed() {
    let home = tempfile::tempdir().unwrap();
    let (dir, p, note) = session_copy();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, b"precious\n").unwrap();
    symlink(&victim, &note).unwrap();
    let before = std::fs::read(&p).unwrap();
    let o = run_with_deadline(&["label", p.to_str().unwrap(), "idx:3", "x", "--yes"], home.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(".s.jsonl.bonsai-write") && err.contains("not a regular file"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious\n",
        "the link's target was written"
    );
    assert_eq!(std::fs::read(&p).unwrap(), before, "the session is as it was");
    assert!(
        std::fs::symlink_metadata(&note).unwrap().file_type().is_symlink(),
        "left alone"
    );
    // Reading the session (the note is looked at on load) is not bothered either.
    let o = run_with_deadline(&["stats", p.to_str().unwrap()], home.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_fifo_or_a_link_to_a_device_as_the_note_neither_hangs_nor_eats_memory() {
    let home = tempfile::tempdir().unwrap();
    for planted in ["fifo", "/dev/zero"] {
        let (_dir, p, note) = session_copy();
        if planted == "fifo" {
            let c = std::ffi::CString::new(note.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo with a valid C string path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        } else {
            symlink(planted, &note).unwrap();
        }
        let o = run_with_deadline(&["stats", p.to_str().unwrap()], home.path());
        assert!(o.status.success(), "{planted}: {}", String::from_utf8_lossy(&o.stderr));
        let o = run_with_deadline(&["rename", p.to_str().unwrap(), "n", "--yes"], home.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("not a regular file"),
            "{planted}: {err}"
        );
    }
}
