//! The audit of a summary already in a session: which specifics of the entries it replaced
//! it still names, and which it lost. Any compaction or branch summary is audited the same
//! way, whoever wrote it and with whatever model.
//!
//! The specifics, by kind, each with the entry it came from:
//! - files read and files modified: the paths of `read`, `edit` and `write` calls (a file
//!   both read and modified counts once, as modified, as Pi's file lists count it);
//! - commands: every command run, whole, with its exit state (the `bash` tool and `!`);
//! - errors: the first informative line of every error result (as `recall` reads it);
//! - decisions: the user's sentences that set a constraint or decide (must, never, don't,
//!   keep, decided, prefer, …) and the user's short answers to the agent's questions;
//! - values: what the user gave verbatim (ids, versions, ports, URLs, amounts, names, paths);
//! - open tasks: the user's and the agent's to-dos (todo, still need, next, …).
//!
//! The previous summary counts as source too: its file lists, its constraints, decisions
//! and open items, and its own specifics section. A specific it carried is attributed to it.
//!
//! Text inside code fences is not a decision, task or value: a pasted log is not the user
//! giving values. Every rule is a test below.
//!
//! A specific is kept when the summary names it:
//! - a path as given, relative to the cwd or absolute under it (`terms::path_forms`);
//! - a command whole, or its program with its distinctive arguments (at most three) on one
//!   line;
//! - an error as `recall` matches one (the line, or 70 % of its words);
//! - a decision or a task whole, or 60 % of its content words;
//! - a value as a whole term.

use crate::compaction::branch_summary;
use crate::compaction::recall;
use crate::compaction::summary;
use crate::compaction::terms;
use crate::load::entry::{Kind as EntryKind, Role};
use crate::load::js;
use crate::load::session::Session;
use crate::view::context;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// What kind of specific an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    FilesRead,
    FilesModified,
    Commands,
    Errors,
    Decisions,
    Values,
    OpenTasks,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::FilesRead,
        Kind::FilesModified,
        Kind::Commands,
        Kind::Errors,
        Kind::Decisions,
        Kind::Values,
        Kind::OpenTasks,
    ];

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            Kind::FilesRead => "filesRead",
            Kind::FilesModified => "filesModified",
            Kind::Commands => "commands",
            Kind::Errors => "errors",
            Kind::Decisions => "decisions",
            Kind::Values => "values",
            Kind::OpenTasks => "openTasks",
        }
    }

    /// The words a view and the specifics section use.
    pub fn name(self) -> &'static str {
        match self {
            Kind::FilesRead => "files read",
            Kind::FilesModified => "files modified",
            Kind::Commands => "commands",
            Kind::Errors => "errors",
            Kind::Decisions => "decisions",
            Kind::Values => "values",
            Kind::OpenTasks => "open tasks",
        }
    }

    /// One of them ("file", "command", …) for "lost 3 files".
    pub fn noun(self, n: usize) -> &'static str {
        let one = n == 1;
        match self {
            Kind::FilesRead | Kind::FilesModified => {
                if one {
                    "file"
                } else {
                    "files"
                }
            }
            Kind::Commands => {
                if one {
                    "command"
                } else {
                    "commands"
                }
            }
            Kind::Errors => {
                if one {
                    "error"
                } else {
                    "errors"
                }
            }
            Kind::Decisions => {
                if one {
                    "decision"
                } else {
                    "decisions"
                }
            }
            Kind::Values => {
                if one {
                    "value"
                } else {
                    "values"
                }
            }
            Kind::OpenTasks => {
                if one {
                    "open task"
                } else {
                    "open tasks"
                }
            }
        }
    }

    pub fn parse(key: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.key() == key || k.name() == key || heading(*k).eq_ignore_ascii_case(key))
    }
}

/// A kind's heading in a specifics section.
fn heading(k: Kind) -> &'static str {
    match k {
        Kind::FilesRead => "Files read",
        Kind::FilesModified => "Files modified",
        Kind::Commands => "Commands",
        Kind::Errors => "Errors",
        Kind::Decisions => "Decisions",
        Kind::Values => "Values",
        Kind::OpenTasks => "Open tasks",
    }
}

/// One specific of the replaced entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specific {
    pub kind: Kind,
    /// As it was written (a command whole, a sentence, a path as the call gave it).
    pub text: String,
    /// The entry it came from (index into the session's entries).
    pub entry: usize,
    /// A command's exit state: "ok", "exit 2", "failed", "cancelled".
    pub state: Option<String>,
    /// The user's whole sentence a value or a decision clause was said in (what the packet
    /// and a mend quote: a bare `42` or half a sentence says nothing).
    pub said: Option<String>,
}

impl Specific {
    /// The line a specifics section gives it (verbatim, a command in backticks with its state).
    pub fn line(&self) -> String {
        match (self.kind, &self.state) {
            (Kind::Commands, Some(st)) => format!("`{}` ({st})", self.text),
            (Kind::Commands, None) => format!("`{}`", self.text),
            _ => self.text.clone(),
        }
    }

    /// What a packet or a mend gives back for it: a value or a decision clause as the whole
    /// sentence the user said it in, anything else as its [`Specific::line`].
    pub fn quote(&self) -> String {
        match (&self.said, self.kind) {
            (Some(s), Kind::Values | Kind::Decisions | Kind::OpenTasks) => s.clone(),
            _ => self.line(),
        }
    }
}

/// The specifics of a range as they are gathered: each (kind, text) once, the first time.
#[derive(Debug, Default, Clone)]
pub struct Gather {
    items: Vec<Specific>,
    seen: HashSet<(Kind, String)>,
    /// The last assistant text (to tell an answer to a question).
    asked: bool,
}

impl Gather {
    fn add(&mut self, kind: Kind, text: &str, entry: usize, state: Option<String>) {
        self.add_said(kind, text, entry, state, None);
    }

    fn add_said(&mut self, kind: Kind, text: &str, entry: usize, state: Option<String>, said: Option<&str>) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if self.seen.insert((kind, text.to_string())) {
            self.items.push(Specific {
                kind,
                text: text.to_string(),
                entry,
                state,
                said: said.map(|s| s.trim().to_string()).filter(|s| s != text),
            });
        } else if kind == Kind::Commands
            && let Some(st) = state
            && let Some(it) = self.items.iter_mut().rev().find(|i| i.kind == kind && i.text == text)
        {
            // The same command run again: its newest exit state.
            it.state = Some(st);
        }
    }

    /// The items gathered so far, in the order first said (nothing merged yet).
    pub fn items(&self) -> &[Specific] {
        &self.items
    }

    /// Files read that were also modified count once, as modified (in whatever form each
    /// call gave the path).
    pub fn finish(mut self, cwd: &str) -> Vec<Specific> {
        let modified: HashSet<String> = self
            .items
            .iter()
            .filter(|s| s.kind == Kind::FilesModified)
            .flat_map(|s| terms::path_forms(&s.text, cwd))
            .collect();
        self.items.retain(|s| {
            s.kind != Kind::FilesRead || !terms::path_forms(&s.text, cwd).iter().any(|f| modified.contains(f))
        });
        // A path the user gave that a call then read or modified counts once, as that file.
        let files: HashSet<String> = self
            .items
            .iter()
            .filter(|s| matches!(s.kind, Kind::FilesRead | Kind::FilesModified))
            .flat_map(|s| terms::path_forms(&s.text, cwd))
            .collect();
        self.items.retain(|s| {
            s.kind != Kind::Values
                || !terms::is_path(&s.text)
                || !terms::path_forms(&s.text, cwd).iter().any(|f| files.contains(f))
        });
        self.items
    }
}

/// Words that make a user's sentence a constraint or a decision (matched whole, lowercased).
const DECISION_MARKERS: &[&str] = &[
    "must",
    "mustn't",
    "never",
    "don't",
    "dont",
    "do not",
    "keep",
    "decided",
    "decide",
    "decision",
    "prefer",
    "always",
    "avoid",
    "make sure",
    "instead of",
    "stick to",
    "stick with",
    "should not",
    "shouldn't",
    "no longer",
    "not allowed",
];

