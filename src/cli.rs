//! Command line: the clap tree and the dispatch, thin glue over the engine and the store.
//! `read` holds the commands that only read, `write` the ones that append or write files,
//! `common` what they share. Every command has `--json`.

// Every print in the CLI goes through `out` (control characters shown, a full output said
// instead of a panic): these shadow std's macros for the modules declared below.
macro_rules! println {
    () => { $crate::cli::out::stdout("\n") };
    ($($t:tt)*) => { $crate::cli::out::stdout(&format!("{}\n", format_args!($($t)*))) };
}
#[allow(unused_macros)]
macro_rules! print {
    ($($t:tt)*) => { $crate::cli::out::stdout(&format!($($t)*)) };
}
macro_rules! eprintln {
    () => { $crate::cli::out::stderr("\n") };
    ($($t:tt)*) => { $crate::cli::out::stderr(&format!("{}\n", format_args!($($t)*))) };
}
macro_rules! eprint {
    ($($t:tt)*) => { $crate::cli::out::stderr(&format!($($t)*)) };
}

mod args;
mod audit;
mod bill;
mod branch;
mod branches;
mod common;
mod compact;
mod compare;
mod context;
mod cut;
mod export;
mod fork;
mod housekeeping;
mod index;
mod inspect;
mod label;
mod list;
mod migrate;
mod navigate;
pub mod out;
mod prune;
mod rename;
mod repair;
mod resume;
mod search;
mod serve;
mod stats;
mod tree;
mod undo;
mod usage;
mod write_flow;

use args::PROJECT_SESSION;
pub use args::{CutBudget, LeafArg, RequiredSessionArg, SessionArg, WriteFlags};
pub use branch::BranchArgs;
pub use branches::{BackupsArgs, BranchAtArgs, RestoreArgs};
use clap::{Parser, Subcommand};
use color_eyre::eyre::Result;
pub use compact::CompactArgs;
pub use compare::CompareArgs;
pub use context::ContextArgs;
pub use cut::CutArgs;
pub use export::ExportArgs;
pub use fork::{CloneArgs, ForkArgs};
pub use inspect::InspectArgs;
pub use label::LabelArgs;
pub use list::ListArgs;
pub use migrate::MigrateArgs;
pub use navigate::NavigateArgs;
pub use prune::{EditArgs, PruneArgs};
pub use rename::RenameArgs;
pub use repair::RepairArgs;
pub use search::SearchArgs;
pub use serve::ServeArgs;
pub use stats::StatsArgs;
use std::path::PathBuf;
pub use tree::TreeArgs;
pub use undo::UndoArgs;

