//! The summary strategies' model calls (see `engine::compaction::strategy` for what each strategy is):
//! how many calls, in what order, how many at once, with what output budget, and how their
//! answers become one compaction summary. Every strategy that has a split turn also makes
//! Pi's turn-prefix call beside its history calls, as Pi's compaction does.
//!
//! A failed call fails its strategy with the provider's message (after the retries the
//! provider's rules allow); other strategies run on. Dropping the future cancels every call in
//! flight.

use super::summarize::Summarizer;
use super::{Event, LlmError, Reply, Usage, complete, prompts};
use crate::engine::compaction::cut::CompactionPlan;
use crate::engine::compaction::slices::{Slice, SliceParams};
use crate::engine::compaction::strategy::{self, Strategy};
use crate::engine::compaction::summary::SummaryInput;
use crate::engine::load::session::Session;
use futures_util::{StreamExt, TryStreamExt};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What a running strategy reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// Calls finished, planned in all, and in flight.
    Calls { done: usize, total: usize, running: usize },
    /// The text shown so far is replaced by this (a new call's answer follows it).
    Reset(String),
    /// More text of the answer being shown.
    Text(String),
    /// A call is retried (429, 5xx, overloaded).
    Retry {
        attempt: u32,
        wait: Duration,
        reason: String,
    },
}

/// A strategy's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The whole compaction summary, in Pi's layout, file tags appended.
    pub text: String,
    pub usage: Usage,
    pub calls: usize,
    pub wall: Duration,
}

/// The calls `strategy` makes on `input` (for progress, and what the tests hold it to).
pub fn planned_calls(strategy: Strategy, input: &SummaryInput, p: &SliceParams) -> usize {
    let prefix = usize::from(input.turn_prefix.is_some());
    if input.history.is_empty() || !strategy.is_llm() {
        return if strategy.is_llm() { prefix } else { 0 };
    }
    let n = input.slices(p).len();
    prefix
        + match strategy {
            Strategy::SingleShot => 1,
            Strategy::ParallelStitch => n + usize::from(stitches(n, input)),
            _ => n,
        }
}

/// parallel-stitch stitches unless there is one slice and nothing earlier to merge it with.
fn stitches(n: usize, input: &SummaryInput) -> bool {
    n > 1 || input.previous.is_some()
}

/// The running summary's budget at slice `k` (sequential-rolling, anchored-iterative): the
/// budgets of the slices it covers, at most the final budget.
pub fn running_budget(slices: &[Slice], k: usize, p: &SliceParams) -> u64 {
    slices[..=k]
        .iter()
        .map(|s| s.budget)
        .sum::<u64>()
        .min(p.final_budget)
        .max(p.budget_floor)
}

struct Run<'a> {
    sum: &'a Summarizer,
    params: &'a SliceParams,
    reasoning: Option<String>,
    on: &'a (dyn Fn(Progress) + Send + Sync),
    done: AtomicUsize,
    running: AtomicUsize,
    total: usize,
    usage: Mutex<Usage>,
}

impl Run<'_> {
    fn report_calls(&self) {
        (self.on)(Progress::Calls {
            done: self.done.load(Ordering::SeqCst),
            total: self.total,
            running: self.running.load(Ordering::SeqCst),
        });
    }

    /// One call; its text streamed after `shown` when `stream` (analysis blocks hidden).
    async fn call(&self, prompt: String, budget: u64, shown: Option<&str>) -> Result<String, LlmError> {
        let analysis = self.params.analysis;
        // The reasoning step needs room of its own beside the summary.
        let max = self.sum.cap(if analysis { budget * 2 } else { budget });
        let req = self.sum.request(prompt, max, self.reasoning.clone());
        self.running.fetch_add(1, Ordering::SeqCst);
        self.report_calls();
        if let Some(prefix) = shown {
            (self.on)(Progress::Reset(prefix.to_string()));
        }
        let buf = Mutex::new(String::new());
        let on = self.on;
        let r: Result<Reply, LlmError> = complete(&req, self.sum.policy, |e| match e {
            Event::Text(t) => {
                if let Some(prefix) = shown {
                    if analysis {
                        let mut b = buf.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        b.push_str(&t);
                        on(Progress::Reset(format!("{prefix}{}", strategy::strip_analysis(&b))));
                    } else {
                        on(Progress::Text(t));
                    }
                }
            }
            Event::Retry { attempt, wait, reason } => on(Progress::Retry { attempt, wait, reason }),
        })
        .await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        let reply = r?;
        self.done.fetch_add(1, Ordering::SeqCst);
        self.report_calls();
        {
            let mut u = self.usage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *u = u.add(&reply.usage);
        }
        Ok(if analysis {
            strategy::strip_analysis(&reply.text)
        } else {
            reply.text
        })
    }
}

