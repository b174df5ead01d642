//! A session's parse kept as bytes (bonsai's session index), so a session opened again needs
//! no parse: what phases 1–3 made of each line (the entries, the line diagnostics, where the
//! settled part ends) is encoded, and what phases 4–6 made of them (parents, diagnostics,
//! labels, name). Opening an index of an unchanged file decodes the entries and derives
//! nothing again: the parents and Pi's `byId` are plain tables read in place (see `ids`);
//! when lines were appended it runs phases 4–6 as a parse would (an appended entry can take
//! over an id). Either way a session from its index is the same value as a fresh parse by
//! construction.
//!
//! The store decides whether an index still describes a file (its identity and hashed
//! blocks); this module only checks that the bytes are an index of this build, whole: a
//! checksum over every part, so a flipped byte is refused, never decoded into a wrong session.
//!
//! Layout (after the magic): the head (length, CRC-32, postcard), then four parts, each
//! per-entry byte offsets and records: the entries (postcard; a message entry's record holds
//! only its [`MessageFacts`]), the messages (postcard), the messages' measures (Pi's
//! estimate, then postcard), the hashes of each reply's tool-call ids (little-endian u64s).
//! Entries are decoded on every core straight into the session's list (the offsets let each
//! be found without reading those before it). Messages and measures are not decoded at open:
//! each is read from the index the first time something asks for it ([`StoredRecords`]), so
//! a session opened from its index only pays for what its views show. Measured on the 1 GB
//! reference: the cost of an open is mostly fresh memory (the kernel clearing pages), so what
//! is not decoded is what saves most. After the four parts come the two derived tables
//! (little-endian integers, each 8-aligned and checksummed), then a later layer may keep a part
//! of its own, 8-aligned, its head opaque here ([`ExtraDecoder`]): the view layer keeps the
//! tree and `/tree`'s first view there, read in place (the loader never imports the views).

use super::ids::IdTable;
use super::load::DerivedTables;
use super::model::{Kept, LoadError, Part, Session, StoredRecords};
use crate::load::bytes::FileBytes;
use crate::load::entry::{
    Diagnostic, Entry, Kind, MessageCell, MessageFacts, MessageMeasures, MessageSource, NO_SLOT, SourceRef,
    StoredMessage,
};
use crate::load::table::Table;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What an index starts with; the last byte is the format's version (a new format is a new
/// byte, and an index of another is not read).
const MAGIC: &[u8; 8] = b"bonsaiX\x0d";

/// Entries per checksummed block.
const CHUNK: usize = 8192;

/// Everything but the entries and their measures.
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
    entries: u64,
    /// CRC-32 of each offset table (entries', messages', measures', tool calls').
    offsets_crc: [u32; 4],
    /// CRC-32 of each block of `CHUNK` entries' records, then of their messages, measures,
    /// tool calls.
    entries_crc: Vec<u32>,
    messages_crc: Vec<u32>,
    measures_crc: Vec<u32>,
    calls_crc: Vec<u32>,
    /// What phases 4–6 made of the entries (diagnostics, labels, name), used when the file
    /// is unchanged (lines appended may change what they make of earlier ones).
    derived: super::load::Derived,
    /// Their two tables after the four parts, each 8-aligned, little-endian: each entry's
    /// parent (u32s), then Pi's `byId` (u64 slots, see `ids`): bytes and CRC-32 of each.
    tables: [(u64, u32); 2],
    /// An id hashed by this build: `byId`'s slots (and the tool calls' hashes) are placed by
    /// the hasher, so an index hashed otherwise is another build's.
    hash_check: u64,
    /// One bit per entry: a tool result whose line names `nestedCalls` (see
    /// `StoredMessage::names_nested_calls`), so a cut never reads every result's line.
    nested_calls: Vec<u8>,
    /// What a later layer keeps after the four parts (the tree and `/tree`'s first view, see
    /// `view::tree_view::stored`): its own head, opaque here; its part follows 8-aligned.
    extra: Option<Vec<u8>>,
}

