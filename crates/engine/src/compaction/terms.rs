//! The facts a summary should keep, found in text: file paths, the distinctive terms of a
//! request (paths, backticked names, identifiers, numbers) and an error's first informative
//! line. The recall score (`recall`) counts them and the offline summarizer (`offline`) keeps
//! them, so both read text the same way.
//!
//! These are heuristics on free text, kept deliberately plain: a path has a slash between two
//! named parts or a known file extension; an identifier has an underscore, a lower-to-upper
//! change, two capitals, a digit after a letter, or a `::`/`.` joining two names; a number has
//! at least two digits. Every rule is a unit test below.

/// Characters a path token is made of (the run around a `/` or an extension).
fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '~' | '-' | '@' | '+')
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// File extensions that make a bare name (`exporter.py`) a path.
const EXTENSIONS: &[&str] = &[
    "c", "cc", "cfg", "cjs", "conf", "cpp", "cs", "css", "csv", "dart", "diff", "env", "ex", "exs", "go", "gradle",
    "h", "hpp", "hs", "html", "ini", "java", "jl", "js", "json", "jsonl", "jsx", "kt", "lock", "log", "lua", "md",
    "mjs", "ml", "mts", "patch", "php", "pl", "png", "proto", "py", "rb", "rs", "scala", "scss", "sh", "sql", "svelte",
    "svg", "swift", "toml", "ts", "tsx", "txt", "vue", "xml", "yaml", "yml", "zig", "zsh",
];

/// Slash words that are not paths.
const NOT_PATHS: &[&str] = &[
    "and/or",
    "either/or",
    "on/off",
    "yes/no",
    "true/false",
    "read/write",
    "input/output",
    "i/o",
    "n/a",
    "w/o",
    "w/",
    "client/server",
    "before/after",
    "open/close",
    "start/stop",
    "get/set",
    "add/remove",
    "up/down",
    "left/right",
    "his/her",
    "he/she",
    "s/he",
];

/// Whether a token (already cut from its text) is a file path.
pub fn is_path(tok: &str) -> bool {
    if tok.len() < 3 || tok.len() > 400 || tok.starts_with("//") || tok.contains("...") {
        return false;
    }
    if !tok.chars().any(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    if tok.contains('/') {
        let lower = tok.to_ascii_lowercase();
        if NOT_PATHS.contains(&lower.as_str()) {
            return false;
        }
        let body = tok
            .trim_start_matches('~')
            .trim_start_matches("./")
            .trim_start_matches("../");
        let segments: Vec<&str> = body.trim_start_matches('/').trim_end_matches('/').split('/').collect();
        if segments.iter().any(|s| s.is_empty()) {
            return false;
        }
        // Every part names something (`a/b`, `/etc/hosts`); a lone letter between slashes
        // (`I/O`, `w/o`) does not, unless the path is rooted.
        let rooted = tok.starts_with('/') || tok.starts_with('~') || tok.starts_with("./") || tok.starts_with("../");
        return rooted || segments.iter().all(|s| s.len() > 1 || has_extension(s));
    }
    has_extension(tok)
}

fn has_extension(tok: &str) -> bool {
    let Some((stem, ext)) = tok.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && stem.chars().any(|c| c.is_ascii_alphanumeric())
        && EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
}

/// The file paths named in `text`, in order of first appearance, each once.
pub fn paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (start, tok) in runs(text, is_path_char) {
        let tok = tok.trim_end_matches(['.', '-', ',']);
        let before = text[..start].chars().next_back();
        // `https://host/x`: the part after a scheme is a URL, not a file.
        if before == Some(':') && tok.starts_with("//") {
            continue;
        }
        // `</read-files>`: a closing tag.
        if before == Some('<') {
            continue;
        }
        // `foo.bar(`: a call, not a file.
        let after = text[start + tok.len()..].chars().next();
        if after == Some('(') && !tok.contains('/') {
            continue;
        }
        if is_path(tok) && !out.iter().any(|p| p == tok) {
            out.push(tok.to_string());
        }
    }
    out
}