/// Words that make a sentence something still to do.
const TASK_MARKERS: &[&str] = &[
    "todo",
    "to-do",
    "still need",
    "still needs",
    "remember to",
    "don't forget",
    "later",
    "next step",
    "follow up",
    "follow-up",
    "afterwards",
    "after that",
    "eventually",
    "at some point",
];

/// Which markers `lower` holds as whole words: (a decision's, a task's). One Aho-Corasick pass
/// over both lists: a marker at a time was a search per marker per sentence, most of the
/// offline summary's added time on a long range.
fn markers_in(lower: &str) -> (bool, bool) {
    static AC: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| aho_corasick::AhoCorasick::new(DECISION_MARKERS.iter().chain(TASK_MARKERS)).ok());
    let Some(ac) = AC.as_ref() else {
        return (false, false);
    };
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let (mut decision, mut task) = (false, false);
    for m in ac.find_overlapping_iter(lower) {
        let whole = !lower[..m.start()].chars().next_back().is_some_and(is_word)
            && !lower[m.end()..].chars().next().is_some_and(is_word);
        if whole {
            if m.pattern().as_usize() < DECISION_MARKERS.len() {
                decision = true;
            } else {
                task = true;
            }
        }
    }
    (decision, task)
}

/// `text` without its fenced blocks (```…```): what the user wrote, not what they pasted.
pub(crate) fn without_fences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Sentences of `text`: split at newlines and at `.`/`!`/`?` before a space (a dot inside
/// `cli.ts` or `0.87.1` ends nothing). List bullets are taken off.
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let b = line.as_bytes();
        let mut start = 0;
        for i in 0..b.len() {
            if matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1).is_none_or(|c| c.is_ascii_whitespace()) {
                out.push(line[start..=i].to_string());
                start = i + 1;
            }
        }
        out.push(line[start..].to_string());
    }
    out.into_iter()
        .map(|s| {
            s.trim()
                .trim_start_matches(['-', '*', '•'])
                .trim_start_matches("[ ]")
                .trim()
                .to_string()
        })
        .filter(|s| s.chars().count() >= 4)
        .collect()
}

/// The most characters a decision or a task is quoted with.
const SENTENCE: usize = 300;

/// URLs in `text` (`http://`, `https://`), trailing punctuation off.
fn urls(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(k) = rest.find("http") {
        let tail = &rest[k..];
        let body = tail.strip_prefix("https://").or_else(|| tail.strip_prefix("http://"));
        let boundary = rest[..k].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        match body {
            Some(_) if boundary => {
                let end = tail
                    .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | ')' | ']'))
                    .unwrap_or(tail.len());
                let url = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']);
                if url.len() > "https://".len() {
                    out.push(url.to_string());
                }
                rest = &tail[end..];
            }
            _ => rest = &tail[4..],
        }
    }
    out
}

/// Ids joined by hyphens with a letter and a digit (`ACCT-77812`, `T-4411`, `eu-west-1`):
/// one value, not a name and a number.
fn hyphen_ids(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for tok in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
        let t = tok.trim_matches('-');
        if t.contains('-')
            && t.chars().any(|c| c.is_ascii_digit())
            && t.chars().any(|c| c.is_ascii_alphabetic())
            && !t.contains("--")
            && !out.iter().any(|o| o == t)
        {
            out.push(t.to_string());
        }
    }
    out
}

/// Amounts of money (`$40`, `€1,200`).
fn amounts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in text.char_indices() {
        if matches!(c, '$' | '€' | '£') {
            let rest = &text[i + c.len_utf8()..];
            let n: String = rest
                .chars()
                .take_while(|d| d.is_ascii_digit() || *d == ',' || *d == '.')
                .collect();
            let n = n.trim_end_matches(['.', ',']);
            if n.starts_with(|d: char| d.is_ascii_digit()) {
                out.push(format!("{c}{n}"));
            }
        }
    }
    out
}

