//! Loading, in named phases: split the bytes into lines and parse them block by block
//! ([`parse_lines`]), keep the entries in file order ([`assemble`]), give v1 entries Pi's ids
//! ([`migrate_v1`]), then index them ([`Index::build`], [`resolve_parents`]) and report what
//! Pi would show oddly ([`check_structure`]).
//!
//! A session that grew by appended lines (Pi writing, or bonsai's own write) is extended
//! instead of parsed again ([`Session::extend`]): only the new lines are parsed; the indexes,
//! which are cheap next to parsing, are rebuilt over all entries.

use super::ids::IdTable;
use super::ids::id_hash;
use super::line::{Parsed, describe_json_error, is_blank, parse_entry, parse_header};
use super::model::{LoadError, Session};
use crate::load::bytes::FileBytes;
use crate::load::entry::*;
use crate::load::js;
use crate::load::table::Table;
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;

/// UTF-8's byte order mark, which some editors put before the first line.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Bytes of a big file parsed per block before its pages are handed back.
const LOAD_BLOCK: usize = 16 << 20;

/// Every line from some offset on: the header (if it was still to be found), each line's
/// parse, and the malformed lines met before the header.
struct ParsedLines {
    header: Option<Header>,
    lines: Vec<(u32, Result<Parsed, super::line::LineError>)>,
    diagnostics: Vec<Diagnostic>,
    any_text: bool,
    /// Lines of the whole buffer up to its end (a last line without a newline counts).
    line_count: u32,
}

/// The header line, checked as Pi checks it: a JSON object of type `session` with a string id.
pub(super) fn read_header(v: serde_json::Value, line: u32) -> Result<Header, LoadError> {
    let ok = v.get("type").and_then(|t| t.as_str()) == Some("session") && v.get("id").is_some_and(|x| x.is_string());
    if !ok {
        let reason = if !v.is_object() {
            "it is not a JSON object".to_string()
        } else if v.get("type").and_then(|t| t.as_str()) != Some("session") {
            format!(
                "its type is {}",
                v.get("type").map(|t| t.to_string()).unwrap_or_else(|| "missing".into())
            )
        } else {
            "it has no string `id`".into()
        };
        return Err(LoadError::NotASession { line, reason });
    }
    Ok(Header {
        version: v.get("version").and_then(js::value_to_f64).unwrap_or(1.0),
        id: v["id"].as_str().unwrap_or_default().to_string(),
        cwd: v.get("cwd").and_then(|c| c.as_str()).map(String::from),
        parent_session: v.get("parentSession").and_then(|c| c.as_str()).map(String::from),
        raw: v,
        line,
    })
}

