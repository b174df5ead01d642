//! `bonsai inspect`: one entry, whole.

use super::args::{LeafArg, SessionArg};
use super::common::{load_for_reading, print_json, resolve_leaf, resolve_ref};
use crate::engine::report;
use crate::store::config::{cwd, load_settings};
use clap::Args;
use color_eyre::eyre::Result;
use serde_json::json;

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