/// What a later layer keeps in the index beside the parse, read back: made from its head
/// (opaque to the engine's loader), the index's bytes, where its part starts, and how many
/// entries the session has. `None`: the part is damaged (the whole index is refused).
pub type ExtraDecoder = dyn Fn(&Arc<FileBytes>, usize, &[u8], usize) -> Option<Vec<Kept>> + Sync;

/// Where a part kept after the index's four parts starts, when they end at `pos` (an index's
/// bytes start 8-aligned, so the part is aligned for values read in place).
fn extra_start(pos: usize) -> usize {
    pos.next_multiple_of(8)
}

/// What [`Head::hash_check`] holds for this build.
fn hash_check() -> u64 {
    super::ids::id_hash("bonsai's hash check")
}

/// `values` as little-endian bytes (what an index keeps, read in place where the machine's
/// own order is that).
fn le_bytes<T: LittleEndian>(values: &[T]) -> Vec<u8> {
    if cfg!(target_endian = "little") {
        bytemuck::cast_slice(values).to_vec()
    } else {
        values.iter().flat_map(|v| v.le()).collect()
    }
}

/// The values at `bytes[range]`: in place where this machine reads them so (aligned,
/// little-endian), else decoded into memory.
fn le_table<T: LittleEndian>(bytes: &Arc<FileBytes>, range: Range<usize>) -> Option<Table<T>> {
    if cfg!(target_endian = "little")
        && let Some(t) = Table::in_place(bytes, range.clone())
    {
        return Some(t);
    }
    let raw = bytes.get(range)?;
    let size = std::mem::size_of::<T>();
    (raw.len() % size == 0).then(|| raw.chunks_exact(size).map(T::from_le).collect::<Vec<T>>().into())
}

/// The integers the derived tables hold, as an index keeps them.
trait LittleEndian: crate::load::table::Plain + bytemuck::Pod {
    fn le(&self) -> Vec<u8>;
    fn from_le(bytes: &[u8]) -> Self;
}

