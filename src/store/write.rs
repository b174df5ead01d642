//! Writing. bonsai never rewrites a session in place (but for `repair`, which says so): it
//! appends whole lines to v3 files in one write and fsyncs; new files (forks, clones, backups,
//! a migrated file) are written to a hidden temporary file, fsynced, and then appear whole under
//! their name. A write that fails leaves the session byte-identical to before: bonsai removes
//! exactly the bytes it wrote. A kill cannot be cleaned up after, so each append is noted
//! beside the session first (`journal`): the fragment a kill leaves is named as bonsai's, and
//! `repair` removes it.
//!
//! Every file operation here goes through `faults`, so the fault suite can fail any of them.

use super::faults::{self, is_crash};
use super::journal::{self, Note};
use crate::engine::edit::plan::{Prepared, Refusal, WriteRequest};
use crate::engine::load::js;
use crate::engine::load::session::Session;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The session a write was built from was opened through bonsai's index, and a line of it
    /// no longer matched the file: what was built may hold another line's text.
    #[error(
        "nothing written: bonsai's index of this session no longer matched the file (a line was changed in place), so what would be written may have been made from other lines. The session is parsed again; make it again from what it shows"
    )]
    IndexMismatch,
    /// The write failed and bonsai took back what it had written: the session is as before.
    #[error("could not write to {}: {source}; nothing was changed. Fix that (e.g. free disk space) and run the command again", path.display())]
    Failed { path: PathBuf, source: std::io::Error },
    /// The write failed and what bonsai had written could not be taken back.
    #[error(
        "could not write to {}: {source}; bonsai could not remove the partial entry it wrote ({cleanup}): run `bonsai repair {}`",
        path.display(),
        path.display()
    )]
    Partial {
        path: PathBuf,
        source: std::io::Error,
        cleanup: TakeBackError,
    },
    /// A file that could not be written whole was not written at all.
    #[error("could not write {}: {source}; no file was left behind. Fix that (e.g. free disk space) and run the command again", path.display())]
    NewFile { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// v1/v2 files must be migrated first (Pi would rewrite them on open).
    #[error(
        "this is a version {version} session file; bonsai appends only to version 3 files. Run `bonsai migrate FILE` first (it keeps a .bak)"
    )]
    NeedsMigration { version: f64 },
    /// The file changed since it was loaded; the caller reloads and re-checks.
    #[error("{}", if *grew {
        "the session kept growing while bonsai prepared the write (Pi, or another program, is writing to it): nothing written; try again when it is idle"
    } else {
        "the session was replaced or rewritten while bonsai prepared the write: nothing written; run the command again"
    })]
    Changed { grew: bool },
    /// The file ends with a line that is not whole: Pi may be writing it, or a write was
    /// killed halfway.
    #[error("{}: {reason}", path.display())]
    Unfinished { path: PathBuf, reason: String },
    #[error(transparent)]
    Open(#[from] super::files::OpenError),
    /// The write, decided again on the file as it is now, is refused.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{0}")]
    Repair(String),
}

