//! Writing. bonsai never rewrites a session in place: it appends whole lines (one write,
//! fsync) to v3 files, writes new files for forks and clones, and migrates old files into a
//! new file beside a backup, renamed into place atomically.

use crate::engine::js;
use crate::engine::session::Session;
use crate::engine::write_plan::{Prepared, Refusal, WriteRequest};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
    /// v1/v2 files must be migrated first (Pi would rewrite them on open).
    #[error(
        "this is a version {version} session file; bonsai appends only to version 3 files. Run `bonsai migrate FILE` first (it keeps a .bak)"
    )]
    NeedsMigration { version: f64 },
    /// The file changed since it was loaded; the caller reloads and re-checks.
    #[error("the file changed while bonsai was preparing the write")]
    Changed,
    #[error(transparent)]
    Open(#[from] super::OpenError),
    /// The write, decided again on the file as it is now, is refused.
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// What happened on an append.
#[derive(Debug, Default)]
pub struct Appended {
    pub lines: usize,
    pub bytes: usize,
    /// The file had no final newline; one was written first (as Pi does on open).
    pub added_newline: bool,
    /// The file was written in the last seconds: Pi may be running and will see the new
    /// entries only after it reopens the session.
    pub recently_written: bool,
}

/// Load the current file, let `build` decide the entries on that exact state, and append
/// them, unless the file changed in between (then load again and re-decide, up to 3 times).
pub fn append_with<F>(path: &Path, mut build: F) -> Result<(Session, Appended), WriteError>
where
    F: FnMut(&Session) -> Result<Vec<serde_json::Value>, Refusal>,
{
    for _ in 0..3 {
        let s = super::load_session(path)?;
        if s.header.version < 3.0 {
            return Err(WriteError::NeedsMigration {
                version: s.header.version,
            });
        }
        let entries = build(&s)?;
        match append_lines(path, s.buf.len() as u64, &entries) {
            Ok(a) => return Ok((s, a)),
            Err(WriteError::Changed) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(WriteError::Changed)
}

/// A write request applied to the file: decided on the state right before the append, then
/// the session after it (only the new lines parsed) and what was written.
pub fn apply(path: &Path, req: &WriteRequest) -> Result<Applied, WriteError> {
    let mut prepared = None;
    let (before, appended) = append_with(path, |s| {
        let p = req.prepare(s, super::clock::entropy(), super::clock::now_ms())?;
        let entries = p.entries.clone();
        prepared = Some(p);
        Ok(entries)
    })?;
    let session = super::reload(before, path)?;
    Ok(Applied {
        session,
        appended,
        prepared: prepared.unwrap_or(Prepared {
            entries: vec![],
            editor_text: None,
            branch_summary: false,
        }),
    })
}

/// The result of [`apply`].
#[derive(Debug)]
pub struct Applied {
    /// The session with the appended entries (and anything Pi appended right after them).
    pub session: Session,
    pub appended: Appended,
    pub prepared: Prepared,
}

/// Append `entries` as JSON lines if the file is still `expected_len` bytes long.
pub fn append_lines(path: &Path, expected_len: u64, entries: &[serde_json::Value]) -> Result<Appended, WriteError> {
    let mut f = std::fs::OpenOptions::new().read(true).append(true).open(path)?;
    let meta = f.metadata()?;
    if meta.len() != expected_len {
        return Err(WriteError::Changed);
    }
    let recently_written = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|d| d < std::time::Duration::from_secs(5));
    let mut data = String::new();
    let mut added_newline = false;
    if expected_len > 0 {
        use std::os::unix::fs::FileExt;
        let mut last = [0u8; 1];
        f.read_at(&mut last, expected_len - 1)?;
        if last[0] != b'\n' {
            data.push('\n');
            added_newline = true;
        }
    }
    for e in entries {
        data.push_str(&crate::engine::actions::to_line(e));
        data.push('\n');
    }
    f.write_all(data.as_bytes())?;
    f.sync_data()?;
    Ok(Appended {
        lines: entries.len(),
        bytes: data.len(),
        added_newline,
        recently_written,
    })
}

/// Write a new session file (fork, clone): exclusive create, one write, fsync.
pub fn write_new(path: &Path, lines: &[serde_json::Value]) -> Result<(), WriteError> {
    let mut data = String::new();
    for l in lines {
        data.push_str(&crate::engine::actions::to_line(l));
        data.push('\n');
    }
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    f.write_all(data.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

/// Pi's session file name: `<ISO timestamp with : and . as ->_<session id>.jsonl`.
pub fn new_session_path(dir: &Path, session_id: &str, ts_ms: i64) -> PathBuf {
    let ts = js::iso_from_ms(ts_ms).replace([':', '.'], "-");
    dir.join(format!("{ts}_{session_id}.jsonl"))
}

/// Migrate a v1/v2 file to v3 in place: a `.bak` copy first, then the migrated text
/// through a temporary file, fsync, rename.
pub fn migrate(path: &Path) -> Result<PathBuf, WriteError> {
    let s = super::load_session(path)?;
    let bak = path.with_extension("jsonl.bak");
    if !bak.exists() {
        std::fs::copy(path, &bak)?;
        std::fs::File::open(&bak)?.sync_all()?;
    }
    let lines = crate::engine::actions::migrated_lines(&s);
    let tmp = path.with_extension("jsonl.bonsai-tmp");
    let _ = std::fs::remove_file(&tmp);
    write_new(&tmp, &lines)?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(bak)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session_file(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join("s.jsonl");
        std::fs::write(&p, text).unwrap();
        p
    }

    const BASE: &str = concat!(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-11-22T00:00:00.000Z","cwd":"/x"}"#,
        "\n",
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-11-22T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#,
        "\n"
    );

    fn entry(id: &str, parent: &str) -> serde_json::Value {
        serde_json::json!({"type":"label","id":id,"parentId":parent,"timestamp":"2026-11-22T00:00:02.000Z","targetId":"u1","label":"x"})
    }

    #[test]
    fn a_concurrent_append_makes_bonsai_decide_again() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), BASE);
        let mut calls = 0;
        let (s, a) = append_with(&p, |s| {
            calls += 1;
            if calls == 1 {
                // Pi appends between bonsai's read and its write.
                let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
                writeln!(f, r#"{{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-11-22T00:00:03.000Z","message":{{"role":"assistant","content":[]}}}}"#).unwrap();
            }
            let leaf = s.entries[s.leaf().unwrap()].id.to_string();
            Ok(vec![entry("b0000001", &leaf)])
        })
        .unwrap();
        assert_eq!(calls, 2, "decided again on the new file");
        assert_eq!(s.entries.len(), 2, "the second decision saw Pi's entry");
        assert_eq!(a.lines, 1);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.starts_with(BASE));
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["parentId"], "a1", "written under Pi's new leaf");
    }

    #[test]
    fn a_missing_final_newline_is_added_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), BASE.trim_end());
        let (_, a) = append_with(&p, |_| Ok(vec![entry("b0000002", "u1")])).unwrap();
        assert!(a.added_newline);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with("}\n"));
        assert!(text.starts_with(BASE.trim_end()));
    }

    #[test]
    fn old_versions_are_refused_until_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let p = session_file(dir.path(), &BASE.replace("\"version\":3", "\"version\":2"));
        let before = std::fs::read(&p).unwrap();
        let e = append_with(&p, |_| Ok(vec![entry("b0000003", "u1")])).unwrap_err();
        assert!(e.to_string().contains("bonsai migrate"));
        assert_eq!(std::fs::read(&p).unwrap(), before);
        migrate(&p).unwrap();
        assert_eq!(std::fs::read(p.with_extension("jsonl.bak")).unwrap(), before);
        append_with(&p, |_| Ok(vec![entry("b0000003", "u1")])).unwrap();
    }
}