#[derive(Parser, Debug)]
#[command(
    name = "bonsai",
    disable_version_flag = true,
    about = "Browse, prune and compact Pi coding-agent session trees"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The Pi release to reproduce (0.87.1, 1.5.2, 1.6.0; another maps to the nearest below).
    /// Default: $BONSAI_PI_VERSION, the bonsai.piVersion setting, the `pi` on PATH, else the
    /// newest bonsai knows.
    #[arg(long, global = true, value_name = "VERSION")]
    pub pi_version: Option<String>,
    /// Print bonsai's version and the Pi release it follows.
    #[arg(short = 'V', long = "version")]
    pub version: bool,
    /// A session file, or a directory whose newest session to open (default: this project's).
    pub path: Option<PathBuf>,
    /// Open with this entry selected (an id, as `bonsai search` prints it, or idx:N).
    #[arg(long, value_name = "ID", requires = "path")]
    pub at: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The messages the model would see at the leaf, with estimated and exact tokens.
    Context(ContextArgs),
    /// Where a compaction would cut now: summarized, kept, split turn.
    Cut(CutArgs),
    /// What a branch summary would cover when navigating from the leaf to TARGET.
    Branch(BranchArgs),
    /// The tree as plain text in Pi's /tree layout.
    Tree(TreeArgs),
    /// Entries by type, tokens by role and tool, largest entries, context against the window.
    Stats(StatsArgs),
    /// Everything at once, under the oracle's field names (tree, context, cut, branch).
    Inspect(InspectArgs),
    /// Compact at the leaf: summarize what the cut leaves out and append Pi's compaction entry.
    Compact(CompactArgs),
    /// What each compaction and branch summary on the leaf's path lost of the entries it
    /// replaced (files, commands, errors, decisions, values, open tasks), with the entry each
    /// came from; --give-back writes an amended summary holding the lost items.
    Audit(audit::AuditArgs),
    /// Run summary strategies side by side on the compaction at the leaf: calls, tokens, cost,
    /// time, size and the recall score of each; --write STRATEGY writes one as the compaction.
    Compare(CompareArgs),
    /// Move to TARGET like Pi's /tree: with a branch summary, or with an invisible marker so
    /// Pi resumes there.
    Navigate(NavigateArgs),
    /// Set (or with no LABEL, clear) the label of an entry.
    Label(LabelArgs),
    /// Name the session (Pi's session_info).
    Rename(RenameArgs),
    /// A new session up to a user message (Pi's /fork); prints the new file and the message.
    Fork(ForkArgs),
    /// The active branch as a new session file (Pi's /clone).
    Clone(CloneArgs),
    /// Rewrite a v1/v2 session as v3 (keeps FILE.jsonl.bak), so bonsai can append to it.
    Migrate(MigrateArgs),
    /// Remove the unfinished end a killed write left in a session (keeps a complete backup).
    Repair(RepairArgs),
    /// Preview pruning of the live context (old tool output), write it as Pi's own context
    /// edits with --apply, or undo the last pruning or edit with --undo.
    Prune(PruneArgs),
    /// Hide, replace or restore one entry in the model's future context (a context edit).
    Edit(EditArgs),
    /// Undo bonsai's last action on the session (compaction, navigation, label, name, context
    /// edits): appends what puts it back; repeat to undo further. Refused once Pi has written.
    Undo(UndoArgs),
    /// Hide the branch at TARGET in bonsai's tree (one `bonsai.archive` entry; Pi's leaf and
    /// context do not change). Refused for the branch that holds the leaf.
    Archive(BranchAtArgs),
    /// Show an archived branch in bonsai's tree again.
    Unarchive(BranchAtArgs),
    /// Remove the branch at TARGET from the file (the one rewrite: the original stays as
    /// FILE.bak, the removed lines in FILE.deleted-TIME.jsonl). Refused for the leaf's branch,
    /// a branch other entries refer to, and a file written in the last 10 s.
    DeleteBranch(BranchAtArgs),
    /// Undo the last delete-branch: the backup back, with any lines appended since after it.
    Restore(RestoreArgs),
    /// Sessions of the current project (or of all projects), newest first.
    List(ListArgs),
    /// Resume a session in Pi (`pi --session FILE`, from the session's folder): this
    /// project's newest, or the one QUERY names (its name, bonsai's title, its first request,
    /// an id prefix or the file name, in any project; several open the picker on them).
    Resume(resume::ResumeArgs),
    /// The backups bonsai left beside sessions (before a delete, a migration or a repair; the
    /// lines a delete removed), with their size and age; --remove removes old ones, never
    /// those the next `bonsai restore` needs.
    Backups(BackupsArgs),
    /// Find text inside sessions (the messages' decoded text, not the JSON around it): each hit
    /// with its session, entry id, role, time and the text around it.
    Search(SearchArgs),
    /// What the sessions' model calls used and cost (tokens, cache, cost as Pi recorded it)
    /// by day, month, session, project or model; summary calls and fork copies apart.
    Usage(usage::UsageArgs),
    /// What sessions would cost under each live policy of bonsai's Pi package: every call
    /// replayed as the package would have sent it, priced with the model's prices under
    /// prompt caching, beside the bill Pi recorded.
    Bill(bill::BillArgs),
    /// Move sessions into bonsai's trash inside Pi's agent folder (Pi's /resume no longer
    /// lists them), list it, put them back (--restore) or empty it (--empty, asks first).
    Trash(housekeeping::TrashArgs),
    /// Remove old leftovers: bonsai's backups and removed-lines files (never those the next
    /// `bonsai restore` needs) and sessions trashed long ago; says what and how much, asks.
    Clean(housekeeping::CleanArgs),
    /// bonsai's session indexes (in `<agentDir>/bonsai/index/`), which let a session open
    /// again without a parse: make them now, show how they stand (--status), remove them
    /// (--clear).
    Index(index::IndexArgs),
    /// The session as a document: the path to the leaf (or the whole tree) as Markdown, one
    /// self-contained HTML page, or JSON.
    Export(ExportArgs),
    /// The engine for bonsai's Pi package: JSON lines on stdin and stdout, one process per Pi
    /// session (the live context policy on every model call, early compaction, /ctx-status).
    Serve(ServeArgs),
}

