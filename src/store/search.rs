//! Search across session files: ripgrep's searcher scans each file for lines that may match
//! (the query as Pi's JSON writes it), on every core, and only those lines are decoded and
//! checked (`engine::search`). Files are read in blocks, not mapped: a session Pi truncates
//! or rewrites while it is searched cannot fault the process.

use crate::engine::search::{Hit, Query, hit_in_line};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, Sink, SinkMatch};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

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

/// The hits in one session file, in file order.
pub fn search_file(path: &Path, q: &Query, stop: &std::sync::atomic::AtomicBool) -> Result<Vec<Hit>, String> {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::none())
        .build();
    let mut sink = Hits {
        query: q,
        hits: vec![],
        stop,
    };
    let r = match q.line_pattern() {
        Some(p) => {
            let m = RegexMatcherBuilder::new()
                .line_terminator(Some(b'\n'))
                .build(p)
                .map_err(|e| e.to_string())?;
            searcher.search_path(&m, path, &mut sink)
        }
        // Every line: a regex that could match an escaped character is checked decoded.
        None => {
            let m = RegexMatcherBuilder::new()
                .line_terminator(Some(b'\n'))
                .build(r"\{")
                .map_err(|e| e.to_string())?;
            searcher.search_path(&m, path, &mut sink)
        }
    };
    r.map_err(|e| e.to_string())?;
    Ok(sink.hits)
}

/// Search `files` on every core; `found` gets each file's hits (or why it could not be read)
/// as soon as that file is done. `stop` ends the search early.
pub fn search(
    files: &[PathBuf],
    q: &Query,
    stop: &std::sync::atomic::AtomicBool,
    found: impl Fn(&Path, Result<Vec<Hit>, String>) + Sync,
) {
    files.par_iter().for_each(|f| {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        found(f, search_file(f, q, stop));
    });
}
