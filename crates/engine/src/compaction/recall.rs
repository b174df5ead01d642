//! The recall score of a compaction summary: which facts of the summarized range it still
//! names. Offline and deterministic, so every strategy (a model's or the offline one) is
//! scored the same way on the same cut.
//!
//! Facts, each counted once per category:
//! - modified files: the paths of `edit` and `write` calls;
//! - read files: the paths of `read` calls;
//! - command paths: paths named in bash commands (the `bash` tool and `!` commands);
//! - errors: the first informative line of every error result (a tool result marked as an
//!   error, a `!` command that exited non-zero);
//! - request terms: the distinctive terms of every user request (paths, backticked names,
//!   identifiers, numbers; see `terms`).
//!
//! A path counts when the summary names it as given, relative to the session's cwd, or under
//! it (the summary's own file lists included). A term counts when it appears whole. An error
//! counts when its line appears (case and spacing aside) or when at least 70 % of its words of
//! three or more characters do. Invented paths are paths the summary names that appear nowhere
//! in what was summarized (the range, the previous summary, the carried file lists).

use crate::compaction::serialize;
use crate::compaction::summary::{self};
use crate::compaction::terms;
use crate::load::js;
use crate::load::session::Session;
use crate::view::context;
use serde_json::{Value, json};
use std::collections::HashSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Modified,
    Read,
    CommandPaths,
    Errors,
    RequestTerms,
}

impl Category {
    pub const ALL: [Category; 5] = [
        Category::Modified,
        Category::Read,
        Category::CommandPaths,
        Category::Errors,
        Category::RequestTerms,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Category::Modified => "modified files",
            Category::Read => "read files",
            Category::CommandPaths => "command paths",
            Category::Errors => "errors",
            Category::RequestTerms => "request terms",
        }
    }
    pub fn key(self) -> &'static str {
        match self {
            Category::Modified => "modifiedFiles",
            Category::Read => "readFiles",
            Category::CommandPaths => "commandPaths",
            Category::Errors => "errors",
            Category::RequestTerms => "requestTerms",
        }
    }
}

/// The facts of a summarized range, by category, each list without repeats.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub modified: Vec<String>,
    pub read: Vec<String>,
    pub command_paths: Vec<String>,
    pub errors: Vec<String>,
    pub request_terms: Vec<String>,
}

impl Facts {
    pub fn of(&self, c: Category) -> &[String] {
        match c {
            Category::Modified => &self.modified,
            Category::Read => &self.read,
            Category::CommandPaths => &self.command_paths,
            Category::Errors => &self.errors,
            Category::RequestTerms => &self.request_terms,
        }
    }
    pub fn total(&self) -> usize {
        Category::ALL.iter().map(|c| self.of(*c).len()).sum()
    }
}

fn push(v: &mut Vec<String>, seen: &mut HashSet<String>, s: String) {
    if !s.is_empty() && seen.insert(s.clone()) {
        v.push(s);
    }
}

/// One tool call of an assistant message, as the facts read it.
pub struct CallRef<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub args: &'a Value,
    /// Its `path` argument ("" without one).
    pub path: &'a str,
}

/// The tool calls of an assistant message (materialized), in order.
pub fn tool_calls(m: &Value) -> impl Iterator<Item = CallRef<'_>> {
    m.get("content")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("toolCall"))
        .map(|b| {
            let args = b.get("arguments").unwrap_or(&Value::Null);
            CallRef {
                id: b.get("id").and_then(|i| i.as_str()).unwrap_or(""),
                name: b.get("name").and_then(|n| n.as_str()).unwrap_or(""),
                args,
                path: args.get("path").and_then(|p| p.as_str()).unwrap_or(""),
            }
        })
}

/// The command a `bash` call or a `!` command ran.
pub fn command_of(args: &Value) -> Option<&str> {
    args.get("command").and_then(|c| c.as_str())
}

