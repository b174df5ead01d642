//! `bonsai_recall`: what the model is not sent now, fetched back word for word.
//!
//! The candidates are the messages of the current path that the model is not sent as they
//! are: turns the live policy left out, outputs it distilled, and every entry a compaction
//! (Pi's or bonsai's) summarized or a context edit hid. A query (a word, a path, an id, a
//! phrase) matches a message that holds it whole, else one that holds all its words, case
//! aside. Matches are given newest first, phrase matches before word matches, each with its
//! entry id; a long message is given as the lines that match with two lines around them. The
//! answer stays within a size and says what it did not show.

use crate::load::entry::Role;
use crate::load::js;
use crate::load::session::Session;
use crate::units;
use crate::view::context;
use serde_json::Value;
use std::collections::HashSet;

/// A message the model is not sent now.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The entry's id (a session file), or "message N" (Pi's list, no file).
    pub id: String,
    /// What it is: "user", "assistant", "bash output (cat x.log)", "read output", …
    pub what: String,
    /// When it was written, in milliseconds (NaN: unknown).
    pub time: f64,
    /// Why it is not sent: "left out by bonsai", "summarized by a compaction", …
    pub why: &'static str,
    pub text: String,
}

/// Why a candidate is not sent.
pub const LEFT_OUT: &str = "left out by bonsai";
pub const DISTILLED: &str = "distilled by bonsai";
pub const COMPACTED: &str = "summarized by a compaction";
pub const HIDDEN: &str = "replaced or hidden by a context edit";

/// A message's text as recall searches and shows it: what was said, the tool calls with
/// their arguments, a tool's or a command's output.
pub fn text_of(m: &Value) -> String {
    let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("");
    match role {
        "assistant" => {
            let mut out = Vec::new();
            for b in m.get("content").and_then(|c| c.as_array()).into_iter().flatten() {
                match b.get("type").and_then(|t| t.as_str()) {
                    Some("text") => out.push(b.get("text").map(js::js_to_string).unwrap_or_default()),
                    Some("toolCall") => out.push(format!(
                        "[calls {} {}]",
                        b.get("name").and_then(|n| n.as_str()).unwrap_or("?"),
                        b.get("arguments").map(|a| a.to_string()).unwrap_or_default()
                    )),
                    _ => {}
                }
            }
            out.join("\n")
        }
        "bashExecution" => format!(
            "$ {}\n{}",
            m.get("command").and_then(|c| c.as_str()).unwrap_or(""),
            m.get("output").and_then(|c| c.as_str()).unwrap_or("")
        ),
        "compactionSummary" | "branchSummary" => m.get("summary").and_then(|s| s.as_str()).unwrap_or("").to_string(),
        _ => context::content_text(m.get("content"), "\n"),
    }
}

/// At most `n` characters of `s`, with "…" where it was cut.
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// What a message is, in a few words.
fn what_of(m: &Value, calls: &std::collections::HashMap<String, String>) -> String {
    let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("");
    match role {
        "toolResult" => {
            let tool = m.get("toolName").and_then(|t| t.as_str()).unwrap_or("tool");
            let call = m.get("toolCallId").and_then(|c| c.as_str()).and_then(|c| calls.get(c));
            let err = if js::truthy(m.get("isError")) { "error " } else { "" };
            match call {
                Some(a) => format!("{tool} {err}output ({})", cut(a, 80)),
                None => format!("{tool} {err}output"),
            }
        }
        "bashExecution" => "user's ! command".into(),
        "custom" => format!(
            "custom message ({})",
            m.get("customType").and_then(|c| c.as_str()).unwrap_or("?")
        ),
        r => r.to_string(),
    }
}

/// The key argument of each tool call in `msgs` by call id (a path, a command), for naming
/// an output.
fn call_args(msgs: &[&Value]) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    for m in msgs {
        for c in crate::compaction::recall::tool_calls(m) {
            let key = if !c.path.is_empty() {
                c.path.to_string()
            } else {
                crate::compaction::recall::command_of(c.args)
                    .map(str::to_string)
                    .unwrap_or_default()
            };
            if !key.is_empty() {
                out.insert(c.id.to_string(), key);
            }
        }
    }
    out
}

