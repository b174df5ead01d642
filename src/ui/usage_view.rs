//! The usage view (`$`): what the sessions' model calls cost, by day as a bar chart, by model
//! and by project as tables, over a period that `p` switches; opened from a session, also that
//! session's cost over time with its compactions marked.
//!
//! A component of its own: its state, `update` (pure: an action in, whether it was used out)
//! and `draw`. The calls are read by a job (`UsageJob`); the reports are made here from them
//! when the data, the tab or the period changes, never on a draw.

use super::action::Action;
use super::picker::{money, tokens_short};
use super::theme::*;
use crate::engine::usage::{self, By, Period, Report, Totals};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Bar, BarChart, Block, Borders, Chart, Clear, Dataset, GraphType, Paragraph, Row, Table};

pub use super::jobs::UsageData;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Days,
    Models,
    Projects,
    /// The open session's cost over time.
    Session,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The period the view covers, ending today.
pub enum Recent {
    Week,
    Month,
    Year,
    All,
}

impl Recent {
    fn days(self) -> Option<i64> {
        match self {
            Recent::Week => Some(7),
            Recent::Month => Some(30),
            Recent::Year => Some(365),
            Recent::All => None,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Recent::Week => "last 7 days",
            Recent::Month => "last 30 days",
            Recent::Year => "last 365 days",
            Recent::All => "all time",
        }
    }
    fn next(self) -> Recent {
        match self {
            Recent::Week => Recent::Month,
            Recent::Month => Recent::Year,
            Recent::Year => Recent::All,
            Recent::All => Recent::Week,
        }
    }
}

/// The open session's cost over time, made once when the data arrives (not on each draw).
struct SessionChart {
    /// (time since its first call, cost so far) per call, in `unit`.
    line: Vec<(f64, f64)>,
    /// Its compactions, on the line.
    marks: Vec<(f64, f64)>,
    unit: &'static str,
    total: f64,
}

impl SessionChart {
    fn of(d: &UsageData) -> Option<SessionChart> {
        let (path, compactions) = d.session.as_ref()?;
        let p = path.display().to_string();
        let mut calls: Vec<&usage::Call> = d
            .sessions
            .iter()
            .filter(|s| s.path == p)
            .flat_map(|s| s.calls.iter())
            .filter(|c| c.at_ms.is_some())
            .collect();
        calls.sort_by_key(|c| c.at_ms);
        let t0 = calls.first()?.at_ms.unwrap_or(0);
        let t1 = calls.last().and_then(|c| c.at_ms).unwrap_or(t0);
        // Hours for a day or two, days beyond.
        let (unit_ms, unit) = if t1 - t0 > 2 * 86_400_000 {
            (86_400_000.0, "days")
        } else {
            (3_600_000.0, "hours")
        };
        let x = |ms: i64| (ms - t0) as f64 / unit_ms;
        let mut total = 0.0;
        let line: Vec<(f64, f64)> = calls
            .iter()
            .map(|c| {
                total += match usage::cost_of(c, &d.models) {
                    usage::Cost::Recorded(x) | usage::Cost::Estimated(x) => x,
                    usage::Cost::Unknown => 0.0,
                };
                (x(c.at_ms.unwrap_or(t0)), total)
            })
            .collect();
        // A compaction sits on the line where the cost was when it happened.
        let marks = compactions
            .iter()
            .map(|&ms| {
                let at = line.partition_point(|p| p.0 <= x(ms));
                (x(ms), at.checked_sub(1).map_or(0.0, |k| line[k].1))
            })
            .collect();
        Some(SessionChart {
            line,
            marks,
            unit,
            total,
        })
    }
}

pub struct UsageView {
    pub generation: u64,
    pub data: Option<Box<UsageData>>,
    pub tab: Tab,
    pub span: Recent,
    /// The report for the tab and period (made when either changes).
    report: Option<Report>,
    pub scroll: usize,
    /// The day selected in the bar chart, counted back from the newest (0: today).
    pub day_back: usize,
    /// Whether a session was open when the view was asked for (the Session tab exists).
    pub from_session: bool,
    chart: Option<SessionChart>,
}

impl UsageView {
    pub fn new(generation: u64, from_session: bool) -> UsageView {
        UsageView {
            generation,
            data: None,
            tab: if from_session { Tab::Session } else { Tab::Days },
            span: Recent::Month,
            report: None,
            scroll: 0,
            day_back: 0,
            from_session,
            chart: None,
        }
    }

