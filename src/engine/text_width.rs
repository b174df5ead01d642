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
    if visible_width(text) <= width {
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
