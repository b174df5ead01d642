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

mod branches;
mod common;
mod compare;
mod housekeeping;
pub mod out;
mod prune;
mod read;
pub mod serve;
mod usage;
mod write;

use clap::{Args, Parser, Subcommand};
use color_eyre::eyre::Result;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "bonsai",
    disable_version_flag = true,
    about = "Browse, prune and compact Pi coding-agent session trees"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The Pi release to reproduce (0.87.1, 1.5.2; another maps to the nearest below).
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
    Archive(ArchiveArgs),
    /// Show an archived branch in bonsai's tree again.
    Unarchive(ArchiveArgs),
    /// Remove the branch at TARGET from the file (the one rewrite: the original stays as
    /// FILE.bak, the removed lines in FILE.deleted-TIME.jsonl). Refused for the leaf's branch,
    /// a branch other entries refer to, and a file written in the last 10 s.
    DeleteBranch(DeleteBranchArgs),
    /// Undo the last delete-branch: the backup back, with any lines appended since after it.
    Restore(RestoreArgs),
    /// Sessions of the current project (or of all projects), newest first.
    List(ListArgs),
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
    /// Move sessions into bonsai's trash inside Pi's agent folder (Pi's /resume no longer
    /// lists them), list it, put them back (--restore) or empty it (--empty, asks first).
    Trash(housekeeping::TrashArgs),
    /// Remove old leftovers: bonsai's backups and removed-lines files (never those the next
    /// `bonsai restore` needs) and sessions trashed long ago; says what and how much, asks.
    Clean(housekeeping::CleanArgs),
    /// The session as a document: the path to the leaf (or the whole tree) as Markdown, one
    /// self-contained HTML page, or JSON.
    Export(ExportArgs),
    /// The engine for bonsai's Pi package: JSON lines on stdin and stdout, one process per Pi
    /// session (the live context policy on every model call, early compaction, /ctx-status).
    Serve(ServeArgs),
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Speak JSON lines over stdin and stdout (the only transport).
    #[arg(long, required = true)]
    pub stdio: bool,
    /// Append one JSON line per request to FILE: the method, how long it took and what was
    /// decided (no session text). Also `$BONSAI_SERVE_LOG`.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ContextArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Skip exact (tiktoken) counts (faster on large sessions).
    #[arg(long)]
    pub no_exact: bool,
    /// The messages bonsai's Pi package sends at the leaf (the live policy of
    /// `bonsai.live.policy` in Pi's settings, applied in memory as on every model call).
    #[arg(long)]
    pub live: bool,
    /// With --live: this policy instead of the setting's.
    #[arg(long, requires = "live", value_parser = ["off", "output", "zones"])]
    pub policy: Option<String>,
    /// With --live and the output policy: the pi-context-pruning extension's own rules.
    #[arg(long, requires = "live", value_parser = ["pi-context-pruning"])]
    pub compat: Option<String>,
    /// With --live --json: each message whole (as Pi's AgentMessage), not only described.
    #[arg(long, requires = "live")]
    pub content: bool,
}

#[derive(Args, Debug)]
pub struct CutArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// keepRecentTokens: how many recent tokens the cut keeps (default: Pi's settings, 20000).
    #[arg(long)]
    pub keep_recent_tokens: Option<u64>,
    /// reserveTokens: tokens kept free for the reply (default: Pi's settings, 16384).
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BranchArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// The entry navigated to: an id, or idx:N for the N-th entry (0-based).
    #[arg(long)]
    pub target: String,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// Context window for the budget (default: the session model's, else 128000).
    #[arg(long)]
    pub context_window: Option<u64>,
    /// reserveTokens: tokens kept free for the reply (default: Pi's settings, 16384).
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TreeArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// Pi's /tree filter (default: treeFilterMode from Pi's settings, else default).
    #[arg(long, value_parser = crate::engine::settings::TREE_FILTERS)]
    pub filter: Option<String>,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// Columns to lay the tree out in (Pi's /tree truncates rows to the terminal width).
    #[arg(long, default_value_t = 100)]
    pub width: usize,
    /// Also the branches archived with `bonsai archive` (hidden by default).
    #[arg(long)]
    pub archived: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// How many of the largest entries to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// keepRecentTokens for the cut (as the oracle's --keep-recent-tokens).
    #[arg(long, default_value_t = 20000)]
    pub keep_recent_tokens: u64,
    /// reserveTokens for the cut and the branch summary's budget.
    #[arg(long, default_value_t = 16384)]
    pub reserve_tokens: u64,
    /// Also the branch-summary input for navigating to this entry (an id or idx:N).
    #[arg(long)]
    pub branch_target: Option<String>,
    /// Context window for the branch summary's budget.
    #[arg(long, default_value_t = crate::engine::load::models::DEFAULT_CONTEXT_WINDOW)]
    pub branch_context_window: u64,
}

