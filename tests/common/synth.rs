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