/// Maximal runs of characters for which `keep` holds, with their byte offsets.
fn runs(text: &str, keep: impl Fn(char) -> bool) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, c) in text.char_indices() {
        match (keep(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// Whether `word` (letters, digits, `_`, `::`, `.`) reads as a code identifier rather than
/// an English word.
pub fn is_identifier(word: &str) -> bool {
    let w = word.trim_matches(|c| c == '.' || c == ':');
    if w.len() < 2 || !w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    if w.contains("::")
        || (w.contains('.')
            && w.split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')))
    {
        return w.split(['.', ':']).filter(|p| !p.is_empty()).count() >= 2
            && w.split(['.', ':'])
                .any(|p| p.len() >= 2 && p.chars().any(|c| c.is_ascii_alphabetic()));
    }
    if !w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return false;
    }
    let b = w.as_bytes();
    let underscore = w.trim_matches('_').contains('_');
    let lower_upper = b
        .windows(2)
        .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
    let capitals = b.iter().filter(|c| c.is_ascii_uppercase()).count();
    let mixed_caps = capitals >= 2 && b.iter().any(|c| c.is_ascii_lowercase());
    let letter_digit = b
        .windows(2)
        .any(|p| p[0].is_ascii_alphabetic() && p[1].is_ascii_digit());
    // Two characters name something only as a letter and a digit (`v3`).
    letter_digit || (w.len() >= 3 && (underscore || lower_upper || mixed_caps))
}

/// Whether `word` is a number worth keeping (two digits or more: `42`, `3.14`, `0.87.1`).
fn is_number(word: &str) -> bool {
    let w = word.trim_end_matches('.');
    !w.is_empty()
        && w.chars().all(|c| c.is_ascii_digit() || c == '.')
        && w.chars().filter(|c| c.is_ascii_digit()).count() >= 2
        && !w.starts_with('.')
        && !w.contains("..")
}

/// The distinctive terms of a request: backticked names, paths, identifiers and numbers, in
/// order of first appearance, each once.
pub fn request_terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |t: &str| {
        let t = t.trim();
        if !t.is_empty() && !out.iter().any(|x| x == t) {
            out.push(t.to_string());
        }
    };
    // `name`: the inside of a short single-backtick span (not a fence).
    let mut rest = text;
    while let Some(a) = rest.find('`') {
        let after = &rest[a + 1..];
        if after.starts_with('`') {
            rest = after.trim_start_matches('`');
            continue;
        }
        match after.find(['`', '\n']) {
            Some(b) if after.as_bytes()[b] == b'`' => {
                let inner = &after[..b];
                if (1..=80).contains(&inner.chars().count()) {
                    push(inner);
                }
                rest = &after[b + 1..];
            }
            Some(b) => rest = &after[b..],
            None => break,
        }
    }
    for p in paths(text) {
        push(&p);
    }
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':');
    for (start, tok) in runs(text, word) {
        let tok = tok.trim_end_matches(['.', ':']);
        let tok = tok.trim_start_matches([':', '.']);
        // Part of a path (`src/a.rs`): the path is the term.
        let before = text[..start].chars().next_back();
        let after = text[start + tok.len()..].chars().next();
        if before == Some('/') || after == Some('/') {
            continue;
        }
        if is_number(tok) || (is_identifier(tok) && !is_path(tok)) {
            push(tok);
        }
    }
    out
}

/// Identifiers in `text` (for the names an assistant keeps coming back to).
pub fn identifiers(text: &str) -> Vec<&str> {
    let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.');
    runs(text, word)
        .into_iter()
        .map(|(_, t)| t.trim_matches(['.', ':']))
        .filter(|t| is_identifier(t) && !is_path(t))
        .collect()
}

/// Lines that say nothing of what went wrong on their own.
fn boilerplate(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    l.starts_with("traceback (most recent call last)")
        || l.starts_with("```")
        || l.starts_with("---")
        || l.starts_with("+++")
        || l.starts_with("command exited with code")
        || l.starts_with("(no output)")
        || matches!(
            l.trim_end_matches(':'),
            "error" | "errors" | "stderr" | "stdout" | "output" | "failed" | "warning"
        )
}

/// An error result's first informative line: the first line with a word of three letters or
/// digits that is not boilerplate (a fence, a traceback header, "Command exited with code"),
/// whitespace collapsed, at most 200 characters.
pub fn informative_line(text: &str) -> Option<String> {
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || boilerplate(t) {
            continue;
        }
        let has_word = runs(t, |c| c.is_alphanumeric())
            .iter()
            .any(|(_, w)| w.chars().count() >= 3);
        if !has_word {
            continue;
        }
        let collapsed = t.split_whitespace().collect::<Vec<_>>().join(" ");
        return Some(cut_chars(&collapsed, 200));
    }
    None
}

