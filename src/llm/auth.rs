//! API keys as Pi finds them (first hit wins): `auth.json` (an API key, or an OAuth access
//! token while it is valid), the provider's environment variables, `models.json`'s `apiKey`.
//! Keys are never printed: errors name where a key came from, not the key.

use crate::engine::models::ModelInfo;
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

/// Pi's `resolveConfigValue`: `!cmd` runs a shell command, an environment variable's name
/// gives its value, anything else is the literal.
pub fn resolve_config_value(v: &str) -> Option<String> {
    if let Some(cmd) = v.strip_prefix('!') {
        let out = std::process::Command::new("sh").arg("-c").arg(cmd).output().ok()?;
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        return (out.status.success() && !s.is_empty()).then_some(s);
    }
    match std::env::var(v) {
        Ok(val) if !val.is_empty() => Some(val),
        _ => Some(v.to_string()).filter(|s| !s.is_empty()),
    }
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
    let p = &model.provider;
    let auth_path = agent_dir.join("auth.json");
    if let Ok(text) = std::fs::read_to_string(&auth_path)
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
