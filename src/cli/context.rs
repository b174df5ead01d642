//! The command that shows what Pi sends: `bonsai context`, and `--live` (what bonsai's package would send).

use super::args::{LeafArg, SessionArg};
use super::common::{load_for_reading, print_json, resolve_leaf, session_model};
use crate::engine::load::entry::Role;
use crate::engine::report;
use crate::engine::view::context;
use crate::engine::view::tokens::{Encoding, TokenCache};
use crate::engine::view::tree_view;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use serde_json::{Value, json};

#[derive(Args, Debug)]
pub struct ContextArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Skip exact (tiktoken) counts (faster on large sessions).
    #[arg(long)]
    pub no_exact: bool,
    /// The messages bonsai's Pi package sends at the leaf (the live policy of
    /// `bonsai.live.policy` in Pi's settings, applied in memory as on every model call).
    #[arg(long)]
    pub live: bool,
    /// With --live: this policy instead of the setting's.
    #[arg(long, requires = "live", value_parser = ["off", "output", "zones"])]
    pub policy: Option<String>,
    /// With --live and the output policy: the pi-context-pruning extension's own rules.
    #[arg(long, requires = "live", value_parser = ["pi-context-pruning"])]
    pub compat: Option<String>,
    /// With --live --json: each message whole (as Pi's AgentMessage), not only described.
    #[arg(long, requires = "live")]
    pub content: bool,
}

