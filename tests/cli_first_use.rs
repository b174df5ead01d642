//! The first commands of a new user: a mistyped command, a directory for FILE, a write without
//! --yes and without a terminal, --dry-run everywhere, one line saying what was written, the
//! bundled demo left alone, and every option described in --help. On the repository's own
//! sessions: nothing here needs ../shared.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn run(args: &[&str], home: &Path) -> Output {
    common::bonsai_isolated(home)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

/// The project folder as Pi names it, and its sessions folder under `home` (made).
fn project_sessions(home: &Path, project: &Path) -> (PathBuf, PathBuf) {
    let cwd = std::fs::canonicalize(project).unwrap();
    let safe = format!(
        "--{}--",
        cwd.to_string_lossy()
            .trim_start_matches('/')
            .replace(['/', '\\', ':'], "-")
    );
    let dir = home.join(".pi/agent/sessions").join(safe);
    std::fs::create_dir_all(&dir).unwrap();
    (cwd, dir)
}

fn demo() -> PathBuf {
    common::repo().join("fixtures/demo.jsonl")
}

/// A copy of the demo in a fresh directory.
fn copy_of_demo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("2026-01-01T00-00-00-000Z_demo.jsonl");
    std::fs::copy(demo(), &p).unwrap();
    (dir, p)
}

#[test]
fn a_mistyped_command_names_the_nearest_one() {
    let home = tempfile::tempdir().unwrap();
    let o = run(&["stat", demo().to_str().unwrap()], home.path());
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `bonsai stats`"), "{err}");
    let o = run(&["compcat", "x"], home.path());
    assert!(text(&o).1.contains("`bonsai compact`"));
    // A word far from every command is still not taken for a file.
    let o = run(&["zzzzzzzz"], home.path());
    let (_, err) = text(&o);
    assert!(err.contains("not a bonsai command or a file"), "{err}");
}

#[test]
fn a_directory_stands_for_its_newest_session() {
    let home = tempfile::tempdir().unwrap();
    let (dir, p) = copy_of_demo();
    let o = run(&["stats", dir.path().to_str().unwrap()], home.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains(&p.display().to_string()), "says which file: {err}");
    let direct = text(&run(&["stats", p.to_str().unwrap()], home.path())).0;
    assert_eq!(out, direct);
}

#[test]
fn a_write_without_yes_and_without_a_terminal_shows_it_and_fails_with_the_way_out() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, p) = copy_of_demo();
    let before = std::fs::read(&p).unwrap();
    let f = p.to_str().unwrap();
    let user = format!("idx:{}", common::last_user_message(&p));
    for args in [
        vec!["label", f, "idx:1", "checked"],
        vec!["rename", f, "a name"],
        vec!["compact", f, "--keep-recent-tokens", "500", "--summarizer", "offline"],
        vec!["navigate", f, "idx:1"],
        vec!["edit", f, &user, "--hide"],
        vec!["clone", f],
    ] {
        let o = run(&args, home.path());
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{args:?}: {out}{err}");
        assert!(err.contains("--yes") && err.contains("--dry-run"), "{args:?}: {err}");
        assert!(!out.is_empty(), "{args:?}: shows what it would write");
        assert_eq!(std::fs::read(&p).unwrap(), before, "{args:?}: nothing written");
        // --dry-run: the same, and success.
        let mut dry = args.clone();
        dry.push("--dry-run");
        let o = run(&dry, home.path());
        assert!(o.status.success(), "{dry:?}: {}", text(&o).1);
        assert_eq!(std::fs::read(&p).unwrap(), before, "{dry:?}: nothing written");
    }
    assert_eq!(
        std::fs::read_dir(p.parent().unwrap()).unwrap().count(),
        1,
        "no clone file"
    );
}

#[test]
fn a_write_says_in_one_line_what_it_appended_where() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, p) = copy_of_demo();
    let f = p.to_str().unwrap();
    let o = run(&["label", f, "idx:1", "checked", "--yes"], home.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with(&format!("appended a label to {f} (1 line, ")), "{out}");
    let o = run(&["rename", f, "renamed", "--yes", "--json"], home.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["written"], true);
    assert_eq!(v["entries"][0]["type"], "session_info");
}

