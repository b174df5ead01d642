//! Faults on purpose. Every file operation of a write goes through this module, which in
//! tests can make one of them fail: a short write, EINTR, a full disk (which stays full for
//! the writes after it), EIO, a failed fsync, or a crash (the write stops there as a kill
//! would stop it: nothing after it runs, no cleanup). Production code never installs a plan,
//! and then every call here is one thread-local read away from the real system call.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// A write that writes only part of what it was given (not an error).
    ShortWrite,
    /// EINTR: the call is interrupted before doing anything (to be retried).
    Interrupted,
    /// ENOSPC: a write stores part of its bytes, and every write after it fails.
    NoSpace,
    /// EIO, once.
    Io,
    /// The process is killed here: a write stores part of its bytes first.
    Crash,
}

impl Fault {
    pub const ALL: [Fault; 5] = [
        Fault::ShortWrite,
        Fault::Interrupted,
        Fault::NoSpace,
        Fault::Io,
        Fault::Crash,
    ];
}

thread_local! {
    static PLAN: Cell<Option<(usize, Fault)>> = const { Cell::new(None) };
    static STEPS: Cell<usize> = const { Cell::new(0) };
    static FULL: Cell<bool> = const { Cell::new(false) };
    static LOG: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// The marker a simulated kill leaves in its error.
#[derive(Debug)]
struct Crashed;

impl std::fmt::Display for Crashed {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("killed (simulated)")
    }
}

impl std::error::Error for Crashed {}

/// Whether `e` is a simulated kill: a write path stops at once and cleans nothing up.
pub fn is_crash(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|x| x.is::<Crashed>())
}

/// Run `f` with `fault` injected at operation number `at` (counted from 0 across all file
/// operations `f` makes on this thread), and return what `f` returned with the names of the
/// operations it made. `None` runs `f` as is and only records the operations.
#[doc(hidden)]
pub fn with_plan<R>(plan: Option<(usize, Fault)>, f: impl FnOnce() -> R) -> (R, Vec<&'static str>) {
    // No plan still counts and names the operations (a fault past the last one never hits).
    PLAN.with(|p| p.set(Some(plan.unwrap_or((usize::MAX, Fault::Io)))));
    STEPS.with(|s| s.set(0));
    FULL.with(|s| s.set(false));
    LOG.with(|l| l.borrow_mut().clear());
    let r = f();
    PLAN.with(|p| p.set(None));
    FULL.with(|s| s.set(false));
    let log = LOG.with(|l| std::mem::take(&mut *l.borrow_mut()));
    (r, log)
}

/// Count an operation and say which fault (if any) hits it.
fn next(name: &'static str) -> Option<Fault> {
    let (at, fault) = PLAN.with(|p| p.get())?;
    let k = STEPS.with(|s| {
        let k = s.get();
        s.set(k + 1);
        k
    });
    LOG.with(|l| l.borrow_mut().push(name));
    (k == at).then_some(fault)
}

fn crashed() -> io::Error {
    io::Error::other(Crashed)
}

/// An operation that either happens or fails as a whole (open, fsync, rename, link…).
pub(crate) fn op<T>(name: &'static str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    match next(name) {
        None => f(),
        Some(Fault::Crash) => Err(crashed()),
        Some(Fault::Interrupted) => Err(io::Error::from(io::ErrorKind::Interrupted)),
        Some(Fault::Io) => Err(io::Error::from_raw_os_error(libc::EIO)),
        Some(Fault::NoSpace) if name.ends_with("sync") || name.starts_with("create") => {
            FULL.with(|s| s.set(true));
            Err(io::Error::from_raw_os_error(libc::ENOSPC))
        }
        // A full disk does not stop a rename, a link, a truncate or an unlink.
        Some(Fault::NoSpace | Fault::ShortWrite) => f(),
    }
}

/// One `write(2)`: may store fewer bytes than given (returns how many).
pub(crate) fn write(name: &'static str, f: &mut File, buf: &[u8]) -> io::Result<usize> {
    let fault = next(name);
    if FULL.with(|s| s.get()) {
        return Err(io::Error::from_raw_os_error(libc::ENOSPC));
    }
    let part = (buf.len() / 2).max(1).min(buf.len());
    match fault {
        None => f.write(buf),
        Some(Fault::ShortWrite) => f.write(&buf[..part]),
        Some(Fault::Interrupted) => Err(io::Error::from(io::ErrorKind::Interrupted)),
        Some(Fault::Io) => Err(io::Error::from_raw_os_error(libc::EIO)),
        Some(Fault::NoSpace) => {
            FULL.with(|s| s.set(true));
            f.write(&buf[..part])
        }
        Some(Fault::Crash) => {
            let _ = f.write(&buf[..part]);
            Err(crashed())
        }
    }
}

/// Write all of `data`, counting what reached the file in `written` (also when it fails),
/// retrying EINTR and continuing after short writes.
pub(crate) fn write_all(name: &'static str, f: &mut File, data: &[u8], written: &mut usize) -> io::Result<()> {
    while *written < data.len() {
        match write(name, f, &data[*written..]) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => *written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_hits_exactly_its_operation_and_a_full_disk_stays_full() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = File::create(dir.path().join("x")).unwrap();
        let (r, log) = with_plan(Some((0, Fault::NoSpace)), || {
            let mut written = 0;
            let a = write_all("write", &mut f, b"0123456789", &mut written);
            (a, written)
        });
        assert_eq!(log, ["write", "write"]);
        let (a, written) = r;
        assert_eq!(a.unwrap_err().raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(written, 5, "half stored, then the disk is full");
        let (r, _) = with_plan(Some((0, Fault::ShortWrite)), || {
            let mut written = 0;
            write_all("write", &mut f, b"0123456789", &mut written).map(|()| written)
        });
        assert_eq!(r.unwrap(), 10, "a short write is continued");
        let (r, _) = with_plan(Some((0, Fault::Crash)), || op("sync", || Ok(())));
        assert!(is_crash(&r.unwrap_err()));
        let (r, _) = with_plan(None, || op("sync", || Ok(7)));
        assert_eq!(r.unwrap(), 7);
    }
}
