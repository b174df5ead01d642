//! Handing a session back to Pi: which session a query means, and how Pi is run on it.
//!
//! Pi resumes a file with `pi --session FILE`. bonsai runs the `pi` on PATH, or the command in
//! `bonsai.piCommand` (a wrapper script, a Pi outside PATH), from the session's own cwd:
//! Pi's tools work relative to it. When that folder is gone, Pi runs where bonsai was started,
//! and the note says so.

use super::SessionInfo;
use crate::engine::settings::Settings;
use std::path::{Path, PathBuf};

/// Everything needed to run Pi on one session.
#[derive(Debug, Clone, PartialEq)]
pub struct PiRun {
    /// The program and its arguments, `--session FILE` last.
    pub argv: Vec<String>,
    /// The folder Pi runs in.
    pub cwd: PathBuf,
    /// The session file (absolute).
    pub file: PathBuf,
    /// What the user should know first: a cwd that is gone, a setting that could not be used.
    pub notes: Vec<String>,
}

impl PiRun {
    /// How to run Pi on `file`, whose header names `session_cwd`; `here` is where bonsai runs.
    pub fn for_session(file: &Path, session_cwd: Option<&str>, settings: &Settings, here: &Path) -> PiRun {
        let mut notes: Vec<String> = settings.project_ignored.iter().cloned().collect();
        let mut argv = match settings.pi_command() {
            None => vec!["pi".to_string()],
            Some(Ok(words)) => words,
            Some(Err(v)) => {
                notes.push(format!(
                    "bonsai.piCommand is {v}: expected a command such as \"pi\" or [\"/path/to/pi\", \"--flag\"]; running `pi`"
                ));
                vec!["pi".to_string()]
            }
        };
        let file = if file.is_absolute() {
            file.to_path_buf()
        } else {
            here.join(file)
        };
        argv.push("--session".into());
        argv.push(file.to_string_lossy().to_string());
        let cwd = match session_cwd.filter(|c| !c.is_empty()) {
            Some(c) if Path::new(c).is_dir() => PathBuf::from(c),
            Some(c) => {
                notes.push(format!(
                    "the session's folder {c} is gone: Pi runs in {}",
                    here.display()
                ));
                here.to_path_buf()
            }
            None => {
                notes.push(format!("the session names no folder: Pi runs in {}", here.display()));
                here.to_path_buf()
            }
        };
        // Every note is said on a terminal before Pi draws, and names a session's folder:
        // written on one line, controls shown (`engine::units::one_line`).
        let notes = notes
            .into_iter()
            .map(|n| crate::engine::units::one_line(&n).into_owned())
            .collect();
        PiRun { argv, cwd, file, notes }
    }

    /// The session file as a view shows it (on one line, controls written out).
    pub fn shown_file(&self) -> String {
        crate::engine::units::one_line(&self.file.to_string_lossy()).into_owned()
    }

    /// The command, ready to start (standard input, output and error are bonsai's).
    pub fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.argv[0]);
        c.args(&self.argv[1..]).current_dir(&self.cwd);
        c
    }

    /// Why Pi should not be run on this session now: another Pi was started on it.
    pub fn refusal(&self) -> Option<String> {
        let pid = super::procs::pi_started_on(&self.file)?;
        Some(format!(
            "Pi (process {pid}) is already running on {}: a second Pi would append beside it and branch the session; go on in that one, or quit it first",
            self.file.display()
        ))
    }

    /// Run Pi in bonsai's place (its exit status is the process's); returns only when Pi could
    /// not be started, with why.
    pub fn exec(&self) -> String {
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            let e = self.command().exec();
            self.start_error(&e)
        }
        #[cfg(not(unix))]
        {
            match self.command().status() {
                Ok(s) => std::process::exit(s.code().unwrap_or(1)),
                Err(e) => self.start_error(&e),
            }
        }
    }

    /// Why Pi could not be started, in words that say what to do.
    pub fn start_error(&self, e: &std::io::Error) -> String {
        match e.kind() {
            std::io::ErrorKind::NotFound => format!(
                "cannot run `{}`: no such program (install Pi, or set bonsai.piCommand in Pi's settings.json)",
                self.argv[0]
            ),
            std::io::ErrorKind::PermissionDenied => format!(
                "cannot run `{}`: not executable (check bonsai.piCommand in Pi's settings.json)",
                self.argv[0]
            ),
            _ => format!("cannot run `{}`: {e}", self.argv[0]),
        }
    }
}

/// How closely a listed session matches a query, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Match {
    /// Its name is the query, its id starts with it, or its file name (or stem) is it.
    Exact,
    /// Every word of the query is in its name or bonsai's title.
    Title,
    /// Every word is in its first or newest request, its id or its file name.
    Text,
}

