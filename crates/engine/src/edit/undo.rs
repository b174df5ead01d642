//! Undo bonsai's last action on a session, from the file alone: every entry bonsai writes
//! says what it is (`"bonsai": {"action": …}`), an undo says which action it undoes, and the
//! file is read from its end. Nothing is removed: an undo appends what puts things back.
//!
//! - a compaction or a navigation: Pi resumes where it was before (a `bonsai.navigate` marker
//!   under that entry; the compaction or summary stays on its own branch);
//! - a label or a session name: the previous one (or none) again;
//! - archiving a branch: unarchiving it (and the other way round);
//! - context edits: each edit back to the state before it (`prune::undo`).
//!
//! Only bonsai's entries may stand between the file's end and the action: once Pi has written,
//! undoing would fight Pi, and the undo is refused with the entry that Pi wrote.

use crate::edit::plan::Write;
use crate::edit::prune;
use crate::load::entry::Kind;
use crate::load::session::Session;
use serde_json::Value;
use std::collections::HashSet;

/// What an undo writes, and what it says it did.
#[derive(Debug, Clone)]
pub struct Undo {
    pub write: Write,
    /// The action undone, in words ("the compaction abc123 (line 40)").
    pub what: String,
    /// What the undo does, in words.
    pub how: String,
    /// The entry the undone action's head is.
    pub undoes: usize,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UndoRefusal {
    #[error("the session has no entries")]
    Empty,
    #[error(
        "the last entry is Pi's ({what} {id}, line {line}), not bonsai's: Pi has written since bonsai's last action, and undoing now would fight Pi"
    )]
    PiWroteSince { what: String, id: String, line: u32 },
    #[error(
        "nothing of bonsai's left to undo: the entry before bonsai's undone actions is Pi's ({what} {id}, line {line})"
    )]
    NothingLeft { what: String, id: String, line: u32 },
    #[error(
        "bonsai's {what} {id} (line {line}) does not say where it came from (written by an older bonsai): it cannot be undone from the file"
    )]
    NoOrigin { what: String, id: String, line: u32 },
    #[error("{0}")]
    Edits(String),
}

fn mark(v: &Value) -> Option<&Value> {
    v.get("bonsai").filter(|m| m.is_object())
}

fn describe(s: &Session, i: usize) -> (String, String, u32) {
    let e = &s.entries[i];
    let what = match &e.kind {
        Kind::Message(m) => format!("{} message", m.role.as_str()),
        k => k.type_name().to_string(),
    };
    (what, e.id.to_string(), e.line)
}

/// The label `target` had just before entry `before` (file order, as Pi resolves labels).
fn label_before(s: &Session, target: &str, before: usize) -> Option<String> {
    (0..before).rev().find_map(|i| match &s.entries[i].kind {
        Kind::Label(l) if l.target_id.as_deref() == Some(target) => Some(l.label.as_deref().map(str::to_string)),
        _ => None,
    })?
}

/// The session name just before entry `before` (Pi: the latest `session_info`; empty is none).
fn name_before(s: &Session, before: usize) -> String {
    (0..before)
        .rev()
        .find_map(|i| match &s.entries[i].kind {
            Kind::SessionInfo { name } => Some(name.as_deref().unwrap_or("").to_string()),
            _ => None,
        })
        .unwrap_or_default()
}

/// A context-edit action as the user chose it ("prune by the output policy", "hiding"),
/// from the name its record keeps.
fn edits_in_words(what: &str) -> String {
    match what {
        // "zones (…)": the name records made before the rename to "by zone" keep.
        w if w.starts_with("output") || w.starts_with("by zone") || w.starts_with("zones") => {
            format!("prune by the {w} policy")
        }
        "hide" => "hiding of a message".into(),
        "replace" => "replacement of a message".into(),
        "restore" => "restoring of a message".into(),
        w => format!("context edits ({w})"),
    }
}

/// Plan the undo of bonsai's last action that is not undone yet.
pub fn plan(s: &Session) -> Result<Undo, UndoRefusal> {
    let n = s.entries.len();
    if n == 0 {
        return Err(UndoRefusal::Empty);
    }
    let mut undone: HashSet<String> = HashSet::new();
    for i in (0..n).rev() {
        let v = s.entry_value(i);
        let Some(m) = mark(&v) else {
            let (what, id, line) = describe(s, i);
            return Err(if i == n - 1 {
                UndoRefusal::PiWroteSince { what, id, line }
            } else {
                UndoRefusal::NothingLeft { what, id, line }
            });
        };
        let id = s.entries[i].id.to_string();
        let action = m["action"].as_str().unwrap_or("");
        if action == "undo" {
            if let Some(u) = m["undoes"].as_str() {
                undone.insert(u.to_string());
            }
            continue;
        }
        // An action's edits are covered by its record, which follows them.
        if action == "context-edit" || undone.contains(&id) {
            continue;
        }
        // An archive or a label whose branch was deleted since (`bonsai delete` keeps the
        // entries that point into it, harmless) has nothing left to undo: go on to the one before.
        let target = match action {
            "archive" => v["data"]["targetId"].as_str(),
            "label" => v["targetId"].as_str(),
            _ => None,
        };
        if target.is_some_and(|t| s.idx_of(t).is_none()) {
            continue;
        }
        return undo_action(&Undoing::of(s, i), action, &v);
    }
    Err(UndoRefusal::Empty)
}

/// The bonsai action at entry `i` being undone, and how to say it.
struct Undoing<'a> {
    s: &'a Session,
    i: usize,
    id: String,
    what: String,
    line: u32,
}