/// The line that says an error result's error (`terms::error_line`), if the message is one.
pub fn error_line(m: &Value) -> Option<String> {
    match m.get("role").and_then(|r| r.as_str())? {
        "toolResult" if js::truthy(m.get("isError")) => {
            terms::error_line(&context::content_text(m.get("content"), "\n"))
        }
        "bashExecution" => {
            let code = m.get("exitCode").and_then(|c| c.as_f64()).unwrap_or(0.0);
            if code == 0.0 || js::truthy(m.get("cancelled")) {
                return None;
            }
            let out = m.get("output").and_then(|o| o.as_str()).unwrap_or("");
            terms::error_line(out).or_else(|| Some(format!("exit code {}", js::js_number(code))))
        }
        _ => None,
    }
}

/// The facts of `messages` (materialized, as the summarizer reads them).
pub fn facts(messages: &[Value]) -> Facts {
    let mut f = Facts::default();
    let mut seen: [HashSet<String>; 5] = Default::default();
    for m in messages {
        match m.get("role").and_then(|r| r.as_str()).unwrap_or("") {
            "user" => {
                let text = context::content_text(m.get("content"), "\n");
                for t in terms::request_terms(&text) {
                    push(&mut f.request_terms, &mut seen[4], t);
                }
            }
            "assistant" => {
                for c in tool_calls(m) {
                    let path = c.path;
                    match c.name {
                        "edit" | "write" if !path.is_empty() => push(&mut f.modified, &mut seen[0], path.to_string()),
                        "read" if !path.is_empty() => push(&mut f.read, &mut seen[1], path.to_string()),
                        "bash" => {
                            for p in terms::paths(command_of(c.args).unwrap_or("")) {
                                push(&mut f.command_paths, &mut seen[2], p);
                            }
                        }
                        _ => {}
                    }
                }
            }
            "bashExecution" => {
                for p in terms::paths(command_of(m).unwrap_or("")) {
                    push(&mut f.command_paths, &mut seen[2], p);
                }
            }
            _ => {}
        }
        if let Some(e) = error_line(m) {
            push(&mut f.errors, &mut seen[3], e);
        }
    }
    f
}

/// One category's result.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryScore {
    pub category: Category,
    pub total: usize,
    pub found: usize,
    /// The facts the summary does not name (in the range's order).
    pub missing: Vec<String>,
}

impl CategoryScore {
    pub fn recall(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.found as f64 / self.total as f64
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub categories: Vec<CategoryScore>,
    /// Found facts over all facts (1.0 when the range has none).
    pub overall: f64,
    /// Paths the summary names.
    pub summary_paths: usize,
    /// Of them, those found nowhere in what was summarized.
    pub invented: Vec<String>,
    /// Pi's estimate of the summary.
    pub summary_tokens: u64,
    /// Pi's estimate of the summarized range (history and turn prefix).
    pub range_tokens: u64,
    /// What the summary replaces: the range and, for an update, every range the previous
    /// summaries absorbed (the raw messages on the path before the first kept entry).
    pub replaced_tokens: u64,
}

impl Score {
    pub fn invented_share(&self) -> f64 {
        if self.summary_paths == 0 {
            0.0
        } else {
            self.invented.len() as f64 / self.summary_paths as f64
        }
    }
    /// Summary tokens over the tokens it replaces.
    pub fn ratio(&self) -> f64 {
        if self.replaced_tokens == 0 {
            0.0
        } else {
            self.summary_tokens as f64 / self.replaced_tokens as f64
        }
    }
    pub fn to_json(&self) -> Value {
        let mut cats = serde_json::Map::new();
        for c in &self.categories {
            cats.insert(
                c.category.key().into(),
                json!({"total": c.total, "found": c.found, "recall": round4(c.recall()), "missing": c.missing}),
            );
        }
        json!({
            "overall": round4(self.overall),
            "categories": cats,
            "summaryPaths": self.summary_paths,
            "invented": self.invented,
            "inventedShare": round4(self.invented_share()),
            "summaryTokens": self.summary_tokens,
            "rangeTokens": self.range_tokens,
            "replacedTokens": self.replaced_tokens,
            "ratio": round4(self.ratio()),
        })
    }
}

fn round4(x: f64) -> f64 {
    (x * 10000.0).round() / 10000.0
}

/// What a summary is scored against.
pub struct Range {
    pub facts: Facts,
    pub cwd: String,
    /// Every path named in what was summarized (the serialized range, the previous summary,
    /// the carried file lists), in every form (`terms::path_forms`), and their file names.
    known_paths: HashSet<String>,
    known_names: HashSet<String>,
    pub range_tokens: u64,
    pub replaced_tokens: u64,
}

impl Range {
    /// The range `messages` (materialized) with the text it was summarized from.
    pub fn new(messages: &[Value], known_text: &str, cwd: &str, range_tokens: u64, replaced_tokens: u64) -> Range {
        let facts = facts(messages);
        let mut known_paths = HashSet::new();
        let mut known_names = HashSet::new();
        let all = facts
            .modified
            .iter()
            .chain(&facts.read)
            .cloned()
            .chain(terms::paths(known_text));
        for p in all {
            if let Some(name) = p.rsplit('/').next() {
                known_names.insert(name.to_string());
            }
            for f in terms::path_forms(&p, cwd) {
                known_paths.insert(f);
            }
        }
        Range {
            facts,
            cwd: cwd.to_string(),
            known_paths,
            known_names,
            range_tokens,
            replaced_tokens,
        }
    }

