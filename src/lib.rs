//! pi-bonsai: browse, prune and compact Pi coding-agent session trees.

pub mod actions_cli;
pub mod cli;
pub mod engine;
pub mod llm;
pub mod store;
pub mod ui;
