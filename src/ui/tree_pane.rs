//! The tree pane: Pi's `/tree` rows (same text, same layout), coloured, with a token
//! column and the cut-preview tint.
//!
//! The visible window is drawn directly from `TreeView` (O(rows on screen) per frame).
//! tui-tree-widget cannot express Pi's layout (3-column levels, `├⊟`/`└⊞` connectors with
//! guides, the `•` path marker, the extra indent after a branch), and nesting each entry
//! under its parent makes it quadratic on long chains.

pub mod update;
use super::selection::CutClass;
use super::theme::*;
use crate::engine::view::text_width::{char_width, visible_width};
use crate::engine::view::tree_view::RowStyle;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// The tree rows on screen, made in `update` for `draw`.
#[derive(Default)]
pub struct TreeFrame {
    /// First visible row's index in the view.
    pub start: usize,
    pub rows: Vec<FrameRow>,
    /// Columns the row bodies are shifted left (Pi's horizontal pan of deep trees).
    pub pan: usize,
}

pub struct FrameRow {
    pub row: crate::engine::view::tree_view::Row,
    /// The token column: Pi's estimate, and the exact count once known (in the pruning
    /// preview, what the row's edit saves).
    pub tokens: String,
    /// A context edit is in effect for it at Pi's leaf: hidden (`true`) or replaced.
    pub edited: Option<bool>,
    /// The pruning preview's change for it.
    pub change: Option<crate::engine::edit::prune::Change>,
}

pub(super) fn text_style(s: RowStyle) -> (Style, Style) {
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

/// What the tree pane is drawn from, lent by the app for one frame.
pub struct TreeDraw<'a> {
    pub session: &'a crate::engine::load::session::Session,
    pub frame: &'a TreeFrame,
    pub cut_classes: &'a std::collections::HashMap<usize, CutClass>,
    pub cut_preview: bool,
    pub prune_preview: bool,
    pub no_color: bool,
}

impl crate::ui::component::Drawable for crate::engine::view::tree_view::TreeView {
    type View<'a> = TreeDraw<'a>;
    fn draw(&self, f: &mut Frame, area: Rect, d: TreeDraw<'_>) {
        draw(f, area, self, &d)
    }
}

fn draw(f: &mut Frame, area: Rect, view: &crate::engine::view::tree_view::TreeView, d: &TreeDraw) {
    if view.visible.is_empty() {
        let msg = if d.session.entries.is_empty() {
            "  (no entries)"
        } else {
            "  No entries found"
        };
        f.render_widget(Paragraph::new(Span::styled(msg, fg(MUTED))), area);
        return;
    }
    // Without colour (NO_COLOR) the previews' classes are a symbol column.
    let symbols = (d.cut_preview || d.prune_preview) && d.no_color;
    let sym_col = if symbols { 2 } else { 0 };
    let token_col = super::layout::token_column(area.width);
    let body_width = (area.width as usize).saturating_sub(token_col + sym_col);
    let scroll = d.frame.pan;
    let mut lines = Vec::with_capacity(d.frame.rows.len());
    for fr in &d.frame.rows {
        let r = &fr.row;
        let (lead_style, body_style) = text_style(r.text.style);
        // The drawing is already the columns from the pan; the rest shifts by what is left.
        let mut spans: Vec<Span<'static>> = vec![];
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
        // A context edit in effect: the model gets other text (✎), or nothing (⊘).
        match fr.edited {
            Some(true) => spans.push(Span::styled("⊘ ", fg(WARNING))),
            Some(false) => spans.push(Span::styled("✎ ", fg(WARNING))),
            None => {}
        }
        // An archived branch, shown: dimmed, its first row tagged.
        let (lead_style, body_style) = if r.archived {
            let first = d.session.parent_of(r.entry).is_none_or(|p| !view.is_archived(p));
            if first {
                spans.push(Span::styled("[archived] ", fg(DIM).add_modifier(Modifier::ITALIC)));
            }
            (fg(DIM), fg(DIM))
        } else {
            (lead_style, body_style)
        };
        spans.push(Span::styled(r.text.lead.clone(), lead_style));
        spans.push(Span::styled(r.text.body.clone(), body_style));
        let skip = scroll.saturating_sub(r.prefix_cols);
        if skip > 0 {
            spans = skip_columns(spans, skip);
        }
        spans.insert(0, Span::styled(r.prefix.clone(), fg(DIM)));
        let class = d.cut_classes.get(&r.entry).copied().filter(|_| d.cut_preview);
        let change = fr.change.as_ref().map(super::prune_panel::change_style);
        let mut line_spans = vec![];
        if symbols {
            let sym = change.map(|c| c.1).or(class.map(|c| c.symbol())).unwrap_or(' ');
            line_spans.push(Span::raw(format!("{sym} ")));
        }
        line_spans.push(Span::styled(if r.selected { "› " } else { "  " }, fg(ACCENT)));
        line_spans.extend(spans);
        // Pad (or clip) the body to its width, then the right-aligned token column.
        if token_col > 0 {
            line_spans = fit(line_spans, body_width + sym_col);
            line_spans.push(Span::styled(
                format!("{:>width$}", fr.tokens, width = token_col),
                fg(DIM),
            ));
        }
        let mut line = Line::from(line_spans);
        if let Some(bg) = cut_bg(class) {
            line = line.style(Style::default().bg(bg));
        }
        if let Some((bg, _)) = change {
            line = line.style(Style::default().bg(bg));
        }
        if r.selected {
            line = line.style(Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD));
            if d.no_color {
                line = line.style(Style::default().add_modifier(Modifier::REVERSED));
            }
        }
        lines.push(line);
    }
    f.render_widget(Paragraph::new(lines), area);
}

