//! Pi's text helpers for the `/tree` view: content extraction, tool-call titles, the text
//! Ctrl+X copies and the text search matches, label timestamps.

use crate::engine::entry::{Kind, Role};
use crate::engine::js;
use crate::engine::session::Session;
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

/// Pi's `formatToolCall`: how a tool result row names the call behind it.
pub fn format_tool_call(name: &str, args: &Value, home: Option<&str>) -> String {
    let shorten = |p: String| match home {
        Some(h) if !h.is_empty() && p.starts_with(h) => format!("~{}", &p[h.len()..]),
        _ => p,
    };
    let s = |v: Option<&Value>, d: &str| v.map(js::js_to_string).unwrap_or_else(|| d.to_string());
    match name {
        "read" => {
            let mut display = shorten(s(js_or(args, &["path", "file_path"]), ""));
            let offset = args.get("offset");
            let limit = args.get("limit");
            if offset.is_some() || limit.is_some() {
                let start = match offset {
                    Some(Value::Null) | None => Value::from(1),
                    Some(v) => v.clone(),
                };
                let end = match limit {
                    None => String::new(),
                    Some(l) => match (start.as_f64(), l.as_f64()) {
                        (Some(a), Some(b)) => js::js_number(a + b - 1.0),
                        _ => format!("{}{}", js::js_to_string(&start), js::js_to_string(l)) + "-1",
                    },
                };
                display.push_str(&format!(":{}", js::js_to_string(&start)));
                if !end.is_empty() && end != "0" {
                    display.push_str(&format!("-{end}"));
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
        Kind::ModelChange { model_id, .. } => {
            parts.push("model".into());
            parts.push(model_id.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::ThinkingLevelChange { level } => {
            parts.push("thinking".into());
            parts.push(level.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::Custom { custom_type } => {
            parts.push("custom".into());
            parts.push(custom_type.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::ContextEdit {
            target_id,
            replacement_null,
            ..
        } => {
            parts.push("context edit".into());
            parts.push(if *replacement_null { "omit" } else { "replace" }.into());
            parts.push(target_id.as_deref().unwrap_or("undefined").to_string());
        }
        Kind::Label { label, .. } => {
            parts.push("label".into());
            parts.push(label.as_deref().unwrap_or("").to_string());
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
