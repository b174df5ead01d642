//! The bytes a session is read from, as the store hands them over: a buffer in memory, or a
//! source the store manages (a mapping of the file). The engine only reads them; for a large
//! source it says which range it is about to read (`will_read`) and which it is done with
//! (`done_with`), so the store can keep a big session from ever being resident as a whole.

use std::ops::{Deref, Range};

/// Bytes the store supplies and manages (see [`FileBytes::Source`]).
pub trait ByteSource: Send + Sync {
    fn bytes(&self) -> &[u8];
    /// The loader is about to read `range` (the source may prefetch it).
    fn will_read(&self, _range: Range<usize>) {}
    /// The loader is done with `range` for now (the source may drop its pages; a later read
    /// must still see the same bytes).
    fn done_with(&self, _range: Range<usize>) {}
}

pub enum FileBytes {
    Owned(Vec<u8>),
    Source(Box<dyn ByteSource>),
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Owned(v) => v,
            FileBytes::Source(s) => s.bytes(),
        }
    }
}

impl FileBytes {
    pub fn will_read(&self, range: Range<usize>) {
        if let FileBytes::Source(s) = self {
            s.will_read(range);
        }
    }
    pub fn done_with(&self, range: Range<usize>) {
        if let FileBytes::Source(s) = self {
            s.done_with(range);
        }
    }
}

impl std::fmt::Debug for FileBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            FileBytes::Owned(v) => write!(f, "Owned({} bytes)", v.len()),
            FileBytes::Source(s) => write!(f, "Source({} bytes)", s.bytes().len()),
        }
    }
}

impl From<Vec<u8>> for FileBytes {
    fn from(v: Vec<u8>) -> Self {
        FileBytes::Owned(v)
    }
}
