//! Summaries written by a model: the compaction (history and, for a split turn, the turn
//! prefix, in parallel) and the branch summary, in Pi's format with Pi's request limits.

use super::auth::{self, ApiKey};
use super::{Event, LlmError, Policy, Request, complete, prompts};
use crate::engine::compaction::cut::{self, CompactionPlan};
use crate::engine::compaction::offline;
use crate::engine::compaction::summary::Summary;
use crate::engine::edit::entries::Navigation;
use crate::engine::load::models::{ModelInfo, Registry};
use crate::engine::load::session::Session;
use crate::engine::report::serialized_text;
use std::path::Path;

/// Why no model summarizer could be set up.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error("--model takes provider/id, got {0}")]
    BadModel(String),
    #[error("the session has no model yet; pass --model provider/id")]
    NoModel,
    #[error("unknown model {provider}/{id}: not in Pi's built-in list or {}", models_json.display())]
    UnknownModel {
        provider: String,
        id: String,
        models_json: std::path::PathBuf,
    },
    #[error(transparent)]
    Key(#[from] auth::KeyError),
}

/// The model and key a summary is written with.
#[derive(Debug, Clone)]
pub struct Summarizer {
    pub model: ModelInfo,
    pub key: ApiKey,
    pub policy: Policy,
}

impl Summarizer {
    /// `--model provider/id`, else the session's current model (as Pi uses it).
    pub fn resolve(
        registry: &Registry,
        agent_dir: &Path,
        wanted: Option<&str>,
        session_model: Option<(&str, &str)>,
    ) -> Result<Summarizer, ResolveError> {
        let (p, id) = match wanted {
            Some(w) => w.split_once('/').ok_or_else(|| ResolveError::BadModel(w.to_string()))?,
            None => session_model.ok_or(ResolveError::NoModel)?,
        };
        let model = registry
            .find(p, id)
            .cloned()
            .ok_or_else(|| ResolveError::UnknownModel {
                provider: p.to_string(),
                id: id.to_string(),
                models_json: agent_dir.join("models.json"),
            })?;
        let key = auth::find_key(&model, agent_dir)?;
        let settings = crate::store::config::load_settings(&crate::store::config::cwd());
        Ok(Summarizer {
            model,
            key,
            policy: Policy {
                deadline: settings.summary_timeout(),
                ..Policy::default()
            },
        })
    }

    /// `n` output tokens, at most the model's own limit.
    pub fn cap(&self, n: u64) -> u64 {
        if self.model.max_tokens > 0 {
            n.min(self.model.max_tokens)
        } else {
            n
        }
    }

    /// What a summary request may take as output when Pi 1.5.2 sends no `maxTokens`: pi-ai's
    /// `clampMaxTokensToContext` of the model's own limit (room left in the window after the
    /// prompt, estimated at 3.5 characters a token, less a margin).
    pub fn unset_max_tokens(&self, prompt: &str) -> u64 {
        let max = self.model.max_tokens as i64;
        let window = self.model.context_window as i64;
        if window <= 0 {
            return max.max(1) as u64;
        }
        let input = (crate::engine::load::js::utf16_len(prompt) as f64 / 3.5).ceil() as i64;
        let margin = 4096.max((input as f64 * 0.15).ceil() as i64);
        let mut room = window - input - margin;
        if room < 32_768 {
            room = 32_768.min(window - input - 4096);
        }
        max.min(room.max(1)).max(1) as u64
    }

    /// The output limit of a summary request: Pi 0.87.1's own (`pi_limit`, within the model's),
    /// or none from 1.5.2 on (then pi-ai's default, [`Summarizer::unset_max_tokens`]).
    fn limit(&self, pi: crate::engine::load::pi_version::PiVersion, pi_limit: u64, prompt: &str) -> u64 {
        if pi.summary_max_tokens() {
            self.cap(pi_limit)
        } else {
            self.unset_max_tokens(prompt)
        }
    }

