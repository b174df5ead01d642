//! Syntax highlighting for tool output, on screen only.
//!
//! syntect runs at ~0.5 MB/s, so a 1 MB file must never be highlighted in one go: each
//! frame highlights at most `BUDGET_LINES` more lines from where it stopped (the parser
//! state is kept), and lines past that show plain until later frames reach them.

use crate::engine::view::syntax;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::Theme;
use syntect::parsing::{SyntaxReference, SyntaxSet};

pub const BUDGET_LINES: usize = 1500;

struct Assets {
    syntaxes: &'static SyntaxSet,
    theme: Theme,
}

static ASSETS: OnceLock<Assets> = OnceLock::new();

fn assets() -> &'static Assets {
    ASSETS.get_or_init(|| {
        let syntaxes = syntax::syntaxes();
        let theme = syntax::themes()
            .themes
            .get("base16-ocean.dark")
            .cloned()
            .unwrap_or_default();
        Assets { syntaxes, theme }
    })
}

/// Load the syntax definitions ahead of time (from a background thread at startup).
pub fn warm_up() {
    let _ = assets();
}

pub fn ready() -> bool {
    ASSETS.get().is_some()
}

/// The syntax for a file path, by extension or name (`Dockerfile`).
pub fn syntax_for_path(path: &str) -> Option<&'static SyntaxReference> {
    let _ = assets();
    syntax::for_path(path)
}

pub fn syntax_name(path: &str) -> Option<String> {
    syntax_for_path(path).map(|s| s.name.clone())
}

/// Incremental highlighter over a fixed list of lines.
pub struct Highlighter {
    syntax: &'static SyntaxReference,
    state: Option<HighlightLines<'static>>,
    pub done: Vec<Vec<Span<'static>>>,
}

impl Highlighter {
    pub fn new(path: &str) -> Option<Highlighter> {
        let syntax = syntax_for_path(path)?;
        if syntax.name == "Plain Text" {
            return None;
        }
        Some(Highlighter {
            syntax,
            state: None,
            done: vec![],
        })
    }

    /// Highlight lines up to `upto` (exclusive), spending at most the frame budget.
    pub fn advance(&mut self, lines: &[String], upto: usize) {
        let a = assets();
        let state = self
            .state
            .get_or_insert_with(|| HighlightLines::new(self.syntax, &a.theme));
        let end = upto.min(lines.len()).min(self.done.len() + BUDGET_LINES);
        while self.done.len() < end {
            let line = &lines[self.done.len()];
            let with_nl = format!("{line}\n");
            let spans = match state.highlight_line(&with_nl, a.syntaxes) {
                Ok(regions) => regions
                    .into_iter()
                    .map(|(st, text)| {
                        let mut style =
                            Style::default().fg(Color::Rgb(st.foreground.r, st.foreground.g, st.foreground.b));
                        if st.font_style.contains(syntect::highlighting::FontStyle::BOLD) {
                            style = style.add_modifier(Modifier::BOLD);
                        }
                        if st.font_style.contains(syntect::highlighting::FontStyle::ITALIC) {
                            style = style.add_modifier(Modifier::ITALIC);
                        }
                        Span::styled(text.trim_end_matches('\n').to_string(), style)
                    })
                    .collect(),
                Err(_) => vec![Span::raw(line.clone())],
            };
            self.done.push(spans);
        }
    }
}
