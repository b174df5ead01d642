//! bonsai's own last write to each session: the file's length and modification time right
//! after it, kept in `<agentDir>/bonsai/own-writes.json` (written whole through a temporary
//! file and a rename; mode 0600). A session written "in the last seconds" whose length and time
//! are still those is not a sign that Pi is running: bonsai wrote last. Best effort: a record
//! that cannot be read or written only brings the warning back.

use std::path::{Path, PathBuf};

/// How many sessions the record keeps (the most recent writes).
const KEEP: usize = 200;

fn record_file() -> PathBuf {
    super::config::agent_dir().join("bonsai").join("own-writes.json")
}

/// Length and modification time (ns since the epoch) of a file's metadata.
fn stamp(meta: &std::fs::Metadata) -> Option<(u64, i128)> {
    let t = meta.modified().ok()?;
    let ns = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    };
    Some((meta.len(), ns))
}

fn load() -> Vec<(String, u64, i128)> {
    // 200 lines of ~150 bytes: anything near 1 MB was not written by bonsai.
    let Ok(text) = super::private::read_at_most(&record_file(), 1 << 20) else {
        return vec![];
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else {
        return vec![];
    };
    v.get("writes")
        .and_then(|w| w.as_array())
        .into_iter()
        .flatten()
        .filter_map(|w| {
            Some((
                w.get("path")?.as_str()?.to_string(),
                w.get("len")?.as_u64()?,
                w.get("mtimeNs")?.as_str()?.parse().ok()?,
            ))
        })
        .collect()
}

/// Note that bonsai has just written `path`, leaving it `len` bytes long (call after the write
/// is on disk). Nothing is noted when the file is already longer: someone wrote after bonsai.
pub fn note(path: &Path, len_after: u64) {
    let Ok(real) = std::fs::canonicalize(path) else { return };
    let Some((len, ns)) = std::fs::metadata(&real).ok().as_ref().and_then(stamp) else {
        return;
    };
    if len != len_after {
        return;
    }
    let key = real.to_string_lossy().to_string();
    // Under the record's lock: two bonsai writing two sessions at once each keep the other's
    // line (a lost line brought back a spurious "Pi may be running").
    let _ = super::private::locked(&record_file(), || {
        let mut all = load();
        all.retain(|(p, _, _)| *p != key);
        all.push((key, len, ns));
        let from = all.len().saturating_sub(KEEP);
        let writes: Vec<serde_json::Value> = all[from..]
            .iter()
            .map(|(p, l, n)| serde_json::json!({"path": p, "len": l, "mtimeNs": n.to_string()}))
            .collect();
        save(&serde_json::json!({ "writes": writes }))
    });
}

/// Whether the file as it is now (`meta`) is exactly as bonsai's own last write left it.
pub fn is_ours(path: &Path, meta: &std::fs::Metadata) -> bool {
    let (Ok(real), Some((len, ns))) = (std::fs::canonicalize(path), stamp(meta)) else {
        return false;
    };
    let key = real.to_string_lossy();
    load().iter().any(|(p, l, n)| *p == key && *l == len && *n == ns)
}

fn save(v: &serde_json::Value) -> std::io::Result<()> {
    super::private::write(&record_file(), v.to_string().as_bytes())
}