/// Why bonsai could not take back the bytes of a failed append.
#[derive(Debug, thiserror::Error)]
pub enum TakeBackError {
    /// Another writer appended after them: cutting them off would cut its lines too.
    #[error("another program appended after them ({now} bytes in the file, {expected} expected)")]
    AppendedAfter { now: u64, expected: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What happened on an append.
#[derive(Debug, Default, Clone)]
pub struct Appended {
    pub lines: usize,
    pub bytes: usize,
    /// The file had no final newline; one was written first (as Pi does on open).
    pub added_newline: bool,
    /// The file was written in the last seconds: Pi may be running and will see the new
    /// entries only after it reopens the session.
    pub recently_written: bool,
    /// Another writer (Pi) appended this many bytes in the instant between bonsai's last
    /// check and its write: bonsai's lines follow them, so their first entry branches from
    /// the entry before them. Nothing is lost; the user is told.
    pub raced_after: Option<usize>,
    /// The append held a write lease: no one could append between the load and the write.
    pub leased: bool,
}

/// Load the current file, let `build` decide the entries on that exact state, and append
/// them, unless the file changed in between (then load again and re-decide, a few times).
///
/// Where the kernel allows it, the file is held under a write lease from the load to the
/// end of the append: Pi opens the session for each line it appends, and that open waits
/// until bonsai's lines are in, so they follow exactly the line they were decided on.
/// Without a lease (another program, or bonsai's own view, has the file open; a file system
/// without leases) the length is checked right before the write and the bytes read back
/// after it ([`Appended::raced_after`]).
pub fn append_with<F>(path: &Path, mut build: F) -> Result<(Session, Appended), WriteError>
where
    F: FnMut(&Session) -> Result<Vec<serde_json::Value>, Refusal>,
{
    // Pi appends a line every few milliseconds while it streams; each try takes about that
    // long, so a few more tries (and a short pause) usually find a quiet moment.
    let mut last = WriteError::Changed { grew: true };
    for attempt in 0..8u64 {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(2 * attempt));
        }
        let mut f = open_for_append(path)?;
        let lease = Lease::take(&f);
        // Under a lease the file is read through the same open file (another open of it
        // would wait for the lease, which is this process's own).
        let s = if lease.is_some() {
            super::files::load_session_from(f.try_clone()?, path)?
        } else {
            super::files::load_session(path)?
        };
        if s.header.version < 3.0 {
            return Err(WriteError::NeedsMigration {
                version: s.header.version,
            });
        }
        if let Some(reason) = unfinished_end(path, &s) {
            return Err(WriteError::Unfinished {
                path: path.to_path_buf(),
                reason,
            });
        }
        let entries = build(&s)?;
        let r = append_lines_to(&mut f, path, s.buf.len() as u64, &entries, lease.is_some());
        drop(lease);
        match r {
            Ok(a) => return Ok((s, a)),
            Err(e @ WriteError::Changed { .. }) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// A write lease on a session (`F_SETLEASE`), released on drop. While it is held, anyone
/// else's open of the file waits (up to the kernel's lease-break time, 45 s by default;
/// bonsai holds it for the load and the append, milliseconds to a tenth of a second).
/// (The descriptor, not a borrow: the append writes through the same `File`, which outlives
/// the lease in [`append_with`].)
pub(super) struct Lease(std::os::fd::RawFd);

impl Lease {
    pub(super) fn take(f: &File) -> Option<Lease> {
        use std::os::fd::AsRawFd;
        // When another open waits, the kernel signals the holder with SIGIO, whose default
        // action ends the process; bonsai lets the open wait until its lines are written.
        // SAFETY: setting a signal's disposition to ignore has no other effect.
        unsafe {
            libc::signal(libc::SIGIO, libc::SIG_IGN);
        }
        // SAFETY: fcntl on a descriptor this File owns.
        let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) };
        (r == 0).then_some(Lease(f.as_raw_fd()))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // SAFETY: the descriptor is still open (see above).
        unsafe {
            libc::fcntl(self.0, libc::F_SETLEASE, libc::F_UNLCK);
        }
    }
}

/// The session opened to append (and read back), as a regular file only.
fn open_for_append(path: &Path) -> Result<File, WriteError> {
    let f = faults::op("open", || {
        OpenOptions::new()
            .read(true)
            .append(true)
            .custom_flags_nonblock()
            .open(path)
    })?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(super::files::not_a_file(path, &meta).into());
    }
    Ok(f)
}

/// Why bonsai must not append to `s` as it ends now: its last line is not whole. Appending
/// after it would turn Pi's line being written, or a killed write, into a broken line for good.
fn unfinished_end(path: &Path, s: &Session) -> Option<String> {
    // Bonsai's own cut-short write first: Pi may have ended it with a newline, and an append
    // after it would leave it in the file for good.
    if let Some(r) = journal::read(path).and_then(|n| journal::fragment(&s.buf, &n)) {
        return Some(format!(
            "the file ends with {} bytes of an entry bonsai was writing when it was stopped; `bonsai repair {}` removes them (keeping a backup), then try again",
            r.len(),
            path.display()
        ));
    }
    if s.file_ends_with_newline {
        return None;
    }
    let last = &s.buf[memchr::memrchr(b'\n', &s.buf).map(|k| k + 1).unwrap_or(0)..];
    if serde_json::from_slice::<serde_json::Value>(last).is_ok() {
        return None;
    }
    Some(format!(
        "the file ends with an unfinished line: Pi may be writing it, so bonsai will not append now; try again in a moment (if Pi is not running and it stays, `bonsai repair --force {}` removes it, keeping a backup)",
        path.display()
    ))
}

