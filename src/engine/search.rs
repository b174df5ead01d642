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

impl Query {
    /// `text` as typed: a literal, or with `regex` a regular expression. Smart case: any capital
    /// letter in it makes the search case-sensitive.
    pub fn new(text: &str, regex: bool, role: Option<RoleFilter>) -> Result<Query, String> {
        if text.is_empty() {
            return Err("the query is empty".into());
        }
        let case_insensitive = !text.chars().any(char::is_uppercase);
        let flags = if case_insensitive { "(?i)" } else { "" };
        let source = if regex { text.to_string() } else { regex::escape(text) };
        let decoded = regex::Regex::new(&format!("{flags}{source}")).map_err(|e| format!("not a valid regex: {e}"))?;
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

/// The hit in one raw line of a session, if the query matches its decoded text.
pub fn hit_in_line(raw: &[u8], line: u64, q: &Query) -> Option<Hit> {
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
    fn snippets_stay_on_char_boundaries_and_one_line() {
        let text = format!("{}needle\n{}", "é".repeat(100), "ü".repeat(100));
        let raw = line(&text, "user");
        let h = hit_in_line(raw.as_bytes(), 1, &Query::new("needle", false, None).unwrap()).unwrap();
        assert_eq!(&h.snippet[h.at.clone()], "needle");
        assert!(!h.snippet.contains('\n'));
        assert!(h.snippet.starts_with('…') && h.snippet.ends_with('…'));
    }
}
