//! The session engine: pure and synchronous. It takes bytes, settings and a clock as values
//! (the store reads files, configuration and time); no terminal, network, files or
//! environment here.

pub mod actions;
pub mod archive;
pub mod branch;
pub mod bytes;
pub mod compaction;
pub mod context;
pub mod delete;
pub mod entry;
pub mod export;
pub mod js;
pub mod lenient;
pub mod live;
pub mod models;
pub mod pi_version;
pub mod prune;
pub mod recall;
pub mod report;
pub mod scan;
pub mod search;
pub mod serialize;
pub mod session;
pub mod settings;
pub mod slices;
pub mod strategy;
pub mod summarize;
pub mod syntax;
pub mod terms;
pub mod text_width;
pub mod tokens;
pub mod tree;
pub mod tree_view;
pub mod undo;
pub mod usage;
pub mod write_plan;
