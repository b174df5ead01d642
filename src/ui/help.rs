//! The help overlay: every key.

use super::theme::*;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

pub const KEYS: &[(&str, &str)] = &[
    ("↑/↓ j/k", "move (wraps, like Pi's /tree)"),
    ("←/→ PgUp/PgDn", "page up / down"),
    ("Ctrl+←/→ Alt+←/→", "fold or jump up a branch / unfold or jump down"),
    ("g / G", "first / last row"),
    ("l", "jump to the session's leaf"),
    ("Ctrl+D", "filter: default"),
    ("Ctrl+T / Ctrl+U", "filter: no tools / user only (toggle)"),
    ("Ctrl+L / Ctrl+A", "filter: labeled only / all (toggle)"),
    ("Ctrl+O / Shift+Ctrl+O", "cycle filters"),
    ("/", "search (Enter keeps it, Esc clears)"),
    ("Shift+T", "label timestamps"),
    ("Tab", "switch focus tree / detail"),
    ("d", "hide / show the detail pane"),
    ("c", "cut preview for the selected entry as leaf"),
    ("+ / -", "keepRecentTokens up / down (live)"),
    ("v", "what the model sees at the selected entry"),
    ("m", "mark this entry to compare contexts (v)"),
    ("o", "session picker"),
    ("Esc", "clear search / close preview / back to tree"),
    ("?", "this help"),
    ("q / Ctrl+C", "quit"),
];

pub fn draw(f: &mut Frame, area: Rect) {
    let w = 64.min(area.width);
    let h = (KEYS.len() as u16 + 4).min(area.height);
    let r = Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h };
    f.render_widget(Clear, r);
    let mut lines = vec![Line::default()];
    for (k, d) in KEYS {
        lines.push(Line::from(vec![Span::styled(format!(" {k:<22}"), fg(ACCENT)), Span::raw(*d)]));
    }
    lines.push(Line::from(Span::styled(" any key closes", fg(DIM))));
    let block = Block::default().borders(Borders::ALL).border_style(fg(ACCENT)).title(Span::styled(" keys ", title()));
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
        insta::assert_snapshot!(render(&mut a, 80, 30));
        a.on_key(KeyEvent::from(KeyCode::Char('x')));
        assert_eq!(a.overlay, super::super::app::Overlay::None);
    }
}
