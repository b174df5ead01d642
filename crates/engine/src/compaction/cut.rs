//! Where a compaction would cut: Pi 0.87.1's `prepareCompaction` and
//! `findProjectedCutPoint`, on the projected path.

use crate::compaction::serialize::FileOps;
use crate::load::entry::{Kind, Role};
use crate::load::session::Session;
use crate::view::context::{self, ContextMessage, Projection};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

impl CompactionSettings {
    /// Pi's output limit for a compaction's history summary: 0.8 × `reserveTokens`.
    pub fn history_summary_limit(&self) -> u64 {
        self.reserve_tokens * 8 / 10
    }

    /// Pi's output limit for a split turn's prefix summary: 0.5 × `reserveTokens`.
    pub fn turn_prefix_limit(&self) -> u64 {
        self.reserve_tokens / 2
    }
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCompaction {
    /// The leaf is a compaction (Pi: "Already compacted").
    AlreadyCompacted,
    /// Nothing before the cut (Pi: "Nothing to compact (session too small)").
    NothingToCompact,
}

impl NoCompaction {
    pub fn reason(&self) -> &'static str {
        match self {
            NoCompaction::AlreadyCompacted => "last entry on path is a compaction (Pi: \"Already compacted\")",
            NoCompaction::NothingToCompact => "nothing to summarize (Pi: \"Nothing to compact\")",
        }
    }

    /// What the user can do about it (the reason itself is Pi's wording, compared with the oracle).
    pub fn next_step(&self) -> &'static str {
        match self {
            NoCompaction::AlreadyCompacted => "continue the session in Pi first, or compact from another leaf",
            NoCompaction::NothingToCompact => {
                "keep fewer recent tokens (`--keep-recent-tokens`, or `-` in the preview) so the cut point moves later"
            }
        }
    }
}

/// The cut-point preview: everything Pi's `prepareCompaction` decides, by reference.
#[derive(Debug, Clone)]
pub struct CompactionPlan {
    pub projection: Projection,
    /// Projected-entry index of the first kept entry.
    pub first_kept: usize,
    pub first_kept_entry: usize,
    pub is_split_turn: bool,
    /// Projected-entry index where the split turn starts.
    pub turn_start: Option<usize>,
    pub tokens_before: f64,
    /// Projected-entry range that is summarized as history.
    pub history: std::ops::Range<usize>,
    pub messages_to_summarize: Vec<ContextMessage>,
    pub turn_prefix_messages: Vec<ContextMessage>,
    /// Projected index of the previous compaction (the boundary), if any.
    pub previous_compaction: Option<usize>,
    pub file_ops: FileOps,
    pub settings: CompactionSettings,
}

impl CompactionPlan {
    pub fn previous_compaction_entry(&self) -> Option<usize> {
        self.previous_compaction.map(|p| self.projection.entries[p].source)
    }
    /// Pi's estimate of what stays verbatim: every projected message from the cut on.
    pub fn kept_tokens(&self) -> u64 {
        self.projection.entries[self.first_kept..]
            .iter()
            .flat_map(|e| &e.messages)
            .map(|m| m.est_tokens)
            .sum()
    }
    /// Pi's per-message estimate of the whole context before the compaction: the basis
    /// [`Self::kept_tokens`] is on, and the summary after it.
    pub fn estimate_before(&self) -> u64 {
        self.projection.messages().map(|m| m.est_tokens).sum()
    }
    pub fn summarized_tokens(&self) -> u64 {
        self.messages_to_summarize.iter().map(|m| m.est_tokens).sum()
    }
    pub fn turn_prefix_tokens(&self) -> u64 {
        self.turn_prefix_messages.iter().map(|m| m.est_tokens).sum()
    }
    pub fn turn_start_entry(&self) -> Option<usize> {
        self.turn_prefix_messages.first().map(|m| m.source)
    }
}

fn is_turn_start(s: &Session, pe: &context::ProjectedEntry) -> bool {
    !s.entries[pe.source].is_compaction() && pe.messages.iter().any(|m| m.role.is_turn_start())
}

struct Cut {
    first_kept: usize,
    turn_start: Option<usize>,
    split: bool,
}

