//! Borrowing, forgiving serde types for the one-pass loader.
//!
//! Pi parses lines with `JSON.parse` and never validates field types, so a field of an
//! unexpected type must not make us drop a line Pi keeps. These types accept any JSON
//! value and keep only what has the expected type; big nested values stay `RawValue`
//! slices of the file, so loading allocates almost nothing per entry.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A string field, or `None` when the value has another type.
#[derive(Debug, Default, Clone)]
pub struct LStr<'a>(pub Option<Cow<'a, str>>);

impl<'a> LStr<'a> {
    pub fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(LStr(Some(Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(LStr(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Any JSON value reduced to what JavaScript code would see of it: a number, a
/// truthiness, whether it was `null`.
#[derive(Debug, Default, Clone, Copy)]
pub struct LAny {
    pub present: bool,
    pub is_null: bool,
    pub truthy: bool,
    pub number: Option<f64>,
}

impl<'de> Deserialize<'de> for LAny {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LAny;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<LAny, E> {
                Ok(LAny {
                    present: true,
                    truthy: v,
                    ..Default::default()
                })
            }
            fn visit_i64<E>(self, v: i64) -> Result<LAny, E> {
                Ok(LAny {
                    present: true,
                    truthy: v != 0,
                    number: Some(v as f64),
                    is_null: false,
                })
            }
            fn visit_u64<E>(self, v: u64) -> Result<LAny, E> {
                Ok(LAny {
                    present: true,
                    truthy: v != 0,
                    number: Some(v as f64),
                    is_null: false,
                })
            }
            fn visit_f64<E>(self, v: f64) -> Result<LAny, E> {
                Ok(LAny {
                    present: true,
                    truthy: v != 0.0 && !v.is_nan(),
                    number: Some(v),
                    is_null: false,
                })
            }
            fn visit_str<E>(self, v: &str) -> Result<LAny, E> {
                Ok(LAny {
                    present: true,
                    truthy: !v.is_empty(),
                    ..Default::default()
                })
            }
            fn visit_unit<E>(self) -> Result<LAny, E> {
                Ok(LAny {
                    present: true,
                    is_null: true,
                    ..Default::default()
                })
            }
            fn visit_none<E>(self) -> Result<LAny, E> {
                Ok(LAny {
                    present: true,
                    is_null: true,
                    ..Default::default()
                })
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LAny, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<LAny, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LAny {
                    present: true,
                    truthy: true,
                    ..Default::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<LAny, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LAny {
                    present: true,
                    truthy: true,
                    ..Default::default()
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// Message content: a string, a list of blocks, or something else (treated as empty).
#[derive(Debug, Default)]
pub enum LContent<'a> {
    #[default]
    Missing,
    Null,
    Text(Cow<'a, str>),
    Blocks(Vec<LBlock<'a>>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for LContent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LContent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("content")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LContent::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LContent::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(LContent::Text(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LContent::Null)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(LContent::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LContent::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LContent::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LContent::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LContent::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = s.next_element::<LBlock<'de>>()? {
                    out.push(b);
                }
                Ok(LContent::Blocks(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LContent::Other)
            }
        }
        d.deserialize_any(V)
    }
}

/// One content block; a non-object block has no type and counts for nothing.
#[derive(Debug, Default)]
pub struct LBlock<'a> {
    pub kind: LStr<'a>,
    /// Raw JSON of `text` / `thinking`: measured in place, never unescaped (tool output is
    /// most of a session's bytes).
    pub text: LRaw<'a>,
    pub thinking: LRaw<'a>,
    pub name: LStr<'a>,
    pub id: LStr<'a>,
    pub arguments: LRaw<'a>,
    pub mime_type: LStr<'a>,
    pub data_len: usize,
}

impl<'de: 'a, 'a> Deserialize<'de> for LBlock<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LBlock<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut b = LBlock::default();
                while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                    match k.as_ref() {
                        "type" => b.kind = m.next_value()?,
                        "text" => b.text = m.next_value()?,
                        "thinking" => b.thinking = m.next_value()?,
                        "name" => b.name = m.next_value()?,
                        "id" => b.id = m.next_value()?,
                        "arguments" => b.arguments = m.next_value()?,
                        "mimeType" => b.mime_type = m.next_value()?,
                        "data" => {
                            let s: LStr = m.next_value()?;
                            b.data_len = s.0.map(|s| s.len()).unwrap_or(0);
                        }
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(b)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LBlock::default())
            }
            fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(LBlock::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LBlock::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LBlock::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LBlock::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LBlock::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LBlock::default())
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LBlock::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// What an object is, in a message about a line that does not read (no Rust type names).
fn object_kind(type_name: &str) -> &'static str {
    match type_name {
        "LUsage" => "a usage object of numbers",
        "MessageJson" | "MessageHeadJson" => "a message object",
        "EntryJson" | "EntryHeadJson" => "an entry object",
        "LHeadBlock" => "a content block object",
        _ => "a JSON object",
    }
}

/// Generates a map visitor that keeps the last value of each known key, as `JSON.parse`
/// does with duplicate keys, and skips unknown keys.
macro_rules! lenient_struct {
    ($name:ident { $($field:ident : $ty:ty = $key:literal),* $(,)? }) => {
        #[derive(Debug, Default)]
        pub struct $name<'a> {
            $(pub $field: $ty,)*
            pub _p: std::marker::PhantomData<&'a ()>,
        }
        impl<'de: 'a, 'a> Deserialize<'de> for $name<'a> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name<'de>;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str(object_kind(stringify!($name)))
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                        let mut out = $name::default();
                        while let Some(k) = m.next_key::<Cow<'de, str>>()? {
                            match k.as_ref() {
                                $($key => out.$field = m.next_value()?,)*
                                _ => { m.next_value::<IgnoredAny>()?; }
                            }
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

lenient_struct!(LUsage {
    input: LAny = "input",
    output: LAny = "output",
    cache_read: LAny = "cacheRead",
    cache_write: LAny = "cacheWrite",
    total_tokens: LAny = "totalTokens",
});

lenient_struct!(MessageJson {
    role: LStr<'a> = "role",
    content: LContent<'a> = "content",
    provider: LStr<'a> = "provider",
    model: LStr<'a> = "model",
    stop_reason: LStr<'a> = "stopReason",
    error_message: LStr<'a> = "errorMessage",
    usage: Option<LUsageOrOther<'a>> = "usage",
    tool_name: LStr<'a> = "toolName",
    tool_call_id: LStr<'a> = "toolCallId",
    is_error: LAny = "isError",
    command: LStr<'a> = "command",
    output: LStr<'a> = "output",
    exit_code: LRaw<'a> = "exitCode",
    exclude_from_context: LAny = "excludeFromContext",
    custom_type: LStr<'a> = "customType",
    summary: LStr<'a> = "summary",
    sections: LRaw<'a> = "sections",
    tools_added: LRaw<'a> = "toolsAdded",
    tools_removed: LRaw<'a> = "toolsRemoved",
    timestamp: LAny = "timestamp",
});

lenient_struct!(EntryJson {
    kind: LStr<'a> = "type",
    id: LStr<'a> = "id",
    parent_id: Option<LStr<'a>> = "parentId",
    timestamp: LStr<'a> = "timestamp",
    message: Option<MessageJson<'a>> = "message",
    provider: LStr<'a> = "provider",
    model_id: LStr<'a> = "modelId",
    thinking_level: LStr<'a> = "thinkingLevel",
    summary: LStr<'a> = "summary",
    first_kept_entry_id: LStr<'a> = "firstKeptEntryId",
    first_kept_entry_index: LAny = "firstKeptEntryIndex",
    tokens_before: LAny = "tokensBefore",
    details: LRaw<'a> = "details",
    from_hook: LAny = "fromHook",
    from_id: LStr<'a> = "fromId",
    custom_type: LStr<'a> = "customType",
    content: LContent<'a> = "content",
    display: LAny = "display",
    target_id: LStr<'a> = "targetId",
    replacement: LRaw<'a> = "replacement",
    label: LStr<'a> = "label",
    name: LStr<'a> = "name",
    system_message: LRaw<'a> = "systemMessage",
    usage_kind: LStr<'a> = "kind",
    usage: LRaw<'a> = "usage",
    version: LAny = "version",
    cwd: LStr<'a> = "cwd",
    parent_session: LStr<'a> = "parentSession",
});

lenient_struct!(MessageHeadJson {
    role: LStr<'a> = "role",
    content: LHeadContent = "content",
    provider: LStr<'a> = "provider",
    model: LStr<'a> = "model",
    stop_reason: LStr<'a> = "stopReason",
    error_message: LStr<'a> = "errorMessage",
    usage: Option<LUsageOrOther<'a>> = "usage",
    tool_name: LStr<'a> = "toolName",
    tool_call_id: LStr<'a> = "toolCallId",
    is_error: LAny = "isError",
    exclude_from_context: LAny = "excludeFromContext",
    custom_type: LStr<'a> = "customType",
});

// The quick pass of the loader: what every `message` line needs at load, with the content
// only looked at for visible text and tool-call ids (everything else is measured later).
lenient_struct!(EntryHeadJson {
    kind: LStr<'a> = "type",
    id: LStr<'a> = "id",
    parent_id: Option<LStr<'a>> = "parentId",
    timestamp: LStr<'a> = "timestamp",
    message: Option<MessageHeadJson<'a>> = "message",
});

/// What the quick pass keeps of message content. Same rules as [`LContent`] and
/// `ContentStats`: visible text from a string or from `text` blocks whose text is a string.
#[derive(Debug, Default, Clone)]
pub struct LHeadContent {
    pub missing: bool,
    pub visible_text: bool,
    pub tool_call_ids: Vec<(Box<str>, u32)>,
    /// The message measured in the same pass (only the scanner does; serde leaves it).
    pub measured: Option<Measured>,
}

/// What the quick pass measured of a message, for every role but `system`.
#[derive(Debug, Default, Clone)]
pub struct Measured {
    pub content: crate::load::entry::ContentStats,
    pub tool_calls: Vec<crate::load::entry::ToolCall>,
    /// UTF-16 length of `command` + `output` (bash executions).
    pub bash_chars: usize,
    /// UTF-16 length of `summary` (summary messages).
    pub summary_chars: usize,
}

impl<'de> Deserialize<'de> for LHeadContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LHeadContent;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("content")
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LHeadContent {
                    visible_text: !crate::load::js::js_trim(v).is_empty(),
                    ..Default::default()
                })
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LHeadContent {
                    missing: true,
                    ..Default::default()
                })
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(LHeadContent {
                    missing: true,
                    ..Default::default()
                })
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LHeadContent::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LHeadContent::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LHeadContent::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LHeadContent::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                let mut out = LHeadContent::default();
                let mut bi = 0u32;
                while let Some(b) = s.next_element::<LHeadBlock<'de>>()? {
                    match b.kind.as_deref() {
                        Some("text") => {
                            out.visible_text |= b.text.get().and_then(json_str_stats_visible).unwrap_or(false);
                        }
                        Some("toolCall") => {
                            if let Some(id) = b.id.as_deref() {
                                out.tool_call_ids.push((id.into(), bi));
                            }
                        }
                        _ => {}
                    }
                    bi += 1;
                }
                Ok(out)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LHeadContent::default())
            }
        }
        d.deserialize_any(V)
    }
}