#[test]
fn the_bundled_demo_is_read_only_for_the_cli_too() {
    let home = tempfile::tempdir().unwrap();
    let before = std::fs::read(demo()).unwrap();
    let f = demo();
    let f = f.to_str().unwrap();
    for args in [
        vec![
            "compact",
            f,
            "--summarizer",
            "offline",
            "--keep-recent-tokens",
            "500",
            "--yes",
        ],
        vec!["label", f, "idx:1", "x", "--yes"],
        vec!["migrate", f, "--yes"],
        vec!["prune", f, "--apply", "--yes", "--force"],
    ] {
        let o = run(&args, home.path());
        let (_, err) = text(&o);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains("bundled demo") && err.contains("cp "), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(demo()).unwrap(), before);
    // Reading it, and a dry run, still work.
    assert!(run(&["stats", f], home.path()).status.success());
    assert!(
        run(&["label", f, "idx:1", "x", "--dry-run"], home.path())
            .status
            .success()
    );
}

#[test]
fn list_says_where_the_sessions_are_when_this_directory_has_none() {
    let home = tempfile::tempdir().unwrap();
    let o = run(&["list"], home.path());
    assert!(
        text(&o).0.contains("no Pi sessions found in any project"),
        "{}",
        text(&o).0
    );
    let other = home.path().join(".pi/agent/sessions/--elsewhere--");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(demo(), other.join("2026-01-01T00-00-00-000Z_x.jsonl")).unwrap();
    let o = run(&["list"], home.path());
    let (out, _) = text(&o);
    assert!(
        out.contains("1 in other projects") && out.contains("bonsai list --all"),
        "{out}"
    );
}

#[test]
fn every_option_of_every_command_is_described() {
    let home = tempfile::tempdir().unwrap();
    let names: Vec<String> = bonsai::cli::command_names();
    assert!(names.len() >= 17, "{names:?}");
    let mut bare = vec![];
    for name in &names {
        let o = run(&[name, "--help"], home.path());
        let (out, _) = text(&o);
        // Every argument and option has words after it, or on the lines below it (clap moves
        // the help under the flag when it is long).
        let lines: Vec<&str> = out.lines().collect();
        let mut section = "";
        for (k, line) in lines.iter().enumerate() {
            if line.ends_with(':') && !line.starts_with(' ') {
                section = line;
                continue;
            }
            let flag_line = line.starts_with("  ") && !line.starts_with("   ");
            if (section == "Arguments:" || section == "Options:") && flag_line {
                let t = line.trim_start();
                let beside = t.split("  ").filter(|p| !p.trim().is_empty()).count() >= 2;
                let below = lines
                    .get(k + 1)
                    .is_some_and(|n| n.starts_with("          ") && !n.trim().is_empty());
                if !beside && !below {
                    bare.push(format!("{name}: {t}"));
                }
            }
        }
        let takes_id = out.contains("<TARGET>") || out.contains("--leaf");
        if takes_id && !out.contains("idx:N") {
            bare.push(format!("{name}: an id argument without the idx:N form"));
        }
    }
    assert!(bare.is_empty(), "undescribed:\n{}", bare.join("\n"));
}

#[test]
fn compact_dry_run_says_before_calling_a_model() {
    // A configured key: the dry run still asks the model for the summary, and says so first.
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("models.json"),
        r#"{ "providers": { "fakellm": { "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "FAKE_DRY_KEY",
             "models": [{ "id": "fakecoder", "contextWindow": 200000, "maxTokens": 32000 }] } } }"#,
    )
    .unwrap();
    let (_dir, p) = copy_of_demo();
    let o = common::bonsai_isolated(home.path())
        .args([
            "compact",
            p.to_str().unwrap(),
            "--keep-recent-tokens",
            "500",
            "--model",
            "fakellm/fakecoder",
            "--dry-run",
        ])
        .env("FAKE_DRY_KEY", "sk-test")
        .env("PI_CODING_AGENT_DIR", &agent)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(
        err.contains("--dry-run still calls fakellm/fakecoder"),
        "said before calling: {err}"
    );
    // --summarizer offline never calls.
    let o = run(
        &[
            "compact",
            p.to_str().unwrap(),
            "--keep-recent-tokens",
            "500",
            "--summarizer",
            "offline",
            "--dry-run",
        ],
        home.path(),
    );
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(!text(&o).1.contains("still calls"));
}