    pub fn set_data(&mut self, data: Box<UsageData>) {
        if data.generation == self.generation {
            self.chart = SessionChart::of(&data);
            self.data = Some(data);
            self.rebuild();
        }
    }

    fn tabs(&self) -> Vec<Tab> {
        let mut t = vec![Tab::Days, Tab::Models, Tab::Projects];
        if self.from_session {
            t.push(Tab::Session);
        }
        t
    }

    /// The report of the tab and period from the data.
    fn rebuild(&mut self) {
        let Some(d) = &self.data else { return };
        let by = match self.tab {
            Tab::Days | Tab::Session => By::Day,
            Tab::Models => By::Model,
            Tab::Projects => By::Project,
        };
        // The session's own chart covers all of it.
        let since = match self.tab {
            Tab::Session => None,
            _ => self
                .span
                .days()
                .and_then(|n| usage::day(d.now_ms - (n - 1) * 86_400_000, &d.tz)),
        };
        let period = Period {
            since: since.map(|s| s.replace('-', "")),
            until: None,
            tz: d.tz.clone(),
        };
        // The session's own tab reports on its file alone (no copy of the calls).
        let only = match (self.tab, &d.session) {
            (Tab::Session, Some((p, _))) => Some(p.display().to_string()),
            _ => None,
        };
        let sessions = d.sessions.iter().filter(|s| only.as_ref().is_none_or(|p| &s.path == p));
        self.report = Some(usage::report(sessions, by, &period, &d.models));
        self.scroll = 0;
        self.day_back = self.day_back.min(self.days().len().saturating_sub(1));
    }

    fn render(&self, f: &mut Frame, area: Rect) {
        f.render_widget(Clear, area);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(fg(ACCENT))
            .title(Span::styled(" usage · what the model calls cost ", title()));
        let inner = block.inner(area);
        f.render_widget(block, area);
        let [head, body, foot] =
            Layout::vertical([Constraint::Length(2), Constraint::Min(3), Constraint::Length(4)]).areas(inner);
        f.render_widget(Paragraph::new(self.head_lines()), head);
        let (Some(d), Some(r)) = (&self.data, &self.report) else {
            f.render_widget(
                Paragraph::new(Span::styled(" reading every session's usage…", fg(MUTED))),
                body,
            );
            return;
        };
        match self.tab {
            Tab::Days => self.draw_days(f, body, d, r),
            Tab::Models | Tab::Projects => self.draw_table(f, body, r),
            Tab::Session => self.draw_session(f, body),
        }
        f.render_widget(Paragraph::new(foot_lines(d, r, self.tab)), foot);
    }