impl LittleEndian for u32 {
    fn le(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_le(bytes: &[u8]) -> Self {
        u32::from_le_bytes(bytes.try_into().expect("4 bytes"))
    }
}

impl LittleEndian for u64 {
    fn le(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_le(bytes: &[u8]) -> Self {
        u64::from_le_bytes(bytes.try_into().expect("8 bytes"))
    }
}

/// The two derived tables at `bytes[ranges]` for `n` entries, checked whole (their CRC-32s,
/// every parent an entry other than its own, `byId`'s slots: see `IdTable::fits`).
fn derived_tables(
    bytes: &Arc<FileBytes>,
    ranges: &[Range<usize>; 2],
    sums: [(u64, u32); 2],
    n: usize,
) -> Option<DerivedTables> {
    let sums_ok = ranges
        .par_iter()
        .zip(&sums)
        .all(|(r, &(_, crc))| bytes.get(r.clone()).is_some_and(|b| crc32fast::hash(b) == crc));
    if !sums_ok {
        return None;
    }
    let parent_idx = le_table::<u32>(bytes, ranges[0].clone())?;
    let slots = le_table::<u64>(bytes, ranges[1].clone())?;
    let parents_ok = parent_idx.len() == n
        && parent_idx
            .par_iter()
            .enumerate()
            .all(|(i, &p)| p == u32::MAX || (p as usize) < n && p as usize != i);
    (parents_ok && IdTable::fits(&slots, n)).then(|| DerivedTables {
        parent_idx,
        by_id: IdTable::stored(slots),
    })
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

/// `magic`, then `part` with its length and CRC-32: how an index (the engine's, and the
/// store's around it) begins.
pub fn frame(out: &mut Vec<u8>, magic: &[u8; 8], part: &[u8]) {
    out.extend_from_slice(magic);
    out.extend_from_slice(&(part.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(part).to_le_bytes());
    out.extend_from_slice(part);
}

/// The part [`frame`] put at the start of `bytes`, checked, and where what follows it starts:
/// `Foreign` when the magic is another, `Damaged` when the part is cut short or its checksum
/// does not match.
pub fn unframe<'a>(magic: &[u8; 8], bytes: &'a [u8]) -> Result<(&'a [u8], usize), IndexError> {
    if bytes.get(..8) != Some(magic) {
        return Err(IndexError::Foreign);
    }
    let len = bytes.get(8..16).ok_or(IndexError::Damaged)?;
    let len = usize::try_from(u64::from_le_bytes(len.try_into().expect("8 bytes"))).map_err(|_| IndexError::Damaged)?;
    let crc = u32::from_le_bytes(
        bytes
            .get(16..20)
            .ok_or(IndexError::Damaged)?
            .try_into()
            .expect("4 bytes"),
    );
    let end = len.checked_add(20).ok_or(IndexError::Damaged)?;
    let part = bytes.get(20..end).ok_or(IndexError::Damaged)?;
    if crc32fast::hash(part) != crc {
        return Err(IndexError::Damaged);
    }
    Ok((part, end))
}

/// `n` little-endian u64 offsets at the start of `bytes`, then the rest.
fn offsets_of(bytes: &[u8], n: usize) -> Result<(&[u8], &[u8]), IndexError> {
    let len = n.checked_mul(8).ok_or(IndexError::Damaged)?;
    if bytes.len() < len {
        return Err(IndexError::Damaged);
    }
    Ok(bytes.split_at(len))
}

fn offset(table: &[u8], i: usize) -> usize {
    u64::from_le_bytes(table[i * 8..i * 8 + 8].try_into().expect("8 bytes")) as usize
}

/// Records written back to back, with the table of where each starts (and the end).
struct Records {
    offsets: Vec<u8>,
    bytes: Vec<u8>,
    crcs: Vec<u32>,
}

fn records<T: Sync>(items: &[T], encode: impl Fn(&T, &mut Vec<u8>) + Sync) -> Records {
    let blocks: Vec<(Vec<u8>, Vec<u64>)> = items
        .par_chunks(CHUNK)
        .map(|c| {
            let mut bytes = Vec::new();
            let mut ends = Vec::with_capacity(c.len());
            for item in c {
                encode(item, &mut bytes);
                ends.push(bytes.len() as u64);
            }
            (bytes, ends)
        })
        .collect();
    let mut out = Records {
        offsets: Vec::with_capacity((items.len() + 1) * 8),
        bytes: Vec::new(),
        crcs: Vec::with_capacity(blocks.len()),
    };
    out.offsets.extend_from_slice(&0u64.to_le_bytes());
    for (bytes, ends) in blocks {
        let base = out.bytes.len() as u64;
        for e in ends {
            out.offsets.extend_from_slice(&(base + e).to_le_bytes());
        }
        out.crcs.push(crc32fast::hash(&bytes));
        out.bytes.extend_from_slice(&bytes);
    }
    out
}

impl Session {
    /// This session's index: what its parse made of its lines, for [`IndexedParse::decode`].
    /// Measures are kept where they are known (taken at load or since, or in the index this
    /// session was opened from); none is taken for it.
    /// `extra`: what a later layer keeps after the parse (its head, its part's bytes).
    pub fn to_index(&self, extra: Option<(Vec<u8>, Vec<u8>)>) -> Vec<u8> {
        let entries = records(&self.entries, crate::load::entry::record::encode);
        // A message not decoded since it was read from an index is copied from there as it
        // is: saving an index never decodes what its session did not.
        let messages = records(&self.entries, |e, out| {
            if let Kind::Message(cell) = &e.kind {
                match cell.undecoded_source().and_then(|src| src.record(cell.slot())) {
                    Some(raw) => out.extend_from_slice(raw),
                    None => {
                        postcard::to_io(&**cell, &mut *out).expect("a message encodes");
                    }
                }
            }
        });
        let measures = records(&self.entries, |e, out| {
            if let Kind::Message(cell) = &e.kind {
                // Pi's estimate first, on its own: the gauge and the context's projection read
                // only that, without decoding (and keeping) the rest.
                let known = cell.is_decoded().then(|| cell.measures.get()).flatten();
                match known {
                    Some(known) => {
                        postcard::to_io(&known.est_tokens, &mut *out).expect("an estimate encodes");
                        postcard::to_io(&**known, &mut *out).expect("measures encode");
                    }
                    None => {
                        if let Some(raw) = self
                            .stored_records
                            .as_ref()
                            .and_then(|t| t.measures_record(cell.slot()))
                        {
                            out.extend_from_slice(raw);
                        }
                    }
                }
            }
        });
        // The hashes of each reply's tool-call ids, read in place by `/tree`'s table of calls
        // (which would otherwise decode every reply of a session to build it).
        let calls = records(&self.entries, |e, out| {
            if let Kind::Message(cell) = &e.kind {
                self.tool_call_hashes(cell, |_, h| out.extend_from_slice(&h.to_le_bytes()));
            }
        });
        // Read here, in the background, rather than on every cut of a session opened from
        // it (a long cut's results are most of the file); each block's pages handed back.
        let nested_calls: Vec<u8> = self
            .entries
            .par_chunks(CHUNK)
            .enumerate()
            .flat_map_iter(|(b, c)| {
                let mut bits = vec![0u8; CHUNK / 8];
                // The bytes read: first and last (a range would be empty until it grows).
                let (mut first, mut last) = (usize::MAX, 0);
                let base = b * CHUNK;
                for (k, e) in c.iter().enumerate() {
                    let Kind::Message(m) = &e.kind else { continue };
                    if !m.facts().is(&crate::load::entry::Role::ToolResult) {
                        continue;
                    }
                    if m.facts().names_nested_calls().is_none() {
                        first = first.min(e.span().start);
                        last = last.max(e.span().end);
                    }
                    if self.names_nested_calls(base + k) {
                        bits[k / 8] |= 1 << (k % 8);
                    }
                }
                if first < last {
                    self.buf.done_with(first..last);
                }
                bits.truncate(c.len().div_ceil(8));
                bits
            })
            .collect();
        let (extra_head, extra) = extra.unzip();
        let derived_tables = [le_bytes(&self.parent_idx), le_bytes(self.by_id.slots())];
        let head = Head {
            tables: [0, 1].map(|k| (derived_tables[k].len() as u64, crc32fast::hash(&derived_tables[k]))),
            hash_check: hash_check(),
            extra: extra_head,
            engine: engine_version(),
            len: self.buf.len() as u64,
            header_json: self.header.raw.to_string(),
            header_line: self.header.line,
            line_diagnostics: self.line_diagnostics.clone(),
            settled_len: self.settled_len as u64,
            settled_lines: self.settled_lines,
            entries: self.entries.len() as u64,
            derived: self.derived(),
            offsets_crc: [
                crc32fast::hash(&entries.offsets),
                crc32fast::hash(&messages.offsets),
                crc32fast::hash(&measures.offsets),
                crc32fast::hash(&calls.offsets),
            ],
            entries_crc: entries.crcs,
            messages_crc: messages.crcs,
            measures_crc: measures.crcs,
            calls_crc: calls.crcs,
            nested_calls,
        };
        let head = postcard::to_allocvec(&head).expect("the head encodes");
        let mut out = Vec::with_capacity(
            MAGIC.len()
                + 12
                + head.len()
                + entries.offsets.len()
                + entries.bytes.len()
                + messages.offsets.len()
                + messages.bytes.len()
                + measures.offsets.len()
                + measures.bytes.len()
                + calls.offsets.len()
                + calls.bytes.len(),
        );
        frame(&mut out, MAGIC, &head);
        for part in [
            entries.offsets,
            entries.bytes,
            messages.offsets,
            messages.bytes,
            measures.offsets,
            measures.bytes,
            calls.offsets,
            calls.bytes,
        ] {
            out.extend_from_slice(&part);
        }
        for table in derived_tables {
            // Aligned from the index's start, which the store places 8-aligned in its file.
            out.resize(extra_start(out.len()), 0);
            out.extend_from_slice(&table);
        }
        if let Some(bytes) = extra {
            // Aligned from the index's start, which the store places 8-aligned in its file.
            out.resize(extra_start(out.len()), 0);
            out.extend_from_slice(&bytes);
        }
        out
    }
}

/// The records shared with their session (what the cells' one handle holds).
impl MessageSource for Arc<StoredRecords> {
    fn message(&self, slot: u32, facts: MessageFacts) -> StoredMessage {
        (**self).message(slot, facts)
    }
    fn record(&self, slot: u32) -> Option<&[u8]> {
        MessageSource::record(&**self, slot)
    }
}

impl MessageSource for StoredRecords {
    /// The message at `slot` decoded, `facts` being its entry's (a record that does not
    /// decode reads as a blank message of the facts' role).
    fn message(&self, slot: u32, facts: MessageFacts) -> StoredMessage {
        let decoded = self
            .record(slot)
            .and_then(|r| postcard::from_bytes::<StoredMessage>(r).ok())
            .filter(|m| m.line.start <= m.line.end && m.line.end as u64 <= self.len);
        let Some(mut m) = decoded else {
            // The index was checked whole when opened; a record that does not decode
            // now would be a wrongly made index: the message reads as blank, never as
            // some other message.
            return StoredMessage::blank(facts.role().unwrap_or(crate::load::entry::Role::Other("".into())));
        };
        m.slot = slot;
        m.names_nested_calls = facts.names_nested_calls();
        m
    }

    fn record(&self, slot: u32) -> Option<&[u8]> {
        self.record_of(&self.messages, slot)
    }
}

impl StoredRecords {
    /// The measures of the message at `slot`, decoded (`None`: the index holds none).
    pub(crate) fn get(&self, slot: u32) -> Option<MessageMeasures> {
        let (_, rest) = postcard::take_from_bytes::<u64>(self.measures_record(slot)?).ok()?;
        postcard::from_bytes(rest).ok()
    }

    /// Only Pi's estimate of the message at `slot`: what a projection needs of every message
    /// in a context, read without decoding or keeping the rest of its measures.
    pub(crate) fn est_tokens(&self, slot: u32) -> Option<u64> {
        postcard::take_from_bytes::<u64>(self.measures_record(slot)?)
            .ok()
            .map(|(t, _)| t)
    }

    /// The index holds measures for the message at `slot`.
    pub(crate) fn holds(&self, slot: u32) -> bool {
        self.measures_record(slot).is_some()
    }

    /// The hashes of the tool-call ids of the message at `slot` (see `Session::tool_call_hashes`).
    pub(crate) fn call_hashes(&self, slot: u32) -> impl Iterator<Item = u64> + '_ {
        self.record_of(&self.calls, slot)
            .unwrap_or(&[])
            .chunks_exact(8)
            .map(|h| u64::from_le_bytes(h.try_into().expect("8 bytes")))
    }

    /// The measures' record at `slot` as stored (Pi's estimate, then the measures).
    pub(crate) fn measures_record(&self, slot: u32) -> Option<&[u8]> {
        self.record_of(&self.measures, slot)
    }

    fn record_of(&self, part: &Part, slot: u32) -> Option<&[u8]> {
        if slot == NO_SLOT {
            return None;
        }
        let table = &self.bytes[part.offsets.clone()];
        let i = slot as usize;
        if (i + 2) * 8 > table.len() {
            return None;
        }
        let (start, end) = (offset(table, i), offset(table, i + 1));
        self.bytes[part.records.clone()]
            .get(start..end)
            .filter(|r| !r.is_empty())
    }
}

/// An index decoded: the parse it holds, ready to become the session of the file's bytes.
pub struct IndexedParse {
    len: u64,
    header: crate::load::entry::Header,
    entries: Vec<Entry>,
    line_diagnostics: Vec<Diagnostic>,
    settled_len: usize,
    settled_lines: u32,
    derived: super::load::Derived,
    records: Arc<StoredRecords>,
    kept: Vec<Kept>,
    /// What phases 4–6 made, read in place.
    tables: DerivedTables,
}

/// Every block of records whole (their CRC-32s), with their offsets in order and in bounds.
fn check_records(table: &[u8], records: &[u8], crcs: &[u32], n: usize) -> Result<(), IndexError> {
    if crcs.len() != n.div_ceil(CHUNK) || offset(table, 0) != 0 || offset(table, n) != records.len() {
        return Err(IndexError::Damaged);
    }
    let ok = crcs.par_iter().enumerate().all(|(b, &crc)| {
        let (first, last) = (b * CHUNK, ((b + 1) * CHUNK).min(n));
        let ordered = (first..last).all(|i| offset(table, i) <= offset(table, i + 1));
        ordered && crc32fast::hash(&records[offset(table, first)..offset(table, last)]) == crc
    });
    ok.then_some(()).ok_or(IndexError::Damaged)
}

impl IndexedParse {
    /// Decode the index `bytes[at..]` made by [`Session::to_index`], checked whole (its
    /// checksums, its build, every entry's byte range within the bytes it describes). Its
    /// messages and measures are decoded later, each when read.
    /// `extra`: read what a later layer kept beside the parse with it (only an unchanged
    /// file's session uses that; otherwise it is neither checked nor kept).
    pub fn decode(bytes: Arc<FileBytes>, at: usize, extra: Option<&ExtraDecoder>) -> Result<IndexedParse, IndexError> {
        // Read whole once (checked, the entries decoded), then handed back: what stays mapped
        // is read again only for the messages and measures asked for, so a big index is
        // never resident whole.
        bytes.will_read(at..bytes.len());
        let parse = Self::decode_mapped(&bytes, at, extra);
        bytes.done_with(at..bytes.len());
        parse
    }

