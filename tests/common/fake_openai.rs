//! A fake OpenAI-compatible model on 127.0.0.1 (chat completions, streamed as server-sent
//! events the way Pi's `openai-completions` provider reads them) for real Pi: every request is
//! recorded, a script decides each answer (text, or tool calls Pi then runs), and the usage it
//! reports is the request's size in Pi's estimate (chars/4 of each message), so Pi's context
//! figures move as they would with a real model. Nothing leaves the machine.
//!
//! With prompt caching on, it caches as providers do: the part of a request equal, message by
//! message, to the start of one of its recent requests is reported as read from the cache
//! (`prompt_tokens_details.cached_tokens`), the rest as written to it (`cache_write_tokens`),
//! which is what Pi reads to record each reply's cost.
//!
//! It also speaks Anthropic's Messages API ([`Wire::Anthropic`]: `message_start` …
//! `message_stop`, text and `tool_use` blocks, usage as `cache_read_input_tokens` and
//! `cache_creation_input_tokens`). A request in that format is recorded, scripted, counted and
//! cached in the OpenAI shape ([`openai_view`]: the system prompt a system message, a tool
//! result a `tool` message, `cache_control` marks dropped), so every script and check reads
//! one shape.

/// The API the fake model speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

use super::fake_model::read_request;
use serde_json::{Value, json};
use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// An answer: text, or tool calls (name, arguments) Pi runs before asking again.
pub enum Reply {
    Text(String),
    Tools(Vec<(String, Value)>),
}

pub struct FakeOpenAi {
    /// `http://127.0.0.1:PORT/v1`, the provider's `baseUrl`.
    pub base_url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    /// Per request: (prompt tokens, read from the cache), as reported.
    usage: Arc<Mutex<Vec<(u64, u64)>>>,
}

impl FakeOpenAi {
    /// Every request body so far, in order of arrival.
    pub fn requests(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }
    pub fn clear(&self) {
        self.bodies.lock().unwrap().clear();
        self.usage.lock().unwrap().clear();
    }
    /// Per request, in order: the prompt tokens reported and the part read from the cache.
    pub fn usage(&self) -> Vec<(u64, u64)> {
        self.usage.lock().unwrap().clone()
    }
}

/// The text of an OpenAI message's content (a string, or the text parts joined).
pub fn content_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

/// Whether a request is a summary request (Pi's compaction, its turn prefix, or a branch
/// summary), not a turn: Pi sends those with its summarizer's system prompt and the
/// conversation as text.
pub fn is_summary_request(body: &Value) -> bool {
    // bonsai's own summary calls (its strategies) declare no tools either.
    let no_tools = body["tools"].as_array().is_none_or(|t| t.is_empty());
    no_tools
        || body["messages"].as_array().into_iter().flatten().any(|m| {
            let t = content_text(&m["content"]);
            (m["role"] == "system" && t.contains("context summarization assistant"))
                || (m["role"] == "user" && (t.starts_with("<conversation>") || t.starts_with("# Conversation\n")))
        })
}

/// Pi's estimate of one request message: chars/4 (rounded up) of its text, tool calls'
/// names and arguments included.
pub fn message_tokens(m: &Value) -> u64 {
    let mut chars = content_text(&m["content"]).encode_utf16().count();
    for c in m["tool_calls"].as_array().into_iter().flatten() {
        chars += c["function"]["name"].as_str().unwrap_or("").encode_utf16().count();
        chars += c["function"]["arguments"].as_str().unwrap_or("").encode_utf16().count();
    }
    chars.div_ceil(4) as u64
}

/// Pi's estimate of a request's messages, message by message.
pub fn request_tokens(body: &Value) -> u64 {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(message_tokens)
        .sum()
}

