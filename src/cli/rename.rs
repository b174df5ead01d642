//! `bonsai rename`: the session's name.

use super::args::{RequiredSessionArg, WriteFlags};
use super::common::load;
use super::write_flow::append_simple;
use crate::engine::edit::plan::Write;
use clap::Args;
use color_eyre::eyre::{Result, bail};

#[derive(Args, Debug)]
pub struct RenameArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The session's new name (shown by Pi's /resume and bonsai's picker).
    #[arg(required_unless_present = "suggest", conflicts_with = "suggest")]
    pub name: Option<String>,
    /// Write the title bonsai made for an unnamed session (from its first request, or the
    /// newest summary's goal; what `bonsai list` shows with `~`) as its name.
    #[arg(long)]
    pub suggest: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn rename(a: RenameArgs) -> Result<()> {
    let name = match a.name {
        Some(n) => n,
        None => {
            let s = load(&a.session.file)?;
            if let Some(n) = s.session_name() {
                bail!(
                    "{} is already named \"{n}\"; give a NAME to change it (--suggest names only an unnamed session)",
                    a.session.file.display()
                );
            }
            match crate::engine::view::title::of_session(&s) {
                Some(t) => t,
                None => bail!(
                    "{} has no user request and no summary to make a title from; give a NAME",
                    a.session.file.display()
                ),
            }
        }
    };
    append_simple(&a.session.file, &a.write, "a session name", Write::SessionName { name })
}
