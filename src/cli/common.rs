//! What every command needs: the session (with its diagnostics on stderr), entry references,
//! the session's model, and small output helpers.

use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::view::context::Projection;
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A session for one CLI command, parsed. It is never dropped: the process ends right after
/// the command, and freeing a big session entry by entry costs ~20 ms at 100 MB for nothing.
pub fn load(path: &Path) -> Result<std::mem::ManuallyDrop<Session>> {
    Ok(for_the_command(path, crate::store::load_session(path)?))
}

/// A session for a command that only reads it: from bonsai's session index where one still
/// describes the file (what the TUI and `bonsai index` wrote; `settings` place and bound it),
/// else parsed whole as [`load`] parses it. A command that writes uses [`load`], never this:
/// writes never trust the index.
///
/// A session of [`INDEX_FROM`] bytes or more parsed whole gets its index written. The command
/// waits for that write, about as long again as the parse (BENCHMARKS.md), so that the next
/// command, or the TUI, opens it in milliseconds. A smaller one parses faster than an index
/// is worth.
/// The size from which a reading command writes the index of a session it parsed whole.
pub const INDEX_FROM: u64 = 64 << 20;

pub fn load_for_reading(
    path: &Path,
    settings: &crate::engine::settings::Settings,
) -> Result<std::mem::ManuallyDrop<Session>> {
    use crate::store::{config, index};
    let place = index::Place::in_agent(&config::agent_dir(), settings);
    let opened = index::open_proven(path, &place)?;
    if opened.used == index::Used::Parsed(index::MISMATCH.into()) {
        eprintln!("bonsai: {}: {}", path.display(), index::MISMATCH);
    }
    if matches!(opened.used, index::Used::Parsed(_))
        && opened.source.len >= INDEX_FROM
        && let Err(e) = index::save(&place, &opened.source, &opened.session)
    {
        // The output does not depend on it: said, and the command goes on.
        eprintln!("bonsai: note: {}: its index was not written: {e}", path.display());
    }
    if let Some(proof) = opened.session.proof() {
        READ_THROUGH_INDEX
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((path.to_path_buf(), proof, place));
    }
    Ok(for_the_command(path, opened.session))
}

/// Sessions this command read through their index, checked line by line as they were read.
type ReadThroughIndex = Vec<(
    PathBuf,
    std::sync::Arc<crate::engine::load::session::LineProof>,
    crate::store::index::Place,
)>;
static READ_THROUGH_INDEX: std::sync::Mutex<ReadThroughIndex> = std::sync::Mutex::new(Vec::new());

/// The command's last word on what it read through an index: a line that failed its check
/// means the output may show another line's text. The index is dropped (the next run parses)
/// and the command fails, saying so.
pub fn after_reading() -> Result<()> {
    let read = std::mem::take(&mut *READ_THROUGH_INDEX.lock().unwrap_or_else(|e| e.into_inner()));
    for (path, proof, place) in read {
        if proof.failed() {
            crate::store::index::forget(&place, &path);
            bail!(
                "{}: {}. What was printed above may show other lines' text: run the command again",
                path.display(),
                crate::store::index::MISMATCH
            );
        }
    }
    Ok(())
}

/// The session's diagnostics said on stderr; the session kept to the end of the process.
fn for_the_command(path: &Path, s: Session) -> std::mem::ManuallyDrop<Session> {
    for d in &s.diagnostics {
        eprintln!("bonsai: {}:{}: {}", path.display(), d.line, d.message);
    }
    std::mem::ManuallyDrop::new(s)
}

/// FILE as every command takes it: a session file, or a directory (its newest session, as
/// `bonsai DIR` opens).
pub fn session_file(p: &Path) -> Result<PathBuf> {
    if p.is_dir() {
        let f = crate::store::newest_in_dir(p)
            .ok_or_else(|| eyre!("no Pi session (*.jsonl with a session header) in {}", p.display()))?;
        eprintln!("bonsai: {}: the newest session there is {}", p.display(), f.display());
        return Ok(f);
    }
    Ok(p.to_path_buf())
}

/// FILE for a command that writes to it: never the bundled demo, which is a tracked file of
/// the repository (the TUI shows it read-only too).
pub fn writable_file(p: &Path) -> Result<PathBuf> {
    let f = session_file(p)?;
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo.jsonl");
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(&f), std::fs::canonicalize(&demo))
        && a == b
    {
        bail!(
            "{} is bonsai's bundled demo session and stays read-only; write to a copy: cp {} /tmp/demo.jsonl, then use /tmp/demo.jsonl (--dry-run shows a write without one)",
            f.display(),
            f.display()
        );
    }
    Ok(f)
}

/// `--leaf ID` or `--leaf idx:N`; default Pi's leaf (the last entry).
pub fn resolve_leaf(s: &Session, leaf: Option<&str>) -> Result<Option<usize>> {
    match leaf {
        None => Ok(s.leaf()),
        Some(r) => resolve_ref(s, r).map(Some),
    }
}

/// An entry id, or `idx:N` for the N-th entry (0-based, header and skipped lines not counted).
pub fn resolve_ref(s: &Session, r: &str) -> Result<usize> {
    if let Some(n) = r.strip_prefix("idx:") {
        let n: usize = n.parse().map_err(|_| eyre!("bad entry reference {r}"))?;
        if n < s.entries.len() {
            return Ok(n);
        }
        bail!(
            "entry idx {n} is out of range (the session has {} entries)",
            s.entries.len()
        );
    }
    s.idx_of(r).ok_or_else(|| eyre!("entry {r} not found in the session"))
}

/// The session's current model (as Pi restores it) and the context window Pi knows for it.
pub fn session_model(proj: &Projection, reg: &Registry) -> (Option<(String, String)>, Option<u64>) {
    let pm = proj.model.as_ref().and_then(|(p, m)| Some((p.clone()?, m.clone()?)));
    let window = pm.as_ref().and_then(|(p, m)| reg.find(p, m)).map(|m| m.context_window);
    (pm, window)
}

pub fn print_json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

/// A file list for a terminal: the first ten, then how many more.
pub fn short_list(v: &[Value]) -> String {
    let s = crate::engine::compaction::serialize::list_strings(v);
    if s.len() <= 10 {
        return s.join(", ");
    }
    format!("{}, … and {} more", s[..10].join(", "), s.len() - 10)
}

/// Put text on the clipboard with OSC 52 where stdout is a terminal.
pub fn copy_to_clipboard(text: &str) {
    use std::io::{IsTerminal, Write};
    if std::io::stdout().is_terminal() {
        let _ = crossterm::execute!(
            std::io::stdout(),
            crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
        );
        let _ = std::io::stdout().flush();
    }
}
