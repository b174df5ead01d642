//! The loader's quick pass over a `message` line: a strict JSON validator that keeps the
//! few fields every message needs at load and skips everything else at memory speed.
//!
//! serde_json spends most of a load decoding and UTF-8-checking strings nobody reads yet
//! (tool output is most of a session's bytes). This pass only has to find where strings
//! end. It answers `None` whenever it is not sure — a duplicate key it cares about, an
//! escaped key, a lone surrogate, deep nesting, anything that is not plain JSON — and the
//! serde passes then decide, so it never accepts a line they would refuse or read a field
//! differently from them. Bytes that are not UTF-8 cannot change JSON structure (Node
//! replaces them with U+FFFD before `JSON.parse`), so strings are not UTF-8-checked here;
//! the fields kept are decoded by serde, which checks them.

use crate::load::entry::{ContentStats, ToolCall};
use crate::load::lenient::{
    EntryHeadJson, LAny, LHeadContent, LStr, LUsage, LUsageOrOther, Measured, MessageHeadJson, json_bytes_visible,
    json_str_stats, utf16_units,
};
use std::borrow::Cow;

/// serde_json's nesting limit; deeper lines go to serde (and are refused there, as before).
const MAX_DEPTH: u32 = 128;

struct P<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
    /// Checking that a value is exactly what `JSON.stringify` writes (tool-call arguments:
    /// then its length is its raw length), and whether it still is.
    canon: bool,
    canon_ok: bool,
    /// Every string met during the canonical check was ASCII.
    canon_ascii: bool,
    /// The last string's decoded UTF-16 length and whether it was all ASCII.
    last: Units16,
    /// Depth of the object whose `path` key is wanted, and that key's value.
    path_depth: u32,
    path: Option<&'a [u8]>,
}

type R<T> = Option<T>;

