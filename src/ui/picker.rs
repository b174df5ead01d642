//! The session picker: this project's sessions or all (Tab), threaded by `parentSession`,
//! with name or first message, modified time, entries and size; type to search.

use super::theme::*;
use crate::engine::settings::Settings;
use crate::store::{self, SessionInfo};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use std::path::{Path, PathBuf};

pub struct Picker {
    pub all: bool,
    pub sessions: Vec<SessionInfo>,
    /// (index into sessions, depth) in display order.
    pub rows: Vec<(usize, usize)>,
    pub selected: usize,
    pub query: String,
    pub error: Option<String>,
    pub current: Option<PathBuf>,
    cwd: PathBuf,
}

pub enum PickerAction {
    None,
    Close,
    Open(PathBuf),
}

impl Picker {
    pub fn load(cwd: &Path, settings: &Settings, all: bool) -> Picker {
        let mut p = Picker::from_sessions(store::list_sessions(cwd, settings, all));
        p.all = all;
        p.cwd = cwd.to_path_buf();
        p
    }

    pub fn from_sessions(sessions: Vec<SessionInfo>) -> Picker {
        let mut p = Picker {
            all: false,
            sessions,
            rows: vec![],
            selected: 0,
            query: String::new(),
            error: None,
            current: None,
            cwd: PathBuf::new(),
        };
        p.rebuild();
        p
    }

    /// Children (forks) under their parent session, newest first at each level.
    fn rebuild(&mut self) {
        let q = self.query.to_lowercase();
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
        let mut rows = Vec::new();
        let roots: Vec<usize> = (0..self.sessions.len()).filter(|&i| parent_of(i).is_none()).collect();
        let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|r| (r, 0)).collect();
        let mut seen = vec![false; self.sessions.len()];
        while let Some((i, d)) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            if matches(&self.sessions[i]) {
                rows.push((i, d));
            }
            let kids: Vec<usize> = (0..self.sessions.len()).filter(|&c| parent_of(c) == Some(i)).collect();
            for c in kids.into_iter().rev() {
                stack.push((c, d + 1));
            }
        }
        self.rows = rows;
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    pub fn on_key(&mut self, key: KeyEvent, settings: &Settings) -> PickerAction {
        match key.code {
            KeyCode::Esc => return PickerAction::Close,
            KeyCode::Enter => {
                if let Some(&(i, _)) = self.rows.get(self.selected) {
                    return PickerAction::Open(self.sessions[i].path.clone());
                }
            }
            KeyCode::Tab => {
                let q = std::mem::take(&mut self.query);
                *self = Picker {
                    current: self.current.take(),
                    ..Picker::load(&self.cwd.clone(), settings, !self.all)
                };
                self.query = q;
                self.rebuild();
            }
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1)),
            KeyCode::Backspace => {
                self.query.pop();
                self.rebuild();
            }
            KeyCode::Char(c) => {
                self.query.push(c);
                self.rebuild();
            }
            _ => {}
        }
        PickerAction::None
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
        let mut lines = vec![Line::from(vec![
            Span::styled(" search: ", fg(MUTED)),
            Span::styled(self.query.clone(), fg(ACCENT)),
        ])];
        if let Some(e) = &self.error {
            lines.push(Line::from(Span::styled(format!(" {e}"), fg(ERROR))));
        }
        if self.rows.is_empty() {
            lines.push(Line::from(Span::styled(" no Pi sessions found", fg(MUTED))));
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
            let mut line = Line::from(vec![
                Span::styled(if sel { "› " } else { "  " }, fg(ACCENT)),
                Span::styled(format!("{} ", &s.modified_iso()[..16].replace('T', " ")), fg(MUTED)),
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
        let draw = |p: &Picker| {
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
        };
        insta::assert_snapshot!("picker", draw(&p));
        let s = Settings::default();
        for c in "auth".chars() {
            p.on_key(KeyEvent::from(KeyCode::Char(c)), &s);
        }
        insta::assert_snapshot!("picker_search", draw(&p));
        assert!(
            matches!(p.on_key(KeyEvent::from(KeyCode::Enter), &s), PickerAction::Open(x) if x == PathBuf::from("/s/c.jsonl"))
        );
    }
}