    fn head_lines(&self) -> Vec<Line<'static>> {
        let mut tabs = vec![Span::raw(" ")];
        for t in self.tabs() {
            let name = match t {
                Tab::Days => "by day",
                Tab::Models => "by model",
                Tab::Projects => "by project",
                Tab::Session => "this session",
            };
            let style = if t == self.tab {
                Style::default()
                    .fg(ACCENT)
                    .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
            } else {
                fg(MUTED)
            };
            tabs.push(Span::styled(name, style));
            tabs.push(Span::raw("   "));
        }
        let zone = self
            .data
            .as_ref()
            .map(|d| format!(" · days in {}", d.tz.iana_name().unwrap_or("local time")))
            .unwrap_or_default();
        let span = if self.tab == Tab::Session {
            "the whole session"
        } else {
            self.span.name()
        };
        vec![
            Line::from(tabs),
            Line::from(Span::styled(
                format!(" {span}{zone} · tab: view · p: period · esc: close"),
                fg(DIM),
            )),
        ]
    }

    /// The days of the chart, oldest first: every day of the period (days without a call
    /// too), or for all time the days that have calls.
    fn days(&self) -> Vec<String> {
        let (Some(d), Some(r)) = (&self.data, &self.report) else {
            return vec![];
        };
        match self.span.days() {
            Some(n) => (0..n)
                .rev()
                .filter_map(|k| usage::day(d.now_ms - k * 86_400_000, &d.tz))
                .collect(),
            None => r.rows.keys().cloned().collect(),
        }
    }

    /// Cost per day as bars, the newest on the right; days without a call are shown empty.
    /// The selected day is brighter; the footer gives its numbers.
    fn draw_days(&self, f: &mut Frame, area: Rect, _d: &UsageData, r: &Report) {
        let days = self.days();
        if r.rows.is_empty() {
            f.render_widget(
                Paragraph::new(Span::styled(" no model calls in this period", fg(MUTED))),
                area,
            );
            return;
        }
        // As many bars as fit: the newest days.
        let gap = 1u16;
        let fit = (area.width / 3).max(1) as usize;
        let selected = days.len().saturating_sub(1 + self.day_back);
        let start = selected.min(days.len().saturating_sub(fit));
        let shown = &days[start..(start + fit).min(days.len())];
        let bar_w = ((area.width as usize / shown.len().max(1)).saturating_sub(gap as usize)).clamp(2, 9) as u16;
        // Calls of models without prices cost nothing: their bars show tokens instead, and
        // say so, rather than an empty chart.
        let priced = shown.iter().any(|d| r.rows.get(d).is_some_and(|(t, _)| t.cost > 0.0));
        let mut unpriced: Vec<&str> = shown
            .iter()
            .filter_map(|d| r.rows.get(d))
            .flat_map(|(_, models)| models.iter().filter(|(_, t)| t.cost == 0.0).map(|(m, _)| m.as_str()))
            .collect();
        unpriced.sort_unstable();
        unpriced.dedup();
        let area = if priced || unpriced.is_empty() {
            area
        } else {
            let [note, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(2)]).areas(area);
            let text = format!(
                " no prices for {} (models.json gives none): the bars show tokens",
                unpriced.join(", ")
            );
            f.render_widget(Paragraph::new(Span::styled(text, fg(MUTED))), note);
            rest
        };
        let bars: Vec<Bar> = shown
            .iter()
            .enumerate()
            .map(|(k, day)| {
                let cost = r.rows.get(day).map(|(t, _)| t.cost).unwrap_or(0.0);
                if !priced {
                    let tokens = r.rows.get(day).map(|(t, _)| t.tokens.total()).unwrap_or(0.0);
                    let style = if start + k == selected { fg(WARNING) } else { fg(ACCENT) };
                    let label = if bar_w >= 5 { &day[5..] } else { &day[8..] };
                    return Bar::new(tokens.round() as u64)
                        .label(Line::from(label.to_string()))
                        .text_value(if bar_w >= 6 {
                            tokens_short(tokens)
                        } else {
                            String::new()
                        })
                        .style(style);
                }
                let style = if start + k == selected { fg(WARNING) } else { fg(ACCENT) };
                let label = if bar_w >= 5 {
                    day[5..].to_string()
                } else {
                    day[8..].to_string()
                };
                Bar::new((cost * 100.0).round() as u64)
                    .label(Line::from(label))
                    .text_value(if bar_w >= 6 { money(cost) } else { String::new() })
                    .style(style)
            })
            .collect();
        let chart = BarChart::vertical(bars)
            .bar_width(bar_w)
            .bar_gap(gap)
            .value_style(Style::default().fg(ratatui::style::Color::Black).bg(ACCENT))
            .label_style(fg(MUTED));
        let [bars, about] = Layout::vertical([Constraint::Min(2), Constraint::Length(1)]).areas(area);
        f.render_widget(chart, bars);
        let Some(day) = days.get(selected) else { return };
        let text = match r.rows.get(day) {
            Some((t, models)) => format!(
                " {day}: {} · {} calls · {} tokens · {}",
                money(t.cost),
                crate::engine::edit::prune::thousands(t.calls),
                tokens_short(t.tokens.total()),
                models
                    .iter()
                    .map(|(m, t)| format!("{m} {}", money(t.cost)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => format!(" {day}: no calls"),
        };
        f.render_widget(Paragraph::new(Span::styled(text, fg(WARNING))), about);
    }

    fn draw_table(&self, f: &mut Frame, area: Rect, r: &Report) {
        let mut rows: Vec<(&String, &Totals)> = r.rows.iter().map(|(k, (t, _))| (k, t)).collect();
        rows.sort_by(|a, b| b.1.cost.total_cmp(&a.1.cost).then(a.0.cmp(b.0)));
        let what = if self.tab == Tab::Models { "model" } else { "project" };
        let header = Row::new(
            std::iter::once(what.to_string())
                .chain(["calls", "input", "output", "cache read", "cache write", "cost"].map(String::from)),
        )
        .style(fg(DIM));
        let skip = self.scroll.min(rows.len().saturating_sub(1));
        let body: Vec<Row> = rows
            .iter()
            .skip(skip)
            .map(|(k, t)| {
                Row::new(vec![
                    k.to_string(),
                    crate::engine::edit::prune::thousands(t.calls),
                    tokens_short(t.tokens.input),
                    tokens_short(t.tokens.output),
                    tokens_short(t.tokens.cache_read),
                    tokens_short(t.tokens.cache_write),
                    format!("{}{}", money(t.cost), if t.estimated > 0.0 { "*" } else { "" }),
                ])
            })
            .collect();
        let widths = [
            Constraint::Min(20),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Length(10),
            Constraint::Length(11),
            Constraint::Length(10),
        ];
        f.render_widget(Table::new(body, widths).header(header), area);
    }

    /// The session's cumulative cost over time, compactions marked where they happened.
    fn draw_session(&self, f: &mut Frame, area: Rect) {
        let Some(SessionChart {
            line,
            marks,
            unit,
            total,
        }) = &self.chart
        else {
            f.render_widget(
                Paragraph::new(Span::styled(" this session has no model call with usage", fg(MUTED))),
                area,
            );
            return;
        };
        let total = *total;
        let unit = *unit;
        let span_h = line.last().map_or(1.0, |p| p.0).max(0.01);
        let y_max = (total * 1.1).max(0.01);
        let chart = Chart::new(vec![
            Dataset::default()
                .name("cost so far")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(fg(ACCENT))
                .data(line),
            Dataset::default()
                .name("compaction")
                .marker(Marker::Block)
                .graph_type(GraphType::Scatter)
                .style(fg(WARNING))
                .data(marks),
        ])
        .x_axis(
            Axis::default()
                .title(Span::styled(unit, fg(DIM)))
                .bounds([0.0, span_h])
                .labels(vec![Span::raw("0"), Span::raw(format!("{span_h:.1}"))])
                .style(fg(DIM)),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, y_max])
                .labels(vec![Span::raw("$0"), Span::raw(money(y_max))])
                .style(fg(DIM)),
        )
        // The cost only grows: the top left is where the line never is.
        .legend_position(Some(ratatui::widgets::LegendPosition::TopLeft));
        f.render_widget(chart, area);
    }
}

