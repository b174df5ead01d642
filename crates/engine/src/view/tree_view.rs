//! Pi's `/tree` view model, without a terminal: flattening (active branch first, linear
//! chains flat, branch points fold), filters, search, folds, selection, segment jumps, and
//! the row text. `render_plain` reproduces Pi 0.87.1's rows character for character; the
//! TUI draws the same rows with colour.
//!
//! - `layout`: Pi's flattening and its re-layout after a filter (indents, guides, connectors);
//! - `filter`: the filter modes, search and folds (`applyFilter`);
//! - `rows`: one visible row's drawing and text, the window and the plain render;
//! - `tail`: the leaf's newest rows from the end of a file still loading;
//! - `text`: Pi's text helpers (content extraction, tool-call titles, copy and search text).

mod filter;
mod layout;
mod model;
mod navigate;
mod rows;
pub mod stored;
mod tail;
mod text;

pub use model::{FilterMode, Layout, TreeView};
pub use rows::{Row, RowStyle, RowText, pan_rows, pan_scroll};
pub use tail::{TailPreview, tail_preview};
pub use text::{
    copy_text, extract_content, extract_full_content, format_label_timestamp, format_tool_call, one_line,
    searchable_text,
};
