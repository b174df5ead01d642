//! A write bonsai was asked to make, decided again on the file exactly as it is right before
//! the append (the store re-reads it), so a write never lands on a state nobody looked at.
//! The CLI and the TUI both describe their writes here; `store::append_with` applies them.

use crate::compaction::cut::{self, CompactionSettings, NoCompaction};
use crate::compaction::summary::Summary;
use crate::edit::entries::{self, IdSource};
use crate::load::session::Session;
use serde_json::Value;

/// What to write, by entry ids (indices do not survive a reload).
#[derive(Debug, Clone)]
pub enum Write {
    /// Pi's compaction at `leaf`; `first_kept` is the cut the user saw (it must not move).
    Compaction {
        leaf: String,
        first_kept: String,
        summary: Summary,
        settings: CompactionSettings,
    },
    /// `/tree` navigation from `from` (the leaf the user left) to `target`, with a branch
    /// summary or the invisible marker.
    Navigation {
        from: Option<String>,
        target: String,
        summary: Option<Summary>,
        budget: i64,
    },
    Label {
        target: String,
        label: Option<String>,
    },
    SessionName {
        name: String,
    },
    /// Pi's `context_edit` entries chained from `leaf`, then the record of the action
    /// (`entries::CONTEXT_EDITS_RECORD`) that names them for undo.
    ContextEdits {
        leaf: String,
        edits: Vec<(String, Value)>,
        record: Value,
    },
    /// Make Pi resume at `at` (an invisible `bonsai.navigate` marker under it): how a
    /// compaction or a navigation is undone.
    Resume {
        at: String,
        from: Option<String>,
    },
    /// Hide (`archived`) or show again the branch at `target` in bonsai's tree: one
    /// `bonsai.archive` entry under the leaf.
    Archive {
        target: String,
        archived: bool,
    },
    /// A summary given back what its audit found lost: a new entry of the summary's kind at
    /// `leaf` with `summary` (see `compaction::audit`); the summary `of` must be on the
    /// leaf's path, a compaction the newest on it.
    Amend {
        of: String,
        leaf: String,
        summary: String,
    },
    /// `write`, undoing bonsai's action whose head entry is `undoes`.
    Undo {
        undoes: String,
        write: Box<Write>,
    },
}

impl Write {
    /// What bonsai's entries of this write say they are (`"bonsai": {"action": …}` on each):
    /// how `bonsai undo` finds bonsai's last action from the file alone.
    fn action(&self) -> &'static str {
        match self {
            Write::Compaction { .. } => "compact",
            Write::Navigation { .. } | Write::Resume { .. } => "navigate",
            Write::Label { .. } => "label",
            Write::SessionName { .. } => "rename",
            Write::ContextEdits { .. } => "context-edits",
            Write::Archive { .. } => "archive",
            Write::Amend { .. } => "amend",
            Write::Undo { .. } => "undo",
        }
    }
}

/// A write and what the user saw when deciding it.
#[derive(Debug, Clone)]
pub struct WriteRequest {
    pub write: Write,
    /// The file's length and entry count the decision was made on. When set, any growth
    /// refuses the write (Pi appended: the user must look again); when `None` (labels,
    /// names), the write is decided again on the new state.
    pub seen: Option<(usize, usize)>,
}

/// The lines to append and what the caller reports after writing them.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub entries: Vec<Value>,
    /// A navigation to a user message hands its text back (Pi puts it in the editor).
    pub editor_text: Option<String>,
    /// A navigation wrote a branch summary (not the marker).
    pub branch_summary: bool,
}

/// Why bonsai will not write what it prepared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "Pi appended {added} {} to the session after bonsai read it: nothing written; look at the new entries and try again",
        if *added == 1 { "entry" } else { "entries" }
    )]
    FileGrew { added: usize },
    #[error(
        "the file changed under bonsai (it is not the session that was read; was it replaced or rewritten?): nothing written; open it again and repeat the change"
    )]
    FileChanged,
    #[error("entry {0} is not in the session: `bonsai tree FILE` lists the entries with their ids")]
    EntryGone(String),
    #[error("cannot compact: {}; {}", .0.reason(), .0.next_step())]
    NoCompaction(NoCompaction),
    #[error(
        "the cut moved from {was} to {now} since the preview (Pi appended entries): nothing written; preview the compaction again and confirm it"
    )]
    CutMoved { was: String, now: String },
    #[error("{0}")]
    Archive(crate::view::archive::ArchiveRefusal),
    #[error("{0}")]
    Amend(String),
    #[error("already at this point: the target is the leaf, so there is nothing to write; pick another entry")]
    AlreadyThere,
}

