//! `bonsai export`: the session as HTML or Markdown.

use super::args::SessionArg;
use super::common::{load_for_reading, resolve_leaf};
use super::out;
use crate::store::config::{cwd, load_settings};
use clap::Args;
use color_eyre::eyre::{Result, eyre};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Export the path to this entry (an id, or idx:N for the N-th entry, 0-based) instead of
    /// the file's last entry.
    #[arg(long, conflicts_with = "tree")]
    pub leaf: Option<String>,
    /// Every entry, branch by branch, instead of one path.
    #[arg(long)]
    pub tree: bool,
    /// md: Markdown (thinking and long tool output folded in <details>); html: one
    /// self-contained page (highlighted code, folds, light and dark); json: the entries as the
    /// file has them, with the header. Default: from OUTPUT's extension, else md.
    #[arg(long, value_parser = ["md", "html", "json"])]
    pub format: Option<String>,
    /// Write to this file (a new one; an existing file is refused without --force) instead of
    /// standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Replace OUTPUT if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,
}

pub fn export(a: ExportArgs) -> Result<()> {
    use crate::engine::export::{self, Scope};
    let s = load_for_reading(&a.session.file, &load_settings(&cwd()))?;
    let scope = if a.tree {
        Scope::Tree
    } else {
        Scope::Path(resolve_leaf(&s, a.leaf.as_deref())?.ok_or_else(|| eyre!("the session has no entries"))?)
    };
    let by_extension = a.output.as_deref().and_then(export::format_for);
    let text = match a.format.as_deref().or(by_extension).unwrap_or("md") {
        "json" => export::json(&s, scope),
        "html" => export::html(&s, scope).into_bytes(),
        _ => export::markdown(&s, scope).into_bytes(),
    };
    // `-o -` is standard output, as for most tools (it wrote a file named "-").
    let output = a.output.as_ref().filter(|o| o.as_os_str() != "-");
    match output {
        None => {
            // A terminal (or whatever shows this later) never sees the session's escapes.
            out::stdout_bytes(&out::visible_bytes(&text));
        }
        Some(out) => {
            if out.exists() && !a.force {
                return Err(eyre!(
                    "{} exists; nothing written (--force replaces it, or choose another name)",
                    out.display()
                ));
            }
            crate::store::write_document(out, &text, a.force, &a.session.file)?;
            eprintln!("bonsai: wrote {} ({} bytes)", out.display(), text.len());
        }
    }
    Ok(())
}