/// FILE when none is given: this project's newest session (resolved before the command runs).
const PROJECT_SESSION: &str = "@project";

/// What every appending command takes.
#[derive(Args, Debug)]
pub struct WriteFlags {
    /// Print what would be written and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write without asking. Without it bonsai shows what it would write and asks (y/N) on a
    /// terminal; without a terminal it writes nothing and exits with an error.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON (what was written, or would be) instead of one line of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompactArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// What the summary should focus on (as after Pi's /compact).
    #[arg(long)]
    pub instructions: Option<String>,
    /// keepRecentTokens: how many recent tokens the cut keeps (default: Pi's settings, 20000).
    #[arg(long)]
    pub keep_recent_tokens: Option<u64>,
    /// reserveTokens: tokens kept free for the reply (default: Pi's settings, 16384).
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// offline (default without an API key) or llm.
    #[arg(long, value_parser = ["offline", "llm"])]
    pub summarizer: Option<String>,
    /// The summary's model as provider/id (default: compaction.model in Pi's settings, else
    /// the session's model). Needs its API key in Pi's auth.json or the environment.
    #[arg(long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// Strategies to run, comma-separated, or `all`: single-shot, parallel-stitch,
    /// sequential-accumulated, sequential-rolling, anchored-iterative, offline (default: all
    /// with a model, else offline).
    #[arg(long)]
    pub strategies: Option<String>,
    /// The model as provider/id (default: compaction.model in Pi's settings, else the
    /// session's model). Needs its API key in Pi's auth.json or the environment.
    #[arg(long)]
    pub model: Option<String>,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// keepRecentTokens: how many recent tokens the cut keeps (default: Pi's settings, 20000).
    #[arg(long)]
    pub keep_recent_tokens: Option<u64>,
    /// reserveTokens: tokens kept free for the reply (default: Pi's settings, 16384).
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    /// The published comparison's parameters: slices of 10,000 tokens, slice budget 2,000,
    /// final budget 4,000, no overlap, no boost, no ratio.
    #[arg(long)]
    pub harness: bool,
    /// Tokens per slice (default 20,000; the harness 10,000).
    #[arg(long)]
    pub slice_tokens: Option<u64>,
    /// Tokens of the previous slice shown again before each slice (default 2,000).
    #[arg(long)]
    pub overlap_tokens: Option<u64>,
    /// A slice's budget as a share of its tokens (default 0.1).
    #[arg(long)]
    pub compression_ratio: Option<f64>,
    /// Factor on the last two slices' budgets (default 2.0).
    #[arg(long)]
    pub recent_boost: Option<f64>,
    /// Slice calls at once in parallel-stitch (default 4).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// The model reasons in an <analysis> block before each summary (kept out of the result).
    #[arg(long)]
    pub analysis: bool,
    /// What the summaries should focus on (as after Pi's /compact).
    #[arg(long)]
    pub instructions: Option<String>,
    /// Also print each strategy's summary after the table.
    #[arg(long)]
    pub show: bool,
    /// Write this strategy's summary as the compaction (asks first; --yes writes).
    #[arg(long, value_name = "STRATEGY")]
    pub write: Option<String>,
    /// Write without asking (with --write).
    #[arg(long)]
    pub yes: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct NavigateArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
    /// The entry to move to: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    /// Pi's three choices: none (a marker entry, no summary), default (a branch summary of
    /// the branch left), custom (one with --instructions).
    #[arg(long, value_parser = ["none", "default", "custom"], default_value = "none")]
    pub summary: String,
    /// Focus for the custom summary.
    #[arg(long)]
    pub instructions: Option<String>,
    /// The instructions replace the summary prompt's own instead of adding to it.
    #[arg(long)]
    pub replace_instructions: bool,
    /// offline (default without an API key) or llm.
    #[arg(long, value_parser = ["offline", "llm"])]
    pub summarizer: Option<String>,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct LabelArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
    /// The entry to label: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    /// The label; without it the entry's label is cleared.
    pub label: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct RenameArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
    /// The session's new name (shown by Pi's /resume and bonsai's picker).
    pub name: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct ForkArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
    /// The user message to fork before: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct CloneArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct RepairArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// Also remove an unfinished last line bonsai did not write (only when Pi is not running:
    /// Pi may be writing that line).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct PruneArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// output: old tool output past a budget (OpenCode's prune); zones: keep, distill and
    /// prune by how full the context is.
    #[arg(long, value_parser = ["output", "zones"], default_value = "output")]
    pub policy: String,
    /// For --policy zones: the gauge's zone (auto) or a forced one.
    #[arg(long, value_parser = ["auto", "green", "yellow", "red"], default_value = "auto")]
    pub zone: String,
    /// Prune even when the candidates do not exceed the minimum.
    #[arg(long)]
    pub force: bool,
    /// Reproduce an extension's own rules (pi-context-pruning).
    #[arg(long, value_parser = ["pi-context-pruning"])]
    pub compat: Option<String>,
    /// Tokens the candidates must exceed (settings: contextPruning.minimum, default 20000).
    #[arg(long)]
    pub minimum: Option<u64>,
    /// Newest tool output kept, in tokens (contextPruning.protect, default 40000).
    #[arg(long)]
    pub protect: Option<u64>,
    /// Newest turns never touched (contextPruning.protectedTurns, default 2).
    #[arg(long)]
    pub protected_turns: Option<usize>,
    /// Tools whose output is never pruned, comma-separated (contextPruning.protectedTools).
    #[arg(long, value_delimiter = ',')]
    pub protected_tools: Option<Vec<String>>,
    /// Tools whose output may be pruned, comma-separated; empty for every tool
    /// (contextPruning.prunableTools, default read,bash,grep,find,ls,edit,write,apply_patch).
    #[arg(long, value_delimiter = ',')]
    pub prunable_tools: Option<Vec<String>>,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    /// Also count exact tokens (o200k/cl100k) before and after.
    #[arg(long)]
    pub exact: bool,
    /// Write the plan as context edits (with --yes).
    #[arg(long)]
    pub apply: bool,
    /// Undo the last pruning or edit on this branch (with --yes).
    #[arg(long, conflicts_with = "apply")]
    pub undo: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("change").required(true).args(["hide", "replace", "replace_file", "restore"])))]