lenient_struct!(LHeadBlock {
    kind: LStr<'a> = "type",
    text: LRaw<'a> = "text",
    id: LStr<'a> = "id",
});

/// `usage` of an assistant message: an object of numbers, or anything else.
#[derive(Debug, Default)]
pub struct LUsageOrOther<'a>(pub Option<LUsage<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for LUsageOrOther<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: &'de RawValue = Deserialize::deserialize(d)?;
        let s = raw.get();
        if s.starts_with('{') {
            let u: LUsage<'de> = serde_json::from_str(s).map_err(de::Error::custom)?;
            Ok(LUsageOrOther(Some(u)))
        } else {
            Ok(LUsageOrOther(None))
        }
    }
}

/// A nested value kept as its raw JSON text, `null` included (Pi tells `null` from absent).
#[derive(Debug, Default, Clone, Copy)]
pub struct LRaw<'a>(pub Option<&'a RawValue>);

impl<'a> LRaw<'a> {
    pub fn get(&self) -> Option<&'a str> {
        self.0.map(|r| r.get())
    }
    pub fn is_null(&self) -> bool {
        self.get() == Some("null")
    }
    /// Present and not `null`.
    pub fn value(&self) -> Option<&'a str> {
        self.get().filter(|s| *s != "null")
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LRaw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw: &'de RawValue = Deserialize::deserialize(d)?;
        Ok(LRaw(Some(raw)))
    }
}

