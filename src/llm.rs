//! The only room that talks HTTP: summary requests to Anthropic, OpenAI (chat completions and
//! responses), Google, and any OpenAI-compatible server from `models.json`, streamed (SSE),
//! with retries on 429/5xx/overloaded (honouring `retry-after`), timeouts and clear errors.

pub mod auth;
pub mod prompts;
pub mod sse;
pub mod strategies;
pub mod summarize;

use crate::engine::load::models::ModelInfo;
use auth::ApiKey;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Request {
    pub model: ModelInfo,
    pub key: ApiKey,
    pub system: String,
    pub prompt: String,
    pub max_tokens: u64,
    /// Thinking level for reasoning models (`None`: thinking off where the API allows).
    pub reasoning: Option<String>,
}

#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// No bytes for this long ends the attempt.
    pub idle_timeout: Duration,
    /// No answer (status and headers) this long after sending ends the attempt (a server that
    /// accepts and never answers).
    pub first_byte_timeout: Duration,
    /// The whole call, retries and their waits included, ends once this has passed without
    /// an answer arriving (`bonsai.summaryTimeoutSeconds`): a summary that is streaming
    /// goes on while its text keeps coming.
    pub deadline: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_retries: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(120),
            first_byte_timeout: Duration::from_secs(60),
            deadline: Duration::from_secs(120),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Text(String),
    Retry {
        attempt: u32,
        wait: Duration,
        reason: String,
    },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Usage {
    /// Pi's usage object (with cost from the model's prices).
    pub fn to_pi(&self, m: &ModelInfo) -> Value {
        let c = |n: u64, price: f64| n as f64 * price / 1e6;
        let (ci, co, cr, cw) = (
            c(self.input, m.cost[0]),
            c(self.output, m.cost[1]),
            c(self.cache_read, m.cost[2]),
            c(self.cache_write, m.cost[3]),
        );
        json!({
            "input": self.input, "output": self.output, "cacheRead": self.cache_read, "cacheWrite": self.cache_write,
            "totalTokens": self.input + self.output + self.cache_read + self.cache_write,
            "cost": {"input": ci, "output": co, "cacheRead": cr, "cacheWrite": cw, "total": ci + co + cr + cw}
        })
    }
    pub fn add(&self, o: &Usage) -> Usage {
        Usage {
            input: self.input + o.input,
            output: self.output + o.output,
            cache_read: self.cache_read + o.cache_read,
            cache_write: self.cache_write + o.cache_write,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub usage: Usage,
    pub stop: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LlmError {
    Auth {
        status: u16,
        source: String,
        message: String,
    },
    ContextOverflow(String),
    Http {
        status: u16,
        message: String,
    },
    Network(String),
    Timeout,
    /// The call's deadline passed with no answer arriving (seconds, attempts made).
    Deadline(u64, u32),
    Truncated,
    ToolCall,
    Unsupported(String),
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            LlmError::Auth {
                status,
                source,
                message,
            } => write!(
                f,
                "the API key from {source} was rejected ({status}): {message}. Check or replace that key"
            ),
            LlmError::ContextOverflow(m) => write!(
                f,
                "the summary input does not fit the model's context ({m}); try a smaller input (a larger keepRecentTokens keeps more and summarizes less) or --summarizer offline"
            ),
            LlmError::Http { status, message } => write!(f, "the provider answered {status}: {message}"),
            LlmError::Network(m) => write!(f, "network error: {m}"),
            LlmError::Timeout => write!(f, "the provider stopped sending for too long (timeout)"),
            LlmError::Deadline(secs, tries) => write!(
                f,
                "no answer from the provider within {secs} s ({tries} attempt{}); nothing was written. The limit is the bonsai.summaryTimeoutSeconds setting",
                if *tries == 1 { "" } else { "s" }
            ),
            LlmError::Truncated => write!(
                f,
                "the summary hit the output token cap and is incomplete; nothing was written"
            ),
            LlmError::ToolCall => write!(f, "the model tried to call a tool instead of writing the summary"),
            LlmError::Unsupported(api) => write!(
                f,
                "the API `{api}` is not supported for summaries (anthropic-messages, openai-completions, openai-responses, google-generative-ai are)"
            ),
        }
    }
}

impl std::error::Error for LlmError {}

fn anthropic_thinking(model: &str, level: &str) -> (Value, u64, Option<Value>) {
    let adaptive = ["opus-4-6", "opus-4-7", "sonnet-4-6", "fable"]
        .iter()
        .any(|m| model.contains(m));
    if adaptive {
        return (
            json!({"type": "adaptive", "display": "summarized"}),
            0,
            Some(json!({"effort": level})),
        );
    }
    let budget = match level {
        "minimal" => 1024,
        "low" => 2048,
        "medium" => 8192,
        _ => 16384,
    };
    (
        json!({"type": "enabled", "budget_tokens": budget, "display": "summarized"}),
        budget,
        None,
    )
}

/// The HTTP request for a summary: URL, headers (key included), JSON body.
pub fn build(req: &Request) -> Result<Built, LlmError> {
    let m = &req.model;
    let base = m.base_url.trim_end_matches('/');
    // content-type comes with the JSON body.
    let mut headers: Vec<(String, String)> = vec![];
    for (k, v) in &m.headers {
        headers.push((k.clone(), auth::resolve_config_value(v).unwrap_or_default()));
    }
    let user_text = json!([{"type": "text", "text": req.prompt}]);
    match m.api.as_str() {
        "anthropic-messages" => {
            headers.push(("anthropic-version".into(), "2023-06-01".into()));
            if req.key.oauth || req.key.key.contains("sk-ant-oat") {
                headers.push(("authorization".into(), format!("Bearer {}", req.key.key)));
                headers.push(("anthropic-beta".into(), "oauth-2025-04-20".into()));
            } else {
                headers.push(("x-api-key".into(), req.key.key.clone()));
            }
            let mut body = json!({
                "model": m.id,
                "messages": [{"role": "user", "content": user_text}],
                "max_tokens": req.max_tokens,
                "stream": true,
                "system": [{"type": "text", "text": req.system}],
            });
            if m.reasoning {
                match &req.reasoning {
                    Some(level) => {
                        let (thinking, extra, output) = anthropic_thinking(&m.id, level);
                        body["thinking"] = thinking;
                        body["max_tokens"] = json!(req.max_tokens + extra);
                        if let Some(o) = output {
                            body["output_config"] = o;
                        }
                    }
                    None => body["thinking"] = json!({"type": "disabled"}),
                }
            }
            Ok((format!("{base}/v1/messages"), headers, body))
        }
        "openai-completions" => {
            headers.push(("authorization".into(), format!("Bearer {}", req.key.key)));
            let sys_role = if m.reasoning { "developer" } else { "system" };
            let mut body = json!({
                "model": m.id,
                "messages": [{"role": sys_role, "content": req.system}, {"role": "user", "content": user_text}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_completion_tokens": req.max_tokens,
            });
            if base.contains("api.openai.com") {
                body["store"] = json!(false);
            }
            if let (true, Some(level)) = (m.reasoning, &req.reasoning) {
                body["reasoning_effort"] = json!(level);
            }
            Ok((format!("{base}/chat/completions"), headers, body))
        }
        "openai-responses" => {
            headers.push(("authorization".into(), format!("Bearer {}", req.key.key)));
            let mut body = json!({
                "model": m.id,
                "instructions": req.system,
                "input": [{"role": "user", "content": [{"type": "input_text", "text": req.prompt}]}],
                "stream": true,
                "store": false,
                "max_output_tokens": req.max_tokens,
            });
            if m.reasoning {
                body["reasoning"] = match &req.reasoning {
                    Some(level) => json!({"effort": level, "summary": "auto"}),
                    None => json!({"effort": "minimal"}),
                };
            }
            Ok((format!("{base}/responses"), headers, body))
        }
        "google-generative-ai" => {
            headers.push(("x-goog-api-key".into(), req.key.key.clone()));
            let mut config = json!({"maxOutputTokens": req.max_tokens});
            if m.reasoning {
                config["thinkingConfig"] = match &req.reasoning {
                    Some(level) => {
                        json!({"includeThoughts": false, "thinkingBudget": match level.as_str() { "minimal" => 1024, "low" => 2048, "medium" => 8192, _ => 16384 }})
                    }
                    None => json!({"thinkingBudget": 0}),
                };
            }
            let body = json!({
                "contents": [{"role": "user", "parts": [{"text": req.prompt}]}],
                "systemInstruction": {"parts": [{"text": req.system}]},
                "generationConfig": config,
            });
            Ok((
                format!("{base}/models/{}:streamGenerateContent?alt=sse", m.id),
                headers,
                body,
            ))
        }
        other => Err(LlmError::Unsupported(other.to_string())),
    }
}

/// What one SSE event contributes.
#[derive(Debug, Default)]
struct Step {
    text: Option<String>,
    usage: Option<Usage>,
    stop: Option<String>,
    error: Option<String>,
    tool_call: bool,
}

fn u(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(|x| x.as_u64()).unwrap_or(0)
}

fn parse_event(api: &str, event: Option<&str>, data: &str, usage: &mut Usage) -> Step {
    if data.trim() == "[DONE]" {
        return Step::default();
    }
    let Ok(v) = serde_json::from_str::<Value>(data) else {
        return Step::default();
    };
    match api {
        "anthropic-messages" => anthropic_event(&v, event, usage),
        "openai-completions" => openai_completions_event(&v, usage),
        "openai-responses" => openai_responses_event(&v, event, usage),
        "google-generative-ai" => google_event(&v, usage),
        _ => Step::default(),
    }
}

/// An Anthropic Messages stream event.
fn anthropic_event(v: &Value, event: Option<&str>, usage: &mut Usage) -> Step {
    let mut st = Step::default();
    match v.get("type").and_then(|t| t.as_str()).or(event) {
        Some("message_start") => {
            let us = &v["message"]["usage"];
            usage.input = u(us, "input_tokens");
            usage.cache_read = u(us, "cache_read_input_tokens");
            usage.cache_write = u(us, "cache_creation_input_tokens");
            usage.output = u(us, "output_tokens");
            st.usage = Some(usage.clone());
        }
        Some("content_block_start") if v["content_block"]["type"] == "tool_use" => {
            st.tool_call = true;
        }
        Some("content_block_delta") if v["delta"]["type"] == "text_delta" => {
            st.text = v["delta"]["text"].as_str().map(String::from);
        }
        Some("message_delta") => {
            if v["usage"]["output_tokens"].is_u64() {
                usage.output = u(&v["usage"], "output_tokens");
            }
            st.stop = v["delta"]["stop_reason"].as_str().map(|r| {
                match r {
                    "end_turn" | "pause_turn" | "stop_sequence" => "stop",
                    "max_tokens" => "length",
                    "tool_use" => "toolUse",
                    _ => "error",
                }
                .to_string()
            });
            st.usage = Some(usage.clone());
        }
        Some("error") => st.error = Some(v["error"]["message"].as_str().unwrap_or("stream error").to_string()),
        _ => {}
    }
    st
}

/// An OpenAI Chat Completions chunk.
fn openai_completions_event(v: &Value, usage: &mut Usage) -> Step {
    let mut st = Step::default();
    if let Some(c) = v["choices"].get(0) {
        st.text = c["delta"]["content"].as_str().map(String::from);
        if c["delta"]["tool_calls"].is_array() {
            st.tool_call = true;
        }
        st.stop = c["finish_reason"].as_str().map(|r| {
            match r {
                "stop" | "end" => "stop",
                "length" => "length",
                "tool_calls" | "function_call" => "toolUse",
                _ => "error",
            }
            .to_string()
        });
    }
    if v["usage"].is_object() {
        let us = &v["usage"];
        let cached = u(&us["prompt_tokens_details"], "cached_tokens");
        usage.input = u(us, "prompt_tokens").saturating_sub(cached);
        usage.cache_read = cached;
        usage.output = u(us, "completion_tokens");
        st.usage = Some(usage.clone());
    }
    if let Some(e) = v["error"]["message"].as_str() {
        st.error = Some(e.to_string());
    }
    st
}

/// An OpenAI Responses stream event.
fn openai_responses_event(v: &Value, event: Option<&str>, usage: &mut Usage) -> Step {
    let mut st = Step::default();
    match v["type"].as_str().or(event) {
        Some("response.output_text.delta") => st.text = v["delta"].as_str().map(String::from),
        Some("response.output_item.added") if v["item"]["type"] == "function_call" => st.tool_call = true,
        Some("response.completed") | Some("response.incomplete") => {
            let us = &v["response"]["usage"];
            let cached = u(&us["input_tokens_details"], "cached_tokens");
            usage.input = u(us, "input_tokens").saturating_sub(cached);
            usage.cache_read = cached;
            usage.output = u(us, "output_tokens");
            st.usage = Some(usage.clone());
            st.stop = Some(
                if v["type"] == "response.incomplete" {
                    "length"
                } else {
                    "stop"
                }
                .to_string(),
            );
        }
        Some("response.failed") | Some("error") => {
            st.error = Some(
                v["response"]["error"]["message"]
                    .as_str()
                    .or(v["message"].as_str())
                    .unwrap_or("response failed")
                    .to_string(),
            )
        }
        _ => {}
    }
    st
}

/// A Gemini stream chunk.
fn google_event(v: &Value, usage: &mut Usage) -> Step {
    let mut st = Step::default();
    if let Some(c) = v["candidates"].get(0) {
        let text: String = c["content"]["parts"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter(|p| p["thought"] != true)
                    .filter_map(|p| p["text"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        if !text.is_empty() {
            st.text = Some(text);
        }
        if c["content"]["parts"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p.get("functionCall").is_some()))
        {
            st.tool_call = true;
        }
        st.stop = c["finishReason"].as_str().map(|r| {
            if r == "STOP" {
                "stop"
            } else if r == "MAX_TOKENS" {
                "length"
            } else {
                "error"
            }
            .to_string()
        });
    }
    if v["usageMetadata"].is_object() {
        let us = &v["usageMetadata"];
        let cached = u(us, "cachedContentTokenCount");
        usage.input = u(us, "promptTokenCount").saturating_sub(cached);
        usage.cache_read = cached;
        usage.output = u(us, "candidatesTokenCount") + u(us, "thoughtsTokenCount");
        st.usage = Some(usage.clone());
    }
    st
}

fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let v = h.get("retry-after")?.to_str().ok()?;
    v.trim()
        .parse::<f64>()
        .ok()
        .map(|s| Duration::from_millis((s * 1000.0) as u64))
}

fn error_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v["error"]["message"]
                .as_str()
                .or(v["message"].as_str())
                .or(v["error"].as_str())
                .map(String::from)
        })
        .unwrap_or_else(|| body.chars().take(300).collect())
}

