//! The commands that only read: context, cut, branch, tree, stats, inspect, list.

use super::args::{CutBudget, LeafArg, SessionArg};
use super::common::{load_for_reading, print_json, resolve_leaf, resolve_ref, session_model, short_list};
use super::out;
use crate::engine::compaction::branch_summary;
use crate::engine::compaction::cut;
use crate::engine::load::entry::{Kind, Role};
use crate::engine::report;
use crate::engine::view::context;
use crate::engine::view::tokens::{Encoding, TokenCache};
use crate::engine::view::tree;
use crate::engine::view::tree_view;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ContextArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Skip exact (tiktoken) counts (faster on large sessions).
    #[arg(long)]
    pub no_exact: bool,
    /// The messages bonsai's Pi package sends at the leaf (the live policy of
    /// `bonsai.live.policy` in Pi's settings, applied in memory as on every model call).
    #[arg(long)]
    pub live: bool,
    /// With --live: this policy instead of the setting's.
    #[arg(long, requires = "live", value_parser = ["off", "output", "zones"])]
    pub policy: Option<String>,
    /// With --live and the output policy: the pi-context-pruning extension's own rules.
    #[arg(long, requires = "live", value_parser = ["pi-context-pruning"])]
    pub compat: Option<String>,
    /// With --live --json: each message whole (as Pi's AgentMessage), not only described.
    #[arg(long, requires = "live")]
    pub content: bool,
}

