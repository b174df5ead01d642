//! Pi's `byId` as a plain table: each slot an entry's index and a tag of its id's hash (or
//! empty), placed by the hash and probed linearly. Plain, so bonsai's session index keeps it and a second open
//! of an unchanged file reads it in place instead of hashing every id again. Measured on the
//! 10 GB reference (4.4 million entries), hashing the ids into a fresh table was 250–420 ms
//! of the open, mostly cache misses on ids scattered over the heap; read in place, a lookup
//! touches one slot's page and the entries it names.
//!
//! Hand-written rather than a `hashbrown` table because a table to be read in place must
//! have a layout of its own: hashbrown's is private and not meant to be stored.

use crate::load::entry::Entry;
use crate::load::table::Table;

/// A slot with no entry.
const EMPTY: u64 = u64::MAX;

/// A slot: the entry's index in the low half, a tag of its id's hash in the high half (a
/// probe compares tags, and reads an entry's id only when they match: ids are scattered over
/// the heap, so each one read is a cache miss).
fn slot(tag: u32, i: usize) -> u64 {
    (u64::from(tag) << 32) | i as u64
}

fn entry_of(slot: u64) -> usize {
    (slot & u64::from(u32::MAX)) as usize
}

/// The tag of an id's hash: both its halves folded.
fn tag_of(hash: u64) -> u32 {
    (hash ^ (hash >> 32)) as u32
}

/// Pi's `byId`: the last entry with each id, found by hashing the id.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct IdTable {
    /// A power of two long (or empty when there are no entries), at most three quarters full.
    slots: Table<u64>,
}

/// Slots for `n` entries: a power of two with a quarter of them free at least.
fn capacity_for(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n + n / 3 + 1).next_power_of_two().max(2)
    }
}

