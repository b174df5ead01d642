//! `bonsai cut`: where Pi's compaction would cut, and what it would keep.

use super::args::{CutBudget, LeafArg, SessionArg};
use super::common::{load_for_reading, print_json, resolve_leaf, session_model, short_list};
use crate::engine::compaction::cut;
use crate::engine::report;
use crate::engine::view::context;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use clap::Args;
use color_eyre::eyre::Result;
use serde_json::json;

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
