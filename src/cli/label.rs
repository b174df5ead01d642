//! `bonsai label`: a label on an entry.

use super::args::{RequiredSessionArg, WriteFlags};
use super::common::{load, resolve_ref};
use super::write_flow::append_simple;
use crate::engine::edit::plan::Write;
use clap::Args;
use color_eyre::eyre::Result;

#[derive(Args, Debug)]
pub struct LabelArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The entry to label: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    /// The label; without it the entry's label is cleared.
    pub label: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn label(a: LabelArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let target = s.entries[resolve_ref(&s, &a.target)?].id.to_string();
    let what = if a.label.is_some() {
        "a label"
    } else {
        "a label change (cleared)"
    };
    append_simple(&a.session.file, &a.write, what, Write::Label { target, label: a.label })
}
