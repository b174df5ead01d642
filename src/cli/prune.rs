//! `bonsai prune` and `bonsai edit`: a plan over the live context as a table (or JSON), and
//! with `--apply --yes` (or an edit with `--yes`) the plan written as Pi's `context_edit`
//! entries; `--undo` writes the edits back.

use super::args::{LeafArg, RequiredSessionArg, SessionArg, WriteFlags};
use super::common::{load, print_json, resolve_leaf, resolve_ref, session_model};
use super::write_flow::{apply, confirm, show, warn_new_branch};
use crate::engine::edit::plan::WriteRequest;
use crate::engine::edit::prune::{self, Change, Edit, Plan, Policy, Zone};
use crate::engine::load::session::Session;
use crate::engine::view::context;
use crate::engine::view::tokens::{self, Encoding};
use crate::store;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use serde_json::{Value, json};
use std::path::Path;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct PruneArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// output: old tool output past a budget (OpenCode's prune); by-zone: keep, distill and
    /// prune tool output by how full the context is ("zones", its old name, still works; the
    /// live policy called zones is another thing: it leaves whole turns out of what is sent).
    #[arg(long, value_parser = ["output", "by-zone", "zones"], default_value = "output")]
    pub policy: String,
    /// For --policy by-zone: the gauge's zone (auto) or a forced one.
    #[arg(long, value_parser = ["auto", "green", "yellow", "red"], default_value = "auto")]
    pub zone: String,
    /// Prune even when the candidates do not exceed the minimum.
    #[arg(long)]
    pub force: bool,
    /// Reproduce an extension's own rules (pi-context-pruning).
    #[arg(long, value_parser = ["pi-context-pruning"])]
    pub compat: Option<String>,
    /// Tokens the candidates must exceed (settings: contextPruning.minimum, default 20000).
    #[arg(long)]
    pub minimum: Option<u64>,
    /// Newest tool output kept, in tokens (contextPruning.protect, default 40000).
    #[arg(long)]
    pub protect: Option<u64>,
    /// Newest turns never touched (contextPruning.protectedTurns, default 2).
    #[arg(long)]
    pub protected_turns: Option<usize>,
    /// Tools whose output is never pruned, comma-separated (contextPruning.protectedTools).
    #[arg(long, value_delimiter = ',')]
    pub protected_tools: Option<Vec<String>>,
    /// Tools whose output may be pruned, comma-separated; empty for every tool
    /// (contextPruning.prunableTools, default read,bash,grep,find,ls,edit,write,apply_patch).
    #[arg(long, value_delimiter = ',')]
    pub prunable_tools: Option<Vec<String>>,
    #[command(flatten)]
    pub at: LeafArg,
    /// Also count exact tokens (o200k/cl100k) before and after.
    #[arg(long)]
    pub exact: bool,
    /// Write the plan as context edits (with --yes).
    #[arg(long)]
    pub apply: bool,
    /// Undo the last pruning or edit on this branch (with --yes).
    #[arg(long, conflicts_with = "apply")]
    pub undo: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("change").required(true).args(["hide", "replace", "replace_file", "restore"])))]
pub struct EditArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The entry: an id or idx:N.
    pub target: String,
    /// Leave it out of the model's context (user, custom and assistant messages without tool calls).
    #[arg(long)]
    pub hide: bool,
    /// Replace its text (an assistant keeps its tool calls).
    #[arg(long)]
    pub replace: Option<String>,
    /// Replace its text with a file's.
    #[arg(long)]
    pub replace_file: Option<PathBuf>,
    /// Back to the original content.
    #[arg(long)]
    pub restore: bool,
    #[command(flatten)]
    pub at: LeafArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

/// Said once with every write: older Pi reads the entries but does not apply them.
const OLD_PI: &str = "context edits take effect in Pi 0.87 and newer; older Pi keeps them in the file and ignores them";

/// The gauge's zone at the leaf (Pi's estimate against window − reserve), if the window is known.
fn gauge_zone(s: &Session, leaf: usize) -> (Option<Zone>, Encoding) {
    let settings = load_settings(&cwd());
    let registry = load_registry(&agent_dir());
    let proj = context::project(s, &s.path_to(leaf));
    let (model, window) = session_model(&proj, &registry);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let encoding = Encoding::for_model(mref.map(|m| m.0), mref.map(|m| m.1));
    let reserve = settings.reserve_tokens(mref);
    let tokens = context::estimate_projected_tokens(s, &proj).tokens;
    let zone = window.map(|w| prune::zone_of(tokens, w.saturating_sub(reserve), settings.gauge_zones()));
    (zone, encoding)
}

/// Exact counts of each item's message now and after (the replacement's text).
fn exact_counts(s: &Session, plan: &Plan, enc: Encoding) -> Vec<(u64, u64)> {
    let proj = context::project(s, &s.path_to(plan.leaf));
    plan.items
        .iter()
        .map(|i| {
            let now = proj
                .messages()
                .find(|m| m.source == i.entry && m.part == context::Part::Main)
                .map(|m| tokens::exact_count(enc, &context::materialize(s, m)))
                .unwrap_or(0);
            let after = match (&i.change, &i.replacement) {
                (Change::Protected, _) => now,
                (_, Value::Null) => 0,
                (_, r) => {
                    let m =
                        json!({"role": i.role.as_str(), "content": r.get("content").cloned().unwrap_or(Value::Null)});
                    tokens::exact_count(enc, &m)
                }
            };
            (now, after)
        })
        .collect()
}

