//! Everything bonsai reads from or writes to disk and the environment: session files (read,
//! mapped, appended to, written new), Pi's configuration, the session directories, the clock.
//! The engine gets values from here; the UI and the CLI call here for every file.

pub mod backups;
pub mod clock;
pub mod config;
pub mod exports;
pub mod faults;
pub mod files;
pub mod index;
pub mod journal;
pub mod made;
pub mod mapped;
pub mod own_writes;
pub mod pi_version;
pub mod pins;
pub mod private;
pub mod procs;
pub mod resume;
pub mod rewrite;
pub mod search;
pub mod sessions;
pub mod trash;
pub mod usage;
pub mod write;

pub use files::{OpenError, human_bytes, load_session, reload};
pub use rewrite::repair;
pub use sessions::{
    Problem, SessionInfo, count_all_sessions, list_sessions, newest_in_dir, newest_session, session_info,
};
pub use write::{
    Appended, WriteError, append_lines, append_with, migrate, new_session_path, write_document, write_new,
};
