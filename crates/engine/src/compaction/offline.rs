//! The offline summarizer: deterministic, instant, no network. It writes Pi's summary format
//! (`## Goal` … `## Critical Context`, then the file tags) from the entries themselves, keeping
//! the facts the recall score counts (`recall`): every request with its distinctive terms,
//! every error result's first informative line, the paths commands touched, the tool work and
//! its files, the names the assistant keeps coming back to, the last state.
//!
//! Within a budget (Pi's own for an LLM summary, and a tenth of what the summary replaces) it
//! keeps by value: the assistant's answers and decisions go first, then older requests are
//! reduced to their terms, then constraints, then the oldest facts (command paths, request
//! terms, errors), each list saying how many it leaves out.
//!
//! Order-independent: messages are ordered by their timestamps (ties by their content) before
//! anything is read, and an item said twice is kept once (the newer wins), so the same
//! messages give the same summary in whatever order they come, and an update merges the
//! previous summary the same way every time.

use crate::compaction::cut::{self, CompactionPlan};
use crate::compaction::recall;
use crate::compaction::serialize::{self, FileOps};
use crate::compaction::summary::{self, Summary};
use crate::compaction::terms;
use crate::load::js;
use crate::load::session::Session;
use crate::view::context::{self};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Longest quote of one request kept in a summary.
const QUOTE: usize = 160;

fn first_line(s: &str) -> String {
    let line = s.lines().map(js::js_trim).find(|l| !l.is_empty()).unwrap_or("");
    cut(line, QUOTE)
}

/// At most `n` characters of `s`, ending in "…" when cut. The cut falls between words, so a
/// path or a name is never cut in two (a cut path names a file that does not exist); text
/// that is one long word up to the limit is kept to the end of that word (400 characters at
/// most).
fn cut(s: &str, n: usize) -> String {
    let s = js::js_trim(s);
    if s.chars().count() <= n {
        return s.to_string();
    }
    let head: String = s.chars().take(n - 1).collect();
    let at = match head.rfind(char::is_whitespace) {
        Some(i) if i > 0 => i,
        _ => {
            let word = s.split(char::is_whitespace).next().unwrap_or(s);
            if word.chars().count() <= 400 {
                return if word.len() == s.len() {
                    s.to_string()
                } else {
                    format!("{word}…")
                };
            }
            head.len()
        }
    };
    format!("{}…", head[..at].trim_end())
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

const CONSTRAINT_WORDS: [&str; 9] = [
    "don't", "do not", "never", "must", "without", "only ", "prefer", "keep ", "no ",
];

const DECISION_WORDS: [&str; 7] = [
    "instead of",
    "decided",
    "rather than",
    "going with",
    "i'll use",
    "we'll use",
    "keep ",
];

/// Where sentences end in `text`: a newline, or `.`/`!`/`?` before a space or the end (a dot
/// inside `cli.ts` ends nothing).
fn sentence_ends(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    (0..b.len())
        .filter(|&i| {
            b[i] == b'\n'
                || (matches!(b[i], b'.' | b'!' | b'?') && b.get(i + 1).is_none_or(|c| c.is_ascii_whitespace()))
        })
        .collect()
}

/// The sentence of `text` that holds a constraint word, if any.
fn constraint_of(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let at = CONSTRAINT_WORDS.iter().filter_map(|w| lower.find(w)).min()?;
    // The sentence around the word (byte offsets of `lower` and `text` agree unless
    // lowercasing changed a character's length; then the first line).
    if lower.len() != text.len() {
        return Some(first_line(text));
    }
    let ends = sentence_ends(text);
    let start = ends.iter().rev().find(|&&e| e < at).map_or(0, |e| e + 1);
    let end = ends.iter().find(|&&e| e >= at).map_or(text.len(), |e| e + 1);
    Some(cut(&text[start..end], 120))
}

/// When a message was written: its own `timestamp` (milliseconds or ISO), for ordering.
fn stamp(m: &Value) -> f64 {
    match m.get("timestamp") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => js::parse_iso_ms(s),
        _ => f64::NAN,
    }
}

/// The messages in the order they were written: by timestamp (none first), ties by content,
/// so any order of the same messages reads the same.
fn ordered<'a>(messages: impl IntoIterator<Item = &'a Value>) -> Vec<(f64, &'a Value)> {
    let mut v: Vec<(f64, &Value)> = messages
        .into_iter()
        .map(|m| {
            let t = stamp(m);
            (if t.is_nan() { f64::NEG_INFINITY } else { t }, m)
        })
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.to_string().cmp(&b.1.to_string())));
    v
}

