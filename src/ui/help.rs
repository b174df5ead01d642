//! The help overlay: every key of the mode under it, from the key table.

use super::keymap::{self, Mode};
use super::theme::*;
use crate::engine::view::text_width::visible_width;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

/// (keys, what they do) for `mode`, in table order.
pub fn entries(mode: Mode) -> Vec<(String, &'static str)> {
    keymap::for_mode(mode)
        .map(|b| (keymap::keys_text(b), b.label))
        .collect()
}

/// How the help lays out at a width: columns side by side when every label fits whole, else
/// one column whose labels wrap (a line is never clipped).
pub struct HelpLayout {
    pub key_w: usize,
    pub label_w: usize,
    pub cols: usize,
    /// The help's rows: per row, per column, (keys or "" on a continuation, label text).
    pub rows: Vec<Vec<(String, String)>>,
}

pub fn layout(mode: Mode, width: u16) -> HelpLayout {
    let items = entries(mode);
    let key_w = items.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0).min(18) + 2;
    let longest = items.iter().map(|(_, l)| visible_width(l)).max().unwrap_or(0) + 1;
    let inner = width.saturating_sub(2) as usize;
    let cols = (1..=3usize).rev().find(|c| (key_w + longest) * c <= inner);
    let Some(cols) = cols else {
        // One column, labels wrapped to what is left beside the keys.
        let label_w = inner.saturating_sub(key_w).max(8);
        let mut rows = Vec::new();
        for (k, l) in &items {
            for (n, piece) in crate::ui::dialog::wrap(l, label_w - 1).into_iter().enumerate() {
                let k = if n == 0 { k.clone() } else { String::new() };
                rows.push(vec![(k, piece)]);
            }
        }
        return HelpLayout {
            key_w,
            label_w,
            cols: 1,
            rows,
        };
    };
    let n = items.len().div_ceil(cols);
    let rows = (0..n)
        .map(|r| {
            (0..cols)
                .filter_map(|c| items.get(c * n + r))
                .map(|(k, l)| (k.clone(), l.to_string()))
                .collect()
        })
        .collect();
    HelpLayout {
        key_w,
        label_w: longest,
        cols,
        rows,
    }
}

pub fn draw(f: &mut Frame, area: Rect, mode: Mode, scroll: usize) {
    let l = layout(mode, area.width);
    let (key_w, label_w) = (l.key_w, l.label_w);
    let w = ((key_w + label_w) * l.cols + 2) as u16;
    let room = area.height.saturating_sub(3) as usize;
    let h = (l.rows.len().min(room) + 3) as u16;
    let r = centered(area, w.min(area.width), h.min(area.height));
    f.render_widget(Clear, r);
    let cell = |(k, d): &(String, String)| {
        let k: String = k.chars().take(key_w - 1).collect();
        vec![
            Span::styled(format!(" {k:<kw$}", kw = key_w - 1), fg(ACCENT)),
            Span::raw(format!("{d:<label_w$}")),
        ]
    };
    let scroll = scroll.min(l.rows.len().saturating_sub(room));
    let mut lines = Vec::new();
    for row in l.rows.iter().skip(scroll).take(room) {
        lines.push(Line::from(row.iter().flat_map(cell).collect::<Vec<_>>()));
    }
    let more = l.rows.len() > room;
    lines.push(Line::from(Span::styled(
        if more {
            " ↑/↓ scroll · any other key closes"
        } else {
            " any key closes"
        },
        fg(DIM),
    )));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(fg(ACCENT))
        .title(Span::styled(format!(" keys · {} ", mode.name()), title()));
    f.render_widget(Paragraph::new(lines).block(block), r);
}

/// What the help overlay shows: the keys of a mode, or the message log.
pub enum HelpPage<'a> {
    Keys(Mode),
    Log(&'a [(String, String)]),
}

impl crate::ui::component::Drawable for HelpScroll {
    type View<'a> = HelpPage<'a>;
    fn draw(&self, f: &mut Frame, area: Rect, page: HelpPage<'_>) {
        match page {
            HelpPage::Keys(mode) => draw(f, area, mode, self.scroll),
            HelpPage::Log(messages) => super::messages::draw(f, area, messages, self.scroll),
        }
    }
}

