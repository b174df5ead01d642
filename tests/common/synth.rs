//! Synthetic Pi sessions of any size, made in the test (no ../shared): turns of a user
//! message, an assistant tool call, its result and an answer, a branch now and then, with
//! the fields Pi writes. Deterministic for a seed.

use std::fmt::Write as _;

pub struct Synth {
    pub seed: u64,
    /// Stop once the file is at least this long.
    pub bytes: usize,
    /// Start a branch (re-parent a user message onto an earlier user message) every this
    /// many turns.
    pub branch_every: usize,
    /// Bytes of each tool result's text.
    pub tool_output: usize,
    /// Header version: 3, or 2 for a file `migrate` rewrites.
    pub version: u8,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const WORDS: [&str; 16] = [
    "order", "import", "parse", "row", "csv", "amount", "customer", "test", "fix", "retry", "cents", "file", "quote",
    "field", "error", "path",
];

/// About `min + below(spread)` bytes of words.
fn text(r: &mut Rng, min: usize, spread: usize) -> String {
    let len = min + r.below(spread);
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        s.push_str(WORDS[r.below(WORDS.len())]);
        s.push(if r.below(12) == 0 { '\n' } else { ' ' });
    }
    s
}

impl Synth {
    pub fn new(bytes: usize) -> Synth {
        Synth {
            seed: 42,
            bytes,
            branch_every: 100,
            tool_output: 2048,
            version: 3,
        }
    }

