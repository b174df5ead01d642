//! Pi's configuration on disk: the agent directory, the two settings files, `models.json`,
//! and where Pi keeps each project's sessions. The engine gets the parsed values.

use crate::engine::load::models::Registry;
use crate::engine::settings::Settings;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

fn expand_home(p: &str) -> PathBuf {
    expand_home_in(p, &home_dir())
}

/// `~` and `~/…` under `home`.
fn expand_home_in(p: &str, home: &Path) -> PathBuf {
    if p == "~" {
        return home.to_path_buf();
    }
    if let Some(rest) = p.strip_prefix("~/") {
        return home.join(rest);
    }
    PathBuf::from(p)
}

/// What the environment says about where sessions are, read once (the TUI reads it when it
/// starts, so its update computes the picker's folders without reading the environment).
#[derive(Debug, Clone, PartialEq)]
pub struct Environment {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$PI_CODING_AGENT_SESSION_DIR`, when set.
    pub session_dir: Option<String>,
}

impl Environment {
    pub fn read() -> Environment {
        Environment {
            home: home_dir(),
            session_dir: std::env::var("PI_CODING_AGENT_SESSION_DIR")
                .ok()
                .filter(|v| !v.is_empty()),
        }
    }
}

/// The home folder Pi's `/tree` shortens tool paths under (`$HOME`, else `$USERPROFILE`, as
/// Pi reads it; none when both are empty).
pub fn tree_home() -> Option<String> {
    ["HOME", "USERPROFILE"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.is_empty())
}

/// `$PI_CODING_AGENT_DIR` or `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(v) if !v.is_empty() => expand_home(&v),
        _ => home_dir().join(".pi").join("agent"),
    }
}

/// The process's working directory (`.` when it is gone).
pub fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// Set while the TUI holds the terminal: a line on stderr would tear its screen.
pub static TERMINAL_TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A configuration file that could not be read (a FIFO, a folder, unreadable), said on
/// stderr once per process: every command reads settings, and a silent `{}` would hide why
/// bonsai ignores what the user set.
fn say_once(problem: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.iter().any(|s| s == problem) {
        return;
    }
    said.push(problem.to_string());
    if !TERMINAL_TAKEN.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("bonsai: warning: {problem}");
    }
}

/// A line on stderr (not while the TUI holds the terminal): what bonsai is waiting for.
pub fn say(what: &str) {
    if !TERMINAL_TAKEN.load(std::sync::atomic::Ordering::Relaxed) {
        eprintln!("bonsai: {}", crate::engine::units::one_line(what));
    }
}

/// A settings file as Pi reads it: a missing file is `{}`; a broken one is `{}` with a warning.
fn read_json_object(path: &Path, warnings: &mut Vec<String>) -> Value {
    match super::files::read_config(path) {
        Ok(None) => Value::Object(Map::new()),
        Err(e) => {
            say_once(&e);
            warnings.push(e);
            Value::Object(Map::new())
        }
        Ok(Some(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                warnings.push(format!("{}: not a JSON object; ignored", path.display()));
                Value::Object(Map::new())
            }
            Err(e) => {
                warnings.push(format!("{}: {e}; ignored", path.display()));
                Value::Object(Map::new())
            }
        },
    }
}

/// Pi's settings for a project: `<agentDir>/settings.json` under `<cwd>/.pi/settings.json`,
/// the project's read only when Pi trusts the folder ([`project_trust`]), as Pi loads them.
pub fn load_settings(cwd: &Path) -> Settings {
    load_settings_trusting(cwd, None)
}

/// [`load_settings`] with Pi's decision on the folder given (the Pi the package runs in
/// decided it); `None`: decided here as Pi decides it outside its TUI.
pub fn load_settings_trusting(cwd: &Path, decided: Option<bool>) -> Settings {
    let agent = agent_dir();
    let project = cwd.join(".pi").join("settings.json");
    let mut warnings = Vec::new();
    let g = read_json_object(&agent.join("settings.json"), &mut warnings);
    if std::fs::symlink_metadata(&project).is_err() {
        return Settings::from_layers(&g, &Value::Object(Map::new()), warnings);
    }
    let trust = match decided {
        Some(t) => Trust {
            trusted: t,
            why: if t {
                "the Pi it runs in trusts it".into()
            } else {
                "the Pi it runs in does not trust it".into()
            },
        },
        None => project_trust(cwd, &agent, &g),
    };
    let p = read_json_object(&project, &mut warnings);
    if trust.trusted {
        return Settings::from_layers(&g, &p, warnings);
    }
    // As Pi: the folder's `sessionDir` is read before trust is decided, nothing else.
    let mut only = Map::new();
    if let Some(d) = p.get("sessionDir") {
        only.insert("sessionDir".into(), d.clone());
    }
    let mut s = Settings::from_layers(&g, &Value::Object(only), warnings);
    let keys = Settings::program_keys(&p);
    if !keys.is_empty() {
        let note = format!(
            "{}: {} not used: Pi does not trust this folder ({}); its other settings are not read either",
            project.display(),
            keys.join(" and "),
            trust.why
        );
        // Said where a program would have been run: `resume` and the TUI's P (`PiRun`'s
        // notes), the package's hello.
        s.project_ignored = Some(note);
    }
    s
}

pub fn load_settings_from(global: &Path, project: &Path) -> Settings {
    let mut warnings = Vec::new();
    let g = read_json_object(global, &mut warnings);
    let p = read_json_object(project, &mut warnings);
    Settings::from_layers(&g, &p, warnings)
}

/// Pi's decision on a project folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    pub trusted: bool,
    /// Where the decision came from, for what bonsai says.
    pub why: String,
}