#[derive(Args, Debug)]
pub struct CutArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub budget: CutBudget,
    #[command(flatten)]
    pub at: LeafArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BranchArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// The entry navigated to: an id, or idx:N for the N-th entry (0-based).
    #[arg(long)]
    pub target: String,
    #[command(flatten)]
    pub at: LeafArg,
    /// Context window for the budget (default: the session model's, else 128000).
    #[arg(long)]
    pub context_window: Option<u64>,
    /// reserveTokens: tokens kept free for the reply (default: Pi's settings, 16384).
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TreeArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Pi's /tree filter (default: treeFilterMode from Pi's settings, else default).
    #[arg(long, value_parser = crate::engine::settings::TREE_FILTERS)]
    pub filter: Option<String>,
    #[command(flatten)]
    pub at: LeafArg,
    /// Columns to lay the tree out in (Pi's /tree truncates rows to the terminal width).
    #[arg(long, default_value_t = 100)]
    pub width: usize,
    /// Also the branches archived with `bonsai archive` (hidden by default).
    #[arg(long)]
    pub archived: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    /// How many of the largest entries to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    /// keepRecentTokens for the cut (as the oracle's --keep-recent-tokens).
    #[arg(long, default_value_t = 20000)]
    pub keep_recent_tokens: u64,
    /// reserveTokens for the cut and the branch summary's budget.
    #[arg(long, default_value_t = 16384)]
    pub reserve_tokens: u64,
    /// Also the branch-summary input for navigating to this entry (an id or idx:N).
    #[arg(long)]
    pub branch_target: Option<String>,
    /// Context window for the branch summary's budget.
    #[arg(long, default_value_t = crate::engine::load::models::DEFAULT_CONTEXT_WINDOW)]
    pub branch_context_window: u64,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Export the path to this entry (an id, or idx:N for the N-th entry, 0-based) instead of
    /// the file's last entry.
    #[arg(long, conflicts_with = "tree")]
    pub leaf: Option<String>,
    /// Every entry, branch by branch, instead of one path.
    #[arg(long)]
    pub tree: bool,
    /// md: Markdown (thinking and long tool output folded in <details>); html: one
    /// self-contained page (highlighted code, folds, light and dark); json: the entries as the
    /// file has them, with the header. Default: from OUTPUT's extension, else md.
    #[arg(long, value_parser = ["md", "html", "json"])]
    pub format: Option<String>,
    /// Write to this file (a new one; an existing file is refused without --force) instead of
    /// standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Replace OUTPUT if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,
}

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

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Every project's sessions, not only this directory's.
    #[arg(long)]
    pub all: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn context(a: ContextArgs) -> Result<()> {
    let (file, json_out, exact) = (a.session.file.as_path(), a.json, !a.no_exact);
    let settings = load_settings(&cwd());
    let s = load_for_reading(file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    if a.live {
        return context_live(&s, file, leaf, &a);
    }
    let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let proj = context::project(&s, &path);
    let msgs: Vec<&context::ContextMessage> = proj.messages().collect();
    let reg = load_registry(&agent_dir());
    let (model, window) = session_model(&proj, &reg);
    let enc = Encoding::for_model(
        model.as_ref().map(|m| m.0.as_str()),
        model.as_ref().map(|m| m.1.as_str()),
    );
    let exact_counts: Option<Vec<Option<u64>>> = exact.then(|| {
        TokenCache::default()
            .count_all(&s, &msgs, enc)
            .into_iter()
            .map(Some)
            .collect()
    });
    let ctx_tokens = context::estimate_context_tokens(&s, &msgs);
    let projected = context::estimate_projected_tokens(&s, &proj);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    if json_out {
        let mut ctx = report::context_json(&s, &proj, exact_counts.as_deref());
        if let Some(ex) = &exact_counts {
            ctx["exactTokensSum"] = json!(ex.iter().flatten().sum::<u64>());
            ctx["exactEncoding"] = json!(enc.name());
        }
        print_json(&json!({
            "file": file.file_name().map(|f| f.to_string_lossy().to_string()),
            "leafId": leaf.map(|l| s.entries[l].id.to_string()),
            "leafIdx": leaf,
            "pathIds": path.iter().map(|&i| s.entries[i].id.to_string()).collect::<Vec<_>>(),
            "pathIdx": path,
            "context": ctx,
            "contextTokens": report::tokens_json(&ctx_tokens),
            "projectedContextTokens": report::tokens_json(&projected),
            "contextWindow": window,
            "reserveTokens": settings.reserve_tokens(mref),
            "diagnostics": report::diagnostics_json(&s),
        }));
        return Ok(());
    }
    println!(
        "{} messages at leaf {} · model {} · thinking {}",
        msgs.len(),
        leaf.map(|l| s.entries[l].id.to_string())
            .unwrap_or_else(|| "(none)".into()),
        model
            .as_ref()
            .map(|(p, m)| format!("{p}/{m}"))
            .unwrap_or_else(|| "(unknown)".into()),
        proj.thinking_level
    );
    println!(
        "{:>4}  {:<18} {:>8} {:>8}  {:<8} summary",
        "#", "role", "est", "exact", "entry"
    );
    for (k, m) in msgs.iter().enumerate() {
        let v = context::materialize(&s, m);
        let preview = crate::engine::view::tree_view::one_line(&crate::engine::view::tokens::message_text(&v), 60);
        let ex = exact_counts
            .as_ref()
            .and_then(|e| e[k])
            .map(|n| n.to_string())
            .unwrap_or_default();
        let edited = if m.replaced_by.is_some() { " (edited)" } else { "" };
        println!(
            "{:>4}  {:<18} {:>8} {:>8}  {:<8} {}{}",
            k,
            m.role.as_str(),
            m.est_tokens,
            ex,
            s.entries[m.source].id,
            preview,
            edited
        );
    }
    // The rows' sum first, on the estimate; Pi's figure and the exact count each labelled.
    use crate::engine::units::{self, Basis};
    let win = window.map(|w| format!(" of {}", units::count(w))).unwrap_or_default();
    let composed = if ctx_tokens.last_usage_index.is_some() {
        format!(
            "usage {} + est. {}",
            units::tokens(ctx_tokens.usage_tokens),
            units::tokens(ctx_tokens.trailing_tokens)
        )
    } else {
        "an estimate: no usage yet".into()
    };
    println!(
        "context: {} tokens ({}, the rows' sum) · {} {}{win} ({composed}){}",
        units::count(msgs.iter().map(|m| m.est_tokens).sum::<u64>()),
        Basis::Estimate.label(),
        Basis::Pi.label(),
        units::tokens(ctx_tokens.tokens),
        exact_counts
            .as_ref()
            .map(|e| format!(
                " · {} {} ({})",
                Basis::Exact.label(),
                units::count(e.iter().flatten().sum::<u64>()),
                enc.name()
            ))
            .unwrap_or_default()
    );
    Ok(())
}

/// `bonsai context --live`: what the package sends at the leaf, through the same engine
/// function (`engine::live`) the package's `context` hook calls.
pub(super) fn context_live(
    s: &crate::engine::load::session::Session,
    file: &std::path::Path,
    leaf: Option<usize>,
    a: &ContextArgs,
) -> Result<()> {
    use crate::engine::live;
    let Some(leaf) = leaf else {
        return Err(eyre!("{}: the session has no entries, so no context", file.display()));
    };
    let (settings, ls) = live_settings_for(s, a);
    let reg = load_registry(&agent_dir());
    let path = s.path_to(leaf);
    let (model, window) = session_model(&context::project(s, &path), &reg);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let window = window.unwrap_or(crate::engine::load::models::DEFAULT_CONTEXT_WINDOW);
    let reserve = settings.reserve_tokens(mref);
    let env = live::CallEnv {
        context_window: window,
        reserve_tokens: reserve,
        prices: mref.and_then(|(p, m)| reg.find(p, m)).map(live::Prices::of_model),
    };
    let prices_of = |p: &str, m: &str| reg.find(p, m).map(live::Prices::of_model);
    let at = live::at_leaf(s, leaf, &env, &ls, &prices_of);
    let sent = at.answer.messages(&at.values);
    let shown = LiveShown {
        s,
        leaf,
        a,
        changed: at.answer.changed(at.values.len()),
        at: &at,
        sent: &sent,
    };
    if a.json {
        print_live_json(&shown, file, window, reserve);
    } else {
        print_live_text(&shown);
    }
    Ok(())
}

/// The live policy's settings for the session: the project's (Pi runs in the session's
/// folder), with the flags over them.
fn live_settings_for(
    s: &crate::engine::load::session::Session,
    a: &ContextArgs,
) -> (crate::engine::settings::Settings, crate::engine::live::LiveSettings) {
    use crate::engine::live::LivePolicy;
    // Pi runs in the session's folder, and reads that project's settings.
    let project = std::path::PathBuf::from(s.header.cwd.as_deref().unwrap_or("."));
    let settings = load_settings(if project.is_dir() {
        &project
    } else {
        std::path::Path::new(".")
    });
    let mut ls = settings.live_settings();
    for p in &ls.problems {
        eprintln!("bonsai: {p}");
    }
    let compat = a.compat.is_some();
    match a.policy.as_deref().and_then(LivePolicy::parse) {
        Some(LivePolicy::Output { .. }) => ls.policy = LivePolicy::Output { compat },
        Some(p) => ls.policy = p,
        None => {
            if compat && let LivePolicy::Output { .. } = ls.policy {
                ls.policy = LivePolicy::Output { compat: true };
            }
        }
    }
    (settings, ls)
}

/// What `context --live` prints from.
struct LiveShown<'a> {
    s: &'a crate::engine::load::session::Session,
    leaf: usize,
    a: &'a ContextArgs,
    /// The policy changed what Pi sends (Pi then puts its current system message first).
    changed: bool,
    at: &'a crate::engine::live::AtLeaf,
    sent: &'a [Value],
}

