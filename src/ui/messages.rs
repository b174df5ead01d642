//! The message log (M): every status message of this run, whole and word-wrapped, with its
//! time, so a message cut at the screen edge or replaced by the next one can be read.

use super::app::App;
use super::theme::*;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// The log's lines inside an overlay `width` wide (borders off), oldest first.
pub fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let w = (width as usize).saturating_sub(4 + 9);
    let mut out = Vec::new();
    if app.messages.is_empty() {
        out.push(Line::from(Span::styled(" nothing said yet", fg(MUTED))));
    }
    for (time, text) in &app.messages {
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

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    f.render_widget(Clear, area);
    let all = lines(app, area.width);
    let room = area.height.saturating_sub(3) as usize;
    let scroll = app.screen.help.scroll.min(all.len().saturating_sub(room));
    let mut shown: Vec<Line> = all.into_iter().skip(scroll).take(room).collect();
    shown.push(Line::from(Span::styled(" ↑/↓ scroll · any other key closes", fg(DIM))));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(" messages (UTC) ", title()));
    f.render_widget(Paragraph::new(shown).block(block), area);
}