/// A write request applied to the file: decided on the state right before the append, then
/// the session after it (only the new lines parsed) and what was written.
pub fn apply(path: &Path, req: &WriteRequest) -> Result<Applied, WriteError> {
    let mut prepared = None;
    let (before, appended) = append_with(path, |s| {
        let p = req.prepare(s, super::clock::entropy(), super::clock::now_ms())?;
        let entries = p.entries.clone();
        prepared = Some(p);
        Ok(entries)
    })?;
    let session = super::files::reload(before, path)?;
    Ok(Applied {
        session,
        appended,
        prepared: prepared.unwrap_or(Prepared {
            entries: vec![],
            editor_text: None,
            branch_summary: false,
        }),
    })
}

/// The result of [`apply`].
#[derive(Debug)]
pub struct Applied {
    /// The session with the appended entries (and anything Pi appended right after them).
    pub session: Session,
    pub appended: Appended,
    pub prepared: Prepared,
}

fn lines_text(entries: &[serde_json::Value]) -> String {
    let mut data = String::new();
    for e in entries {
        data.push_str(&crate::engine::edit::entries::to_line(e));
        data.push('\n');
    }
    data
}

/// Append `entries` as JSON lines if the file is still `expected_len` bytes long. On failure
/// the bytes written are taken back (when nothing was appended after them).
pub fn append_lines(path: &Path, expected_len: u64, entries: &[serde_json::Value]) -> Result<Appended, WriteError> {
    let mut f = open_for_append(path)?;
    append_lines_to(&mut f, path, expected_len, entries, false)
}

/// [`append_lines`] on the open session `f`; `leased`: no one else can append meanwhile.
fn append_lines_to(
    f: &mut File,
    path: &Path,
    expected_len: u64,
    entries: &[serde_json::Value],
    leased: bool,
) -> Result<Appended, WriteError> {
    let meta = f.metadata()?;
    if meta.len() != expected_len {
        return Err(WriteError::Changed {
            grew: meta.len() > expected_len,
        });
    }
    // A recent write is a sign Pi is running unless it was bonsai's own (as the file still is
    // just as bonsai's last write left it) or Pi is waiting for this bonsai (`/bonsai`).
    let recently_written = !super::files::pi_waits_on(path)
        && meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|d| d < std::time::Duration::from_secs(5))
        && !super::own_writes::is_ours(path, &meta);
    let mut data = String::new();
    let mut added_newline = false;
    if expected_len > 0 {
        use std::os::unix::fs::FileExt;
        let mut last = [0u8; 1];
        f.read_at(&mut last, expected_len - 1)?;
        if last[0] != b'\n' {
            data.push('\n');
            added_newline = true;
        }
    }
    data.push_str(&lines_text(entries));
    journal::write(
        path,
        &Note {
            offset: expected_len,
            data: data.clone(),
        },
    )
    .map_err(|source| WriteError::Failed {
        path: path.to_path_buf(),
        source,
    })?;
    // Checked again right before the write: the note's fsync takes milliseconds, in which Pi
    // may append. What is left is the instant between this check and the write (POSIX has
    // no append-if-length); the bytes are read back after to see whether Pi took it.
    let len = f.metadata()?.len();
    if len != expected_len {
        let _ = journal::remove(path);
        return Err(WriteError::Changed {
            grew: len > expected_len,
        });
    }
    let mut written = 0;
    let r = faults::write_all("write", f, data.as_bytes(), &mut written)
        .and_then(|()| faults::op("sync", || f.sync_data()));
    match r {
        Ok(()) => {
            // The bytes are on disk; a note left by a failure here describes nothing missing.
            let _ = journal::remove(path);
            super::own_writes::note(path, expected_len + data.len() as u64);
            Ok(Appended {
                lines: entries.len(),
                bytes: data.len(),
                added_newline,
                recently_written,
                leased,
                raced_after: if leased {
                    None
                } else {
                    raced_after(f, expected_len, data.as_bytes())
                },
            })
        }
        Err(e) if is_crash(&e) => Err(e.into()),
        Err(source) => match take_back(f, expected_len, written as u64) {
            Ok(()) => {
                let _ = journal::remove(path);
                Err(WriteError::Failed {
                    path: path.to_path_buf(),
                    source,
                })
            }
            Err(cleanup) => Err(WriteError::Partial {
                path: path.to_path_buf(),
                source,
                cleanup,
            }),
        },
    }
}

