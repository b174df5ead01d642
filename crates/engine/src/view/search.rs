//! Search inside sessions: a query matches the *decoded* text of an entry (JSON escapes
//! resolved, so a query with a newline or a quote matches what the user saw), never the JSON
//! around it. The store scans files at the byte level with ripgrep's searcher for lines that
//! may match ([`Query::line_pattern`]: the query as Pi's JSON writes it), and only those lines
//! are decoded here and checked for real.

use serde_json::Value;

/// Which entries to search, by who wrote them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleFilter {
    User,
    Assistant,
    /// Tool results and `!` bash executions.
    Tool,
}

impl RoleFilter {
    pub fn parse(s: &str) -> Option<RoleFilter> {
        match s {
            "user" => Some(RoleFilter::User),
            "assistant" => Some(RoleFilter::Assistant),
            "tool" => Some(RoleFilter::Tool),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Query {
    /// Matches decoded text.
    decoded: regex::Regex,
    /// A regex over raw JSON lines that matches every line the query can match (`None`: every
    /// line must be decoded, for a regex that could match an escaped character).
    line_pattern: Option<String>,
    pub case_insensitive: bool,
    pub role: Option<RoleFilter>,
}

/// JSON.stringify's escaping of a string's characters (without the quotes): how the text sits
/// in a line Pi wrote.
fn json_escaped(s: &str) -> String {
    let q = serde_json::to_string(s).unwrap_or_default();
    q[1..q.len().saturating_sub(1).max(1)].to_string()
}

/// Regex syntax that can match `"`, `\` or a control character: such a regex is checked on
/// decoded text only (its raw form would miss the escaped characters).
fn may_match_escaped(pattern: &str) -> bool {
    const RISKY: [&str; 14] = [
        "\\n", "\\r", "\\t", "\\s", "\\S", "\\W", "\\D", "\\p", "\\P", "\\x", "\\u", "\\\\", "[^", "\"",
    ];
    pattern.contains('.') || RISKY.iter().any(|r| pattern.contains(r))
}

/// Why the text typed is no query.
#[derive(Debug, Clone, thiserror::Error)]
pub enum QueryError {
    #[error("the query is empty")]
    Empty,
    #[error("not a valid regex: {0}")]
    BadRegex(#[from] regex::Error),
}

impl Query {
    /// `text` as typed: a literal, or with `regex` a regular expression. Smart case: any capital
    /// letter in it makes the search case-sensitive.
    pub fn new(text: &str, regex: bool, role: Option<RoleFilter>) -> Result<Query, QueryError> {
        if text.is_empty() {
            return Err(QueryError::Empty);
        }
        let case_insensitive = !text.chars().any(char::is_uppercase);
        let flags = if case_insensitive { "(?i)" } else { "" };
        let source = if regex { text.to_string() } else { regex::escape(text) };
        let decoded = regex::Regex::new(&format!("{flags}{source}"))?;
        let line_pattern = if regex {
            (!may_match_escaped(text)).then(|| format!("{flags}{text}"))
        } else {
            Some(format!("{flags}{}", regex::escape(&json_escaped(text))))
        };
        Ok(Query {
            decoded,
            line_pattern,
            case_insensitive,
            role,
        })
    }

    /// What matches in decoded text (the detail pane highlights with it).
    pub fn decoded(&self) -> &regex::Regex {
        &self.decoded
    }

    /// The byte-level pattern for the line scan (regex syntax), if there is one.
    pub fn line_pattern(&self) -> Option<&str> {
        self.line_pattern.as_deref()
    }
}

/// One entry that matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub entry_id: String,
    /// `user`, `assistant`, `toolResult`, `bashExecution`, `compaction`, `branch_summary`, …
    pub role: String,
    pub timestamp: String,
    /// The text around the first match, on one line.
    pub snippet: String,
    /// The match inside `snippet`, in bytes.
    pub at: std::ops::Range<usize>,
    /// Matches in the entry's text.
    pub matches: usize,
    /// 1-based line in the file.
    pub line: u64,
}

/// The searchable texts of an entry, with its role; `None` for entries without text.
fn texts(v: &Value) -> Option<(String, Vec<String>)> {
    let text_blocks = |c: &Value, out: &mut Vec<String>| match c {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => {
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => out.extend(b["text"].as_str().map(String::from)),
                    Some("thinking") => out.extend(b["thinking"].as_str().map(String::from)),
                    Some("toolCall") => {
                        out.extend(b["name"].as_str().map(String::from));
                        if !b["arguments"].is_null() {
                            out.push(b["arguments"].to_string());
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    };
    let mut out = Vec::new();
    let role = match v["type"].as_str()? {
        "message" => {
            let m = &v["message"];
            let role = m["role"].as_str().unwrap_or("message").to_string();
            if role == "bashExecution" {
                out.extend(m["command"].as_str().map(String::from));
                out.extend(m["output"].as_str().map(String::from));
            } else {
                text_blocks(&m["content"], &mut out);
            }
            role
        }
        "compaction" | "branch_summary" => {
            out.extend(v["summary"].as_str().map(String::from));
            v["type"].as_str()?.to_string()
        }
        "custom_message" => {
            text_blocks(&v["content"], &mut out);
            v["customType"].as_str().unwrap_or("custom_message").to_string()
        }
        // What the model gets instead of a message: text the user wrote or bonsai made.
        "context_edit" => {
            text_blocks(&v["replacement"]["content"], &mut out);
            "context_edit".to_string()
        }
        _ => return None,
    };
    Some((role, out))
}

fn role_passes(filter: Option<RoleFilter>, role: &str) -> bool {
    match filter {
        None => true,
        Some(RoleFilter::User) => role == "user",
        Some(RoleFilter::Assistant) => role == "assistant",
        Some(RoleFilter::Tool) => role == "toolResult" || role == "bashExecution",
    }
}

/// Bytes of context on each side of a match in a snippet.
const CONTEXT: usize = 60;

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The snippet around `m` in `text`, on one line, and where the match is in it.
fn snippet(text: &str, m: std::ops::Range<usize>) -> (String, std::ops::Range<usize>) {
    let start = floor_char(text, m.start.saturating_sub(CONTEXT));
    let end = ceil_char(text, (m.end + CONTEXT).min(text.len()));
    let one_line = |s: &str| s.replace(['\n', '\r', '\t'], " ");
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(&one_line(&text[start..m.start]));
    let a = out.len();
    out.push_str(&one_line(&text[m.clone()]));
    let b = out.len();
    out.push_str(&one_line(&text[m.end..end]));
    if end < text.len() {
        out.push('…');
    }
    (out, a..b)
}

/// A JSON value read as text when it is a string (borrowed from the line unless it has
/// escapes), anything else skipped: the partial decode below reads only what search needs.
#[derive(Default)]
struct Text<'a>(Option<std::borrow::Cow<'a, str>>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Some(std::borrow::Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Some(std::borrow::Cow::Owned(v.to_string()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Some(std::borrow::Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_unit<E>(self) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_none<E>(self) -> Result<Text<'de>, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Text<'de>, A::Error> {
                while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Text<'de>, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Text(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// The fields of an entry line that search reads, in one pass; every other field is skipped
/// unbuilt.
#[derive(serde::Deserialize)]
struct EntryView<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    id: Text<'a>,
    #[serde(borrow, default)]
    timestamp: Text<'a>,
    #[serde(borrow, default)]
    message: Option<MessageView<'a>>,
    #[serde(borrow, default)]
    summary: Text<'a>,
    #[serde(rename = "customType", borrow, default)]
    custom_type: Text<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
}

#[derive(serde::Deserialize)]
struct MessageView<'a> {
    #[serde(borrow, default)]
    role: Text<'a>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(borrow, default)]
    command: Text<'a>,
    #[serde(borrow, default)]
    output: Text<'a>,
}

#[derive(serde::Deserialize)]
struct BlockView<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Text<'a>,
    #[serde(borrow, default)]
    text: Text<'a>,
    #[serde(borrow, default)]
    thinking: Text<'a>,
    #[serde(borrow, default)]
    name: Text<'a>,
    #[serde(borrow, default)]
    arguments: Option<&'a serde_json::value::RawValue>,
}

/// A message's content: a string, or blocks (read in the same pass), or anything else.
#[derive(Default)]
enum Content<'a> {
    #[default]
    None,
    Text(std::borrow::Cow<'a, str>),
    Blocks(Vec<BlockView<'a>>),
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Content<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("message content")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Content<'de>, E> {
                Ok(Content::Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Content<'de>, E> {
                Ok(Content::Text(std::borrow::Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Content<'de>, E> {
                Ok(Content::Text(std::borrow::Cow::Owned(v)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Content<'de>, A::Error> {
                let mut v = Vec::new();
                while let Some(b) = a.next_element::<BlockView>()? {
                    v.push(b);
                }
                Ok(Content::Blocks(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Content<'de>, A::Error> {
                while a
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Content::None)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
            fn visit_unit<E>(self) -> Result<Content<'de>, E> {
                Ok(Content::None)
            }
        }
        d.deserialize_any(V)
    }
}

/// `texts` on a raw line without building it into a `Value`: (id, timestamp, role, texts).
/// `None` when the line is not of the shapes read here (then the whole-value path decides).
#[allow(clippy::type_complexity)]
fn texts_borrowed(raw: &[u8]) -> Option<(String, String, String, Vec<std::borrow::Cow<'_, str>>)> {
    use std::borrow::Cow;
    let line = std::str::from_utf8(raw).ok()?;
    let e: EntryView = serde_json::from_str(line).ok()?;
    fn blocks<'a>(c: Content<'a>, out: &mut Vec<Cow<'a, str>>) -> Option<()> {
        match c {
            Content::Text(t) => out.push(t),
            Content::Blocks(bs) => {
                for b in bs {
                    match b.kind.0.as_deref() {
                        Some("text") => out.extend(b.text.0),
                        Some("thinking") => out.extend(b.thinking.0),
                        Some("toolCall") => {
                            out.extend(b.name.0);
                            // As the whole-value path writes them: compact JSON of the value.
                            if let Some(a) = b.arguments.filter(|a| a.get() != "null") {
                                out.push(Cow::Owned(serde_json::from_str::<Value>(a.get()).ok()?.to_string()));
                            }
                        }
                        _ => {}
                    }
                }
            }
            Content::None => {}
        }
        Some(())
    }
    let mut out = Vec::new();
    let role = match e.kind.0.as_deref()? {
        "message" => {
            let m = e.message?;
            let role = m.role.0.as_deref().unwrap_or("message").to_string();
            if role == "bashExecution" {
                out.extend(m.command.0);
                out.extend(m.output.0);
            } else {
                blocks(m.content, &mut out)?;
            }
            role
        }
        k @ ("compaction" | "branch_summary") => {
            out.extend(e.summary.0);
            k.to_string()
        }
        "custom_message" => {
            blocks(e.content, &mut out)?;
            e.custom_type.0.as_deref().unwrap_or("custom_message").to_string()
        }
        _ => return None,
    };
    let id = e.id.0.map(|c| c.into_owned()).unwrap_or_default();
    let ts = e.timestamp.0.map(|c| c.into_owned()).unwrap_or_default();
    Some((id, ts, role, out))
}

/// The hit in one raw line of a session, if the query matches its decoded text. The line is
/// decoded only as far as search needs (a dense query decodes most lines: building each into a
/// whole `Value` cost ~7 µs a hit); a line of another shape goes the whole-value way.
pub fn hit_in_line(raw: &[u8], line: u64, q: &Query) -> Option<Hit> {
    match texts_borrowed(raw) {
        Some((id, ts, role, texts)) => hit_in_texts(id, ts, role, &texts, line, q),
        None => hit_in_value(raw, line, q),
    }
}

fn hit_in_texts(
    entry_id: String,
    timestamp: String,
    role: String,
    texts: &[std::borrow::Cow<'_, str>],
    line: u64,
    q: &Query,
) -> Option<Hit> {
    if !role_passes(q.role, &role) {
        return None;
    }
    let mut first = None;
    let mut matches = 0;
    for t in texts {
        for m in q.decoded.find_iter(t) {
            if first.is_none() {
                first = Some(snippet(t, m.range()));
            }
            matches += 1;
        }
    }
    let (snippet, at) = first?;
    Some(Hit {
        entry_id,
        role,
        timestamp,
        snippet,
        at,
        matches,
        line,
    })
}

/// [`hit_in_line`] through a whole `Value` (any shape of line).
fn hit_in_value(raw: &[u8], line: u64, q: &Query) -> Option<Hit> {
    let v: Value = serde_json::from_slice(raw).ok()?;
    let (role, texts) = texts(&v)?;
    if !role_passes(q.role, &role) {
        return None;
    }
    let mut first = None;
    let mut matches = 0;
    for t in &texts {
        for m in q.decoded.find_iter(t) {
            if first.is_none() {
                first = Some(snippet(t, m.range()));
            }
            matches += 1;
        }
    }
    let (snippet, at) = first?;
    Some(Hit {
        entry_id: v["id"].as_str().unwrap_or("").to_string(),
        role,
        timestamp: v["timestamp"].as_str().unwrap_or("").to_string(),
        snippet,
        at,
        matches,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(content: &str, role: &str) -> String {
        serde_json::json!({"type":"message","id":"e1","parentId":null,"timestamp":"2026-11-20T09:00:00.000Z",
            "message":{"role":role,"content":[{"type":"text","text":content}]}})
        .to_string()
    }

    fn raw_match(q: &Query, raw: &str) -> bool {
        match q.line_pattern() {
            Some(p) => regex::Regex::new(p).unwrap().is_match(raw),
            None => true,
        }
    }

    #[test]
    fn a_query_with_a_newline_or_a_quote_matches_the_decoded_text() {
        let raw = line("first line\nsecond \"quoted\" C:\\path", "user");
        for q in ["line\nsecond", "\"quoted\"", "C:\\path"] {
            let query = Query::new(q, false, None).unwrap();
            assert!(raw_match(&query, &raw), "{q:?} must pass the line scan");
            let h = hit_in_line(raw.as_bytes(), 7, &query).unwrap_or_else(|| panic!("{q:?}"));
            assert_eq!(h.entry_id, "e1");
            assert_eq!(h.line, 7);
        }
        // The JSON around the text is not searched.
        assert!(hit_in_line(raw.as_bytes(), 1, &Query::new("parentId", false, None).unwrap()).is_none());
    }

    /// Issue 21, item 17: the text a context edit gives the model instead of a message was
    /// never found.
    #[test]
    fn a_context_edits_replacement_text_is_searched() {
        let raw = r#"{"type":"context_edit","id":"ce01","parentId":"e1","timestamp":"2026-11-20T09:00:00.000Z","targetId":"e0","replacement":{"content":[{"type":"text","text":"[output pruned: 1,200 tokens of grep results]"}]}}"#;
        let h = hit_in_line(raw.as_bytes(), 3, &Query::new("grep results", false, None).unwrap()).unwrap();
        assert_eq!((h.entry_id.as_str(), h.role.as_str()), ("ce01", "context_edit"));
        let hidden = r#"{"type":"context_edit","id":"ce02","parentId":"e1","timestamp":"2026-11-20T09:00:00.000Z","targetId":"e0","replacement":null}"#;
        assert!(hit_in_line(hidden.as_bytes(), 4, &Query::new("e0", false, None).unwrap()).is_none());
    }

    #[test]
    fn smart_case_regex_and_roles() {
        let raw = line("Fix the Rounding in ledger.py", "assistant");
        assert!(hit_in_line(raw.as_bytes(), 1, &Query::new("rounding", false, None).unwrap()).is_some());
        assert!(
            hit_in_line(raw.as_bytes(), 1, &Query::new("rounding", false, None).unwrap())
                .is_some_and(|h| h.snippet == "Fix the Rounding in ledger.py" && h.at == (8..16))
        );
        assert!(hit_in_line(raw.as_bytes(), 1, &Query::new("ROUNDING", false, None).unwrap()).is_none());
        assert!(hit_in_line(raw.as_bytes(), 1, &Query::new("Rounding", false, None).unwrap()).is_some());
        let re = Query::new(r"ledger\.(py|rs)", true, None).unwrap();
        assert!(re.line_pattern().is_none(), "a dot could match an escaped character");
        assert!(hit_in_line(raw.as_bytes(), 1, &re).is_some());
        let re = Query::new(r"round(ing|ed)", true, None).unwrap();
        assert!(re.line_pattern().is_some());
        assert!(
            hit_in_line(
                raw.as_bytes(),
                1,
                &Query::new("fix", false, Some(RoleFilter::User)).unwrap()
            )
            .is_none()
        );
        assert!(
            hit_in_line(
                raw.as_bytes(),
                1,
                &Query::new("fix", false, Some(RoleFilter::Assistant)).unwrap()
            )
            .is_some()
        );
        assert!(Query::new("(", true, None).is_err());
    }

    #[test]
    fn the_partial_decode_finds_what_the_whole_value_finds() {
        let q = Query::new("e", false, None).unwrap();
        let lines = [
            line("plain text with an e", "user"),
            line("escaped \"quote\" and\nnewline é", "assistant"),
            r#"{"type":"message","id":"b1","timestamp":"t","message":{"role":"bashExecution","command":"ls -e","output":"out e","exitCode":0}}"#.to_string(),
            r#"{"type":"message","id":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm e"},{"type":"toolCall","id":"x","name":"read","arguments":{"path":"e.rs","limit":2.5}},{"type":"image","data":"eee"}]}}"#.to_string(),
            r#"{"type":"compaction","id":"c1","timestamp":"t","summary":"sum e","firstKeptEntryId":"a1"}"#.to_string(),
            r#"{"type":"custom_message","id":"m1","timestamp":"t","customType":"note","content":"note e"}"#.to_string(),
            r#"{"type":"message","id":"n1","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":7},{"type":"text","text":"seven e"}]}}"#.to_string(),
            r#"{"type":"message","id":"n2","timestamp":5,"message":{"role":"user","content":"e"}}"#.to_string(),
        ];
        for l in &lines {
            assert!(texts_borrowed(l.as_bytes()).is_some(), "the fast path reads {l}");
            assert_eq!(
                hit_in_line(l.as_bytes(), 3, &q),
                hit_in_value(l.as_bytes(), 3, &q),
                "{l}"
            );
        }
        // Shapes the fast path leaves to the whole value: the same answer either way.
        let odd = r#"{"type":"message","id":"d","message":{"role":"user","content":"e"},"id":"dup"}"#;
        assert_eq!(hit_in_line(odd.as_bytes(), 1, &q), hit_in_value(odd.as_bytes(), 1, &q));
    }

    #[test]
    fn snippets_stay_on_char_boundaries_and_one_line() {
        let text = format!("{}needle\n{}", "é".repeat(100), "ü".repeat(100));
        let raw = line(&text, "user");
        let h = hit_in_line(raw.as_bytes(), 1, &Query::new("needle", false, None).unwrap()).unwrap();
        assert_eq!(&h.snippet[h.at.clone()], "needle");
        assert!(!h.snippet.contains('\n'));
        assert!(h.snippet.starts_with('…') && h.snippet.ends_with('…'));
    }
}