fn is_overflow(msg: &str) -> bool {
    let m = msg.to_lowercase();
    (m.contains("context")
        && (m.contains("length") || m.contains("window") || m.contains("too long") || m.contains("exceed")))
        || m.contains("prompt is too long")
        || m.contains("maximum context")
}

enum Attempt {
    Done(Reply),
    Retry(Duration, String),
    Fail(LlmError),
}

/// The request as [`build`] makes it: URL, headers, body. Built once per call (a header's
/// `!command` runs once, not again for each retry or for the redaction).
type Built = (String, Vec<(String, String)>, Value);

async fn attempt(
    client: &reqwest::Client,
    req: &Request,
    (url, headers, body): &Built,
    policy: &Policy,
    on_event: &mut (dyn FnMut(Event) + Send),
    streaming: &std::sync::atomic::AtomicBool,
) -> Attempt {
    let mut rb = client.post(url).json(body);
    for (k, v) in headers {
        rb = rb.header(k, v);
    }
    let resp = match tokio::time::timeout(policy.first_byte_timeout, rb.send()).await {
        Err(_) => {
            return Attempt::Retry(
                Duration::ZERO,
                format!("no answer within {} s", policy.first_byte_timeout.as_secs_f64()),
            );
        }
        Ok(Err(e)) => return Attempt::Retry(Duration::ZERO, format!("network: {e}")),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    if status >= 400 {
        let ra = retry_after(resp.headers());
        let body = resp.text().await.unwrap_or_default();
        let msg = error_message(&body);
        if status == 401 || status == 403 {
            return Attempt::Fail(LlmError::Auth {
                status,
                source: req.key.source.clone(),
                message: msg,
            });
        }
        if is_overflow(&msg) {
            return Attempt::Fail(LlmError::ContextOverflow(msg));
        }
        if status == 429
            || status == 529
            || status >= 500
            || status == 408
            || status == 409
            || msg.to_lowercase().contains("overloaded")
        {
            return Attempt::Retry(ra.unwrap_or(Duration::ZERO), format!("{status}: {msg}"));
        }
        return Attempt::Fail(LlmError::Http { status, message: msg });
    }
    let mut stream = resp.bytes_stream();
    let mut parser = sse::Parser::default();
    let mut usage = Usage::default();
    let mut text = String::new();
    let mut stop = String::from("stop");
    loop {
        let chunk = match tokio::time::timeout(policy.idle_timeout, stream.next()).await {
            Err(_) => return Attempt::Fail(LlmError::Timeout),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Attempt::Retry(Duration::ZERO, format!("stream broke: {e}")),
            Ok(Some(Ok(c))) => c,
        };
        for ev in parser.push(&chunk) {
            let st = parse_event(&req.model.api, ev.event.as_deref(), &ev.data, &mut usage);
            if let Some(e) = st.error {
                if e.to_lowercase().contains("overloaded") {
                    return Attempt::Retry(Duration::ZERO, e);
                }
                if is_overflow(&e) {
                    return Attempt::Fail(LlmError::ContextOverflow(e));
                }
                return Attempt::Fail(LlmError::Http { status, message: e });
            }
            if st.tool_call {
                return Attempt::Fail(LlmError::ToolCall);
            }
            if let Some(t) = st.text {
                streaming.store(true, std::sync::atomic::Ordering::Relaxed);
                on_event(Event::Text(t.clone()));
                text.push_str(&t);
            }
            if let Some(s) = st.stop {
                stop = s;
            }
        }
    }
    match stop.as_str() {
        "length" => Attempt::Fail(LlmError::Truncated),
        "toolUse" => Attempt::Fail(LlmError::ToolCall),
        "error" => Attempt::Fail(LlmError::Http {
            status,
            message: "the provider ended the answer with an error".into(),
        }),
        _ => Attempt::Done(Reply { text, usage, stop }),
    }
}

/// Every secret the request carries (the key, the configured headers' resolved values), for
/// [`redact`].
fn secrets_of(req: &Request, headers: &[(String, String)]) -> Vec<String> {
    let mut v = vec![req.key.key.clone()];
    for (k, h) in headers {
        if req.model.headers.iter().any(|(name, _)| name == k) {
            v.push(h.clone());
        }
    }
    // A short value ("1", "true") would blank ordinary words: only what looks like a secret.
    v.retain(|s| s.chars().count() >= 8);
    v
}

/// `text` with every secret replaced: a provider that echoes the key in an error body (or a
/// proxy that quotes the request) must not get it printed.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut t = text.to_string();
    for s in secrets {
        if t.contains(s.as_str()) {
            t = t.replace(s.as_str(), "[key redacted]");
        }
    }
    t
}