/// Where bonsai's appended `data` landed, counted from `offset`, when not at `offset`: another
/// writer's append came between the length check and the write.
fn raced_after(f: &File, offset: u64, data: &[u8]) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    let mut here = vec![0u8; data.len()];
    if f.read_exact_at(&mut here, offset).is_ok() && here == data {
        return None;
    }
    let len = f.metadata().ok()?.len();
    let mut tail = vec![0u8; usize::try_from(len.saturating_sub(offset)).ok()?];
    f.read_exact_at(&mut tail, offset).ok()?;
    memchr::memmem::find(&tail, data)
}

/// Remove the `written` bytes bonsai appended after `before`, if nothing came after them.
fn take_back(f: &mut File, before: u64, written: u64) -> Result<(), TakeBackError> {
    if written == 0 {
        return Ok(());
    }
    let now = f.metadata()?.len();
    if now != before + written {
        return Err(TakeBackError::AppendedAfter {
            now,
            expected: before + written,
        });
    }
    faults::op("truncate", || f.set_len(before))?;
    Ok(faults::op("sync", || f.sync_all())?)
}

/// A hidden temporary name beside `path` (never a `.jsonl`: nothing lists it as a session).
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.bonsai-tmp-{}-{:x}",
        std::process::id(),
        super::clock::entropy() & 0xffff_ffff
    ))
}

pub(super) fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let _ = faults::op("sync-dir", || File::open(dir).and_then(|d| d.sync_all()));
    }
}

/// Remove temporary files a killed bonsai left beside `path` (their process is gone).
fn clear_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let prefix = format!(".{}.bonsai-tmp-", name.to_string_lossy());
    let Ok(rd) = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) else {
        return;
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().to_string();
        let Some(pid) = n
            .strip_prefix(&prefix)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let alive = pid == std::process::id() as i32 || unsafe { libc::kill(pid, 0) } == 0;
        if !alive {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Who may read a file bonsai makes from a session, and whose it is. A session is private
/// (Pi makes them 0600): a backup, a removed-lines file, a fork or a clone is never wider than
/// the session nor than 0600, a rewritten session keeps exactly its mode, owner and group
/// (root rewriting another user's session must leave it that user's, or their Pi cannot append),
/// an export gets the session's mode. The umask never widens any of these.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileMode {
    pub mode: u32,
    /// (uid, gid) to give the file, when it is not already whose the session is.
    pub owner: Option<(u32, u32)>,
}

impl FileMode {
    /// Only the owner may read or write: what a file is made with before it gets its mode.
    pub const PRIVATE: FileMode = FileMode {
        mode: 0o600,
        owner: None,
    };

    /// `source`'s mode bits within `mask`, with its owner when `owned`; 0600 when it cannot
    /// be read.
    fn like(source: &Path, mask: u32, owned: bool) -> FileMode {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(source) {
            Ok(m) => FileMode {
                mode: m.mode() & mask,
                owner: owned.then(|| (m.uid(), m.gid())),
            },
            Err(_) => Self::PRIVATE,
        }
    }

    /// A backup, a removed-lines file, a fork or clone of `source`: its mode within 0600, its owner.
    pub fn private_like(source: &Path) -> FileMode {
        Self::like(source, 0o600, true)
    }

    /// The rewritten `source`: exactly its mode, owner and group.
    pub fn same_as(source: &Path) -> FileMode {
        Self::like(source, 0o7777, true)
    }

    /// A document made from `source` (an export): its read and write bits, owned by whoever
    /// runs bonsai.
    pub fn document_like(source: &Path) -> FileMode {
        Self::like(source, 0o666, false)
    }

    /// Give the open file `f` this mode and owner. The owner is set first (a chown clears
    /// set-id bits); a chown bonsai may not do (not root, another group) keeps the file
    /// bonsai's, which only matters when the session is someone else's.
    pub(super) fn apply(&self, f: &File) -> std::io::Result<()> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if let Some((uid, gid)) = self.owner {
            let m = f.metadata()?;
            if (m.uid(), m.gid()) != (uid, gid) {
                let _ = std::os::unix::fs::fchown(f, Some(uid), Some(gid));
            }
        }
        f.set_permissions(std::fs::Permissions::from_mode(self.mode))
    }
}