impl LiveShown<'_> {
    /// Pi restores its system messages: in place when nothing changed, else its current one
    /// first.
    fn system(&self) -> Option<Value> {
        if !self.changed {
            return None;
        }
        let all: Vec<&context::ContextMessage> = self.at.proj.messages().collect();
        context::current_system_message(self.s, &all)
    }
}

/// `context --live --json`: each message sent, described (whole with --content).
fn print_live_json(l: &LiveShown, file: &std::path::Path, window: u64, reserve: u64) {
    use crate::engine::live::{self, Piece};
    let LiveShown {
        s,
        leaf,
        a,
        changed,
        at,
        sent,
    } = *l;
    let all: Vec<&context::ContextMessage> = at.proj.messages().collect();
    let system = l.system();
    let r = &at.answer.report;
    let mut out_msgs = Vec::new();
    let described = |m: &context::ContextMessage| Value::Object(report::describe_message(s, m));
    if changed {
        if let Some(sys) = &system {
            let mut d = json!({"role": "system", "estTokens": context::estimate_value(sys), "live": "system"});
            if a.content {
                d["message"] = sys.clone();
            }
            out_msgs.push(d);
        }
    } else {
        for m in all.iter().filter(|m| m.role == Role::System) {
            let mut d = described(m);
            d["live"] = json!("system");
            if a.content {
                d["message"] = context::materialize(s, m);
            }
            out_msgs.push(d);
        }
    }
    for (piece, v) in at.answer.pieces.iter().zip(sent) {
        let mut d = match piece {
            Piece::Keep(i) => {
                let mut d = described(&at.refs[*i]);
                d["live"] = json!("kept");
                d
            }
            Piece::Replace(i, _) => {
                let mut d = described(&at.refs[*i]);
                d["estTokens"] = json!(context::estimate_value(v));
                d["live"] = json!(if crate::engine::edit::prune::is_pruned(&v["content"]) {
                    "pruned"
                } else {
                    "distilled"
                });
                d
            }
            Piece::Insert(_) => json!({
                "role": "custom",
                "customType": live::PACKET_TYPE,
                "estTokens": context::estimate_value(v),
                "live": "packet",
            }),
        };
        if a.content {
            d["message"] = v.clone();
        }
        out_msgs.push(d);
    }
    print_json(&json!({
        "file": file.file_name().map(|f| f.to_string_lossy().to_string()),
        "leafId": s.entries[leaf].id.to_string(),
        "leafIdx": leaf,
        "live": live_report_json(r),
        "changed": changed,
        "context": {"messages": out_msgs, "messageCount": out_msgs.len()},
        "contextWindow": window,
        "reserveTokens": reserve,
    }));
}

