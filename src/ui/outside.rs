//! What the TUI reads from its surroundings, once, when it starts (the update never does).

use std::path::PathBuf;

/// What the app takes from outside, read once when bonsai starts: the clock, the working
/// directory, Pi's agent folder and the environment. A session opened later (the picker, the
/// first load) is built on the same values, so the update never reads them.
#[derive(Debug, Clone)]
pub struct Outside {
    pub now_ms: i64,
    pub clock: std::time::Instant,
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub env: crate::store::config::Environment,
    /// `$HOME` as Pi's /tree shortens tool paths with it.
    pub tree_home: Option<String>,
    /// The session file Pi waits on while bonsai runs (`BONSAI_PI_SESSION`: bonsai runs inside
    /// Pi with its package).
    pub pi_session: Option<PathBuf>,
    /// The folder of project folders bonsai was opened on (`bonsai ~/.pi/agent/sessions`):
    /// the picker lists every session under it.
    pub sessions_root: Option<PathBuf>,
    /// Where bonsai tells Pi which session to switch to (`BONSAI_PI_SWITCH_FILE`, made by the
    /// package's `/bonsai`): inside Pi, resuming a session is Pi's own switch, not a second Pi.
    pub pi_switch_file: Option<PathBuf>,
    /// Opened by `bonsai resume` on several matches: resuming one ends bonsai and runs Pi.
    pub resume_ends_bonsai: bool,
}

impl Outside {
    pub fn read() -> Outside {
        Outside {
            now_ms: crate::store::clock::now_ms(),
            clock: std::time::Instant::now(),
            cwd: crate::store::config::cwd(),
            agent_dir: crate::store::config::agent_dir(),
            env: crate::store::config::Environment::read(),
            tree_home: crate::store::config::tree_home(),
            pi_session: std::env::var_os("BONSAI_PI_SESSION")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            sessions_root: None,
            pi_switch_file: std::env::var_os("BONSAI_PI_SWITCH_FILE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            resume_ends_bonsai: false,
        }
    }
}