/// The footer: the totals of the period, the cache, the summary calls and the copies.
fn foot_lines(d: &UsageData, r: &Report, tab: Tab) -> Vec<Line<'static>> {
    let t = &r.total;
    let mut lines = vec![Line::from(vec![
        Span::styled(" total ", fg(DIM)),
        Span::styled(money(t.cost), title()),
        Span::styled(
            format!(
                " · {} calls · {} tokens ({} in, {} out, {} cache read, {} cache write){}",
                crate::engine::edit::prune::thousands(t.calls),
                tokens_short(t.tokens.total()),
                tokens_short(t.tokens.input),
                tokens_short(t.tokens.output),
                tokens_short(t.tokens.cache_read),
                tokens_short(t.tokens.cache_write),
                if t.estimated > 0.0 {
                    format!(" · {} estimated (*)", money(t.estimated))
                } else {
                    String::new()
                }
            ),
            fg(MUTED),
        ),
    ])];
    lines.push(Line::from(Span::styled(
        format!(
            " cache: {:.0}% of prompt tokens read from the cache, {} saved",
            t.cache_read_share() * 100.0,
            money(t.cache_saved)
        ),
        fg(MUTED),
    )));
    let side: Vec<String> = r
        .side_calls
        .iter()
        .map(|(k, t)| {
            format!(
                "{k} {} ({})",
                money(t.cost),
                crate::engine::edit::prune::thousands(t.calls)
            )
        })
        .collect();
    if !side.is_empty() {
        lines.push(Line::from(Span::styled(
            format!(" summaries and other calls: {}", side.join(" · ")),
            fg(MUTED),
        )));
    }
    let mut last = vec![];
    if r.copies.calls > 0 {
        last.push(format!(
            "{} copied call{} in forks and clones left out ({})",
            crate::engine::edit::prune::thousands(r.copies.calls),
            if r.copies.calls == 1 { "" } else { "s" },
            money(r.copies.cost)
        ));
    }
    if tab != Tab::Session {
        last.push(format!("{} sessions read in {} ms", d.sessions.len(), d.elapsed_ms));
    }
    if d.skipped > 0 {
        last.push(if d.skipped == 1 {
            "1 file not a session".to_string()
        } else {
            format!("{} files not sessions", d.skipped)
        });
    }
    lines.push(Line::from(Span::styled(format!(" {}", last.join(" · ")), fg(DIM))));
    lines
}

impl crate::ui::component::Drawable for UsageView {
    type View<'a> = ();
    fn draw(&self, f: &mut Frame, area: Rect, _: ()) {
        self.render(f, area)
    }
}