/// Spans padded with spaces or clipped to exactly `width` columns.
fn fit(spans: Vec<Span<'static>>, width: usize) -> Vec<Span<'static>> {
    let used: usize = spans.iter().map(|s| visible_width(&s.content)).sum();
    if used <= width {
        let mut out = spans;
        out.push(Span::raw(" ".repeat(width - used)));
        return out;
    }
    let mut acc = 0;
    let mut clipped = Vec::new();
    for sp in spans {
        let w = visible_width(&sp.content);
        if acc + w <= width {
            acc += w;
            clipped.push(sp);
        } else {
            let mut s = String::new();
            for c in sp.content.chars() {
                let cw = char_width(c);
                if acc + cw > width {
                    break;
                }
                acc += cw;
                s.push(c);
            }
            clipped.push(Span::styled(s, sp.style));
            break;
        }
    }
    if acc < width {
        clipped.push(Span::raw(" ".repeat(width - acc)));
    }
    clipped
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{app_for, own, render};
    use super::super::theme::{COMPACTED, KEPT, SUMMARIZED};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use std::path::PathBuf;

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn tree_default_120x40() {
        let mut a = app_for(&own("tour.jsonl"));
        insta::assert_snapshot!(render(&mut a, 120, 40));
    }

    #[test]
    fn tree_default_80x24() {
        let mut a = app_for(&own("tour.jsonl"));
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
            let mut a = app_for(&own("tour.jsonl"));
            a.screen.show_detail = false;
            a.handle_key(ctrl(key));
            insta::assert_snapshot!(format!("tree_filter_{name}"), render(&mut a, 100, 40));
        }
    }

    #[test]
    fn folded_segments() {
        let mut a = app_for(&own("tour.jsonl"));
        a.screen.show_detail = false;
        // Jump up to the active branch's segment start, fold it, jump to the root, fold that
        // branch's sibling too: Pi's Ctrl+← sequence.
        a.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
        a.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
        a.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
        a.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
        insta::assert_snapshot!(render(&mut a, 100, 30));
    }

    #[test]
    fn search() {
        let mut a = app_for(&own("tour.jsonl"));
        a.screen.show_detail = false;
        a.handle_key(KeyEvent::from(KeyCode::Char('/')));
        for c in "csv".chars() {
            a.handle_key(KeyEvent::from(KeyCode::Char(c)));
        }
        insta::assert_snapshot!(render(&mut a, 100, 24));
    }

    #[test]
    fn labels_and_timestamps() {
        let mut a = app_for(&own("tour.jsonl"));
        a.screen.show_detail = false;
        a.tree.view.now_ms = 1_900_000_000_000; // a fixed "now" in 2030: dates show as YY/M/D
        a.handle_key(ctrl('l'));
        a.handle_key(KeyEvent::from(KeyCode::Char('T')));
        insta::assert_snapshot!(render(&mut a, 100, 12));
    }

    #[test]
    fn multiple_roots() {
        // Entries whose parent is missing are roots of their own (Pi 0.73's forks had two).
        let mut a = app_for(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/bad/missing-parents.jsonl"));
        a.screen.show_detail = false;
        insta::assert_snapshot!(render(&mut a, 100, 30));
    }

    #[test]
    fn cut_preview_colours_the_rows() {
        // How many entries fall in each class, then the tint on the drawn rows.
        let mut a = app_for(&own("split-turn.jsonl"));
        a.selection.keep_recent = 2000;
        a.handle_key(KeyEvent::from(KeyCode::Char('c')));
        let classes: std::collections::BTreeMap<String, usize> =
            a.selection.cut_classes.values().fold(Default::default(), |mut m, c| {
                *m.entry(format!("{c:?}")).or_default() += 1;
                m
            });
        insta::assert_debug_snapshot!(classes);
        // And the rows really carry the colours (selection aside).
        a.screen.show_detail = false;
        a.tree.view.selected = 0;
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 60)).unwrap();
        t.draw(|f| super::super::draw(f, &a)).unwrap();
        let buf = t.backend().buffer();
        let rows_with = |c| (0..60).filter(|&y| buf[(5, y)].bg == c).count();
        assert!(rows_with(SUMMARIZED) > 0, "summarized rows tinted");
        assert!(rows_with(KEPT) > 0, "kept rows tinted");
        assert!(rows_with(COMPACTED) > 0, "rows behind the boundary tinted");
    }
}
