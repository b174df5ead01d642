//! `bonsai compare`: the summary strategies side by side on the compaction at the leaf, each
//! with its calls, tokens (cache reads and writes apart), cost, time, size and recall score;
//! `--write STRATEGY` writes the chosen one as Pi's compaction entry.

use super::args::{CutBudget, LeafArg, SessionArg};
use super::write_flow::{CompactionAt, apply, confirm, preview, show, warn_new_branch};
use crate::engine::compaction::cut::CompactionPlan;
use crate::engine::compaction::recall::{self, Category, Score};
use crate::engine::compaction::slices::SliceParams;
use crate::engine::compaction::strategy::{self, Strategy};
use crate::engine::compaction::summary::Summary;
use crate::engine::compaction::summary::{self, SummaryInput};
use crate::engine::edit::plan::{Write, WriteRequest};
use crate::engine::edit::prune::thousands;
use crate::engine::load::session::Session;
use crate::llm::strategies::{self, Outcome, Progress};
use crate::llm::summarize::Summarizer;
use crate::store;
use crate::store::config::agent_dir;
use clap::Args;
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::{Value, json};
use std::io::IsTerminal;

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Strategies to run, comma-separated, or `all`: single-shot, parallel-stitch,
    /// sequential-accumulated, sequential-rolling, anchored-iterative, offline (default: all
    /// with a model, else offline).
    #[arg(long)]
    pub strategies: Option<String>,
    /// The model as provider/id (default: compaction.model in Pi's settings, else the
    /// session's model). Needs its API key in Pi's auth.json or the environment.
    #[arg(long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub at: LeafArg,
    #[command(flatten)]
    pub budget: CutBudget,
    /// The published comparison's parameters: slices of 10,000 tokens, slice budget 2,000,
    /// final budget 4,000, no overlap, no boost, no ratio.
    #[arg(long)]
    pub harness: bool,
    /// Tokens per slice (default 20,000; the harness 10,000).
    #[arg(long)]
    pub slice_tokens: Option<u64>,
    /// Tokens of the previous slice shown again before each slice (default 2,000).
    #[arg(long)]
    pub overlap_tokens: Option<u64>,
    /// A slice's budget as a share of its tokens (default 0.1).
    #[arg(long)]
    pub compression_ratio: Option<f64>,
    /// Factor on the last two slices' budgets (default 2.0).
    #[arg(long)]
    pub recent_boost: Option<f64>,
    /// Slice calls at once in parallel-stitch (default 4).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// The model reasons in an <analysis> block before each summary (kept out of the result).
    #[arg(long)]
    pub analysis: bool,
    /// What the summaries should focus on (as after Pi's /compact).
    #[arg(long)]
    pub instructions: Option<String>,
    /// Also print each strategy's summary after the table.
    #[arg(long)]
    pub show: bool,
    /// Write this strategy's summary as the compaction (asks first; --yes writes).
    #[arg(long, value_name = "STRATEGY")]
    pub write: Option<String>,
    /// Write without asking (with --write).
    #[arg(long)]
    pub yes: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// One strategy's run: its outcome (or why it failed) and its score.
pub struct Row {
    pub strategy: Strategy,
    pub result: Result<(Outcome, Score), crate::llm::LlmError>,
}

/// The slice parameters from the flags (the harness preset first, then each flag over it).
fn params(a: &CompareArgs) -> Result<SliceParams> {
    let mut p = if a.harness {
        SliceParams::harness()
    } else {
        SliceParams::default()
    };
    if let Some(v) = a.slice_tokens {
        if v == 0 {
            bail!("--slice-tokens must be above 0");
        }
        p.slice_tokens = v;
    }
    if let Some(v) = a.overlap_tokens {
        p.overlap_tokens = v;
    }
    if let Some(v) = a.compression_ratio {
        if !(v > 0.0 && v <= 1.0) {
            bail!("--compression-ratio must be in (0, 1], got {v}");
        }
        p.compression_ratio = Some(v);
    }
    if let Some(v) = a.recent_boost {
        if v.is_nan() || v <= 0.0 {
            bail!("--recent-boost must be above 0, got {v}");
        }
        p.recent_boost = v;
    }
    if let Some(v) = a.concurrency {
        p.concurrency = v.max(1);
    }
    p.analysis = a.analysis;
    Ok(p)
}

