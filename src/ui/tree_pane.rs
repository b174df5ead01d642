//! The tree pane: Pi's `/tree` rows (same text, same layout), coloured, with a token
//! column and the cut-preview tint.
//!
//! The visible window is drawn directly from `TreeView` (O(rows on screen) per frame).
//! tui-tree-widget cannot express Pi's layout (3-column levels, `├⊟`/`└⊞` connectors with
//! guides, the `•` path marker, the extra indent after a branch), and nesting each entry
//! under its parent makes it quadratic on long chains.

use super::app::{App, CutClass};
use super::theme::*;
use crate::engine::context;
use crate::engine::text_width::{char_width, visible_width};
use crate::engine::tree_view::{Row, RowStyle, pan_scroll};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

fn text_style(s: RowStyle) -> (Style, Style) {
    match s {
        RowStyle::User => (fg(ACCENT), Style::default()),
        RowStyle::Assistant => (fg(SUCCESS), Style::default()),
        RowStyle::AssistantMuted => (fg(SUCCESS), fg(MUTED)),
        RowStyle::AssistantError => (fg(SUCCESS), fg(ERROR)),
        RowStyle::Tool => (fg(MUTED), fg(MUTED)),
        RowStyle::Dim => (fg(DIM), fg(DIM)),
        RowStyle::CustomMessage => (fg(CUSTOM_LABEL), Style::default()),
        RowStyle::Compaction => (fg(BORDER_ACCENT), fg(BORDER_ACCENT)),
        RowStyle::BranchSummary => (fg(WARNING), Style::default()),
        RowStyle::Empty => (Style::default(), Style::default()),
    }
}

/// Compact token counts: 950, 12.3k, 1.2M.
pub fn short_tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 100_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else if n < 1_000_000 {
        format!("{}k", n / 1000)
    } else {
        format!("{:.1}M", n as f64 / 1e6)
    }
}

fn cut_bg(c: Option<CutClass>) -> Option<ratatui::style::Color> {
    match c? {
        CutClass::Summarized => Some(SUMMARIZED),
        CutClass::TurnPrefix => Some(TURN_PREFIX),
        CutClass::Kept => Some(KEPT),
        CutClass::Compacted | CutClass::Boundary => Some(COMPACTED),
    }
}

