//! `bonsai search`: the sessions that say a text.

use super::out;
use crate::store::config::{cwd, load_settings};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// What to find: plain text (a newline or a quote matches as the message has it), or a
    /// regular expression with --regex. Case-insensitive unless it has a capital letter.
    pub query: String,
    /// Session files or folders to search (default: this project's sessions).
    pub paths: Vec<PathBuf>,
    /// Every project's sessions.
    #[arg(long, conflicts_with = "paths")]
    pub all: bool,
    /// QUERY is a regular expression (Rust regex syntax).
    #[arg(long)]
    pub regex: bool,
    /// Only entries by this role (tool: tool results and `!` commands).
    #[arg(long, value_parser = ["user", "assistant", "tool"])]
    pub role: Option<String>,
    /// One JSON object per hit and line: hit (its number), session, entryId, role, timestamp,
    /// snippet, match (byte range in the snippet), matches, line.
    #[arg(long)]
    pub json: bool,
    /// Resume the session of hit N (as numbered in the list) in Pi, from its folder, instead
    /// of listing. Pi opens the session at its leaf, as `pi --session` does.
    #[arg(long, value_name = "N", conflicts_with = "json")]
    pub resume: Option<usize>,
}

pub fn search(a: SearchArgs) -> Result<()> {
    use crate::engine::view::search::{Query, RoleFilter};
    use std::io::{IsTerminal, Write};
    let role = a.role.as_deref().and_then(RoleFilter::parse);
    let q = Query::new(&a.query, a.regex, role).map_err(|e| eyre!("{e}"))?;
    let roots = search_roots(&a)?;
    let files = crate::store::search::session_files(&roots);
    if files.is_empty() {
        return Err(eyre!(
            "no session files in {} (give files or folders, or --all)",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let started = std::time::Instant::now();
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Files are searched in parallel but listed in their order (each file's hits wait for
    // those before it): the hits' numbers are the same on every run, so `--resume N` means
    // the hit the user saw.
    let order: std::collections::HashMap<&std::path::Path, usize> =
        files.iter().enumerate().map(|(i, p)| (p.as_path(), i)).collect();
    let out = std::sync::Mutex::new(Listed::default());
    crate::store::search::search(&files, &q, &stop, |path, r| {
        let Ok(mut o) = out.lock() else { return };
        let at = order.get(path).copied().unwrap_or(usize::MAX);
        match r {
            Ok(h) => o.waiting.insert(at, Some((path.to_path_buf(), h))),
            Err(e) => {
                o.errors.push(format!("{}: {e}", path.display()));
                o.waiting.insert(at, None)
            }
        };
        loop {
            let n = o.next;
            let Some(next) = o.waiting.remove(&n) else { break };
            o.next += 1;
            let Some((path, hits)) = next.filter(|(_, h)| !h.is_empty()) else {
                continue;
            };
            let first = o.hits + 1;
            o.hits += hits.len();
            o.sessions += 1;
            if let Some(n) = a.resume {
                if n >= first && n <= o.hits {
                    o.chosen = Some((path.clone(), hits[n - first].clone()));
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                continue;
            }
            // Each file's hits go out together, written through a small buffer (a big file's
            // text built whole was tens of megabytes, grown and copied).
            let mut stdout = std::io::stdout();
            let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut stdout);
            let ok = write_hits(&mut w, &path, &hits, first, a.json, colour);
            // A closed pipe (`| head`) ends the search.
            if !ok || w.flush().is_err() {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    let Listed {
        hits,
        sessions,
        errors,
        chosen,
        ..
    } = out.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = a.resume {
        for e in &errors {
            eprintln!("bonsai: could not search {e}");
        }
        let Some((path, hit)) = chosen else {
            return Err(eyre!(
                "no hit {n} for {:?}: {hits} hit{} in {sessions} session{}",
                a.query,
                if hits == 1 { "" } else { "s" },
                if sessions == 1 { "" } else { "s" }
            ));
        };
        let here = cwd();
        let info = crate::store::session_info(&path);
        let run = crate::store::resume::PiRun::for_session(
            &path,
            info.as_ref().map(|i| i.cwd.as_str()),
            &load_settings(&here),
            &here,
        );
        if let Some(why) = run.refusal() {
            return Err(eyre!("{why}"));
        }
        for note in &run.notes {
            eprintln!("bonsai: {note}");
        }
        eprintln!(
            "bonsai: resuming {} in Pi at its leaf (hit {n} is entry {}, {})",
            run.shown_file(),
            crate::engine::units::one_line(&hit.entry_id),
            crate::engine::units::one_line(&hit.role)
        );
        return super::resume::exec_pi(&run);
    }
    for e in &errors {
        eprintln!("bonsai: could not search {e}");
    }
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let summary = format!(
        "{hits} hit{} in {sessions} session{} ({} file{} searched, {:.1} MB, {:.2} s)",
        if hits == 1 { "" } else { "s" },
        if sessions == 1 { "" } else { "s" },
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        bytes as f64 / 1048576.0,
        started.elapsed().as_secs_f64()
    );
    if hits == 0 {
        return Err(eyre!("no match for {:?}: {summary}", a.query));
    }
    if !a.json {
        eprintln!("bonsai: {summary}");
    }
    Ok(())
}

/// Where `bonsai search` looks: the paths given (each must exist), else this project's
/// session folder, or every project's with --all.
fn search_roots(a: &SearchArgs) -> Result<Vec<std::path::PathBuf>> {
    Ok(if !a.paths.is_empty() {
        for p in &a.paths {
            if !p.exists() {
                return Err(eyre!("{}: no such file or folder", p.display()));
            }
        }
        a.paths.clone()
    } else {
        let settings = load_settings(&cwd());
        let (dir, flat) = crate::store::config::session_dir_for(&cwd(), &settings);
        if a.all && !flat {
            vec![crate::store::config::agent_dir().join("sessions")]
        } else {
            vec![dir]
        }
    })
}

/// What `bonsai search` has listed so far, and the files searched but not yet listed.
#[derive(Default)]
struct Listed {
    hits: usize,
    sessions: usize,
    errors: Vec<String>,
    /// The next file (in the listing's order) to list.
    next: usize,
    /// Files searched ahead of their turn: their hits, or `None` (an error).
    waiting: std::collections::HashMap<usize, Option<(std::path::PathBuf, Vec<crate::engine::view::search::Hit>)>>,
    /// `--resume N`: the session and the hit.
    chosen: Option<(std::path::PathBuf, crate::engine::view::search::Hit)>,
}

/// One `--json` line (the fields in this order).
#[derive(serde::Serialize)]
struct JsonHit<'a> {
    hit: usize,
    session: &'a std::path::Path,
    #[serde(rename = "entryId")]
    entry_id: &'a str,
    role: &'a str,
    timestamp: &'a str,
    snippet: &'a str,
    #[serde(rename = "match")]
    at: [usize; 2],
    matches: usize,
    line: u64,
}

/// One file's hits, as JSON lines or as text under the file's name (the match marked);
/// false when the output is closed.
fn write_hits(
    w: &mut impl std::io::Write,
    path: &std::path::Path,
    hits: &[crate::engine::view::search::Hit],
    first: usize,
    json: bool,
    colour: bool,
) -> bool {
    let mut ok = true;
    if json {
        for (k, h) in hits.iter().enumerate() {
            let line = JsonHit {
                hit: first + k,
                session: path,
                entry_id: &h.entry_id,
                role: &h.role,
                timestamp: &h.timestamp,
                snippet: &h.snippet,
                at: [h.at.start, h.at.end],
                matches: h.matches,
                line: h.line,
            };
            ok = ok
                && serde_json::to_string(&line)
                    .is_ok_and(|t| w.write_all(out::visible(&t).as_bytes()).is_ok() && w.write_all(b"\n").is_ok());
        }
    } else {
        // Each hit on one line: its words (a session's) shown by `one_line`.
        let one = crate::engine::units::one_line;
        ok = writeln!(w, "{}", one(&path.to_string_lossy())).is_ok();
        for (k, h) in hits.iter().enumerate() {
            let (pre, m, post) = (
                one(&h.snippet[..h.at.start]),
                one(&h.snippet[h.at.clone()]),
                one(&h.snippet[h.at.end..]),
            );
            let m = if colour {
                format!("\x1b[1;33m{m}\x1b[0m")
            } else {
                format!("[{m}]")
            };
            let time = h.timestamp.get(..16).unwrap_or(&h.timestamp).replace('T', " ");
            ok = ok
                && writeln!(
                    w,
                    "{:>4}  {}  {:<13} {}  {pre}{m}{post}",
                    first + k,
                    one(&h.entry_id),
                    one(&h.role),
                    one(&time)
                )
                .is_ok();
        }
    }
    ok
}
