//! The dialogs in front of every write: navigate (Pi's three choices), a one-line input
//! (label, name, keepRecentTokens), summary instructions, the summary strategies to run, the
//! summary preview (one tab per strategy, streaming while a model writes; write, edit or
//! discard the chosen one) and a yes/no question (a write that starts a branch). Each is state
//! plus `draw`; what its keys mean is in the key table (`keymap`), and `App::update` acts on
//! them.

use super::input::LineEditor;
use super::keymap::{self, Mode};
pub use super::request::{InputPurpose, PendingWrite, PlannedCompaction, Seen};
use super::theme::*;
use crate::engine::compaction::cut::CompactionSettings;
use crate::engine::load::session::Session;
use crate::engine::view::text_width::visible_width;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use serde_json::Value;

pub const NAV_CHOICES: [&str; 3] = ["No summary", "Summarize", "Summarize with custom prompt"];

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

/// Where a summary tab stands.
#[derive(Debug, Clone, PartialEq)]
pub enum TabState {
    Running,
    Done,
    Failed(String),
}

/// What a finished strategy cost and how well it kept the facts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TabFigures {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// US dollars, from the model's prices.
    pub cost: f64,
    /// Overall recall (0–1), the share of named paths found nowhere in the range, the summary's
    /// tokens and their share of what it replaces (see `engine::compaction::recall`).
    pub recall: Option<f64>,
    pub invented: f64,
    pub tokens: u64,
    pub ratio: f64,
    /// The audit's headline and the first lost items (`engine::compaction::audit`).
    pub audit: Option<(String, Vec<String>)>,
}

/// One summary being written (or written): a strategy's, or the one summary of a branch.
#[derive(Debug, Clone)]
pub struct SummaryTab {
    pub name: String,
    pub text: String,
    pub state: TabState,
    /// Pi's usage object for the entry (a model's summary).
    pub usage: Option<Value>,
    /// Calls done, planned, in flight.
    pub calls: (usize, usize, usize),
    pub figures: TabFigures,
    /// When it started, and how long it has run (kept by the tick while it runs; when done,
    /// the job's own measure of its work).
    pub started: std::time::Instant,
    pub elapsed_ms: u64,
    /// The last retry, said in the tab.
    pub note: Option<String>,
    pub scroll: usize,
}

impl SummaryTab {
    /// A tab with `text` already in it (tests).
    #[cfg(test)]
    pub fn with_text(name: &str, text: &str, state: TabState) -> SummaryTab {
        SummaryTab {
            text: text.into(),
            state,
            ..SummaryTab::new(name, std::time::Instant::now())
        }
    }

    /// A running tab, started at `started` (the app's clock at the last tick: the update
    /// reads no clock).
    pub fn new(name: &str, started: std::time::Instant) -> SummaryTab {
        SummaryTab {
            name: name.into(),
            text: String::new(),
            state: TabState::Running,
            usage: None,
            calls: (0, 0, 0),
            figures: TabFigures::default(),
            started,
            elapsed_ms: 0,
            note: None,
            scroll: 0,
        }
    }
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
    /// Which strategies the compaction runs side by side (a model is configured).
    Strategies {
        at: PlannedCompaction,
        focus: Option<String>,
        seen: Seen,
        cursor: usize,
        /// Per `Strategy::ALL`.
        checked: Vec<bool>,
        /// provider/model.
        by: String,
    },
    Summary {
        purpose: SummaryFor,
        seen: Seen,
        /// Which summarizer writes them (`offline` or provider/model).
        by: String,
        tabs: Vec<SummaryTab>,
        active: usize,
        job: u64,
    },
    Confirm {
        title: String,
        lines: Vec<String>,
        then: Box<PendingWrite>,
    },
    /// A yes/no before a change of files rather than an append: deleting a branch (a
    /// rewrite), writing a fork or a clone (a new session Pi resumes next), removing one.
    ConfirmRewrite {
        title: String,
        lines: Vec<String>,
        then: FileChore,
    },
}

// What a yes in a confirm does, and the file a fork or clone left: the chores own them (the
// jobs run them; the dialog only holds one).
pub use crate::ui::chores::{BranchedFile, FileChore};