/// The tokens of `body`'s longest start equal, message by message, to the start of one of
/// `earlier` (the provider's cache).
fn cached_tokens(body: &Value, earlier: &[Value]) -> u64 {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    earlier
        .iter()
        .filter(|e| e["model"] == body["model"])
        .map(|e| {
            let prev = e["messages"].as_array().cloned().unwrap_or_default();
            msgs.iter()
                .zip(&prev)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| message_tokens(a))
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

fn chunk(sock: &mut std::net::TcpStream, data: &str) -> bool {
    sock.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
        .is_ok()
        && sock.flush().is_ok()
}

/// Serve on a random loopback port; `script(body)` answers each request.
pub fn serve(script: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeOpenAi {
    serve_caching(script, false)
}

/// How many recent requests the fake cache compares a request with: the previous one only,
/// as a provider's prompt cache matches the start the previous request wrote. Summary
/// requests write nothing (Pi sends them with `cacheRetention: "none"`) and are passed over.
const CACHED_REQUESTS: usize = 1;

/// [`serve`], reporting prompt caching when `caching`.
pub fn serve_caching(script: impl Fn(&Value) -> Reply + Send + Sync + 'static, caching: bool) -> FakeOpenAi {
    serve_wire(script, caching, Wire::OpenAi)
}

/// An Anthropic Messages request in the OpenAI shape the scripts and checks read.
pub fn openai_view(body: &Value) -> Value {
    let text_of = content_text;
    let mut msgs = Vec::new();
    let system = text_of(&body["system"]);
    if !system.is_empty() {
        msgs.push(json!({"role": "system", "content": system}));
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => vec![],
        };
        if m["role"] == "assistant" {
            let text: String = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| json!({"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": b["input"].to_string()}}))
                .collect();
            let mut v =
                json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !calls.is_empty() {
                v["tool_calls"] = json!(calls);
            }
            msgs.push(v);
            continue;
        }
        // A user turn: its tool results as tool messages, its text as a user message.
        let mut text = String::new();
        for b in &blocks {
            match b["type"].as_str() {
                Some("tool_result") => msgs
                    .push(json!({"role": "tool", "tool_call_id": b["tool_use_id"], "content": text_of(&b["content"])})),
                Some("text") => text.push_str(b["text"].as_str().unwrap_or("")),
                _ => {}
            }
        }
        if !text.is_empty() {
            msgs.push(json!({"role": "user", "content": text}));
        }
    }
    json!({"model": body["model"], "tools": body["tools"], "messages": msgs})
}

