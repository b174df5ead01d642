//! The UI's jobs: slow work off the key path, a struct per job with its own typed output.
//!
//! - Each implements `runner::Job`; the runner starts it on a worker of tokio's blocking pool.
//! - A model call blocks its worker on the runtime while its requests run as tasks.
//! - Counting runs on a pool of low priority, so a key press never waits on it.
//! - Tests run a job in place (`runner::run_here`, `runner::run_now`).

mod document;
mod selection;
mod sessions;
mod summary;
mod views;

pub use document::*;
pub use selection::*;
pub use sessions::*;
pub use summary::*;
pub use views::*;
