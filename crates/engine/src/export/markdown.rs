//! The Markdown document (and the JSON one beside it): the reading flow of a path or a tree.

use crate::load::entry::Kind;
use crate::load::session::Session;
use crate::view::context::{self, content_text};
use crate::view::tree::Tree;
use pulldown_cmark::{Event, Options, Parser, Tag};
use serde_json::{Value, json};

/// Lines of a tool result shown before the fold.
const PREVIEW_LINES: usize = 6;

/// The format a document name asks for by its extension (`.html`/`.htm`, `.json`, `.md`).
pub fn format_for(name: &std::path::Path) -> Option<&'static str> {
    match name.extension()?.to_string_lossy().to_ascii_lowercase().as_str() {
        "html" | "htm" => Some("html"),
        "json" => Some("json"),
        "md" | "markdown" => Some("md"),
        _ => None,
    }
}

/// What to export.
#[derive(Debug, Clone, Copy)]
pub enum Scope {
    /// Root to this leaf, in order.
    Path(usize),
    /// Every entry, branch by branch (Pi's tree order), the leaf marked.
    Tree,
}

/// The entries to export, each with its depth in branches (0 on the path / the first branch).
fn entries(s: &Session, scope: Scope) -> Vec<(usize, usize)> {
    match scope {
        Scope::Path(leaf) => s.path_to(leaf).into_iter().map(|i| (i, 0)).collect(),
        Scope::Tree => {
            let t = Tree::build(s);
            let mut out = Vec::with_capacity(s.entries.len());
            // Depth-first; a child after the first of several starts a deeper branch.
            let mut stack: Vec<(usize, usize)> = t.roots.iter().rev().map(|&r| (r, 0)).collect();
            // Each entry once: duplicate ids can link the children lists into a cycle (a
            // session Pi wrote twice over), and the walk must still end.
            let mut seen = vec![false; s.entries.len()];
            while let Some((i, depth)) = stack.pop() {
                if std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                out.push((i, depth));
                let kids = &t.children[i];
                for (k, &c) in kids.iter().enumerate().rev() {
                    stack.push((c, if k == 0 { depth } else { depth + 1 }));
                }
            }
            out
        }
    }
}

/// The session's name, else bonsai's title for it (said in the head), else "Pi session"; and
/// which it is (`name`, `bonsai`, none).
fn title(s: &Session) -> (String, Option<&'static str>) {
    if let Some(n) = s.session_name() {
        return (n.to_string(), Some("name"));
    }
    match crate::view::title::of_session(s) {
        Some(t) => (t, Some("bonsai")),
        None => ("Pi session".into(), None),
    }
}

/// A fence that the text itself does not close.
fn fence(text: &str) -> String {
    let mut f = "```".to_string();
    while text.contains(&f) {
        f.push('`');
    }
    f
}

fn code_block(text: &str, lang: &str) -> String {
    let f = fence(text);
    format!("{f}{lang}\n{}\n{f}\n", text.trim_end_matches('\n'))
}

/// `<details>` with a summary line; the body is Markdown.
fn details(summary: &str, body: &str) -> String {
    format!(
        "<details><summary>{}</summary>\n\n{}\n</details>\n",
        html_escape(summary),
        md(body.trim_end())
    )
}

