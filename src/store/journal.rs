//! A note beside a session while bonsai appends to it: which bytes it is writing and where.
//! A kill mid-write leaves some of those bytes at the end of the file; the note tells them
//! apart from anyone else's, so loading names them as bonsai's unfinished write and
//! `bonsai repair` removes exactly them. The note is removed once the bytes are on disk; a
//! note left by a kill after the bytes were complete describes nothing missing and is ignored.

use super::faults;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What bonsai is about to append to a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    /// The file's length before the append.
    pub offset: u64,
    /// The bytes appended, as text (whole JSON lines, maybe after a newline).
    pub data: String,
}

/// `.NAME.bonsai-write` beside the session: hidden, not a `.jsonl`, so Pi and listings
/// ignore it.
pub fn path_for(session: &Path) -> PathBuf {
    let name = session
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    session.with_file_name(format!(".{name}.bonsai-write"))
}

/// A note path that is not a regular file (a link, a FIFO, a directory, a device): planted
/// there or left by something else. It is named and left alone.
fn not_a_note(p: &Path) -> std::io::Error {
    std::io::Error::other(format!(
        "{} is not a regular file (a link, a FIFO, a folder or a device: bonsai never makes one there); it is left alone: remove it to write to this session",
        p.display()
    ))
}

/// Opened without following a link (`O_NOFOLLOW`) and without waiting on a FIFO
/// (`O_NONBLOCK`), and used only when it is a regular file: a link planted at the note's path
/// would otherwise have bonsai truncate and write the link's target.
fn open_note(p: &Path, write: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    if write {
        o.write(true).create(true);
    } else {
        o.read(true);
    }
    let f = o
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .mode(0o600)
        .open(p)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) | Some(libc::ENXIO) | Some(libc::EISDIR) => not_a_note(p),
            _ => e,
        })?;
    if !f.metadata()?.is_file() {
        return Err(not_a_note(p));
    }
    Ok(f)
}

/// Record the write on disk before it starts.
pub fn write(session: &Path, note: &Note) -> std::io::Result<()> {
    let p = path_for(session);
    let text = serde_json::to_vec(note).map_err(std::io::Error::other)?;
    let mut f = faults::op("journal-create", || {
        let f = open_note(&p, true)?;
        // Truncated only once it is known to be a regular file of its own.
        f.set_len(0)?;
        Ok(f)
    })?;
    let mut written = 0;
    faults::write_all("journal-write", &mut f, &text, &mut written)?;
    faults::op("journal-sync", || f.sync_data())?;
    f.flush()
}

pub fn remove(session: &Path) -> std::io::Result<()> {
    let p = path_for(session);
    match faults::op("journal-remove", || std::fs::remove_file(&p)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// How old a note must be before a load takes it for a leftover: bonsai's own appends hold
/// their note for milliseconds.
pub const STALE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Remove the note beside `session` when it is over [`STALE`] old and names no bytes in `buf`
/// (empty, cut short by a full disk, or left by a kill after its write was complete): what
/// would otherwise sit beside the session for good. A note that still explains the file's end
/// stays for `bonsai repair`. Only a regular file is ever removed.
pub fn remove_stale(session: &Path, buf: &[u8]) {
    let p = path_for(session);
    let Ok(f) = open_note(&p, false) else { return };
    let old = f
        .metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|a| a > STALE));
    drop(f);
    if !old {
        return;
    }
    let explains = read(session)
        .is_some_and(|n| fragment(buf, &n).is_some() || glued(buf, &n).is_some() || stranded(buf, &n).is_some());
    if !explains {
        let _ = std::fs::remove_file(&p);
    }
}

/// The note, if there is one and it is a regular file (a link or a device is never read:
/// a note pointing at `/dev/zero` would be read forever).
pub fn read(session: &Path) -> Option<Note> {
    use std::io::Read;
    let mut f = open_note(&path_for(session), false).ok()?;
    let mut text = Vec::new();
    f.read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The bytes at the end of `buf` that are the start of the noted write (not all of it: a
/// whole write is not a fragment), if they are exactly that. Pi, opening a file whose last
/// line is unfinished, ends it with a newline; that newline belongs to the fragment too.
pub fn fragment(buf: &[u8], note: &Note) -> Option<Range<usize>> {
    let start = usize::try_from(note.offset).ok()?;
    let tail = buf.get(start..)?;
    let data = note.data.as_bytes();
    let cut_short = |t: &[u8]| !t.is_empty() && t.len() < data.len() && data.starts_with(t);
    let ours = cut_short(tail)
        || tail
            .strip_suffix(b"\n")
            .is_some_and(|t| cut_short(t) && data[t.len()] != b'\n');
    ours.then_some(start..buf.len())
}

/// The noted write cut short with Pi's next line glued straight onto it (Pi appends its line
/// without a newline first): the fragment, `offset..offset + k`, where the rest of that line
/// from `k` on is a whole entry. The note says where bonsai's bytes begin; of the places
/// where they could end (as long as they match the note), the one where a whole JSON
/// object follows to the end of the line is Pi's line.
pub fn glued(buf: &[u8], note: &Note) -> Option<Range<usize>> {
    let start = usize::try_from(note.offset).ok()?;
    let tail = buf.get(start..)?;
    let data = note.data.as_bytes();
    let same = tail.iter().zip(data).take_while(|(a, b)| a == b).count();
    let line_end = memchr::memchr(b'\n', tail).unwrap_or(tail.len());
    (1..=same.min(line_end).min(data.len().saturating_sub(1)))
        .filter(|&k| tail[k] == b'{')
        .find(|&k| {
            serde_json::from_slice::<serde_json::Value>(&tail[k..line_end])
                .is_ok_and(|v| v.get("type").is_some_and(|t| t.is_string()))
        })
        .map(|k| start..start + k)
}

/// The noted write cut short and then followed by other lines (Pi ended it with a newline
/// and went on appending): the cut-short line, which stays in the file as one Pi skips.
pub fn stranded(buf: &[u8], note: &Note) -> Option<Range<usize>> {
    let start = usize::try_from(note.offset).ok()?;
    let tail = buf.get(start..)?;
    let data = note.data.as_bytes();
    // The noted bytes up to where they stop matching the file, which must be at a newline
    // the note does not have there.
    let same = tail.iter().zip(data).take_while(|(a, b)| a == b).count();
    let stops_at_newline = tail.get(same) == Some(&b'\n') && data.get(same).is_some_and(|&b| b != b'\n');
    (same > 0 && stops_at_newline && same + 1 < tail.len()).then(|| start..start + same + 1)
}
