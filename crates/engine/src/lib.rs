//! bonsai's session engine: pure and synchronous. It takes bytes, settings and a clock as
//! values (the store reads files, configuration and time); no terminal, network, files or
//! environment here, and this crate's dependencies hold none of them, so the compiler keeps it
//! that way (`the_engine_reads_no_file_clock_or_environment` in `tests/architecture.rs` checks the
//! source and the manifest too).
//!
//! Folders, one way (each uses only those before it):
//! - `load`: bytes → a `Session` (the line scanners, Pi's forgiving JSON, JavaScript's numbers),
//!   and Pi's model list → model facts.
//! - `view`: what a loaded session looks like: the tree, `/tree`'s rows, the model's context,
//!   token counts, search, archived branches.
//! - `compaction`: where a compaction cuts, what it summarizes, the offline summary, the
//!   strategies and their recall score, branch summaries.
//! - `edit`: the entries bonsai writes and the plans behind them: prune's context edits,
//!   undo, delete.
//!
//! and beside them, using any of those: `live` (the live context policy), `settings` (what
//! Pi's settings mean), `usage` (what calls cost), `export` and `report` (documents and stable
//! JSON).

// A panic is a bug report; outside tests every fallible step says what went wrong instead.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod compaction;
pub mod edit;
pub mod export;
pub mod live;
pub mod load;
pub mod report;
pub mod settings;
pub mod units;
pub mod usage;
pub mod view;
