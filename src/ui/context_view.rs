//! "What the model sees": the message list at the selected entry (after compaction, context
//! edits and branch summaries) with Pi's estimate, the exact count and the source entry, and a
//! cursor (Enter goes to the entry). Messages a context edit omits are shown struck through.
//! With a marked second entry, the two lists are aligned as a diff: `−` only at the mark,
//! `+` only at the selection, and the token difference in the title.
//!
//! `build` runs as a job (it projects and counts); `draw` only reads what it made.

use super::theme::*;
use crate::engine::units::{Basis, tokens as num};
use crate::engine::view::tree_view::one_line;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

mod data;
mod state;
pub use data::*;
pub use state::*;

fn signed(d: i64) -> String {
    crate::engine::units::signed(d)
}

fn cell(r: Option<&MessageRow>, sign: &str, width: usize, cursor: bool) -> Line<'static> {
    let gutter = Span::styled(if cursor { "›" } else { " " }, fg(ACCENT));
    let Some(r) = r else {
        let mut line = Line::from(vec![gutter, Span::styled(sign.to_string(), fg(DIM))]);
        if cursor {
            line = line.style(Style::default().bg(SELECTED_BG));
        }
        return line;
    };
    let ex = r.exact.map(|n| format!("{n:>6}")).unwrap_or_else(|| "     ·".into());
    let head = format!("{sign}{:<17}{:>6} {ex} {:<8} ", r.role, r.est, r.source_id);
    let room = width.saturating_sub(head.chars().count() + 2);
    let mut style = match sign {
        "+" => fg(SUCCESS),
        "−" => fg(ERROR),
        _ => Style::default(),
    };
    if r.omitted_by.is_some() {
        style = style.add_modifier(Modifier::CROSSED_OUT).fg(DIM);
    }
    let mut spans = vec![gutter, Span::styled(head, style)];
    if let Some(e) = &r.omitted_by {
        spans.push(Span::styled(format!("(omitted by {e}) "), fg(BORDER_ACCENT)));
    } else if r.edited {
        spans.push(Span::styled("(edited) ", fg(BORDER_ACCENT)));
    }
    let text_style = if r.omitted_by.is_some() {
        fg(DIM).add_modifier(Modifier::CROSSED_OUT)
    } else {
        fg(MUTED)
    };
    spans.push(Span::styled(one_line(&r.text, room.max(8)), text_style));
    let mut line = Line::from(spans);
    if cursor {
        line = line.style(Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD));
    }
    line
}

/// What a pane's title says: the difference first on the selection's side of a comparison
/// (it is what a comparison is for), then the totals.
enum Side {
    Alone,
    Mark { only: usize },
    Selection { only: usize, d_est: i64, d_exact: i64 },
}

fn title(p: &Pane, side: Side) -> String {
    let n = p.rows.iter().filter(|r| r.omitted_by.is_none()).count();
    // The live pane (what the Pi package sends) says so, with the policy's figures.
    let (kind, alone, totals) = match &p.live {
        Some(r) => (
            "live ",
            format!(
                "live (Pi package, {}{})",
                r.policy,
                r.zone.map(|z| format!(", {}", z.name())).unwrap_or_default()
            ),
            format!(
                "{n} messages · {} {} of {} tokens ({}; the rows' sum) · turns {}/{} · tab: session",
                Basis::Sent.label(),
                num(p.est_sum as f64),
                num(r.tokens_full as f64),
                Basis::Estimate.label(),
                r.turns_kept,
                r.turns_total
            ),
        ),
        None => (
            "",
            "context".to_string(),
            format!(
                "{n} messages · {} tokens ({}, the rows' sum) · {} {} · {} {} · tab: live",
                num(p.est_sum as f64),
                Basis::Estimate.label(),
                Basis::Pi.label(),
                num(p.tokens.tokens),
                Basis::Exact.label(),
                num(p.exact_sum as f64),
            ),
        ),
    };
    match side {
        Side::Alone => format!(" {alone} at {} · {totals} ", p.leaf_id),
        Side::Mark { only } => format!(" {kind}mark {}: {only} only here · {totals} ", p.leaf_id),
        Side::Selection { only, d_est, d_exact } => format!(
            " {kind}{}: {only} only here · {} estimate / {} exact vs. the mark · {totals} ",
            p.leaf_id,
            signed(d_est),
            signed(d_exact)
        ),
    }
}

