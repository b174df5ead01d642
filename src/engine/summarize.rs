//! The offline summarizer: deterministic, instant, no network. It writes Pi's summary format
//! (`## Goal` … `## Critical Context`, then the file tags) from the entries themselves: every
//! user request, every error's first line, the tool work and its files, the last state.

use super::context::{self, ContextMessage};
use super::js;
use super::serialize::{self, FileOps};
use super::session::Session;
use serde_json::Value;

/// Longest quote of one request or error kept in a summary.
const QUOTE: usize = 160;

#[derive(Debug, Default, Clone)]
struct Facts {
    requests: Vec<String>,
    constraints: Vec<String>,
    errors: Vec<String>,
    done: Vec<String>,
    decisions: Vec<String>,
    /// Critical context carried from summaries inside the range.
    critical: Vec<String>,
    last_assistant: Option<String>,
    commands: usize,
    reads: Vec<String>,
    edits: Vec<String>,
    writes: Vec<String>,
    last_role_user: bool,
}

fn first_line(s: &str) -> String {
    let line = s.lines().map(js::js_trim).find(|l| !l.is_empty()).unwrap_or("");
    cut(line, QUOTE)
}

fn cut(s: &str, n: usize) -> String {
    let s = js::js_trim(s);
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// The first sentence (or line) of a reply.
fn first_sentence(s: &str) -> String {
    let line = first_line(s);
    let sentence = match line.find(". ") {
        Some(i) if i > 20 => line[..=i].to_string(),
        _ => line,
    };
    cut(&sentence, 100)
}

/// Done items: the newest few (the summary must stay within a tenth of its input).
const MAX_DONE: usize = 6;

fn push_unique(v: &mut Vec<String>, s: String) {
    if !s.is_empty() && !v.contains(&s) {
        v.push(s);
    }
}

const CONSTRAINT_WORDS: [&str; 9] = [
    "don't", "do not", "never", "must", "without", "only ", "prefer", "keep ", "no ",
];

fn gather(messages: &[Value]) -> Facts {
    let mut f = Facts::default();
    for m in messages {
        let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("");
        match role {
            "user" | "custom" => {
                let t = context::content_text(m.get("content"), "\n");
                let req = first_line(&t);
                if !req.is_empty() {
                    push_unique(&mut f.requests, req.clone());
                    let lower = t.to_lowercase();
                    if CONSTRAINT_WORDS.iter().any(|w| lower.contains(w)) {
                        push_unique(&mut f.constraints, req);
                    }
                }
                f.last_role_user = true;
            }
            "bashExecution" => {
                f.commands += 1;
                let cmd = m.get("command").and_then(|c| c.as_str()).unwrap_or("");
                let code = m.get("exitCode").and_then(|c| c.as_f64()).unwrap_or(0.0);
                if code != 0.0 {
                    let out = m.get("output").and_then(|c| c.as_str()).unwrap_or("");
                    push_unique(
                        &mut f.errors,
                        format!("`{}` exited {}: {}", cut(cmd, 60), js::js_number(code), first_line(out)),
                    );
                }
            }
            "assistant" => {
                let blocks: &[Value] = m
                    .get("content")
                    .and_then(|c| c.as_array())
                    .map(|v| v.as_slice())
                    .unwrap_or(&[]);
                for b in blocks {
                    if b.get("type").and_then(|t| t.as_str()) == Some("toolCall") {
                        let name = b.get("name").and_then(|n| n.as_str()).unwrap_or("");
                        let path = b
                            .get("arguments")
                            .and_then(|a| a.get("path"))
                            .and_then(|p| p.as_str())
                            .unwrap_or("");
                        match name {
                            "read" if !path.is_empty() => push_unique(&mut f.reads, path.to_string()),
                            "edit" if !path.is_empty() => push_unique(&mut f.edits, path.to_string()),
                            "write" if !path.is_empty() => push_unique(&mut f.writes, path.to_string()),
                            "bash" => f.commands += 1,
                            _ => {}
                        }
                    }
                }
                let text = context::content_text(m.get("content"), "\n");
                if !js::js_trim(&text).is_empty() {
                    f.last_assistant = Some(text.clone());
                    let stop = m.get("stopReason").and_then(|s| s.as_str()).unwrap_or("");
                    if stop == "stop" {
                        push_unique(&mut f.done, first_sentence(&text));
                    }
                    let lower = text.to_lowercase();
                    if [
                        "instead of",
                        "decided",
                        "rather than",
                        "going with",
                        "i'll use",
                        "we'll use",
                        "keep ",
                    ]
                    .iter()
                    .any(|w| lower.contains(w))
                    {
                        push_unique(&mut f.decisions, first_sentence(&text));
                    }
                    f.last_role_user = false;
                }
                if let Some(err) = m.get("errorMessage").and_then(|e| e.as_str()) {
                    push_unique(&mut f.errors, first_line(err));
                }
            }
            // An earlier summary inside the range (a branch left before, or a compaction's
            // checkpoint): its items are facts of the range too, not nothing.
            "branchSummary" | "compactionSummary" => {
                let text = m.get("summary").and_then(|t| t.as_str()).unwrap_or("");
                let prev = sections_of(text);
                for r in carried(&prev, "Goal") {
                    push_unique(&mut f.requests, r);
                }
                for c in carried(&prev, "Constraints & Preferences") {
                    push_unique(&mut f.constraints, c);
                }
                for d in carried(&prev, "Progress") {
                    push_unique(&mut f.done, d);
                }
                for d in carried(&prev, "Key Decisions") {
                    push_unique(&mut f.decisions, d);
                }
                for c in carried(&prev, "Critical Context") {
                    push_unique(&mut f.critical, c);
                }
                for c in carried(&prev, "Original Request") {
                    push_unique(&mut f.requests, c);
                }
                f.last_role_user = false;
            }
            "toolResult" if js::truthy(m.get("isError")) => {
                let tool = m.get("toolName").and_then(|t| t.as_str()).unwrap_or("tool");
                let t = context::content_text(m.get("content"), "\n");
                push_unique(&mut f.errors, format!("{tool}: {}", first_line(&t)));
            }
            _ => {}
        }
    }
    f
}

fn bullets(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        format!("- {empty}")
    } else {
        items.iter().map(|i| format!("- {i}")).collect::<Vec<_>>().join("\n")
    }
}

