//! Summary strategies: what each one summarizes, and how its parts become one compaction
//! summary in Pi's layout. The calls themselves are in `llm::strategies`; this is the pure part
//! (the input, the slices, the composition), shared by the CLI, the TUI and the tests.

use super::compaction::{self, CompactionPlan};
use super::recall;
use super::serialize;
use super::session::Session;
use super::slices::{self, SliceParams, Unit};
use super::summarize;
use rayon::prelude::*;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One call over everything, with Pi's limits (what the compact action does).
    SingleShot,
    /// Every slice at once, then one call that stitches their summaries together.
    ParallelStitch,
    /// Slice by slice, each call seeing every earlier slice's summary; the result is the slice
    /// summaries under `## Segment k`.
    SequentialAccumulated,
    /// Slice by slice, each call rewriting one running summary.
    SequentialRolling,
    /// Slice by slice, each call updating the previous summary in Pi's format (Pi's update
    /// flow, per slice).
    AnchoredIterative,
    /// bonsai's deterministic summarizer: free and instant.
    Offline,
}

impl Strategy {
    pub const ALL: [Strategy; 6] = [
        Strategy::SingleShot,
        Strategy::ParallelStitch,
        Strategy::SequentialAccumulated,
        Strategy::SequentialRolling,
        Strategy::AnchoredIterative,
        Strategy::Offline,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::SingleShot => "single-shot",
            Strategy::ParallelStitch => "parallel-stitch",
            Strategy::SequentialAccumulated => "sequential-accumulated",
            Strategy::SequentialRolling => "sequential-rolling",
            Strategy::AnchoredIterative => "anchored-iterative",
            Strategy::Offline => "offline",
        }
    }

    /// A short name, where the full ones do not fit side by side (the TUI's tabs).
    pub fn short(self) -> &'static str {
        match self {
            Strategy::SingleShot => "single",
            Strategy::ParallelStitch => "stitch",
            Strategy::SequentialAccumulated => "accumulated",
            Strategy::SequentialRolling => "rolling",
            Strategy::AnchoredIterative => "anchored",
            Strategy::Offline => "offline",
        }
    }

    /// One line on what it does (help, the TUI's chooser).
    pub fn about(self) -> &'static str {
        match self {
            Strategy::SingleShot => "one call over everything, Pi's limits",
            Strategy::ParallelStitch => "slices at once, then one stitch call",
            Strategy::SequentialAccumulated => "slice by slice, each sees the earlier summaries",
            Strategy::SequentialRolling => "slice by slice, one running summary rewritten",
            Strategy::AnchoredIterative => "slice by slice, Pi's update of the previous summary",
            Strategy::Offline => "bonsai's deterministic summary, no model",
        }
    }

    pub fn parse(s: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|x| x.name() == s.trim())
    }

    /// Whether it calls a model.
    pub fn is_llm(self) -> bool {
        self != Strategy::Offline
    }

    /// Whether it summarizes the history in slices.
    pub fn is_sliced(self) -> bool {
        !matches!(self, Strategy::SingleShot | Strategy::Offline)
    }
}