impl LlmError {
    /// The same error with every secret taken out of the provider's words.
    fn redacted(self, secrets: &[String]) -> LlmError {
        let r = |s: String| redact(&s, secrets);
        match self {
            LlmError::Auth {
                status,
                source,
                message,
            } => LlmError::Auth {
                status,
                source,
                message: r(message),
            },
            LlmError::ContextOverflow(m) => LlmError::ContextOverflow(r(m)),
            LlmError::Http { status, message } => LlmError::Http {
                status,
                message: r(message),
            },
            LlmError::Network(m) => LlmError::Network(r(m)),
            e => e,
        }
    }
}

/// One summary request, streamed, retried per `policy`, within its deadline.
pub async fn complete(
    req: &Request,
    policy: Policy,
    mut on_event: impl FnMut(Event) + Send,
) -> Result<Reply, LlmError> {
    let built = build(req)?;
    let secrets = secrets_of(req, &built.1);
    let streaming = std::sync::atomic::AtomicBool::new(false);
    let tries = std::sync::atomic::AtomicU32::new(0);
    let mut on_event = |e: Event| {
        on_event(match e {
            Event::Retry { attempt, wait, reason } => Event::Retry {
                attempt,
                wait,
                reason: redact(&reason, &secrets),
            },
            e => e,
        })
    };
    let call = complete_inner(req, &built, policy, &mut on_event, &streaming, &tries);
    tokio::pin!(call);
    let deadline = tokio::time::sleep(policy.deadline);
    tokio::pin!(deadline);
    let r = tokio::select! {
        r = &mut call => r,
        () = &mut deadline => {
            // An answer that is arriving is not cut off; only waiting ends here.
            if streaming.load(std::sync::atomic::Ordering::Relaxed) {
                call.await
            } else {
                Err(LlmError::Deadline(
                    policy.deadline.as_secs(),
                    tries.load(std::sync::atomic::Ordering::Relaxed).max(1),
                ))
            }
        }
    };
    r.map_err(|e| e.redacted(&secrets))
}

