//! Colours, after Pi's dark theme names (accent, success, muted, dim, warning, error…).

use ratatui::style::{Color, Modifier, Style};

pub const ACCENT: Color = Color::Cyan;
pub const SUCCESS: Color = Color::Green;
pub const MUTED: Color = Color::Gray;
pub const DIM: Color = Color::DarkGray;
pub const WARNING: Color = Color::Yellow;
pub const ERROR: Color = Color::Red;
pub const BORDER_ACCENT: Color = Color::Magenta;
pub const CUSTOM_LABEL: Color = Color::LightMagenta;
pub const SELECTED_BG: Color = Color::Rgb(45, 50, 62);

/// Cut-preview colours: what would be summarized, the split turn's prefix, what is kept.
pub const SUMMARIZED: Color = Color::Rgb(120, 70, 30);
pub const TURN_PREFIX: Color = Color::Rgb(90, 40, 110);
pub const KEPT: Color = Color::Rgb(25, 80, 45);
pub const COMPACTED: Color = Color::Rgb(40, 40, 40);

pub fn fg(c: Color) -> Style {
    Style::default().fg(c)
}

pub fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn title() -> Style {
    Style::default().fg(ACCENT).add_modifier(Modifier::BOLD)
}

/// A `w`×`h` rectangle centred in `area` (overlays and dialogs).
pub fn centered(area: ratatui::layout::Rect, w: u16, h: u16) -> ratatui::layout::Rect {
    let (w, h) = (w.min(area.width), h.min(area.height));
    ratatui::layout::Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}