/// Run `strategies` on `plan` at once (model calls concurrently on one runtime), each scored.
#[allow(clippy::too_many_arguments)]
pub fn run_all(
    s: &Session,
    plan: &CompactionPlan,
    input: &SummaryInput,
    sm: Option<&Summarizer>,
    strategies: &[Strategy],
    p: &SliceParams,
    focus: Option<&str>,
    thinking: Option<&str>,
) -> Result<Vec<Row>> {
    let range = recall::Range::of_input(s, plan, input);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let tell = std::io::stderr().is_terminal();
    let on = |k: usize, e: Progress| {
        let name = strategies[k].name();
        match e {
            Progress::Calls { done, total, running } if tell && total > 0 => {
                eprintln!("bonsai: {name}: {done} of {total} calls done, {running} running")
            }
            Progress::Retry { attempt, wait, reason } => {
                eprintln!(
                    "bonsai: {name}: {reason}; retry {attempt} in {:.1}s",
                    wait.as_secs_f64()
                )
            }
            _ => {}
        }
    };
    let results = rt.block_on(strategies::run_group(
        sm,
        strategies,
        s,
        plan,
        input,
        p,
        focus,
        thinking,
        &on,
        &|_, _| {},
    ));
    Ok(strategies
        .iter()
        .zip(results)
        .map(|(&st, r)| Row {
            strategy: st,
            result: r.map(|o| {
                let score = range.score(&o.text);
                (o, score)
            }),
        })
        .collect())
}

