//! bonsai's session index: a session's parse kept in `<agentDir>/bonsai/index/` (0700; each
//! file 0600, named by a hash of the session's path), so a long session opens again without
//! being parsed.
//!
//! An index says which bytes it describes: the file's device, inode, length and modification
//! time when it was made, and hashes of the first and the last 64 KB of those bytes. Opening
//! compares them with the file as it is now:
//! - the same file, same length and time, same blocks: the index is the session, no parse;
//! - the same file grown (Pi appends), its old blocks unchanged: only the new bytes are parsed;
//! - anything else (shorter, rewritten, replaced, another time at the same length, a block
//!   differs), or an index that is damaged, foreign or of another build: a whole parse, as
//!   without an index, and a new index is written.
//!
//! Nothing that writes a session reads the index: every write re-reads the file. The folder
//! stays under a size limit (`bonsai.indexCacheMB`), the least recently opened dropped first.

use super::files::{OpenError, open_regular};
use crate::engine::load::bytes::FileBytes;
use crate::engine::load::session::{IndexedParse, LineProof, Session, frame, unframe};
use crate::engine::view::tree_view::FilterMode;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// An index file starts with this; the last byte is the store's format of it.
const MAGIC: &[u8; 8] = b"bonsaiI\x03";

/// Bytes hashed at each end of the described part of the file.
const BLOCK: usize = 64 << 10;

/// What an index describes: the session file and its bytes when the index was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The session's path as opened (made absolute and resolved).
    pub path: PathBuf,
    pub dev: u64,
    pub ino: u64,
    /// How many bytes of the file the session was read from.
    pub len: u64,
    /// The file's modification time (ns), when it was taken with those bytes (a file that
    /// grew between the look and the read has none, so only its blocks vouch for it).
    pub mtime_ns: Option<i128>,
    pub head: [u8; 32],
    pub tail: [u8; 32],
    /// The file's change time (ns) with those bytes: any write or `touch` moves it, so an
    /// edit in place that restores the length and the modification time still shows.
    pub ctime_ns: i128,
    /// A CRC-32 of every 64 KB block of those bytes, made when the index is written: every
    /// line read through the index is checked against them first (engine `LineProof`).
    pub crcs: Vec<u32>,
}

use super::files::mtime_ns;

fn ctime_ns(m: &std::fs::Metadata) -> i128 {
    m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128
}

fn hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The first and last blocks of `buf[..len]`, hashed.
fn blocks(buf: &[u8], len: usize) -> ([u8; 32], [u8; 32]) {
    let len = len.min(buf.len());
    (hash(&buf[..len.min(BLOCK)]), hash(&buf[len.saturating_sub(BLOCK)..len]))
}

impl Source {
    /// `buf` as read from `path`, whose metadata before the read was `meta`.
    fn of(path: &Path, meta: &std::fs::Metadata, buf: &[u8]) -> Source {
        let (head, tail) = blocks(buf, buf.len());
        Source {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            len: buf.len() as u64,
            mtime_ns: (meta.len() == buf.len() as u64).then(|| mtime_ns(meta)),
            head,
            tail,
            ctime_ns: ctime_ns(meta),
            crcs: vec![],
        }
    }

    /// How the file (`meta` now, its bytes `buf`, described as `now`) stands to what this
    /// index describes. At the same length the blocks `now` hashed are these (not hashed again).
    fn compare(&self, meta: &std::fs::Metadata, buf: &[u8], now: &Source) -> Freshness {
        if meta.dev() != self.dev || meta.ino() != self.ino {
            return Freshness::Stale("the file was replaced (another inode)");
        }
        let len = buf.len() as u64;
        if len < self.len {
            return Freshness::Stale("the file is shorter (truncated or rewritten)");
        }
        let then = if now.len == self.len {
            (now.head, now.tail)
        } else {
            blocks(buf, self.len as usize)
        };
        if then != (self.head, self.tail) {
            return Freshness::Stale("the file's bytes changed (rewritten)");
        }
        if len == self.len {
            if meta.len() == len && Some(mtime_ns(meta)) == self.mtime_ns && ctime_ns(meta) == self.ctime_ns {
                Freshness::Unchanged
            } else {
                Freshness::Stale("the file was written again at the same length")
            }
        } else {
            Freshness::Grown(len - self.len)
        }
    }
}