#[test]
fn export_writes_markdown_or_json_to_a_new_file_and_never_over_one() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tour = common::repo().join("fixtures/pi-0.87.1/tour.jsonl");
    let t = tour.to_str().unwrap();
    let out = dir.path().join("tour.md");
    let o = run(&["export", t, "-o", out.to_str().unwrap()], home.path());
    assert!(o.status.success(), "{}", text(&o).1);
    let md = std::fs::read_to_string(&out).unwrap();
    assert!(md.starts_with("# ledger: fix rounding\n"), "{md}");
    assert!(md.contains("<details><summary>Thinking</summary>"));
    // An existing file is not replaced without --force.
    let o = run(&["export", t, "--tree", "-o", out.to_str().unwrap()], home.path());
    assert!(!o.status.success());
    assert!(text(&o).1.contains("exists; nothing written"), "{}", text(&o).1);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), md);
    let o = run(
        &["export", t, "--tree", "-o", out.to_str().unwrap(), "--force"],
        home.path(),
    );
    assert!(o.status.success());
    assert!(std::fs::read_to_string(&out).unwrap().contains("## Branch from"));
    // JSON on standard output: the entries of the path as the file has them.
    let o = run(&["export", t, "--format", "json", "--leaf", "idx:3"], home.path());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["entries"].as_array().unwrap().len(), 4);
    assert_eq!(v["header"]["type"], "session");
}

/// `--help` names every format export writes (it said "Markdown or JSON" while HTML worked).
#[test]
fn help_names_every_export_format() {
    let home = tempfile::tempdir().unwrap();
    let (out, _) = text(&run(&["--help"], home.path()));
    // The command's line and the lines clap wrapped it onto (indented past the names).
    let mut lines = out.lines().skip_while(|l| !l.trim_start().starts_with("export "));
    let mut text = lines.next().unwrap().to_string();
    text.extend(
        lines
            .take_while(|l| l.starts_with("                 "))
            .map(|l| format!(" {}", l.trim())),
    );
    for f in ["Markdown", "HTML", "JSON"] {
        assert!(text.contains(f), "{text}");
    }
}

/// Issue 21, item 7: "written in the last seconds" came after bonsai's own write just before
/// (a label, then a name); it is for writes that are not bonsai's.
#[test]
fn bonsais_own_last_write_is_not_taken_for_pi() {
    let home = tempfile::tempdir().unwrap();
    let (_dir, p) = copy_of_demo();
    let fs = p.to_str().unwrap();
    // Quiet for an hour: the first write has nothing to say.
    assert!(
        std::process::Command::new("touch")
            .args(["-d", "1 hour ago", fs])
            .status()
            .unwrap()
            .success()
    );
    let warned = |o: &Output| text(o).1.contains("written in the last seconds");
    let o = run(&["label", fs, "idx:3", "first", "--yes"], home.path());
    assert!(o.status.success() && !warned(&o), "{:?}", text(&o));
    let o = run(&["rename", fs, "second", "--yes"], home.path());
    assert!(o.status.success());
    assert!(!warned(&o), "bonsai's own label was taken for Pi: {:?}", text(&o));
    // A line from someone else (Pi appending): the next write says so.
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"type\":\"custom\",\"id\":\"beef0001\",\"parentId\":null,\"timestamp\":\"2026-11-25T00:00:00.000Z\",\"customType\":\"x\"}\n",
    )
    .unwrap();
    drop(f);
    let o = run(&["label", fs, "idx:3", "third", "--yes"], home.path());
    assert!(o.status.success());
    assert!(warned(&o), "a write that was not bonsai's went unsaid: {:?}", text(&o));
}

