//! The help overlay: every key.

use super::theme::*;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

pub const KEYS: &[(&str, &str)] = &[
    ("↑↓ j k", "move (wraps, as in Pi)"),
    ("←→ PgUp PgDn", "page up / down"),
    ("C-← C-→", "fold / jump up · down"),
    ("A-← A-→", "same as Ctrl"),
    ("g G", "first / last row"),
    ("l", "go to the session leaf"),
    ("C-d", "filter: default"),
    ("C-t C-u", "no tools / user only"),
    ("C-l C-a", "labeled only / all"),
    ("C-o S-C-o", "cycle filters"),
    ("/", "search (Esc clears)"),
    ("T", "label timestamps"),
    ("C-x", "copy the entry's text"),
    ("Tab", "focus tree / detail"),
    ("d", "detail pane on / off"),
    ("c", "cut preview here"),
    ("+ -", "keepRecentTokens ±"),
    ("v", "what the model sees"),
    ("m", "mark to compare in v"),
    ("o", "session picker"),
    ("Enter", "navigate here"),
    ("C", "compact here"),
    ("L", "label the entry"),
    ("R", "rename the session"),
    ("F", "fork at a user message"),
    ("K", "clone the branch"),
    ("Esc", "clear / close / back"),
    ("q C-c", "quit"),
];

pub fn draw(f: &mut Frame, area: Rect) {
    let half = KEYS.len().div_ceil(2);
    let w = 76.min(area.width);
    let h = (half as u16 + 4).min(area.height);
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let col = |(k, d): &(&str, &str)| {
        vec![
            Span::styled(format!(" {k:<13}"), fg(ACCENT)),
            Span::raw(format!("{d:<24}")),
        ]
    };
    let mut lines = vec![Line::default()];
    for i in 0..half {
        let mut spans = col(&KEYS[i]);
        if let Some(right) = KEYS.get(i + half) {
            spans.extend(col(right));
        }
        lines.push(Line::from(spans));
    }
    lines.push(Line::from(Span::styled(
        " any key closes · C- Ctrl, A- Alt, S- Shift",
        fg(DIM),
    )));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(" keys ", title()));
    f.render_widget(Paragraph::new(lines).block(block), r);
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{demo_app, render};
    use crossterm::event::{KeyCode, KeyEvent};

    #[test]
    fn help_overlay_80x24() {
        let mut a = demo_app();
        a.on_key(KeyEvent::from(KeyCode::Char('?')));
        insta::assert_snapshot!(render(&mut a, 80, 24));
        a.on_key(KeyEvent::from(KeyCode::Char('x')));
        assert_eq!(a.overlay, super::super::app::Overlay::None);
    }
}
