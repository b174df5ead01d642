//! `bonsai repair`: a damaged session made readable again.

use super::args::{SessionArg, WriteFlags};
use super::write_flow::confirm;
use crate::store::{self};
use clap::Args;
use color_eyre::eyre::Result;

#[derive(Args, Debug)]
pub struct RepairArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Also remove an unfinished last line bonsai did not write (only when Pi is not running:
    /// Pi may be writing that line).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn repair(a: RepairArgs) -> Result<()> {
    let what = |ours: bool| {
        if ours {
            "the unfinished entry bonsai was writing when it was stopped"
        } else {
            "an unfinished last line"
        }
    };
    // Where the bytes are: the end of the file, or inside it with Pi's lines after them.
    let whence = |removed: &std::ops::Range<usize>, len: usize| {
        if removed.end >= len {
            "from the end of".to_string()
        } else {
            format!(
                "at byte {} of (Pi's {} bytes after them kept)",
                removed.start,
                len - removed.end
            )
        }
    };
    if !a.write.yes {
        let plan = store::write::repair_plan(&a.session.file, a.force)?;
        println!(
            "would remove {} bytes ({}) {} {}, keeping a backup",
            plan.removed.len(),
            what(plan.ours),
            whence(&plan.removed, plan.file_len()),
            a.session.file.display(),
        );
    }
    if !confirm(&a.write, "the repaired session", &a.session.file)? {
        return Ok(());
    }
    let r = store::repair(&a.session.file, a.force)?;
    println!(
        "removed {} bytes ({}) {} {}; the file as it was is in {}",
        r.removed.len(),
        what(r.ours),
        if r.rewritten {
            "from inside (Pi's lines after them kept)"
        } else {
            "from the end of"
        },
        a.session.file.display(),
        r.backup.display()
    );
    Ok(())
}