impl<'a> P<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
                self.canon_ok &= !self.canon;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&self) -> R<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, c: u8) -> R<()> {
        if self.peek()? == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// At an opening quote: skip the string, checking it as JSON.parse would. Returns
    /// whether it held an escape.
    #[inline]
    fn string(&mut self) -> R<bool> {
        self.eat(b'"')?;
        let info = string_body(&self.b[self.i..])?;
        self.i += info.len + 1;
        self.last = Units16 {
            units: info.units - info.shrink,
            ascii: info.ascii,
        };
        self.canon_ok &= info.canonical || !self.canon;
        self.canon_ascii &= info.ascii || !self.canon;
        Some(info.escaped)
    }

    fn number(&mut self) -> R<()> {
        let start = self.i;
        self.number_syntax()?;
        if self.canon {
            // Canonical only if JavaScript would print the same digits back.
            let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
            let same = text
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .is_some_and(|x| crate::load::js::js_number(x) == text);
            self.canon_ok &= same;
        }
        Some(())
    }

    fn number_syntax(&mut self) -> R<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return None;
            }
            self.digits();
        }
        Some(())
    }

    #[inline]
    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.b.get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// Skip any value (whitespace before it already skipped).
    fn value(&mut self) -> R<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => {
                if self.canon {
                    return self.canonical_object();
                }
                self.object(|p, _| p.value_ws())
            }
            b'[' => self.array(|p, _| p.value_ws()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    fn value_ws(&mut self) -> R<()> {
        self.ws();
        self.value()
    }

    /// An object inside a canonical check: no duplicate keys (JSON.parse would collapse
    /// them), and the wanted `path` key kept.
    fn canonical_object(&mut self) -> R<()> {
        let mut keys: Vec<&'a [u8]> = Vec::new();
        let inner = self.depth + 1;
        self.object(|p, key| {
            if keys.len() >= 64 || keys.contains(&key) {
                p.canon_ok = false;
            } else {
                keys.push(key);
            }
            if inner == p.path_depth && key == b"path" {
                p.path = Some(p.value_span()?);
                Some(())
            } else {
                p.value_ws()
            }
        })
    }

    /// A value, returning its raw bytes.
    fn value_span(&mut self) -> R<&'a [u8]> {
        self.ws();
        let start = self.i;
        self.value()?;
        Some(&self.b[start..self.i])
    }

    /// An object; `member` is called after each key (raw, unescaped-free) with the parser
    /// before the value's whitespace, and must consume the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> R<()>) -> R<()> {
        self.eat(b'{')?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            self.ws();
            let ks = self.i + 1;
            let escaped = self.string()?;
            let key = &self.b[ks..self.i - 1];
            if escaped {
                // An escaped key could spell a field we keep; let serde read it.
                return None;
            }
            self.ws();
            self.eat(b':')?;
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, mut element: impl FnMut(&mut Self, u32) -> R<()>) -> R<()> {
        self.eat(b'[')?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        let mut n = 0u32;
        loop {
            element(self, n)?;
            n += 1;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

/// Masks of one 64-byte block: quotes, backslashes, control bytes.
struct Block {
    quote: u64,
    bslash: u64,
    ctl: u64,
    /// Bytes of 0x80 and up (the string is not plain ASCII).
    high: u64,
}

/// How a block of 64 bytes is classified: SSE2 (every x86_64) or AVX2 (checked at run time),
/// else plain code. The same string scan is compiled once per kind.
trait Lanes {
    fn masks(chunk: &[u8; 64]) -> Block;
    /// UTF-8 continuation bytes (0x80..=0xBF) and leads of 4-byte chars (0xF0 and up): a
    /// char is one UTF-16 unit per lead byte plus one more for 4-byte chars.
    fn utf8_masks(chunk: &[u8; 64]) -> (u64, u64);
}

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
struct Plain;

impl Lanes for Plain {
    #[inline(always)]
    fn masks(chunk: &[u8; 64]) -> Block {
        let mut b = Block {
            quote: 0,
            bslash: 0,
            ctl: 0,
            high: 0,
        };
        for (k, &c) in chunk.iter().enumerate() {
            let bit = 1u64 << k;
            if c == b'"' {
                b.quote |= bit;
            }
            if c == b'\\' {
                b.bslash |= bit;
            }
            if c < 0x20 {
                b.ctl |= bit;
            }
            if c >= 0x80 {
                b.high |= bit;
            }
        }
        b
    }

    #[inline(always)]
    fn utf8_masks(chunk: &[u8; 64]) -> (u64, u64) {
        let (mut cont, mut four) = (0u64, 0u64);
        for (k, &c) in chunk.iter().enumerate() {
            cont |= (((c as i8) < -64) as u64) << k;
            four |= ((c >= 0xF0) as u64) << k;
        }
        (cont, four)
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Block;
    use std::arch::x86_64::*;

    pub struct Sse2;

    impl super::Lanes for Sse2 {
        #[inline(always)]
        fn masks(chunk: &[u8; 64]) -> Block {
            // SAFETY: SSE2 is part of x86_64; each load reads 16 bytes inside `chunk`.
            unsafe {
                let (mut quote, mut bslash, mut ctl, mut high) = (0u64, 0u64, 0u64, 0u64);
                let c1f = _mm_set1_epi8(0x1f);
                let cq = _mm_set1_epi8(b'"' as i8);
                let cb = _mm_set1_epi8(b'\\' as i8);
                for k in 0..4 {
                    let v = _mm_loadu_si128(chunk.as_ptr().add(16 * k) as *const __m128i);
                    let m = |x: __m128i| (_mm_movemask_epi8(x) as u32 as u64) << (16 * k);
                    quote |= m(_mm_cmpeq_epi8(v, cq));
                    bslash |= m(_mm_cmpeq_epi8(v, cb));
                    ctl |= m(_mm_cmpeq_epi8(_mm_max_epu8(v, c1f), c1f));
                    high |= m(v);
                }
                Block {
                    quote,
                    bslash,
                    ctl,
                    high,
                }
            }
        }

        #[inline(always)]
        fn utf8_masks(chunk: &[u8; 64]) -> (u64, u64) {
            // SAFETY: as above.
            unsafe {
                let (mut cont, mut four) = (0u64, 0u64);
                let c40 = _mm_set1_epi8(-64);
                let cf0 = _mm_set1_epi8(0xF0u8 as i8);
                for k in 0..4 {
                    let v = _mm_loadu_si128(chunk.as_ptr().add(16 * k) as *const __m128i);
                    let m = |x: __m128i| (_mm_movemask_epi8(x) as u32 as u64) << (16 * k);
                    cont |= m(_mm_cmpgt_epi8(c40, v));
                    four |= m(_mm_cmpeq_epi8(_mm_max_epu8(v, cf0), v));
                }
                (cont, four)
            }
        }
    }

    pub struct Avx2;

    #[target_feature(enable = "avx2")]
    #[inline]
    fn masks_avx2(chunk: &[u8; 64]) -> Block {
        // SAFETY: each load reads 32 bytes inside `chunk`; AVX2 is enabled on this function.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(chunk.as_ptr() as *const __m256i),
                _mm256_loadu_si256(chunk.as_ptr().add(32) as *const __m256i),
            )
        };
        let m = |a: __m256i, b: __m256i| {
            (_mm256_movemask_epi8(a) as u32 as u64) | ((_mm256_movemask_epi8(b) as u32 as u64) << 32)
        };
        let c1f = _mm256_set1_epi8(0x1f);
        let cq = _mm256_set1_epi8(b'"' as i8);
        let cb = _mm256_set1_epi8(b'\\' as i8);
        let ctl = |v: __m256i| _mm256_cmpeq_epi8(_mm256_max_epu8(v, c1f), c1f);
        Block {
            quote: m(_mm256_cmpeq_epi8(lo, cq), _mm256_cmpeq_epi8(hi, cq)),
            bslash: m(_mm256_cmpeq_epi8(lo, cb), _mm256_cmpeq_epi8(hi, cb)),
            ctl: m(ctl(lo), ctl(hi)),
            high: m(lo, hi),
        }
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn utf8_masks_avx2(chunk: &[u8; 64]) -> (u64, u64) {
        // SAFETY: as in `masks_avx2`.
        let (lo, hi) = unsafe {
            (
                _mm256_loadu_si256(chunk.as_ptr() as *const __m256i),
                _mm256_loadu_si256(chunk.as_ptr().add(32) as *const __m256i),
            )
        };
        let m = |a: __m256i, b: __m256i| {
            (_mm256_movemask_epi8(a) as u32 as u64) | ((_mm256_movemask_epi8(b) as u32 as u64) << 32)
        };
        let c40 = _mm256_set1_epi8(-64);
        let cf0 = _mm256_set1_epi8(0xF0u8 as i8);
        let four = |v: __m256i| _mm256_cmpeq_epi8(_mm256_max_epu8(v, cf0), v);
        (
            m(_mm256_cmpgt_epi8(c40, lo), _mm256_cmpgt_epi8(c40, hi)),
            m(four(lo), four(hi)),
        )
    }

    impl super::Lanes for Avx2 {
        #[inline(always)]
        fn masks(chunk: &[u8; 64]) -> Block {
            // SAFETY: only reached through `string_body_blocks_avx2`, called after the
            // run-time check for AVX2.
            unsafe { masks_avx2(chunk) }
        }

        #[inline(always)]
        fn utf8_masks(chunk: &[u8; 64]) -> (u64, u64) {
            // SAFETY: as above.
            unsafe { utf8_masks_avx2(chunk) }
        }
    }

    /// The block scan with AVX2 code; the caller checked the CPU has it.
    #[target_feature(enable = "avx2")]
    pub fn string_body_blocks_avx2(s: &[u8]) -> super::R<super::StrInfo> {
        super::string_body_blocks::<Avx2>(s)
    }
}

/// Position of the first quote, backslash or control byte in the first 16 bytes, if any
/// (`None` also when fewer than 16 bytes are left), and whether the bytes before it are ASCII.
#[inline]
fn first_special16(s: &[u8]) -> Option<(usize, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        if s.len() < 16 {
            return None;
        }
        // SAFETY: SSE2; the load reads the first 16 bytes of `s`, which exist.
        unsafe {
            let v = _mm_loadu_si128(s.as_ptr() as *const __m128i);
            let c1f = _mm_set1_epi8(0x1f);
            let m = _mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
                ),
                _mm_cmpeq_epi8(_mm_max_epu8(v, c1f), c1f),
            );
            let mask = _mm_movemask_epi8(m) as u32;
            let high = _mm_movemask_epi8(v) as u32;
            (mask != 0).then(|| {
                let k = mask.trailing_zeros() as usize;
                (k, high & ((1u32 << k) - 1) == 0)
            })
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let k = s.get(..16)?.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        Some((k, s[..k].is_ascii()))
    }
}