/// Session text as a Markdown block (it starts a line and a line of ours follows it): an HTML
/// tag in it (`<script>`, a `</details>` that would close our own fold) is shown as text, since
/// other tools render the Markdown file with its raw HTML. Which `<` is raw HTML is decided by
/// the parser the HTML page uses (pulldown-cmark, CommonMark): a guess from fence and span rules
/// alone missed fences closed by a list item's end and a fence left open in front of our text.
/// Code keeps its `<`. A text that would still leave a block open over what follows (an
/// unclosed fence) is shown whole as a code block.
fn md(t: &str) -> String {
    if !t.bytes().any(|b| matches!(b, b'<' | b'`' | b'~')) {
        return t.to_string();
    }
    let mut s = t.to_string();
    // Escaping one tag can turn an HTML block into a paragraph and so change what follows:
    // parse again until the parser finds no raw HTML (twice is the most seen in practice).
    for _ in 0..8 {
        let raw: Vec<std::ops::Range<usize>> = Parser::new_ext(&s, Options::empty())
            .into_offset_iter()
            .filter(|(ev, _)| matches!(ev, Event::Html(_) | Event::InlineHtml(_)))
            .map(|(_, r)| r)
            .collect();
        if raw.is_empty() {
            return if ends_closed(&s) { s } else { code_block(t, "") };
        }
        let mut out = String::with_capacity(s.len() + 8 * raw.len());
        let mut copied = 0;
        for r in raw {
            if r.start < copied {
                continue;
            }
            out.push_str(&s[copied..r.start]);
            out.push_str(&s[r.clone()].replace('<', "&lt;"));
            copied = r.end;
        }
        out.push_str(&s[copied..]);
        s = out;
    }
    code_block(t, "")
}