/// Write `data` to a temporary file beside `path` and fsync it, with `mode` (created 0600,
/// never readable by others while it is written). On failure the temporary file is removed
/// (unless the process was "killed": then nothing runs).
pub(super) fn write_temp(path: &Path, data: &[u8], mode: FileMode) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    clear_stale_temps(path);
    let tmp = temp_beside(path);
    let r = (|| {
        // create_new is O_EXCL (which also refuses a link planted at the name), O_NOFOLLOW
        // says so for the kernel too.
        let mut f = faults::op("create-temp", || {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)
        })?;
        let mut written = 0;
        faults::write_all("write-temp", &mut f, data, &mut written)?;
        mode.apply(&f)?;
        faults::op("sync-temp", || f.sync_all())
    })();
    match r {
        Ok(()) => Ok(tmp),
        Err(e) => {
            if !is_crash(&e) {
                let _ = std::fs::remove_file(&tmp);
            }
            Err(e)
        }
    }
}

/// A new file at `path` with `data`, all or nothing, never replacing an existing file.
pub fn write_file_new(path: &Path, data: &[u8], mode: FileMode) -> Result<(), WriteError> {
    let fail = |source| WriteError::NewFile {
        path: path.to_path_buf(),
        source,
    };
    let tmp = write_temp(path, data, mode).map_err(fail)?;
    // A hard link appears whole and fails if the name is taken (rename would replace it).
    match faults::op("link", || std::fs::hard_link(&tmp, path)) {
        Err(e) if is_crash(&e) => return Err(fail(e)),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(fail(e));
        }
        Ok(()) => {}
    }
    // Past this point the file is complete under its name; a leftover temporary name is
    // hidden and harmless.
    if let Err(e) = faults::op("unlink-temp", || std::fs::remove_file(&tmp))
        && is_crash(&e)
    {
        return Ok(());
    }
    sync_dir(path);
    Ok(())
}

/// An exported document of the session at `source`: a new file appearing whole, or with
/// `overwrite` a replaced one (a link at that name is replaced, not followed).
pub fn write_document(path: &Path, data: &[u8], overwrite: bool, source: &Path) -> Result<(), WriteError> {
    let mode = FileMode::document_like(source);
    if overwrite && path.symlink_metadata().is_ok() {
        write_file_replacing(path, data, mode)?;
    } else {
        write_file_new(path, data, mode)?;
    }
    // Listed under its session, removable when old (`bonsai clean`, the picker's B).
    super::exports::note(&super::config::agent_dir(), path, source);
    Ok(())
}

/// Replace `path` with `data` (temporary file, fsync, rename, fsync of the folder).
fn write_file_replacing(path: &Path, data: &[u8], mode: FileMode) -> Result<(), WriteError> {
    let fail = |source| WriteError::Failed {
        path: path.to_path_buf(),
        source,
    };
    let tmp = write_temp(path, data, mode).map_err(fail)?;
    if let Err(e) = faults::op("rename", || std::fs::rename(&tmp, path)) {
        if !is_crash(&e) {
            let _ = std::fs::remove_file(&tmp);
        }
        return Err(fail(e));
    }
    sync_dir(path);
    Ok(())
}

