//! Checks against Pi of the files a fault or a kill left behind, batched: node starts once
//! per batch of files, not once per fault.

use bonsai::store;
use std::path::{Path, PathBuf};

/// What Pi must load from a file a fault left behind.
pub enum PiExpect {
    /// Exactly what it loaded before the write (a failed write, or a fragment Pi skips).
    Unchanged { before: PathBuf },
    /// What it loaded before plus the entries bonsai wrote, and the context bonsai computes.
    Written {
        before: PathBuf,
        new_ids: Vec<String>,
        context: Vec<String>,
    },
    /// A session as bonsai computes it (a new fork or clone).
    AsBonsai { context: Vec<String> },
    /// The same entries and context size as before (a migrated v1 file gets fresh ids).
    SameShape { before: PathBuf },
}

/// Files kept for the one batched check against Pi at the end (node starts once per batch,
/// not once per fault); identical files are kept once.
pub struct PiChecks {
    dir: tempfile::TempDir,
    kept: std::collections::HashMap<Vec<u8>, PathBuf>,
    checks: Vec<(String, PathBuf, PiExpect)>,
}

impl PiChecks {
    pub fn new() -> PiChecks {
        PiChecks {
            dir: tempfile::tempdir().unwrap(),
            kept: Default::default(),
            checks: vec![],
        }
    }

    /// A copy of `bytes` that lives until the check.
    pub fn keep(&mut self, bytes: &[u8]) -> PathBuf {
        let n = self.kept.len();
        let dir = self.dir.path().to_path_buf();
        self.kept
            .entry(bytes.to_vec())
            .or_insert_with(|| {
                let p = dir.join(format!("{n}.jsonl"));
                std::fs::write(&p, bytes).unwrap();
                p
            })
            .clone()
    }

    pub fn expect(&mut self, what: &str, now: &[u8], e: PiExpect) {
        let p = self.keep(now);
        self.checks.push((what.to_string(), p, e));
    }

    /// Run Pi on every kept file and compare; returns the failures.
    pub fn run(self, pi: &super::PiSession) -> (usize, Vec<String>) {
        let mut files: Vec<PathBuf> = self.kept.values().cloned().collect();
        files.sort();
        let loaded: std::collections::HashMap<PathBuf, serde_json::Value> =
            files.iter().cloned().zip(pi.load(&files)).collect();
        let ids = |v: &serde_json::Value, k: &str| -> Vec<String> {
            v[k].as_array()
                .map(|a| a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect())
                .unwrap_or_default()
        };
        let mut failures = vec![];
        for (what, p, e) in &self.checks {
            let now = &loaded[p];
            if now["ok"] != true {
                failures.push(format!("{what}: Pi does not load the file: {}", now["error"]));
                continue;
            }
            let bad = match e {
                PiExpect::Unchanged { before } => {
                    let b = &loaded[before];
                    (ids(now, "ids") != ids(b, "ids")
                        || now["leafId"] != b["leafId"]
                        || ids(now, "contextIds") != ids(b, "contextIds"))
                    .then(|| "Pi loads something else than before".to_string())
                }
                PiExpect::Written {
                    before,
                    new_ids,
                    context,
                } => {
                    let mut want = ids(&loaded[before], "ids");
                    want.extend(new_ids.iter().cloned());
                    if ids(now, "ids") != want {
                        Some(format!("Pi's entries are not the old ones plus {new_ids:?}"))
                    } else if &ids(now, "contextIds") != context {
                        Some("Pi's context differs from bonsai's".to_string())
                    } else {
                        None
                    }
                }
                PiExpect::AsBonsai { context } => (&ids(now, "contextIds") != context)
                    .then(|| "Pi's context of the new session differs from bonsai's".to_string()),
                PiExpect::SameShape { before } => {
                    let b = &loaded[before];
                    (now["entries"] != b["entries"] || now["messages"] != b["messages"])
                        .then(|| "Pi loads a different session after migrate".to_string())
                }
            };
            if let Some(b) = bad {
                failures.push(format!("{what}: {b}"));
            }
        }
        (self.checks.len(), failures)
    }
}

/// The entries bonsai computes the context from, as ids.
pub fn bonsai_context(p: &Path) -> Vec<String> {
    let s = store::load_session(p).unwrap();
    let Some(leaf) = s.leaf() else { return vec![] };
    bonsai::engine::view::context::context_entries(&s, &s.path_to(leaf))
        .into_iter()
        .map(|i| s.entries[i].id.to_string())
        .collect()
}

/// The ids of whole entry lines in `bytes`.
pub fn line_ids(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["id"].as_str().map(String::from))
        .collect()
}
