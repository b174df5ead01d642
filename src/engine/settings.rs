//! Pi's settings as Pi 0.87.1 reads them: `<agentDir>/settings.json` under
//! `<cwd>/.pi/settings.json`, merged recursively (project wins), with Pi's defaults.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub const TREE_FILTERS: [&str; 5] = ["default", "no-tools", "user-only", "labeled-only", "all"];

fn expand_home(p: &str) -> PathBuf {
    if p == "~" {
        return home_dir();
    }
    if let Some(rest) = p.strip_prefix("~/") {
        return home_dir().join(rest);
    }
    PathBuf::from(p)
}

pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// `$PI_CODING_AGENT_DIR` or `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    match std::env::var("PI_CODING_AGENT_DIR") {
        Ok(v) if !v.is_empty() => expand_home(&v),
        _ => home_dir().join(".pi").join("agent"),
    }
}

#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub merged: Value,
    /// Problems reading a settings file (Pi reports them and uses `{}` for that scope).
    pub warnings: Vec<String>,
}

fn read_json_object(path: &Path, warnings: &mut Vec<String>) -> Value {
    match std::fs::read_to_string(path) {
        Err(_) => Value::Object(Map::new()),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
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

fn deep_merge(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            let mut out = b.clone();
            for (k, v) in o {
                let merged = match b.get(k) {
                    Some(bv @ Value::Object(_)) if v.is_object() => deep_merge(bv, v),
                    _ => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        _ => over.clone(),
    }
}

impl Settings {
    pub fn load(cwd: &Path) -> Settings {
        Settings::load_from(
            &agent_dir().join("settings.json"),
            &cwd.join(".pi").join("settings.json"),
        )
    }

    pub fn load_from(global: &Path, project: &Path) -> Settings {
        let mut warnings = Vec::new();
        let g = read_json_object(global, &mut warnings);
        let p = read_json_object(project, &mut warnings);
        Settings {
            merged: deep_merge(&g, &p),
            warnings,
        }
    }

    fn get(&self, path: &[&str]) -> Option<&Value> {
        let mut v = &self.merged;
        for k in path {
            v = v.get(k)?;
        }
        Some(v)
    }

    fn token_setting(&self, field: &str, model: Option<(&str, &str)>, default: u64) -> u64 {
        let ok = |v: &Value| v.as_u64().filter(|n| *n <= 9_007_199_254_740_991);
        if let Some((p, m)) = model
            && let Some(v) = self
                .get(&["compaction", "modelOverrides", &format!("{p}/{m}"), field])
                .and_then(ok)
        {
            return v;
        }
        self.get(&["compaction", field]).and_then(ok).unwrap_or(default)
    }

    pub fn compaction_enabled(&self) -> bool {
        self.get(&["compaction", "enabled"])
            .and_then(|v| v.as_bool())
            .unwrap_or(true)
    }
    pub fn reserve_tokens(&self, model: Option<(&str, &str)>) -> u64 {
        self.token_setting("reserveTokens", model, 16384)
    }
    pub fn keep_recent_tokens(&self, model: Option<(&str, &str)>) -> u64 {
        self.token_setting("keepRecentTokens", model, 20000)
    }
    pub fn branch_reserve_tokens(&self) -> u64 {
        self.get(&["branchSummary", "reserveTokens"])
            .and_then(|v| v.as_u64())
            .unwrap_or(16384)
    }
    pub fn branch_skip_prompt(&self) -> bool {
        self.get(&["branchSummary", "skipPrompt"])
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }
    pub fn tree_filter_mode(&self) -> &str {
        match self.get(&["treeFilterMode"]).and_then(|v| v.as_str()) {
            Some(m) if TREE_FILTERS.contains(&m) => m,
            _ => "default",
        }
    }
    /// Gauge zone bounds as fractions of the compaction threshold (bonsai's own key,
    /// `bonsai.gaugeZones: [0.7, 0.9]`; Pi ignores keys it does not know).
    pub fn gauge_zones(&self) -> (f64, f64) {
        let z = self.get(&["bonsai", "gaugeZones"]).and_then(|v| v.as_array());
        match z.map(|a| a.iter().filter_map(|x| x.as_f64()).collect::<Vec<_>>()) {
            Some(v) if v.len() == 2 && 0.0 < v[0] && v[0] < v[1] && v[1] <= 1.0 => (v[0], v[1]),
            _ => (0.7, 0.9),
        }
    }

    /// The model for LLM summaries (`bonsai.summaryModel: "provider/id"`); default: the
    /// session's current model, as Pi uses.
    pub fn summary_model(&self) -> Option<String> {
        self.get(&["bonsai", "summaryModel"])
            .and_then(|v| v.as_str())
            .map(String::from)
    }

    pub fn session_dir(&self) -> Option<PathBuf> {
        self.get(&["sessionDir"])
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .map(expand_home)
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
    if let Ok(v) = std::env::var("PI_CODING_AGENT_SESSION_DIR")
        && !v.is_empty()
    {
        return (expand_home(&v), true);
    }
    if let Some(d) = settings.session_dir() {
        let d = if d.is_relative() { cwd.join(d) } else { d };
        return (d, true);
    }
    (agent_dir().join("sessions").join(encode_cwd(cwd)), false)
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
        let s = Settings::load_from(&g, &p);
        assert_eq!(s.reserve_tokens(None), 1000);
        assert_eq!(s.keep_recent_tokens(None), 6000);
        assert_eq!(s.keep_recent_tokens(Some(("a", "b"))), 7);
        assert_eq!(s.tree_filter_mode(), "default");
        assert_eq!(s.branch_reserve_tokens(), 16384);
        assert_eq!(s.gauge_zones(), (0.7, 0.9));
        std::fs::write(&p, r#"{"bonsai":{"gaugeZones":[0.5,0.8]}}"#).unwrap();
        assert_eq!(Settings::load_from(&g, &p).gauge_zones(), (0.5, 0.8));
    }

    #[test]
    fn broken_settings_are_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let g = dir.path().join("g.json");
        std::fs::write(&g, "{not json").unwrap();
        let s = Settings::load_from(&g, &dir.path().join("missing.json"));
        assert_eq!(s.keep_recent_tokens(None), 20000);
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn cwd_encoding() {
        assert_eq!(encode_cwd(Path::new("/home/user/proj")), "--home-user-proj--");
    }
}
