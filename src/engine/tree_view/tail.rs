//! The leaf's newest entries, read from the end of a session file whose parse is still
//! running: what the loading frame of a big session shows before its tree is ready.
//!
//! Pi's leaf is the file's last entry; its path is followed up through `parentId` as far as
//! the tail holds it, and those entries are loaded as a session of their own (the header, then
//! the path oldest first) so each row's text is exactly the one the finished tree will show.
//! Nothing counted over the whole session (tokens, entries, the gauge) can be known from a
//! tail, so nothing of the kind is returned.

use super::{FilterMode, RowText, TreeView};
use crate::engine::session::Session;
use crate::engine::tree::Tree;

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
/// parse (Pi may be writing it). `None` when the tail holds no entry with an id (an old
/// session that Pi migrates on load, or nothing but one huge line).
pub fn tail_preview(
    header: &[u8],
    tail: &[u8],
    tail_is_whole_lines: bool,
    filter: FilterMode,
    max_rows: usize,
) -> Option<TailPreview> {
    #[derive(serde::Deserialize)]
    struct Link<'a> {
        #[serde(borrow, default)]
        id: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default, rename = "parentId")]
        parent_id: Option<std::borrow::Cow<'a, str>>,
        #[serde(borrow, default)]
        message: Option<Role<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Role<'a> {
        #[serde(borrow, default)]
        role: Option<std::borrow::Cow<'a, str>>,
    }
    let mut lines = tail.split(|&b| b == b'\n');
    if !tail_is_whole_lines {
        lines.next();
    }
    // (line, id, parent, a tool result) of every entry the tail holds whole.
    let mut linked: Vec<(&[u8], String, Option<String>, bool)> = vec![];
    for line in lines {
        let Ok(l) = serde_json::from_slice::<Link>(line) else {
            continue;
        };
        if let Some(id) = l.id {
            let tool_result = l.message.and_then(|m| m.role).is_some_and(|r| r == "toolResult");
            linked.push((line, id.into_owned(), l.parent_id.map(|p| p.into_owned()), tool_result));
        }
    }
    let by_id: std::collections::HashMap<&str, usize> = linked
        .iter()
        .enumerate()
        .map(|(k, (_, id, _, _))| (id.as_str(), k))
        .collect();
    let mut path = vec![linked.len().checked_sub(1)?];
    let mut whole_path = false;
    // At most one step per entry: a cycle in a damaged file ends the walk.
    while path.len() <= linked.len() {
        match &linked[*path.last()?].2 {
            None => {
                whole_path = true;
                break;
            }
            Some(p) => match by_id.get(p.as_str()) {
                Some(&k) => path.push(k),
                None => break,
            },
        }
    }
    // A tool result's row is its call's title, from the assistant entry before it: one whose
    // call is cut off by the tail's start would read otherwise than in the tree.
    while !whole_path && path.len() > 1 && linked[*path.last()?].3 {
        path.pop();
    }
    let mut bytes = Vec::with_capacity(header.len() + 1 + path.iter().map(|&k| linked[k].0.len() + 1).sum::<usize>());
    bytes.extend_from_slice(header);
    bytes.push(b'\n');
    for &k in path.iter().rev() {
        bytes.extend_from_slice(linked[k].0);
        bytes.push(b'\n');
    }
    let s = Session::from_bytes(bytes).ok()?;
    let tree = Tree::build(&s);
    let view = TreeView::new(&s, &tree, s.leaf(), filter, 0);
    let first = view.visible.len().saturating_sub(max_rows);
    let rows = view.visible[first..]
        .iter()
        .map(|&f| view.display_text(&s, view.flat[f]))
        .collect();
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
