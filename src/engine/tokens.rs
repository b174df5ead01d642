//! Exact token counts (tiktoken o200k, or cl100k for older OpenAI models) next to Pi's
//! chars/4 estimate. Counting is slow (~19 MB/s), so callers run it off the hot path and keep
//! the results in a `TokenCache`.

use super::context::{self, ContextMessage, Part};
use super::js;
use super::session::Session;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    O200k,
    Cl100k,
}

impl Encoding {
    /// o200k for current models; cl100k where the session runs an older OpenAI model.
    pub fn for_model(provider: Option<&str>, model: Option<&str>) -> Encoding {
        let m = model.unwrap_or("");
        let openai_like = matches!(provider, Some("openai") | Some("azure-openai-responses") | None);
        let old = m.starts_with("gpt-3.5")
            || (m.starts_with("gpt-4") && !m.starts_with("gpt-4o") && !m.starts_with("gpt-4.1"));
        if openai_like && old {
            Encoding::Cl100k
        } else {
            Encoding::O200k
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Encoding::O200k => "o200k_base",
            Encoding::Cl100k => "cl100k_base",
        }
    }
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        match self {
            Encoding::O200k => tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len(),
        }
    }
}

/// The text a message puts in front of the model, in the parts Pi's estimate counts:
/// text, thinking, tool-call names and arguments, summaries, system prompt sections and tool
/// schemas. Images are left out (they are priced per image, not per token of base64).
pub fn message_text(v: &Value) -> String {
    let mut out = String::new();
    let push = |out: &mut String, s: &str| {
        if !out.is_empty() && !s.is_empty() {
            out.push('\n');
        }
        out.push_str(s);
    };
    let role = v.get("role").and_then(|r| r.as_str()).unwrap_or("");
    match role {
        "bashExecution" => {
            push(&mut out, v.get("command").and_then(|c| c.as_str()).unwrap_or(""));
            push(&mut out, v.get("output").and_then(|c| c.as_str()).unwrap_or(""));
        }
        "branchSummary" | "compactionSummary" => {
            push(&mut out, v.get("summary").and_then(|c| c.as_str()).unwrap_or(""))
        }
        _ => {
            match v.get("content") {
                Some(Value::String(s)) => push(&mut out, s),
                Some(Value::Array(a)) => {
                    for b in a {
                        match b.get("type").and_then(|t| t.as_str()) {
                            Some("text") => push(&mut out, b.get("text").and_then(|t| t.as_str()).unwrap_or("")),
                            Some("thinking") => {
                                push(&mut out, b.get("thinking").and_then(|t| t.as_str()).unwrap_or(""))
                            }
                            Some("toolCall") => {
                                push(&mut out, b.get("name").and_then(|t| t.as_str()).unwrap_or(""));
                                if let Some(a) = b.get("arguments") {
                                    push(&mut out, &js::stringify(a));
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            if let Some(Value::Object(sec)) = v.get("sections") {
                for s in sec.values().filter_map(|s| s.as_str()) {
                    push(&mut out, s);
                }
            }
            if let Some(t) = v.get("toolsAdded").filter(|t| !t.is_null()) {
                push(&mut out, &js::stringify(t));
            }
        }
    }
    out
}

/// Exact counts per (entry, part, edit), shared between the UI and background workers.
#[derive(Debug, Default)]
pub struct TokenCache {
    map: Mutex<HashMap<(usize, u8, Option<usize>, Encoding), u64>>,
}

fn part_key(p: Part) -> u8 {
    match p {
        Part::Main => 0,
        Part::CompactionSystem => 1,
        Part::CompactionSummary => 2,
    }
}

impl TokenCache {
    pub fn get(&self, m: &ContextMessage, enc: Encoding) -> Option<u64> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(m.source, part_key(m.part), m.replaced_by, enc))
            .copied()
    }

    /// Count every message not yet cached (in parallel) and return all counts in order.
    pub fn count_all(&self, s: &Session, msgs: &[&ContextMessage], enc: Encoding) -> Vec<u64> {
        use rayon::prelude::*;
        let missing: Vec<&ContextMessage> = msgs.iter().copied().filter(|m| self.get(m, enc).is_none()).collect();
        let counted: Vec<((usize, u8, Option<usize>, Encoding), u64)> = missing
            .par_iter()
            .map(|m| {
                let text = message_text(&context::materialize(s, m));
                (
                    (m.source, part_key(m.part), m.replaced_by, enc),
                    enc.count(&text) as u64,
                )
            })
            .collect();
        let mut map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.extend(counted);
        msgs.iter()
            .map(|m| {
                map.get(&(m.source, part_key(m.part), m.replaced_by, enc))
                    .copied()
                    .unwrap_or(0)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_count_offline() {
        assert_eq!(Encoding::O200k.count("hello world"), 2);
        assert!(Encoding::Cl100k.count("fn main() { println!(\"hi\"); }") > 5);
        assert_eq!(
            Encoding::for_model(Some("openai"), Some("gpt-4-turbo")),
            Encoding::Cl100k
        );
        assert_eq!(Encoding::for_model(Some("openai"), Some("gpt-4o")), Encoding::O200k);
        assert_eq!(
            Encoding::for_model(Some("anthropic"), Some("claude-sonnet-4-5")),
            Encoding::O200k
        );
    }
}