impl crate::ui::component::Component for HelpScroll {
    type Lent<'a> = (usize, u16);
    const NAME: &'static str = "help and message log";

    /// `rows` the list has, `height` of the overlay (borders and the hint line take 3).
    fn update(
        &mut self,
        action: &crate::ui::action::Action,
        (rows, height): Self::Lent<'_>,
    ) -> Vec<crate::ui::component::Effect> {
        use super::action::Action;
        let page = height.saturating_sub(3) as usize;
        let max = rows.saturating_sub(page);
        let sc = &mut self.scroll;
        match action {
            Action::Up => *sc = sc.saturating_sub(1),
            Action::Down => *sc = (*sc + 1).min(max),
            Action::PageUp => *sc = sc.saturating_sub(page),
            Action::PageDown => *sc = (*sc + page).min(max),
            _ => return vec![super::component::Effect::Close],
        }
        super::component::changed()
    }
}

#[cfg(test)]
mod snapshots {
    use super::super::tests::{demo_app, render};
    use crossterm::event::{KeyCode, KeyEvent};

    #[test]
    fn help_overlay_80x24() {
        let mut a = demo_app();
        a.handle_key(KeyEvent::from(KeyCode::Char('?')));
        insta::assert_snapshot!(render(&mut a, 80, 24));
        // The rest of the list is a scroll away.
        a.handle_key(KeyEvent::from(KeyCode::PageDown));
        insta::assert_snapshot!("help_overlay_80x24_scrolled", render(&mut a, 80, 24));
        a.handle_key(KeyEvent::from(KeyCode::Char('x')));
        assert_eq!(a.screen.overlay, super::super::app::Overlay::None);
    }
}

/// The help and the message log as a component: a list scrolled by ↑/↓ and the page keys;
/// any other key closes it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HelpScroll {
    pub scroll: usize,
}

impl HelpScroll {
    /// Scrolled to the end of `rows` (the message log opens on its newest message).
    pub fn at_end(rows: usize, height: u16) -> HelpScroll {
        HelpScroll {
            scroll: rows.saturating_sub(height.saturating_sub(3) as usize),
        }
    }
}

#[cfg(test)]
mod update_tests {
    use super::HelpScroll;
    use crate::ui::action::Action;
    use crate::ui::component::Component;
    use crate::ui::component::Effect;

    /// The help says what P and Esc do where bonsai runs inside Pi (`/bonsai`): P switches
    /// the running Pi, Esc at the top goes back to it.
    #[test]
    fn the_help_says_what_p_and_esc_do_inside_pi() {
        let tree = super::entries(crate::ui::keymap::Mode::Tree);
        let label = |k: &str| tree.iter().find(|(keys, _)| keys == k).map(|(_, l)| *l);
        assert_eq!(label("P"), Some("resume in Pi (in /bonsai: switch to it)"));
        assert_eq!(label("esc"), Some("clear the search; in /bonsai, back to Pi"));
    }

    #[test]
    fn the_help_scrolls_within_its_rows_and_any_other_key_closes_it() {
        // 50 rows in an overlay 23 high: 20 shown, the last start is 30.
        let mut h = HelpScroll::default();
        assert!(h.update(&Action::Up, (50, 23)).is_empty());
        assert_eq!(h.scroll, 0);
        assert!(h.update(&Action::PageDown, (50, 23)).is_empty());
        assert_eq!(h.scroll, 20);
        h.update(&Action::PageDown, (50, 23));
        assert_eq!(h.scroll, 30, "never past the last page");
        h.update(&Action::Down, (50, 23));
        assert_eq!(h.scroll, 30);
        h.update(&Action::PageUp, (50, 23));
        assert_eq!(h.scroll, 10);
        assert!(matches!(h.update(&Action::GoToLeaf, (50, 23))[..], [Effect::Close]));
        assert_eq!(HelpScroll::at_end(50, 23).scroll, 30);
        assert_eq!(HelpScroll::at_end(5, 23).scroll, 0);
    }
}
