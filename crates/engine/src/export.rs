//! A session as a document to read or share: the path to a leaf (what the conversation was) or
//! the whole tree (every branch), as Markdown, HTML (`html`: the Markdown rendered, with
//! highlighted code) or JSON. Pure: it reads the loaded session and
//! returns text; where it goes is the caller's business.
//!
//! Markdown keeps the reading flow: user and assistant text as paragraphs, thinking and long
//! tool output folded in `<details>` blocks (GitHub, GitLab and most viewers open them on click),
//! tool calls with their arguments, compactions and branch summaries marked as such, labels on
//! their entry, and per turn Pi's token estimate and the reply's reported usage.

mod html;
mod markdown;
pub use html::{HIGHLIGHT_BUDGET, html};
pub use markdown::{Scope, format_for, json, markdown, write_json};
