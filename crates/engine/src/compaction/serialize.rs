//! The summary input: Pi's `convertToLlm` and `serializeConversation`, byte for byte, and
//! the file lists (`<read-files>` / `<modified-files>`) Pi appends to every summary.

use crate::load::js;
use serde_json::Value;

const COMPACTION_PREFIX: &str =
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_SUFFIX: &str = "\n</summary>";
const BRANCH_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_SUFFIX: &str = "</summary>";

/// Pi truncates tool results to this many UTF-16 units inside summary input.
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

fn str_field(v: &Value, k: &str) -> String {
    match v.get(k) {
        None | Some(Value::Null) => "undefined".into(),
        Some(x) => js::js_to_string(x),
    }
}

/// The user-visible text Pi gives a `bashExecution` message in model context.
pub fn bash_execution_text(m: &Value) -> String {
    let mut text = format!("Ran `{}`\n", str_field(m, "command"));
    if js::truthy(m.get("output")) {
        text.push_str(&format!("```\n{}\n```", str_field(m, "output")));
    } else {
        text.push_str("(no output)");
    }
    if js::truthy(m.get("cancelled")) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m.get("exitCode").filter(|c| !c.is_null())
        && !(code.as_f64() == Some(0.0))
    {
        text.push_str(&format!("\n\nCommand exited with code {}", js::js_to_string(code)));
    }
    if js::truthy(m.get("truncated")) && js::truthy(m.get("fullOutputPath")) {
        text.push_str(&format!(
            "\n\n[Output truncated. Full output: {}]",
            str_field(m, "fullOutputPath")
        ));
    }
    text
}

fn user_text(text: String, ts: Option<&Value>) -> Value {
    serde_json::json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts.cloned().unwrap_or(Value::Null)})
}

/// Pi's `convertToLlm`: custom roles become user messages; `!!` bash runs disappear.
pub fn convert_to_llm(messages: &[Value]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let role = m.get("role").and_then(|r| r.as_str()).unwrap_or("");
        match role {
            "bashExecution" => {
                if js::truthy(m.get("excludeFromContext")) {
                    continue;
                }
                out.push(user_text(bash_execution_text(m), m.get("timestamp")));
            }
            "custom" => {
                let content = match m.get("content") {
                    Some(Value::String(s)) => serde_json::json!([{"type": "text", "text": s}]),
                    Some(c) => c.clone(),
                    None => Value::Null,
                };
                out.push(serde_json::json!({"role": "user", "content": content, "timestamp": m.get("timestamp").cloned().unwrap_or(Value::Null)}));
            }
            "branchSummary" => out.push(user_text(
                format!("{BRANCH_PREFIX}{}{BRANCH_SUFFIX}", str_field(m, "summary")),
                m.get("timestamp"),
            )),
            "compactionSummary" => out.push(user_text(
                format!("{COMPACTION_PREFIX}{}{COMPACTION_SUFFIX}", str_field(m, "summary")),
                m.get("timestamp"),
            )),
            "system" | "user" | "assistant" | "toolResult" => out.push(m.clone()),
            _ => {}
        }
    }
    out
}

/// Whether `convertToLlm` keeps a message of this shape (for counting without converting).
pub fn kept_by_llm(role: &str, exclude_from_context: bool) -> bool {
    match role {
        "bashExecution" => !exclude_from_context,
        "custom" | "branchSummary" | "compactionSummary" | "system" | "user" | "assistant" | "toolResult" => true,
        _ => false,
    }
}

fn text_join(content: Option<&Value>, sep: &str) -> String {
    crate::view::context::content_text(content, sep)
}

