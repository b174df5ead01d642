//! What the context view shows, built by its job: the selection's messages (or what the
//! live policy sends), their counts, and with a mark both sides aligned.

use crate::engine::load::session::Session;
use crate::engine::view::context::{self, ContextMessage, ContextTokens, Part};
use crate::engine::view::tokens::{self, Encoding, TokenCache};
use crate::engine::view::tree_view::one_line;
use std::collections::HashMap;

/// What the live policy is asked with at a leaf: its settings, the call's window, reserve
/// and prices, and Pi's model registry (the prices of the models the replies name).
#[derive(Debug, Clone)]
pub struct LiveParams {
    pub settings: crate::engine::live::LiveSettings,
    pub env: crate::engine::live::CallEnv,
    pub registry: std::sync::Arc<crate::engine::load::models::Registry>,
}

impl LiveParams {
    /// What bonsai's Pi package sends at `leaf`.
    pub fn at_leaf(&self, s: &Session, leaf: usize) -> crate::engine::live::AtLeaf {
        let prices_of = |p: &str, m: &str| self.registry.find(p, m).map(crate::engine::live::Prices::of_model);
        crate::engine::live::at_leaf(s, leaf, &self.env, &self.settings, &prices_of)
    }

    /// The session's calls replayed under the live policy and without it (`bonsai bill`).
    pub fn bill(&self, s: &Session) -> crate::engine::live::bill::Bill {
        use crate::engine::live::{CallEnv, LivePolicy, Prices, bill};
        let env_of = |m: Option<(&str, &str)>| CallEnv {
            prices: m.and_then(|(p, id)| self.registry.find(p, id)).map(Prices::of_model),
            ..self.env
        };
        let policies = [self.settings.clone(), self.settings.with_policy(LivePolicy::Off)];
        bill::bill_with(s, &policies, &self.registry, &env_of, false)
    }
}

/// One message at a leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRow {
    pub role: String,
    pub est: u64,
    pub exact: Option<u64>,
    pub source: usize,
    pub source_id: String,
    /// The first characters of its text, on one line.
    pub text: String,
    pub edited: bool,
    /// The `context_edit` that omits it (then it is not in the context).
    pub omitted_by: Option<String>,
    key: (usize, u8, Option<usize>, bool),
}

/// The messages at one leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct Pane {
    pub leaf: usize,
    pub leaf_id: String,
    pub rows: Vec<MessageRow>,
    pub tokens: ContextTokens,
    pub est_sum: u64,
    pub exact_sum: u64,
    /// The live policy's report when the pane shows what bonsai's Pi package sends.
    pub live: Option<crate::engine::live::LiveReport>,
}

/// The view's data: the selection's messages, and with a mark both aligned.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextData {
    pub generation: u64,
    pub selected: Pane,
    pub marked: Option<Pane>,
    /// Aligned rows: (row in `marked`, row in `selected`); one side `None` where they differ.
    pub aligned: Vec<(Option<usize>, Option<usize>)>,
}

impl ContextData {
    /// The entry a row of the view stands for (the selection's side first).
    pub fn source_at(&self, k: usize) -> Option<usize> {
        let (l, r) = *self.aligned.get(k)?;
        r.map(|r| self.selected.rows[r].source)
            .or_else(|| Some(self.marked.as_ref()?.rows[l?].source))
    }
}

fn part_key(p: Part) -> u8 {
    match p {
        Part::Main => 0,
        Part::CompactionSystem => 1,
        Part::CompactionSummary => 2,
    }
}

fn pane(s: &Session, leaf: usize, encoding: Encoding, cache: &TokenCache) -> Pane {
    let proj = context::project(s, &s.path_to(leaf));
    let msgs: Vec<&ContextMessage> = proj.messages().collect();
    let exact = cache.count_all(s, &msgs, encoding);
    let tokens = context::estimate_context_tokens(s, &msgs);
    // Which edit omits which entry (the last edit of a target wins, as in Pi).
    let mut edits: HashMap<&str, usize> = HashMap::new();
    for pe in &proj.entries {
        if let Some(t) = s.entries[pe.source].kind.context_edit_target() {
            edits.insert(t, pe.source);
        }
    }
    let row = |m: &ContextMessage, exact: Option<u64>, omitted_by: Option<usize>| MessageRow {
        role: m.role.as_str().to_string(),
        est: m.est_tokens,
        exact,
        source: m.source,
        source_id: s.entries[m.source].id.to_string(),
        text: one_line(&tokens::message_text(&context::materialize(s, m)), 200),
        edited: m.replaced_by.is_some(),
        omitted_by: omitted_by.map(|e| s.entries[e].id.to_string()),
        key: (m.source, part_key(m.part), m.replaced_by, omitted_by.is_some()),
    };
    let mut rows = Vec::new();
    let mut k = 0;
    for pe in &proj.entries {
        let e = &s.entries[pe.source];
        if pe.messages.is_empty() && !e.is_compaction() {
            let omitted_by = edits.get(&*e.id).copied();
            if omitted_by.is_some() {
                for m in context::intrinsic_messages(s, pe.source) {
                    rows.push(row(&m, None, omitted_by));
                }
            }
        }
        for m in &pe.messages {
            rows.push(row(m, exact.get(k).copied(), None));
            k += 1;
        }
    }
    Pane {
        leaf,
        leaf_id: s.entries[leaf].id.to_string(),
        rows,
        tokens,
        est_sum: msgs.iter().map(|m| m.est_tokens).sum(),
        exact_sum: exact.iter().sum(),
        live: None,
    }
}

