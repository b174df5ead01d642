//! The prune plan as a list (r in the prune preview): every output the plan prunes or
//! distills, with its entry, tool, key argument and tokens before → after, scrollable, with
//! items left out before writing. Its plan does not follow the selection.

use super::action::Action;
use super::component::{self, Effect};
use super::mode::Mode;
use super::theme::*;
use crate::engine::edit::prune::{self, thousands};
use crate::engine::load::session::Session;
use crate::engine::view::text_width::visible_width;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use std::sync::Arc;

/// The prune plan under review: its leaf and items stay as they were when it opened, whatever
/// the selection does; items can be left out before writing.
#[derive(Debug, Clone)]
pub struct PlanList {
    pub plan: Arc<crate::engine::edit::prune::Plan>,
    /// Indices into `plan.items` that are written (protected items are listed, not rows).
    pub rows: Vec<usize>,
    pub cursor: usize,
    pub left_out: std::collections::HashSet<usize>,
}

impl PlanList {}

fn cut(s: &str, w: usize) -> String {
    if visible_width(s) <= w {
        return format!("{s:<w$}");
    }
    let mut out = String::new();
    for c in s.chars() {
        if visible_width(&out) + 2 > w {
            break;
        }
        out.push(c);
    }
    out.push('…');
    format!("{out:<w$}")
}

/// One row of the list, `width` wide.
pub fn row_text(s: &Session, l: &PlanList, k: usize, width: usize) -> String {
    let item = &l.plan.items[k];
    let e = &s.entries[item.entry];
    let mark = if l.left_out.contains(&k) { "[ ]" } else { "[x]" };
    let tool = item.tool.clone().unwrap_or_else(|| item.role.as_str().to_string());
    let arg = item
        .key_arg
        .as_ref()
        .map(|(k, v)| format!("{k}={v}"))
        .unwrap_or_default();
    let figures = format!(
        "{:>8} → {:<8} {}",
        thousands(item.tokens_before),
        thousands(item.tokens_after),
        item.change.name()
    );
    let fixed = 3 + 1 + 10 + 1 + 8 + 1 + 10 + 1 + visible_width(&figures) + 2;
    let arg_w = width.saturating_sub(fixed).max(8);
    format!(
        " {mark} {:<10} {:<8} {} {} {figures}",
        e.id.to_string(),
        format!("line {}", e.line),
        cut(&tool, 10),
        cut(&arg, arg_w)
    )
}

impl crate::ui::component::Drawable for PlanList {
    type View<'a> = &'a Session;
    fn draw(&self, f: &mut Frame, area: Rect, s: &Session) {
        draw(f, area, s, self)
    }
}

pub fn draw(f: &mut Frame, area: Rect, s: &Session, l: &PlanList) {
    f.render_widget(Clear, area);
    let plan = l.plan.without(&l.left_out);
    let n = plan.edits().count();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(BORDER_ACCENT))
        .title(Span::styled(
            format!(" prune plan at {} · {} ", s.entries[l.plan.leaf].id, l.plan.what),
            fg(ACCENT).add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let w = inner.width as usize;
    let mut lines = vec![
        Line::from(Span::raw(format!(
            " {n} edit{} of {}{} · by estimate {} → {} ({})",
            if n == 1 { "" } else { "s" },
            l.rows.len(),
            if l.left_out.is_empty() {
                String::new()
            } else {
                format!(", {} left out", l.left_out.len())
            },
            thousands(plan.estimate_now()),
            thousands(plan.tokens_after),
            prune::signed_tokens(plan.change())
        ))),
        Line::from(Span::styled(
            " this plan stays as it was when the list opened; space leaves an item out, a writes the rest",
            fg(MUTED),
        )),
    ];
    let head = lines.len();
    let room = (inner.height as usize).saturating_sub(head);
    let skip = (l.cursor + 1).saturating_sub(room);
    for (j, &k) in l.rows.iter().enumerate().skip(skip).take(room) {
        let mut st = if l.left_out.contains(&k) {
            fg(DIM)
        } else {
            Style::default()
        };
        if j == l.cursor {
            st = st.bg(SELECTED_BG).add_modifier(Modifier::BOLD);
        }
        let text = row_text(s, l, k, w);
        // The cursor shows without colour too.
        let text = if j == l.cursor {
            format!("›{}", &text[1..])
        } else {
            text
        };
        lines.push(Line::from(Span::styled(text, st)));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

impl crate::ui::component::Component for PlanList {
    type Lent<'a> = usize;
    const NAME: &'static str = "prune plan list";

    /// A key in the list: move, leave an item out or take it back (Space), go to an item's
    /// entry (Enter), write what is left (a), close. `page`: rows a page moves.
    fn update(
        &mut self,
        action: &crate::ui::action::Action,
        page: Self::Lent<'_>,
    ) -> Vec<crate::ui::component::Effect> {
        let n = self.rows.len();
        let last = n.saturating_sub(1);
        match action {
            Action::Up => self.cursor = self.cursor.saturating_sub(1),
            Action::Down => self.cursor = (self.cursor + 1).min(last),
            Action::PageUp => self.cursor = self.cursor.saturating_sub(page),
            Action::PageDown => self.cursor = (self.cursor + page).min(last),
            Action::Toggle => {
                let Some(&k) = self.rows.get(self.cursor) else {
                    return component::ignored();
                };
                if !self.left_out.remove(&k) {
                    self.left_out.insert(k);
                }
                self.cursor = (self.cursor + 1).min(last);
            }
            Action::Select => {
                return match self.rows.get(self.cursor) {
                    Some(&k) => vec![Effect::Reveal(self.plan.items[k].entry)],
                    None => component::ignored(),
                };
            }
            Action::ApplyPrune => {
                let plan = self.plan.without(&self.left_out);
                let left_out = self.left_out.len();
                return if plan.is_empty() {
                    vec![
                        Effect::Close,
                        Effect::Say("every item was left out: nothing to write".into()),
                    ]
                } else {
                    vec![
                        Effect::Close,
                        Effect::ConfirmPrune {
                            plan: Box::new(plan),
                            left_out,
                        },
                    ]
                };
            }
            Action::Close => return vec![Effect::Close],
            Action::OpenHelp => return vec![Effect::Help(Mode::PrunePlan)],
            _ => return component::ignored(),
        }
        component::changed()
    }
}