    /// The range a compaction `plan` summarizes in session `s`.
    pub fn of_plan(s: &Session, plan: &crate::compaction::cut::CompactionPlan) -> Range {
        Range::of_input(s, plan, &crate::compaction::summary::SummaryInput::of_plan(s, plan))
    }

    /// The same, from its summary input (already materialized and serialized).
    pub fn of_input(
        s: &Session,
        plan: &crate::compaction::cut::CompactionPlan,
        input: &crate::compaction::summary::SummaryInput,
    ) -> Range {
        let mut known = input.text(0..input.history.len());
        for part in input.turn_prefix.iter().chain(&input.previous) {
            known.push('\n');
            known.push_str(part);
        }
        let (read, modified) = plan.file_ops.lists();
        for p in serialize::list_strings(&read)
            .iter()
            .chain(&serialize::list_strings(&modified))
        {
            known.push('\n');
            known.push_str(p);
        }
        let range_tokens = plan
            .messages_to_summarize
            .iter()
            .chain(&plan.turn_prefix_messages)
            .map(|m| m.est_tokens)
            .sum();
        let cwd = s.header.cwd.clone().unwrap_or_default();
        Range::new(&input.values, &known, &cwd, range_tokens, replaced_tokens(s, plan))
    }

    fn path_named(&self, summary: &str, path: &str) -> bool {
        terms::path_forms(path, &self.cwd)
            .iter()
            .any(|f| terms::contains_term(summary, f))
    }

