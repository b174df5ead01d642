//! The compactions of a live session: `turn_end` decides (the latch), bonsai's summary or
//! Pi's preparation is made, and every summary about to be written is audited and mended
//! (`summarize`, `mend`); `audit` says what a written one lost.

use super::protocol::{
    Audit, AuditAnswer, Compaction, CompactionDetails, CompactionDone, CompactionDoneAnswer, Fail, FileOps, Mend,
    MendAnswer, ModelRef, Preparation, PreparationSettings, Summarize, SummarizeAnswer, TurnEnd, TurnEndAnswer, bad,
};
use super::served::Served;
use crate::engine::compaction::audit as compaction_audit;
use crate::engine::compaction::cut::CompactionPlan;
use crate::engine::compaction::offline;
use crate::engine::compaction::slices::SliceParams;
use crate::engine::compaction::strategy::Strategy;
use crate::engine::compaction::summary::{Summary, SummaryInput};
use crate::engine::live::{self, Latch, Summarizer};
use crate::engine::load::session::Session;
use crate::engine::units;
use crate::engine::view::context;
use crate::store::config::agent_dir;

pub fn turn_end(state: &mut Served, p: TurnEnd) -> Result<TurnEndAnswer, Fail> {
    let (window, reserve) = state.window_and_reserve(p.usage.as_ref(), p.model.as_ref());
    let threshold = window.saturating_sub(reserve);
    // The whole context: Pi's figure is what was sent; what bonsai left out counts too.
    let whole = p.usage.as_ref().and_then(|u| u.tokens).map(|u| {
        state
            .state
            .whole_after_reply(u, threshold, &state.live)
            .unwrap_or((u, crate::engine::edit::prune::zone_of(u, threshold, state.live.zones)))
    });
    let d = live::early_compaction(
        &state.latch,
        whole.map(|w| w.0),
        whole.map(|w| w.1),
        threshold,
        &state.live,
    );
    state.latch = d.latch.clone();
    state.last_decision = Some(d.reason.clone());
    let mut out = TurnEndAnswer {
        compact: false,
        zone: d.zone.map(|z| z.name().to_string()),
        whole: whole.map(|w| w.0),
        reason: d.reason.clone(),
        latch: d.latch.name(),
        summarizer: state.live.summarizer.name().to_string(),
        notice: None,
        preparation: None,
        draft: None,
        audit: None,
    };
    if !d.compact {
        return Ok(out);
    }
    // From here the latch is in flight: any failure ends this episode's attempt.
    let mref = ModelRef::pair(p.model.as_ref());
    let file = state.session_of(p.session_file.as_deref())?;
    let keep = state.live_keep(mref, window);
    let (s, leaf, plan) = match state.plan_keeping(&file, p.leaf_id.as_deref(), mref, keep) {
        Ok(x) => x,
        Err(Fail(_, why)) => {
            state.latch = Latch::Failed(why.clone());
            state.last_decision = Some(format!("red, but {why}"));
            out.latch = state.latch.name();
            out.reason = format!("red, but {why}");
            out.notice = Some(format!(
                "bonsai: the context is in red ({}) but {why}; the newest turns that fit are sent, and Pi compacts at its own threshold",
                d.reason.trim_start_matches("red: ")
            ));
            return Ok(out);
        }
    };
    out.notice = Some(format!(
        "bonsai compacts ({}): ~{} tokens summarized by {}, ~{} kept",
        d.reason,
        units::count(plan.summarized_tokens() + plan.turn_prefix_tokens()),
        match &state.live.summarizer {
            Summarizer::Pi => "Pi's summarizer".to_string(),
            Summarizer::Offline => "bonsai's offline summarizer".to_string(),
            Summarizer::Strategy(x) => format!("bonsai's {x} strategy"),
        },
        units::count(plan.kept_tokens()),
    ));
    out.compact = true;
    if state.live.summarizer == Summarizer::Pi {
        out.preparation = Some(preparation(&s, &plan));
        return Ok(out);
    }
    match bonsai_summary(state, &s, &plan, None, mref) {
        Ok(mut summary) => {
            let a = compaction_audit::Before::of_plan(&s, &plan, leaf).audit(&summary.text);
            let (text, line) = mended(state, &a);
            summary.text = text;
            let mut draft = compaction(&s, &plan, &summary);
            // Pi computes `tokensBefore` when it appends a draft.
            draft.tokens_before = None;
            draft.kind = Some("compaction".into());
            out.draft = Some(draft);
            state.last_audit = Some(line.clone());
            out.audit = Some(line);
            // Pi appends a returned draft at this boundary: the episode has its compaction.
            state.latch = Latch::Done;
            state.compactions += 1;
        }
        Err(Fail(_, why)) => {
            state.latch = Latch::Failed(format!("the summary failed: {why}"));
            out.compact = false;
            out.reason = format!("red, but the summary failed: {why}");
            out.notice = Some(format!(
                "bonsai: early compaction failed ({why}); Pi compacts at its own threshold"
            ));
        }
    }
    out.latch = state.latch.name();
    Ok(out)
}

