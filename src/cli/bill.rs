//! `bonsai bill`: what recorded sessions would have cost under each live policy, every call
//! replayed as `bonsai serve` would have answered it (`engine::live::bill`) and priced with
//! the model's prices under prefix caching, beside what Pi recorded.

use super::common::print_json;
use crate::engine::live::bill::{Bill, PolicyBill};
use crate::engine::live::{CallEnv, LivePolicy, LiveSettings, Prices};
use crate::engine::load::models::{self, Registry};
use crate::engine::settings::Settings;
use crate::store::config::{agent_dir, load_registry, load_settings};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct BillArgs {
    /// Session files or folders (default: this project's newest session).
    pub paths: Vec<PathBuf>,
    /// A policy to price: off, output, output-compat, zones (repeat it; default: off and the
    /// policy in Pi's settings, zones when that is off).
    #[arg(long = "policy", value_name = "POLICY", value_parser = ["off", "output", "output-compat", "zones"])]
    pub policies: Vec<String>,
    /// Print JSON instead of text (every call with its figures). Each policy's `factsKept`
    /// counts the specifics the replies used again (paths, ids, URLs, names with `_`) after
    /// they first appeared on the path: how many were in what was sent, and how many within
    /// reach of `bonsai_recall` (the policy's tool, when it has one).
    #[arg(long)]
    pub json: bool,
}

/// The policies to price: those asked for, else off and the one Pi's settings name.
fn policies_of(a: &BillArgs, live: &LiveSettings) -> Vec<LiveSettings> {
    let mut names: Vec<LivePolicy> = a.policies.iter().filter_map(|p| LivePolicy::parse(p)).collect();
    if names.is_empty() {
        names.push(LivePolicy::Off);
        names.push(if live.policy == LivePolicy::Off {
            LivePolicy::Zones
        } else {
            live.policy
        });
    }
    names.dedup();
    names.into_iter().map(|p| live.with_policy(p)).collect()
}

/// A call's window, reserve and prices by its model, from Pi's registry and settings.
fn env_of<'a>(registry: &'a Registry, settings: &'a Settings) -> impl Fn(Option<(&str, &str)>) -> CallEnv + 'a {
    move |m| {
        let model = m.and_then(|(p, id)| registry.find(p, id));
        CallEnv {
            context_window: models::window_or_default(model.map(|x| x.context_window)),
            reserve_tokens: settings.reserve_tokens(m),
            prices: model.map(Prices::of_model),
        }
    }
}

/// The session files to bill.
fn files_of(a: &BillArgs) -> Result<Vec<PathBuf>> {
    if a.paths.is_empty() {
        let cwd = crate::store::config::cwd();
        let settings = load_settings(&cwd);
        let f = crate::store::newest_session(&cwd, &settings).ok_or_else(|| {
            eyre!(
                "no PATH given and this project ({}) has no Pi session yet: name a session file or folder",
                cwd.display()
            )
        })?;
        return Ok(vec![f]);
    }
    let (files, skipped) = crate::store::usage::files_under(&a.paths);
    for s in &skipped {
        eprintln!("bonsai: {}: {}", s.path.display(), s.reason);
    }
    let files: Vec<PathBuf> = files
        .into_iter()
        .filter(|f| crate::store::sessions::session_info(f).is_some())
        .collect();
    if files.is_empty() {
        return Err(eyre!(
            "no Pi session (a *.jsonl with a session header) in the paths given"
        ));
    }
    Ok(files)
}

pub fn bill(a: BillArgs) -> Result<()> {
    let registry = load_registry(&agent_dir());
    let files = files_of(&a)?;
    let mut out = Vec::new();
    let mut totals: Vec<PolicyBill> = Vec::new();
    for file in &files {
        let s = crate::store::load_session(file).map_err(|e| eyre!("{}: {e}", file.display()))?;
        // Pi runs in the session's folder and reads that project's settings.
        let project = PathBuf::from(s.header.cwd.as_deref().unwrap_or("."));
        let settings = load_settings(if project.is_dir() { &project } else { Path::new(".") });
        let live = settings.live_settings();
        let policies = policies_of(&a, &live);
        let b = crate::engine::live::bill::bill(&s, &policies, &registry, &env_of(&registry, &settings));
        if totals.is_empty() {
            totals = b
                .policies
                .iter()
                .map(|p| PolicyBill {
                    policy: p.policy.clone(),
                    ..PolicyBill::default()
                })
                .collect();
        }
        for (t, p) in totals.iter_mut().zip(&b.policies) {
            t.calls += p.calls;
            t.sent += p.sent;
            t.cached += p.cached;
            t.output += p.output;
            t.cost += p.cost;
            t.steps += p.steps;
            t.unpriced += p.unpriced;
            t.facts.add(&p.facts);
        }
        if a.json {
            out.push(session_json(file, &s, &b));
        } else {
            print_text(file, &b);
        }
    }
    if a.json {
        print_json(&json!({
            "sessions": out,
            "total": totals.iter().map(|p| policy_json(p, None, None)).collect::<Vec<_>>(),
        }));
    } else if files.len() > 1 {
        println!("all {} sessions", files.len());
        print_table(&totals);
    }
    Ok(())
}

