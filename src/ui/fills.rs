//! What fills the context (what users ask Pi's `/context` for): the messages the model gets at
//! the selection, totalled by role, by tool, by file read, and the largest ones, each with
//! Pi's estimate and the exact count. Built in a job; the largest rows are a list to jump from.

use super::theme::*;
use crate::engine::edit::prune::thousands;
use crate::engine::load::session::Session;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

mod data;
mod state;
pub use data::*;
pub use state::*;

fn table(lines: &mut Vec<Line<'static>>, title: &str, rows: &[FillRow], total: u64, width: usize) {
    lines.push(Line::from(Span::styled(title.to_string(), title_style())));
    if rows.is_empty() {
        lines.push(Line::from(Span::styled("  (none)", fg(MUTED))));
    }
    let label_w = width.saturating_sub(40).clamp(12, 60);
    for r in rows {
        let share = (r.est * 100).checked_div(total).unwrap_or(0);
        let label: String = r.label.chars().take(label_w).collect();
        lines.push(Line::raw(format!(
            "  {label:<label_w$} {:>5} {:>10} {:>10} {share:>3}%",
            r.count,
            thousands(r.est),
            thousands(r.exact)
        )));
    }
}

fn title_style() -> Style {
    fg(ACCENT).add_modifier(Modifier::BOLD)
}

/// The overlay: the totals, then the largest messages with the cursor on one of them.
pub fn draw(f: &mut Frame, area: Rect, s: &Session, data: Option<&FillsData>, cursor: usize, scroll: usize) {
    f.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(BORDER_ACCENT))
        .title(Span::styled(" what fills the context ", title_style()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(d) = data else {
        f.render_widget(Paragraph::new(Span::styled(" counting…", fg(MUTED))), inner);
        return;
    };
    let w = inner.width as usize;
    let mut lines: Vec<Line<'static>> = vec![Line::from(vec![Span::raw(format!(
        " {} messages at {} · {} tokens by Pi's per-message estimate · {} exact ({})",
        d.messages,
        s.entries[d.leaf].id,
        thousands(d.est),
        thousands(d.exact),
        d.encoding
    ))])];
    if d.images > 0 {
        for text in [
            format!(
                " {} image{}: each counted as {} tokens in both columns, Pi's estimate;",
                d.images,
                if d.images == 1 { "" } else { "s" },
                thousands(crate::engine::view::tokens::IMAGE_TOKENS)
            ),
            " a tokenizer reads no image, and the provider's price depends on its size".to_string(),
        ] {
            lines.push(Line::from(Span::styled(text, fg(MUTED))));
        }
    }
    let label_w = w.saturating_sub(40).clamp(12, 60);
    lines.push(Line::from(Span::styled(
        format!(
            "  {:<label_w$} {:>5} {:>10} {:>10} {:>4}",
            "", "msgs", "estimate", "exact", "share"
        ),
        fg(MUTED),
    )));
    table(&mut lines, " by role", &d.by_role, d.est, w);
    table(&mut lines, " by tool (results)", &d.by_tool, d.est, w);
    table(&mut lines, " by file read", &d.by_file, d.est, w);
    lines.push(Line::from(Span::styled(
        " the largest messages (enter: go to the entry)",
        title_style(),
    )));
    let head = lines.len();
    for (k, l) in d.largest.iter().enumerate() {
        let e = &s.entries[l.entry];
        let text = format!(
            "  {:<10} line {:<8} {:<14} {:>10} {:>10}",
            e.id.to_string(),
            e.line,
            l.what,
            thousands(l.est),
            thousands(l.exact)
        );
        let st = if k == cursor {
            Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(text, st)));
    }
    // Keep the cursor's row on screen: scroll only the list part when it does not fit.
    let h = inner.height as usize;
    let skip = if head + cursor + 1 > h + scroll {
        head + cursor + 1 - h
    } else {
        scroll.min(lines.len())
    };
    let shown: Vec<Line> = lines.into_iter().skip(skip).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

impl crate::ui::component::Drawable for state::FillsState {
    type View<'a> = &'a crate::engine::load::session::Session;
    fn draw(&self, f: &mut ratatui::Frame, area: ratatui::layout::Rect, s: Self::View<'_>) {
        draw(f, area, s, self.data.as_deref(), self.cursor, self.scroll)
    }
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{app_for, ch, key, own, render};
    use crossterm::event::KeyCode;

    /// Issue 21, item 9: a screenshot's message counted 7 tokens exact beside Pi's 1,207; each
    /// image now counts as Pi's estimate in the exact column too, and the panel says so.
    #[test]
    fn images_count_as_pis_estimate_and_the_panel_says_how() {
        let mut a = app_for(&own("tour.jsonl"));
        // At the read of the screenshot (the compaction later summarizes it away).
        a.select_entry_ref("9c91a134");
        a.handle_key(ch('w'));
        a.run_jobs_now();
        let d = a.fills_data().unwrap().clone();
        assert!(d.images >= 1, "tour.jsonl has a screenshot");
        let s = a.doc.session.clone();
        let with_image = d
            .largest
            .iter()
            .find(|l| {
                s.entries[l.entry]
                    .message()
                    .is_some_and(|m| s.measures(m).content.images > 0)
            })
            .expect("the image's message is among the largest");
        assert!(
            with_image.exact >= crate::engine::view::tokens::IMAGE_TOKENS,
            "{with_image:?}"
        );
        let screen = render(&mut a, 100, 40);
        assert!(
            screen.contains("each counted as 1,200 tokens in both columns"),
            "{screen}"
        );
        insta::assert_snapshot!(screen);
    }

    #[test]
    fn what_fills_the_context_120x40() {
        let mut a = app_for(&own("long.jsonl"));
        a.handle_key(ch('w'));
        a.run_jobs_now();
        insta::assert_snapshot!(render(&mut a, 120, 40));
        // Enter goes to the largest message's entry.
        let first = a.fills_data().unwrap().largest[0].entry;
        a.handle_key(key(KeyCode::Enter));
        assert_eq!(a.selected(), Some(first));
    }
}
