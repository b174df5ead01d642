//! One way to say a quantity, for every view: the TUI, the CLI, `serve` and the Pi package.
//!
//! - Sizes in decimal units (kB, MB, GB: 1 kB is 1,000 bytes), as the README says.
//! - One decimal below 100 of a unit, none from 100 on.
//! - Percentages rounded to the nearest whole one.
//! - Ages in the largest whole unit: s, min, h, d.
//! - Counts and tokens grouped by thousands with commas (`12,345`), whatever the locale.
//! - Dollars to the cent, or to four places below a cent.
//! - Durations in ms below a second, then seconds to one place, then minutes and seconds.
//! - A token figure says its [`Basis`]: Pi's and bonsai's figures are both right and differ.

/// A size: `512 bytes`, `8.5 kB`, `120 kB`, `1.0 MB`, `1.0 GB`.
pub fn bytes(n: u64) -> String {
    if n < 1000 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = "kB";
    for next in ["MB", "GB", "TB"] {
        // Rounded as it will be shown: 999,960 bytes is 1.0 MB, not 1000 kB.
        if v < 999.5 {
            break;
        }
        v /= 1000.0;
        unit = next;
    }
    if v < 99.95 {
        format!("{v:.1} {unit}")
    } else {
        format!("{v:.0} {unit}")
    }
}

/// `part` of `whole` in whole percent, rounded to the nearest (`None` when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> Option<u64> {
    (whole > 0).then(|| (part.saturating_mul(200) + whole) / (whole * 2))
}

/// How long ago, from milliseconds: `12 s`, `4 min`, `3 h`, `2 d`.
pub fn age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

/// `12500` as `12,500`.
pub fn count(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A token figure, rounded to the nearest token: `12,345`.
pub fn tokens(n: f64) -> String {
    count(n.max(0.0).round() as u64)
}

/// A token count in at most five characters, for columns: `950`, `12.3k`, `123k`, `4.1M`,
/// `1.2G`.
pub fn tokens_short(n: f64) -> String {
    let n = n.max(0.0).round();
    let short = |v: f64, unit: &str| {
        if v < 99.95 {
            format!("{v:.1}{unit}")
        } else {
            format!("{v:.0}{unit}")
        }
    };
    if n < 1000.0 {
        format!("{n:.0}")
    } else if n < 999_500.0 {
        short(n / 1e3, "k")
    } else if n < 999_500_000.0 {
        short(n / 1e6, "M")
    } else {
        short(n / 1e9, "G")
    }
}

/// A signed change as the user reads it: `−21,817`, `+1,207`, `±0`.
pub fn signed(n: i64) -> String {
    match n {
        0 => "±0".into(),
        n if n < 0 => format!("−{}", count(n.unsigned_abs())),
        n => format!("+{}", count(n as u64)),
    }
}

/// US dollars: `$1.25`, or four places below a cent (`$0.0042`).
pub fn money(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}

/// How long something took: `350 ms`, `2.4 s`, `3 min 05 s`.
pub fn duration(ms: f64) -> String {
    let ms = ms.max(0.0);
    if ms < 1000.0 {
        format!("{ms:.0} ms")
    } else if ms < 59_950.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        let s = (ms / 1000.0).round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    }
}

/// `n thing` or `n things`, the count grouped.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// What a token figure counts. Every view says it beside the figure, in these words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// Pi's own figure: the last reply's usage plus Pi's estimate of what came after it.
    /// Pi compacts on it; it lags one reply and counts what was sent, pruned or not.
    Pi,
    /// Pi's per-message estimate (4 characters a token), summed over the whole context.
    /// Before and after an edit are compared on it: it changes by exactly what the edit does.
    Estimate,
    /// What bonsai's Pi package sends after its live policy, on the estimate's scale.
    Sent,
    /// tiktoken's count of the messages, images at Pi's estimate.
    Exact,
}

