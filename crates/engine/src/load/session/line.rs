//! One line of a session file into an [`Entry`]: the quick pass for `message` lines (the
//! scanner, then serde's head-only view), the full serde pass for everything else and for
//! whatever the quick pass is unsure of.

use crate::load::entry::*;
use crate::load::js;
use crate::load::lenient::{
    EntryHeadJson, EntryJson, LAny, LBlock, LContent, LStr, LUsageOrOther, MessageHeadJson, MessageJson, json_str_stats,
};
use serde_json::Value;
use std::ops::Range;

/// The fields every message has, whichever loader pass read them.
struct MessageFields<'x, 'a> {
    role: &'x LStr<'a>,
    provider: &'x LStr<'a>,
    model: &'x LStr<'a>,
    stop_reason: &'x LStr<'a>,
    error_message: &'x LStr<'a>,
    usage: &'x Option<LUsageOrOther<'a>>,
    tool_name: &'x LStr<'a>,
    tool_call_id: &'x LStr<'a>,
    is_error: LAny,
    exclude_from_context: LAny,
    custom_type: &'x LStr<'a>,
}

/// The common fields of `MessageJson` and `MessageHeadJson` (same names in both).
macro_rules! message_fields {
    ($m:expr) => {
        MessageFields {
            role: &$m.role,
            provider: &$m.provider,
            model: &$m.model,
            stop_reason: &$m.stop_reason,
            error_message: &$m.error_message,
            usage: &$m.usage,
            tool_name: &$m.tool_name,
            tool_call_id: &$m.tool_call_id,
            is_error: $m.is_error,
            exclude_from_context: $m.exclude_from_context,
            custom_type: &$m.custom_type,
        }
    };
}

impl MessageFields<'_, '_> {
    fn build(
        &self,
        v2_hook_rename: bool,
        content_missing: bool,
        visible_text: bool,
        ids: Box<[(Box<str>, u32)]>,
    ) -> StoredMessage {
        // A missing role is JavaScript's `undefined`, which Pi prints and counts as "undefined".
        let mut role = Role::parse(self.role.as_deref().unwrap_or("undefined"));
        if v2_hook_rename && role == Role::Other("hookMessage".into()) {
            role = Role::Custom;
        }
        let usage = self.usage.as_ref().and_then(|u| u.0.as_ref()).map(|u| {
            let f = |a: &LAny| a.number.unwrap_or(f64::NAN);
            Usage {
                input: f(&u.input),
                output: f(&u.output),
                cache_read: f(&u.cache_read),
                cache_write: f(&u.cache_write),
                total_tokens: f(&u.total_tokens),
            }
        });
        StoredMessage {
            role,
            content_missing,
            visible_text,
            tool_call_ids: ids,
            provider: self.provider.as_deref().map(Box::from),
            model: self.model.as_deref().map(Box::from),
            stop_reason: self.stop_reason.as_deref().map(Box::from),
            has_error_message: self.error_message.as_deref().is_some_and(|s| !s.is_empty()),
            usage: usage.map(Box::new),
            tool_name: self.tool_name.as_deref().map(Box::from),
            tool_call_id: self.tool_call_id.as_deref().map(Box::from),
            is_error: self.is_error.truthy,
            exclude_from_context: self.exclude_from_context.truthy,
            custom_type: self.custom_type.as_deref().map(Box::from),
            names_nested_calls: None,
            line: 0..0,
            slot: NO_SLOT,
            measures: std::sync::OnceLock::new(),
        }
    }
}

/// A message from its raw JSON (a compaction's `systemMessage`), measured now.
pub(crate) fn message_from_raw(raw: &str, v2_hook_rename: bool) -> Option<StoredMessage> {
    let m: MessageJson = serde_json::from_str(raw).ok()?;
    Some(message_from_json(&m, v2_hook_rename))
}

