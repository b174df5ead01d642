//! The session as one self-contained HTML page: the Markdown export rendered by pulldown-cmark,
//! code highlighted by syntect (classed spans, with a light and a dark theme in the page's own
//! stylesheet, chosen by the reader's system setting), thinking and long tool output behind
//! `<details>` folds. Nothing is fetched: no script, font, stylesheet or image from anywhere,
//! and the session's own text cannot add any (its raw HTML is shown as text, its images
//! become links, `javascript:` links are disarmed).

use super::markdown::{self, Scope};
use crate::load::session::Session;
use crate::view::syntax;
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
use syntect::html::{ClassStyle, ClassedHTMLGenerator, css_for_theme_with_class_style};
use syntect::util::LinesWithEndings;

/// syntect highlights a grammar like TypeScript at ~0.15 MB/s (plus ~2 s to compile the
/// grammars a page first needs): past this much code in one page the rest is shown plain
/// (the page says so), so a 100 MB session still exports in seconds (BENCHMARKS.md).
pub const HIGHLIGHT_BUDGET: usize = 256 * 1024;
/// A single block longer than this is shown plain.
const HIGHLIGHT_BLOCK_MAX: usize = 256 * 1024;
const CLASS_STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

const BASE_CSS: &str = r#"
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --border: #d1d9e0; --panel: #f6f8fa; --accent: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --border: #3d444d; --panel: #151b23; --accent: #4493f8; }
}
html { background: var(--bg); color: var(--fg); }
body { font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 960px; margin: 0 auto; padding: 24px 20px 64px; }
h1 { font-size: 1.6em; margin: 0 0 .3em; }
h2 { font-size: 1.2em; margin: 1.6em 0 .4em; padding-top: .6em; border-top: 1px solid var(--border); }
h3 { font-size: 1.05em; margin: 1.2em 0 .3em; color: var(--muted); }
em { color: var(--muted); }
a { color: var(--accent); }
code { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
:not(pre) > code { background: var(--panel); padding: .1em .3em; border-radius: 4px; }
pre { background: var(--panel); border: 1px solid var(--border); border-radius: 6px; padding: 10px 12px; overflow-x: auto; white-space: pre; }
details { border: 1px solid var(--border); border-radius: 6px; padding: 4px 10px; margin: 8px 0; background: var(--bg); }
details > summary { cursor: pointer; color: var(--muted); padding: 2px 0; }
details[open] > summary { margin-bottom: 6px; }
blockquote { margin: 0; padding: 0 1em; border-left: 3px solid var(--border); color: var(--muted); }
hr { border: 0; border-top: 2px dashed var(--border); margin: 2em 0; }
footer { margin-top: 3em; color: var(--muted); font-size: .85em; }
"#;

fn escape(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// The stylesheet: the page's colours and both code themes (dark under the media query).
fn stylesheet() -> String {
    let themes = &syntax::themes().themes;
    let light = themes
        .get("InspiredGitHub")
        .and_then(|t| css_for_theme_with_class_style(t, CLASS_STYLE).ok())
        .unwrap_or_default();
    let dark = themes
        .get("base16-ocean.dark")
        .and_then(|t| css_for_theme_with_class_style(t, CLASS_STYLE).ok())
        .unwrap_or_default();
    // Each theme only under its own scheme: a rule of one would otherwise outrank a less
    // specific rule of the other (dark text on the dark background).
    format!(
        "{BASE_CSS}\n@media not all and (prefers-color-scheme: dark) {{\n{light}\n}}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"
    )
}

/// Our own fold markers from the Markdown (`<details><summary>…</summary>`, `</details>`):
/// the only raw HTML that stays HTML.
fn is_own_fold(h: &str) -> bool {
    let t = h.trim();
    if t == "</details>" {
        return true;
    }
    t.strip_prefix("<details><summary>")
        .and_then(|r| r.strip_suffix("</summary>"))
        .is_some_and(|inner| !inner.contains('<'))
}

struct Highlighting {
    budget_left: usize,
    plain_blocks: usize,
}

impl Highlighting {
    fn block(&mut self, lang: &str, code: &str) -> String {
        let syntax = syntax::for_token(lang);
        if let Some(syn) = syntax
            && code.len() <= HIGHLIGHT_BLOCK_MAX
            && code.len() <= self.budget_left
        {
            let mut g = ClassedHTMLGenerator::new_with_class_style(syn, syntax::syntaxes(), CLASS_STYLE);
            let ok = LinesWithEndings::from(code).all(|l| g.parse_html_for_line_which_includes_newline(l).is_ok());
            if ok {
                self.budget_left -= code.len();
                return format!("<pre class=\"hl-code\"><code>{}</code></pre>\n", g.finalize());
            }
        }
        if syntax.is_some() {
            self.plain_blocks += 1;
        }
        format!("<pre class=\"hl-code\"><code>{}</code></pre>\n", escape(code))
    }
}

/// The HTML page for a session (`scope` as for Markdown).
pub fn html(s: &Session, scope: Scope) -> String {
    let md = markdown::markdown(s, scope);
    // The heading's text as Markdown reads it (the Markdown escaped what it quotes: escaping
    // that again showed `&lt;` in the page's title).
    let title = md
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .map(|h| {
            pulldown_cmark::Parser::new(h)
                .filter_map(|e| match e {
                    pulldown_cmark::Event::Text(t) | pulldown_cmark::Event::Code(t) => Some(t.to_string()),
                    pulldown_cmark::Event::SoftBreak | pulldown_cmark::Event::HardBreak => Some(" ".into()),
                    _ => None,
                })
                .collect::<String>()
        })
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "Pi session".to_string());
    let mut hl = Highlighting {
        budget_left: HIGHLIGHT_BUDGET,
        plain_blocks: 0,
    };
    let mut code: Option<(String, String)> = None;
    // One pass, streamed into the writer: the events of a 100 MB session are never all held.
    let events = Parser::new_ext(&md, Options::empty()).filter_map(|ev| {
        if let Some((lang, text)) = &mut code {
            match ev {
                Event::Text(t) => text.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let html = hl.block(lang, text);
                    code = None;
                    return Some(Event::Html(CowStr::from(html)));
                }
                _ => {}
            }
            return None;
        }
        Some(match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
                return None;
            }
            // Our folds are always blocks of their own: a fold tag inside a line is text.
            Event::Html(h) if is_own_fold(&h) => Event::Html(h),
            // Any other HTML is the session's text: shown, never run.
            Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
            // An image would be fetched when the page opens: a link instead.
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }),
            Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let lower = dest_url.trim().to_ascii_lowercase();
                let safe =
                    !(lower.starts_with("javascript:") || lower.starts_with("vbscript:") || lower.starts_with("data:"));
                Event::Start(Tag::Link {
                    link_type,
                    dest_url: if safe { dest_url } else { CowStr::from("#") },
                    title,
                    id,
                })
            }
            e => e,
        })
    });
    let mut body = String::with_capacity(md.len() + md.len() / 4);
    pulldown_cmark::html::push_html(&mut body, events);
    let mut footer = String::from("Exported by bonsai from a Pi session file.");
    if hl.plain_blocks > 0 {
        footer.push_str(&format!(
            " Syntax highlighting stopped after {} KB of code: {} later block{} shown plain.",
            HIGHLIGHT_BUDGET / 1024,
            hl.plain_blocks,
            if hl.plain_blocks == 1 { " is" } else { "s are" }
        ));
    }
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"bonsai\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n{body}</main>\n<footer>{}</footer>\n</body>\n</html>\n",
        escape(&title),
        stylesheet(),
        escape(&footer)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_title_is_the_sessions_name_escaped_once() {
        let text = "{\"type\":\"session\",\"version\":3,\"id\":\"t\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n{\"type\":\"session_info\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"name\":\"a <b> & c\"}\n";
        let s = Session::from_bytes(text.as_bytes().to_vec()).unwrap();
        let page = html(&s, Scope::Tree);
        let title = &page[page.find("<title>").unwrap() + 7..page.find("</title>").unwrap()];
        assert!(title.contains("a &lt;b&gt; &amp; c"), "{title}");
        assert!(!title.contains("&amp;lt;"), "{title}");
    }

    #[test]
    fn only_our_folds_stay_html() {
        assert!(is_own_fold("<details><summary>all 40 lines</summary>\n"));
        assert!(is_own_fold("</details>"));
        assert!(!is_own_fold("<script>alert(1)</script>"));
        assert!(!is_own_fold("<details><summary><img src=x onerror=alert(1)></summary>"));
    }

    #[test]
    fn the_sessions_own_html_and_links_cannot_run_or_fetch() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-11-22T00:00:00.000Z","cwd":"/x"}"#,
            "\n",
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-22T00:00:01.000Z","message":{"role":"user","content":"look <script>alert(1)</script> ![x](http://example.com/a.png) [y](javascript:alert(2))"}}"#,
            "\n"
        );
        let s = Session::from_bytes(text.as_bytes().to_vec()).unwrap();
        let h = html(&s, Scope::Path(0));
        assert!(!h.contains("<script"), "{h}");
        assert!(h.contains("&lt;script&gt;"));
        assert!(!h.contains("<img"));
        assert!(!h.contains("javascript:"));
        assert!(!h.contains("src=\"http"));
    }
}
