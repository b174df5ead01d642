//! "What the model sees": the message list at the selected entry (after compaction, context
//! edits and branch summaries), with tokens and source entry; with a marked second entry,
//! both side by side and what differs.

use super::app::App;
use super::theme::*;
use crate::engine::context::{self, ContextMessage, Part, Projection};
use crate::engine::tokens;
use crate::engine::tree_view::one_line;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use std::collections::HashSet;

type Key = (usize, u8, Option<usize>);

fn key(m: &ContextMessage) -> Key {
    let p = match m.part {
        Part::Main => 0,
        Part::CompactionSystem => 1,
        Part::CompactionSummary => 2,
    };
    (m.source, p, m.replaced_by)
}

fn column(
    app: &App,
    proj: &Projection,
    other: Option<&HashSet<Key>>,
    exact: Option<&[u64]>,
    width: usize,
) -> Vec<Line<'static>> {
    let s = &app.session;
    let mut out = Vec::new();
    for (k, m) in proj.messages().enumerate() {
        let only_here = other.is_some_and(|o| !o.contains(&key(m)));
        let marker = if only_here { "+" } else { " " };
        let text = tokens::message_text(&context::materialize(s, m));
        let ex = exact
            .and_then(|e| e.get(k))
            .map(|n| format!("{n:>6}"))
            .unwrap_or_else(|| "     ·".into());
        let head = format!(
            "{marker}{:<17}{:>6} {ex} {} ",
            m.role.as_str(),
            m.est_tokens,
            s.entries[m.source].id
        );
        let room = width.saturating_sub(head.chars().count() + 1);
        let style = if only_here { fg(WARNING) } else { Style::default() };
        let mut spans = vec![Span::styled(head, style)];
        if m.replaced_by.is_some() {
            spans.push(Span::styled("(edited) ", fg(BORDER_ACCENT)));
        }
        spans.push(Span::styled(one_line(&text, room.max(8)), fg(MUTED)));
        out.push(Line::from(spans));
    }
    out
}

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    f.render_widget(Clear, area);
    let Some(sel) = app.selected() else { return };
    let proj = app.projection_for(sel);
    let mark = app.context_mark.filter(|m| *m != sel);
    let s = app.session.clone();
    let title = |leaf: usize, p: &Projection| {
        let msgs: Vec<&ContextMessage> = p.messages().collect();
        let t = context::estimate_context_tokens(&s, &msgs);
        format!(
            " context at {} · {} messages · {} tokens (est. sum {}) ",
            s.entries[leaf].id,
            msgs.len(),
            crate::engine::report::num(t.tokens),
            msgs.iter().map(|m| m.est_tokens).sum::<u64>()
        )
    };
    let header = Line::from(Span::styled(
        format!(" {:<17}{:>6} {:>6} {:<8} text", "role", "est", "exact", "entry"),
        fg(DIM),
    ));
    let exact = app.exact_for_selection.clone();
    let areas: Vec<Rect> = if mark.is_some() {
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .split(area)
            .to_vec()
    } else {
        vec![area]
    };
    let mut panes: Vec<(usize, Projection)> = vec![(sel, proj)];
    if let Some(m) = mark {
        panes.insert(0, (m, app.projection_for(m)));
    }
    let keysets: Vec<HashSet<Key>> = panes.iter().map(|(_, p)| p.messages().map(key).collect()).collect();
    for (i, ((leaf, p), r)) in panes.iter().zip(areas.iter()).enumerate() {
        let other = if panes.len() > 1 { Some(&keysets[1 - i]) } else { None };
        let ex = if *leaf == sel { exact.as_deref() } else { None };
        let mut lines = vec![header.clone()];
        let body = column(app, p, other, ex, r.width as usize);
        let h = r.height.saturating_sub(3) as usize;
        app.context_scroll = app.context_scroll.min(body.len().saturating_sub(h));
        lines.extend(body.into_iter().skip(app.context_scroll).take(h));
        let mut t = title(*leaf, p);
        if panes.len() > 1 {
            let only = p.messages().filter(|m| !other.unwrap().contains(&key(m))).count();
            t.push_str(&format!("· {only} only here (+) "));
        }
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(fg(ACCENT))
            .title(Span::styled(t, title_style()));
        f.render_widget(Paragraph::new(lines).block(block), *r);
    }
}

fn title_style() -> Style {
    super::theme::title()
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{app_for, render, shared};
    use crossterm::event::{KeyCode, KeyEvent};

    #[test]
    fn context_view_120x40() {
        let mut a = app_for(&shared("pi-0.87.1/context-edits.jsonl"));
        a.on_key(KeyEvent::from(KeyCode::Char('v')));
        insta::assert_snapshot!(render(&mut a, 120, 40));
    }

    #[test]
    fn context_diff_of_two_leaves() {
        // The side branch (line 27) before the edits, against the final leaf.
        let mut a = app_for(&shared("pi-0.87.1/context-edits.jsonl"));
        let s = a.session.clone();
        a.view.set_filter(&s, crate::engine::tree_view::FilterMode::All);
        a.view.select_entry(&s, 25);
        a.on_selection_changed();
        a.on_key(KeyEvent::from(KeyCode::Char('m')));
        a.view.select_entry(&s, s.leaf().unwrap());
        a.on_selection_changed();
        a.run_jobs_now();
        a.on_key(KeyEvent::from(KeyCode::Char('v')));
        insta::assert_snapshot!(render(&mut a, 160, 40));
    }
}