pub struct EditArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
    /// The entry: an id or idx:N.
    pub target: String,
    /// Leave it out of the model's context (user, custom and assistant messages without tool calls).
    #[arg(long)]
    pub hide: bool,
    /// Replace its text (an assistant keeps its tool calls).
    #[arg(long)]
    pub replace: Option<String>,
    /// Replace its text with a file's.
    #[arg(long)]
    pub replace_file: Option<PathBuf>,
    /// Back to the original content.
    #[arg(long)]
    pub restore: bool,
    /// The leaf to work at: an entry id, or idx:N for the N-th entry (0-based, the header not
    /// counted). Default: the file's last entry, where Pi resumes.
    #[arg(long)]
    pub leaf: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    /// Export the path to this entry (an id, or idx:N for the N-th entry, 0-based) instead of
    /// the file's last entry.
    #[arg(long, conflicts_with = "tree")]
    pub leaf: Option<String>,
    /// Every entry, branch by branch, instead of one path.
    #[arg(long)]
    pub tree: bool,
    /// md: Markdown (thinking and long tool output folded in <details>); html: one
    /// self-contained page (highlighted code, folds, light and dark); json: the entries as the
    /// file has them, with the header. Default: from OUTPUT's extension, else md.
    #[arg(long, value_parser = ["md", "html", "json"])]
    pub format: Option<String>,
    /// Write to this file (a new one; an existing file is refused without --force) instead of
    /// standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Replace OUTPUT if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct UndoArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct ArchiveArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
    /// The branch's first entry: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct DeleteBranchArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens).
    pub file: PathBuf,
    /// The branch's first entry: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// A session file, or a directory (its newest session, as `bonsai DIR` opens). Default:
    /// this project's newest session, as `bonsai` opens it.
    #[arg(default_value = PROJECT_SESSION, hide_default_value = true)]
    pub file: PathBuf,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct SearchArgs {
    /// What to find: plain text (a newline or a quote matches as the message has it), or a
    /// regular expression with --regex. Case-insensitive unless it has a capital letter.
    pub query: String,
    /// Session files or folders to search (default: this project's sessions).
    pub paths: Vec<PathBuf>,
    /// Every project's sessions.
    #[arg(long, conflicts_with = "paths")]
    pub all: bool,
    /// QUERY is a regular expression (Rust regex syntax).
    #[arg(long)]
    pub regex: bool,
    /// Only entries by this role (tool: tool results and `!` commands).
    #[arg(long, value_parser = ["user", "assistant", "tool"])]
    pub role: Option<String>,
    /// One JSON object per hit and line: session, entryId, role, timestamp, snippet, match
    /// (byte range in the snippet), matches, line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BackupsArgs {
    /// Every project's session folders, not only this directory's.
    #[arg(long)]
    pub all: bool,
    /// What counts as old, in days.
    #[arg(long, default_value_t = 30.0)]
    pub older_than: f64,
    /// Remove the old backups (asks first; --yes without asking).
    #[arg(long)]
    pub remove: bool,
    /// Remove without asking.
    #[arg(long)]
    pub yes: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Every project's sessions, not only this directory's.
    #[arg(long)]
    pub all: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
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
    match cmd {
        Command::Context(a) => read::context(a),
        Command::Cut(a) => read::cut(a),
        Command::Branch(a) => read::branch(a),
        Command::Tree(a) => read::tree(a),
        Command::Stats(a) => read::stats(a),
        Command::Inspect(a) => read::inspect(a),
        Command::List(a) => read::list(a),
        Command::Backups(a) => branches::backups(a),
        Command::Usage(a) => usage::usage(a),
        Command::Trash(a) => housekeeping::trash_cmd(a),
        Command::Clean(a) => housekeeping::clean(a),
        Command::Search(a) => read::search(a),
        Command::Export(a) => read::export(a),
        Command::Undo(a) => write::undo(a),
        Command::Archive(a) => branches::archive(a, true),
        Command::Unarchive(a) => branches::archive(a, false),
        Command::DeleteBranch(a) => branches::delete_branch(a),
        Command::Restore(a) => branches::restore(a),
        Command::Compact(a) => write::compact(a),
        Command::Compare(a) => compare::compare(a),
        Command::Navigate(a) => write::navigate(a),
        Command::Label(a) => write::label(a),
        Command::Rename(a) => write::rename(a),
        Command::Fork(a) => write::fork(&a.file, Some(&a.target), None, &a.write),
        Command::Clone(a) => write::fork(&a.file, None, a.leaf.as_deref(), &a.write),
        Command::Migrate(a) => write::migrate(a),
        Command::Repair(a) => write::repair(a),
        Command::Prune(a) => prune::prune(a),
        Command::Edit(a) => prune::edit(a),
        Command::Serve(a) => serve::serve_stdio(
            a.log
                .or_else(|| std::env::var_os("BONSAI_SERVE_LOG").map(PathBuf::from)),
        ),
    }
}