/// The characters escaped by a backslash in this block, given whether its first byte is
/// escaped by a backslash ending the block before; updates that carry. (The odd/even
/// backslash-run trick of simdjson's string scanner.)
#[inline]
fn escaped_chars(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*carry;
    let follows_escape = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (seq_even, overflow) = odd_starts.overflowing_add(backslash);
    *carry = overflow as u64;
    let invert = seq_even << 1;
    (EVEN ^ invert) & follows_escape
}

/// Length of a string's body up to its closing quote (`s` starts after the opening one),
/// and whether it has escapes. `None` when it is not a valid JSON string, or has a `\u`
/// surrogate escape (serde's rules decide those).
/// Also returns the UTF-16 units its escapes save over the raw text, and whether every
/// escape is one `JSON.stringify` would write.
#[inline]
fn string_body(s: &[u8]) -> R<StrInfo> {
    // Most strings are keys and short values with no escape: one compare decides them.
    if let Some((k, ascii)) = first_special16(s)
        && s[k] == b'"'
    {
        return Some(StrInfo {
            len: k,
            escaped: false,
            shrink: 0,
            units: if ascii { k } else { utf16_units(&s[..k]) },
            canonical: true,
            ascii,
        });
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above; the answer is cached).
            return unsafe { x86::string_body_blocks_avx2(s) };
        }
        string_body_blocks::<x86::Sse2>(s)
    }
    #[cfg(not(target_arch = "x86_64"))]
    string_body_blocks::<Plain>(s)
}

