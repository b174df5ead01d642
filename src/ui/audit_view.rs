//! The audit of a summary (`a` on a compaction or branch-summary row): the kinds with kept
//! and total, the lost items under their kind (Enter goes to the entry each came from), the
//! summary beside them with the lines that keep an item marked. Space chooses a lost item,
//! `A` all of them; `w` gives the chosen back as an amended summary (confirmed first).
//! Audited in a job (`AuditJob`): a long compaction replaced tens of thousands of entries.

use super::theme::*;
use crate::engine::compaction::audit::{self, Audit, Kind, Specific};
use crate::engine::load::session::Session;
use crate::engine::units;
use crate::ui::action::Action;
use crate::ui::component::{self, Effect};
use crate::ui::mode::Mode;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use std::collections::BTreeSet;

/// What the job found: the audit, its lost items in the listing's order (by kind).
#[derive(Debug)]
pub struct AuditData {
    pub generation: u64,
    pub audit: Audit,
    pub lost: Vec<Specific>,
    /// A later compaction on the leaf's path replaced this compaction's summary (and carries
    /// it): giving back belongs there.
    pub superseded_by: Option<usize>,
}

impl AuditData {
    pub fn build(s: &Session, generation: u64, entry: usize) -> Option<AuditData> {
        let audit = audit::audit(s, entry)?;
        let lost = Kind::ALL
            .iter()
            .flat_map(|k| audit.lost().filter(|sp| sp.kind == *k).cloned().collect::<Vec<_>>())
            .collect();
        let superseded_by = match (&s.entries[entry].kind, s.leaf()) {
            (crate::engine::load::entry::Kind::Compaction(_), Some(leaf)) => {
                let path = s.path_to(leaf);
                path.iter()
                    .position(|&i| i == entry)
                    .and_then(|at| path[at + 1..].iter().copied().find(|&i| s.entries[i].is_compaction()))
            }
            _ => None,
        };
        Some(AuditData {
            generation,
            audit,
            lost,
            superseded_by,
        })
    }
}

/// The view's own state: the audit, the cursor over the lost items, the chosen ones.
#[derive(Default)]
pub struct AuditState {
    pub data: Option<Box<AuditData>>,
    /// The summary audited (the view's title says it while the job runs).
    pub entry: Option<usize>,
    pub cursor: usize,
    pub chosen: BTreeSet<usize>,
    pub generation: u64,
}

impl AuditState {
    /// Open on `entry` for a new job of `generation`.
    pub fn open(&mut self, entry: usize) -> u64 {
        self.generation += 1;
        *self = AuditState {
            entry: Some(entry),
            generation: self.generation,
            ..AuditState::default()
        };
        self.generation
    }

    pub fn chosen_items(&self) -> Vec<&Specific> {
        let Some(d) = &self.data else { return vec![] };
        self.chosen.iter().filter_map(|&k| d.lost.get(k)).collect()
    }
}

impl component::Component for AuditState {
    type Lent<'a> = ();
    const NAME: &'static str = "audit view";

    fn update(&mut self, action: &Action, (): Self::Lent<'_>) -> Vec<Effect> {
        let n = self.data.as_ref().map_or(0, |d| d.lost.len());
        let c = &mut self.cursor;
        match action {
            Action::Up => *c = c.saturating_sub(1),
            Action::Down => *c = (*c + 1).min(n.saturating_sub(1)),
            Action::PageUp => *c = c.saturating_sub(10),
            Action::PageDown => *c = (*c + 10).min(n.saturating_sub(1)),
            Action::Home => *c = 0,
            Action::End => *c = n.saturating_sub(1),
            Action::Toggle if n > 0 => {
                if !self.chosen.remove(c) {
                    self.chosen.insert(*c);
                }
                *c = (*c + 1).min(n - 1);
            }
            Action::ToggleAll if n > 0 => {
                if self.chosen.len() == n {
                    self.chosen.clear();
                } else {
                    self.chosen = (0..n).collect();
                }
            }
            Action::Select => {
                return match self.data.as_ref().and_then(|d| d.lost.get(self.cursor)) {
                    Some(sp) => vec![Effect::Reveal(sp.entry)],
                    None => component::ignored(),
                };
            }
            Action::AcceptWrite => {
                let Some(d) = &self.data else {
                    return component::ignored();
                };
                if d.superseded_by.is_some() {
                    return vec![Effect::Say(
                        "a later compaction replaced this summary: give the items back to it (it carries this one's)"
                            .into(),
                    )];
                }
                if self.chosen.is_empty() {
                    return vec![Effect::Say(
                        "nothing chosen: space chooses a lost item, A all of them".into(),
                    )];
                }
                return vec![Effect::GiveBack {
                    of: d.audit.entry,
                    items: self.chosen_items().into_iter().cloned().collect(),
                }];
            }
            Action::Close => return vec![Effect::Close],
            Action::OpenHelp => return vec![Effect::Help(Mode::Audit)],
            _ => return component::ignored(),
        }
        component::changed()
    }
}

