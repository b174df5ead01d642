//! The arguments several commands share, flattened into each command's own (which live
//! beside their handlers): the session file, the leaf, the cut's budget, the write flags.

use clap::Args;
use std::path::PathBuf;

/// FILE when none is given: this project's newest session (resolved before the command runs).
pub(super) const PROJECT_SESSION: &str = "@project";

/// The session a command reads or writes (flattened into each command's arguments).
#[derive(Args, Debug)]
pub struct SessionArg {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
}

/// The session a command changes, named by the user (no default: the command must say which).
#[derive(Args, Debug)]
pub struct RequiredSessionArg {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
}

/// Where on the session's tree a command works.
#[derive(Args, Debug)]
pub struct LeafArg {
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
}

/// The cut's two settings, each defaulting to Pi's.
#[derive(Args, Debug)]
pub struct CutBudget {
    /// keepRecentTokens: how many recent tokens the cut keeps (default: Pi's settings, 20000).
    #[arg(long)]
    pub keep_recent_tokens: Option<u64>,
    /// reserveTokens: tokens kept free for the reply (default: Pi's settings, 16384).
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
}

/// What every appending command takes.
#[derive(Args, Debug)]
pub struct WriteFlags {
    /// Print what would be written and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write without asking. Without it bonsai shows what it would write and asks (y/N) on a
    /// terminal; without a terminal it writes nothing and exits with an error.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON (what was written, or would be) instead of one line of text.
    #[arg(long)]
    pub json: bool,
}
