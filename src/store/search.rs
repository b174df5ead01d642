//! Search across session files: ripgrep's searcher scans each file for lines that may match
//! (the query as Pi's JSON writes it), on every core, and only those lines are decoded and
//! checked (`engine::view::search`). Files are read in blocks, not mapped: a session Pi truncates
//! or rewrites while it is searched cannot fault the process.

use crate::engine::view::search::{Hit, Query, hit_in_line};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkMatch};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a session could not be searched. Cheap to clone: a query the line scan cannot run
/// is reported for every file.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SearchError {
    /// The query as a line pattern (grep's regex) does not build.
    #[error("{0}")]
    Pattern(#[from] grep_regex::Error),
    /// The file could not be opened (it is gone, or no regular file).
    #[error("{0}")]
    Open(Arc<super::files::OpenError>),
    /// The file could not be read.
    #[error("{0}")]
    Read(Arc<std::io::Error>),
    /// The search's worker did not finish (it panicked, or the runtime is gone).
    #[error("the search stopped: {0}")]
    Stopped(String),
    /// The text typed is no query.
    #[error("{0}")]
    Query(#[from] crate::engine::view::search::QueryError),
}

impl From<super::files::OpenError> for SearchError {
    fn from(e: super::files::OpenError) -> SearchError {
        SearchError::Open(Arc::new(e))
    }
}

impl From<std::io::Error> for SearchError {
    fn from(e: std::io::Error) -> SearchError {
        SearchError::Read(Arc::new(e))
    }
}

/// The session files under `paths` (files as given; folders walked for `*.jsonl`, a delete's
/// removed-lines files left out), sorted, each once.
pub fn session_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        if p.is_file() {
            out.push(p.clone());
            continue;
        }
        for e in walkdir::WalkDir::new(p)
            .follow_links(true)
            .max_depth(3)
            .into_iter()
            .flatten()
        {
            let name = e.file_name().to_string_lossy();
            if e.file_type().is_file() && name.ends_with(".jsonl") && !name.contains(".jsonl.deleted-") {
                out.push(e.into_path());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Collects the decoded hits of the lines the scan passes.
struct Hits<'q> {
    query: &'q Query,
    hits: Vec<Hit>,
    stop: &'q std::sync::atomic::AtomicBool,
}

impl Sink for Hits<'_> {
    type Error = std::io::Error;
    fn matched(&mut self, _: &grep_searcher::Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let raw = m.bytes();
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        if let Some(h) = hit_in_line(raw, m.line_number().unwrap_or(0), self.query) {
            self.hits.push(h);
        }
        Ok(!self.stop.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// The regex the line scan runs (the query as Pi's JSON writes it, or every line).
fn line_matcher(q: &Query) -> Result<grep_regex::RegexMatcher, SearchError> {
    // Every line: a regex that could match an escaped character is checked decoded.
    let pattern = q.line_pattern().unwrap_or(r"\{");
    RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(SearchError::from)
}

fn searcher() -> grep_searcher::Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::none())
        .build()
}

/// The hits in one session file, in file order.
pub fn search_file(path: &Path, q: &Query, stop: &std::sync::atomic::AtomicBool) -> Result<Vec<Hit>, SearchError> {
    let m = line_matcher(q)?;
    let mut sink = Hits {
        query: q,
        hits: vec![],
        stop,
    };
    searcher().search_path(&m, path, &mut sink)?;
    Ok(sink.hits)
}

/// Files are searched in pieces of about this many bytes (whole lines), so one big session
/// is searched on every core too (a 500 MB file alone took as long as the rest of a
/// gigabyte on the other core).
const PIECE: u64 = 32 << 20;

/// One piece of a file: the hits in bytes `from..` up to the first line end at or past `to`
/// (lines that begin before `from` belong to the piece before), with line numbers counted
/// from the piece's start, and how many lines it holds.
fn search_piece(
    path: &Path,
    from: u64,
    to: u64,
    m: &grep_regex::RegexMatcher,
    q: &Query,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(Vec<Hit>, u64), SearchError> {
    use std::io::{Seek, SeekFrom};
    thread_local! {
        /// Each worker reads its pieces into one buffer (a fresh 32 MB for every piece cost
        /// the kernel as much time zeroing pages as the search itself).
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut f = super::files::open_regular(path)?;
    // Read from the byte before `from` (is `from` a line start?) to `to`, then on to a line end.
    let start = from.saturating_sub(1);
    f.seek(SeekFrom::Start(start))?;
    let mut buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buf.clear();
    let r = read_piece(&mut f, &mut buf, to - start).and_then(|()| scan_piece(&buf, from, m, q, stop));
    BUF.with(|b| *b.borrow_mut() = buf);
    r
}

/// `len` bytes from `f`, then on to the end of the line they end in.
fn read_piece(f: &mut std::fs::File, buf: &mut Vec<u8>, len: u64) -> Result<(), SearchError> {
    use std::io::Read;
    f.take(len).read_to_end(buf)?;
    if buf.len() as u64 == len && buf.last() != Some(&b'\n') {
        let mut more = [0u8; 64 * 1024];
        loop {
            let n = f.read(&mut more)?;
            if n == 0 {
                break;
            }
            match memchr::memchr(b'\n', &more[..n]) {
                Some(i) => {
                    buf.extend_from_slice(&more[..=i]);
                    break;
                }
                None => buf.extend_from_slice(&more[..n]),
            }
        }
    }
    Ok(())
}

/// The hits in a piece read from the byte before `from` (see `search_piece`).
fn scan_piece(
    buf: &[u8],
    from: u64,
    m: &grep_regex::RegexMatcher,
    q: &Query,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(Vec<Hit>, u64), SearchError> {
    // The piece begins after the line that crosses `from`.
    let begin = if from == 0 {
        0
    } else {
        match memchr::memchr(b'\n', buf) {
            Some(i) => i + 1,
            None => buf.len(),
        }
    };
    let piece = &buf[begin.min(buf.len())..];
    let mut sink = Hits {
        query: q,
        hits: vec![],
        stop,
    };
    searcher().search_slice(m, piece, &mut sink)?;
    Ok((sink.hits, memchr::memchr_iter(b'\n', piece).count() as u64))
}

/// Pieces of a buffer searched at once (small: the first hits of a big session show early).
const BUFFER_PIECE: usize = 4 << 20;

/// Search a session's bytes already in memory (the open session: find in session) on every
/// core, in pieces of whole lines; `found` gets each piece's hits (line numbers from the
/// buffer's start) as soon as that piece is done, in no particular order. `stop` ends it early.
pub fn search_bytes(
    buf: &[u8],
    q: &Query,
    stop: &std::sync::atomic::AtomicBool,
    found: impl Fn(Vec<Hit>) + Sync,
) -> Result<(), SearchError> {
    let m = line_matcher(q)?;
    // Piece boundaries just after a newline, then the lines before each (counted on every core).
    let mut bounds = vec![0usize];
    while *bounds.last().unwrap_or(&0) < buf.len() {
        let from = *bounds.last().unwrap_or(&0) + BUFFER_PIECE;
        let end = if from >= buf.len() {
            buf.len()
        } else {
            memchr::memchr(b'\n', &buf[from..]).map_or(buf.len(), |i| from + i + 1)
        };
        bounds.push(end);
    }
    let pieces: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
    let lines: Vec<u64> = pieces
        .par_iter()
        .map(|&(a, b)| memchr::memchr_iter(b'\n', &buf[a..b]).count() as u64)
        .collect();
    let before: Vec<u64> = lines
        .iter()
        .scan(0u64, |acc, n| {
            let at = *acc;
            *acc += n;
            Some(at)
        })
        .collect();
    pieces
        .par_iter()
        .zip(before.par_iter())
        .try_for_each(|(&(a, b), &lines_before)| {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(());
            }
            let mut sink = Hits {
                query: q,
                hits: vec![],
                stop,
            };
            searcher().search_slice(&m, &buf[a..b], &mut sink)?;
            if !sink.hits.is_empty() {
                for h in &mut sink.hits {
                    h.line += lines_before;
                }
                found(sink.hits);
            }
            Ok(())
        })
}

/// Search `files` on every core, big ones in pieces; `found` gets each file's hits (or why it
/// could not be read), in file order, as soon as that file is done. `stop` ends the search
/// early.
pub fn search(
    files: &[PathBuf],
    q: &Query,
    stop: &std::sync::atomic::AtomicBool,
    found: impl Fn(&Path, Result<Vec<Hit>, SearchError>) + Sync,
) {
    search_in_pieces(files, q, stop, found, PIECE)
}

fn search_in_pieces(
    files: &[PathBuf],
    q: &Query,
    stop: &std::sync::atomic::AtomicBool,
    found: impl Fn(&Path, Result<Vec<Hit>, SearchError>) + Sync,
    piece: u64,
) {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let m = match line_matcher(q) {
        Ok(m) => m,
        Err(e) => {
            for f in files {
                found(f, Err(e.clone()));
            }
            return;
        }
    };
    // Per file: its pieces' results and how many are still running.
    type PieceResult = Result<(Vec<Hit>, u64), SearchError>;
    struct Pending {
        pieces: Mutex<Vec<Option<PieceResult>>>,
        left: AtomicUsize,
    }
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .collect();
    let pending: Vec<Pending> = sizes
        .iter()
        .map(|&n| {
            let k = n.div_ceil(piece).max(1) as usize;
            Pending {
                pieces: Mutex::new(vec![None; k]),
                left: AtomicUsize::new(k),
            }
        })
        .collect();
    // Big files first, so their pieces spread over the cores from the start.
    let mut tasks: Vec<(usize, usize)> = (0..files.len())
        .flat_map(|f| (0..pending[f].left.load(Ordering::Relaxed)).map(move |k| (f, k)))
        .collect();
    tasks.sort_by_key(|&(f, _)| std::cmp::Reverse(sizes[f]));
    tasks.par_iter().for_each(|&(fi, k)| {
        let r = if stop.load(Ordering::Relaxed) {
            Ok((vec![], 0))
        } else {
            let from = k as u64 * piece;
            search_piece(&files[fi], from, from + piece, &m, q, stop)
        };
        let p = &pending[fi];
        if let Ok(mut pieces) = p.pieces.lock() {
            pieces[k] = Some(r);
        }
        if p.left.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // The file's last piece: line numbers from the file's start, hits in file order.
        let pieces = p.pieces.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
        let mut hits = Vec::with_capacity(
            pieces
                .iter()
                .flatten()
                .map(|p| p.as_ref().map_or(0, |(h, _)| h.len()))
                .sum(),
        );
        let mut lines_before = 0;
        let mut error = None;
        for piece in pieces.into_iter().flatten() {
            match piece {
                Ok((h, lines)) => {
                    hits.extend(h.into_iter().map(|mut h| {
                        h.line += lines_before;
                        h
                    }));
                    lines_before += lines;
                }
                Err(e) => error = Some(e),
            }
        }
        if !stop.load(Ordering::Relaxed) {
            found(&files[fi], error.map_or(Ok(hits), Err));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_find_what_one_pass_finds_with_the_same_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.jsonl");
        let mut text =
            String::from("{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n");
        for k in 0..400 {
            // Lines of many lengths (some far longer than a piece), a hit now and then.
            let body = "word ".repeat(k * 7 % 900);
            let hit = if k % 3 == 0 { "needle" } else { "hay" };
            text.push_str(&format!(
                "{{\"type\":\"message\",\"id\":\"e{k}\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{{\"role\":\"user\",\"content\":\"{body}{hit} {k}\"}}}}\n"
            ));
        }
        // No final newline on the last line.
        text.pop();
        std::fs::write(&f, &text).unwrap();
        let q = Query::new("needle", false, None).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let whole = search_file(&f, &q, &stop).unwrap();
        assert_eq!(whole.len(), 134);
        for piece in [97u64, 1000, 4096, 10_000, 1 << 30] {
            let got = std::sync::Mutex::new(vec![]);
            search_in_pieces(
                std::slice::from_ref(&f),
                &q,
                &stop,
                |_, r| got.lock().unwrap().push(r.unwrap()),
                piece,
            );
            let got = got.into_inner().unwrap();
            assert_eq!(got.len(), 1, "one report per file");
            assert_eq!(got[0], whole, "pieces of {piece} bytes");
        }
    }
}