/// `a,b,c` (or `all`) as strategies, each once, in the order given.
pub fn parse_list(list: &str) -> Result<Vec<Strategy>, String> {
    if list.trim() == "all" {
        return Ok(Strategy::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let s = Strategy::parse(name).ok_or_else(|| {
            format!(
                "unknown strategy `{name}` (known: {})",
                Strategy::ALL.map(|s| s.name()).join(", ")
            )
        })?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    if out.is_empty() {
        return Err("no strategy given".into());
    }
    Ok(out)
}

/// What a compaction summarizes, serialized as Pi serializes summary input, one message at a
/// time (so it can be sliced).
#[derive(Debug, Clone)]
pub struct SummaryInput {
    /// Each history message's serialized text (possibly empty: Pi leaves such a message out).
    pub history: Vec<String>,
    pub units: Vec<Unit>,
    /// The split turn's prefix, serialized whole (`None`: not a split turn).
    pub turn_prefix: Option<String>,
    /// The previous compaction's summary (an update then).
    pub previous: Option<String>,
    /// Pi's limit for the history summary (0.8 × reserveTokens) and the turn prefix's (0.5 ×).
    pub history_limit: u64,
    pub prefix_limit: u64,
    /// The messages as JSON, each with its timestamp (`summarize::materialize_all`): the
    /// history's, then the turn prefix's. The offline summary and the recall score read these.
    pub values: Vec<Value>,
    /// How many of `values` are the history's.
    pub history_values: usize,
}

impl SummaryInput {
    /// The input of the compaction `plan`. Messages are materialized and serialized on both
    /// cores.
    pub fn of_plan(s: &Session, plan: &CompactionPlan) -> SummaryInput {
        let all: Vec<&super::context::ContextMessage> = plan
            .messages_to_summarize
            .iter()
            .chain(&plan.turn_prefix_messages)
            .collect();
        let values: Vec<Value> = all.par_iter().map(|m| summarize::materialize_one(s, m)).collect();
        let serialized: Vec<String> = values
            .par_iter()
            .map(|v| serialize::serialize_conversation(&serialize::convert_to_llm(std::slice::from_ref(v)), s.pi))
            .collect();
        let n = plan.messages_to_summarize.len();
        let units = plan
            .messages_to_summarize
            .iter()
            .zip(&serialized)
            .map(|(m, text)| Unit {
                tokens: recall::estimate_text(text),
                cut_point: m.role.is_cut_point(),
            })
            .collect();
        let mut history = serialized;
        let prefix_parts = history.split_off(n);
        let turn_prefix = (plan.is_split_turn && !plan.turn_prefix_messages.is_empty()).then(|| {
            prefix_parts
                .iter()
                .filter(|p| !p.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join("\n\n")
        });
        SummaryInput {
            history,
            units,
            turn_prefix,
            previous: compaction::previous_summary(s, plan),
            history_limit: plan.settings.reserve_tokens * 8 / 10,
            prefix_limit: plan.settings.reserve_tokens / 2,
            values,
            history_values: n,
        }
    }

    /// The history messages `r` as one conversation text (Pi joins parts by a blank line).
    pub fn text(&self, r: std::ops::Range<usize>) -> String {
        let mut out = String::new();
        for part in self.history[r].iter().filter(|p| !p.is_empty()) {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(part);
        }
        out
    }

    pub fn history_tokens(&self) -> u64 {
        self.units.iter().map(|u| u.tokens).sum()
    }

    pub fn slices(&self, p: &SliceParams) -> Vec<slices::Slice> {
        slices::slice(&self.units, p)
    }
}

/// `<analysis>…</analysis>` dropped from a model's reply (the summary is what follows it). An
/// unfinished block (still streaming) hides everything after its start.
pub fn strip_analysis(text: &str) -> String {
    let Some(a) = text.find("<analysis>") else {
        return text.trim_start().to_string();
    };
    match text[a..].find("</analysis>") {
        Some(b) => format!("{}{}", &text[..a], &text[a + b + "</analysis>".len()..])
            .trim()
            .to_string(),
        None => text[..a].trim().to_string(),
    }
}

/// Markdown headings one level deeper (`## Goal` → `### Goal`), so a slice's summary sits
/// under its `## Segment k`.
pub fn demote_headings(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with('#') {
                format!("#{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// sequential-accumulated's result: the previous summary (an update), then each slice's
/// summary under `## Segment k`.
pub fn compose_segments(previous: Option<&str>, segments: &[String]) -> String {
    let mut parts = Vec::new();
    if let Some(p) = previous {
        parts.push(format!("## Earlier summary\n\n{}", demote_headings(p.trim())));
    }
    for (k, s) in segments.iter().enumerate() {
        parts.push(format!("## Segment {}\n\n{}", k + 1, demote_headings(s.trim())));
    }
    parts.join("\n\n")
}

/// Pi's layout of the whole compaction summary from a history summary and a turn prefix's
/// (the file tags appended as Pi appends them).
pub fn compose(plan: &CompactionPlan, history: &str, prefix: Option<&str>) -> String {
    summarize::compose_compaction_summary(history, prefix, &plan.file_ops)
}

/// The offline strategy on `plan`: the deterministic summary.
pub fn offline(s: &Session, plan: &CompactionPlan, input: &SummaryInput, focus: Option<&str>) -> String {
    let (history, prefix) = input.values.split_at(input.history_values);
    super::actions::offline_summary_of(s, plan, history, prefix, focus).text
}

/// Pi's history text when there is nothing before a split turn: the previous summary, or
/// Pi's "No prior history.".
pub fn empty_history(input: &SummaryInput) -> String {
    input.previous.clone().unwrap_or_else(|| "No prior history.".into())
}

/// The JSON description of the slices (for `compare --json` and tests).
pub fn slices_json(slices: &[slices::Slice]) -> Value {
    Value::Array(
        slices
            .iter()
            .map(|s| {
                serde_json::json!({
                    "messages": [s.messages.start, s.messages.end],
                    "overlap": [s.overlap.start, s.overlap.end],
                    "tokens": s.tokens,
                    "budget": s.budget,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analysis_is_dropped_even_while_streaming() {
        assert_eq!(
            strip_analysis("<analysis>think</analysis>\n\n## Goal\n- x"),
            "## Goal\n- x"
        );
        assert_eq!(strip_analysis("<analysis>still thin"), "");
        assert_eq!(strip_analysis("## Goal"), "## Goal");
    }

    #[test]
    fn segments_sit_under_their_headings() {
        let t = compose_segments(Some("## Goal\n- a"), &["## Goal\n- b".into(), "## Done\n- c".into()]);
        assert_eq!(
            t,
            "## Earlier summary\n\n### Goal\n- a\n\n## Segment 1\n\n### Goal\n- b\n\n## Segment 2\n\n### Done\n- c"
        );
    }

    #[test]
    fn strategy_lists_parse() {
        assert_eq!(
            parse_list("offline, single-shot,offline").unwrap(),
            vec![Strategy::Offline, Strategy::SingleShot]
        );
        assert_eq!(parse_list("all").unwrap().len(), 6);
        assert!(parse_list("fast").unwrap_err().contains("unknown strategy `fast`"));
    }
}
