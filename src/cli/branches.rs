//! The branch chores: archive and unarchive (one appended entry each), delete-branch and
//! restore (the one rewrite of a session, with its backups).

use super::args::{RequiredSessionArg, SessionArg, WriteFlags};
use super::common::{load, print_json, resolve_ref};
use super::write_flow::{apply, confirm, preview, show};
use crate::engine::edit::plan::{Write, WriteRequest};
use crate::engine::view::archive;
use crate::engine::view::tree::Tree;
use crate::store;
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use serde_json::json;

/// A branch of a session, by its first entry: `archive`, `unarchive` and `delete-branch`.
#[derive(Args, Debug)]
pub struct BranchAtArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The branch's first entry: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct BackupsArgs {
    /// Every project's session folders, not only this directory's.
    #[arg(long)]
    pub all: bool,
    /// What counts as old, in days.
    #[arg(long, default_value_t = 30.0)]
    pub older_than: f64,
    /// Remove the old backups (asks first; --yes without asking).
    #[arg(long)]
    pub remove: bool,
    /// Remove without asking.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `bonsai archive` (`archived`) and `bonsai unarchive`.
pub fn archive(a: BranchAtArgs, archived: bool) -> Result<()> {
    let s = load(&a.session.file)?;
    let t = resolve_ref(&s, &a.target)?;
    let tree = Tree::build(&s);
    let what_branch = archive::describe(&s, &tree, t);
    archive::check(&s, t, archived).map_err(|e| eyre!("nothing written: {e}"))?;
    let req = WriteRequest {
        write: Write::Archive {
            target: s.entries[t].id.to_string(),
            archived,
        },
        seen: None,
    };
    let p = req.prepare(&s, store::clock::entropy(), store::clock::now_ms())?;
    eprintln!(
        "bonsai: {} {what_branch}: {} (Pi's leaf and context do not change; `bonsai undo` reverses it)",
        if archived { "archive" } else { "unarchive" },
        if archived {
            "hidden in bonsai's tree, shown dimmed with the archived toggle"
        } else {
            "shown in bonsai's tree again"
        }
    );
    if !a.write.yes {
        preview(&p.entries, a.write.json, json!({}));
    }
    let what = if archived {
        "an archive entry"
    } else {
        "an unarchive entry"
    };
    if !confirm(&a.write, what, &a.session.file)? {
        return Ok(());
    }
    let applied = apply(&a.session.file, &req, what, a.write.json)?;
    if a.write.json {
        show(&applied.prepared.entries, true, true, json!({}));
    }
    Ok(())
}

