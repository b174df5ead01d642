//! `status`: what `/ctx-status` shows, worded and formatted here so that it says what the TUI
//! and the CLI say (`engine::units`). The bill so far is computed apart from the requests:
//! `/ctx-status` on a 1 GB session must not make the next model call wait seconds.

use super::protocol::{BillSoFar, PROTOCOL, Report, Status, StatusAnswer};
use super::served::{Served, engine_name};
use crate::engine::live::{self, CallEnv, LiveSettings, Prices};
use crate::engine::load::models::Registry;
use crate::engine::load::pi_version::PiVersion;
use crate::engine::settings::Settings;
use crate::store::config::agent_dir;
use std::path::Path;

pub fn status(state: &Served, p: Status) -> StatusAnswer {
    let file = state.file_of(p.session_file.as_deref());
    // The bill as last computed; a new computation starts apart when the file changed.
    let bill = file.as_deref().and_then(|f| {
        refresh_bill(state, f);
        let slot = state.bill.lock().unwrap_or_else(|e| e.into_inner());
        slot.value.clone().map(|b| BillSoFar {
            updating: Some(slot.running),
            ..b
        })
    });
    let mut out = StatusAnswer {
        engine: engine_name(),
        protocol: PROTOCOL,
        pi_version: state.pi.name().to_string(),
        settings: state.settings_view(),
        problems: state.live.problems.iter().map(|x| x.to_string()).collect(),
        calls: state.calls,
        steps: state.state.steps(),
        last: state.last.as_ref().map(Report::of),
        latch: state.latch.name(),
        last_decision: state.last_decision.clone(),
        compactions: state.compactions,
        bill,
        cwd: state.cwd.clone(),
        session_file: state.session_file.clone(),
        lines: Vec::new(),
    };
    out.lines = status_lines(state, &out, p.pi_figure);
    out
}

/// Start computing the bill of `file` apart, unless it is being computed or its figures
/// are of the file as it is now. The request that asks returns at once.
fn refresh_bill(state: &Served, file: &Path) {
    let stamp = std::fs::metadata(file).ok().map(|m| {
        (
            file.to_path_buf(),
            m.len(),
            m.modified().unwrap_or(std::time::UNIX_EPOCH),
        )
    });
    let Some(stamp) = stamp else { return };
    {
        let mut slot = state.bill.lock().unwrap_or_else(|e| e.into_inner());
        if slot.running || slot.of.as_ref() == Some(&stamp) {
            return;
        }
        slot.running = true;
    }
    let slot = state.bill.clone();
    let (settings, live, registry, pi) = (
        state.settings.clone(),
        state.live.clone(),
        state.registry.clone(),
        state.pi,
    );
    let file = file.to_path_buf();
    std::thread::spawn(move || {
        let value = bill_so_far(&settings, &live, &registry, pi, &file);
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.running = false;
        slot.of = Some(stamp);
        slot.value = value;
    });
}

