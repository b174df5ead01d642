//! A per-entry table that is either built in memory or read in place from bonsai's session
//! index. A session opened from an unchanged file's index reads its tree and its `/tree`
//! view's tables where the index maps them (see `view::stored`): nothing is decoded or copied,
//! and only the pages a frame reads are ever touched. Measured on the 1 GB reference, the
//! open's cost was mostly the kernel clearing fresh memory for tables like these, rebuilt at
//! every open over all 437,000 entries.
//!
//! A table read in place is checked once, whole, when it is made (its alignment, its length,
//! every value a valid bit pattern: `bytemuck`'s checked casts); one that changes is copied
//! into memory first ([`Table::to_mut`]).

use super::bytes::FileBytes;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// Values a table can hold: plain bytes (no pointers, no padding) whose bit patterns are
/// checked when read in place.
pub trait Plain: bytemuck::CheckedBitPattern + bytemuck::NoUninit + Send + Sync + 'static {}
impl<T: bytemuck::CheckedBitPattern + bytemuck::NoUninit + Send + Sync + 'static> Plain for T {}

/// Whether tables are read in place on this machine: the index holds them little-endian with
/// 8-byte `usize`s, as this machine lays them out in memory (elsewhere no view is stored).
pub const IN_PLACE: bool = cfg!(target_endian = "little") && std::mem::size_of::<usize>() == 8;

pub struct Table<T: Plain> {
    /// The values, when built in memory (empty while `in_place` holds them).
    owned: Vec<T>,
    /// The values read in place, until they are changed.
    in_place: Option<InPlace<T>>,
}

/// `len` values at `bytes[at..]`, checked when made.
struct InPlace<T> {
    bytes: Arc<FileBytes>,
    at: usize,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T> Clone for InPlace<T> {
    fn clone(&self) -> Self {
        InPlace {
            bytes: self.bytes.clone(),
            at: self.at,
            len: self.len,
            _t: std::marker::PhantomData,
        }
    }
}

impl<T: Plain> InPlace<T> {
    fn values(&self) -> &[T] {
        let raw = &self.bytes[self.at..self.at + self.len * std::mem::size_of::<T>()];
        // SAFETY: `in_place` checked these very bytes (the source never changes while the
        // `Arc` holds it) for alignment, length and every value's bit pattern; a checked cast
        // again on every read would cost a full scan.
        unsafe { std::slice::from_raw_parts(raw.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Plain> Table<T> {
    /// The values at `bytes[range]`, read in place: `None` unless the range is in the bytes,
    /// aligned for `T`, a whole number of values, and each of them valid.
    pub fn in_place(bytes: &Arc<FileBytes>, range: Range<usize>) -> Option<Table<T>> {
        let raw = bytes.get(range.clone())?;
        let values: &[T] = bytemuck::checked::try_cast_slice(raw).ok()?;
        Some(Table {
            owned: Vec::new(),
            in_place: Some(InPlace {
                bytes: bytes.clone(),
                at: range.start,
                len: values.len(),
                _t: std::marker::PhantomData,
            }),
        })
    }

    /// The values to change, copied into memory first when they were read in place.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Some(p) = self.in_place.take() {
            self.owned = p.values().to_vec();
        }
        &mut self.owned
    }

    /// The values to fill again from nothing: emptied (what was read in place is let go
    /// without being copied).
    pub fn emptied(&mut self) -> &mut Vec<T> {
        self.in_place = None;
        self.owned.clear();
        &mut self.owned
    }

    /// Read in place from an index (not built in memory).
    pub fn is_in_place(&self) -> bool {
        self.in_place.is_some()
    }

    /// The values' bytes as this machine (and an index) lays them out.
    pub fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
}

impl<T: Plain> Deref for Table<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.in_place {
            Some(p) => p.values(),
            None => &self.owned,
        }
    }
}

impl<'a, T: Plain> IntoIterator for &'a Table<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Plain> From<Vec<T>> for Table<T> {
    fn from(v: Vec<T>) -> Self {
        Table {
            owned: v,
            in_place: None,
        }
    }
}

impl<T: Plain> Default for Table<T> {
    fn default() -> Self {
        Vec::new().into()
    }
}

impl<T: Plain> Clone for Table<T> {
    fn clone(&self) -> Self {
        Table {
            owned: self.owned.clone(),
            in_place: self.in_place.clone(),
        }
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for Table<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Plain + PartialEq> PartialEq for Table<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(bytes: Vec<u8>) -> Arc<FileBytes> {
        Arc::new(FileBytes::Owned(bytes))
    }

    #[test]
    fn a_table_reads_checked_values_in_place_and_copies_before_a_change() {
        let words: Vec<u64> = vec![7, 8, 9];
        let bytes = source(bytemuck::cast_slice(&words).to_vec());
        let mut t: Table<u64> = Table::in_place(&bytes, 8..24).expect("aligned, whole values");
        assert!(t.is_in_place());
        assert_eq!(&*t, &[8, 9]);
        t.to_mut().push(10);
        assert!(!t.is_in_place());
        assert_eq!(&*t, &[8, 9, 10]);
        assert_eq!(&bytes[8..16], &8u64.to_le_bytes(), "the source is never written");
    }

    #[test]
    fn bytes_that_are_not_values_are_refused() {
        let bytes = source(vec![0, 1, 2, 1]);
        assert!(Table::<bool>::in_place(&bytes, 0..2).is_some());
        assert!(Table::<bool>::in_place(&bytes, 0..3).is_none(), "2 is no bool");
        assert!(Table::<u64>::in_place(&bytes, 0..4).is_none(), "not a whole value");
        assert!(Table::<u64>::in_place(&bytes, 0..16).is_none(), "beyond the bytes");
    }
}
