//! A session's parse kept as bytes (bonsai's session index), so a session opened again needs
//! no parse: what phases 1–3 made of each line (the entries, the line diagnostics, where the
//! settled part ends) is encoded; opening decodes it and runs phases 4–6 as a parse would, so
//! a session from its index is the same value as a fresh parse by construction.
//!
//! The store decides whether an index still describes a file (its identity and hashed
//! blocks); this module only checks that the bytes are an index of this build, whole: a
//! checksum over every part, so a flipped byte is refused, never decoded into a wrong session.
//!
//! The entries are encoded in chunks decoded on every core. The format is postcard (already
//! the usage cache's): measured on the 1 GB reference, decoding every entry costs less than the
//! phases that follow; a zero-copy layout (rkyv, fixed records) would still have to become the
//! owned entries every view walks.

use super::{LoadError, Session};
use crate::load::bytes::FileBytes;
use crate::load::entry::{Diagnostic, Entry};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// What an index starts with; the last byte is the format's version (a new format is a new
/// byte, and an index of another is not read).
const MAGIC: &[u8; 8] = b"bonsaiX\x01";

/// Entries per chunk: enough to make a chunk's bookkeeping nothing, small enough to spread
/// a big session over every core.
const CHUNK: usize = 8192;

/// Everything but the entries.
#[derive(Serialize, Deserialize)]
struct Head {
    /// The engine's version: another build may parse differently, so its index is not used.
    engine: String,
    /// How many bytes of the file the index describes.
    len: u64,
    header_json: String,
    header_line: u32,
    line_diagnostics: Vec<Diagnostic>,
    settled_len: u64,
    settled_lines: u32,
    /// Each chunk's length in bytes, entry count and CRC-32.
    chunks: Vec<(u64, u32, u32)>,
}

/// Why some bytes are not a usable index (the store then parses the file and writes a new one).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("not a bonsai session index (or one of another format)")]
    Foreign,
    #[error("the index was made by bonsai {0}, not this build")]
    OtherBuild(String),
    #[error("the index is damaged (a checksum does not match)")]
    Damaged,
}

fn engine_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

fn put_part(out: &mut Vec<u8>, part: &[u8]) {
    out.extend_from_slice(&(part.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(part).to_le_bytes());
    out.extend_from_slice(part);
}

/// The next part of `bytes` at `*at` (length, checksum, bytes), checked.
fn take_part<'a>(bytes: &'a [u8], at: &mut usize) -> Result<&'a [u8], IndexError> {
    let len = bytes
        .get(*at..*at + 8)
        .ok_or(IndexError::Damaged)?
        .try_into()
        .map(u64::from_le_bytes)
        .map_err(|_| IndexError::Damaged)? as usize;
    let crc = bytes
        .get(*at + 8..*at + 12)
        .ok_or(IndexError::Damaged)?
        .try_into()
        .map(u32::from_le_bytes)
        .map_err(|_| IndexError::Damaged)?;
    let start = *at + 12;
    let part = bytes
        .get(start..start.checked_add(len).ok_or(IndexError::Damaged)?)
        .ok_or(IndexError::Damaged)?;
    if crc32fast::hash(part) != crc {
        return Err(IndexError::Damaged);
    }
    *at = start + len;
    Ok(part)
}

impl Session {
    /// This session's index: what its parse made of its lines, for [`Session::from_index`].
    pub fn to_index(&self) -> Vec<u8> {
        let chunks: Vec<Vec<u8>> = self
            .entries
            .par_chunks(CHUNK)
            .map(|c| postcard::to_allocvec(c).expect("entries encode"))
            .collect();
        let head = Head {
            engine: engine_version(),
            len: self.buf.len() as u64,
            header_json: self.header.raw.to_string(),
            header_line: self.header.line,
            line_diagnostics: self.line_diagnostics.clone(),
            settled_len: self.settled_len as u64,
            settled_lines: self.settled_lines,
            chunks: chunks
                .iter()
                .zip(self.entries.chunks(CHUNK))
                .map(|(b, c)| (b.len() as u64, c.len() as u32, crc32fast::hash(b)))
                .collect(),
        };
        let head = postcard::to_allocvec(&head).expect("the head encodes");
        let mut out = Vec::with_capacity(MAGIC.len() + 12 + head.len() + chunks.iter().map(Vec::len).sum::<usize>());
        out.extend_from_slice(MAGIC);
        put_part(&mut out, &head);
        for c in &chunks {
            out.extend_from_slice(c);
        }
        out
    }
}

