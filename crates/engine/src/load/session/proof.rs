//! What a session opened from bonsai's index checks before it believes a line: the index
//! recorded a CRC-32 of every block of the bytes it was made from, and a line's bytes are
//! used only once the blocks they sit in still hash as recorded. The file's size, times and
//! end blocks say whether it changed; an edit in place that keeps them (or lines swapped at
//! equal lengths) would otherwise put one message's text under another's id.
//!
//! Checks are lazy: a block is hashed the first time a line in it is read, then remembered.
//! A block that fails marks the whole session as not proven; the reader then drops the index
//! and parses (the engine cannot: it has no file).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bytes per checked block: a line read costs at most a few of these hashed once.
pub const PROOF_BLOCK: usize = 64 << 10;

/// The CRC-32 of each [`PROOF_BLOCK`] of `bytes` (the last one may be short).
pub fn block_crcs(bytes: &[u8]) -> Vec<u32> {
    use rayon::prelude::*;
    // Below a few MB the thread pool's wake-up costs more than the hashing.
    if bytes.len() < PARALLEL_FROM {
        return bytes.chunks(PROOF_BLOCK).map(crc32fast::hash).collect();
    }
    bytes.par_chunks(PROOF_BLOCK).map(crc32fast::hash).collect()
}

/// Bytes from which hashing is spread over the cores.
const PARALLEL_FROM: usize = 4 << 20;

/// The recorded hashes of the first `len` bytes, and which blocks are checked.
#[derive(Debug)]
pub struct LineProof {
    len: usize,
    crcs: Vec<u32>,
    checked: Vec<AtomicU64>,
    failed: AtomicBool,
}

impl LineProof {
    /// A proof for the first `len` bytes with `crcs` as [`block_crcs`] made them; `None` when
    /// the counts do not fit (an index of another shape).
    pub fn new(len: usize, crcs: Vec<u32>) -> Option<LineProof> {
        if crcs.len() != len.div_ceil(PROOF_BLOCK) {
            return None;
        }
        let checked = (0..crcs.len().div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        Some(LineProof {
            len,
            crcs,
            checked,
            failed: AtomicBool::new(false),
        })
    }

    /// Whether `range` of `buf` sits in blocks that hash as recorded (hashing those not yet
    /// checked). Bytes past what the index describes were parsed, not taken from it: proven.
    pub fn check(&self, buf: &[u8], range: std::ops::Range<usize>) -> bool {
        if self.failed.load(Ordering::Relaxed) {
            return false;
        }
        let end = range.end.min(self.len);
        if range.start >= end {
            return true;
        }
        for b in range.start / PROOF_BLOCK..=(end - 1) / PROOF_BLOCK {
            let (word, bit) = (b / 64, 1u64 << (b % 64));
            if self.checked[word].load(Ordering::Relaxed) & bit != 0 {
                continue;
            }
            let from = b * PROOF_BLOCK;
            let to = (from + PROOF_BLOCK).min(self.len);
            if buf.len() < to || crc32fast::hash(&buf[from..to]) != self.crcs[b] {
                self.failed.store(true, Ordering::Relaxed);
                return false;
            }
            self.checked[word].fetch_or(bit, Ordering::Relaxed);
        }
        true
    }

    /// Every block checked now (on every core): what a write built from the session calls
    /// before it believes it.
    pub fn check_all(&self, buf: &[u8]) -> bool {
        use rayon::prelude::*;
        if self.failed.load(Ordering::Relaxed) {
            return false;
        }
        let block_ok = |b: usize| {
            let (word, bit) = (b / 64, 1u64 << (b % 64));
            if self.checked[word].load(Ordering::Relaxed) & bit != 0 {
                return true;
            }
            let from = b * PROOF_BLOCK;
            let to = (from + PROOF_BLOCK).min(self.len);
            buf.len() >= to && crc32fast::hash(&buf[from..to]) == self.crcs[b]
        };
        let ok = if self.len < PARALLEL_FROM {
            (0..self.crcs.len()).all(block_ok)
        } else {
            (0..self.crcs.len()).into_par_iter().all(block_ok)
        };
        if !ok {
            self.failed.store(true, Ordering::Relaxed);
        }
        ok
    }

    /// Whether `buf`, whose blocks hash to `crcs` (as [`block_crcs`] made them from all of
    /// `buf`), still holds the bytes this proof describes: the whole blocks compared by their
    /// hashes, the last short one hashed again. A new index is made from a session only when
    /// this holds; else its entries (read from the old index) would be vouched for by hashes of
    /// other bytes.
    /// A disagreement marks the session as failed, as a failed line would.
    pub fn agrees_with(&self, buf: &[u8], crcs: &[u32]) -> bool {
        let whole = self.len / PROOF_BLOCK;
        let from = whole * PROOF_BLOCK;
        let agrees = !self.failed()
            && buf.len() >= self.len
            && crcs.len() >= whole
            && crcs[..whole] == self.crcs[..whole]
            && (from == self.len || crc32fast::hash(&buf[from..self.len]) == self.crcs[whole]);
        if !agrees {
            self.failed.store(true, Ordering::Relaxed);
        }
        agrees
    }

    /// Whether a line read so far failed its check.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_block_is_found_where_a_line_is_read_and_stays_found() {
        let buf: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let p = LineProof::new(buf.len(), block_crcs(&buf)).unwrap();
        assert!(p.check(&buf, 10..70_000));
        let mut edited = buf.clone();
        edited[200_000] ^= 1;
        // Blocks already checked are not hashed again; an unchecked changed one fails.
        assert!(p.check(&edited, 10..70_000));
        assert!(!p.check(&edited, 199_990..200_010));
        assert!(p.failed());
        assert!(!p.check(&edited, 10..20));
        // Beyond what the index describes: parsed, so proven.
        let q = LineProof::new(buf.len(), block_crcs(&buf)).unwrap();
        let mut grown = buf.clone();
        grown.extend_from_slice(b"appended");
        assert!(q.check(&grown, 300_000..300_008));
        assert!(q.check_all(&grown));
        assert!(!LineProof::new(buf.len(), block_crcs(&buf)).unwrap().check_all(&edited));
        assert!(LineProof::new(buf.len(), vec![1]).is_none());
        // A new index's hashes agree with the old proof only where the bytes are the same.
        let p = LineProof::new(200_000, block_crcs(&buf[..200_000])).unwrap();
        assert!(p.agrees_with(&grown, &block_crcs(&grown)));
        let mut inside = grown.clone();
        inside[100_000] ^= 1;
        assert!(!p.agrees_with(&inside, &block_crcs(&inside)));
        let mut tail_edit = grown.clone();
        tail_edit[199_999] ^= 1;
        assert!(!p.agrees_with(&tail_edit, &block_crcs(&tail_edit)));
    }
}