/// Candidates from Pi's messages alone (no session file): those not sent whole
/// (`sending(k)`, see [`candidates_of_session`]).
pub fn candidates_of_messages(msgs: &[Value], sending: &dyn Fn(usize) -> Sending) -> Vec<Candidate> {
    let refs: Vec<&Value> = msgs.iter().collect();
    let calls = call_args(&refs);
    msgs.iter()
        .enumerate()
        .filter(|(_, m)| !is_summary(m) && !super::is_packet(m))
        .filter_map(|(i, m)| {
            let why = match sending(i) {
                Sending::Whole => return None,
                Sending::Changed => DISTILLED,
                Sending::Not => LEFT_OUT,
            };
            Some(Candidate {
                id: format!("message {}", i + 1),
                what: what_of(m, &calls),
                time: super::source::time_of(m),
                why,
                text: text_of(m),
            })
        })
        .collect()
}

fn is_summary(m: &Value) -> bool {
    matches!(
        m.get("role").and_then(|r| r.as_str()),
        Some("compactionSummary" | "branchSummary")
    )
}

/// How a message of Pi's context went out on the last call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sending {
    /// As it is.
    Whole,
    /// Changed by bonsai (a long output distilled).
    Changed,
    /// Left out.
    Not,
}

/// Candidates of a session at `leaf`, oldest first:
/// - the path's messages that Pi's context no longer holds (a compaction summarized them);
/// - the messages of Pi's context the live policy did not send whole (`sending(k)`: message
///   `k` of Pi's context, system messages aside);
/// - the words a context edit replaced, as they were written.
pub fn candidates_of_session(s: &Session, leaf: usize, sending: &dyn Fn(usize) -> Sending) -> Vec<Candidate> {
    let path = s.path_to(leaf);
    let proj = context::project(s, &path);
    let in_context: HashSet<usize> = proj.entries.iter().map(|pe| pe.source).collect();
    let mut values: Vec<(usize, &'static str, Value)> = Vec::new();
    for &e in &path {
        if in_context.contains(&e) || s.entries[e].is_compaction() {
            continue;
        }
        for m in context::intrinsic_messages(s, e).iter() {
            if m.role != Role::System {
                values.push((e, COMPACTED, crate::compaction::summary::materialize_one(s, m)));
            }
        }
    }
    // A message a context edit hides is in the context's entries with nothing sent.
    for pe in proj.entries.iter().filter(|pe| pe.messages.is_empty()) {
        for m in context::intrinsic_messages(s, pe.source).iter() {
            if m.role != Role::System && !matches!(m.role, Role::CompactionSummary | Role::BranchSummary) {
                values.push((pe.source, HIDDEN, crate::compaction::summary::materialize_one(s, m)));
            }
        }
    }
    let ctx: Vec<&context::ContextMessage> = proj.messages().filter(|m| m.role != Role::System).collect();
    for (k, m) in ctx.iter().enumerate() {
        if let Some(_edit) = m.replaced_by {
            // Its words as written, before the edit.
            let original = context::ContextMessage {
                replaced_by: None,
                ..(*m).clone()
            };
            values.push((
                m.source,
                HIDDEN,
                crate::compaction::summary::materialize_one(s, &original),
            ));
            continue;
        }
        let why = match sending(k) {
            Sending::Whole => continue,
            Sending::Changed => DISTILLED,
            Sending::Not => LEFT_OUT,
        };
        let v = crate::compaction::summary::materialize_one(s, m);
        if !is_summary(&v) {
            values.push((m.source, why, v));
        }
    }
    let place: std::collections::HashMap<usize, usize> = path.iter().enumerate().map(|(k, &e)| (e, k)).collect();
    values.sort_by_key(|(e, _, _)| place.get(e).copied());
    let refs: Vec<&Value> = values.iter().map(|(_, _, v)| v).collect();
    let calls = call_args(&refs);
    values
        .iter()
        .map(|(e, why, v)| Candidate {
            id: s.entries[*e].id.to_string(),
            what: what_of(v, &calls),
            time: s.entries[*e].ts,
            why,
            text: text_of(v),
        })
        .collect()
}

/// What `bonsai_recall` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    pub text: String,
    /// Candidates that matched, and how many of them are shown.
    pub matches: usize,
    pub shown: usize,
}

