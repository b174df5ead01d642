//! Command line: the clap tree and the dispatch, thin glue over the engine and the store.
//! `read` holds the commands that only read, `write` the ones that append or write files,
//! `common` what they share. Every command has `--json`.

mod common;
mod prune;
mod read;
mod write;

use clap::{Args, Parser, Subcommand};
use color_eyre::eyre::Result;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "bonsai",
    version,
    about = "Browse, prune and compact Pi coding-agent session trees"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A session file, or a directory whose newest session to open (default: this project's).
    pub path: Option<PathBuf>,
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
    /// Sessions of the current project (or of all projects), newest first.
    List(ListArgs),
}

#[derive(Args, Debug)]
pub struct ContextArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub leaf: Option<String>,
    #[arg(long)]
    pub json: bool,
    /// Skip exact (tiktoken) counts.
    #[arg(long)]
    pub no_exact: bool,
}

#[derive(Args, Debug)]
pub struct CutArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub keep_recent_tokens: Option<u64>,
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    #[arg(long)]
    pub leaf: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct BranchArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub target: String,
    #[arg(long)]
    pub leaf: Option<String>,
    /// Context window for the budget (default: the session model's, else 128000).
    #[arg(long)]
    pub context_window: Option<u64>,
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct TreeArgs {
    pub file: PathBuf,
    #[arg(long, value_parser = crate::engine::settings::TREE_FILTERS)]
    pub filter: Option<String>,
    #[arg(long)]
    pub leaf: Option<String>,
    #[arg(long, default_value_t = 100)]
    pub width: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub leaf: Option<String>,
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub leaf: Option<String>,
    #[arg(long, default_value_t = 20000)]
    pub keep_recent_tokens: u64,
    #[arg(long, default_value_t = 16384)]
    pub reserve_tokens: u64,
    #[arg(long)]
    pub branch_target: Option<String>,
    #[arg(long, default_value_t = 128000)]
    pub branch_context_window: u64,
}

/// What every appending command takes.
#[derive(Args, Debug)]
pub struct WriteFlags {
    /// Print the entry, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write without asking.
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct CompactArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub instructions: Option<String>,
    #[arg(long)]
    pub keep_recent_tokens: Option<u64>,
    #[arg(long)]
    pub reserve_tokens: Option<u64>,
    #[arg(long)]
    pub leaf: Option<String>,
    /// offline (default without an API key) or llm.
    #[arg(long, value_parser = ["offline", "llm"])]
    pub summarizer: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct NavigateArgs {
    pub file: PathBuf,
    pub target: String,
    #[arg(long, value_parser = ["none", "default", "custom"], default_value = "none")]
    pub summary: String,
    #[arg(long)]
    pub instructions: Option<String>,
    #[arg(long)]
    pub replace_instructions: bool,
    /// offline (default without an API key) or llm.
    #[arg(long, value_parser = ["offline", "llm"])]
    pub summarizer: Option<String>,
    #[arg(long)]
    pub leaf: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct LabelArgs {
    pub file: PathBuf,
    pub target: String,
    pub label: Option<String>,
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct RenameArgs {
    pub file: PathBuf,
    pub name: String,
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct ForkArgs {
    pub file: PathBuf,
    pub target: String,
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct CloneArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub leaf: Option<String>,
    #[arg(long)]
    pub yes: bool,
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    pub file: PathBuf,
}

#[derive(Args, Debug)]
pub struct RepairArgs {
    pub file: PathBuf,
    /// Also remove an unfinished last line bonsai did not write (only when Pi is not running:
    /// Pi may be writing that line).
    #[arg(long)]
    pub force: bool,
    /// Say what would be removed, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct PruneArgs {
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
    /// The leaf whose context is pruned: an entry id or idx:N (default: the last entry).
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
    #[arg(long)]
    pub leaf: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn run(cli: Cli) -> Result<()> {
    let Some(cmd) = cli.command else {
        return crate::ui::run(cli.path);
    };
    match cmd {
        Command::Context(a) => read::context(a),
        Command::Cut(a) => read::cut(a),
        Command::Branch(a) => read::branch(a),
        Command::Tree(a) => read::tree(a),
        Command::Stats(a) => read::stats(a),
        Command::Inspect(a) => read::inspect(a),
        Command::List(a) => read::list(a),
        Command::Compact(a) => write::compact(a),
        Command::Navigate(a) => write::navigate(a),
        Command::Label(a) => write::label(a),
        Command::Rename(a) => write::rename(a),
        Command::Fork(a) => write::fork(&a.file, Some(&a.target), None, a.yes),
        Command::Clone(a) => write::fork(&a.file, None, a.leaf.as_deref(), a.yes),
        Command::Migrate(a) => write::migrate(a),
        Command::Repair(a) => write::repair(a),
        Command::Prune(a) => prune::prune(a),
        Command::Edit(a) => prune::edit(a),
    }
}
