//! What a session's calls would cost under each live policy: `bonsai bill`, the TUI's
//! context view, and the bill so far in `/ctx-status`.
//!
//! Every assistant reply of the file is one call; its context is Pi's context at the reply's
//! parent. Each policy answers each call as `bonsai serve` would have (the same
//! [`LiveState`], its state carried from the previous call where the context continues it),
//! and each call is priced under prefix caching:
//! - what a request shares at its start with the previous request (the system prompt and
//!   tools, then whole messages) is read from the cache, unless the cache lifetime passed
//!   between them or the model changed;
//! - the rest is written (at the model's cache-write price where it has one, else input);
//! - the output is the reply's as recorded.
//!
//! The system prompt and tools are not in the file: their size is the first call's recorded
//! prompt less Pi's estimate of its messages. Tokens are Pi's estimate (chars/4) scaled by
//! nothing: a provider's tokenizer counts differently, so absolute figures are estimates and
//! the ratios between policies are what to read. The calls as Pi recorded them (their
//! usage and cost, summary calls included) are given beside.

use super::policy::{CallEnv, LiveSettings, Prices, StepReason};
use super::source::{MessageSource, MsgFacts, MsgKind, id_hash};
use super::state::LiveState;
use super::state::SentPart;
use crate::load::entry::{Kind, Role};
use crate::load::models::Registry;
use crate::load::session::Session;
use crate::usage;
use crate::view::context::{self, ContextMessage};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

/// US dollars as the bill shows them: cents, or four decimals below a cent.
pub fn usd(x: f64) -> String {
    crate::units::money(x)
}

/// One call as a policy would have sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct BilledCall {
    /// The reply's entry.
    pub entry: usize,
    /// Tokens sent (system prompt and tools included), read from the cache, written.
    pub sent: u64,
    pub cached: u64,
    pub output: u64,
    pub cost: f64,
    pub step: Option<StepReason>,
}

/// A policy's bill for the session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyBill {
    pub policy: String,
    pub calls: usize,
    pub sent: u64,
    pub cached: u64,
    pub output: u64,
    pub cost: f64,
    pub steps: usize,
    /// Calls whose model has no known price (their cost counts as 0).
    pub unpriced: usize,
    pub per_call: Vec<BilledCall>,
    pub facts: FactsKept,
    /// Replies whose recorded output was missing, negative or not finite (counted as 0).
    pub odd: usize,
}

/// The specifics the model used again (in its replies: a path it read again, an id it wrote)
/// after they first appeared on the path, and how many of those uses found them in what was
/// sent, or within reach of `bonsai_recall` (anything earlier on the path, for a policy with
/// the tool). Read by [`specifics`], a reader of its own: the packet's and the audit's code
/// never score themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FactsKept {
    pub used: u64,
    pub sent: u64,
    pub reachable: u64,
}

impl FactsKept {
    pub fn add(&mut self, o: &FactsKept) {
        self.used += o.used;
        self.sent += o.sent;
        self.reachable += o.reachable;
    }
}

/// The specifics of a text as the bill counts them: whitespace-separated words (quotes,
/// brackets and trailing punctuation off) of at least four characters that are a URL, a path
/// (a `/` between two named parts, or a name with an extension), an id (letters and digits
/// joined by `-` or `_`, or letters then digits), or a name with `_` in it.
pub fn specifics(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | ',' | ';' | '<' | '>' | '='
            )
    }) {
        let w = raw
            .trim_end_matches(['.', ':', '!', '?'])
            .trim_start_matches(['.', ':']);
        if w.chars().count() < 4 || w.chars().count() > 300 {
            continue;
        }
        let alnum = |c: char| c.is_ascii_alphanumeric();
        let letters = w.chars().any(|c| c.is_ascii_alphabetic());
        let digits = w.chars().any(|c| c.is_ascii_digit());
        let url = w.starts_with("http://") || w.starts_with("https://");
        let path = w.contains('/') && w.split('/').filter(|p| p.chars().any(alnum)).count() >= 2;
        const EXT: &[&str] = &[
            "c", "cfg", "cpp", "css", "csv", "go", "h", "html", "ini", "java", "js", "json", "jsonl", "jsx", "lock",
            "log", "md", "py", "rb", "rs", "sh", "sql", "toml", "ts", "tsx", "txt", "yaml", "yml",
        ];
        let named_file = w
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| stem.chars().any(alnum) && EXT.contains(&ext));
        let id = letters && digits && (w.contains('-') || w.contains('_') || w.chars().all(alnum));
        let snake = w.contains('_') && letters && w.chars().all(|c| alnum(c) || c == '_');
        if (url || path || named_file || id || snake) && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// A message's words as the bill reads them: its text, its calls' arguments, a command and
