//! Dialogs for the actions that write: navigate (Pi's three choices), compact (instructions,
//! preview of the summary, accept / edit / discard), label, rename, fork, clone.
//! Every write goes through `store::append_with` (re-read, re-check, one write, fsync).

use super::app::App;
use super::theme::*;
use crate::engine::actions::{self, IdSource, Summary};
use crate::engine::compaction::CompactionSettings;
use crate::engine::context;
use crate::engine::entry::Role;
use crate::engine::session::Session;
use crate::store;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum InputPurpose {
    Label { target: usize },
    Rename,
    NavigateInstructions { target: usize },
    CompactInstructions { leaf: usize },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Dialog {
    Navigate {
        target: usize,
        choice: usize,
    },
    Input {
        purpose: InputPurpose,
        text: String,
    },
    CompactPreview {
        leaf: usize,
        instructions: String,
        summary: String,
        scroll: usize,
        /// Which summarizer wrote it (`offline` or provider/model).
        by: String,
        streaming: bool,
        usage: Option<Value>,
    },
    /// A branch summary being written by a model before the navigation is appended.
    Summarizing {
        target: usize,
        text: String,
        by: String,
    },
}

pub const NAV_CHOICES: [&str; 3] = ["No summary", "Summarize", "Summarize with custom prompt"];

/// What the event loop must do outside the app (the terminal is needed).
#[derive(Debug, Clone, PartialEq)]
pub enum External {
    /// Edit this text in $EDITOR and hand it back to the compact preview.
    EditSummary(String),
}

fn id(s: &Session, i: usize) -> String {
    s.entries[i].id.to_string()
}

impl App {
    fn writable(&mut self) -> bool {
        if self.path.is_none() {
            self.status = Some("the demo session is read-only; open a Pi session to write".into());
            return false;
        }
        true
    }

    /// Write entries built on the freshest file, reload, and select `select` (or the leaf).
    fn write_and_reload(
        &mut self,
        what: &str,
        build: impl FnMut(&Session) -> Result<Vec<Value>, String>,
    ) -> Option<Vec<Value>> {
        let path = self.path.clone()?;
        let mut built = vec![];
        let mut build = build;
        match store::append_with(&path, |s| {
            let v = build(s)?;
            built = v.clone();
            Ok(v)
        }) {
            Ok((_, appended)) => {
                match crate::store::load_session(&path) {
                    Ok(s) => {
                        self.replace_session(s);
                        if let Some(leaf) = self.session.leaf() {
                            self.view.select_entry(&self.session.clone(), leaf);
                            self.on_selection_changed();
                        }
                    }
                    Err(e) => self.status = Some(format!("wrote, but reload failed: {e}")),
                }
                let mut msg = format!("wrote {what}");
                if appended.recently_written {
                    msg.push_str(" · Pi seems to be running: it sees this after reopening the session");
                }
                self.status = Some(msg);
                self.live = false;
                Some(built)
            }
            Err(e) => {
                self.status = Some(e.to_string());
                None
            }
        }
    }

    pub fn open_navigate(&mut self) {
        let Some(t) = self.selected() else { return };
        if Some(t) == self.session.leaf() {
            self.status = Some("Already at this point".into());
            return;
        }
        if !self.writable() {
            return;
        }
        if self.settings.branch_skip_prompt() {
            self.navigate(t, false, None);
        } else {
            self.dialog = Some(Dialog::Navigate { target: t, choice: 0 });
        }
    }

    pub fn open_compact(&mut self) {
        let Some(leaf) = self.selected() else { return };
        if self.writable() {
            self.dialog = Some(Dialog::Input {
                purpose: InputPurpose::CompactInstructions { leaf },
                text: String::new(),
            });
        }
    }

    pub fn open_label(&mut self) {
        let Some(t) = self.selected() else { return };
        if self.writable() {
            let text = self
                .session
                .label_of(&self.session.entries[t].id)
                .unwrap_or("")
                .to_string();
            self.dialog = Some(Dialog::Input {
                purpose: InputPurpose::Label { target: t },
                text,
            });
        }
    }

    pub fn open_rename(&mut self) {
        if self.writable() {
            let text = self.session.session_name().unwrap_or("").to_string();
            self.dialog = Some(Dialog::Input {
                purpose: InputPurpose::Rename,
                text,
            });
        }
    }

    fn budget(&self, s: &Session) -> i64 {
        let w = self
            .gauge
            .as_ref()
            .and_then(|g| g.window)
            .filter(|w| *w > 0)
            .unwrap_or(128000);
        let _ = s;
        w as i64 - self.settings.branch_reserve_tokens() as i64
    }

    /// The model summarizer for the session at `leaf`, if a key is configured.
    pub fn summarizer(&self, leaf: usize) -> Option<crate::llm::summarize::Summarizer> {
        if let Some(s) = &self.summarizer_override {
            return Some(s.clone());
        }
        if self.force_offline {
            return None;
        }
        let proj = context::project(&self.session, &self.session.path_to(leaf));
        let model = proj.model.and_then(|(p, m)| Some((p?, m?)));
        crate::llm::summarize::Summarizer::resolve(
            &self.registry,
            &crate::store::config::agent_dir(),
            None,
            model.as_ref().map(|(p, m)| (p.as_str(), m.as_str())),
        )
        .ok()
    }

    fn start_llm(&mut self, summarizer: crate::llm::summarize::Summarizer, kind: super::app::LlmKind) -> u64 {
        self.generation += 1;
        let id = self.generation;
        let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.llm_job = Some((id, cancel.clone()));
        self.jobs.push(super::app::Job::Llm {
            id,
            session: self.session.clone(),
            summarizer: Box::new(summarizer),
            kind,
            cancel,
            chunks: None,
        });
        id
    }

    pub fn cancel_llm(&mut self) {
        if let Some((_, c)) = self.llm_job.take() {
            c.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.dialog = None;
        self.status = Some("summary cancelled; nothing written".into());
    }

    pub fn on_llm_chunk(&mut self, job: u64, text: &str) {
        if self.llm_job.as_ref().map(|j| j.0) != Some(job) {
            return;
        }
        match &mut self.dialog {
            Some(Dialog::CompactPreview {
                summary,
                streaming: true,
                ..
            }) => summary.push_str(text),
            Some(Dialog::Summarizing { text: t, .. }) => t.push_str(text),
            _ => {}
        }
    }

    pub fn on_llm_done(&mut self, job: u64, result: Result<Summary, String>) {
        if self.llm_job.as_ref().map(|j| j.0) != Some(job) {
            return;
        }
        self.llm_job = None;
        match (self.dialog.take(), result) {
            (
                Some(Dialog::CompactPreview {
                    leaf, instructions, by, ..
                }),
                Ok(sm),
            ) => {
                self.dialog = Some(Dialog::CompactPreview {
                    leaf,
                    instructions,
                    summary: sm.text,
                    scroll: 0,
                    by,
                    streaming: false,
                    usage: sm.usage,
                })
            }
            (Some(Dialog::Summarizing { target, .. }), Ok(sm)) => self.navigate_with(target, Some(sm)),
            (_, Err(e)) => self.status = Some(format!("summary failed: {e}; nothing written")),
            (_, Ok(_)) => {}
        }
    }

    fn navigate(&mut self, target: usize, summarize: bool, instructions: Option<String>) {
        if summarize
            && let Some(old) = self.session.leaf()
            && let Some(sm) = self.summarizer(old)
        {
            let nav = actions::plan_navigation(&self.session, Some(old), target, self.budget(&self.session.clone()));
            if !nav.branch.entries.is_empty() {
                let by = format!("{}/{}", sm.model.provider, sm.model.id);
                self.start_llm(
                    sm,
                    super::app::LlmKind::Branch {
                        nav: Box::new(nav),
                        focus: instructions,
                        replace: false,
                    },
                );
                self.dialog = Some(Dialog::Summarizing {
                    target,
                    text: String::new(),
                    by,
                });
                return;
            }
        }
        let summary = summarize.then(|| {
            let nav = actions::plan_navigation(
                &self.session,
                self.session.leaf(),
                target,
                self.budget(&self.session.clone()),
            );
            actions::offline_branch_summary(&self.session, &nav, instructions.as_deref())
        });
        self.navigate_with(target, summary.filter(|_| summarize));
    }

    fn navigate_with(&mut self, target: usize, summary: Option<Summary>) {
        let summarize = summary.is_some();
        let tid = id(&self.session, target);
        let old_leaf_id = self.session.leaf().map(|l| id(&self.session, l));
        let budget = self.budget(&self.session.clone());
        let mut editor_text = None;
        let done = self.write_and_reload(
            if summarize {
                "a branch summary"
            } else {
                "a navigation marker"
            },
            |s| {
                let t = s.idx_of(&tid).ok_or("the target is gone")?;
                let old = s.leaf();
                if old.map(|l| id(s, l)) != old_leaf_id {
                    return Err(
                        "Pi appended to the session meanwhile; look at the new entries and navigate again".into(),
                    );
                }
                let nav = actions::plan_navigation(s, old, t, budget);
                editor_text = nav.editor_text.clone();
                let mut ids = IdSource::new(s, crate::store::clock::entropy());
                let now = crate::store::clock::now_ms();
                Ok(vec![
                    if let (Some(sm), false) = (&summary, nav.branch.entries.is_empty()) {
                        actions::branch_summary_entry(s, &nav, sm, &ids.next(), now)
                    } else {
                        actions::navigation_marker(s, &nav, &ids.next(), now)
                    },
                ])
            },
        );
        if done.is_some()
            && let Some(t) = editor_text.filter(|t| !t.is_empty())
        {
            self.clipboard = Some(t.clone());
            self.status = Some(format!(
                "navigated · the user message is on the clipboard: {}",
                crate::engine::tree_view::one_line(&t, 60)
            ));
        }
    }

    fn compact_summary(&self, leaf: usize, instructions: &str) -> Result<String, String> {
        let s = &self.session;
        let plan = actions::plan_compaction(s, leaf, self.compaction_settings()).map_err(|e| e.reason().to_string())?;
        let ins = Some(instructions).filter(|i| !i.trim().is_empty());
        Ok(actions::offline_compaction_summary(s, &plan, ins).text)
    }

    fn compaction_settings(&self) -> CompactionSettings {
        CompactionSettings {
            reserve_tokens: self.gauge.as_ref().map(|g| g.reserve).unwrap_or(16384),
            keep_recent_tokens: self.keep_recent,
        }
    }

    fn write_compaction(&mut self, leaf: usize, summary: String, usage: Option<Value>) {
        let leaf_id = id(&self.session, leaf);
        let expected = actions::plan_compaction(&self.session, leaf, self.compaction_settings())
            .ok()
            .map(|p| id(&self.session, p.first_kept_entry));
        let cs = self.compaction_settings();
        self.write_and_reload("a compaction", |s| {
            let l = s.idx_of(&leaf_id).ok_or("the leaf is gone")?;
            let plan = actions::plan_compaction(s, l, cs).map_err(|e| e.reason().to_string())?;
            if Some(id(s, plan.first_kept_entry)) != expected {
                return Err("the session changed and the cut moved; preview again".into());
            }
            let sm = Summary {
                text: summary.clone(),
                usage: usage.clone(),
            };
            Ok(vec![actions::compaction_entry(
                s,
                l,
                &plan,
                &sm,
                &IdSource::new(s, crate::store::clock::entropy()).next(),
                crate::store::clock::now_ms(),
            )])
        });
    }

    /// Keys while a dialog is open. Returns true to redraw.
    pub fn on_dialog_key(&mut self, key: KeyEvent) -> bool {
        let Some(d) = self.dialog.clone() else { return false };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match d {
            Dialog::Navigate { target, choice } => match key.code {
                KeyCode::Esc => self.dialog = None,
                KeyCode::Up => {
                    self.dialog = Some(Dialog::Navigate {
                        target,
                        choice: (choice + 2) % 3,
                    })
                }
                KeyCode::Down => {
                    self.dialog = Some(Dialog::Navigate {
                        target,
                        choice: (choice + 1) % 3,
                    })
                }
                KeyCode::Enter => {
                    self.dialog = None;
                    match choice {
                        0 => self.navigate(target, false, None),
                        1 => self.navigate(target, true, None),
                        _ => {
                            self.dialog = Some(Dialog::Input {
                                purpose: InputPurpose::NavigateInstructions { target },
                                text: String::new(),
                            })
                        }
                    }
                }
                _ => {}
            },
            Dialog::Input { purpose, mut text } => {
                let multiline = matches!(
                    purpose,
                    InputPurpose::NavigateInstructions { .. } | InputPurpose::CompactInstructions { .. }
                );
                match key.code {
                    KeyCode::Esc => {
                        self.dialog = match purpose {
                            InputPurpose::NavigateInstructions { target } => {
                                Some(Dialog::Navigate { target, choice: 2 })
                            }
                            _ => None,
                        }
                    }
                    KeyCode::Enter if multiline && !ctrl && key.modifiers.contains(KeyModifiers::SHIFT) => {
                        text.push('\n');
                        self.dialog = Some(Dialog::Input { purpose, text });
                    }
                    KeyCode::Char('j') if ctrl && multiline => {
                        text.push('\n');
                        self.dialog = Some(Dialog::Input { purpose, text });
                    }
                    KeyCode::Enter => {
                        self.dialog = None;
                        self.submit_input(purpose, text);
                    }
                    KeyCode::Backspace => {
                        text.pop();
                        self.dialog = Some(Dialog::Input { purpose, text });
                    }
                    KeyCode::Char(c) if !ctrl => {
                        text.push(c);
                        self.dialog = Some(Dialog::Input { purpose, text });
                    }
                    _ => {}
                }
            }
            Dialog::Summarizing { .. } => {
                if key.code == KeyCode::Esc {
                    self.cancel_llm();
                }
            }
            Dialog::CompactPreview { streaming: true, .. } => {
                if key.code == KeyCode::Esc {
                    self.cancel_llm();
                }
            }
            Dialog::CompactPreview {
                leaf,
                instructions,
                summary,
                scroll,
                by,
                streaming,
                usage,
            } => match key.code {
                KeyCode::Char('a') | KeyCode::Enter => {
                    self.dialog = None;
                    self.write_compaction(leaf, summary, usage);
                }
                KeyCode::Char('e') => self.external = Some(External::EditSummary(summary)),
                KeyCode::Char('d') | KeyCode::Esc => {
                    self.dialog = None;
                    self.status = Some("compaction discarded; nothing written".into());
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    self.dialog = Some(Dialog::CompactPreview {
                        leaf,
                        instructions,
                        summary,
                        scroll: scroll + 1,
                        by,
                        streaming,
                        usage,
                    })
                }
                KeyCode::Up | KeyCode::Char('k') => {
                    self.dialog = Some(Dialog::CompactPreview {
                        leaf,
                        instructions,
                        summary,
                        scroll: scroll.saturating_sub(1),
                        by,
                        streaming,
                        usage,
                    })
                }
                _ => {}
            },
        }
        true
    }

    /// The edited summary comes back from $EDITOR.
    pub fn edited_summary(&mut self, text: String) {
        if let Some(Dialog::CompactPreview { summary, .. }) = &mut self.dialog {
            *summary = text;
        }
    }

    fn submit_input(&mut self, purpose: InputPurpose, text: String) {
        match purpose {
            InputPurpose::Label { target } => {
                let tid = id(&self.session, target);
                let label = text.trim().to_string();
                self.write_and_reload(if label.is_empty() { "a label clear" } else { "a label" }, |s| {
                    let t = s.idx_of(&tid).ok_or("the entry is gone")?;
                    Ok(vec![actions::label_entry(
                        s,
                        s.leaf(),
                        t,
                        Some(&label),
                        &IdSource::new(s, crate::store::clock::entropy()).next(),
                        crate::store::clock::now_ms(),
                    )])
                });
                if let Some(t) = self.session.idx_of(&tid) {
                    self.view.select_entry(&self.session.clone(), t);
                    self.on_selection_changed();
                }
            }
            InputPurpose::Rename => {
                self.write_and_reload("the session name", |s| {
                    Ok(vec![actions::session_info_entry(
                        s,
                        s.leaf(),
                        &text,
                        &IdSource::new(s, crate::store::clock::entropy()).next(),
                        crate::store::clock::now_ms(),
                    )])
                });
            }
            InputPurpose::NavigateInstructions { target } => self.navigate(target, true, Some(text)),
            InputPurpose::CompactInstructions { leaf } => {
                let plan = match actions::plan_compaction(&self.session, leaf, self.compaction_settings()) {
                    Ok(p) => p,
                    Err(e) => {
                        self.status = Some(format!("cannot compact: {}", e.reason()));
                        return;
                    }
                };
                match self.summarizer(leaf) {
                    Some(sm) => {
                        let by = format!("{}/{}", sm.model.provider, sm.model.id);
                        let thinking = self.projection_for(leaf).thinking_level;
                        let focus = Some(text.clone()).filter(|t| !t.trim().is_empty());
                        self.start_llm(
                            sm,
                            super::app::LlmKind::Compaction {
                                plan: Box::new(plan),
                                focus,
                                thinking,
                            },
                        );
                        self.dialog = Some(Dialog::CompactPreview {
                            leaf,
                            instructions: text,
                            summary: String::new(),
                            scroll: 0,
                            by,
                            streaming: true,
                            usage: None,
                        });
                    }
                    None => match self.compact_summary(leaf, &text) {
                        Ok(summary) => {
                            self.dialog = Some(Dialog::CompactPreview {
                                leaf,
                                instructions: text,
                                summary,
                                scroll: 0,
                                by: "offline".into(),
                                streaming: false,
                                usage: None,
                            })
                        }
                        Err(e) => self.status = Some(format!("cannot compact: {e}")),
                    },
                }
            }
        }
    }

    /// Fork before the selected user message, or clone the branch at the selection.
    pub fn fork_or_clone(&mut self, clone: bool) {
        let Some(sel) = self.selected() else { return };
        let Some(path) = self.path.clone() else {
            self.status = Some("the demo session is read-only".into());
            return;
        };
        let s = self.session.clone();
        let cut = if clone {
            Some(sel)
        } else {
            if s.entries[sel].message().map(|m| &m.role) != Some(&Role::User) {
                self.status = Some("fork works at a user message (like Pi's /fork)".into());
                return;
            }
            s.parent_of(sel)
        };
        let now = crate::store::clock::now_ms();
        let sid = actions::session_id(now, crate::store::clock::entropy());
        let abs = std::fs::canonicalize(&path).unwrap_or(path.clone());
        let cwd = s.header.cwd.clone().unwrap_or_default();
        let lines = actions::branched_session(
            &s,
            cut,
            actions::session_header(&sid, &cwd, Some(&abs.to_string_lossy()), now),
            crate::store::clock::entropy(),
        );
        let out = store::new_session_path(abs.parent().unwrap_or(std::path::Path::new(".")), &sid, now);
        match store::write_new(&out, &lines) {
            Ok(()) => {
                self.status = Some(format!(
                    "{} written: {} (o opens it)",
                    if clone { "clone" } else { "fork" },
                    out.display()
                ));
                if !clone {
                    let v = s.entry_value(sel);
                    self.clipboard = Some(context::content_text(v["message"].get("content"), ""));
                }
            }
            Err(e) => self.status = Some(e.to_string()),
        }
    }
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let Some(d) = &app.dialog else { return };
    let s = &app.session;
    let (title, lines, h): (String, Vec<Line>, u16) = match d {
        Dialog::Navigate { target, choice } => {
            let mut lines = vec![
                Line::from(Span::styled(
                    format!(" go to {} · line {}", id(s, *target), s.entries[*target].line),
                    fg(MUTED),
                )),
                Line::default(),
            ];
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
            lines.push(Line::from(Span::styled(
                " ↑↓ choose  enter select  esc cancel",
                fg(DIM),
            )));
            (" Summarize branch? ".into(), lines, 9)
        }
        Dialog::Input { purpose, text } => {
            let (t, hint) = match purpose {
                InputPurpose::Label { .. } => (" Label (empty to remove) ", " enter save  esc cancel"),
                InputPurpose::Rename => (" Session name ", " enter save  esc cancel"),
                InputPurpose::NavigateInstructions { .. } => (
                    " Custom summarization instructions ",
                    " enter summarize  ctrl+j newline  esc back",
                ),
                InputPurpose::CompactInstructions { .. } => (
                    " Compact: custom instructions (optional) ",
                    " enter preview the summary (offline summarizer)  ctrl+j newline  esc cancel",
                ),
            };
            let mut lines: Vec<Line> = text.split('\n').map(|l| Line::raw(format!(" > {l}"))).collect();
            if let Some(last) = lines.last_mut() {
                last.push_span(Span::styled("▏", fg(ACCENT)));
            }
            lines.push(Line::default());
            lines.push(Line::from(Span::styled(hint, fg(DIM))));
            let h = (lines.len() as u16 + 2).max(5);
            (t.into(), lines, h)
        }
        Dialog::CompactPreview {
            summary,
            scroll,
            by,
            streaming,
            ..
        } => {
            let hint = if *streaming {
                " streaming… esc cancels".to_string()
            } else {
                " a accept (append)  e edit in $EDITOR  d discard  ↑↓ scroll".to_string()
            };
            let mut lines = vec![Line::from(Span::styled(hint, fg(DIM)))];
            lines.extend(summary.lines().skip(*scroll).map(|l| {
                if l.starts_with('#') {
                    Line::from(Span::styled(l.to_string(), title_style()))
                } else {
                    Line::raw(l.to_string())
                }
            }));
            (
                format!(" Compaction summary ({by}) "),
                lines,
                area.height.saturating_sub(4),
            )
        }
        Dialog::Summarizing { text, by, .. } => {
            let mut lines = vec![Line::from(Span::styled(
                " Summarizing branch… (esc to cancel)",
                fg(DIM),
            ))];
            lines.extend(text.lines().map(|l| Line::raw(l.to_string())));
            (format!(" Branch summary ({by}) "), lines, area.height.saturating_sub(4))
        }
    };
    let w = (area.width.saturating_sub(4)).min(100);
    let h = h.min(area.height);
    let r = centered(area, w, h);
    f.render_widget(Clear, r);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(title, title_style()));
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), r);
}