impl crate::ui::component::Component for UsageView {
    type Lent<'a> = ();
    const NAME: &'static str = "usage view";

    /// What a key means here: tabs, periods, days and rows; Esc closes, ? shows the keys.
    fn update(&mut self, action: &crate::ui::action::Action, (): Self::Lent<'_>) -> Vec<crate::ui::component::Effect> {
        use super::component::{self, Effect};
        let tabs = self.tabs();
        let at = tabs.iter().position(|t| *t == self.tab).unwrap_or(0);
        match action {
            Action::NextTab => {
                self.tab = tabs[(at + 1) % tabs.len()];
                self.rebuild();
            }
            Action::PrevTab => {
                self.tab = tabs[(at + tabs.len() - 1) % tabs.len()];
                self.rebuild();
            }
            Action::NextPeriod => {
                self.span = self.span.next();
                self.rebuild();
            }
            // In the chart: an older or newer day; in a table: scroll.
            Action::Up | Action::Down | Action::PageUp | Action::PageDown if self.tab == Tab::Days => {
                let last = self.days().len().saturating_sub(1);
                self.day_back = match action {
                    Action::Up => self.day_back + 1,
                    Action::Down => self.day_back.saturating_sub(1),
                    Action::PageUp => last,
                    _ => 0,
                }
                .min(last);
            }
            Action::Up | Action::Down | Action::PageUp | Action::PageDown if self.tab != Tab::Session => {
                let last = self.report.as_ref().map_or(0, |r| r.rows.len().saturating_sub(1));
                self.scroll = match action {
                    Action::Up => self.scroll.saturating_sub(1),
                    Action::Down => self.scroll + 1,
                    Action::PageUp => 0,
                    _ => self.scroll + 10,
                }
                .min(last);
            }
            Action::Close => return vec![Effect::Close],
            Action::OpenHelp => return vec![Effect::Help(super::keymap::Mode::Usage)],
            _ => return component::ignored(),
        }
        component::changed()
    }
}

/// The usage view owns its job: the figures go to it.
impl crate::ui::runner::Answers<super::jobs::UsageJob> for UsageView {
    type Effects = Vec<crate::ui::component::Effect>;
    fn answer(&mut self, data: Box<UsageData>) -> Vec<crate::ui::component::Effect> {
        self.set_data(data);
        vec![]
    }
}

#[cfg(test)]
pub mod snapshots {
    use super::*;
    use crate::engine::load::models::Registry;
    use crate::engine::usage::SessionCalls;
    use crate::ui::component::Component;
    use std::path::PathBuf;
    use std::sync::Arc;

    const DAY: i64 = 86_400_000;
    /// 2026-11-25 12:00 UTC.
    const NOW: i64 = 1_795_608_000_000;

    fn call(kind: usage::CallKind, id: &str, at: i64, model: &str, input: f64, cost: Option<f64>) -> usage::Call {
        let ts = jiff::Timestamp::from_millisecond(at).unwrap().to_string();
        usage::Call {
            kind,
            id: id.into(),
            timestamp: ts,
            at_ms: Some(at),
            model: model.into(),
            tokens: usage::Tokens {
                input,
                output: input / 20.0,
                cache_read: input * 2.0,
                cache_write: 0.0,
            },
            total_tokens: input * 3.05,
            cost,
            cost_input_read: cost.map(|c| (c * 0.6, c * 0.1)),
            odd: false,
        }
    }

