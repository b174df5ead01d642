//! The loading frame of a session still being parsed: how far the parse is and, for a big
//! file, the leaf's newest entries read from the end of the file, so the conversation one
//! left is on screen long before the tree. Nothing counted over the whole session is shown
//! until the parse ends (the percentage is the only number, and it says what it counts).

use super::theme::*;
use super::tree_pane::text_style;
use crate::engine::view::text_width::visible_width;
use crate::engine::view::tree_view::TailPreview;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// What the loading frame shows.
pub struct Loading {
    /// The file as the user named it.
    pub name: String,
    pub size: u64,
    /// Bytes parsed so far (0 before the first report).
    pub parsed: usize,
    /// The leaf's newest rows, once read from the end of the file.
    pub preview: Option<TailPreview>,
    /// How the file is being read (bonsai's index, or a whole parse and why), once known.
    pub via: Option<crate::store::index::Used>,
}

impl Loading {
    fn title(&self) -> String {
        let mb = |b: f64| b / 1048576.0;
        if let Some(via) = self
            .via
            .as_ref()
            .filter(|v| !matches!(v, crate::store::index::Used::Parsed(_)))
        {
            return format!(
                " Opening {} ({:.1} MB) {via}…",
                self.name,
                mb(self.size as f64),
                via = via.describe()
            );
        }
        if self.parsed > 0 && self.size > 0 {
            format!(
                " Loading {} ({:.1} MB)… {}% ({:.0} MB parsed)",
                self.name,
                mb(self.size as f64),
                (self.parsed as u64 * 100 / self.size).min(100),
                mb(self.parsed as f64)
            )
        } else {
            format!(" Loading {} ({:.1} MB)…", self.name, mb(self.size as f64))
        }
    }
}

/// Rows above and below the preview's rows: the title, the note, a blank line; the hint.
pub const CHROME_ROWS: u16 = 4;

impl crate::ui::component::Drawable for Loading {
    type View<'a> = ();
    fn draw(&self, f: &mut Frame, area: Rect, _: ()) {
        draw(f, area, self)
    }
}

pub fn draw(f: &mut Frame, area: Rect, l: &Loading) {
    let width = area.width as usize;
    let mut lines = vec![Line::from(l.title())];
    if let Some(p) = &l.preview {
        let note = if p.whole_path {
            " The leaf's path, read from the end of the file; the tree and the counts follow."
        } else {
            " The leaf's newest entries, read from the end of the file; the tree and the counts follow."
        };
        lines.push(Line::from(Span::styled(note, fg(MUTED))));
        lines.push(Line::default());
        let room = area.height.saturating_sub(CHROME_ROWS) as usize;
        let first = p.rows.len().saturating_sub(room);
        let last = p.rows.len().saturating_sub(1);
        for (k, r) in p.rows.iter().enumerate().skip(first) {
            let (lead_style, body_style) = text_style(r.style);
            let leaf = k == last;
            let mut spans = vec![
                Span::styled(if leaf { "› " } else { "  " }, fg(ACCENT)),
                Span::styled("• ", fg(ACCENT)),
                Span::styled(r.lead.clone(), lead_style),
            ];
            // One row each, cut at the edge like the tree's.
            let room = width.saturating_sub(4 + visible_width(&r.lead));
            spans.push(Span::styled(
                crate::engine::view::text_width::truncate_to_width(&r.body, room, ""),
                body_style,
            ));
            let mut line = Line::from(spans);
            if leaf {
                line = line.style(Style::default().bg(SELECTED_BG).add_modifier(Modifier::BOLD));
            }
            lines.push(line);
        }
    }
    let hint_row = area.height.saturating_sub(1);
    f.render_widget(
        Paragraph::new(lines),
        Rect {
            height: hint_row,
            ..area
        },
    );
    if area.height > 1 {
        f.render_widget(
            Paragraph::new(Span::styled(
                " Keys typed now act once the session is open · q or Ctrl+C stops loading",
                fg(DIM),
            )),
            Rect {
                y: area.y + hint_row,
                height: 1,
                ..area
            },
        );
    }
}

/// A session being read for the first frame.
pub struct FirstLoad {
    /// What the loading frame shows.
    pub frame: Loading,
    /// The entry asked for on the command line (`--at`), selected once the session is there.
    pub at: Option<String>,
}

#[cfg(test)]
mod snapshots {
    use super::*;
    use crate::engine::view::tree_view::{FilterMode, tail_preview};
    use insta::assert_snapshot;
    use ratatui::{Terminal, backend::TestBackend};

    fn render(l: &Loading, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, f.area(), l)).unwrap();
        t.backend().to_string()
    }

    /// The repository's 0.87.1 `long` session, its last 30 KB as the tail.
    fn preview(max_rows: usize) -> TailPreview {
        let file = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/pi-0.87.1/long.jsonl")).unwrap();
        let header = &file[..file.iter().position(|&b| b == b'\n').unwrap()];
        tail_preview(
            header,
            &file[file.len() - 30_000..],
            false,
            FilterMode::Default,
            max_rows,
        )
        .unwrap()
    }

    #[test]
    fn loading_before_the_tail_is_read() {
        let l = Loading {
            name: "/home/u/.pi/agent/sessions/big.jsonl".into(),
            size: 10_135_670_193,
            parsed: 0,
            preview: None,
            via: None,
        };
        assert_snapshot!(render(&l, 100, 6));
    }

    #[test]
    fn loading_from_the_index() {
        let mut l = Loading {
            name: "big.jsonl".into(),
            size: 1_010_002_658,
            parsed: 0,
            preview: None,
            via: Some(crate::store::index::Used::Unchanged),
        };
        assert_snapshot!(render(&l, 110, 3));
        l.via = Some(crate::store::index::Used::Extended(1_049_127));
        assert_snapshot!("loading_from_the_index_and_appended_lines", render(&l, 110, 3));
    }

    #[test]
    fn loading_with_the_leafs_newest_entries() {
        let l = Loading {
            name: "big.jsonl".into(),
            size: 10_135_670_193,
            parsed: 3_456_789_012,
            preview: Some(preview(20)),
            via: None,
        };
        assert_snapshot!(render(&l, 100, 16));
    }
}
