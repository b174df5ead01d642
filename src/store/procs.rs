//! Other processes, as Linux's `/proc` shows them: which hold a file open for writing, and
//! which are Pi. Asked before a session is moved or rewritten, because a clock says only when
//! the file was last written, not whether its writer is still there. Processes this user may
//! not inspect are not seen.

use std::path::{Path, PathBuf};

/// Processes other than this one holding the file `(dev, ino)` open for writing (Linux
/// `/proc`; processes this user may not inspect are not seen), as "pid (name)".
pub fn writers_of(dev: u64, ino: u64) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let pid = p.file_name().to_string_lossy().to_string();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(m) = std::fs::metadata(fd.path()) else { continue };
            if (m.dev(), m.ino()) != (dev, ino) {
                continue;
            }
            // fdinfo's "flags:" is octal; the low two bits are the access mode.
            let writes = std::fs::read_to_string(p.path().join("fdinfo").join(fd.file_name()))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("flags:"))
                        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
                })
                .is_none_or(|flags| flags & 3 != 0);
            if writes {
                let name = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
                out.push(format!("{pid} ({})", name.trim()));
                break;
            }
        }
    }
    out
}

/// A Pi process this user runs: its id, its working folder, its agent folder
/// (`PI_CODING_AGENT_DIR` in its environment, when set), and the session or session folder
/// its command line names.
#[derive(Debug, Clone)]
pub struct RunningPi {
    pub pid: u32,
    pub cwd: PathBuf,
    pub agent_dir: Option<PathBuf>,
    /// `--session FILE`.
    pub session: Option<PathBuf>,
    /// `--session-dir DIR`.
    pub session_dir: Option<PathBuf>,
    /// `--no-session`: it writes no session file.
    pub no_session: bool,
}

/// The Pi processes running now, except this process's own ancestors' Pi when `skip_pid`
/// names it. Pi sets its process title to `pi` (`pi-rpc` in RPC mode); a Pi started from its
/// package's script path is recognized by that path.
pub fn running_pis() -> Vec<RunningPi> {
    let me = std::process::id();
    let mut out = vec![];
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = std::fs::read(p.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).to_string())
            .collect();
        let comm = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
        if !is_pi(comm.trim(), &args) {
            continue;
        }
        let Ok(cwd) = std::fs::read_link(p.path().join("cwd")) else {
            continue;
        };
        let environ = std::fs::read(p.path().join("environ")).unwrap_or_default();
        let agent_dir = environ
            .split(|b| *b == 0)
            .find_map(|v| v.strip_prefix(b"PI_CODING_AGENT_DIR="))
            .filter(|v| !v.is_empty())
            .map(|v| PathBuf::from(String::from_utf8_lossy(v).to_string()));
        let after = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .map(|v| cwd.join(v))
        };
        out.push(RunningPi {
            pid,
            session: after("--session"),
            session_dir: after("--session-dir"),
            no_session: args.iter().any(|a| a == "--no-session"),
            cwd,
            agent_dir,
        });
    }
    out
}

/// Whether a process with this `comm` and command line is Pi.
fn is_pi(comm: &str, args: &[String]) -> bool {
    let base = |a: &String| Path::new(a).file_name().map(|n| n.to_string_lossy().to_string());
    matches!(comm, "pi" | "pi-rpc")
        || args.first().and_then(base).is_some_and(|b| b == "pi" || b == "pi-rpc")
        || args.iter().take(3).any(|a| a.contains("pi-coding-agent/dist/"))
}

/// A running Pi that may append to `session`, said as the reason not to move or rewrite it:
/// - a Pi whose command line names it (`--session`);
/// - a Pi whose sessions go to its folder: it may have any of them open, and /resume moves
///   between them without a trace outside the process.
///
/// The Pi that started this bonsai (`/bonsai`) is skipped: it waits on the session it handed
/// over, which the callers check apart.
pub fn pi_may_write(session: &Path) -> Option<String> {
    let real = std::fs::canonicalize(session).ok()?;
    let folder = real.parent()?.to_path_buf();
    let host = std::env::var_os("BONSAI_PI_SESSION").is_some_and(|h| !h.is_empty());
    let mine = if host { ancestors() } else { vec![] };
    let settings = super::config::load_settings(&super::config::cwd());
    for pi in running_pis() {
        if pi.no_session || mine.contains(&pi.pid) {
            continue;
        }
        let theirs = match (&pi.session, &pi.session_dir) {
            (Some(f), _) => {
                if std::fs::canonicalize(f).ok().as_ref() == Some(&real) {
                    return Some(format!("Pi (process {}) was started on it", pi.pid));
                }
                continue;
            }
            (None, Some(d)) => d.clone(),
            (None, None) => {
                let agent = pi.agent_dir.clone().unwrap_or_else(super::config::agent_dir);
                super::config::session_dir_in(&agent, &pi.cwd, &settings).0
            }
        };
        if std::fs::canonicalize(&theirs).ok().as_ref() == Some(&folder) {
            return Some(format!(
                "Pi (process {}) runs in {}, whose sessions are in this folder, and may have this one open",
                pi.pid,
                pi.cwd.display()
            ));
        }
    }
    None
}

/// A Pi already started on `session` (`--session`), other than one this bonsai runs under:
/// resuming the file in a second Pi would have two writers append to it (the second's
/// entries branch off the first's leaf as it knew it).
pub fn pi_started_on(session: &Path) -> Option<u32> {
    let real = std::fs::canonicalize(session).ok()?;
    let mine = ancestors();
    running_pis().into_iter().find_map(|pi| {
        let f = pi.session.as_ref()?;
        (!mine.contains(&pi.pid) && std::fs::canonicalize(f).ok().as_ref() == Some(&real)).then_some(pi.pid)
    })
}

/// The process ids from this process up to the first (its parent, its parent's parent, …).
pub fn ancestors() -> Vec<u32> {
    let mut out = vec![];
    let mut pid = std::process::id();
    for _ in 0..64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            break;
        };
        // The fields after the command's name in parentheses: state, then the parent's id.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            break;
        };
        if ppid <= 1 {
            break;
        }
        out.push(ppid);
        pid = ppid;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_is_known_by_its_title_or_its_script() {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert!(is_pi("pi", &s(&["pi"])));
        assert!(is_pi("node", &s(&["pi", "--mode", "rpc"])));
        assert!(is_pi(
            "node",
            &s(&[
                "node",
                "/usr/lib/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
            ])
        ));
        assert!(!is_pi("node", &s(&["node", "server.js"])));
        assert!(!is_pi("bash", &s(&["bash", "-c", "pip install x"])));
        assert!(!ancestors().is_empty());
    }
}
