//! The message log (M): every status message of this run, whole and word-wrapped, with its
//! time, so a message cut at the screen edge or replaced by the next one can be read.

use super::theme::*;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// The log's lines inside an overlay `width` wide (borders off), oldest first.
pub fn lines(messages: &[(String, String)], width: u16) -> Vec<Line<'static>> {
    let w = (width as usize).saturating_sub(4 + 9);
    let mut out = Vec::new();
    if messages.is_empty() {
        out.push(Line::from(Span::styled(" nothing said yet", fg(MUTED))));
    }
    for (time, text) in messages {
        for (k, piece) in crate::ui::dialog::wrap(text, w).into_iter().enumerate() {
            let stamp = if k == 0 { time.as_str() } else { "" };
            out.push(Line::from(vec![
                Span::styled(format!(" {stamp:<8} "), fg(DIM)),
                Span::raw(piece),
            ]));
        }
    }
    out
}

pub fn draw(f: &mut Frame, area: Rect, messages: &[(String, String)], scroll: usize) {
    f.render_widget(Clear, area);
    let all = lines(messages, area.width);
    let room = area.height.saturating_sub(3) as usize;
    let scroll = scroll.min(all.len().saturating_sub(room));
    let mut shown: Vec<Line> = all.into_iter().skip(scroll).take(room).collect();
    shown.push(Line::from(Span::styled(" ↑/↓ scroll · any other key closes", fg(DIM))));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(" messages (UTC) ", title()));
    f.render_widget(Paragraph::new(shown).block(block), area);
}