/// What the user gave verbatim in `text` (fences already taken off): URLs, paths, ids joined by
/// hyphens, amounts, then the terms `recall` counts (backticked names, identifiers, numbers).
pub fn values(text: &str) -> Vec<String> {
    // Each kind is taken out of the text before the next is read (one pass for all of a kind:
    // a replace per item was quadratic on a long request).
    let take_out = |rest: String, found: &[String]| -> String {
        if found.is_empty() {
            return rest;
        }
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(found);
        match ac {
            Ok(ac) => ac.replace_all(&rest, &vec![" "; found.len()]),
            Err(_) => rest,
        }
    };
    let mut out: Vec<String> = Vec::new();
    let found = urls(text);
    let rest = take_out(text.to_string(), &found);
    out.extend(found);
    // Paths whole before the ids inside them (`logs/import-02.log` is no `import-02`).
    let found = terms::paths(&rest);
    let rest = take_out(rest, &found);
    out.extend(found);
    let found = hyphen_ids(&rest);
    let rest = take_out(rest, &found);
    out.extend(found);
    let found = amounts(&rest);
    let rest = take_out(rest, &found);
    out.extend(found);
    for t in terms::request_terms(&rest) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The program and distinctive arguments of a command's main part: the first part (split at
/// `&&`, `||`, `;`, `|`) whose program is not a shell chore (`cd`, `export`, `echo`, …);
/// its arguments without flags, redirections and quotes, at most three.
pub fn command_key(command: &str) -> (String, Vec<String>) {
    const CHORES: &[&str] = &[
        "cd", "pushd", "popd", "export", "set", "source", ".", "echo", "sleep", "true", "clear",
    ];
    let parts = command
        .split(['&', '|', ';', '\n'])
        .map(str::trim)
        .filter(|p| !p.is_empty());
    for part in parts {
        let words: Vec<&str> = part
            .split_whitespace()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .collect();
        let Some(&program) = words.first() else { continue };
        let program = program.rsplit('/').next().unwrap_or(program);
        if CHORES.contains(&program) {
            continue;
        }
        let args: Vec<String> = words[1..]
            .iter()
            .map(|w| w.trim_matches(['"', '\'']))
            .filter(|w| {
                !w.is_empty()
                    && !w.starts_with('-')
                    && !w.starts_with('>')
                    && !w.starts_with('<')
                    && !w.starts_with("2>")
                    && w.chars().any(|c| c.is_alphanumeric())
            })
            .take(3)
            .map(str::to_string)
            .collect();
        return (program.to_string(), args);
    }
    (command.trim().to_string(), vec![])
}

/// A command's exit state from its result: Pi's bash tool marks a failure as an error and
/// says "Command exited with code N"; a `!` command records its exit code.
fn exit_state(result: Option<&Value>) -> Option<String> {
    let r = result?;
    if js::truthy(r.get("cancelled")) {
        return Some("cancelled".into());
    }
    if let Some(code) = r.get("exitCode").and_then(|c| c.as_f64()) {
        return Some(if code == 0.0 {
            "ok".into()
        } else {
            format!("exit {}", js::js_number(code))
        });
    }
    let text = context::content_text(r.get("content"), "\n");
    if let Some(k) = text.rfind("exited with code ") {
        let code: String = text[k + 17..].chars().take_while(|c| c.is_ascii_digit()).collect();
        if !code.is_empty() {
            return Some(format!("exit {code}"));
        }
    }
    Some(if js::truthy(r.get("isError")) {
        "failed".into()
    } else {
        "ok".into()
    })
}

/// The sections of an earlier summary's text that carry specifics: its file lists, its
/// constraints and decisions, its open items, and its own specifics section.
fn carry(g: &mut Gather, text: &str, entry: usize) {
    let mut section: Option<Kind> = None;
    // A section of its own about files ("Files", "Relevant files") lists files it carried.
    let mut files_heading = false;
    let mut list: Option<Kind> = None;
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim();
        // Code in a summary is no item.
        if t.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        match t {
            "<read-files>" => list = Some(Kind::FilesRead),
            "<modified-files>" => list = Some(Kind::FilesModified),
            "</read-files>" | "</modified-files>" => list = None,
            _ => {}
        }
        if t.starts_with('<') {
            continue;
        }
        if let Some(k) = list {
            g.add(k, t, entry, None);
            continue;
        }
        if let Some(h) = t.strip_prefix("### ").or_else(|| t.strip_prefix("## ")) {
            let h = h.trim().trim_end_matches(':');
            files_heading = h.to_lowercase().contains("file");
            section = match h {
                "Constraints & Preferences" | "Key Decisions" | "Constraints" | "Decisions" => Some(Kind::Decisions),
                "In Progress" | "Next Steps" | "Blocked" | "Tasks" => Some(Kind::OpenTasks),
                _ => Kind::parse(h),
            };
            continue;
        }
        let item = t
            .trim_start_matches(['-', '*', '•'])
            .trim()
            .trim_start_matches("[ ]")
            .trim();
        let Some(k) = section else {
            // A section the audit has no kind for (a goal, progress, notes): what it says
            // the user decided, and the ids and URLs it names, are carried all the same.
            if item.is_empty() || item.starts_with("[x]") || item.starts_with('(') {
                continue;
            }
            let (decision, task) = markers_in(&item.to_lowercase());
            if decision {
                g.add(Kind::Decisions, &terms::cut_chars(item, SENTENCE), entry, None);
            } else if task {
                g.add(Kind::OpenTasks, &terms::cut_chars(item, SENTENCE), entry, None);
            }
            let found = urls(item);
            // Its ids, URLs and amounts (paths taken whole first, as `values` reads them).
            let strong = values(item).into_iter().filter(|v| {
                v.contains("://")
                    || v.starts_with(['$', '€', '£'])
                    || (!terms::is_path(v)
                        && v.contains('-')
                        && v.chars().any(|c| c.is_ascii_digit())
                        && v.chars().any(|c| c.is_ascii_alphabetic()))
            });
            for v in strong {
                g.add_said(Kind::Values, &v, entry, None, Some(item));
            }
            // A file a plain summary's "Files" list names is a file it carried, and so is a
            // line that is only a path, wherever it stands (a summary that carried an earlier
            // mend's list moves it into its own sections).
            if files_heading || terms::is_path(item) {
                for p in terms::paths(item) {
                    if !found.iter().any(|u| u.contains(&p)) {
                        g.add(Kind::FilesRead, &p, entry, None);
                    }
                }
            }
            // A line that is a command as a mend writes one: `command` (state).
            if let Some((cmd, rest)) = item.strip_prefix('`').and_then(|r| r.split_once('`'))
                && (rest.trim().is_empty() || (rest.trim().starts_with('(') && rest.trim().ends_with(')')))
                && !cmd.trim().is_empty()
            {
                let st = rest.trim().trim_start_matches('(').trim_end_matches(')').trim();
                g.add(Kind::Commands, cmd, entry, (!st.is_empty()).then(|| st.to_string()));
            }
            continue;
        };
        // A numbered step ("1. Run the tests").
        let item = match item.split_once(". ") {
            Some((n, rest)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => rest,
            _ => item,
        };
        if item.is_empty() || item.starts_with("[x]") || item.starts_with("(none)") || item.starts_with("(") {
            continue;
        }
        match k {
            Kind::Commands => {
                // `command` (state)
                let (cmd, state) = match item.strip_prefix('`').and_then(|r| r.split_once('`')) {
                    Some((c, rest)) => {
                        let st = rest.trim().trim_start_matches('(').trim_end_matches(')').trim();
                        (c, (!st.is_empty()).then(|| st.to_string()))
                    }
                    None => (item, None),
                };
                g.add(k, cmd, entry, state);
            }
            _ => g.add(k, &terms::cut_chars(item, SENTENCE), entry, None),
        }
    }
}

/// Gather the specifics of `messages` (materialized, oldest first, each with its entry).
fn gather(messages: &[(usize, &Value)], cwd: &str) -> Vec<Specific> {
    let mut g = Gather::default();
    g.add_messages(messages);
    g.finish(cwd)
}

/// Parts of a decision sentence that say one thing each: split at `;`, and at `, and` /
/// `, but` / `, also` / ` and also` where both sides say something (three words or more, a
/// content word among them). "We decided to keep Decimal end to end; also bump the schema to version 14" is two
/// items: a summary can keep one and lose the other.
pub fn clauses(sentence: &str) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    for piece in sentence.split(';') {
        let mut rest = piece.trim().to_string();
        loop {
            let lower = rest.to_ascii_lowercase();
            let cut = [", and also ", " and also ", ", also ", ", and ", ", but "]
                .iter()
                .filter_map(|sep| lower.find(sep).map(|k| (k, sep.len())))
                .filter(|&(k, n)| {
                    rest.is_char_boundary(k)
                        && rest.is_char_boundary(k + n)
                        && says_something(&rest[..k])
                        && says_something(&rest[k + n..])
                })
                .min();
            match cut {
                Some((k, n)) => {
                    parts.push(rest[..k].trim().to_string());
                    // The joining word starts the next clause ("also bump …").
                    let joint = rest[k..k + n].trim_start_matches(',').trim();
                    let keep = if joint.ends_with("also") { "also " } else { "" };
                    rest = format!("{keep}{}", rest[k + n..].trim());
                }
                None => {
                    parts.push(rest.trim().to_string());
                    break;
                }
            }
        }
    }
    parts.retain(|p| p.chars().count() >= 4);
    parts
}

/// Whether a part of a sentence says something on its own: three words or more, one of them
/// a content word.
fn says_something(part: &str) -> bool {
    part.split_whitespace().count() >= 3 && !content_words(part).is_empty()
}

/// Whether a tool output that is no error may still report one (a log's `ERROR` line): a
/// cheap look at its bytes before it is decoded.
pub(crate) fn may_report_error(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"ERROR").is_some()
        || memchr::memmem::find(bytes, b"FATAL").is_some()
        || memchr::memmem::find(bytes, b"CRITICAL").is_some()
        || memchr::memmem::find(bytes, b"Error:").is_some()
        || memchr::memmem::find(bytes, b"Exception").is_some()
        || memchr::memmem::find(bytes, b"Traceback").is_some()
        || memchr::memmem::find(bytes, b"error:").is_some()
        || memchr::memmem::find(bytes, b"error[").is_some()
}

/// The lines of an output that is no error that still report one: a log level (`ERROR`,
/// `FATAL`, `CRITICAL` as a word), or a line that starts with an exception's name or a
/// compiler's `error:`. Code that merely names an error (`raise ValueError(…)`) is none.
/// At most three, of different shapes (digits aside), whitespace collapsed.
pub fn reported_errors(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut shapes: HashSet<String> = HashSet::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.len() > 2000 {
            continue;
        }
        let level = t
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| matches!(w, "ERROR" | "FATAL" | "CRITICAL"));
        let head = t.split([':', '[', ' ', '(']).next().unwrap_or("");
        let starts = (head.len() > 5
            && (head.ends_with("Error") || head.ends_with("Exception"))
            && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
            && t[head.len()..].starts_with(':'))
            || t.starts_with("error:")
            || t.starts_with("error[")
            || t.starts_with("Traceback");
        if !(level || starts) || t.starts_with("Traceback") {
            continue;
        }
        let shape: String = t.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect();
        if shapes.insert(shape) {
            out.push(terms::cut_chars(
                &t.split_whitespace().collect::<Vec<_>>().join(" "),
                200,
            ));
            if out.len() == 3 {
                break;
            }
        }
    }
    out
}