/// Drop the first `n` columns of a list of spans (horizontal panning of deep trees).
fn skip_columns(spans: Vec<Span<'static>>, mut n: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    for sp in spans {
        if n == 0 {
            out.push(sp);
            continue;
        }
        let w = visible_width(&sp.content);
        if w <= n {
            n -= w;
            continue;
        }
        let mut cut = 0;
        let mut idx = 0;
        for (i, c) in sp.content.char_indices() {
            if cut >= n {
                idx = i;
                break;
            }
            cut += char_width(c);
            idx = i + c.len_utf8();
        }
        n = 0;
        out.push(Span::styled(sp.content[idx..].to_string(), sp.style));
    }
    out
}

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let height = area.height as usize;
    app.tree_rows = height;
    if app.view.visible.is_empty() {
        let msg = if app.session.entries.is_empty() {
            "  (no entries)"
        } else {
            "  No entries found"
        };
        f.render_widget(Paragraph::new(Span::styled(msg, fg(MUTED))), area);
        return;
    }
    let range = app.view.window(height);
    let session = app.session.clone();
    let mut rows: Vec<Row> = Vec::with_capacity(range.len());
    for k in range.clone() {
        let mut r = app.view.row(&session, k);
        r.text = app.row_text(r.entry);
        rows.push(r);
    }
    // Token column: Pi's estimate for the entry, the exact count beside it when known.
    let token_col = if area.width >= 90 {
        13
    } else if area.width >= 60 {
        8
    } else {
        0
    };
    let body_width = (area.width as usize).saturating_sub(token_col);
    let scroll = pan_scroll(&rows, body_width);
    let mut lines = Vec::with_capacity(rows.len());
    for r in &rows {
        let selected = r.selected;
        let (lead_style, body_style) = text_style(r.text.style);
        let mut spans: Vec<Span<'static>> = vec![Span::styled(r.prefix.clone(), fg(DIM))];
        if !r.fold_marker.is_empty() {
            spans.push(Span::styled(r.fold_marker, fg(ACCENT)));
        }
        if r.on_active_path {
            spans.push(Span::styled("• ", fg(ACCENT)));
        }
        if let Some(l) = &r.label {
            spans.push(Span::styled(format!("[{l}] "), fg(WARNING)));
        }
        if let Some(t) = &r.label_time {
            spans.push(Span::styled(format!("{t} "), fg(MUTED)));
        }
        spans.push(Span::styled(r.text.lead.clone(), lead_style));
        spans.push(Span::styled(r.text.body.clone(), body_style));
        if scroll > 0 {
            spans = skip_columns(spans, scroll);
        }
        let mut line_spans = vec![Span::styled(if r.selected { "› " } else { "  " }, fg(ACCENT))];
        line_spans.extend(spans);
        // Pad, then the right-aligned token column.
        let used: usize = line_spans.iter().map(|s| visible_width(&s.content)).sum();
        if token_col > 0 {
            let msgs = context::intrinsic_messages(&session, r.entry);
            let est: u64 = msgs.iter().map(|m| m.est_tokens).sum();
            let enc = crate::engine::tokens::Encoding::O200k;
            let exact: Option<u64> = msgs.iter().map(|m| app.exact.get(m, enc)).sum();
            let col = match (est, exact) {
                (0, _) => String::new(),
                (e, Some(x)) if token_col >= 12 => format!("{} {}", short_tokens(e), short_tokens(x)),
                (e, _) => short_tokens(e),
            };
            if used < body_width {
                line_spans.push(Span::raw(" ".repeat(body_width - used)));
            } else {
                // Clip the body at the column.
                let mut acc = 0;
                let mut clipped = Vec::new();
                for sp in line_spans {
                    let w = visible_width(&sp.content);
                    if acc + w <= body_width {
                        acc += w;
                        clipped.push(sp);
                    } else {
                        let mut s = String::new();
                        for c in sp.content.chars() {
                            let cw = char_width(c);
                            if acc + cw > body_width {
                                break;
                            }
                            acc += cw;
                            s.push(c);
                        }
                        clipped.push(Span::styled(s, sp.style));
                        break;
                    }
                }
                if acc < body_width {
                    clipped.push(Span::raw(" ".repeat(body_width - acc)));
                }
                line_spans = clipped;
            }
            line_spans.push(Span::styled(format!("{col:>width$}", width = token_col), fg(DIM)));
        }
        let mut line = Line::from(line_spans);
        if let Some(bg) = cut_bg(app.cut_classes.get(&r.entry).copied()).filter(|_| app.cut_preview) {
            line = line.style(Style::default().bg(bg));
        }
        if selected {
            line = line.style(Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD));
        }
        lines.push(line);
    }
    f.render_widget(Paragraph::new(lines), area);
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{app_for, render, shared};
    use super::super::theme::{COMPACTED, KEPT, SUMMARIZED};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn tree_default_120x40() {
        let mut a = app_for(&shared("pi-0.87.1/branching-small.jsonl"));
        insta::assert_snapshot!(render(&mut a, 120, 40));
    }

    #[test]
    fn tree_default_80x24() {
        let mut a = app_for(&shared("pi-0.87.1/branching-small.jsonl"));
        insta::assert_snapshot!(render(&mut a, 80, 24));
    }

    #[test]
    fn tree_in_each_filter() {
        for (key, name) in [
            ('t', "no_tools"),
            ('u', "user_only"),
            ('l', "labeled_only"),
            ('a', "all"),
        ] {
            let mut a = app_for(&shared("pi-0.87.1/branching-small.jsonl"));
            a.show_detail = false;
            a.on_key(ctrl(key));
            insta::assert_snapshot!(format!("tree_filter_{name}"), render(&mut a, 100, 40));
        }
    }

    #[test]
    fn folded_segments() {
        let mut a = app_for(&shared("pi-0.87.1/branching-small.jsonl"));
        a.show_detail = false;
        // Jump up to the active branch's segment start, fold it, jump to the root, fold that
        // branch's sibling too: Pi's Ctrl+← sequence.
        a.on_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
        a.on_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
        a.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
        a.on_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
        insta::assert_snapshot!(render(&mut a, 100, 30));
    }

    #[test]
    fn search() {
        let mut a = app_for(&shared("pi-0.87.1/branching-small.jsonl"));
        a.show_detail = false;
        a.on_key(KeyEvent::from(KeyCode::Char('/')));
        for c in "csv".chars() {
            a.on_key(KeyEvent::from(KeyCode::Char(c)));
        }
        insta::assert_snapshot!(render(&mut a, 100, 24));
    }

    #[test]
    fn labels_and_timestamps() {
        let mut a = app_for(&shared("pi-0.87.1/branching-small.jsonl"));
        a.show_detail = false;
        a.view.now_ms = 1_900_000_000_000; // a fixed "now" in 2030: dates show as YY/M/D
        a.on_key(ctrl('l'));
        a.on_key(KeyEvent::from(KeyCode::Char('T')));
        insta::assert_snapshot!(render(&mut a, 100, 12));
    }

    #[test]
    fn multiple_roots() {
        let mut a = app_for(&shared("pi-0.73.1/forked.jsonl"));
        a.show_detail = false;
        insta::assert_snapshot!(render(&mut a, 100, 30));
    }

    #[test]
    fn cut_preview_colours_the_rows() {
        // How many entries fall in each class, then the tint on the drawn rows.
        let mut a = app_for(&shared("pi-0.87.1/split-turn.jsonl"));
        a.keep_recent = 2000;
        a.on_key(KeyEvent::from(KeyCode::Char('c')));
        let classes: std::collections::BTreeMap<String, usize> =
            a.cut_classes.values().fold(Default::default(), |mut m, c| {
                *m.entry(format!("{c:?}")).or_default() += 1;
                m
            });
        insta::assert_debug_snapshot!(classes);
        // And the rows really carry the colours (selection aside).
        a.show_detail = false;
        a.view.selected = 0;
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 60)).unwrap();
        t.draw(|f| super::super::draw(f, &mut a)).unwrap();
        let buf = t.backend().buffer();
        let rows_with = |c| (0..60).filter(|&y| buf[(5, y)].bg == c).count();
        assert!(rows_with(SUMMARIZED) > 0, "summarized rows tinted");
        assert!(rows_with(KEPT) > 0, "kept rows tinted");
        assert!(rows_with(COMPACTED) > 0, "rows behind the boundary tinted");
    }
}
