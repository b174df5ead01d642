//! `bonsai compact`: a compaction appended at a leaf.

use super::args::{CutBudget, LeafArg, SessionArg, WriteFlags};
use super::write_flow::{
    CompactionAt, apply, choose_summarizer, confirm, dry_run_calls, preview, progress, runtime, show, warn_new_branch,
};
use crate::engine::compaction::offline;
use crate::engine::edit::plan::{Write, WriteRequest};
use crate::store::{self};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use serde_json::{Value, json};
use std::io::IsTerminal;

#[derive(Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// What the summary should focus on (as after Pi's /compact).
    #[arg(long)]
    pub instructions: Option<String>,
    #[command(flatten)]
    pub budget: CutBudget,
    #[command(flatten)]
    pub at: LeafArg,
    /// offline (default without an API key) or llm.
    #[arg(long, value_parser = ["offline", "llm"])]
    pub summarizer: Option<String>,
    /// The summary's model as provider/id (default: compaction.model in Pi's settings, else
    /// the session's model). Needs its API key in Pi's auth.json or the environment.
    #[arg(long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn compact(a: CompactArgs) -> Result<()> {
    let at = CompactionAt::load(&a.session, &a.at, &a.budget)?;
    let mref = at.model_ref();
    let CompactionAt {
        s0,
        settings,
        registry,
        leaf,
        proj,
        cs,
        plan,
        ..
    } = &at;
    let (leaf, cs) = (*leaf, *cs);
    let wanted = a.model.clone().or(settings.summary_model());
    let sm = choose_summarizer(a.summarizer.as_deref(), wanted.as_deref(), registry, mref)?;
    if a.write.dry_run {
        dry_run_calls(sm.as_ref());
    }
    let summary = match &sm {
        None => offline::compaction_summary(s0, plan, a.instructions.as_deref()),
        Some(sm) => {
            let r = runtime()?.block_on(sm.compaction(
                s0,
                plan,
                a.instructions.as_deref(),
                Some(&proj.thinking_level),
                progress,
            ));
            if std::io::stderr().is_terminal() {
                eprintln!();
            }
            r.map_err(|e| eyre!("summarization failed: {e}; nothing written"))?
        }
    };
    let summarizer_name = sm
        .as_ref()
        .map(|m| format!("{}/{}", m.model.provider, m.model.id))
        .unwrap_or_else(|| "offline".into());
    let audit = crate::engine::compaction::audit::Before::of_plan(s0, plan, leaf).audit(&summary.text);
    let req = WriteRequest {
        write: Write::Compaction {
            leaf: s0.entries[leaf].id.to_string(),
            first_kept: s0.entries[plan.first_kept_entry].id.to_string(),
            summary,
            settings: cs,
        },
        // The summary was written for this state: if Pi appends meanwhile, refuse.
        seen: Some((s0.buf.len(), s0.entries.len())),
    };
    let entry = req
        .prepare(s0, store::clock::entropy(), store::clock::now_ms())?
        .entries;
    eprintln!(
        "bonsai: the summary's audit: {} (after writing, `bonsai audit` lists them and --give-back adds them)",
        audit.headline()
    );
    let mut audit_json = audit.to_json(s0);
    if let Value::Object(m) = &mut audit_json {
        m.remove("entryId");
    }
    let extra = json!({"summarizer": summarizer_name, "audit": audit_json});
    warn_new_branch(s0, leaf, "the compaction");
    if !a.write.yes {
        preview(&entry, a.write.json, extra.clone());
    }
    if !confirm(&a.write, "this compaction", &a.session.file)? {
        return Ok(());
    }
    let applied = apply(&a.session.file, &req, "a compaction", a.write.json)?;
    if a.write.json {
        show(&applied.prepared.entries, true, true, extra);
    }
    Ok(())
}
