//! `bonsai tree`: the session tree as Pi's `/tree` draws it.

use super::args::{LeafArg, SessionArg};
use super::common::{load_for_reading, print_json, resolve_leaf};
use crate::engine::report;
use crate::engine::view::tree;
use crate::engine::view::tree_view;
use crate::store::config::{cwd, load_settings};
use clap::Args;
use color_eyre::eyre::Result;
use serde_json::json;

#[derive(Args, Debug)]
pub struct TreeArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Pi's /tree filter (default: treeFilterMode from Pi's settings, else default).
    #[arg(long, value_parser = crate::engine::settings::TREE_FILTERS)]
    pub filter: Option<String>,
    #[command(flatten)]
    pub at: LeafArg,
    /// Columns to lay the tree out in (Pi's /tree truncates rows to the terminal width).
    #[arg(long, default_value_t = 100)]
    pub width: usize,
    /// Also the branches archived with `bonsai archive` (hidden by default).
    #[arg(long)]
    pub archived: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn tree(a: TreeArgs) -> Result<()> {
    let (filter, width, json_out) = (a.filter, a.width, a.json);
    let settings = load_settings(&cwd());
    let s = load_for_reading(&a.session.file, &settings)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?;
    let filter = filter.unwrap_or_else(|| settings.tree_filter_mode().to_string());
    let t = tree::Tree::build(&s);
    let mode = tree_view::FilterMode::parse(&filter).unwrap_or_default();
    let mut view = tree_view::TreeView::new(&s, &t, leaf, mode, crate::store::clock::now_ms());
    view.home = crate::store::config::tree_home();
    if a.archived && view.archived_branches > 0 {
        view.set_show_archived(&s, true);
    }
    let lines = view.render_plain(&s, width, None);
    // Hidden archived branches are bonsai's own view: said, so the tree is never silently
    // different from Pi's /tree.
    let hidden = if view.show_archived { 0 } else { view.archived_branches };
    if json_out {
        let (tj, tij, depth) = report::tree_json(&s, &t);
        let mut o = json!({"filter": filter, "width": width, "lines": lines, "tree": tj, "treeIdx": tij, "maxBranchDepth": depth});
        if hidden > 0 {
            o["archivedBranchesHidden"] = hidden.into();
        }
        print_json(&o);
    } else {
        for l in lines {
            println!("{l}");
        }
        if hidden > 0 {
            println!(
                "  ({hidden} archived branch{} hidden; --archived shows {})",
                if hidden == 1 { "" } else { "es" },
                if hidden == 1 { "it" } else { "them" }
            );
        }
    }
    Ok(())
}