/// Phase 1: the lines of `buf[from..]` (the first one numbered `first_line`), parsed on all
/// cores. While `header` is unknown, the first line that parses must be it (Pi skips blank and
/// malformed lines before it).
///
/// A big file is read in blocks of whole lines; each block is split and parsed, then its
/// pages are handed back (the entries keep byte ranges, and a line read later maps its page
/// again), so a load never holds the whole file resident. Preparing the next block and handing
/// back the last one run beside the parse, so no core waits on them.
fn parse_lines(
    buf: &FileBytes,
    from: usize,
    first_line: u32,
    header: Option<&Header>,
    quick: bool,
    progress: Option<&(dyn Fn(usize) + Sync)>,
) -> Result<ParsedLines, LoadError> {
    let mut out = ParsedLines {
        header: None,
        lines: Vec::new(),
        diagnostics: Vec::new(),
        any_text: false,
        line_count: 0,
    };
    let block_from = |pos: usize| -> Range<usize> {
        match memchr::memchr(b'\n', buf.get(pos + LOAD_BLOCK..).unwrap_or(&[])) {
            Some(k) => pos..pos + LOAD_BLOCK + k + 1,
            None => pos..buf.len(),
        }
    };
    let prepare = |r: Range<usize>| {
        buf.will_read(r.clone());
        let spans = line_ranges(&buf[r.clone()], r.start);
        (r, spans)
    };
    let mut next = (from < buf.len()).then(|| prepare(block_from(from)));
    // Room for every line at the first block's density, so the list is not copied as it
    // grows (each copy also touches fresh pages).
    if let Some((r, spans)) = &next {
        let rest = buf.len() - from;
        let estimate = (spans.len() as f64 * rest as f64 / r.len().max(1) as f64 * 1.05) as usize;
        out.lines.reserve(estimate.min(rest / 8 + 16));
    }
    let mut v2_hook = header.map(|h| h.version < 3.0);
    let mut lines_before = first_line as usize - 1;
    let mut parsed_block: Option<Range<usize>> = None;
    while let Some((range, spans)) = next.take() {
        let mut body_from = 0;
        if v2_hook.is_none() {
            body_from = spans.len();
            for (i, sp) in spans.iter().enumerate() {
                let ln = (lines_before + i) as u32 + 1;
                let bytes = &buf[sp.clone()];
                if is_blank(bytes) {
                    continue;
                }
                out.any_text = true;
                match parse_header(bytes) {
                    Ok(v) => {
                        let bom_first = out.diagnostics.first().is_some_and(|d| d.line == 1) && buf.starts_with(BOM);
                        let h = read_header(v, ln).map_err(|e| if bom_first { LoadError::ByteOrderMark } else { e })?;
                        v2_hook = Some(h.version < 3.0);
                        out.header = Some(h);
                        body_from = i + 1;
                        break;
                    }
                    Err(e) => out.diagnostics.push(Diagnostic {
                        line: ln,
                        kind: DiagnosticKind::MalformedLine,
                        message: describe_json_error(bytes, &e),
                    }),
                }
            }
        }
        let following = (range.end < buf.len()).then(|| block_from(range.end));
        let done = parsed_block.take();
        let side = || {
            if let Some(d) = done {
                buf.done_with(d);
            }
            following.map(prepare)
        };
        if let Some(v2_hook) = v2_hook {
            let base = lines_before + body_from;
            // Indexed all the way (blank lines become `Blank`), so rayon writes straight into
            // the one list.
            let (n, ()) = rayon::join(side, || {
                out.lines.par_extend(
                    spans[body_from..]
                        .par_iter()
                        .with_min_len(256)
                        .enumerate()
                        .map(|(k, sp)| {
                            let ln = (base + k) as u32 + 1;
                            if is_blank(&buf[sp.clone()]) {
                                return (ln, Ok(Parsed::Blank));
                            }
                            let mut r = parse_entry(&buf[sp.clone()], sp.clone(), v2_hook, quick);
                            if let Ok(Parsed::Entry(e, _, _)) = &mut r {
                                e.line = ln;
                            }
                            (ln, r)
                        }),
                );
            });
            next = n;
        } else {
            next = side();
        }
        lines_before += spans.len();
        if let Some(p) = progress {
            p(range.end);
        }
        parsed_block = Some(range);
    }
    if let Some(d) = parsed_block {
        buf.done_with(d);
    }
    out.line_count = lines_before as u32;
    Ok(out)
}

/// What phase 2 keeps: the entries in file order, and for v1 files the compactions whose
/// first kept entry is still a line position.
struct Assembled {
    entries: Vec<Entry>,
    /// Each entry's parentId (kept apart from the entries: only phases 5 and 6 read them).
    parents: Vec<Option<EntryId>>,
    v1_first_kept: Vec<(usize, usize)>,
}

/// Phase 2: entries in file order; blank lines dropped, malformed ones reported. `kept` is
/// how many entries come before these (for v1 positions).
fn assemble(
    lines: Vec<(u32, Result<Parsed, super::line::LineError>)>,
    v1: bool,
    kept_before: usize,
    diagnostics: &mut Vec<Diagnostic>,
) -> Assembled {
    let mut v1_first_kept = Vec::new();
    let mut parents = Vec::new();
    let mut kept = kept_before;
    // Assembled in place: the parsed list's memory becomes the entry list (fresh pages are a
    // real cost on a big load).
    let entries = lines
        .into_iter()
        .filter_map(|(ln, result)| match result {
            Ok(Parsed::Entry(e, parent, fk_index)) => {
                if v1 {
                    if let Some(n) = fk_index {
                        v1_first_kept.push((kept, n));
                    }
                } else if e.id.is_empty() {
                    diagnostics.push(Diagnostic {
                        line: ln,
                        kind: DiagnosticKind::MalformedLine,
                        message: format!(
                            "`{}` entry has no string `id`; Pi cannot link it into the tree",
                            e.kind.type_name()
                        ),
                    });
                    return None;
                }
                kept += 1;
                parents.push(parent);
                Some(e)
            }
            Ok(Parsed::Blank) => None,
            Ok(Parsed::ExtraHeader) => {
                diagnostics.push(Diagnostic {
                    line: ln,
                    kind: DiagnosticKind::Suspicious,
                    message: "a second `session` header; Pi ignores it".into(),
                });
                None
            }
            Err(e) => {
                diagnostics.push(Diagnostic {
                    line: ln,
                    kind: DiagnosticKind::MalformedLine,
                    message: e.to_string(),
                });
                None
            }
        })
        .collect();
    Assembled {
        entries,
        parents,
        v1_first_kept,
    }
}

