//! From bytes to a session: the line scanners, Pi's forgiving JSON and JavaScript's numbers,
//! the entry model, which Pi release wrote what, and Pi's model list (windows, limits).

pub mod bytes;
pub mod entry;
pub mod js;
pub mod lenient;
pub mod models;
pub mod pi_version;
pub mod scan;
pub mod session;
pub mod table;