/// The latch after the package's compaction (Pi's summary on bonsai's preparation).
pub fn compaction_done(state: &mut Served, p: CompactionDone) -> CompactionDoneAnswer {
    if state.latch == Latch::InFlight {
        state.latch = if p.ok {
            Latch::Done
        } else {
            Latch::Failed(p.error.unwrap_or_else(|| "the summary failed".into()))
        };
    }
    if p.ok {
        state.compactions += 1;
    }
    CompactionDoneAnswer {
        latch: state.latch.name(),
    }
}

/// bonsai's summary of a plan: offline, or a strategy on the summary model (Pi's settings'
/// `bonsai.summaryModel`, else the session's model) with Pi's keys.
fn bonsai_summary(
    state: &Served,
    s: &Session,
    plan: &CompactionPlan,
    instructions: Option<&str>,
    model: Option<(&str, &str)>,
) -> Result<Summary, Fail> {
    use crate::llm::strategies::{self, Progress};
    let strategy = match &state.live.summarizer {
        Summarizer::Strategy(name) => Strategy::parse(name).unwrap_or(Strategy::Offline),
        _ => Strategy::Offline,
    };
    if strategy == Strategy::Offline {
        return Ok(offline::compaction_summary(s, plan, instructions));
    }
    let wanted = state.settings.summary_model();
    let sm = crate::llm::summarize::Summarizer::resolve(&state.registry, &agent_dir(), wanted.as_deref(), model)
        .map_err(|e| Fail("failed", format!("{}: no model for it ({e})", strategy.name())))?;
    let input = SummaryInput::of_plan(s, plan);
    let thinking = context::project(s, &plan.projection.path).thinking_level;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Fail("failed", e.to_string()))?;
    // Retries are said on stderr, which the package keeps for its error messages.
    let on = |_: usize, e: Progress| {
        if let Progress::Retry { attempt, wait, reason } = e {
            eprintln!(
                "bonsai: {}: {reason}; retry {attempt} in {:.1}s",
                strategy.name(),
                wait.as_secs_f64()
            )
        }
    };
    let results = rt.block_on(strategies::run_group(
        Some(&sm),
        &[strategy],
        s,
        plan,
        &input,
        &SliceParams::default(),
        instructions,
        Some(&thinking),
        &on,
        &|_, _| {},
    ));
    match results.into_iter().next() {
        Some(Ok(o)) => Ok(Summary {
            usage: (o.calls > 0).then(|| o.usage.to_pi(&sm.model)),
            text: o.text,
        }),
        Some(Err(e)) => Err(Fail("failed", format!("{} failed: {e}", strategy.name()))),
        None => Err(Fail("failed", "no summary".into())),
    }
}

/// Pi's `CompactionResult` fields for a summary.
fn compaction(s: &Session, plan: &CompactionPlan, summary: &Summary) -> Compaction {
    let (read, modified) = plan.file_ops.lists();
    Compaction {
        summary: summary.text.clone(),
        first_kept_entry_id: s.entries[plan.first_kept_entry].id.to_string(),
        tokens_before: Some(crate::engine::load::js::num(plan.tokens_before)),
        details: CompactionDetails {
            read_files: read,
            modified_files: modified,
        },
        usage: summary.usage.clone(),
        kind: None,
    }
}