/// `context --live`: one row per message sent, then the figures.
fn print_live_text(l: &LiveShown) {
    use crate::engine::live::Piece;
    let LiveShown { s, leaf, at, sent, .. } = *l;
    let system = l.system();
    let r = &at.answer.report;
    println!(
        "live context at leaf {} · policy {} · {}",
        s.entries[leaf].id,
        r.policy,
        r.zone
            .map(|z| format!("zone {}", z.name()))
            .unwrap_or_else(|| "no zone".into())
    );
    println!(
        "{:>4}  {:<18} {:>8}  {:<10} {:<8} summary",
        "#", "role", "est", "live", "entry"
    );
    let mut k = 0;
    if let Some(sys) = &system {
        println!(
            "{:>4}  {:<18} {:>8}  {:<10} {:<8}",
            k,
            "system",
            context::estimate_value(sys),
            "system",
            ""
        );
        k += 1;
    }
    for (piece, v) in at.answer.pieces.iter().zip(sent) {
        let (what, entry) = match piece {
            Piece::Keep(i) => ("kept", s.entries[at.refs[*i].source].id.to_string()),
            Piece::Replace(i, _) => (
                if crate::engine::edit::prune::is_pruned(&v["content"]) {
                    "pruned"
                } else {
                    "distilled"
                },
                s.entries[at.refs[*i].source].id.to_string(),
            ),
            Piece::Insert(_) => ("packet", String::new()),
        };
        let preview = tree_view::one_line(&crate::engine::view::tokens::message_text(v), 60);
        println!(
            "{:>4}  {:<18} {:>8}  {:<10} {:<8} {}",
            k,
            v.get("role").and_then(|r| r.as_str()).unwrap_or(""),
            context::estimate_value(v),
            what,
            entry,
            preview
        );
        k += 1;
    }
    // The words and bases /ctx-status uses.
    use crate::engine::units::{Basis, count, tokens};
    println!(
        "whole context {} tokens ({} for the last call, with what bonsai left out added back) · {} {} of {} tokens of messages ({}) · T {} · turns {}/{} · {}",
        tokens(r.whole),
        Basis::Pi.label(),
        Basis::Sent.label(),
        count(r.tokens_sent),
        count(r.tokens_full),
        Basis::Estimate.label(),
        count(r.threshold),
        r.turns_kept,
        r.turns_total,
        r.note
    );
}

