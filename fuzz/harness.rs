//! What the fuzz targets run on each input, shared with `tests/fuzz_regressions.rs`, which
//! replays every input the fuzzer ever crashed on (`fuzz/regressions/`).
//!
//! `load`: the bytes as a session file, then everything a user can ask of it (the `/tree`
//! view in every filter at several widths, moves and folds, the context, a cut point, the
//! oracle-shaped report), and one property: loading a prefix and extending it with the rest
//! gives the session loading the whole gives.
//!
//! `tree`: the bytes as a recipe for a session whose tree is odd on purpose (reused ids,
//! parents that point forward, at themselves or nowhere, compactions and labels pointing
//! anywhere, branch summaries, context edits), then the same questions. Random bytes rarely
//! make valid JSON lines; this reaches the tree code with every shape.

#![allow(dead_code)]

use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::load::bytes::FileBytes;
use bonsai::engine::load::session::Session;
use bonsai::engine::report;
use bonsai::engine::view::context;
use bonsai::engine::view::tree::Tree;
use bonsai::engine::view::tree_view::{FilterMode, TreeView};

pub fn load(data: &[u8]) {
    let Ok(s) = Session::from_bytes(data.to_vec()) else {
        return;
    };
    exercise(&s);
    // Extending a prefix (cut at a line end, as a growing file is seen) gives the same session.
    if let Some(cut) = data[..data.len() / 2].iter().rposition(|&b| b == b'\n')
        && let Ok(prefix) = Session::from_bytes(data[..=cut].to_vec())
    {
        let extended = prefix
            .extend(FileBytes::Owned(data.to_vec()))
            .expect("a valid prefix extends");
        assert_eq!(extended.entries.len(), s.entries.len(), "extend: entry count");
        for (i, (a, b)) in extended.entries.iter().zip(&s.entries).enumerate() {
            assert_eq!(a.id, b.id, "extend: ids");
            assert_eq!(extended.parent_id(i), s.parent_id(i), "extend: parents");
        }
        assert_eq!(extended.leaf(), s.leaf(), "extend: leaf");
        assert_eq!(extended.skipped_lines, s.skipped_lines, "extend: skipped lines");
    }
}

pub fn tree(data: &[u8]) {
    let text = recipe(data);
    if let Ok(s) = Session::from_bytes(text.into_bytes()) {
        exercise(&s);
    }
}

/// A session from a byte recipe: two bytes per entry (what it is, where its parent points).
pub fn recipe(data: &[u8]) -> String {
    recipe_with_text(data, "")
}

