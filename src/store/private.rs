//! bonsai's own files under Pi's agent dir (`bonsai/`: pins, the listing cache, the record of
//! its own writes): the folder is 0700 and each file 0600, since they name every session and
//! hold its first and newest requests. A file there is written through a temporary name made
//! exclusively (never through a link planted at either name) and renamed; it is read only when
//! it is a regular file this user owns, so a link, a FIFO or another user's file put there is
//! ignored (and replaced on the next write), never followed or waited on.

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// `dir` and any missing parent, made 0700; bonsai's own folder is narrowed to 0700 when it is
/// this user's and wider.
pub fn dir(dir: &Path) -> std::io::Result<()> {
    // Every folder from `bonsai/` down must be a real folder: a link planted at any of them
    // would send bonsai's moves and removals somewhere else. They are checked top down before
    // any is made, so nothing is made through a link either. A folder outside `bonsai/` (a
    // test's, or a user's own path) is checked alone: the folders above it are the user's.
    for d in own_folders(dir).iter().rev() {
        match std::fs::symlink_metadata(d) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a folder (a link or a file is there): bonsai keeps its own files only in a real folder",
                    d.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new().recursive(true).mode(0o700).create(d)?;
                if !std::fs::symlink_metadata(d)?.is_dir() {
                    return Err(std::io::Error::other(format!("{} is not a folder", d.display())));
                }
            }
            Err(e) => return Err(e),
        }
    }
    let m = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid has no preconditions.
    if m.uid() == unsafe { libc::geteuid() } && m.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Whether `dir` is one of bonsai's own folders as it should be: it and every folder from
/// `bonsai/` down to it real folders, not links (nothing is made). A removal in a folder that
/// fails this would act wherever a planted link points.
pub fn is_real_dir(dir: &Path) -> bool {
    own_folders(dir)
        .iter()
        .all(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()))
}

/// `dir` and the folders above it up to bonsai's own (`bonsai/`), innermost first; `dir`
/// alone when it is not under one.
fn own_folders(dir: &Path) -> Vec<&Path> {
    let upto = dir
        .ancestors()
        .position(|d| d.file_name().is_some_and(|n| n == "bonsai"));
    dir.ancestors().take(upto.map_or(1, |i| i + 1)).collect()
}

/// `file`'s folder (made, and checked as [`dir`] does) and its name: where its temporary file
/// and its lock go.
fn folder_and_name(file: &Path) -> std::io::Result<(&Path, String)> {
    let parent = file.parent().unwrap_or(Path::new("."));
    dir(parent)?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    Ok((parent, name))
}