/// UTF-16 length of the string a raw JSON string literal decodes to, and whether it holds
/// anything but JavaScript whitespace. `None` when `raw` is not a string literal.
pub fn json_str_stats(raw: &str) -> Option<(usize, bool)> {
    let b = raw.as_bytes();
    if b.len() < 2 || b[0] != b'"' || b[b.len() - 1] != b'"' {
        return None;
    }
    let inner = &b[1..b.len() - 1];
    // UTF-16 units of the raw text (escapes are ASCII), then each escape shrinks to one unit.
    let mut len = utf16_units(inner);
    let mut i = 0usize;
    while let Some(k) = memchr::memchr(b'\\', &inner[i..]) {
        let at = i + k;
        if inner.get(at + 1) == Some(&b'u') {
            len -= 5;
            i = at + 6;
        } else {
            len -= 1;
            i = at + 2;
        }
        if i >= inner.len() {
            break;
        }
    }
    Some((len, starts_visible(inner)))
}

/// The visibility half of [`json_str_stats`] without measuring the whole string.
pub fn json_str_stats_visible(raw: &str) -> Option<bool> {
    json_bytes_visible(raw.as_bytes())
}

/// [`json_str_stats_visible`] on bytes: only the characters up to the first visible one
/// are decoded (bytes that are not UTF-8 count as visible, as U+FFFD would).
pub fn json_bytes_visible(b: &[u8]) -> Option<bool> {
    if b.len() < 2 || b[0] != b'"' || b[b.len() - 1] != b'"' {
        return None;
    }
    Some(starts_visible(&b[1..b.len() - 1]))
}

