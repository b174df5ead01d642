//! `bonsai resume [QUERY]`: find a session and hand it to Pi (`pi --session FILE`).

use crate::engine::units::one_line;
use crate::store::config::{cwd, load_settings};
use crate::store::resume::{PiRun, best_matches};
use clap::Args;
use color_eyre::eyre::{Result, bail, eyre};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// Which session: a session file, or words of its name, bonsai's title or its first
    /// request, an id prefix or a file name, across every project. Default: this project's
    /// newest session.
    pub query: Option<String>,
    /// Print the session file instead of running Pi (for scripts). Several matches are an
    /// error there, each printed on standard error.
    #[arg(long)]
    pub print: bool,
}

pub fn resume(a: ResumeArgs) -> Result<()> {
    let here = cwd();
    let settings = load_settings(&here);
    let chosen: PathBuf = match a.query.as_deref().map(str::trim) {
        None | Some("") => crate::store::newest_session(&here, &settings).ok_or_else(|| {
            eyre!(
                "no Pi session for {}; `bonsai resume WORDS` looks in every project",
                here.display()
            )
        })?,
        Some(q) if std::path::Path::new(q).is_file() => PathBuf::from(q),
        Some(q) => {
            let listed = crate::store::list_sessions(&here, &settings, true);
            let found = best_matches(&listed, q);
            match found.len() {
                0 => {
                    let n = listed.iter().filter(|s| s.is_session()).count();
                    bail!(
                        "no session matches {q:?} (looked at the name, bonsai's title, the first and newest request, the id and the file name of {n} session{} in every project)",
                        if n == 1 { "" } else { "s" }
                    );
                }
                1 => found[0].path.clone(),
                n if a.print || !crate::ui::has_terminal() => {
                    eprintln!(
                        "bonsai: {n} sessions match {}; give more words, an id prefix or the file:",
                        one_line(&format!("{q:?}"))
                    );
                    for s in &found {
                        eprintln!("  {}  {}", s.title(), one_line(&s.path.to_string_lossy()));
                    }
                    // 2: not "nothing matched" (1), but a choice to make.
                    std::process::exit(2);
                }
                _ => {
                    // Several: the picker, filtered to them, where P resumes the one chosen.
                    let matched = found.iter().map(|s| s.path.clone()).collect();
                    return crate::ui::run_resume_picker(q.to_string(), matched);
                }
            }
        }
    };
    if a.print {
        println!("{}", chosen.display());
        return Ok(());
    }
    // Only a session goes to Pi: Pi would write a session header into any other file.
    let Some(info) = crate::store::session_info(&chosen) else {
        bail!(
            "{} is not a Pi session (its first line is no session header): Pi would write a new session into it",
            one_line(&chosen.to_string_lossy())
        );
    };
    let info = Some(info);
    let run = PiRun::for_session(&chosen, info.as_ref().map(|i| i.cwd.as_str()), &settings, &here);
    if let Some(why) = run.refusal() {
        bail!("{why}");
    }
    for n in &run.notes {
        eprintln!("bonsai: {n}");
    }
    if let Some(i) = &info {
        eprintln!("bonsai: resuming {} in Pi ({})", i.title(), run.shown_file());
    }
    exec_pi(&run)
}

/// Run Pi in bonsai's place: its exit status is the command's.
pub fn exec_pi(run: &PiRun) -> Result<()> {
    Err(eyre!("{}", run.exec()))
}