/// A message with its content measured now (the full loader pass).
pub(crate) fn message_from_json(m: &MessageJson, v2_hook_rename: bool) -> StoredMessage {
    let fields = message_fields!(m);
    let content_missing = matches!(m.content, LContent::Missing | LContent::Null);
    let mut msg = fields.build(v2_hook_rename, content_missing, false, Box::new([]));
    let measures = measure(m, &msg.role);
    msg.visible_text = measures.content.has_visible_text;
    msg.tool_call_ids = measures
        .tool_calls
        .iter()
        .filter_map(|tc| tc.id.clone().map(|id| (id, tc.block)))
        .collect();
    let _ = msg.measures.set(Box::new(measures));
    msg
}

/// A message read by the quick loader pass; what the scanner did not measure is measured on
/// first use (`Session::measures`).
pub(crate) fn message_from_head(mut m: MessageHeadJson, v2_hook_rename: bool) -> StoredMessage {
    let fields = message_fields!(m);
    let c = std::mem::take(&mut m.content);
    let msg = fields.build(
        v2_hook_rename,
        c.missing,
        c.visible_text,
        c.tool_call_ids.into_boxed_slice(),
    );
    if let Some(ms) = c.measured {
        let (est_tokens, text_chars) = match &msg.role {
            // A checkpoint's sections and tools are measured by the full pass.
            Role::System => return msg,
            Role::BashExecution => (ceil4(ms.bash_chars), ms.bash_chars),
            Role::BranchSummary | Role::CompactionSummary => (ceil4(ms.summary_chars), ms.summary_chars),
            r => (ms.content.estimate(r), ms.content.text_chars),
        };
        let _ = msg.measures.set(Box::new(MessageMeasures {
            content: ms.content,
            est_tokens,
            text_chars,
            tool_calls: ms.tool_calls,
        }));
    }
    msg
}

/// Pi's `estimateTokens` and the oracle's `textChars` for a message, by role.
fn measure(m: &MessageJson, role: &Role) -> MessageMeasures {
    let (content, tool_calls) = content_stats(&m.content);
    let (est_tokens, text_chars) = match role {
        Role::System => {
            let mut chars = if content.is_string {
                content.text_chars
            } else {
                content.text_chars + IMAGE_CHARS * content.images
            };
            let mut text = content.text_chars;
            if let Some(sec) = m.sections.value().and_then(|s| serde_json::from_str::<Value>(s).ok())
                && let Value::Object(map) = sec
            {
                for v in map.values() {
                    if let Value::String(s) = v {
                        let n = js::utf16_len(s);
                        chars += n;
                        text += n;
                    }
                }
            }
            if let Some(tools) = m
                .tools_added
                .value()
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
                && js::truthy(Some(&tools))
            {
                chars += js::stringify_len(&tools);
            }
            (ceil4(chars), text)
        }
        Role::BashExecution => {
            let n = m.command.as_deref().map(js::utf16_len).unwrap_or(0)
                + m.output.as_deref().map(js::utf16_len).unwrap_or(0);
            (ceil4(n), n)
        }
        Role::BranchSummary | Role::CompactionSummary => {
            let n = m.summary.as_deref().map(js::utf16_len).unwrap_or(0);
            (ceil4(n), n)
        }
        r => (content.estimate(r), content.text_chars),
    };
    MessageMeasures {
        content,
        est_tokens,
        text_chars,
        tool_calls,
    }
}

/// Pi's measures of message content: text and image sizes, tool calls and their paths.
pub(crate) fn content_stats(c: &LContent) -> (ContentStats, Vec<ToolCall>) {
    let mut st = ContentStats::default();
    let mut calls = Vec::new();
    match c {
        LContent::Text(s) => {
            st.is_string = true;
            st.text_chars = js::utf16_len(s);
            st.has_visible_text = !js::js_trim(s).is_empty();
        }
        LContent::Blocks(blocks) => {
            for (bi, b) in blocks.iter().enumerate() {
                add_block(&mut st, b, bi, &mut calls);
            }
        }
        _ => {}
    }
    (st, calls)
}