/// How `s` matches `query` (case-insensitive, word by word), if it does.
pub fn match_of(s: &SessionInfo, query: &str) -> Option<Match> {
    let q = query.trim().to_lowercase();
    if q.is_empty() || !s.is_session() {
        return None;
    }
    let file = s
        .path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let stem = file.strip_suffix(".jsonl").unwrap_or(&file);
    let id = s.id.to_lowercase();
    if s.name.as_deref().is_some_and(|n| n.trim().to_lowercase() == q)
        || (q.len() >= 4 && id.starts_with(&q))
        || file == q
        || stem == q
        // Pi's file names are `<time>_<id>.jsonl`: an id prefix after the underscore.
        || (q.len() >= 4 && stem.split_once('_').is_some_and(|(_, i)| i.starts_with(&q)))
    {
        return Some(Match::Exact);
    }
    let words: Vec<&str> = q.split_whitespace().collect();
    let all_in = |text: &str| {
        let t = text.to_lowercase();
        words.iter().all(|w| t.contains(w))
    };
    if s.name.as_deref().is_some_and(all_in) || s.made_title.as_deref().is_some_and(all_in) {
        return Some(Match::Title);
    }
    let text = [
        s.first_message.as_deref().unwrap_or(""),
        s.last_message.as_deref().unwrap_or(""),
        &s.id,
        &file,
    ]
    .join(" ");
    all_in(&text).then_some(Match::Text)
}

/// The sessions `query` means, from `listed`: those of the best kind of match, newest first
/// (as listed). Empty when none matches.
pub fn best_matches<'a>(listed: &'a [SessionInfo], query: &str) -> Vec<&'a SessionInfo> {
    let scored: Vec<(Match, &SessionInfo)> = listed.iter().filter_map(|s| Some((match_of(s, query)?, s))).collect();
    let Some(best) = scored.iter().map(|(m, _)| *m).min() else {
        return vec![];
    };
    scored.into_iter().filter(|(m, _)| *m == best).map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn listed(file: &str, id: &str, name: Option<&str>, first: &str) -> SessionInfo {
        SessionInfo {
            path: PathBuf::from(format!("/s/--p--/{file}")),
            id: id.into(),
            name: name.map(String::from),
            first_message: Some(first.into()),
            made_title: name
                .is_none()
                .then(|| crate::engine::view::title::suggested(Some(first), None))
                .flatten(),
            ..Default::default()
        }
    }

    fn sessions() -> Vec<SessionInfo> {
        vec![
            listed(
                "2026-11-20T10-00-00-000Z_01a3bd00-aaaa.jsonl",
                "01a3bd00-aaaa",
                Some("auth refactor"),
                "Refactor the auth module",
            ),
            listed(
                "2026-11-19T10-00-00-000Z_01a3bd00-bbbb.jsonl",
                "01a3bd00-bbbb",
                None,
                "Fix the auth token refresh bug",
            ),
            listed(
                "2026-11-18T10-00-00-000Z_7f00cafe-cccc.jsonl",
                "7f00cafe-cccc",
                None,
                "The CSV importer drops rows",
            ),
        ]
    }

    #[test]
    fn an_exact_name_or_id_prefix_wins_over_words() {
        let s = sessions();
        let names = |q: &str| best_matches(&s, q).iter().map(|x| x.id.clone()).collect::<Vec<_>>();
        assert_eq!(names("Auth Refactor"), ["01a3bd00-aaaa"]);
        assert_eq!(names("7f00"), ["7f00cafe-cccc"]);
        assert_eq!(names("01a3bd00-bbbb"), ["01a3bd00-bbbb"]);
        // Words: in a name or title before a first request; two in titles are two matches.
        assert_eq!(names("auth"), ["01a3bd00-aaaa", "01a3bd00-bbbb"]);
        assert_eq!(names("token auth"), ["01a3bd00-bbbb"]);
        assert_eq!(names("csv rows"), ["7f00cafe-cccc"]);
        // An id prefix shorter than four characters is only text.
        assert_eq!(names("01a"), ["01a3bd00-aaaa", "01a3bd00-bbbb"]);
        assert!(names("pandas").is_empty());
        assert!(names("  ").is_empty());
    }

    #[test]
    fn pi_runs_from_the_session_s_folder_or_says_where_else() {
        let here = tempfile::tempdir().unwrap();
        let none = Settings::from_layers(&json!({}), &json!({}), vec![]);
        let r = PiRun::for_session(
            Path::new("a.jsonl"),
            Some(&here.path().to_string_lossy()),
            &none,
            here.path(),
        );
        assert_eq!(
            r.argv,
            [
                "pi".to_string(),
                "--session".into(),
                here.path().join("a.jsonl").to_string_lossy().to_string()
            ]
        );
        assert_eq!((r.cwd.as_path(), r.notes.len()), (here.path(), 0));
        let r = PiRun::for_session(Path::new("/x/a.jsonl"), Some("/no/such/folder"), &none, here.path());
        assert_eq!(r.cwd, here.path());
        assert!(r.notes[0].contains("/no/such/folder is gone"), "{:?}", r.notes);
        let wrapped = Settings::from_layers(&json!({"bonsai": {"piCommand": "my-pi --fast"}}), &json!({}), vec![]);
        let r = PiRun::for_session(Path::new("/x/a.jsonl"), None, &wrapped, here.path());
        assert_eq!(r.argv, ["my-pi", "--fast", "--session", "/x/a.jsonl"]);
        assert!(r.notes[0].contains("names no folder"));
        let bad = Settings::from_layers(&json!({"bonsai": {"piCommand": 7}}), &json!({}), vec![]);
        let r = PiRun::for_session(Path::new("/x/a.jsonl"), None, &bad, here.path());
        assert_eq!(r.argv[0], "pi");
        assert!(r.notes[0].starts_with("bonsai.piCommand is 7"));
    }
}
