//! One way to say a quantity, for every view: the TUI, the CLI, `serve` and the Pi package.
//!
//! - Sizes in decimal units (kB, MB, GB: 1 kB is 1,000 bytes), as the README says.
//! - One decimal below 100 of a unit, none from 100 on.
//! - Percentages rounded to the nearest whole one.
//! - Ages in the largest whole unit: s, min, h, d.

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

#[cfg(test)]
mod tests {
    use super::*;

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
