//! The status line (file, filter, search, position, live state, the last message) and the
//! hint bar under it (the mode's keys, from the key table).

use super::App;
use crate::engine::view::text_width::visible_width;
use crate::ui::theme::*;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// The status line before the message: file, position, filter and state.
fn header(app: &App) -> Vec<Span<'static>> {
    let name = app
        .doc
        .session
        .session_name()
        .map(String::from)
        .or_else(|| {
            app.doc
                .path
                .as_ref()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().to_string())
        })
        .unwrap_or_else(|| "(session)".into());
    let pos = if app.view.visible.is_empty() {
        "(0/0)".to_string()
    } else {
        format!("({}/{})", app.view.selected + 1, app.view.visible.len())
    };
    let mut spans = vec![
        Span::styled(format!(" {name} "), title()),
        Span::styled(format!("{pos}{}", app.view.filter.status_tag()), fg(MUTED)),
        // The Pi release whose rules the numbers and rows follow.
        Span::styled(format!("  Pi {}", app.doc.session.pi), fg(DIM)),
    ];
    if app.view.show_label_times {
        spans.push(Span::styled(" [+label time]", fg(MUTED)));
    }
    if app.view.archived_branches > 0 {
        let n = app.view.archived_branches;
        spans.push(Span::styled(
            if app.view.show_archived {
                format!("  {n} archived shown (H)")
            } else {
                format!("  {n} archived hidden (H)")
            },
            fg(MUTED),
        ));
    }
    if let Some(ed) = &app.search {
        spans.push(Span::styled("  search: ", fg(ACCENT)));
        spans.extend(ed.line_spans(0, fg(ACCENT)));
    } else if !app.view.search.is_empty() {
        spans.push(Span::styled(format!("  search: {}", app.view.search), fg(ACCENT)));
    }
    if let Some(f) = &app.find {
        match &f.editor {
            Some(ed) => {
                spans.push(Span::styled("  find: ", fg(ACCENT)));
                spans.extend(ed.line_spans(0, fg(ACCENT)));
            }
            None => spans.push(Span::styled(
                format!("  find {:?}: {} (n/N)", f.query, f.count()),
                fg(ACCENT),
            )),
        }
    }
    if app.screen.cut_preview {
        spans.push(Span::styled("  cut preview", fg(WARNING)));
    }
    if app.screen.prune_preview {
        spans.push(Span::styled(
            format!("  prune preview: {}", app.prune.policy_name()),
            fg(WARNING),
        ));
    }
    if let Some(m) = app.context.mark {
        spans.push(Span::styled(
            format!("  mark {}", app.doc.session.entries[m].id),
            fg(MUTED),
        ));
    }
    if app.live {
        spans.push(Span::styled("  ● live", fg(SUCCESS)));
    }
    if let Some((done, total)) = app.exact_all.progress {
        let pct = (done * 100).checked_div(total).unwrap_or(0);
        spans.push(Span::styled(format!("  exact tokens {pct}%"), fg(MUTED)));
    }
    spans
}

/// Most lines a message takes under the status line (the message log keeps it whole).
const MESSAGE_LINES: usize = 3;

/// The status as lines `width` wide: the header and the message on one line when they fit,
/// else the message word-wrapped under the header (at most `MESSAGE_LINES`; a longer one
/// ends with where to read the rest).
pub fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let mut head = header(app);
    let Some(msg) = &app.status else {
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

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    f.render_widget(Paragraph::new(lines(app, area.width)), area);
}

/// The hint bar: the keys of the current mode, as many as fit.
pub fn draw_hints(f: &mut Frame, area: Rect, app: &App) {
    f.render_widget(
        Paragraph::new(Span::styled(hint_text(&app.hints(), area.width), fg(DIM))),
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

#[cfg(test)]
mod snapshots {
    use crate::ui::tests::{app_for, render};
    use std::path::PathBuf;

    #[test]
    fn malformed_lines_banner() {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/bad/binary-garbage.jsonl");
        let mut a = app_for(&p);
        a.notice = a.diagnostics_notice();
        insta::assert_snapshot!(render(&mut a, 120, 12));
    }

    #[test]
    fn demo_notice_and_status_80x24() {
        let mut a = crate::ui::tests::demo_app();
        a.notice = Some("No Pi sessions found: showing bonsai's bundled demo session (read-only).".into());
        insta::assert_snapshot!(render(&mut a, 80, 24));
    }
}

#[cfg(test)]
mod odd_files {
    use crate::ui::tests::{app_for, render};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use std::path::PathBuf;

    /// Every bad-corpus file Pi can open also opens in the UI, and every key is safe on it.
    #[test]
    fn the_ui_survives_the_bad_corpus() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/bad");
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "jsonl") || crate::store::load_session(&p).is_err() {
                continue;
            }
            let mut a = app_for(&p);
            a.notice = a.diagnostics_notice();
            let keys = [
                KeyEvent::from(KeyCode::Down),
                KeyEvent::from(KeyCode::Up),
                KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL),
                KeyEvent::new(KeyCode::Right, KeyModifiers::CONTROL),
                KeyEvent::new(KeyCode::Char('a'), KeyModifiers::CONTROL),
                KeyEvent::from(KeyCode::Char('c')),
                KeyEvent::from(KeyCode::Char('v')),
                KeyEvent::from(KeyCode::Esc),
                KeyEvent::from(KeyCode::Tab),
                KeyEvent::from(KeyCode::PageDown),
                KeyEvent::from(KeyCode::Char('f')),
                KeyEvent::from(KeyCode::Char('t')),
                KeyEvent::from(KeyCode::Char('}')),
                KeyEvent::from(KeyCode::Char('{')),
            ];
            for k in keys {
                a.handle_key(k);
                let _ = render(&mut a, 80, 24);
            }
        }
    }
}
