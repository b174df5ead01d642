//! `bonsai trash` and `bonsai clean`: sessions out of Pi's way and back, and old leftovers
//! removed after a question that says what and how much. Their arguments live beside them.

use crate::store::{backups, trash};
use clap::Args;
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::json;
use std::io::{IsTerminal, Write as _};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TrashArgs {
    /// Sessions to move into the trash (`<agentDir>/bonsai/trash/`, with their backups); Pi's
    /// /resume no longer lists them.
    pub files: Vec<PathBuf>,
    /// What is in the trash.
    #[arg(long, conflicts_with_all = ["files", "restore", "empty"])]
    pub list: bool,
    /// Put these back where they were (a name from --list, or the original path).
    #[arg(long, num_args = 1.., conflicts_with_all = ["files", "empty"])]
    pub restore: Vec<String>,
    /// With --restore: when Pi wrote at the old path after the session was trashed (its
    /// entries, no header), put the session back with those lines after it.
    #[arg(long, requires = "restore")]
    pub join: bool,
    /// Remove what is in the trash for good (asks first; with --older-than, only older).
    #[arg(long, conflicts_with = "files")]
    pub empty: bool,
    /// With --empty: only sessions trashed longer ago than this (30d, 12h, 2w; bare: days).
    #[arg(long, value_parser = parse_age)]
    pub older_than: Option<f64>,
    /// Do not ask.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CleanArgs {
    /// Session folders or files whose leftovers to clean (default: every project's, the
    /// exports bonsai wrote, and the trash).
    pub paths: Vec<PathBuf>,
    /// What counts as old (30d, 12h, 2w; bare: days).
    #[arg(long, value_parser = parse_age, default_value = "30d")]
    pub older_than: f64,
    /// Say what would go, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The folders to clean, and the sessions when files were named: every project's with no
/// path, else the paths' folders.
fn clean_scope(
    paths: &[PathBuf],
    cwd: &std::path::Path,
    settings: &crate::engine::settings::Settings,
) -> Result<(Vec<PathBuf>, Option<Vec<PathBuf>>)> {
    Ok(if paths.is_empty() {
        (backups::folders(cwd, settings, true), None)
    } else {
        let mut dirs = vec![];
        let mut files = vec![];
        for p in paths {
            let abs = std::path::absolute(p)?;
            if abs.is_dir() {
                dirs.push(abs);
            } else {
                dirs.push(abs.parent().map(PathBuf::from).unwrap_or_default());
                files.push(abs);
            }
        }
        dirs.sort();
        dirs.dedup();
        (dirs, (!files.is_empty()).then_some(files))
    })
}

/// The leftovers listed (JSON or text), with their total.
fn print_leftovers(items: &[Leftover], bytes: u64, kept_for_restore: usize, a: &CleanArgs) {
    if a.json {
        let rows: Vec<_> = items
            .iter()
            .map(|i| json!({"path": i.path, "what": i.what, "bytes": i.bytes, "ageDays": (i.days * 10.0).round() / 10.0}))
            .collect();
        println!(
            "{}",
            json!({"old": rows, "bytes": bytes, "olderThanDays": a.older_than, "dryRun": a.dry_run,
                   "keptForRestore": kept_for_restore})
        );
    } else {
        for i in items {
            println!(
                "{:>9}  {:>6}  {}  ({})",
                mb(i.bytes),
                crate::engine::units::age((i.days * 86_400_000.0) as i64),
                i.path.display(),
                i.what
            );
        }
        println!(
            "{} leftover{} older than {} days, {}{}",
            items.len(),
            if items.len() == 1 { "" } else { "s" },
            a.older_than,
            mb(bytes),
            if kept_for_restore > 0 {
                format!("; {kept_for_restore} backups kept: the next bonsai restore needs them")
            } else {
                String::new()
            }
        );
    }
}

/// Remove what was listed and agreed to; returns how many could not be removed (each said).
fn remove_leftovers(
    agent: &std::path::Path,
    old_exports: &[crate::store::exports::Export],
    old_backups: &[backups::Backup],
    items: Vec<Leftover>,
) -> usize {
    let mut failed = 0;
    for (p, r) in crate::store::exports::remove(agent, old_exports) {
        if let Err(e) = r {
            failed += 1;
            eprintln!("bonsai: {} not removed: {e}", p.display());
        }
    }
    for (p, r) in backups::remove(&old_backups.iter().collect::<Vec<_>>()) {
        if let Err(e) = r {
            failed += 1;
            eprintln!("bonsai: {} not removed: {e}", p.display());
        }
    }
    let t: Vec<trash::Trashed> = items.into_iter().filter_map(|i| i.trashed).collect();
    for (t, r) in trash::empty(agent, &t) {
        if let Err(e) = r {
            failed += 1;
            eprintln!("bonsai: {} not removed: {e}", t.name);
        }
    }
    failed
}

/// Text given as an age that is none (the text as typed, quoted).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgeError {
    #[error("{0:?} is not an age (30d, 12h, 2w, or days)")]
    NotANumber(String),
    #[error("{0:?}: the unit is d, h, m or w")]
    UnknownUnit(String),
    #[error("{0:?} is not an age")]
    OutOfRange(String),
}

