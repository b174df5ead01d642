//! Listing Pi's session folders with bad input in them: a file that cannot be read, a folder
//! that cannot be read, a broken link, a `.jsonl` that is not a session, an empty one. Each is
//! named with its reason (never a crash, never a silent skip), and the sessions beside them
//! are listed as before. Run as a user without the permissions (root reads anything: as root
//! the command runs as `nobody`).

mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn bad_files_and_folders_are_listed_with_the_reason() {
    let root = unsafe { libc::geteuid() } == 0;
    if root && !Path::new("/usr/bin/setpriv").exists() {
        say(
            "SKIPPED tests::listing::bad_files_and_folders_are_listed_with_the_reason: running as root and no setpriv to drop to another user",
        );
        return;
    }
    // Under /tmp, world-readable, so `nobody` can reach what it should.
    let home = tempfile::Builder::new()
        .prefix("bonsai-listing")
        .tempdir_in("/tmp")
        .unwrap();
    chmod(home.path(), 0o755);
    let agent = home.path().join(".pi/agent");
    let sessions = agent.join("sessions");
    let project = sessions.join("--tmp-acme--");
    std::fs::create_dir_all(&project).unwrap();
    for d in [
        home.path().join(".pi"),
        agent.clone(),
        sessions.clone(),
        project.clone(),
    ] {
        chmod(&d, 0o755);
    }
    let ok = project.join("2026-11-20T10-00-00-000Z_ok.jsonl");
    std::fs::copy(repo().join("fixtures/pi-0.87.1/tour.jsonl"), &ok).unwrap();
    chmod(&ok, 0o644);
    let locked = project.join("locked.jsonl");
    std::fs::copy(repo().join("fixtures/pi-0.87.1/tour.jsonl"), &locked).unwrap();
    chmod(&locked, 0o600);
    std::fs::write(project.join("notes.jsonl"), "{\"note\": \"not a session\"}\n").unwrap();
    std::fs::write(project.join("empty.jsonl"), "").unwrap();
    std::os::unix::fs::symlink(project.join("nowhere.jsonl"), project.join("dangling.jsonl")).unwrap();
    for f in ["notes.jsonl", "empty.jsonl"] {
        chmod(&project.join(f), 0o644);
    }
    let secret = sessions.join("--tmp-secret--");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::copy(repo().join("fixtures/pi-0.87.1/tour.jsonl"), secret.join("s.jsonl")).unwrap();
    chmod(&secret, 0o700);
    if !root {
        chmod(&locked, 0o000);
        chmod(&secret, 0o000);
    }
    let mut cmd = if root {
        let mut c = std::process::Command::new("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(bonsai_bin());
        c
    } else {
        std::process::Command::new(bonsai_bin())
    };
    let out = cmd
        .args(["list", "--all", "--json"])
        .env("HOME", home.path())
        .env("PI_CODING_AGENT_DIR", &agent)
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .current_dir(home.path())
        .output()
        .unwrap();
    // Put the permissions back so the folder can be removed.
    chmod(&secret, 0o755);
    chmod(&locked, 0o644);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let listed: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        vec![ok.to_str().unwrap()],
        "the readable session is listed, alone"
    );
    for (what, why) in [
        ("locked.jsonl", "cannot read it: permission denied"),
        (
            "notes.jsonl",
            "not a Pi session: its first line is not a session header",
        ),
        ("empty.jsonl", "empty: not a Pi session"),
        ("dangling.jsonl", "a broken link: what it points to is gone"),
        ("--tmp-secret--", "cannot list it: permission denied"),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("bonsai: not listed: ") && l.contains(what) && l.ends_with(why)),
            "{what}: {why}\n{stderr}"
        );
    }
}

/// `bonsai list` says sizes and times as the picker does (`57.6 kB`, `2026-11-20 10:00`), not
/// bytes and milliseconds; `--json` keeps the exact figures.
#[test]
fn the_list_says_sizes_and_times_as_the_picker_does() {
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".pi/agent");
    let project = agent.join("sessions/--work-shop--");
    std::fs::create_dir_all(&project).unwrap();
    let f = project.join("2026-11-20T10-00-00-000Z_ok.jsonl");
    std::fs::copy(repo().join("fixtures/pi-0.87.1/tour.jsonl"), &f).unwrap();
    let run = |json: bool| {
        let mut c = std::process::Command::new(bonsai_bin());
        c.args(["list", "--all"]);
        if json {
            c.arg("--json");
        }
        let o = c
            .env("HOME", home.path())
            .env("PI_CODING_AGENT_DIR", &agent)
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .current_dir(home.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let v: serde_json::Value = serde_json::from_str(&run(true)).unwrap();
    let bytes = v[0]["bytes"].as_u64().unwrap();
    let modified = v[0]["modified"].as_str().unwrap().to_string();
    let text = run(false);
    let line = text.lines().find(|l| l.contains("_ok.jsonl")).expect(&text);
    let size = bonsai::engine::units::bytes(bytes);
    assert!(size.ends_with(" kB"), "{size}");
    assert!(line.contains(&format!("  {size}  ")), "{line}");
    assert!(!line.contains("bytes"), "{line}");
    assert!(line.starts_with(&modified[..16].replace('T', " ")), "{line}");
    assert!(!line.contains(&modified), "no milliseconds: {line}");
}
