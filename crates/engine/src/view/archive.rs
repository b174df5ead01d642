//! Archived branches: bonsai hides a dead branch from its tree without touching the file's
//! history. Archiving appends one `custom` entry (`customType: "bonsai.archive"`, data
//! `{targetId, archived}`) under the leaf: Pi never puts `custom` entries in the model's
//! context and its `/tree` hides them by default, so Pi's leaf and context stay as they were.
//! The latest entry for a target wins (file order), so unarchiving is one more entry.

use crate::load::session::Session;
use crate::view::tree::Tree;
use serde_json::{Map, Value, json};

pub const CUSTOM_TYPE: &str = "bonsai.archive";

/// The branches archived now (their first entries), in the order they were archived.
pub fn archived_roots(s: &Session) -> Vec<usize> {
    let mut roots: Vec<usize> = Vec::new();
    for i in 0..s.entries.len() {
        let crate::load::entry::Kind::Custom { custom_type: Some(t) } = &s.entries[i].kind else {
            continue;
        };
        if &**t != CUSTOM_TYPE {
            continue;
        }
        let v = s.entry_value(i);
        let Some(target) = v["data"]["targetId"].as_str().and_then(|t| s.idx_of(t)) else {
            continue;
        };
        roots.retain(|&r| r != target);
        if v["data"]["archived"].as_bool() != Some(false) {
            roots.push(target);
        }
    }
    roots
}

/// `entry` and everything under it.
pub fn subtree(tree: &Tree, entry: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut stack = vec![entry];
    // Each entry once: duplicate ids can close the children lists into a cycle.
    let mut seen = vec![false; tree.children.len()];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        out.push(i);
        stack.extend(tree.children[i].iter().rev().copied());
    }
    out
}

/// Per entry: inside one of the archived branches `roots` ([`archived_roots`]). A branch
/// that holds `leaf` is never hidden (Pi works there: it was navigated back into after
/// archiving).
pub fn hidden(s: &Session, tree: &Tree, roots: &[usize], leaf: Option<usize>) -> Vec<bool> {
    let mut out = vec![false; s.entries.len()];
    let on_path: Vec<usize> = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    for &r in roots {
        if on_path.contains(&r) {
            continue;
        }
        for i in subtree(tree, r) {
            out[i] = true;
        }
    }
    out
}

/// Why a branch cannot be archived or unarchived.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArchiveRefusal {
    #[error(
        "the branch at {target} holds the leaf {leaf}, where Pi resumes: archiving it would hide the session's own path. Navigate away from it first"
    )]
    HoldsLeaf { target: String, leaf: String },
    #[error("the branch at {0} is already archived")]
    AlreadyArchived(String),
    #[error("the branch at {0} is not archived: nothing to unarchive")]
    NotArchived(String),
}

/// Whether `target`'s branch may be (un)archived now, with Pi's leaf at the file's last entry.
pub fn check(s: &Session, target: usize, archive: bool) -> Result<(), ArchiveRefusal> {
    let id = s.entries[target].id.to_string();
    let is = archived_roots(s).contains(&target);
    if !archive {
        return if is {
            Ok(())
        } else {
            Err(ArchiveRefusal::NotArchived(id))
        };
    }
    if is {
        return Err(ArchiveRefusal::AlreadyArchived(id));
    }
    if let Some(leaf) = s.leaf()
        && s.path_to(leaf).contains(&target)
    {
        return Err(ArchiveRefusal::HoldsLeaf {
            target: id,
            leaf: s.entries[leaf].id.to_string(),
        });
    }
    Ok(())
}

/// The `bonsai.archive` entry, under the file's last entry (Pi's leaf stays where it was).
pub fn entry(s: &Session, target: usize, archive: bool, id: &str, ts_ms: i64) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), "custom".into());
    m.insert("customType".into(), CUSTOM_TYPE.into());
    m.insert(
        "data".into(),
        json!({"targetId": s.entries[target].id.to_string(), "archived": archive}),
    );
    m.insert("id".into(), id.into());
    m.insert(
        "parentId".into(),
        s.leaf()
            .map(|l| Value::from(s.entries[l].id.to_string()))
            .unwrap_or(Value::Null),
    );
    m.insert("timestamp".into(), crate::load::js::iso_from_ms(ts_ms).into());
    Value::Object(m)
}

/// How many entries a branch holds, and whether it is archived: what the CLI and the TUI say.
pub fn describe(s: &Session, tree: &Tree, target: usize) -> String {
    let n = subtree(tree, target).len();
    format!(
        "the branch at {} ({n} entr{})",
        s.entries[target].id,
        if n == 1 { "y" } else { "ies" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(lines: &[&str]) -> Session {
        let mut t = String::from(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-11-22T00:00:00.000Z","cwd":"/x"}"#,
        );
        for l in lines {
            t.push('\n');
            t.push_str(l);
        }
        t.push('\n');
        Session::from_bytes(t.into_bytes()).unwrap()
    }

    fn msg(id: &str, parent: Option<&str>, role: &str, sec: u32) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{},"timestamp":"2026-11-22T00:00:{sec:02}.000Z","message":{{"role":"{role}","content":"x"}}}}"#,
            parent.map(|p| format!("\"{p}\"")).unwrap_or("null".into())
        )
    }

    fn archive_line(id: &str, parent: &str, target: &str, archived: bool) -> String {
        format!(
            r#"{{"type":"custom","customType":"bonsai.archive","data":{{"targetId":"{target}","archived":{archived}}},"id":"{id}","parentId":"{parent}","timestamp":"2026-11-22T00:00:30.000Z"}}"#
        )
    }

    #[test]
    fn the_latest_entry_for_a_branch_wins_and_the_leafs_branch_is_refused() {
        // u1 ─ a1 ─ u2 (dead) ; a1 ─ u3 ─ a3 (leaf)
        let base = [
            msg("u1", None, "user", 1),
            msg("a1", Some("u1"), "assistant", 2),
            msg("u2", Some("a1"), "user", 3),
            msg("u3", Some("a1"), "user", 4),
            msg("a3", Some("u3"), "assistant", 5),
        ];
        let refs: Vec<&str> = base.iter().map(String::as_str).collect();
        let s = session(&refs);
        assert_eq!(check(&s, 2, true), Ok(()));
        assert!(matches!(check(&s, 3, true), Err(ArchiveRefusal::HoldsLeaf { .. })));
        assert!(matches!(check(&s, 2, false), Err(ArchiveRefusal::NotArchived(_))));
        let e = entry(&s, 2, true, "ar1", 0);
        assert_eq!(e["parentId"], "a3");

        let mut lines = refs.clone();
        let l1 = archive_line("ar1", "a3", "u2", true);
        lines.push(&l1);
        let s = session(&lines);
        assert_eq!(archived_roots(&s), vec![2]);
        let tree = Tree::build(&s);
        assert_eq!(
            hidden(&s, &tree, &archived_roots(&s), s.leaf()),
            vec![false, false, true, false, false, false]
        );
        assert!(matches!(check(&s, 2, true), Err(ArchiveRefusal::AlreadyArchived(_))));

        let l2 = archive_line("ar2", "ar1", "u2", false);
        lines.push(&l2);
        let s = session(&lines);
        assert!(archived_roots(&s).is_empty());
    }
}
