//! Pi's settings as Pi 0.87.1 reads them: `<agentDir>/settings.json` under
//! `<cwd>/.pi/settings.json`, merged recursively (project wins), with Pi's defaults. The store
//! reads the two files; this is the merge and the meaning of each key.

use serde_json::Value;

pub const TREE_FILTERS: [&str; 5] = ["default", "no-tools", "user-only", "labeled-only", "all"];

#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub merged: Value,
    /// Problems reading a settings file (Pi reports them and uses `{}` for that scope).
    pub warnings: Vec<String>,
    /// Why a project's settings file was not read (Pi does not trust the folder), naming what
    /// in it would have run a program; `None` when it was read or there is none.
    pub project_ignored: Option<String>,
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
    /// Pi's two layers merged recursively (the project's wins). Each layer is the parsed
    /// settings file, or `{}` when it is missing or unreadable (`warnings` says which).
    pub fn from_layers(global: &Value, project: &Value, warnings: Vec<String>) -> Settings {
        Settings {
            merged: deep_merge(global, project),
            warnings,
            project_ignored: None,
        }
    }

    /// The keys of a settings object that name a program bonsai would run (`bonsai.binary`,
    /// `bonsai.piCommand`): what a folder Pi does not trust must never get run.
    pub fn program_keys(v: &Value) -> Vec<&'static str> {
        ["binary", "piCommand"]
            .into_iter()
            .filter(|k| v.get("bonsai").and_then(|b| b.get(k)).is_some_and(|x| !x.is_null()))
            .map(|k| {
                if k == "binary" {
                    "bonsai.binary"
                } else {
                    "bonsai.piCommand"
                }
            })
            .collect()
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
    /// The compaction settings for `model` (per-model overrides applied), a caller's own
    /// `reserve` and `keep` (the CLI's flags) winning: the one rule the CLI, the TUI and
    /// `bonsai serve` compact by.
    pub fn compaction_settings(
        &self,
        model: Option<(&str, &str)>,
        reserve: Option<u64>,
        keep: Option<u64>,
    ) -> crate::compaction::cut::CompactionSettings {
        crate::compaction::cut::CompactionSettings {
            reserve_tokens: reserve.unwrap_or_else(|| self.reserve_tokens(model)),
            keep_recent_tokens: keep.unwrap_or_else(|| self.keep_recent_tokens(model)),
        }
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

    /// How many bytes bonsai's session indexes may take together (`bonsai.indexCacheMB`,
    /// default 2048; 0 turns the index off: every open parses the file).
    pub fn index_cache_bytes(&self) -> u64 {
        self.get(&["bonsai", "indexCacheMB"])
            .and_then(|v| v.as_f64())
            .filter(|mb| mb.is_finite() && *mb >= 0.0)
            .map(|mb| (mb * 1048576.0) as u64)
            .unwrap_or(2048 << 20)
    }

    /// Mouse capture in the TUI (`bonsai.mouse`, default on). Off keeps the terminal's own
    /// selection and copy working.
    pub fn mouse_capture(&self) -> bool {
        self.get(&["bonsai", "mouse"]).and_then(|v| v.as_bool()).unwrap_or(true)
    }

    /// How long a summary call may wait for its answer, retries included
    /// (`bonsai.summaryTimeoutSeconds`, default 120; an answer that is streaming goes on).
    pub fn summary_timeout(&self) -> std::time::Duration {
        let secs = self
            .get(&["bonsai", "summaryTimeoutSeconds"])
            .and_then(|v| v.as_f64())
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(120.0);
        std::time::Duration::from_secs_f64(secs.min(86_400.0))
    }

    /// The model for LLM summaries (`bonsai.summaryModel: "provider/id"`); default: the
    /// session's current model, as Pi uses.
    pub fn summary_model(&self) -> Option<String> {
        self.get(&["bonsai", "summaryModel"])
            .and_then(|v| v.as_str())
            .map(String::from)
    }

    /// The pi-context-pruning extension's own switch (`contextPruning.enabled`, default on):
    /// off means Pi prunes nothing itself; bonsai still previews and writes edits.
    pub fn context_pruning_enabled(&self) -> bool {
        self.get(&["contextPruning", "enabled"])
            .and_then(|v| v.as_bool())
            .unwrap_or(true)
    }

    /// The pruning numbers under `contextPruning` (`minimum`, `protect`, `protectedTurns`,
    /// `protectedTools`, `prunableTools`), over the defaults.
    pub fn prune_settings(&self) -> crate::edit::prune::PruneSettings {
        let mut p = crate::edit::prune::PruneSettings::default();
        let num = |k: &str| self.get(&["contextPruning", k]).and_then(|v| v.as_u64());
        let list = |k: &str| {
            self.get(&["contextPruning", k]).and_then(|v| v.as_array()).map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str())
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
        };
        if let Some(n) = num("minimum") {
            p.minimum = n;
        }
        if let Some(n) = num("protect") {
            p.protect = n;
        }
        if let Some(n) = num("protectedTurns") {
            p.protected_turns = n as usize;
        }
        if let Some(l) = list("protectedTools") {
            p.protected_tools = l;
        }
        if let Some(l) = list("prunableTools") {
            p.prunable_tools = l;
        }
        p
    }

    /// `bonsai.piVersion`: the Pi release to follow (`Err` with the value when it is not a
    /// string).
    pub fn pi_version_setting(&self) -> Option<Result<String, Value>> {
        match self.get(&["bonsai", "piVersion"])? {
            Value::Null => None,
            Value::String(s) => Some(Ok(s.clone())),
            other => Some(Err(other.clone())),
        }
    }

    /// `bonsai.piCommand`: the program (and its first arguments) that runs Pi when bonsai
    /// resumes a session, for a wrapper script or a Pi outside PATH. A string is split at
    /// spaces, with '…' and "…" quoting; an array is taken word for word. `Err` names a value
    /// that is neither, or empty.
    pub fn pi_command(&self) -> Option<Result<Vec<String>, Value>> {
        let v = self.get(&["bonsai", "piCommand"])?;
        let words = match v {
            Value::Null => return None,
            Value::String(s) => split_words(s),
            Value::Array(a) => a
                .iter()
                .map(|w| w.as_str().map(String::from))
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default(),
            _ => vec![],
        };
        Some(if words.is_empty() || words[0].is_empty() {
            Err(v.clone())
        } else {
            Ok(words)
        })
    }

    /// Whether the user has bonsai's Pi package: listed in Pi's `packages` (a source naming
    /// `pi-bonsai`, or the repository's `pi-package` folder), or `bonsai.live` is configured.
    pub fn live_package_in_use(&self) -> bool {
        let listed = self
            .get(&["packages"])
            .and_then(|p| p.as_array())
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().or_else(|| p.get("source").and_then(|s| s.as_str())))
            .any(|src| {
                let src = src.trim_end_matches('/');
                src.contains("pi-bonsai") || src.ends_with("pi-package")
            });
        listed || self.get(&["bonsai", "live"]).is_some_and(|v| v.is_object())
    }

    /// The live policy's settings (`bonsai.live.*`, the gauge's zones, `contextPruning`), each
    /// value checked: one that cannot be used is named in `problems` with what is done instead
    /// (an unknown policy turns the policy off rather than guess).
    pub fn live_settings(&self) -> crate::live::LiveSettings {
        use crate::live::{LivePolicy, LiveSettings, SettingProblem, Summarizer};
        let mut out = LiveSettings {
            zones: self.gauge_zones(),
            prune: self.prune_settings(),
            ..LiveSettings::default()
        };
        let mut problem = |key: &str, v: &Value, why: &str| {
            out.problems.push(SettingProblem {
                key: format!("bonsai.live.{key}"),
                value: v.to_string(),
                why: why.to_string(),
            })
        };
        let compat = match self.get(&["bonsai", "live", "compat"]) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::String(c)) if c == "pi-context-pruning" => true,
            Some(v) => {
                problem(
                    "compat",
                    v,
                    "the only compatibility mode is \"pi-context-pruning\"; OpenCode's rules are used",
                );
                false
            }
        };
        let mut policy = LivePolicy::Zones;
        match self.get(&["bonsai", "live", "policy"]) {
            None | Some(Value::Null) => {}
            Some(v) => match v.as_str().and_then(LivePolicy::parse) {
                Some(LivePolicy::Output { .. }) => policy = LivePolicy::Output { compat },
                Some(p) => policy = p,
                None => {
                    let hint = v
                        .as_str()
                        .and_then(|w| crate::live::nearest_name(w, &LivePolicy::NAMES))
                        .map(|n| format!("did you mean \"{n}\"? "))
                        .unwrap_or_default();
                    problem(
                        "policy",
                        v,
                        &format!(
                            "{hint}expected \"off\", \"output\" or \"zones\"; the context is passed through unchanged"
                        ),
                    );
                    policy = LivePolicy::Off;
                }
            },
        }
        if let Some(t) = self.get(&["bonsai", "live", "turns"]) {
            problem(
                "turns",
                t,
                "no longer read: the zones policy leaves out whole turns in steps between the token marks of bonsai.live.steps ({\"high\": 16000, \"low\": 6000}); bonsai.live.floorTurns keeps the newest turns",
            );
        }
        if let Some(m) = self.get(&["bonsai", "live", "steps"]) {
            let mut marks = out.marks;
            match m {
                Value::Object(o) => {
                    for (k, v) in o {
                        let slot = match k.as_str() {
                            "high" => &mut marks.high,
                            "low" => &mut marks.low,
                            _ => {
                                problem(&format!("steps.{k}"), v, "not a mark (high, low); ignored");
                                continue;
                            }
                        };
                        match v.as_u64() {
                            Some(n) if n >= 100 => *slot = n,
                            _ => problem(
                                &format!("steps.{k}"),
                                v,
                                "expected a number of tokens, at least 100; the default is used",
                            ),
                        }
                    }
                    if marks.low >= marks.high {
                        problem(
                            "steps",
                            m,
                            "the low mark must be below the high one; the defaults are used",
                        );
                    } else {
                        out.marks = marks;
                    }
                }
                v => problem(
                    "steps",
                    v,
                    "expected {\"high\": TOKENS, \"low\": TOKENS}; the defaults are used",
                ),
            }
        }
        if let Some(v) = self.get(&["bonsai", "live", "floorTurns"]) {
            match v.as_u64() {
                Some(n) if n <= 100 => out.floor_turns = n as usize,
                _ => problem(
                    "floorTurns",
                    v,
                    "expected a whole number of turns (0 to 100); 2 is used",
                ),
            }
        }
        if let Some(v) = self.get(&["bonsai", "live", "cacheTtlSeconds"]) {
            match v.as_f64() {
                Some(n) if n >= 0.0 && n.is_finite() => out.cache_ttl_ms = n * 1000.0,
                _ => problem("cacheTtlSeconds", v, "expected seconds (0 or more); 300 is used"),
            }
        }
        let mut tokens = |key: &str, least: u64, slot: &mut u64| {
            if let Some(v) = self.get(&["bonsai", "live", key]) {
                match v.as_u64() {
                    Some(n) if n >= least => *slot = n,
                    _ => problem(
                        key,
                        v,
                        &format!("expected a number of tokens, at least {least}; {} is used", *slot),
                    ),
                }
            }
        };
        tokens("packetTokens", 100, &mut out.packet_tokens);
        tokens("recallTokens", 200, &mut out.recall_tokens);
        tokens("mendTokens", 50, &mut out.mend_tokens);
        let mut flag = |key: &str, slot: &mut bool, what: &str| {
            if let Some(v) = self.get(&["bonsai", "live", key]) {
                match v.as_bool() {
                    Some(b) => *slot = b,
                    None => problem(
                        key,
                        v,
                        &format!(
                            "expected true or false; {what} stays {}",
                            if *slot { "on" } else { "off" }
                        ),
                    ),
                }
            }
        };
        flag("compactEarly", &mut out.compact_early, "early compaction");
        flag("recall", &mut out.recall, "the bonsai_recall tool");
        flag("mend", &mut out.mend, "mending compactions");
        match self.get(&["bonsai", "live", "summarizer"]) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s == "pi" => out.summarizer = Summarizer::Pi,
            Some(Value::String(s)) if s == "offline" => out.summarizer = Summarizer::Offline,
            Some(Value::String(s)) if crate::compaction::strategy::Strategy::parse(s).is_some() => {
                out.summarizer = Summarizer::Strategy(s.clone())
            }
            Some(v) => problem(
                "summarizer",
                v,
                "expected \"pi\", \"offline\" or a strategy (single-shot, parallel-stitch, sequential-accumulated, sequential-rolling, anchored-iterative); Pi's own summary is used",
            ),
        }
        out.policy = policy;
        out
    }

    /// The `sessionDir` setting as written (`~` is expanded by the store).
    pub fn session_dir(&self) -> Option<&str> {
        self.get(&["sessionDir"])
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    }
}

/// Words of a command line, with '…' and "…" quoting (no escapes, no variables: a setting is
/// not a shell script).
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(v: Value) -> Settings {
        Settings::from_layers(&json!({"bonsai": {"piCommand": v}}), &json!({}), vec![])
    }

    #[test]
    fn pi_command_is_words_of_a_string_or_an_array() {
        assert_eq!(Settings::from_layers(&json!({}), &json!({}), vec![]).pi_command(), None);
        assert_eq!(
            with(json!("npx 'my pi' --no-color")).pi_command(),
            Some(Ok(vec!["npx".into(), "my pi".into(), "--no-color".into()]))
        );
        assert_eq!(
            with(json!(["/opt/pi dir/pi"])).pi_command(),
            Some(Ok(vec!["/opt/pi dir/pi".into()]))
        );
        assert_eq!(with(json!("  ")).pi_command(), Some(Err(json!("  "))));
        assert_eq!(with(json!(3)).pi_command(), Some(Err(json!(3))));
        assert_eq!(with(json!(["pi", 2])).pi_command(), Some(Err(json!(["pi", 2]))));
    }
}