/// Run `strategy` on the compaction `plan` of `s` (`input` is its serialized input). The
/// offline strategy runs here too (no calls), so every caller treats them alike.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    sum: Option<&Summarizer>,
    strategy: Strategy,
    s: &Session,
    plan: &CompactionPlan,
    input: &SummaryInput,
    params: &SliceParams,
    focus: Option<&str>,
    thinking: Option<&str>,
    on: &(dyn Fn(Progress) + Send + Sync),
) -> Result<Outcome, LlmError> {
    let started = Instant::now();
    let sum = match (strategy, sum) {
        (Strategy::Offline, _) => {
            let text = strategy::offline(s, plan, input, focus);
            on(Progress::Reset(text.clone()));
            return Ok(Outcome {
                text,
                usage: Usage::default(),
                calls: 0,
                wall: started.elapsed(),
            });
        }
        (_, Some(sum)) => sum,
        (_, None) => return Err(LlmError::Unsupported("no model configured".into())),
    };
    let run = Run {
        sum,
        params,
        reasoning: thinking.filter(|t| *t != "off").map(String::from),
        on,
        done: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        total: planned_calls(strategy, input, params),
        usage: Mutex::new(Usage::default()),
    };
    run.report_calls();
    let prefix_call = async {
        match &input.turn_prefix {
            Some(text) => {
                // The analysis step, when on, is asked of every call (each has room for it).
                let mut prompt = prompts::turn_prefix(text, focus.filter(|_| s.pi.turn_prefix_focus()));
                if params.analysis {
                    prompt.push_str("\n\n");
                    prompt.push_str(prompts::ANALYSIS);
                }
                run.call(prompt, input.prefix_limit, None).await.map(Some)
            }
            None => Ok(None),
        }
    };
    let (history, prefix) = tokio::join!(history(&run, strategy, input, focus), prefix_call);
    let (history, prefix) = (history?, prefix?);
    let text = strategy::compose(plan, &history, prefix.as_deref());
    on(Progress::Reset(text.clone()));
    let usage = run
        .usage
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    Ok(Outcome {
        text,
        usage,
        calls: run.done.load(Ordering::SeqCst),
        wall: started.elapsed(),
    })
}

