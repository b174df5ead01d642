//! The bytes of a session file: read into memory when small, mapped when large.
//!
//! Copying 100 MB out of the page cache costs ~70 ms on two cores here, most of it faulting
//! in fresh anonymous pages; mapping the file costs ~5 ms, and the loader hands each block's
//! pages back once parsed (`release`), so a big session is never resident as a whole: the
//! entries keep byte ranges and a line read later is mapped again from the page cache.
//!
//! A mapping has one hazard: if another program truncates the file while it is mapped (Pi
//! rewrites a file it migrates, an editor may save in place), reading a vanished page raises
//! SIGBUS. A handler turns that into zero bytes for the rest of the mapping and raises a
//! flag (`take_damaged`), so bonsai reloads the file instead of dying. Pi itself only
//! appends, which never affects the mapped part.

use crate::engine::load::bytes::{ByteSource, FileBytes};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Files at least this large are mapped; smaller ones are read (no SIGBUS exposure).
pub const MAP_THRESHOLD: usize = 4 << 20;

/// A read-only private mapping of a whole file, registered with the SIGBUS guard.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    slot: usize,
}

// The mapping is read-only and owned; sharing it across threads is sharing a `&[u8]`.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl ByteSource for Mapping {
    fn bytes(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is a live PROT_READ mapping until drop; pages the file lost
        // are replaced with zero pages by the SIGBUS guard, never left unmapped.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Map the pages of `range` before reading them, a big range in pieces on every core
    /// (kernels before 5.14 ignore it and the pages fault in as they are read). A 10 GB
    /// session's 1.2 GB index took ~85 ms of one core before anything else could start.
    fn will_read(&self, range: std::ops::Range<usize>) {
        use rayon::prelude::*;
        const PIECE: usize = 64 << 20;
        let page = PAGE.load(Ordering::Relaxed);
        let start = (range.start / page) * page;
        let end = range.end.min(self.len);
        if end <= start {
            return;
        }
        let populate = |at: usize| {
            let len = PIECE.min(end - at);
            // SAFETY: inside our own read-only mapping; this only populates page tables.
            unsafe {
                libc::madvise(self.ptr.add(at) as *mut libc::c_void, len, libc::MADV_POPULATE_READ);
            }
        };
        if end - start <= PIECE {
            populate(start);
        } else {
            let pieces: Vec<usize> = (start..end).step_by(PIECE).collect();
            pieces.into_par_iter().for_each(populate);
        }
    }

    /// Hand back the pages of `range`: the bytes stay readable, a later read maps them again
    /// from the page cache.
    fn done_with(&self, range: std::ops::Range<usize>) {
        let page = PAGE.load(Ordering::Relaxed);
        let start = range.start.div_ceil(page) * page;
        let end = (range.end / page) * page;
        if end > start {
            // SAFETY: inside our own read-only private mapping; MADV_DONTNEED on such a
            // mapping drops page-table entries only, the file's data is unchanged.
            unsafe {
                libc::madvise(
                    self.ptr.add(start) as *mut libc::c_void,
                    end - start,
                    libc::MADV_DONTNEED,
                );
            }
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        SLOTS[self.slot].1.store(0, Ordering::SeqCst);
        SLOTS[self.slot].0.store(0, Ordering::SeqCst);
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

const NSLOTS: usize = 64;
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: (AtomicUsize, AtomicUsize) = (AtomicUsize::new(0), AtomicUsize::new(0));
/// (start, len) of every live mapping; read by the signal handler without locks.
static SLOTS: [(AtomicUsize, AtomicUsize); NSLOTS] = [EMPTY; NSLOTS];
static DAMAGED: AtomicBool = AtomicBool::new(false);
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();
static HAVE_PREVIOUS: AtomicBool = AtomicBool::new(false);

/// Whether a mapped file shrank under bonsai since the last call (then it must be reloaded).
pub fn take_damaged() -> bool {
    DAMAGED.swap(false, Ordering::SeqCst)
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let addr = unsafe { (*info).si_addr() } as usize;
    for (start, len) in SLOTS.iter() {
        let s = start.load(Ordering::SeqCst);
        let l = len.load(Ordering::SeqCst);
        if s != 0 && addr >= s && addr < s + l {
            let page = PAGE.load(Ordering::Relaxed);
            let from = addr & !(page - 1);
            let to = (s + l).div_ceil(page) * page;
            // Zero pages in place of what the file lost; the faulting read then sees zeros.
            let r = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    to - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if r != libc::MAP_FAILED {
                DAMAGED.store(true, Ordering::SeqCst);
                return;
            }
        }
    }
    // Not ours: hand the fault to whoever had SIGBUS before (Rust's stack-overflow guard).
    unsafe {
        if HAVE_PREVIOUS.load(Ordering::SeqCst) {
            let prev = (*std::ptr::addr_of!(PREVIOUS)).assume_init_ref();
            let h = prev.sa_sigaction;
            if prev.sa_flags & libc::SA_SIGINFO != 0 && h != libc::SIG_DFL && h != libc::SIG_IGN {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(h);
                f(sig, info, ctx);
                return;
            }
        }
        // Default action: the fault repeats on return and ends the process as it would have.
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
    }
}

fn install_guard() {
    INSTALL.call_once(|| unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE);
        if page > 0 {
            PAGE.store(page as usize, Ordering::Relaxed);
        }
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigbus as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
        libc::sigemptyset(&mut sa.sa_mask);
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGBUS, &sa, &mut old) == 0 {
            (*std::ptr::addr_of_mut!(PREVIOUS)).write(old);
            HAVE_PREVIOUS.store(true, Ordering::SeqCst);
        }
    });
}

