//! `bonsai fork` and `bonsai clone`: a new session file from a path of this one.

use super::args::{LeafArg, RequiredSessionArg, SessionArg, WriteFlags};
use super::common::{copy_to_clipboard, load, print_json, resolve_leaf, resolve_ref};
use super::write_flow::confirm;
use crate::engine::edit::entries;
use crate::engine::load::entry::Role;
use crate::engine::view::context;
use crate::store::config::cwd;
use crate::store::{self};
use clap::Args;
use color_eyre::eyre::{Result, bail};
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct ForkArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The user message to fork before: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct CloneArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

/// Fork (before a user message, like Pi's /fork) or clone (at the leaf, like /clone).
pub fn fork(file: &Path, target: Option<&str>, leaf: Option<&str>, w: &WriteFlags) -> Result<()> {
    let s = load(file)?;
    let (cut_at, text) = match target {
        Some(t) => {
            let i = resolve_ref(&s, t)?;
            let e = &s.entries[i];
            if e.message().map(|m| &m.role) != Some(&Role::User) {
                bail!(
                    "fork works at a user message (Pi's /fork); {} is a {}",
                    e.id,
                    e.kind.type_name()
                );
            }
            let v = s.entry_value(i);
            (
                s.parent_of(i),
                Some(context::content_text(v["message"].get("content"), "")),
            )
        }
        None => (resolve_leaf(&s, leaf)?, None),
    };
    let now = store::clock::now_ms();
    let sid = entries::session_id(now, store::clock::entropy());
    let abs = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let cwd = s
        .header
        .cwd
        .clone()
        .unwrap_or_else(|| cwd().to_string_lossy().to_string());
    let header = entries::session_header(&sid, &cwd, Some(&abs.to_string_lossy()), now);
    let lines = entries::branched_session(&s, cut_at, header, store::clock::entropy());
    let dir = abs
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let out = store::new_session_path(&dir, &sid, now);
    let what = format!(
        "a new session ({} entr{}{})",
        lines.len() - 1,
        if lines.len() == 2 { "y" } else { "ies" },
        if target.is_some() {
            ", forked before the user message"
        } else {
            ", the active branch"
        }
    );
    if !w.yes {
        if w.json {
            print_json(&json!({"written": false, "file": out, "entries": lines.len() - 1}));
        } else {
            println!("would write {what} to {}", out.display());
        }
    }
    if !confirm(w, &what, &out)? {
        return Ok(());
    }
    store::write_new(&out, &lines, &abs)?;
    if w.json {
        print_json(&json!({"written": true, "file": out, "entries": lines.len() - 1}));
    } else {
        println!("wrote {what} to {}", out.display());
    }
    if let Some(t) = text {
        eprintln!("bonsai: forked before the user message:\n{t}");
        copy_to_clipboard(&t);
    }
    Ok(())
}
