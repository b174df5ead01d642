//! `bonsai serve --stdio`: the command; the protocol server is its own room (`crate::serve`).

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Speak JSON lines over stdin and stdout (the only transport).
    #[arg(long, required = true)]
    pub stdio: bool,
    /// Append one JSON line per request to FILE: the method, how long it took and what was
    /// decided (no session text). Also `$BONSAI_SERVE_LOG`.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

pub fn serve(a: ServeArgs) -> color_eyre::eyre::Result<()> {
    crate::serve::serve_stdio(
        a.log
            .or_else(|| std::env::var_os("BONSAI_SERVE_LOG").map(PathBuf::from)),
        // Whole exchanges, session text included: for tests only (`tests/serve_protocol.rs`).
        std::env::var_os("BONSAI_SERVE_RECORD").map(PathBuf::from),
    )
}