/// Map `file` (of `len` bytes) read-only, or `None` when it cannot be mapped or guarded.
fn map(file: &std::fs::File, len: usize) -> Option<Mapping> {
    use std::os::fd::AsRawFd;
    install_guard();
    let slot = SLOTS.iter().position(|(s, _)| {
        // Reserve with a placeholder start so two loaders never take the same slot.
        s.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    })?;
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        SLOTS[slot].0.store(0, Ordering::SeqCst);
        return None;
    }
    SLOTS[slot].1.store(len, Ordering::SeqCst);
    SLOTS[slot].0.store(ptr as usize, Ordering::SeqCst);
    Some(Mapping {
        ptr: ptr as *mut u8,
        len,
        slot,
    })
}

/// The bytes of an open regular file (`path` only names it).
pub fn load_file(f: std::fs::File, _path: &std::path::Path) -> std::io::Result<FileBytes> {
    let len = f.metadata()?.len() as usize;
    if len >= MAP_THRESHOLD
        && let Some(m) = map(&f, len)
    {
        return Ok(FileBytes::Source(Box::new(m)));
    }
    read_open(&f).map(FileBytes::Owned)
}

/// Read a whole open file; large files in two halves at once (the copy out of the page cache
/// is a third of opening a big session on a 2-core machine). The file is read through this one
/// descriptor (a FIFO or a device never gets here: see `open_regular`).
pub fn read_open(f: &std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let len = f.metadata()?.len() as usize;
    let plain = |f: &std::fs::File| {
        let mut out = Vec::with_capacity(len);
        let mut r = f;
        r.read_to_end(&mut out)?;
        Ok(out)
    };
    if len < (8 << 20) {
        return plain(f);
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
        // The file shrank while reading: read it again from the start.
        use std::io::Seek;
        let mut r = f;
        r.seek(std::io::SeekFrom::Start(0))?;
        return plain(f);
    }
    buf.truncate(mid + nb);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_truncated_mapping_reads_zeros_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.jsonl");
        let mut f = std::fs::File::create(&p).unwrap();
        let line = vec![b'x'; MAP_THRESHOLD + 12345];
        f.write_all(&line).unwrap();
        f.sync_all().unwrap();
        drop(f);
        let bytes = load_file(std::fs::File::open(&p).unwrap(), &p).unwrap();
        assert!(matches!(bytes, FileBytes::Source(_)));
        assert_eq!(bytes[MAP_THRESHOLD], b'x');
        let _ = take_damaged();
        // Another program truncates the file under us.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(100)
            .unwrap();
        let tail = std::hint::black_box(&bytes[..])[MAP_THRESHOLD + 10000];
        assert_eq!(tail, 0, "lost pages read as zeros");
        assert!(take_damaged(), "the damage is reported");
        assert_eq!(bytes[50], b'x', "what the file kept is still readable");
        drop(bytes);
        // A fresh mapping after the damage works as before.
        let again = load_file(std::fs::File::open(&p).unwrap(), &p).unwrap();
        assert_eq!(again.len(), 100);
    }
}
