//! Where everything goes on screen, from the terminal size and what is shown. `draw` paints
//! into these areas and `App` uses the same ones for paging and for mouse clicks.

use ratatui::layout::{Constraint, Layout, Rect};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Areas {
    pub banner: Option<Rect>,
    /// Everything between the banner and the gauge (overlays cover it).
    pub main: Rect,
    pub tree: Rect,
    pub cut_panel: Option<Rect>,
    pub detail: Option<Rect>,
    pub gauge: Rect,
    pub status: Rect,
    pub hints: Rect,
}

/// What changes the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    pub banner: bool,
    /// Lines the status takes (1, more when its message wraps).
    pub status_lines: u16,
    pub detail: bool,
    pub cut_preview: bool,
}

pub fn areas(size: Rect, shown: Shown) -> Areas {
    let mut constraints = vec![];
    if shown.banner {
        constraints.push(Constraint::Length(1));
    }
    constraints.extend([
        Constraint::Min(3),
        Constraint::Length(2),
        Constraint::Length(shown.status_lines.max(1)),
        Constraint::Length(1),
    ]);
    let rows = Layout::vertical(constraints).split(size);
    let k = usize::from(shown.banner);
    let main = rows[k];
    let mut a = Areas {
        banner: shown.banner.then(|| rows[0]),
        main,
        tree: main,
        cut_panel: None,
        detail: None,
        gauge: rows[k + 1],
        status: rows[k + 2],
        hints: rows[k + 3],
    };
    if shown.detail {
        // Side by side from 100 columns, stacked below that.
        let c = if main.width >= 100 {
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).split(main)
        } else {
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).split(main)
        };
        a.tree = c[0];
        let side = c[1];
        if shown.cut_preview {
            let c = Layout::vertical([
                Constraint::Length(side.height.saturating_sub(3).clamp(4, 10)),
                Constraint::Min(1),
            ])
            .split(side);
            a.cut_panel = Some(c[0]);
            a.detail = Some(c[1]);
        } else {
            a.detail = Some(side);
        }
    } else if shown.cut_preview {
        let h = 9.min(main.height / 2);
        a.tree = Rect {
            height: main.height - h,
            ..main
        };
        a.cut_panel = Some(Rect {
            y: main.y + main.height - h,
            height: h,
            ..main
        });
    }
    a
}

/// Width of the token column at this pane width (0: no room).
pub fn token_column(width: u16) -> usize {
    if width >= 90 {
        13
    } else if width >= 60 {
        8
    } else {
        0
    }
}

pub fn contains(r: Rect, col: u16, row: u16) -> bool {
    col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
}