fn tool_work(f: &Facts) -> Option<String> {
    let mut parts = Vec::new();
    if !f.edits.is_empty() {
        parts.push(format!("edited {}", f.edits.join(", ")));
    }
    if !f.writes.is_empty() {
        parts.push(format!("wrote {}", f.writes.join(", ")));
    }
    if !f.reads.is_empty() {
        parts.push(format!(
            "read {} file{}",
            f.reads.len(),
            if f.reads.len() == 1 { "" } else { "s" }
        ));
    }
    if f.commands > 0 {
        parts.push(format!(
            "ran {} command{}",
            f.commands,
            if f.commands == 1 { "" } else { "s" }
        ));
    }
    (!parts.is_empty()).then(|| {
        let s = parts.join("; ");
        let mut c = s.chars();
        let first = c
            .next()
            .map(|x| x.to_uppercase().collect::<String>())
            .unwrap_or_default();
        first + c.as_str()
    })
}

/// Sections of a previous summary (`## Name` → bullet lines), for an update that keeps them.
fn sections_of(previous: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_file_list = false;
    for line in previous.lines() {
        // The file lists are rebuilt from the details, never carried as items.
        if line.starts_with("<read-files>") || line.starts_with("<modified-files>") {
            in_file_list = true;
            continue;
        }
        if line.starts_with("</read-files>") || line.starts_with("</modified-files>") {
            in_file_list = false;
            continue;
        }
        if in_file_list {
            continue;
        }
        if let Some(h) = line.strip_prefix("## ") {
            out.push((h.trim().to_string(), vec![]));
        } else if line.starts_with('<') || line.starts_with("---") || line.starts_with("**Turn Context") {
            // File tags and split-turn parts are rebuilt, not carried.
            if line.starts_with("---") || line.starts_with("**Turn") {
                break;
            }
        } else if let Some((_, v)) = out.last_mut()
            && !line.trim().is_empty()
            && !line.starts_with("### ")
            && !line.contains("(none)")
        {
            v.push(
                line.trim_start_matches(['-', ' '])
                    .trim_start_matches("[x] ")
                    .trim_start_matches("[ ] ")
                    .to_string(),
            );
        }
    }
    out
}