/// Decide the Pi release to follow for this process (flag, environment, Pi's settings, the
/// `pi` on PATH).
pub fn follow_pi(flag: Option<&str>) -> Result<&'static crate::store::pi_version::Followed> {
    use crate::store::pi_version;
    let settings = crate::store::config::load_settings(&crate::store::config::cwd());
    let f = pi_version::decide(flag, &settings).map_err(|e| color_eyre::eyre::eyre!(e))?;
    pi_version::set(f);
    Ok(pi_version::decided().expect("decided just now"))
}

pub fn run(cli: Cli) -> Result<()> {
    let followed = follow_pi(cli.pi_version.as_deref())?;
    if cli.version {
        println!("bonsai {}", env!("CARGO_PKG_VERSION"));
        println!("follows Pi {} ({})", followed.version, followed.source);
        if let Some(n) = &followed.note {
            println!("note: {n}");
        }
        let known: Vec<&str> = crate::engine::load::pi_version::PiVersion::KNOWN
            .iter()
            .map(|v| v.name())
            .collect();
        println!("knows Pi {}", known.join(", "));
        return Ok(());
    }
    let Some(mut cmd) = cli.command else {
        return crate::ui::run(cli.path, cli.at);
    };
    // Said once, to a person (a script reads the version in `inspect --json` or `--version`).
    if let Some(n) = &followed.note
        && std::io::IsTerminal::is_terminal(&std::io::stderr())
    {
        eprintln!("bonsai: {n}");
    }
    // FILE may be a directory (its newest session); a write never goes to the bundled demo.
    if let Some((file, writes)) = cmd.file_mut() {
        // No FILE: this project's newest session, as the TUI opens it.
        if file.as_os_str() == PROJECT_SESSION {
            let cwd = crate::store::config::cwd();
            let settings = crate::store::config::load_settings(&cwd);
            *file = crate::store::newest_session(&cwd, &settings).ok_or_else(|| {
                color_eyre::eyre::eyre!(
                    "no FILE given and this project ({}) has no Pi session yet: name a session file (`bonsai list` shows them)",
                    cwd.display()
                )
            })?;
            eprintln!("bonsai: this project's newest session: {}", file.display());
        }
        *file = if writes {
            common::writable_file(file)?
        } else {
            common::session_file(file)?
        };
    }
    let r = match cmd {
        Command::Context(a) => context::context(a),
        Command::Cut(a) => cut::cut(a),
        Command::Branch(a) => branch::branch(a),
        Command::Tree(a) => tree::tree(a),
        Command::Stats(a) => stats::stats(a),
        Command::Inspect(a) => inspect::inspect(a),
        Command::List(a) => list::list(a),
        Command::Resume(a) => resume::resume(a),
        Command::Backups(a) => branches::backups(a),
        Command::Usage(a) => usage::usage(a),
        Command::Bill(a) => bill::bill(a),
        Command::Trash(a) => housekeeping::trash_cmd(a),
        Command::Clean(a) => housekeeping::clean(a),
        Command::Index(a) => index::index(a),
        Command::Search(a) => search::search(a),
        Command::Export(a) => export::export(a),
        Command::Undo(a) => undo::undo(a),
        Command::Archive(a) => branches::archive(a, true),
        Command::Unarchive(a) => branches::archive(a, false),
        Command::DeleteBranch(a) => branches::delete_branch(a),
        Command::Restore(a) => branches::restore(a),
        Command::Compact(a) => compact::compact(a),
        Command::Compare(a) => compare::compare(a),
        Command::Audit(a) => audit::audit_cmd(a),
        Command::Navigate(a) => navigate::navigate(a),
        Command::Label(a) => label::label(a),
        Command::Rename(a) => rename::rename(a),
        Command::Fork(a) => fork::fork(&a.session.file, Some(&a.target), None, &a.write),
        Command::Clone(a) => fork::fork(&a.session.file, None, a.at.leaf.as_deref(), &a.write),
        Command::Migrate(a) => migrate::migrate(a),
        Command::Repair(a) => repair::repair(a),
        Command::Prune(a) => prune::prune(a),
        Command::Edit(a) => prune::edit(a),
        Command::Serve(a) => serve::serve(a),
    };
    r.and(common::after_reading())
}