pub fn context(a: ContextArgs) -> Result<()> {
    let (file, json_out, exact) = (a.session.file.as_path(), a.json, !a.no_exact);
    let settings = load_settings(&cwd());
    let s = load_for_reading(file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    if a.live {
        return context_live(&s, file, leaf, &a);
    }
    let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let proj = context::project(&s, &path);
    let msgs: Vec<&context::ContextMessage> = proj.messages().collect();
    let reg = load_registry(&agent_dir());
    let (model, window) = session_model(&proj, &reg);
    let enc = Encoding::for_model(
        model.as_ref().map(|m| m.0.as_str()),
        model.as_ref().map(|m| m.1.as_str()),
    );
    let exact_counts: Option<Vec<Option<u64>>> = exact.then(|| {
        TokenCache::default()
            .count_all(&s, &msgs, enc)
            .into_iter()
            .map(Some)
            .collect()
    });
    let ctx_tokens = context::estimate_context_tokens(&s, &msgs);
    let projected = context::estimate_projected_tokens(&s, &proj);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    if json_out {
        let mut ctx = report::context_json(&s, &proj, exact_counts.as_deref());
        if let Some(ex) = &exact_counts {
            ctx["exactTokensSum"] = json!(ex.iter().flatten().sum::<u64>());
            ctx["exactEncoding"] = json!(enc.name());
        }
        print_json(&json!({
            "file": file.file_name().map(|f| f.to_string_lossy().to_string()),
            "leafId": leaf.map(|l| s.entries[l].id.to_string()),
            "leafIdx": leaf,
            "pathIds": path.iter().map(|&i| s.entries[i].id.to_string()).collect::<Vec<_>>(),
            "pathIdx": path,
            "context": ctx,
            "contextTokens": report::tokens_json(&ctx_tokens),
            "projectedContextTokens": report::tokens_json(&projected),
            "contextWindow": window,
            "reserveTokens": settings.reserve_tokens(mref),
            "diagnostics": report::diagnostics_json(&s),
        }));
        return Ok(());
    }
    println!(
        "{} messages at leaf {} · model {} · thinking {}",
        msgs.len(),
        leaf.map(|l| s.entries[l].id.to_string())
            .unwrap_or_else(|| "(none)".into()),
        model
            .as_ref()
            .map(|(p, m)| format!("{p}/{m}"))
            .unwrap_or_else(|| "(unknown)".into()),
        proj.thinking_level
    );
    println!(
        "{:>4}  {:<18} {:>8} {:>8}  {:<8} summary",
        "#", "role", "est", "exact", "entry"
    );
    for (k, m) in msgs.iter().enumerate() {
        let v = context::materialize(&s, m);
        let preview = crate::engine::view::tree_view::one_line(&crate::engine::view::tokens::message_text(&v), 60);
        let ex = exact_counts
            .as_ref()
            .and_then(|e| e[k])
            .map(|n| n.to_string())
            .unwrap_or_default();
        let edited = if m.replaced_by.is_some() { " (edited)" } else { "" };
        println!(
            "{:>4}  {:<18} {:>8} {:>8}  {:<8} {}{}",
            k,
            m.role.as_str(),
            m.est_tokens,
            ex,
            s.entries[m.source].id,
            preview,
            edited
        );
    }
    // The rows' sum first, on the estimate; Pi's figure and the exact count each labelled.
    use crate::engine::units::{self, Basis};
    let win = window.map(|w| format!(" of {}", units::count(w))).unwrap_or_default();
    let composed = if ctx_tokens.last_usage_index.is_some() {
        format!(
            "usage {} + est. {}",
            units::tokens(ctx_tokens.usage_tokens),
            units::tokens(ctx_tokens.trailing_tokens)
        )
    } else {
        "an estimate: no usage yet".into()
    };
    println!(
        "context: {} tokens ({}, the rows' sum) · {} {}{win} ({composed}){}",
        units::count(msgs.iter().map(|m| m.est_tokens).sum::<u64>()),
        Basis::Estimate.label(),
        Basis::Pi.label(),
        units::tokens(ctx_tokens.tokens),
        exact_counts
            .as_ref()
            .map(|e| format!(
                " · {} {} ({})",
                Basis::Exact.label(),
                units::count(e.iter().flatten().sum::<u64>()),
                enc.name()
            ))
            .unwrap_or_default()
    );
    Ok(())
}

/// `bonsai context --live`: what the package sends at the leaf, through the same engine
/// function (`engine::live`) the package's `context` hook calls.
pub(super) fn context_live(
    s: &crate::engine::load::session::Session,
    file: &std::path::Path,
    leaf: Option<usize>,
    a: &ContextArgs,
) -> Result<()> {
    use crate::engine::live;
    let Some(leaf) = leaf else {
        return Err(eyre!("{}: the session has no entries, so no context", file.display()));
    };
    let (settings, ls) = live_settings_for(s, a);
    let reg = load_registry(&agent_dir());
    let path = s.path_to(leaf);
    let (model, window) = session_model(&context::project(s, &path), &reg);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let window = window.unwrap_or(crate::engine::load::models::DEFAULT_CONTEXT_WINDOW);
    let reserve = settings.reserve_tokens(mref);
    let env = live::CallEnv {
        context_window: window,
        reserve_tokens: reserve,
        prices: mref.and_then(|(p, m)| reg.find(p, m)).map(live::Prices::of_model),
    };
    let prices_of = |p: &str, m: &str| reg.find(p, m).map(live::Prices::of_model);
    let at = live::at_leaf(s, leaf, &env, &ls, &prices_of);
    let sent = at.answer.messages(&at.values);
    let shown = LiveShown {
        s,
        leaf,
        a,
        changed: at.answer.changed(at.values.len()),
        at: &at,
        sent: &sent,
    };
    if a.json {
        print_live_json(&shown, file, window, reserve);
    } else {
        print_live_text(&shown);
    }
    Ok(())
}

/// The live policy's settings for the session: the project's (Pi runs in the session's
/// folder), with the flags over them.
fn live_settings_for(
    s: &crate::engine::load::session::Session,
    a: &ContextArgs,
) -> (crate::engine::settings::Settings, crate::engine::live::LiveSettings) {
    use crate::engine::live::LivePolicy;
    // Pi runs in the session's folder, and reads that project's settings.
    let project = std::path::PathBuf::from(s.header.cwd.as_deref().unwrap_or("."));
    let settings = load_settings(if project.is_dir() {
        &project
    } else {
        std::path::Path::new(".")
    });
    let mut ls = settings.live_settings();
    for p in &ls.problems {
        eprintln!("bonsai: {p}");
    }
    let compat = a.compat.is_some();
    match a.policy.as_deref().and_then(LivePolicy::parse) {
        Some(LivePolicy::Output { .. }) => ls.policy = LivePolicy::Output { compat },
        Some(p) => ls.policy = p,
        None => {
            if compat && let LivePolicy::Output { .. } = ls.policy {
                ls.policy = LivePolicy::Output { compat: true };
            }
        }
    }
    (settings, ls)
}

/// What `context --live` prints from.
struct LiveShown<'a> {
    s: &'a crate::engine::load::session::Session,
    leaf: usize,
    a: &'a ContextArgs,
    /// The policy changed what Pi sends (Pi then puts its current system message first).
    changed: bool,
    at: &'a crate::engine::live::AtLeaf,
    sent: &'a [Value],
}

impl LiveShown<'_> {
    /// Pi restores its system messages: in place when nothing changed, else its current one
    /// first.
    fn system(&self) -> Option<Value> {
        if !self.changed {
            return None;
        }
        let all: Vec<&context::ContextMessage> = self.at.proj.messages().collect();
        context::current_system_message(self.s, &all)
    }
}

