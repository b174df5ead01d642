//! What fills the context (what users ask Pi's `/context` for): the messages the model gets at
//! the selection, totalled by role, by tool, by file read, and the largest ones, each with
//! Pi's estimate and the exact count. Built in a job; the largest rows are a list to jump from.

use super::theme::*;
use crate::engine::edit::prune::thousands;
use crate::engine::load::entry::{Kind, Role};
use crate::engine::load::session::Session;
use crate::engine::view::context::{self, ContextMessage};
use crate::engine::view::tokens::{Encoding, TokenCache};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use std::collections::HashMap;

mod state;
pub use state::*;

/// One total: what, how many messages, their estimate and exact count.
#[derive(Debug, Clone, PartialEq)]
pub struct FillRow {
    pub label: String,
    pub count: usize,
    pub est: u64,
    pub exact: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Largest {
    pub entry: usize,
    pub what: String,
    pub est: u64,
    pub exact: u64,
}

#[derive(Debug, Clone)]
pub struct FillsData {
    pub generation: u64,
    pub leaf: usize,
    pub messages: usize,
    pub est: u64,
    pub exact: u64,
    pub encoding: &'static str,
    /// Image blocks in the messages: each counts as Pi's estimate in both columns.
    pub images: usize,
    pub by_role: Vec<FillRow>,
    pub by_tool: Vec<FillRow>,
    pub by_file: Vec<FillRow>,
    pub largest: Vec<Largest>,
}

/// The largest messages listed.
pub const LARGEST: usize = 20;
/// Files listed (the rest are summed in one row).
const FILES: usize = 12;

fn add(map: &mut HashMap<String, FillRow>, label: &str, est: u64, exact: u64) {
    let r = map.entry(label.to_string()).or_insert_with(|| FillRow {
        label: label.to_string(),
        count: 0,
        est: 0,
        exact: 0,
    });
    r.count += 1;
    r.est += est;
    r.exact += exact;
}

fn sorted(map: HashMap<String, FillRow>) -> Vec<FillRow> {
    let mut v: Vec<FillRow> = map.into_values().collect();
    v.sort_by(|a, b| b.est.cmp(&a.est).then_with(|| a.label.cmp(&b.label)));
    v
}

/// The file a tool result read, from its call's arguments.
fn file_of(s: &Session, entry: usize) -> Option<String> {
    let (_, args) = super::tool_call_for(s, entry)?;
    ["path", "file_path", "filePath"]
        .iter()
        .find_map(|k| args.get(*k).and_then(|v| v.as_str()).map(String::from))
}

pub fn build(s: &Session, generation: u64, leaf: usize, encoding: Encoding, cache: &TokenCache) -> FillsData {
    let proj = context::project(s, &s.path_to(leaf));
    let msgs: Vec<&ContextMessage> = proj.messages().collect();
    let exact = cache.count_all(s, &msgs, encoding);
    let (mut roles, mut tools, mut files) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut largest = Vec::new();
    let mut images = 0;
    for (m, &x) in msgs.iter().zip(&exact) {
        images += match (&s.entries[m.source].kind, m.replaced_by) {
            (Kind::Message(sm), None) => s.measures(sm).content.images,
            _ => crate::engine::view::tokens::images_in(&context::materialize(s, m)),
        };
        add(&mut roles, m.role.as_str(), m.est_tokens, x);
        let tool = match &s.entries[m.source].kind {
            Kind::Message(sm) if m.role == Role::ToolResult => sm.tool_name.as_deref().map(String::from),
            _ => None,
        };
        if let Some(t) = &tool {
            add(&mut tools, t, m.est_tokens, x);
            if let Some(f) = file_of(s, m.source) {
                add(&mut files, &f, m.est_tokens, x);
            }
        }
        largest.push(Largest {
            entry: m.source,
            what: tool.unwrap_or_else(|| m.role.as_str().to_string()),
            est: m.est_tokens,
            exact: x,
        });
    }
    largest.sort_by(|a, b| b.est.cmp(&a.est).then(a.entry.cmp(&b.entry)));
    largest.truncate(LARGEST);
    let mut by_file = sorted(files);
    if by_file.len() > FILES {
        let rest = by_file.split_off(FILES - 1);
        by_file.push(FillRow {
            label: format!("{} more files", rest.len()),
            count: rest.iter().map(|r| r.count).sum(),
            est: rest.iter().map(|r| r.est).sum(),
            exact: rest.iter().map(|r| r.exact).sum(),
        });
    }
    FillsData {
        generation,
        leaf,
        messages: msgs.len(),
        est: msgs.iter().map(|m| m.est_tokens).sum(),
        exact: exact.iter().sum(),
        encoding: encoding.name(),
        images,
        by_role: sorted(roles),
        by_tool: sorted(tools),
        by_file,
        largest,
    }
}

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
