//! `bonsai navigate`: Pi's leaf moved to another entry, with a branch summary of the path left.

use super::args::{LeafArg, RequiredSessionArg, WriteFlags};
use super::common::{copy_to_clipboard, load, resolve_leaf, resolve_ref, session_model};
use super::write_flow::{apply, choose_summarizer, confirm, dry_run_calls, preview, progress, runtime, show};
use crate::engine::compaction::summary::Summary;
use crate::engine::edit::entries;
use crate::engine::edit::plan::{self, Write, WriteRequest};
use crate::engine::view::context;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use crate::store::{self};
use clap::Args;
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::json;

#[derive(Args, Debug)]
pub struct NavigateArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The entry to move to: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    /// Pi's three choices: none (a marker entry, no summary), default (a branch summary of
    /// the branch left), custom (one with --instructions).
    #[arg(long, value_parser = ["none", "default", "custom"], default_value = "none")]
    pub summary: String,
    /// Focus for the custom summary.
    #[arg(long)]
    pub instructions: Option<String>,
    /// The instructions replace the summary prompt's own instead of adding to it.
    #[arg(long)]
    pub replace_instructions: bool,
    /// offline (default without an API key) or llm.
    #[arg(long, value_parser = ["offline", "llm"])]
    pub summarizer: Option<String>,
    #[command(flatten)]
    pub at: LeafArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn navigate(a: NavigateArgs) -> Result<()> {
    if a.summary == "custom" && a.instructions.is_none() {
        bail!("--summary custom needs --instructions TEXT");
    }
    let s0 = load(&a.session.file)?;
    let settings = load_settings(&cwd());
    let registry = load_registry(&agent_dir());
    let target = resolve_ref(&s0, &a.target)?;
    let old_leaf = resolve_leaf(&s0, a.at.leaf.as_deref())?;
    if Some(target) == old_leaf {
        bail!("{}", plan::Refusal::AlreadyThere);
    }
    let old_proj = old_leaf.map(|l| context::project(&s0, &s0.path_to(l)));
    let window = old_proj.as_ref().and_then(|p| session_model(p, &registry).1);
    let budget = crate::engine::compaction::branch_summary::token_budget(window, settings.branch_reserve_tokens());
    let nav0 = entries::plan_navigation(&s0, old_leaf, target, budget);
    let wants = a.summary != "none" && !nav0.branch.entries.is_empty();
    let focus = a.instructions.as_deref();
    let summary: Option<Summary> = if wants {
        let model = old_proj.and_then(|p| p.model.and_then(|(p, m)| Some((p?, m?))));
        let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
        let wanted = settings
            .summary_model()
            .filter(|_| a.summarizer.as_deref() != Some("offline"));
        let sm = choose_summarizer(a.summarizer.as_deref(), wanted.as_deref(), &registry, mref)?;
        if a.write.dry_run {
            dry_run_calls(sm.as_ref());
        }
        match sm {
            None => Some(entries::offline_branch_summary(&s0, &nav0, focus)),
            Some(sm) => Some(
                runtime()?
                    .block_on(sm.branch(&s0, &nav0, focus, a.replace_instructions, progress))
                    .map_err(|e| eyre!("branch summarization failed: {e}; nothing written"))?,
            ),
        }
    } else {
        None
    };
    let req = WriteRequest {
        write: Write::Navigation {
            from: old_leaf.map(|l| s0.entries[l].id.to_string()),
            target: s0.entries[target].id.to_string(),
            summary,
            budget,
        },
        seen: Some((s0.buf.len(), s0.entries.len())),
    };
    let p0 = req.prepare(&s0, store::clock::entropy(), store::clock::now_ms())?;
    let what = if p0.branch_summary {
        "a branch summary"
    } else {
        "a navigation marker"
    };
    if !a.write.yes {
        preview(
            &p0.entries,
            a.write.json,
            json!({"editorText": p0.editor_text, "branchSummary": p0.branch_summary}),
        );
    }
    if !confirm(&a.write, what, &a.session.file)? {
        return Ok(());
    }
    let p = apply(&a.session.file, &req, what, a.write.json)?.prepared;
    if a.write.json {
        show(
            &p.entries,
            true,
            true,
            json!({"editorText": p.editor_text, "branchSummary": p.branch_summary}),
        );
    }
    if let Some(t) = p.editor_text.filter(|t| !t.is_empty()) {
        if !a.write.json {
            eprintln!("bonsai: the selected user message (for the editor):\n{t}");
        }
        copy_to_clipboard(&t);
    }
    Ok(())
}
