//! Deleting a dead branch: the one bonsai write that rewrites a session. The plan names the
//! lines to drop (the branch's entries: its first entry and everything under it); every
//! other line stays byte-identical and in order. It is refused when the branch holds the
//! leaf (Pi's path), or when a kept entry refers to a removed one in a way Pi acts on: a
//! label, a context edit, a compaction's first kept entry. References Pi only records (a
//! branch summary's `fromId`, bonsai's own markers) are listed, not refused: the branch a
//! summary was written for is exactly the one a user deletes.

use crate::load::entry::Kind;
use crate::load::session::Session;
use crate::view::archive;
use crate::view::tree::Tree;
use std::ops::Range;

/// A kept entry that names a removed one.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The kept entry.
    pub from: usize,
    /// The removed entry it names.
    pub to: usize,
    /// What the reference is ("label", "context edit", "compaction's first kept entry", …).
    pub what: &'static str,
}

/// What deleting a branch removes.
#[derive(Debug, Clone)]
pub struct DeletePlan {
    pub target: usize,
    /// Removed entries, in file order.
    pub removed: Vec<usize>,
    /// Bytes of the removed lines (with their newlines).
    pub bytes: usize,
    /// Pi's estimated tokens of the removed messages (`estimateTokens`).
    pub tokens: u64,
    /// Kept entries that only record a removed id (they stay, naming an entry that is gone).
    pub notes: Vec<Reference>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DeleteRefusal {
    #[error(
        "the branch at {target} holds the leaf {leaf}, where Pi resumes: deleting it would delete the session's own path. Navigate away from it first"
    )]
    HoldsLeaf { target: String, leaf: String },
    #[error(
        "kept entries refer to entries of the branch, and Pi would act on them: {0}. Clear those first (e.g. `bonsai label FILE ID` with no label)"
    )]
    Referenced(String),
    #[error(
        "entries of the branch change what the rest of the session shows, and deleting them would change it back: {0}"
    )]
    ChangesKept(String),
    #[error("the session has duplicate entry ids, so which lines belong to the branch is ambiguous: nothing deleted")]
    DuplicateIds,
}

fn entry_name(s: &Session, i: usize) -> String {
    let e = &s.entries[i];
    let what = match &e.kind {
        Kind::Message(m) => format!("{} message", m.role.as_str()),
        k => k.type_name().to_string(),
    };
    format!("{what} {} (line {})", e.id, e.line)
}

/// The references from kept entries into `removed` (by entry index, `true` = removed).
fn references(s: &Session, removed: &[bool]) -> (Vec<Reference>, Vec<Reference>) {
    let mut refused = Vec::new();
    let mut noted = Vec::new();
    for i in 0..s.entries.len() {
        if removed[i] {
            continue;
        }
        let idx = |id: Option<&str>| id.and_then(|t| s.idx_of(t)).filter(|&t| removed[t]);
        let mut push = |to: Option<usize>, what: &'static str, refuse: bool| {
            if let Some(to) = to {
                let r = Reference { from: i, to, what };
                if refuse { refused.push(r) } else { noted.push(r) }
            }
        };
        match &s.entries[i].kind {
            Kind::Label(l) => {
                let (target_id, label) = (&l.target_id, &l.label);
                // Clearing a label of a removed entry is harmless; setting one is not.
                push(idx(target_id.as_deref()), "label", label.is_some());
            }
            Kind::ContextEdit(ce) => push(idx(ce.target_id.as_deref()), "context edit", true),
            Kind::Compaction(_) | Kind::BranchSummary(_) | Kind::Custom { .. } => {
                let v = s.entry_value(i);
                push(
                    idx(v["firstKeptEntryId"].as_str()),
                    "compaction's first kept entry",
                    true,
                );
                push(idx(v["fromId"].as_str()), "branch summary's fromId", false);
                if v["customType"].as_str() == Some(archive::CUSTOM_TYPE) {
                    push(idx(v["data"]["targetId"].as_str()), "archive entry", false);
                } else if v["customType"].is_string() {
                    push(
                        idx(v["data"]["from"].as_str()),
                        "bonsai navigation marker's origin",
                        false,
                    );
                }
            }
            _ => {}
        }
    }
    (refused, noted)
}