/// Whether Pi trusts the project folder `cwd`, decided as Pi decides it where it cannot ask:
/// - the decision of the Pi bonsai runs in (`BONSAI_PROJECT_TRUSTED`, `1` or `0`, which the
///   package sets from Pi's own);
/// - else the closest saved decision for the folder or a parent in `<agentDir>/trust.json`
///   (canonical paths, as Pi saves them);
/// - else the user's `defaultProjectTrust`: `"always"` trusts; `"ask"` (Pi's default) and
///   `"never"` do not, since only Pi's TUI can ask.
pub fn project_trust(cwd: &Path, agent: &Path, global: &Value) -> Trust {
    match std::env::var("BONSAI_PROJECT_TRUSTED").as_deref() {
        Ok("1") => {
            return Trust {
                trusted: true,
                why: "the Pi bonsai runs in trusts it".into(),
            };
        }
        Ok("0") => {
            return Trust {
                trusted: false,
                why: "the Pi bonsai runs in does not trust it".into(),
            };
        }
        _ => {}
    }
    let store = agent.join("trust.json");
    let mut warnings = Vec::new();
    let saved = read_json_object(&store, &mut warnings);
    let start = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    for dir in start.ancestors() {
        match saved.get(dir.to_string_lossy().as_ref()) {
            Some(Value::Bool(t)) => {
                return Trust {
                    trusted: *t,
                    why: format!(
                        "{} saves {} for {}",
                        store.display(),
                        if *t { "trust" } else { "no trust" },
                        dir.display()
                    ),
                };
            }
            _ => continue,
        }
    }
    let default = global
        .get("defaultProjectTrust")
        .and_then(|d| d.as_str())
        .unwrap_or("ask");
    Trust {
        trusted: default == "always",
        why: format!(
            "no saved decision in {}; defaultProjectTrust is \"{default}\"{}",
            store.display(),
            if default == "ask" {
                ", and only Pi's TUI can ask"
            } else {
                ""
            }
        ),
    }
}

/// Pi's model table with the custom models of `<agentDir>/models.json`.
pub fn load_registry(agent_dir: &Path) -> Registry {
    let path = agent_dir.join("models.json");
    match super::files::read_config(&path) {
        Ok(Some(text)) => Registry::with_models_json(&text, &path.display().to_string()),
        Ok(None) => Registry::builtin_only(),
        Err(e) => {
            let mut r = Registry::builtin_only();
            say_once(&e);
            r.warnings.push(format!("{e} (custom models)"));
            r
        }
    }
}

/// Pi's per-project session directory name: `--home-user-proj--` for `/home/user/proj`.
pub fn encode_cwd(cwd: &Path) -> String {
    let s = cwd.to_string_lossy();
    let trimmed = s.strip_prefix('/').or_else(|| s.strip_prefix('\\')).unwrap_or(&s);
    let enc: String = trimmed
        .chars()
        .map(|c| if matches!(c, '/' | '\\' | ':') { '-' } else { c })
        .collect();
    format!("--{enc}--")
}

/// Where Pi keeps this project's sessions, and whether the directory is a flat override.
pub fn session_dir_for(cwd: &Path, settings: &Settings) -> (PathBuf, bool) {
    session_dir_in(&agent_dir(), cwd, settings)
}

/// [`session_dir_for`] with Pi's agent folder given.
pub fn session_dir_in(agent: &Path, cwd: &Path, settings: &Settings) -> (PathBuf, bool) {
    session_dir_with(agent, cwd, settings, &Environment::read())
}

/// `session_dir_in` with the environment given.
pub fn session_dir_with(agent: &Path, cwd: &Path, settings: &Settings, env: &Environment) -> (PathBuf, bool) {
    if let Some(v) = &env.session_dir {
        return (expand_home_in(v, &env.home), true);
    }
    if let Some(d) = settings.session_dir() {
        let d = expand_home_in(d, &env.home);
        let d = if d.is_relative() { cwd.join(d) } else { d };
        return (d, true);
    }
    (agent.join("sessions").join(encode_cwd(cwd)), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_is_recursive_and_project_wins() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("g.json");
        let p = dir.path().join("p.json");
        std::fs::write(&g, r#"{"compaction":{"reserveTokens":1000,"keepRecentTokens":5000,"modelOverrides":{"a/b":{"keepRecentTokens":7}}},"treeFilterMode":"all"}"#).unwrap();
        std::fs::write(
            &p,
            r#"{"compaction":{"keepRecentTokens":6000},"treeFilterMode":"bogus"}"#,
        )
        .unwrap();
        let s = load_settings_from(&g, &p);
        assert_eq!(s.reserve_tokens(None), 1000);
        assert_eq!(s.keep_recent_tokens(None), 6000);
        assert_eq!(s.keep_recent_tokens(Some(("a", "b"))), 7);
        assert_eq!(s.tree_filter_mode(), "default");
        assert_eq!(s.branch_reserve_tokens(), 16384);
        assert_eq!(s.gauge_zones(), (0.7, 0.9));
        std::fs::write(&p, r#"{"bonsai":{"gaugeZones":[0.5,0.8]}}"#).unwrap();
        assert_eq!(load_settings_from(&g, &p).gauge_zones(), (0.5, 0.8));
    }

    #[test]
    fn broken_settings_are_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("g.json");
        std::fs::write(&g, "{not json").unwrap();
        let s = load_settings_from(&g, &dir.path().join("missing.json"));
        assert_eq!(s.keep_recent_tokens(None), 20000);
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn cwd_encoding() {
        assert_eq!(encode_cwd(Path::new("/home/user/proj")), "--home-user-proj--");
    }
}