/// What bonsai's Pi package sends at `leaf` (`engine::live`, the function its hook calls):
/// each message kept, distilled or pruned, and the packet, with Pi's estimate and the exact
/// count (the cache's for a message as stored, counted here for one the policy changed).
fn live_pane(s: &Session, leaf: usize, encoding: Encoding, cache: &TokenCache, params: &LiveParams) -> Pane {
    use crate::engine::live::Piece;
    let at = params.at_leaf(s, leaf);
    let refs: Vec<&ContextMessage> = at.refs.iter().collect();
    let exact = cache.count_all(s, &refs, encoding);
    let sent = at.answer.messages(&at.values);
    let mut rows = Vec::new();
    for (piece, v) in at.answer.pieces.iter().zip(&sent) {
        let text = one_line(&tokens::message_text(v), 200);
        let row = match piece {
            Piece::Keep(i) => {
                let m = &at.refs[*i];
                MessageRow {
                    role: m.role.as_str().to_string(),
                    est: m.est_tokens,
                    exact: exact.get(*i).copied(),
                    source: m.source,
                    source_id: s.entries[m.source].id.to_string(),
                    text,
                    edited: m.replaced_by.is_some(),
                    omitted_by: None,
                    key: (m.source, part_key(m.part), m.replaced_by, false),
                }
            }
            Piece::Replace(i, _) => {
                let m = &at.refs[*i];
                MessageRow {
                    role: m.role.as_str().to_string(),
                    est: context::estimate_value(v),
                    exact: Some(tokens::exact_count(encoding, v)),
                    source: m.source,
                    source_id: s.entries[m.source].id.to_string(),
                    text,
                    edited: true,
                    omitted_by: None,
                    key: (m.source, part_key(m.part), Some(usize::MAX), false),
                }
            }
            Piece::Insert(_) => MessageRow {
                role: "custom (packet)".into(),
                est: context::estimate_value(v),
                exact: Some(tokens::exact_count(encoding, v)),
                source: leaf,
                source_id: "packet".into(),
                text,
                edited: false,
                omitted_by: None,
                key: (usize::MAX, 9, None, false),
            },
        };
        rows.push(row);
    }
    let est_sum = rows.iter().map(|r| r.est).sum();
    let exact_sum = rows.iter().filter_map(|r| r.exact).sum();
    let tokens = ContextTokens {
        tokens: at.answer.report.tokens_sent as f64,
        usage_tokens: 0.0,
        trailing_tokens: at.answer.report.tokens_sent as f64,
        last_usage_index: None,
    };
    Pane {
        leaf,
        leaf_id: s.entries[leaf].id.to_string(),
        rows,
        tokens,
        est_sum,
        exact_sum,
        live: Some(at.answer.report),
    }
}

/// The bill line of the live pane: the session's calls replayed under the live policy and
/// without it, beside what Pi recorded.
pub fn bill_line(b: &crate::engine::live::bill::Bill) -> Option<String> {
    let [with, off] = b.policies.as_slice() else {
        return None;
    };
    if with.calls == 0 {
        return None;
    }
    let usd = crate::engine::live::bill::usd;
    let ratio = if off.cost > 0.0 {
        format!(" · {:.2}×", with.cost / off.cost)
    } else {
        String::new()
    };
    Some(format!(
        " bill of {} calls replayed (est.): {} {} · off {}{ratio} · cached {:.0}/{:.0} % · {} · Pi recorded {} ",
        with.calls,
        with.policy,
        usd(with.cost),
        usd(off.cost),
        100.0 * with.cached_share(),
        100.0 * off.cached_share(),
        crate::engine::live::plural(with.steps, "step", "steps"),
        usd(b.recorded.cost + b.recorded.summary_cost),
    ))
}