impl Gather {
    /// Read `messages` (materialized, oldest first, each with its entry) into what is
    /// gathered. A part at a time works (the live packet adds the turns each step leaves
    /// out): a part never splits a call from its result.
    pub fn add_messages(&mut self, messages: &[(usize, &Value)]) {
        let g = self;
        // Tool results by call id, for the exit state of a bash call.
        let mut results: HashMap<&str, &Value> = HashMap::new();
        for &(_, m) in messages {
            if m.get("role").and_then(|r| r.as_str()) == Some("toolResult")
                && let Some(id) = m.get("toolCallId").and_then(|i| i.as_str())
            {
                results.insert(id, m);
            }
        }
        for &(entry, m) in messages {
            let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("");
            match role {
                "user" => {
                    let raw = context::content_text(m.get("content"), "\n");
                    let text = without_fences(&raw);
                    let answered = std::mem::take(&mut g.asked);
                    let mut decided = false;
                    for sentence in sentences(&text) {
                        let whole = terms::cut_chars(&sentence, SENTENCE);
                        let (decision, task) = markers_in(&sentence.to_lowercase());
                        if decision {
                            for clause in clauses(&whole) {
                                g.add_said(Kind::Decisions, &clause, entry, None, Some(&whole));
                            }
                            decided = true;
                        }
                        if task {
                            g.add_said(Kind::OpenTasks, &whole, entry, None, None);
                        }
                        for v in values(&sentence) {
                            g.add_said(Kind::Values, &v, entry, None, Some(&whole));
                        }
                    }
                    // A short reply to the agent's question decides something.
                    let short = js::js_trim(&text);
                    if answered && !decided && !short.is_empty() && short.chars().count() <= SENTENCE {
                        g.add(
                            Kind::Decisions,
                            &short.split_whitespace().collect::<Vec<_>>().join(" "),
                            entry,
                            None,
                        );
                    }
                }
                "assistant" => {
                    for c in recall::tool_calls(m) {
                        let path = c.path;
                        match c.name {
                            "read" if !path.is_empty() => g.add(Kind::FilesRead, path, entry, None),
                            "edit" | "write" if !path.is_empty() => g.add(Kind::FilesModified, path, entry, None),
                            "bash" => {
                                if let Some(cmd) = recall::command_of(c.args) {
                                    let state = exit_state(results.get(c.id).copied());
                                    g.add(Kind::Commands, cmd, entry, state);
                                }
                            }
                            _ => {}
                        }
                    }
                    let text = context::content_text(m.get("content"), "\n");
                    for line in text.lines() {
                        let t = line.trim().trim_start_matches(['-', '*']).trim();
                        let lower = t.to_lowercase();
                        if lower.starts_with("todo") || lower.starts_with("[ ]") || lower.starts_with("next:") {
                            let item = t.trim_start_matches("[ ]").trim();
                            g.add(Kind::OpenTasks, &terms::cut_chars(item, SENTENCE), entry, None);
                        }
                    }
                    let tail: String = {
                        let t = js::js_trim(&text);
                        let n = t.chars().count();
                        t.chars().skip(n.saturating_sub(300)).collect()
                    };
                    g.asked = tail.contains('?');
                }
                "bashExecution" => {
                    if let Some(cmd) = recall::command_of(m) {
                        g.add(Kind::Commands, cmd, entry, exit_state(Some(m)));
                    }
                }
                "toolResult" if !js::truthy(m.get("isError")) && m.get("content").is_some() => {
                    for e in reported_errors(&context::content_text(m.get("content"), "\n")) {
                        g.add(Kind::Errors, &e, entry, None);
                    }
                }
                "branchSummary" | "compactionSummary" => {
                    let text = m.get("summary").and_then(|t| t.as_str()).unwrap_or("");
                    carry(g, text, entry);
                }
                _ => {}
            }
            if let Some(e) = recall::error_line(m) {
                g.add(Kind::Errors, &e, entry, None);
            }
        }
    }
}

/// What kind of summary an audit is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryKind {
    Compaction,
    BranchSummary,
}

impl SummaryKind {
    pub fn entry_type(self) -> &'static str {
        match self {
            SummaryKind::Compaction => "compaction",
            SummaryKind::BranchSummary => "branch_summary",
        }
    }
}

/// What a summary replaced: the entries, their messages, and the earlier summary it carried.
#[derive(Debug, Clone)]
pub struct Replaced {
    pub kind: SummaryKind,
    /// The summary's entry.
    pub entry: usize,
    /// The entries it replaced, oldest first.
    pub entries: Vec<usize>,
    /// The earlier compaction whose summary it carried (a compaction's update).
    pub previous: Option<usize>,
    pub cwd: String,
}

/// What compaction `c` replaced, as Pi built it: on the path to the compaction's parent, the
/// entries from after the earlier compaction (its kept entries included) up to the first
/// entry the compaction keeps; the earlier compaction's summary is carried.
pub fn compaction_replaced(s: &Session, c: usize) -> Option<Replaced> {
    let EntryKind::Compaction(comp) = &s.entries[c].kind else {
        return None;
    };
    let cwd = s.header.cwd.clone().unwrap_or_default();
    let Some(parent) = s.parent_of(c) else {
        return Some(Replaced {
            kind: SummaryKind::Compaction,
            entry: c,
            entries: vec![],
            previous: None,
            cwd,
        });
    };
    let proj = context::project(s, &s.path_to(parent));
    let prev = proj
        .entries
        .iter()
        .position(|pe| s.entries[pe.source].is_compaction() && !pe.messages.is_empty());
    let first_kept = comp.first_kept_entry_id.as_deref().and_then(|id| s.idx_of(id));
    // An amended summary (or any compaction keeping from where the one before it kept)
    // replaced what the one before it replaced.
    if let Some(p) = prev
        && let EntryKind::Compaction(before) = &s.entries[proj.entries[p].source].kind
        && before.first_kept_entry_id.is_some()
        && before.first_kept_entry_id == comp.first_kept_entry_id
    {
        let mut r = compaction_replaced(s, proj.entries[p].source)?;
        r.entry = c;
        return Some(r);
    }
    let start = prev.map_or(0, |p| p + 1);
    let end = proj.entries[start..]
        .iter()
        .position(|pe| Some(pe.source) == first_kept)
        .map_or(proj.entries.len(), |k| start + k);
    let entries = proj.entries[start..end]
        .iter()
        .filter(|pe| !s.entries[pe.source].is_compaction())
        .map(|pe| pe.source)
        .collect();
    Some(Replaced {
        kind: SummaryKind::Compaction,
        entry: c,
        entries,
        previous: prev.map(|p| proj.entries[p].source),
        cwd,
    })
}

/// What branch summary `b` replaced: the branch it left, from the common ancestor (exclusive)
/// to the leaf it was left from (its `fromId`).
pub fn branch_replaced(s: &Session, b: usize) -> Option<Replaced> {
    let EntryKind::BranchSummary(bs) = &s.entries[b].kind else {
        return None;
    };
    let cwd = s.header.cwd.clone().unwrap_or_default();
    let from = bs.from_id.as_deref().and_then(|id| s.idx_of(id));
    let entries = match (from, s.parent_of(b)) {
        (Some(f), Some(target)) => branch_summary::prepare(s, Some(f), target, i64::MAX).entries,
        (Some(f), None) => s.path_to(f),
        _ => vec![],
    };
    Some(Replaced {
        kind: SummaryKind::BranchSummary,
        entry: b,
        entries,
        previous: None,
        cwd,
    })
}

/// What summary entry `e` replaced (a compaction or a branch summary).
pub fn replaced(s: &Session, e: usize) -> Option<Replaced> {
    match &s.entries[e].kind {
        EntryKind::Compaction(_) => compaction_replaced(s, e),
        EntryKind::BranchSummary(_) => branch_replaced(s, e),
        _ => None,
    }
}

/// The specifics of what `r` replaced: the earlier summary's first, then the entries'.
pub fn specifics_of(s: &Session, r: &Replaced) -> Vec<Specific> {
    let mut messages: Vec<(usize, Value)> = Vec::new();
    if let Some(p) = r.previous {
        let text = s
            .entry_value(p)
            .get("summary")
            .map(js::js_to_string)
            .unwrap_or_default();
        messages.push((p, json!({"role": "compactionSummary", "summary": text})));
    }
    for &e in &r.entries {
        for m in context::intrinsic_messages(s, e).iter() {
            if m.role == Role::System {
                continue;
            }
            // A tool result that is no error gives only its exit state ("ok"): not decoded (a
            // long range has tens of thousands of them, most of the audit's time).
            if m.role == Role::ToolResult
                && let Some(sm) = context::msg_of(s, m)
                && !sm.is_error
                && !may_report_error(s.line_bytes(e))
            {
                let id = sm.tool_call_id.as_deref();
                messages.push((e, json!({"role": "toolResult", "toolCallId": id, "isError": false})));
                continue;
            }
            messages.push((e, summary::materialize_one(s, m)));
        }
    }
    let refs: Vec<(usize, &Value)> = messages.iter().map(|(e, m)| (*e, m)).collect();
    gather(&refs, &r.cwd)
}