impl Command {
    /// The command's FILE, and whether the command may write to it (prune only with
    /// --apply or --undo).
    fn file_mut(&mut self) -> Option<(&mut PathBuf, bool)> {
        Some(match self {
            Command::Context(a) => (&mut a.file, false),
            Command::Cut(a) => (&mut a.file, false),
            Command::Branch(a) => (&mut a.file, false),
            Command::Tree(a) => (&mut a.file, false),
            Command::Stats(a) => (&mut a.file, false),
            Command::Inspect(a) => (&mut a.file, false),
            Command::List(_)
            | Command::Search(_)
            | Command::Serve(_)
            | Command::Backups(_)
            | Command::Usage(_)
            | Command::Trash(_)
            | Command::Clean(_) => {
                return None;
            }
            Command::Export(a) => (&mut a.file, false),
            Command::Undo(a) => (&mut a.file, !a.write.dry_run),
            Command::Archive(a) | Command::Unarchive(a) => (&mut a.file, !a.write.dry_run),
            Command::DeleteBranch(a) => (&mut a.file, !a.write.dry_run),
            Command::Restore(a) => (&mut a.file, !a.write.dry_run),
            Command::Compact(a) => (&mut a.file, !a.write.dry_run),
            Command::Compare(a) => (&mut a.file, a.write.is_some()),
            Command::Navigate(a) => (&mut a.file, !a.write.dry_run),
            Command::Label(a) => (&mut a.file, !a.write.dry_run),
            Command::Rename(a) => (&mut a.file, !a.write.dry_run),
            // A fork or clone writes a new file beside the one it reads.
            Command::Fork(a) => (&mut a.file, false),
            Command::Clone(a) => (&mut a.file, false),
            Command::Migrate(a) => (&mut a.file, !a.write.dry_run),
            Command::Repair(a) => (&mut a.file, !a.write.dry_run),
            Command::Prune(a) => (&mut a.file, (a.apply || a.undo) && !a.write.dry_run),
            Command::Edit(a) => (&mut a.file, !a.write.dry_run),
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