/// `context --live --json`: each message sent, described (whole with --content).
fn print_live_json(l: &LiveShown, file: &std::path::Path, window: u64, reserve: u64) {
    use crate::engine::live::{self, Piece};
    let LiveShown {
        s,
        leaf,
        a,
        changed,
        at,
        sent,
    } = *l;
    let all: Vec<&context::ContextMessage> = at.proj.messages().collect();
    let system = l.system();
    let r = &at.answer.report;
    let mut out_msgs = Vec::new();
    let described = |m: &context::ContextMessage| Value::Object(report::describe_message(s, m));
    if changed {
        if let Some(sys) = &system {
            let mut d = json!({"role": "system", "estTokens": context::estimate_value(sys), "live": "system"});
            if a.content {
                d["message"] = sys.clone();
            }
            out_msgs.push(d);
        }
    } else {
        for m in all.iter().filter(|m| m.role == Role::System) {
            let mut d = described(m);
            d["live"] = json!("system");
            if a.content {
                d["message"] = context::materialize(s, m);
            }
            out_msgs.push(d);
        }
    }
    for (piece, v) in at.answer.pieces.iter().zip(sent) {
        let mut d = match piece {
            Piece::Keep(i) => {
                let mut d = described(&at.refs[*i]);
                d["live"] = json!("kept");
                d
            }
            Piece::Replace(i, _) => {
                let mut d = described(&at.refs[*i]);
                d["estTokens"] = json!(context::estimate_value(v));
                d["live"] = json!(if crate::engine::edit::prune::is_pruned(&v["content"]) {
                    "pruned"
                } else {
                    "distilled"
                });
                d
            }
            Piece::Insert(_) => json!({
                "role": "custom",
                "customType": live::PACKET_TYPE,
                "estTokens": context::estimate_value(v),
                "live": "packet",
            }),
        };
        if a.content {
            d["message"] = v.clone();
        }
        out_msgs.push(d);
    }
    print_json(&json!({
        "file": file.file_name().map(|f| f.to_string_lossy().to_string()),
        "leafId": s.entries[leaf].id.to_string(),
        "leafIdx": leaf,
        "live": crate::serve::protocol::Report::of(r),
        "changed": changed,
        "context": {"messages": out_msgs, "messageCount": out_msgs.len()},
        "contextWindow": window,
        "reserveTokens": reserve,
    }));
}

/// `context --live`: one row per message sent, then the figures.
fn print_live_text(l: &LiveShown) {
    use crate::engine::live::Piece;
    let LiveShown { s, leaf, at, sent, .. } = *l;
    let system = l.system();
    let r = &at.answer.report;
    println!(
        "live context at leaf {} · policy {} · {}",
        s.entries[leaf].id,
        r.policy,
        r.zone
            .map(|z| format!("zone {}", z.name()))
            .unwrap_or_else(|| "no zone".into())
    );
    println!(
        "{:>4}  {:<18} {:>8}  {:<10} {:<8} summary",
        "#", "role", "est", "live", "entry"
    );
    let mut k = 0;
    if let Some(sys) = &system {
        println!(
            "{:>4}  {:<18} {:>8}  {:<10} {:<8}",
            k,
            "system",
            context::estimate_value(sys),
            "system",
            ""
        );
        k += 1;
    }
    for (piece, v) in at.answer.pieces.iter().zip(sent) {
        let (what, entry) = match piece {
            Piece::Keep(i) => ("kept", s.entries[at.refs[*i].source].id.to_string()),
            Piece::Replace(i, _) => (
                if crate::engine::edit::prune::is_pruned(&v["content"]) {
                    "pruned"
                } else {
                    "distilled"
                },
                s.entries[at.refs[*i].source].id.to_string(),
            ),
            Piece::Insert(_) => ("packet", String::new()),
        };
        let preview = tree_view::one_line(&crate::engine::view::tokens::message_text(v), 60);
        println!(
            "{:>4}  {:<18} {:>8}  {:<10} {:<8} {}",
            k,
            v.get("role").and_then(|r| r.as_str()).unwrap_or(""),
            context::estimate_value(v),
            what,
            entry,
            preview
        );
        k += 1;
    }
    // The words and bases /ctx-status uses.
    use crate::engine::units::{Basis, count, tokens};
    println!(
        "whole context {} tokens ({} for the last call, with what bonsai left out added back) · {} {} of {} tokens of messages ({}) · T {} · turns {}/{} · {}",
        tokens(r.whole),
        Basis::Pi.label(),
        Basis::Sent.label(),
        count(r.tokens_sent),
        count(r.tokens_full),
        Basis::Estimate.label(),
        count(r.threshold),
        r.turns_kept,
        r.turns_total,
        r.note
    );
}