/// What [`string_body`] learns of a string on its way to the closing quote.
struct StrInfo {
    len: usize,
    escaped: bool,
    /// UTF-16 units the escapes save over the raw text.
    shrink: usize,
    /// UTF-16 units of the raw text, counted as if it is UTF-8 (it is checked where it matters).
    units: usize,
    /// Every escape is one `JSON.stringify` would write.
    canonical: bool,
    /// No byte of 0x80 and up: the UTF-16 length is the byte length less `shrink`.
    ascii: bool,
}

/// A string's decoded UTF-16 length (as if UTF-8) and whether it is plain ASCII.
#[derive(Clone, Copy, Default)]
struct Units16 {
    units: usize,
    ascii: bool,
}

#[inline(always)]
fn string_body_blocks<L: Lanes>(s: &[u8]) -> R<StrInfo> {
    let mut at = 0usize;
    // The raw text's UTF-16 units are its length less its continuation bytes plus its 4-byte
    // leads (each of those makes a surrogate pair). Kept apart because a lead can end one
    // block and its continuations start the next.
    let mut continuations = 0usize;
    let mut four_byte_leads = 0usize;
    let mut carry = 0u64;
    let mut escaped_any = false;
    let mut shrink = 0usize;
    let mut canonical = true;
    let mut high = 0u64;
    loop {
        let avail = s.len().saturating_sub(at);
        let mut pad = [b' '; 64];
        let chunk: &[u8; 64] = if avail >= 64 {
            s[at..at + 64].try_into().expect("a 64-byte block")
        } else {
            pad[..avail].copy_from_slice(&s[at..]);
            &pad
        };
        let valid = if avail >= 64 { u64::MAX } else { (1u64 << avail) - 1 };
        let m = L::masks(chunk);
        let esc = escaped_chars(m.bslash & valid, &mut carry);
        let ends = m.quote & !esc & valid;
        // Bits strictly below the closing quote, or the whole block.
        let upto = if ends != 0 {
            (1u64 << ends.trailing_zeros()) - 1
        } else {
            valid
        };
        if m.ctl & upto != 0 {
            return None;
        }
        if m.high & upto != 0 {
            high |= m.high & upto;
            let (cont, four) = L::utf8_masks(chunk);
            continuations += (cont & upto).count_ones() as usize;
            four_byte_leads += (four & upto).count_ones() as usize;
        }
        let mut e = esc & upto;
        // A backslash ending the block escapes the next block's first byte: checked there.
        while e != 0 {
            escaped_any = true;
            let k = at + e.trailing_zeros() as usize;
            match s[k] {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => shrink += 1,
                b'/' => {
                    shrink += 1;
                    canonical = false;
                }
                b'u' => {
                    let hex = s.get(k + 1..k + 5)?;
                    let mut unit = 0u32;
                    for &h in hex {
                        unit = unit * 16 + (h as char).to_digit(16)?;
                    }
                    if (0xD800..0xE000).contains(&unit) {
                        return None;
                    }
                    shrink += 5;
                    // JSON.stringify writes \u00xx (lower case) only for controls without a short form.
                    canonical &= unit < 0x20
                        && !matches!(unit, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)
                        && !hex.iter().any(|h| h.is_ascii_uppercase());
                }
                _ => return None,
            }
            e &= e - 1;
        }
        if ends != 0 {
            let len = at + ends.trailing_zeros() as usize;
            return Some(StrInfo {
                len,
                escaped: escaped_any,
                shrink,
                units: len - continuations + four_byte_leads,
                canonical,
                ascii: high == 0,
            });
        }
        if avail <= 64 {
            return None;
        }
        at += 64;
    }
}