/// Write an answer as Anthropic's Messages API streams it.
fn write_anthropic(
    sock: &mut std::net::TcpStream,
    reply: Reply,
    model: &str,
    req_n: usize,
    prompt: u64,
    cached: Option<u64>,
) {
    let event = |sock: &mut std::net::TcpStream, name: &str, data: Value| {
        chunk(sock, &format!("event: {name}\ndata: {data}\n\n"))
    };
    let usage = match cached {
        Some(c) => {
            json!({"input_tokens": 0, "output_tokens": 1, "cache_read_input_tokens": c, "cache_creation_input_tokens": prompt - c})
        }
        None => json!({"input_tokens": prompt, "output_tokens": 1}),
    };
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if sock.write_all(head.as_bytes()).is_err() {
        return;
    }
    let start = json!({"type": "message_start", "message": {"id": format!("msg_fake_{req_n}"), "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}});
    let mut ok = event(sock, "message_start", start);
    let (stop, out_chars) = match reply {
        Reply::Text(t) => {
            ok =
                ok && event(
                    sock,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ) && event(
                    sock,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
                ) && event(
                    sock,
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                );
            ("end_turn", t.len())
        }
        Reply::Tools(calls) => {
            let mut n = 0;
            for (k, (name, args)) in calls.iter().enumerate() {
                let a = args.to_string();
                n += name.len() + a.len();
                ok = ok
                    && event(
                        sock,
                        "content_block_start",
                        json!({"type": "content_block_start", "index": k,
                        "content_block": {"type": "tool_use", "id": format!("toolu_{req_n}_{k}"), "name": name, "input": {}}}),
                    )
                    && event(
                        sock,
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": k, "delta": {"type": "input_json_delta", "partial_json": a}}),
                    )
                    && event(
                        sock,
                        "content_block_stop",
                        json!({"type": "content_block_stop", "index": k}),
                    );
            }
            ("tool_use", n)
        }
    };
    let _ =
        ok && event(
            sock,
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": out_chars.div_ceil(4)}}),
        ) && event(sock, "message_stop", json!({"type": "message_stop"}))
            && sock.write_all(b"0\r\n\r\n").is_ok();
}

/// [`serve_caching`] speaking `wire`.
pub fn serve_wire(script: impl Fn(&Value) -> Reply + Send + Sync + 'static, caching: bool, wire: Wire) -> FakeOpenAi {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = match wire {
        Wire::OpenAi => format!("http://{}/v1", listener.local_addr().unwrap()),
        // Anthropic's client adds `/v1/messages` itself.
        Wire::Anthropic => format!("http://{}", listener.local_addr().unwrap()),
    };
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::new(Mutex::new(Vec::new()));
    let usage: Arc<Mutex<Vec<(u64, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let script = Arc::new(script);
    {
        let (bodies, usage) = (bodies.clone(), usage.clone());
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(mut sock) = sock else { return };
                let (bodies, usage, script) = (bodies.clone(), usage.clone(), script.clone());
                std::thread::spawn(move || {
                    let Some(body) = read_request(&sock) else { return };
                    let body = match wire {
                        Wire::OpenAi => body,
                        Wire::Anthropic => openai_view(&body),
                    };
                    // Recorded before answering: Pi sends the next request only after this one's
                    // answer, so the order of the list is the order of the calls.
                    let (req_n, cached) = {
                        let mut b = bodies.lock().unwrap();
                        let written: Vec<Value> = b
                            .iter()
                            .rev()
                            .filter(|r| !is_summary_request(r))
                            .take(CACHED_REQUESTS)
                            .cloned()
                            .collect();
                        let cached = if caching && !is_summary_request(&body) {
                            cached_tokens(&body, &written)
                        } else {
                            0
                        };
                        b.push(body.clone());
                        usage.lock().unwrap().push((request_tokens(&body), cached));
                        (b.len(), cached)
                    };
                    let reply = script(&body);
                    let model = body["model"].as_str().unwrap_or("fake").to_string();
                    let prompt = request_tokens(&body);
                    if wire == Wire::Anthropic {
                        write_anthropic(&mut sock, reply, &model, req_n, prompt, caching.then_some(cached));
                        return;
                    }
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
                    let _ = sock.write_all(head.as_bytes());
                    let (delta, finish, out_chars) = match reply {
                        Reply::Text(t) => {
                            let n = t.len();
                            (json!({"role": "assistant", "content": t}), "stop", n)
                        }
                        Reply::Tools(calls) => {
                            let mut n = 0;
                            let tc: Vec<Value> = calls
                                .iter()
                                .enumerate()
                                .map(|(k, (name, args))| {
                                    let a = args.to_string();
                                    n += name.len() + a.len();
                                    json!({"index": k, "id": format!("call_{req_n}_{k}"), "type": "function",
                                        "function": {"name": name, "arguments": a}})
                                })
                                .collect();
                            (json!({"role": "assistant", "tool_calls": tc}), "tool_calls", n)
                        }
                    };
                    let first = json!({"id": "fake", "object": "chat.completion.chunk", "created": 1, "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
                    let completion = out_chars.div_ceil(4) as u64;
                    let mut reported = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
                    if caching {
                        reported["prompt_tokens_details"] =
                            json!({"cached_tokens": cached, "cache_write_tokens": prompt - cached});
                    }
                    let last = json!({"id": "fake", "object": "chat.completion.chunk", "created": 1, "model": model,
                        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                        "usage": reported});
                    let _ = chunk(&mut sock, &format!("data: {first}\n\n"))
                        && chunk(&mut sock, &format!("data: {last}\n\n"))
                        && chunk(&mut sock, "data: [DONE]\n\n")
                        && sock.write_all(b"0\r\n\r\n").is_ok();
                });
            }
        });
    }
    FakeOpenAi {
        base_url,
        bodies,
        usage,
    }
}