/// Write a new session file (fork, clone) of the session at `source`: it appears whole or not
/// at all, private like its source.
pub fn write_new(path: &Path, lines: &[serde_json::Value], source: &Path) -> Result<(), WriteError> {
    write_file_new(path, lines_text(lines).as_bytes(), FileMode::private_like(source))
}

/// Pi's session file name: `<ISO timestamp with : and . as ->_<session id>.jsonl`.
pub fn new_session_path(dir: &Path, session_id: &str, ts_ms: i64) -> PathBuf {
    let ts = js::iso_from_ms(ts_ms).replace([':', '.'], "-");
    dir.join(format!("{ts}_{session_id}.jsonl"))
}

/// A complete copy of `bytes` (the file at `path` now) as its backup: `FILE.bak` when that
/// is free or already holds exactly these bytes, else `FILE.bak-<time>` (an existing backup
/// is never overwritten, nor trusted without comparing it).
pub fn backup(path: &Path, bytes: &[u8], kind: &str) -> Result<PathBuf, WriteError> {
    let made = backup_file(path, bytes, kind)?;
    super::made::note(&made);
    Ok(made)
}

fn backup_file(path: &Path, bytes: &[u8], kind: &str) -> Result<PathBuf, WriteError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let bak = path.with_file_name(format!("{name}.{kind}"));
    // Only a regular file can be a backup: a link planted at the name (even to a copy of these
    // very bytes, which may change or vanish later) is left alone, and a stamped one is made.
    match read_side_file(&bak, path) {
        // The same bytes are there already: kept, its time made now, so that no `clean`
        // counting it old removes the backup this rewrite relies on.
        Ok(existing) if existing == bytes => {
            use std::os::unix::fs::OpenOptionsExt;
            let f = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&bak)
                .map_err(WriteError::Io)?;
            f.set_modified(std::time::SystemTime::now()).map_err(WriteError::Io)?;
            Ok(bak)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            write_file_new(&bak, bytes, FileMode::private_like(path))?;
            Ok(bak)
        }
        _ => {
            let stamped = path.with_file_name(format!(
                "{name}.{kind}-{}",
                js::iso_from_ms(super::clock::now_ms()).replace([':', '.'], "-")
            ));
            write_file_new(&stamped, bytes, FileMode::private_like(path))?;
            Ok(stamped)
        }
    }
}

/// A file bonsai made beside `session` (a backup, a removed-lines file), read only when it is
/// a regular file owned by this user or by the session's owner (bonsai gives it that owner):
/// opened without following a link or waiting on a FIFO. A link, a FIFO, a device, a folder
/// or someone else's file there is an error naming it.
pub(super) fn read_side_file(p: &Path, session: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(p)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => std::io::Error::other(format!(
                "{} is a link, not a file bonsai made: it is left alone",
                p.display()
            )),
            _ => e,
        })?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file (bonsai never makes anything else there): it is left alone",
            p.display()
        )));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let session_owner = std::fs::metadata(session).map(|s| s.uid()).ok();
    if m.uid() != me && Some(m.uid()) != session_owner {
        return Err(std::io::Error::other(format!(
            "{} belongs to another user (uid {}), not to you or the session's owner: it is left alone",
            p.display(),
            m.uid()
        )));
    }
    let mut v = Vec::with_capacity(m.len() as usize);
    f.read_to_end(&mut v)?;
    Ok(v)
}