/// The specifics of materialized messages with their entries (for a summary not written yet:
/// the compaction dialog's, `compare`'s, the live packet's).
pub fn specifics_of_messages(messages: &[(usize, &Value)], cwd: &str) -> Vec<Specific> {
    gather(messages, cwd)
}

/// Words too common to tell whether a sentence was kept.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "you", "your", "are", "not", "but", "all", "any", "can",
    "will", "use", "its", "it's", "our", "let", "lets", "let's", "please", "just", "also", "into", "then", "when",
    "what", "which", "there", "have", "has", "was", "were", "been", "they", "them", "only", "more", "some", "like",
    "want", "need", "now", "one", "too", "out", "get", "yes", "sure", "okay", "should", "would", "could", "here",
];

fn content_words(text: &str) -> Vec<String> {
    let mut v: Vec<String> = terms::match_words(text)
        .into_iter()
        .filter(|w| {
            !STOPWORDS.contains(&w.as_str())
                && !DECISION_MARKERS.contains(&w.as_str())
                && !TASK_MARKERS.contains(&w.as_str())
        })
        .collect();
    v.dedup();
    v
}

/// Words that negate what follows them: a kept constraint keeps its negation.
const NEGATIONS: &[&str] = &[
    "never",
    "not",
    "no",
    "don't",
    "dont",
    "without",
    "avoid",
    "mustn't",
    "shouldn't",
    "nor",
    "isn't",
    "aren't",
    "won't",
    "cannot",
    "can't",
    "neither",
    "none",
];

/// Words that narrow what a constraint says: a kept one keeps them.
const QUALIFIERS: &[&str] = &["only", "always", "every", "each", "exactly"];

/// Lowercased words in order, short ones and apostrophes included (how a negation and its
/// object are found next to each other).
fn word_seq(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_' || c == '-'))
        .map(|w| w.trim_matches(['\'', '-']).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// A word without its common English ending (`changing`, `changed`, `changes` → `chang`),
/// so a negated verb is found in another form.
fn stem(w: &str) -> &str {
    for end in ["ing", "ed", "es", "s", "e"] {
        if let Some(s) = w.strip_suffix(end)
            && s.chars().count() >= 3
        {
            return s;
        }
    }
    w
}

/// What a summary must still say for a decision or a task to count as kept, besides most of
/// its words.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Must {
    /// A term as a whole word (a name, a number, a qualifier).
    Term(String),
    /// A word with a negation at most five words before it ("never float").
    Negated(String),
}

/// The must-haves of a clause: every negation with the word it negates, every qualifier
/// (only, always, …), and every distinctive term (a capitalized word past the first, an
/// identifier, a number of two digits or more).
fn must_haves(clause: &str) -> Vec<Must> {
    let mut out: Vec<Must> = Vec::new();
    let words = word_seq(clause);
    let mut k = 0;
    while k < words.len() {
        let w = words[k].as_str();
        if NEGATIONS.contains(&w) {
            // The first content word after it is what it negates.
            if let Some(obj) = words[k + 1..].iter().take(4).find(|x| {
                x.chars().count() >= 3
                    && !STOPWORDS.contains(&x.as_str())
                    && !NEGATIONS.contains(&x.as_str())
                    && !DECISION_MARKERS.contains(&x.as_str())
            }) {
                out.push(Must::Negated(obj.clone()));
            }
        } else if QUALIFIERS.contains(&w) {
            out.push(Must::Term(w.to_string()));
        }
        k += 1;
    }
    for (i, raw) in clause
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == ':'))
        .map(|t| t.trim_matches(['.', ':']))
        .filter(|t| !t.is_empty())
        .enumerate()
    {
        let capitalized = i > 0 && raw.chars().next().is_some_and(|c| c.is_uppercase()) && raw.chars().count() >= 2;
        let number = raw.chars().filter(|c| c.is_ascii_digit()).count() >= 2;
        if capitalized || number || terms::is_identifier(raw) {
            let m = Must::Term(raw.to_lowercase());
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}

/// A summary, read once for every check.
pub struct Reader<'a> {
    text: &'a str,
    collapsed: String,
    words: HashSet<String>,
    /// Its words in order (for a negation next to its object).
    seq: Vec<String>,
    cwd: &'a str,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str, cwd: &'a str) -> Reader<'a> {
        Reader {
            text,
            collapsed: text.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" "),
            words: terms::match_words(text).into_iter().collect(),
            seq: word_seq(text),
            cwd,
        }
    }

    /// Whether the summary says `m`.
    fn says(&self, m: &Must) -> bool {
        match m {
            Must::Term(t) => {
                self.words.contains(t) || self.seq.iter().any(|w| w == t) || self.collapsed.contains(t.as_str())
            }
            Must::Negated(obj) => {
                let root = stem(obj);
                self.seq.iter().enumerate().any(|(j, w)| {
                    stem(w) == root
                        && self.seq[j.saturating_sub(5)..j]
                            .iter()
                            .any(|x| NEGATIONS.contains(&x.as_str()))
                })
            }
        }
    }

    /// A decision or a task the summary names in most of its words but without all it must
    /// keep (its negation, a qualifier, a name): partly kept, which counts as lost.
    pub fn partly(&self, sp: &Specific) -> bool {
        matches!(sp.kind, Kind::Decisions | Kind::OpenTasks)
            && !self.keeps(sp)
            && self.share(&content_words(&sp.text), 6)
    }

    /// [`Self::keeps`] of every item at once: the paths, values and command words of all of
    /// them found in one Aho-Corasick pass over the summary. One scan of the summary per term
    /// was most of an offline summary's time on a long range (thousands of files).
    pub fn keeps_all(&self, items: &[&Specific]) -> Vec<bool> {
        enum Need {
            Any(Vec<usize>),
            Command { program: usize, args: Vec<Vec<usize>> },
            Other,
        }
        let mut needles: Vec<String> = Vec::new();
        let mut ids: HashMap<String, usize> = HashMap::new();
        let mut id = |t: String| -> usize {
            let n = ids.len();
            *ids.entry(t.clone()).or_insert_with(|| {
                needles.push(t);
                n
            })
        };
        let cwd = self.cwd;
        let forms = |t: &str, id: &mut dyn FnMut(String) -> usize| -> Vec<usize> {
            if terms::is_path(t) {
                terms::path_forms(t, cwd).into_iter().map(&mut *id).collect()
            } else {
                vec![id(t.to_string())]
            }
        };
        let needs: Vec<Need> = items
            .iter()
            .map(|sp| match sp.kind {
                Kind::FilesRead | Kind::FilesModified => {
                    Need::Any(terms::path_forms(&sp.text, cwd).into_iter().map(&mut id).collect())
                }
                Kind::Values => Need::Any(forms(&sp.text, &mut id)),
                Kind::Commands => {
                    let (program, args) = command_key(&sp.text);
                    Need::Command {
                        program: id(program),
                        args: args.iter().map(|a| forms(a, &mut id)).collect(),
                    }
                }
                _ => Need::Other,
            })
            .collect();
        // The lines each needle is found on as a whole term (`terms::contains_term`'s rule).
        let mut found: Vec<Vec<u32>> = vec![Vec::new(); needles.len()];
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(self.text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        if !needles.is_empty()
            && let Ok(ac) = aho_corasick::AhoCorasick::new(&needles)
        {
            for m in ac.find_overlapping_iter(self.text) {
                let n = &needles[m.pattern().as_usize()];
                let before_ok =
                    !n.starts_with(is_word) || !self.text[..m.start()].chars().next_back().is_some_and(is_word);
                let after_ok = !n.ends_with(is_word) || !self.text[m.end()..].chars().next().is_some_and(is_word);
                if before_ok && after_ok {
                    let line = line_starts.partition_point(|&s| s <= m.start()) as u32;
                    let f = &mut found[m.pattern().as_usize()];
                    if f.last() != Some(&line) {
                        f.push(line);
                    }
                }
            }
        }
        items
            .iter()
            .zip(needs)
            .map(|(sp, need)| match need {
                Need::Any(ids) => ids.iter().any(|&i| !found[i].is_empty()),
                Need::Command { program, args } => {
                    self.quoted(&sp.text)
                        || found[program].iter().any(|line| {
                            args.iter()
                                .all(|forms| forms.iter().any(|&i| found[i].binary_search(line).is_ok()))
                        })
                }
                Need::Other => self.keeps(sp),
            })
            .collect()
    }

    fn path(&self, p: &str) -> bool {
        terms::path_forms(p, self.cwd)
            .iter()
            .any(|f| terms::contains_term(self.text, f))
    }

    fn quoted(&self, t: &str) -> bool {
        let line = t.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
        !line.is_empty() && self.collapsed.contains(&line)
    }

    fn share(&self, words: &[String], tenths: usize) -> bool {
        !words.is_empty() && words.iter().filter(|w| self.words.contains(*w)).count() * 10 >= words.len() * tenths
    }

    /// Whether the summary names `sp`.
    pub fn keeps(&self, sp: &Specific) -> bool {
        match sp.kind {
            Kind::FilesRead | Kind::FilesModified => self.path(&sp.text),
            Kind::Commands => {
                if self.quoted(&sp.text) {
                    return true;
                }
                // On one line: a program named in one place and its arguments in others say
                // nothing of this command.
                let (program, args) = command_key(&sp.text);
                self.text.lines().any(|line| {
                    terms::contains_term(line, &program)
                        && args.iter().all(|a| {
                            if terms::is_path(a) {
                                terms::path_forms(a, self.cwd)
                                    .iter()
                                    .any(|f| terms::contains_term(line, f))
                            } else {
                                terms::contains_term(line, a)
                            }
                        })
                })
            }
            Kind::Errors => {
                let mine: Vec<String> = terms::match_words(&sp.text);
                let distinct: HashSet<&String> = mine.iter().collect();
                self.quoted(&sp.text)
                    || (distinct.len() >= 2
                        && distinct.iter().filter(|w| self.words.contains(**w)).count() * 10 >= distinct.len() * 7)
            }
            Kind::Decisions | Kind::OpenTasks => {
                if self.quoted(&sp.text) {
                    return true;
                }
                // Most of its words, and every negation, qualifier and name it holds: "keep
                // amounts" does not keep "keep amounts as Decimal, never float".
                let words = content_words(&sp.text);
                let most = if words.len() <= 1 {
                    words.first().is_some_and(|w| self.words.contains(w))
                } else {
                    self.share(&words, 6)
                };
                most && must_haves(&sp.text).iter().all(|m| self.says(m))
            }
            Kind::Values => {
                if terms::is_path(&sp.text) {
                    self.path(&sp.text)
                } else {
                    terms::contains_term(self.text, &sp.text)
                }
            }
        }
    }
}

