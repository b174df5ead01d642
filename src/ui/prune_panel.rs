//! The pruning preview's panel: the policy and zone, what the plan prunes, distills, keeps
//! and hides with the tokens it saves, the context now and after, and why.

use super::prune_list::PlanList;
use super::theme::*;
use crate::engine::edit::prune::{self, Change, thousands};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use std::collections::HashMap;
use std::sync::Arc;

/// A change's colour in the tree and the panel, and its symbol without colour (NO_COLOR).
pub fn change_style(c: &Change) -> (Color, char) {
    match c {
        Change::Pruned => (SUMMARIZED, 'P'),
        Change::Distilled { .. } => (TURN_PREFIX, 'D'),
        Change::Hidden => (SUMMARIZED, 'H'),
        Change::Replaced | Change::Restored => (TURN_PREFIX, 'R'),
        Change::Protected => (KEPT, 'K'),
    }
}

/// The pruning policies Tab cycles through: name, policy, the extension's own rules.
pub const POLICIES: [(&str, crate::engine::edit::prune::Policy, bool); 5] = {
    use crate::engine::edit::prune::{Policy, Zone};
    [
        ("output", Policy::Output, false),
        ("output · pi-context-pruning", Policy::Output, true),
        // "by zone", not "zones": the live policy of that name leaves whole turns out of what
        // is sent, while these prune and distill tool output.
        ("by zone · the gauge's", Policy::Zones(None), false),
        ("by zone · yellow", Policy::Zones(Some(Zone::Yellow)), false),
        ("by zone · red", Policy::Zones(Some(Zone::Red)), false),
    ]
};

/// The pruning preview.
#[derive(Default)]
pub struct PruneState {
    /// Index into [`POLICIES`].
    pub policy: usize,
    pub force: bool,
    pub generation: u64,
    pub plan: Option<Arc<crate::engine::edit::prune::Plan>>,
    /// Entry → its item in the plan (for the tree rows).
    pub marks: HashMap<usize, usize>,
    /// `contextPruning.enabled` (Pi's extension's own switch).
    pub pruning_enabled: bool,
    /// The note that Pi older than 0.87 ignores context edits was shown.
    pub told_old_pi: bool,
    /// The red zone's compaction, to open once the plan's edits are written: keep from this
    /// entry (by id).
    pub compact_after: Option<String>,
    /// The plan as a list to review (r): fixed while it is open.
    pub list: Option<PlanList>,
}

impl PruneState {
    pub fn policy_name(&self) -> &'static str {
        POLICIES[self.policy % POLICIES.len()].0
    }
}

impl crate::ui::component::Drawable for PruneState {
    type View<'a> = (&'a crate::engine::load::session::Session, bool);
    fn draw(&self, f: &mut Frame, area: Rect, (s, no_color): Self::View<'_>) {
        draw(f, area, self, s, no_color)
    }
}

pub fn draw(f: &mut Frame, area: Rect, p: &PruneState, s: &crate::engine::load::session::Session, no_color: bool) {
    let block = Block::default()
        .borders(Borders::LEFT | Borders::TOP)
        .border_style(fg(WARNING))
        .title(Span::styled(
            format!(
                " prune preview · {}{} (tab policy · ! force · r review · a apply · u undo) ",
                p.policy_name(),
                if p.force { " · forced" } else { "" }
            ),
            fg(WARNING),
        ));
    let mut lines: Vec<Line> = Vec::new();
    match &p.plan {
        None => lines.push(Line::raw("planning…")),
        Some(plan) => {
            let count = |name: &str| plan.items.iter().filter(|i| i.change.name() == name).count();
            let mut kinds: Vec<Span> = Vec::new();
            for (c, label) in [
                (Change::Pruned, "pruned"),
                (Change::Distilled { elided: 0 }, "distilled"),
                (Change::Protected, "protected"),
            ] {
                let n = count(c.name());
                // "kept 0" beside "the newest 4 turns kept" read as a contradiction: the kept
                // count is the outputs the policy protects, shown when there are some.
                if c == Change::Protected && n == 0 {
                    continue;
                }
                let (bg, sym) = change_style(&c);
                let text = if no_color {
                    format!(" {sym} {label} ")
                } else {
                    format!(" {label} ")
                };
                kinds.push(Span::styled(text, Style::default().bg(bg)));
                kinds.push(Span::raw(format!(" {n}  ")));
            }
            lines.push(Line::from(kinds));
            if let Some(z) = plan.zone {
                lines.push(Line::from(vec![
                    Span::styled("zone ", fg(MUTED)),
                    Span::raw(z.name().to_string()),
                ]));
            }
            // One basis per line: Pi's per-message estimate before and after the edits (they
            // differ by exactly what the edits change), then Pi's own figure beside it, labelled.
            let n = plan.edits().count();
            if n == 0 {
                lines.push(Line::from(vec![
                    Span::styled("context ", fg(MUTED)),
                    Span::raw(thousands(plan.tokens_now.round() as u64)),
                    Span::styled(" (Pi's figure) · no edit to write", fg(MUTED)),
                ]));
            } else {
                lines.push(Line::from(vec![
                    Span::styled(format!("{} ", crate::engine::units::Basis::Estimate.label()), fg(MUTED)),
                    Span::raw(thousands(plan.estimate_now())),
                    Span::styled(" → ", fg(MUTED)),
                    Span::raw(thousands(plan.tokens_after)),
                    Span::styled(
                        format!(
                            " · {} by {n} edit{}",
                            prune::signed_tokens(plan.change()),
                            if n == 1 { "" } else { "s" },
                        ),
                        fg(MUTED),
                    ),
                ]));
                let pis = plan.tokens_now.round() as u64;
                if pis != plan.estimate_now() {
                    lines.push(Line::from(Span::styled(
                        format!(
                            "Pi's figure now {} (the last reply's usage); it counts the edits from its next call",
                            thousands(pis)
                        ),
                        fg(DIM),
                    )));
                }
            }
            if let Some(c) = plan.compact_from {
                lines.push(Line::from(Span::styled(
                    format!(
                        "compact too, keeping from {} (line {}): press a to {}open the compaction there",
                        s.entries[c].id,
                        s.entries[c].line,
                        if plan.is_empty() { "" } else { "write the edits, then " }
                    ),
                    fg(WARNING),
                )));
            }
            lines.push(Line::from(Span::styled(plan.note.clone(), fg(MUTED))));
            if !p.pruning_enabled {
                lines.push(Line::from(Span::styled(
                    "contextPruning.enabled is false: Pi's pruning extension is off (bonsai's edits still apply)",
                    fg(MUTED),
                )));
            }
        }
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), area);
}
