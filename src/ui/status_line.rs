//! The status line (the app's header, then its last message) and the hint bar under it (the
//! mode's keys, from the key table), drawn from what the app lends.

use super::theme::*;
use crate::engine::view::text_width::visible_width;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Most lines a message takes under the status line (the message log keeps it whole).
const MESSAGE_LINES: usize = 3;

/// The status as lines `width` wide: the header and the message on one line when they fit,
/// else the message word-wrapped under the header (at most `MESSAGE_LINES`; a longer one
/// ends with where to read the rest).
pub fn lines(mut head: Vec<Span<'static>>, status: Option<&str>, width: u16) -> Vec<Line<'static>> {
    let Some(msg) = status else {
        return vec![Line::from(head)];
    };
    let used: usize = head.iter().map(|s| visible_width(&s.content)).sum();
    if used + 2 + visible_width(msg) <= width as usize {
        head.push(Span::styled(format!("  {msg}"), fg(WARNING)));
        return vec![Line::from(head)];
    }
    let mut wrapped = crate::ui::dialog::wrap(msg, (width as usize).saturating_sub(2));
    if wrapped.len() > MESSAGE_LINES {
        wrapped.truncate(MESSAGE_LINES);
        let tail = " … (M: messages)";
        let last = wrapped.last_mut().expect("three lines");
        let keep = (width as usize).saturating_sub(2 + visible_width(tail));
        while visible_width(last) > keep {
            last.pop();
        }
        last.push_str(tail);
    }
    let mut out = vec![Line::from(head)];
    out.extend(
        wrapped
            .into_iter()
            .map(|l| Line::from(Span::styled(format!(" {l}"), fg(WARNING)))),
    );
    out
}

pub fn draw(f: &mut Frame, area: Rect, lines: Vec<Line<'static>>) {
    f.render_widget(Paragraph::new(lines), area);
}

/// The hint bar: the keys of the current mode, as many as fit.
pub fn draw_hints(f: &mut Frame, area: Rect, hints: &[(String, &'static str)]) {
    f.render_widget(
        Paragraph::new(Span::styled(hint_text(hints, area.width), fg(DIM))),
        area,
    );
}

/// The hints that fit in `width`, in table order; `? keys` and `q quit` are kept at the end
/// whatever the width, so the way out and the way to every other key always show.
pub fn hint_text(hints: &[(String, &'static str)], width: u16) -> String {
    let kept = |k: &str| k == "?" || k == "q";
    let tail: String = hints
        .iter()
        .filter(|(k, _)| kept(k))
        .map(|(k, l)| format!(" {k} {l} "))
        .collect();
    let room = (width as usize).saturating_sub(visible_width(&tail));
    let mut text = String::new();
    for (k, l) in hints.iter().filter(|(k, _)| !kept(k)) {
        let item = format!(" {k} {l} ");
        if visible_width(&text) + visible_width(&item) > room {
            break;
        }
        text.push_str(&item);
    }
    text + &tail
}

/// The one-line banner (demo notice, malformed lines), if any.
pub fn draw_banner(f: &mut Frame, area: Rect, text: &str) {
    f.render_widget(Paragraph::new(Span::styled(format!(" ⚠ {text}"), fg(WARNING))), area);
}
