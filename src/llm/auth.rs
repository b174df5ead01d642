//! API keys as Pi finds them (first hit wins): `auth.json` (an API key, or an OAuth access
//! token while it is valid), the provider's environment variables, `models.json`'s `apiKey`.
//! Keys are never printed: errors name where a key came from, not the key.

use crate::engine::load::models::ModelInfo;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub key: String,
    /// Where it came from, for error messages (`auth.json`, `$ANTHROPIC_API_KEY`, …).
    pub source: String,
    pub oauth: bool,
}

/// Environment variables Pi reads for a provider.
pub fn env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "github-copilot" => &["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
        _ => &[],
    }
}

/// Pi's `resolveConfigValue` (`core/resolve-config-value.js`, the same in 0.87.1 and
/// 1.5.2): `!cmd` runs a shell command and takes its trimmed output (none when it fails or
/// prints nothing); anything else is a template where `$NAME` and `${NAME}` are environment
/// variables, `$$` is `$` and `$!` is `!`. A variable that is unset or empty leaves the whole
/// value unresolved (`None`), as Pi does; a bare name without `$` is the literal text.
pub fn resolve_config_value(v: &str) -> Option<String> {
    resolve_config_value_with(v, &|name| std::env::var(name).ok())
}

/// [`resolve_config_value`] with the environment given (tests).
pub fn resolve_config_value_with(v: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(cmd) = v.strip_prefix('!') {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        return (out.status.success() && !s.is_empty()).then_some(s);
    }
    let name_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut rest = v;
    while let Some(d) = rest.find('$') {
        out.push_str(&rest[..d]);
        let after = &rest[d + 1..];
        match after.chars().next() {
            Some(c @ ('$' | '!')) => {
                out.push(c);
                rest = &after[1..];
            }
            Some('{') => match after[1..].find('}') {
                None => {
                    out.push('$');
                    rest = after;
                }
                Some(end) => {
                    let name = &after[1..1 + end];
                    if name.chars().next().is_some_and(name_start) && name.chars().all(name_char) {
                        out.push_str(&env(name).filter(|v| !v.is_empty())?);
                    } else {
                        out.push_str(&rest[d..d + 2 + end + 1]);
                    }
                    rest = &after[end + 2..];
                }
            },
            Some(c) if name_start(c) => {
                let len = after.find(|c: char| !name_char(c)).unwrap_or(after.len());
                out.push_str(&env(&after[..len]).filter(|v| !v.is_empty())?);
                rest = &after[len..];
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// Why no key could be found for a provider (the messages say where bonsai looked).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeyError {
    #[error(
        "the OAuth token for {provider} in {} has expired; run `pi` and log in again (/login), or set an API key",
        auth_json.display()
    )]
    OAuthExpired {
        provider: String,
        auth_json: std::path::PathBuf,
    },
    /// A key with a line break or another control character cannot go into an HTTP header
    /// (and is almost always a copy-paste slip).
    #[error(
        "the API key for {provider} from {origin} is not valid: it contains a line break or another control character. Fix it there (a trailing newline from `echo`, or a pasted line); bonsai sent nothing"
    )]
    Invalid { provider: String, origin: String },
    #[error(
        "no API key for {provider}: set {hint} or add it to {} (the offline summarizer needs none)",
        auth_json.display()
    )]
    Missing {
        provider: String,
        hint: String,
        auth_json: std::path::PathBuf,
    },
}

pub fn find_key(model: &ModelInfo, agent_dir: &Path) -> Result<ApiKey, KeyError> {
    let k = find_key_anywhere(model, agent_dir)?;
    if k.key.chars().any(|c| c.is_control()) {
        return Err(KeyError::Invalid {
            provider: model.provider.clone(),
            origin: k.source,
        });
    }
    Ok(k)
}