fn set<'a>(slot: &mut Option<&'a [u8]>, v: &'a [u8]) -> R<()> {
    if slot.is_some() {
        // JSON.parse keeps the last of duplicate keys; serde's pass handles that.
        return None;
    }
    *slot = Some(v);
    Some(())
}

#[derive(Default)]
struct MsgSpans<'a> {
    role: Option<&'a [u8]>,
    content: Option<&'a [u8]>,
    content_head: Option<LHeadContent>,
    provider: Option<&'a [u8]>,
    model: Option<&'a [u8]>,
    stop_reason: Option<&'a [u8]>,
    error_message: Option<&'a [u8]>,
    usage: Option<&'a [u8]>,
    /// The usage numbers, when the scan could read them (plain integers).
    usage_read: Option<LUsage<'a>>,
    tool_name: Option<&'a [u8]>,
    tool_call_id: Option<&'a [u8]>,
    is_error: Option<&'a [u8]>,
    exclude_from_context: Option<&'a [u8]>,
    custom_type: Option<&'a [u8]>,
    command: Option<&'a [u8]>,
    output: Option<&'a [u8]>,
    summary: Option<&'a [u8]>,
    content_units: Units16,
}

/// UTF-16 length and visibility of a JSON string value from its raw bytes and what the
/// scan counted; `None` for a non-string or text that is not UTF-8 (serde decides).
fn string_stats(raw: &[u8], counted: Units16) -> R<(usize, bool)> {
    if raw.first() != Some(&b'"') {
        return None;
    }
    if !counted.ascii {
        // The scan counted units as if the bytes were UTF-8; they must be.
        simdutf8::basic::from_utf8(&raw[1..raw.len() - 1]).ok()?;
    }
    Some((counted.units, json_bytes_visible(raw)?))
}

/// A tool call's `arguments` as the scan saw them.
struct Args<'a> {
    raw: &'a [u8],
    /// Exactly what `JSON.stringify` writes, so its length is the raw length.
    canonical: bool,
    ascii: bool,
    /// The raw `path` member of an object.
    path: Option<&'a [u8]>,
}

/// The content blocks: visibility and tool-call ids always, and Pi's measures of the
/// content (`ContentStats`, tool calls) unless something needs serde's reading.
fn content_blocks<'a>(p: &mut P<'a>) -> R<LHeadContent> {
    let mut out = LHeadContent::default();
    let mut st = ContentStats::default();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut measured = true;
    p.array(|p, bi| {
        p.ws();
        if p.peek()? != b'{' {
            // A block that is not an object: rare; serde's pass reads it.
            return None;
        }
        let (mut ty, mut text, mut thinking, mut name, mut id) = (None, None, None, None, None);
        let (mut text_units, mut thinking_units) = (Units16::default(), Units16::default());
        let mut args: Option<Args> = None;
        let mut dup = false;
        p.object(|p, key| match key {
            b"type" => set(&mut ty, p.value_span()?),
            b"text" => {
                set(&mut text, p.value_span()?)?;
                text_units = p.last;
                Some(())
            }
            b"thinking" => {
                set(&mut thinking, p.value_span()?)?;
                thinking_units = p.last;
                Some(())
            }
            b"name" => set(&mut name, p.value_span()?),
            b"id" => set(&mut id, p.value_span()?),
            b"arguments" => {
                dup |= args.is_some();
                args = Some(arguments_span(p)?);
                Some(())
            }
            _ => p.value_ws(),
        })?;
        if dup {
            return None;
        }
        let kind = lstr(ty)?;
        match kind.as_deref() {
            Some("text") => {
                st.has_text_block = true;
                if let Some(t) = text {
                    out.visible_text |= json_bytes_visible(t).unwrap_or(false);
                    if t.first() == Some(&b'"') {
                        match string_stats(t, text_units) {
                            Some((n, visible)) => {
                                st.text_chars += n;
                                st.has_visible_text |= visible;
                            }
                            None => measured = false,
                        }
                    }
                }
            }
            Some("image") => st.images += 1,
            Some("thinking") => {
                if let Some(t) = thinking
                    && t.first() == Some(&b'"')
                {
                    match string_stats(t, thinking_units) {
                        Some((n, _)) => st.thinking_chars += n,
                        None => measured = false,
                    }
                }
            }
            Some("toolCall") => calls.push(tool_call(id, name, args, bi, &mut out, &mut st, &mut measured)?),
            _ => {}
        }
        Some(())
    })?;
    if measured {
        out.measured = Some(Measured {
            content: st,
            tool_calls: calls,
            ..Default::default()
        });
    }
    Some(out)
}

