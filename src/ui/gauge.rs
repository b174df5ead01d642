//! The token gauge: context tokens at the selected entry (as Pi computes them: last usage
//! plus estimates after it, and the exact count), against the window, with the zones tied to
//! T = window − reserveTokens (where Pi auto-compacts) and the keepRecentTokens band.

use super::selection::{Gauge, Zone};
use super::theme::*;
use crate::engine::units::{self, Basis};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub fn zone_color(z: Option<Zone>) -> Color {
    match z {
        Some(Zone::Green) | None => SUCCESS,
        Some(Zone::Yellow) => WARNING,
        Some(Zone::Red) => ERROR,
        Some(Zone::Compact) => BORDER_ACCENT,
    }
}

/// A token figure as every view says it (`12,345`).
pub fn fmt(n: f64) -> String {
    units::tokens(n)
}

/// The zone as the gauge, the context view and `/ctx-status` name it: its colour, then what
/// it means.
pub fn zone_words(z: Zone) -> &'static str {
    z.words()
}

/// Two lines: the bar, and the numbers.
///
/// The bar: the fill in the zone's colour, the newest keepRecentTokens of it (what a
/// compaction keeps) as `▓`, ticks `┊` where the zones change (bounds × T) and `│` at T. The
/// numbers lead with what matters at any width: tokens, the zone, then the rest.
/// `after`: a previewed pruning's estimate before and after (a `◆` on the bar, Pi's figure
/// less what the edits save, and both figures in the line).
/// `live`: what bonsai's Pi package sends at this entry, of its messages by estimate (a `◇`
/// and both figures).
/// `counting`: no gauge yet because a job is walking the selected entry's path (a big
/// session's first frame), not because nothing is selected.
pub fn draw(
    f: &mut Frame,
    area: Rect,
    g: Option<&Gauge>,
    bounds: (f64, f64),
    after: Option<(u64, u64)>,
    live: Option<(u64, u64)>,
    counting: bool,
) {
    let Some(g) = g else {
        let msg = if counting {
            " counting the context of the selected entry…"
        } else {
            " no entry selected"
        };
        f.render_widget(Paragraph::new(Span::styled(msg, fg(MUTED))), area);
        return;
    };
    let zone = g.zone(bounds);
    let color = zone_color(zone);
    let bar = bar_spans(g, bounds, after, live, area.width.saturating_sub(2) as usize, color);
    let info = info_spans(g, zone, color, after, live);
    let lines = vec![Line::from(bar), Line::from(info)];
    f.render_widget(Paragraph::new(lines), area);
}

/// The bar: the context filled (the kept part shaded), the threshold, the zone ticks, what
/// pruning would leave (◆) and what the live policy sends (◇).
fn bar_spans(
    g: &Gauge,
    bounds: (f64, f64),
    after: Option<(u64, u64)>,
    live: Option<(u64, u64)>,
    width: usize,
    color: ratatui::style::Color,
) -> Vec<Span<'static>> {
    let mut bar: Vec<Span> = vec![Span::raw(" ")];
    if let Some(win) = g.window.filter(|w| *w > 0) {
        let col = |x: f64| ((x / win as f64) * width as f64).round().clamp(0.0, width as f64) as usize;
        let fill = col(g.tokens.tokens);
        let threshold = g.threshold().map(|t| t as f64);
        let t = threshold.map(col).unwrap_or(width);
        let ticks: Vec<usize> = threshold
            .map(|t| vec![col(bounds.0 * t), col(bounds.1 * t)])
            .unwrap_or_default();
        let band_start = col((g.tokens.tokens - g.keep_recent as f64).max(0.0));
        // The bar is Pi's figure: the mark is it less the saving, the one thing both bases share.
        let after_col = after.map(|(before, a)| {
            let saved = before.saturating_sub(a) as f64;
            col((g.tokens.tokens - saved).max(0.0)).min(width.saturating_sub(1))
        });
        let live_col = live.map(|(sent, _)| col(sent as f64).min(width.saturating_sub(1)));
        for i in 0..width {
            let (ch, st) = if Some(i) == after_col {
                ('◆', fg(SUCCESS))
            } else if Some(i) == live_col {
                ('◇', fg(ACCENT))
            } else if i == t && t < width {
                ('│', fg(ERROR))
            } else if i < fill && i >= band_start {
                ('▓', fg(color))
            } else if i < fill {
                ('█', fg(color))
            } else if ticks.contains(&i) {
                ('┊', fg(MUTED))
            } else {
                ('░', fg(DIM))
            };
            bar.push(Span::styled(ch.to_string(), st));
        }
    } else {
        bar.push(Span::styled("context window unknown for this model", fg(MUTED)));
    }
    bar
}

