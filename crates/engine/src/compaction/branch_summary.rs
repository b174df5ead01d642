//! What a branch summary would cover when leaving the current leaf for another entry:
//! Pi's `collectEntriesForBranchSummary` and `prepareBranchEntries`.

use crate::compaction::serialize::FileOps;
use crate::load::entry::{Kind, Role};
use crate::load::session::Session;
use crate::view::context::{self, ContextMessage, Part};

#[derive(Debug, Clone)]
pub struct BranchPlan {
    pub from_leaf: Option<usize>,
    pub target: usize,
    pub common_ancestor: Option<usize>,
    /// Entries to summarize, oldest first: common ancestor (exclusive) to the old leaf.
    pub entries: Vec<usize>,
    pub token_budget: i64,
    /// Messages that fit the budget, oldest first (tool results are never included).
    pub messages: Vec<ContextMessage>,
    pub total_tokens: u64,
    pub file_ops: FileOps,
}

/// Pi's `getMessageFromEntry` for branch summaries: the raw message (no edits, no
/// projection), summaries as messages, tool results skipped.
fn branch_message(s: &Session, idx: usize) -> Option<ContextMessage> {
    let mk = |part, role, est| {
        Some(ContextMessage {
            source: idx,
            part,
            role,
            replaced_by: None,
            est_tokens: est,
        })
    };
    match &s.entries[idx].kind {
        Kind::Message(m) if m.role == Role::ToolResult => None,
        Kind::Message(m) => mk(Part::Main, m.role.clone(), s.message_est_tokens(m)),
        Kind::CustomMessage(c) => mk(Part::Main, Role::Custom, c.est_tokens),
        Kind::BranchSummary(b) => mk(Part::Main, Role::BranchSummary, (b.summary_chars as u64).div_ceil(4)),
        Kind::Compaction(c) => mk(
            Part::CompactionSummary,
            Role::CompactionSummary,
            (c.summary_chars as u64).div_ceil(4),
        ),
        _ => None,
    }
}

/// Navigation from `from_leaf` to `target` with the given budget (context window −
/// `branchSummary.reserveTokens`; Pi uses 128000 when the model has no window: see
/// [`token_budget`]).
pub fn prepare(s: &Session, from_leaf: Option<usize>, target: usize, token_budget: i64) -> BranchPlan {
    let mut plan = BranchPlan {
        from_leaf,
        target,
        common_ancestor: None,
        entries: vec![],
        token_budget,
        messages: vec![],
        total_tokens: 0,
        file_ops: FileOps::default(),
    };
    let Some(leaf) = from_leaf else { return plan };
    let old_path = s.path_to(leaf);
    let mut on_old = std::collections::HashSet::new();
    for &i in &old_path {
        on_old.insert(&*s.entries[i].id);
    }
    let target_path = s.path_to(target);
    let ancestor_id = target_path
        .iter()
        .rev()
        .map(|&i| &*s.entries[i].id)
        .find(|id| on_old.contains(id));
    plan.common_ancestor = ancestor_id.and_then(|id| s.idx_of(id));
    // Walk the old leaf's parents up to the ancestor (by id, as Pi does).
    let mut entries = Vec::new();
    let mut cur = Some(leaf);
    let mut guard = 0usize;
    while let Some(i) = cur {
        if Some(&*s.entries[i].id) == ancestor_id || guard > s.entries.len() {
            break;
        }
        guard += 1;
        entries.push(i);
        cur = s.parent_of(i);
    }
    entries.reverse();
    plan.entries = entries;

    for &i in &plan.entries {
        if let Kind::BranchSummary(b) = &s.entries[i].kind
            && !b.from_hook
            && let Some(d) = &b.details
        {
            let lists = d.lists();
            for f in lists.read_files {
                plan.file_ops.add_read(f);
            }
            for f in lists.modified_files {
                plan.file_ops.add_edited(f);
            }
        }
    }
    // Pi 1.5.2 applies the latest context edit of each target inside the branch left behind
    // (a null one drops the message, a replacement counts with its new content).
    let mut edits: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    if s.pi.branch_applies_context_edits() {
        for &i in &plan.entries {
            if let Some(t) = s.entries[i].kind.context_edit_target() {
                edits.insert(t, i);
            }
        }
    }
    let mut picked = Vec::new();
    s.prefetch_measures(plan.entries.iter().copied());
    for &i in plan.entries.iter().rev() {
        let edited = match (&s.entries[i].kind, edits.get(&*s.entries[i].id)) {
            (Kind::Message(m), Some(&ei)) if m.role != Role::ToolResult => Some(ei),
            (Kind::CustomMessage { .. }, Some(&ei)) => Some(ei),
            _ => None,
        };
        let m = match edited {
            Some(ei) => match context::project_entry(s, i, Some(ei)).into_iter().next() {
                Some(m) => m,
                None => continue,
            },
            None => match branch_message(s, i) {
                Some(m) => m,
                None => continue,
            },
        };
        // A replaced message's file operations are its replacement's.
        crate::compaction::cut::add_file_ops(s, &m, &mut plan.file_ops);
        let t = m.est_tokens;
        if token_budget > 0 && (plan.total_tokens + t) as i64 > token_budget {
            if matches!(s.entries[i].kind, Kind::Compaction(_) | Kind::BranchSummary(_))
                && (plan.total_tokens as f64) < token_budget as f64 * 0.9
            {
                picked.push(m);
                plan.total_tokens += t;
            }
            break;
        }
        picked.push(m);
        plan.total_tokens += t;
    }
    picked.reverse();
    plan.messages = picked;
    plan
}
/// The branch summary's token budget: the model's window (Pi's default when it declares none)
/// less `branchSummary.reserveTokens`.
pub fn token_budget(declared_window: Option<u64>, reserve: u64) -> i64 {
    crate::load::models::window_or_default(declared_window) as i64 - reserve as i64
}
