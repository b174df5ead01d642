//! The loader's quick pass (a validating scanner that measures messages as it goes) must
//! read every line exactly as the full serde pass does: same entries, same diagnostics,
//! same numbers for every message. Compared on every session we have and on hand-made
//! lines built to hit each case where the scanner has to hand over to serde.

mod common;

use bonsai::engine::load::bytes::FileBytes;
use bonsai::engine::load::entry::Kind;
use bonsai::engine::load::session::Session;
use std::path::PathBuf;

fn describe(s: &Session) -> Vec<String> {
    let mut out = vec![format!("{:?}", s.diagnostics), format!("skipped {}", s.skipped_lines)];
    for (i, e) in s.entries.iter().enumerate() {
        let ts = if e.ts.is_nan() { "NaN".into() } else { e.ts.to_string() };
        let mut line = format!(
            "{} line {} {:?} id {} parent {:?} ts {} {}",
            i,
            e.line,
            e.span(),
            e.id,
            s.parent_id(i),
            ts,
            e.kind.type_name()
        );
        if let Kind::Message(m) = &e.kind {
            let usage = m.usage.as_deref().map(|u| {
                format!(
                    "{:?}",
                    [u.input, u.output, u.cache_read, u.cache_write, u.total_tokens].map(|x| x.to_bits())
                )
            });
            line += &format!(
                " role {:?} missing {} visible {} ids {:?} provider {:?} model {:?} stop {:?} err {} usage {:?} tool {:?} call {:?} is_error {} excl {} custom {:?}",
                m.role,
                m.content_missing,
                m.visible_text,
                m.tool_call_ids,
                m.provider,
                m.model,
                m.stop_reason,
                m.has_error_message,
                usage,
                m.tool_name,
                m.tool_call_id,
                m.is_error,
                m.exclude_from_context,
                m.custom_type
            );
            line += &format!(" body {:?}", s.measures(m));
        }
        out.push(line);
    }
    out
}

/// Loads `bytes` both ways and returns how many messages the quick pass measured itself.
fn same_both_ways(name: &str, bytes: &[u8]) -> usize {
    let quick = Session::from_bytes(bytes.to_vec());
    let full = Session::from_bytes_with(FileBytes::Owned(bytes.to_vec()), false);
    match (quick, full) {
        (Ok(q), Ok(f)) => {
            let measured = q
                .entries
                .iter()
                .filter_map(|e| e.message())
                .filter(|m| m.is_measured())
                .count();
            let (dq, df) = (describe(&q), describe(&f));
            for (a, b) in dq.iter().zip(df.iter()) {
                assert_eq!(a, b, "{name}: quick pass differs from the full pass");
            }
            assert_eq!(dq.len(), df.len(), "{name}");
            measured
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{name}");
            0
        }
        (a, b) => panic!("{name}: quick {:?} vs full {:?}", a.map(|_| ()), b.map(|_| ())),
    }
}

fn all_sessions() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for d in common::shared_fixture_dirs() {
        files.extend(common::sessions_in(&d));
    }
    files.push(common::repo().join("fixtures/demo.jsonl"));
    files.extend(common::sessions_in(&common::repo().join("fixtures/pi-0.87.1")));
    files.extend(common::sessions_in(&common::repo().join("fixtures/bad")));
    files
}

#[test]
fn every_session_reads_the_same_both_ways() {
    let mut measured = 0;
    for f in all_sessions() {
        let bytes = std::fs::read(&f).unwrap();
        measured += same_both_ways(&f.display().to_string(), &bytes);
    }
    assert!(measured > 100, "the quick pass measured {measured} messages");
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/p"}"#;

fn msg(id: &str, parent: &str, message: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-11-20T10:00:01.000Z","message":{message}}}"#
    )
}