/// One specific and whether the summary kept it.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub specific: Specific,
    pub kept: bool,
    /// Not kept, but most of its words are in the summary: what it lost is its negation, a
    /// qualifier or a name (a decision or a task).
    pub partly: bool,
}

/// The audit of one summary.
#[derive(Debug, Clone)]
pub struct Audit {
    pub kind: SummaryKind,
    /// The summary's entry.
    pub entry: usize,
    pub summarized_entries: usize,
    pub items: Vec<Item>,
    /// Paths the summary names that appear nowhere in what it replaced.
    pub invented: Vec<String>,
    pub summary: String,
}

impl Audit {
    /// Kept and total of one kind.
    pub fn score(&self, k: Kind) -> (usize, usize) {
        let of: Vec<&Item> = self.items.iter().filter(|i| i.specific.kind == k).collect();
        (of.iter().filter(|i| i.kept).count(), of.len())
    }

    /// The first `n` lost items as lines, by kind (the compaction dialog's).
    pub fn lost_lines(&self, n: usize) -> Vec<String> {
        Kind::ALL
            .iter()
            .flat_map(|k| self.lost().filter(move |sp| sp.kind == *k))
            .take(n)
            .map(Specific::line)
            .collect()
    }

    pub fn lost(&self) -> impl Iterator<Item = &Specific> {
        self.items.iter().filter(|i| !i.kept).map(|i| &i.specific)
    }

    pub fn kept(&self) -> impl Iterator<Item = &Specific> {
        self.items.iter().filter(|i| i.kept).map(|i| &i.specific)
    }

    /// "lost 14 of 52 specifics: 9 files, 3 commands, 2 decisions" (every kind that lost any,
    /// most first; files read and modified together).
    pub fn headline(&self) -> String {
        let lost = self.lost().count();
        let total = self.items.len();
        if total == 0 {
            return "no specifics to keep".into();
        }
        if lost == 0 {
            return format!("kept all {total} specifics");
        }
        let mut by: Vec<(Kind, usize)> = Vec::new();
        for k in Kind::ALL {
            let k2 = if k == Kind::FilesRead { Kind::FilesModified } else { k };
            let n = self.lost().filter(|s| s.kind == k).count();
            if n == 0 {
                continue;
            }
            match by.iter_mut().find(|(x, _)| *x == k2) {
                Some((_, m)) => *m += n,
                None => by.push((k2, n)),
            }
        }
        by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let parts: Vec<String> = by.iter().map(|(k, n)| format!("{n} {}", k.noun(*n))).collect();
        let partly = self.items.iter().filter(|i| i.partly).count();
        let partly = if partly > 0 {
            format!(" ({partly} of them partly kept)")
        } else {
            String::new()
        };
        format!("lost {lost} of {total} specifics{partly}: {}", parts.join(", "))
    }

    pub fn to_json(&self, s: &Session) -> Value {
        let id = |e: usize| s.entries[e].id.to_string();
        let item = |sp: &Specific| {
            let mut o = json!({"kind": sp.kind.key(), "text": sp.text, "entryId": id(sp.entry)});
            if let (Some(st), Value::Object(m)) = (&sp.state, &mut o) {
                m.insert("state".into(), st.clone().into());
            }
            o
        };
        let mut score = serde_json::Map::new();
        for k in Kind::ALL {
            let (kept, total) = self.score(k);
            score.insert(k.key().into(), json!({"kept": kept, "total": total}));
        }
        json!({
            "entryId": id(self.entry),
            "type": self.kind.entry_type(),
            "summarizedEntries": self.summarized_entries,
            "headline": self.headline(),
            "score": score,
            "lost": self.lost().map(item).collect::<Vec<_>>(),
            "partlyKept": self.items.iter().filter(|i| i.partly).map(|i| item(&i.specific)).collect::<Vec<_>>(),
            "kept": self.kept().map(item).collect::<Vec<_>>(),
            "invented": self.invented,
        })
    }
}

/// Audit `summary` against `specifics` (those of what it replaced); `known` is the text of
/// what it replaced, to tell invented paths.
pub fn audit_text(
    kind: SummaryKind,
    entry: usize,
    summarized_entries: usize,
    specifics: Vec<Specific>,
    summary: &str,
    cwd: &str,
    known: &Known,
) -> Audit {
    let reader = Reader::new(summary, cwd);
    let kept = reader.keeps_all(&specifics.iter().collect::<Vec<_>>());
    let items = specifics
        .into_iter()
        .zip(kept)
        .map(|(specific, kept)| Item {
            partly: !kept && reader.partly(&specific),
            specific,
            kept,
        })
        .collect();
    Audit {
        kind,
        entry,
        summarized_entries,
        items,
        invented: known.invented(summary, cwd),
        summary: summary.to_string(),
    }
}

/// The text of what a summary replaced, searched for the paths a summary names (one pass of
/// Aho-Corasick over every entry's line as written, not a path scan of each: a 100 MB range
/// is read once, and nothing is copied).
pub struct Known<'a> {
    owned: Vec<String>,
    lines: Vec<&'a [u8]>,
}

