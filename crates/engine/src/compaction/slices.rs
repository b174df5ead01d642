//! Slicing a compaction's history for the summary strategies that summarize it in parts, and
//! each part's output budget.
//!
//! The unit is one message as Pi serializes it for a summary (`serialize`), measured with Pi's
//! estimate (UTF-16 units / 4, rounded up) of that serialized text: what the model is sent,
//! tool results already cut to 2,000 characters. Slicing is greedy and never splits a message;
//! a slice closes only before a message a compaction could keep from (Pi's cut points), never
//! before a tool result, so a tool call and its result stay in one slice. A slice may run over
//! `slice_tokens` by the tool results that follow its last call; one message larger than a
//! slice is a slice of its own.
//!
//! Overlap: each slice after the first is shown the last whole messages of the one before, up
//! to `overlap_tokens`, starting at a cut point; they are marked as already summarized and not
//! counted in its budget.

use std::ops::Range;

/// The strategies' numbers (defaults as the issue gives them; `harness()` for the published
/// comparison's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SliceParams {
    pub slice_tokens: u64,
    pub overlap_tokens: u64,
    /// A slice's budget is this share of its tokens (`None`: a fixed budget).
    pub compression_ratio: Option<f64>,
    /// The last two slices' budgets are multiplied by this.
    pub recent_boost: f64,
    /// No budget is smaller.
    pub budget_floor: u64,
    /// Every slice's budget when there is no ratio (the harness's 2,000).
    pub fixed_slice_budget: u64,
    /// The stitch call's, and the running summary's, most.
    pub final_budget: u64,
    /// Slice calls in flight at once (parallel-stitch).
    pub concurrency: usize,
    /// The model reasons in an `<analysis>` block before the summary (dropped from the result).
    pub analysis: bool,
}

impl Default for SliceParams {
    fn default() -> Self {
        SliceParams {
            slice_tokens: 20_000,
            overlap_tokens: 2_000,
            compression_ratio: Some(0.1),
            recent_boost: 2.0,
            budget_floor: 256,
            fixed_slice_budget: 2_000,
            final_budget: 4_000,
            concurrency: 4,
            analysis: false,
        }
    }
}

impl SliceParams {
    /// The parameters behind the published comparison: slices of 10,000 tokens, a slice budget
    /// of 2,000, a final budget of 4,000, no overlap, no boost, no ratio.
    pub fn harness() -> SliceParams {
        SliceParams {
            slice_tokens: 10_000,
            overlap_tokens: 0,
            compression_ratio: None,
            recent_boost: 1.0,
            fixed_slice_budget: 2_000,
            final_budget: 4_000,
            ..SliceParams::default()
        }
    }

    /// The output budget of slice `k` of `n` holding `tokens`: the "about N tokens" of its
    /// prompt and its call's max output tokens.
    pub fn slice_budget(&self, k: usize, n: usize, tokens: u64) -> u64 {
        let base = match self.compression_ratio {
            Some(r) => {
                let boost = if k + 2 >= n { self.recent_boost } else { 1.0 };
                (tokens as f64 * r * boost).ceil() as u64
            }
            None => self.fixed_slice_budget,
        };
        base.max(self.budget_floor)
    }
}

/// One message of the summary input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// Pi's estimate of its serialized text.
    pub tokens: u64,
    /// A slice may start here (Pi's cut point: not a tool result).
    pub cut_point: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The messages it summarizes.
    pub messages: Range<usize>,
    /// The messages before them it is shown as already summarized.
    pub overlap: Range<usize>,
    /// Tokens of `messages` (the overlap not counted).
    pub tokens: u64,
    /// Its output budget.
    pub budget: u64,
}

