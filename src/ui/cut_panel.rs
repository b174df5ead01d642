//! The cut-preview panel: what Pi's next compaction would summarize, keep, and (for a split
//! turn) summarize as a turn prefix.

use super::selection::SelectionState;
use super::theme::*;
use crate::engine::compaction::serialize::list_strings;
use crate::engine::units::{Basis, tokens as num};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

/// The cut panel draws the selection's cut, lent the session and whether colour is off.
impl crate::ui::component::Drawable for SelectionState {
    type View<'a> = (&'a crate::engine::load::session::Session, bool);
    fn draw(&self, f: &mut Frame, area: Rect, (s, no_color): Self::View<'_>) {
        draw(f, area, self, s, no_color)
    }
}

pub fn draw(
    f: &mut Frame,
    area: Rect,
    sel: &SelectionState,
    s: &crate::engine::load::session::Session,
    no_color: bool,
) {
    let block = Block::default()
        .borders(Borders::LEFT | Borders::TOP)
        .border_style(fg(WARNING))
        .title(Span::styled(
            format!(
                " cut preview · keepRecentTokens {} (+/- 500 · # type · 0 setting) ",
                sel.keep_recent
            ),
            fg(WARNING),
        ));
    let id = |i: usize| format!("{} (line {})", s.entries[i].id, s.entries[i].line);
    let mut lines: Vec<Line> = Vec::new();
    match &sel.cut {
        None => lines.push(Line::raw("computing the cut…")),
        Some(Err(e)) => lines.push(Line::from(Span::styled(e.reason().to_string(), fg(MUTED)))),
        Some(Ok(p)) => {
            let kept = p.kept_tokens();
            let budget = p.settings.history_summary_limit();
            // Without colour (NO_COLOR) each swatch names the symbol the tree rows carry.
            let sw = |c, t: String| {
                let t = match (no_color, t.trim()) {
                    (true, "summarized") => " S summarized ".to_string(),
                    (true, "turn prefix") => " P turn prefix ".to_string(),
                    (true, "kept") => " K kept ".to_string(),
                    (true, "boundary") => " B boundary (· behind it) ".to_string(),
                    _ => t,
                };
                Span::styled(t, Style::default().bg(c))
            };
            lines.push(Line::from(vec![
                sw(SUMMARIZED, " summarized ".into()),
                Span::raw(format!(
                    " {} messages, ~{} tokens",
                    p.messages_to_summarize.len(),
                    num(p.summarized_tokens() as f64)
                )),
            ]));
            if p.is_split_turn {
                lines.push(Line::from(vec![
                    sw(TURN_PREFIX, " turn prefix ".into()),
                    Span::raw(format!(
                        " {} messages, ~{} tokens, summarized on its own (split turn from {})",
                        p.turn_prefix_messages.len(),
                        num(p.turn_prefix_tokens() as f64),
                        p.turn_start_entry().map(id).unwrap_or_default()
                    )),
                ]));
            }
            lines.push(Line::from(vec![
                sw(KEPT, " kept ".into()),
                Span::raw(format!(
                    " from {}, ~{} tokens",
                    id(p.first_kept_entry),
                    num(kept as f64)
                )),
            ]));
            if let Some(b) = p.previous_compaction_entry() {
                lines.push(Line::from(vec![
                    sw(COMPACTED, " boundary ".into()),
                    Span::raw(format!(" previous compaction {} (its summary is updated)", id(b))),
                ]));
            }
            // Before and after on one basis, Pi's per-message estimate; Pi's own figure (the
            // one the compaction records) on a line of its own, labelled.
            // After is kept + a summary not written yet: its ceiling, Pi's budget, can exceed
            // all of "before", so the two are not added into one misleading figure.
            lines.push(Line::from(vec![
                Span::styled(format!("{} ", Basis::Estimate.label()), fg(MUTED)),
                Span::raw(num(p.estimate_before() as f64)),
                Span::styled(" → kept ", fg(MUTED)),
                Span::raw(num(kept as f64)),
                Span::styled(
                    format!(" + the summary (at most {}, Pi's budget)", num(budget as f64)),
                    fg(MUTED),
                ),
            ]));
            lines.push(Line::from(Span::styled(
                format!(
                    "{} now {}: the compaction records it as tokensBefore",
                    Basis::Pi.label(),
                    num(p.tokens_before)
                ),
                fg(DIM),
            )));
            let (r, m) = p.file_ops.lists();
            lines.push(Line::from(vec![
                Span::styled("read ", fg(MUTED)),
                Span::raw(list_strings(&r).join(", ")),
            ]));
            lines.push(Line::from(vec![
                Span::styled("modified ", fg(MUTED)),
                Span::raw(list_strings(&m).join(", ")),
            ]));
        }
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), area);
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{app_for, own, render};
    use crossterm::event::{KeyCode, KeyEvent};

    #[test]
    fn cut_preview_without_split_turn() {
        let mut a = app_for(&own("split-turn.jsonl"));
        a.selection.keep_recent = 2000;
        a.handle_key(KeyEvent::from(KeyCode::Char('c')));
        insta::assert_snapshot!(render(&mut a, 120, 40));
    }

    #[test]
    fn cut_preview_with_split_turn_80x24() {
        // long.jsonl at keepRecentTokens 2000 cuts inside its last turn (Pi's prepareCompaction).
        let mut a = app_for(&own("long.jsonl"));
        a.selection.keep_recent = 2000;
        a.handle_key(KeyEvent::from(KeyCode::Char('c')));
        let plan = a.selection.cut.as_ref().unwrap().as_ref().unwrap();
        assert!(plan.is_split_turn);
        insta::assert_snapshot!(render(&mut a, 80, 24));
    }

    #[test]
    fn plus_and_minus_move_the_cut_live() {
        let mut a = app_for(&own("long.jsonl"));
        a.selection.keep_recent = 2000;
        a.handle_key(KeyEvent::from(KeyCode::Char('c')));
        let first = a.selection.cut.as_ref().unwrap().as_ref().unwrap().first_kept_entry;
        for _ in 0..6 {
            a.handle_key(KeyEvent::from(KeyCode::Char('+')));
        }
        let later = a.selection.cut.as_ref().unwrap().as_ref().unwrap().first_kept_entry;
        assert!(later < first, "keeping more moves the cut earlier: {first} -> {later}");
        assert_eq!(a.selection.keep_recent, 2000 + 6 * 500);
    }
}