    pub fn score(&self, summary: &str) -> Score {
        let lower = summary.to_lowercase();
        let collapsed = lower.split_whitespace().collect::<Vec<_>>().join(" ");
        let words: HashSet<String> = terms::match_words(summary).into_iter().collect();
        let error_found = |e: &String| {
            let line = e.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
            if collapsed.contains(&line) {
                return true;
            }
            let mine: HashSet<String> = terms::match_words(e).into_iter().collect();
            mine.len() >= 2 && mine.iter().filter(|w| words.contains(*w)).count() * 10 >= mine.len() * 7
        };
        let mut categories = Vec::new();
        let (mut found_all, mut total_all) = (0, 0);
        for c in Category::ALL {
            let facts = self.facts.of(c);
            let mut missing = Vec::new();
            for f in facts {
                let ok = match c {
                    Category::Modified | Category::Read | Category::CommandPaths => self.path_named(summary, f),
                    Category::Errors => error_found(f),
                    Category::RequestTerms => {
                        if terms::is_path(f) {
                            self.path_named(summary, f)
                        } else {
                            terms::contains_term(summary, f)
                        }
                    }
                };
                if !ok {
                    missing.push(f.clone());
                }
            }
            let found = facts.len() - missing.len();
            found_all += found;
            total_all += facts.len();
            categories.push(CategoryScore {
                category: c,
                total: facts.len(),
                found,
                missing,
            });
        }
        let named = terms::paths(summary);
        let invented: Vec<String> = named
            .iter()
            .filter(|p| {
                let known = terms::path_forms(p, &self.cwd)
                    .iter()
                    .any(|f| self.known_paths.contains(f))
                    || (!p.contains('/') && self.known_names.contains(p.as_str()));
                !known
            })
            .cloned()
            .collect();
        Score {
            categories,
            overall: if total_all == 0 {
                1.0
            } else {
                found_all as f64 / total_all as f64
            },
            summary_paths: named.len(),
            invented,
            summary_tokens: summary::estimate_text(summary),
            range_tokens: self.range_tokens,
            replaced_tokens: self.replaced_tokens,
        }
    }
}

/// What a compaction at `plan` replaces: Pi's estimate of every message on the path before
/// the first kept entry, compaction summaries left out (their ranges are counted instead).
pub fn replaced_tokens(s: &Session, plan: &crate::compaction::cut::CompactionPlan) -> u64 {
    let path = &plan.projection.path;
    let end = path
        .iter()
        .position(|&i| i == plan.first_kept_entry)
        .unwrap_or(path.len());
    path[..end]
        .iter()
        .filter(|&&i| !s.entries[i].is_compaction())
        .flat_map(|&i| context::intrinsic_messages(s, i))
        .map(|m| m.est_tokens)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range() -> Range {
        let msgs = vec![
            json!({"role": "user", "content": "Fix `parse_header` in src/load.rs; keep the 4096 limit"}),
            json!({"role": "assistant", "content": [
                {"type": "toolCall", "id": "a", "name": "read", "arguments": {"path": "/home/u/p/src/load.rs"}},
                {"type": "toolCall", "id": "b", "name": "edit", "arguments": {"path": "src/lib.rs"}},
                {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "cargo test -p core && cat tests/data/x.json"}}]}),
            json!({"role": "toolResult", "toolName": "bash", "isError": true, "content": [{"type": "text", "text": "```\nerror[E0308]: mismatched types in parse_header\n```"}]}),
            json!({"role": "bashExecution", "command": "ls docs/", "output": "", "exitCode": 2}),
        ];
        Range::new(&msgs, "src/load.rs tests/data/x.json", "/home/u/p", 1000, 2000)
    }

    #[test]
    fn facts_by_category() {
        let r = range();
        assert_eq!(r.facts.modified, vec!["src/lib.rs"]);
        assert_eq!(r.facts.read, vec!["/home/u/p/src/load.rs"]);
        assert_eq!(r.facts.command_paths, vec!["tests/data/x.json", "docs/"]);
        assert_eq!(
            r.facts.errors,
            vec!["error[E0308]: mismatched types in parse_header", "exit code 2"]
        );
        assert_eq!(r.facts.request_terms, vec!["parse_header", "src/load.rs", "4096"]);
    }

    #[test]
    fn a_summary_is_scored_by_what_it_names() {
        let r = range();
        let s = r.score(
            "## Goal\n- Fix parse_header (limit 4096)\n## Blocked\n- Mismatched types in parse_header, E0308\n<read-files>\nsrc/load.rs\n</read-files>\nAlso see /home/u/p/src/lib.rs and invented/thing.rs",
        );
        let by = |c: Category| s.categories.iter().find(|x| x.category == c).unwrap().clone();
        assert_eq!(by(Category::Modified).found, 1, "absolute form under the cwd counts");
        assert_eq!(by(Category::Read).found, 1, "relative form counts");
        assert_eq!(by(Category::CommandPaths).missing, vec!["tests/data/x.json", "docs/"]);
        assert_eq!(by(Category::Errors).found, 1, "worded differently, 70 % of the words");
        assert_eq!(by(Category::RequestTerms).found, 3);
        assert_eq!(s.invented, vec!["invented/thing.rs"]);
        assert_eq!(s.summary_paths, 3);
        assert!((s.overall - 6.0 / 9.0).abs() < 1e-9, "{}", s.overall);
        assert_eq!(s.replaced_tokens, 2000);
    }
}
