//! What the status line says before its message (file, filter, search, position, live
//! state), made by the app for `status_line` to draw.

use super::App;
use crate::ui::theme::*;
use ratatui::text::Span;

impl App {
    /// The status line before the message: file, position, filter and state.
    pub(crate) fn status_header(&self) -> Vec<Span<'static>> {
        header(self)
    }
}

fn header(app: &App) -> Vec<Span<'static>> {
    // A title bonsai made is marked `~` (not the session's name: R writes it as one).
    let name = app
        .doc
        .session
        .session_name()
        .map(String::from)
        .or_else(|| app.doc.made_title.as_ref().map(|t| format!("~ {t}")))
        .or_else(|| {
            app.doc
                .path
                .as_ref()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().to_string())
        })
        .unwrap_or_else(|| "(session)".into());
    // A session names itself: shown on one line, controls written out.
    let name = crate::engine::units::one_line(&name).into_owned();
    let pos = if app.tree.view.visible.is_empty() {
        "(0/0)".to_string()
    } else {
        format!("({}/{})", app.tree.view.selected + 1, app.tree.view.visible.len())
    };
    let mut spans = vec![
        Span::styled(format!(" {name} "), title()),
        Span::styled(format!("{pos}{}", app.tree.view.filter.status_tag()), fg(MUTED)),
        // The Pi release whose rules the numbers and rows follow.
        Span::styled(format!("  Pi {}", app.doc.session.pi), fg(DIM)),
    ];
    if app.tree.view.show_label_times {
        spans.push(Span::styled(" [+label time]", fg(MUTED)));
    }
    if app.tree.view.archived_branches > 0 {
        let n = app.tree.view.archived_branches;
        spans.push(Span::styled(
            if app.tree.view.show_archived {
                format!("  {n} archived shown (H)")
            } else {
                format!("  {n} archived hidden (H)")
            },
            fg(MUTED),
        ));
    }
    if let Some(ed) = &app.parts.search {
        spans.push(Span::styled("  search: ", fg(ACCENT)));
        spans.extend(ed.0.line_spans(0, fg(ACCENT)));
    } else if !app.tree.view.search.is_empty() {
        spans.push(Span::styled(format!("  search: {}", app.tree.view.search), fg(ACCENT)));
    }
    if let Some(f) = &app.parts.find {
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
            format!("  prune preview: {}", app.parts.prune.policy_name()),
            fg(WARNING),
        ));
    }
    if let Some(m) = app.parts.context.mark {
        spans.push(Span::styled(
            format!("  mark {}", app.doc.session.entries[m].id),
            fg(MUTED),
        ));
    }
    if app.file.live {
        spans.push(Span::styled("  ● live", fg(SUCCESS)));
    }
    if let Some((done, total)) = app.exact.all.progress {
        let pct = (done * 100).checked_div(total).unwrap_or(0);
        spans.push(Span::styled(format!("  exact tokens {pct}%"), fg(MUTED)));
    }
    spans
}

#[cfg(test)]
mod snapshots {
    use crate::ui::tests::{app_for, render};
    use std::path::PathBuf;

    #[test]
    fn malformed_lines_banner() {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/bad/binary-garbage.jsonl");
        let mut a = app_for(&p);
        a.log.notice = a.diagnostics_notice();
        insta::assert_snapshot!(render(&mut a, 120, 12));
    }

    #[test]
    fn demo_notice_and_status_80x24() {
        let mut a = crate::ui::tests::demo_app();
        a.log.notice = Some("No Pi sessions found: showing bonsai's bundled demo session (read-only).".into());
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
            a.log.notice = a.diagnostics_notice();
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
