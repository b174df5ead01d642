//! `bonsai migrate`: an old session brought to Pi's current format.

use super::args::{SessionArg, WriteFlags};
use super::common::{load, print_json};
use super::write_flow::confirm;
use crate::store::{self};
use clap::Args;
use color_eyre::eyre::Result;
use serde_json::json;

#[derive(Args, Debug)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn migrate(a: MigrateArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    if s.header.version >= 3.0 {
        println!("{} is already version 3; nothing to do", a.session.file.display());
        return Ok(());
    }
    let what = format!(
        "version 3 in place of version {} (the file as it is kept beside it as a backup)",
        s.header.version
    );
    if !a.write.yes {
        println!("would rewrite {} as {what}", a.session.file.display());
    }
    if !confirm(&a.write, "the migrated session", &a.session.file)? {
        return Ok(());
    }
    let bak = store::migrate(&a.session.file)?;
    if a.write.json {
        print_json(&json!({"written": true, "file": a.session.file, "backup": bak}));
    } else {
        println!(
            "migrated {} to version 3 (backup: {})",
            a.session.file.display(),
            bak.display()
        );
    }
    Ok(())
}