/// `text` as the inside of a JSON string.
fn json_inner(text: &str) -> String {
    let mut o = String::new();
    for c in text.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

/// [`recipe`] whose texts (user, assistant, tool output, summaries, labels, names) carry
/// `text` too: what a session's own words can do to a document made from it.
pub fn recipe_with_text(data: &[u8], text: &str) -> String {
    let x = json_inner(text);
    let mut out =
        String::from(r#"{"type":"session","version":3,"id":"fuzz","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/f"}"#);
    out.push('\n');
    let n = data.len() / 2;
    let id = |k: usize| format!("e{:03}", k % 64);
    for k in 0..n {
        let (what, link) = (data[2 * k], data[2 * k + 1] as usize);
        // The id: usually fresh, sometimes a reused one (Pi keeps the later entry).
        let me = if what & 0x80 != 0 { id(link) } else { id(k) };
        let parent = match link % 8 {
            0 => "null".to_string(),
            1 => format!(r#""{}""#, me),
            2 => r#""nowhere""#.to_string(),
            _ if k == 0 => "null".to_string(),
            _ => format!(
                r#""{}""#,
                id(if link % 8 == 3 {
                    k + 1 + link / 8
                } else {
                    k - 1 - (link / 8) % k
                })
            ),
        };
        let target = format!(r#""{}""#, id(link / 4));
        let ts = format!("2026-01-01T00:{:02}:{:02}.000Z", (k / 60) % 60, k % 60);
        let body = match what & 0x0f {
            0..=3 => format!(r#""type":"message","message":{{"role":"user","content":"ask {k}{x}","timestamp":1}}"#),
            4 | 5 => format!(
                r#""type":"message","message":{{"role":"assistant","content":[{{"type":"text","text":"answer {k}{x}"}},{{"type":"toolCall","id":"t{k}","name":"bash","arguments":{{}}}}],"usage":{{"input":{k},"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":{}}},"stopReason":"toolUse","timestamp":2}}"#,
                k + 3
            ),
            6 => format!(
                r#""type":"message","message":{{"role":"toolResult","toolCallId":"t{}","toolName":"bash","content":[{{"type":"text","text":"out{x}"}}],"isError":false,"timestamp":3}}"#,
                k.saturating_sub(1)
            ),
            7 => format!(r#""type":"compaction","summary":"s{k}{x}","firstKeptEntryId":{target},"tokensBefore":{k}"#),
            8 => format!(r#""type":"branch_summary","summary":"b{k}{x}","fromId":{target}"#),
            9 => format!(r#""type":"label","targetId":{target},"label":"l{k}{x}""#),
            10 => format!(r#""type":"context_edit","targetId":{target},"replacement":null"#),
            11 => format!(r#""type":"context_edit","targetId":{target},"replacement":{{"content":"short"}}"#),
            12 => format!(r#""type":"custom_message","customType":"x","content":"c{k}{x}","display":true"#),
            13 => r#""type":"model_change","provider":"p","modelId":"m""#.to_string(),
            14 => format!(r#""type":"session_info","name":"n{k}{x}""#),
            _ => r#""type":"","note":"odd""#.to_string(),
        };
        out.push_str(&format!(
            r#"{{"id":"{me}","parentId":{parent},"timestamp":"{ts}",{body}}}"#
        ));
        out.push('\n');
    }
    out
}

/// `export`: the first part of the bytes (to the first 0) as text inside every entry, the rest
/// as a tree recipe (cycles, reused ids included), then every export of it. Each must end (a
/// cycle once made `--tree` run forever) and keep the session's text as text: the HTML page
/// has exactly bonsai's own folds (a `</details>` or `<script>` from the session stays text),
/// the JSON export parses.
pub fn export(data: &[u8]) {
    use bonsai::engine::export::{self, Scope};
    let (text, rest) = match data.iter().position(|&b| b == 0) {
        Some(k) => (String::from_utf8_lossy(&data[..k]).into_owned(), &data[k + 1..]),
        None => (String::new(), data),
    };
    let Ok(s) = Session::from_bytes(recipe_with_text(rest, &text).into_bytes()) else {
        return;
    };
    let mut scopes = vec![Scope::Tree];
    scopes.extend(s.leaf().map(Scope::Path));
    for scope in scopes {
        // (The Markdown keeps `<script>` inside code blocks, where it is code; the HTML made
        // from it shows whether it stayed text.)
        let _ = export::markdown(&s, scope);
        let html = export::html(&s, scope);
        assert!(!html.contains("<script"), "raw <script> in the HTML");
        assert_eq!(
            html.matches("<details").count(),
            html.matches("</details>").count(),
            "the HTML's folds are bonsai's own"
        );
        let json = export::json(&s, scope);
        assert!(std::str::from_utf8(&json).is_ok());
    }
}

/// `search`: each line of the bytes through the search decoder with a query from the first
/// bytes; a hit must point inside its snippet on character boundaries.
pub fn search(data: &[u8]) {
    use bonsai::engine::view::search::{Query, hit_in_line};
    let n = data.first().map(|b| (*b % 4) as usize + 1).unwrap_or(1);
    let q = String::from_utf8_lossy(data.get(1..1 + n).unwrap_or(b"a")).into_owned();
    let rest = data.get(1 + n..).unwrap_or(&[]);
    for regex in [false, true] {
        let Ok(query) = Query::new(&q, regex, None) else {
            continue;
        };
        for (k, line) in rest.split(|&b| b == b'\n').enumerate() {
            if let Some(h) = hit_in_line(line, k as u64 + 1, &query) {
                assert!(h.snippet.get(h.at.clone()).is_some(), "the match is inside its snippet");
            }
        }
    }
}

/// Everything a user can ask of a session; none of it may panic or hang.
fn exercise(s: &Session) {
    let t = Tree::build(s);
    let leaf = s.leaf();
    for (k, mode) in FilterMode::CYCLE.into_iter().enumerate() {
        let mut v = TreeView::new(s, &t, leaf, mode, 0);
        let _ = v.render_plain(s, [80, 24, 7][k % 3], Some(40));
        v.move_down();
        v.fold_or_up(s);
        v.fold_or_up(s);
        v.unfold_or_down(s);
        v.page_up(5);
        v.page_down(7);
        if k == 0 {
            v.set_search(s, "ask".into());
            let _ = v.render_plain(s, 60, Some(20));
        }
    }
    if let Some(l) = leaf {
        let path = s.path_to(l);
        let _ = context::project(s, &path);
        let _ = cut::prepare(
            s,
            l,
            CompactionSettings {
                reserve_tokens: 16384,
                keep_recent_tokens: 20,
            },
        );
        let o = report::InspectOptions {
            leaf: Some(l),
            keep_recent_tokens: 20,
            reserve_tokens: 16384,
            branch_target: Some(0),
            branch_context_window: 128000,
        };
        let _ = report::inspect_json(s, &o);
    }
}

/// What a session shows, as a read command prints it: the `/tree` view, the oracle-shaped
/// report at the leaf (tree, context, cut) and the whole tree exported as Markdown.
fn shown(s: &Session) -> String {
    let t = Tree::build(s);
    let v = TreeView::new(s, &t, s.leaf(), FilterMode::default(), 0);
    let mut out = v.render_plain(s, 100, None).join("\n");
    if let Some(l) = s.leaf() {
        let o = report::InspectOptions {
            leaf: Some(l),
            keep_recent_tokens: 20,
            reserve_tokens: 16384,
            branch_target: None,
            branch_context_window: 128000,
        };
        out.push_str(&report::inspect_json(s, &o).to_string());
    }
    out.push_str(&bonsai::engine::export::markdown(
        s,
        bonsai::engine::export::Scope::Tree,
    ));
    out
}

/// `index`: the bytes' first part a recipe of edits, the rest a tree recipe whose texts carry
/// a few letters. The session is written, indexed, then edited in place keeping its size and
/// modification time (lines of one length swapped, letters changed), sometimes with a line
/// appended too (then only the index's line checks can tell). Read through the index as a
/// command reads it, it must show what a parse of the file shows.
pub fn index(data: &[u8]) {
    // Run on a one-thread pool's own thread: the loader's and the index's parallel steps then
    // run in place, not through wake-ups of idle threads, which took ~40 % of a small case.
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a pool"))
        .install(|| index_case(data))
}

fn index_case(data: &[u8]) {
    use bonsai::store::index;
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let edits_len = (data.first().copied().unwrap_or(0) as usize % 16).min(data.len());
    let (edits, rest) = data.split_at(edits_len);
    let text = recipe_with_text(rest, "abc");
    if text.lines().count() < 3 {
        return;
    }
    // Two long lines around the entries: the index's end blocks (64 KB each) then miss an edit
    // among the entries, which only its line checks can find once the file has grown. They
    // are lines Pi skips (not JSON), so that each case parses them in no time.
    let filler = |_: &str| "X".repeat(70_000);
    let (header, entries) = text.split_once('\n').unwrap_or((&text, ""));
    let (before, after) = (format!("{header}\n{}\n", filler("f0")), format!("{}\n", filler("f1")));
    let text = format!("{before}{entries}{after}");
    // In memory where the system has it: each case writes and syncs a few files.
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!(
        "bonsai-index-fuzz-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let file = dir.join("s.jsonl");
    std::fs::write(&file, &text).expect("the session written");
    let place = index::Place {
        dir: dir.join("index"),
        limit: 1 << 30,
        view: FilterMode::default(),
    };
    let first = index::open(&file, Some(&place), None, None).expect("a session opens");
    index::save(&place, &first.source, &first.session).expect("the index written");
    drop(first);
    let mtime = std::fs::metadata(&file).and_then(|m| m.modified()).expect("a time");
    // The edits, among the entries only (the long lines around them stay): each two bytes,
    // what and where.
    let mut bytes = entries.as_bytes().to_vec();
    let mut append = false;
    for e in edits.chunks(2) {
        let (what, at) = (e[0], e.get(1).copied().unwrap_or(0) as usize);
        let starts: Vec<usize> = std::iter::once(0)
            .chain(
                bytes
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .filter(|&i| i < bytes.len())
            .collect();
        match what % 4 {
            // Two lines of one length swapped.
            0 | 1 => {
                let lines: Vec<(usize, usize)> = starts
                    .iter()
                    .map(|&s| {
                        (
                            s,
                            bytes[s..]
                                .iter()
                                .position(|b| *b == b'\n')
                                .map_or(bytes.len(), |k| s + k),
                        )
                    })
                    .collect();
                let Some(&(a0, a1)) = lines.get(at % lines.len().max(1)) else {
                    continue;
                };
                if let Some(&(b0, b1)) = lines.iter().find(|(s, e)| *s != a0 && e - s == a1 - a0) {
                    let a = bytes[a0..a1].to_vec();
                    let b = bytes[b0..b1].to_vec();
                    bytes[a0..a1].copy_from_slice(&b);
                    bytes[b0..b1].copy_from_slice(&a);
                }
            }
            // A letter changed to another.
            2 => {
                let letters: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i].is_ascii_lowercase()).collect();
                if !letters.is_empty() {
                    let i = letters[(at * 7919 + what as usize) % letters.len()];
                    bytes[i] = b'a' + (bytes[i] - b'a' + 1 + at as u8 % 25) % 26;
                }
            }
            _ => append = true,
        }
    }
    let bytes = [before.as_bytes(), &bytes, after.as_bytes()].concat();
    std::fs::write(&file, &bytes).expect("the edit written");
    if append {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&file).expect("append");
        let _ = f.write_all(
            br#"{"type":"message","id":"zz","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"late","timestamp":1}}
"#,
        );
    } else {
        std::fs::File::options()
            .write(true)
            .open(&file)
            .and_then(|f| f.set_modified(mtime))
            .expect("the time put back");
    }
    let read = index::open_proven(&file, &place);
    let parsed = bonsai::store::load_session(&file);
    match (read, parsed) {
        (Ok(read), Ok(parsed)) => {
            let through_index = shown(&read.session);
            // A line that failed its check while it was read: the command fails and says so
            // (cli::common::after_reading), so nothing it showed is believed.
            if !read.session.index_failed() {
                let parsed = shown(&parsed);
                if through_index != parsed {
                    let at = through_index.lines().zip(parsed.lines()).position(|(a, b)| a != b);
                    let line = |t: &str| {
                        at.and_then(|k| t.lines().nth(k))
                            .unwrap_or("")
                            .chars()
                            .take(300)
                            .collect::<String>()
                    };
                    panic!(
                        "through the index ({:?}) against a parse, first difference at line {at:?}:\n  {}\n  {}",
                        read.used,
                        line(&through_index),
                        line(&parsed)
                    );
                }
            }
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "through the index {:?}, parsed {:?}",
            a.map(|o| o.used),
            b.map(|s| s.entries.len())
        ),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `live`: the bytes as a script of Pi's conversation (turns of requests, tool calls, outputs
/// and answers; jumps back to an earlier request and a new branch from there, as `/tree`
/// does; a restart of the engine; an idle gap that lets the cache go cold), the live policy
/// asked at every call as the package asks it, the state kept between calls, and checked
/// against a replay from nothing (`bonsai context --live`): the two answer the same, always.
/// The state keeps a short history (1 to 16 calls) so a short input reaches past it. Returns
/// the calls compared.
pub fn live(data: &[u8]) -> usize {
    use bonsai::engine::live::{self, CallEnv, LiveSettings, LiveState, Marks, Prices, ValueSource};
    use serde_json::{Value, json};
    let Some((&first, rest)) = data.split_first() else {
        return 0;
    };
    let keep = usize::from(first % 16) + 1;
    let settings = LiveSettings {
        marks: Marks { high: 2_000, low: 800 },
        floor_turns: usize::from(first / 16 % 3),
        ..LiveSettings::default()
    };
    let prices = Prices {
        input: 3.0,
        output: 15.0,
        cache_read: 0.3,
        cache_write: 3.75,
    };
    let prices_of = |_: &str, _: &str| Some(prices);
    let env = CallEnv {
        context_window: 40_000,
        reserve_tokens: 8_000,
        prices: Some(prices),
    };
    let mut msgs: Vec<Value> = Vec::new();
    let mut state = LiveState::keeping(keep);
    let mut ts: i64 = 1_000_000_000;
    let mut calls = 0;
    let mut turn = 0usize;
    // Ask at the end of `msgs`, kept state against a replay from nothing.
    let ask = |msgs: &Vec<Value>, state: &mut LiveState, calls: &mut usize| -> u64 {
        let src = ValueSource::new(msgs, &prices_of);
        let kept = state.answer(&src, &env, &settings);
        let fresh = live::live_context(msgs, &env, &settings, &prices_of);
        assert_eq!(
            kept.pieces, fresh.pieces,
            "the kept state and a replay send different messages"
        );
        assert_eq!(
            kept.report, fresh.report,
            "the kept state and a replay report differently"
        );
        *calls += 1;
        kept.report.tokens_sent + 500
    };
    let reply = |text: String, ts: i64, sent: u64| {
        json!({"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "p", "model": "m",
            "stopReason": "stop", "timestamp": ts, "usage": {"input": sent, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": sent + 10}})
    };
    let mut i = 0;
    while i < rest.len() {
        let op = rest[i];
        let arg = rest.get(i + 1).copied().unwrap_or(0);
        i += 2;
        match op % 5 {
            // A turn with a tool: a request, a call, its output (`arg` sized), an answer.
            0 | 1 => {
                turn += 1;
                ts += 30_000;
                msgs.push(json!({"role": "user", "content": [{"type": "text", "text": format!("turn {turn}: check part {arg}")}], "timestamp": ts}));
                let sent = ask(&msgs, &mut state, &mut calls);
                let id = format!("c{turn}");
                msgs.push(json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": "read", "arguments": {"path": format!("p{arg}.log")}}],
                    "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": ts + 1,
                    "usage": {"input": sent, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": sent + 10}}));
                let out = "line of a log\n".repeat(usize::from(arg) * 8 + 1);
                msgs.push(json!({"role": "toolResult", "toolCallId": id, "toolName": "read", "content": [{"type": "text", "text": out}], "isError": false, "timestamp": ts + 2}));
                let sent = ask(&msgs, &mut state, &mut calls);
                msgs.push(reply(format!("part {arg} checked"), ts + 3, sent));
            }
            // A chat turn.
            2 => {
                turn += 1;
                ts += 30_000;
                msgs.push(json!({"role": "user", "content": [{"type": "text", "text": format!("turn {turn}: {}", "word ".repeat(usize::from(arg)))}], "timestamp": ts}));
                let sent = ask(&msgs, &mut state, &mut calls);
                msgs.push(reply(format!("answer {turn}"), ts + 1, sent));
            }
            // Back to a request `arg` turns ago, as `/tree` goes: the messages after it are
            // gone and a new request follows.
            3 => {
                let users: Vec<usize> = (0..msgs.len()).filter(|&k| msgs[k]["role"] == "user").collect();
                if users.is_empty() {
                    continue;
                }
                let at = users[users.len() - 1 - usize::from(arg) % users.len()];
                msgs.truncate(at);
                state.truncate(at);
            }
            // A restart of the engine (it replays what it is sent), or a long idle gap.
            _ => {
                if arg % 2 == 0 {
                    state = LiveState::keeping(keep);
                } else {
                    ts += 600_000;
                }
            }
        }
    }
    calls
}
