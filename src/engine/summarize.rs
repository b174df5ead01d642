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
    // The newest few by name (every one is in the summary's <modified-files> list).
    let names = |v: &[String]| {
        const SHOWN: usize = 12;
        if v.len() <= SHOWN {
            v.join(", ")
        } else {
            format!("{} and {} more", v[v.len() - SHOWN..].join(", "), v.len() - SHOWN)
        }
    };
    if !f.edits.is_empty() {
        parts.push(format!("edited {}", names(&f.edits)));
    }
    if !f.writes.is_empty() {
        parts.push(format!("wrote {}", names(&f.writes)));
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

/// A history summary in Pi's compaction format (without the file tags), within `budget`
/// tokens when one is given (Pi's own for an LLM summary: 0.8 × reserveTokens).
pub fn history_summary(
    messages: &[Value],
    previous: Option<&str>,
    instructions: Option<&str>,
    budget: Option<u64>,
) -> String {
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
    let mut goal = goal;
    let mut constraints = constraints;
    let mut decisions = decisions;
    let mut errors = f.errors.clone();
    if let Some(b) = budget {
        // What the fixed parts cost; the lists share the rest.
        let fixed = 260 + next.len() + in_progress.as_ref().map_or(0, |r| r.len());
        let lists = [
            &mut decisions,
            &mut done,
            &mut errors,
            &mut critical,
            &mut goal,
            &mut constraints,
        ];
        fit(lists, (b as usize * 4).saturating_sub(fixed));
    }
    let done_text = if done.is_empty() {
        "- (none)".to_string()
    } else {
        done.iter().map(|d| format!("- [x] {d}")).collect::<Vec<_>>().join("\n")
    };
    let blocked = bullets(&errors, "(none)");
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

/// Trim `lists` (lowest value first: the assistant's decisions and answers, then errors,
/// carried context, requests, constraints) until their bullets fit `chars`, oldest items
/// first. The first request (the session's goal) and the newest item of each list stay; each
/// trimmed list says how many earlier items it leaves out. Deterministic: the same lists give
/// the same result.
fn fit(mut lists: [&mut Vec<String>; 6], chars: usize) {
    let size = |v: &Vec<String>| v.iter().map(|i| i.len() + 7).sum::<usize>();
    let mut total: usize = lists.iter().map(|v| size(v)).sum();
    if total <= chars {
        return;
    }
    let mut dropped = [0usize; 6];
    // Rounds: first trim each list to its newest half, then to its newest few, then to one.
    for keep_at_least in [usize::MAX, 8, 3, 1] {
        for (k, v) in lists.iter_mut().enumerate() {
            // The goal list keeps its first item (the original request) in front.
            let pinned = usize::from(k == 4 && !v.is_empty());
            let floor = if keep_at_least == usize::MAX {
                (v.len() / 2).max(1)
            } else {
                keep_at_least
            };
            while total > chars && v.len() > floor + pinned {
                let gone = v.remove(pinned);
                total -= gone.len() + 7;
                dropped[k] += 1;
            }
        }
        if total <= chars {
            break;
        }
    }
    // Still too long (a few huge items): cut each item.
    if total > chars {
        let per = (chars / lists.iter().map(|v| v.len().max(1)).sum::<usize>().max(1)).max(40);
        for v in lists.iter_mut() {
            for item in v.iter_mut() {
                if item.len() > per {
                    *item = cut(item, per.saturating_sub(8).max(20));
                }
            }
        }
    }
    const WHAT: [&str; 6] = [
        "earlier decisions",
        "earlier answers",
        "earlier errors",
        "earlier notes",
        "earlier requests",
        "earlier constraints",
    ];
    for (k, v) in lists.iter_mut().enumerate() {
        if dropped[k] > 0 {
            let at = usize::from(k == 4 && !v.is_empty());
            v.insert(at, format!("({} {} not listed)", dropped[k], WHAT[k]));
        }
    }
}

/// The summary of a split turn's prefix (Pi's turn-prefix format), within `budget` tokens
/// when one is given (Pi's: 0.5 × reserveTokens).
pub fn turn_prefix_summary(messages: &[Value], budget: Option<u64>) -> String {
    let mut f = gather(messages);
    if let Some(b) = budget {
        let mut none_a = vec![];
        let mut none_b = vec![];
        let mut none_c = vec![];
        let mut done = std::mem::take(&mut f.done);
        let mut errors = std::mem::take(&mut f.errors);
        let mut requests = std::mem::take(&mut f.requests);
        fit(
            [
                &mut none_a,
                &mut done,
                &mut errors,
                &mut none_b,
                &mut requests,
                &mut none_c,
            ],
            (b as usize * 4).saturating_sub(300),
        );
        f.done = done;
        f.errors = errors;
        f.requests = requests;
    }
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
    let full = history_summary(messages, None, instructions, None);
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
    fn a_long_history_fits_pis_budget_keeping_the_goal_the_newest_work_and_errors() {
        let mut msgs = vec![];
        for k in 0..3000 {
            msgs.push(serde_json::json!({"role": "user", "content": format!("Request {k}: please look at module_{k}.rs and fix the failing check number {k} without touching the public API")}));
            msgs.push(serde_json::json!({"role": "assistant", "stopReason": "stop", "content": [
                {"type": "text", "text": format!("Fixed module_{k}.rs: the check now passes and the API is unchanged. Decided to keep the old name instead of renaming.")},
                {"type": "toolCall", "id": format!("c{k}"), "name": "edit", "arguments": {"path": format!("src/module_{k}.rs")}}]}));
            if k % 10 == 0 {
                msgs.push(serde_json::json!({"role": "toolResult", "toolName": "bash", "isError": true, "content": format!("error[E0{k}]: mismatched types in module_{k}")}));
            }
        }
        let unbounded = history_summary(&msgs, None, None, None);
        let budget = 13107;
        let text = history_summary(&msgs, None, None, Some(budget));
        assert!(unbounded.len() / 4 > 10 * budget as usize, "{}", unbounded.len());
        assert!(text.len().div_ceil(4) <= budget as usize, "{} tokens", text.len() / 4);
        assert!(text.contains("Request 0: please look"), "the original request stays");
        assert!(text.contains("Request 2999:"), "the newest request stays");
        assert!(text.contains("error[E02990]"), "the newest error stays");
        assert!(text.contains("earlier requests not listed)"), "{text}");
        assert!(text.contains("and 2988 more"), "the tool work names the newest edits");
        for section in [
            "## Goal",
            "## Constraints & Preferences",
            "## Progress",
            "### Done",
            "### Blocked",
            "## Key Decisions",
            "## Next Steps",
            "## Critical Context",
        ] {
            assert!(text.contains(section), "{section}");
        }
        // Deterministic.
        assert_eq!(text, history_summary(&msgs, None, None, Some(budget)));
        // A small history is not touched by the budget.
        let small = &msgs[..6];
        assert_eq!(
            history_summary(small, None, None, Some(budget)),
            history_summary(small, None, None, None)
        );
    }

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