fn find_projected_cut_point(
    s: &Session,
    entries: &[context::ProjectedEntry],
    start: usize,
    end: usize,
    keep: u64,
) -> Cut {
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| {
            !s.entries[entries[i].source].is_compaction() && entries[i].messages.iter().any(|m| m.role.is_cut_point())
        })
        .collect();
    if cut_points.is_empty() {
        return Cut {
            first_kept: start,
            turn_start: None,
            split: false,
        };
    }
    let mut acc = 0u64;
    let mut exceeded = false;
    let mut cut = cut_points[0];
    for i in (start..end).rev() {
        let t: u64 = entries[i].messages.iter().map(|m| m.est_tokens).sum();
        if t == 0 {
            continue;
        }
        acc += t;
        if acc >= keep {
            exceeded = true;
            cut = cut_points
                .iter()
                .copied()
                .find(|&c| c >= i)
                .or(cut_points.last().copied())
                .unwrap_or(cut);
            break;
        }
    }
    // A failed attempt omitted by edits after the last visible input does not hold the cut.
    let suffix = &entries[(cut + 1).min(end)..end];
    let intrinsically_visible = |pe: &context::ProjectedEntry| {
        !matches!(s.entries[pe.source].kind, Kind::ContextEdit { .. })
            && !context::intrinsic_messages(s, pe.source).is_empty()
    };
    let is_omitted = |pe: &context::ProjectedEntry| intrinsically_visible(pe) && pe.messages.is_empty();
    let omitted_ids: Vec<&str> = suffix
        .iter()
        .filter(|pe| is_omitted(pe))
        .map(|pe| &*s.entries[pe.source].id)
        .collect();
    let external_replacement = suffix.iter().any(|pe| match &s.entries[pe.source].kind {
        Kind::ContextEdit(ce) if !ce.replacement_null => !omitted_ids.contains(&ce.target_id.as_deref().unwrap_or("")),
        _ => false,
    });
    let recovery = exceeded
        && !external_replacement
        && suffix.iter().any(|pe| {
            matches!(&s.entries[pe.source].kind, Kind::Message(m) if m.facts().is(&Role::Assistant)) && is_omitted(pe)
        })
        && suffix
            .iter()
            .all(|pe| !s.entries[pe.source].is_compaction() && (!intrinsically_visible(pe) || is_omitted(pe)));
    if recovery {
        cut += 1;
    }
    while cut > start {
        let prev = &entries[cut - 1];
        if s.entries[prev.source].is_compaction() || !prev.messages.is_empty() {
            break;
        }
        cut -= 1;
    }
    let starts = is_turn_start(s, &entries[cut]);
    let turn_start = if starts {
        None
    } else {
        (start..=cut).rev().find(|&i| is_turn_start(s, &entries[i]))
    };
    Cut {
        first_kept: cut,
        split: !starts && turn_start.is_some(),
        turn_start,
    }
}

fn messages_for_summary(s: &Session, entries: &[context::ProjectedEntry]) -> Vec<ContextMessage> {
    entries
        .iter()
        .filter(|pe| !s.entries[pe.source].is_compaction())
        .flat_map(|pe| pe.messages.iter().filter(|m| m.role != Role::System).cloned())
        .collect()
}

/// Pi's `extractFileOpsFromMessage` for a projected message (edits included): an
/// assistant's tool calls, and from 1.5.2 the calls a tool result records as `nestedCalls`
/// (calls made from a codemode script).
pub fn add_file_ops(s: &Session, m: &ContextMessage, ops: &mut FileOps) {
    if m.role == Role::ToolResult && s.pi.nested_call_file_ops() {
        // Only a result that names them is decoded (a long cut has thousands of results).
        if s.names_nested_calls(m.source) {
            let v = context::materialize(s, m);
            for call in v
                .get("nestedCalls")
                .and_then(|n| n.get("calls"))
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten()
            {
                if let (Some(name), Some(path)) = (
                    call.get("name").and_then(|n| n.as_str()),
                    call.get("arguments")
                        .and_then(|a| a.get("path"))
                        .and_then(|p| p.as_str()),
                ) && !path.is_empty()
                {
                    ops.add_tool_call(name, path);
                }
            }
        }
        return;
    }
    if m.role != Role::Assistant {
        return;
    }
    if m.replaced_by.is_some() {
        let v = context::materialize(s, m);
        add_file_ops_value(&v, ops);
        return;
    }
    let add = |known: &crate::load::entry::MessageMeasures, ops: &mut FileOps| {
        for tc in &known.tool_calls {
            if let Some(p) = &tc.path {
                ops.add_tool_call(&tc.name, p);
            }
        }
    };
    match (&s.entries[m.source].kind, m.part) {
        // The reply's measures alone (a long cut summarizes thousands of replies).
        (Kind::Message(cell), context::Part::Main) => s.with_message_measures(cell, |known| add(known, ops)),
        _ => {
            if let Some(msg) = context::msg_of(s, m) {
                s.with_measures(msg, |known| add(known, ops));
            }
        }
    }
}