fn add_block(st: &mut ContentStats, b: &LBlock, bi: usize, calls: &mut Vec<ToolCall>) {
    match b.kind.as_deref() {
        Some("text") => {
            st.has_text_block = true;
            if let Some((n, visible)) = b.text.get().and_then(json_str_stats) {
                st.text_chars += n;
                st.has_visible_text |= visible;
            }
        }
        Some("image") => st.images += 1,
        Some("thinking") => {
            if let Some((n, _)) = b.thinking.get().and_then(json_str_stats) {
                st.thinking_chars += n;
            }
        }
        Some("toolCall") => {
            st.tool_calls += 1;
            let name = b.name.as_deref().unwrap_or("");
            let args: Option<Value> = b.arguments.get().and_then(|s| serde_json::from_str(s).ok());
            let args_len = args.as_ref().map(js::stringify_len).unwrap_or(0);
            st.tool_call_chars += js::utf16_len(name) + args_len;
            let path = args
                .as_ref()
                .and_then(|a| a.get("path"))
                .and_then(|p| p.as_str())
                .filter(|p| !p.is_empty())
                .map(Box::from);
            calls.push(ToolCall {
                id: b.id.as_deref().map(Box::from),
                name: name.into(),
                block: bi as u32,
                path,
            });
        }
        _ => {}
    }
}

/// An entry of the line at `span` from its envelope fields as either loader pass read them
/// (its line number is set by the loader).
fn entry_from_envelope(
    id: &LStr,
    parent_id: &Option<LStr>,
    timestamp: &LStr,
    span: &Range<usize>,
    kind: Kind,
    first_kept_index: Option<usize>,
) -> Parsed {
    let entry = Entry::new(
        span.clone(),
        id.as_deref().map(EntryId::from).unwrap_or_default(),
        timestamp.as_deref().map(js::parse_iso_ms).unwrap_or(f64::NAN),
        kind,
    );
    let parent_id = parent_id
        .as_ref()
        .and_then(|p| p.as_deref())
        .filter(|p| !p.is_empty())
        .map(EntryId::from);
    Parsed::Entry(entry, parent_id, first_kept_index)
}

/// The header line as JSON (Node decodes bad UTF-8 to U+FFFD before parsing).
pub(super) fn parse_header(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Value>(bytes).or_else(|e| {
        if std::str::from_utf8(bytes).is_err() {
            serde_json::from_str::<Value>(&String::from_utf8_lossy(bytes))
        } else {
            Err(e)
        }
    })
}

pub(super) fn is_blank(b: &[u8]) -> bool {
    // `line.trim()` in JavaScript; non-ASCII whitespace lines are rare enough to decode.
    let Some(&first) = b.iter().find(|c| !matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)) else {
        return true;
    };
    // Only a line whose first non-ASCII-blank byte starts a non-ASCII char can still be blank.
    if first >= 0x80
        && let Ok(s) = std::str::from_utf8(b)
    {
        return js::js_trim(s).is_empty();
    }
    false
}

pub(super) fn describe_json_error(bytes: &[u8], e: &serde_json::Error) -> String {
    if std::str::from_utf8(bytes).is_err() {
        return "invalid UTF-8; Pi skips the line".into();
    }
    let what = json_error_text(e);
    if e.is_eof() {
        format!("truncated JSON ({what}); Pi skips the line")
    } else {
        format!("malformed JSON ({what}); Pi skips the line")
    }
}

/// serde's message with its position as a column only: the diagnostic already names the file
/// line, and every line is parsed on its own, so serde's "line 1" would mislead.
pub(super) fn json_error_text(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.strip_suffix(&format!(" at line {} column {}", e.line(), e.column())) {
        Some(message) => format!("{message} at column {}", e.column()),
        None => text,
    }
}

pub(super) enum Parsed {
    /// The entry, its parentId (an empty one is none), and (v1) its first kept line.
    Entry(Entry, Option<EntryId>, Option<usize>),
    ExtraHeader,
    Blank,
}

/// One line. With `quick`, a `message` line is read by the quick pass (its content is
/// measured later); anything the quick pass cannot read goes through the full pass, which decides.
/// Why a line is skipped (as Pi skips it), said in the file's diagnostics.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    /// Not JSON: where and how it breaks (`describe_json_error`).
    #[error("{0}")]
    NotJson(String),
    /// JSON, but not an object (the JSON type named).
    #[error("a JSON {0} where an entry object belongs; skipped")]
    NotAnObject(&'static str),
    /// An object the entry's shape does not fit.
    #[error("unreadable entry: {0}")]
    Unreadable(String),
    #[error("`message` entry without a message object")]
    NoMessage,
}

