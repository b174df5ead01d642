//! What the screen shows that is not the session's: its size, which pane has the keyboard,
//! the panes and previews shown, the overlay. The browser's own keys (`browse_keys`) change it.

use super::mode::Mode;
use ratatui::layout::Rect;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Detail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    /// The help, listing the keys of the mode under it.
    Help(Mode),
    Context,
    /// What fills the context.
    Fills,
    /// The audit of a summary (a).
    Audit,
    /// The messages said in this run, newest last (M).
    Messages,
    /// The prune plan as a list (r in the prune preview).
    PrunePlan,
    Picker,
    /// What the model calls cost ($).
    Usage,
}

/// Screen state that is not the session's.
pub struct Screen {
    pub size: Rect,
    pub focus: Focus,
    pub show_detail: bool,
    pub cut_preview: bool,
    pub prune_preview: bool,
    pub overlay: Overlay,
    /// NO_COLOR: no colour at all; the cut preview gets a symbol column.
    pub no_color: bool,
    pub zones: (f64, f64),
    /// The help overlay and the message log, scrolled.
    pub help: crate::ui::help::HelpScroll,
    /// Keys that arrived together are being taken: the frame's rows and the detail are
    /// worked out once after the last (`Some(true)`: one is owed).
    pub refresh_held: Option<bool>,
}

impl Screen {
    /// The browser as it opens: the tree has the keyboard, the detail pane shows, no preview
    /// or overlay.
    pub fn new(size: Rect, zones: (f64, f64)) -> Screen {
        Screen {
            size,
            focus: Focus::Tree,
            show_detail: true,
            cut_preview: false,
            prune_preview: false,
            overlay: Overlay::None,
            no_color: false,
            zones,
            help: Default::default(),
            refresh_held: None,
        }
    }
}
