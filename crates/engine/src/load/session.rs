//! The session model: one compact record per entry, built in one pass over the file.
//!
//! Big content (tool output, images, file writes) is never copied: an entry keeps the byte
//! range of its line and the numbers Pi derives from it (token estimates, usage, tool calls).
//! Anything else is decoded on demand from the line (`Session::entry_value`).

mod ids;
mod line;
mod load;
mod model;
mod proof;
mod stored;

pub use load::appended_only_derivations;
pub use model::Kept;
pub use model::{LoadError, Session};
pub use proof::{LineProof, PROOF_BLOCK, block_crcs};
pub use stored::{ExtraDecoder, IndexError, IndexedParse, frame, unframe};

use crate::load::entry::*;
use serde_json::Value;
use std::ops::Range;

impl Session {
    pub fn line_bytes(&self, idx: usize) -> &[u8] {
        let span = self.entries[idx].span();
        if let Some(p) = &self.proof {
            p.check(&self.buf, span.clone());
        }
        &self.buf[span]
    }

    /// Hold `proof` as the check of every line read from now on (the store, opening a session
    /// from its index).
    pub fn set_proof(&mut self, proof: LineProof) {
        self.proof = Some(std::sync::Arc::new(proof));
    }

    /// Whether a line read from this session failed its index's check: what was read from it
    /// may be another line's bytes, so its reader must parse the file again. `false` for a
    /// session parsed whole.
    pub fn index_failed(&self) -> bool {
        self.proof.as_ref().is_some_and(|p| p.failed())
    }

    /// The check this session's lines pass, for a reader that looks at it after the session
    /// itself is gone (a command's last word).
    pub fn proof(&self) -> Option<std::sync::Arc<LineProof>> {
        self.proof.clone()
    }

    /// Check every line the index vouches for now: `false` when one no longer matches. A
    /// session parsed whole is its file's bytes: `true`.
    pub fn prove_all(&self) -> bool {
        self.proof.as_ref().is_none_or(|p| p.check_all(&self.buf))
    }

    /// The entry's JSON as Pi holds it after migration (ids, roles), decoded on demand.
    pub fn entry_value(&self, idx: usize) -> Value {
        let e = &self.entries[idx];
        let bytes = self.line_bytes(idx);
        let mut v: Value = serde_json::from_slice(bytes)
            .or_else(|_| serde_json::from_str(&String::from_utf8_lossy(bytes)))
            .unwrap_or(Value::Null);
        if self.migrated
            && let Value::Object(m) = &mut v
        {
            if self.ids_synthesized {
                m.insert("id".into(), Value::String(e.id.to_string()));
                m.insert(
                    "parentId".into(),
                    self.parent_id(idx)
                        .map(|p| Value::String(p.to_string()))
                        .unwrap_or(Value::Null),
                );
                if let Kind::Compaction(c) = &e.kind {
                    m.shift_remove("firstKeptEntryIndex");
                    if let Some(fk) = &c.first_kept_entry_id {
                        m.insert("firstKeptEntryId".into(), Value::String(fk.to_string()));
                    }
                }
            }
            if let Some(Value::Object(msg)) = m.get_mut("message")
                && msg.get("role").and_then(|r| r.as_str()) == Some("hookMessage")
            {
                msg.insert("role".into(), Value::String("custom".into()));
            }
        }
        v
    }

    /// What Pi derives from a message of this session, measured now if nobody has yet.
    pub fn measures<'a>(&'a self, m: &'a StoredMessage) -> &'a MessageMeasures {
        m.measures.get_or_init(|| {
            if let Some(stored) = self.stored_records.as_ref().and_then(|t| t.get(m.slot)) {
                return Box::new(stored);
            }
            if let Some(p) = &self.proof {
                p.check(&self.buf, m.line.clone());
            }
            let bytes = &self.buf[m.line.clone()];
            match line::parse_entry(bytes, m.line.clone(), self.header.version < 3.0, false) {
                Ok(line::Parsed::Entry(
                    Entry {
                        kind: Kind::Message(full),
                        ..
                    },
                    _,
                    _,
                )) => full.known_measures().map(|x| Box::new(x.clone())).unwrap_or_default(),
                _ => Box::default(),
            }
        })
    }