/// What labels, the session name and archived branches are with the entries of `gone`
/// left out: Pi resolves labels and the name over the whole file, not per branch.
fn file_wide(
    s: &Session,
    gone: &[bool],
) -> (
    std::collections::HashMap<usize, Option<String>>,
    Option<String>,
    Vec<usize>,
) {
    let mut labels = std::collections::HashMap::new();
    let mut name = None;
    let mut archived: Vec<usize> = Vec::new();
    for (i, e) in s.entries.iter().enumerate() {
        if gone[i] {
            continue;
        }
        match &e.kind {
            Kind::Label(l) => {
                let (target_id, label) = (&l.target_id, &l.label);
                if let Some(t) = target_id.as_deref().and_then(|t| s.idx_of(t)) {
                    labels.insert(t, label.as_deref().map(str::to_string));
                }
            }
            Kind::SessionInfo { name: n } => name = n.as_deref().map(str::to_string),
            Kind::Custom { custom_type: Some(c) } if &**c == archive::CUSTOM_TYPE => {
                let v = s.entry_value(i);
                if let Some(t) = v["data"]["targetId"].as_str().and_then(|t| s.idx_of(t)) {
                    archived.retain(|&r| r != t);
                    if v["data"]["archived"].as_bool() != Some(false) {
                        archived.push(t);
                    }
                }
            }
            _ => {}
        }
    }
    (labels, name, archived)
}

/// Changes the delete would make outside the branch, in words (empty: none).
fn changes_outside(s: &Session, removed: &[bool]) -> Vec<String> {
    let none = vec![false; s.entries.len()];
    let (l0, n0, a0) = file_wide(s, &none);
    let (l1, n1, a1) = file_wide(s, removed);
    let mut out = Vec::new();
    let mut targets: Vec<&usize> = l0.keys().filter(|t| !removed[**t]).collect();
    targets.sort();
    for t in targets {
        let before = l0.get(t).cloned().flatten();
        let after = l1.get(t).cloned().flatten();
        if before != after {
            out.push(format!(
                "entry {} is labelled {} now and would be labelled {} (a label change inside the branch decides it)",
                s.entries[*t].id,
                before.map(|l| format!("{l:?}")).unwrap_or("nothing".into()),
                after.map(|l| format!("{l:?}")).unwrap_or("nothing".into()),
            ));
        }
    }
    if n0 != n1 {
        out.push(format!(
            "the session is named {} now and would be named {} (the name was set inside the branch)",
            n0.map(|n| format!("{n:?}")).unwrap_or("nothing".into()),
            n1.map(|n| format!("{n:?}")).unwrap_or("nothing".into()),
        ));
    }
    let kept = |v: &[usize]| -> Vec<usize> {
        let mut v: Vec<usize> = v.iter().copied().filter(|r| !removed[*r]).collect();
        v.sort();
        v
    };
    if kept(&a0) != kept(&a1) {
        out.push("an archive entry inside the branch archives or unarchives another branch".into());
    }
    out
}

/// Plan deleting the branch at `target`, with Pi's leaf at the file's last entry.
pub fn plan(s: &Session, tree: &Tree, target: usize) -> Result<DeletePlan, DeleteRefusal> {
    if s.has_duplicate_ids {
        return Err(DeleteRefusal::DuplicateIds);
    }
    if let Some(leaf) = s.leaf()
        && s.path_to(leaf).contains(&target)
    {
        return Err(DeleteRefusal::HoldsLeaf {
            target: s.entries[target].id.to_string(),
            leaf: s.entries[leaf].id.to_string(),
        });
    }
    let mut removed_mask = vec![false; s.entries.len()];
    let mut removed = archive::subtree(tree, target);
    removed.sort_unstable();
    for &i in &removed {
        removed_mask[i] = true;
    }
    let (refused, notes) = references(s, &removed_mask);
    if !refused.is_empty() {
        let list: Vec<String> = refused
            .iter()
            .map(|r| format!("the {} {} names {}", r.what, entry_name(s, r.from), entry_name(s, r.to)))
            .collect();
        return Err(DeleteRefusal::Referenced(list.join("; ")));
    }
    let changes = changes_outside(s, &removed_mask);
    if !changes.is_empty() {
        return Err(DeleteRefusal::ChangesKept(changes.join("; ")));
    }
    let bytes = removed.iter().map(|&i| line_range(s, i).len()).sum();
    // Pi's estimate of what each removed entry would add to a context (summaries included).
    let tokens = removed
        .iter()
        .flat_map(|&i| crate::view::context::intrinsic_messages(s, i))
        .map(|m| m.est_tokens)
        .sum();
    Ok(DeletePlan {
        target,
        removed,
        bytes,
        tokens,
        notes,
    })
}

