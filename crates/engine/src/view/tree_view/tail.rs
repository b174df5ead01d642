//! The leaf's newest entries, read from the end of a session file whose parse is still
//! running: what the loading frame of a big session shows before its tree is ready.
//!
//! The header and the tail's whole lines are loaded as a session of their own (the loader
//! links `parentId`s; an entry whose parent lies before the tail is a root there), so Pi's
//! leaf is its last entry and each row's text is exactly the one the finished tree will show.
//! Nothing counted over the whole session (tokens, entries, the gauge) can be known from a
//! tail, so nothing of the kind is returned.

use super::model::{FilterMode, TreeView};
use super::rows::RowText;
use crate::load::entry::Role;
use crate::load::session::Session;
use crate::view::tree::Tree;

/// What the loading frame shows of the leaf's path.
#[derive(Debug, Clone, PartialEq)]
pub struct TailPreview {
    /// The newest rows of the leaf's path as the tree shows them under its filter, oldest
    /// first; the last is the leaf's (or its nearest shown ancestor's).
    pub rows: Vec<RowText>,
    /// The path reached the session's first entry (the tail held all of it).
    pub whole_path: bool,
}

/// `header`: the file's first line; `tail`: its last bytes, starting mid-line unless
/// `tail_is_whole_lines`. A partial first line is dropped, as is a last line that does not
/// parse (Pi may be writing it). `None` when the tail holds no entry, or the session is one
/// Pi migrates on load (its ids come from positions in the whole file, not in a tail).
pub fn tail_preview(
    header: &[u8],
    tail: &[u8],
    tail_is_whole_lines: bool,
    filter: FilterMode,
    max_rows: usize,
) -> Option<TailPreview> {
    let tail = if tail_is_whole_lines {
        tail
    } else {
        &tail[memchr::memchr(b'\n', tail)? + 1..]
    };
    let mut bytes = Vec::with_capacity(header.len() + 1 + tail.len());
    bytes.extend_from_slice(header);
    bytes.push(b'\n');
    bytes.extend_from_slice(tail);
    let s = Session::from_bytes(bytes).ok()?;
    if s.migrated {
        return None;
    }
    let leaf = s.leaf()?;
    let mut path = s.path_to(leaf);
    // Only the file's first entry has no parentId; a root here otherwise lost its parent to
    // the tail's start.
    let whole_path = s.parent_id(path[0]).is_none();
    // A tool result's row is its call's title, from the assistant entry before it: one whose
    // call is cut off by the tail's start would read otherwise than in the tree.
    let cut_off_result = |i: usize| s.entries[i].message().is_some_and(|m| m.role == Role::ToolResult);
    while !whole_path && path.len() > 1 && cut_off_result(path[0]) {
        path.remove(0);
    }
    let mut on_path = vec![false; s.entries.len()];
    for &i in &path {
        on_path[i] = true;
    }
    let tree = Tree::build(&s);
    let view = TreeView::new(&s, &tree, Some(leaf), filter, 0);
    let shown: Vec<usize> = view
        .visible
        .iter()
        .map(|&f| view.flat[f])
        .filter(|&i| on_path[i])
        .collect();
    let first = shown.len().saturating_sub(max_rows);
    let rows = shown[first..].iter().map(|&i| view.display_text(&s, i)).collect();
    Some(TailPreview { rows, whole_path })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> String {
        let mut v = vec![
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#.to_string(),
        ];
        let mut parent = "null".to_string();
        for k in 0..40 {
            let (role, text) = if k % 2 == 0 {
                ("user", format!("question {k}"))
            } else {
                ("assistant", format!("answer {k}"))
            };
            let content = if role == "user" {
                format!(r#""{text}""#)
            } else {
                format!(r#"[{{"type":"text","text":"{text}"}}]"#)
            };
            v.push(format!(
                r#"{{"type":"message","id":"e{k:02}","parentId":{parent},"timestamp":"2026-01-01T00:00:{k:02}.000Z","message":{{"role":"{role}","content":{content},"timestamp":{k}}}}}"#
            ));
            parent = format!(r#""e{k:02}""#);
        }
        v.join("\n") + "\n"
    }

    /// The rows the finished tree shows for the same entries.
    fn whole_rows(file: &str, max_rows: usize) -> Vec<RowText> {
        let s = Session::from_bytes(file.as_bytes().to_vec()).unwrap();
        let tree = Tree::build(&s);
        let view = TreeView::new(&s, &tree, s.leaf(), FilterMode::Default, 0);
        let first = view.visible.len() - max_rows;
        view.visible[first..]
            .iter()
            .map(|&f| view.display_text(&s, view.flat[f]))
            .collect()
    }

    #[test]
    fn the_tail_shows_the_rows_the_tree_will_show() {
        let file = session();
        let header = file.lines().next().unwrap().as_bytes();
        // From the middle of a line: the partial line is dropped, the path goes back as far as
        // the tail holds it.
        let tail = &file.as_bytes()[file.len() - 1500..];
        let p = tail_preview(header, tail, false, FilterMode::Default, 8).unwrap();
        assert_eq!(p.rows, whole_rows(&file, 8));
        assert_eq!(p.rows.last().unwrap().body, "answer 39");
        assert!(!p.whole_path);
        // The whole file: the path reaches the first entry.
        let p = tail_preview(header, file.as_bytes(), true, FilterMode::Default, 100).unwrap();
        assert!(p.whole_path);
        assert_eq!(p.rows.len(), 40);
    }

    #[test]
    fn a_branch_off_the_path_and_a_half_written_line_are_left_out() {
        let mut file = session();
        // A branch from e10 written last is the leaf: its path skips e11..e39.
        file.push_str(r#"{"type":"message","id":"b1","parentId":"e10","timestamp":"2026-01-01T00:01:00.000Z","message":{"role":"user","content":"the other way","timestamp":99}}"#);
        file.push('\n');
        file.push_str(r#"{"type":"message","id":"b2","parentId":"b1","timest"#);
        let header = file.lines().next().unwrap().as_bytes();
        let p = tail_preview(header, file.as_bytes(), true, FilterMode::Default, 4).unwrap();
        let bodies: Vec<&str> = p.rows.iter().map(|r| r.body.as_str()).collect();
        assert_eq!(bodies, ["question 8", "answer 9", "question 10", "the other way"]);
        assert!(p.whole_path);
    }

    #[test]
    fn nothing_to_show_without_an_entry_with_an_id() {
        let header = br#"{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
        let v1 = br#"{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}
"#;
        assert_eq!(tail_preview(header, v1, true, FilterMode::Default, 4), None);
        assert_eq!(
            tail_preview(header, b"{\"type\":\"mess", false, FilterMode::Default, 4),
            None
        );
    }
}
