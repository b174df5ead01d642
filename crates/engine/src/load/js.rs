//! JavaScript semantics that Pi's numbers depend on.
//!
//! Pi measures text with `String.prototype.length` (UTF-16 code units), serializes tool
//! arguments with `JSON.stringify`, orders object keys the way V8 does and sorts tree
//! children by `new Date(timestamp)`. Reproducing those exactly is what makes our token
//! estimates and cut points agree with Pi to the unit.

use serde_json::{Map, Value};
use std::cmp::Ordering;

/// Length of `s` in UTF-16 code units, as JavaScript's `s.length`.
pub fn utf16_len(s: &str) -> usize {
    // Every char counts one unit; chars outside the BMP (4-byte UTF-8) count two.
    let mut n = 0usize;
    for &b in s.as_bytes() {
        n += ((b & 0xC0) != 0x80) as usize + (b >= 0xF0) as usize;
    }
    n
}

/// `a < b` as JavaScript compares strings: by UTF-16 code units (default `Array.sort`).
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `s.slice(0, n)` in UTF-16 units. A surrogate pair cut in half leaves a lone surrogate in
/// JavaScript, which Node encodes as U+FFFD when it writes UTF-8; we produce that directly.
pub fn slice_utf16(s: &str, n: usize) -> std::borrow::Cow<'_, str> {
    let mut units = 0usize;
    for (i, c) in s.char_indices() {
        let w = c.len_utf16();
        if units + w > n {
            if units < n {
                // Half of a surrogate pair fits.
                let mut out = s[..i].to_string();
                out.push('\u{FFFD}');
                return out.into();
            }
            return s[..i].into();
        }
        units += w;
    }
    s.into()
}

/// Pi 1.5.2's `sliceHead(s, n)`: at most `n` UTF-16 units, never half of a surrogate pair
/// (a character that does not fit whole is left out).
pub fn slice_utf16_whole(s: &str, n: usize) -> &str {
    let mut units = 0usize;
    for (i, c) in s.char_indices() {
        let w = c.len_utf16();
        if units + w > n {
            return &s[..i];
        }
        units += w;
    }
    s
}

/// True for keys V8 treats as array indices; those enumerate first, in numeric order.
fn is_array_index(k: &str) -> Option<u32> {
    if k.is_empty() || k.len() > 10 {
        return None;
    }
    if k.len() > 1 && k.starts_with('0') {
        return None;
    }
    if !k.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u64 = k.parse().ok()?;
    if v < u32::MAX as u64 { Some(v as u32) } else { None }
}

/// Object keys in JavaScript's own-property order (`Object.keys`, `JSON.stringify`).
pub fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut items: Vec<(&String, &Value)> = map.iter().collect();
    if items.iter().any(|(k, _)| is_array_index(k).is_some()) {
        // Stable: integer keys ascending first, the rest keep insertion order.
        items.sort_by(|(a, _), (b, _)| match (is_array_index(a), is_array_index(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        });
    }
    items
}

/// `Number.prototype.toString()` for a finite double.
pub fn js_number(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return "null".into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as ECMAScript requires.
    let sci = format!("{:e}", x.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1; // position of the decimal point
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        for _ in 0..(n - k) {
            out.push('0');
        }
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        for _ in 0..(-n) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
}

fn number_to_f64(n: &serde_json::Number) -> f64 {
    if let Some(u) = n.as_u64() {
        u as f64
    } else if let Some(i) = n.as_i64() {
        i as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    }
}

pub fn value_to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => Some(number_to_f64(n)),
        _ => None,
    }
}

fn push_js_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// JavaScript's `Number(s)` for a string: surrounding whitespace ignored, decimal (with an
/// optional sign, fraction and exponent), `0x`/`0o`/`0b` integers, `Infinity`; NaN for
/// anything else (the empty string is 0).
pub fn string_to_number(s: &str) -> f64 {
    let t = js_trim(s);
    if t.is_empty() {
        return 0.0;
    }
    let radix = |p: &str, r: u32| -> f64 {
        if p.is_empty() || !p.chars().all(|c| c.is_digit(r)) {
            return f64::NAN;
        }
        p.chars()
            .fold(0.0, |acc, c| acc * r as f64 + c.to_digit(r).unwrap_or(0) as f64)
    };
    let lower = t.get(..2).map(|x| x.to_ascii_lowercase());
    match lower.as_deref() {
        Some("0x") => return radix(&t[2..], 16),
        Some("0o") => return radix(&t[2..], 8),
        Some("0b") => return radix(&t[2..], 2),
        _ => {}
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    // Digits, one dot, an exponent: Rust's parser also takes "inf", "nan" and "1_0", which
    // JavaScript does not.
    let ok = unsigned
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && unsigned.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '.');
    if !ok {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// `JSON.stringify(value)` exactly as V8 writes it (no spacing).
pub fn stringify(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(number_to_f64(n))),
        Value::String(s) => push_js_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in js_key_order(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_js_string(out, k);
                out.push(':');
                write_value(out, x);
            }
            out.push('}');
        }
    }
}

