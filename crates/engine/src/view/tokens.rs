//! Exact token counts (tiktoken o200k, or cl100k for older OpenAI models) next to Pi's
//! chars/4 estimate. Counting is slow (~19 MB/s), so callers run it off the hot path and keep
//! the results in a `TokenCache`.

use crate::load::js;
use crate::load::session::Session;
use crate::view::context::{self, ContextMessage, Part};
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
    /// The exact count, in linear time: long text goes to the tokenizer in bounded pieces (see
    /// [`PIECE`]).
    pub fn count(&self, text: &str) -> usize {
        let mut total = 0;
        let mut start = 0;
        while start < text.len() {
            let (end, natural) = cut_point(text, start, PIECE);
            if natural {
                total += self.count_piece(&text[start..end]);
            } else {
                // No natural cut in the whole window: one enormous "word", counted in small
                // pieces (merging is superlinear in a piece's length; each cut can move the
                // count by a token).
                let mut a = start;
                while a < end {
                    let mut b = (a + HARD_PIECE).min(end);
                    while !text.is_char_boundary(b) {
                        b += 1;
                    }
                    total += self.count_piece(&text[a..b]);
                    a = b;
                }
            }
            start = end;
        }
        total
    }

    fn count_piece(&self, text: &str) -> usize {
        match self {
            Encoding::O200k => tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len(),
        }
    }
}

/// Text at most this long goes to the tokenizer whole. Byte-pair merging inside one of the
/// tokenizer's pre-tokens is quadratic in its length (a 20 MB run of one character took 40 s
/// and 1.1 GB), so longer text is cut where the tokenizer's own pre-tokenizer cuts anyway —
/// the start of a line that begins with a non-space after a newline, or a single space between
/// a non-space and a letter — which keeps the count exact. Only a stretch with neither in
/// `PIECE` bytes (one enormous "word") is cut into small pieces at character boundaries; each
/// such cut can move the count by a token.
pub const PIECE: usize = 4 * 1024;

/// Where the piece starting at `start` ends, and whether it ends at a natural cut (else the
/// window has none and is cut by the caller).
fn cut_point(text: &str, start: usize, max: usize) -> (usize, bool) {
    if text.len() - start <= max {
        return (text.len(), true);
    }
    let mut end = start + max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let b = text.as_bytes();
    let window = &b[start..end];
    // A line start after a newline, the line beginning with a non-space.
    for k in (1..window.len()).rev() {
        if window[k - 1] == b'\n' && !window[k].is_ascii_whitespace() && window[k] < 0x80 {
            return (start + k, true);
        }
    }
    // A single space between a non-space and a letter (the space begins the next word).
    for k in (1..window.len().saturating_sub(1)).rev() {
        if window[k] == b' ' && !window[k - 1].is_ascii_whitespace() && window[k + 1].is_ascii_alphabetic() {
            return (start + k, true);
        }
    }
    (end, false)
}

/// Where a stretch without a natural cut is cut.
const HARD_PIECE: usize = 256;

/// What one image counts for in an exact count: Pi's own estimate (`IMAGE_CHARS` / 4). A
/// tokenizer reads no image (the base64 is not sent as text), and what a provider charges
/// depends on the image's size, which the session does not record; counting nothing made a
/// screenshot's message 7 tokens beside Pi's 1,207.
pub const IMAGE_TOKENS: u64 = (crate::load::entry::IMAGE_CHARS / 4) as u64;

/// Image blocks in a message's content.
pub fn images_in(v: &Value) -> usize {
    v.get("content")
        .and_then(|c| c.as_array())
        .map(|a| {
            a.iter()
                .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("image"))
                .count()
        })
        .unwrap_or(0)
}

/// The exact count of a message: its text by the tokenizer, each image as Pi estimates it.
pub fn exact_count(enc: Encoding, v: &Value) -> u64 {
    enc.count(&message_text(v)) as u64 + images_in(v) as u64 * IMAGE_TOKENS
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

    /// How many of `msgs` are not counted yet.
    pub fn missing(&self, msgs: &[ContextMessage], enc: Encoding) -> usize {
        let map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        msgs.iter()
            .filter(|m| !map.contains_key(&(m.source, part_key(m.part), m.replaced_by, enc)))
            .count()
    }

    /// Count every message not yet cached (in parallel) and return all counts in order.
    pub fn count_all(&self, s: &Session, msgs: &[&ContextMessage], enc: Encoding) -> Vec<u64> {
        use rayon::prelude::*;
        let missing: Vec<&ContextMessage> = msgs.iter().copied().filter(|m| self.get(m, enc).is_none()).collect();
        let counted: Vec<((usize, u8, Option<usize>, Encoding), u64)> = missing
            .par_iter()
            .map(|m| {
                (
                    (m.source, part_key(m.part), m.replaced_by, enc),
                    exact_count(enc, &context::materialize(s, m)),
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

    /// Cutting long text where the pre-tokenizer cuts anyway keeps the count exact.
    #[test]
    fn long_text_counts_the_same_in_pieces() {
        let para = "fn main() {\n    let total = items.iter().map(|x| x.price * x.qty).sum::<u64>();\n    println!(\"{total}\");\n}\n\nThe importer splits each line on commas, so a quoted \"a,b\" field becomes two columns. ";
        let text: String = (0..400).map(|i| format!("{i}: {para}")).collect();
        assert!(text.len() > 4 * PIECE);
        let one_line = text.replace('\n', " ");
        for t in [&text, &one_line] {
            for enc in [Encoding::O200k, Encoding::Cl100k] {
                assert_eq!(enc.count(t), enc.count_piece(t), "{enc:?}");
            }
        }
    }

    /// One enormous run: cut into pieces (whole, it took seconds: `benches/engine.rs` holds the
    /// speed), and off by at most a token per cut.
    #[test]
    fn a_huge_run_of_one_character_is_counted_in_pieces() {
        let run = "a".repeat(1_000_000);
        let n = Encoding::O200k.count(&run);
        let cuts = run.len() / HARD_PIECE;
        let per_piece = Encoding::O200k.count_piece(&run[..HARD_PIECE]);
        assert!(n >= per_piece * cuts && n <= per_piece * (cuts + 1) + cuts, "{n}");
    }
}
