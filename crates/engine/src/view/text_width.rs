//! Terminal width of text as pi-tui measures it (graphemes; wide glyphs and emoji count 2),
//! and Pi's width-based cutting. The tree rows, the CLI's `tree` and the TUI's panes use it.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Terminal width of text as pi-tui measures it (graphemes; wide glyphs and emoji 2).
pub fn visible_width(s: &str) -> usize {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return s.len();
    }
    // Tree drawing: ASCII plus box-drawing, fold markers, bullets (all one column).
    if s.chars().all(|c| {
        let u = c as u32;
        (0x20..0x7f).contains(&u)
            || (0x2500..0x2580).contains(&u)
            || u == 0x229E
            || u == 0x229F
            || u == 0x2022
            || u == 0x203A
    }) {
        return s.chars().count();
    }
    // Most text (tree drawing, Latin, CJK) has no multi-char clusters: sum char widths.
    if !s.chars().any(may_join) {
        return s
            .chars()
            .map(|c| {
                if c == '\t' {
                    3
                } else {
                    unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
                }
            })
            .sum();
    }
    s.graphemes(true).map(grapheme_width).sum()
}

/// [`visible_width`], but it stops counting past `cap` (then it returns something > `cap`):
/// a row is cut to the terminal's width, and measuring a whole long message grapheme by
/// grapheme only to learn that it is wider cost most of `bonsai tree` on a large session.
pub fn visible_width_upto(s: &str, cap: usize) -> usize {
    // The fast paths of `visible_width` are linear scans already; only clusters are slow.
    if !s.chars().any(may_join) {
        return visible_width(s);
    }
    let mut w = 0;
    for g in s.graphemes(true) {
        w += grapheme_width(g);
        if w > cap {
            return w;
        }
    }
    w
}

/// Characters that can merge with a neighbour into one grapheme cluster.
fn may_join(c: char) -> bool {
    let u = c as u32;
    (0x300..0x370).contains(&u)
        || (0x483..0x490).contains(&u)
        || (0x591..0x5C8).contains(&u)
        || (0x610..0x61B).contains(&u)
        || (0x64B..0x660).contains(&u)
        || (0x900..0xE00).contains(&u)
        || (0x1AB0..0x1B00).contains(&u)
        || (0x1DC0..0x1E00).contains(&u)
        || (0x200B..0x2010).contains(&u)
        || (0x20D0..0x2100).contains(&u)
        || (0x3099..0x309B).contains(&u)
        || (0xFE00..0xFE10).contains(&u)
        || (0xFE20..0xFE30).contains(&u)
        || u == 0x1160
        || (0x1100..0x1200).contains(&u)
        || (0xAC00..0xD7A4).contains(&u)
        || u >= 0x1F000
        || c == '\r'
}

pub fn char_width(c: char) -> usize {
    if c == '\t' {
        3
    } else {
        unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
    }
}

fn grapheme_width(g: &str) -> usize {
    if g == "\t" {
        return 3;
    }
    let w = UnicodeWidthStr::width(g);
    if w > 2 { 2 } else { w }
}

/// Pi's `truncateToWidth(text, width, ellipsis)`.
pub fn truncate_to_width(text: &str, width: usize, ellipsis: &str) -> String {
    if width == 0 {
        return String::new();
    }
    if visible_width_upto(text, width) <= width {
        return text.to_string();
    }
    let ew = visible_width(ellipsis);
    if ew >= width {
        return ellipsis.graphemes(true).take(width).collect();
    }
    let target = width - ew;
    let mut out = String::new();
    let mut w = 0;
    for g in text.graphemes(true) {
        let gw = grapheme_width(g);
        if w + gw > target {
            break;
        }
        out.push_str(g);
        w += gw;
    }
    out.push_str(ellipsis);
    out
}

/// Pi's `sliceByColumn`: columns [start, start+len) of text; wide glyphs crossing an edge drop.
pub fn slice_by_column(text: &str, start: usize, len: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    // Without characters that join (see `visible_width`), every char is its own cluster:
    // walking chars gives the same cut, and a deep row's long tree prefix costs far less.
    if !text.chars().any(may_join) {
        for c in text.chars() {
            let cw = char_width(c);
            if col >= start && col + cw <= start + len {
                out.push(c);
            }
            col += cw;
            if col >= start + len {
                break;
            }
        }
        return out;
    }
    slice_by_graphemes(text, start, len)
}

/// [`slice_by_column`] cluster by cluster: what every fast path must agree with.
fn slice_by_graphemes(text: &str, start: usize, len: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for g in text.graphemes(true) {
        let gw = grapheme_width(g);
        if col >= start && col + gw <= start + len {
            out.push_str(g);
        }
        col += gw;
        if col >= start + len {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_paths_cut_and_measure_as_the_clusters_do() {
        let texts = [
            "│  │  ├─ • user: plain ascii text that runs on and on",
            "  └⊟ [branch summary]: wide 漢字 and → arrows, ü, é, tabs\there",
            "日本語のテキスト mixed with ascii and ‹quotes›",
            "e\u{301} combining, 👍🏽 emoji, 🇫🇷 flags, \r\n endings",
        ];
        for t in texts {
            let full = t.graphemes(true).map(grapheme_width).sum::<usize>();
            assert_eq!(visible_width(t), full, "{t}");
            for cap in [0, 5, 20, full, full + 3] {
                let w = visible_width_upto(t, cap);
                assert!(if full > cap { w > cap } else { w == full }, "{t} {cap}");
            }
            for start in [0, 1, 3, 7, 12, 30] {
                for len in [0, 1, 4, 10, 40, 200] {
                    assert_eq!(
                        slice_by_column(t, start, len),
                        slice_by_graphemes(t, start, len),
                        "{t} {start} {len}"
                    );
                }
            }
        }
    }
}