impl<'a> Known<'a> {
    pub fn of(s: &'a Session, r: &Replaced) -> Known<'a> {
        let mut owned = Vec::new();
        if let Some(p) = r.previous {
            owned.push(
                s.entry_value(p)
                    .get("summary")
                    .map(js::js_to_string)
                    .unwrap_or_default(),
            );
        }
        // The entry's line as written: every path it names, in whatever field.
        let lines = r.entries.iter().map(|&e| s.line_bytes(e)).collect();
        Known { owned, lines }
    }

    pub fn of_texts(texts: Vec<String>) -> Known<'static> {
        Known {
            owned: texts,
            lines: vec![],
        }
    }

    /// The paths `summary` names that no form of (nor, for a bare name, no path ending in it)
    /// appears in the known text.
    pub fn invented(&self, summary: &str, cwd: &str) -> Vec<String> {
        let named = terms::paths(summary);
        if named.is_empty() {
            return vec![];
        }
        let mut patterns: Vec<String> = Vec::new();
        let mut owner: Vec<usize> = Vec::new();
        for (k, p) in named.iter().enumerate() {
            for f in terms::path_forms(p, cwd) {
                // JSON escapes nothing in a path but `"` and `\`.
                patterns.push(f.replace('\\', "\\\\"));
                owner.push(k);
            }
        }
        let mut found = vec![false; named.len()];
        if let Ok(ac) = aho_corasick::AhoCorasick::new(&patterns) {
            let texts = self
                .owned
                .iter()
                .map(|t| t.as_bytes())
                .chain(self.lines.iter().copied());
            for t in texts {
                for m in ac.find_overlapping_iter(t) {
                    found[owner[m.pattern().as_usize()]] = true;
                }
                if found.iter().all(|f| *f) {
                    break;
                }
            }
        }
        named
            .into_iter()
            .zip(found)
            .filter(|(_, f)| !f)
            .map(|(p, _)| p)
            .collect()
    }
}

/// What a compaction not written yet would replace, read once so that each candidate summary
/// (`compare`'s strategies, the dialog's, the one `compact` writes) is audited against it.
pub struct Before<'a> {
    replaced: Replaced,
    specifics: Vec<Specific>,
    known: Known<'a>,
}

impl<'a> Before<'a> {
    /// The range of Pi's `plan` at `leaf`: the history, the split turn's prefix, and the
    /// previous summary it updates.
    pub fn of_plan(s: &'a Session, plan: &crate::compaction::cut::CompactionPlan, leaf: usize) -> Before<'a> {
        let mut entries: Vec<usize> = Vec::new();
        for m in plan.messages_to_summarize.iter().chain(&plan.turn_prefix_messages) {
            if entries.last() != Some(&m.source) {
                entries.push(m.source);
            }
        }
        let replaced = Replaced {
            kind: SummaryKind::Compaction,
            entry: leaf,
            entries,
            previous: plan.previous_compaction_entry(),
            cwd: s.header.cwd.clone().unwrap_or_default(),
        };
        Before {
            specifics: specifics_of(s, &replaced),
            known: Known::of(s, &replaced),
            replaced,
        }
    }

    /// The same without the text of the range: it outlives the session it was read from, and
    /// its audits name no invented path (the compaction dialog's strategies).
    pub fn owned(self) -> Before<'static> {
        Before {
            replaced: self.replaced,
            specifics: self.specifics,
            known: Known::of_texts(vec![]),
        }
    }

    pub fn audit(&self, summary: &str) -> Audit {
        let r = &self.replaced;
        audit_text(
            r.kind,
            r.entry,
            r.entries.len(),
            self.specifics.clone(),
            summary,
            &r.cwd,
            &self.known,
        )
    }
}

/// The audit of summary entry `e` (a compaction or a branch summary).
pub fn audit(s: &Session, e: usize) -> Option<Audit> {
    let r = replaced(s, e)?;
    let summary = s
        .entry_value(e)
        .get("summary")
        .map(js::js_to_string)
        .unwrap_or_default();
    let specifics = specifics_of(s, &r);
    let known = Known::of(s, &r);
    Some(audit_text(
        r.kind,
        e,
        r.entries.len(),
        specifics,
        &summary,
        &r.cwd,
        &known,
    ))
}

/// The audits of `entries` (summaries), in their order, several at once: each reads its own
/// range, and a long session's two compactions are most of the time.
pub fn audit_all(s: &Session, entries: &[usize]) -> Vec<Audit> {
    use rayon::prelude::*;
    entries.par_iter().filter_map(|&e| audit(s, e)).collect()
}

/// The summaries on the path to `leaf`, oldest first: every compaction and branch summary.
pub fn summaries_on_path(s: &Session, leaf: usize) -> Vec<usize> {
    s.path_to(leaf)
        .into_iter()
        .filter(|&i| {
            matches!(
                s.entries[i].kind,
                EntryKind::Compaction(_) | EntryKind::BranchSummary(_)
            )
        })
        .collect()
}

/// The specifics section an amended summary ends with: the chosen items under their kinds,
/// verbatim.
pub fn specifics_section(items: &[&Specific]) -> String {
    section_with(
        "Kept word for word from the entries this summary replaced (given back after an audit):",
        items,
    )
}

/// A specifics section led by `lead`.
pub fn section_with(lead: &str, items: &[&Specific]) -> String {
    let mut out = format!("## Specifics\n{lead}");
    for k in Kind::ALL {
        let of: Vec<&&Specific> = items.iter().filter(|s| s.kind == k).collect();
        if of.is_empty() {
            continue;
        }
        out.push_str(&format!("\n\n### {}", heading(k)));
        for s in of {
            out.push_str(&format!("\n- {}", s.line()));
        }
    }
    out
}

/// An amended summary's text: the old summary, then the specifics section. For a compaction
/// the section goes before Pi's file tags, so they stay last as Pi writes them.
pub fn amended_summary(old: &str, items: &[&Specific]) -> String {
    with_section(old, &specifics_section(items))
}

/// `old` with `section` before its file tags (or at its end).
pub fn with_section(old: &str, section: &str) -> String {
    match old
        .find("\n\n<read-files>")
        .or_else(|| old.find("\n\n<modified-files>"))
    {
        Some(k) => format!("{}\n\n{section}{}", &old[..k], &old[k..]),
        None => format!("{}\n\n{section}", old.trim_end()),
    }
}

/// The kinds in the order a summary most often loses them (the offline summary keeps them in
/// this order when its budget runs short): commands, values, files, errors, open tasks,
/// decisions. Measured by `bonsai audit` on the repository's sessions and the reference
/// session (BENCHMARKS.md), as in the published study of real compactions.
pub const MOST_LOST_FIRST: [Kind; 7] = [
    Kind::Commands,
    Kind::Values,
    Kind::FilesRead,
    Kind::FilesModified,
    Kind::Errors,
    Kind::OpenTasks,
    Kind::Decisions,
];

/// The specifics of `specifics` that `summary` does not name.
pub fn lost_in<'s>(specifics: &'s [Specific], summary: &str, cwd: &str) -> Vec<&'s Specific> {
    let all: Vec<&Specific> = specifics.iter().collect();
    let kept = Reader::new(summary, cwd).keeps_all(&all);
    all.into_iter()
        .zip(kept)
        .filter(|(_, k)| !k)
        .map(|(sp, _)| sp)
        .collect()
}

/// `summary` with a specifics section holding what it lost of `specifics`, most often lost
/// kinds first, as many as fit in `room` tokens (Pi's estimate, chars/4). The offline summary
/// ends this way: its prose is within its own budget, and what it did not name follows word
/// for word while Pi's budget lasts.
pub fn keep_specifics(summary: &str, specifics: &[Specific], cwd: &str, room: u64) -> String {
    let lost = lost_in(specifics, summary, cwd);
    if lost.is_empty() {
        return summary.to_string();
    }
    const LEAD: &str = "Word for word from the entries summarized:";
    let mut chars = "## Specifics\n".len() + LEAD.len() + 2;
    let mut chosen: Vec<&Specific> = Vec::new();
    for k in MOST_LOST_FIRST {
        let mut heading = format!("\n\n### {}", heading(k)).chars().count();
        for sp in lost.iter().filter(|sp| sp.kind == k) {
            let add = heading + sp.line().chars().count() + 3;
            if ((chars + add) as u64).div_ceil(4) > room {
                continue;
            }
            chars += add;
            heading = 0;
            chosen.push(sp);
        }
    }
    if chosen.is_empty() {
        return summary.to_string();
    }
    with_section(summary, &section_with(LEAD, &chosen))
}