fn plan_json(s: &Session, plan: &Plan, exact: Option<&[(u64, u64)]>) -> Value {
    let items: Vec<Value> = plan
        .items
        .iter()
        .enumerate()
        .map(|(k, i)| {
            let mut o = json!({
                "entryId": s.entries[i.entry].id.to_string(),
                "entryIdx": i.entry,
                "turn": i.turn,
                "role": i.role.as_str(),
                "tool": i.tool,
                "keyArg": i.key_arg.as_ref().map(|(k, v)| json!({"name": k, "value": v})),
                "change": i.change.name(),
                "tokensBefore": i.tokens_before,
                "tokensAfter": i.tokens_after,
            });
            if let Some(e) = exact {
                o["exactBefore"] = json!(e[k].0);
                o["exactAfter"] = json!(e[k].1);
            }
            if i.change.writes() {
                o["replacement"] = i.replacement.clone();
            }
            o
        })
        .collect();
    json!({
        "policy": plan.what,
        "zone": plan.zone.map(|z| z.name()),
        "leafId": s.entries[plan.leaf].id.to_string(),
        "tokensNow": plan.tokens_now,
        "estimateNow": plan.estimate_now(),
        "tokensAfter": plan.tokens_after,
        "change": plan.change(),
        "saved": plan.saved(),
        "edits": plan.edits().count(),
        "compactFrom": plan.compact_from.map(|i| s.entries[i].id.to_string()),
        "note": plan.note,
        "items": items,
    })
}

fn print_table(s: &Session, plan: &Plan, exact: Option<&[(u64, u64)]>) {
    use crate::engine::units::Basis;
    let t = prune::thousands;
    if plan.usage_gap().is_some() {
        println!(
            "note: Pi's figure now is {} (the last reply's usage); it counts the edits from its next call",
            t(plan.tokens_now.round() as u64)
        );
    }
    // Before → after on the estimate; Pi's own figure apart, labelled.
    if plan.edits().count() == 0 {
        println!(
            "{} · leaf {} · context {} tokens ({}) · {} {} · no edit to write",
            plan.what,
            s.entries[plan.leaf].id,
            t(plan.estimate_now()),
            Basis::Estimate.label(),
            Basis::Pi.label(),
            t(plan.tokens_now.round() as u64),
        );
    } else {
        println!(
            "{} · leaf {} · context {} → {} tokens ({}, {}){}",
            plan.what,
            s.entries[plan.leaf].id,
            t(plan.estimate_now()),
            t(plan.tokens_after),
            Basis::Estimate.label(),
            prune::signed_tokens(plan.change()),
            match exact {
                Some(e) => {
                    let (b, a): (u64, u64) = plan
                        .items
                        .iter()
                        .zip(e)
                        .filter(|(i, _)| i.change.writes())
                        .fold((0, 0), |(b, a), (_, x)| (b + x.0, a + x.1));
                    format!(" · exact on the edited: {} → {}", t(b), t(a))
                }
                None => String::new(),
            }
        );
    }
    if !plan.items.is_empty() {
        println!(
            "  {:<10} {:>4}  {:<10} {:<36} {:<10} {:>20}{}",
            "entry",
            "turn",
            "tool",
            "key",
            "change",
            "tokens (est)",
            if exact.is_some() { "   exact" } else { "" }
        );
    }
    for (k, i) in plan.items.iter().enumerate() {
        let key = i
            .key_arg
            .as_ref()
            .map(|(k, v)| {
                let v: String = v
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .take(28)
                    .collect();
                format!("{k}={v}")
            })
            .unwrap_or_default();
        let tokens = format!("{} → {}", t(i.tokens_before), t(i.tokens_after));
        let ex = exact
            .map(|e| format!("   {} → {}", t(e[k].0), t(e[k].1)))
            .unwrap_or_default();
        println!(
            "  {:<10} {:>4}  {:<10} {:<36} {:<10} {:>20}{ex}",
            s.entries[i.entry].id.to_string(),
            i.turn,
            i.tool.as_deref().unwrap_or(i.role.as_str()),
            key,
            i.change.name(),
            tokens,
        );
    }
    let count = |c: &str| plan.items.iter().filter(|i| i.change.name() == c).count();
    let parts: Vec<String> = ["pruned", "distilled", "hidden", "replaced", "restored", "protected"]
        .iter()
        .filter(|c| count(c) > 0)
        .map(|c| format!("{} {c}", count(c)))
        .collect();
    if !parts.is_empty() {
        println!("{}: {} tokens saved", parts.join(", "), t(plan.saved()));
    }
    if let Some(c) = plan.compact_from {
        println!(
            "proposed: compact, keeping from {} (`bonsai compact {{FILE}} --keep-recent-tokens …`, or c in the TUI there)",
            s.entries[c].id
        );
    }
    println!("{}", plan.note);
}