fn title_style() -> Style {
    super::theme::title()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{app_for, render, shared};
    use crate::engine::entry::Kind;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::from(c)
    }

    fn temp_copy(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name.rsplit('/').next().unwrap());
        std::fs::copy(shared(name), &p).unwrap();
        (dir, p)
    }

    #[test]
    fn compact_dialog_preview_accept_writes_a_compaction() {
        let (_d, p) = temp_copy("pi-0.87.1/compacted-long.jsonl");
        let before = std::fs::read(&p).unwrap();
        let mut a = app_for(&p);
        a.keep_recent = 2000;
        a.on_key(KeyEvent::new(KeyCode::Char('C'), KeyModifiers::SHIFT));
        for c in "keep the log findings".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!("dialog_compact_instructions", render(&mut a, 100, 30));
        a.on_key(key(KeyCode::Enter));
        insta::assert_snapshot!("dialog_compact_preview", render(&mut a, 100, 30));
        a.on_key(key(KeyCode::Char('a')));
        let after = std::fs::read(&p).unwrap();
        assert_eq!(&after[..before.len()], &before[..], "append only");
        let leaf = a.session.leaf().unwrap();
        assert!(matches!(a.session.entries[leaf].kind, Kind::Compaction(_)));
        assert_eq!(a.selected(), Some(leaf), "the new compaction is selected");
        let text = a.session.entry_value(leaf)["summary"].as_str().unwrap().to_string();
        assert!(text.contains("Focus requested: keep the log findings"));
    }

    #[test]
    fn compact_dialog_discard_writes_nothing() {
        let (_d, p) = temp_copy("pi-0.87.1/compacted-long.jsonl");
        let before = std::fs::read(&p).unwrap();
        let mut a = app_for(&p);
        a.keep_recent = 2000;
        a.on_key(KeyEvent::new(KeyCode::Char('C'), KeyModifiers::SHIFT));
        a.on_key(key(KeyCode::Enter));
        a.on_key(key(KeyCode::Char('d')));
        assert!(a.dialog.is_none());
        assert_eq!(std::fs::read(&p).unwrap(), before);
    }

    #[test]
    fn navigate_dialog_offers_pis_three_choices() {
        let (_d, p) = temp_copy("pi-0.87.1/branching-small.jsonl");
        let mut a = app_for(&p);
        let s = a.session.clone();
        let first_user = (0..s.entries.len())
            .find(|&i| {
                s.entries[i]
                    .message()
                    .is_some_and(|m| m.role == crate::engine::entry::Role::User)
            })
            .unwrap();
        a.view.select_entry(&s, first_user);
        a.on_selection_changed();
        a.on_key(key(KeyCode::Enter));
        insta::assert_snapshot!("dialog_navigate", render(&mut a, 100, 30));
        a.on_key(key(KeyCode::Down));
        a.on_key(key(KeyCode::Down));
        a.on_key(key(KeyCode::Enter));
        for c in "what was tried".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!("dialog_navigate_custom", render(&mut a, 100, 30));
        a.on_key(key(KeyCode::Enter));
        let leaf = a.session.leaf().unwrap();
        assert!(
            matches!(a.session.entries[leaf].kind, Kind::BranchSummary(_)),
            "{:?}",
            a.status
        );
        assert_eq!(
            a.session.parent_of(leaf),
            s.parent_of(first_user),
            "a user target: the summary hangs under its parent"
        );
        assert!(a.status.as_deref().unwrap_or("").contains("clipboard"));
    }

    #[test]
    fn label_dialog_sets_and_clears() {
        let (_d, p) = temp_copy("pi-0.87.1/split-turn.jsonl");
        let mut a = app_for(&p);
        let target = a.selected().unwrap();
        let id = a.session.entries[target].id.clone();
        a.on_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT));
        for c in "checkpoint".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!("dialog_label", render(&mut a, 80, 24));
        a.on_key(key(KeyCode::Enter));
        assert_eq!(a.session.label_of(&id), Some("checkpoint"));
        a.view.select_entry(&a.session.clone(), a.session.idx_of(&id).unwrap());
        a.on_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::SHIFT));
        for _ in 0..10 {
            a.on_key(key(KeyCode::Backspace));
        }
        a.on_key(key(KeyCode::Enter));
        assert_eq!(a.session.label_of(&id), None);
    }

    #[test]
    fn rename_and_streaming_dialogs() {
        let (_d, p) = temp_copy("pi-0.87.1/split-turn.jsonl");
        let mut a = app_for(&p);
        a.on_key(KeyEvent::new(KeyCode::Char('R'), KeyModifiers::SHIFT));
        for c in " Split turn demo".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        insta::assert_snapshot!("dialog_rename", render(&mut a, 80, 24));
        a.on_key(key(KeyCode::Enter));
        assert_eq!(a.session.session_name(), Some("Split turn demo"));
        // A branch summary streaming from a model (state set directly: no network in tests).
        a.dialog = Some(super::Dialog::Summarizing {
            target: 3,
            text: "## Goal\n- Audit the invtrack package".into(),
            by: "anthropic/claude-haiku-4-5".into(),
        });
        insta::assert_snapshot!("dialog_branch_summary_streaming", render(&mut a, 80, 24));
        a.llm_job = Some((99, std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false))));
        a.on_key(key(KeyCode::Esc));
        assert!(a.dialog.is_none());
        assert!(a.status.as_deref().unwrap().contains("cancelled"));
    }

    #[test]
    fn ctrl_x_copies_like_pi() {
        let mut a = super::super::tests::demo_app();
        a.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL));
        assert_eq!(a.status.as_deref(), Some("Copied selected message to clipboard"));
        assert!(
            a.clipboard
                .as_deref()
                .unwrap()
                .starts_with("Added `tests/test_skipped.py`")
        );
    }

    #[test]
    fn demo_session_is_read_only() {
        let mut a = super::super::tests::demo_app();
        a.on_key(KeyEvent::new(KeyCode::Char('C'), KeyModifiers::SHIFT));
        assert!(a.dialog.is_none());
        assert!(a.status.as_deref().unwrap().contains("read-only"));
    }
}