fn cost(sm: Option<&Summarizer>, o: &Outcome) -> f64 {
    match sm {
        Some(sm) if o.calls > 0 => o.usage.to_pi(&sm.model)["cost"]["total"].as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

pub fn compare(a: CompareArgs) -> Result<()> {
    let at = CompactionAt::load(&a.session, &a.at, &a.budget)?;
    let mref = at.model_ref();
    let CompactionAt {
        s0,
        settings,
        registry,
        proj,
        plan,
        ..
    } = &at;
    let p = params(&a)?;
    let wanted = a.model.clone().or(settings.summary_model());
    let sm = Summarizer::resolve(registry, &agent_dir(), wanted.as_deref(), mref);
    let (strategies, write) = strategies_to_run(&a, &sm)?;
    let sm = match sm {
        Ok(sm) => {
            if strategies.iter().any(|s| s.is_llm()) {
                eprintln!(
                    "bonsai: model: {}/{} (key from {})",
                    sm.model.provider, sm.model.id, sm.key.source
                );
            }
            Some(sm)
        }
        Err(e) if strategies.iter().any(|s| s.is_llm()) => {
            bail!("{e}: the model strategies need a model; --strategies offline runs without one")
        }
        Err(_) => None,
    };
    let input = SummaryInput::of_plan(s0, plan);
    let rows = run_all(
        s0,
        plan,
        &input,
        sm.as_ref(),
        &strategies,
        &p,
        a.instructions.as_deref(),
        Some(&proj.thinking_level),
    )?;
    let slices = input.slices(&p);
    if a.json {
        let out = compare_json(&a, &at, &input, &slices, &p, &rows, sm.as_ref());
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        print_table(s0, plan, &input, &slices, &p, &rows, sm.as_ref(), a.show);
    }
    let Some(w) = write else { return Ok(()) };
    write_chosen(&a, &at, w, &rows, sm.as_ref())
}

/// The strategies to run (the flag's, else all with a model, else offline) and the one to
/// write, checked against them.
fn strategies_to_run(
    a: &CompareArgs,
    sm: &std::result::Result<Summarizer, crate::llm::summarize::ResolveError>,
) -> Result<(Vec<Strategy>, Option<Strategy>)> {
    let strategies = match &a.strategies {
        Some(list) => strategy::parse_list(list).map_err(|e| eyre!(e))?,
        None if sm.is_ok() => Strategy::ALL.to_vec(),
        None => {
            if let Err(e) = sm {
                eprintln!("bonsai: only the offline strategy runs: no model ({e}); --model provider/id picks one");
            }
            vec![Strategy::Offline]
        }
    };
    let write = match &a.write {
        Some(w) => Some(Strategy::parse(w).ok_or_else(|| eyre!("--write: unknown strategy `{w}`"))?),
        None => None,
    };
    if let Some(w) = write
        && !strategies.contains(&w)
    {
        bail!("--write {} names a strategy that is not run (--strategies)", w.name());
    }
    Ok((strategies, write))
}

/// `compare --json`: the cut, the parameters, the range's slices and facts, each strategy.
fn compare_json(
    a: &CompareArgs,
    at: &CompactionAt,
    input: &SummaryInput,
    slices: &[crate::engine::compaction::slices::Slice],
    p: &SliceParams,
    rows: &[Row],
    sm: Option<&Summarizer>,
) -> Value {
    let (s0, plan, leaf) = (&at.s0, &at.plan, at.leaf);
    let range = recall::Range::of_input(s0, plan, input);
    let facts: serde_json::Map<String, Value> = Category::ALL
        .iter()
        .map(|c| (c.key().to_string(), json!(range.facts.of(*c).len())))
        .collect();
    let out = json!({
        "file": a.session.file,
        "leafId": s0.entries[leaf].id.to_string(),
        "firstKeptEntryId": s0.entries[plan.first_kept_entry].id.to_string(),
        "isSplitTurn": plan.is_split_turn,
        "model": sm.map(|m| format!("{}/{}", m.model.provider, m.model.id)),
        "params": {
            "sliceTokens": p.slice_tokens, "overlapTokens": p.overlap_tokens,
            "compressionRatio": p.compression_ratio, "recentBoost": p.recent_boost,
            "budgetFloor": p.budget_floor, "finalBudget": p.final_budget,
            "concurrency": p.concurrency, "analysis": p.analysis, "harness": a.harness,
        },
        "range": {
            "historyMessages": input.history.len(),
            "historyTokens": input.history_tokens(),
            "turnPrefixTokens": input.turn_prefix.as_deref().map(summary::estimate_text),
            "slices": strategy::slices_json(slices),
            "facts": facts,
        },
        "strategies": rows.iter().map(|r| row_json(r, sm)).collect::<Vec<_>>(),
    });
    // Each strategy's audit beside its recall (what bonsai audit would say once written).
    let before = crate::engine::compaction::audit::Before::of_plan(s0, plan, leaf);
    let mut out = out;
    for (r, j) in rows.iter().zip(out["strategies"].as_array_mut().into_iter().flatten()) {
        if let Ok((o, _)) = &r.result {
            let mut aj = before.audit(&o.text).to_json(s0);
            if let Value::Object(m) = &mut aj {
                m.remove("entryId");
            }
            j["audit"] = aj;
        }
    }
    out
}

/// `--write STRATEGY`: that strategy's summary as the compaction, asked first.
fn write_chosen(a: &CompareArgs, at: &CompactionAt, w: Strategy, rows: &[Row], sm: Option<&Summarizer>) -> Result<()> {
    let (s0, plan, leaf, cs) = (&at.s0, &at.plan, at.leaf, at.cs);
    let Some(Row {
        result: Ok((outcome, _)),
        ..
    }) = rows.iter().find(|r| r.strategy == w)
    else {
        bail!("{} failed: nothing written", w.name());
    };
    let req = WriteRequest {
        write: Write::Compaction {
            leaf: s0.entries[leaf].id.to_string(),
            first_kept: s0.entries[plan.first_kept_entry].id.to_string(),
            summary: Summary {
                text: outcome.text.clone(),
                usage: match (sm, outcome.calls) {
                    (Some(sm), n) if n > 0 => Some(outcome.usage.to_pi(&sm.model)),
                    _ => None,
                },
            },
            settings: cs,
        },
        seen: Some((s0.buf.len(), s0.entries.len())),
    };
    let entries = req
        .prepare(s0, store::clock::entropy(), store::clock::now_ms())?
        .entries;
    warn_new_branch(s0, leaf, "the compaction");
    let flags = super::args::WriteFlags {
        dry_run: false,
        yes: a.yes,
        json: a.json,
    };
    if !a.yes && !a.json {
        preview(&entries, false, Value::Null);
    }
    if !confirm(&flags, &format!("the {} compaction", w.name()), &a.session.file)? {
        return Ok(());
    }
    let applied = apply(&a.session.file, &req, &format!("the {} compaction", w.name()), a.json)?;
    if a.json {
        show(&applied.prepared.entries, true, true, json!({"strategy": w.name()}));
    }
    Ok(())
}

fn row_json(r: &Row, sm: Option<&Summarizer>) -> Value {
    match &r.result {
        Ok((o, score)) => json!({
            "strategy": r.strategy.name(),
            "ok": true,
            "calls": o.calls,
            "usage": {"input": o.usage.input, "output": o.usage.output, "cacheRead": o.usage.cache_read, "cacheWrite": o.usage.cache_write},
            "costUsd": cost(sm, o),
            "wallMs": o.wall.as_millis() as u64,
            "summaryChars": o.text.chars().count(),
            "summaryTokens": score.summary_tokens,
            "recall": score.to_json(),
            "text": o.text,
        }),
        Err(e) => json!({"strategy": r.strategy.name(), "ok": false, "error": e.to_string()}),
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The lost items of each kind `compare` lists per strategy.
const LOST_SHOWN: usize = 5;

/// A strategy's column: the longest name and two spaces.
const NAME_W: usize = 24;

#[allow(clippy::too_many_arguments)]
fn print_table(
    s: &Session,
    plan: &CompactionPlan,
    input: &SummaryInput,
    slices: &[crate::engine::compaction::slices::Slice],
    p: &SliceParams,
    rows: &[Row],
    sm: Option<&Summarizer>,
    show_text: bool,
) {
    println!(
        "compaction at {} keeping from {}: history {} messages, ~{} tokens in {} slice{} ({} tokens each, overlap {}){}{}",
        plan.projection
            .path
            .last()
            .map(|&l| s.entries[l].id.to_string())
            .unwrap_or_default(),
        s.entries[plan.first_kept_entry].id,
        input.history.len(),
        thousands(input.history_tokens()),
        slices.len(),
        if slices.len() == 1 { "" } else { "s" },
        thousands(p.slice_tokens),
        thousands(p.overlap_tokens),
        match &input.turn_prefix {
            Some(t) => format!("; split turn, prefix ~{} tokens", thousands(summary::estimate_text(t))),
            None => String::new(),
        },
        if input.previous.is_some() {
            "; updates the previous summary"
        } else {
            ""
        },
    );
    println!(
        "{:<w$}{:>6}{:>11}{:>10}{:>10}{:>9}{:>10}{:>9}{:>10}{:>8}{:>9}{:>8}",
        "strategy",
        "calls",
        "input",
        "cache r",
        "cache w",
        "output",
        "cost $",
        "time",
        "summary",
        "recall",
        "invented",
        "ratio",
        w = NAME_W,
    );
    for r in rows {
        match &r.result {
            Ok((o, sc)) => println!(
                "{:<w$}{:>6}{:>11}{:>10}{:>10}{:>9}{:>10.4}{:>8.2}s{:>10}{:>8}{:>9}{:>8}",
                r.strategy.name(),
                o.calls,
                thousands(o.usage.input),
                thousands(o.usage.cache_read),
                thousands(o.usage.cache_write),
                thousands(o.usage.output),
                cost(sm, o),
                o.wall.as_secs_f64(),
                thousands(sc.summary_tokens),
                pct(sc.overall),
                pct(sc.invented_share()),
                pct(sc.ratio()),
                w = NAME_W,
            ),
            Err(e) => println!("{:<w$}failed: {e}", r.strategy.name(), w = NAME_W),
        }
    }
    println!();
    println!(
        "recall by category (found/total): {}",
        Category::ALL.map(|c| c.name()).join(" · ")
    );
    for r in rows {
        if let Ok((_, sc)) = &r.result {
            let cats: Vec<String> = sc
                .categories
                .iter()
                .map(|c| format!("{}/{}", c.found, c.total))
                .collect();
            // The longest name ("sequential-accumulated") and two spaces before the figures.
            println!("  {:<w$}{}", r.strategy.name(), cats.join(" · "), w = NAME_W);
        }
    }
    println!(
        "summary tokens and ratio are Pi's estimate (chars/4); the ratio is over the {} tokens the summary replaces",
        rows.iter()
            .find_map(|r| r.result.as_ref().ok().map(|(_, sc)| thousands(sc.replaced_tokens)))
            .unwrap_or_default()
    );
    println!();
    let before =
        crate::engine::compaction::audit::Before::of_plan(s, plan, plan.projection.path.last().copied().unwrap_or(0));
    println!("what each summary lost (bonsai audit's kinds; the first {LOST_SHOWN} of each kind):");
    for r in rows {
        if let Ok((o, _)) = &r.result {
            let a = before.audit(&o.text);
            println!("  {:<w$}{}", r.strategy.name(), a.headline(), w = NAME_W);
            for line in super::audit::lost_lines(s, &a, LOST_SHOWN) {
                println!("  {:<w$}  {line}", "", w = NAME_W);
            }
        }
    }
    if show_text {
        for r in rows {
            if let Ok((o, _)) = &r.result {
                println!("\n===== {} =====\n{}", r.strategy.name(), o.text);
            }
        }
    }
}