/// The line of an error's output that says what went wrong: the first line that names an
/// error (`ValueError: …`, `error[E0308]: …`, `fatal: …`, `No such file or directory`,
/// `FAILED …`, `panicked at …`), else the first informative line. A traceback's frames and a
/// test runner's progress come before the line that says the error; the first informative
/// line of such output was a frame, not the error.
pub fn error_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|t| !t.is_empty() && !boilerplate(t) && says_error(t))
        .map(|t| cut_chars(&t.split_whitespace().collect::<Vec<_>>().join(" "), 200))
        .or_else(|| informative_line(text))
}

/// Whether a line names an error: an exception's name (`…Error`, `…Exception`) or one of the
/// words and phrases programs say it with.
pub fn says_error(line: &str) -> bool {
    const PHRASES: &[&str] = &[
        "no such file",
        "permission denied",
        "command not found",
        "not found",
        "cannot ",
        "can't ",
        "could not",
        "couldn't",
        "unable to",
        "segmentation fault",
        "timed out",
        "undefined reference",
        "panicked at",
    ];
    const WORDS: &[&str] = &[
        "error",
        "fatal",
        "failed",
        "failure",
        "panic",
        "exception",
        "traceback",
        "denied",
        "refused",
    ];
    let lower = line.to_ascii_lowercase();
    if PHRASES.iter().any(|p| lower.contains(p)) {
        return true;
    }
    runs(line, is_word_char).iter().any(|(_, w)| {
        let lw = w.to_ascii_lowercase();
        WORDS.contains(&lw.as_str())
            || ((w.ends_with("Error") || w.ends_with("Exception")) && w.len() > 5)
            || lw.starts_with("error") && lw[5..].chars().all(|c| c.is_ascii_digit() || c == '_')
    })
}

/// At most `n` characters of `s` (no ellipsis: the cut text is still a quote).
pub fn cut_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// Lowercased words of three or more letters, digits or `_` (how an error line is matched
/// when the summary words it differently).
pub fn match_words(text: &str) -> Vec<String> {
    runs(text, is_word_char)
        .into_iter()
        .filter(|(_, w)| w.chars().count() >= 3)
        .map(|(_, w)| w.to_lowercase())
        .collect()
}