impl<'a> Undoing<'a> {
    fn of(s: &'a Session, i: usize) -> Undoing<'a> {
        let (what, _, line) = describe(s, i);
        Undoing {
            s,
            i,
            id: s.entries[i].id.to_string(),
            what,
            line,
        }
    }

    fn at_line(&self, j: usize) -> String {
        format!("{} (line {})", self.s.entries[j].id, self.s.entries[j].line)
    }

    fn undo(&self, write: Write, what: String, how: String) -> Undo {
        Undo {
            write: Write::Undo {
                undoes: self.id.clone(),
                write: Box::new(write),
            },
            what,
            how,
            undoes: self.i,
        }
    }

    /// A compaction or a navigation: Pi resumes where it was before it.
    fn resume(&self, at: usize, what: String, how: &str) -> Undo {
        self.undo(
            Write::Resume {
                at: self.s.entries[at].id.to_string(),
                from: Some(self.id.clone()),
            },
            what,
            format!("Pi resumes at {}, {how}", self.at_line(at)),
        )
    }

    fn no_origin(&self) -> UndoRefusal {
        UndoRefusal::NoOrigin {
            what: self.what.clone(),
            id: self.id.clone(),
            line: self.line,
        }
    }
}

/// What undoes `action` (the record's) at `u`.
fn undo_action(u: &Undoing, action: &str, v: &Value) -> Result<Undo, UndoRefusal> {
    let (s, i) = (u.s, u.i);
    match action {
        "compact" => {
            let parent = s.parent_of(i).ok_or_else(|| u.no_origin())?;
            Ok(u.resume(
                parent,
                format!("the compaction {}", u.at_line(i)),
                "where it was before the compaction",
            ))
        }
        "amend" => {
            let parent = s.parent_of(i).ok_or_else(|| u.no_origin())?;
            Ok(u.resume(
                parent,
                format!("the amended summary {}", u.at_line(i)),
                "where it was before the amendment",
            ))
        }
        "navigate" => {
            // A summary's fromId, or the marker's data.from: the leaf that was left.
            let from = match v["type"].as_str() {
                Some("branch_summary") => v["fromId"].as_str().filter(|f| *f != "root"),
                _ => v["data"]["from"].as_str(),
            };
            let from = from.and_then(|f| s.idx_of(f)).ok_or_else(|| u.no_origin())?;
            Ok(u.resume(from, format!("the navigation {}", u.at_line(i)), "the leaf it left"))
        }
        "label" => {
            let target = v["targetId"].as_str().unwrap_or("").to_string();
            let previous = label_before(s, &target, i);
            let how = match &previous {
                Some(l) => format!("{target}'s label is {l:?} again"),
                None => format!("{target} has no label again"),
            };
            Ok(u.undo(
                Write::Label {
                    target,
                    label: previous,
                },
                format!("the label {}", u.at_line(i)),
                how,
            ))
        }
        "rename" => {
            let name = name_before(s, i);
            let how = if name.is_empty() {
                "the session has no name again".to_string()
            } else {
                format!("the session is named {name:?} again")
            };
            Ok(u.undo(
                Write::SessionName { name },
                format!("the session name {}", u.at_line(i)),
                how,
            ))
        }
        "archive" => undo_archive(u, v),
        "context-edits" => undo_context_edits(u),
        other => Err(UndoRefusal::Edits(format!(
            "bonsai's entry {} says {other:?}, which this bonsai cannot undo",
            u.at_line(i)
        ))),
    }
}

/// An archiving undone by the opposite one.
fn undo_archive(u: &Undoing, v: &Value) -> Result<Undo, UndoRefusal> {
    let (s, i) = (u.s, u.i);
    let target = v["data"]["targetId"].as_str().unwrap_or("").to_string();
    let archived = v["data"]["archived"].as_bool() != Some(false);
    if s.idx_of(&target).is_none() {
        return Err(u.no_origin());
    }
    let how = if archived {
        format!("the branch at {target} shows in the tree again")
    } else {
        format!("the branch at {target} is archived again")
    };
    Ok(u.undo(
        Write::Archive {
            target,
            archived: !archived,
        },
        format!(
            "the {} {}",
            if archived { "archiving" } else { "unarchiving" },
            u.at_line(i)
        ),
        how,
    ))
}

/// bonsai's last context edits undone by resuming before them.
fn undo_context_edits(u: &Undoing) -> Result<Undo, UndoRefusal> {
    let (s, i) = (u.s, u.i);
    let leaf = s.leaf().ok_or(UndoRefusal::Empty)?;
    let act = prune::last_action(s, leaf).ok_or_else(|| u.no_origin())?;
    if act.record != i {
        return Err(UndoRefusal::Edits(format!(
            "bonsai's last context edits {} are not on Pi's branch",
            u.at_line(i)
        )));
    }
    // Pi keeps the latest edit per target on the path to its leaf, and no edit
    // clears an earlier one: writing each original back would copy every pruned
    // output (images too) into the file again. Resuming where the action started
    // (the parent of its first edit) takes the edits off Pi's path in one line.
    let first = act.edits.iter().copied().min().unwrap_or(i);
    let at = s.parent_of(first).ok_or_else(|| u.no_origin())?;
    let n = act.edits.len();
    Ok(u.resume(
        at,
        format!(
            "the {} ({n} edit{}) {}",
            edits_in_words(&act.what),
            if n == 1 { "" } else { "s" },
            u.at_line(i)
        ),
        &format!(
            "where it was before the prune: its {n} edit{} stay in the file on a branch of their own, and the model gets every output back",
            if n == 1 { "" } else { "s" }
        ),
    ))
}