fn policy_json(p: &PolicyBill, s: Option<&crate::engine::load::session::Session>, base: Option<f64>) -> Value {
    let mut v = json!({
        "policy": p.policy,
        "calls": p.calls,
        "tokensSent": p.sent,
        "tokensCached": p.cached,
        "cachedShare": p.cached_share(),
        "outputTokens": p.output,
        "bill": p.cost,
        "steps": p.steps,
        "unpricedCalls": p.unpriced,
        "factsKept": {
            "used": p.facts.used,
            "sent": p.facts.sent,
            "reachable": p.facts.reachable,
        },
    });
    if let Some(b) = base.filter(|b| *b > 0.0) {
        v["againstOff"] = json!(p.cost / b);
    }
    if let Some(s) = s {
        v["perCall"] = p
            .per_call
            .iter()
            .map(|c| {
                json!({
                    "entryId": s.entries[c.entry].id.to_string(),
                    "sent": c.sent,
                    "cached": c.cached,
                    "output": c.output,
                    "cost": c.cost,
                    "step": c.step.map(|r| r.name()),
                })
            })
            .collect();
    }
    v
}

fn off_cost(b: &Bill) -> Option<f64> {
    b.policies.iter().find(|p| p.policy == "off").map(|p| p.cost)
}

fn session_json(file: &Path, s: &crate::engine::load::session::Session, b: &Bill) -> Value {
    let r = &b.recorded;
    let prompt = r.tokens.input + r.tokens.cache_read + r.tokens.cache_write;
    json!({
        "file": file.display().to_string(),
        "overheadTokens": b.overhead,
        "recorded": {
            "calls": r.calls,
            "bill": r.cost,
            "input": r.tokens.input,
            "cacheRead": r.tokens.cache_read,
            "cacheWrite": r.tokens.cache_write,
            "output": r.tokens.output,
            "cacheHits": if prompt > 0.0 { r.tokens.cache_read / prompt } else { 0.0 },
            "summaryCalls": r.summary_calls,
            "summaryBill": r.summary_cost,
            "unpricedCalls": r.unpriced,
            "oddUsageCalls": r.odd,
        },
        "policies": b.policies.iter().map(|p| policy_json(p, Some(s), off_cost(b))).collect::<Vec<_>>(),
    })
}

use crate::engine::live::bill::usd;

fn print_text(file: &Path, b: &Bill) {
    let r = &b.recorded;
    let prompt = r.tokens.input + r.tokens.cache_read + r.tokens.cache_write;
    println!(
        "{} · system prompt and tools ~{} tokens",
        file.display(),
        crate::engine::edit::prune::thousands(b.overhead)
    );
    println!(
        "recorded by Pi: {} for {} replies (cache hits {:.0} %){}",
        usd(r.cost),
        r.calls,
        if prompt > 0.0 {
            100.0 * r.tokens.cache_read / prompt
        } else {
            0.0
        },
        if r.summary_calls > 0 {
            format!(", {} for {} summary calls", usd(r.summary_cost), r.summary_calls)
        } else {
            String::new()
        }
    );
    print_table(&b.policies);
    let odd = r.odd.max(b.policies.iter().map(|p| p.odd as u64).max().unwrap_or(0));
    if odd > 0 {
        eprintln!(
            "bonsai: {}: {} recorded usage with a missing, negative or not finite figure, counted as 0",
            crate::engine::units::one_line(&file.to_string_lossy()),
            crate::engine::units::plural(odd, "call", "calls")
        );
    }
}

fn print_table(policies: &[PolicyBill]) {
    let base = policies.iter().find(|p| p.policy == "off").map(|p| p.cost);
    println!(
        "{:<28} {:>6} {:>13} {:>7} {:>10} {:>6} {:>8}  facts kept: sent · within recall",
        "policy (replayed, estimated)", "calls", "tokens sent", "cached", "bill", "steps", "vs off"
    );
    let share = |n: u64, of: u64| match crate::engine::units::percent(n, of) {
        Some(p) => format!("{p} %"),
        None => "-".into(),
    };
    for p in policies {
        let vs = match base {
            Some(b) if b > 0.0 => format!("{:.2}×", p.cost / b),
            _ => "-".into(),
        };
        println!(
            "{:<28} {:>6} {:>13} {:>6.0}% {:>10} {:>6} {:>8}  {} · {} of {}",
            p.policy,
            p.calls,
            crate::engine::edit::prune::thousands(p.sent),
            100.0 * p.cached_share(),
            usd(p.cost),
            p.steps,
            vs,
            share(p.facts.sent, p.facts.used),
            share(p.facts.reachable, p.facts.used),
            crate::engine::units::count(p.facts.used),
        );
        if p.unpriced > 0 {
            println!("  ({} calls to a model with no known price count as $0)", p.unpriced);
        }
    }
}