/// Pi's `CompactionPreparation` for the plan (what Pi's `prepareCompaction` returns on the
/// same path): the package hands it to Pi's own `compact`.
fn preparation(s: &Session, plan: &CompactionPlan) -> Preparation {
    let m = |v: &[context::ContextMessage]| v.iter().map(|x| context::materialize(s, x)).collect();
    Preparation {
        first_kept_entry_id: s.entries[plan.first_kept_entry].id.to_string(),
        messages_to_summarize: m(&plan.messages_to_summarize),
        turn_prefix_messages: m(&plan.turn_prefix_messages),
        is_split_turn: plan.is_split_turn,
        tokens_before: crate::engine::load::js::num(plan.tokens_before),
        previous_summary: crate::engine::compaction::cut::previous_summary(s, plan),
        file_ops: FileOps {
            read: plan.file_ops.read.clone(),
            written: plan.file_ops.written.clone(),
            edited: plan.file_ops.edited.clone(),
        },
        settings: PreparationSettings {
            enabled: true,
            reserve_tokens: plan.settings.reserve_tokens,
            keep_recent_tokens: plan.settings.keep_recent_tokens,
        },
    }
}

/// The one line said after a compaction: what its summary lost, or that it kept everything.
fn audit_line(a: &compaction_audit::Audit) -> String {
    if a.lost().next().is_some() {
        format!("bonsai: the compaction {} — /bonsai to review (a on it)", a.headline())
    } else {
        format!("bonsai: the compaction {}", a.headline())
    }
}

/// A summary about to be written, mended (`bonsai.live.mend`): what its audit found lost
/// given back word for word within `bonsai.live.mendTokens`. Returns the text to write and
/// the line that says what was lost and given back.
fn mended(state: &Served, a: &compaction_audit::Audit) -> (String, String) {
    let on = state.live.mend && state.live.policy != live::LivePolicy::Off;
    match compaction_audit::mend(a, state.live.mend_tokens).filter(|_| on) {
        Some(m) if m.given > 0 => {
            let rest = if m.left > 0 {
                format!("; {} more did not fit (bonsai_recall finds them)", m.left)
            } else {
                String::new()
            };
            (
                m.summary,
                format!(
                    "bonsai: the compaction {}; {} given back word for word{rest}",
                    a.headline(),
                    units::plural(m.given as u64, "item", "items")
                ),
            )
        }
        _ => (a.summary.clone(), audit_line(a)),
    }
}

/// A compaction's summary not written yet (Pi's, made for bonsai's compaction or in Pi's
/// compaction hook), audited against the range the plan at `leafId` summarizes and mended.
/// `firstKeptEntryId`, when given, must be the plan's: another range is not audited.
pub fn mend(state: &mut Served, p: Mend) -> Result<MendAnswer, Fail> {
    let file = state.session_of(p.session_file.as_deref())?;
    let mref = ModelRef::pair(p.model.as_ref());
    let leaf_id = p.leaf_id.as_deref();
    let (mut s, mut leaf, mut plan) = state.plan_at(&file, leaf_id, mref)?;
    let mut first_kept = s.entries[plan.first_kept_entry].id.to_string();
    let wanted = p.first_kept_entry_id.as_deref();
    // bonsai's own compaction keeps what the zones policy sends (`live_keep`).
    if let Some(w) = wanted
        && w != first_kept
        && let Some(keep) = state.live_keep(mref, state.window_and_reserve(p.usage.as_ref(), p.model.as_ref()).0)
    {
        (s, leaf, plan) = state.plan_keeping(&file, leaf_id, mref, Some(keep))?;
        first_kept = s.entries[plan.first_kept_entry].id.to_string();
    }
    if let Some(pi_first) = wanted
        && pi_first != first_kept
    {
        return Ok(MendAnswer {
            summary: p.summary,
            changed: false,
            line: format!("bonsai: Pi cuts at {pi_first}, bonsai at {first_kept}: the summary was not audited"),
            lost: None,
            total: None,
        });
    }
    let a = compaction_audit::Before::of_plan(&s, &plan, leaf).audit(&p.summary);
    let (text, line) = mended(state, &a);
    state.last_audit = Some(line.clone());
    Ok(MendAnswer {
        changed: text != p.summary,
        summary: text,
        line,
        lost: Some(a.lost().count()),
        total: Some(a.items.len()),
    })
}