impl Basis {
    /// The words every view puts beside the figure.
    pub fn label(self) -> &'static str {
        match self {
            Basis::Pi => "Pi's figure",
            Basis::Estimate => "estimate",
            Basis::Sent => "as sent",
            Basis::Exact => "exact",
        }
    }

    /// `12,345 tokens (estimate)`.
    pub fn say(self, n: f64) -> String {
        format!("{} tokens ({})", tokens(n), self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_money_and_durations_in_one_way() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(tokens(4616.6), "4,617");
        assert_eq!(tokens_short(950.0), "950");
        assert_eq!(tokens_short(12_345.0), "12.3k");
        assert_eq!(tokens_short(627_100.0), "627k");
        assert_eq!(tokens_short(999_499.0), "999k");
        assert_eq!(tokens_short(999_500.0), "1.0M");
        assert_eq!(tokens_short(4_100_000.0), "4.1M");
        assert_eq!(signed(-21_817), "−21,817");
        assert_eq!(signed(0), "±0");
        assert_eq!(money(0.0), "$0.00");
        assert_eq!(money(0.0042), "$0.0042");
        assert_eq!(money(1.254), "$1.25");
        assert_eq!(duration(350.0), "350 ms");
        assert_eq!(duration(400.0), "400 ms");
        assert_eq!(duration(2_440.0), "2.4 s");
        assert_eq!(duration(185_000.0), "3 min 05 s");
        assert_eq!(plural(1, "call", "calls"), "1 call");
        assert_eq!(plural(1200, "call", "calls"), "1,200 calls");
        assert_eq!(Basis::Estimate.say(17_565.0), "17,565 tokens (estimate)");
    }

    #[test]
    fn sizes_in_decimal_units_with_one_rounding() {
        assert_eq!(bytes(0), "0 bytes");
        assert_eq!(bytes(999), "999 bytes");
        assert_eq!(bytes(1000), "1.0 kB");
        assert_eq!(bytes(8_500), "8.5 kB");
        assert_eq!(bytes(8_449), "8.4 kB");
        assert_eq!(bytes(99_949), "99.9 kB");
        assert_eq!(bytes(99_950), "100 kB");
        assert_eq!(bytes(120_400), "120 kB");
        assert_eq!(bytes(999_499), "999 kB");
        assert_eq!(bytes(999_500), "1.0 MB");
        assert_eq!(bytes(103_575_923), "104 MB");
        assert_eq!(bytes(1_019_620_974), "1.0 GB");
        assert_eq!(bytes(10_400_000_000), "10.4 GB");
    }

    #[test]
    fn percentages_round_to_the_nearest() {
        assert_eq!(percent(2908, 64_000), Some(5), "4.54 % is 5 %");
        assert_eq!(percent(2880, 64_000), Some(5), "4.5 % rounds up");
        assert_eq!(percent(2879, 64_000), Some(4));
        assert_eq!(percent(0, 10), Some(0));
        assert_eq!(percent(7, 0), None);
    }

    #[test]
    fn ages_in_the_largest_whole_unit() {
        assert_eq!(age(-5), "0 s");
        assert_eq!(age(59_999), "59 s");
        assert_eq!(age(4 * 60_000 + 1), "4 min");
        assert_eq!(age(3 * 3_600_000), "3 h");
        assert_eq!(age(50 * 3_600_000), "2 d");
    }
}

/// Whether a character must not reach a terminal as it is inside one line of text: a line
/// break or tab, any other control (C0, DEL, C1), a bidirectional control (it reorders what
/// follows it on screen), a zero-width character (it hides), a line or paragraph separator.
fn unsafe_in_a_line(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || matches!(u, 0x061C | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2069 | 0xFEFF)
}

/// A session's words (a name, a title, a folder, a path) shown on one line of a terminal:
/// every character of [`unsafe_in_a_line`] written as `\uXXXX`. A name holding a newline
/// cannot forge a line of its own, a right-to-left override cannot reorder the row, a
/// zero-width space cannot hide. The one function every view and command shows such words
/// through (`bonsai list`, `resume`, `search`, `usage`, the picker, the status line).
pub fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(unsafe_in_a_line) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 12);
    for c in s.chars() {
        if unsafe_in_a_line(c) {
            o.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            o.push(c);
        }
    }
    std::borrow::Cow::Owned(o)
}

#[cfg(test)]
mod one_line_tests {
    use super::one_line;

    #[test]
    fn a_name_stays_on_its_line_in_its_order_and_visible() {
        assert_eq!(one_line("plain name — ✓ é"), "plain name — ✓ é");
        assert_eq!(one_line("a\nbonsai: forged"), "a\\u000abonsai: forged");
        assert_eq!(one_line("x\u{1b}]52;c;SGk=\u{7}"), "x\\u001b]52;c;SGk=\\u0007");
        assert_eq!(one_line("abc\u{202e}fdp.exe"), "abc\\u202efdp.exe");
        assert_eq!(one_line("hid\u{200b}den\u{feff}"), "hid\\u200bden\\ufeff");
        assert_eq!(one_line("c1\u{9b}2J\ttab"), "c1\\u009b2J\\u0009tab");
    }
}
