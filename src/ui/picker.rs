//! The session picker: this project's sessions or all (Tab), threaded by `parentSession`,
//! with name or first message, modified time, entries and size; typing filters it. Listing
//! and opening run as jobs; the picker only holds what they reported.

use super::input::LineEditor;
use super::theme::*;
use crate::store::SessionInfo;
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use std::path::PathBuf;

pub struct Picker {
    pub all: bool,
    pub sessions: Vec<SessionInfo>,
    /// (index into sessions, depth) in display order.
    pub rows: Vec<(usize, usize)>,
    pub selected: usize,
    pub query: LineEditor,
    pub error: Option<String>,
    /// The open session (shown in green).
    pub current: Option<PathBuf>,
    /// A listing is being read.
    pub loading: bool,
    /// A session is being opened.
    pub opening: Option<PathBuf>,
    /// bonsai started in the picker: closing it quits.
    pub launched_without_session: bool,
    /// When this project has none: how many sessions Pi has in all projects.
    pub everywhere: Option<usize>,
}

impl Picker {
    pub fn new(current: Option<PathBuf>) -> Picker {
        Picker {
            all: false,
            sessions: vec![],
            rows: vec![],
            selected: 0,
            query: LineEditor::new("", false),
            error: None,
            current,
            loading: false,
            opening: None,
            launched_without_session: false,
            everywhere: None,
        }
    }

    pub fn from_sessions(sessions: Vec<SessionInfo>) -> Picker {
        let mut p = Picker::new(None);
        p.set_sessions(false, sessions);
        p
    }

    /// A listing arrived (this project's, or every project's when `all`).
    pub fn set_sessions(&mut self, all: bool, sessions: Vec<SessionInfo>) {
        self.all = all;
        self.sessions = sessions;
        self.loading = false;
        self.rebuild();
    }

    /// Children (forks) under their parent session, newest first at each level.
    fn rebuild(&mut self) {
        let q = self.query.text().to_lowercase();
        let matches = |s: &SessionInfo| {
            q.is_empty()
                || s.title().to_lowercase().contains(&q)
                || s.path.to_string_lossy().to_lowercase().contains(&q)
                || s.cwd.to_lowercase().contains(&q)
        };
        let by_path: std::collections::HashMap<String, usize> = self
            .sessions
            .iter()
            .enumerate()
            .map(|(i, s)| (s.path.to_string_lossy().to_string(), i))
            .collect();
        let parent_of = |i: usize| {
            self.sessions[i]
                .parent_session
                .as_ref()
                .and_then(|p| by_path.get(p).copied())
                .filter(|&p| p != i)
        };
        let mut children: Vec<Vec<usize>> = vec![vec![]; self.sessions.len()];
        let mut roots = vec![];
        for i in 0..self.sessions.len() {
            match parent_of(i) {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        let mut rows = Vec::new();
        let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|r| (r, 0)).collect();
        let mut seen = vec![false; self.sessions.len()];
        while let Some((i, d)) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            if matches(&self.sessions[i]) {
                rows.push((i, d));
            }
            for &c in children[i].iter().rev() {
                stack.push((c, d + 1));
            }
        }
        self.rows = rows;
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    pub fn move_by(&mut self, d: isize) {
        let last = self.rows.len().saturating_sub(1) as isize;
        self.selected = (self.selected as isize + d).clamp(0, last.max(0)) as usize;
    }

    pub fn edit(&mut self, key: KeyEvent) {
        if self.query.input(key) {
            self.rebuild();
        }
    }

    pub fn paste(&mut self, text: &str) {
        self.query.paste(text);
        self.rebuild();
    }

    pub fn selected_path(&self) -> Option<PathBuf> {
        self.rows
            .get(self.selected)
            .map(|&(i, _)| self.sessions[i].path.clone())
    }

    /// First list row inside the picker drawn in `area`.
    fn list_top(&self, area: Rect) -> u16 {
        // Border, search line, error, column headings.
        area.y + 2 + u16::from(self.error.is_some()) + u16::from(!self.rows.is_empty())
    }

    /// A click on a row selects it (a click on the selected row opens nothing: Enter does).
    pub fn click(&mut self, area: Rect, _col: u16, row: u16) -> bool {
        let top = self.list_top(area);
        if row < top {
            return false;
        }
        let h = area.height.saturating_sub(2).saturating_sub(top - area.y - 1) as usize;
        let start = self.selected.saturating_sub(h.saturating_sub(1));
        let k = start + (row - top) as usize;
        if k < self.rows.len() {
            self.selected = k;
            return true;
        }
        false
    }

    pub fn draw(&self, f: &mut Frame, area: Rect) {
        f.render_widget(Clear, area);
        let title = format!(
            " sessions · {} (Tab: {}) · {} ",
            if self.all { "all projects" } else { "this project" },
            if self.all { "this project" } else { "all projects" },
            self.rows.len()
        );
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(fg(ACCENT))
            .title(Span::styled(title, super::theme::title()));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let mut search = vec![Span::styled(" search: ", fg(MUTED))];
        search.extend(self.query.line_spans(0, fg(ACCENT)));
        let mut lines = vec![Line::from(search)];
        if let Some(e) = &self.error {
            lines.push(Line::from(Span::styled(format!(" {e}"), fg(ERROR))));
        }
        if let Some(p) = &self.opening {
            lines.push(Line::from(Span::styled(
                format!(" opening {}…", p.display()),
                fg(MUTED),
            )));
        } else if self.loading {
            lines.push(Line::from(Span::styled(" reading the session folders…", fg(MUTED))));
        } else if self.rows.is_empty() {
            let q = self.query.text();
            let msg = if self.sessions.is_empty() {
                match (self.all, self.everywhere) {
                    (true, _) | (false, Some(0)) => {
                        " no Pi sessions found in any project (Pi writes them under ~/.pi/agent/sessions)".to_string()
                    }
                    (false, Some(n)) => format!(
                        " no Pi sessions for this directory; {n} in other projects: Tab lists them (or bonsai list --all)"
                    ),
                    (false, None) => " no Pi sessions found for this project (Tab: all projects)".to_string(),
                }
            } else {
                format!(
                    " no session matches \"{q}\" ({} in this list; Backspace to widen)",
                    self.sessions.len()
                )
            };
            lines.push(Line::from(Span::styled(msg, fg(MUTED))));
        }
        if !self.rows.is_empty() {
            lines.push(Line::from(Span::styled(
                format!(
                    "  {:<16}{:>7} {:>8}  session{}",
                    "modified",
                    "entries",
                    "size",
                    if self.all { "  (project)" } else { "" }
                ),
                fg(DIM).add_modifier(Modifier::UNDERLINED),
            )));
        }
        let h = inner.height.saturating_sub(lines.len() as u16) as usize;
        let start = self.selected.saturating_sub(h.saturating_sub(1));
        for (k, &(i, depth)) in self.rows.iter().enumerate().skip(start).take(h) {
            let s = &self.sessions[i];
            let sel = k == self.selected;
            let current = self.current.as_ref() == Some(&s.path);
            let size = if s.bytes >= 1 << 20 {
                format!("{:.1} MB", s.bytes as f64 / 1048576.0)
            } else {
                format!("{} KB", s.bytes.div_ceil(1024))
            };
            let indent = "  ".repeat(depth) + if depth > 0 { "└ " } else { "" };
            let modified = s.modified_iso();
            let mut line = Line::from(vec![
                Span::styled(if sel { "› " } else { "  " }, fg(ACCENT)),
                Span::styled(
                    format!("{} ", modified.get(..16).unwrap_or(&modified).replace('T', " ")),
                    fg(MUTED),
                ),
                Span::styled(format!("{:>6} ", s.entries), fg(DIM)),
                Span::styled(format!("{size:>8}  "), fg(DIM)),
                Span::raw(indent),
                Span::styled(s.title(), if current { fg(SUCCESS) } else { Style::default() }),
                Span::styled(
                    if self.all {
                        format!("  {}", s.cwd)
                    } else {
                        String::new()
                    },
                    fg(DIM),
                ),
            ]);
            if sel {
                line = line.style(Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD));
            }
            lines.push(line);
        }
        f.render_widget(Paragraph::new(lines), inner);
    }
}

