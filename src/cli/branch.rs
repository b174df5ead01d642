//! `bonsai branch`: a branch summary's range when leaving for another entry.

use super::args::{LeafArg, SessionArg};
use super::common::{load_for_reading, print_json, resolve_leaf, resolve_ref, session_model, short_list};
use crate::engine::compaction::branch_summary;
use crate::engine::report;
use crate::engine::view::context;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use clap::Args;
use color_eyre::eyre::Result;
use serde_json::json;

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
