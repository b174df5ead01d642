//! Reading session files: their bytes (read, or mapped when large), the session they hold, and
//! the session again after its file grew.

use super::mapped;
use crate::engine::bytes::FileBytes;
use crate::engine::session::{LoadError, Session};
use std::path::{Path, PathBuf};

/// Why a session file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{}: cannot read the session file: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Invalid { path: PathBuf, source: LoadError },
}

/// The bytes of a session file (see `mapped` for when they are mapped).
pub fn session_bytes(path: &Path) -> Result<FileBytes, OpenError> {
    mapped::load(path).map_err(|source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub fn load_session(path: &Path) -> Result<Session, OpenError> {
    Session::from_bytes(session_bytes(path)?).map_err(|source| OpenError::Invalid {
        path: path.to_path_buf(),
        source,
    })
}

/// `s` as its file is now: only what was appended since `s` was read is parsed.
pub fn reload(s: Session, path: &Path) -> Result<Session, OpenError> {
    s.extend(session_bytes(path)?).map_err(|source| OpenError::Invalid {
        path: path.to_path_buf(),
        source,
    })
}

/// Read a whole file; large files in two halves at once (the copy out of the page cache is
/// a third of opening a big session on a 2-core machine).
pub fn read_file(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path)?;
    let len = f.metadata()?.len() as usize;
    if len < (8 << 20) {
        return std::fs::read(path);
    }
    let mut buf = vec![0u8; len];
    let mid = len / 2;
    let (a, b) = buf.split_at_mut(mid);
    let read_all = |part: &mut [u8], mut off: u64| -> std::io::Result<usize> {
        let mut done = 0;
        while done < part.len() {
            let n = f.read_at(&mut part[done..], off)?;
            if n == 0 {
                break;
            }
            done += n;
            off += n as u64;
        }
        Ok(done)
    };
    let (ra, rb) = std::thread::scope(|sc| {
        let h = sc.spawn(|| read_all(b, mid as u64));
        let ra = read_all(a, 0);
        (
            ra,
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("read thread failed"))),
        )
    });
    let (na, nb) = (ra?, rb?);
    if na < mid {
        // The file shrank while reading: fall back to a plain read.
        return std::fs::read(path);
    }
    buf.truncate(mid + nb);
    Ok(buf)
}