fn si(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub fn delete_branch(a: BranchAtArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let t = resolve_ref(&s, &a.target)?;
    let tree = Tree::build(&s);
    let plan = crate::engine::edit::delete::plan(&s, &tree, t).map_err(|e| eyre!("nothing deleted: {e}"))?;
    let summary = format!(
        "delete the branch at {}: {}, {} bytes, ~{} tokens",
        s.entries[t].id,
        si(plan.removed.len(), "entry", "entries"),
        plan.bytes,
        plan.tokens
    );
    let notes: Vec<String> = plan
        .notes
        .iter()
        .map(|r| {
            format!(
                "the {} {} (line {}) names the removed {}: it stays, naming an entry that is gone (Pi only records it)",
                r.what, s.entries[r.from].id, s.entries[r.from].line, s.entries[r.to].id
            )
        })
        .collect();
    if a.write.json {
        let removed: Vec<_> = plan
            .removed
            .iter()
            .map(
                |&i| json!({"id": &*s.entries[i].id, "line": s.entries[i].line, "type": s.entries[i].kind.type_name()}),
            )
            .collect();
        print_json(&json!({
            "written": false,
            "target": &*s.entries[t].id,
            "removed": removed,
            "bytes": plan.bytes,
            "tokens": plan.tokens,
            "notes": notes,
        }));
    } else {
        println!("{summary}");
        for &i in &plan.removed {
            let e = &s.entries[i];
            println!("  line {:>6}  {}  {}", e.line, e.id, e.kind.type_name());
        }
    }
    for n in &notes {
        eprintln!("bonsai: note: {n}");
    }
    // Said before asking: no point confirming a write that will be refused.
    if !a.write.dry_run {
        store::rewrite::check_quiet(&a.session.file)?;
    }
    let what = format!(
        "a copy without the branch at {} (the original kept as .bak, the removed lines in .deleted-*.jsonl)",
        s.entries[t].id
    );
    if !confirm(&a.write, &what, &a.session.file)? {
        return Ok(());
    }
    let d = store::rewrite::delete_branch(&a.session.file, &s.buf, &s.entries[t].id)?;
    let line = format!(
        "deleted {} ({} bytes) from {}; removed lines in {}, original in {} (`bonsai restore {}` puts it back; `bonsai backups` lists and removes old backups)",
        si(d.plan.removed.len(), "entry", "entries"),
        d.plan.bytes,
        a.session.file.display(),
        d.removed_file.display(),
        d.backup.display(),
        a.session.file.display()
    );
    if a.write.json {
        eprintln!("bonsai: {line}");
        print_json(&json!({
            "written": true,
            "removed": d.plan.removed.len(),
            "bytes": d.plan.bytes,
            "removedFile": d.removed_file,
            "backup": d.backup,
            "carried": d.carried,
            "stillOpen": d.still_open,
        }));
    } else {
        println!("{line}");
    }
    said_carried(d.carried, &d.still_open);
    Ok(())
}

/// What a rewrite carried over from writers of the old file, and who still holds it.
fn said_carried(carried: usize, still_open: &[String]) {
    if carried > 0 {
        eprintln!(
            "bonsai: note: {carried} bytes were appended to the old file during the rewrite (a writer that had it open); they were moved to the new file after it"
        );
    }
    if !still_open.is_empty() {
        eprintln!(
            "bonsai: warning: {} still had the old file open for writing after {} s; what it writes there from now on does not reach the session. If it is Pi, restart that session",
            still_open.join(", "),
            store::rewrite::HOLDERS_WAIT.as_secs()
        );
    }
}

pub fn restore(a: RestoreArgs) -> Result<()> {
    let p = store::rewrite::restore_plan(&a.session.file)?;
    let line = format!(
        "restore {} from {} ({} put back{})",
        a.session.file.display(),
        p.backup.display(),
        si(p.removed_lines, "removed line", "removed lines"),
        if p.appended > 0 {
            format!(
                ", and the {} appended since the delete kept after them",
                si(p.appended, "line", "lines")
            )
        } else {
            String::new()
        }
    );
    if a.write.json {
        print_json(
            &json!({"written": false, "backup": p.backup, "removedFile": p.removed_file, "appended": p.appended}),
        );
    } else {
        println!("{line}");
    }
    if !a.write.dry_run {
        store::rewrite::check_quiet(&a.session.file)?;
    }
    if !confirm(&a.write, "the restored session", &a.session.file)? {
        return Ok(());
    }
    let r = store::rewrite::restore(&a.session.file)?;
    let done = format!(
        "restored {} from {} (the removed lines' file is now {})",
        a.session.file.display(),
        r.backup.display(),
        r.removed_file.display()
    );
    if a.write.json {
        eprintln!("bonsai: {done}");
        print_json(
            &json!({"written": true, "backup": r.backup, "removedFile": r.removed_file, "appended": r.appended, "carried": r.carried, "stillOpen": r.still_open}),
        );
    } else {
        println!("{done}");
    }
    said_carried(r.carried, &r.still_open);
    Ok(())
}

/// `bonsai backups`: list bonsai's backups beside the sessions; remove old ones when asked.
pub fn backups(a: BackupsArgs) -> Result<()> {
    use crate::store::backups::{self, Backup};
    use std::io::{IsTerminal, Write as _};
    let cwd = crate::store::config::cwd();
    let settings = crate::store::config::load_settings(&cwd);
    let all = backups::find(&backups::folders(&cwd, &settings, a.all));
    let now = crate::store::clock::now_ms();
    let old: Vec<&Backup> = all
        .iter()
        .filter(|b| b.age_days(now) >= a.older_than && !b.needed_for_restore && b.made)
        .collect();
    let mb = crate::engine::units::bytes;
    if a.json {
        let rows: Vec<serde_json::Value> = all
            .iter()
            .map(|b| {
                serde_json::json!({
                    "path": b.path.display().to_string(),
                    "session": b.session.display().to_string(),
                    "kind": b.kind.describe(),
                    "bytes": b.bytes,
                    "ageDays": (b.age_days(now) * 10.0).round() / 10.0,
                    "neededForRestore": b.needed_for_restore,
                    "madeByBonsai": b.made,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({ "backups": rows, "old": old.len(), "olderThanDays": a.older_than })
        );
    } else if all.is_empty() {
        println!(
            "no backups of bonsai's beside {}",
            if a.all {
                "any session"
            } else {
                "this project's sessions"
            }
        );
    } else {
        for b in &all {
            println!(
                "{:>9}  {:>6}  {}  ({}{})",
                mb(b.bytes),
                crate::engine::units::age((b.age_days(now) * 86_400_000.0) as i64),
                b.path.display(),
                b.kind.describe(),
                if b.needed_for_restore {
                    "; the next bonsai restore needs it"
                } else if !b.made {
                    "; not recorded as bonsai's: never removed by bonsai"
                } else {
                    ""
                }
            );
        }
        println!(
            "{} backup{}, {}; {} older than {} days ({}) and not needed to restore",
            all.len(),
            if all.len() == 1 { "" } else { "s" },
            mb(all.iter().map(|b| b.bytes).sum()),
            old.len(),
            a.older_than,
            mb(old.iter().map(|b| b.bytes).sum())
        );
    }
    if !a.remove {
        if !old.is_empty() && !a.json {
            println!("bonsai backups --remove removes those (it asks first)");
        }
        return Ok(());
    }
    if old.is_empty() {
        eprintln!("bonsai: nothing to remove");
        return Ok(());
    }
    if !a.yes {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            color_eyre::eyre::bail!(
                "nothing removed: bonsai asks before removing and there is no terminal to ask on; pass --yes to remove without asking"
            );
        }
        eprint!(
            "bonsai: remove {} backups ({})? [y/N] ",
            old.len(),
            mb(old.iter().map(|b| b.bytes).sum())
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            eprintln!("bonsai: nothing removed");
            return Ok(());
        }
    }
    let mut failed = 0;
    for (p, r) in backups::remove(&old) {
        match r {
            Ok(()) => eprintln!("bonsai: removed {}", p.display()),
            Err(e) => {
                failed += 1;
                eprintln!("bonsai: {} not removed: {e}", p.display());
            }
        }
    }
    if failed > 0 {
        color_eyre::eyre::bail!("{failed} backups could not be removed");
    }
    Ok(())
}
