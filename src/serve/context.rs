//! `context`: Pi's messages before a model call, and the messages to send instead.
//!
//! Only what Pi appended since the last call comes: the engine keeps the messages it was
//! sent and the chain of their fingerprints (the package's). A `baseHash` that is not the
//! engine's chain at `base` is answered with `resync`, and the package sends the whole list.

use super::protocol::{Context, ContextAnswer, Fail, Kept, PieceOut, Report, bad};
use super::served::Served;
use crate::engine::live::{self, Piece, Prices};

/// The chain after one more message's fingerprint: FNV-1a over the chain's and the
/// fingerprint's bytes, little-endian (the package computes the same).
pub fn chain_next(chain: u32, fingerprint: u32) -> u32 {
    let mut h = super::served::CHAIN_START;
    for b in chain.to_le_bytes().into_iter().chain(fingerprint.to_le_bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// A fingerprint as the package writes it: 8 hex digits (none: 0).
fn fingerprint(h: Option<&String>) -> Result<u32, Fail> {
    match h {
        None => Ok(0),
        Some(h) => u32::from_str_radix(h, 16).map_err(|_| bad(format!("hash {h:?} is not 8 hex digits"))),
    }
}

pub fn context(state: &mut Served, p: Context) -> Result<ContextAnswer, Fail> {
    let Context {
        base,
        base_hash,
        messages,
        hashes,
        usage,
        model,
    } = p;
    if let Some((k, _)) = messages.iter().enumerate().find(|(_, m)| !m.is_object()) {
        return Err(bad(format!("messages[{k}] is not an object")));
    }
    if hashes.as_ref().is_some_and(|h| h.len() != messages.len()) {
        return Err(bad("\"hashes\" must have one fingerprint per message"));
    }
    if base > 0 {
        let held = state.chain.get(base).map(|c| format!("{c:08x}"));
        if held.is_none() || base_hash != held {
            return Err(Fail(
                "resync",
                format!(
                    "the engine holds {} messages and another chain: send the whole list",
                    state.messages.len()
                ),
            ));
        }
    }
    if base < state.messages.len() {
        state.messages.truncate(base);
        state.chain.truncate(base + 1);
        state.state.truncate(base);
    }
    for (k, m) in messages.into_iter().enumerate() {
        let h = fingerprint(hashes.as_ref().and_then(|h| h.get(k)))?;
        let next = chain_next(*state.chain.last().expect("the chain has its start"), h);
        state.chain.push(next);
        state.messages.push(m);
    }
    let env = state.call_env(usage.as_ref(), model.as_ref());
    let registry = &state.registry;
    let prices_of = |a: &str, b: &str| registry.find(a, b).map(Prices::of_model);
    let src = live::ValueSource::new(&state.messages, &prices_of);
    let answer = state.state.answer(&src, &env, &state.live);
    state.calls += 1;
    let changed = answer.changed(state.messages.len());
    state.last_sending = vec![live::recall::Sending::Not; state.messages.len()];
    for piece in &answer.pieces {
        match piece {
            Piece::Keep(i) => state.last_sending[*i] = live::recall::Sending::Whole,
            Piece::Replace(i, _) => state.last_sending[*i] = live::recall::Sending::Changed,
            Piece::Insert(_) => {}
        }
    }
    let out = ContextAnswer {
        changed,
        report: Report::of(&answer.report),
        held: state.messages.len(),
        notice: answer.report.step.as_ref().map(|s| s.notice()),
        pieces: changed.then(|| pieces_out(answer.pieces)),
    };
    state.last = Some(answer.report);
    Ok(out)
}

/// The answer's pieces, Pi's messages in runs (a reply lists what is sent, not Pi's ten
/// thousand messages one by one).
fn pieces_out(pieces: Vec<Piece>) -> Vec<PieceOut> {
    let mut out: Vec<PieceOut> = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    let flush = |out: &mut Vec<PieceOut>, run: &mut Option<(usize, usize)>| {
        if let Some((a, b)) = run.take() {
            let keep = if b == a + 1 { Kept::One(a) } else { Kept::Run([a, b]) };
            out.push(PieceOut::Keep { keep });
        }
    };
    for piece in pieces {
        match piece {
            Piece::Keep(i) => match &mut run {
                Some((_, b)) if *b == i => *b = i + 1,
                _ => {
                    flush(&mut out, &mut run);
                    run = Some((i, i + 1));
                }
            },
            Piece::Replace(_, v) | Piece::Insert(v) => {
                flush(&mut out, &mut run);
                out.push(PieceOut::Message { message: v });
            }
        }
    }
    flush(&mut out, &mut run);
    out
}