/// One line of a section, with when it was said.
#[derive(Debug, Clone)]
struct Item {
    ts: f64,
    text: String,
}

/// A list of items, each said once: the same text again keeps the newer one.
#[derive(Debug, Clone, Default)]
struct Items {
    items: Vec<Item>,
    at: HashMap<String, usize>,
}

impl Items {
    fn add(&mut self, ts: f64, text: String) {
        if text.is_empty() {
            return;
        }
        match self.at.get(&text) {
            Some(&i) => {
                if ts > self.items[i].ts {
                    self.items[i].ts = ts;
                }
            }
            None => {
                self.at.insert(text.clone(), self.items.len());
                self.items.push(Item { ts, text });
            }
        }
    }
}

/// A user request: its first line and its distinctive terms.
#[derive(Debug, Clone)]
struct Request {
    ts: f64,
    line: String,
    terms: Vec<String>,
}

/// What the messages say, by kind.
#[derive(Debug, Clone, Default)]
struct Facts {
    requests: Vec<Request>,
    request_at: HashMap<String, usize>,
    constraints: Items,
    errors: Items,
    done: Items,
    decisions: Items,
    in_progress: Items,
    /// Critical context carried from earlier summaries, and custom messages.
    notes: Items,
    /// Paths named in commands, first seen first.
    command_paths: Vec<String>,
    command_seen: HashSet<String>,
    /// Identifier → (messages it appears in, newest of them).
    names: HashMap<String, (usize, f64)>,
    reads: Vec<String>,
    edits: Vec<String>,
    writes: Vec<String>,
    commands: usize,
    /// The last message read was a user request still waiting for its answer.
    pending: Option<String>,
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !s.is_empty() && !v.contains(&s) {
        v.push(s);
    }
}

impl Facts {
    /// Every file read, edited or written (a path here is not listed again among commands').
    fn known_files(&self) -> HashSet<&str> {
        self.reads
            .iter()
            .chain(&self.edits)
            .chain(&self.writes)
            .map(String::as_str)
            .collect()
    }

    fn add_request(&mut self, ts: f64, line: String, terms: Vec<String>) {
        if line.is_empty() && terms.is_empty() {
            return;
        }
        match self.request_at.get(&line) {
            Some(&i) => {
                let r = &mut self.requests[i];
                r.ts = r.ts.max(ts);
                for t in terms {
                    push_unique(&mut r.terms, t);
                }
            }
            None => {
                self.request_at.insert(line.clone(), self.requests.len());
                self.requests.push(Request { ts, line, terms });
            }
        }
    }

    fn add_command(&mut self, command: &str) {
        self.commands += 1;
        for p in terms::paths(command) {
            if self.command_seen.insert(p.clone()) {
                self.command_paths.push(p);
            }
        }
    }