/// An index decoded: the parse it holds, ready to become the session of the file's bytes.
pub struct IndexedParse {
    len: u64,
    header: super::Header,
    entries: Vec<Entry>,
    line_diagnostics: Vec<Diagnostic>,
    settled_len: usize,
    settled_lines: u32,
}

impl IndexedParse {
    /// Decode an index made by [`Session::to_index`], checked whole (its checksums, its
    /// build, every entry's byte range within the bytes it describes).
    pub fn decode(index: &[u8]) -> Result<IndexedParse, IndexError> {
        if index.get(..MAGIC.len()) != Some(MAGIC) {
            return Err(IndexError::Foreign);
        }
        let mut at = MAGIC.len();
        let head: Head = postcard::from_bytes(take_part(index, &mut at)?).map_err(|_| IndexError::Damaged)?;
        if head.engine != engine_version() {
            return Err(IndexError::OtherBuild(head.engine));
        }
        let mut spans = Vec::with_capacity(head.chunks.len());
        for &(len, count, crc) in &head.chunks {
            let end = at.checked_add(len as usize).ok_or(IndexError::Damaged)?;
            spans.push((index.get(at..end).ok_or(IndexError::Damaged)?, count, crc));
            at = end;
        }
        if at != index.len() {
            return Err(IndexError::Damaged);
        }
        let decoded: Vec<Vec<Entry>> = spans
            .par_iter()
            .map(|&(bytes, count, crc)| {
                if crc32fast::hash(bytes) != crc {
                    return Err(IndexError::Damaged);
                }
                let entries: Vec<Entry> = postcard::from_bytes(bytes).map_err(|_| IndexError::Damaged)?;
                if entries.len() != count as usize {
                    return Err(IndexError::Damaged);
                }
                Ok(entries)
            })
            .collect::<Result<_, _>>()?;
        let mut entries = Vec::with_capacity(decoded.iter().map(Vec::len).sum());
        for chunk in decoded {
            entries.extend(chunk);
        }
        // Every byte range must lie in the bytes the index describes (a checksum guards
        // against damage, not against an index made wrongly).
        let in_file = |r: &std::ops::Range<usize>| r.start <= r.end && r.end as u64 <= head.len;
        let ranges_ok = entries.iter().all(|e| {
            in_file(&e.span)
                && match &e.kind {
                    crate::load::entry::Kind::Message(m) => in_file(&m.line),
                    _ => true,
                }
        });
        if !ranges_ok || head.settled_len > head.len {
            return Err(IndexError::Damaged);
        }
        let raw: serde_json::Value = serde_json::from_str(&head.header_json).map_err(|_| IndexError::Damaged)?;
        let header = super::load::read_header(raw, head.header_line).map_err(|_| IndexError::Damaged)?;
        Ok(IndexedParse {
            len: head.len,
            header,
            entries,
            line_diagnostics: head.line_diagnostics,
            settled_len: head.settled_len as usize,
            settled_lines: head.settled_lines,
        })
    }

    /// How many bytes of the file the parse is of.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A version 1 session: its ids are made up in file order at load, so lines appended
    /// to it need a whole parse.
    pub fn is_v1(&self) -> bool {
        self.header.version < 2.0
    }
}

impl Session {
    /// The session of `buf` from a decoded index of its first bytes (the store has checked
    /// they are unchanged). Lines appended since are parsed as [`Session::extend`] parses
    /// them; nothing else is. Bytes shorter than the index, or a v1 file that grew, are
    /// parsed whole.
    pub fn from_indexed(buf: FileBytes, parse: IndexedParse) -> Result<Session, LoadError> {
        let len = buf.len() as u64;
        if len < parse.len || (len > parse.len && parse.is_v1()) {
            return Session::from_bytes(buf);
        }
        if len == parse.len {
            return Ok(Session::index(
                buf,
                parse.header,
                parse.entries,
                parse.line_diagnostics,
                parse.settled_len,
                parse.settled_lines,
            ));
        }
        Session::extend_parts(
            buf,
            parse.header,
            parse.entries,
            parse.line_diagnostics,
            parse.settled_len,
            parse.settled_lines,
        )
    }
}