/// The history part of the summary.
async fn history(
    run: &Run<'_>,
    strategy: Strategy,
    input: &SummaryInput,
    focus: Option<&str>,
) -> Result<String, LlmError> {
    if input.history.is_empty() {
        return Ok(strategy::empty_history(input));
    }
    let p = run.params;
    let analysis = p.analysis;
    let previous = input.previous.as_deref();
    if strategy == Strategy::SingleShot {
        let mut prompt = prompts::history(&input.text(0..input.history.len()), previous, focus);
        if analysis {
            prompt.push_str("\n\n");
            prompt.push_str(prompts::ANALYSIS);
        }
        return run.call(prompt, input.history_limit, Some("")).await;
    }
    let slices = input.slices(p);
    let n = slices.len();
    let overlap = |s: &Slice| Some(input.text(s.overlap.clone())).filter(|t| !t.is_empty());
    match strategy {
        Strategy::ParallelStitch => {
            // The prompts are made first, so each call owns its prompt (a future borrowing the
            // slice list from a closure argument cannot be proven Send for a task).
            let calls: Vec<(String, u64)> = slices
                .iter()
                .enumerate()
                .map(|(k, sl)| {
                    let prompt = prompts::slice(
                        &input.text(sl.messages.clone()),
                        overlap(sl).as_deref(),
                        &[],
                        (k + 1, n),
                        sl.budget,
                        focus,
                        analysis,
                    );
                    (prompt, sl.budget)
                })
                .collect();
            let parts: Vec<String> = futures_util::stream::iter(calls)
                .map(|(prompt, budget)| run.call(prompt, budget, None))
                .buffered(p.concurrency.max(1))
                .try_collect()
                .await?;
            if !stitches(n, input) {
                let only = parts.into_iter().next().unwrap_or_default();
                (run.on)(Progress::Reset(only.clone()));
                return Ok(only);
            }
            let prompt = prompts::stitch(&parts, previous, p.final_budget, focus, analysis);
            run.call(prompt, p.final_budget, Some("")).await
        }
        Strategy::SequentialAccumulated => {
            let mut segments: Vec<String> = Vec::new();
            for (k, sl) in slices.iter().enumerate() {
                let earlier: Vec<String> = previous
                    .map(String::from)
                    .into_iter()
                    .chain(segments.iter().cloned())
                    .collect();
                let prompt = prompts::slice(
                    &input.text(sl.messages.clone()),
                    overlap(sl).as_deref(),
                    &earlier,
                    (k + 1, n),
                    sl.budget,
                    focus,
                    analysis,
                );
                let shown = format!(
                    "{}\n\n## Segment {}\n\n",
                    strategy::compose_segments(previous, &segments),
                    k + 1
                );
                let text = run.call(prompt, sl.budget, Some(shown.trim_start())).await?;
                segments.push(text);
            }
            Ok(strategy::compose_segments(previous, &segments))
        }
        // sequential-rolling and anchored-iterative (single-shot and offline returned above).
        _ => {
            let mut running: Option<String> = previous.map(String::from);
            for (k, sl) in slices.iter().enumerate() {
                let budget = running_budget(&slices, k, p);
                let conv = input.text(sl.messages.clone());
                let prompt = if strategy == Strategy::SequentialRolling {
                    prompts::rolling(
                        running.as_deref(),
                        &conv,
                        overlap(sl).as_deref(),
                        (k + 1, n),
                        budget,
                        focus,
                        analysis,
                    )
                } else {
                    prompts::anchored(
                        running.as_deref(),
                        &conv,
                        overlap(sl).as_deref(),
                        budget,
                        focus,
                        analysis,
                    )
                };
                running = Some(run.call(prompt, budget, Some("")).await?);
            }
            Ok(running.unwrap_or_default())
        }
    }
}

/// Run `strategies` at once on the same compaction (the TUI's tabs, `bonsai compare`): each
/// reports its progress with its index, and `done` as soon as it ends (the others may still
/// run); one failing does not stop the others. Dropping the future cancels every call of
/// every strategy.
#[allow(clippy::too_many_arguments)]
pub async fn run_group(
    sum: Option<&Summarizer>,
    strategies: &[Strategy],
    s: &Session,
    plan: &CompactionPlan,
    input: &SummaryInput,
    params: &SliceParams,
    focus: Option<&str>,
    thinking: Option<&str>,
    on: &(dyn Fn(usize, Progress) + Send + Sync),
    done: &(dyn Fn(usize, &Result<Outcome, LlmError>) + Send + Sync),
) -> Vec<Result<Outcome, LlmError>> {
    let runs = strategies.iter().enumerate().map(|(k, &st)| async move {
        let report = move |p: Progress| on(k, p);
        let r = run(sum, st, s, plan, input, params, focus, thinking, &report).await;
        done(k, &r);
        r
    });
    futures_util::future::join_all(runs).await
}