/// The lines of `text` around the matches of `needles` (lowercased), two lines on each side,
/// as windows of whole lines.
fn windows(text: &str, needles: &[String]) -> Vec<(usize, usize)> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        let low = l.to_lowercase();
        if needles.iter().any(|n| low.contains(n.as_str())) {
            let (a, b) = (k.saturating_sub(2), (k + 3).min(lines.len()));
            match out.last_mut() {
                Some((_, e)) if *e >= a => *e = b,
                _ => out.push((a, b)),
            }
        }
    }
    out
}

/// The answer to `query` among `candidates` (oldest first), within `room` characters.
pub fn recall(candidates: &[Candidate], query: &str, room: usize) -> Recalled {
    let q = query.split_whitespace().collect::<Vec<_>>().join(" ");
    let phrase = q.to_lowercase();
    let words: Vec<String> = phrase
        .split(' ')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    if words.is_empty() {
        return Recalled {
            text: "bonsai_recall needs a query: a word, a path, an id or a phrase from the earlier conversation."
                .into(),
            matches: 0,
            shown: 0,
        };
    }
    // Phrase matches first, then every word; newest first in each.
    let mut hits: Vec<(u8, usize)> = Vec::new();
    for (i, c) in candidates.iter().enumerate().rev() {
        let low = c.text.to_lowercase();
        if low.contains(&phrase) {
            hits.push((0, i));
        } else if words.len() > 1 && words.iter().all(|w| low.contains(w.as_str())) {
            hits.push((1, i));
        }
    }
    hits.sort_by_key(|(rank, _)| *rank);
    if hits.is_empty() {
        return Recalled {
            text: format!(
                "Nothing of the earlier conversation that is not in your context now matches \"{q}\" ({} searched). Try another word, a path or an id.",
                units::plural(candidates.len() as u64, "message", "messages")
            ),
            matches: 0,
            shown: 0,
        };
    }
    let mut out = format!(
        "{} of the earlier conversation not in your context now {} \"{q}\", newest first, word for word:",
        units::plural(hits.len() as u64, "message", "messages"),
        if hits.len() == 1 { "matches" } else { "match" },
    );
    let mut shown = 0;
    let mut not_shown: Vec<&str> = Vec::new();
    // The same words again (a file read twice): shown once, the other entries named there.
    let mut first_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut also: std::collections::HashMap<usize, Vec<&str>> = std::collections::HashMap::new();
    let mut hits_once: Vec<(u8, usize)> = Vec::new();
    for &(rank, i) in &hits {
        match first_of.get(candidates[i].text.as_str()) {
            Some(&f) => also.entry(f).or_default().push(&candidates[i].id),
            None => {
                first_of.insert(&candidates[i].text, i);
                hits_once.push((rank, i));
            }
        }
    }
    for &(rank, i) in &hits_once {
        let c = &candidates[i];
        let needles: Vec<String> = if rank == 0 { vec![phrase.clone()] } else { words.clone() };
        let when = if c.time.is_finite() {
            format!(" · {}", js::iso_from_ms(c.time as i64))
        } else {
            String::new()
        };
        let lines: Vec<&str> = c.text.split('\n').collect();
        let body = if c.text.chars().count() <= 1_500 {
            c.text.clone()
        } else {
            let mut parts = Vec::new();
            for (a, b) in windows(&c.text, &needles).into_iter().take(4) {
                parts.push(format!(
                    "[lines {}–{} of {}]\n{}",
                    a + 1,
                    b,
                    lines.len(),
                    lines[a..b].iter().map(|l| cut(l, 400)).collect::<Vec<_>>().join("\n")
                ));
            }
            if parts.is_empty() {
                // The words span lines: its start.
                parts.push(format!(
                    "[lines 1–{} of {}]\n{}",
                    lines.len().min(20),
                    lines.len(),
                    lines[..lines.len().min(20)].join("\n")
                ));
            }
            parts.join("\n")
        };
        let same = also
            .get(&i)
            .map(|ids| format!(" (the same words in {} too)", ids.join(", ")))
            .unwrap_or_default();
        let block = format!(
            "\n\n── entry {} · {} · {}{when}{same} ──\n{}",
            c.id,
            c.what,
            c.why,
            body.trim_end()
        );
        if out.chars().count() + block.chars().count() > room && shown > 0 {
            not_shown.push(&c.id);
            continue;
        }
        if out.chars().count() + block.chars().count() > room {
            // The newest match alone is over the room: its start.
            let head: String = block
                .chars()
                .take(room.saturating_sub(out.chars().count() + 60))
                .collect();
            out.push_str(&head);
            out.push_str("\n[cut here: the rest of this message is longer than a recall answer holds]");
        } else {
            out.push_str(&block);
        }
        shown += 1;
    }
    if !not_shown.is_empty() {
        let named: Vec<&str> = not_shown.iter().take(12).copied().collect();
        out.push_str(&format!(
            "\n\n({} not shown, older: {}{}. A narrower query shows them.)",
            units::plural(not_shown.len() as u64, "more match", "more matches"),
            named.join(", "),
            if not_shown.len() > named.len() { ", …" } else { "" }
        ));
    }
    Recalled {
        text: out,
        matches: hits.len(),
        shown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cand(id: &str, text: &str, t: f64) -> Candidate {
        Candidate {
            id: id.into(),
            what: "user".into(),
            time: t,
            why: LEFT_OUT,
            text: text.into(),
        }
    }

    #[test]
    fn phrases_first_newest_first_and_within_the_room() {
        let c = vec![
            cand("a1", "The account id is ACCT-77812.", 1.0),
            cand("a2", "id for the ACCOUNT: see ACCT-77812 again", 2.0),
            cand("a3", "nothing here", 3.0),
        ];
        let r = recall(&c, "account id", 10_000);
        assert_eq!((r.matches, r.shown), (2, 2));
        // The phrase before the words, whatever their age.
        let a1 = r.text.find("entry a1").unwrap();
        let a2 = r.text.find("entry a2").unwrap();
        assert!(a1 < a2, "{}", r.text);
        let r = recall(&c, "acct-77812", 10_000);
        assert!(r.text.find("entry a2").unwrap() < r.text.find("entry a1").unwrap());
        // A small room: the newest, and the rest named.
        let r = recall(&c, "ACCT-77812", 150);
        assert_eq!(r.shown, 1);
        assert!(r.text.contains("(1 more match not shown, older: a1."), "{}", r.text);
        let r = recall(&c, "GW-504", 10_000);
        assert_eq!(r.matches, 0);
        assert!(r.text.starts_with("Nothing of the earlier conversation"), "{}", r.text);
    }

    #[test]
    fn a_long_output_is_given_as_the_lines_around_its_match() {
        let mut lines: Vec<String> = (0..500).map(|i| format!("INFO row {i} ok")).collect();
        lines[321] = "ERROR gateway timeout after 30s (code GW-504)".into();
        let c = vec![cand("r1", &lines.join("\n"), 1.0)];
        let r = recall(&c, "gw-504", 10_000);
        assert!(r.text.contains("[lines 320–324 of 500]\nINFO row 319 ok\nINFO row 320 ok\nERROR gateway timeout after 30s (code GW-504)\nINFO row 322 ok\nINFO row 323 ok"), "{}", r.text);
    }

    #[test]
    fn candidates_are_what_is_not_sent_whole() {
        let msgs = vec![
            json!({"role": "user", "content": "keep ACCT-77812", "timestamp": 1}),
            json!({"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "cat a.log"}}], "timestamp": 2}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": [{"type": "text", "text": "ERROR x"}], "timestamp": 3}),
            json!({"role": "user", "content": "now", "timestamp": 4}),
        ];
        let c = candidates_of_messages(&msgs, &|i| if i >= 3 { Sending::Whole } else { Sending::Not });
        assert_eq!(c.len(), 3);
        assert_eq!(c[2].what, "bash output (cat a.log)");
        assert_eq!(c[1].text, "[calls bash {\"command\":\"cat a.log\"}]");
    }
}