/// Cut `units` into slices (see the module's rules).
pub fn slice(units: &[Unit], p: &SliceParams) -> Vec<Slice> {
    let mut bounds: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    let mut tokens = 0u64;
    for (i, u) in units.iter().enumerate() {
        if i > start && u.cut_point && tokens + u.tokens > p.slice_tokens {
            bounds.push(start..i);
            start = i;
            tokens = 0;
        }
        tokens += u.tokens;
    }
    if start < units.len() {
        bounds.push(start..units.len());
    }
    let n = bounds.len();
    let mut out = Vec::with_capacity(n);
    for (k, r) in bounds.iter().enumerate() {
        let tokens: u64 = units[r.clone()].iter().map(|u| u.tokens).sum();
        let overlap = match k.checked_sub(1) {
            Some(prev) => overlap_of(units, bounds[prev].clone(), p.overlap_tokens),
            None => r.start..r.start,
        };
        out.push(Slice {
            messages: r.clone(),
            overlap,
            tokens,
            budget: p.slice_budget(k, n, tokens),
        });
    }
    out
}

/// The last whole messages of `prev` within `max` tokens, starting at a cut point.
fn overlap_of(units: &[Unit], prev: Range<usize>, max: u64) -> Range<usize> {
    let end = prev.end;
    let mut start = end;
    let mut sum = 0;
    while start > prev.start && sum + units[start - 1].tokens <= max {
        start -= 1;
        sum += units[start].tokens;
    }
    while start < end && !units[start].cut_point {
        start += 1;
    }
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(tokens: u64, cut_point: bool) -> Unit {
        Unit { tokens, cut_point }
    }

    #[test]
    fn slices_close_only_before_cut_points() {
        // user, assistant(call), result, result, user, assistant, result
        let units = [
            u(6, true),
            u(3, true),
            u(5, false),
            u(5, false),
            u(4, true),
            u(4, true),
            u(9, false),
        ];
        let p = SliceParams {
            slice_tokens: 10,
            overlap_tokens: 0,
            ..SliceParams::default()
        };
        let s = slice(&units, &p);
        let ranges: Vec<_> = s.iter().map(|x| x.messages.clone()).collect();
        // 6+3 = 9 fits; the results cannot start a slice, so the first runs to 19.
        assert_eq!(ranges, vec![0..4, 4..7]);
        assert_eq!(s[0].tokens, 19);
        assert_eq!(s[1].tokens, 17);
        for sl in &s {
            assert!(units[sl.messages.start].cut_point);
        }
    }

    #[test]
    fn overlap_is_whole_messages_from_a_cut_point() {
        let units = [u(4, true), u(4, true), u(2, false), u(3, true), u(10, true)];
        let p = SliceParams {
            slice_tokens: 13,
            overlap_tokens: 6,
            ..SliceParams::default()
        };
        let s = slice(&units, &p);
        assert_eq!(s[0].messages, 0..4);
        assert_eq!(s[1].messages, 4..5);
        // The last 2+3 fit 6 tokens, but 2 is a tool result: the overlap starts at the 3.
        assert_eq!(s[1].overlap, 3..4);
        assert_eq!(s[0].overlap, 0..0);
    }

    #[test]
    fn budgets_follow_the_ratio_the_boost_and_the_floor() {
        let p = SliceParams::default();
        assert_eq!(p.slice_budget(0, 5, 20_000), 2_000);
        assert_eq!(p.slice_budget(3, 5, 20_000), 4_000, "the last two are boosted");
        assert_eq!(p.slice_budget(4, 5, 20_000), 4_000);
        assert_eq!(p.slice_budget(0, 5, 1_000), 256, "the floor");
        let h = SliceParams::harness();
        assert_eq!(h.slice_budget(0, 5, 9_000), 2_000);
        assert_eq!(h.slice_budget(4, 5, 9_000), 2_000, "no boost in the harness");
        assert_eq!(h.overlap_tokens, 0);
    }

    #[test]
    fn a_message_larger_than_a_slice_is_a_slice_alone() {
        let units = [u(5, true), u(50, true), u(5, true)];
        let p = SliceParams {
            slice_tokens: 10,
            overlap_tokens: 0,
            ..SliceParams::default()
        };
        let s = slice(&units, &p);
        let ranges: Vec<_> = s.iter().map(|x| x.messages.clone()).collect();
        assert_eq!(ranges, vec![0..1, 1..2, 2..3]);
    }
}