    /// Pi's token estimate of `m`: from its measures when taken, else from the index it was
    /// opened from without taking them (a context's projection reads every message's), else
    /// measured now.
    pub fn est_tokens(&self, m: &StoredMessage) -> u64 {
        self.est_tokens_at(m.slot, m.measures.get().map(|b| &**b), || m)
    }

    /// Pi's token estimate of a message entry's message, as [`Session::est_tokens`], without
    /// decoding a message that a session opened from its index has not decoded yet.
    pub fn message_est_tokens(&self, m: &MessageCell) -> u64 {
        self.est_tokens_at(m.slot(), m.known_measures(), || m)
    }

    /// The one lookup behind both: measures `known` already, else the index's record at
    /// `slot`, else `message()` measured now.
    fn est_tokens_at<'a>(
        &'a self,
        slot: u32,
        known: Option<&MessageMeasures>,
        message: impl FnOnce() -> &'a StoredMessage,
    ) -> u64 {
        if let Some(known) = known {
            return known.est_tokens;
        }
        if let Some(t) = self.stored_records.as_ref().and_then(|t| t.est_tokens(slot)) {
            return t;
        }
        self.measures(message()).est_tokens
    }

    /// `f(k, hash)` for each tool call of a message (its place among them, the hash of its id
    /// by [`tool_call_id_hash`]): read in place from the index a session was opened from
    /// while the message is not decoded, else from the message.
    pub fn tool_call_hashes(&self, m: &MessageCell, mut f: impl FnMut(u32, u64)) {
        if !m.is_decoded()
            && let Some(t) = &self.stored_records
        {
            for (k, h) in t.call_hashes(m.slot()).enumerate() {
                f(k as u32, h);
            }
            return;
        }
        for (k, (id, _)) in m.tool_call_ids.iter().enumerate() {
            f(k as u32, tool_call_id_hash(id));
        }
    }

    /// `f` of `m`'s measures: those taken, else those of the index it was opened from,
    /// decoded for `f` and dropped (a cut reads every summarized reply's tool calls once;
    /// keeping them would cost more than reading them again), else measured now and kept.
    pub fn with_measures<R>(&self, m: &StoredMessage, f: impl FnOnce(&MessageMeasures) -> R) -> R {
        self.with_measures_at(m.slot, m.measures.get().map(|b| &**b), || m, f)
    }

    /// [`Session::with_measures`] of a message entry's message, without decoding one that a
    /// session opened from its index has not decoded yet.
    pub fn with_message_measures<R>(&self, m: &MessageCell, f: impl FnOnce(&MessageMeasures) -> R) -> R {
        self.with_measures_at(m.slot(), m.known_measures(), || m, f)
    }

    /// The one lookup behind both (as [`Session::est_tokens_at`]).
    fn with_measures_at<'a, R>(
        &'a self,
        slot: u32,
        known: Option<&MessageMeasures>,
        message: impl FnOnce() -> &'a StoredMessage,
        f: impl FnOnce(&MessageMeasures) -> R,
    ) -> R {
        if let Some(known) = known {
            return f(known);
        }
        match self.stored_records.as_ref().and_then(|t| t.get(slot)) {
            Some(stored) => f(&stored),
            None => f(self.measures(message())),
        }
    }

    /// What Pi derives from entry `idx`, when it is a message.
    pub fn measures_of(&self, idx: usize) -> Option<&MessageMeasures> {
        self.entries[idx].message().map(|m| self.measures(m))
    }

    /// Measure the messages of these entries on every core (before a walk that needs them all);
    /// those whose measures an index holds are left to be read there when asked for.
    pub fn prefetch_measures(&self, idxs: impl IntoIterator<Item = usize>) {
        use rayon::prelude::*;
        // Whether the index holds them is asked of the entry's place, so a message not
        // decoded yet stays so.
        let todo: Vec<&StoredMessage> = idxs
            .into_iter()
            .filter_map(|i| match &self.entries[i].kind {
                Kind::Message(m) => Some(m),
                _ => None,
            })
            .filter(|m| {
                let measured = m.is_decoded() && m.is_measured();
                !measured && !self.stored_records.as_ref().is_some_and(|t| t.holds(m.slot()))
            })
            .map(|m| &**m)
            .collect();
        if todo.len() < 64 {
            todo.iter().for_each(|m| {
                self.measures(m);
            });
        } else {
            todo.par_iter().with_min_len(32).for_each(|m| {
                self.measures(m);
            });
        }
    }

    /// Whether the tool result at `idx` names `nestedCalls` (Pi 1.5.2 tracks those calls'
    /// files): what bonsai's index recorded, else found in its line.
    pub fn names_nested_calls(&self, idx: usize) -> bool {
        let in_line = || memchr::memmem::find(self.line_bytes(idx), b"\"nestedCalls\"").is_some();
        match &self.entries[idx].kind {
            Kind::Message(m) => m.facts().names_nested_calls().unwrap_or_else(in_line),
            _ => in_line(),
        }
    }

    /// How many of its messages are decoded: all of a session parsed from its file; of one
    /// opened from bonsai's index, those something has read beyond their facts.
    pub fn decoded_messages(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(&e.kind, Kind::Message(m) if m.is_decoded()))
            .count()
    }

    /// Pi's `byId`: the last entry with this id.
    pub fn idx_of(&self, id: &str) -> Option<usize> {
        self.by_id.find(&self.entries, id)
    }

    /// Each entry's parent and Pi's `byId` are read in place from bonsai's index (opened
    /// from an unchanged file's), not derived again.
    pub fn derived_in_place(&self) -> bool {
        self.parent_idx.is_in_place() && self.by_id.is_in_place()
    }

    /// The `T` its index kept beside the parse, when opened from an unchanged file's index.
    pub fn kept<T: std::any::Any>(&self) -> Option<&T> {
        self.kept.iter().find_map(|k| k.downcast_ref::<T>())
    }

    pub fn leaf(&self) -> Option<usize> {
        if self.entries.is_empty() {
            None
        } else {
            Some(self.entries.len() - 1)
        }
    }

    /// Entry `idx`'s parentId as its line has it (`None`: none, or an empty one): its
    /// parent's id, or for an orphan or an entry that is its own parent, what it names.
    pub fn parent_id(&self, idx: usize) -> Option<&str> {
        match self.parent_of(idx) {
            Some(p) => Some(&self.entries[p].id),
            None => load::orphan_parent(&self.orphan_parents, idx),
        }
    }

    pub fn parent_of(&self, idx: usize) -> Option<usize> {
        let p = self.parent_idx[idx];
        (p != u32::MAX).then_some(p as usize)
    }

    /// Root→leaf path in linear time. Stops (instead of hanging like Pi) on a cycle.
    ///
    /// Walked twice, to count and then to fill from the end, so the path is one allocation
    /// of its size and no table of visited entries is made: a 437,000-entry session's leaf
    /// path (342,000 entries) was 2.7 MB grown by doubling plus a 437 KB table, on every
    /// call, and fresh memory is what opening a big session spends most of its time on. A
    /// walk longer than the session is a cycle: only then is the table made.
    pub fn path_to(&self, leaf: usize) -> Vec<usize> {
        let n = self.entries.len();
        let mut len = 0usize;
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            len += 1;
            if len > n {
                return self.path_to_through_a_cycle(leaf);
            }
            cur = self.parent_of(i);
        }
        let mut path = vec![0usize; len];
        let mut cur = Some(leaf);
        for slot in path.iter_mut().rev() {
            let Some(i) = cur else { break };
            *slot = i;
            cur = self.parent_of(i);
        }
        path
    }

    /// [`Session::path_to`] when the leaf's ancestors loop: up to the first entry seen twice.
    fn path_to_through_a_cycle(&self, leaf: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen = vec![false; self.entries.len()];
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            if seen[i] {
                break;
            }
            seen[i] = true;
            path.push(i);
            cur = self.parent_of(i);
        }
        path.reverse();
        path
    }

    /// The session name: the latest `session_info` in file order (empty clears it).
    pub fn session_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Say more about the last line when it is unfinished and malformed (the store knows
    /// when it is bonsai's own killed write). Kept when the session is extended.
    /// Give the malformed lines within the bytes `range` a better message (the store knows
    /// when they are a write of bonsai's that was cut short).
    pub fn explain_malformed_in(&mut self, range: Range<usize>, message: String) {
        let Some(before) = self.buf.get(..range.start.min(self.buf.len())) else {
            return;
        };
        let first = memchr::memchr_iter(b'\n', before).count() as u32 + 1;
        let within = &self.buf[range.start.min(self.buf.len())..range.end.min(self.buf.len())];
        let last = first + memchr::memchr_iter(b'\n', within.strip_suffix(b"\n").unwrap_or(within)).count() as u32;
        for d in self.line_diagnostics.iter_mut().chain(self.diagnostics.iter_mut()) {
            if (first..=last).contains(&d.line) && d.kind == DiagnosticKind::MalformedLine {
                d.message = message.clone();
            }
        }
    }

    /// This session read as `pi`.
    pub fn read_as(mut self, pi: crate::load::pi_version::PiVersion) -> Session {
        self.pi = pi;
        self
    }

    pub fn label_of(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|(l, _)| &**l)
    }
}