/// The bytes of entry `i`'s line with its newline (when it has one).
pub fn line_range(s: &Session, i: usize) -> Range<usize> {
    let sp = &s.entries[i].span();
    let end = if s.buf.get(sp.end) == Some(&b'\n') {
        sp.end + 1
    } else {
        sp.end
    };
    sp.start..end
}

/// The file without the plan's lines, and the removed lines: every kept byte as it was.
pub fn rewrite(s: &Session, plan: &DeletePlan) -> (Vec<u8>, Vec<u8>) {
    let mut kept = Vec::with_capacity(s.buf.len().saturating_sub(plan.bytes));
    let mut gone = Vec::with_capacity(plan.bytes + 1);
    let mut at = 0;
    for &i in &plan.removed {
        let r = line_range(s, i);
        kept.extend_from_slice(&s.buf[at..r.start]);
        gone.extend_from_slice(&s.buf[r.clone()]);
        at = r.end;
    }
    kept.extend_from_slice(&s.buf[at..]);
    if gone.last().is_some_and(|b| *b != b'\n') {
        gone.push(b'\n');
    }
    (kept, gone)
}

/// What `restore` puts back: the backup, then what was appended to the file since the delete
/// (Pi's entries hang under kept entries, so they stay valid). `None` when `now` is not the
/// delete's output (`backup` without the lines of `deleted`) followed by appended lines.
/// With the restored bytes comes how many lines were appended since the delete.
pub fn restored(backup: &[u8], deleted: &[u8], now: &[u8]) -> Option<(Vec<u8>, usize)> {
    let gone: std::collections::HashSet<&[u8]> = deleted.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
    // The backup is the whole file as it was before the delete: whole lines, every removed
    // line among them. A cut-short or otherwise changed backup fits nothing (it once "restored"
    // half a file with the removed lines missing and a broken line inside).
    if backup.last().is_some_and(|b| *b != b'\n') {
        // A file may end without its newline, but then with whole JSON.
        let last = backup.rsplit(|b| *b == b'\n').next().unwrap_or(backup);
        if serde_json::from_slice::<serde::de::IgnoredAny>(last).is_err() {
            return None;
        }
    }
    let mut expected = Vec::with_capacity(backup.len());
    let mut found = std::collections::HashSet::new();
    for line in backup.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if gone.contains(body) {
            found.insert(body);
        } else {
            expected.extend_from_slice(line);
        }
    }
    if found.len() != gone.len() {
        return None;
    }
    let tail = now.strip_prefix(expected.as_slice())?;
    // A removed line already in the file: the delete never happened (or was restored); putting
    // the lines back would write them twice.
    if tail.split(|b| *b == b'\n').any(|l| !l.is_empty() && gone.contains(l)) {
        return None;
    }
    let mut out = backup.to_vec();
    if !tail.is_empty() && out.last().is_some_and(|b| *b != b'\n') {
        out.push(b'\n');
    }
    out.extend_from_slice(tail);
    let appended = tail.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count();
    Some((out, appended))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_cut_short_or_without_the_removed_lines_restores_nothing() {
        let before = text(&[
            msg("a", None, "user", 1),
            msg("b", Some("a"), "assistant", 2),
            msg("c", Some("a"), "assistant", 3),
        ]);
        let gone = format!("{}\n", msg("c", Some("a"), "assistant", 3));
        let now = before.replace(&gone, "");
        assert!(restored(before.as_bytes(), gone.as_bytes(), now.as_bytes()).is_some());
        let half = &before.as_bytes()[..before.len() / 2];
        assert!(restored(half, gone.as_bytes(), now.as_bytes()).is_none(), "cut short");
        let without = before.replace(&gone, "");
        assert!(
            restored(without.as_bytes(), gone.as_bytes(), now.as_bytes()).is_none(),
            "removed lines missing"
        );
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-11-22T00:00:00.000Z","cwd":"/x"}"#;

    fn msg(id: &str, parent: Option<&str>, role: &str, sec: u32) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{},"timestamp":"2026-11-22T00:00:{sec:02}.000Z","message":{{"role":"{role}","content":"some text"}}}}"#,
            parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into())
        )
    }

    fn text(lines: &[String]) -> String {
        let mut t = String::from(HEADER);
        for l in lines {
            t.push('\n');
            t.push_str(l);
        }
        t.push('\n');
        t
    }

    fn base() -> Vec<String> {
        // u1 ─ a1 ─ u2 ─ a2 (dead) ; a1 ─ u3 ─ a3 (leaf)
        vec![
            msg("u1", None, "user", 1),
            msg("a1", Some("u1"), "assistant", 2),
            msg("u2", Some("a1"), "user", 3),
            msg("a2", Some("u2"), "assistant", 4),
            msg("u3", Some("a1"), "user", 5),
            msg("a3", Some("u3"), "assistant", 6),
        ]
    }

    #[test]
    fn the_dead_branch_goes_and_every_other_byte_stays() {
        let t = text(&base());
        let s = Session::from_bytes(t.clone().into_bytes()).unwrap();
        let tree = Tree::build(&s);
        let p = plan(&s, &tree, 2).unwrap();
        assert_eq!(p.removed, vec![2, 3]);
        let (kept, gone) = rewrite(&s, &p);
        let l = base();
        assert_eq!(
            String::from_utf8(kept.clone()).unwrap(),
            text(&[l[0].clone(), l[1].clone(), l[4].clone(), l[5].clone()])
        );
        assert_eq!(
            String::from_utf8(gone.clone()).unwrap(),
            format!("{}\n{}\n", l[2], l[3])
        );
        assert_eq!(p.bytes, gone.len());
        // Restore: the original, plus what was appended since.
        assert_eq!(
            restored(t.as_bytes(), &gone, &kept).unwrap(),
            (t.as_bytes().to_vec(), 0)
        );
        let mut later = kept.clone();
        let extra = msg("u4", Some("a3"), "user", 7) + "\n";
        later.extend_from_slice(extra.as_bytes());
        assert_eq!(
            restored(t.as_bytes(), &gone, &later).unwrap(),
            (format!("{t}{extra}").into_bytes(), 1)
        );
        // Already restored: the file is not the delete's output.
        assert!(restored(t.as_bytes(), &gone, t.as_bytes()).is_none());
        // Removed lines after the delete's output are already there: not put back twice.
        assert!(restored(b"a\nb\nc\n", b"c\n", b"a\nb\nc\n").is_none());
    }

    #[test]
    fn the_leafs_branch_and_referenced_entries_are_refused() {
        let mut l = base();
        let s = Session::from_bytes(text(&l).into_bytes()).unwrap();
        let tree = Tree::build(&s);
        assert!(matches!(plan(&s, &tree, 4), Err(DeleteRefusal::HoldsLeaf { .. })));
        l.push(r#"{"type":"label","id":"l1","parentId":"a3","timestamp":"2026-11-22T00:00:07.000Z","targetId":"a2","label":"keep"}"#.into());
        let s = Session::from_bytes(text(&l).into_bytes()).unwrap();
        let tree = Tree::build(&s);
        let e = plan(&s, &tree, 2).unwrap_err();
        assert!(
            e.to_string()
                .contains("the label label l1 (line 8) names assistant message a2 (line 5)"),
            "{e}"
        );
        // A cleared label only records: listed, not refused.
        l[6] = r#"{"type":"label","id":"l2","parentId":"a3","timestamp":"2026-11-22T00:00:08.000Z","targetId":"a2"}"#
            .into();
        let s = Session::from_bytes(text(&l).into_bytes()).unwrap();
        let tree = Tree::build(&s);
        let p = plan(&s, &tree, 2).unwrap();
        assert_eq!(p.notes.len(), 1);
    }
}
