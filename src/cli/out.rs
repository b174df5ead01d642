//! Everything the CLI prints goes through here (the `println!`/`print!`/`eprintln!`/`eprint!`
//! of the `cli` module are this module's, see `cli.rs`), for two reasons:
//! - A session's text, names, tool names and file names are anyone's bytes: an escape sequence
//!   in them must not reach the terminal (OSC 52 writes the clipboard, others set the title or
//!   clear the screen). Control characters are shown as `\u001b`-style escapes, which is also
//!   what JSON means by them, so a `--json` line stays valid JSON (serde_json leaves C1
//!   characters raw; here they are escaped too).
//! - A full or broken output must not panic (std's `println!` does): bonsai says what was lost
//!   and exits with 74, once whatever the command wrote to a session is written.

use std::borrow::Cow;
use std::io::Write;

/// The exit code when standard output cannot be written (sysexits' EX_IOERR).
pub const OUTPUT_FAILED: i32 = 74;

/// A path as one argument of a command line to copy: as it is when it is plain, else in
/// single quotes (a `'` in it written `'\''`). Printed through [`stdout`], so a control
/// character in it is still shown escaped.
pub fn shell_arg(p: &std::path::Path) -> String {
    let s = p.to_string_lossy();
    let plain = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+~=:@,".contains(c));
    if plain {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Whether `c` must not reach a terminal raw: C0 controls except tab and newline, DEL, C1.
fn hidden(c: char) -> bool {
    (c < ' ' && c != '\n' && c != '\t') || ('\u{7f}'..='\u{9f}').contains(&c)
}

/// `s` with every control character a terminal would act on written as `\uXXXX`.
pub fn visible(s: &str) -> Cow<'_, str> {
    // Fast path: no byte below 0x20 (other than \t \n), no DEL, no C1 (0xC2 0x80..=0x9F).
    let b = s.as_bytes();
    let clean = !b.iter().enumerate().any(|(i, &x)| {
        (x < 0x20 && x != b'\n' && x != b'\t')
            || x == 0x7f
            || (x == 0xc2 && b.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)))
    });
    if clean {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if hidden(c) {
            o.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            o.push(c);
        }
    }
    Cow::Owned(o)
}

/// Bytes of a document (an export) made visible the same way; invalid UTF-8 passes as it is
/// only where it cannot form a control character.
pub fn visible_bytes(b: &[u8]) -> Cow<'_, [u8]> {
    match std::str::from_utf8(b) {
        Ok(s) => match visible(s) {
            Cow::Borrowed(_) => Cow::Borrowed(b),
            Cow::Owned(o) => Cow::Owned(o.into_bytes()),
        },
        Err(_) => Cow::Owned(visible(&String::from_utf8_lossy(b)).into_owned().into_bytes()),
    }
}

/// Standard output failed: say so once on standard error and end the process.
fn output_failed(e: &std::io::Error) -> ! {
    let _ = writeln!(
        std::io::stderr(),
        "bonsai: could not write to standard output ({e}). Anything this command wrote to a session \
         is written (it happens before the report); only the report is lost"
    );
    std::process::exit(OUTPUT_FAILED)
}

/// Print `s` to standard output as it is seen (see [`visible`]).
pub fn stdout(s: &str) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(visible(s).as_bytes()).and_then(|()| o.flush()) {
        output_failed(&e)
    }
}

/// Raw bytes to standard output (already made visible by the caller where they are text).
pub fn stdout_bytes(b: &[u8]) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(b).and_then(|()| o.flush()) {
        output_failed(&e)
    }
}

/// Print `s` to standard error as it is seen; a standard error that cannot be written is
/// given up on quietly (there is nowhere left to say so).
pub fn stderr(s: &str) {
    let _ = std::io::stderr().lock().write_all(visible(s).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_and_json_stays_json() {
        assert_eq!(visible("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(visible("a\x1b]52;c;SGVsbG8=\x07b"), "a\\u001b]52;c;SGVsbG8=\\u0007b");
        assert_eq!(visible("x\u{9b}2Jy\u{7f}\r"), "x\\u009b2Jy\\u007f\\u000d");
        assert_eq!(visible("é ü — ✓"), "é ü — ✓");
        // serde_json leaves C1 raw; after `visible` the line is still the same JSON value.
        let v = serde_json::json!({"t": "a\u{9d}0;title\u{9c} \\ \u{85}"});
        let line = serde_json::to_string(&v).unwrap();
        assert!(line.contains('\u{9d}'));
        let shown = visible(&line);
        assert!(!shown.chars().any(hidden));
        assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap(), v);
    }
}
