//! Pi's text helpers for the `/tree` view: content extraction, tool-call titles, the text
//! Ctrl+X copies and the text search matches, label timestamps.

use crate::load::entry::{Kind, Role};
use crate::load::js;
use crate::load::pi_version::PiVersion;
use crate::load::session::Session;
use serde_json::Value;

pub(super) fn normalize(s: &str) -> String {
    let r: String = s
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .collect();
    js::js_trim(&r).to_string()
}

/// Pi's `extractFullContent`: string content, or text blocks concatenated.
pub fn extract_full_content(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => {
            let mut out = String::new();
            for b in a {
                if b.get("type").and_then(|t| t.as_str()) == Some("text") {
                    match b.get("text") {
                        None => out.push_str("undefined"),
                        Some(t) => out.push_str(&js::js_to_string(t)),
                    }
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// `extractContent`: the first 200 UTF-16 units.
pub fn extract_content(c: Option<&Value>) -> String {
    js::slice_utf16(&extract_full_content(c), 200).into_owned()
}

/// A one-line preview of text, cut to `n` chars (for CLI tables).
pub fn one_line(s: &str, n: usize) -> String {
    let t = normalize(&s.replace('\r', " "));
    if t.chars().count() > n {
        format!("{}…", t.chars().take(n).collect::<String>())
    } else {
        t
    }
}

fn js_or<'a>(args: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().map(|k| args.get(*k)).find(|v| js::truthy(*v)).flatten()
}

/// A POSIX path made absolute-normal as `path.resolve` does for an absolute one (`.` and
/// `..` resolved, repeated and trailing slashes dropped); `None` for a relative path.
fn resolve_abs(p: &str) -> Option<String> {
    if !p.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// A path under `home` as Pi's `/tree` shows it: 0.87.1 replaces any string prefix
/// (`/home/developer/x` under `/home/dev` becomes `~eloper/x`); 1.5.2's `shortenHomePath`
/// only a whole leading folder, both resolved (`~/x`, or `~` for the home itself).
fn shorten_home(p: String, home: Option<&str>, pi: PiVersion) -> String {
    let Some(h) = home.filter(|h| !h.is_empty()) else {
        return p;
    };
    if !pi.home_shortening_by_component() {
        return match p.strip_prefix(h) {
            Some(rest) => format!("~{rest}"),
            None => p,
        };
    }
    let (Some(hk), Some(pk)) = (resolve_abs(h), resolve_abs(&p)) else {
        return p;
    };
    if pk == hk {
        return "~".into();
    }
    let base = if hk.ends_with('/') {
        hk.clone()
    } else {
        format!("{hk}/")
    };
    match pk.strip_prefix(&base) {
        Some(rel) => format!("~/{rel}"),
        None => p,
    }
}

/// 1.5.2's `formatReadLineRange`: null offset and limit are absent, numeric strings count
/// as numbers, and a range it cannot read is left out.
fn read_range_lenient(offset: Option<&Value>, limit: Option<&Value>) -> String {
    let present = |v: Option<&Value>| !matches!(v, None | Some(Value::Null));
    let line_number = |v: &Value| -> Option<f64> {
        let n = match v {
            Value::String(s) if !js::js_trim(s).is_empty() => js::string_to_number(s),
            Value::Number(_) => js::value_to_f64(v)?,
            _ => return None,
        };
        n.is_finite().then_some(n)
    };
    if !present(offset) && !present(limit) {
        return String::new();
    }
    let start = match offset.filter(|v| !v.is_null()) {
        None => 1.0,
        Some(v) => match line_number(v) {
            Some(n) => n,
            None => return String::new(),
        },
    };
    let Some(l) = limit.filter(|v| !v.is_null()) else {
        return format!(":{}", js::js_number(start));
    };
    let Some(count) = line_number(l) else {
        return String::new();
    };
    let end = start + count - 1.0;
    if end == 0.0 || end.is_nan() {
        format!(":{}", js::js_number(start))
    } else {
        format!(":{}-{}", js::js_number(start), js::js_number(end))
    }
}

/// Pi's `formatToolCall`: how a tool result row names the call behind it, as `pi` draws it.
pub fn format_tool_call(name: &str, args: &Value, home: Option<&str>, pi: PiVersion) -> String {
    let shorten = |p: String| shorten_home(p, home, pi);
    let s = |v: Option<&Value>, d: &str| v.map(js::js_to_string).unwrap_or_else(|| d.to_string());
    match name {
        "read" if pi.lenient_read_ranges() => {
            let path = shorten(s(js_or(args, &["path", "file_path"]), ""));
            format!(
                "[read: {path}{}]",
                read_range_lenient(args.get("offset"), args.get("limit"))
            )
        }
        "read" => {
            let mut display = shorten(s(js_or(args, &["path", "file_path"]), ""));
            let offset = args.get("offset");
            let limit = args.get("limit");
            if offset.is_some() || limit.is_some() {
                let start = match offset {
                    Some(Value::Null) | None => Value::from(1),
                    Some(v) => v.clone(),
                };
                // `start + limit - 1` in JavaScript: a string on either side concatenates,
                // anything else adds as numbers (null is 0); then `- 1` makes it a number.
                let end: Option<f64> = limit.map(|l| {
                    let prim = |v: &Value| matches!(v, Value::String(_) | Value::Array(_) | Value::Object(_));
                    let num = |v: &Value| match v {
                        Value::Null => 0.0,
                        Value::Bool(b) => f64::from(u8::from(*b)),
                        v => js::value_to_f64(v).unwrap_or(f64::NAN),
                    };
                    if prim(&start) || prim(l) {
                        let joined = format!("{}{}", js::js_to_string(&start), js::js_to_string(l));
                        js::string_to_number(&joined) - 1.0
                    } else {
                        num(&start) + num(l) - 1.0
                    }
                });
                display.push_str(&format!(":{}", js::js_to_string(&start)));
                if let Some(e) = end.filter(|e| *e != 0.0 && !e.is_nan()) {
                    display.push_str(&format!("-{}", js::js_number(e)));
                }
            }
            format!("[read: {display}]")
        }
        "write" => format!("[write: {}]", shorten(s(js_or(args, &["path", "file_path"]), ""))),
        "edit" => format!("[edit: {}]", shorten(s(js_or(args, &["path", "file_path"]), ""))),
        "bash" => {
            let raw = s(js_or(args, &["command"]), "");
            let cmd = js::slice_utf16(&normalize(&raw), 50).into_owned();
            format!("[bash: {cmd}{}]", if js::utf16_len(&raw) > 50 { "..." } else { "" })
        }
        "grep" => format!(
            "[grep: /{}/ in {}]",
            s(js_or(args, &["pattern"]), ""),
            shorten(s(js_or(args, &["path"]), "."))
        ),
        "find" => format!(
            "[find: {} in {}]",
            s(js_or(args, &["pattern"]), ""),
            shorten(s(js_or(args, &["path"]), "."))
        ),
        "ls" => format!("[ls: {}]", shorten(s(js_or(args, &["path"]), "."))),
        _ => {
            let j = js::stringify(args);
            let cut = js::slice_utf16(&j, 40);
            format!("[{name}: {cut}{}]", if js::utf16_len(&j) > 40 { "..." } else { "" })
        }
    }
}

/// Pi's `getEntryCopyText`: a bash command, a message's text (an empty assistant gives its
/// error), a custom message's text, a summary; nothing for other entries or blank text.
pub fn copy_text(s: &Session, i: usize) -> Option<String> {
    let e = &s.entries[i];
    let v = s.entry_value(i);
    let text = match &e.kind {
        Kind::Message(m) if m.role == Role::BashExecution => {
            v["message"].get("command").and_then(|c| c.as_str()).map(String::from)
        }
        Kind::Message(m) => {
            let msg = &v["message"];
            let t = msg.get("content").map(|c| extract_full_content(Some(c)));
            match t {
                Some(t) if t.is_empty() && m.role == Role::Assistant => {
                    msg.get("errorMessage").and_then(|x| x.as_str()).map(String::from)
                }
                other => other,
            }
        }
        Kind::CustomMessage { .. } => Some(extract_full_content(v.get("content"))),
        Kind::Compaction(_) | Kind::BranchSummary(_) => v.get("summary").and_then(|x| x.as_str()).map(String::from),
        _ => None,
    };
    text.filter(|t| !js::js_trim(t).is_empty())
}

/// Pi's `getSearchableText` (label, role or type words, text).
pub fn searchable_text(s: &Session, i: usize) -> String {
    let e = &s.entries[i];
    let mut parts: Vec<String> = Vec::new();
    if let Some(l) = s.label_of(&e.id) {
        parts.push(l.to_string());
    }
    let v = || s.entry_value(i);
    let st = |v: &Value, k: &str| v.get(k).map(js::js_to_string).unwrap_or_else(|| "undefined".into());
    match &e.kind {
        Kind::Message(m) => {
            let v = v();
            let msg = &v["message"];
            parts.push(m.role.as_str().to_string());
            if js::truthy(msg.get("content")) {
                parts.push(extract_content(msg.get("content")));
            }
            if m.role == Role::BashExecution && js::truthy(msg.get("command")) {
                parts.push(st(msg, "command"));
            }
        }
        Kind::CustomMessage { .. } => {
            let v = v();
            parts.push(st(&v, "customType"));
            match v.get("content") {
                Some(Value::String(x)) => parts.push(x.clone()),
                c => parts.push(extract_content(c)),
            }
        }
        Kind::Compaction(_) => parts.push("compaction".into()),
        Kind::BranchSummary(_) => {
            parts.push("branch summary".into());
            parts.push(st(&v(), "summary"));
        }
        Kind::SessionInfo { name } => {
            parts.push("title".into());
            if let Some(n) = name.as_deref().filter(|n| !n.is_empty()) {
                parts.push(n.to_string());
            }
        }
        Kind::ModelChange(c) => {
            parts.push("model".into());
            parts.push(c.model_id.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::ThinkingLevelChange { level } => {
            parts.push("thinking".into());
            parts.push(level.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::Custom { custom_type } => {
            parts.push("custom".into());
            parts.push(custom_type.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::ContextEdit(ce) => {
            parts.push("context edit".into());
            parts.push(if ce.replacement_null { "omit" } else { "replace" }.into());
            parts.push(ce.target_id.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::Label(l) => {
            parts.push("label".into());
            parts.push(l.label.as_deref().unwrap_or("").to_string());
        }
        Kind::Usage | Kind::Unknown(_) => {}
    }
    parts.join(" ")
}

/// Pi's `formatLabelTimestamp` (in UTC: `HH:MM` today, `M/D HH:MM` this year, else `YY/M/D`).
pub fn format_label_timestamp(ms: f64, now_ms: i64) -> String {
    if ms.is_nan() {
        return "NaN/NaN NaN:NaN".into();
    }
    let ms = ms as i64;
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = js::civil_from_days(days);
    let time = format!("{:02}:{:02}", rem / 3_600_000, (rem / 60_000) % 60);
    let (ny, nm, nd) = js::civil_from_days(now_ms.div_euclid(86_400_000));
    if (y, m, d) == (ny, nm, nd) {
        time
    } else if y == ny {
        format!("{m}/{d} {time}")
    } else {
        format!("{:02}/{m}/{d} {time}", y.rem_euclid(100))
    }
}

#[cfg(test)]
mod read_and_home_tests {
    use super::*;
    use serde_json::json;

    fn read(args: Value, pi: PiVersion) -> String {
        format_tool_call("read", &args, Some("/home/dev"), pi)
    }

    #[test]
    fn odd_read_arguments_draw_as_each_pi_draws_them() {
        use PiVersion::*;
        // (arguments, 0.87.1, 1.5.2): what each Pi's own code gives (0.87.1's inline range in
        // tree-selector.js, 1.5.2's formatReadLineRange), run in Node.
        let cases = [
            (json!({"path": "a.rs"}), "[read: a.rs]", "[read: a.rs]"),
            (
                json!({"path": "a.rs", "offset": 5, "limit": 10}),
                "[read: a.rs:5-14]",
                "[read: a.rs:5-14]",
            ),
            (
                json!({"path": "a.rs", "offset": null}),
                "[read: a.rs:1]",
                "[read: a.rs]",
            ),
            (
                json!({"path": "a.rs", "offset": null, "limit": null}),
                "[read: a.rs:1]",
                "[read: a.rs]",
            ),
            (
                json!({"path": "a.rs", "limit": 1}),
                "[read: a.rs:1-1]",
                "[read: a.rs:1-1]",
            ),
            (
                json!({"path": "a.rs", "offset": "5", "limit": "10"}),
                "[read: a.rs:5-509]",
                "[read: a.rs:5-14]",
            ),
            (
                json!({"path": "a.rs", "offset": 3, "limit": "x"}),
                "[read: a.rs:3]",
                "[read: a.rs]",
            ),
            (
                json!({"path": "a.rs", "offset": true}),
                "[read: a.rs:true]",
                "[read: a.rs]",
            ),
            (json!({"path": "a.rs", "offset": 7}), "[read: a.rs:7]", "[read: a.rs:7]"),
            (
                json!({"path": "a.rs", "offset": " 0x10 ", "limit": 2}),
                "[read: a.rs: 0x10 ]",
                "[read: a.rs:16-17]",
            ),
            (
                json!({"path": "a.rs", "offset": 0, "limit": 1}),
                "[read: a.rs:0]",
                "[read: a.rs:0]",
            ),
            (
                json!({"path": "a.rs", "offset": 2, "limit": 0}),
                "[read: a.rs:2-1]",
                "[read: a.rs:2-1]",
            ),
            (
                json!({"path": "a.rs", "offset": "", "limit": 3}),
                "[read: a.rs:-2]",
                "[read: a.rs]",
            ),
            (
                json!({"path": "a.rs", "offset": [2], "limit": 3}),
                "[read: a.rs:2-22]",
                "[read: a.rs]",
            ),
        ];
        for (args, old, new) in cases {
            assert_eq!(read(args.clone(), V0_87_1), old, "0.87.1 {args}");
            assert_eq!(read(args.clone(), V1_5_2), new, "1.5.2 {args}");
        }
    }

    #[test]
    fn home_is_shortened_by_whole_folders_from_1_5_2() {
        use PiVersion::*;
        let r = |p: &str, pi| format_tool_call("read", &json!({"path": p}), Some("/home/dev"), pi);
        assert_eq!(r("/home/dev/x.rs", V0_87_1), "[read: ~/x.rs]");
        assert_eq!(r("/home/dev/x.rs", V1_5_2), "[read: ~/x.rs]");
        assert_eq!(r("/home/developer/x.rs", V0_87_1), "[read: ~eloper/x.rs]");
        assert_eq!(r("/home/developer/x.rs", V1_5_2), "[read: /home/developer/x.rs]");
        assert_eq!(r("/home/dev/../dev/y.rs", V1_5_2), "[read: ~/y.rs]");
        assert_eq!(r("/home/dev", V1_5_2), "[read: ~]");
        assert_eq!(r("/home/dev//a//b/", V1_5_2), "[read: ~/a/b]");
        assert_eq!(r("src/main.rs", V1_5_2), "[read: src/main.rs]");
        assert_eq!(
            format_tool_call("ls", &json!({"path": "/home/dev/p"}), Some("/home/dev/"), V1_5_2),
            "[ls: ~/p]"
        );
    }
}