fn title_style() -> Style {
    fg(ACCENT).add_modifier(Modifier::BOLD)
}

/// The left column: the headline, the score by kind, the lost items under their kind.
fn list_lines(s: &Session, st: &AuditState, d: &AuditData, width: usize) -> (Vec<Line<'static>>, usize) {
    let a = &d.audit;
    let mut lines = vec![
        Line::from(Span::styled(format!(" {}", a.headline()), title_style())),
        Line::from(Span::styled(
            format!(
                " replaced {} · {} chosen",
                units::plural(a.summarized_entries as u64, "entry", "entries"),
                st.chosen.len()
            ),
            fg(MUTED),
        )),
    ];
    for k in Kind::ALL {
        let (kept, total) = a.score(k);
        if total > 0 {
            let style = if kept == total { fg(SUCCESS) } else { Style::default() };
            lines.push(Line::from(Span::styled(
                format!("   {:<15} {kept}/{total} kept", k.name()),
                style,
            )));
        }
    }
    if let Some(later) = d.superseded_by {
        lines.push(Line::from(Span::styled(
            format!(
                " replaced by {}, which carries it: give back there",
                s.entries[later].id
            ),
            fg(WARNING),
        )));
    }
    if !a.invented.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(" named but never in what it replaced: {}", a.invented.join(", ")),
            fg(WARNING),
        )));
    }
    let mut cursor_line = 0;
    let mut kind: Option<Kind> = None;
    for (i, sp) in d.lost.iter().enumerate() {
        if kind != Some(sp.kind) {
            kind = Some(sp.kind);
            lines.push(Line::from(Span::styled(
                format!(" lost {}", sp.kind.name()),
                title_style(),
            )));
        }
        let mark = if st.chosen.contains(&i) { "[x]" } else { "[ ]" };
        let from = format!("  ← {}", s.entries[sp.entry].id);
        let room = width.saturating_sub(6 + from.chars().count()).max(10);
        let text: String = sp.line().chars().take(room).collect();
        let style = if i == st.cursor {
            Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        if i == st.cursor {
            cursor_line = lines.len();
        }
        // The cursor is a mark too, not a colour alone (NO_COLOR, screen readers).
        let at = if i == st.cursor { '›' } else { ' ' };
        lines.push(Line::from(vec![
            Span::styled(format!("{at}{mark} {text}"), style),
            Span::styled(from, fg(MUTED)),
        ]));
    }
    if d.lost.is_empty() {
        lines.push(Line::from(Span::styled(" nothing lost", fg(SUCCESS))));
    }
    (lines, cursor_line)
}

/// The right column: the summary, each line that keeps an item marked with ✓.
fn summary_lines(d: &AuditData, cwd: &str) -> Vec<Line<'static>> {
    let kept: Vec<&Specific> = d.audit.kept().collect();
    d.audit
        .summary
        .lines()
        .map(|l| {
            let r = audit::Reader::new(l, cwd);
            let keeps = kept.iter().any(|sp| r.keeps(sp));
            if keeps {
                Line::from(vec![Span::styled("✓ ", fg(SUCCESS)), Span::raw(l.to_string())])
            } else {
                Line::from(vec![Span::raw("  "), Span::raw(l.to_string())])
            }
        })
        .collect()
}

impl component::Drawable for AuditState {
    type View<'a> = &'a Session;
    fn draw(&self, f: &mut Frame, area: Rect, s: &Session) {
        f.render_widget(Clear, area);
        let what = self
            .entry
            .map(|e| {
                let kind = match s.entries[e].kind.type_name() {
                    "compaction" => "compaction",
                    _ => "branch summary",
                };
                format!(" audit of the {kind} {} ", s.entries[e].id)
            })
            .unwrap_or_else(|| " audit ".into());
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(fg(BORDER_ACCENT))
            .title(Span::styled(what, title_style()));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let Some(d) = &self.data else {
            f.render_widget(Paragraph::new(Span::styled(" auditing…", fg(MUTED))), inner);
            return;
        };
        let [left, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(inner);
        let (lines, cursor_line) = list_lines(s, self, d, left.width as usize);
        let h = left.height as usize;
        let skip = (cursor_line + 1).saturating_sub(h);
        f.render_widget(Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()), left);
        let cwd = s.header.cwd.clone().unwrap_or_default();
        let summary = Paragraph::new(summary_lines(d, &cwd)).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::LEFT)
                .border_style(fg(DIM))
                .title(Span::styled(" the summary (✓ keeps an item) ", fg(MUTED))),
        );
        f.render_widget(summary, right);
    }
}