    fn decode_mapped(
        bytes: &Arc<FileBytes>,
        at: usize,
        extra: Option<&ExtraDecoder>,
    ) -> Result<IndexedParse, IndexError> {
        let index = bytes.get(at..).ok_or(IndexError::Foreign)?;
        let (head_bytes, after_head) = unframe(MAGIC, index)?;
        let head: Head = postcard::from_bytes(head_bytes).map_err(|_| IndexError::Damaged)?;
        if head.engine != engine_version() || head.hash_check != hash_check() {
            return Err(IndexError::OtherBuild(head.engine));
        }
        let n = usize::try_from(head.entries).map_err(|_| IndexError::Damaged)?;
        // Each part: its offset table (checked), then its records (checked block by block).
        let mut parts = Vec::with_capacity(4);
        let mut pos = at + after_head;
        for crcs in [
            &head.entries_crc,
            &head.messages_crc,
            &head.measures_crc,
            &head.calls_crc,
        ] {
            let (table, rest) = offsets_of(&bytes[pos..], n + 1)?;
            let records = rest.get(..offset(table, n)).ok_or(IndexError::Damaged)?;
            let part = Part {
                offsets: pos..pos + table.len(),
                records: pos + table.len()..pos + table.len() + records.len(),
            };
            pos = part.records.end;
            parts.push((part, crcs));
        }
        // Each part's offset table and its records checked on every core (a 10 GB session's
        // four tables are 140 MB).
        let checks: Vec<Result<(), IndexError>> = parts
            .par_iter()
            .enumerate()
            .map(|(k, (part, crcs))| {
                let table = &bytes[part.offsets.clone()];
                let (whole, records) = rayon::join(
                    || crc32fast::hash(table) == head.offsets_crc[k],
                    || check_records(table, &bytes[part.records.clone()], crcs, n),
                );
                if whole { records } else { Err(IndexError::Damaged) }
            })
            .collect();
        checks.into_iter().collect::<Result<(), _>>()?;
        // Checked: what is not decoded now is let go before the rest is read (a 10 GB
        // session's index would otherwise be resident whole at its peak).
        for (part, _) in &parts[1..] {
            bytes.done_with(part.offsets.start..part.records.end);
        }
        let nested = &head.nested_calls;
        if nested.len() != n.div_ceil(8) {
            return Err(IndexError::Damaged);
        }
        // The derived tables, then the kept part, each aligned from the index's start (`at`),
        // itself aligned in its file; nothing but zeros between.
        let mut table_ranges = Vec::with_capacity(2);
        for (len, _) in head.tables {
            let start = at + extra_start(pos - at);
            let end = usize::try_from(len)
                .ok()
                .and_then(|len| start.checked_add(len))
                .ok_or(IndexError::Damaged)?;
            if bytes.get(pos..start).is_none_or(|pad| pad.iter().any(|&b| b != 0)) || end > bytes.len() {
                return Err(IndexError::Damaged);
            }
            table_ranges.push(start..end);
            pos = end;
        }
        let table_ranges: [Range<usize>; 2] = table_ranges.try_into().expect("two tables");
        let extra_at = at + extra_start(pos - at);
        if head.extra.is_some() && bytes.get(pos..extra_at).is_none_or(|pad| pad.iter().any(|&b| b != 0)) {
            return Err(IndexError::Damaged);
        }
        let (entry_table, entry_records) = (&bytes[parts[0].0.offsets.clone()], &bytes[parts[0].0.records.clone()]);
        let records = Arc::new(StoredRecords {
            bytes: bytes.clone(),
            messages: parts[1].0.clone(),
            measures: parts[2].0.clone(),
            calls: parts[3].0.clone(),
            len: head.len,
        });
        // Each block of entries decoded shares a handle of its own on the records: one
        // handle cloned for every message from both cores made its count's cache line
        // bounce between them (perf: ~a fifth of a 10 GB open in that one locked add).
        let block_source = || -> SourceRef { Arc::new(Box::new(records.clone())) };
        // Straight into the list (no block lists joined after): a record that does not
        // decode leaves a blank entry and the whole index is refused.
        // So does a byte range outside the bytes the index describes (a checksum guards
        // against damage, not against an index made wrongly; a message's own range is
        // checked when it is read), checked here rather than in a second pass over them all.
        let in_file = |r: &Range<usize>| r.start <= r.end && r.end as u64 <= head.len;
        let bad = AtomicBool::new(false);
        let mut entries = Vec::with_capacity(n);
        let decode_entries = || {
            (0..n)
                .into_par_iter()
                .with_min_len(1024)
                .map_init(block_source, |source, i| {
                    let record = &entry_records[offset(entry_table, i)..offset(entry_table, i + 1)];
                    match crate::load::entry::record::decode(record) {
                        Some(mut e) if in_file(&e.span()) => {
                            if let Kind::Message(cell) = &mut e.kind {
                                let mut facts = cell.facts();
                                if facts.is(&crate::load::entry::Role::ToolResult) {
                                    facts = facts
                                        .with_nested_calls(nested.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0));
                                }
                                *cell = MessageCell::stored(facts, i as u32, source.clone());
                            }
                            e
                        }
                        _ => {
                            bad.store(true, Ordering::Relaxed);
                            blank()
                        }
                    }
                })
                .collect_into_vec(&mut entries)
        };
        // The kept part is checked beside the entries' decoding; one that does not check
        // refuses the index like any other damage.
        // So are the derived tables (an unchanged file's session uses them as they are, a
        // grown one's derives only its appended entries).
        let ((), (kept, tables)) = rayon::join(decode_entries, || {
            rayon::join(
                || match (&head.extra, extra) {
                    (Some(h), Some(decode)) => decode(bytes, extra_at, h, n),
                    _ => Some(Vec::new()),
                },
                || derived_tables(bytes, &table_ranges, head.tables, n),
            )
        });
        let kept = kept.ok_or(IndexError::Damaged)?;
        let tables = tables.ok_or(IndexError::Damaged)?;
        if bad.into_inner() || head.settled_len > head.len {
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
            derived: head.derived,
            records,
            kept,
            tables,
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

/// A placeholder where a record did not decode (the index is then refused).
fn blank() -> Entry {
    Entry::new(0..0, crate::load::entry::EntryId::default(), 0.0, Kind::Usage)
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
        let mut s = if len == parse.len {
            Session::index_derived(
                buf,
                parse.header,
                parse.entries,
                parse.line_diagnostics,
                parse.settled_len,
                parse.settled_lines,
                parse.derived,
                parse.tables,
            )
        } else {
            Session::extend_parts(
                buf,
                parse.header,
                parse.entries,
                parse.line_diagnostics,
                parse.settled_len,
                parse.settled_lines,
                (parse.derived, parse.tables),
            )?
        };
        s.stored_records = Some(parse.records);
        // What was kept is of these very entries only: an extended session makes its own.
        if len == parse.len {
            s.kept = parse.kept;
        }
        Ok(s)
    }
}