/// Write `bytes` as `file` whole (0600, temporary name, fsync, rename).
pub fn write(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (parent, name) = folder_and_name(file)?;
    let tmp = parent.join(format!(
        ".{name}.{}.{:x}.tmp",
        std::process::id(),
        super::clock::entropy() & 0xffff_ffff
    ));
    let r = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        // rename replaces a link at `file` itself, never what it points at.
        std::fs::rename(&tmp, file)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// How long one command may wait for bonsai's locks in all (one wait per command, however
/// many records it changes): 30 s (`BONSAI_LOCK_PATIENCE_MS` shortens it for the tests).
fn lock_patience() -> std::time::Duration {
    std::env::var("BONSAI_LOCK_PATIENCE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(std::time::Duration::from_secs(30), std::time::Duration::from_millis)
}

/// What this process has waited for locks so far, in milliseconds.
static WAITED_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Run `f` holding `file`'s lock: an exclusive `flock` on `.NAME.lock` beside it. bonsai's
/// records are read, changed and written whole; two processes doing that at once would each
/// write back what they read and lose the other's change. A lock dies with its process, so
/// only a live bonsai can hold one long: a wait is said after half a second ("waiting for
/// NAME, held by pid N", the holder writes its pid in the lock), and one command waits 30 s
/// at most across all its locks. A lock that is not a regular file is refused by its name.
pub fn locked<T>(file: &Path, f: impl FnOnce() -> T) -> std::io::Result<T> {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    let (parent, name) = folder_and_name(file)?;
    let lock_path = parent.join(format!(".{name}.lock"));
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", lock_path.display()));
    let mut lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&lock_path)
        .map_err(named)?;
    if !lock.metadata().map_err(named)?.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file: bonsai cannot lock its record",
            lock_path.display()
        )));
    }
    let start = std::time::Instant::now();
    let patience = lock_patience();
    let waited_before = std::time::Duration::from_millis(WAITED_MS.load(std::sync::atomic::Ordering::Relaxed));
    let mut said = false;
    loop {
        // SAFETY: a valid open descriptor; flock has no other preconditions.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.kind() != std::io::ErrorKind::Interrupted {
            return Err(named(e));
        }
        let waited = start.elapsed();
        if !said && waited > std::time::Duration::from_millis(500) {
            said = true;
            let mut holder = String::new();
            let _ = lock
                .seek(std::io::SeekFrom::Start(0))
                .and_then(|_| lock.read_to_string(&mut holder));
            let holder = holder.trim();
            super::config::say(&format!(
                "waiting for {}{} (up to {} s)",
                lock_path.display(),
                if holder.chars().all(|c| c.is_ascii_digit()) && !holder.is_empty() {
                    format!(", held by pid {holder}")
                } else {
                    String::new()
                },
                patience.saturating_sub(waited_before).as_secs()
            ));
        }
        if waited_before + waited > patience {
            WAITED_MS.fetch_add(waited.as_millis() as u64, std::sync::atomic::Ordering::Relaxed);
            return Err(std::io::Error::other(format!(
                "another bonsai has held {} while this command waited {} s for its locks; nothing changed",
                lock_path.display(),
                patience.as_secs_f64()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    WAITED_MS.fetch_add(start.elapsed().as_millis() as u64, std::sync::atomic::Ordering::Relaxed);
    // Who holds it, for a process that waits on it.
    let _ = lock
        .set_len(0)
        .and_then(|()| lock.seek(std::io::SeekFrom::Start(0)))
        .and_then(|_| write!(lock, "{}", std::process::id()));
    let out = f();
    // Closing the descriptor releases the lock.
    drop(lock);
    Ok(out)
}

/// `file` opened for reading when it is a regular file this user owns (else an error saying
/// what is there), without following a link or waiting on a FIFO.
pub fn open(file: &Path) -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)?;
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions.
    if !m.is_file() || m.uid() != unsafe { libc::geteuid() } {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file of yours: ignored",
            file.display()
        )));
    }
    Ok(f)
}

/// `file`'s bytes when it is a regular file this user owns (else an error saying what is
/// there). Opened without following a link or waiting on a FIFO.
pub fn read(file: &Path) -> std::io::Result<Vec<u8>> {
    read_at_most(file, u64::MAX)
}

/// [`read`] refusing a file longer than `most` bytes: a record bonsai keeps short (the newest
/// few hundred lines) that is longer was not written by bonsai, and reading it would cost
/// seconds and memory on every command.
pub fn read_at_most(file: &Path, most: u64) -> std::io::Result<Vec<u8>> {
    let mut f = open(file)?;
    let m = f.metadata()?;
    if m.len() > most {
        return Err(std::io::Error::other(format!(
            "{} is {} bytes, longer than bonsai writes it: ignored (replaced on the next write)",
            file.display(),
            m.len()
        )));
    }
    let mut v = Vec::with_capacity(m.len() as usize);
    f.read_to_end(&mut v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_files_are_0600_in_a_0700_folder_and_links_are_neither_read_nor_followed() {
        let d = tempfile::tempdir().unwrap();
        let own = d.path().join("agent/bonsai");
        write(&own.join("pins.json"), b"{}").unwrap();
        assert_eq!(std::fs::metadata(&own).unwrap().mode() & 0o777, 0o700);
        assert_eq!(std::fs::metadata(own.join("pins.json")).unwrap().mode() & 0o777, 0o600);
        assert_eq!(read(&own.join("pins.json")).unwrap(), b"{}");
        // A link planted as the file: not read; a write replaces the link, the target untouched.
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::fs::remove_file(own.join("pins.json")).unwrap();
        std::os::unix::fs::symlink(&victim, own.join("pins.json")).unwrap();
        assert!(read(&own.join("pins.json")).is_err());
        write(&own.join("pins.json"), b"[]").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(own.join("pins.json")).unwrap().is_file());
        // A folder made wide is narrowed.
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir(&own).unwrap();
        assert_eq!(std::fs::metadata(&own).unwrap().mode() & 0o777, 0o700);
    }
}