/// An age as days: `30d`, `12h`, `2w`, `45m`, or a bare number of days.
pub fn parse_age(s: &str) -> Result<f64, AgeError> {
    let s = s.trim();
    let (n, unit) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&s[..i], &s[i..]),
        None => (s, "d"),
    };
    let n: f64 = n.trim().parse().map_err(|_| AgeError::NotANumber(s.to_string()))?;
    let days = match unit {
        "d" | "day" | "days" => n,
        "h" | "hour" | "hours" => n / 24.0,
        "m" | "min" | "minutes" => n / 1440.0,
        "w" | "week" | "weeks" => n * 7.0,
        _ => return Err(AgeError::UnknownUnit(s.to_string())),
    };
    if !(days >= 0.0 && days.is_finite()) {
        return Err(AgeError::OutOfRange(s.to_string()));
    }
    Ok(days)
}

fn mb(bytes: u64) -> String {
    crate::engine::units::bytes(bytes)
}

/// Ask on the terminal; an answer other than yes, or no terminal to ask on, is a no.
fn ask(question: &str, yes: bool) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        bail!("nothing removed: bonsai asks first and there is no terminal to ask on; pass --yes to go ahead");
    }
    eprint!("bonsai: {question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// Ask when there is a terminal; without one the answer is no (the caller says how to say yes).
fn ask_or_no(question: &str) -> Result<bool> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(false);
    }
    ask(question, false)
}

fn age_days(at_ms: i64) -> f64 {
    (crate::store::clock::now_ms() - at_ms) as f64 / 86_400_000.0
}