/// How a session file stands to its index.
#[derive(Debug, Clone, PartialEq)]
pub enum Freshness {
    Unchanged,
    /// Bytes were appended (how many).
    Grown(u64),
    Stale(&'static str),
}

/// How a session was opened.
#[derive(Debug, Clone, PartialEq)]
pub enum Used {
    /// From its index: nothing parsed.
    Unchanged,
    /// From its index and the bytes appended since (how many), parsed.
    Extended(u64),
    /// Parsed whole, and why the index was not used.
    Parsed(String),
}

impl Used {
    /// Whether the index needs writing (again) for the session as opened.
    pub fn wants_saving(&self) -> bool {
        !matches!(self, Used::Unchanged)
    }
    /// What the loading frame and the status line say.
    pub fn describe(&self) -> String {
        match self {
            Used::Unchanged => "from bonsai's index (unchanged since it was made)".into(),
            Used::Extended(n) => format!(
                "from bonsai's index and the {} appended since",
                super::files::human_bytes(*n)
            ),
            Used::Parsed(why) => format!("parsed whole ({why})"),
        }
    }
}

/// Where the indexes live, and how much room they may take.
#[derive(Debug, Clone)]
pub struct Place {
    pub dir: PathBuf,
    /// Bytes all indexes may take together (0: no index is read or written).
    pub limit: u64,
    /// The `/tree` filter whose first view an index keeps (Pi's `treeFilterMode`): the view
    /// a second open shows without building it.
    pub view: FilterMode,
}

impl Place {
    pub fn in_agent(agent: &Path, settings: &crate::engine::settings::Settings) -> Place {
        Place {
            dir: agent.join("bonsai").join("index"),
            limit: settings.index_cache_bytes(),
            view: FilterMode::parse(settings.tree_filter_mode()).unwrap_or_default(),
        }
    }

