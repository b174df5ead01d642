//! `bonsai usage`: what the sessions' model calls used and cost, by day, month, session,
//! project or model. Its arguments live beside it.

use crate::engine::usage::{self, By, Period, Report, Totals};
use clap::{Args, ValueEnum};
use color_eyre::eyre::{Result, eyre};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Group {
    Day,
    Month,
    Session,
    Project,
    Model,
}

#[derive(Args, Debug)]
pub struct UsageArgs {
    /// Session files or folders (default: Pi's sessions folder, every project, read through
    /// bonsai's usage cache).
    pub paths: Vec<PathBuf>,
    /// One row per day, month, session file, project (the session's cwd) or model.
    #[arg(long, value_enum, default_value_t = Group::Day)]
    pub by: Group,
    /// Only calls on or after this day (YYYY-MM-DD or YYYYMMDD, in --timezone).
    #[arg(long)]
    pub since: Option<String>,
    /// Only calls on or before this day.
    #[arg(long)]
    pub until: Option<String>,
    /// The time zone days and months are in (IANA name, e.g. Europe/Berlin; default: the
    /// system's).
    #[arg(long, short = 'z')]
    pub timezone: Option<String>,
    /// Each row's models on lines of their own.
    #[arg(long)]
    pub breakdown: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn totals_json(t: &Totals) -> Value {
    json!({
        "input": t.tokens.input, "output": t.tokens.output,
        "cacheRead": t.tokens.cache_read, "cacheWrite": t.tokens.cache_write,
        "totalTokens": t.tokens.total(), "cost": t.cost, "estimatedCost": t.estimated,
        "calls": t.calls, "unpricedCalls": t.unpriced, "cacheSaved": t.cache_saved,
        "cacheReadShare": t.cache_read_share(),
    })
}

/// Whole numbers with thousands separators.
fn n(x: f64) -> String {
    crate::engine::units::tokens(x)
}

fn calls(k: u64) -> String {
    crate::engine::units::plural(k, "call", "calls")
}

use crate::engine::units::money;

/// The rows' calls and the summary and other calls together: everything spent.
fn all_calls(r: &Report) -> Totals {
    let mut all = r.total.clone();
    for t in r.side_calls.values() {
        all.merge(t);
    }
    all
}

fn by_of(g: Group) -> By {
    match g {
        Group::Day => By::Day,
        Group::Month => By::Month,
        Group::Session => By::Session,
        Group::Project => By::Project,
        Group::Model => By::Model,
    }
}

/// A row: its totals and each model's part.
type Row = (Totals, std::collections::BTreeMap<String, Totals>);

/// Rows in the order a reader wants: days and months in time order, the rest by cost.
fn ordered(r: &Report, by: By) -> Vec<(&String, &Row)> {
    let mut rows: Vec<_> = r.rows.iter().collect();
    if !matches!(by, By::Day | By::Month) {
        rows.sort_by(|a, b| b.1.0.cost.total_cmp(&a.1.0.cost).then(a.0.cmp(b.0)));
    }
    rows
}

pub fn usage(a: UsageArgs) -> Result<()> {
    let since = match &a.since {
        Some(s) => Some(usage::date_key(s).ok_or_else(|| eyre!("--since {s:?} is not a day (YYYY-MM-DD)"))?),
        None => None,
    };
    let until = match &a.until {
        Some(s) => Some(usage::date_key(s).ok_or_else(|| eyre!("--until {s:?} is not a day (YYYY-MM-DD)"))?),
        None => None,
    };
    let tz = crate::store::usage::time_zone(a.timezone.as_deref()).map_err(|e| eyre!(e))?;
    let cwd = crate::store::config::cwd();
    let settings = crate::store::config::load_settings(&cwd);
    let agent = crate::store::config::agent_dir();
    let models = crate::store::config::load_registry(&agent);
    // Pi's own folders go through bonsai's usage cache (the usage view's too); paths given are
    // read as they are.
    let (sessions, skipped) = if a.paths.is_empty() {
        crate::store::usage::read_sessions_cached(
            &agent,
            &crate::store::sessions::session_folders(&cwd, &settings, true),
        )
    } else {
        crate::store::usage::read_sessions(&a.paths)
    };
    let by = by_of(a.by);
    let zone = tz.iana_name().unwrap_or("the system's zone").to_string();
    let r = usage::report(&sessions, by, &Period { since, until, tz }, &models);
    // An unnamed session's row shows bonsai's title, from the listing (its cache makes this a
    // stat per file), marked `~`.
    let mut made: std::collections::HashMap<String, String> = Default::default();
    if matches!(by, By::Session) && r.sessions.values().any(|(n, _)| n.is_none()) {
        for i in crate::store::sessions::list_sessions_in(&agent, &cwd, &settings, true) {
            if let Some(t) = i.made_title.filter(|_| i.name.is_none()) {
                made.insert(i.path.to_string_lossy().to_string(), t);
            }
        }
    }
    let made_title = |k: &str| made.get(k).cloned();
    if a.json {
        let rows: Vec<Value> = ordered(&r, by)
            .into_iter()
            .map(|(k, (t, models))| {
                let mut row = totals_json(t);
                row["key"] = json!(k);
                if let Some(ms) = t.last_ms {
                    row["lastActivity"] = json!(crate::engine::load::js::iso_from_ms(ms));
                }
                if let Some((name, project)) = r.sessions.get(k) {
                    row["name"] = json!(name);
                    row["project"] = json!(project);
                    match (name, made_title(k)) {
                        (Some(n), _) => (row["title"], row["titleBy"]) = (json!(n), json!("name")),
                        (None, Some(t)) => (row["title"], row["titleBy"]) = (json!(t), json!("bonsai")),
                        (None, None) => {}
                    }
                }
                if a.breakdown {
                    row["models"] = models
                        .iter()
                        .map(|(m, t)| {
                            let mut v = totals_json(t);
                            v["model"] = json!(m);
                            v
                        })
                        .collect();
                }
                row
            })
            .collect();
        let side: serde_json::Map<String, Value> =
            r.side_calls.iter().map(|(k, t)| (k.clone(), totals_json(t))).collect();
        println!(
            "{}",
            json!({
                "by": format!("{:?}", a.by).to_lowercase(), "timezone": zone,
                "rows": rows, "total": totals_json(&r.total),
                "summaries": side, "allCalls": totals_json(&all_calls(&r)),
                "copies": totals_json(&r.copies), "undatedCalls": r.undated,
                "sessions": sessions.len(),
                "skipped": skipped.iter().map(|s| json!({"path": s.path, "reason": s.reason})).collect::<Vec<_>>(),
            })
        );
        return Ok(());
    }
    print_text(&a, &r, by, &zone, sessions.len(), &made);
    for s in &skipped {
        eprintln!("skipped {}: {}", s.path.display(), s.reason);
    }
    Ok(())
}

fn print_text(
    a: &UsageArgs,
    r: &Report,
    by: By,
    zone: &str,
    sessions: usize,
    made: &std::collections::HashMap<String, String>,
) {
    let head = match by {
        By::Day => "day",
        By::Month => "month",
        By::Session => "session",
        By::Project => "project",
        By::Model => "model",
    };
    if r.total.calls == 0 && r.side_calls.is_empty() {
        println!("no model calls with usage in {sessions} session file(s)");
        return;
    }
    let row = |key: &str, t: &Totals| {
        format!(
            "{key:<12} {:>7} {:>13} {:>11} {:>13} {:>12} {:>11}{}",
            n(t.calls as f64),
            n(t.tokens.input),
            n(t.tokens.output),
            n(t.tokens.cache_read),
            n(t.tokens.cache_write),
            money(t.cost),
            if t.estimated > 0.0 { " (est.)" } else { "" }
        )
    };
    println!(
        "{head:<12} {:>7} {:>13} {:>11} {:>13} {:>12} {:>11}",
        "calls", "input", "output", "cache read", "cache write", "cost"
    );
    for (k, (t, models)) in ordered(r, by) {
        // A session's name and path are its own words: on one line, controls shown.
        let label = match r.sessions.get(k) {
            Some((Some(name), _)) => format!("{k}  ({name})"),
            Some((None, _)) if made.contains_key(k) => format!("{k}  (~ {})", made[k]),
            _ => k.clone(),
        };
        let label = crate::engine::units::one_line(&label).into_owned();
        // A long key (a path, a project) gets its own line above the numbers.
        if label.chars().count() > 12 {
            println!("{label}");
            println!("{}", row("", t));
        } else {
            println!("{}", row(&label, t));
        }
        if a.breakdown {
            for (m, t) in models {
                println!("  {m}");
                println!("{}", row("", t));
            }
        }
    }
    println!("{}", row("total", &r.total));
    println!();
    println!(
        "days in {zone}; {sessions} session file(s); cost as Pi recorded it{}",
        if r.total.estimated > 0.0 {
            format!(
                ", {} of it estimated from the model table (calls without a recorded cost)",
                money(r.total.estimated)
            )
        } else {
            String::new()
        }
    );
    println!(
        "cache: {:.0}% of prompt tokens read from the cache, {} saved at the models' prices",
        r.total.cache_read_share() * 100.0,
        money(r.total.cache_saved)
    );
    for (kind, t) in &r.side_calls {
        println!(
            "{kind} calls (not in the rows): {}, {} tokens, {}",
            calls(t.calls),
            n(t.tokens.total()),
            money(t.cost)
        );
    }
    if !r.side_calls.is_empty() {
        let all = all_calls(r);
        println!(
            "all calls: {}, {} tokens, {} (the rows and the calls above)",
            calls(all.calls),
            n(all.tokens.total()),
            money(all.cost)
        );
    }
    if r.copies.calls > 0 {
        println!(
            "copies left out: {} found again in forks or clones ({} tokens, {})",
            calls(r.copies.calls),
            n(r.copies.tokens.total()),
            money(r.copies.cost)
        );
    }
    if r.total.unpriced > 0 {
        println!(
            "{} calls have no recorded cost and a model not in the table: counted at $0",
            r.total.unpriced
        );
    }
    if r.undated > 0 {
        println!("{} calls without a time: in the total, in no row", r.undated);
    }
}