    pub fn request(&self, prompt: String, max_tokens: u64, reasoning: Option<String>) -> Request {
        Request {
            model: self.model.clone(),
            key: self.key.clone(),
            system: prompts::SYSTEM.to_string(),
            prompt,
            max_tokens,
            reasoning: reasoning.filter(|_| self.model.reasoning),
        }
    }

    /// Pi's `compact()`: history (or the previous summary) plus the split turn's prefix.
    pub async fn compaction(
        &self,
        s: &Session,
        plan: &CompactionPlan,
        focus: Option<&str>,
        thinking: Option<&str>,
        on_text: impl FnMut(Event) + Send,
    ) -> Result<Summary, LlmError> {
        let reasoning = thinking.filter(|t| *t != "off").map(String::from);
        let previous = cut::previous_summary(s, plan);
        let history_req = (!plan.messages_to_summarize.is_empty()).then(|| {
            let text = serialized_text(s, &plan.messages_to_summarize);
            let prompt = prompts::history(&text, previous.as_deref(), focus);
            let limit = self.limit(s.pi, plan.settings.history_summary_limit(), &prompt);
            self.request(prompt, limit, reasoning.clone())
        });
        let prefix_req = (plan.is_split_turn && !plan.turn_prefix_messages.is_empty()).then(|| {
            let text = serialized_text(s, &plan.turn_prefix_messages);
            // From 1.5.2 the turn prefix is asked with the user's instructions too.
            let prompt = prompts::turn_prefix(&text, focus.filter(|_| s.pi.turn_prefix_focus()));
            let limit = self.limit(s.pi, plan.settings.turn_prefix_limit(), &prompt);
            self.request(prompt, limit, reasoning.clone())
        });
        let on_text = std::sync::Mutex::new(on_text);
        let emit = |e: Event| (on_text.lock().unwrap_or_else(std::sync::PoisonError::into_inner))(e);
        let (h, p) = tokio::join!(
            async {
                match &history_req {
                    Some(r) => complete(r, self.policy, emit).await.map(Some),
                    None => Ok(None),
                }
            },
            async {
                match &prefix_req {
                    Some(r) => complete(r, self.policy, |_| {}).await.map(Some),
                    None => Ok(None),
                }
            }
        );
        let (h, p) = (h?, p?);
        let history = match &h {
            Some(r) => r.text.clone(),
            None => previous.unwrap_or_else(|| "No prior history.".into()),
        };
        let usage = h
            .as_ref()
            .map(|r| r.usage.clone())
            .unwrap_or_default()
            .add(&p.as_ref().map(|r| r.usage.clone()).unwrap_or_default());
        let text = offline::compose_compaction_summary(&history, p.as_ref().map(|r| r.text.as_str()), &plan.file_ops);
        Ok(Summary {
            text,
            usage: Some(usage.to_pi(&self.model)),
        })
    }

    /// Pi's branch summary: at most 4096 output tokens and no thinking in 0.87.1; from 1.5.2
    /// no limit of its own and the session's thinking level.
    pub async fn branch(
        &self,
        s: &Session,
        nav: &Navigation,
        focus: Option<&str>,
        replace: bool,
        on_text: impl FnMut(Event) + Send,
    ) -> Result<Summary, LlmError> {
        if nav.branch.messages.is_empty() {
            return Ok(Summary {
                text: "No content to summarize".into(),
                usage: None,
            });
        }
        let text = serialized_text(s, &nav.branch.messages);
        let prompt = prompts::branch(&text, focus, replace);
        let limit = self.limit(s.pi, 4096, &prompt);
        let reasoning = s.pi.branch_summary_thinking().then(|| {
            let path = nav.branch.from_leaf.map(|l| s.path_to(l)).unwrap_or_default();
            crate::engine::view::context::path_settings(s, &path).0
        });
        let req = self.request(prompt, limit, reasoning.filter(|t| t != "off"));
        let r = complete(&req, self.policy, on_text).await?;
        Ok(Summary {
            text: offline::compose_branch_summary(&r.text, &nav.branch.file_ops),
            usage: Some(r.usage.to_pi(&self.model)),
        })
    }
}