/// An id's hash mixed (the hash's low bits alone place ids with similar endings in runs).
fn mixed(hash: u64) -> u64 {
    hash.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The slot where the probe for a mixed hash starts: its high bits.
fn home(mixed: u64, slots: usize) -> usize {
    let bits = slots.trailing_zeros();
    (mixed >> (64 - bits)) as usize
}

/// Where entry `i`, its id hashed to `h`, goes in `slots` (a power of two long, with an empty
/// slot): `Ok` an empty slot, `Err` the slot of an earlier entry with the same id.
fn place(slots: &[u64], entries: &[Entry], i: usize, h: u64) -> Result<usize, usize> {
    let (mask, tag) = (slots.len() - 1, tag_of(h));
    let mut k = home(mixed(h), slots.len());
    loop {
        let s = slots[k];
        if s == EMPTY {
            return Ok(k);
        }
        if (s >> 32) as u32 == tag && entries[entry_of(s)].id == entries[i].id {
            return Err(k);
        }
        k = (k + 1) & mask;
    }
}

impl IdTable {
    /// The table of `entries` whose ids hash to `hashes` (each entry's [`id_hash`]); the
    /// later entry with an id takes it, as in Pi's map, and `duplicate(i)` hears of each entry
    /// `i` that took an id from an earlier one.
    pub(crate) fn build(entries: &[Entry], hashes: &[u64], mut duplicate: impl FnMut(usize)) -> IdTable {
        let cap = capacity_for(entries.len());
        let mut slots = vec![EMPTY; cap];
        for (i, &h) in hashes.iter().enumerate() {
            let k = place(&slots, entries, i, h).unwrap_or_else(|k| {
                duplicate(i);
                k
            });
            slots[k] = slot(tag_of(h), i);
        }
        IdTable { slots: slots.into() }
    }

    /// This table with the entries from `from` on added (those before it are the ones it is
    /// of), when none of them takes over an earlier entry's id (which may change what other
    /// entries' parents resolve to): `None` then.
    pub(crate) fn appended(self, entries: &[Entry], from: usize) -> Option<IdTable> {
        let hashes =
            |range: std::ops::Range<usize>| -> Vec<u64> { entries[range].iter().map(|e| id_hash(&e.id)).collect() };
        if capacity_for(entries.len()) != self.slots.len() {
            // Grown past its size: made anew.
            let mut took_over = false;
            let table = IdTable::build(entries, &hashes(0..entries.len()), |i| took_over |= i >= from);
            return (!took_over).then_some(table);
        }
        // Copied once when read in place; a table in memory is added to as it is.
        let mut table = self.slots;
        let slots = table.to_mut();
        for (i, h) in (from..entries.len()).zip(hashes(from..entries.len())) {
            let k = place(slots, entries, i, h).ok()?;
            slots[k] = slot(tag_of(h), i);
        }
        Some(IdTable { slots: table })
    }

    /// The table read from an index (see [`IdTable::fits`]).
    pub(crate) fn stored(slots: Table<u64>) -> IdTable {
        IdTable { slots }
    }

    /// Whether `slots` can be the table of `n` entries: as many slots as it would be built
    /// with, each empty or an entry, and none walked forever. A table made wrongly otherwise
    /// finds wrong entries, never panics (a checksum guards the index against damage).
    pub(crate) fn fits(slots: &[u64], n: usize) -> bool {
        use rayon::prelude::*;
        slots.len() == capacity_for(n)
            && slots.par_iter().all(|&s| s == EMPTY || entry_of(s) < n)
            && (slots.is_empty() || slots.par_iter().any(|&s| s == EMPTY))
    }

    /// The entry with this id (the last with it), as an index into `entries`.
    pub(crate) fn find(&self, entries: &[Entry], id: &str) -> Option<usize> {
        let cap = self.slots.len();
        if cap == 0 {
            return None;
        }
        let mask = cap - 1;
        let h = id_hash(id);
        let (m, tag) = (mixed(h), tag_of(h));
        let mut k = home(m, cap);
        // At most every slot: a stored table is checked to have an empty one, but a walk
        // bounded by the table's size needs no such promise.
        for _ in 0..cap {
            let s = self.slots[k];
            if s == EMPTY {
                return None;
            }
            if (s >> 32) as u32 == tag && entries.get(entry_of(s)).is_some_and(|e| &*e.id == id) {
                return Some(entry_of(s));
            }
            k = (k + 1) & mask;
        }
        None
    }

    /// The slots (what an index keeps).
    pub(crate) fn slots(&self) -> &[u64] {
        &self.slots
    }

    /// Read in place from an index.
    pub(crate) fn is_in_place(&self) -> bool {
        self.slots.is_in_place()
    }
}

pub(super) fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::entry::Kind;

    fn entry(id: &str) -> Entry {
        Entry::new(0..0, id.into(), 0.0, Kind::Usage)
    }

    #[test]
    fn the_last_entry_with_an_id_is_found_and_duplicates_are_told() {
        let ids = ["a", "b", "a", "c", "b", "b"];
        let entries: Vec<Entry> = ids.iter().map(|i| entry(i)).collect();
        let hashes: Vec<u64> = ids.iter().map(|i| id_hash(i)).collect();
        let mut dups = Vec::new();
        let t = IdTable::build(&entries, &hashes, |i| dups.push(i));
        assert_eq!(dups, vec![2, 4, 5]);
        assert_eq!(t.find(&entries, "a"), Some(2));
        assert_eq!(t.find(&entries, "b"), Some(5));
        assert_eq!(t.find(&entries, "c"), Some(3));
        assert_eq!(t.find(&entries, "d"), None);
        assert!(IdTable::fits(&t.slots, entries.len()));
        assert!(!IdTable::fits(&t.slots, 2), "an entry out of range");
        assert!(
            !IdTable::fits(&vec![0u64; t.slots.len()], entries.len()),
            "no empty slot"
        );
    }

    #[test]
    fn many_ids_are_all_found_and_a_full_table_ends_a_miss() {
        let entries: Vec<Entry> = (0..5000).map(|i| entry(&format!("{i:08x}"))).collect();
        let hashes: Vec<u64> = entries.iter().map(|e| id_hash(&e.id)).collect();
        let t = IdTable::build(&entries, &hashes, |_| panic!("no duplicate"));
        for (i, e) in entries.iter().enumerate() {
            assert_eq!(t.find(&entries, &e.id), Some(i));
        }
        assert_eq!(IdTable::default().find(&entries, "0"), None);
        // A wrongly made table with no empty slot: a miss still ends.
        let full = IdTable::stored(vec![0u64; 8].into());
        assert_eq!(full.find(&entries, "nope"), None);
    }
}