/// Draw the view: `data` as the last job made it (`None`: still counting), the cursor row and
/// the first row shown; the live pane's bill line when it has come.
pub fn draw(
    f: &mut Frame,
    area: Rect,
    data: Option<&ContextData>,
    cursor: usize,
    scroll: usize,
    progress: Option<(usize, usize)>,
    bill: Option<&str>,
) {
    f.render_widget(Clear, area);
    let Some(data) = data else {
        let block = Block::default().borders(Borders::ALL).border_style(fg(ACCENT));
        let text = match progress {
            Some((done, total)) if total > 0 => format!(
                " counting what the model sees: {} of {} messages counted ({}%) · keys work meanwhile; v or esc closes",
                crate::engine::edit::prune::thousands(done as u64),
                crate::engine::edit::prune::thousands(total as u64),
                done * 100 / total
            ),
            _ => " counting what the model sees…".to_string(),
        };
        f.render_widget(Paragraph::new(Span::styled(text, fg(MUTED))).block(block), area);
        return;
    };
    let header = Line::from(Span::styled(
        format!("  {:<17}{:>6} {:>6} {:<8} text", "role", "est", "exact", "entry"),
        fg(DIM),
    ));
    let block = |t: String| {
        Block::default()
            .borders(Borders::ALL)
            .border_style(fg(ACCENT))
            .title(Span::styled(t, title_style()))
    };
    let h = area.height.saturating_sub(3) as usize;
    let rows = data.aligned.iter().enumerate().skip(scroll).take(h);
    match &data.marked {
        None => {
            let w = area.width as usize;
            let mut lines = vec![header];
            for (k, &(_, r)) in rows {
                lines.push(cell(r.map(|r| &data.selected.rows[r]), " ", w, k == cursor));
            }
            let mut b = block(title(&data.selected, Side::Alone));
            if let (Some(bill), Some(_)) = (bill, &data.selected.live) {
                b = b.title_bottom(Span::styled(bill.to_string(), fg(MUTED)));
            }
            f.render_widget(Paragraph::new(lines).block(b), area);
        }
        Some(m) => {
            let halves = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).split(area);
            let (mut left, mut right) = (vec![header.clone()], vec![header]);
            for (k, &(l, r)) in rows {
                let sign = |mine: Option<usize>, other: Option<usize>, s: &'static str| {
                    if mine.is_some() && other.is_none() { s } else { " " }
                };
                left.push(cell(
                    l.map(|l| &m.rows[l]),
                    sign(l, r, "−"),
                    halves[0].width as usize,
                    k == cursor,
                ));
                right.push(cell(
                    r.map(|r| &data.selected.rows[r]),
                    sign(r, l, "+"),
                    halves[1].width as usize,
                    k == cursor,
                ));
            }
            let only =
                |mine: fn(&(Option<usize>, Option<usize>)) -> bool| data.aligned.iter().filter(|x| mine(x)).count();
            let only_left = only(|x| x.0.is_some() && x.1.is_none());
            let only_right = only(|x| x.1.is_some() && x.0.is_none());
            let d_est = data.selected.est_sum as i64 - m.est_sum as i64;
            let d_exact = data.selected.exact_sum as i64 - m.exact_sum as i64;
            f.render_widget(
                Paragraph::new(left).block(block(title(m, Side::Mark { only: only_left }))),
                halves[0],
            );
            let side = Side::Selection {
                only: only_right,
                d_est,
                d_exact,
            };
            f.render_widget(
                Paragraph::new(right).block(block(title(&data.selected, side))),
                halves[1],
            );
        }
    }
}

fn title_style() -> Style {
    super::theme::title()
}

impl crate::ui::component::Drawable for state::ContextState {
    type View<'a> = ();
    fn draw(&self, f: &mut ratatui::Frame, area: ratatui::layout::Rect, _: ()) {
        draw(
            f,
            area,
            self.data.as_deref(),
            self.cursor,
            self.scroll,
            self.progress,
            self.bill.as_deref(),
        )
    }
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{app_for, own, render};
    use crossterm::event::{KeyCode, KeyEvent};

    #[test]
    fn context_view_120x40() {
        let mut a = app_for(&own("tour.jsonl"));
        a.handle_key(KeyEvent::from(KeyCode::Char('v')));
        insta::assert_snapshot!(render(&mut a, 120, 40));
    }

    #[test]
    fn live_context_view_120x40() {
        // Tab: what bonsai's Pi package sends at the leaf of a long session (zones: the
        // compaction summary as written, the packet, the turns since the last step), and at
        // the bottom the session's bill replayed with and without the package.
        let mut a = app_for(&own("long.jsonl"));
        a.handle_key(KeyEvent::from(KeyCode::Char('v')));
        a.handle_key(KeyEvent::from(KeyCode::Tab));
        a.run_jobs_now();
        insta::assert_snapshot!(render(&mut a, 120, 40));
    }

    #[test]
    fn context_diff_of_two_leaves() {
        // The side branch (line 27) before the edits, against the final leaf: nothing in
        // common (the final leaf is past a compaction), so all − on the left, all + on the right.
        let mut a = app_for(&own("tour.jsonl"));
        let s = a.doc.session.clone();
        a.tree
            .view
            .set_filter(&s, crate::engine::view::tree_view::FilterMode::All);
        a.tree.view.select_entry(&s, 25);
        a.selection_changed();
        a.handle_key(KeyEvent::from(KeyCode::Char('m')));
        a.tree.view.select_entry(&s, s.leaf().unwrap());
        a.selection_changed();
        a.run_jobs_now();
        a.handle_key(KeyEvent::from(KeyCode::Char('v')));
        insta::assert_snapshot!(render(&mut a, 160, 40));
    }
}
