//! The help overlay: every key of the mode under it, from the key table.

use super::keymap::{self, Mode};
use super::theme::*;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// (keys, what they do) for `mode`, in table order.
pub fn entries(mode: Mode) -> Vec<(String, &'static str)> {
    keymap::for_mode(mode)
        .map(|b| (keymap::keys_text(b), b.label))
        .collect()
}

/// Rows the help needs for `mode` at `width` (its columns side by side).
pub fn layout(mode: Mode, width: u16) -> (usize, usize, usize, usize) {
    let items = entries(mode);
    let key_w = items.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0).min(18) + 2;
    let label_w = items.iter().map(|(_, l)| l.chars().count()).max().unwrap_or(0).min(30) + 1;
    let cols = ((width.saturating_sub(2) as usize) / (key_w + label_w)).clamp(1, 3);
    let rows = items.len().div_ceil(cols);
    (key_w, label_w, cols, rows)
}

pub fn draw(f: &mut Frame, area: Rect, mode: Mode, scroll: usize) {
    let items = entries(mode);
    let (key_w, label_w, cols, rows) = layout(mode, area.width);
    let w = ((key_w + label_w) * cols + 2) as u16;
    let room = area.height.saturating_sub(3) as usize;
    let h = (rows.min(room) + 3) as u16;
    let r = centered(area, w.min(area.width), h.min(area.height));
    f.render_widget(Clear, r);
    let cell = |(k, d): &(String, &str)| {
        let k: String = k.chars().take(key_w - 1).collect();
        vec![
            Span::styled(format!(" {k:<kw$}", kw = key_w - 1), fg(ACCENT)),
            Span::raw(format!("{d:<label_w$}")),
        ]
    };
    let scroll = scroll.min(rows.saturating_sub(room));
    let mut lines = Vec::new();
    for row in (0..rows).skip(scroll).take(room) {
        let mut spans = Vec::new();
        for c in 0..cols {
            if let Some(item) = items.get(c * rows + row) {
                spans.extend(cell(item));
            }
        }
        lines.push(Line::from(spans));
    }
    let more = rows > room;
    lines.push(Line::from(Span::styled(
        if more {
            " ↑/↓ scroll · any other key closes"
        } else {
            " any key closes"
        },
        fg(DIM),
    )));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(format!(" keys · {} ", mode.name()), title()));
    f.render_widget(Paragraph::new(lines).block(block), r);
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{demo_app, render};
    use crossterm::event::{KeyCode, KeyEvent};

    #[test]
    fn help_overlay_80x24() {
        let mut a = demo_app();
        a.handle_key(KeyEvent::from(KeyCode::Char('?')));
        insta::assert_snapshot!(render(&mut a, 80, 24));
        // The rest of the list is a scroll away.
        a.handle_key(KeyEvent::from(KeyCode::PageDown));
        insta::assert_snapshot!("help_overlay_80x24_scrolled", render(&mut a, 80, 24));
        a.handle_key(KeyEvent::from(KeyCode::Char('x')));
        assert_eq!(a.screen.overlay, super::super::app::Overlay::None);
    }
}
