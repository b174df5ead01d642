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

/// Pi's settings for a project: `<agentDir>/settings.json` under `<cwd>/.pi/settings.json`.
pub fn load_settings(cwd: &Path) -> Settings {
    load_settings_from(
        &agent_dir().join("settings.json"),
        &cwd.join(".pi").join("settings.json"),
    )
}

pub fn load_settings_from(global: &Path, project: &Path) -> Settings {
    let mut warnings = Vec::new();
    let g = read_json_object(global, &mut warnings);
    let p = read_json_object(project, &mut warnings);
    Settings::from_layers(&g, &p, warnings)
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
