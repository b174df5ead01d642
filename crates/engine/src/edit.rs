//! What bonsai writes: the entries (built as Pi builds them), the plan each write is decided
//! again on right before it lands, prune's context edits, undo, and deleting a dead branch.

pub mod delete;
pub mod entries;
pub mod plan;
pub mod prune;
pub mod undo;
