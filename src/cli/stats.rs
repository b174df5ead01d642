//! `bonsai stats`: the session's figures.

use super::args::{LeafArg, SessionArg};
use super::common::{load_for_reading, print_json, resolve_leaf, session_model};
use crate::engine::load::entry::{Kind, Role};
use crate::engine::report;
use crate::engine::view::context;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use clap::Args;
use color_eyre::eyre::Result;
use serde_json::json;

#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    /// How many of the largest entries to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn stats(a: StatsArgs) -> Result<()> {
    let (file, top, json_out) = (a.session.file.as_path(), a.top, a.json);
    let settings = load_settings(&cwd());
    let s = load_for_reading(file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    let (types, roles) = report::counts_json(&s);
    let mut by_role: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut by_tool: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut largest: Vec<(u64, usize)> = Vec::new();
    s.prefetch_measures(0..s.entries.len());
    for (i, e) in s.entries.iter().enumerate() {
        let est: u64 = context::intrinsic_messages(&s, i).iter().map(|m| m.est_tokens).sum();
        largest.push((est, i));
        if let Kind::Message(m) = &e.kind {
            let r = by_role.entry(m.role.as_str().to_string()).or_default();
            r.0 += 1;
            r.1 += s.measures(m).est_tokens;
            if m.role == Role::ToolResult {
                let t = by_tool
                    .entry(m.tool_name.as_deref().unwrap_or("?").to_string())
                    .or_default();
                t.0 += 1;
                t.1 += s.measures(m).est_tokens;
            }
        }
    }
    largest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    largest.truncate(top);
    let path = leaf.map(|l| s.path_to(l)).unwrap_or_default();
    let proj = context::project(&s, &path);
    let msgs: Vec<_> = proj.messages().collect();
    let ctx = context::estimate_context_tokens(&s, &msgs);
    let reg = load_registry(&agent_dir());
    let (model, window) = session_model(&proj, &reg);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let reserve = settings.reserve_tokens(mref);
    let threshold = window.map(|w| w as i64 - reserve as i64);
    let describe = |i: usize| {
        let e = &s.entries[i];
        let what = match &e.kind {
            Kind::Message(m) if m.role == Role::ToolResult => {
                format!("toolResult {}", m.tool_name.as_deref().unwrap_or("?"))
            }
            Kind::Message(m) => m.role.as_str().to_string(),
            k => k.type_name().to_string(),
        };
        (e.id.to_string(), e.line, what)
    };
    if json_out {
        print_json(&json!({
            "file": file.file_name().map(|f| f.to_string_lossy().to_string()),
            "bytes": s.buf.len(),
            "entries": s.entries.len(),
            "skippedLines": s.skipped_lines,
            "sessionName": s.session_name(),
            "entryTypeCounts": types,
            "messageRoleCounts": roles,
            "tokensByRole": by_role.iter().map(|(k, (n, t))| (k.clone(), json!({"count": n, "estTokens": t}))).collect::<serde_json::Map<_, _>>(),
            "tokensByTool": by_tool.iter().map(|(k, (n, t))| (k.clone(), json!({"count": n, "estTokens": t}))).collect::<serde_json::Map<_, _>>(),
            "largestEntries": largest.iter().map(|&(t, i)| { let (id, line, what) = describe(i); json!({"id": id, "idx": i, "line": line, "what": what, "estTokens": t}) }).collect::<Vec<_>>(),
            "leafId": leaf.map(|l| s.entries[l].id.to_string()),
            "model": model.as_ref().map(|(p, m)| format!("{p}/{m}")),
            "contextTokens": report::tokens_json(&ctx),
            "contextWindow": window,
            "reserveTokens": reserve,
            "compactionThreshold": threshold,
            "diagnostics": report::diagnostics_json(&s),
        }));
        return Ok(());
    }
    println!(
        "{} · {} bytes · {} entries · {} skipped lines",
        file.display(),
        s.buf.len(),
        s.entries.len(),
        s.skipped_lines
    );
    if let Some(n) = s.session_name() {
        println!("name: {n}");
    }
    println!(
        "entries by type: {}",
        types
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| match k.as_str() {
                "" => format!("(empty type) {v}"),
                "undefined" => format!("(no type) {v}"),
                _ => format!("{k} {v}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("estimated tokens by role:");
    for (k, (n, t)) in &by_role {
        println!("  {k:<18} {n:>7} msgs {t:>10} tokens");
    }
    println!("estimated tokens by tool (results):");
    for (k, (n, t)) in &by_tool {
        println!("  {k:<18} {n:>7} calls {t:>9} tokens");
    }
    println!("largest entries:");
    for &(t, i) in &largest {
        let (id, line, what) = describe(i);
        println!("  {t:>9} tokens  {id}  line {line:<7} {what}");
    }
    use crate::engine::units::{self, Basis};
    let pct = |w: u64| {
        format!(
            " = {} % of {}",
            units::percent(ctx.tokens.round() as u64, w).unwrap_or(0),
            units::count(w)
        )
    };
    println!(
        "context at leaf: {} tokens ({}){}{}",
        units::tokens(ctx.tokens),
        Basis::Pi.label(),
        window.map(pct).unwrap_or_else(|| " (model window unknown)".into()),
        threshold
            .map(|t| format!("; Pi compacts above {}", units::count(t.max(0) as u64)))
            .unwrap_or_default()
    );
    Ok(())
}