impl WriteRequest {
    /// The entries for this write on `s` (the file as it is now), each marked as bonsai's.
    pub fn prepare(&self, s: &Session, seed: u64, now_ms: i64) -> Result<Prepared, Refusal> {
        let mut p = self.prepare_unmarked(&self.write, s, seed, now_ms)?;
        let n = p.entries.len();
        for (k, e) in p.entries.iter_mut().enumerate() {
            let mut mark = serde_json::Map::new();
            // A context-edits action is its edits and, last, the record that names them.
            let action = match (&self.write, k + 1 == n) {
                (Write::ContextEdits { .. }, false) => "context-edit",
                (Write::Undo { write, .. }, false) if matches!(**write, Write::ContextEdits { .. }) => "context-edit",
                (w, _) => w.action(),
            };
            mark.insert("action".into(), action.into());
            if let (Write::Undo { undoes, .. }, "undo") = (&self.write, action) {
                mark.insert("undoes".into(), undoes.clone().into());
            }
            if let Value::Object(o) = e {
                o.insert("bonsai".into(), Value::Object(mark));
            }
        }
        Ok(p)
    }

    fn prepare_unmarked(&self, write: &Write, s: &Session, seed: u64, now_ms: i64) -> Result<Prepared, Refusal> {
        if let Some((len, entries)) = self.seen
            && s.buf.len() != len
        {
            return Err(if s.buf.len() > len {
                Refusal::FileGrew {
                    added: s.entries.len().saturating_sub(entries),
                }
            } else {
                Refusal::FileChanged
            });
        }
        let find = |id: &str| s.idx_of(id).ok_or_else(|| Refusal::EntryGone(id.to_string()));
        let mut ids = IdSource::new(s, seed);
        let one = |e: Value| Prepared {
            entries: vec![e],
            editor_text: None,
            branch_summary: false,
        };
        Ok(match write {
            Write::Undo { write, .. } => return self.prepare_unmarked(write, s, seed, now_ms),
            Write::Resume { at, from } => {
                let a = find(at)?;
                one(entries::resume_marker(s, a, from.as_deref(), &ids.fresh(), now_ms))
            }
            Write::Compaction {
                leaf,
                first_kept,
                summary,
                settings,
            } => {
                let l = find(leaf)?;
                let plan = cut::prepare(s, l, *settings).map_err(Refusal::NoCompaction)?;
                let now = &*s.entries[plan.first_kept_entry].id;
                if now != first_kept {
                    return Err(Refusal::CutMoved {
                        was: first_kept.clone(),
                        now: now.to_string(),
                    });
                }
                one(entries::compaction_entry(s, l, &plan, summary, &ids.fresh(), now_ms))
            }
            Write::Navigation {
                from,
                target,
                summary,
                budget,
            } => {
                let t = find(target)?;
                let old = from.as_deref().map(find).transpose()?;
                if Some(t) == old {
                    return Err(Refusal::AlreadyThere);
                }
                let nav = entries::plan_navigation(s, old, t, *budget);
                let (entry, branch_summary) = match summary {
                    Some(sm) if !nav.branch.entries.is_empty() => {
                        (entries::branch_summary_entry(s, &nav, sm, &ids.fresh(), now_ms), true)
                    }
                    _ => (entries::navigation_marker(s, &nav, &ids.fresh(), now_ms), false),
                };
                Prepared {
                    entries: vec![entry],
                    editor_text: nav.editor_text,
                    branch_summary,
                }
            }
            Write::Label { target, label } => {
                let t = find(target)?;
                one(entries::label_entry(
                    s,
                    s.leaf(),
                    t,
                    label.as_deref(),
                    &ids.fresh(),
                    now_ms,
                ))
            }
            Write::Archive { target, archived } => {
                let t = find(target)?;
                crate::view::archive::check(s, t, *archived).map_err(Refusal::Archive)?;
                one(crate::view::archive::entry(s, t, *archived, &ids.fresh(), now_ms))
            }
            Write::Amend { of, leaf, summary } => {
                let (o, l) = (find(of)?, find(leaf)?);
                let e = entries::amended_entry(s, o, l, summary, &ids.fresh(), now_ms).map_err(Refusal::Amend)?;
                one(e)
            }
            Write::SessionName { name } => one(entries::session_info_entry(s, s.leaf(), name, &ids.fresh(), now_ms)),
            Write::ContextEdits { leaf, edits, record } => {
                let l = find(leaf)?;
                for (t, _) in edits {
                    find(t)?;
                }
                Prepared {
                    entries: entries::context_edit_entries(s, l, edits, record.clone(), &mut ids, now_ms),
                    editor_text: None,
                    branch_summary: false,
                }
            }
        })
    }
}

/// What a write under `parent` leaves behind when `parent` is not the file's last entry: Pi
/// resumes at the last line, so the write starts a new branch and the entries after the fork
/// point on the current branch drop out of the context.
#[derive(Debug, Clone, PartialEq)]
pub struct NewBranch {
    pub parent: usize,
    /// The file's last entry (Pi's leaf now).
    pub last: usize,
    /// The current branch's entries after the fork point, oldest first.
    pub abandoned: Vec<usize>,
}

/// `Some` when an entry written under `parent` starts a branch.
pub fn new_branch(s: &Session, parent: usize) -> Option<NewBranch> {
    let last = s.leaf()?;
    if parent == last {
        return None;
    }
    let here = s.path_to(parent);
    let current = s.path_to(last);
    let common = here.iter().zip(&current).take_while(|(a, b)| a == b).count();
    Some(NewBranch {
        parent,
        last,
        abandoned: current[common..].to_vec(),
    })
}