    /// The index file of the session at `path` (already resolved).
    pub fn file_for(&self, path: &Path) -> PathBuf {
        let h = hash(path.as_os_str().as_encoded_bytes());
        let name: String = h[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.idx"))
    }
}

/// The session's path as the index names it.
pub fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// A session opened through its index: the session, how, and what an index of it describes.
pub struct Opened {
    pub session: Session,
    pub used: Used,
    pub source: Source,
}

/// An index file read: what it describes, and the session's parse (still encoded).
struct IndexFile {
    source: Source,
    bytes: FileBytes,
    at: usize,
}

/// Why an index file was not used.
fn read_index(file: &Path) -> Result<IndexFile, String> {
    let f = super::private::open(file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no index yet".to_string(),
        _ => format!("its index cannot be read: {e}"),
    })?;
    let bytes = super::mapped::load_file(f, file).map_err(|e| format!("its index cannot be read: {e}"))?;
    let damaged = || "its index is damaged or of another format".to_string();
    let (meta, end) = unframe(MAGIC, &bytes).map_err(|_| damaged())?;
    let source: Source = postcard::from_bytes(meta).map_err(|_| damaged())?;
    let at = engine_part_start(end);
    if bytes.get(end..at).is_none_or(|pad| pad.iter().any(|&b| b != 0)) {
        return Err(damaged());
    }
    Ok(IndexFile { source, at, bytes })
}

/// Where the engine's part of an index starts, after the store's ending at `end`: 8-aligned
/// (the engine's stored view is read in place, and a mapping starts page-aligned).
fn engine_part_start(end: usize) -> usize {
    end.next_multiple_of(8)
}

/// The index as bytes: what it describes, then the session's parse (with the first view of
/// `view`'s filter).
fn encode(source: &Source, session: &Session, view: FilterMode) -> std::io::Result<Vec<u8>> {
    let mut source = source.clone();
    let described = (source.len as usize).min(session.buf.len());
    source.crcs = crate::engine::load::session::block_crcs(&session.buf[..described]);
    // A session opened from an older index: its entries are that index's, so the new one may
    // vouch for these bytes only where they are the bytes the old one described.
    if let Some(proof) = session.proof()
        && !proof.agrees_with(&session.buf[..described], &source.crcs)
    {
        return Err(std::io::Error::other(MISMATCH));
    }
    let meta = postcard::to_allocvec(&source).expect("a source encodes");
    let parse = session.to_index(crate::engine::view::tree_view::stored::encode(session, view));
    let mut out = Vec::with_capacity(28 + meta.len() + parse.len());
    frame(&mut out, MAGIC, &meta);
    out.resize(engine_part_start(out.len()), 0);
    out.extend_from_slice(&parse);
    Ok(out)
}

/// The session at `path`, from its index where that still describes the file, else parsed
/// (`progress` hears how many bytes are parsed). Pi's version and bonsai's note on its own
/// cut-short writes are applied as for any load.
/// `told` hears how before the work starts (the loading frame says it).
pub fn open(
    path: &Path,
    place: Option<&Place>,
    progress: Option<&(dyn Fn(usize) + Sync)>,
    told: Option<&(dyn Fn(&Used) + Sync)>,
) -> Result<Opened, OpenError> {
    let f = open_regular(path)?;
    let io = |source| OpenError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = f.metadata().map_err(io)?;
    let buf = super::mapped::load_file(f, path).map_err(io)?;
    let resolved = resolved(path);
    let source = Source::of(&resolved, &meta, &buf);
    let place = place.filter(|p| p.limit > 0);
    let indexed = match place {
        None => Err("the index is off (bonsai.indexCacheMB is 0)".to_string()),
        Some(place) => usable_index(place, &source, &meta, &buf),
    };
    let tell = |used: &Used| {
        if let Some(t) = told {
            t(used)
        }
    };
    let (session, used) = match indexed {
        Ok((parse, freshness, proof)) => {
            let used = match freshness {
                Freshness::Grown(n) => Used::Extended(n),
                _ => Used::Unchanged,
            };
            tell(&used);
            let mut s = Session::from_indexed(buf, parse).map_err(|source| OpenError::Invalid {
                path: path.to_path_buf(),
                source,
            })?;
            s.set_proof(proof);
            (super::files::as_loaded(s, path), used)
        }
        Err(why) => {
            let used = Used::Parsed(why);
            tell(&used);
            (super::files::parse_bytes(buf, path, progress)?, used)
        }
    };
    Ok(Opened { session, used, source })
}

/// [`open`] for a reader that cannot take back what it showed (a command's output). A file
/// that grew since its index was made is proven whole first (a CRC-32 per 64 KB, on every
/// core): its size and times say nothing of its old part. When a line fails, the index is
/// dropped and the file parsed whole, `used` then saying [`MISMATCH`].
pub fn open_proven(path: &Path, place: &Place) -> Result<Opened, OpenError> {
    let opened = open(path, Some(place), None, None)?;
    // An unchanged file (the same inode, size, modification and change times, end blocks)
    // is checked line by line as it is read: proving 10 GB first would cost seconds. The
    // caller asks `index_failed` before it ends.
    if opened.used == Used::Unchanged || opened.session.prove_all() {
        return Ok(opened);
    }
    forget(place, path);
    let again = open(path, None, None, None)?;
    Ok(Opened {
        used: Used::Parsed(MISMATCH.into()),
        ..again
    })
}

/// The index of the session `now` describes, decoded, when it describes the file as it is
/// now (`meta`, `buf`); else why not.
fn usable_index(
    place: &Place,
    now: &Source,
    meta: &std::fs::Metadata,
    buf: &[u8],
) -> Result<(IndexedParse, Freshness, LineProof), String> {
    let file = place.file_for(&now.path);
    let mut index = read_index(&file)?;
    if index.source.path != now.path {
        return Err("its index is another session's".into());
    }
    let freshness = index.source.compare(meta, buf, now);
    if let Freshness::Stale(why) = freshness {
        return Err(why.into());
    }
    let proof = LineProof::new(index.source.len as usize, std::mem::take(&mut index.source.crcs))
        .ok_or_else(|| "its index has no line checks".to_string())?;
    let unchanged = freshness == Freshness::Unchanged;
    // The tree and `/tree`'s first view kept beside the parse serve an unchanged file only.
    let views: &crate::engine::load::session::ExtraDecoder = &crate::engine::view::tree_view::stored::decode;
    let parse = IndexedParse::decode(std::sync::Arc::new(index.bytes), index.at, unchanged.then_some(views))
        .map_err(|e| e.to_string())?;
    if parse.is_v1() && freshness != Freshness::Unchanged {
        return Err("the file grew, and a version 1 session's ids are made up at load".into());
    }
    // Opened now: the least recently opened are dropped first.
    touch(&file);
    Ok((parse, freshness, proof))
}

/// What is said when a line read through a session's index no longer matches the file.
pub const MISMATCH: &str = "bonsai's index of this session no longer matches the file (a line was changed in place): it is dropped and the session parsed whole";

/// Remove the index of the session at `path` (it no longer describes the file).
pub fn forget(place: &Place, path: &Path) {
    if super::private::is_real_dir(&place.dir) {
        let _ = std::fs::remove_file(place.file_for(&resolved(path)));
    }
}

/// Mark an index as opened now.
fn touch(file: &Path) {
    if let Ok(f) = std::fs::OpenOptions::new().append(true).open(file) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Write the index of `session` (read from the bytes `source` describes), then keep the
/// folder under its limit. An index bigger than the limit alone is not written. Returns the
/// index's size.
pub fn save(place: &Place, source: &Source, session: &Session) -> std::io::Result<u64> {
    if place.limit == 0 {
        return Ok(0);
    }
    let bytes = encode(source, session, place.view)?;
    if bytes.len() as u64 > place.limit {
        return Err(std::io::Error::other(format!(
            "the index ({}) would be larger than bonsai.indexCacheMB allows ({})",
            super::files::human_bytes(bytes.len() as u64),
            super::files::human_bytes(place.limit)
        )));
    }
    let file = place.file_for(&source.path);
    // The folder's bookkeeping (which to drop for room) under its lock: two bonsai saving at
    // once would each count the other's index and drop more than needed.
    super::private::locked(&place.dir.join("folder"), || {
        super::private::write(&file, &bytes)?;
        prune(place, &file);
        Ok::<_, std::io::Error>(())
    })??;
    Ok(bytes.len() as u64)
}

/// Every index file in the folder: path, size, last opened.
fn index_files(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    // A linked index folder is not bonsai's: nothing in it is listed, counted or removed.
    if !super::private::is_real_dir(dir) {
        return Vec::new();
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "idx"))
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            m.is_file()
                .then(|| (e.path(), m.len(), m.modified().unwrap_or(std::time::UNIX_EPOCH)))
        })
        .collect()
}

