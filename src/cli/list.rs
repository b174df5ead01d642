//! `bonsai list`: the sessions of this project, or of every project.

use super::common::print_json;
use crate::store::config::{cwd, load_settings};
use clap::Args;
use color_eyre::eyre::Result;
use serde_json::Value;

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Every project's sessions, not only this directory's.
    #[arg(long)]
    pub all: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn list(a: ListArgs) -> Result<()> {
    let json_out = a.json;
    let cwd = cwd();
    let settings = load_settings(&cwd);
    let (infos, problems): (Vec<_>, Vec<_>) = crate::store::list_sessions(&cwd, &settings, a.all)
        .into_iter()
        .partition(|i| i.is_session());
    for p in &problems {
        eprintln!(
            "bonsai: not listed: {}: {}",
            crate::engine::units::one_line(&p.path.to_string_lossy()),
            p.problem.as_ref().map(|x| x.reason()).unwrap_or_default()
        );
    }
    if json_out {
        print_json(&Value::Array(infos.iter().map(|i| i.to_json()).collect()));
        return Ok(());
    }
    if infos.is_empty() {
        let n = crate::store::count_all_sessions(&cwd, &settings);
        if a.all || n == 0 {
            println!("no Pi sessions found in any project (Pi writes them under ~/.pi/agent/sessions)");
        } else {
            println!(
                "no Pi sessions for {}; {n} in other projects (bonsai list --all lists them, Tab in the picker too)",
                cwd.display()
            );
        }
    }
    for i in &infos {
        // As the picker says them: the time to the minute (UTC), the size in kB and MB.
        let when = i.modified_iso();
        println!(
            "{}  {:>6} entries  {:>8}  {}{}  {}",
            when.get(..16).unwrap_or(&when).replace('T', " "),
            i.entries,
            crate::engine::units::bytes(i.bytes),
            if i.title_is_made() { "~ " } else { "" },
            i.title(),
            crate::engine::units::one_line(&i.path.to_string_lossy())
        );
    }
    if infos.iter().any(|i| i.title_is_made()) {
        eprintln!(
            "~ a title bonsai made from the first request (or the newest summary's goal): the session has no name; `bonsai rename FILE --suggest` writes it as one"
        );
    }
    Ok(())
}
