//! Rewriting a session: deleting a branch and restoring it, and the rewrite half of `repair`;
//! the one place bonsai rewrites a session. The removed
//! lines go to `FILE.deleted-TIMESTAMP.jsonl` and the whole original to `FILE.bak` first
//! (both fsynced), then the new text goes through a temporary file, fsync and rename. It is
//! refused when the file is not the one the user saw, or was written in the last seconds (Pi
//! may be running: it appends by reopening the path, and an append landing on the old file
//! in the instant of the rename would end up in the backup; bonsai checks for that and
//! carries such lines over).

use super::faults;
use super::procs::writers_of;
use super::write::{
    FileMode, Lease, RepairPlan, Repaired, WriteError, backup, repair_plan, sync_dir, write_file_new, write_temp,
};
use super::{journal, own_writes};
use crate::engine::edit::delete::{self, DeletePlan, DeleteRefusal};
use crate::engine::load::session::Session;
use crate::engine::view::tree::Tree;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How recently a session may have been written and still be rewritten.
pub const QUIET: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    #[error(transparent)]
    Refused(#[from] DeleteRefusal),
    #[error("entry {0} is not in the session: `bonsai tree FILE` lists the entries with their ids")]
    NoSuchEntry(String),
    #[error(
        "the file changed since bonsai read it (Pi or another program wrote to it): nothing deleted; look at it again and repeat"
    )]
    Changed,
    #[error(
        "the file changed since bonsai read it (Pi or another program wrote to it): nothing restored; look at it again and repeat"
    )]
    ChangedBeforeRestore,
    #[error(
        "the file was written {0:.1} s ago: Pi may be running this session, and rewriting it now could lose what Pi writes next. Nothing changed; close Pi's session (or wait until it has been idle for 10 s) and run the command again"
    )]
    RecentlyWritten(f64),
    #[error(
        "{0}: rewriting the file now could lose what it writes next. Nothing changed; close that Pi (or /resume another project's session) and run the command again"
    )]
    PiRunning(String),
    #[error(
        "this is a version {0} session file; bonsai deletes branches only in version 3 files. Run `bonsai migrate FILE` first (it keeps a .bak)"
    )]
    NeedsMigration(f64),
    #[error("{0}")]
    NoBackup(String),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Open(#[from] super::files::OpenError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// What a delete did.
#[derive(Debug, Clone)]
pub struct Deleted {
    pub plan: DeletePlan,
    pub removed_file: PathBuf,
    pub backup: PathBuf,
    /// Bytes another writer appended to the old file in the instant of the rename, appended
    /// to the new file after it (0 almost always).
    pub carried: usize,
    /// Processes that still had the old file open for writing after bonsai waited for them:
    /// what they write there later is not in the session (said to the user).
    pub still_open: Vec<String>,
}

/// Seconds since the file was last written (`None` when the clock or the file cannot say).
fn age(meta: &std::fs::Metadata) -> Option<f64> {
    let m = meta.modified().ok()?;
    Some(
        std::time::SystemTime::now()
            .duration_since(m)
            .unwrap_or_default()
            .as_secs_f64(),
    )
}

fn quiet_enough(path: &Path, meta: &std::fs::Metadata) -> Result<(), DeleteError> {
    // Pi waiting for this bonsai (`/bonsai`) wrote last, and reopens the file after.
    if super::files::pi_waits_on(path) {
        return Ok(());
    }
    // bonsai's own last write (an archive, a label, a restore just before) is not Pi's.
    if !super::own_writes::is_ours(path, meta)
        && let Some(a) = age(meta).filter(|a| *a < QUIET.as_secs_f64())
    {
        return Err(DeleteError::RecentlyWritten(a));
    }
    // Quiet by the clock, or last written by bonsai: the kernel is asked too, since an idle
    // Pi holds no descriptor and writes again whoever wrote last.
    match super::procs::pi_may_write(path) {
        Some(who) => Err(DeleteError::PiRunning(who)),
        None => Ok(()),
    }
}

/// Whether the file may be rewritten now, as the preview says before asking.
pub fn check_quiet(path: &Path) -> Result<(), DeleteError> {
    quiet_enough(path, &std::fs::metadata(path)?)
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    path.with_file_name(format!("{name}{suffix}"))
}

fn stamp() -> String {
    crate::engine::load::js::iso_from_ms(super::clock::now_ms()).replace([':', '.'], "-")
}

/// How long a rewrite waits for a process that opened the old file for writing to close it
/// (Pi opens, writes and closes in one call; a slow writer holds it up to a second).
pub const HOLDERS_WAIT: Duration = Duration::from_secs(5);

/// What a rewrite carried over from the old file.
#[derive(Debug, Clone, Default)]
pub(super) struct Carried {
    bytes: usize,
    /// Processes still holding the old file open for writing when bonsai stopped waiting.
    still_open: Vec<String>,
}

/// Replace `target` (still exactly `expected`) with `data`, which is already in `tmp`:
/// the rename happens only if the file has not changed; whatever lands on the old file after
/// (a writer that opened it before the rename, however slow) is carried over.
pub(super) fn swap_in(target: &Path, tmp: &Path, expected: &[u8]) -> Result<Carried, DeleteError> {
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::fs::MetadataExt;
    let mut old = std::fs::File::open(target)?;
    let lease = super::write::Lease::take(&old);
    let meta = old.metadata()?;
    // Read through the leased descriptor: a second open would wait on the lease itself.
    let same = meta.len() == expected.len() as u64 && {
        let mut now = Vec::with_capacity(expected.len());
        old.read_to_end(&mut now)?;
        now == expected
    };
    if !same {
        let _ = std::fs::remove_file(tmp);
        return Err(DeleteError::Changed);
    }
    if let Err(e) = faults::op("rename", || std::fs::rename(tmp, target)) {
        if !faults::is_crash(&e) {
            let _ = std::fs::remove_file(tmp);
        }
        return Err(e.into());
    }
    sync_dir(target);
    drop(lease);
    // Pi opens the path for each append; an open that was already under way (or waiting on
    // the lease) reached the old file. Give it the moment it needs, then wait while any
    // process holds the old file open for writing: what it writes there is carried over
    // once it closes it (whole lines only).
    std::thread::sleep(Duration::from_millis(50));
    let deadline = std::time::Instant::now() + HOLDERS_WAIT;
    let still_open = loop {
        let holders = writers_of(meta.dev(), meta.ino());
        if holders.is_empty() || std::time::Instant::now() >= deadline {
            break holders;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let len = old.metadata()?.len() as usize;
    if len <= expected.len() {
        return Ok(Carried { bytes: 0, still_open });
    }
    let mut extra = Vec::new();
    old.seek(SeekFrom::Start(expected.len() as u64))?;
    old.read_to_end(&mut extra)?;
    let whole = extra.iter().rposition(|b| *b == b'\n').map(|k| k + 1).unwrap_or(0);
    if whole == 0 {
        return Ok(Carried { bytes: 0, still_open });
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(target)?;
    f.write_all(&extra[..whole])?;
    f.sync_all()?;
    Ok(Carried {
        bytes: whole,
        still_open,
    })
}

/// The fault suite's simulated kill (nothing may run after it).
fn crashed(e: &DeleteError) -> bool {
    match e {
        DeleteError::Io(io) => faults::is_crash(io),
        DeleteError::Write(WriteError::Failed { source, .. } | WriteError::NewFile { source, .. }) => {
            faults::is_crash(source)
        }
        DeleteError::Write(WriteError::Io(io)) => faults::is_crash(io),
        _ => false,
    }
}

/// Delete the branch at `target_id` from the session at `path`, which must still be exactly
/// `seen` (the bytes the user's preview was made from).
pub fn delete_branch(path: &Path, seen: &[u8], target_id: &str) -> Result<Deleted, DeleteError> {
    let target = std::fs::canonicalize(path)?;
    let meta = std::fs::metadata(&target)?;
    let bytes = super::files::read_regular(&target)?;
    if bytes != seen {
        return Err(DeleteError::Changed);
    }
    quiet_enough(&target, &meta)?;
    let s = Session::from_bytes(bytes).map_err(|source| super::files::OpenError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    let bytes = &s.buf[..];
    if s.header.version < 3.0 {
        return Err(DeleteError::NeedsMigration(s.header.version));
    }
    let t = s
        .idx_of(target_id)
        .ok_or_else(|| DeleteError::NoSuchEntry(target_id.to_string()))?;
    let plan = delete::plan(&s, &Tree::build(&s), t)?;
    let (kept, gone) = delete::rewrite(&s, &plan);
    let removed_file = sibling(&target, &format!(".deleted-{}.jsonl", stamp()));
    write_file_new(&removed_file, &gone, FileMode::private_like(&target))?;
    super::made::note(&removed_file);
    // The backups beside it before this delete: one this delete makes and then fails after
    // is removed with the removed lines' copy (a full disk left a complete, useless one).
    let before = siblings_with(&target, ".bak");
    let mut made_bak = None;
    let rest = (|| {
        let bak = backup(&target, bytes, "bak")?;
        made_bak = Some(bak.clone());
        let tmp = write_temp(&target, &kept, FileMode::same_as(&target)).map_err(|source| WriteError::Failed {
            path: target.clone(),
            source,
        })?;
        Ok::<_, DeleteError>((bak, swap_in(&target, &tmp, bytes)?))
    })();
    let (bak, carried) = match rest {
        Ok(r) => r,
        Err(e) => {
            // Nothing was deleted: the removed lines' copy would only mislead a restore (a
            // killed process leaves it; a restore then refuses, the file being the original).
            if !crashed(&e) {
                let _ = std::fs::remove_file(&removed_file);
                if let Some(b) = made_bak.filter(|b| !before.contains(b)) {
                    let _ = std::fs::remove_file(b);
                }
            }
            return Err(e);
        }
    };
    // bonsai wrote it last: its next write right after is not "Pi seems to be running".
    if let Ok(m) = std::fs::metadata(&target) {
        super::own_writes::note(&target, m.len());
    }
    Ok(Deleted {
        plan,
        removed_file,
        backup: bak,
        carried: carried.bytes,
        still_open: carried.still_open,
    })
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    pub backup: PathBuf,
    /// The removed lines' file, renamed with `.restored` (kept, but no longer a candidate).
    pub removed_file: PathBuf,
    /// Lines appended since the delete, kept after the restored ones.
    pub appended: usize,
    /// Bytes carried over from writers that had the old file open (see [`Deleted::carried`]).
    pub carried: usize,
    /// As [`Deleted::still_open`].
    pub still_open: Vec<String>,
}

/// Files beside `target` whose names start with `prefix`, newest name last.
fn siblings_with(target: &Path, prefix: &str) -> Vec<PathBuf> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let full = format!("{name}{prefix}");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&full))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The restore the last delete allows.
pub struct RestorePlan {
    pub backup: PathBuf,
    pub removed_file: PathBuf,
    pub removed_lines: usize,
    /// The file after the restore.
    pub bytes: Vec<u8>,
    /// Lines appended since the delete (they stay, after the restored ones).
    pub appended: usize,
    /// The file as it is now.
    now: Vec<u8>,
}

/// The restore the last delete allows.
pub fn restore_plan(path: &Path) -> Result<RestorePlan, DeleteError> {
    let target = std::fs::canonicalize(path)?;
    let now = super::files::read_regular(&target)?;
    let removed = siblings_with(&target, ".deleted-")
        .into_iter()
        .rfind(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .ok_or_else(|| {
            DeleteError::NoBackup(format!(
                "nothing to restore: no {}.deleted-*.jsonl beside it (bonsai delete-branch writes one)",
                target
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default()
            ))
        })?;
    let gone = super::write::read_side_file(&removed, &target)?;
    let mut backups = siblings_with(&target, ".bak");
    backups.retain(|p| {
        let n = p.to_string_lossy();
        !n.contains(".bak-repair")
    });
    // The plain FILE.bak first, then stamped ones newest first.
    backups.sort_by_key(|p| (p.to_string_lossy().contains(".bak-"), std::cmp::Reverse(p.clone())));
    let mut looked = Vec::new();
    for b in backups {
        // A link or anything but a regular file is not a backup bonsai made.
        let Ok(original) = super::write::read_side_file(&b, &target) else {
            continue;
        };
        looked.push(b.clone());
        if let Some((bytes, appended)) = delete::restored(&original, &gone, &now) {
            return Ok(RestorePlan {
                backup: b,
                removed_file: removed,
                removed_lines: gone.split(|c| *c == b'\n').filter(|l| !l.is_empty()).count(),
                bytes,
                appended,
                now,
            });
        }
    }
    // Say which side does not fit: the backup (missing, not a file, changed) or the session.
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let first_removed_id = gone
        .split(|c| *c == b'\n')
        .find(|l| !l.is_empty())
        .and_then(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .and_then(|v| v["id"].as_str().map(|s| format!("\"id\":\"{s}\"")));
    let back_already = first_removed_id.is_some_and(|id| memchr::memmem::find(&now, id.as_bytes()).is_some());
    Err(DeleteError::NoBackup(if looked.is_empty() {
        format!(
            "nothing restored: the backup the delete made ({name}.bak) is missing or is not a regular file, so the removed lines in {} cannot be put back in their place. The session is unchanged",
            removed.display()
        )
    } else if back_already {
        format!(
            "nothing restored: the lines in {} are in the session already (was it restored before?). The session is unchanged",
            removed.display()
        )
    } else {
        format!(
            "nothing restored: neither {} fits: the backup no longer holds the file as it was before the delete, or the session was changed other than by appending since. The session is unchanged; the removed lines stay in {}",
            looked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            removed.display()
        )
    }))
}

/// Put back the branch the last `delete-branch` removed: the backup, then whatever was
/// appended since the delete.
pub fn restore(path: &Path) -> Result<Restored, DeleteError> {
    let target = std::fs::canonicalize(path)?;
    quiet_enough(&target, &std::fs::metadata(&target)?)?;
    let p = restore_plan(&target)?;
    let tmp = write_temp(&target, &p.bytes, FileMode::same_as(&target)).map_err(|source| WriteError::Failed {
        path: target.clone(),
        source,
    })?;
    let carried = swap_in(&target, &tmp, &p.now).map_err(|e| match e {
        DeleteError::Changed => DeleteError::ChangedBeforeRestore,
        e => e,
    })?;
    if let Ok(m) = std::fs::metadata(&target) {
        super::own_writes::note(&target, m.len());
    }
    let done = sibling(&p.removed_file, ".restored");
    std::fs::rename(&p.removed_file, &done)?;
    sync_dir(&done);
    Ok(Restored {
        backup: p.backup,
        removed_file: done,
        appended: p.appended,
        carried: carried.bytes,
        still_open: carried.still_open,
    })
}
/// Remove the unfinished end of a session ([`repair_plan`]). The file is cut back in place
/// after a complete backup; anything appended since the plan refuses the repair. Bytes
/// followed by Pi's (a glued or closed fragment) are taken out by a rewrite, as
/// `delete-branch` does one: temporary file, fsync, rename, what is appended meanwhile
/// carried over.
pub fn repair(path: &Path, force: bool) -> Result<Repaired, WriteError> {
    let RepairPlan {
        target,
        bytes,
        removed,
        ours,
    } = repair_plan(path, force)?;
    let backup = backup(&target, &bytes, "bak-repair")?;
    if removed.end < bytes.len() {
        let mut kept = Vec::with_capacity(bytes.len() - removed.len());
        kept.extend_from_slice(&bytes[..removed.start]);
        kept.extend_from_slice(&bytes[removed.end..]);
        let tmp = write_temp(&target, &kept, FileMode::same_as(&target)).map_err(|source| WriteError::Failed {
            path: target.clone(),
            source,
        })?;
        swap_in(&target, &tmp, &bytes).map_err(|e| match e {
            DeleteError::Changed => WriteError::Repair(format!(
                "{}: the file changed while bonsai was repairing it; nothing removed. Run `bonsai repair` again to see what it holds now",
                path.display()
            )),
            DeleteError::Io(e) => WriteError::Io(e),
            e => WriteError::Repair(e.to_string()),
        })?;
        let _ = journal::remove(&target);
        if let Ok(m) = std::fs::metadata(&target) {
            own_writes::note(&target, m.len());
        }
        return Ok(Repaired {
            removed,
            backup,
            ours,
            rewritten: true,
        });
    }
    let f = faults::op("open", || OpenOptions::new().write(true).open(&target))?;
    // Under a lease no one can append between the check and the cut (see `append_with`).
    let _lease = Lease::take(&f);
    if f.metadata()?.len() != bytes.len() as u64 {
        return Err(WriteError::Repair(format!(
            "{}: the file changed while bonsai was repairing it (something was appended after the fragment); nothing removed. Run `bonsai repair` again to see what the file ends with now",
            path.display()
        )));
    }
    faults::op("truncate", || f.set_len(removed.start as u64))?;
    faults::op("sync", || f.sync_all())?;
    let _ = journal::remove(&target);
    Ok(Repaired {
        removed,
        backup,
        ours,
        rewritten: false,
    })
}