/// What a compaction lost: the entry `entryId` of the session (one Pi wrote), or `summary`
/// as a compaction at `leafId` would write it (one not appended yet). The line is kept for
/// `/ctx-status`.
pub fn audit(state: &mut Served, p: Audit) -> Result<AuditAnswer, Fail> {
    let file = state.session_of(p.session_file.as_deref())?;
    let a = match (p.entry_id.as_deref(), p.summary.as_deref()) {
        (Some(id), _) => {
            let s = crate::store::load_session(&file)
                .map_err(|e| Fail("failed", format!("{}: {e}", file.display())))?
                .read_as(state.pi);
            let e = s
                .idx_of(id)
                .ok_or_else(|| Fail("failed", format!("entry {id} is not in {}", file.display())))?;
            compaction_audit::audit(&s, e)
                .ok_or_else(|| bad(format!("entry {id} is not a compaction or a branch summary")))?
        }
        (None, Some(summary)) => {
            let mref = ModelRef::pair(p.model.as_ref());
            let (s, leaf, plan) = state.plan_at(&file, p.leaf_id.as_deref(), mref)?;
            compaction_audit::Before::of_plan(&s, &plan, leaf).audit(summary)
        }
        (None, None) => return Err(bad("audit needs \"entryId\", or \"summary\" with \"leafId\"")),
    };
    let line = audit_line(&a);
    state.last_audit = Some(line.clone());
    Ok(AuditAnswer {
        line,
        lost: a.lost().count(),
        total: a.items.len(),
        headline: a.headline(),
    })
}

/// bonsai's summary for Pi's `session_before_compact` hook, unless Pi's own is wanted or Pi
/// cuts elsewhere.
pub fn summarize(state: &mut Served, p: Summarize) -> Result<SummarizeAnswer, Fail> {
    let pi_own = |reason: String| SummarizeAnswer {
        compaction: None,
        reason: Some(reason),
        summarizer: None,
        line: None,
    };
    if state.live.summarizer == Summarizer::Pi {
        return Ok(pi_own("bonsai.live.summarizer is pi: Pi's own summary".into()));
    }
    let mref = ModelRef::pair(p.model.as_ref());
    let file = state.session_of(p.session_file.as_deref())?;
    let (s, _, plan) = state.plan_at(&file, p.leaf_id.as_deref(), mref)?;
    let first_kept = s.entries[plan.first_kept_entry].id.to_string();
    if let Some(pi_first) = p.first_kept_entry_id.as_deref()
        && pi_first != first_kept
    {
        // Never summarize a different range than the one Pi keeps from.
        return Ok(pi_own(format!(
            "Pi cuts at {pi_first}, bonsai at {first_kept}: Pi's own summary is used"
        )));
    }
    let mut summary = bonsai_summary(state, &s, &plan, p.custom_instructions.as_deref(), mref)?;
    let leaf = p
        .leaf_id
        .as_deref()
        .and_then(|id| s.idx_of(id))
        .or_else(|| s.leaf())
        .unwrap_or(0);
    let a = compaction_audit::Before::of_plan(&s, &plan, leaf).audit(&summary.text);
    let (text, line) = mended(state, &a);
    summary.text = text;
    state.last_audit = Some(line.clone());
    state.compactions += 1;
    Ok(SummarizeAnswer {
        compaction: Some(compaction(&s, &plan, &summary)),
        summarizer: Some(state.live.summarizer.name().to_string()),
        line: Some(line),
        reason: None,
    })
}