fn carried(prev: &[(String, Vec<String>)], name: &str) -> Vec<String> {
    prev.iter()
        .filter(|(n, _)| n == name)
        .flat_map(|(_, v)| v.clone())
        .collect()
}

fn merge(mut old: Vec<String>, new: Vec<String>) -> Vec<String> {
    for n in new {
        push_unique(&mut old, n);
    }
    old
}

/// A history summary in Pi's compaction format (without the file tags).
pub fn history_summary(messages: &[Value], previous: Option<&str>, instructions: Option<&str>) -> String {
    let f = gather(messages);
    let prev = previous.map(sections_of).unwrap_or_default();
    let goal = merge(carried(&prev, "Goal"), f.requests.clone());
    let constraints = merge(carried(&prev, "Constraints & Preferences"), f.constraints.clone());
    let mut done = carried(&prev, "Progress");
    let recent = f.done.len().saturating_sub(MAX_DONE);
    if recent > 0 {
        push_unique(&mut done, format!("{recent} earlier answers (see the requests above)"));
    }
    for d in f.done[recent..].iter().cloned().chain(tool_work(&f)) {
        push_unique(&mut done, d);
    }
    let decisions = merge(carried(&prev, "Key Decisions"), f.decisions.clone());
    let in_progress = if f.last_role_user {
        f.requests.last().cloned()
    } else {
        None
    };
    let next = match (&in_progress, &f.last_assistant) {
        (Some(r), _) => format!("1. Answer the pending request: {r}"),
        (None, Some(_)) => "1. Continue with the user's next request".to_string(),
        (None, None) => "1. Continue with the user's next request".to_string(),
    };
    let mut critical = merge(carried(&prev, "Critical Context"), f.critical.clone());
    if let Some(i) = instructions.map(js::js_trim).filter(|i| !i.is_empty()) {
        critical.insert(0, format!("Focus requested: {}", cut(i, QUOTE)));
    }
    let done_text = if done.is_empty() {
        "- (none)".to_string()
    } else {
        done.iter().map(|d| format!("- [x] {d}")).collect::<Vec<_>>().join("\n")
    };
    let blocked = bullets(&f.errors, "(none)");
    format!(
        "## Goal\n{}\n\n## Constraints & Preferences\n{}\n\n## Progress\n### Done\n{}\n\n### In Progress\n{}\n\n### Blocked\n{}\n\n## Key Decisions\n{}\n\n## Next Steps\n{}\n\n## Critical Context\n{}",
        bullets(&goal, "(none)"),
        bullets(&constraints, "(none)"),
        done_text,
        in_progress
            .map(|r| format!("- [ ] {r}"))
            .unwrap_or_else(|| "- (none)".into()),
        blocked,
        bullets(&decisions, "(none)"),
        next,
        bullets(&critical, "(none)"),
    )
}