impl Command {
    /// The command's FILE, and whether the command may write to it (prune only with
    /// --apply or --undo).
    fn file_mut(&mut self) -> Option<(&mut PathBuf, bool)> {
        Some(match self {
            Command::Context(a) => (&mut a.session.file, false),
            Command::Cut(a) => (&mut a.session.file, false),
            Command::Branch(a) => (&mut a.session.file, false),
            Command::Tree(a) => (&mut a.session.file, false),
            Command::Stats(a) => (&mut a.session.file, false),
            Command::Inspect(a) => (&mut a.session.file, false),
            Command::List(_)
            | Command::Resume(_)
            | Command::Search(_)
            | Command::Serve(_)
            | Command::Backups(_)
            | Command::Usage(_)
            | Command::Bill(_)
            | Command::Trash(_)
            | Command::Clean(_)
            | Command::Index(_) => {
                return None;
            }
            Command::Export(a) => (&mut a.session.file, false),
            Command::Undo(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Archive(a) | Command::Unarchive(a) => (&mut a.session.file, !a.write.dry_run),
            Command::DeleteBranch(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Restore(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Compact(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Compare(a) => (&mut a.session.file, a.write.is_some()),
            Command::Audit(a) => (&mut a.session.file, a.give_back.is_some() && !a.write.dry_run),
            Command::Navigate(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Label(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Rename(a) => (&mut a.session.file, !a.write.dry_run),
            // A fork or clone writes a new file beside the one it reads.
            Command::Fork(a) => (&mut a.session.file, false),
            Command::Clone(a) => (&mut a.session.file, false),
            Command::Migrate(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Repair(a) => (&mut a.session.file, !a.write.dry_run),
            Command::Prune(a) => (&mut a.session.file, (a.apply || a.undo) && !a.write.dry_run),
            Command::Edit(a) => (&mut a.session.file, !a.write.dry_run),
        })
    }
}

/// The subcommands' names, for a mistyped one.
pub fn command_names() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// `bonsai stat FILE`: clap would take `stat` for a session path. A first word that is neither
/// a command nor an existing path, but close to a command, is a typo: say which command.
pub fn mistyped_command(args: &[std::ffi::OsString]) -> Option<String> {
    let first = args.get(1)?.to_str()?;
    if first.starts_with('-') || first.contains('/') || first.contains('.') || std::path::Path::new(first).exists() {
        return None;
    }
    let names = command_names();
    if names.iter().any(|n| n == first) || first == "help" {
        return None;
    }
    let best = names.iter().map(|n| (strsim::damerau_levenshtein(first, n), n)).min()?;
    let near = best.0 <= 2 || best.1.starts_with(first) || first.starts_with(best.1.as_str());
    Some(if near {
        format!(
            "'{first}' is not a bonsai command or a file; did you mean `bonsai {}`? (bonsai --help lists the commands)",
            best.1
        )
    } else {
        format!("'{first}' is not a bonsai command or a file (bonsai --help lists the commands)")
    })
}
