//! The session engine: pure and synchronous. No terminal, no network.

pub mod actions;
pub mod branch;
pub mod compaction;
pub mod context;
pub mod js;
pub mod lenient;
pub mod mapped;
pub mod models;
pub mod report;
pub mod scan;
pub mod serialize;
pub mod session;
pub mod settings;
pub mod summarize;
pub mod tokens;
pub mod tree;
pub mod tree_view;