    /// The items of an earlier summary (a compaction's or a branch's), said at `ts`.
    fn carry(&mut self, text: &str, ts: f64) {
        for (section, items) in sections_of(text) {
            for i in items {
                match section.as_str() {
                    "Goal" | "Original Request" => {
                        let t = terms::request_terms(&i);
                        self.add_request(ts, i, t);
                    }
                    "Constraints & Preferences" => self.constraints.add(ts, i),
                    "Done" | "Progress" | "Progress So Far" => self.done.add(ts, i),
                    "In Progress" => self.in_progress.add(ts, i),
                    "Blocked" => self.errors.add(ts, i),
                    "Key Decisions" => self.decisions.add(ts, i),
                    "Critical Context" | "Context Needed to Continue" => {
                        if let Some(list) = i.strip_prefix(COMMAND_PATHS) {
                            for p in list.split(", ").map(str::trim).filter(|p| terms::is_path(p)) {
                                if self.command_seen.insert(p.to_string()) {
                                    self.command_paths.push(p.to_string());
                                }
                            }
                        } else if !i.starts_with(NAMES) && !i.starts_with(FOCUS) && !i.starts_with("Error: ") {
                            self.notes.add(ts, i)
                        } else if let Some(e) = i.strip_prefix("Error: ") {
                            self.errors.add(ts, e.to_string());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

const COMMAND_PATHS: &str = "Paths used in commands: ";
const NAMES: &str = "Names in use: ";
const FOCUS: &str = "Focus requested: ";

fn gather<'a>(messages: impl IntoIterator<Item = &'a Value>, previous: Option<&str>) -> Facts {
    let mut f = Facts::default();
    if let Some(p) = previous {
        // Older than anything in the range: an item said again in the range is the newer.
        f.carry(p, f64::NEG_INFINITY);
    }
    gather_into(&mut f, messages);
    f
}

/// The facts of `messages` added to `f` (in their timestamps' order among themselves).
fn gather_into<'a>(f: &mut Facts, messages: impl IntoIterator<Item = &'a Value>) {
    let mut last_user: Option<String> = f.pending.take();
    for (ts, m) in ordered(messages) {
        let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("");
        match role {
            "user" => {
                let t = context::content_text(m.get("content"), "\n");
                let line = first_line(&t);
                if let Some(c) = constraint_of(&t) {
                    f.constraints.add(ts, c);
                }
                f.add_request(ts, line.clone(), terms::request_terms(&t));
                if !line.is_empty() {
                    last_user = Some(line);
                }
            }
            "custom" => {
                let t = context::content_text(m.get("content"), "\n");
                let kind = m.get("customType").and_then(|c| c.as_str()).unwrap_or("custom");
                let line = first_line(&t);
                if !line.is_empty() {
                    f.notes.add(ts, format!("{kind}: {line}"));
                }
            }
            "bashExecution" => f.add_command(m.get("command").and_then(|c| c.as_str()).unwrap_or("")),
            "assistant" => {
                let blocks: &[Value] = m
                    .get("content")
                    .and_then(|c| c.as_array())
                    .map(|v| v.as_slice())
                    .unwrap_or(&[]);
                let mut seen_names: HashSet<&str> = HashSet::new();
                for b in blocks {
                    if b.get("type").and_then(|t| t.as_str()) != Some("toolCall") {
                        continue;
                    }
                    let args = b.get("arguments").unwrap_or(&Value::Null);
                    let path = args.get("path").and_then(|p| p.as_str()).unwrap_or("");
                    match b.get("name").and_then(|n| n.as_str()).unwrap_or("") {
                        "read" if !path.is_empty() => push_unique(&mut f.reads, path.to_string()),
                        "edit" if !path.is_empty() => push_unique(&mut f.edits, path.to_string()),
                        "write" if !path.is_empty() => push_unique(&mut f.writes, path.to_string()),
                        "bash" => {
                            let cmd = recall::command_of(args).unwrap_or("");
                            f.add_command(cmd);
                            seen_names.extend(terms::identifiers(cmd));
                        }
                        _ => {}
                    }
                }
                let text = context::content_text(m.get("content"), "\n");
                seen_names.extend(terms::identifiers(&text));
                for n in seen_names {
                    let e = f.names.entry(n.to_string()).or_insert((0, ts));
                    e.0 += 1;
                    e.1 = e.1.max(ts);
                }
                if !js::js_trim(&text).is_empty() {
                    if m.get("stopReason").and_then(|s| s.as_str()) == Some("stop") {
                        f.done.add(ts, first_sentence(&text));
                        last_user = None;
                    }
                    let lower = text.to_lowercase();
                    if DECISION_WORDS.iter().any(|w| lower.contains(w)) {
                        f.decisions.add(ts, first_sentence(&text));
                    }
                }
                if let Some(err) = m.get("errorMessage").and_then(|e| e.as_str()) {
                    f.errors.add(ts, format!("error: {}", first_line(err)));
                }
            }
            // An earlier summary inside the range (a branch left before, or a compaction's
            // checkpoint): its items are facts of the range too, not nothing.
            "branchSummary" | "compactionSummary" => {
                let text = m.get("summary").and_then(|t| t.as_str()).unwrap_or("");
                f.carry(text, ts);
            }
            _ => {}
        }
        // The error results, worded as the recall score reads them.
        if let Some(line) = recall::error_line(m) {
            let text = match role {
                "bashExecution" => {
                    let cmd = m.get("command").and_then(|c| c.as_str()).unwrap_or("");
                    format!("`{}`: {line}", cut(cmd, 60))
                }
                _ => format!(
                    "{}: {line}",
                    m.get("toolName").and_then(|t| t.as_str()).unwrap_or("tool")
                ),
            };
            f.errors.add(ts, text);
        }
    }
    f.pending = last_user;
}

/// Sections of an earlier summary (`## Name` and `### Name` → bullet lines), for an update
/// that keeps them. File tags are rebuilt from the details, never carried as items.
fn sections_of(previous: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_file_list = false;
    for line in previous.lines() {
        if line.starts_with("<read-files>") || line.starts_with("<modified-files>") {
            in_file_list = true;
            continue;
        }
        if line.starts_with("</read-files>") || line.starts_with("</modified-files>") {
            in_file_list = false;
            continue;
        }
        if in_file_list || line.starts_with('<') || line.starts_with("---") || line.starts_with("**Turn") {
            continue;
        }
        if let Some(h) = line.strip_prefix("### ").or_else(|| line.strip_prefix("## ")) {
            out.push((h.trim().to_string(), vec![]));
            continue;
        }
        let item = line
            .trim_start()
            .trim_start_matches(['-', ' '])
            .trim_start_matches("[x] ")
            .trim_start_matches("[ ] ")
            .trim();
        let numbered = item
            .split_once(". ")
            .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()));
        if let Some((_, v)) = out.last_mut()
            && !item.is_empty()
            && !item.starts_with("(none)")
            && !numbered
            && !(item.starts_with('(') && item.ends_with("not listed)"))
        {
            v.push(item.to_string());
        }
    }
    out
}

/// A section's bullet lines, or `- (none)`.
fn bullets(items: &[String], empty: &str, mark: &str) -> String {
    if items.is_empty() {
        format!("- {empty}")
    } else {
        items
            .iter()
            .map(|i| format!("- {mark}{i}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// "edited a, b; wrote c; read 3 files; ran 5 commands" (the newest twelve names of each
/// list; every one of them is in the `<modified-files>` list).
fn tool_work(f: &Facts) -> Option<String> {
    let mut parts = Vec::new();
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

/// The requests as a summary shows them: some in full (their first line and the terms it
/// does not already say), the rest by their terms only, in one bullet.
struct Goal {
    /// Per request (oldest first): the terms it is the first to name.
    owned: Vec<Vec<String>>,
    /// Per request: shown in full.
    full: Vec<bool>,
    /// Terms of requests shown by terms only, oldest first, and how many were dropped.
    /// (A deque: the oldest go first, one by one, and a long history has tens of thousands.)
    terms_only: std::collections::VecDeque<String>,
    dropped_terms: usize,
    /// Requests left out entirely.
    dropped: usize,
    /// No request from 1 up to here is shown in full any more (requests only ever go from
    /// full to terms): where the next search for one starts, so moving them one by one is
    /// linear, not quadratic (a 100,000-entry chain took seconds).
    full_from: usize,
}

impl Goal {
    fn new(reqs: &[Request]) -> Goal {
        let mut named: HashSet<&str> = HashSet::new();
        let mut owned = Vec::with_capacity(reqs.len());
        for r in reqs {
            let mut mine = Vec::new();
            for t in &r.terms {
                if named.insert(t) {
                    mine.push(t.clone());
                }
            }
            owned.push(mine);
        }
        Goal {
            owned,
            full: vec![true; reqs.len()],
            terms_only: Default::default(),
            dropped_terms: 0,
            dropped: 0,
            full_from: 1,
        }
    }

    /// The bullet of request `k` in full.
    fn full_text(&self, reqs: &[Request], k: usize) -> String {
        let r = &reqs[k];
        let extra: Vec<&str> = self.owned[k]
            .iter()
            .filter(|t| !terms::contains_term(&r.line, t))
            .map(String::as_str)
            .collect();
        match (r.line.is_empty(), extra.is_empty()) {
            (_, true) => r.line.clone(),
            (true, false) => format!("(named {})", extra.join(", ")),
            (false, false) => format!("{} (also: {})", r.line, extra.join(", ")),
        }
    }

    fn terms_list(&self) -> String {
        self.terms_only
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn terms_bullet(&self) -> Option<String> {
        match (self.terms_only.is_empty(), self.dropped_terms) {
            (true, 0) => None,
            (true, n) => Some(format!("({n} earlier request terms not listed)")),
            (false, 0) => Some(format!("Earlier requests also named: {}", self.terms_list())),
            (false, n) => Some(format!(
                "Earlier requests also named ({n} older not listed): {}",
                self.terms_list()
            )),
        }
    }

    fn lines(&self, reqs: &[Request]) -> Vec<String> {
        let mut out = Vec::new();
        let mut bucket_shown = false;
        for k in 0..reqs.len() {
            if self.full[k] {
                out.push(self.full_text(reqs, k));
            } else if !bucket_shown {
                // The terms-only requests sit where the first of them was.
                bucket_shown = true;
                if self.dropped > 0 {
                    out.push(format!("({} earlier requests not listed)", self.dropped));
                }
                out.extend(self.terms_bullet());
            }
        }
        out
    }
}

/// A history summary in Pi's compaction format (without the file tags), within `budget`
/// tokens when one is given (see `offline_budget`).
pub fn history_summary(
    messages: &[Value],
    previous: Option<&str>,
    instructions: Option<&str>,
    budget: Option<u64>,
) -> String {
    let f = gather(messages, previous);
    let focus = instructions
        .map(js::js_trim)
        .filter(|i| !i.is_empty())
        .map(|i| format!("{FOCUS}{}", cut(i, QUOTE)));
    let next = match &f.pending {
        Some(r) => format!("1. Answer the pending request: {r}"),
        None => "1. Continue with the user's next request".to_string(),
    };
    let mut pack = Pack {
        tool_work: tool_work(&f),
        next,
        focus,
        names: recurring_names(&f),
        notes: texts(&f.notes),
        ..Pack::of(&f)
    };
    // The assistant's answers and decisions are context, not facts: the newest few always.
    pack.keep_newest(DONE, MAX_CHATTER);
    pack.keep_newest(DECISIONS, MAX_CHATTER);
    pack.keep_newest(NOTES, MAX_NOTES);
    if let Some(b) = budget {
        pack.fit(b as usize * 4);
    }
    pack.render()
}

/// What is still open: the items in progress, then the request still waiting for its answer.
fn open_items(f: &Facts) -> Vec<String> {
    let mut v: Vec<String> = texts(&f.in_progress);
    if let Some(p) = &f.pending
        && !v.contains(p)
    {
        v.push(p.clone());
    }
    v
}

/// The most answers (and decisions) a summary lists, newest first.
const MAX_CHATTER: usize = 8;
/// The most carried notes.
const MAX_NOTES: usize = 12;

fn texts(items: &Items) -> Vec<String> {
    // Sorted by reference and only the texts copied: the lists of a long session's ledger
    // hold thousands of items.
    let mut v: Vec<&Item> = items.items.iter().collect();
    v.sort_by(|a, b| a.ts.total_cmp(&b.ts).then_with(|| a.text.cmp(&b.text)));
    v.into_iter().map(|i| i.text.clone()).collect()
}

/// The names the assistant keeps coming back to: in three or more of its messages, the most
/// frequent twelve (ties: the newest, then by name).
fn recurring_names(f: &Facts) -> Vec<String> {
    let mut v: Vec<(&String, &(usize, f64))> = f.names.iter().filter(|(_, (n, _))| *n >= 3).collect();
    v.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(b.1.1.total_cmp(&a.1.1)).then(a.0.cmp(b.0)));
    v.into_iter().take(12).map(|(n, _)| n.clone()).collect()
}

/// The history summary's parts, reduced until they fit.
struct Pack<'a> {
    goal: Goal,
    requests: &'a [Request],
    constraints: Vec<String>,
    done: Vec<String>,
    tool_work: Option<String>,
    in_progress: Vec<String>,
    errors: Vec<String>,
    decisions: Vec<String>,
    next: String,
    focus: Option<String>,
    command_paths: Vec<String>,
    names: Vec<String>,
    notes: Vec<String>,
    /// Items left out of: done, decisions, errors, notes, constraints, command paths.
    dropped: [usize; 6],
}

const WHAT: [&str; 6] = [
    "earlier answers",
    "earlier decisions",
    "earlier errors",
    "earlier notes",
    "earlier constraints",
    "earlier command paths",
];

/// A list with its "(N earlier … not listed)" line in front.
fn with_dropped(items: &[String], dropped: usize, what: &str) -> Vec<String> {
    let mut v = Vec::with_capacity(items.len() + 1);
    if dropped > 0 {
        v.push(format!("({dropped} {what} not listed)"));
    }
    v.extend(items.iter().cloned());
    v
}

impl<'a> Pack<'a> {
    /// The facts as a pack, before anything is reduced: the requests, constraints,
    /// answers, open items, errors, decisions and command paths (those not already a read or
    /// modified file); no tool-work line, next step, focus, names, notes or file lines.
    fn of(f: &'a Facts) -> Pack<'a> {
        let known_files = f.known_files();
        Pack {
            goal: Goal::new(&f.requests),
            requests: &f.requests,
            constraints: texts(&f.constraints),
            done: texts(&f.done),
            tool_work: None,
            in_progress: open_items(f),
            errors: texts(&f.errors),
            decisions: texts(&f.decisions),
            next: String::new(),
            focus: None,
            command_paths: f
                .command_paths
                .iter()
                .filter(|p| !known_files.contains(p.as_str()))
                .cloned()
                .collect(),
            names: vec![],
            notes: vec![],
            dropped: [0; 6],
        }
    }

    fn critical(&self) -> Vec<String> {
        let mut v: Vec<String> = self.focus.iter().cloned().collect();
        v.extend(self.command_paths_line(COMMAND_PATHS));
        if !self.names.is_empty() {
            v.push(format!("{NAMES}{}", self.names.join(", ")));
        }
        v.extend(with_dropped(&self.notes, self.dropped[3], WHAT[3]));
        v
    }

    /// The paths commands used, after `lead`, with how many older ones are left out.
    fn command_paths_line(&self, lead: &str) -> Option<String> {
        if self.command_paths.is_empty() && self.dropped[5] == 0 {
            return None;
        }
        let more = if self.dropped[5] > 0 {
            format!(" ({} older not listed)", self.dropped[5])
        } else {
            String::new()
        };
        Some(format!("{lead}{}{more}", self.command_paths.join(", ")))
    }

    fn done_lines(&self) -> Vec<String> {
        let mut v = with_dropped(&self.done, self.dropped[0], WHAT[0]);
        v.extend(self.tool_work.iter().cloned());
        v
    }

    fn render(&self) -> String {
        let goal = self.goal.lines(self.requests);
        format!(
            "## Goal\n{}\n\n## Constraints & Preferences\n{}\n\n## Progress\n### Done\n{}\n\n### In Progress\n{}\n\n### Blocked\n{}\n\n## Key Decisions\n{}\n\n## Next Steps\n{}\n\n## Critical Context\n{}",
            bullets(&goal, "(none)", ""),
            bullets(&with_dropped(&self.constraints, self.dropped[4], WHAT[4]), "(none)", ""),
            bullets(&self.done_lines(), "(none)", "[x] "),
            bullets(&self.in_progress, "(none)", "[ ] "),
            bullets(&with_dropped(&self.errors, self.dropped[2], WHAT[2]), "(none)", ""),
            bullets(&with_dropped(&self.decisions, self.dropped[1], WHAT[1]), "(none)", ""),
            self.next,
            bullets(&self.critical(), "(none)", ""),
        )
    }

    fn size(&self) -> usize {
        self.render().chars().count()
    }

    /// Reduce, lowest value first, until the text is at most `chars` long.
    fn fit(&mut self, chars: usize) {
        let limit = chars as isize;
        let mut total = self.size() as isize;
        if total <= limit {
            return;
        }
        let n = self.requests.len();
        // The assistant's chatter first.
        self.reduce(&mut total, limit, |p| p.drop_oldest(DONE, 3));
        self.reduce(&mut total, limit, |p| p.drop_oldest(DECISIONS, 3));
        self.reduce(&mut total, limit, |p| {
            (p.names.len() > 6).then(|| p.names.pop().map_or(0, |x| x.chars().count() as isize + 2))
        });
        self.reduce(&mut total, limit, |p| {
            (p.in_progress.len() > 1).then(|| p.in_progress.remove(0).chars().count() as isize + 7)
        });
        self.reduce(&mut total, limit, |p| p.drop_oldest(NOTES, 3));
        // Then the wording of requests other than the first and the newest two (their terms
        // stay), oldest first.
        self.reduce(&mut total, limit, |p| p.next_to_terms(1..n.saturating_sub(2)));
        self.reduce(&mut total, limit, |p| p.drop_oldest(CONSTRAINTS, 2));
        self.reduce(&mut total, limit, |p| p.drop_oldest(DONE, 1));
        self.reduce(&mut total, limit, |p| p.drop_oldest(DECISIONS, 1));
        self.reduce(&mut total, limit, |p| p.drop_oldest(NOTES, 1));
        self.reduce(&mut total, limit, |p| {
            p.names.pop().map(|x| x.chars().count() as isize + 2)
        });
        self.reduce(&mut total, limit, |p| p.next_to_terms(1..n.saturating_sub(1)));
        self.reduce(&mut total, limit, |p| p.next_to_terms(0..1));
        // Last, the oldest facts: command paths, request terms, errors.
        self.reduce(&mut total, limit, |p| p.drop_oldest(COMMAND_PATHS_LIST, 0));
        self.reduce(&mut total, limit, |p| {
            (!p.goal.terms_only.is_empty()).then(|| {
                p.goal.dropped_terms += 1;
                p.goal
                    .terms_only
                    .pop_front()
                    .map_or(0, |t| t.chars().count() as isize + 2)
            })
        });
        self.reduce(&mut total, limit, |p| p.drop_oldest(ERRORS, 1));
        for list in [CONSTRAINTS, DECISIONS, DONE, NOTES] {
            self.reduce(&mut total, limit, |p| p.drop_oldest(list, 0));
        }
        // The pending request is already in In Progress.
        if total > limit && self.next.starts_with("1. Answer the pending request: ") {
            self.next = "1. Answer the pending request (In Progress above)".into();
            total = self.size() as isize;
        }
        // Still over (a few enormous items): shorten what is left.
        if total > limit {
            for e in self.errors.iter_mut().chain(self.in_progress.iter_mut()) {
                *e = cut(e, 120);
            }
            self.next = cut(&self.next, 120);
        }
    }

    /// Apply `one` (which takes one item out and says about how many characters it saved, or
    /// `None` when it has nothing left to take) until the text fits, then measure it again.
    fn reduce(&mut self, total: &mut isize, limit: isize, mut one: impl FnMut(&mut Self) -> Option<isize>) {
        loop {
            let mut acted = false;
            while *total > limit {
                match one(self) {
                    Some(saved) => {
                        *total -= saved;
                        acted = true;
                    }
                    None => break,
                }
            }
            // The savings are estimates: measure, and go on while this step still can.
            *total = self.size() as isize;
            if *total <= limit || !acted {
                break;
            }
        }
    }

    fn list(&mut self, k: usize) -> &mut Vec<String> {
        match k {
            DONE => &mut self.done,
            DECISIONS => &mut self.decisions,
            ERRORS => &mut self.errors,
            NOTES => &mut self.notes,
            CONSTRAINTS => &mut self.constraints,
            _ => &mut self.command_paths,
        }
    }

    /// List `k` down to its newest `n` items (the rest counted).
    fn keep_newest(&mut self, k: usize, n: usize) {
        // At once (one by one from the front was quadratic on a long history).
        let list = self.list(k);
        let excess = list.len().saturating_sub(n);
        list.drain(..excess);
        self.dropped[k] += excess;
    }

    /// The oldest item of list `k`, if it holds more than `floor`.
    fn drop_oldest(&mut self, k: usize, floor: usize) -> Option<isize> {
        let list = self.list(k);
        if list.len() <= floor {
            return None;
        }
        let gone = list.remove(0).chars().count() as isize + if k == COMMAND_PATHS_LIST { 2 } else { 3 };
        self.dropped[k] += 1;
        // The first one dropped adds its "(N … not listed)" line.
        Some(if self.dropped[k] == 1 { gone - 30 } else { gone })
    }

    /// The oldest request in `range` still shown in full goes to its terms.
    fn next_to_terms(&mut self, range: std::ops::Range<usize>) -> Option<isize> {
        let from = if range.start >= 1 {
            range.start.max(self.goal.full_from)
        } else {
            range.start
        };
        let k = (from..range.end).find(|&k| self.goal.full[k]);
        if range.start >= 1 {
            self.goal.full_from = k.unwrap_or(range.end.max(from));
        }
        let k = k?;
        let full = self.goal.full_text(self.requests, k).chars().count() as isize + 3;
        let first = self.goal.terms_only.is_empty();
        self.goal.full[k] = false;
        if self.goal.owned[k].is_empty() {
            self.goal.dropped += 1;
        }
        let terms = self.goal.owned[k].clone();
        let added: isize = terms.iter().map(|t| t.chars().count() as isize + 2).sum();
        self.goal.terms_only.extend(terms);
        Some(full - added - if first { 40 } else { 0 })
    }
}

const DONE: usize = 0;
const DECISIONS: usize = 1;
const ERRORS: usize = 2;
const NOTES: usize = 3;
const CONSTRAINTS: usize = 4;
const COMMAND_PATHS_LIST: usize = 5;

/// The summary of a split turn's prefix (Pi's turn-prefix format), within `budget` tokens
/// when one is given.
pub fn turn_prefix_summary(messages: &[Value], budget: Option<u64>) -> String {
    let f = gather(messages, None);
    let goal = Goal::new(&f.requests);
    let mut requests: Vec<String> = (0..f.requests.len()).map(|k| goal.full_text(&f.requests, k)).collect();
    let mut progress: Vec<String> = tool_work(&f).into_iter().collect();
    let mut done = texts(&f.done);
    let mut errors: Vec<String> = texts(&f.errors).into_iter().map(|e| format!("Error: {e}")).collect();
    let known_files = f.known_files();
    let mut paths: Vec<String> = f
        .command_paths
        .iter()
        .filter(|p| !known_files.contains(p.as_str()))
        .cloned()
        .collect();
    let render = |requests: &[String], done: &[String], progress: &[String], errors: &[String], paths: &[String]| {
        let mut context: Vec<String> = errors.to_vec();
        if !paths.is_empty() {
            context.push(format!("{COMMAND_PATHS}{}", paths.join(", ")));
        }
        let progress: Vec<String> = progress.iter().chain(done).cloned().collect();
        format!(
            "## Original Request\n{}\n\n## Progress So Far\n{}\n\n## Context Needed to Continue\n{}",
            bullets(requests, "(not in this part of the turn)", ""),
            bullets(&progress, "(none)", ""),
            bullets(&context, "The kept messages continue this turn", ""),
        )
    };
    if let Some(b) = budget {
        let chars = b as usize * 4;
        let size = |r: &[String], d: &[String], p: &[String], e: &[String], x: &[String]| {
            render(r, d, p, e, x).chars().count()
        };
        while size(&requests, &done, &progress, &errors, &paths) > chars && done.len() > 1 {
            done.remove(0);
        }
        while size(&requests, &done, &progress, &errors, &paths) > chars && !paths.is_empty() {
            paths.remove(0);
        }
        while size(&requests, &done, &progress, &errors, &paths) > chars && errors.len() > 1 {
            errors.remove(0);
        }
        while size(&requests, &done, &progress, &errors, &paths) > chars && requests.len() > 1 {
            requests.remove(0);
        }
        if size(&requests, &done, &progress, &errors, &paths) > chars {
            done.clear();
            progress.clear();
            for r in requests.iter_mut().chain(errors.iter_mut()) {
                *r = cut(r, 200);
            }
        }
    }
    render(&requests, &done, &progress, &errors, &paths)
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

/// The offline summary's budget for the history part: Pi's for an LLM summary
/// (0.8 × reserveTokens), and at most a tenth of what the whole summary replaces less what
/// the rest of it takes (the turn prefix's part and the file tags); never below `floor`.
pub fn offline_budget(pi_limit: u64, replaced_tokens: u64, rest_tokens: u64, floor: u64) -> u64 {
    pi_limit
        .min((replaced_tokens / 10).saturating_sub(rest_tokens))
        .max(floor)
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
mod tests;

/// The offline compaction summary for a plan (history, split-turn prefix, file tags), within
/// Pi's budgets for an LLM summary (0.8 × reserveTokens for the history, 0.5 × for a turn
/// prefix) and within a tenth of what it replaces (see `offline::offline_budget`).
pub fn compaction_summary(s: &Session, plan: &CompactionPlan, instructions: Option<&str>) -> Summary {
    let history = summary::materialize_all(s, &plan.messages_to_summarize);
    let prefix = summary::materialize_all(s, &plan.turn_prefix_messages);
    compaction_summary_of(s, plan, &history, &prefix, instructions)
}

/// [`compaction_summary`] on the plan's messages already materialized
/// (`materialize_all`): the history's and the turn prefix's.
pub fn compaction_summary_of(
    s: &Session,
    plan: &CompactionPlan,
    history_msgs: &[Value],
    prefix_msgs: &[Value],
    instructions: Option<&str>,
) -> Summary {
    let previous = cut::previous_summary(s, plan);
    let replaced = crate::compaction::recall::replaced_tokens(s, plan);
    let (read, modified) = plan.file_ops.lists();
    let tags = summary::estimate_text(&serialize::format_file_operations(
        &serialize::list_strings(&read),
        &serialize::list_strings(&modified),
    ));
    let prefix = (plan.is_split_turn && !prefix_msgs.is_empty()).then(|| {
        turn_prefix_summary(
            prefix_msgs,
            Some(offline_budget(plan.settings.turn_prefix_limit(), replaced, tags, 64)),
        )
    });
    let history = if plan.is_split_turn && history_msgs.is_empty() {
        previous.clone().unwrap_or_else(|| "No prior history.".into())
    } else {
        let rest = tags + prefix.as_deref().map_or(0, |p| summary::estimate_text(p) + 12);
        let budget = offline_budget(plan.settings.history_summary_limit(), replaced, rest, 128);
        history_summary(history_msgs, previous.as_deref(), instructions, Some(budget))
    };
    let text = compose_compaction_summary(&history, prefix.as_deref(), &plan.file_ops);
    // What the prose did not name, word for word, while Pi's budget lasts (the audit's kinds).
    let mut read: Vec<(usize, &Value)> = Vec::with_capacity(history_msgs.len() + prefix_msgs.len() + 1);
    let carried = previous
        .as_ref()
        .map(|p| serde_json::json!({"role": "compactionSummary", "summary": p}));
    if let (Some(c), Some(e)) = (&carried, plan.previous_compaction_entry()) {
        read.push((e, c));
    }
    read.extend(plan.messages_to_summarize.iter().map(|m| m.source).zip(history_msgs));
    read.extend(plan.turn_prefix_messages.iter().map(|m| m.source).zip(prefix_msgs));
    let cwd = s.header.cwd.clone().unwrap_or_default();
    let specifics = crate::compaction::audit::specifics_of_messages(&read, &cwd);
    // Within the offline summary's own bound: Pi's budget and a tenth of what it replaces.
    let room = plan
        .settings
        .history_summary_limit()
        .min(replaced / 10)
        .saturating_sub(summary::estimate_text(&text));
    Summary {
        text: crate::compaction::audit::keep_specifics(&text, &specifics, &cwd, room),
        usage: None,
    }
}