/// `JSON.stringify(value).length`, counted without building the string.
pub fn stringify_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => js_number(number_to_f64(n)).len(),
        Value::String(s) => js_string_len(s),
        Value::Array(a) => 2 + a.len().saturating_sub(1) + a.iter().map(stringify_len).sum::<usize>(),
        Value::Object(m) => {
            2 + m.len().saturating_sub(1)
                + m.iter()
                    .map(|(k, x)| js_string_len(k) + 1 + stringify_len(x))
                    .sum::<usize>()
        }
    }
}

/// UTF-16 length of a string literal as `JSON.stringify` escapes it.
fn js_string_len(s: &str) -> usize {
    let mut n = 2;
    for c in s.chars() {
        n += match c {
            '"' | '\\' | '\u{08}' | '\u{0C}' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf16(),
        };
    }
    n
}

/// `String(value)` for the values Pi interpolates into text.
pub fn js_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number(number_to_f64(n)),
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_to_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => {
            let x = number_to_f64(n);
            x != 0.0 && !x.is_nan()
        }
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// Whitespace as `String.prototype.trim` sees it.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{A}' | '\u{B}' | '\u{C}' | '\u{D}' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `new Date(s).getTime()` for the ISO 8601 forms Pi writes (and V8 parses natively).
/// Date-time forms without a zone are read as UTC (V8 reads them as local time; Pi's files
/// always carry `Z`). Anything else is NaN, which sorts as "equal" like Pi's comparator.
pub fn parse_iso_ms(s: &str) -> f64 {
    parse_iso(s).unwrap_or(f64::NAN)
}

fn parse_iso(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0usize;
    let num = |i: &mut usize, n: usize| -> Option<i64> {
        if *i + n > b.len() {
            return None;
        }
        let mut v = 0i64;
        for k in 0..n {
            let c = b[*i + k];
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + (c - b'0') as i64;
        }
        *i += n;
        Some(v)
    };
    let year = if b.first().is_some_and(|c| *c == b'+' || *c == b'-') {
        let neg = b[0] == b'-';
        i = 1;
        let y = num(&mut i, 6)?;
        if neg && y == 0 {
            return None;
        }
        if neg { -y } else { y }
    } else {
        num(&mut i, 4)?
    };
    let (mut month, mut day) = (1i64, 1i64);
    if i < b.len() && b[i] == b'-' {
        i += 1;
        month = num(&mut i, 2)?;
        if i < b.len() && b[i] == b'-' {
            i += 1;
            day = num(&mut i, 2)?;
        }
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let (mut h, mut mi, mut sec, mut ms) = (0i64, 0i64, 0i64, 0f64);
    let mut offset_min = 0i64;
    if i < b.len() && (b[i] == b'T' || b[i] == b't' || b[i] == b' ') {
        i += 1;
        h = num(&mut i, 2)?;
        if i >= b.len() || b[i] != b':' {
            return None;
        }
        i += 1;
        mi = num(&mut i, 2)?;
        if i < b.len() && b[i] == b':' {
            i += 1;
            sec = num(&mut i, 2)?;
            if i < b.len() && (b[i] == b'.' || b[i] == b',') {
                i += 1;
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if i == start {
                    return None;
                }
                // V8 keeps milliseconds, truncating further digits.
                let frac = &s[start..i.min(start + 3)];
                let mut v: f64 = frac.parse().ok()?;
                for _ in frac.len()..3 {
                    v *= 10.0;
                }
                ms = v;
            }
        }
        if h > 24 || mi > 59 || sec > 59 || (h == 24 && (mi > 0 || sec > 0 || ms > 0.0)) {
            return None;
        }
        if i < b.len() {
            match b[i] {
                b'Z' | b'z' => i += 1,
                b'+' | b'-' => {
                    let sign = if b[i] == b'-' { -1 } else { 1 };
                    i += 1;
                    let oh = num(&mut i, 2)?;
                    if i < b.len() && b[i] == b':' {
                        i += 1;
                    }
                    let om = num(&mut i, 2)?;
                    offset_min = sign * (oh * 60 + om);
                }
                _ => return None,
            }
        }
    }
    if i != b.len() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let t = (((days * 24 + h) * 60 + mi - offset_min) * 60 + sec) as f64 * 1000.0 + ms;
    if t.abs() > 8.64e15 { None } else { Some(t) }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if is_leap(y) {
                29
            } else {
                28
            }
        }
    }
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// Civil date from days since the epoch, for formatting timestamps.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `new Date(ms).toISOString()`.
pub fn iso_from_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        y,
        m,
        d,
        rem / 3_600_000,
        (rem / 60_000) % 60,
        (rem / 1000) % 60,
        rem % 1000
    )
}