/// The summary's tabs in one line `width` wide: full names when they fit, else short ones,
/// else a window around the active tab (`‹`/`›` say more are off either side). The active
/// tab is bracketed as well as highlighted, so it shows without colour.
fn tab_bar(tabs: &[SummaryTab], active: usize, width: usize) -> Line<'static> {
    let label = |t: &SummaryTab, short: bool| {
        let name = if short {
            crate::engine::compaction::strategy::Strategy::parse(&t.name).map_or(t.name.as_str(), |s| s.short())
        } else {
            t.name.as_str()
        };
        let mark = match &t.state {
            TabState::Running if t.calls.1 > 0 => format!(" {}/{}", t.calls.0, t.calls.1),
            TabState::Running => " …".into(),
            TabState::Done => " ✓".into(),
            TabState::Failed(_) => " ✗".into(),
        };
        format!("{name}{mark}")
    };
    let cells = |short: bool| -> Vec<String> { tabs.iter().map(|t| label(t, short)).collect() };
    let total = |c: &[String]| c.iter().map(|l| visible_width(l) + 3).sum::<usize>() + 1;
    let mut labels = cells(false);
    if total(&labels) > width {
        labels = cells(true);
    }
    // The window: grow around the active tab while it fits.
    let (mut from, mut to) = (active, active + 1);
    let fits = |a: usize, b: usize| total(&labels[a..b]) + 4 <= width;
    loop {
        let grew_right = to < labels.len() && fits(from, to + 1);
        if grew_right {
            to += 1;
        }
        let grew_left = from > 0 && fits(from - 1, to);
        if grew_left {
            from -= 1;
        }
        if !grew_right && !grew_left {
            break;
        }
    }
    let mut bar = vec![Span::styled(if from > 0 { "‹" } else { " " }, fg(DIM))];
    for k in from..to {
        let style = if k == active {
            fg(ACCENT).add_modifier(Modifier::BOLD | Modifier::REVERSED)
        } else if matches!(tabs[k].state, TabState::Failed(_)) {
            fg(ERROR)
        } else {
            fg(MUTED)
        };
        let (open, close) = if k == active { ("[", "]") } else { (" ", " ") };
        bar.push(Span::styled(format!("{open}{}{close}", labels[k]), style));
        bar.push(Span::raw(" "));
    }
    if to < labels.len() {
        bar.push(Span::styled("›", fg(DIM)));
    }
    Line::from(bar)
}

/// Labels of the keys that move between a summary's tabs (not offered with one tab).
pub const TAB_KEYS: [&str; 2] = ["next strategy", "previous strategy"];

impl Dialog {
    /// The keys worth offering now: the mode's, less the tab keys when there is one tab.
    pub fn hints(&self) -> Vec<(String, &'static str)> {
        let mut h = keymap::hints(self.mode());
        if let Dialog::Summary { tabs, .. } = self
            && tabs.len() < 2
        {
            h.retain(|(_, l)| !TAB_KEYS.contains(l));
        }
        // A yes that is not a write says what it does (the trash, a removal).
        if let Dialog::ConfirmRewrite { then, .. } = self {
            for (k, l) in &mut h {
                if k.as_str() == "y" {
                    *l = then.yes_words();
                }
            }
        }
        h
    }

