//! Model facts bonsai needs (context window, output limit, API): Pi's built-in list
//! (`assets/models.tsv`, generated from pi-ai by `scripts/gen-models.mjs`) plus custom models
//! and overrides from `<agentDir>/models.json`, merged as Pi's model registry merges them.

/// The context window Pi assumes for a model that declares none (or declares 0).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// A model's window as Pi uses it: the declared one, else [`DEFAULT_CONTEXT_WINDOW`].
pub fn window_or_default(declared: Option<u64>) -> u64 {
    declared.filter(|w| *w > 0).unwrap_or(DEFAULT_CONTEXT_WINDOW)
}

use serde_json::Value;

const BUILTIN: &str = include_str!("../../../../assets/models.tsv");

#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub provider: String,
    pub id: String,
    pub api: String,
    pub base_url: String,
    pub context_window: u64,
    pub max_tokens: u64,
    pub reasoning: bool,
    pub custom: bool,
    /// `apiKey` and `headers` of the provider entry in models.json (unresolved).
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// USD per million tokens: input, output, cache read, cache write.
    pub cost: [f64; 4],
}

#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub models: Vec<ModelInfo>,
    pub warnings: Vec<String>,
}

/// `models.json` tolerates `//` comments and trailing commas (Pi strips both).
pub fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    // Trailing commas before } or ].
    let mut res = String::with_capacity(out.len());
    let b: Vec<char> = out.chars().collect();
    let mut in_str = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_str {
            res.push(c);
            if c == '\\' && i + 1 < b.len() {
                res.push(b[i + 1]);
                i += 1;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            res.push(c);
        } else if c == ',' {
            let mut j = i + 1;
            while j < b.len() && b[j].is_whitespace() {
                j += 1;
            }
            if j < b.len() && (b[j] == '}' || b[j] == ']') {
                // drop it
            } else {
                res.push(c);
            }
        } else {
            res.push(c);
        }
        i += 1;
    }
    res
}

fn builtin() -> Vec<ModelInfo> {
    BUILTIN
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() < 7 {
                return None;
            }
            Some(ModelInfo {
                provider: f[0].into(),
                id: f[1].into(),
                api: f[2].into(),
                base_url: f[3].into(),
                context_window: f[4].parse().unwrap_or(0),
                max_tokens: f[5].parse().unwrap_or(0),
                reasoning: f[6] == "1",
                custom: false,
                api_key: None,
                headers: vec![],
                cost: [8, 9, 10, 11].map(|k| f.get(k).and_then(|x| x.parse().ok()).unwrap_or(0.0)),
            })
        })
        .collect()
}

