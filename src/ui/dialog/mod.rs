//! The dialogs in front of every write: navigate (Pi's three choices), a one-line input
//! (label, name, keepRecentTokens), summary instructions, the summary preview (write, edit or
//! discard; streaming while a model writes it) and a yes/no question (a write that starts a
//! branch). Each is state plus `draw`; what its keys mean is in the key table (`keymap`), and
//! `App::update` acts on them.

use super::input::LineEditor;
use super::keymap::{self, Mode};
use super::theme::*;
use crate::engine::compaction::CompactionSettings;
use crate::engine::session::Session;
use crate::engine::text_width::visible_width;
use crate::engine::write_plan::WriteRequest;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use serde_json::Value;

pub const NAV_CHOICES: [&str; 3] = ["No summary", "Summarize", "Summarize with custom prompt"];

/// What the user saw when a dialog opened: the file's length and its entries. A write
/// decided in the dialog is refused if the file has grown since (Pi appended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub len: usize,
    pub entries: usize,
}

impl Seen {
    pub fn of(s: &Session) -> Seen {
        Seen {
            len: s.buf.len(),
            entries: s.entries.len(),
        }
    }
}

/// What navigating to the target leaves behind (shown before choosing a summary).
#[derive(Debug, Clone, PartialEq)]
pub struct NavInfo {
    /// Entries of the current branch a summary would cover.
    pub entries: usize,
    /// Of them, messages that fit the summary budget, and their tokens.
    pub messages: usize,
    pub tokens: u64,
    /// The target is a user message: its text goes back to the editor, the leaf to its parent.
    pub to_user_message: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum InputPurpose {
    Label {
        target: usize,
    },
    Rename,
    KeepRecent,
    CompactInstructions {
        leaf: usize,
    },
    NavigateInstructions {
        target: usize,
    },
    /// The file name to export the path to `leaf` to.
    Export {
        leaf: usize,
    },
}

/// What a summary is for, with what the write will need.
#[derive(Debug, Clone, PartialEq)]
pub enum SummaryFor {
    Compaction {
        leaf: usize,
        first_kept: String,
        settings: CompactionSettings,
    },
    Branch {
        target: usize,
        budget: i64,
    },
}

/// A write waiting for a yes.
#[derive(Debug, Clone)]
pub struct PendingWrite {
    pub request: WriteRequest,
    pub what: String,
    /// The entry to select afterwards (by id; `None`: the new leaf).
    pub select: Option<String>,
}

#[derive(Debug)]
pub enum Dialog {
    Navigate {
        target: usize,
        choice: usize,
        seen: Seen,
        info: NavInfo,
    },
    Input {
        purpose: InputPurpose,
        editor: LineEditor,
        seen: Seen,
        /// A line above the input (what the write will do).
        note: Option<String>,
    },
    Summary {
        purpose: SummaryFor,
        seen: Seen,
        text: String,
        /// Which summarizer wrote it (`offline` or provider/model).
        by: String,
        usage: Option<Value>,
        streaming: bool,
        scroll: usize,
        job: u64,
    },
    Confirm {
        title: String,
        lines: Vec<String>,
        then: Box<PendingWrite>,
    },
    /// A yes/no before deleting the branch at `target` (a rewrite, not an append).
    ConfirmRewrite {
        title: String,
        lines: Vec<String>,
        target: String,
    },
}

impl Dialog {
    pub fn mode(&self) -> Mode {
        match self {
            Dialog::Navigate { .. } => Mode::NavigateDialog,
            Dialog::Input { purpose, .. } => match purpose {
                InputPurpose::CompactInstructions { .. } | InputPurpose::NavigateInstructions { .. } => {
                    Mode::Instructions
                }
                _ => Mode::LineInput,
            },
            Dialog::Summary { streaming: true, .. } => Mode::Streaming,
            Dialog::Summary { .. } => Mode::SummaryPreview,
            Dialog::Confirm { .. } | Dialog::ConfirmRewrite { .. } => Mode::Confirm,
        }
    }

    /// What a key means in this dialog: its binding in the key table, or, in a text input,
    /// an edit of the text.
    pub fn on_key(&self, key: &crossterm::event::KeyEvent) -> Option<super::action::Action> {
        let mode = self.mode();
        keymap::action_for(mode, key).or_else(|| mode.takes_text().then_some(super::action::Action::Edit(*key)))
    }