/// Phase 3 (v1 files): Pi's v1→v2 migration gives each entry a fresh id, chained in file
/// order. We use the oracle's deterministic counter so ids are stable from load to load, and
/// resolve compactions' first kept line positions to those ids.
fn migrate_v1(entries: &mut [Entry], parents: &mut [Option<EntryId>], v1_first_kept: Vec<(usize, usize)>) {
    let mut prev: Option<EntryId> = None;
    for (i, (e, parent)) in entries.iter_mut().zip(parents.iter_mut()).enumerate() {
        let id = ecow::eco_format!("{:08x}", i + 1);
        e.id = id.clone();
        *parent = prev.replace(id);
    }
    for (ei, n) in v1_first_kept {
        // `n` indexes the parsed lines with the header at 0.
        if n >= 1
            && let Some(target) = entries.get(n - 1).map(|t| t.id.clone())
            && let Kind::Compaction(c) = &mut entries[ei].kind
        {
            c.first_kept_entry_id = Some(target.as_str().into());
        }
    }
}

/// Phase 4: Pi's `byId` (the last entry with each id wins), the resolved labels, and the
/// session name.
pub(super) struct Index {
    pub by_id: IdTable,
    pub labels: HashMap<Box<str>, (Box<str>, u32)>,
    pub has_duplicate_ids: bool,
    pub name: Option<Box<str>>,
}

impl Index {
    fn build(entries: &[Entry], diagnostics: &mut Vec<Diagnostic>) -> Index {
        let mut labels: HashMap<Box<str>, (Box<str>, u32)> = HashMap::new();
        let mut has_duplicate_ids = false;
        let by_id = IdTable::build(entries, &id_hashes(entries), |i| {
            has_duplicate_ids = true;
            diagnostics.push(Diagnostic {
                line: entries[i].line,
                kind: DiagnosticKind::Suspicious,
                message: format!("duplicate id {}: Pi uses this later entry for the id", entries[i].id),
            });
        });
        for (i, e) in entries.iter().enumerate() {
            apply_label(&mut labels, i, e);
        }
        let name = latest_name(entries).flatten();
        Index {
            by_id,
            labels,
            has_duplicate_ids,
            name,
        }
    }
}

/// A label entry's effect on the labels by target id (an empty label removes one).
fn apply_label(labels: &mut HashMap<Box<str>, (Box<str>, u32)>, i: usize, e: &Entry) {
    if let Kind::Label(l) = &e.kind
        && let Some(t) = &l.target_id
    {
        let label = &l.label;
        match label {
            Some(l) if !l.is_empty() => {
                labels.insert(t.clone(), (l.clone(), i as u32));
            }
            _ => {
                labels.remove(t);
            }
        }
    }
}

/// The name the latest `session_info` in file order gives (an empty name clears it: `Some(None)`);
/// `None` without any.
fn latest_name(entries: &[Entry]) -> Option<Option<Box<str>>> {
    entries.iter().rev().find_map(|e| match &e.kind {
        Kind::SessionInfo { name } => Some(
            name.as_deref()
                .map(js::js_trim)
                .filter(|n| !n.is_empty())
                .map(Box::from),
        ),
        _ => None,
    })
}

/// Phases 4–6 as a session's index keeps them: what they made of the entries, so a session
/// opened from an index of its unchanged file derives nothing again. Its two tables (each
/// entry's parent, `byId`) are kept apart from the rest, read in place ([`DerivedTables`]).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Derived {
    /// Every diagnostic (the lines', then phases 4–6's), in line order.
    pub diagnostics: Vec<Diagnostic>,
    pub labels: Vec<(Box<str>, Box<str>, u32)>,
    pub has_duplicate_ids: bool,
    pub name: Option<Box<str>>,
    /// `Session::orphan_parents`.
    pub orphan_parents: Vec<(u32, EntryId)>,
}

