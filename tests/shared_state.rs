//! Issue 43: nothing trusted that can be stale or shared. Each test here failed on the code
//! before it: configuration read from a FIFO hung every command; two `bonsai trash` at once lost
//! a record; a record naming `../x` removed a file outside the trash; a linked own folder was
//! followed; a session Pi held open was trashed and split; `clean` removed a backup the next
//! restore needed; the usage cache's numbers were believed without a checksum.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A home with Pi's agent folder and one quiet session of the demo in a project folder.
fn home_with_session() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".pi/agent");
    let folder = agent.join("sessions/--proj--");
    std::fs::create_dir_all(&folder).unwrap();
    let s = folder.join("2026-01-01T00-00-00-000Z_a.jsonl");
    std::fs::copy(common::repo().join("fixtures/demo.jsonl"), &s).unwrap();
    common::quiet(&s);
    (home, agent, s)
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// `cmd` run to its end or killed at `limit`: its output and how long it took.
fn timed(mut cmd: std::process::Command, stdin: &[u8], limit: Duration) -> (std::process::Output, Duration) {
    let start = Instant::now();
    let mut c = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = c.stdin.take().unwrap();
    let _ = input.write_all(stdin);
    drop(input);
    loop {
        if c.try_wait().unwrap().is_some() {
            return (c.wait_with_output().unwrap(), start.elapsed());
        }
        if start.elapsed() > limit {
            let _ = c.kill();
            let o = c.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stderr: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_fifo_wherever_configuration_is_read_is_named_and_never_waited_on() {
    let (home, agent, s) = home_with_session();
    let project = home.path().join("proj");
    std::fs::create_dir_all(project.join(".pi")).unwrap();
    let fifos = [
        agent.join("settings.json"),
        agent.join("models.json"),
        agent.join("auth.json"),
        project.join(".pi/settings.json"),
    ];
    for f in &fifos {
        mkfifo(f);
    }
    let session = s.to_str().unwrap();
    let hello = format!(
        "{{\"type\":\"hello\",\"id\":1,\"protocol\":2,\"cwd\":{:?},\"sessionFile\":{session:?}}}\n",
        project.to_str().unwrap()
    );
    let runs: Vec<(Vec<&str>, Vec<u8>)> = vec![
        (vec!["tree", session], vec![]),
        (vec!["context", session], vec![]),
        (vec!["stats", session], vec![]),
        (vec!["usage"], vec![]),
        (vec!["list"], vec![]),
        (vec!["serve", "--stdio"], hello.into_bytes()),
    ];
    for (args, stdin) in runs {
        let mut c = common::bonsai_isolated(home.path());
        c.current_dir(&project).args(&args);
        let (o, took) = timed(c, &stdin, Duration::from_secs(10));
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(took < Duration::from_secs(1), "{args:?} took {took:?}");
        // Each file this command reads is named as a FIFO; settings are read by every one.
        for f in [&fifos[0], &fifos[3]] {
            assert!(
                all.contains(&format!("{}: a FIFO (named pipe)", f.display())),
                "{args:?} does not name {}: {all}",
                f.display()
            );
        }
    }
}