/// its output, a summary.
fn words_of(m: &Value) -> String {
    let mut out = super::recall::text_of(m);
    if let Some(c) = m.get("content").and_then(|c| c.as_array()) {
        for b in c {
            if let Some(a) = b.get("arguments") {
                out.push(' ');
                out.push_str(&a.to_string());
            }
        }
    }
    out
}

impl PolicyBill {
    /// The share of the tokens sent that the cache held.
    pub fn cached_share(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.cached as f64 / self.sent as f64
        }
    }
}

/// The calls as Pi recorded them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    /// Assistant replies, and what they cost.
    pub calls: u64,
    pub cost: f64,
    pub tokens: usage::Tokens,
    /// Summary calls (compactions, branch summaries, others) and their cost.
    pub summary_calls: u64,
    pub summary_cost: f64,
    /// Calls whose cost is not known.
    pub unpriced: u64,
    /// Calls whose recorded usage held a negative or not finite figure (counted as 0).
    pub odd: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bill {
    /// The system prompt and tools, in tokens (from the first call's recorded prompt).
    pub overhead: u64,
    pub recorded: Recorded,
    pub policies: Vec<PolicyBill>,
}

/// A call's window, reserve and prices by its model (provider, id).
pub type EnvOf<'a> = dyn Fn(Option<(&str, &str)>) -> CallEnv + 'a;

/// The bill of `s` under each of `policies`, with the facts each keeps.
pub fn bill(s: &Session, policies: &[LiveSettings], registry: &Registry, env_of: &EnvOf) -> Bill {
    bill_with(s, policies, registry, env_of, true)
}

/// [`bill`], the facts kept counted only when `facts` (reading every message for them costs
/// as much again: `/ctx-status` has no use for it).
pub fn bill_with(s: &Session, policies: &[LiveSettings], registry: &Registry, env_of: &EnvOf, facts: bool) -> Bill {
    let calls: Vec<usize> = (0..s.entries.len())
        .filter(|&i| is_reply(s, i) && s.parent_of(i).is_some())
        .collect();
    let mut out = Bill {
        recorded: recorded(s, registry),
        ..Bill::default()
    };
    let prices = PriceBook::new(registry, implied_prices(&s.buf));
    out.overhead = overhead(s, &calls, &prices);
    let seen = if facts {
        Seen::of(s)
    } else {
        Seen { at: HashMap::new() }
    };
    for settings in policies {
        out.policies
            .push(one_policy(s, &calls, settings, &prices, env_of, out.overhead, &seen));
    }
    out
}

/// Where each specific appears: the message entries that hold it, in the file's order.
struct Seen {
    at: HashMap<String, Vec<usize>>,
}

impl Seen {
    fn of(s: &Session) -> Seen {
        let mut at: HashMap<String, Vec<usize>> = HashMap::new();
        for e in 0..s.entries.len() {
            for m in context::intrinsic_messages(s, e).iter() {
                if m.role == Role::System {
                    continue;
                }
                let v = context::materialize(s, m);
                for w in specifics(&words_of(&v)) {
                    let list = at.entry(w).or_default();
                    if list.last() != Some(&e) {
                        list.push(e);
                    }
                }
            }
        }
        Seen { at }
    }
}

fn is_reply(s: &Session, i: usize) -> bool {
    matches!(&s.entries[i].kind, Kind::Message(m) if m.facts().is(&Role::Assistant))
}

