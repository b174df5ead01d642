//! Summary strategies: what each one summarizes, and how its parts become one compaction
//! summary in Pi's layout. The calls themselves are in `llm::strategies`; this is the pure part
//! (the input, the slices, the composition), shared by the CLI, the TUI and the tests.

use crate::compaction::cut::CompactionPlan;
use crate::compaction::offline;
use crate::compaction::slices::{self};
use crate::compaction::summary::SummaryInput;
use crate::load::session::Session;
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

/// A list of strategies that names none, or one bonsai does not know.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StrategyListError {
    #[error("unknown strategy `{0}` (known: {known})", known = Strategy::ALL.map(|s| s.name()).join(", "))]
    Unknown(String),
    #[error("no strategy given")]
    Empty,
}

/// `a,b,c` (or `all`) as strategies, each once, in the order given.
pub fn parse_list(list: &str) -> Result<Vec<Strategy>, StrategyListError> {
    if list.trim() == "all" {
        return Ok(Strategy::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let s = Strategy::parse(name).ok_or_else(|| StrategyListError::Unknown(name.to_string()))?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    if out.is_empty() {
        return Err(StrategyListError::Empty);
    }
    Ok(out)
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
    offline::compose_compaction_summary(history, prefix, &plan.file_ops)
}

/// The offline strategy on `plan`: the deterministic summary.
pub fn offline(s: &Session, plan: &CompactionPlan, input: &SummaryInput, focus: Option<&str>) -> String {
    let (history, prefix) = input.values.split_at(input.history_values);
    offline::compaction_summary_of(s, plan, history, prefix, focus).text
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
        assert!(
            parse_list("fast")
                .unwrap_err()
                .to_string()
                .contains("unknown strategy `fast`")
        );
    }
}