/// The live report's fields as the CLI, `serve` and `/ctx-status` name them.
pub fn live_report_json(r: &crate::engine::live::LiveReport) -> Value {
    json!({
        "policy": r.policy,
        "zone": r.zone.map(|z| z.name()),
        "threshold": r.threshold,
        "whole": r.whole,
        "tokensFull": r.tokens_full,
        "tokensSent": r.tokens_sent,
        "turnsTotal": r.turns_total,
        "turnsKept": r.turns_kept,
        "messagesIn": r.messages_in,
        "messagesOut": r.messages_out,
        "dropped": r.dropped,
        "distilled": r.distilled,
        "pruned": r.pruned,
        "summariesAhead": r.summaries_ahead,
        "orphansDropped": r.orphans_dropped,
        "packetTokens": r.packet_tokens,
        "step": r.step.as_ref().map(|s| json!({
            "reason": s.reason.name(),
            "turns": s.turns,
            "pruned": s.pruned,
            "before": s.before,
            "after": s.after,
            "idleMinutes": s.idle_minutes,
        })),
        "steps": r.steps,
        "waiting": r.waiting,
        "calls": r.calls,
        "note": r.note,
    })
}

pub fn cut(a: CutArgs) -> Result<()> {
    let (keep, reserve, json_out) = (a.budget.keep_recent_tokens, a.budget.reserve_tokens, a.json);
    let settings = load_settings(&cwd());
    let s = load_for_reading(&a.session.file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let proj = context::project(&s, &path);
    let reg = load_registry(&agent_dir());
    let (model, _) = session_model(&proj, &reg);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let cs = settings.compaction_settings(mref, reserve, keep);
    let plan = cut::prepare_path(&s, &path, cs);
    if json_out {
        let (cj, reason) = report::compaction_json(&s, &plan);
        let mut out = json!({
            "leafId": leaf.map(|l| s.entries[l].id.to_string()),
            "leafIdx": leaf,
            "compactionSettings": {"enabled": true, "reserveTokens": cs.reserve_tokens, "keepRecentTokens": cs.keep_recent_tokens},
            "compaction": cj,
        });
        if let Some(r) = reason {
            out["compactionNullReason"] = json!(r);
        }
        print_json(&out);
        return Ok(());
    }
    let plan = match plan {
        Err(e) => {
            println!("no compaction possible: {}; {}", e.reason(), e.next_step());
            return Ok(());
        }
        Ok(p) => p,
    };
    let id = |i: usize| s.entries[i].id.to_string();
    println!(
        "keepRecentTokens {} · reserveTokens {}",
        cs.keep_recent_tokens, cs.reserve_tokens
    );
    let t = |n: u64| crate::engine::units::tokens(n as f64);
    println!(
        "tokens:          estimate {} → kept {} + the summary (at most {}, Pi's budget)",
        t(plan.estimate_before()),
        t(plan.kept_tokens()),
        t(cs.history_summary_limit())
    );
    println!(
        "Pi's figure:     {} now (the compaction records it as tokensBefore)",
        crate::engine::units::tokens(plan.tokens_before)
    );
    println!(
        "first kept:      {} (line {})",
        id(plan.first_kept_entry),
        s.entries[plan.first_kept_entry].line
    );
    if let Some(p) = plan.previous_compaction_entry() {
        println!(
            "boundary:        previous compaction {} (line {})",
            id(p),
            s.entries[p].line
        );
    }
    println!(
        "summarize:       {} messages, ~{} tokens",
        plan.messages_to_summarize.len(),
        t(plan.summarized_tokens())
    );
    if let Some(ts) = plan.turn_start_entry().filter(|_| plan.is_split_turn) {
        println!(
            "split turn:      turn starts at {} (line {}); prefix {} messages, ~{} tokens summarized separately",
            id(ts),
            s.entries[ts].line,
            plan.turn_prefix_messages.len(),
            t(plan.turn_prefix_tokens())
        );
    } else {
        println!("split turn:      no");
    }
    println!("kept:            ~{} tokens", t(plan.kept_tokens()));
    let (r, m) = plan.file_ops.lists();
    println!("read files:      {}", short_list(&r));
    println!("modified files:  {}", short_list(&m));
    Ok(())
}

pub fn branch(a: BranchArgs) -> Result<()> {
    let (window, reserve, json_out) = (a.context_window, a.reserve_tokens, a.json);
    let settings = load_settings(&cwd());
    let s = load_for_reading(&a.session.file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    let target = resolve_ref(&s, &a.target)?;
    let window = window.or_else(|| {
        let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
        let proj = context::project(&s, &path);
        session_model(&proj, &load_registry(&agent_dir())).1
    });
    let budget = branch_summary::token_budget(window, reserve.unwrap_or(settings.branch_reserve_tokens()));
    let plan = branch_summary::prepare(&s, leaf, target, budget);
    if json_out {
        print_json(&json!({"branch": report::branch_json(&s, &plan)}));
        return Ok(());
    }
    let id = |i: usize| s.entries[i].id.to_string();
    println!(
        "from leaf:       {}",
        plan.from_leaf.map(id).unwrap_or_else(|| "(none)".into())
    );
    println!("to target:       {}", id(plan.target));
    println!(
        "common ancestor: {}",
        plan.common_ancestor.map(id).unwrap_or_else(|| "(none)".into())
    );
    println!("entries left:    {}", plan.entries.len());
    println!(
        "summary input:   {} messages, ~{} tokens (budget {})",
        plan.messages.len(),
        plan.total_tokens,
        plan.token_budget
    );
    let (r, m) = plan.file_ops.lists();
    println!("read files:      {}", short_list(&r));
    println!("modified files:  {}", short_list(&m));
    Ok(())
}

pub fn tree(a: TreeArgs) -> Result<()> {
    let (filter, width, json_out) = (a.filter, a.width, a.json);
    let settings = load_settings(&cwd());
    let s = load_for_reading(&a.session.file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    let filter = filter.unwrap_or_else(|| settings.tree_filter_mode().to_string());
    let t = tree::Tree::build(&s);
    let mode = tree_view::FilterMode::parse(&filter).unwrap_or_default();
    let mut view = tree_view::TreeView::new(&s, &t, leaf, mode, crate::store::clock::now_ms());
    view.home = crate::store::config::tree_home();
    if a.archived && view.archived_branches > 0 {
        view.set_show_archived(&s, true);
    }
    let lines = view.render_plain(&s, width, None);
    // Hidden archived branches are bonsai's own view: said, so the tree is never silently
    // different from Pi's /tree.
    let hidden = if view.show_archived { 0 } else { view.archived_branches };
    if json_out {
        let (tj, tij, depth) = report::tree_json(&s, &t);
        let mut o = json!({"filter": filter, "width": width, "lines": lines, "tree": tj, "treeIdx": tij, "maxBranchDepth": depth});
        if hidden > 0 {
            o["archivedBranchesHidden"] = hidden.into();
        }
        print_json(&o);
    } else {
        for l in lines {
            println!("{l}");
        }
        if hidden > 0 {
            println!(
                "  ({hidden} archived branch{} hidden; --archived shows {})",
                if hidden == 1 { "" } else { "es" },
                if hidden == 1 { "it" } else { "them" }
            );
        }
    }
    Ok(())
}

pub fn stats(a: StatsArgs) -> Result<()> {
    let (file, top, json_out) = (a.session.file.as_path(), a.top, a.json);
    let settings = load_settings(&cwd());
    let s = load_for_reading(file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    let (types, roles) = report::counts_json(&s);
    let mut by_role: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut by_tool: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut largest: Vec<(u64, usize)> = Vec::new();
    s.prefetch_measures(0..s.entries.len());
    for (i, e) in s.entries.iter().enumerate() {
        let est: u64 = context::intrinsic_messages(&s, i).iter().map(|m| m.est_tokens).sum();
        largest.push((est, i));
        if let Kind::Message(m) = &e.kind {
            let r = by_role.entry(m.role.as_str().to_string()).or_default();
            r.0 += 1;
            r.1 += s.measures(m).est_tokens;
            if m.role == Role::ToolResult {
                let t = by_tool
                    .entry(m.tool_name.as_deref().unwrap_or("?").to_string())
                    .or_default();
                t.0 += 1;
                t.1 += s.measures(m).est_tokens;
            }
        }
    }
    largest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    largest.truncate(top);
    let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let proj = context::project(&s, &path);
    let msgs: Vec<_> = proj.messages().collect();
    let ctx = context::estimate_context_tokens(&s, &msgs);
    let reg = load_registry(&agent_dir());
    let (model, window) = session_model(&proj, &reg);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let reserve = settings.reserve_tokens(mref);
    let threshold = window.map(|w| w as i64 - reserve as i64);
    let describe = |i: usize| {
        let e = &s.entries[i];
        let what = match &e.kind {
            Kind::Message(m) if m.role == Role::ToolResult => {
                format!("toolResult {}", m.tool_name.as_deref().unwrap_or("?"))
            }
            Kind::Message(m) => m.role.as_str().to_string(),
            k => k.type_name().to_string(),
        };
        (e.id.to_string(), e.line, what)
    };
    if json_out {
        print_json(&json!({
            "file": file.file_name().map(|f| f.to_string_lossy().to_string()),
            "bytes": s.buf.len(),
            "entries": s.entries.len(),
            "skippedLines": s.skipped_lines,
            "sessionName": s.session_name(),
            "entryTypeCounts": types,
            "messageRoleCounts": roles,
            "tokensByRole": by_role.iter().map(|(k, (n, t))| (k.clone(), json!({"count": n, "estTokens": t}))).collect::<serde_json::Map<_, _>>(),
            "tokensByTool": by_tool.iter().map(|(k, (n, t))| (k.clone(), json!({"count": n, "estTokens": t}))).collect::<serde_json::Map<_, _>>(),
            "largestEntries": largest.iter().map(|&(t, i)| { let (id, line, what) = describe(i); json!({"id": id, "idx": i, "line": line, "what": what, "estTokens": t}) }).collect::<Vec<_>>(),
            "leafId": leaf.map(|l| s.entries[l].id.to_string()),
            "model": model.as_ref().map(|(p, m)| format!("{p}/{m}")),
            "contextTokens": report::tokens_json(&ctx),
            "contextWindow": window,
            "reserveTokens": reserve,
            "compactionThreshold": threshold,
            "diagnostics": report::diagnostics_json(&s),
        }));
        return Ok(());
    }
    println!(
        "{} · {} bytes · {} entries · {} skipped lines",
        file.display(),
        s.buf.len(),
        s.entries.len(),
        s.skipped_lines
    );
    if let Some(n) = s.session_name() {
        println!("name: {n}");
    }
    println!(
        "entries by type: {}",
        types
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| match k.as_str() {
                "" => format!("(empty type) {v}"),
                "undefined" => format!("(no type) {v}"),
                _ => format!("{k} {v}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("estimated tokens by role:");
    for (k, (n, t)) in &by_role {
        println!("  {k:<18} {n:>7} msgs {t:>10} tokens");
    }
    println!("estimated tokens by tool (results):");
    for (k, (n, t)) in &by_tool {
        println!("  {k:<18} {n:>7} calls {t:>9} tokens");
    }
    println!("largest entries:");
    for &(t, i) in &largest {
        let (id, line, what) = describe(i);
        println!("  {t:>9} tokens  {id}  line {line:<7} {what}");
    }
    use crate::engine::units::{self, Basis};
    let pct = |w: u64| {
        format!(
            " = {} % of {}",
            units::percent(ctx.tokens.round() as u64, w).unwrap_or(0),
            units::count(w)
        )
    };
    println!(
        "context at leaf: {} tokens ({}){}{}",
        units::tokens(ctx.tokens),
        Basis::Pi.label(),
        window.map(pct).unwrap_or_else(|| " (model window unknown)".into()),
        threshold
            .map(|t| format!("; Pi compacts above {}", units::count(t.max(0) as u64)))
            .unwrap_or_default()
    );
    Ok(())
}

pub fn list(a: ListArgs) -> Result<()> {
    let json_out = a.json;
    let cwd = cwd();
    let settings = load_settings(&cwd);
    let (infos, problems): (Vec<_>, Vec<_>) = crate::store::list_sessions(&cwd, &settings, a.all)
        .into_iter()
        .partition(|i| i.is_session());
    for p in &problems {
        eprintln!(
            "bonsai: not listed: {}: {}",
            crate::engine::units::one_line(&p.path.to_string_lossy()),
            p.problem.as_ref().map(|x| x.reason()).unwrap_or_default()
        );
    }
    if json_out {
        print_json(&Value::Array(infos.iter().map(|i| i.to_json()).collect()));
        return Ok(());
    }
    if infos.is_empty() {
        let n = crate::store::count_all_sessions(&cwd, &settings);
        if a.all || n == 0 {
            println!("no Pi sessions found in any project (Pi writes them under ~/.pi/agent/sessions)");
        } else {
            println!(
                "no Pi sessions for {}; {n} in other projects (bonsai list --all lists them, Tab in the picker too)",
                cwd.display()
            );
        }
    }
    for i in &infos {
        println!(
            "{}  {:>6} entries  {:>9} bytes  {}{}  {}",
            i.modified_iso(),
            i.entries,
            i.bytes,
            if i.title_is_made() { "~ " } else { "" },
            i.title(),
            crate::engine::units::one_line(&i.path.to_string_lossy())
        );
    }
    if infos.iter().any(|i| i.title_is_made()) {
        eprintln!(
            "~ a title bonsai made from the first request (or the newest summary's goal): the session has no name; `bonsai rename FILE --suggest` writes it as one"
        );
    }
    Ok(())
}

pub fn inspect(a: InspectArgs) -> Result<()> {
    let s = load_for_reading(&a.session.file, &load_settings(&cwd()))?;
    let o = report::InspectOptions {
        leaf: resolve_leaf(&s, a.at.leaf.as_deref())?,
        keep_recent_tokens: a.keep_recent_tokens,
        reserve_tokens: a.reserve_tokens,
        branch_target: a.branch_target.as_deref().map(|t| resolve_ref(&s, t)).transpose()?,
        branch_context_window: a.branch_context_window,
    };
    let mut out = report::inspect_json(&s, &o);
    // The release this answer reproduces, and why that one.
    out["piVersion"] = json!(s.pi.name());
    if let Some(f) = crate::store::pi_version::decided() {
        out["piVersionFollowed"] = json!({"version": f.version.name(), "source": f.source, "note": f.note});
    }
    print_json(&out);
    Ok(())
}

pub fn export(a: ExportArgs) -> Result<()> {
    use crate::engine::export::{self, Scope};
    let s = load_for_reading(&a.session.file, &load_settings(&cwd()))?;
    let scope = if a.tree {
        Scope::Tree
    } else {
        Scope::Path(resolve_leaf(&s, a.leaf.as_deref())?.ok_or_else(|| eyre!("the session has no entries"))?)
    };
    let by_extension = a.output.as_deref().and_then(export::format_for);
    let text = match a.format.as_deref().or(by_extension).unwrap_or("md") {
        "json" => export::json(&s, scope),
        "html" => export::html(&s, scope).into_bytes(),
        _ => export::markdown(&s, scope).into_bytes(),
    };
    // `-o -` is standard output, as for most tools (it wrote a file named "-").
    let output = a.output.as_ref().filter(|o| o.as_os_str() != "-");
    match output {
        None => {
            // A terminal (or whatever shows this later) never sees the session's escapes.
            out::stdout_bytes(&out::visible_bytes(&text));
        }
        Some(out) => {
            if out.exists() && !a.force {
                return Err(eyre!(
                    "{} exists; nothing written (--force replaces it, or choose another name)",
                    out.display()
                ));
            }
            crate::store::write_document(out, &text, a.force, &a.session.file)?;
            eprintln!("bonsai: wrote {} ({} bytes)", out.display(), text.len());
        }
    }
    Ok(())
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