    /// Two projects over ten days, two models, a compaction, a fork's copied call.
    pub fn data(session: bool) -> Box<UsageData> {
        let sonnet = "anthropic/claude-sonnet-4-5";
        let mini = "openai/gpt-5-mini";
        let mut ledger = vec![];
        for d in 0..10i64 {
            for k in 0..(1 + d % 3) {
                let at = NOW - (9 - d) * DAY - 3 * 3_600_000 + k * 600_000;
                ledger.push(call(
                    usage::CallKind::Reply,
                    &format!("l{d}-{k}"),
                    at,
                    sonnet,
                    20_000.0 + 3_000.0 * (d as f64),
                    Some(0.05 + 0.02 * d as f64),
                ));
            }
        }
        ledger.push(call(
            usage::CallKind::Compaction,
            "c1",
            NOW - 4 * DAY,
            "",
            30_000.0,
            Some(0.09),
        ));
        let acme: Vec<usage::Call> = (0..6)
            .map(|k| {
                call(
                    usage::CallKind::Reply,
                    &format!("a{k}"),
                    NOW - (5 - k) * DAY,
                    mini,
                    8_000.0,
                    None,
                )
            })
            .collect();
        let fork = vec![ledger[0].clone()];
        let s = |path: &str, project: &str, created: &str, calls: Vec<usage::Call>| SessionCalls {
            path: path.into(),
            project: project.into(),
            name: None,
            created: created.into(),
            calls,
        };
        Box::new(UsageData {
            generation: 1,
            sessions: vec![
                s("/s/--ledger--/a.jsonl", "/home/dev/ledger", "2026-11-01", ledger),
                s("/s/--ledger--/fork.jsonl", "/home/dev/ledger", "2026-11-20", fork),
                s("/s/--acme--/b.jsonl", "/home/dev/acme", "2026-11-02", acme),
            ],
            skipped: 1,
            tz: jiff::tz::TimeZone::UTC,
            models: Arc::new(Registry::builtin_only()),
            now_ms: NOW,
            session: session.then(|| (PathBuf::from("/s/--ledger--/a.jsonl"), vec![NOW - 4 * DAY])),
            elapsed_ms: 12,
        })
    }

    fn draw(v: &UsageView, w: u16, h: u16) -> String {
        crate::ui::tests::screen(w, h, |f| v.render(f, f.area()))
    }

    /// Calls of a model without prices: the day chart shows their tokens and says why, not
    /// an empty box.
    #[test]
    fn an_unpriced_models_days_show_tokens_and_say_so() {
        let calls = (0..3)
            .map(|k| {
                call(
                    usage::CallKind::Reply,
                    &format!("f{k}"),
                    NOW - k * DAY,
                    "fakeco/fake-model",
                    10_000.0 * (k + 1) as f64,
                    None,
                )
            })
            .collect();
        let mut d = data(false);
        d.sessions = vec![SessionCalls {
            path: "/s/--x--/f.jsonl".into(),
            project: "/home/dev/x".into(),
            name: None,
            created: "2026-11-20".into(),
            calls,
        }];
        let mut v = UsageView::new(1, false);
        v.set_data(d);
        v.tab = Tab::Days;
        let screen = draw(&v, 100, 22);
        assert!(
            screen.contains("no prices for fakeco/fake-model (models.json gives none): the bars show tokens"),
            "{screen}"
        );
        assert!(screen.contains('█'), "bars are drawn:\n{screen}");
    }

    #[test]
    fn usage_view_by_day_model_project_and_session() {
        let mut v = UsageView::new(1, true);
        // Before the job answers: says it is reading.
        insta::assert_snapshot!("usage_reading", draw(&v, 100, 8));
        v.set_data(data(true));
        assert_eq!(v.tab, Tab::Session);
        insta::assert_snapshot!("usage_session", draw(&v, 100, 22));
        assert!(v.update(&Action::NextTab, ()).is_empty());
        assert_eq!(v.tab, Tab::Days);
        insta::assert_snapshot!("usage_days", draw(&v, 100, 22));
        v.update(&Action::NextTab, ());
        insta::assert_snapshot!("usage_models", draw(&v, 100, 14));
        v.update(&Action::NextTab, ());
        insta::assert_snapshot!("usage_projects", draw(&v, 100, 14));
        // The period: 7 days leaves out the older calls.
        let month = v.report.as_ref().unwrap().total.calls;
        v.update(&Action::NextPeriod, ());
        v.update(&Action::NextPeriod, ());
        v.update(&Action::NextPeriod, ());
        assert_eq!(v.span, Recent::Week);
        let week = v.report.as_ref().unwrap().total.calls;
        assert!(week < month, "{week} < {month}");
        assert!(matches!(
            v.update(&Action::Quit, ())[..],
            [crate::ui::component::Effect::Ignored]
        ));
        assert!(matches!(
            v.update(&Action::Close, ())[..],
            [crate::ui::component::Effect::Close]
        ));
        assert!(matches!(
            v.update(&Action::OpenHelp, ())[..],
            [crate::ui::component::Effect::Help(crate::ui::keymap::Mode::Usage)]
        ));
    }

    #[test]
    fn data_for_another_generation_is_dropped() {
        let mut v = UsageView::new(2, false);
        v.set_data(data(false));
        assert!(v.data.is_none() && v.report.is_none());
        assert_eq!(v.tab, Tab::Days);
        assert_eq!(v.tabs(), [Tab::Days, Tab::Models, Tab::Projects]);
    }
}