/// Show the plan; with `apply` (and --yes) write it.
fn finish(
    file: &Path,
    s: &Session,
    plan: &Plan,
    apply_it: bool,
    undoes: Option<&str>,
    a: &super::args::WriteFlags,
    exact: bool,
) -> Result<()> {
    let enc = gauge_zone(s, plan.leaf).1;
    let counts = exact.then(|| exact_counts(s, plan, enc));
    if a.json && !apply_it {
        print_json(&plan_json(s, plan, counts.as_deref()));
        return Ok(());
    }
    if !a.json {
        print_table(s, plan, counts.as_deref());
    }
    if !apply_it {
        return Ok(());
    }
    if plan.is_empty() {
        eprintln!("bonsai: nothing to write");
        return Ok(());
    }
    let req = WriteRequest {
        write: plan.to_write(s, undoes),
        // Decided on this state: if Pi appends meanwhile, refuse (look again).
        seen: Some((s.buf.len(), s.entries.len())),
    };
    let entries = req.prepare(s, store::clock::entropy(), store::clock::now_ms())?.entries;
    warn_new_branch(s, plan.leaf, "the context edits");
    let extra = json!({ "plan": plan_json(s, plan, counts.as_deref()) });
    let n = plan.edits().count();
    let what = format!("{n} context edit{}", if n == 1 { "" } else { "s" });
    if !a.yes && a.json {
        show(&entries, true, false, extra.clone());
    }
    if !confirm(a, &what, file)? {
        return Ok(());
    }
    let applied = apply(file, &req, &what, a.json)?;
    eprintln!("bonsai: note: {OLD_PI}");
    if a.json {
        show(&applied.prepared.entries, true, true, extra);
    }
    Ok(())
}

pub fn prune(a: PruneArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?.ok_or_else(|| eyre!("the session has no entries"))?;
    let settings = load_settings(&cwd());
    if a.undo {
        // The same undo as `bonsai undo` (Pi resumes where the edits started: one line), when
        // the edits are bonsai's last action.
        let action = prune::last_action(&s, leaf)
            .ok_or_else(|| eyre!("nothing undone: {}", prune::EditRefusal::NothingToUndo))?;
        let u = crate::engine::edit::undo::plan(&s).map_err(|e| eyre!("nothing undone: {e}"))?;
        if u.undoes != action.record {
            return Err(eyre!(
                "nothing undone: bonsai's last action is {}, not these context edits; `bonsai undo` undoes it first",
                u.what
            ));
        }
        return super::write_flow::write_undo(&a.session.file, &s, u, &a.write);
    }
    let mut ps = settings.prune_settings();
    if let Some(n) = a.minimum {
        ps.minimum = n;
    }
    if let Some(n) = a.protect {
        ps.protect = n;
    }
    if let Some(n) = a.protected_turns {
        ps.protected_turns = n;
    }
    if let Some(l) = &a.protected_tools {
        ps.protected_tools = l.clone();
    }
    if let Some(l) = &a.prunable_tools {
        ps.prunable_tools = l.iter().filter(|t| !t.is_empty()).cloned().collect();
    }
    ps.compat = a.compat.is_some();
    let (gauge, _) = gauge_zone(&s, leaf);
    let forced = match a.zone.as_str() {
        "green" => Some(Zone::Green),
        "yellow" => Some(Zone::Yellow),
        "red" => Some(Zone::Red),
        _ => None,
    };
    let by_zone = matches!(a.policy.as_str(), "by-zone" | "zones");
    let policy = if by_zone { Policy::Zones(forced) } else { Policy::Output };
    if by_zone && forced.is_none() && gauge.is_none() {
        eprintln!("bonsai: the model's context window is unknown, so the zone is taken as green (--zone chooses one)");
    }
    let plan = prune::plan(&s, leaf, policy, &ps, a.force, gauge.unwrap_or(Zone::Green));
    if !settings.context_pruning_enabled() {
        eprintln!(
            "bonsai: note: contextPruning.enabled is false: Pi's pruning extension is off; bonsai's edits still apply"
        );
    }
    finish(&a.session.file, &s, &plan, a.apply, None, &a.write, a.exact)
}

pub fn edit(a: EditArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?.ok_or_else(|| eyre!("the session has no entries"))?;
    let target = resolve_ref(&s, &a.target)?;
    let change = if a.hide {
        Edit::Hide
    } else if a.restore {
        Edit::Restore
    } else if let Some(t) = &a.replace {
        Edit::Replace(t.clone())
    } else if let Some(f) = &a.replace_file {
        Edit::Replace(std::fs::read_to_string(f).map_err(|e| eyre!("{}: {e}", f.display()))?)
    } else {
        // clap asks for one of them; said here too rather than assumed.
        return Err(eyre!(
            "say what to change: --hide, --restore, --replace TEXT or --replace-file FILE"
        ));
    };
    let plan = prune::edit(&s, leaf, target, &change).map_err(|e| eyre!("{e}"))?;
    finish(&a.session.file, &s, &plan, true, None, &a.write, false)
}