/// The summary of a split turn's prefix (Pi's turn-prefix format).
pub fn turn_prefix_summary(messages: &[Value]) -> String {
    let f = gather(messages);
    format!(
        "## Original Request\n{}\n\n## Progress So Far\n{}\n\n## Context Needed to Continue\n{}",
        bullets(&f.requests, "(not in this part of the turn)"),
        bullets(
            &tool_work(&f).into_iter().chain(f.done.clone()).collect::<Vec<_>>(),
            "(none)"
        ),
        bullets(
            &f.errors.iter().map(|e| format!("Error: {e}")).collect::<Vec<_>>(),
            "The kept messages continue this turn"
        ),
    )
}

/// A branch summary body (Goal … Next Steps), as Pi's branch summaries are laid out. The
/// user's instructions and context carried from earlier summaries stay in a Critical Context
/// section after Next Steps (without either, the body ends at Next Steps).
pub fn branch_summary_body(messages: &[Value], instructions: Option<&str>) -> String {
    let full = history_summary(messages, None, instructions);
    match full.split_once("\n\n## Critical Context") {
        Some((body, critical)) if critical.trim() == "- (none)" => body.to_string(),
        _ => full,
    }
}

/// Materialize projected messages as Pi's summarizer sees them.
pub fn materialize_all(s: &Session, msgs: &[ContextMessage]) -> Vec<Value> {
    msgs.iter().map(|m| context::materialize(s, m)).collect()
}

/// Pi's layout of a compaction summary: history, the split turn's prefix, the file tags.
pub fn compose_compaction_summary(history: &str, prefix: Option<&str>, ops: &FileOps) -> String {
    let mut summary = match prefix {
        Some(p) => format!("{history}\n\n---\n\n**Turn Context (split turn):**\n\n{p}"),
        None => history.to_string(),
    };
    let (read, modified) = ops.lists();
    summary.push_str(&serialize::format_file_operations(
        &serialize::list_strings(&read),
        &serialize::list_strings(&modified),
    ));
    summary
}

pub const BRANCH_PREAMBLE: &str =
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

pub fn compose_branch_summary(body: &str, ops: &FileOps) -> String {
    let (read, modified) = ops.lists();
    format!(
        "{BRANCH_PREAMBLE}{body}{}",
        serialize::format_file_operations(&serialize::list_strings(&read), &serialize::list_strings(&modified))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_branch_summary_keeps_the_instructions() {
        let msgs = vec![
            json!({"role": "user", "content": "Try a SQLite store"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Sketched SqliteStore."}], "stopReason": "stop"}),
        ];
        let body = branch_summary_body(&msgs, Some("list what was tried"));
        assert!(
            body.contains("## Critical Context\n- Focus requested: list what was tried"),
            "{body}"
        );
        // Without instructions the body ends at Next Steps, as Pi lays branch summaries out.
        let plain = branch_summary_body(&msgs, None);
        assert!(!plain.contains("## Critical Context"), "{plain}");
        assert!(plain.contains("## Next Steps"));
    }

    #[test]
    fn a_branch_holding_only_an_earlier_summary_carries_it() {
        let earlier = format!(
            "{BRANCH_PREAMBLE}## Goal\n- Add CSV export\n\n## Constraints & Preferences\n- Keep the stdlib only\n\n## Progress\n### Done\n- [x] Wrote exporter.py\n\n### In Progress\n- (none)\n\n### Blocked\n- (none)\n\n## Key Decisions\n- Use the csv module\n\n## Next Steps\n1. Wire the CLI\n\n<read-files>\nacme/cli.py\n</read-files>"
        );
        let msgs = vec![json!({"role": "branchSummary", "summary": earlier})];
        let body = branch_summary_body(&msgs, None);
        for fact in [
            "Add CSV export",
            "Keep the stdlib only",
            "Wrote exporter.py",
            "Use the csv module",
        ] {
            assert!(body.contains(fact), "{fact} missing:\n{body}");
        }
        assert!(!body.contains("## Goal\n- (none)"), "{body}");
        assert!(
            !body.contains("acme/cli.py"),
            "file lists are rebuilt, not carried as items:\n{body}"
        );
    }
}