/// The line under the bar: Pi's figure and the zone, the band's legend, the whole context by
/// estimate with the marks' figures on the same basis, the exact count, the window and threshold, what is kept,
/// and how Pi's figure was made. Every token figure says its basis ([`Basis`]).
fn info_spans(
    g: &Gauge,
    zone: Option<Zone>,
    color: ratatui::style::Color,
    after: Option<(u64, u64)>,
    live: Option<(u64, u64)>,
) -> Vec<Span<'static>> {
    let mut info = vec![
        Span::raw(if g.stale { "…" } else { " " }),
        Span::styled(Basis::Pi.say(g.tokens.tokens), Style::default().fg(color)),
    ];
    if g.after_edits.is_some() && !g.usage_before_compaction {
        // Pi's figure is the last reply's usage until its next call carries the edits.
        info.push(Span::styled(
            " from the reply before the edits; Pi counts them from its next call",
            fg(SUCCESS),
        ));
    }
    if g.usage_before_compaction {
        // Pi reports this figure, so it is shown, with why it is high.
        info.push(Span::styled(
            " from before the compaction, until the next reply",
            fg(WARNING),
        ));
    }
    if let Some(z) = zone {
        info.push(Span::styled(
            format!(" · {}", zone_words(z)),
            Style::default().fg(color),
        ));
    }
    info.push(Span::styled(
        format!(" · ▓ keep {}", fmt(g.keep_recent as f64)),
        fg(MUTED),
    ));
    if let Some(e) = g.estimate.filter(|_| after.is_none()) {
        info.push(Span::styled(
            format!(" · {} {}", Basis::Estimate.label(), fmt(e as f64)),
            fg(MUTED),
        ));
    }
    if let Some((before, a)) = after {
        info.push(Span::styled(
            format!(
                " · ◆ {} {} → {} after pruning",
                Basis::Estimate.label(),
                fmt(before as f64),
                fmt(a as f64)
            ),
            fg(SUCCESS),
        ));
    }
    if let Some((sent, full)) = live {
        info.push(Span::styled(
            format!(
                " · ◇ {} {} of {} ({} of its messages)",
                Basis::Sent.label(),
                fmt(sent as f64),
                fmt(full as f64),
                Basis::Estimate.label()
            ),
            fg(ACCENT),
        ));
    }
    info.push(Span::styled(
        match g.exact {
            Some(e) => format!(" · {} {}", Basis::Exact.label(), fmt(e as f64)),
            None => format!(" · {} …", Basis::Exact.label()),
        },
        fg(MUTED),
    ));
    if let Some(w) = g.window {
        info.push(Span::styled(format!(" / {}", fmt(w as f64)), fg(MUTED)));
    }
    if let Some(t) = g.threshold() {
        info.push(Span::styled(format!(" · compacts at {}", fmt(t as f64)), fg(MUTED)));
    }
    if g.tokens.last_usage_index.is_some() {
        info.push(Span::styled(
            format!(
                " · Pi's figure is usage {} + est. {}",
                fmt(g.tokens.usage_tokens),
                fmt(g.tokens.trailing_tokens)
            ),
            fg(MUTED),
        ));
    } else {
        info.push(Span::styled(" · Pi's figure is an estimate (no usage yet)", fg(MUTED)));
    }
    // Far apart: the provider counts its own way (and what the messages do not hold); last on
    // the line, where a narrow terminal cuts it first.
    if let Some(e) = g.exact
        && !g.usage_before_compaction
        && g.tokens.last_usage_index.is_some()
        && (e as f64 - g.tokens.tokens).abs() > 0.25 * g.tokens.tokens.max(1.0)
    {
        info.push(Span::styled(
            " (exact is tiktoken on the messages, images at Pi's estimate; Pi's figure is the provider's count)",
            fg(DIM),
        ));
    }
    info
}