/// Whether `needle` occurs in `hay` as a whole term: not glued to a letter, digit or `_` on
/// either side.
pub fn contains_term(hay: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let starts_word = needle.starts_with(is_word_char);
    let ends_word = needle.ends_with(is_word_char);
    let mut from = 0;
    while let Some(k) = hay[from..].find(needle) {
        let at = from + k;
        let before_ok = !starts_word || !hay[..at].chars().next_back().is_some_and(is_word_char);
        let after_ok = !ends_word || !hay[at + needle.len()..].chars().next().is_some_and(is_word_char);
        if before_ok && after_ok {
            return true;
        }
        from = at + needle.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The forms a path may be written in: as given, relative to `cwd`, absolute under `cwd`.
pub fn path_forms(path: &str, cwd: &str) -> Vec<String> {
    let mut out = vec![path.to_string()];
    let p = path.strip_prefix("./").unwrap_or(path);
    if p != path {
        out.push(p.to_string());
    }
    let cwd = cwd.trim_end_matches('/');
    if !cwd.is_empty() {
        if let Some(rel) = p.strip_prefix(cwd).and_then(|r| r.strip_prefix('/')) {
            if !rel.is_empty() {
                out.push(rel.to_string());
            }
        } else if !p.starts_with('/') && !p.starts_with('~') {
            out.push(format!("{cwd}/{p}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_slashed_names_or_known_extensions() {
        assert_eq!(
            paths("edit src/engine/mod.rs and ./scripts/test.sh, then /etc/hosts; see exporter.py."),
            vec!["src/engine/mod.rs", "./scripts/test.sh", "/etc/hosts", "exporter.py"]
        );
        assert!(paths("and/or I/O w/o n/a 3/4 e.g. i.e. 0.87.1").is_empty());
        assert!(paths("see https://example.com/a/b").is_empty());
        assert_eq!(paths("call config.load() on ~/x"), vec!["~/x"]);
        assert_eq!(paths("packages/tui"), vec!["packages/tui"]);
        assert!(paths("<read-files>\na.rs\n</read-files>").contains(&"a.rs".to_string()));
        assert_eq!(paths("</modified-files>"), Vec::<String>::new());
    }

    #[test]
    fn request_terms_are_what_a_summary_must_name() {
        let t = request_terms(
            "Rename `parse_header` in src/load.rs to readHeader, keep SessionManager and the 4096 limit; v3 only. 2 files.",
        );
        assert_eq!(
            t,
            vec![
                "parse_header",
                "src/load.rs",
                "readHeader",
                "SessionManager",
                "4096",
                "v3"
            ]
        );
        assert!(request_terms("Could import parent class module in the. Com").is_empty());
        assert_eq!(
            request_terms("use core::mem::take and foo.bar()"),
            vec!["core::mem::take", "foo.bar"]
        );
        assert_eq!(request_terms("bump to 0.87.1"), vec!["0.87.1"]);
    }

    #[test]
    fn an_error_line_skips_boilerplate() {
        assert_eq!(
            informative_line("\n```\nTraceback (most recent call last):\n  File \"a.py\", line 3\n"),
            Some("File \"a.py\", line 3".into())
        );
        assert_eq!(
            informative_line("Error:\n\n  cannot   find x"),
            Some("cannot find x".into())
        );
        assert_eq!(informative_line("---\n!!\n"), None);
    }

    #[test]
    fn the_error_line_is_the_one_that_says_the_error() {
        // A traceback: the frames come first.
        let tb = "Traceback (most recent call last):\n  File \"imp.py\", line 3, in <module>\n    main()\nValueError: time data '03/05' does not match format '%Y-%m-%d'\n";
        assert_eq!(
            error_line(tb).as_deref(),
            Some("ValueError: time data '03/05' does not match format '%Y-%m-%d'")
        );
        // A test run: progress, then the failure.
        let run = "collected 12 items\n\ntests/test_dates.py ....F\nFAILED tests/test_dates.py::test_iso - AssertionError\n1 failed, 11 passed";
        assert_eq!(
            error_line(run).as_deref(),
            Some("FAILED tests/test_dates.py::test_iso - AssertionError")
        );
        assert_eq!(
            error_line("Compiling x\nerror[E0308]: mismatched types\n --> src/a.rs:3").as_deref(),
            Some("error[E0308]: mismatched types")
        );
        assert_eq!(
            error_line("cat: data/x.log: No such file or directory").as_deref(),
            Some("cat: data/x.log: No such file or directory")
        );
        // Nothing names an error: the first informative line.
        assert_eq!(
            error_line("\nsomething odd happened\n").as_deref(),
            Some("something odd happened")
        );
        // Words that only look like errors.
        assert!(!says_error("0 errors, 2 warnings fixed"));
        assert!(!says_error("INFO import.row=12 terror of the seas"));
        assert!(says_error("ERROR 2026-05-03T10:02:23Z gateway timeout"));
    }

    #[test]
    fn terms_match_whole() {
        assert!(contains_term("see `parse_header` now", "parse_header"));
        assert!(!contains_term("parse_headers", "parse_header"));
        assert!(!contains_term("2012", "12"));
        assert!(contains_term("limit 12.", "12"));
        assert!(contains_term("at src/x.rs:3", "src/x.rs"));
    }

    #[test]
    fn path_forms_relate_to_the_cwd() {
        assert_eq!(
            path_forms("/home/u/p/src/a.rs", "/home/u/p"),
            vec!["/home/u/p/src/a.rs", "src/a.rs"]
        );
        assert_eq!(
            path_forms("./src/a.rs", "/home/u/p/"),
            vec!["./src/a.rs", "src/a.rs", "/home/u/p/src/a.rs"]
        );
        assert_eq!(path_forms("/etc/hosts", "/home/u/p"), vec!["/etc/hosts"]);
    }
}