    pub fn make(&self) -> Vec<u8> {
        let mut r = Rng(self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut out = String::with_capacity(self.bytes + 64 * 1024);
        let _ = writeln!(
            out,
            r#"{{"type":"session","version":{},"id":"01a3bd00-0000-7000-8000-{:012x}","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/dev/synth"}}"#,
            self.version, self.seed
        );
        let mut n = 0u64;
        let mut ms = 1_795_000_000_000u64;
        let mut parent: Option<String> = None;
        let mut users: Vec<String> = vec![];
        let mut turn = 0usize;
        let mut line = |out: &mut String, parent: &mut Option<String>, body: String, ms: &mut u64| -> String {
            n += 1;
            *ms += 1000 + (n * 7919) % 5000;
            let id = format!("{:08x}", (n.wrapping_mul(0x9E37_79B1)) as u32);
            let p = parent
                .as_ref()
                .map(|p| format!(r#""{p}""#))
                .unwrap_or_else(|| "null".into());
            let ts = iso(*ms);
            let _ = writeln!(
                out,
                r#"{{"type":"message","id":"{id}","parentId":{p},"timestamp":"{ts}","message":{body}}}"#
            );
            *parent = Some(id.clone());
            id
        };
        while out.len() < self.bytes {
            turn += 1;
            if turn.is_multiple_of(self.branch_every) && users.len() > 2 {
                // Go back to an earlier user message's parent and ask again there.
                let k = users.len() - 1 - r.below(users.len().min(20));
                parent = Some(users[k].clone());
            }
            let ask = serde_json::to_string(&text(&mut r, 40, 400)).unwrap();
            let u = line(
                &mut out,
                &mut parent,
                format!(r#"{{"role":"user","content":[{{"type":"text","text":{ask}}}],"timestamp":{ms}}}"#),
                &mut ms,
            );
            users.push(u);
            let call = format!("toolu_{:08x}", r.next() as u32);
            let usage = format!(
                r#"{{"input":{},"output":{},"cacheRead":{},"cacheWrite":0,"totalTokens":{},"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}}"#,
                40 + turn,
                120,
                turn * 900,
                turn * 900 + 160 + turn
            );
            let think = serde_json::to_string(&text(&mut r, 80, 200)).unwrap();
            line(
                &mut out,
                &mut parent,
                format!(
                    r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":{think},"signature":""}},{{"type":"toolCall","id":"{call}","name":"bash","arguments":{{"command":"grep -n order src/app.py"}}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-haiku-4-5","usage":{usage},"stopReason":"toolUse","timestamp":{ms}}}"#
                ),
                &mut ms,
            );
            let result = serde_json::to_string(&text(&mut r, self.tool_output / 2, self.tool_output)).unwrap();
            line(
                &mut out,
                &mut parent,
                format!(
                    r#"{{"role":"toolResult","toolCallId":"{call}","toolName":"bash","content":[{{"type":"text","text":{result}}}],"isError":false,"timestamp":{ms}}}"#
                ),
                &mut ms,
            );
            let answer = serde_json::to_string(&text(&mut r, 60, 600)).unwrap();
            line(
                &mut out,
                &mut parent,
                format!(
                    r#"{{"role":"assistant","content":[{{"type":"text","text":{answer}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-haiku-4-5","usage":{usage},"stopReason":"stop","timestamp":{ms}}}"#
                ),
                &mut ms,
            );
        }
        out.into_bytes()
    }
}

/// Milliseconds since the epoch as Pi's ISO timestamps (UTC, millisecond precision).
fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// A coding session with the facts a summary must keep: requests naming files, backticked
/// functions, identifiers and numbers; reads, edits and writes of files; bash commands on
/// paths; failing tests and compiler errors. Linear, `turns` user turns, deterministic for a
/// seed (for the summarizers, on sessions no fixture has).
pub fn coding_session(seed: u64, turns: usize) -> Vec<u8> {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    const DIRS: [&str; 6] = ["src/orders", "src/money", "tests", "scripts", "src/api/v2", "config"];
    const STEMS: [&str; 8] = [
        "import_csv",
        "parse_row",
        "cents",
        "retry",
        "ledger",
        "invoice",
        "schema",
        "client",
    ];
    const EXTS: [&str; 4] = ["py", "rs", "ts", "toml"];
    const IDENTS: [&str; 10] = [
        "parse_row",
        "OrderImporter",
        "to_cents",
        "retryCount",
        "MAX_ROWS",
        "LedgerEntry",
        "fetch_v2",
        "InvoiceSchema",
        "apply_discount",
        "rowIndex",
    ];
    const VERBS: [&str; 5] = ["Fix", "Refactor", "Speed up", "Add tests for", "Rename"];
    let file = |r: &mut Rng| {
        format!(
            "{}/{}_{}.{}",
            DIRS[r.below(DIRS.len())],
            STEMS[r.below(STEMS.len())],
            r.below(30),
            EXTS[r.below(EXTS.len())]
        )
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"{{"type":"session","version":3,"id":"01a3bd00-0000-7000-8000-{seed:012x}","timestamp":"2026-11-20T10:00:00.000Z","cwd":"/home/dev/shop"}}"#
    );
    let (mut n, mut ms, mut parent) = (0u64, 1_795_000_000_000u64, "null".to_string());
    // One entry; `@TS@` in the body is the message's timestamp.
    let mut push = |out: &mut String, body: String| {
        n += 1;
        ms += 1000 + (n * 7919) % 5000;
        let id = format!("{:08x}", (n.wrapping_mul(0x9E37_79B1) ^ seed) as u32);
        let body = body.replace("@TS@", &ms.to_string());
        let _ = writeln!(
            out,
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{}","message":{body}}}"#,
            iso(ms)
        );
        parent = format!("\"{id}\"");
    };
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let usage = r#"{"input":40,"output":120,"cacheRead":9000,"cacheWrite":0,"totalTokens":9160,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
    for turn in 0..turns {
        let (f1, f2) = (file(&mut r), file(&mut r));
        let (i1, i2) = (IDENTS[r.below(IDENTS.len())], IDENTS[r.below(IDENTS.len())]);
        let mut ask = format!(
            "{} `{i1}` in {f1} so that {i2} handles {} rows; don't touch {f2}.",
            VERBS[r.below(VERBS.len())],
            100 + r.below(9900)
        );
        if r.below(4) == 0 {
            ask.push_str(&format!(
                "\n\nIt fails like this:\n```\nTraceback (most recent call last):\n  File \"{f1}\", line {}, in {i1}\nValueError: bad amount {}\n```",
                r.below(400),
                r.below(1000)
            ));
        }
        push(
            &mut out,
            format!(
                r#"{{"role":"user","content":[{{"type":"text","text":{}}}],"timestamp":@TS@}}"#,
                q(&ask)
            ),
        );
        // Read, then edit or write, then run the tests.
        let calls: [(&str, String); 3] = [
            ("read", format!(r#"{{"path":{}}}"#, q(&f1))),
            if r.below(3) == 0 {
                (
                    "write",
                    format!(r#"{{"path":{},"content":"x = 1\n"}}"#, q(&file(&mut r))),
                )
            } else {
                (
                    "edit",
                    format!(r#"{{"path":{},"edits":[{{"oldText":"a","newText":"b"}}]}}"#, q(&f1)),
                )
            },
            (
                "bash",
                format!(
                    r#"{{"command":{}}}"#,
                    q(&format!(
                        "pytest tests/test_{}.py -q && ls {}",
                        STEMS[r.below(STEMS.len())],
                        DIRS[r.below(DIRS.len())]
                    ))
                ),
            ),
        ];
        for (k, (name, args)) in calls.iter().enumerate() {
            let id = format!("toolu_{turn:04}_{k}");
            push(
                &mut out,
                format!(
                    r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"{id}","name":"{name}","arguments":{args}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{usage},"stopReason":"toolUse","timestamp":@TS@}}"#
                ),
            );
            let failed = *name == "bash" && r.below(3) == 0;
            let text = if failed {
                format!(
                    "FAILED tests/test_{}.py::test_{} - AssertionError: {} != {}\n1 failed, {} passed",
                    STEMS[r.below(STEMS.len())],
                    i2.to_lowercase(),
                    r.below(100),
                    r.below(100),
                    r.below(50)
                )
            } else {
                text(&mut r, 200, 800)
            };
            push(
                &mut out,
                format!(
                    r#"{{"role":"toolResult","toolCallId":"{id}","toolName":"{name}","content":[{{"type":"text","text":{}}}],"isError":{failed},"timestamp":@TS@}}"#,
                    q(&text)
                ),
            );
        }
        let answer = format!(
            "Updated `{i1}` in {f1}; {}. {}",
            text(&mut r, 20, 60).trim(),
            text(&mut r, 40, 300).trim()
        );
        push(
            &mut out,
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":{}}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{usage},"stopReason":"stop","timestamp":@TS@}}"#,
                q(&answer)
            ),
        );
    }
    out.into_bytes()
}

/// A session (in `cwd`) whose first turns hold specifics of every kind, then a compaction
/// whose summary names some and leaves out others, then one more turn. Returns the file's
/// text, the specifics the summary leaves out, and those it names, as `(kind, text, entry)`.
pub struct Planted {
    pub text: String,
    pub lost: Vec<(&'static str, &'static str, &'static str)>,
    pub kept: Vec<(&'static str, &'static str, &'static str)>,
}

pub fn planted_session(cwd: &str) -> Planted {
    use serde_json::{Value, json};
    let summary = format!(
        "## Goal\n- Make the importer accept rows with a missing currency (importer.py).\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n- [x] Ran `pytest -q tests/test_import.py`: one failure, KeyError: 'currency' in parse_row.\n\n## Key Decisions\n- Default currency comes from the account, as the user chose.\n\n## Next Steps\n1. Finish the fix\n\n<read-files>\n{cwd}/importer.py\n</read-files>"
    );
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "planted-1", "timestamp": "2026-03-01T09:00:00.000Z", "cwd": cwd}),
    ];
    let mut parent: Option<String> = None;
    let mut n = 0;
    let mut push = |lines: &mut Vec<Value>, id: &str, body: Value| {
        n += 1;
        let mut e = json!({"id": id, "parentId": parent, "timestamp": format!("2026-03-01T09:{n:02}:00.000Z")});
        if let (Value::Object(o), Value::Object(b)) = (&mut e, body) {
            o.extend(b);
        }
        lines.push(e);
        parent = Some(id.to_string());
    };
    let msg = |m: Value| json!({"type": "message", "message": m});
    let usage = json!({"input": 900, "output": 60, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 960,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let reply = |content: Value, stop: &str| {
        json!({"role": "assistant", "content": content, "api": "openai-completions", "provider": "fakeco",
            "model": "fake-model", "usage": usage, "stopReason": stop, "timestamp": 1772355600000u64})
    };
    push(
        &mut lines,
        "p0000001",
        msg(
            json!({"role": "user", "timestamp": 1772355600000u64, "content": "The importer crashes on rows without a currency. Never round amounts: keep integer cents. The fixture account is ACCT-77812 and the sandbox runs on port 6433."}),
        ),
    );
    push(
        &mut lines,
        "p0000002",
        msg(reply(
            json!([
        {"type": "toolCall", "id": "call_r1", "name": "read", "arguments": {"path": format!("{cwd}/importer.py")}},
        {"type": "toolCall", "id": "call_r2", "name": "read", "arguments": {"path": "config/currencies.toml"}},
        {"type": "toolCall", "id": "call_b1", "name": "bash", "arguments": {"command": "pytest -q tests/test_import.py"}}]),
            "toolUse",
        )),
    );
    push(
        &mut lines,
        "p0000003",
        msg(
            json!({"role": "toolResult", "toolCallId": "call_r1", "toolName": "read", "isError": false, "timestamp": 1772355600000u64, "content": [{"type": "text", "text": "def parse_row(row):\n    return row['currency']"}]}),
        ),
    );
    push(
        &mut lines,
        "p0000004",
        msg(
            json!({"role": "toolResult", "toolCallId": "call_r2", "toolName": "read", "isError": false, "timestamp": 1772355600000u64, "content": [{"type": "text", "text": "[eur]\nminor = 100"}]}),
        ),
    );
    push(
        &mut lines,
        "p0000005",
        msg(
            json!({"role": "toolResult", "toolCallId": "call_b1", "toolName": "bash", "isError": true, "timestamp": 1772355600000u64, "content": [{"type": "text", "text": "E   KeyError: 'currency' in parse_row\n\nCommand exited with code 1"}]}),
        ),
    );
    push(
        &mut lines,
        "p0000006",
        msg(reply(
            json!([{"type": "text", "text": "parse_row assumes a currency. Should a missing one default to the account's currency or be rejected?"}]),
            "stop",
        )),
    );
    push(
        &mut lines,
        "p0000007",
        msg(json!({"role": "user", "timestamp": 1772355600000u64, "content": "Default it from the account."})),
    );
    push(
        &mut lines,
        "p0000008",
        msg(reply(
            json!([
        {"type": "toolCall", "id": "call_e1", "name": "edit", "arguments": {"path": "importer.py", "oldText": "row['currency']", "newText": "row.get('currency') or account.currency"}},
        {"type": "toolCall", "id": "call_b2", "name": "bash", "arguments": {"command": "git stash list"}}]),
            "toolUse",
        )),
    );
    push(
        &mut lines,
        "p0000009",
        msg(
            json!({"role": "toolResult", "toolCallId": "call_e1", "toolName": "edit", "isError": false, "timestamp": 1772355600000u64, "content": [{"type": "text", "text": "Edited importer.py"}]}),
        ),
    );
    push(
        &mut lines,
        "p0000010",
        msg(
            json!({"role": "toolResult", "toolCallId": "call_b2", "toolName": "bash", "isError": false, "timestamp": 1772355600000u64, "content": [{"type": "text", "text": "stash@{0}: WIP on main"}]}),
        ),
    );
    push(
        &mut lines,
        "p0000011",
        msg(reply(
            json!([{"type": "text", "text": "Done: the currency defaults from the account."}]),
            "stop",
        )),
    );
    push(
        &mut lines,
        "p0000012",
        msg(json!({"role": "user", "timestamp": 1772355600000u64, "content": "Good. Now check the export side."})),
    );
    push(
        &mut lines,
        "p0000013",
        msg(reply(
            json!([{"type": "text", "text": "The export side has no currency lookup, so it is fine."}]),
            "stop",
        )),
    );
    push(
        &mut lines,
        "p0000014",
        json!({"type": "compaction", "summary": summary, "firstKeptEntryId": "p0000012", "tokensBefore": 4000,
        "details": {"readFiles": [format!("{cwd}/importer.py"), "config/currencies.toml"], "modifiedFiles": ["importer.py"]}}),
    );
    push(
        &mut lines,
        "p0000015",
        msg(json!({"role": "user", "timestamp": 1772355600000u64, "content": "Thanks, go on."})),
    );
    push(
        &mut lines,
        "p0000016",
        msg(reply(json!([{"type": "text", "text": "Going on."}]), "stop")),
    );
    Planted {
        text: lines.iter().map(|l| l.to_string() + "\n").collect(),
        lost: vec![
            ("filesRead", "config/currencies.toml", "p0000002"),
            ("commands", "git stash list", "p0000008"),
            ("decisions", "Never round amounts: keep integer cents.", "p0000001"),
            ("values", "ACCT-77812", "p0000001"),
            ("values", "6433", "p0000001"),
        ],
        kept: vec![
            ("filesModified", "importer.py", "p0000008"),
            ("commands", "pytest -q tests/test_import.py", "p0000002"),
            ("errors", "E KeyError: 'currency' in parse_row", "p0000005"),
            ("decisions", "Default it from the account.", "p0000007"),
        ],
    }
}