/// The calls Pi recorded in the file, summed.
fn recorded(s: &Session, registry: &Registry) -> Recorded {
    let mut r = Recorded::default();
    for c in usage::calls(&s.buf) {
        r.odd += u64::from(c.odd);
        let cost = match usage::cost_of(&c, registry) {
            usage::Cost::Recorded(x) | usage::Cost::Estimated(x) => x,
            usage::Cost::Unknown => {
                r.unpriced += 1;
                0.0
            }
        };
        if c.kind == usage::CallKind::Reply {
            r.calls += 1;
            r.cost += cost;
            r.tokens.input += c.tokens.input;
            r.tokens.output += c.tokens.output;
            r.tokens.cache_read += c.tokens.cache_read;
            r.tokens.cache_write += c.tokens.cache_write;
        } else {
            r.summary_calls += 1;
            r.summary_cost += cost;
        }
    }
    r
}

/// Model prices by provider and id, each looked up once (the table has hundreds): Pi's
/// registry, else what the session's records imply.
struct PriceBook<'a> {
    registry: &'a Registry,
    implied: HashMap<(String, String), Prices>,
    seen: RefCell<HashMap<(String, String), Option<Prices>>>,
}

impl<'a> PriceBook<'a> {
    fn new(registry: &'a Registry, implied: HashMap<(String, String), Prices>) -> PriceBook<'a> {
        PriceBook {
            registry,
            implied,
            seen: RefCell::new(HashMap::new()),
        }
    }
    fn get(&self, provider: &str, id: &str) -> Option<Prices> {
        let key = (provider.to_string(), id.to_string());
        *self.seen.borrow_mut().entry(key).or_insert_with_key(|k| {
            self.registry
                .find(provider, id)
                .map(Prices::of_model)
                .filter(|p| !p.unpriced())
                .or_else(|| self.implied.get(k).copied())
        })
    }
}

/// The prices a session's records imply for each model it called: what Pi charged per token
/// of each kind (its `usage.cost` parts over the tokens), for a model the registry does not
/// price. Output and cache reads never charged take the input price (the estimate errs
/// high); cache writes never charged mean the provider has none (uncached input is input).
pub fn implied_prices(body: &[u8]) -> HashMap<(String, String), Prices> {
    // Per model: tokens and cost of input, output, cache read, cache write.
    let mut sums: HashMap<(String, String), [(f64, f64); 4]> = HashMap::new();
    let mut next_line = 0;
    for at in memchr::memmem::find_iter(body, b"\"cost\"") {
        if at < next_line {
            continue;
        }
        let start = memchr::memrchr(b'\n', &body[..at]).map_or(0, |i| i + 1);
        let end = memchr::memchr(b'\n', &body[at..]).map_or(body.len(), |i| at + i);
        next_line = end + 1;
        let Ok(v) = serde_json::from_slice::<Value>(&body[start..end]) else {
            continue;
        };
        let m = &v["message"];
        let (Some(p), Some(id)) = (m["provider"].as_str(), m["model"].as_str()) else {
            continue;
        };
        let u = &m["usage"];
        let slot = sums.entry((p.to_string(), id.to_string())).or_default();
        for (i, k) in ["input", "output", "cacheRead", "cacheWrite"].into_iter().enumerate() {
            if let (Some(t), Some(c)) = (u[k].as_f64(), u["cost"][k].as_f64()) {
                slot[i].0 += t;
                slot[i].1 += c;
            }
        }
    }
    sums.into_iter()
        .filter_map(|(k, s)| {
            let per = |(t, c): (f64, f64)| (t > 0.0 && c > 0.0).then(|| c / t * 1e6);
            let input = per(s[0])?;
            Some((
                k,
                Prices {
                    input,
                    output: per(s[1]).unwrap_or(input),
                    cache_read: per(s[2]).unwrap_or(input),
                    cache_write: per(s[3]).unwrap_or(0.0),
                },
            ))
        })
        .collect()
}

/// The system prompt and tools: the first call's recorded prompt less its messages.
fn overhead(s: &Session, calls: &[usize], prices: &PriceBook) -> u64 {
    let Some(&first) = calls.first() else { return 0 };
    let Kind::Message(m) = &s.entries[first].kind else {
        return 0;
    };
    let Some(u) = m.usage.as_deref() else { return 0 };
    let prompt = u.input + u.cache_read + u.cache_write;
    let parent = s.parent_of(first).expect("a call has a parent");
    let src = SessionSource::at(s, parent, prices);
    let est: u64 = (0..src.len()).map(|i| src.refs[i].est_tokens).sum();
    (prompt - est as f64).max(0.0).round() as u64
}

/// Pi's context at an entry, held as references (messages are read when a step needs them).
struct SessionSource<'a> {
    s: &'a Session,
    prices: &'a PriceBook<'a>,
    refs: Vec<ContextMessage>,
    /// The path's entry the context ends at.
    at: usize,
    /// The path from the root to `at`, and each entry's place on it.
    path: Vec<usize>,
    place: HashMap<usize, usize>,
    /// Per place on the path, the messages the context holds up to that entry (`None` before
    /// the context's start, its latest compaction: those entries are not a prefix of it).
    refs_after: Vec<Option<usize>>,
    /// Each entry's places in `refs`.
    of_entry: HashMap<usize, Vec<usize>>,
}