/// `span`: where `bytes` are in the file (a message keeps it, to be measured from later).
pub(super) fn parse_entry(bytes: &[u8], span: Range<usize>, v2_hook: bool, quick: bool) -> Result<Parsed, LineError> {
    if u32::try_from(span.len()).is_err() {
        // An entry keeps its line's length in 32 bits (`Entry::new`); Pi itself cannot read
        // a string that long.
        return Err(LineError::Unreadable("a line of 4 GiB or more; skipped".into()));
    }
    if quick
        && let Some(mut h) =
            crate::load::scan::message_head(bytes).or_else(|| serde_json::from_slice::<EntryHeadJson>(bytes).ok())
        && h.kind.as_deref() == Some("message")
        && let Some(m) = h.message.take()
    {
        let kind = message_at(message_from_head(m, v2_hook), &span);
        return Ok(entry_from_envelope(
            &h.id,
            &h.parent_id,
            &h.timestamp,
            &span,
            kind,
            None,
        ));
    }
    let r = parse_entry_text(bytes, &span, v2_hook);
    if r.is_err() && std::str::from_utf8(bytes).is_err() {
        // Node decodes invalid UTF-8 to U+FFFD before JSON.parse, so such a line can still be
        // a valid entry for Pi. Decode the same way (maximal-subpart replacement).
        let text = String::from_utf8_lossy(bytes).into_owned();
        return parse_entry_text(text.as_bytes(), &span, v2_hook);
    }
    r
}

fn parse_entry_text(bytes: &[u8], span: &Range<usize>, v2_hook: bool) -> Result<Parsed, LineError> {
    match serde_json::from_slice::<EntryJson>(bytes) {
        Ok(le) => build_entry(&le, span, v2_hook),
        Err(e) => {
            // Valid JSON our typed pass refused (a non-object line, or a shape serde could
            // not map): decide with a full parse so we skip exactly what Pi skips.
            match serde_json::from_slice::<Value>(bytes) {
                Err(_) => Err(LineError::NotJson(describe_json_error(bytes, &e))),
                Ok(Value::Object(mut m)) => {
                    // JSON.parse keeps a `message` that is not an object (a string, a number):
                    // Pi holds the entry, with no role or content. An empty object reads the same.
                    if m.get("message").is_some_and(|x| !x.is_object() && !x.is_null()) {
                        m.insert("message".into(), Value::Object(Default::default()));
                    }
                    // Re-serialize (duplicate keys collapse as in JSON.parse) and retry.
                    let text = serde_json::to_string(&m).map_err(|e| LineError::Unreadable(e.to_string()))?;
                    let le: EntryJson =
                        serde_json::from_str(&text).map_err(|e| LineError::Unreadable(json_error_text(&e)))?;
                    build_entry(&le, span, v2_hook)
                }
                Ok(other) => Err(LineError::NotAnObject(match other {
                    Value::Array(_) => "array",
                    Value::String(_) => "string",
                    Value::Number(_) => "number",
                    Value::Bool(_) => "boolean",
                    _ => "null",
                })),
            }
        }
    }
}

fn file_lists(raw: Option<&str>) -> Option<FileLists> {
    FileLists::of_json(raw?)
}

fn bx(s: &LStr) -> Option<Box<str>> {
    s.as_deref().map(Box::from)
}