#[cfg(test)]
mod snapshots {
    use super::super::selection::Gauge;
    use crate::engine::view::context::ContextTokens;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn gauge(tokens: f64) -> Gauge {
        Gauge {
            leaf: Some(0),
            tokens: ContextTokens {
                tokens,
                usage_tokens: tokens - 500.0,
                trailing_tokens: 500.0,
                last_usage_index: Some(3),
            },
            exact: Some((tokens * 1.1) as u64),
            window: Some(200_000),
            reserve: 16_384,
            keep_recent: 20_000,
            model: Some("anthropic/claude-haiku-4-5".into()),
            stale: false,
            usage_before_compaction: false,
            after_edits: None,
            estimate: Some((tokens * 1.2) as u64),
        }
    }

    /// The backend's rows as text, trailing blanks trimmed.
    fn lines(t: &Terminal<TestBackend>) -> Vec<String> {
        let area = t.backend().buffer().area;
        (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| t.backend().buffer()[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn gauge_in_each_zone() {
        // T = 200000 - 16384 = 183616: green < 70% T, yellow < 90% T, red < T, then compact.
        for (name, tokens) in [
            ("green", 60_000.0),
            ("yellow", 140_000.0),
            ("red", 170_000.0),
            ("compact", 190_000.0),
        ] {
            let g = gauge(tokens);
            let mut t = Terminal::new(TestBackend::new(120, 2)).unwrap();
            t.draw(|f| super::draw(f, f.area(), Some(&g), (0.7, 0.9), None, None, false))
                .unwrap();
            let zone = g.zone((0.7, 0.9)).unwrap();
            let text = lines(&t);
            insta::assert_snapshot!(format!("gauge_{name}"), format!("{zone:?}\n{}", text.join("\n")));
            let fill = t.backend().buffer()[(5, 0)].fg;
            assert_eq!(fill, super::zone_color(Some(zone)), "{name}");
        }
    }

    #[test]
    fn the_live_figure_is_marked() {
        let g = gauge(140_000.0);
        let mut t = Terminal::new(TestBackend::new(120, 2)).unwrap();
        t.draw(|f| super::draw(f, f.area(), Some(&g), (0.7, 0.9), None, Some((30_000, 90_000)), false))
            .unwrap();
        insta::assert_snapshot!(lines(&t).join("\n"));
        // At 30,000 of 200,000 over 118 columns: column 1 + 18.
        assert_eq!(t.backend().buffer()[(19, 0)].symbol(), "◇");
    }

    #[test]
    fn a_gauge_still_counting_says_so() {
        let line = |counting| {
            let mut t = Terminal::new(TestBackend::new(60, 2)).unwrap();
            t.draw(|f| super::draw(f, f.area(), None, (0.7, 0.9), None, None, counting))
                .unwrap();
            (0..60)
                .map(|x| t.backend().buffer()[(x, 0)].symbol().to_string())
                .collect::<String>()
        };
        assert!(line(true).contains("counting the context of the selected entry…"));
        assert!(line(false).contains("no entry selected"));
    }

    #[test]
    fn usage_from_before_a_compaction_says_until_the_next_reply() {
        // Pi keeps counting the reply before the compaction until the model answers again.
        let mut g = gauge(150_000.0);
        g.usage_before_compaction = true;
        g.exact = Some(30_000);
        // The gauge's second line (the numbers), wide enough for all of it.
        let numbers = |g: &Gauge| -> String {
            let mut t = Terminal::new(TestBackend::new(320, 2)).unwrap();
            t.draw(|f| super::draw(f, f.area(), Some(g), (0.7, 0.9), None, None, false))
                .unwrap();
            (0..320)
                .map(|x| t.backend().buffer()[(x, 1)].symbol().to_string())
                .collect()
        };
        let line = numbers(&g);
        assert!(
            line.contains("150,000 tokens (Pi's figure) from before the compaction, until the next reply"),
            "{line}"
        );
        assert!(!line.contains("tiktoken"), "{line}");
        // Fresh usage far from the exact count: one clause says why, last on the line.
        g.usage_before_compaction = false;
        let line = numbers(&g);
        assert!(
            line.trim_end().ends_with(
                "(exact is tiktoken on the messages, images at Pi's estimate; Pi's figure is the provider's count)"
            ),
            "{line}"
        );
    }
}
