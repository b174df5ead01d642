//! `bonsai undo`: bonsai's last write taken back.

use super::args::{SessionArg, WriteFlags};
use super::common::load;
use super::write_flow::write_undo;
use clap::Args;
use color_eyre::eyre::{Result, eyre};

#[derive(Args, Debug)]
pub struct UndoArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn undo(a: UndoArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let u = crate::engine::edit::undo::plan(&s).map_err(|e| eyre!("nothing undone: {e}"))?;
    write_undo(&a.session.file, &s, u, &a.write)
}
