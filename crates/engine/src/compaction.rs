//! Compaction and branch summaries: where Pi would cut, what a summary is made from, the
//! offline summary, the summary strategies and the recall score that compares them.

pub mod audit;
pub mod branch_summary;
pub mod cut;
pub mod offline;
pub mod recall;
pub mod serialize;
pub mod slices;
pub mod strategy;
pub mod summary;
pub mod terms;