impl SessionSource<'_> {
    /// The context's messages that entry `e` gives (their places in `refs`).
    fn places_of(&self, e: usize) -> &[usize] {
        self.of_entry.get(&e).map_or(&[], |v| v.as_slice())
    }

    /// Note where `refs[from..]` come from.
    fn note_places(&mut self, from: usize) {
        for k in from..self.refs.len() {
            self.of_entry.entry(self.refs[k].source).or_default().push(k);
        }
    }
}

impl<'a> SessionSource<'a> {
    fn at(s: &'a Session, entry: usize, prices: &'a PriceBook<'a>) -> SessionSource<'a> {
        let path = s.path_to(entry);
        let proj = context::project(s, &path);
        let place: HashMap<usize, usize> = path.iter().enumerate().map(|(k, &i)| (i, k)).collect();
        // A compaction's summary and the messages it keeps (entries before it) are its place's.
        let start = path.iter().rposition(|&i| s.entries[i].is_compaction()).unwrap_or(0);
        let mut refs_after = vec![None; path.len()];
        let mut refs = Vec::new();
        for pe in &proj.entries {
            refs.extend(pe.messages.iter().filter(|m| m.role != Role::System).cloned());
            if let Some(&k) = place.get(&pe.source) {
                refs_after[k.max(start)] = Some(refs.len());
            }
        }
        let mut src = SessionSource {
            s,
            prices,
            refs,
            at: entry,
            path,
            place,
            refs_after,
            of_entry: HashMap::new(),
        };
        src.note_places(0);
        src
    }

    /// Move to `entry`'s context from where it branches off this one (this one's end when it
    /// is a descendant): the messages after that point are dropped and the entries on the
    /// way add theirs. Returns how many messages both contexts share; `None` when `entry`'s
    /// context is not this one's start plus messages (no shared entry in the context, or a
    /// compaction or context edit on the way).
    fn branch_to(&mut self, entry: usize) -> Option<usize> {
        let mut way = Vec::new();
        let mut i = entry;
        let branch = loop {
            if let Some(&k) = self.place.get(&i) {
                break k;
            }
            match &self.s.entries[i].kind {
                Kind::Compaction(_) | Kind::ContextEdit(_) => return None,
                _ => {}
            }
            way.push(i);
            i = self.s.parent_of(i)?;
        };
        let keep = self.refs_after[branch]?;
        for gone in self.path.drain(branch + 1..) {
            self.place.remove(&gone);
        }
        self.refs_after.truncate(branch + 1);
        for m in &self.refs[keep..] {
            if let Some(v) = self.of_entry.get_mut(&m.source) {
                v.retain(|&k| k < keep);
            }
        }
        self.refs.truncate(keep);
        for &i in way.iter().rev() {
            self.refs.extend(
                context::intrinsic_messages(self.s, i)
                    .into_iter()
                    .filter(|m| m.role != Role::System),
            );
            self.place.insert(i, self.path.len());
            self.path.push(i);
            self.refs_after.push(Some(self.refs.len()));
        }
        self.note_places(keep);

        self.at = entry;
        Some(keep)
    }

    /// How many leading messages this context shares with `other` (the same entries, parts
    /// and edits).
    fn common_with(&self, other: &SessionSource) -> usize {
        self.refs
            .iter()
            .zip(&other.refs)
            .take_while(|(a, b)| a.source == b.source && a.part == b.part && a.replaced_by == b.replaced_by)
            .count()
    }
}

impl MessageSource for SessionSource<'_> {
    fn len(&self) -> usize {
        self.refs.len()
    }