fn find_key_anywhere(model: &ModelInfo, agent_dir: &Path) -> Result<ApiKey, KeyError> {
    let p = &model.provider;
    let auth_path = agent_dir.join("auth.json");
    if let Ok(Some(text)) = crate::store::files::read_config(&auth_path)
        && let Ok(v) = serde_json::from_str::<Value>(&text)
        && let Some(entry) = v.get(p)
    {
        match entry.get("type").and_then(|t| t.as_str()) {
            Some("api_key") => {
                if let Some(k) = entry.get("key").and_then(|k| k.as_str()).and_then(resolve_config_value) {
                    return Ok(ApiKey {
                        key: k,
                        source: format!("{} ({p}, api_key)", auth_path.display()),
                        oauth: false,
                    });
                }
            }
            Some("oauth") => {
                let expires = entry.get("expires").and_then(|e| e.as_f64()).unwrap_or(0.0);
                let now = crate::store::clock::now_ms() as f64;
                return match entry.get("access").and_then(|a| a.as_str()) {
                    Some(a) if now < expires => Ok(ApiKey {
                        key: a.to_string(),
                        source: format!("{} ({p}, OAuth)", auth_path.display()),
                        oauth: true,
                    }),
                    _ => Err(KeyError::OAuthExpired {
                        provider: p.clone(),
                        auth_json: auth_path,
                    }),
                };
            }
            _ => {}
        }
    }
    for var in env_vars(p) {
        if let Ok(k) = std::env::var(var)
            && !k.is_empty()
        {
            return Ok(ApiKey {
                key: k,
                source: format!("${var}"),
                oauth: var.contains("OAUTH"),
            });
        }
    }
    if let Some(k) = model.api_key.as_deref().and_then(resolve_config_value) {
        return Ok(ApiKey {
            key: k,
            source: format!("{} (providers.{p}.apiKey)", agent_dir.join("models.json").display()),
            oauth: false,
        });
    }
    Err(KeyError::Missing {
        provider: p.clone(),
        hint: env_vars(p)
            .first()
            .map(|v| format!("${v}"))
            .unwrap_or_else(|| "an API key".into()),
        auth_json: auth_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_resolve_as_pi_templates() {
        let env = |n: &str| match n {
            "A" => Some("alpha".to_string()),
            "B_2" => Some("beta".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        let r = |v: &str| resolve_config_value_with(v, &env);
        assert_eq!(r("$A").as_deref(), Some("alpha"));
        assert_eq!(r("${A}").as_deref(), Some("alpha"));
        assert_eq!(r("pre-${A}-$B_2.x").as_deref(), Some("pre-alpha-beta.x"));
        assert_eq!(r("$$A").as_deref(), Some("$A"));
        assert_eq!(r("a$!b").as_deref(), Some("a!b"));
        assert_eq!(r("A").as_deref(), Some("A"), "a bare name is the literal");
        assert_eq!(r("$MISSING"), None, "an unset variable leaves it unresolved");
        assert_eq!(r("x$EMPTY"), None, "so does an empty one");
        assert_eq!(r("${1X}").as_deref(), Some("${1X}"));
        assert_eq!(r("${A").as_deref(), Some("${A"));
        assert_eq!(r("cost $5").as_deref(), Some("cost $5"));
        assert_eq!(r("end$").as_deref(), Some("end$"));
        assert_eq!(r("!echo ' spaced '").as_deref(), Some("spaced"));
        assert_eq!(r("!false"), None);
    }

    #[test]
    fn a_key_with_a_line_break_is_invalid_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let e = find_key(&model("bonsai-test-provider", Some("sk-secret-abc\n")), dir.path()).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, KeyError::Invalid { .. }), "{msg}");
        assert!(msg.contains("line break") && msg.contains("models.json"), "{msg}");
        assert!(!msg.contains("sk-secret"), "{msg}");
    }

    fn model(provider: &str, key: Option<&str>) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            id: "m".into(),
            api: "openai-completions".into(),
            base_url: String::new(),
            context_window: 1,
            max_tokens: 1,
            reasoning: false,
            custom: true,
            api_key: key.map(String::from),
            headers: vec![],
            cost: [0.0; 4],
        }
    }

    #[test]
    fn auth_json_then_env_then_models_json() {
        let dir = tempfile::tempdir().unwrap();
        // models.json literal
        let k = find_key(&model("bonsai-test-provider", Some("literal-key")), dir.path()).unwrap();
        assert_eq!(k.key, "literal-key");
        assert!(k.source.contains("models.json"));
        // models.json shell command
        let k = find_key(&model("bonsai-test-provider", Some("!echo from-shell")), dir.path()).unwrap();
        assert_eq!(k.key, "from-shell");
        // auth.json wins
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"bonsai-test-provider":{"type":"api_key","key":"from-auth"}}"#,
        )
        .unwrap();
        let k = find_key(&model("bonsai-test-provider", Some("literal-key")), dir.path()).unwrap();
        assert_eq!(k.key, "from-auth");
        // expired OAuth: a clear message, no key
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"bonsai-test-provider":{"type":"oauth","access":"ACCESS-SECRET","refresh":"r","expires":1}}"#,
        )
        .unwrap();
        let e = find_key(&model("bonsai-test-provider", None), dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("expired") && !e.contains("ACCESS-SECRET"), "{e}");
    }
}