#[cfg(test)]
mod snapshots {
    use super::*;
    use crossterm::event::KeyCode;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn info(
        path: &str,
        parent: Option<&str>,
        name: Option<&str>,
        first: &str,
        entries: usize,
        bytes: u64,
        modified_ms: i64,
    ) -> SessionInfo {
        SessionInfo {
            path: PathBuf::from(path),
            id: path.into(),
            cwd: "/home/dev/acme".into(),
            parent_session: parent.map(String::from),
            name: name.map(String::from),
            first_message: Some(first.into()),
            entries,
            bytes,
            modified_ms,
        }
    }

    fn draw(p: &Picker) -> String {
        let mut t = Terminal::new(TestBackend::new(90, 10)).unwrap();
        t.draw(|f| p.draw(f, f.area())).unwrap();
        (0..10)
            .map(|y| {
                (0..90)
                    .map(|x| t.backend().buffer()[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn picker_threads_forks_and_searches() {
        let sessions = vec![
            info(
                "/s/b.jsonl",
                Some("/s/a.jsonl"),
                None,
                "Fork: try pandas",
                12,
                9000,
                1_795_400_000_000,
            ),
            info(
                "/s/a.jsonl",
                None,
                Some("CSV importer"),
                "The CSV importer drops rows",
                45,
                41_163,
                1_795_300_000_000,
            ),
            info(
                "/s/c.jsonl",
                None,
                None,
                "Refactor the auth module",
                3100,
                5_400_000,
                1_795_200_000_000,
            ),
        ];
        let mut p = Picker::from_sessions(sessions);
        insta::assert_snapshot!("picker", draw(&p));
        for c in "auth".chars() {
            p.edit(KeyEvent::from(KeyCode::Char(c)));
        }
        insta::assert_snapshot!("picker_search", draw(&p));
        assert_eq!(p.selected_path(), Some(PathBuf::from("/s/c.jsonl")));
        // A filter that matches nothing says so (it used to say "no Pi sessions found").
        for c in "zzz".chars() {
            p.edit(KeyEvent::from(KeyCode::Char(c)));
        }
        let screen = draw(&p);
        assert!(
            screen.contains("no session matches \"authzzz\" (3 in this list"),
            "{screen}"
        );
        assert!(!screen.contains("no Pi sessions found"), "{screen}");
    }
}