/// A JS number as JSON (`serde_json::Value`): integers without a fraction, like `JSON.stringify`.
pub fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
        Value::from(x as i64)
    } else {
        serde_json::Number::from_f64(x)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn utf16_lengths() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("日本"), 2);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("a😀b"), 4);
    }

    #[test]
    fn numbers_format_like_javascript() {
        for (x, s) in [
            (1.0, "1"),
            (-0.0, "0"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456.789, "123456.789"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (1.5e-10, "1.5e-10"),
            (-42.0, "-42"),
            (2f64.powi(53) + 2.0, "9007199254740994"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ] {
            assert_eq!(js_number(x), s, "{x}");
        }
    }

    #[test]
    fn stringify_matches_v8() {
        let v: Value =
            serde_json::from_str(r#"{"b":1,"a":"x\ny\u0001\"","2":true,"10":null,"1":[1.50,2e3],"u":"é😀/"}"#).unwrap();
        assert_eq!(
            stringify(&v),
            r#"{"1":[1.5,2000],"2":true,"10":null,"b":1,"a":"x\ny\u0001\"","u":"é😀/"}"#
        );
        assert_eq!(stringify_len(&json!({"path": "😀"})), 13);
        assert_eq!(stringify_len(&v), utf16_len(&stringify(&v)));
    }

    #[test]
    fn duplicate_keys_keep_first_position_last_value() {
        let v: Value = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(stringify(&v), r#"{"a":3,"b":2}"#);
    }

    #[test]
    fn iso_dates() {
        assert_eq!(parse_iso_ms("1970-01-01T00:00:00.000Z"), 0.0);
        assert_eq!(parse_iso_ms("2026-11-22T05:20:07.069Z"), 1795324807069.0);
        assert_eq!(parse_iso_ms("2026-11-22"), 1795305600000.0);
        assert_eq!(parse_iso_ms("2026-11-22T05:20:07+01:00"), 1795324807000.0 - 3_600_000.0);
        assert!(parse_iso_ms("yesterday").is_nan());
        assert!(parse_iso_ms("2026-02-30T00:00:00Z").is_nan());
        assert_eq!(iso_from_ms(1795324807069), "2026-11-22T05:20:07.069Z");
    }

    #[test]
    fn slicing_utf16() {
        assert_eq!(slice_utf16("abcdef", 3), "abc");
        assert_eq!(slice_utf16("ab😀c", 3), "ab\u{FFFD}");
        assert_eq!(slice_utf16("ab😀c", 4), "ab😀");
    }
}

/// `Array.prototype.sort(comparefn)` as V8 runs it (TimSort), for comparators that may be
/// inconsistent: a `NaN` result counts as 0, as in V8, so a comparator over invalid dates is
/// not a total order and the result depends on the algorithm's exact steps. Rust's own sort
/// may panic on such a comparator (and orders differently); Pi's tree order is V8's.
///
/// Runs of fewer than 64 elements (every realistic list of siblings) follow V8 step for step:
/// the first run (ascending, or strictly descending and reversed) extended by binary
/// insertion. Longer lists merge their runs stably without V8's galloping, which gives V8's
/// order whenever the comparator is consistent.
pub fn v8_sort_by<T>(v: &mut [T], mut compare: impl FnMut(&T, &T) -> f64) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut order = |a: &T, b: &T| {
        let r = compare(a, b);
        if r.is_nan() { 0.0 } else { r }
    };
    let min_run = {
        let (mut m, mut r) = (n, 0);
        while m >= 64 {
            r |= m & 1;
            m >>= 1;
        }
        m + r
    };
    let mut runs = Vec::new();
    let (mut low, mut remaining) = (0, n);
    while remaining != 0 {
        let mut run = count_and_make_run(v, low, low + remaining, &mut order);
        if run < min_run {
            let forced = min_run.min(remaining);
            binary_insertion_sort(v, low, low + run, low + forced, &mut order);
            run = forced;
        }
        runs.push(low..low + run);
        low += run;
        remaining -= run;
    }
    // Merge neighbouring runs until one is left (stable: the left element wins ties).
    while runs.len() > 1 {
        let mut next = Vec::with_capacity(runs.len().div_ceil(2));
        for pair in runs.chunks(2) {
            if let [a, b] = pair {
                merge(v, a.start, a.end, b.end, &mut order);
                next.push(a.start..b.end);
            } else {
                next.push(pair[0].clone());
            }
        }
        runs = next;
    }
}

fn count_and_make_run<T>(v: &mut [T], low: usize, high: usize, order: &mut impl FnMut(&T, &T) -> f64) -> usize {
    let next = low + 1;
    if next == high {
        return 1;
    }
    let descending = order(&v[next], &v[low]) < 0.0;
    let mut run = 2;
    let mut prev = next;
    for i in next + 1..high {
        let o = order(&v[i], &v[prev]);
        if (descending && o >= 0.0) || (!descending && o < 0.0) {
            break;
        }
        prev = i;
        run += 1;
    }
    if descending {
        v[low..low + run].reverse();
    }
    run
}

fn binary_insertion_sort<T>(v: &mut [T], low: usize, start: usize, high: usize, order: &mut impl FnMut(&T, &T) -> f64) {
    let mut start = if low == start { start + 1 } else { start };
    while start < high {
        let (mut left, mut right) = (low, start);
        while left < right {
            let mid = left + ((right - left) >> 1);
            if order(&v[start], &v[mid]) < 0.0 {
                right = mid;
            } else {
                left = mid + 1;
            }
        }
        v[left..=start].rotate_right(1);
        start += 1;
    }
}

/// Merge the sorted `v[a..m]` and `v[m..b]`; a right element goes first only when it orders
/// strictly before the left one.
fn merge<T>(v: &mut [T], a: usize, m: usize, b: usize, order: &mut impl FnMut(&T, &T) -> f64) {
    let (mut i, mut j) = (a, m);
    while i < j && j < b {
        if order(&v[j], &v[i]) < 0.0 {
            v[i..=j].rotate_right(1);
            j += 1;
        }
        i += 1;
    }
}

#[cfg(test)]
mod v8_sort_tests {
    use super::v8_sort_by;

    /// Indices of `values` sorted by `a - b` (NaN for `None`), as V8 sorts them; the expected
    /// orders were printed by Node 24 (`idx.sort((a, b) => c[a] - c[b])`).
    fn sorted(values: &[Option<f64>]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..values.len()).collect();
        v8_sort_by(&mut idx, |&a, &b| {
            values[a].unwrap_or(f64::NAN) - values[b].unwrap_or(f64::NAN)
        });
        idx
    }

    #[test]
    fn invalid_dates_sort_as_in_v8() {
        let n = None;
        let s = Some;
        assert_eq!(
            sorted(&[s(3.), n, s(1.), n, s(2.), s(0.), n, s(5.), s(4.)]),
            [0, 1, 5, 2, 3, 4, 6, 8, 7]
        );
        assert_eq!(sorted(&[n, s(2.), n, s(1.)]), [0, 1, 2, 3]);
        assert_eq!(
            sorted(&[s(5.), s(4.), s(3.), n, s(2.), s(1.), s(0.)]),
            [6, 5, 4, 2, 1, 0, 3]
        );
        let forty: Vec<Option<f64>> = (0..40u64)
            .map(|i| {
                if (i * 7919) % 13 == 0 {
                    None
                } else {
                    Some(((i * 37) % 50) as f64)
                }
            })
            .collect();
        assert_eq!(
            sorted(&forty),
            [
                0, 23, 19, 15, 38, 11, 34, 7, 30, 3, 22, 18, 14, 37, 10, 33, 6, 29, 2, 25, 21, 17, 36, 9, 32, 5, 28, 1,
                24, 20, 16, 12, 35, 8, 31, 4, 13, 26, 27, 39
            ]
        );
    }

    #[test]
    fn a_consistent_comparator_gives_a_stable_sort_at_any_length() {
        for n in [0usize, 1, 2, 63, 64, 65, 200, 1000] {
            let keys: Vec<u64> = (0..n as u64).map(|i| (i * 2_654_435_761) % 17).collect();
            let mut idx: Vec<usize> = (0..n).collect();
            v8_sort_by(&mut idx, |&a, &b| keys[a] as f64 - keys[b] as f64);
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| keys[i]);
            assert_eq!(idx, want, "n = {n}");
        }
    }
}