    fn facts(&self, i: usize) -> MsgFacts {
        let m = &self.refs[i];
        let kind = match m.role {
            Role::User => MsgKind::User,
            Role::Assistant => MsgKind::Assistant,
            Role::ToolResult => MsgKind::ToolResult,
            Role::CompactionSummary => MsgKind::CompactionSummary,
            Role::BranchSummary => MsgKind::BranchSummary,
            _ => MsgKind::Other,
        };
        let sm = context::msg_of(self.s, m);
        let mut f = MsgFacts {
            kind,
            est: m.est_tokens,
            time: self.s.entries[m.source].ts,
            context_tokens: None,
            output_tokens: 0.0,
            prices: None,
            result_of: sm.and_then(|x| x.tool_call_id.as_deref()).map(id_hash),
        };
        if kind == MsgKind::Assistant
            && let Some(sm) = context::msg_of(self.s, m)
        {
            f.context_tokens = sm.valid_usage().map(|u| u.context_tokens());
            f.output_tokens = sm.usage.as_deref().map_or(0.0, |u| u.output);
            if let (Some(p), Some(id)) = (sm.provider.as_deref(), sm.model.as_deref()) {
                f.prices = self.prices.get(p, id);
            }
        }
        f
    }

    /// Made on each read, kept by nobody: the policy reads a message when a step leaves it
    /// out or distills it, about once (a 100 MB session's messages would take gigabytes).
    fn value(&self, i: usize) -> Cow<'_, Value> {
        Cow::Owned(context::materialize(self.s, &self.refs[i]))
    }

    fn call_ids(&self, i: usize) -> Vec<u64> {
        context::msg_of(self.s, &self.refs[i])
            .map(|m| m.tool_call_ids.iter().map(|(id, _)| id_hash(id)).collect())
            .unwrap_or_default()
    }
}

/// The request before, as the cache compares with it.
struct Request {
    parts: Vec<SentPart>,
    /// Pi's messages in its call's context.
    end: usize,
    time: f64,
    model: Option<(String, String)>,
}

/// The tokens of the start `cur` shares with `prev`, Pi's messages compared only within the
/// first `common`, which both contexts share (`tokens(from, to)`: Pi's estimate of them).
fn shared_start(prev: &[SentPart], cur: &[SentPart], common: usize, tokens: impl Fn(usize, usize) -> u64) -> u64 {
    let mut n = 0;
    for (a, b) in prev.iter().zip(cur) {
        match (*a, *b) {
            (SentPart::Run(a0, a1), SentPart::Run(b0, b1)) if a0 == b0 && a0 < common => {
                n += tokens(a0, a1.min(b1).min(common));
                if a1 != b1 || a1 > common {
                    break;
                }
            }
            (SentPart::Made { hash: x, est }, SentPart::Made { hash: y, .. }) if x == y => n += est,
            _ => break,
        }
    }
    n
}

/// The model a reply went to.
fn model_of(s: &Session, i: usize) -> Option<(&str, &str)> {
    match &s.entries[i].kind {
        Kind::Message(m) => Some((m.provider.as_deref()?, m.model.as_deref()?)),
        _ => None,
    }
}

