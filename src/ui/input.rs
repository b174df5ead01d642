//! Every text input is a real line editor (ratatui-textarea): ←/→, Home/End, Ctrl+A/E,
//! Ctrl+W, Ctrl+K, undo, paste. Ctrl+U deletes to the start of the line as in a shell (the
//! textarea's own Ctrl+U is undo; Ctrl+Z stays undo). One-line inputs never take a newline.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use ratatui_textarea::TextArea;

pub struct LineEditor {
    area: TextArea<'static>,
    multiline: bool,
    /// The text is a prefilled value shown selected: the first character typed (or a paste)
    /// replaces it, Backspace or Delete clears it, any other key keeps it for editing.
    selected_all: bool,
}

impl std::fmt::Debug for LineEditor {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "LineEditor({:?})", self.text())
    }
}

impl LineEditor {
    pub fn new(text: &str, multiline: bool) -> LineEditor {
        let lines: Vec<String> = if multiline {
            text.split('\n').map(String::from).collect()
        } else {
            vec![one_line(text)]
        };
        let mut area = TextArea::new(lines);
        area.set_cursor_line_style(Style::default());
        area.set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
        area.move_cursor(ratatui_textarea::CursorMove::Bottom);
        area.move_cursor(ratatui_textarea::CursorMove::End);
        LineEditor {
            area,
            multiline,
            selected_all: false,
        }
    }

    /// A one-line editor holding a value to type over (see `selected_all`).
    pub fn prefilled(text: &str) -> LineEditor {
        let mut e = LineEditor::new(text, false);
        e.selected_all = !text.is_empty();
        e
    }

    fn clear(&mut self) {
        self.area = TextArea::new(vec![String::new()]);
        self.area.set_cursor_line_style(Style::default());
        self.area
            .set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    pub fn lines(&self) -> &[String] {
        self.area.lines()
    }

    /// Cursor as (line, column in chars).
    pub fn cursor(&self) -> (usize, usize) {
        let c = self.area.cursor();
        (c.0, c.1)
    }

    /// One key. Returns whether the text or the cursor changed.
    pub fn input(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if std::mem::take(&mut self.selected_all) {
            let plain = !ctrl && !key.modifiers.contains(KeyModifiers::ALT);
            match key.code {
                KeyCode::Char(_) if plain => self.clear(),
                KeyCode::Backspace | KeyCode::Delete => {
                    self.clear();
                    return true;
                }
                // Enter and Tab leave the value as it is, selected or not.
                KeyCode::Enter | KeyCode::Tab => self.selected_all = true,
                _ => {}
            }
        }
        match key.code {
            KeyCode::Char('u') if ctrl => self.area.delete_line_by_head(),
            KeyCode::Char('z') if ctrl => self.area.undo(),
            KeyCode::Enter | KeyCode::Tab if !self.multiline => false,
            KeyCode::Char('m' | 'j') if ctrl && !self.multiline => false,
            _ => self.area.input(key),
        }
    }

    /// Line `y` as spans, the cursor cell reversed (so the text reads the same without it); a
    /// prefilled value to type over shows all reversed.
    pub fn line_spans(&self, y: usize, style: Style) -> Vec<Span<'static>> {
        let l = self.area.lines().get(y).cloned().unwrap_or_default();
        if self.selected_all {
            return vec![Span::styled(l, style.add_modifier(Modifier::REVERSED))];
        }
        let (cy, cx) = self.cursor();
        if y != cy {
            return vec![Span::styled(l, style)];
        }
        let at = l.char_indices().nth(cx).map(|(i, _)| i).unwrap_or(l.len());
        let (a, b) = l.split_at(at);
        let mut rest = b.chars();
        let c = rest.next().map(String::from).unwrap_or_else(|| " ".into());
        vec![
            Span::styled(a.to_string(), style),
            Span::styled(c, style.add_modifier(Modifier::REVERSED)),
            Span::styled(rest.as_str().to_string(), style),
        ]
    }

    pub fn newline(&mut self) {
        if self.multiline {
            self.area.insert_newline();
        }
    }

    /// Pasted text (bracketed paste): one line in a one-line input.
    pub fn paste(&mut self, text: &str) {
        if std::mem::take(&mut self.selected_all) {
            self.clear();
        }
        let text = if self.multiline {
            text.replace("\r\n", "\n").replace('\r', "\n")
        } else {
            one_line(text)
        };
        self.area.insert_str(text);
    }
}

/// Runs of line breaks become one space (what a one-line field can hold).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_break = false;
    for c in text.chars() {
        if c == '\n' || c == '\r' {
            if !in_break {
                out.push(' ');
            }
            in_break = true;
        } else {
            out.push(c);
            in_break = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::from(code)
    }
    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    #[test]
    fn a_prefilled_value_is_typed_over() {
        let mut e = LineEditor::prefilled("20000");
        e.input(key(KeyCode::Char('3')));
        assert_eq!(e.text(), "3");
        let mut e = LineEditor::prefilled("20000");
        e.input(key(KeyCode::Backspace));
        assert_eq!(e.text(), "");
        let mut e = LineEditor::prefilled("20000");
        e.input(key(KeyCode::Left));
        e.input(key(KeyCode::Char('5')));
        assert_eq!(e.text(), "200050");
        let mut e = LineEditor::prefilled("20000");
        e.paste("123");
        assert_eq!(e.text(), "123");
    }

    #[test]
    fn editing_keys_work_like_a_shell() {
        let mut e = LineEditor::new("hello world", false);
        // Ctrl+W deletes the word before the cursor.
        e.input(ctrl('w'));
        assert_eq!(e.text(), "hello ");
        // Ctrl+A, type, Ctrl+E, type.
        e.input(ctrl('a'));
        e.input(key(KeyCode::Char('>')));
        e.input(ctrl('e'));
        e.input(key(KeyCode::Char('!')));
        assert_eq!(e.text(), ">hello !");
        // ← moves, Home/End.
        e.input(key(KeyCode::Left));
        e.input(key(KeyCode::Char('x')));
        assert_eq!(e.text(), ">hello x!");
        e.input(key(KeyCode::Home));
        e.input(key(KeyCode::Delete));
        assert_eq!(e.text(), "hello x!");
        e.input(key(KeyCode::End));
        // Ctrl+U deletes to the start of the line.
        e.input(ctrl('u'));
        assert_eq!(e.text(), "");
        // Undo brings it back.
        e.input(ctrl('z'));
        assert_eq!(e.text(), "hello x!");
    }

    #[test]
    fn one_line_inputs_take_no_newline_and_paste_flat() {
        let mut e = LineEditor::new("a", false);
        e.input(key(KeyCode::Enter));
        e.input(ctrl('j'));
        e.newline();
        e.paste("b\r\nc\n\nd");
        assert_eq!(e.text(), "ab c d");
        let mut m = LineEditor::new("a", true);
        m.newline();
        m.paste("b\r\nc");
        assert_eq!(m.text(), "a\nb\nc");
    }
}