/// Issue 21, item 17: the commands with one FILE took no default where the TUI opens this
/// project's newest session; they default to it too, and say which file it is.
#[test]
fn commands_without_file_use_this_projects_newest_session() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let (cwd, sessions) = project_sessions(home.path(), project.path());
    let p = sessions.join("2026-01-01T00-00-00-000Z_demo.jsonl");
    std::fs::copy(demo(), &p).unwrap();
    let in_project = |args: &[&str]| {
        common::bonsai_isolated(home.path())
            .current_dir(&cwd)
            .args(args)
            .output()
            .unwrap()
    };
    for args in [&["stats"][..], &["tree"], &["inspect"], &["context", "--json"]] {
        let o = in_project(args);
        let (_, err) = text(&o);
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("this project's newest session") && err.contains(&p.display().to_string()),
            "{args:?}: {err}"
        );
    }
    // Without a session for the project: a clear error naming the way out.
    let elsewhere = tempfile::tempdir().unwrap();
    let o = common::bonsai_isolated(home.path())
        .current_dir(elsewhere.path())
        .args(["stats"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("has no Pi session yet") && err.contains("bonsai list"),
        "{err}"
    );
}

/// Issue 21, item 17: every delete left a .bak that nothing cleaned up. `bonsai backups` lists
/// them with size and age, and --remove removes the old ones, never those the next restore
/// needs.
#[test]
fn backups_are_listed_and_old_ones_removed_but_not_what_restore_needs() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let (cwd, dir) = project_sessions(home.path(), project.path());
    let s = dir.join("2026-01-01T00-00-00-000Z_a.jsonl");
    std::fs::copy(demo(), &s).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(90 * 86_400);
    let put = |name: &str, age: std::time::SystemTime| {
        let p = dir.join(name);
        std::fs::write(&p, b"{}\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(age)
            .unwrap();
        p
    };
    let stamp_old = put("2026-01-01T00-00-00-000Z_a.jsonl.bak-2025-08-01T00-00-00-000Z", old);
    let restored = put(
        "2026-01-01T00-00-00-000Z_a.jsonl.deleted-2025-08-01T00-00-00-000Z.jsonl.restored",
        old,
    );
    // Another session's last delete: its removed lines and backup stay, old as they are.
    let needed = put(
        "2026-01-02T00-00-00-000Z_b.jsonl.deleted-2025-08-02T00-00-00-000Z.jsonl",
        old,
    );
    let needed_bak = put("2026-01-02T00-00-00-000Z_b.jsonl.bak", old);
    let recent = put("2026-01-03T00-00-00-000Z_c.jsonl.bak", std::time::SystemTime::now());
    // A session someone saved under a backup's name: bonsai has no record of making it.
    let theirs = put("2026-01-04T00-00-00-000Z_d.jsonl.bak", old);
    common::mark_made(
        &home.path().join(".pi/agent"),
        &[&stamp_old, &restored, &needed, &needed_bak, &recent],
    );
    let run_here = |args: &[&str]| {
        common::bonsai_isolated(home.path())
            .current_dir(&cwd)
            .args(args)
            .output()
            .unwrap()
    };
    let o = run_here(&["backups"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("6 backups") && out.contains("2 older than 30 days"),
        "{out}"
    );
    assert!(out.contains("the next bonsai restore needs it"), "{out}");
    // Sizes and ages as everywhere: a 3-byte file just written is not "0.0 MB  0.0 d".
    let recent_row = out.lines().find(|l| l.contains("_c.jsonl.bak")).unwrap_or("");
    assert!(
        recent_row.contains("3 bytes") && recent_row.contains(" s "),
        "{recent_row}"
    );
    assert!(!out.contains("0.0 MB") && !out.contains("0.0 d"), "{out}");
    // Without a terminal and without --yes: nothing removed.
    let o = run_here(&["backups", "--remove"]);
    assert!(!o.status.success());
    assert!(stamp_old.exists());
    let o = run_here(&["backups", "--remove", "--yes"]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(!stamp_old.exists() && !restored.exists(), "the old ones go");
    assert!(
        needed.exists() && needed_bak.exists() && recent.exists(),
        "restore's and recent ones stay"
    );
    assert!(theirs.exists(), "a file bonsai did not make stays");
    assert!(s.exists());
}