/// `/ctx-status`'s lines; the package prints them. `pi_figure`: Pi's own figure now, as the
/// package reads it from Pi.
fn status_lines(state: &Served, st: &StatusAnswer, pi_figure: Option<f64>) -> Vec<String> {
    use crate::engine::units::{self, Basis};
    let mut out = vec![format!(
        "bonsai {} (protocol {PROTOCOL}, following Pi {}) · policy {} · summarizer {}",
        env!("CARGO_PKG_VERSION"),
        state.pi.name(),
        state.live.policy.name(),
        state.live.summarizer.name()
    )];
    match &state.last {
        Some(l) => {
            out.push(format!(
                "whole context {} tokens ({} for the last call, with what bonsai left out added back) · {} now {} · zone {} of T {}",
                units::tokens(l.whole),
                Basis::Pi.label(),
                Basis::Pi.label(),
                pi_figure.map(units::tokens).unwrap_or_else(|| "unknown".into()),
                l.zone.map(|z| z.words()).unwrap_or("-"),
                units::count(l.threshold),
            ));
            let mut sent = format!(
                "{} {} of {} tokens of messages ({}; the system prompt and tools come on top) · turns sent {} of {} · packet {}",
                Basis::Sent.label(),
                units::count(l.tokens_sent),
                units::count(l.tokens_full),
                Basis::Estimate.label(),
                l.turns_kept,
                l.turns_total,
                l.packet_tokens
                    .map(|t| format!("{} tokens", units::count(t)))
                    .unwrap_or_else(|| "none".into()),
            );
            if l.summaries_ahead > 0 {
                sent += &format!(
                    " · {} sent as written",
                    units::plural(l.summaries_ahead as u64, "summary", "summaries")
                );
            }
            if l.distilled > 0 {
                sent += &format!(
                    " · {} distilled",
                    units::plural(l.distilled as u64, "long output", "long outputs")
                );
            }
            if l.pruned > 0 {
                sent += &format!(" · {} pruned", units::count(l.pruned as u64));
            }
            out.push(sent);
            out.push(format!(
                "steps {}{} · {}",
                state.state.steps(),
                l.step
                    .as_ref()
                    .map(|s| format!(" (this call: {})", s.reason.name()))
                    .unwrap_or_default(),
                l.note
            ));
        }
        None => out.push("no model call yet".into()),
    }
    if let Some(b) = &st.bill {
        let hits = (b.cache_hits * 1000.0).round() as u64;
        out.push(format!(
            "cache hits {} % of input tokens · bill so far {} (Pi's records, {}) · ~{} without the package (estimated){}",
            units::percent(hits, 1000).unwrap_or(0),
            units::money(b.recorded),
            units::plural(b.calls, "call", "calls"),
            units::money(b.without_package),
            if b.unpriced > 0 { format!(" · {} unpriced", units::count(b.unpriced)) } else { String::new() },
        ));
        if b.updating == Some(true) {
            out.push("the bill is being brought up to date apart; /ctx-status again shows it".into());
        }
    } else if state.session_file.is_some() {
        out.push("bill so far: being computed apart (a long session takes seconds); /ctx-status again shows it".into());
    }
    out.push(format!(
        "early compaction {} · latch {}{} · {} · {}",
        if state.live.compact_early { "on" } else { "off" },
        state.latch.name(),
        state
            .last_decision
            .as_ref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default(),
        units::plural(state.compactions, "compaction", "compactions"),
        units::plural(state.calls, "call", "calls"),
    ));
    if let Some(a) = &state.last_audit {
        out.push(format!(
            "last compaction: {}",
            a.trim_start_matches("bonsai: the compaction ")
        ));
    }
    if !st.problems.is_empty() {
        out.push(format!("settings not used: {}", st.problems.join("; ")));
    }
    out
}

/// The session's bill so far: as Pi recorded it, and the same calls replayed without the
/// package (estimated), with the cache hits Pi recorded.
fn bill_so_far(
    settings: &Settings,
    live_settings: &LiveSettings,
    registry: &Registry,
    pi: PiVersion,
    file: &Path,
) -> Option<BillSoFar> {
    use crate::store::index;
    let place = index::Place::in_agent(&agent_dir(), settings);
    let s = index::open_proven(file, &place).ok()?.session.read_as(pi);
    let env_of = |m: Option<(&str, &str)>| {
        let (window, reserve) = m
            .and_then(|(a, b)| registry.find(a, b))
            .map(|x| (x.context_window, settings.reserve_tokens(m)))
            .unwrap_or((
                crate::engine::load::models::DEFAULT_CONTEXT_WINDOW,
                settings.reserve_tokens(m),
            ));
        CallEnv {
            context_window: crate::engine::load::models::window_or_default(Some(window)),
            reserve_tokens: reserve,
            prices: m.and_then(|(a, b)| registry.find(a, b).map(Prices::of_model)),
        }
    };
    let off = live_settings.with_policy(live::LivePolicy::Off);
    let b = live::bill::bill_with(&s, &[off], registry, &env_of, false);
    let r = &b.recorded;
    let prompt = r.tokens.input + r.tokens.cache_read + r.tokens.cache_write;
    Some(BillSoFar {
        calls: r.calls,
        recorded: r.cost + r.summary_cost,
        cache_hits: if prompt > 0.0 {
            r.tokens.cache_read / prompt
        } else {
            0.0
        },
        without_package: b.policies[0].cost + r.summary_cost,
        unpriced: r.unpriced,
        updating: None,
    })
}