/// A tool call's `arguments`: their bytes, read with the canonical check (whether
/// `JSON.stringify` would write these very bytes) and the `path` argument noted.
#[inline]
fn arguments_span<'a>(p: &mut P<'a>) -> R<Args<'a>> {
    p.ws();
    let start = p.i;
    p.canon = true;
    p.canon_ok = true;
    p.canon_ascii = true;
    p.path = None;
    p.path_depth = p.depth + 1;
    let r = p.value();
    p.canon = false;
    r?;
    Some(Args {
        raw: &p.b[start..p.i],
        canonical: p.canon_ok,
        ascii: p.canon_ascii,
        path: p.path.take(),
    })
}

/// A `toolCall` block: its id noted, its characters counted, the call kept.
#[inline]
fn tool_call(
    id: Option<&[u8]>,
    name: Option<&[u8]>,
    args: Option<Args>,
    bi: u32,
    out: &mut LHeadContent,
    st: &mut ContentStats,
    measured: &mut bool,
) -> R<ToolCall> {
    let id = lstr(id)?;
    if let Some(id) = id.as_deref() {
        out.tool_call_ids.push((id.into(), bi));
    }
    st.tool_calls += 1;
    let name = lstr(name)?;
    let name = name.as_deref().unwrap_or("");
    let (args_len, path) = match args {
        None => (0, None),
        // Canonical and UTF-8: JSON.stringify would write these very bytes.
        Some(Args {
            raw,
            canonical: true,
            ascii,
            path,
        }) if ascii || simdutf8::basic::from_utf8(raw).is_ok() => {
            let path = match path {
                Some(pb) if pb.first() == Some(&b'"') => {
                    lstr(Some(pb))?.as_deref().filter(|s| !s.is_empty()).map(Box::from)
                }
                _ => None,
            };
            (if ascii { raw.len() } else { utf16_units(raw) }, path)
        }
        Some(_) => {
            *measured = false;
            (0, None)
        }
    };
    st.tool_call_chars += crate::load::js::utf16_len(name) + args_len;
    Some(ToolCall {
        id: id.as_deref().map(Box::from),
        name: name.into(),
        block: bi,
        path,
    })
}

/// A kept field as `LStr` reads it: a string, else nothing. `None` (fall back) only when
/// the bytes do not decode.
fn lstr(span: Option<&[u8]>) -> R<LStr<'_>> {
    let Some(b) = span else {
        return Some(LStr(None));
    };
    if b.first() != Some(&b'"') {
        return Some(LStr(None));
    }
    let inner = &b[1..b.len() - 1];
    // One pass for both questions: any byte of 0x80 and up (bit 7), any backslash (bit 0).
    let seen = inner.iter().fold(0u8, |a, &c| a | (c & 0x80) | (c == b'\\') as u8);
    if seen == 0 {
        // SAFETY: every byte is below 0x80, so the text is ASCII and thus UTF-8.
        return Some(LStr(Some(Cow::Borrowed(unsafe {
            std::str::from_utf8_unchecked(inner)
        }))));
    }
    if seen & 1 == 0 {
        return Some(LStr(Some(Cow::Borrowed(std::str::from_utf8(inner).ok()?))));
    }
    serde_json::from_slice::<LStr>(b).ok()
}

/// A usage field that is a plain integer, read as serde reads it; anything else leaves
/// the whole `usage` to serde.
fn usage_number(p: &mut P, slot: &mut LAny, plain: &mut bool) -> R<()> {
    let v = p.value_span()?;
    // Up to 15 digits is exact in an f64 whichever way it is parsed.
    if !v.is_empty() && v.len() <= 15 && v.iter().all(u8::is_ascii_digit) {
        let n = v.iter().fold(0u64, |a, &d| a * 10 + (d - b'0') as u64) as f64;
        *slot = LAny {
            present: true,
            is_null: false,
            truthy: n != 0.0,
            number: Some(n),
        };
    } else {
        *plain = false;
    }
    Some(())
}

fn lany(span: Option<&[u8]>) -> R<LAny> {
    match span {
        None => Some(LAny::default()),
        Some(b"true") => Some(LAny {
            present: true,
            truthy: true,
            ..Default::default()
        }),
        Some(b"false") => Some(LAny {
            present: true,
            ..Default::default()
        }),
        Some(b) => serde_json::from_slice::<LAny>(b).ok(),
    }
}