#[allow(clippy::too_many_arguments)]
fn one_policy(
    s: &Session,
    calls: &[usize],
    settings: &LiveSettings,
    prices: &PriceBook,
    env_of: &EnvOf,
    overhead: u64,
    seen: &Seen,
) -> PolicyBill {
    let recall = settings.recall && settings.policy != super::policy::LivePolicy::Off;
    // The specifics of each message bonsai makes, read once (by its hash).
    let mut made_words: HashMap<u64, std::collections::HashSet<String>> = HashMap::new();
    let mut out = PolicyBill {
        policy: settings.policy.name().to_string(),
        ..PolicyBill::default()
    };
    let mut src: Option<SessionSource> = None;
    let mut state = LiveState::default();
    let mut prev: Option<Request> = None;
    for &a in calls {
        let parent = s.parent_of(a).expect("a call has a parent");
        // Pi's messages this call's context shares with the call before's: all of them when it
        // continues it, up to where it branches off otherwise.
        let common = match src.as_mut().and_then(|x| x.branch_to(parent)) {
            Some(keep) => {
                state.truncate(keep);
                prev.as_ref().map_or(0, |p| keep.min(p.end))
            }
            None => {
                let fresh = SessionSource::at(s, parent, prices);
                let common = match (&src, &prev) {
                    (Some(old), Some(p)) => fresh.common_with(old).min(p.end),
                    _ => 0,
                };
                src = Some(fresh);
                state = LiveState::default();
                common
            }
        };
        let src = src.as_ref().expect("set above");
        let model = model_of(s, a);
        let mut env = env_of(model);
        if env.prices.is_none() {
            env.prices = model.and_then(|(p, id)| prices.get(p, id));
        }
        let (parts, report) = state.answer_parts_seeing(src, &env, settings, &mut |h, v| {
            made_words
                .entry(h)
                .or_insert_with(|| specifics(&words_of(v)).into_iter().collect());
        });
        // The specifics this reply used again, and whether the request held them.
        if !seen.at.is_empty() && s.entries[a].message().is_some() {
            let v = s.entry_value(a);
            let reply_words = v.get("message").map(|m| specifics(&words_of(m))).unwrap_or_default();
            for w in reply_words {
                let Some(where_) = seen.at.get(&w) else { continue };
                // Earlier on this call's path.
                let earlier: Vec<usize> = where_
                    .iter()
                    .copied()
                    .filter(|&e| e != a && src.place.contains_key(&e))
                    .collect();
                if earlier.is_empty() {
                    continue;
                }
                out.facts.used += 1;
                let in_run = earlier.iter().any(|&e| {
                    src.places_of(e).iter().any(|&k| {
                        parts
                            .iter()
                            .any(|p| matches!(p, SentPart::Run(x, y) if *x <= k && k < *y))
                    })
                });
                let in_made = parts.iter().any(|p| match p {
                    SentPart::Made { hash, .. } => made_words.get(hash).is_some_and(|ws| ws.contains(&w)),
                    _ => false,
                });
                if in_run || in_made {
                    out.facts.sent += 1;
                    out.facts.reachable += 1;
                } else if recall {
                    out.facts.reachable += 1;
                }
            }
        }
        let time = s.entries[a].ts;
        let model_owned = model.map(|(p, m)| (p.to_string(), m.to_string()));
        let sent = overhead + report.tokens_sent;
        let cached = match &prev {
            Some(p)
                if p.model == model_owned && (time - p.time <= settings.cache_ttl_ms || (time - p.time).is_nan()) =>
            {
                overhead + shared_start(&p.parts, &parts, common, |x, y| state.tokens(x, y))
            }
            _ => 0,
        };
        // A figure that is missing (JavaScript's undefined), negative or not finite counts as
        // 0: one hostile line must not make every policy's bill NaN.
        let output = match &s.entries[a].kind {
            Kind::Message(m) => m.usage.as_deref().map_or(0.0, |u| u.output),
            _ => 0.0,
        };
        let output = if output.is_finite() && output >= 0.0 {
            output
        } else {
            out.odd += 1;
            0.0
        };
        let cost = match env.prices {
            Some(p) if !p.unpriced() => p.cost(cached as f64, (sent - cached) as f64, output),
            _ => {
                out.unpriced += 1;
                0.0
            }
        };
        let step = report.step.as_ref().map(|x| x.reason);
        out.calls += 1;
        out.sent += sent;
        out.cached += cached;
        out.output += output as u64;
        out.cost += cost;
        out.steps += usize::from(step.is_some());
        out.per_call.push(BilledCall {
            entry: a,
            sent,
            cached,
            output: output as u64,
            cost,
            step,
        });
        prev = Some(Request {
            parts,
            end: src.len(),
            time,
            model: model_owned,
        });
    }
    out
}