#[test]
fn tricky_lines_read_the_same_both_ways() {
    let long = "x".repeat(200);
    let code = "fn main() {\\n\\tprintln!(\\\"hi\\\");\\n}\\n".repeat(40);
    let messages = [
        // Canonical, with escapes across 64-byte blocks and a path.
        format!(
            r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":"{code}"}},{{"type":"text","text":"  {long}"}},{{"type":"toolCall","id":"c1","name":"write","arguments":{{"path":"/a/b.rs","content":"{code}","n":12,"f":1.5,"neg":-3,"ok":true,"none":null,"arr":[1,"two",{{"path":"inner"}}]}}}}],"stopReason":"toolUse","usage":{{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15}}}}"#
        ),
        // Arguments JSON.stringify would write differently: whitespace, `\/`, `\u00e9`,
        // upper-case hex, `1.0`, `1e3`, `-0`, duplicate keys, an escaped key.
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"read","arguments":{ "path" : "/x" }}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c3","name":"read","arguments":{"path":"a\/b"}}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c4","name":"read","arguments":{"path":"caf\u00e9"}}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c5","name":"read","arguments":{"path":"a","c":"\u001F"}}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c6","name":"read","arguments":{"path":"a","n":1.0,"m":1e3,"z":-0}}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c7","name":"read","arguments":{"path":"a","path":"b"}}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c8","name":"read","arguments":{"p\u0061th":"a"}}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c9","name":"read","arguments":{"path":"a","c":"\u001f\b\u0000"}}]}"#.into(),
        r#"{"role":"assistant","content":[{"type":"toolCall","id":"c10","name":"bash","arguments":"just a string"},{"type":"toolCall","name":7,"arguments":null},{"type":"toolCall","id":"c11"}]}"#.into(),
        // Surrogates: a pair, a lone one (serde refuses; the line is reported).
        r#"{"role":"user","content":"emoji \ud83d\ude00 pair"}"#.into(),
        r#"{"role":"user","content":"lone \ud83d here"}"#.into(),
        // Whitespace-only text, JS whitespace, images, a non-object block, odd content.
        r#"{"role":"assistant","content":[{"type":"text","text":" \n\t "}],"stopReason":"stop"}"#.into(),
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"\u{a0}\u{3000}\"}]}".into(),
        r#"{"role":"user","content":[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"see"}]}"#.into(),
        r#"{"role":"user","content":["not a block",{"type":"text","text":"x"}]}"#.into(),
        r#"{"role":"user","content":{"type":"text"}}"#.into(),
        r#"{"role":"user","content":null}"#.into(),
        r#"{"role":"user"}"#.into(),
        r#"{"role":"user","content":7}"#.into(),
        r#"{"role":"user","content":"dup","content":"twice"}"#.into(),
        // Tool results, bash, summaries, custom, system checkpoint, unknown role.
        r#"{"role":"toolResult","toolCallId":"c1","toolName":"write","content":[{"type":"text","text":"ok\\\"quoted\\\""}],"isError":false}"#.into(),
        r#"{"role":"bashExecution","command":"ls \"a b\"","output":"x\ny","exitCode":0,"excludeFromContext":true}"#.into(),
        r#"{"role":"bashExecution","command":7,"output":null}"#.into(),
        r#"{"role":"branchSummary","summary":"Goal\nsummary","fromId":"a"}"#.into(),
        r#"{"role":"compactionSummary","summary":"s","tokensBefore":5}"#.into(),
        r#"{"role":"custom","customType":"note","content":"hello","display":true}"#.into(),
        r#"{"role":"system","content":"sys","sections":{"a":"bb"},"toolsAdded":[{"name":"t"}]}"#.into(),
        r#"{"role":"hookMessage","content":"from a hook"}"#.into(),
        r#"{"role":"assistant","content":"plain string reply","stopReason":"error","errorMessage":"boom","usage":"n/a"}"#.into(),
        // Usage with odd values, an escaped id, numbers everywhere.
        r#"{"role":"assistant","content":[],"usage":{"input":"10","output":null,"totalTokens":1e2},"isError":1}"#.into(),
        r#"{"role":"assistant","content":[],"usage":{"input":123456789012345,"output":1234567890123456,"cacheRead":-1,"cacheWrite":0.5,"totalTokens":7,"totalTokens":9,"cost":{"input":1.5}}}"#.into(),
        r#"{"role":"assistant","content":[],"usage":{"input":3,"input":"x","output":0,"cost":[1,{"a":null}]}}"#.into(),
        r#"{"role":"assistant","content":[],"usage":[1,2]}"#.into(),
        r#"{"role":"assistant","content":[],"usage":null,"provider":"café","model":"mödel"}"#.into(),
        // Non-ASCII text of 2-, 3- and 4-byte chars falling across 64-byte blocks, with escapes.
        format!(
            r#"{{"role":"user","content":[{{"type":"text","text":"{}"}},{{"type":"thinking","thinking":"{}"}}]}}"#,
            "é→😀\n".repeat(50),
            "ab😀".repeat(33)
        ),
        format!(r#"{{"role":"toolResult","toolCallId":"c","content":"{}x"}}"#, "a".repeat(61) + "😀"),
        // Deep nesting (over serde's limit) and trailing garbage.
        format!(r#"{{"role":"user","content":"deep","x":{}{}}}"#, "[".repeat(130), "]".repeat(130)),
    ];
    let mut lines = vec![HEADER.to_string()];
    let mut parent = String::new();
    for (k, m) in messages.iter().enumerate() {
        let id = format!("m{k}");
        lines.push(msg(&id, &parent, m));
        parent = id;
    }
    lines.push(
        r#"{"type":"message","id":"t1","parentId":"m0","timestamp":"x","message":{"role":"user","content":"a"}} x"#
            .into(),
    );
    lines.push(r#"{"type":"message","id":"t2","parentId":"m0","timestamp":"x","message":{"role":"user","content":"a"},"type":"message"}"#.into());
    lines.push(
        r#"{"type":"message","id":"t3","parentId":"m0","timestamp":"x","message":{"role":"user","content":"raw	tab"}}"#
            .into(),
    );
    lines.push(r#"{"type":"message","id":"t4","parentId":"m0","timestamp":"x","message":{"role":"user","content":"bad \x escape"}}"#.into());
    lines.push(
        r#"{"type":"message","i\u0064":"t5","parentId":"m0","message":{"role":"user","content":"escaped key"}}"#.into(),
    );
    lines.push(r#"{"type":"message","id":"t6","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"a"}]},"n":01}"#.into());
    let mut text = lines.join("\n").into_bytes();
    // Bytes that are not UTF-8 inside a text and inside an id.
    text.extend_from_slice(b"\n{\"type\":\"message\",\"id\":\"u1\",\"parentId\":\"m0\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe bad\"}]}}");
    text.extend_from_slice(b"\n{\"type\":\"message\",\"id\":\"u\xc3\",\"parentId\":\"m0\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n");
    let measured = same_both_ways("tricky lines", &text);
    assert!(
        measured >= 10,
        "the quick pass measured {measured} of the tricky messages"
    );
}

#[test]
fn lines_cut_anywhere_read_the_same_both_ways() {
    // Every prefix of a canonical line is invalid JSON; both passes must refuse each alike.
    let line = msg(
        "a",
        "",
        r#"{"role":"assistant","content":[{"type":"text","text":"tab\t\"q\" \u00e9 end"},{"type":"toolCall","id":"c","name":"edit","arguments":{"path":"/p","oldText":"a\nb","n":[1,2.5,-3e-7]}}],"usage":{"input":1,"output":2}}"#,
    );
    for cut in 1..line.len() {
        let text = format!("{HEADER}\n{}\n", &line[..cut]);
        same_both_ways(&format!("cut at {cut}"), text.as_bytes());
    }
    assert!(same_both_ways("whole", format!("{HEADER}\n{line}\n").as_bytes()) == 1);
}