/// UTF-16 units of UTF-8 text: every byte that starts a char, plus one more for 4-byte chars.
/// Summed in blocks so the compiler vectorizes it (this runs over every byte of a session).
pub fn utf16_units(b: &[u8]) -> usize {
    b.chunks(1 << 16)
        .map(|block| {
            block
                .iter()
                .map(|&c| ((c as i8) >= -64) as u32 + (c >= 0xF0) as u32)
                .sum::<u32>() as usize
        })
        .sum()
}

/// Whether the decoded string has a non-whitespace character (usually its first one).
fn starts_visible(inner: &[u8]) -> bool {
    let mut i = 0usize;
    while i < inner.len() {
        let c = inner[i];
        if c == b'\\' {
            let e = inner.get(i + 1).copied().unwrap_or(b'"');
            if e == b'u' {
                let hex = std::str::from_utf8(inner.get(i + 2..i + 6).unwrap_or(b"0000")).unwrap_or("0000");
                let unit = u32::from_str_radix(hex, 16).unwrap_or(0);
                if !char::from_u32(unit).is_some_and(crate::load::js::is_js_space) {
                    return true;
                }
                i += 6;
            } else {
                if !matches!(e, b'n' | b't' | b'r' | b'f') {
                    return true;
                }
                i += 2;
            }
            continue;
        }
        let end = memchr::memchr(b'\\', &inner[i..]).map(|k| i + k).unwrap_or(inner.len());
        if run_visible(&inner[i..end]) {
            return true;
        }
        i = end;
    }
    false
}

fn run_visible(run: &[u8]) -> bool {
    // Stop at the first character that is not whitespace (almost always the first). Bytes
    // that do not decode are visible: Node turns them into U+FFFD.
    let mut k = 0usize;
    while k < run.len() {
        let c = run[k];
        if c.is_ascii() {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
                return true;
            }
            k += 1;
            continue;
        }
        let n = match c {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return true,
        };
        match run
            .get(k..k + n)
            .and_then(|w| std::str::from_utf8(w).ok())
            .and_then(|s| s.chars().next())
        {
            Some(ch) if crate::load::js::is_js_space(ch) => k += n,
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::json_str_stats;

    #[test]
    fn bytes_that_do_not_decode_are_visible() {
        for raw in [&b"\" \x80 \""[..], b"\"\xc2\"", b"\" \xe2\x80\"", b"\"\xff\""] {
            let lossy = String::from_utf8_lossy(&raw[1..raw.len() - 1]).into_owned();
            assert!(!crate::load::js::js_trim(&lossy).is_empty());
            assert_eq!(super::json_bytes_visible(raw), Some(true), "{raw:?}");
        }
        assert_eq!(
            super::json_bytes_visible("\" \u{a0}\u{3000} \"".as_bytes()),
            Some(false)
        );
    }

    #[test]
    fn raw_string_stats_match_decoded() {
        for s in [
            r"",
            r"  \n\t ",
            r"abc",
            r"a\\nb",
            r"\u00e9\ud83d\ude00",
            r"é😀",
            r" \u00a0 ",
            r"\u2028x",
            "  x",
            "\u{a0}\u{a0}",
            "\u{a0}y",
            "\u{3000}\u{3000}z",
            "\u{3000} \u{a0}",
        ] {
            let raw = format!("\"{s}\"");
            let decoded: String = serde_json::from_str(&raw).unwrap();
            let want = (
                crate::load::js::utf16_len(&decoded),
                !crate::load::js::js_trim(&decoded).is_empty(),
            );
            assert_eq!(json_str_stats(&raw), Some(want), "{s}");
        }
    }
}