pub fn trash_cmd(a: TrashArgs) -> Result<()> {
    let agent = crate::store::config::agent_dir();
    if !a.restore.is_empty() {
        for which in &a.restore {
            let t = match trash::restore_joining(&agent, which, a.join) {
                Err(trash::TrashError::PiWroteAfter(at, bytes)) => {
                    let q = format!(
                        "Pi wrote {bytes} bytes at {} after the session was trashed; put the session back with them after it?",
                        at.display()
                    );
                    if !ask_or_no(&q)? {
                        bail!("{}", trash::TrashError::PiWroteAfter(at, bytes));
                    }
                    trash::restore_joining(&agent, which, true)
                }
                r => r,
            }
            .map_err(|e| eyre!(e.to_string()))?;
            println!("restored {}", t.original.display());
            for (inside, original) in &t.side {
                // `inside` is "<ms>-<the name it had>": a side file whose name was taken
                // came back under another.
                let was = inside.split_once('-').map_or(inside.as_str(), |(_, n)| n);
                let now = original.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
                if now != was {
                    println!(
                        "  {} came back as {} (its name was taken)",
                        crate::cli::out::visible(was),
                        crate::cli::out::visible(&now)
                    );
                }
            }
        }
        return Ok(());
    }
    if a.empty {
        let all = trash::list(&agent);
        let old: Vec<trash::Trashed> = all
            .into_iter()
            .filter(|t| a.older_than.is_none_or(|d| age_days(t.at_ms) >= d))
            .collect();
        if old.is_empty() {
            println!("the trash has nothing to remove");
            return Ok(());
        }
        let bytes: u64 = old.iter().map(|t| trash::size(&agent, t)).sum();
        let q = format!(
            "remove {} trashed session{} for good ({})?",
            old.len(),
            if old.len() == 1 { "" } else { "s" },
            mb(bytes)
        );
        if !ask(&q, a.yes)? {
            eprintln!("bonsai: nothing removed");
            return Ok(());
        }
        let mut failed = 0;
        for (t, r) in trash::empty(&agent, &old) {
            match r {
                Ok(()) => println!("removed {} (was {})", t.name, t.original.display()),
                Err(e) => {
                    failed += 1;
                    eprintln!("bonsai: {} not removed: {e}", t.name);
                }
            }
        }
        if failed > 0 {
            bail!("{failed} trashed sessions could not be removed");
        }
        return Ok(());
    }
    if a.list || a.files.is_empty() {
        let all = trash::list(&agent);
        if a.json {
            let rows: Vec<_> = all
                .iter()
                .map(|t| {
                    json!({"name": t.name, "original": t.original, "trashedAt": crate::engine::load::js::iso_from_ms(t.at_ms),
                           "bytes": trash::size(&agent, t), "sideFiles": t.side.len(), "recorded": t.recorded})
                })
                .collect();
            println!("{}", json!({ "trash": rows, "folder": trash::trash_dir(&agent) }));
        } else if all.is_empty() {
            println!("the trash is empty ({})", trash::trash_dir(&agent).display());
        } else {
            for t in &all {
                println!(
                    "{:>9}  {:>6}  {}  ({} {})",
                    mb(trash::size(&agent, t)),
                    crate::engine::units::age((age_days(t.at_ms) * 86_400_000.0) as i64),
                    t.name,
                    if t.recorded {
                        "was"
                    } else {
                        "no record of it: goes back, by its header's project, to"
                    },
                    t.original.display()
                );
            }
            println!("bonsai trash --restore NAME puts one back; --empty removes them for good");
        }
        return Ok(());
    }
    let now = crate::store::clock::now_ms();
    let mut failed = 0;
    for f in &a.files {
        match trash::trash(&agent, f, now) {
            Ok(t) => println!(
                "moved {} to the trash{} (bonsai trash --restore {} puts it back)",
                t.original.display(),
                if t.side.is_empty() {
                    String::new()
                } else {
                    format!(
                        " with {} backup file{}",
                        t.side.len(),
                        if t.side.len() == 1 { "" } else { "s" }
                    )
                },
                t.name
            ),
            Err(e) => {
                failed += 1;
                eprintln!("bonsai: {e}");
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} sessions not moved", a.files.len());
    }
    Ok(())
}

/// One thing `clean` would remove.
struct Leftover {
    path: PathBuf,
    what: String,
    bytes: u64,
    days: f64,
    trashed: Option<trash::Trashed>,
}

pub fn clean(a: CleanArgs) -> Result<()> {
    let agent = crate::store::config::agent_dir();
    let cwd = crate::store::config::cwd();
    let settings = crate::store::config::load_settings(&cwd);
    let (folders, only) = clean_scope(&a.paths, &cwd, &settings)?;
    let now = crate::store::clock::now_ms();
    // The folders' backups, read once: what is listed and asked about is what goes.
    let found = backups::find(&folders);
    let kept_for_restore = found.iter().filter(|b| b.needed_for_restore).count();
    let old_backups: Vec<backups::Backup> = found
        .into_iter()
        .filter(|b| only.as_ref().is_none_or(|f| f.contains(&b.session)))
        // Only files bonsai's record says it made: `clean DIR` never takes a session someone
        // saved under a backup's name.
        .filter(|b| b.age_days(now) >= a.older_than && !b.needed_for_restore && b.made)
        .collect();
    let mut items: Vec<Leftover> = old_backups
        .iter()
        .map(|b| Leftover {
            what: b.kind.describe().to_string(),
            days: b.age_days(now),
            bytes: b.bytes,
            path: b.path.clone(),
            trashed: None,
        })
        .collect();
    // The documents bonsai exported from these sessions, still as it wrote them.
    let now_ms = crate::store::clock::now_ms();
    let old_exports: Vec<crate::store::exports::Export> = crate::store::exports::list(&agent)
        .into_iter()
        .filter(|e| e.age_days(now_ms) >= a.older_than)
        .filter(|e| match &only {
            Some(files) => files.contains(&e.session),
            None => a.paths.is_empty() || folders.iter().any(|d| e.session.starts_with(d)),
        })
        .collect();
    for e in &old_exports {
        items.push(Leftover {
            path: e.path.clone(),
            what: format!("an export of {}", e.session.display()),
            bytes: e.bytes,
            days: e.age_days(now_ms),
            trashed: None,
        });
    }
    if a.paths.is_empty() {
        for t in trash::list(&agent) {
            if age_days(t.at_ms) >= a.older_than {
                items.push(Leftover {
                    path: trash::trash_dir(&agent).join(&t.name),
                    what: format!("trashed session (was {})", t.original.display()),
                    bytes: trash::size(&agent, &t),
                    days: age_days(t.at_ms),
                    trashed: Some(t),
                });
            }
        }
    }
    let bytes: u64 = items.iter().map(|i| i.bytes).sum();
    print_leftovers(&items, bytes, kept_for_restore, &a);
    if a.dry_run || items.is_empty() {
        return Ok(());
    }
    let q = format!(
        "remove {} leftover{} ({})?",
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        mb(bytes)
    );
    if !ask(&q, a.yes)? {
        eprintln!("bonsai: nothing removed");
        return Ok(());
    }
    let failed = remove_leftovers(&agent, &old_exports, &old_backups, items);
    if failed > 0 {
        bail!("{failed} leftovers could not be removed");
    }
    if !a.json {
        println!("removed, {} freed", mb(bytes));
    }
    Ok(())
}
