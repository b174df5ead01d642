//! A fake model on 127.0.0.1 that speaks Anthropic's Messages API (streamed SSE) to many
//! connections at once: every request is recorded (when it came, when its answer ended, its
//! body, whether the client hung up first), the requests in flight are counted, and a script
//! decides each answer. Nothing leaves the machine.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Call {
    /// Order of arrival (0-based).
    pub index: usize,
    pub started: Instant,
    pub ended: Option<Instant>,
    pub body: Value,
    /// The answer's text (empty for an error status).
    pub answer: String,
    /// The client closed the connection before the answer was complete.
    pub hung_up: bool,
}

impl Call {
    pub fn prompt(&self) -> &str {
        self.body["messages"][0]["content"][0]["text"].as_str().unwrap_or("")
    }
    pub fn max_tokens(&self) -> u64 {
        self.body["max_tokens"].as_u64().unwrap_or(0)
    }
}

pub enum Answer {
    /// A streamed answer, spread over `took`.
    Text { text: String, took: Duration },
    /// An HTTP error with its body and headers.
    Status {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
}

pub struct FakeModel {
    pub url: String,
    pub calls: Arc<Mutex<Vec<Call>>>,
    pub max_in_flight: Arc<AtomicUsize>,
    pub in_flight: Arc<AtomicUsize>,
    /// Requests read so far (a call is recorded only once its answer is written).
    arrivals: Arc<AtomicUsize>,
}

impl FakeModel {
    /// Every request read so far, in order of arrival. A client can read the end of an answer
    /// and return before the server's thread has recorded that call, so this waits (up to 10 s)
    /// for every request that arrived to be recorded.
    pub fn calls(&self) -> Vec<Call> {
        let until = Instant::now() + Duration::from_secs(10);
        while self.calls.lock().unwrap().len() < self.arrivals.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut v = self.calls.lock().unwrap().clone();
        v.sort_by_key(|c| c.index);
        v
    }
}

/// One HTTP request's JSON body (by its content-length).
pub fn read_request(sock: &std::net::TcpStream) -> Option<Value> {
    let mut reader = BufReader::new(sock.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut len = 0;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.trim().eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn chunk(sock: &mut std::net::TcpStream, data: &str) -> bool {
    sock.write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
        .is_ok()
        && sock.flush().is_ok()
}

/// Serve on a random loopback port; `script(index, body)` answers each request.
pub fn serve(script: impl Fn(usize, &Value) -> Answer + Send + Sync + 'static) -> FakeModel {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let calls: Arc<Mutex<Vec<Call>>> = Arc::new(Mutex::new(Vec::new()));
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let script = Arc::new(script);
    let arrivals = Arc::new(AtomicUsize::new(0));
    {
        let (calls, max_in_flight, in_flight, arrivals) = (
            calls.clone(),
            max_in_flight.clone(),
            in_flight.clone(),
            arrivals.clone(),
        );
        std::thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(mut sock) = sock else { return };
                let (calls, max_in_flight, in_flight, script, arrivals) = (
                    calls.clone(),
                    max_in_flight.clone(),
                    in_flight.clone(),
                    script.clone(),
                    arrivals.clone(),
                );
                std::thread::spawn(move || {
                    let Some(body) = read_request(&sock) else { return };
                    let index = arrivals.fetch_add(1, Ordering::SeqCst);
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    max_in_flight.fetch_max(now, Ordering::SeqCst);
                    let started = Instant::now();
                    let answer = script(index, &body);
                    let (text, hung_up) = match answer {
                        Answer::Status { status, body, headers } => {
                            let mut head = format!(
                                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                                body.len()
                            );
                            for (k, v) in headers {
                                head.push_str(&format!("{k}: {v}\r\n"));
                            }
                            head.push_str("\r\n");
                            head.push_str(&body);
                            let _ = sock.write_all(head.as_bytes());
                            (String::new(), false)
                        }
                        Answer::Text { text, took } => {
                            let prompt = body["messages"][0]["content"][0]["text"].as_str().unwrap_or("");
                            let input = prompt.len().div_ceil(4);
                            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
                            let mut ok = sock.write_all(head.as_bytes()).is_ok();
                            ok = ok
                                && chunk(
                                    &mut sock,
                                    &format!(
                                        "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"usage\":{{\"input_tokens\":{input},\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}}}}\n\n"
                                    ),
                                );
                            let pieces: Vec<String> = text
                                .chars()
                                .collect::<Vec<_>>()
                                .chunks(40)
                                .map(|c| c.iter().collect())
                                .collect();
                            let pause = took / (pieces.len().max(1) as u32);
                            for p in &pieces {
                                if !ok {
                                    break;
                                }
                                std::thread::sleep(pause);
                                let delta = serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}});
                                ok = chunk(&mut sock, &format!("event: content_block_delta\ndata: {delta}\n\n"));
                            }
                            let output = text.len().div_ceil(4);
                            ok = ok
                                && chunk(
                                    &mut sock,
                                    &format!(
                                        "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"end_turn\"}},\"usage\":{{\"output_tokens\":{output}}}}}\n\n"
                                    ),
                                )
                                && chunk(&mut sock, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
                                && sock.write_all(b"0\r\n\r\n").is_ok();
                            (text, !ok)
                        }
                    };
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    calls.lock().unwrap().push(Call {
                        index,
                        started,
                        ended: Some(Instant::now()),
                        body,
                        answer: text,
                        hung_up,
                    });
                });
            }
        });
    }
    FakeModel {
        url,
        calls,
        max_in_flight,
        in_flight,
        arrivals,
    }
}

/// A model entry for the fake server (Anthropic's API, no reasoning, priced like Sonnet).
pub fn model(url: &str) -> bonsai::engine::load::models::ModelInfo {
    bonsai::engine::load::models::ModelInfo {
        provider: "fake".into(),
        id: "fake-sonnet".into(),
        api: "anthropic-messages".into(),
        base_url: url.into(),
        context_window: 200_000,
        max_tokens: 64_000,
        reasoning: false,
        custom: true,
        api_key: None,
        headers: vec![],
        cost: [3.0, 15.0, 0.3, 3.75],
    }
}

/// A summarizer on the fake server with short retry waits.
pub fn summarizer(url: &str) -> bonsai::llm::summarize::Summarizer {
    bonsai::llm::summarize::Summarizer {
        model: model(url),
        key: bonsai::llm::auth::ApiKey {
            key: "sk-test-SECRET".into(),
            source: "$FAKE_API_KEY".into(),
            oauth: false,
        },
        policy: bonsai::llm::Policy {
            max_retries: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(200),
            idle_timeout: Duration::from_secs(20),
            first_byte_timeout: Duration::from_secs(20),
            deadline: Duration::from_secs(60),
        },
    }
}
