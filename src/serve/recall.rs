//! `recall`: `bonsai_recall`'s answer, the messages of the current path the model is not
//! sent now that match the query, word for word (`engine::live::recall`), within
//! `bonsai.live.recallTokens`.

use super::protocol::{Fail, Recall, RecallAnswer};
use super::served::Served;
use crate::engine::load::session::Session;
use crate::engine::view::context;
use serde_json::Value;

pub fn recall(state: &mut Served, p: Recall) -> Result<RecallAnswer, Fail> {
    use crate::engine::live::recall::{self, Sending};
    let sending = state.last_sending.clone();
    let how = |k: usize| sending.get(k).copied().unwrap_or(Sending::Whole);
    let file = state.file_of(p.session_file.as_deref());
    let mut from = "Pi's messages";
    let candidates = match file.as_deref().and_then(|f| state.read_session(f).ok()) {
        Some(s) => {
            let leaf = p.leaf_id.as_deref().and_then(|id| s.idx_of(id)).or_else(|| s.leaf());
            match leaf {
                Some(leaf) if in_step(&s, leaf, &state.messages) => {
                    from = "the session file";
                    recall::candidates_of_session(&s, leaf, &how)
                }
                _ => recall::candidates_of_messages(&state.messages, &how),
            }
        }
        None => recall::candidates_of_messages(&state.messages, &how),
    };
    let r = recall::recall(&candidates, &p.query, state.live.recall_tokens as usize * 4);
    Ok(RecallAnswer {
        text: r.text,
        matches: r.matches,
        shown: r.shown,
        searched: candidates.len(),
        from: from.into(),
    })
}

/// Whether Pi's context in the file at `leaf` starts with the messages the engine holds (the
/// file and the engine's list in step): then message `k` of one is message `k` of the other.
fn in_step(s: &Session, leaf: usize, held: &[Value]) -> bool {
    let proj = context::project(s, &s.path_to(leaf));
    let ctx: Vec<&context::ContextMessage> = proj
        .messages()
        .filter(|m| m.role != crate::engine::load::entry::Role::System)
        .collect();
    // The same roles, and the same words at every request (the messages that tell one
    // conversation from another).
    ctx.len() >= held.len()
        && ctx.iter().zip(held).all(|(m, v)| {
            let role = v.get("role").and_then(|r| r.as_str()).unwrap_or("");
            role == m.role.as_str()
                && (role != "user"
                    || context::content_text(context::materialize(s, m).get("content"), "\n")
                        == context::content_text(v.get("content"), "\n"))
        })
}