/// What Pi derives from a message given as JSON text (one that is not an entry's own, such as
/// a replacement's content wrapped as a message).
pub fn measure_message_json(raw: &str) -> Option<MessageMeasures> {
    line::message_from_raw(raw, false).and_then(|m| m.measures.into_inner().map(|b| *b))
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn record_sizes_stay_small() {
        // One per entry: 4.4 million at 10 GB, where fresh memory is most of opening it
        // from the index. 64 bytes with its id inline (it was 112 with two ids of 8 bytes or
        // more on the heap beside it): the parentId is resolved into `parent_idx`, the id
        // is a 16-byte string, the line's range a start and a 32-bit length, a message's
        // cell is three words whose role code leaves room for `Kind`'s tag, rare kinds are
        // boxed.
        assert!(
            std::mem::size_of::<super::Entry>() <= 64,
            "Entry {}",
            std::mem::size_of::<super::Entry>()
        );
        eprintln!(
            "Entry {} StoredMessage {} ContentStats {}",
            std::mem::size_of::<super::Entry>(),
            std::mem::size_of::<super::StoredMessage>(),
            std::mem::size_of::<super::ContentStats>()
        );
    }
}

#[cfg(test)]
mod path_tests {
    use super::Session;

    /// The counted walk gives every entry the path the walk with a visited table gives, in
    /// a cycle (the fallback) and out of one.
    #[test]
    fn the_counted_path_is_the_walked_one() {
        for bytes in [
            &include_bytes!("../../../../fixtures/bad/cycle.jsonl")[..],
            &include_bytes!("../../../../fixtures/bad/duplicate-id-cycle.jsonl")[..],
            &include_bytes!("../../../../fixtures/pi-0.87.1/tour.jsonl")[..],
        ] {
            let s = Session::from_bytes(bytes.to_vec()).unwrap();
            assert!(!s.entries.is_empty());
            for i in 0..s.entries.len() {
                assert_eq!(s.path_to(i), s.path_to_through_a_cycle(i), "entry {i}");
            }
        }
    }
}

