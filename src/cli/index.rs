//! `bonsai index`: bonsai's session indexes made, shown and removed (`store::index` says what
//! an index is and when it is used).

use crate::store::index::{self, Place, Used};
use crate::store::{config, human_bytes};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct IndexArgs {
    /// Sessions (files, or folders: their newest session) to index now (default: this
    /// project's newest session). With --status or --clear: the sessions whose index to show
    /// or remove (default: every index).
    pub paths: Vec<PathBuf>,
    /// How each index stands to its session (fresh, grown, stale, damaged, orphaned), its
    /// size, when it was last opened, and the folder's total against its limit.
    #[arg(long, conflicts_with = "clear")]
    pub status: bool,
    /// Remove the indexes (the sessions' next opens parse them whole and write new ones).
    #[arg(long)]
    pub clear: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn index(a: IndexArgs) -> Result<()> {
    let cwd = config::cwd();
    let settings = config::load_settings(&cwd);
    let place = Place::in_agent(&config::agent_dir(), &settings);
    if a.clear {
        let (files, bytes) = index::clear(&place, &a.paths)?;
        if a.json {
            println!("{}", serde_json::json!({"removed": files, "bytes": bytes}));
        } else {
            println!("removed {files} index file(s), {}", human_bytes(bytes));
        }
        return Ok(());
    }
    if a.status {
        let rows = if a.paths.is_empty() {
            index::status_all(&place)
        } else {
            a.paths
                .iter()
                .map(|p| super::common::session_file(p).map(|f| index::status_of(&place, &f)))
                .collect::<Result<Vec<_>>>()?
        };
        return print_status(&place, &rows, a.json);
    }
    if place.limit == 0 {
        return Err(eyre!(
            "the session index is off (bonsai.indexCacheMB is 0 in Pi's settings): nothing to make"
        ));
    }
    let paths = if a.paths.is_empty() {
        vec![crate::store::newest_session(&cwd, &settings).ok_or_else(|| {
            eyre!(
                "no PATH given and this project ({}) has no Pi session yet: name a session file",
                cwd.display()
            )
        })?]
    } else {
        a.paths
            .iter()
            .map(|p| super::common::session_file(p))
            .collect::<Result<Vec<_>>>()?
    };
    let mut out = Vec::new();
    for p in paths {
        let t = std::time::Instant::now();
        let o = index::open(&p, Some(&place), None, None)?;
        let read_ms = t.elapsed().as_secs_f64() * 1e3;
        let saved = if o.used.wants_saving() {
            Some(index::save(&place, &o.source, &o.session)?)
        } else {
            None
        };
        let what = match (&o.used, saved) {
            (Used::Unchanged, _) => "fresh already: nothing to do".to_string(),
            (used, Some(n)) => format!(
                "indexed ({}; {}), {} written",
                used.describe(),
                ms(read_ms),
                human_bytes(n)
            ),
            (used, None) => used.describe(),
        };
        if !a.json {
            println!("{}: {what}", p.display());
        }
        out.push(serde_json::json!({
            "session": p,
            "entries": o.session.entries.len(),
            "read": match &o.used { Used::Unchanged => "index", Used::Extended(_) => "index+appended", Used::Parsed(_) => "parsed" },
            "readMs": (read_ms * 10.0).round() / 10.0,
            "indexBytes": saved,
        }));
    }
    if a.json {
        println!("{}", serde_json::Value::Array(out));
    }
    Ok(())
}

fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("read in {:.2} s", v / 1e3)
    } else {
        format!("read in {v:.0} ms")
    }
}

fn print_status(place: &Place, rows: &[index::Status], json: bool) -> Result<()> {
    // Temporary files of killed writes count too: they take room until the next write (or
    // `--clear`) removes them.
    let leftovers = index::leftovers(&place.dir, std::time::Duration::ZERO);
    let leftover_bytes: u64 = leftovers.iter().map(|(_, n)| n).sum();
    let total: u64 = rows.iter().map(|r| r.index_bytes).sum::<u64>() + leftover_bytes;
    if json {
        println!(
            "{}",
            serde_json::json!({
                "folder": place.dir,
                "limitBytes": place.limit,
                "totalBytes": total,
                "indexes": rows,
                "leftovers": leftovers.iter().map(|(p, n)| serde_json::json!({"file": p, "bytes": n})).collect::<Vec<_>>(),
            })
        );
        return Ok(());
    }
    if !leftovers.is_empty() {
        println!(
            "leftover {:>9}  {} temporary file{} of writes that did not finish (the next index write removes those over an hour old; --clear removes them now)",
            human_bytes(leftover_bytes),
            leftovers.len(),
            if leftovers.len() == 1 { "" } else { "s" }
        );
    }
    if rows.is_empty() {
        println!("no session index in {}", place.dir.display());
    }
    let now = crate::store::clock::now_ms();
    for r in rows {
        let opened = r
            .opened_ms
            .filter(|_| r.index_bytes > 0)
            .map(|t| format!(", opened {} ago", age((now - t).max(0))))
            .unwrap_or_default();
        println!(
            "{:<8} {:>9}  {}{opened}\n         {}",
            r.state,
            if r.index_bytes > 0 {
                human_bytes(r.index_bytes)
            } else {
                "-".into()
            },
            if r.session.as_os_str().is_empty() {
                r.index_file.display()
            } else {
                r.session.display()
            },
            r.detail
        );
    }
    println!(
        "{} in {} (limit {}, bonsai.indexCacheMB{})",
        human_bytes(total),
        place.dir.display(),
        human_bytes(place.limit),
        if place.limit == 0 { ": the index is off" } else { "" }
    );
    Ok(())
}

fn age(ms: i64) -> String {
    crate::engine::units::age(ms)
}