/// Whether a line of ours after `s` stands on its own at the top level (no fence or container
/// of the session's text still open around it).
fn ends_closed(s: &str) -> bool {
    let probe = format!("{s}\n</details>\n");
    let at = s.len() + 1;
    let mut depth = 0usize;
    for (ev, r) in Parser::new_ext(&probe, Options::empty()).into_offset_iter() {
        match ev {
            Event::Start(Tag::HtmlBlock) if r.start == at => return depth == 0,
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Session text inside a line of ours (a title, a label, a name, an error): one line, with
/// `<`, backticks and backslashes shown as themselves, so it can neither start a block nor
/// open a code span or tag that runs on into our own text.
fn md_inline(t: &str) -> String {
    let mut out = String::with_capacity(t.len() + 8);
    for c in t.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '`' => out.push_str("\\`"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

/// `t` as an inline code span whatever backticks it holds (a name or id from the session must
/// not end our span early and put the rest outside as Markdown or HTML).
fn code(t: &str) -> String {
    let t = t.replace('\n', " ");
    let longest = t.as_bytes().split(|c| *c != b'`').map(|r| r.len()).max().unwrap_or(0);
    let f = "`".repeat(longest + 1);
    if t.starts_with('`') || t.ends_with('`') || longest > 0 {
        format!("{f} {t} {f}")
    } else {
        format!("{f}{t}{f}")
    }
}

fn html_escape(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn images(content: Option<&Value>) -> Vec<String> {
    content
        .and_then(|c| c.as_array())
        .map(|a| {
            a.iter()
                .filter(|b| b["type"] == "image")
                .map(|b| {
                    let kind = b["mimeType"].as_str().unwrap_or("image").trim_start_matches("image/");
                    let bytes = b["data"].as_str().map(|d| d.len() * 3 / 4).unwrap_or(0);
                    format!("*[image {}, {} KB]*", md_inline(kind), bytes.div_ceil(1024))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The tool call's name and arguments for a tool result, from the assistant message above it.
fn call_of(s: &Session, result: usize, call_id: &str) -> Option<(String, Value)> {
    let mut cur = s.parent_of(result);
    for _ in 0..64 {
        let i = cur?;
        let v = s.entry_value(i);
        if v["type"] == "message" && v["message"]["role"] == "assistant" {
            let blocks = v["message"]["content"].as_array()?;
            if let Some(b) = blocks.iter().find(|b| b["type"] == "toolCall" && b["id"] == call_id) {
                return Some((b["name"].as_str().unwrap_or("tool").to_string(), b["arguments"].clone()));
            }
        }
        cur = s.parent_of(i);
    }
    None
}

/// `read src/app.rs`, `bash git status`: the call in one line.
fn call_line(name: &str, args: &Value) -> String {
    let key = ["path", "command", "pattern", "query", "file_path"]
        .iter()
        .find_map(|k| args.get(*k).and_then(|v| v.as_str()));
    match key {
        Some(k) => {
            let k = k.lines().next().unwrap_or("");
            format!("{name} {k}")
        }
        None => name.to_string(),
    }
}

/// The Markdown of a session.
pub fn markdown(s: &Session, scope: Scope) -> String {
    let leaf = match scope {
        Scope::Path(l) => Some(l),
        Scope::Tree => s.leaf(),
    };
    let list = entries(s, scope);
    let mut out = md_head(s, scope, leaf, list.len());
    let mut depth_now = 0;
    let mut turn_tokens: u64 = 0;
    let mut in_turn = false;
    let edited = edits_at(s, leaf);
    let mut last_usage: Option<Value> = None;
    for (k, &(i, depth)) in list.iter().enumerate() {
        if matches!(scope, Scope::Tree) && (depth != depth_now || (k > 0 && s.parent_of(i) != Some(list[k - 1].0))) {
            if in_turn {
                md_turn(&mut out, turn_tokens, last_usage.as_ref());
                in_turn = false;
            }
            let from = s
                .parent_of(i)
                .map(|p| format!(" from {}", code(&s.entries[p].id)))
                .unwrap_or_default();
            out.push_str(&format!("---\n\n## Branch{from}\n\n"));
            depth_now = depth;
        }
        let e = &s.entries[i];
        let v = s.entry_value(i);
        let (label, here) = md_marks(s, i, leaf, &edited);
        let est: u64 = context::intrinsic_messages(s, i).iter().map(|m| m.est_tokens).sum();
        match &e.kind {
            Kind::Message(m) => {
                let msg = &v["message"];
                match m.role.as_str() {
                    "user" => {
                        if in_turn {
                            md_turn(&mut out, turn_tokens, last_usage.as_ref());
                        }
                        in_turn = true;
                        turn_tokens = 0;
                        last_usage = None;
                        md_user(&mut out, msg, &label, here);
                    }
                    "assistant" => {
                        if let Some(u) = md_assistant(&mut out, msg, &label, here) {
                            last_usage = Some(u);
                        }
                    }
                    "toolResult" => md_tool_result(&mut out, s, i, msg, est, &label, here),
                    "bashExecution" => md_bash(&mut out, msg, &label, here),
                    "system" => {
                        out.push_str(&format!("*system prompt: ~{est} tokens{label}{here}*\n\n"));
                    }
                    other => {
                        out.push_str(&format!(
                            "**{}**{label}{here}\n\n{}\n\n",
                            md_inline(other),
                            md(content_text(msg.get("content"), "\n").trim())
                        ));
                    }
                }
                turn_tokens += est;
            }
            Kind::Compaction(_) => {
                if in_turn {
                    md_turn(&mut out, turn_tokens, last_usage.as_ref());
                    in_turn = false;
                }
                let before = v["tokensBefore"].as_u64().unwrap_or(0);
                out.push_str(&format!(
                    "## Compaction · {before} tokens before, kept from {}{label}{here}\n\n",
                    code(v["firstKeptEntryId"].as_str().unwrap_or(""))
                ));
                out.push_str(&details("Summary", v["summary"].as_str().unwrap_or("")));
                out.push('\n');
            }
            Kind::BranchSummary(_) => {
                if in_turn {
                    md_turn(&mut out, turn_tokens, last_usage.as_ref());
                    in_turn = false;
                }
                out.push_str(&format!("## Branch summary{label}{here}\n\n"));
                out.push_str(&details(
                    "Summary of the branch left",
                    v["summary"].as_str().unwrap_or(""),
                ));
                out.push('\n');
            }
            Kind::CustomMessage { .. } => {
                let ct = v["customType"].as_str().unwrap_or("custom");
                out.push_str(&format!(
                    "**{}**{label}{here}\n\n{}\n\n",
                    md_inline(ct),
                    md(content_text(v.get("content"), "\n").trim())
                ));
                turn_tokens += est;
            }
            _ => {
                // Entries the model does not see: one quiet line each.
                if let Some(line) = md_quiet_line(e, &v, here) {
                    out.push_str(&line);
                }
            }
        }
    }
    if in_turn {
        md_turn(&mut out, turn_tokens, last_usage.as_ref());
    }
    out
}

/// The line after a turn: its tokens by Pi's estimate, and what its reply reported.
fn md_turn(out: &mut String, tokens: u64, usage: Option<&Value>) {
    let mut t = format!("*turn: ~{tokens} tokens (Pi's estimate)");
    if let Some(u) = usage {
        t.push_str(&format!(
            "; the reply reported {} in, {} out",
            u["input"].as_u64().unwrap_or(0) + u["cacheRead"].as_u64().unwrap_or(0),
            u["output"].as_u64().unwrap_or(0)
        ));
    }
    t.push_str("*\n\n");
    out.push_str(&t);
}

/// The title, the session's id and folder, what the export holds, the context at the leaf.
fn md_head(s: &Session, scope: Scope, leaf: Option<usize>, entries: usize) -> String {
    let mut out = String::new();
    let (title, by) = title(s);
    out.push_str(&format!("# {}\n\n", md_inline(&title)));
    let h = &s.header;
    let mut meta = vec![format!("session {}", code(&h.id))];
    if by == Some("bonsai") {
        meta.push("title made by bonsai (the session has no name)".to_string());
    }
    if let Some(cwd) = &h.cwd {
        meta.push(format!("in {}", code(cwd)));
    }
    meta.push(match scope {
        Scope::Path(l) => format!("{entries} entries on the path to {}", code(&s.entries[l].id)),
        Scope::Tree => format!("all {entries} entries, every branch"),
    });
    out.push_str(&format!("*{}*\n\n", meta.join(" · ")));
    if let Some(l) = leaf {
        let proj = context::project(s, &s.path_to(l));
        let msgs: Vec<_> = proj.messages().collect();
        let t = context::estimate_context_tokens(s, &msgs);
        out.push_str(&format!(
            "*context at the leaf: {} messages, {} tokens as Pi counts them*\n\n",
            msgs.len(),
            t.tokens.round() as u64
        ));
    }
    out
}

/// The context edits in effect at the leaf (Pi: the latest per target on its path), to mark
/// on the message each one changes (the edit entry itself is a quiet line): target → (edit,
/// hidden).
fn edits_at(s: &Session, leaf: Option<usize>) -> std::collections::HashMap<usize, (usize, bool)> {
    let mut edited: std::collections::HashMap<usize, (usize, bool)> = Default::default();
    if let Some(l) = leaf {
        for &i in &s.path_to(l) {
            if let Some(t) = s.entries[i].kind.context_edit_target()
                && let Some(target) = s.idx_of(t)
            {
                edited.insert(target, (i, s.entry_value(i)["replacement"].is_null()));
            }
        }
    }
    edited
}

/// An entry's label and context edit (" · label **x** · ✎ …"), and " · **leaf**" at the leaf.
fn md_marks(
    s: &Session,
    i: usize,
    leaf: Option<usize>,
    edited: &std::collections::HashMap<usize, (usize, bool)>,
) -> (String, &'static str) {
    let id = &s.entries[i].id;
    let mut label = s
        .label_of(id)
        .map(|l| format!(" · label **{}**", md_inline(l)))
        .unwrap_or_default();
    if let Some(&(edit, hidden)) = edited.get(&i) {
        label.push_str(&format!(
            " · ✎ {} (context edit {})",
            if hidden {
                "hidden from the model"
            } else {
                "replaced for the model"
            },
            code(&s.entries[edit].id)
        ));
    }
    let here = if leaf == Some(i) { " · **leaf**" } else { "" };
    (label, here)
}

/// A user message: its text and images.
fn md_user(out: &mut String, msg: &Value, label: &str, here: &str) {
    out.push_str(&format!("## User{label}{here}\n\n"));
    out.push_str(&format!("{}\n\n", md(content_text(msg.get("content"), "\n").trim())));
    for im in images(msg.get("content")) {
        out.push_str(&format!("{im}\n\n"));
    }
}

/// An assistant message: thinking folded, text, tool calls, the error. Returns the usage it
/// reported (the turn's line says it).
fn md_assistant(out: &mut String, msg: &Value, label: &str, here: &str) -> Option<Value> {
    let model = msg["model"].as_str().unwrap_or("");
    let stop = match msg["stopReason"].as_str() {
        Some("aborted") => " · aborted",
        Some("error") => " · error",
        Some("length") => " · cut at the length limit",
        _ => "",
    };
    out.push_str(&format!(
        "### Assistant{}{stop}{label}{here}\n\n",
        if model.is_empty() {
            String::new()
        } else {
            format!(" ({model})")
        }
    ));
    for b in msg["content"].as_array().into_iter().flatten() {
        match b["type"].as_str() {
            Some("thinking") => {
                let t = b["thinking"].as_str().unwrap_or("").trim();
                if !t.is_empty() {
                    out.push_str(&details("Thinking", t));
                    out.push('\n');
                }
            }
            Some("text") => {
                out.push_str(&format!("{}\n\n", md(b["text"].as_str().unwrap_or("").trim())));
            }
            Some("toolCall") => {
                let name = b["name"].as_str().unwrap_or("tool");
                out.push_str(&format!(
                    "**tool call** {}\n\n",
                    code(&call_line(name, &b["arguments"]))
                ));
                let args = serde_json::to_string_pretty(&b["arguments"]).unwrap_or_default();
                out.push_str(&code_block(&args, "json"));
                out.push('\n');
            }
            _ => {}
        }
    }
    if let Some(err) = msg["errorMessage"].as_str() {
        out.push_str(&format!("> error: {}\n\n", md_inline(err)));
    }
    msg.get("usage").filter(|u| u.is_object()).cloned()
}

/// A tool result: the call it answers, its size, images, its text (long ones folded).
fn md_tool_result(out: &mut String, s: &Session, i: usize, msg: &Value, est: u64, label: &str, here: &str) {
    let call_id = msg["toolCallId"].as_str().unwrap_or("");
    let (name, args) =
        call_of(s, i, call_id).unwrap_or_else(|| (msg["toolName"].as_str().unwrap_or("tool").to_string(), Value::Null));
    let text = content_text(msg.get("content"), "\n");
    let lines: Vec<&str> = text.lines().collect();
    // A file read is highlighted by viewers as its language.
    let lang = (name == "read")
        .then(|| args.get("path").and_then(|p| p.as_str()))
        .flatten()
        .and_then(|p| p.rsplit_once('.'))
        .map(|(_, ext)| ext)
        .filter(|e| e.len() <= 10 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or("");
    let err = if msg["isError"] == true { " · **error**" } else { "" };
    out.push_str(&format!(
        "**result** {} · {} line{} · ~{est} tokens{err}{label}{here}\n\n",
        code(&call_line(&name, &args)),
        lines.len(),
        if lines.len() == 1 { "" } else { "s" }
    ));
    for im in images(msg.get("content")) {
        out.push_str(&format!("{im}\n\n"));
    }
    if lines.len() <= PREVIEW_LINES {
        if !text.trim().is_empty() {
            out.push_str(&code_block(&text, lang));
            out.push('\n');
        }
    } else {
        out.push_str(&code_block(&lines[..PREVIEW_LINES].join("\n"), lang));
        out.push('\n');
        out.push_str(&details(
            &format!("all {} lines", lines.len()),
            &code_block(&text, lang),
        ));
        out.push('\n');
    }
}

/// A `!` command and its output.
fn md_bash(out: &mut String, msg: &Value, label: &str, here: &str) {
    let excluded = if msg["excludeFromContext"] == true {
        " (not sent to the model)"
    } else {
        ""
    };
    out.push_str(&format!(
        "**`!` {}**{excluded}{label}{here}\n\n",
        md_inline(msg["command"].as_str().unwrap_or(""))
    ));
    let o = msg["output"].as_str().unwrap_or("");
    if !o.trim().is_empty() {
        out.push_str(&code_block(o, ""));
        out.push('\n');
    }
}

/// An entry the model does not see, as one quiet line (none for labels, custom entries and
/// usage).
fn md_quiet_line(e: &crate::load::entry::Entry, v: &Value, here: &str) -> Option<String> {
    let what = match e.kind.type_name() {
        "model_change" => format!(
            "model: {}/{}",
            md_inline(v["provider"].as_str().unwrap_or("?")),
            md_inline(v["modelId"].as_str().unwrap_or("?"))
        ),
        "thinking_level_change" => {
            format!("thinking: {}", md_inline(v["thinkingLevel"].as_str().unwrap_or("?")))
        }
        "session_info" => format!("named: {}", md_inline(v["name"].as_str().unwrap_or(""))),
        "context_edit" => format!(
            "context edit: {} {}",
            code(v["targetId"].as_str().unwrap_or("")),
            if v["replacement"].is_null() {
                "hidden from the model"
            } else {
                "replaced for the model"
            }
        ),
        "label" | "custom" | "usage" => return None,
        other => md_inline(other),
    };
    Some(format!("*{what}{here}*\n\n"))
}

/// The session as JSON: the header, the scope, and each entry as the file has it (with its
/// depth in branches for a tree), as bytes.
pub fn json(s: &Session, scope: Scope) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.buf.len() + s.buf.len() / 16);
    // Writing to a Vec cannot fail.
    let _ = write_json(s, scope, &mut out);
    out
}

/// [`json`] written as it goes, one entry at a time: the entries are never all parsed at once
/// (a `Value` tree of a 100 MB session takes about 8 times its size). One entry per line
/// inside the `entries` array.
pub fn write_json(s: &Session, scope: Scope, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let list = entries(s, scope);
    let scope_v = match scope {
        Scope::Path(l) => json!({"path": true, "leafId": s.entries[l].id.to_string()}),
        Scope::Tree => json!({"tree": true, "leafId": s.leaf().map(|l| s.entries[l].id.to_string())}),
    };
    writeln!(out, "{{")?;
    let (title, by) = title(s);
    writeln!(out, "  \"title\": {},", Value::from(title))?;
    writeln!(out, "  \"titleBy\": {},", Value::from(by))?;
    writeln!(out, "  \"header\": {},", s.header.raw)?;
    writeln!(out, "  \"scope\": {scope_v},")?;
    write!(out, "  \"entries\": [")?;
    for (k, &(i, depth)) in list.iter().enumerate() {
        let mut v = s.entry_value(i);
        if let (Scope::Tree, Value::Object(o)) = (scope, &mut v) {
            o.insert("depth".into(), json!(depth));
        }
        if let (Some(l), Value::Object(o)) = (s.label_of(&s.entries[i].id), &mut v) {
            o.insert("label".into(), json!(l));
        }
        write!(out, "{}\n    {v}", if k == 0 { "" } else { "," })?;
    }
    writeln!(out, "\n  ]\n}}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::html;

    #[test]
    fn session_html_in_markdown_is_text_and_code_stays_code() {
        assert_eq!(
            md("a <script>alert(1)</script> b"),
            "a &lt;script>alert(1)&lt;/script> b"
        );
        assert_eq!(md("</details>\nx"), "&lt;/details>\nx");
        // Code spans and fences show `<` as it is already.
        assert_eq!(md("use `Vec<u8>` and ``a`<b``"), "use `Vec<u8>` and ``a`<b``");
        assert_eq!(
            md("```rust\nlet v: Vec<u8>;\n```\n<i>"),
            "```rust\nlet v: Vec<u8>;\n```\n&lt;i>"
        );
        // A backtick in the info string makes no fence, so the tag after is escaped.
        assert_eq!(md("``` a`b\n<script>"), "``` a`b\n&lt;script>");
        // A fence left open is shown whole as a code block, not left to swallow the rest of
        // the document; so is one a list item's fence would end early.
        assert_eq!(md("~~~~\n<x>"), "```\n~~~~\n<x>\n```\n");
        assert_eq!(md("````\n```\n"), "`````\n````\n```\n`````\n");
        assert_eq!(md("- a\n\n  ```\n</details>\n"), "- a\n\n  ```\n&lt;/details>\n");
        assert_eq!(md("```\nno tag"), "````\n```\nno tag\n````\n");
        // (the fuzzer's find: a fence of 100 backticks with a tag in its info string)
        let long = format!("x</details>\n{}<script>", "`".repeat(100));
        assert!(ends_closed(&md(&long)), "{}", md(&long));
        // Inside a line of ours: one line, nothing opens.
        assert_eq!(md_inline("a\n```<b>`\\"), "a \\`\\`\\`&lt;b>\\`\\\\");
        assert_eq!(code("plain"), "`plain`");
        assert_eq!(code("a`b ``c"), "``` a`b ``c ```");
    }

    #[test]
    fn a_literal_details_close_does_not_close_our_fold_in_html() {
        let text = "{\"type\":\"session\",\"version\":3,\"id\":\"h\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
            {\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi <script>alert(1)</script>\",\"timestamp\":1}}\n\
            {\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\\n</details>\\n<img src=x onerror=alert(2)>\"},{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"x` <b>y</b> `\",\"arguments\":{}}],\"stopReason\":\"toolUse\",\"timestamp\":2}}\n";
        let s = Session::from_bytes(text.as_bytes().to_vec()).unwrap();
        let m = markdown(&s, Scope::Tree);
        assert!(!m.contains("<script>") && !m.contains("<img"), "{m}");
        assert!(m.contains("&lt;/details>"), "{m}");
        let h = html(&s, Scope::Tree);
        assert!(
            !h.contains("<script") && !h.contains("<img") && !h.contains("<b>"),
            "{h}"
        );
        assert_eq!(h.matches("<details").count(), h.matches("</details>").count());
        assert!(
            h.contains("&lt;/details&gt;") || h.contains("&lt;/details>"),
            "shown as text"
        );
    }

    /// The repository's Pi-written sessions, built in (the engine reads no file).
    fn own(name: &str) -> Session {
        let bytes: &[u8] = match name {
            "tour.jsonl" => include_bytes!("../../../../fixtures/pi-0.87.1/tour.jsonl"),
            "split-turn.jsonl" => include_bytes!("../../../../fixtures/pi-0.87.1/split-turn.jsonl"),
            other => panic!("no such fixture built in: {other}"),
        };
        Session::from_bytes(bytes.to_vec()).unwrap()
    }

    #[test]
    fn markdown_of_the_tour_path() {
        let s = own("tour.jsonl");
        insta::assert_snapshot!(markdown(&s, Scope::Path(s.leaf().unwrap())));
    }

    #[test]
    fn markdown_of_the_whole_tour_tree() {
        let s = own("tour.jsonl");
        let md = markdown(&s, Scope::Tree);
        // Every user message is in it, once (a summary may quote one: count the headings).
        let users = (0..s.entries.len())
            .filter(|&i| matches!(&s.entries[i].kind, Kind::Message(m) if m.role.as_str() == "user"))
            .count();
        assert_eq!(md.matches("\n## User").count(), users);
        assert_eq!(md.matches("## Branch from").count(), 2, "three branches");
        insta::assert_snapshot!(md);
    }

    #[test]
    fn markdown_of_the_split_turn_session() {
        let s = own("split-turn.jsonl");
        insta::assert_snapshot!(markdown(&s, Scope::Path(s.leaf().unwrap())));
    }

    #[test]
    fn a_fence_is_never_closed_by_the_text_inside() {
        let t = "a ``` b ```` c";
        let b = code_block(t, "");
        assert!(b.starts_with("`````\n") && b.ends_with("\n`````\n"), "{b}");
    }

    #[test]
    fn json_keeps_entries_as_the_file_has_them() {
        let s = own("tour.jsonl");
        let parse = |b: Vec<u8>| serde_json::from_slice::<Value>(&b).unwrap();
        let v = parse(json(&s, Scope::Tree));
        assert_eq!(v["entries"].as_array().unwrap().len(), s.entries.len());
        // Each entry's keys in the file's order, the label added.
        let first = serde_json::to_string(&v["entries"][0]).unwrap();
        assert!(first.starts_with(r#"{"type":"model_change","id":"#), "{first}");
        let leaf = s.leaf().unwrap();
        let v = parse(json(&s, Scope::Path(leaf)));
        let path = s.path_to(leaf);
        assert_eq!(v["entries"].as_array().unwrap().len(), path.len());
        assert_eq!(v["entries"][0]["id"], s.entries[path[0]].id.as_ref());
    }
}