/// The quick pass: `Some` only for a valid `message` line read exactly as serde would.
pub fn message_head(line: &[u8]) -> R<EntryHeadJson<'_>> {
    let mut p = P {
        b: line,
        i: 0,
        depth: 0,
        canon: false,
        canon_ok: true,
        canon_ascii: true,
        last: Units16::default(),
        path_depth: 0,
        path: None,
    };
    p.ws();
    let (mut kind, mut id, mut parent_id, mut timestamp) = (None, None, None, None);
    let mut message: Option<MsgSpans> = None;
    p.object(|p, key| match key {
        b"type" => set(&mut kind, p.value_span()?),
        b"id" => set(&mut id, p.value_span()?),
        b"parentId" => set(&mut parent_id, p.value_span()?),
        b"timestamp" => set(&mut timestamp, p.value_span()?),
        b"message" => {
            if message.is_some() {
                return None;
            }
            message = Some(message_spans(p)?);
            Some(())
        }

        _ => p.value_ws(),
    })?;
    p.ws();
    if p.i != line.len() {
        return None;
    }
    let mut m = message?;
    let kind = lstr(kind)?;
    if kind.as_deref() != Some("message") {
        return None;
    }
    let content = head_content(&mut m)?;
    let usage = match (m.usage, m.usage_read) {
        (None, _) | (Some(b"null"), _) => None,
        (Some(_), Some(u)) => Some(LUsageOrOther(Some(u))),
        (Some(b), None) => Some(serde_json::from_slice::<LUsageOrOther>(b).ok()?),
    };
    let parent_id = match parent_id {
        None | Some(b"null") => None,
        Some(b) => Some(lstr(Some(b))?),
    };
    Some(EntryHeadJson {
        kind,
        id: lstr(id)?,
        parent_id,
        timestamp: lstr(timestamp)?,
        message: Some(MessageHeadJson {
            role: lstr(m.role)?,
            content,
            provider: lstr(m.provider)?,
            model: lstr(m.model)?,
            stop_reason: lstr(m.stop_reason)?,
            error_message: lstr(m.error_message)?,
            usage,
            tool_name: lstr(m.tool_name)?,
            tool_call_id: lstr(m.tool_call_id)?,
            is_error: lany(m.is_error)?,
            exclude_from_context: lany(m.exclude_from_context)?,
            custom_type: lstr(m.custom_type)?,
            _p: std::marker::PhantomData,
        }),
        _p: std::marker::PhantomData,
    })
}

/// A message object's fields, as spans (the usage read when plain).
#[inline]
fn message_spans<'a>(p: &mut P<'a>) -> R<MsgSpans<'a>> {
    p.ws();
    if p.peek()? != b'{' {
        return None;
    }
    let mut m = MsgSpans::default();
    p.object(|p, key| match key {
        b"role" => set(&mut m.role, p.value_span()?),
        b"content" => {
            if m.content.is_some() {
                return None;
            }
            p.ws();
            let start = p.i;
            match p.peek()? {
                b'[' => m.content_head = Some(content_blocks(p)?),
                _ => {
                    p.value()?;
                    m.content_units = p.last;
                }
            }
            m.content = Some(&p.b[start..p.i]);
            Some(())
        }
        b"provider" => set(&mut m.provider, p.value_span()?),
        b"model" => set(&mut m.model, p.value_span()?),
        b"stopReason" => set(&mut m.stop_reason, p.value_span()?),
        b"errorMessage" => set(&mut m.error_message, p.value_span()?),
        b"usage" => usage_spans(p, &mut m),
        b"toolName" => set(&mut m.tool_name, p.value_span()?),
        b"toolCallId" => set(&mut m.tool_call_id, p.value_span()?),
        b"isError" => set(&mut m.is_error, p.value_span()?),
        b"excludeFromContext" => set(&mut m.exclude_from_context, p.value_span()?),
        b"customType" => set(&mut m.custom_type, p.value_span()?),
        b"command" => set(&mut m.command, p.value_span()?),
        b"output" => set(&mut m.output, p.value_span()?),
        b"summary" => set(&mut m.summary, p.value_span()?),
        _ => p.value_ws(),
    })?;
    Some(m)
}