/// Drop the least recently opened indexes until the folder is within its limit (`keep`, just
/// written, goes last), and temporary files left by a run that ended while writing.
fn prune(place: &Place, keep: &Path) {
    let mut files = index_files(&place.dir);
    files.sort_by_key(|(p, _, t)| (p == keep, *t));
    let mut total: u64 = files.iter().map(|(_, n, _)| n).sum();
    for (p, n, _) in files {
        if total <= place.limit {
            break;
        }
        if std::fs::remove_file(&p).is_ok() {
            total -= n;
        }
    }
    for (p, _) in leftovers(&place.dir, LEFTOVER_AGE) {
        let _ = std::fs::remove_file(p);
    }
}

/// How old a temporary file must be before a command takes it for a killed write's leftover
/// (a write under way in another bonsai is seconds old).
pub const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Hidden temporary files (`.NAME.PID.N.tmp`) in the index folder older than `age`, with their
/// sizes: what a write killed midway left.
pub fn leftovers(dir: &Path, age: std::time::Duration) -> Vec<(PathBuf, u64)> {
    if !super::private::is_real_dir(dir) {
        return Vec::new();
    }
    let before = std::time::SystemTime::now() - age;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with('.') && name.ends_with(".tmp")
        })
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            (m.is_file() && m.modified().is_ok_and(|t| t <= before)).then(|| (e.path(), m.len()))
        })
        .collect()
}

/// One index as `bonsai index --status` shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub session: PathBuf,
    pub index_file: PathBuf,
    /// Bytes of the index (0: none).
    pub index_bytes: u64,
    /// `fresh`, `grown`, `stale`, `none`, `damaged`, `orphaned` (its session is gone).
    pub state: &'static str,
    pub detail: String,
    /// When it was last opened (ms since the epoch).
    pub opened_ms: Option<i64>,
}