/// Align two message lists on their common messages. Keys are unique within a list, so the
/// longest common subsequence is the longest increasing run of positions (O(n log n)).
fn align(a: &[MessageRow], b: &[MessageRow]) -> Vec<(Option<usize>, Option<usize>)> {
    let pos_b: HashMap<_, usize> = b.iter().enumerate().map(|(j, r)| (r.key, j)).collect();
    let pairs: Vec<(usize, usize)> = a
        .iter()
        .enumerate()
        .filter_map(|(i, r)| pos_b.get(&r.key).map(|&j| (i, j)))
        .collect();
    // Longest increasing subsequence of j (patience with back links).
    let mut tails: Vec<usize> = Vec::new();
    let mut back: Vec<Option<usize>> = vec![None; pairs.len()];
    for (p, &(_, j)) in pairs.iter().enumerate() {
        let at = tails.partition_point(|&t| pairs[t].1 < j);
        back[p] = at.checked_sub(1).map(|x| tails[x]);
        if at == tails.len() {
            tails.push(p);
        } else {
            tails[at] = p;
        }
    }
    let mut chain = Vec::new();
    let mut cur = tails.last().copied();
    while let Some(p) = cur {
        chain.push(pairs[p]);
        cur = back[p];
    }
    chain.reverse();
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    for (mi, mj) in chain.into_iter().chain(std::iter::once((a.len(), b.len()))) {
        while i < mi {
            out.push((Some(i), None));
            i += 1;
        }
        while j < mj {
            out.push((None, Some(j)));
            j += 1;
        }
        if mi < a.len() && mj < b.len() {
            out.push((Some(mi), Some(mj)));
            i += 1;
            j += 1;
        }
    }
    out
}

/// The view's data for the selection at `leaf` and the mark (a job: it projects and counts).
pub fn build(
    s: &Session,
    generation: u64,
    leaf: usize,
    mark: Option<usize>,
    encoding: Encoding,
    cache: &TokenCache,
    live: Option<&LiveParams>,
) -> ContextData {
    build_with_progress(s, generation, leaf, mark, encoding, cache, live, &|_, _| {})
}

/// Messages counted between two progress reports.
const COUNT_CHUNK: usize = 2_000;

/// `build`, counting the exact tokens first in chunks and saying how far it got: on a 1 GB
/// session the count is most of the time (86,000 messages on the path), and the view says
/// "N of M" instead of nothing. Counts already in the cache (an earlier view, the background
/// count) are not counted again.
#[allow(clippy::too_many_arguments)]
pub fn build_with_progress(
    s: &Session,
    generation: u64,
    leaf: usize,
    mark: Option<usize>,
    encoding: Encoding,
    cache: &TokenCache,
    live: Option<&LiveParams>,
    progress: &dyn Fn(usize, usize),
) -> ContextData {
    let mut todo: Vec<ContextMessage> = Vec::new();
    for at in std::iter::once(leaf).chain(mark.filter(|m| *m != leaf)) {
        let proj = context::project(s, &s.path_to(at));
        todo.extend(proj.messages().filter(|m| cache.get(m, encoding).is_none()).cloned());
    }
    let total = todo.len();
    if total > COUNT_CHUNK {
        let mut done = 0;
        for chunk in todo.chunks(COUNT_CHUNK) {
            progress(done, total);
            let refs: Vec<&ContextMessage> = chunk.iter().collect();
            cache.count_all(s, &refs, encoding);
            done += chunk.len();
        }
        progress(total, total);
    }
    let one = |at: usize| match live {
        Some(l) => live_pane(s, at, encoding, cache, l),
        None => pane(s, at, encoding, cache),
    };
    let selected = one(leaf);
    let marked = mark.filter(|m| *m != leaf).map(one);
    let aligned = match &marked {
        Some(m) => align(&m.rows, &selected.rows),
        None => (0..selected.rows.len()).map(|r| (None, Some(r))).collect(),
    };
    ContextData {
        generation,
        selected,
        marked,
        aligned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: usize) -> MessageRow {
        MessageRow {
            role: "user".into(),
            est: 1,
            exact: None,
            source: key,
            source_id: key.to_string(),
            text: String::new(),
            edited: false,
            omitted_by: None,
            key: (key, 0, None, false),
        }
    }

    #[test]
    fn alignment_keeps_common_rows_side_by_side() {
        let a: Vec<_> = [1, 2, 3, 5, 6].into_iter().map(row).collect();
        let b: Vec<_> = [1, 2, 4, 5, 6, 7].into_iter().map(row).collect();
        let al = align(&a, &b);
        let show: Vec<String> = al
            .iter()
            .map(|(l, r)| {
                format!(
                    "{}|{}",
                    l.map(|i| a[i].source.to_string()).unwrap_or_default(),
                    r.map(|j| b[j].source.to_string()).unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(show, ["1|1", "2|2", "3|", "|4", "5|5", "6|6", "|7"]);
    }
}