/// The message's `usage`: its span, and its numbers when it holds plain ones.
#[inline]
fn usage_spans<'a>(p: &mut P<'a>, m: &mut MsgSpans<'a>) -> R<()> {
    if m.usage.is_some() {
        return None;
    }
    p.ws();
    let start = p.i;
    if p.peek()? == b'{' {
        let mut u = LUsage::default();
        let mut plain = true;
        p.object(|p, key| match key {
            b"input" => usage_number(p, &mut u.input, &mut plain),
            b"output" => usage_number(p, &mut u.output, &mut plain),
            b"cacheRead" => usage_number(p, &mut u.cache_read, &mut plain),
            b"cacheWrite" => usage_number(p, &mut u.cache_write, &mut plain),
            b"totalTokens" => usage_number(p, &mut u.total_tokens, &mut plain),
            _ => p.value_ws(),
        })?;
        m.usage_read = plain.then_some(u);
    } else {
        p.value()?;
    }
    m.usage = Some(&p.b[start..p.i]);
    Some(())
}

/// The head of the message's content (its first blocks, or a string's measure), with the
/// role-specific lengths.
#[inline]
fn head_content(m: &mut MsgSpans) -> R<LHeadContent> {
    let plain = || {
        Some(Measured {
            content: ContentStats::default(),
            ..Default::default()
        })
    };
    let mut content = match (m.content_head.take(), m.content) {
        (Some(h), _) => h,
        (None, None) | (None, Some(b"null")) => LHeadContent {
            missing: true,
            measured: plain(),
            ..Default::default()
        },
        (None, Some(b)) if b.first() == Some(&b'"') => LHeadContent {
            visible_text: json_bytes_visible(b)?,
            measured: string_stats(b, m.content_units).map(|(n, visible)| Measured {
                content: ContentStats {
                    is_string: true,
                    text_chars: n,
                    has_visible_text: visible,
                    ..Default::default()
                },
                ..Default::default()
            }),
            ..Default::default()
        },
        (None, Some(_)) => LHeadContent {
            measured: plain(),
            ..Default::default()
        },
    };
    // The role-specific lengths (as `LStr` reads them: strings only).
    let chars = |span: Option<&[u8]>| -> Option<usize> {
        match span {
            Some(b) if b.first() == Some(&b'"') => json_str_stats(std::str::from_utf8(b).ok()?).map(|(n, _)| n),
            _ => Some(0),
        }
    };
    if let Some(ms) = &mut content.measured {
        match (chars(m.command), chars(m.output), chars(m.summary)) {
            (Some(c), Some(o), Some(sm)) => {
                ms.bash_chars = c + o;
                ms.summary_chars = sm;
            }
            _ => content.measured = None,
        }
    }
    Some(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of lanes classifies every byte value the same way, at every position.
    #[test]
    fn lanes_agree_on_every_byte() {
        let mut chunk = [0u8; 64];
        for start in 0..=255usize {
            for (k, c) in chunk.iter_mut().enumerate() {
                *c = ((start + k * 37) % 256) as u8;
            }
            let want = Plain::masks(&chunk);
            let want8 = Plain::utf8_masks(&chunk);
            let check = |got: Block, got8: (u64, u64), kind: &str| {
                assert_eq!(
                    (got.quote, got.bslash, got.ctl, got.high, got8),
                    (want.quote, want.bslash, want.ctl, want.high, want8),
                    "{kind} at {start}"
                );
            };
            #[cfg(target_arch = "x86_64")]
            {
                check(x86::Sse2::masks(&chunk), x86::Sse2::utf8_masks(&chunk), "sse2");
                if std::is_x86_feature_detected!("avx2") {
                    check(x86::Avx2::masks(&chunk), x86::Avx2::utf8_masks(&chunk), "avx2");
                }
            }
            check(Plain::masks(&chunk), want8, "plain");
        }
    }

    /// The block scan counts UTF-16 units as the slow count does, escapes aside.
    #[test]
    fn string_units_match_utf16_length() {
        for text in [
            "plain ascii that runs past sixteen bytes",
            "é→😀 mixed 😀😀 text",
            &"ab😀é".repeat(40),
        ]
        .into_iter()
        .map(str::to_owned)
        // A string's first 4-byte character straddling the end of its first 64-byte block.
        .chain((59..64).map(|k| format!("{}😀 tail", "x".repeat(k))))
        {
            let text = text.as_str();
            let raw = format!("{text}\"");
            let info = string_body(raw.as_bytes()).unwrap();
            assert_eq!(info.units, text.encode_utf16().count(), "{text}");
            assert_eq!(info.len, text.len());
            assert_eq!(info.ascii, text.is_ascii());
        }
    }
}