/// The two tables of phases 4–6 (each entry's parent, Pi's `byId`), as an index keeps them
/// (checked: every parent an entry other than its own, every slot empty or an entry).
#[derive(Debug)]
pub(super) struct DerivedTables {
    pub parent_idx: Table<u32>,
    pub by_id: IdTable,
}

/// What phases 4–6 make of a session's entries (see [`Derived`], how an index keeps them).
struct Phases {
    by_id: IdTable,
    parent_idx: Table<u32>,
    orphan_parents: Vec<(u32, EntryId)>,
    diagnostics: Vec<Diagnostic>,
    labels: HashMap<Box<str>, (Box<str>, u32)>,
    has_duplicate_ids: bool,
    name: Option<Box<str>>,
}

thread_local! {
    /// How many extensions on this thread derived only their appended entries (for tests).
    static APPENDED_ONLY: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many sessions extended from an index on this thread derived only their appended
/// entries (tests check the quick way is taken, not only that its result is right).
#[doc(hidden)]
pub fn appended_only_derivations() -> usize {
    APPENDED_ONLY.with(|n| n.get())
}

/// Phases 4–6 of `entries` when those up to `d`'s (and `t`'s) are the entries of lines up to
/// `old_lines` and the rest were appended: only the appended are derived, the same as all of
/// them would be. `Err` when an appended entry changes what the earlier ones derive (it takes
/// over an id, or is the missing parent of an earlier entry): then it holds the earlier
/// entries' parentIds, for deriving them all. `added_parents`: the appended entries'
/// parentIds; `line_diagnostics`: every line's, the appended lines' among them.
fn appended_phases(
    entries: &[Entry],
    added_parents: &[Option<EntryId>],
    line_diagnostics: &[Diagnostic],
    old_lines: u32,
    d: Derived,
    t: DerivedTables,
) -> Result<Phases, Vec<Option<EntryId>>> {
    let from = t.parent_idx.len();
    let added = &entries[from..];
    let earlier_parents = |parent_idx: &[u32]| parents_of(&entries[..from], parent_idx, &d.orphan_parents);
    // The parents earlier entries miss: an appended entry with one of these ids is found by
    // them now.
    let missing: std::collections::HashSet<&str> = d
        .orphan_parents
        .iter()
        .filter(|(i, p)| entries.get(*i as usize).is_some_and(|e| e.id != *p))
        .map(|(_, p)| p.as_str())
        .collect();
    if added.iter().any(|e| missing.contains(&*e.id)) {
        return Err(earlier_parents(&t.parent_idx));
    }
    let DerivedTables { parent_idx, by_id } = t;
    let Some(by_id) = by_id.appended(entries, from) else {
        return Err(earlier_parents(&parent_idx));
    };
    let mut parent_idx = parent_idx;
    parent_idx
        .to_mut()
        .extend(resolve_parents(added, added_parents, |p| by_id.find(entries, p)));
    let mut orphan_parents = d.orphan_parents;
    orphan_parents.extend(orphans(added_parents, &parent_idx[from..], from));
    // The earlier lines' diagnostics as derived (without the unsettled line's, read again),
    // then the appended lines', then what phase 6 finds of the appended entries: in line order,
    // as a whole derivation orders them.
    let mut diagnostics = d.diagnostics;
    diagnostics.retain(|x| x.line <= old_lines);
    let mut new: Vec<Diagnostic> = line_diagnostics
        .iter()
        .filter(|x| x.line > old_lines)
        .cloned()
        .collect();
    new.sort_by_key(|x| x.line);
    check_structure_from(entries, added_parents, &parent_idx, from, &mut new);
    new.sort_by_key(|x| x.line);
    diagnostics.extend(new);
    let mut labels: HashMap<Box<str>, (Box<str>, u32)> = d.labels.into_iter().map(|(k, l, i)| (k, (l, i))).collect();
    for (i, e) in added.iter().enumerate() {
        apply_label(&mut labels, from + i, e);
    }
    APPENDED_ONLY.with(|n| n.set(n.get() + 1));
    Ok(Phases {
        by_id,
        parent_idx,
        orphan_parents,
        diagnostics,
        labels,
        has_duplicate_ids: d.has_duplicate_ids,
        name: latest_name(added).unwrap_or(d.name),
    })
}

/// Each entry's id hashed, on every core.
fn id_hashes(entries: &[Entry]) -> Vec<u64> {
    entries.par_iter().with_min_len(4096).map(|e| id_hash(&e.id)).collect()
}

/// Phase 5: each entry's parent as an index (`u32::MAX`: a root). A self-parent is a root
/// (Pi's getTree); Pi's own path walk would loop on it.
/// `entries` and `parents` side by side; `find`: Pi's `byId`.
fn resolve_parents(
    entries: &[Entry],
    parents: &[Option<EntryId>],
    find: impl Fn(&str) -> Option<usize> + Sync,
) -> Vec<u32> {
    entries
        .par_iter()
        .zip(parents)
        .with_min_len(4096)
        .map(|(e, p)| {
            p.as_deref()
                .filter(|p| *p != &*e.id)
                .and_then(&find)
                .map_or(u32::MAX, |j| j as u32)
        })
        .collect()
}

/// The parentIds that `parent_idx` does not resolve (see `Session::orphan_parents`), of the
/// entries from `from` on.
fn orphans(parents: &[Option<EntryId>], parent_idx: &[u32], from: usize) -> Vec<(u32, EntryId)> {
    parents
        .iter()
        .zip(parent_idx)
        .enumerate()
        .filter_map(|(k, (p, &j))| match p {
            Some(p) if j == u32::MAX => Some(((from + k) as u32, p.clone())),
            _ => None,
        })
        .collect()
}

/// Entry `idx`'s parentId among `orphans` (sorted by entry).
pub(super) fn orphan_parent(orphans: &[(u32, EntryId)], idx: usize) -> Option<&str> {
    let k = orphans.binary_search_by_key(&idx, |(i, _)| *i as usize).ok()?;
    Some(orphans[k].1.as_str())
}

/// Every entry's parentId again, from what phase 5 made of them (a derivation of them all
/// needs them; an entry's resolved parent has its parentId as id).
fn parents_of(entries: &[Entry], parent_idx: &[u32], orphans: &[(u32, EntryId)]) -> Vec<Option<EntryId>> {
    (0..entries.len())
        .map(|i| match parent_idx.get(i) {
            Some(&p) if p != u32::MAX => entries.get(p as usize).map(|e| e.id.clone()),
            _ => orphan_parent(orphans, i).map(EntryId::from),
        })
        .collect()
}

/// Phase 6: orphans, self-parents and cycles, which Pi shows as extra roots or hangs on.
fn check_structure(
    entries: &[Entry],
    parents: &[Option<EntryId>],
    parent_idx: &[u32],
    diagnostics: &mut Vec<Diagnostic>,
) {
    check_structure_from(entries, parents, parent_idx, 0, diagnostics)
}

/// [`check_structure`] of the entries from `from` on, those before it checked already with
/// these very parents (a walk that reaches one of them ends there: no cycle through them can
/// reach a later entry).
/// `parents`: the parentIds of the entries from `from` on.
fn check_structure_from(
    entries: &[Entry],
    parents: &[Option<EntryId>],
    parent_idx: &[u32],
    from: usize,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let n = entries.len();
    for ((i, e), parent) in entries.iter().enumerate().skip(from).zip(parents) {
        match parent.as_deref() {
            Some(p) if p == &*e.id => diagnostics.push(Diagnostic {
                line: e.line,
                kind: DiagnosticKind::Suspicious,
                message: format!("entry {} is its own parent: Pi shows it as a root", e.id),
            }),
            Some(p) if parent_idx[i] == u32::MAX => diagnostics.push(Diagnostic {
                line: e.line,
                kind: DiagnosticKind::Suspicious,
                message: format!(
                    "entry {} has a missing parent {}: Pi shows it as an extra root",
                    e.id, p
                ),
            }),
            _ => {}
        }
        if let Kind::Unknown(t) = &e.kind
            && (t.is_empty() || &**t == "undefined")
        {
            let what = if t.is_empty() { "an empty `type`" } else { "no `type`" };
            diagnostics.push(Diagnostic {
                line: e.line,
                kind: DiagnosticKind::Suspicious,
                message: format!(
                    "entry {} has {what}: Pi keeps it in the tree as a blank row and leaves it out of the context",
                    e.id
                ),
            });
        }
    }
    // Cycles through resolved parents. state: 0 unknown, 1 on the current walk, 2 done.
    let mut state = vec![0u8; n];
    state[..from.min(n)].fill(2);
    let mut stack = Vec::new();
    for i in from..n {
        if state[i] != 0 {
            continue;
        }
        let mut cur = i;
        loop {
            state[cur] = 1;
            stack.push(cur);
            let p = parent_idx[cur];
            if p == u32::MAX {
                break;
            }
            let p = p as usize;
            match state[p] {
                0 => cur = p,
                1 => {
                    diagnostics.push(Diagnostic {
                        line: entries[p].line,
                        kind: DiagnosticKind::Suspicious,
                        message: format!(
                            "entry {} is part of a parent cycle: Pi would hang walking its path",
                            entries[p].id
                        ),
                    });
                    break;
                }
                _ => break,
            }
        }
        for j in stack.drain(..) {
            state[j] = 2;
        }
    }
}

/// Where the settled part of `buf` ends (just past its last newline) and its line count, from
/// the count of all its lines. A last line without a newline may still be growing (Pi writes
/// a line in one append, but a reader can see half of it). Only the tail is searched.
fn settled(buf: &[u8], line_count: u32) -> (usize, u32) {
    if buf.last() == Some(&b'\n') || buf.is_empty() {
        return (buf.len(), line_count);
    }
    let len = memchr::memrchr(b'\n', buf).map(|k| k + 1).unwrap_or(0);
    (len, line_count.saturating_sub(1))
}

impl Session {
    /// Parse a whole file. Lines are split on `\n` like Pi; blank and malformed lines are
    /// skipped and reported with their line numbers.
    pub fn from_bytes(buf: impl Into<FileBytes>) -> Result<Session, LoadError> {
        Session::from_bytes_with(buf.into(), true)
    }

    /// `quick: false` reads every line with the full serde pass (tests compare the two).
    #[doc(hidden)]
    pub fn from_bytes_with(buf: FileBytes, quick: bool) -> Result<Session, LoadError> {
        Session::from_bytes_progress(buf, quick, None)
    }

    /// [`Session::from_bytes`], telling `progress` how many bytes are parsed after each block
    /// (a big file's loading frame shows how far it is).
    pub fn from_bytes_progress(
        buf: FileBytes,
        quick: bool,
        progress: Option<&(dyn Fn(usize) + Sync)>,
    ) -> Result<Session, LoadError> {
        let parsed = parse_lines(&buf, 0, 1, None, quick, progress)?;
        let (settled_len, settled_lines) = settled(&buf, parsed.line_count);
        let any_text = parsed.any_text;
        let mut line_diagnostics = parsed.diagnostics;
        let Some(header) = parsed.header else {
            return Err(if !any_text {
                LoadError::Empty
            } else if buf.starts_with(BOM) {
                LoadError::ByteOrderMark
            } else {
                LoadError::NotASession {
                    line: 1,
                    reason: "no line parses as JSON".into(),
                }
            });
        };
        let v1 = header.version < 2.0;
        let Assembled {
            mut entries,
            mut parents,
            v1_first_kept,
        } = assemble(parsed.lines, v1, 0, &mut line_diagnostics);
        if v1 {
            migrate_v1(&mut entries, &mut parents, v1_first_kept);
        }
        Ok(Session::index(
            buf,
            header,
            entries,
            parents,
            line_diagnostics,
            settled_len,
            settled_lines,
        ))
    }

    /// This session after lines were appended to its file: `buf` is the whole file now, and
    /// its first bytes are this session's. Only the new lines are parsed (and a last line that
    /// had no newline yet, which may have grown). A v1 file, or bytes that do not continue
    /// this session's, are parsed whole.
    pub fn extend(self, buf: FileBytes) -> Result<Session, LoadError> {
        let pi = self.pi;
        if !self.continues_into(&buf) {
            return Session::from_bytes(buf).map(|s| s.read_as(pi));
        }
        let derived = self.derived();
        let Session {
            header,
            entries,
            line_diagnostics,
            settled_len,
            settled_lines,
            stored_records,
            parent_idx,
            by_id,
            proof,
            ..
        } = self;
        // Only the appended entries are derived (where that gives the same as all).
        let derived = (derived, DerivedTables { parent_idx, by_id });
        Session::extend_parts(
            buf,
            header,
            entries,
            line_diagnostics,
            settled_len,
            settled_lines,
            derived,
        )
        .map(|mut s| {
            s.stored_records = stored_records;
            s.proof = proof;
            s.read_as(pi)
        })
    }

    /// [`Session::extend`] keeping this session (its entries are copied): a background reload
    /// while the UI still shows this one.
    pub fn extended(&self, buf: FileBytes) -> Result<Session, LoadError> {
        if !self.continues_into(&buf) {
            return Session::from_bytes(buf).map(|s| s.read_as(self.pi));
        }
        Session::extend_parts(
            buf,
            self.header.clone(),
            self.entries.clone(),
            self.line_diagnostics.clone(),
            self.settled_len,
            self.settled_lines,
            (
                self.derived(),
                DerivedTables {
                    parent_idx: self.parent_idx.clone(),
                    by_id: self.by_id.clone(),
                },
            ),
        )
        .map(|mut s| {
            s.stored_records = self.stored_records.clone();
            s.proof = self.proof.clone();
            s.read_as(self.pi)
        })
    }

    /// Whether `buf` is this session's bytes with lines appended, as far as can be told
    /// without reading them all: as long at least, and a newline where the settled part ends.
    pub fn continues_into(&self, buf: &[u8]) -> bool {
        !self.ids_synthesized
            && buf.len() >= self.buf.len()
            && self.settled_lines >= self.header.line
            && (self.settled_len == 0 || buf.get(self.settled_len - 1) == Some(&b'\n'))
    }

    /// `derived`: what an index derived of these very `entries` (phases 4–6), so only the
    /// appended entries are derived where that gives the same (see [`Session::index_appended`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn extend_parts(
        buf: FileBytes,
        header: Header,
        mut entries: Vec<Entry>,
        mut line_diagnostics: Vec<Diagnostic>,
        settled_len: usize,
        settled_lines: u32,
        (d, t): (Derived, DerivedTables),
    ) -> Result<Session, LoadError> {
        // The unsettled last line is read again with what followed it (its entry, if it had
        // become one, is the last).
        let before = entries.len();
        let kept = entries
            .iter()
            .rposition(|e| e.line <= settled_lines)
            .map_or(0, |k| k + 1);
        // What was derived is of every entry kept (none was the unsettled line's); otherwise
        // they are all derived again, from their parentIds as derived (read before the
        // unsettled line's entry goes: an earlier entry may name it).
        let derived = if kept == before && t.parent_idx.len() == before {
            Ok((d, t))
        } else {
            Err(parents_of(&entries, &t.parent_idx, &d.orphan_parents))
        };
        entries.truncate(kept);
        line_diagnostics.retain(|d| d.line <= settled_lines);
        let old_lines = settled_lines;
        let parsed = parse_lines(&buf, settled_len, settled_lines + 1, Some(&header), true, None)?;
        let (settled_len, settled_lines) = settled(&buf, parsed.line_count);
        line_diagnostics.extend(parsed.diagnostics);
        let appended = assemble(parsed.lines, false, kept, &mut line_diagnostics);
        entries.extend(appended.entries);
        let phases =
            derived.and_then(|(d, t)| appended_phases(&entries, &appended.parents, &line_diagnostics, old_lines, d, t));
        line_diagnostics.sort_by_key(|d| d.line);
        Ok(match phases {
            Ok(phases) => Session::assemble(
                buf,
                header,
                entries,
                line_diagnostics,
                (settled_len, settled_lines),
                phases,
            ),
            Err(mut parents) => {
                parents.truncate(kept);
                parents.extend(appended.parents);
                Session::index(
                    buf,
                    header,
                    entries,
                    parents,
                    line_diagnostics,
                    settled_len,
                    settled_lines,
                )
            }
        })
    }

    /// Phases 4–6 over the entries: everything derived from them as a whole.
    /// What phases 4–6 made of this session's entries, for its index.
    pub(super) fn derived(&self) -> Derived {
        let mut labels: Vec<_> = self
            .labels
            .iter()
            .map(|(k, (l, i))| (k.clone(), l.clone(), *i))
            .collect();
        labels.sort();
        Derived {
            diagnostics: self.diagnostics.clone(),
            labels,
            has_duplicate_ids: self.has_duplicate_ids,
            name: self.name.clone(),
            orphan_parents: self.orphan_parents.clone(),
        }
    }

    /// [`Session::index`] with phases 4–6 as an index of these very entries kept them
    /// (its tables checked to be of as many entries): nothing is derived again.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn index_derived(
        buf: FileBytes,
        header: Header,
        entries: Vec<Entry>,
        line_diagnostics: Vec<Diagnostic>,
        settled_len: usize,
        settled_lines: u32,
        derived: Derived,
        tables: DerivedTables,
    ) -> Session {
        let phases = Phases {
            by_id: tables.by_id,
            parent_idx: tables.parent_idx,
            orphan_parents: derived.orphan_parents,
            diagnostics: derived.diagnostics,
            labels: derived.labels.into_iter().map(|(k, l, i)| (k, (l, i))).collect(),
            has_duplicate_ids: derived.has_duplicate_ids,
            name: derived.name,
        };
        Session::assemble(
            buf,
            header,
            entries,
            line_diagnostics,
            (settled_len, settled_lines),
            phases,
        )
    }

    pub(super) fn index(
        buf: FileBytes,
        header: Header,
        entries: Vec<Entry>,
        parents: Vec<Option<EntryId>>,
        mut line_diagnostics: Vec<Diagnostic>,
        settled_len: usize,
        settled_lines: u32,
    ) -> Session {
        line_diagnostics.sort_by_key(|d| d.line);
        let mut diagnostics = line_diagnostics.clone();
        let index = Index::build(&entries, &mut diagnostics);
        let parent_idx = resolve_parents(&entries, &parents, |p| index.by_id.find(&entries, p));
        check_structure(&entries, &parents, &parent_idx, &mut diagnostics);
        let orphan_parents = orphans(&parents, &parent_idx, 0);
        drop(parents);
        let parent_idx = parent_idx.into();
        diagnostics.sort_by_key(|d| d.line);
        let phases = Phases {
            by_id: index.by_id,
            parent_idx,
            orphan_parents,
            diagnostics,
            labels: index.labels,
            has_duplicate_ids: index.has_duplicate_ids,
            name: index.name,
        };
        Session::assemble(
            buf,
            header,
            entries,
            line_diagnostics,
            (settled_len, settled_lines),
            phases,
        )
    }

    /// The session of these entries and what phases 4–6 made of them.
    fn assemble(
        buf: FileBytes,
        header: Header,
        entries: Vec<Entry>,
        line_diagnostics: Vec<Diagnostic>,
        (settled_len, settled_lines): (usize, u32),
        phases: Phases,
    ) -> Session {
        let skipped_lines = line_diagnostics
            .iter()
            .filter(|d| d.kind == DiagnosticKind::MalformedLine)
            .count();
        let version = header.version;
        Session {
            file_ends_with_newline: buf.last() == Some(&b'\n') || buf.is_empty(),
            buf,
            name: phases.name,
            parent_idx: phases.parent_idx,
            orphan_parents: phases.orphan_parents,
            entries,
            diagnostics: phases.diagnostics,
            line_diagnostics,
            by_id: phases.by_id,
            labels: phases.labels,
            migrated: version < 3.0,
            ids_synthesized: version < 2.0,
            skipped_lines,
            has_duplicate_ids: phases.has_duplicate_ids,
            settled_len,
            settled_lines,
            header,
            pi: Default::default(),
            stored_records: None,
            kept: Vec::new(),
            proof: None,
        }
    }
}

/// Byte ranges of the lines, split on `\n` like Pi (a final newline ends the last line).
/// Large files are split in two at a newline and scanned on two cores.
pub(super) fn line_ranges(buf: &[u8], base: usize) -> Vec<Range<usize>> {
    fn scan(part: &[u8], base: usize) -> Vec<Range<usize>> {
        let mut out = Vec::with_capacity(part.len() / 2048 + 16);
        let mut start = 0usize;
        for nl in memchr::memchr_iter(b'\n', part) {
            out.push(base + start..base + nl);
            start = nl + 1;
        }
        if start < part.len() {
            out.push(base + start..base + part.len());
        }
        out
    }
    let split = if buf.len() >= (4 << 20) {
        memchr::memchr(b'\n', &buf[buf.len() / 2..]).map(|k| buf.len() / 2 + k + 1)
    } else {
        None
    };
    match split {
        Some(mid) if mid < buf.len() => {
            let (a, b) = rayon::join(|| scan(&buf[..mid], base), || scan(&buf[mid..], base + mid));
            let mut all = Vec::with_capacity(a.len() + b.len());
            all.extend(a);
            all.extend(b);
            all
        }
        _ => scan(buf, base),
    }
}
