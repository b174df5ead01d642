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

/// Run `f` holding `file`'s lock: an exclusive `flock` on `.NAME.lock` beside it. bonsai's
/// records are read, changed and written whole; two processes doing that at once would each
/// write back what they read and lose the other's change. Waits up to 30 s for another
/// holder (a lock dies with its process, so only a live bonsai can hold it that long).
pub fn locked<T>(file: &Path, f: impl FnOnce() -> T) -> std::io::Result<T> {
    use std::os::fd::AsRawFd;
    let (parent, name) = folder_and_name(file)?;
    let lock_path = parent.join(format!(".{name}.lock"));
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&lock_path)?;
    if !lock.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file: bonsai cannot lock its record",
            lock_path.display()
        )));
    }
    let start = std::time::Instant::now();
    loop {
        // SAFETY: a valid open descriptor; flock has no other preconditions.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) && e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            return Err(std::io::Error::other(format!(
                "another bonsai has held {} for 30 s; nothing changed",
                lock_path.display()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
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