#[cfg(test)]
mod parent_id_tests {
    use super::Session;

    fn line(id: &str, parent: Option<&str>) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"hi"}}}}"#
        )
    }

    /// An entry's parentId reads as its line has it, whether the parent resolved (then it is
    /// the parent's id), is missing, is the entry itself, or is none at all; and an extension
    /// keeps reading the earlier ones so.
    #[test]
    fn parent_ids_read_as_their_lines_have_them() {
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;
        let first = [
            header.to_string(),
            line("a", None),
            line("b", Some("a")),
            line("c", Some("gone")),
            line("d", Some("d")),
            line("e", Some("")),
        ]
        .join("\n")
            + "\n";
        let s = Session::from_bytes(first.clone().into_bytes()).unwrap();
        let ids: Vec<Option<&str>> = (0..s.entries.len()).map(|i| s.parent_id(i)).collect();
        assert_eq!(ids, [None, Some("a"), Some("gone"), Some("d"), None]);
        assert_eq!(s.parent_of(2), None, "a missing parent is no entry");
        let grown = first + &line("f", Some("c")) + "\n" + &line("g", Some("nowhere")) + "\n";
        let x = s.extend(grown.into_bytes().into()).unwrap();
        let ids: Vec<Option<&str>> = (0..x.entries.len()).map(|i| x.parent_id(i)).collect();
        assert_eq!(
            ids,
            [
                None,
                Some("a"),
                Some("gone"),
                Some("d"),
                None,
                Some("c"),
                Some("nowhere")
            ]
        );
        assert_eq!(x.parent_of(5), Some(2));
    }
}