pub fn add_file_ops_value(v: &Value, ops: &mut FileOps) {
    let Some(blocks) = v.get("content").and_then(|c| c.as_array()) else {
        return;
    };
    for b in blocks {
        if b.get("type").and_then(|t| t.as_str()) != Some("toolCall") {
            continue;
        }
        let (Some(name), Some(path)) = (
            b.get("name").and_then(|n| n.as_str()),
            b.get("arguments").and_then(|a| a.get("path")).and_then(|p| p.as_str()),
        ) else {
            continue;
        };
        if !path.is_empty() {
            ops.add_tool_call(name, path);
        }
    }
}

/// Pi's `prepareCompaction(pathEntries, settings)` for the path ending at `leaf`.
pub fn prepare(s: &Session, leaf: usize, settings: CompactionSettings) -> Result<CompactionPlan, NoCompaction> {
    let path = s.path_to(leaf);
    prepare_path(s, &path, settings)
}

pub fn prepare_path(s: &Session, path: &[usize], settings: CompactionSettings) -> Result<CompactionPlan, NoCompaction> {
    if path.last().is_some_and(|&i| s.entries[i].is_compaction()) {
        return Err(NoCompaction::AlreadyCompacted);
    }
    prepare_projected(s, context::project(s, path), settings)
}

/// [`prepare_path`] on the path's projection, made already (the gauge projects the same
/// path: a long one takes as long to project as the rest of the plan).
pub fn prepare_projected(
    s: &Session,
    projection: context::Projection,
    settings: CompactionSettings,
) -> Result<CompactionPlan, NoCompaction> {
    if projection.path.last().is_some_and(|&i| s.entries[i].is_compaction()) {
        return Err(NoCompaction::AlreadyCompacted);
    }
    let entries = &projection.entries;
    let prev = entries
        .iter()
        .position(|pe| s.entries[pe.source].is_compaction() && !pe.messages.is_empty());
    let start = prev.map(|p| p + 1).unwrap_or(0);
    let end = entries.len();
    let tokens_before = context::estimate_projected_tokens(s, &projection).tokens;
    let cut = find_projected_cut_point(s, entries, start, end, settings.keep_recent_tokens);
    if cut.first_kept >= end {
        return Err(NoCompaction::NothingToCompact);
    }
    // A split turn's history ends where the turn starts; the turn's prefix is summarized apart.
    let turn_start = cut.turn_start.filter(|_| cut.split);
    let history_end = turn_start.unwrap_or(cut.first_kept);
    let messages_to_summarize = messages_for_summary(s, &entries[start..history_end]);
    let turn_prefix_messages = match turn_start {
        Some(ts) => messages_for_summary(s, &entries[ts..cut.first_kept]),
        None => vec![],
    };
    if messages_to_summarize.is_empty() && turn_prefix_messages.is_empty() {
        return Err(NoCompaction::NothingToCompact);
    }
    let mut file_ops = FileOps::default();
    if let Some(p) = prev
        && let Kind::Compaction(c) = &s.entries[entries[p].source].kind
        && !c.from_hook
        && let Some(d) = &c.details
    {
        let lists = d.lists();
        for f in lists.read_files {
            file_ops.add_read(f);
        }
        for f in lists.modified_files {
            file_ops.add_edited(f);
        }
    }
    for m in messages_to_summarize.iter().chain(turn_prefix_messages.iter()) {
        add_file_ops(s, m, &mut file_ops);
    }
    let first_kept_entry = entries[cut.first_kept].source;
    Ok(CompactionPlan {
        first_kept: cut.first_kept,
        first_kept_entry,
        is_split_turn: cut.split,
        turn_start: if cut.split { cut.turn_start } else { None },
        tokens_before,
        history: start..history_end,
        messages_to_summarize,
        turn_prefix_messages,
        previous_compaction: prev,
        file_ops,
        settings,
        projection,
    })
}

/// Pi's previous summary text for an update prompt.
pub fn previous_summary(s: &Session, plan: &CompactionPlan) -> Option<String> {
    let e = plan.previous_compaction_entry()?;
    s.entry_value(e).get("summary").map(crate::load::js::js_to_string)
}