fn ms(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How the session at `path` stands to its index.
pub fn status_of(place: &Place, path: &Path) -> Status {
    let resolved = resolved(path);
    let file = place.file_for(&resolved);
    let mut st = Status {
        session: resolved.clone(),
        index_file: file.clone(),
        index_bytes: 0,
        state: "none",
        detail: "no index yet: the next open parses it and writes one".into(),
        opened_ms: None,
    };
    let Ok(m) = std::fs::symlink_metadata(&file) else {
        return st;
    };
    st.index_bytes = m.len();
    st.opened_ms = m.modified().ok().map(ms);
    let index = match read_index(&file) {
        Ok(i) if i.source.path == resolved => i,
        Ok(_) => {
            st.state = "damaged";
            st.detail = "the index is another session's".into();
            return st;
        }
        Err(why) => {
            st.state = "damaged";
            st.detail = why;
            return st;
        }
    };
    described(&mut st, &index.source);
    st
}

/// `st` filled with how the session file stands to what `source` describes.
fn described(st: &mut Status, source: &Source) {
    // Opened without waiting: a FIFO now at the session's path is said, not waited on.
    let now = super::files::open_regular(&source.path).map_err(|e| match e {
        super::files::OpenError::NotAFile { what, .. } => format!("its session path is now {what}"),
        _ => "its session file is gone".to_string(),
    });
    let now = now.and_then(|f| {
        let m = f.metadata().map_err(|e| e.to_string())?;
        Ok((super::mapped::load_file(f, &source.path).map_err(|e| e.to_string())?, m))
    });
    let (buf, meta) = match now {
        Ok(x) => x,
        Err(why) => {
            st.state = "orphaned";
            st.detail = why;
            return;
        }
    };
    match source.compare(&meta, &buf, &Source::of(&source.path, &meta, &buf)) {
        Freshness::Unchanged => {
            st.state = "fresh";
            st.detail = format!(
                "describes all {}: opens without a parse",
                super::files::human_bytes(source.len)
            );
        }
        Freshness::Grown(n) => {
            st.state = "grown";
            st.detail = format!("{} appended since: only those are parsed", super::files::human_bytes(n));
        }
        Freshness::Stale(why) => {
            st.state = "stale";
            st.detail = format!("{why}: the next open parses it whole");
        }
    }
}

/// Every index in the folder, with the session each describes.
pub fn status_all(place: &Place) -> Vec<Status> {
    let mut out: Vec<Status> = index_files(&place.dir)
        .into_iter()
        .map(|(file, len, opened)| {
            let mut st = Status {
                session: PathBuf::new(),
                index_file: file.clone(),
                index_bytes: len,
                state: "damaged",
                detail: String::new(),
                opened_ms: Some(ms(opened)),
            };
            match read_index(&file) {
                Ok(i) => {
                    st.session = i.source.path.clone();
                    described(&mut st, &i.source);
                }
                Err(why) => st.detail = why,
            }
            st
        })
        .collect();
    out.sort_by_key(|s| std::cmp::Reverse(s.opened_ms));
    out
}

/// Remove the indexes of these sessions (every index when `paths` is empty): how many files
/// and bytes went.
pub fn clear(place: &Place, paths: &[PathBuf]) -> std::io::Result<(usize, u64)> {
    if std::fs::symlink_metadata(&place.dir).is_ok() && !super::private::is_real_dir(&place.dir) {
        return Err(std::io::Error::other(format!(
            "{} is not a folder of bonsai's (a link is there or above it): nothing removed",
            place.dir.display()
        )));
    }
    let files: Vec<(PathBuf, u64)> = if paths.is_empty() {
        // The indexes, and what a write killed midway left (hidden temporary files).
        let mut v: Vec<(PathBuf, u64)> = index_files(&place.dir).into_iter().map(|(p, n, _)| (p, n)).collect();
        v.extend(leftovers(&place.dir, std::time::Duration::ZERO));
        v
    } else {
        paths
            .iter()
            .map(|p| place.file_for(&resolved(p)))
            .filter_map(|f| std::fs::symlink_metadata(&f).ok().map(|m| (f, m.len())))
            .collect()
    };
    let mut gone = (0, 0);
    for (f, n) in files {
        match std::fs::remove_file(&f) {
            Ok(()) => {
                gone.0 += 1;
                gone.1 += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(gone)
}
