//! pi-bonsai: browse, prune and compact Pi coding-agent session trees.
//!
//! Layers, one way: `engine` (pure) ← `store` (files, Pi's config, the clock) and `llm` (the
//! only HTTP) ← `serve` (the engine for bonsai's Pi package, a protocol server), `ui` and
//! `cli` (thin glue).

// A panic is a bug report; outside tests every fallible step says what went wrong instead.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod cli;
pub use bonsai_engine as engine;
pub mod llm;
pub mod serve;
pub mod store;
pub mod ui;

/// mimalloc: loading a big session makes a few hundred thousand small allocations on two
/// threads, and glibc's allocator spent a sixth of the load in them (measured with perf).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