/// The order a packet and a mend give specifics back in: what the user asked to keep or
/// decided, the values they gave, errors, files, commands, open tasks.
pub const USERS_FIRST: [Kind; 7] = [
    Kind::Decisions,
    Kind::Values,
    Kind::Errors,
    Kind::FilesModified,
    Kind::FilesRead,
    Kind::Commands,
    Kind::OpenTasks,
];

/// Each kind's first share of a budget (in [`USERS_FIRST`]'s order); what a kind leaves
/// unused goes to the others in that order.
const SHARES: [f64; 7] = [0.30, 0.20, 0.15, 0.08, 0.07, 0.10, 0.10];

/// Specifics chosen to fit a budget, by kind in [`USERS_FIRST`]'s order, each as its quote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Picked {
    pub groups: Vec<(Kind, Vec<String>)>,
    /// Items given (a value said in a sentence already given counts as given).
    pub given: usize,
    /// Items left out: over the budget, or the same words as one given but for numbers.
    pub left: usize,
}

impl Picked {
    /// The groups under `heading`'s names, one bullet a line.
    pub fn render(&self, heading: impl Fn(Kind) -> &'static str) -> String {
        let mut out = String::new();
        for (k, lines) in &self.groups {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&format!("### {}", heading(*k)));
            for l in lines {
                out.push_str("\n- ");
                out.push_str(l);
            }
        }
        out
    }
}

/// The heading a kind has in a specifics section.
pub fn heading_of(k: Kind) -> &'static str {
    heading(k)
}

/// Choose from `items` (oldest first) what fits in `room` characters, rendered as
/// [`Picked::render`] renders it: each kind first up to its share, then the rest in order.
/// Within a kind the user's words (decisions, values, tasks) go oldest first, and errors,
/// files and commands newest first. A value or a decision is quoted as the sentence the user said it in, once; a
/// quote that differs from one given only in its numbers (a scripted request's template) is
/// left out.
pub fn pick_within(items: &[&Specific], room: usize) -> Picked {
    // A quote's words with every run of digits one `#`: the same request sent with another
    // step number is one template.
    let shape = |q: &str| -> String {
        let mut out = String::with_capacity(q.len());
        for c in q.chars() {
            if c.is_ascii_digit() {
                if !out.ends_with('#') {
                    out.push('#');
                }
            } else {
                out.push(c.to_ascii_lowercase());
            }
        }
        out
    };
    // A value that is only a number says least: the other values go first.
    let bare = |sp: &Specific| sp.kind == Kind::Values && sp.text.chars().all(|c| c.is_ascii_digit() || c == '.');
    let mut items: Vec<&Specific> = items.to_vec();
    items.sort_by_key(|sp| bare(sp));
    // Per kind: the distinct quotes in order, and how many items each stands for.
    let mut by_kind: Vec<Vec<(String, usize)>> = vec![Vec::new(); USERS_FIRST.len()];
    let mut quotes_seen: HashMap<String, (usize, usize)> = HashMap::new();
    let mut shapes_seen: HashSet<String> = HashSet::new();
    let mut left = 0;
    for sp in &items {
        let Some(k) = USERS_FIRST.iter().position(|x| *x == sp.kind) else {
            continue;
        };
        let q = sp.quote();
        if let Some(&(kk, i)) = quotes_seen.get(&q) {
            by_kind[kk][i].1 += 1;
            continue;
        }
        // A sentence's template is given once, under whichever kind came first.
        let sentence = matches!(sp.kind, Kind::Decisions | Kind::Values | Kind::OpenTasks);
        if sentence && !shapes_seen.insert(shape(&q)) {
            left += 1;
            continue;
        }
        quotes_seen.insert(q.clone(), (k, by_kind[k].len()));
        by_kind[k].push((q, 1));
    }
    // The user's words oldest first: a rule said at the start holds to the end. Errors,
    // files and commands newest first: the work in hand comes back to them.
    for (k, list) in by_kind.iter_mut().enumerate() {
        if matches!(
            USERS_FIRST[k],
            Kind::Errors | Kind::FilesModified | Kind::FilesRead | Kind::Commands
        ) {
            list.reverse();
        }
    }
    // A heading costs its line; a bullet its line.
    let head_cost = |k: usize| format!("\n\n### {}", heading(USERS_FIRST[k])).chars().count();
    let line_cost = |q: &str| q.chars().count() + 3;
    let mut take = vec![0usize; USERS_FIRST.len()];
    let mut used = 0usize;
    let fits = |k: usize, q: &str, take: &mut Vec<usize>, used: &mut usize, cap: usize| -> bool {
        let cost = line_cost(q) + if take[k] == 0 { head_cost(k) } else { 0 };
        if *used + cost > cap.min(room) {
            return false;
        }
        *used += cost;
        take[k] += 1;
        true
    };
    // First each kind within its share.
    for k in 0..USERS_FIRST.len() {
        let share = (SHARES[k] * room as f64) as usize;
        let start = used;
        for (q, _) in &by_kind[k] {
            if !fits(k, q, &mut take, &mut used, start + share) {
                break;
            }
        }
    }
    // Then what is left of the budget, in order, each kind going on where it stopped.
    for k in 0..USERS_FIRST.len() {
        while take[k] < by_kind[k].len() {
            let q = by_kind[k][take[k]].0.clone();
            if !fits(k, &q, &mut take, &mut used, room) {
                break;
            }
        }
    }
    let mut out = Picked {
        left,
        ..Picked::default()
    };
    for (k, list) in by_kind.into_iter().enumerate() {
        let (given, rest) = list.split_at(take[k]);
        out.given += given.iter().map(|(_, n)| n).sum::<usize>();
        out.left += rest.iter().map(|(_, n)| n).sum::<usize>();
        if !given.is_empty() {
            out.groups
                .push((USERS_FIRST[k], given.iter().map(|(q, _)| q.clone()).collect()));
        }
    }
    out
}

/// A compaction's summary mended: what the audit found lost (partly kept included) given back
/// word for word in a specifics section, within `room` tokens (Pi's estimate, chars/4), the
/// user's words first. `None` when nothing was lost.
pub fn mend(audit: &Audit, room: u64) -> Option<Mend> {
    let lost: Vec<&Specific> = audit.lost().collect();
    if lost.is_empty() {
        return None;
    }
    const LEAD: &str = "Given back word for word after bonsai's audit (the summary above had lost them):";
    let frame = "## Specifics\n".len() + LEAD.len() + 2;
    let room_chars = (room as usize * 4).saturating_sub(frame);
    let picked = pick_within(&lost, room_chars);
    if picked.given == 0 {
        return Some(Mend {
            summary: audit.summary.clone(),
            given: 0,
            left: picked.left,
        });
    }
    let section = format!("## Specifics\n{LEAD}\n\n{}", picked.render(heading));
    Some(Mend {
        summary: with_section(&audit.summary, &section),
        given: picked.given,
        left: picked.left,
    })
}

/// A summary with what its audit found lost given back.
#[derive(Debug, Clone, PartialEq)]
pub struct Mend {
    pub summary: String,
    /// Items given back, and items that did not fit (or repeat one given but for numbers).
    pub given: usize,
    pub left: usize,
}

/// The text of the entry that gives `items` back to summary `kind` whose text is `old`:
/// - a compaction: the old summary with the specifics section (it replaces the old one in
///   Pi's context);
/// - a branch summary: the specifics section alone, led by what it completes (the old one
///   stays in the context, and saying it twice would cost its tokens again).
pub fn given_back(kind: SummaryKind, old: &str, of_id: &str, items: &[&Specific]) -> String {
    match kind {
        SummaryKind::Compaction => amended_summary(old, items),
        SummaryKind::BranchSummary => format!(
            "Specifics the branch summary {of_id} left out, given back word for word:\n\n{}",
            specifics_section(items)
        ),
    }
}

#[cfg(test)]
mod tests;