fn build_entry(le: &EntryJson, span: &Range<usize>, v2_hook: bool) -> Result<Parsed, LineError> {
    // A missing type is `undefined` to Pi, counted under that name (an empty one stays "").
    let ty = le.kind.as_deref().unwrap_or("undefined");
    if ty == "session" {
        return Ok(Parsed::ExtraHeader);
    }
    let kind = match ty {
        "message" => {
            let lm = le.message.as_ref().ok_or(LineError::NoMessage)?;
            message_at(message_from_json(lm, v2_hook), span)
        }
        "model_change" => Kind::ModelChange(Box::new(ModelChangeEntry {
            provider: bx(&le.provider),
            model_id: bx(&le.model_id),
        })),
        "thinking_level_change" => Kind::ThinkingLevelChange {
            level: bx(&le.thinking_level),
        },
        "compaction" => Kind::Compaction(Box::new(Compaction {
            summary_chars: le.summary.as_deref().map(js::utf16_len).unwrap_or(0),
            summary_present: le.summary.0.is_some(),
            first_kept_entry_id: bx(&le.first_kept_entry_id),
            tokens_before: le.tokens_before.number,
            from_hook: le.from_hook.truthy,
            details: if le.details.value().is_some() {
                file_lists(le.details.value())
            } else {
                None
            },
            system_message: le.system_message.value().and_then(|r| message_from_raw(r, false)),
        })),
        "branch_summary" => Kind::BranchSummary(Box::new(BranchSummary {
            summary_chars: le.summary.as_deref().map(js::utf16_len).unwrap_or(0),
            summary_nonempty: le.summary.as_deref().is_some_and(|s| !s.is_empty()),
            from_id: bx(&le.from_id),
            from_hook: le.from_hook.truthy,
            details: file_lists(le.details.value()),
        })),
        "custom" => Kind::Custom {
            custom_type: bx(&le.custom_type),
        },
        "custom_message" => {
            let (content, _) = content_stats(&le.content);
            let est_tokens = content.estimate(&Role::Custom);
            Kind::CustomMessage(Box::new(CustomMessageEntry {
                custom_type: bx(&le.custom_type),
                content,
                est_tokens,
            }))
        }
        "context_edit" => {
            let replacement = le.replacement.value().map(|r| {
                #[derive(serde::Deserialize)]
                struct Rep<'a> {
                    #[serde(borrow, default)]
                    content: LContent<'a>,
                }
                serde_json::from_str::<Rep>(r)
                    .map(|rep| Box::new(content_stats(&rep.content).0))
                    .unwrap_or_default()
            });
            Kind::ContextEdit(Box::new(ContextEditEntry {
                target_id: bx(&le.target_id),
                replacement_null: le.replacement.is_null(),
                replacement,
            }))
        }
        "label" => Kind::Label(Box::new(LabelEntry {
            target_id: bx(&le.target_id),
            label: bx(&le.label),
        })),
        "session_info" => Kind::SessionInfo { name: bx(&le.name) },
        "usage" => Kind::Usage,
        other => Kind::Unknown(other.into()),
    };
    let fk_index = le
        .first_kept_entry_index
        .number
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .map(|n| n as usize);
    Ok(entry_from_envelope(
        &le.id,
        &le.parent_id,
        &le.timestamp,
        span,
        kind,
        fk_index,
    ))
}

/// A message entry's kind: its message, which keeps where its line is (to be measured from
/// later).
fn message_at(mut m: StoredMessage, span: &Range<usize>) -> Kind {
    m.line = span.clone();
    Kind::Message(MessageCell::known(m))
}

#[cfg(test)]
mod span_tests {
    use super::{LineError, Parsed, parse_entry};

    const LINE: &[u8] = br#"{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}"#;

    #[test]
    fn an_entry_keeps_its_lines_byte_range() {
        // Past 4 GiB: a 10 GB session's later lines start there.
        let start = 5usize << 30;
        for quick in [false, true] {
            let Ok(Parsed::Entry(e, ..)) = parse_entry(LINE, start..start + LINE.len(), false, quick) else {
                panic!("not an entry");
            };
            assert_eq!(e.span(), start..start + LINE.len());
        }
    }

    #[test]
    fn a_line_of_4_gib_or_more_is_skipped_not_cut_short() {
        // The entry keeps its line's length in 32 bits; a longer one is refused with a
        // reason, never kept with a wrong range.
        let span = 10..10 + (1usize << 32);
        match parse_entry(LINE, span, false, false) {
            Err(LineError::Unreadable(why)) => assert!(why.contains("4 GiB"), "{why}"),
            _ => panic!("a line of 4 GiB was read"),
        }
        let span = 10..10 + (1usize << 32) - 1;
        assert!(matches!(parse_entry(LINE, span, false, false), Ok(Parsed::Entry(..))));
    }
}