async fn complete_inner(
    req: &Request,
    built: &Built,
    policy: Policy,
    on_event: &mut (dyn FnMut(Event) + Send),
    streaming: &std::sync::atomic::AtomicBool,
    attempts: &std::sync::atomic::AtomicU32,
) -> Result<Reply, LlmError> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| LlmError::Network(e.to_string()))?;
    let mut tries = 0;
    loop {
        attempts.store(tries + 1, std::sync::atomic::Ordering::Relaxed);
        streaming.store(false, std::sync::atomic::Ordering::Relaxed);
        match attempt(&client, req, built, &policy, on_event, streaming).await {
            Attempt::Done(r) => return Ok(r),
            Attempt::Fail(e) => return Err(e),
            Attempt::Retry(after, reason) => {
                tries += 1;
                if tries > policy.max_retries {
                    return Err(
                        if let Some(code) = reason.split(':').next().and_then(|c| c.parse::<u16>().ok()) {
                            LlmError::Http {
                                status: code,
                                message: format!("{reason} (gave up after {} retries)", policy.max_retries),
                            }
                        } else {
                            LlmError::Network(format!("{reason} (gave up after {} retries)", policy.max_retries))
                        },
                    );
                }
                let backoff = policy.base_delay * 2u32.pow(tries - 1);
                let wait = after.max(backoff).min(policy.max_delay);
                on_event(Event::Retry {
                    attempt: tries,
                    wait,
                    reason,
                });
                tokio::time::sleep(wait).await;
            }
        }
    }
}