fn str_map(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(|h| h.as_object())
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

impl Registry {
    pub fn builtin_only() -> Registry {
        Registry {
            models: builtin(),
            warnings: vec![],
        }
    }

    /// The built-in models with the custom ones of a `models.json` text merged in (Pi strips
    /// comments and trailing commas first). `source` names the file in a warning.
    pub fn with_models_json(text: &str, source: &str) -> Registry {
        let mut r = Registry::builtin_only();
        match serde_json::from_str::<Value>(&strip_json_comments(text)) {
            Ok(v) => r.merge_custom(&v),
            Err(e) => r.warnings.push(format!("{source}: {e}; custom models ignored")),
        }
        r
    }

    pub fn merge_custom(&mut self, v: &Value) {
        let Some(providers) = v.get("providers").and_then(|p| p.as_object()) else {
            return;
        };
        for (pname, p) in providers {
            let first_builtin = self.models.iter().find(|m| m.provider == *pname && !m.custom).cloned();
            let p_api = p.get("api").and_then(|x| x.as_str()).map(String::from);
            let p_base = p.get("baseUrl").and_then(|x| x.as_str()).map(String::from);
            let p_key = p.get("apiKey").and_then(|x| x.as_str()).map(String::from);
            let p_headers = str_map(p.get("headers"));
            // Provider-level baseUrl/headers/key apply to its built-in models too.
            for m in self.models.iter_mut().filter(|m| m.provider == *pname) {
                if let Some(b) = &p_base {
                    m.base_url = b.clone();
                }
                if p_key.is_some() {
                    m.api_key = p_key.clone();
                }
                if !p_headers.is_empty() {
                    m.headers = p_headers.clone();
                }
            }
            if let Some(ov) = p.get("modelOverrides").and_then(|o| o.as_object()) {
                for (mid, o) in ov {
                    if let Some(m) = self.models.iter_mut().find(|m| m.provider == *pname && m.id == *mid) {
                        if let Some(cw) = o.get("contextWindow").and_then(|x| x.as_u64()) {
                            m.context_window = cw;
                        }
                        if let Some(mt) = o.get("maxTokens").and_then(|x| x.as_u64()) {
                            m.max_tokens = mt;
                        }
                        if let Some(r) = o.get("reasoning").and_then(|x| x.as_bool()) {
                            m.reasoning = r;
                        }
                    }
                }
            }
            let Some(models) = p.get("models").and_then(|m| m.as_array()) else {
                continue;
            };
            for mv in models {
                let Some(id) = mv.get("id").and_then(|x| x.as_str()) else {
                    self.warnings
                        .push(format!("models.json: a model of provider {pname} has no id"));
                    continue;
                };
                let api = mv
                    .get("api")
                    .and_then(|x| x.as_str())
                    .map(String::from)
                    .or(p_api.clone())
                    .or(first_builtin.as_ref().map(|b| b.api.clone()));
                let base = mv
                    .get("baseUrl")
                    .and_then(|x| x.as_str())
                    .map(String::from)
                    .or(p_base.clone())
                    .or(first_builtin.as_ref().map(|b| b.base_url.clone()));
                let Some(api) = api else {
                    self.warnings
                        .push(format!("models.json: model {pname}/{id} has no api"));
                    continue;
                };
                let mut headers = p_headers.clone();
                headers.extend(str_map(mv.get("headers")));
                let info = ModelInfo {
                    provider: pname.clone(),
                    id: id.into(),
                    api,
                    base_url: base.unwrap_or_default(),
                    context_window: mv
                        .get("contextWindow")
                        .and_then(|x| x.as_u64())
                        .filter(|n| *n > 0)
                        .unwrap_or(DEFAULT_CONTEXT_WINDOW),
                    max_tokens: mv
                        .get("maxTokens")
                        .and_then(|x| x.as_u64())
                        .filter(|n| *n > 0)
                        .unwrap_or(16384),
                    reasoning: mv.get("reasoning").and_then(|x| x.as_bool()).unwrap_or(false),
                    custom: true,
                    api_key: p_key.clone(),
                    headers,
                    cost: ["input", "output", "cacheRead", "cacheWrite"].map(|k| {
                        mv.get("cost")
                            .and_then(|c| c.get(k))
                            .and_then(|x| x.as_f64())
                            .unwrap_or(0.0)
                    }),
                };
                self.models.retain(|m| !(m.provider == *pname && m.id == id));
                self.models.push(info);
            }
        }
    }

    pub fn find(&self, provider: &str, id: &str) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.provider == provider && m.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_has_pi_models() {
        let r = Registry::builtin_only();
        // Pi 0.87.1's table: sonnet 4.5 has the 1M window, haiku 4.5 200k.
        assert_eq!(
            r.find("anthropic", "claude-sonnet-4-5").unwrap().context_window,
            1_000_000
        );
        let m = r.find("anthropic", "claude-haiku-4-5").expect("claude-haiku-4-5");
        assert_eq!(m.context_window, 200000);
        assert_eq!(m.api, "anthropic-messages");
        assert!(r.models.len() > 500);
    }

    #[test]
    fn custom_models_with_comments_and_defaults() {
        let text = r#"{
          // local server
          "providers": {
            "ollama": {"baseUrl": "http://127.0.0.1:11434/v1", "api": "openai-completions", "apiKey": "OLLAMA_KEY",
              "models": [{"id": "llama3.1:8b",}, {"id": "big", "contextWindow": 32000},],
            },
            "anthropic": {"modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 1000000}}}
          }
        }"#;
        let mut r = Registry::builtin_only();
        r.merge_custom(&serde_json::from_str(&strip_json_comments(text)).unwrap());
        let m = r.find("ollama", "llama3.1:8b").unwrap();
        assert_eq!((m.context_window, m.max_tokens), (128000, 16384));
        assert_eq!(m.api_key.as_deref(), Some("OLLAMA_KEY"));
        assert_eq!(r.find("ollama", "big").unwrap().context_window, 32000);
        assert_eq!(
            r.find("anthropic", "claude-sonnet-4-5").unwrap().context_window,
            1000000
        );
    }
}