/// Migrate a v1/v2 file to v3 in place (through a link, the file it points at): a complete
/// backup first, then the migrated text through a temporary file, fsync, rename.
pub fn migrate(path: &Path) -> Result<PathBuf, WriteError> {
    let target = std::fs::canonicalize(path)?;
    let bytes = super::files::read_regular(&target)?;
    let s = Session::from_bytes(bytes.clone()).map_err(|source| super::files::OpenError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    let bak = backup(&target, &bytes, "bak")?;
    let lines = crate::engine::edit::entries::migrated_lines(&s);
    write_file_replacing(&target, lines_text(&lines).as_bytes(), FileMode::same_as(&target))?;
    Ok(bak)
}

/// What `repair` removes, or did.
#[derive(Debug)]
pub struct Repaired {
    pub removed: std::ops::Range<usize>,
    pub backup: PathBuf,
    /// The bytes were bonsai's own unfinished write (else a line removed with `--force`).
    pub ours: bool,
    /// They were inside the file (Pi's lines after them kept): the file was rewritten.
    pub rewritten: bool,
}

/// What a repair would remove from the file as it is now (`--dry-run` shows this), and the
/// bytes it decided on.
pub struct RepairPlan {
    pub(super) target: PathBuf,
    pub(super) bytes: Vec<u8>,
    pub removed: std::ops::Range<usize>,
    pub ours: bool,
}

impl RepairPlan {
    /// The file's length when the plan was made.
    pub fn file_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Decide a repair: bonsai's own cut-short write at the end (its note says which bytes; Pi
/// may have ended it with a newline), else with `force` any last line that is not whole.
pub fn repair_plan(path: &Path, force: bool) -> Result<RepairPlan, WriteError> {
    let target = std::fs::canonicalize(path)?;
    let bytes = super::files::read_regular(&target)?;
    let note = journal::read(&target);
    if let Some(removed) = note.as_ref().and_then(|n| journal::fragment(&bytes, n)) {
        return Ok(RepairPlan {
            target,
            bytes,
            removed,
            ours: true,
        });
    }
    // Pi went on after bonsai's cut-short bytes: its line glued onto them, or the fragment
    // closed with a newline and Pi's lines after. Only bonsai's bytes go; Pi's stay.
    if let Some(removed) = note
        .as_ref()
        .and_then(|n| journal::glued(&bytes, n).or_else(|| journal::stranded(&bytes, n)))
    {
        return Ok(RepairPlan {
            target,
            bytes,
            removed,
            ours: true,
        });
    }
    if bytes.last().is_none_or(|b| *b == b'\n') {
        return Err(WriteError::Repair(format!(
            "{}: nothing to repair: the file ends with a whole line",
            path.display()
        )));
    }
    let last_start = memchr::memrchr(b'\n', &bytes).map(|k| k + 1).unwrap_or(0);
    if serde_json::from_slice::<serde_json::Value>(&bytes[last_start..]).is_ok() {
        return Err(WriteError::Repair(format!(
            "{}: nothing to repair: the last line is whole JSON (only its newline is missing, which Pi and bonsai add themselves)",
            path.display()
        )));
    }
    if !force {
        return Err(WriteError::Repair(format!(
            "{}: the last line is unfinished, but bonsai did not write it (Pi may be writing it now). If Pi is not running, `bonsai repair --force {}` removes it, keeping a backup",
            path.display(),
            path.display()
        )));
    }
    let removed = last_start..bytes.len();
    Ok(RepairPlan {
        target,
        bytes,
        removed,
        ours: false,
    })
}

/// `O_NONBLOCK` on open: opening a FIFO must not wait for a writer (it is then refused).
trait NonBlocking {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlocking for OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(libc::O_NONBLOCK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn session_file(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join("s.jsonl");
        std::fs::write(&p, text).unwrap();
        p
    }

    const BASE: &str = concat!(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-11-22T00:00:00.000Z","cwd":"/x"}"#,
        "\n",
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-22T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#,
        "\n"
    );

    fn entry(id: &str, parent: &str) -> serde_json::Value {
        serde_json::json!({"type":"label","id":id,"parentId":parent,"timestamp":"2026-11-22T00:00:02.000Z","targetId":"u1","label":"x"})
    }

    /// Whether this file system gives write leases to the file's owner (tmpfs, ext4, xfs and
    /// btrfs do; NFS does not).
    fn leases_work(p: &Path) -> bool {
        let f = OpenOptions::new().read(true).append(true).open(p).unwrap();
        Lease::take(&f).is_some()
    }

    #[test]
    fn an_append_holds_a_lease_unless_the_file_is_open_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), BASE);
        if !leases_work(&p) {
            eprintln!("note: an_append_holds_a_lease…: no write leases here; the unleased path is tested below");
        } else {
            let (_, a) = append_with(&p, |_| Ok(vec![entry("b0000001", "u1")])).unwrap();
            assert!(a.leased && a.raced_after.is_none());
        }
        // Someone (a viewer, an editor) has it open: no lease, the append still goes ahead,
        // checked right before the write and read back after.
        let other = std::fs::File::open(&p).unwrap();
        let (_, a) = append_with(&p, |s| {
            let last = s.entries.last().unwrap().id.to_string();
            Ok(vec![entry("b0000002", &last)])
        })
        .unwrap();
        assert!(!a.leased && a.raced_after.is_none());
        drop(other);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.ends_with("\"b0000002\",\"parentId\":\"b0000001\",\"timestamp\":\"2026-11-22T00:00:02.000Z\",\"targetId\":\"u1\",\"label\":\"x\"}\n") || !leases_work(&p));
    }

    #[test]
    fn a_concurrent_append_makes_bonsai_decide_again() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), BASE);
        // Pi holds the file open (so there is no lease) and appends between bonsai's read
        // and its write.
        let mut pi = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        let mut calls = 0;
        let (s, a) = append_with(&p, |s| {
            calls += 1;
            if calls == 1 {
                writeln!(pi, r#"{{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-22T00:00:03.000Z","message":{{"role":"assistant","content":[]}}}}"#).unwrap();
            }
            let leaf = s.entries[s.leaf().unwrap()].id.to_string();
            Ok(vec![entry("b0000001", &leaf)])
        })
        .unwrap();
        assert_eq!(calls, 2, "decided again on the new file");
        assert_eq!(s.entries.len(), 2, "the second decision saw Pi's entry");
        assert_eq!(a.lines, 1);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with(BASE));
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["parentId"], "a1", "written under Pi's new leaf");
    }

    #[test]
    fn under_a_lease_pi_opening_the_file_waits_for_bonsai_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), BASE);
        if !leases_work(&p) {
            eprintln!("note: under_a_lease…: no write leases here; skipped");
            return;
        }
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let pi_path = p.clone();
        // Pi: open the file for its next line (as appendFileSync does) once bonsai has read it.
        let pi = std::thread::spawn(move || {
            wait.recv().unwrap();
            let mut f = std::fs::OpenOptions::new().append(true).open(&pi_path).unwrap();
            writeln!(f, r#"{{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-22T00:00:03.000Z","message":{{"role":"assistant","content":[]}}}}"#).unwrap();
        });
        let (_, a) = append_with(&p, |s| {
            go.send(()).unwrap();
            // Pi is now waiting in open(); give it every chance to get in first.
            std::thread::sleep(std::time::Duration::from_millis(100));
            let leaf = s.entries[s.leaf().unwrap()].id.to_string();
            Ok(vec![entry("b0000001", &leaf)])
        })
        .unwrap();
        pi.join().unwrap();
        assert!(a.leased);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            lines[2]["id"], "b0000001",
            "bonsai's line right after the line it was decided on"
        );
        assert_eq!(lines[2]["parentId"], "u1");
        assert_eq!(lines[3]["id"], "a1", "Pi's line after it, whole");
    }

    #[test]
    fn a_missing_final_newline_is_added_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), BASE.trim_end());
        let (_, a) = append_with(&p, |_| Ok(vec![entry("b0000002", "u1")])).unwrap();
        assert!(a.added_newline);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with("}\n"));
        assert!(text.starts_with(BASE.trim_end()));
    }

    #[test]
    fn old_versions_are_refused_until_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), &BASE.replace("\"version\":3", "\"version\":2"));
        let before = std::fs::read(&p).unwrap();
        let e = append_with(&p, |_| Ok(vec![entry("b0000003", "u1")])).unwrap_err();
        assert!(e.to_string().contains("bonsai migrate"));
        assert_eq!(std::fs::read(&p).unwrap(), before);
        migrate(&p).unwrap();
        assert_eq!(std::fs::read(p.with_extension("jsonl.bak")).unwrap(), before);
        append_with(&p, |_| Ok(vec![entry("b0000003", "u1")])).unwrap();
    }
}
