//! Reading session files: their bytes (read, or mapped when large), the session they hold, and
//! the session again after its file grew.

use super::mapped;
use crate::engine::load::bytes::FileBytes;
use crate::engine::load::session::{LoadError, Session};
use std::path::{Path, PathBuf};

/// Why a session file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{}: cannot read the session file: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: {what}, not a session file; bonsai reads regular files only (a link is followed to its file)", path.display())]
    NotAFile { path: PathBuf, what: &'static str },
    #[error("{}: {source}", path.display())]
    Invalid { path: PathBuf, source: LoadError },
}

/// What a file that is not a regular file is.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The error for a path that is not a regular file.
pub fn not_a_file(path: &Path, meta: &std::fs::Metadata) -> std::io::Error {
    std::io::Error::other(OpenError::NotAFile {
        path: path.to_path_buf(),
        what: kind_of(meta),
    })
}

/// Open `path` for reading, refusing anything but a regular file (a FIFO is opened without
/// waiting for a writer, then refused; `/dev/zero` is refused before it is read).
pub fn open_regular(path: &Path) -> Result<std::fs::File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    };
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(OpenError::NotAFile {
            path: path.to_path_buf(),
            what: kind_of(&meta),
        });
    }
    Ok(f)
}

/// The whole of a regular file.
pub fn read_regular(path: &Path) -> Result<Vec<u8>, OpenError> {
    let f = open_regular(path)?;
    mapped::read_open(&f).map_err(|source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A configuration file's text (Pi's settings, models, auth, a package's `package.json`).
/// `Ok(None)` when nothing is there. Opened without waiting on a FIFO, so a pipe, a device or
/// a folder planted at the name is an error naming it, never a hang.
pub fn read_config(path: &Path) -> Result<Option<String>, String> {
    match read_regular(path) {
        Ok(b) => String::from_utf8(b)
            .map(Some)
            .map_err(|_| format!("{}: not UTF-8 text; ignored", path.display())),
        Err(OpenError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(OpenError::NotAFile { what, .. }) => {
            Err(format!("{}: {what}, not a regular file; ignored", path.display()))
        }
        Err(e) => Err(format!("{e}; ignored")),
    }
}

/// The bytes of a session file (see `mapped` for when they are mapped).
pub fn session_bytes(path: &Path) -> Result<FileBytes, OpenError> {
    let f = open_regular(path)?;
    mapped::load_file(f, path).map_err(|source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub fn load_session(path: &Path) -> Result<Session, OpenError> {
    load_session_from(open_regular(path)?, path)
}

/// [`load_session`] from a file already open (and checked regular) at `path`.
pub fn load_session_from(f: std::fs::File, path: &Path) -> Result<Session, OpenError> {
    load_session_progress(f, path, None)
}

/// [`load_session_from`], telling `progress` how many bytes are parsed as it goes.
pub fn load_session_progress(
    f: std::fs::File,
    path: &Path,
    progress: Option<&(dyn Fn(usize) + Sync)>,
) -> Result<Session, OpenError> {
    let bytes = mapped::load_file(f, path).map_err(|source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_bytes(bytes, path, progress)
}

/// The bytes of the session file at `path` parsed whole, as [`as_loaded`] gives it.
pub(crate) fn parse_bytes(
    bytes: crate::engine::load::bytes::FileBytes,
    path: &Path,
    progress: Option<&(dyn Fn(usize) + Sync)>,
) -> Result<Session, OpenError> {
    let s = Session::from_bytes_progress(bytes, true, progress).map_err(|source| OpenError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(as_loaded(s, path))
}

/// A session read from `path` as every load gives it: read as the Pi release bonsai follows,
/// and a cut-short write of bonsai's own named as such.
pub(crate) fn as_loaded(s: Session, path: &Path) -> Session {
    let mut s = s.read_as(super::pi_version::followed());
    explain_fragment(&mut s, path);
    s
}

/// The leaf's newest rows of a big session, read from the end of its file while the whole
/// file is still being parsed (the loading frame shows them). Reads the first line and the
/// last 4 MB, or the last 32 MB when 4 MB hold fewer than `max_rows` rows of the path.
pub fn leaf_path_preview(
    path: &Path,
    filter: crate::engine::view::tree_view::FilterMode,
    max_rows: usize,
) -> Option<crate::engine::view::tree_view::TailPreview> {
    use std::io::{BufRead, Read, Seek, SeekFrom};
    let mut f = open_regular(path).ok()?;
    let size = f.metadata().ok()?.len();
    let mut header = Vec::new();
    // A header is a few hundred bytes; one that long is no session to preview.
    std::io::BufReader::new((&f).take(1 << 20))
        .read_until(b'\n', &mut header)
        .ok()?;
    if header.pop() != Some(b'\n') {
        return None;
    }
    let mut best = None;
    for len in [4u64 << 20, 32 << 20] {
        let start = size.saturating_sub(len).max(header.len() as u64 + 1);
        let mut tail = Vec::new();
        f.seek(SeekFrom::Start(start)).ok()?;
        (&f).take(size - start).read_to_end(&mut tail).ok()?;
        let whole_lines = start == header.len() as u64 + 1;
        let p = crate::engine::view::tree_view::tail_preview(&header, &tail, whole_lines, filter, max_rows);
        let enough = p.as_ref().is_some_and(|p| p.rows.len() >= max_rows || p.whole_path);
        best = p.or(best);
        if enough || whole_lines {
            break;
        }
    }
    best
}

/// A line cut short by a kill while bonsai was appending is named as such (the note beside
/// the file says which bytes bonsai was writing): at the end, where `bonsai repair` removes
/// it, or followed by lines written since, where it stays as a line Pi skips.
fn explain_fragment(s: &mut Session, path: &Path) {
    super::journal::remove_stale(path, &s.buf);
    let Some(note) = super::journal::read(path) else {
        return;
    };
    if let Some(r) = super::journal::fragment(&s.buf, &note) {
        s.explain_malformed_in(
            r.clone(),
            format!(
                "the unfinished end of an entry bonsai was writing when it was stopped ({} bytes); Pi skips it; `bonsai repair {}` removes it (keeping a backup)",
                r.len(),
                path.display()
            ),
        );
    } else if let Some(r) = super::journal::glued(&s.buf, &note) {
        s.explain_malformed_in(
            r.start..r.end + 1,
            format!(
                "Pi's next entry was appended straight onto the unfinished start of an entry bonsai was writing when it was stopped ({} bytes): Pi skips the whole line, its entry included; `bonsai repair {}` takes bonsai's bytes out and keeps Pi's entry (keeping a backup)",
                r.len(),
                path.display()
            ),
        );
    } else if let Some(r) = super::journal::stranded(&s.buf, &note) {
        s.explain_malformed_in(
            r.clone(),
            format!(
                "the start of an entry bonsai was writing when it was stopped ({} bytes), ended by a newline and followed by lines written since; Pi skips it; `bonsai repair {}` removes it (keeping a backup)",
                r.len() - 1,
                path.display()
            ),
        );
    }
}

/// `s` as its file is now: only what was appended since `s` was read is parsed.
pub fn reload(s: Session, path: &Path) -> Result<Session, OpenError> {
    let mut s = s.extend(session_bytes(path)?).map_err(|source| OpenError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    explain_fragment(&mut s, path);
    Ok(s)
}

/// What a file's change is compared with before it is believed an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// The first and the last 64 KiB of what was shown: a whole compare would read a 10 GB
    /// session again on every append Pi makes.
    Ends,
    /// Every byte: the file changed without changing length, which an append never does.
    Whole,
}

/// How much of each end [`Compare::Ends`] looks at.
const END_BYTES: usize = 64 << 10;

/// Whether `now` still starts with the bytes `was` read (see [`Compare`]).
fn still_starts(was: &[u8], now: &[u8], how: Compare) -> bool {
    if now.len() < was.len() {
        return false;
    }
    let n = was.len();
    match how {
        Compare::Whole => now[..n] == *was,
        Compare::Ends => {
            let head = n.min(END_BYTES);
            let tail = n.saturating_sub(END_BYTES).max(head);
            now[..head] == was[..head] && now[tail..n] == was[tail..n]
        }
    }
}

/// [`reload`] keeping `s` (it is still shown), and whether the file was rewritten rather than
/// appended to (then it was read whole): `None` when its bytes are the shown ones.
pub fn reload_shown(s: &Session, path: &Path, how: Compare) -> Result<Option<(Session, bool)>, OpenError> {
    let buf = session_bytes(path)?;
    let same_start = still_starts(&s.buf, &buf, how);
    if same_start && buf.len() == s.buf.len() {
        return Ok(None);
    }
    let rewritten = !same_start || !s.continues_into(&buf);
    let invalid = |source| OpenError::Invalid {
        path: path.to_path_buf(),
        source,
    };
    let mut s = if rewritten {
        Session::from_bytes(buf).map_err(invalid)?.read_as(s.pi)
    } else {
        s.extended(buf).map_err(invalid)?
    };
    explain_fragment(&mut s, path);
    Ok(Some((s, rewritten)))
}

/// A file's modification time in ns since the epoch: with its inode, what tells a file that
/// kept its length was written again.
pub fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

/// Read a whole regular file (see `mapped::read_open`).
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let f = open_regular(path).map_err(std::io::Error::other)?;
    mapped::read_open(&f)
}

/// Whether Pi started this bonsai for `path` (bonsai's Pi package sets `BONSAI_PI_SESSION` when
/// `/bonsai` hands it the terminal): Pi waits for bonsai to exit, writes nothing meanwhile, and
/// reopens the file afterwards, so a recent write to it is Pi's last turn, not a running Pi.
pub fn pi_waits_on(path: &Path) -> bool {
    let Some(host) = std::env::var_os("BONSAI_PI_SESSION").filter(|h| !h.is_empty()) else {
        return false;
    };
    match (std::fs::canonicalize(&host), std::fs::canonicalize(path)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A file's modification time in ms since the epoch (0 when the system cannot say): what the
/// listing, usage and export records compare to tell a file changed.
pub fn mtime_ms(m: &std::fs::Metadata) -> i64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A size as people read it: bytes, KB, MB or GB (powers of 1024).
pub fn human_bytes(n: u64) -> String {
    crate::engine::units::bytes(n)
}