    pub fn mode(&self) -> Mode {
        match self {
            Dialog::Navigate { .. } => Mode::NavigateDialog,
            Dialog::Input { purpose, .. } => match purpose {
                InputPurpose::CompactInstructions { .. } | InputPurpose::NavigateInstructions { .. } => {
                    Mode::Instructions
                }
                _ => Mode::LineInput,
            },
            Dialog::Strategies { .. } => Mode::Strategies,
            Dialog::Summary { tabs, .. } if tabs.iter().any(|t| t.state == TabState::Running) => Mode::Streaming,
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
            Dialog::Strategies { .. } => crate::engine::compaction::strategy::Strategy::ALL.len() as u16 + 6,
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
pub(crate) fn wrap(line: &str, width: usize) -> Vec<String> {
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

/// Lines above a summary's body: the tabs, two of figures, the lost items, the keys.
pub const SUMMARY_HEAD: u16 = 5;

/// The most a summary preview can scroll in `rect` (so it never scrolls past its end).
pub fn max_scroll(text: &str, rect: Rect) -> usize {
    // Two borders and the head lines are not the body.
    let inner_h = rect.height.saturating_sub(2 + SUMMARY_HEAD) as usize;
    summary_lines(text, rect.width.saturating_sub(2))
        .len()
        .saturating_sub(inner_h)
}

/// "12,345" for the figures.
fn num(n: u64) -> String {
    crate::engine::units::count(n)
}

/// A tab's figures in two lines: calls, tokens, cost and time; then, once done, the recall
/// score (or, while running, the last retry).
pub fn figures_lines(t: &SummaryTab) -> [String; 2] {
    let f = &t.figures;
    let mut parts = vec![];
    match &t.state {
        TabState::Running if t.calls.1 > 0 => parts.push(format!(
            "{} of {} calls done, {} running",
            t.calls.0, t.calls.1, t.calls.2
        )),
        TabState::Running => parts.push("writing…".into()),
        TabState::Failed(e) => parts.push(format!("failed: {e}")),
        TabState::Done if t.calls.0 == 1 => parts.push("1 call".into()),
        TabState::Done if t.calls.1 > 0 => parts.push(format!("{} calls", t.calls.0)),
        TabState::Done => parts.push("no calls".into()),
    }
    if f.input + f.output > 0 {
        let cache = if f.cache_read + f.cache_write > 0 {
            format!(" (cache {} read, {} written)", num(f.cache_read), num(f.cache_write))
        } else {
            String::new()
        };
        parts.push(format!(
            "{} in{cache} · {} out · {}",
            num(f.input),
            num(f.output),
            crate::engine::units::money(f.cost)
        ));
    }
    parts.push(crate::engine::units::duration(t.elapsed_ms as f64));
    let second = match (f.recall, &t.note) {
        (Some(r), _) => format!(
            "recall {:.1} % of the range's facts · {} tokens, {:.1} % of what it replaces{}",
            r * 100.0,
            num(f.tokens),
            f.ratio * 100.0,
            if f.invented > 0.0 {
                format!(" · {:.1} % of its paths invented", f.invented * 100.0)
            } else {
                String::new()
            }
        ),
        (None, Some(n)) if t.state == TabState::Running => n.clone(),
        _ => String::new(),
    };
    [parts.join(" · "), second]
}

/// The dialog's keys, from the key table.
fn hint_line(mode: Mode) -> Line<'static> {
    hint_line_of(keymap::hints(mode))
}

fn hint_line_of(hints: Vec<(String, &'static str)>) -> Line<'static> {
    let text = hints
        .into_iter()
        .map(|(k, l)| format!("{k} {l}"))
        .collect::<Vec<_>>()
        .join("  ");
    Line::from(Span::styled(format!(" {text}"), fg(DIM)))
}

fn id(s: &Session, i: usize) -> String {
    s.entries.get(i).map(|e| e.id.to_string()).unwrap_or_default()
}

impl crate::ui::component::Drawable for Dialog {
    type View<'a> = &'a Session;
    fn draw(&self, f: &mut Frame, area: Rect, s: &Session) {
        draw(f, area, self, s)
    }
}

pub fn draw(f: &mut Frame, area: Rect, d: &Dialog, s: &Session) {
    let r = d.rect(area);
    let mode = d.mode();
    let (title_text, lines) = match d {
        Dialog::Navigate {
            target, choice, info, ..
        } => navigate_body(target, choice, info, s, mode),
        Dialog::Input {
            purpose, editor, note, ..
        } => input_body(purpose, editor, note, mode),
        Dialog::Strategies {
            cursor, checked, by, ..
        } => strategies_body(cursor, checked, by, mode),
        Dialog::Summary {
            tabs,
            active,
            by,
            purpose,
            ..
        } => summary_body(tabs, active, by, purpose, d.hints(), r),
        Dialog::Confirm {
            title: t, lines: text, ..
        }
        | Dialog::ConfirmRewrite {
            title: t, lines: text, ..
        } => confirm_body(t, text, r, d.hints()),
    };
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(title_text, title()));
    f.render_widget(Paragraph::new(lines).block(block), r);
}

/// Pi's three choices when leaving a branch, with what the branch left holds.
fn navigate_body(
    target: &usize,
    choice: &usize,
    info: &NavInfo,
    s: &Session,
    mode: keymap::Mode,
) -> (String, Vec<Line<'static>>) {
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

/// A text input, with the note on what the write will do.
fn input_body(
    purpose: &InputPurpose,
    editor: &LineEditor,
    note: &Option<String>,
    mode: keymap::Mode,
) -> (String, Vec<Line<'static>>) {
    let t = match purpose {
        InputPurpose::Label { .. } => " Label (empty to remove) ",
        InputPurpose::Rename | InputPurpose::RenameFile(_) => " Session name ",
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

/// The strategies to run side by side, checked or not.
fn strategies_body(cursor: &usize, checked: &[bool], by: &str, mode: keymap::Mode) -> (String, Vec<Line<'static>>) {
    let mut lines = vec![Line::from(Span::styled(
        format!(" run side by side with {by}, each in its own tab; the one you pick is written"),
        fg(MUTED),
    ))];
    lines.push(Line::default());
    for (k, st) in crate::engine::compaction::strategy::Strategy::ALL.iter().enumerate() {
        let sel = k == *cursor;
        let mark = if checked.get(k).copied().unwrap_or(false) {
            "[x]"
        } else {
            "[ ]"
        };
        lines.push(Line::from(vec![
            Span::styled(
                format!(" {} {mark} {:<24}", if sel { "→" } else { " " }, st.name()),
                if sel {
                    fg(ACCENT).add_modifier(Modifier::BOLD)
                } else {
                    Style::default()
                },
            ),
            Span::styled(st.about(), fg(DIM)),
        ]));
    }
    lines.push(Line::default());
    lines.push(hint_line(mode));
    (" Compact: summary strategies ".into(), lines)
}

/// A summary: its tabs, its figures, its text scrolled.
fn summary_body(
    tabs: &[SummaryTab],
    active: &usize,
    by: &str,
    purpose: &SummaryFor,
    hints: Vec<(String, &'static str)>,
    r: Rect,
) -> (String, Vec<Line<'static>>) {
    let t = &tabs[(*active).min(tabs.len().saturating_sub(1))];
    let bar = tab_bar(tabs, *active, r.width.saturating_sub(2) as usize);
    let figures = figures_lines(t);
    let mut lines = vec![
        bar,
        Line::from(Span::styled(format!(" {}", figures[0]), fg(MUTED))),
        Line::from(Span::styled(format!(" {}", figures[1]), fg(DIM))),
    ];
    // The lost items themselves, not only their count (the line stays, empty, when none are).
    let lost = match &t.figures.audit {
        Some((h, lost)) if !lost.is_empty() => format!(" {h} — {}", lost.join(" · ")),
        Some((h, _)) => format!(" {h}"),
        None => String::new(),
    };
    lines.push(Line::from(Span::styled(lost, fg(WARNING))));
    lines.push(hint_line_of(hints));
    let body = summary_lines(&t.text, r.width.saturating_sub(2));
    lines.extend(body.into_iter().skip(t.scroll));
    let title = match purpose {
        SummaryFor::Compaction { .. } => format!(" Compaction summary ({by}) "),
        SummaryFor::Branch { .. } => format!(" Branch summary ({by}) "),
    };
    (title, lines)
}

/// A yes/no question.
fn confirm_body(t: &str, text: &[String], r: Rect, hints: Vec<(String, &'static str)>) -> (String, Vec<Line<'static>>) {
    let mut lines: Vec<Line> = confirm_lines(text, r.width)
        .into_iter()
        .map(|l| Line::from(Span::raw(format!(" {l}"))))
        .collect();
    lines.push(Line::default());
    lines.push(hint_line_of(hints));
    (format!(" {t} "), lines)
}

#[cfg(test)]
mod tests;
mod update;