    /// Where the dialog is drawn inside `area` (the main area).
    pub fn rect(&self, area: Rect) -> Rect {
        let w = area.width.saturating_sub(4).min(100);
        let h = match self {
            Dialog::Navigate { .. } => 11,
            Dialog::Input { editor, note, .. } => editor.lines().len() as u16 + 4 + u16::from(note.is_some()),
            Dialog::Summary { .. } => area.height.saturating_sub(4),
            Dialog::Confirm { lines, .. } | Dialog::ConfirmRewrite { lines, .. } => {
                confirm_lines(lines, w).len() as u16 + 4
            }
        };
        centered(area, w, h.max(5).min(area.height))
    }
}

/// A summary as the preview draws it: word-wrapped to `width` (the scroll counts these lines).
pub fn summary_lines(text: &str, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for l in text.split('\n') {
        let style = if l.starts_with('#') { title() } else { Style::default() };
        for piece in wrap(l, width as usize) {
            out.push(Line::from(Span::styled(piece, style)));
        }
    }
    out
}

/// A question's lines, word-wrapped inside a dialog `width` wide (borders and margin off).
fn confirm_lines(text: &[String], width: u16) -> Vec<String> {
    text.iter()
        .flat_map(|l| wrap(l, width.saturating_sub(3) as usize))
        .collect()
}

/// Word wrap (a word longer than the width is cut).
fn wrap(line: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    if visible_width(line) <= width {
        return vec![line.to_string()];
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut w = 0;
    for word in line.split_inclusive(' ') {
        let ww = visible_width(word);
        if w + ww > width && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
            w = 0;
        }
        for c in word.chars() {
            let cw = visible_width(c.encode_utf8(&mut [0; 4]));
            if w + cw > width {
                out.push(std::mem::take(&mut cur));
                w = 0;
            }
            cur.push(c);
            w += cw;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The most a summary preview can scroll in `rect` (so it never scrolls past its end).
pub fn max_scroll(text: &str, rect: Rect) -> usize {
    // Two borders and two head lines (the line count and the keys) are not the body.
    let inner_h = rect.height.saturating_sub(4) as usize;
    summary_lines(text, rect.width.saturating_sub(2))
        .len()
        .saturating_sub(inner_h)
}

/// The dialog's keys, from the key table.
fn hint_line(mode: Mode) -> Line<'static> {
    let text = keymap::hints(mode)
        .into_iter()
        .map(|(k, l)| format!("{k} {l}"))
        .collect::<Vec<_>>()
        .join("  ");
    Line::from(Span::styled(format!(" {text}"), fg(DIM)))
}

fn id(s: &Session, i: usize) -> String {
    s.entries.get(i).map(|e| e.id.to_string()).unwrap_or_default()
}

pub fn draw(f: &mut Frame, area: Rect, d: &Dialog, s: &Session) {
    let r = d.rect(area);
    let mode = d.mode();
    let (title_text, lines): (String, Vec<Line>) = match d {
        Dialog::Navigate {
            target, choice, info, ..
        } => {
            let line = s.entries.get(*target).map(|e| e.line).unwrap_or(0);
            let mut lines = vec![Line::from(Span::styled(
                format!(" go to {} · line {line}", id(s, *target)),
                fg(MUTED),
            ))];
            lines.push(Line::from(Span::styled(
                if info.entries == 0 {
                    " nothing to leave: the target is on the current branch".to_string()
                } else if info.messages == 0 {
                    format!(
                        " leaves {} entr{} with no message to summarize (a summary would say \"No content to summarize\")",
                        info.entries,
                        if info.entries == 1 { "y" } else { "ies" }
                    )
                } else {
                    format!(
                        " leaves {} entr{}; a summary covers {} message{}, ~{} tokens",
                        info.entries,
                        if info.entries == 1 { "y" } else { "ies" },
                        info.messages,
                        if info.messages == 1 { "" } else { "s" },
                        info.tokens
                    )
                },
                fg(MUTED),
            )));
            if info.to_user_message {
                lines.push(Line::from(Span::styled(
                    " a user message: the leaf moves to its parent and its text comes back to the clipboard",
                    fg(DIM),
                )));
            }
            lines.push(Line::default());
            for (k, c) in NAV_CHOICES.iter().enumerate() {
                let sel = k == *choice;
                lines.push(Line::from(Span::styled(
                    format!(" {} {c}", if sel { "→" } else { " " }),
                    if sel {
                        fg(ACCENT).add_modifier(Modifier::BOLD)
                    } else {
                        Style::default()
                    },
                )));
            }
            lines.push(Line::default());
            lines.push(hint_line(mode));
            (" Summarize branch? ".into(), lines)
        }
        Dialog::Input {
            purpose, editor, note, ..
        } => {
            let t = match purpose {
                InputPurpose::Label { .. } => " Label (empty to remove) ",
                InputPurpose::Rename => " Session name ",
                InputPurpose::KeepRecent => " keepRecentTokens for the cut preview ",
                InputPurpose::NavigateInstructions { .. } => " Custom summarization instructions ",
                InputPurpose::CompactInstructions { .. } => " Compact: custom instructions (optional) ",
                InputPurpose::Export { .. } => " Export the path to the selection ",
            };
            let mut lines = Vec::new();
            if let Some(n) = note {
                lines.push(Line::from(Span::styled(format!(" {n}"), fg(WARNING))));
            }
            for y in 0..editor.lines().len() {
                let mut spans = vec![Span::raw(" > ")];
                spans.extend(editor.line_spans(y, Style::default()));
                lines.push(Line::from(spans));
            }
            lines.push(Line::default());
            lines.push(hint_line(mode));
            (t.into(), lines)
        }
        Dialog::Summary {
            text,
            by,
            streaming,
            scroll,
            purpose,
            ..
        } => {
            let head = match (streaming, by.as_str()) {
                (true, "offline") => " writing the offline summary… (esc cancels; nothing is written)".to_string(),
                (true, _) => " a model is writing the summary… (esc cancels; nothing is written)".to_string(),
                (false, _) => format!(" {} lines", text.lines().count()),
            };
            let mut lines = vec![Line::from(Span::styled(head, fg(MUTED))), hint_line(mode)];
            let body = summary_lines(text, r.width.saturating_sub(2));
            lines.extend(body.into_iter().skip(*scroll));
            let t = match purpose {
                SummaryFor::Compaction { .. } => format!(" Compaction summary ({by}) "),
                SummaryFor::Branch { .. } => format!(" Branch summary ({by}) "),
            };
            (t, lines)
        }
        Dialog::Confirm {
            title: t, lines: text, ..
        }
        | Dialog::ConfirmRewrite {
            title: t, lines: text, ..
        } => {
            let mut lines: Vec<Line> = confirm_lines(text, r.width)
                .into_iter()
                .map(|l| Line::from(Span::raw(format!(" {l}"))))
                .collect();
            lines.push(Line::default());
            lines.push(hint_line(mode));
            (format!(" {t} "), lines)
        }
    };
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(title_text, title()));
    f.render_widget(Paragraph::new(lines).block(block), r);
}

#[cfg(test)]
mod tests;
