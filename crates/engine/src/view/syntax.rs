//! syntect's syntax definitions and themes, loaded once for the whole process: the TUI's
//! detail pane and the HTML export highlight with the same grammars. (Pure data: the sets
//! are compiled into the binary; nothing is read from disk.)

use std::sync::OnceLock;
use syntect::highlighting::ThemeSet;
use syntect::parsing::{SyntaxReference, SyntaxSet};

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
static THEMES: OnceLock<ThemeSet> = OnceLock::new();

/// syntect's grammars plus two-face's (TypeScript, TSX, TOML, Dockerfile and more).
pub fn syntaxes() -> &'static SyntaxSet {
    SYNTAXES.get_or_init(two_face::syntax::extra_newlines)
}

pub fn themes() -> &'static ThemeSet {
    THEMES.get_or_init(ThemeSet::load_defaults)
}

pub fn is_loaded() -> bool {
    SYNTAXES.get().is_some() && THEMES.get().is_some()
}

/// The syntax for a file path, by extension or whole name (`Dockerfile`).
pub fn for_path(path: &str) -> Option<&'static SyntaxReference> {
    let set = syntaxes();
    let name = path.rsplit('/').next().unwrap_or(path);
    if let Some(s) = set.find_syntax_by_extension(name) {
        return Some(s);
    }
    let ext = name.rsplit_once('.').map(|(_, e)| e)?;
    set.find_syntax_by_extension(ext)
}

/// The syntax for a Markdown fence's language token (`json`, `py`, `rust`).
pub fn for_token(token: &str) -> Option<&'static SyntaxReference> {
    if token.is_empty() {
        return None;
    }
    syntaxes()
        .find_syntax_by_token(token)
        .filter(|s| s.name != "Plain Text")
}