/// Pi's `serializeConversation` over already converted messages, as `pi` writes it (0.87.1
/// adds `[Assistant thinking]:` parts and cuts a long tool result through a surrogate pair;
/// 1.5.2 does neither).
pub fn serialize_conversation(messages: &[Value], pi: crate::load::pi_version::PiVersion) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in messages {
        match m.get("role").and_then(|r| r.as_str()) {
            Some("user") => {
                let c = text_join(m.get("content"), "");
                if !c.is_empty() {
                    parts.push(format!("[User]: {c}"));
                }
            }
            Some("assistant") => {
                let blocks: &[Value] = m
                    .get("content")
                    .and_then(|c| c.as_array())
                    .map(|v| v.as_slice())
                    .unwrap_or(&[]);
                let mut thinking: Vec<String> = Vec::new();
                let mut calls: Vec<String> = Vec::new();
                for b in blocks {
                    match b.get("type").and_then(|t| t.as_str()) {
                        Some("thinking") => thinking.push(match b.get("thinking") {
                            None | Some(Value::Null) => String::new(),
                            Some(t) => js::js_to_string(t),
                        }),
                        Some("toolCall") => {
                            let args = match b.get("arguments") {
                                Some(Value::Object(o)) => js::js_key_order(o)
                                    .into_iter()
                                    .map(|(k, v)| format!("{k}={}", js::stringify(v)))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                Some(Value::String(s)) => s
                                    .chars()
                                    .enumerate()
                                    .map(|(i, c)| format!("{i}={}", js::stringify(&Value::String(c.to_string()))))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                Some(Value::Array(a)) => a
                                    .iter()
                                    .enumerate()
                                    .map(|(i, v)| format!("{i}={}", js::stringify(v)))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                                _ => String::new(),
                            };
                            calls.push(format!("{}({args})", str_field(b, "name")));
                        }
                        _ => {}
                    }
                }
                if !thinking.is_empty() && pi.serializes_thinking() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if blocks
                    .iter()
                    .any(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
                {
                    parts.push(format!("[Assistant]: {}", text_join(m.get("content"), "\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Some("toolResult") => {
                let c = text_join(m.get("content"), "");
                if !c.is_empty() {
                    parts.push(format!(
                        "[Tool result]: {}",
                        truncate_for_summary(&c, TOOL_RESULT_MAX_CHARS, pi)
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

fn truncate_for_summary(text: &str, max: usize, pi: crate::load::pi_version::PiVersion) -> String {
    let len = js::utf16_len(text);
    if len <= max {
        return text.to_string();
    }
    // The count is of what is cut at `max` either way (1.5.2 keeps a split character out of
    // the head but counts as 0.87.1 did).
    let head = if pi.truncates_whole_characters() {
        std::borrow::Cow::Borrowed(js::slice_utf16_whole(text, max))
    } else {
        js::slice_utf16(text, max)
    };
    format!("{head}\n\n[... {} more characters truncated]", len - max)
}

/// Pi's `FileOperations`: sets of paths (any JSON value Pi carried forward from details).
#[derive(Debug, Clone, Default)]
pub struct FileOps {
    pub read: Vec<Value>,
    pub written: Vec<Value>,
    pub edited: Vec<Value>,
    /// String members of each list, so adding stays linear on long histories.
    seen: [rustc_hash::FxHashSet<String>; 3],
}

impl FileOps {
    fn add(set: &mut Vec<Value>, seen: &mut rustc_hash::FxHashSet<String>, v: Value) {
        let new = match &v {
            Value::String(s) => seen.insert(s.clone()),
            other => !set.contains(other),
        };
        if new {
            set.push(v);
        }
    }
    pub fn add_read(&mut self, v: Value) {
        Self::add(&mut self.read, &mut self.seen[0], v)
    }
    pub fn add_written(&mut self, v: Value) {
        Self::add(&mut self.written, &mut self.seen[1], v)
    }
    pub fn add_edited(&mut self, v: Value) {
        Self::add(&mut self.edited, &mut self.seen[2], v)
    }
    pub fn add_tool_call(&mut self, name: &str, path: &str) {
        let p = Value::String(path.to_string());
        match name {
            "read" => self.add_read(p),
            "write" => self.add_written(p),
            "edit" => self.add_edited(p),
            _ => {}
        }
    }

    /// Pi's `computeFileLists`: read-only files and modified files, each sorted as
    /// JavaScript's default sort does (by UTF-16 code units of the string form).
    pub fn lists(&self) -> (Vec<Value>, Vec<Value>) {
        let mut modified: Vec<Value> = Vec::new();
        let mut modified_strings: rustc_hash::FxHashSet<&str> = Default::default();
        let in_modified = |modified: &Vec<Value>, strings: &rustc_hash::FxHashSet<&str>, v: &Value| match v {
            Value::String(s) => strings.contains(s.as_str()),
            other => modified.contains(other),
        };
        for v in self.edited.iter().chain(self.written.iter()) {
            if !in_modified(&modified, &modified_strings, v) {
                if let Value::String(s) = v {
                    modified_strings.insert(s);
                }
                modified.push(v.clone());
            }
        }
        let mut read: Vec<Value> = self
            .read
            .iter()
            .filter(|v| !in_modified(&modified, &modified_strings, v))
            .cloned()
            .collect();
        let key = |v: &Value| js::js_to_string(v);
        read.sort_by(|a, b| js::cmp_utf16(&key(a), &key(b)));
        modified.sort_by(|a, b| js::cmp_utf16(&key(a), &key(b)));
        (read, modified)
    }
}

/// Pi's `formatFileOperations`: the tags appended to a summary.
pub fn format_file_operations(read: &[String], modified: &[String]) -> String {
    let mut sections = Vec::new();
    if !read.is_empty() {
        sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
    }
    if !modified.is_empty() {
        sections.push(format!("<modified-files>\n{}\n</modified-files>", modified.join("\n")));
    }
    if sections.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", sections.join("\n\n"))
    }
}

/// Strings of a file list, for display and for the summary tags.
pub fn list_strings(v: &[Value]) -> Vec<String> {
    v.iter().map(js::js_to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::pi_version::PiVersion;
    use serde_json::json;

    #[test]
    fn bash_text_variants() {
        let m = json!({"role":"bashExecution","command":"ls","output":"a\nb","exitCode":2,"cancelled":false});
        assert_eq!(
            bash_execution_text(&m),
            "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"
        );
        let m = json!({"role":"bashExecution","command":"x","output":"","exitCode":0,"cancelled":true});
        assert_eq!(bash_execution_text(&m), "Ran `x`\n(no output)\n\n(command cancelled)");
    }

    #[test]
    fn tool_result_truncation_marker() {
        let long = "x".repeat(2005);
        let out = serialize_conversation(
            &[json!({"role":"toolResult","content":[{"type":"text","text":long}]})],
            Default::default(),
        );
        assert!(out.ends_with("\n\n[... 5 more characters truncated]"));
        assert_eq!(
            out.len(),
            "[Tool result]: ".len() + 2000 + "\n\n[... 5 more characters truncated]".len()
        );
    }

    #[test]
    fn tool_call_arguments_use_js_order_and_stringify() {
        let out = serialize_conversation(
            &[json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"hm"},
                {"type":"text","text":"ok"},
                {"type":"toolCall","name":"read","arguments":{"path":"a.rs","1":true,"limit":2.50}}
            ]})],
            PiVersion::V0_87_1,
        );
        assert_eq!(
            out,
            "[Assistant thinking]: hm\n\n[Assistant]: ok\n\n[Assistant tool calls]: read(1=true, path=\"a.rs\", limit=2.5)"
        );
    }

    #[test]
    fn pi_1_5_2_leaves_thinking_out_and_never_splits_a_character() {
        let m = json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"hm"},
            {"type":"text","text":"ok"}
        ]});
        assert_eq!(
            serialize_conversation(std::slice::from_ref(&m), PiVersion::V1_5_2),
            "[Assistant]: ok"
        );
        // An emoji (two UTF-16 units) across the 2,000-unit cut.
        let long = format!("{}😀tail", "a".repeat(1999));
        let r = |pi| {
            serialize_conversation(
                &[json!({"role":"toolResult","content":[{"type":"text","text":&long}]})],
                pi,
            )
        };
        let old = r(PiVersion::V0_87_1);
        let new = r(PiVersion::V1_5_2);
        // 0.87.1 keeps half the pair (Node writes it as U+FFFD); 1.5.2 leaves it out. Both
        // count what follows unit 2,000.
        assert!(old.contains(&format!(
            "{}\u{FFFD}\n\n[... 5 more characters truncated]",
            "a".repeat(1999)
        )));
        assert!(new.contains(&format!("{}\n\n[... 5 more characters truncated]", "a".repeat(1999))));
    }

    #[test]
    fn file_lists_dedupe_and_sort() {
        let mut f = FileOps::default();
        f.add_tool_call("read", "b.rs");
        f.add_tool_call("read", "a.rs");
        f.add_tool_call("edit", "b.rs");
        f.add_tool_call("write", "c.rs");
        let (r, m) = f.lists();
        assert_eq!(r, vec![json!("a.rs")]);
        assert_eq!(m, vec![json!("b.rs"), json!("c.rs")]);
    }
}
