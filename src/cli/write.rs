//! The commands that write: compact, navigate, label, rename, fork, clone, migrate, repair.
//! Each shows what it would write, then writes with `--yes`, asks on a terminal, and refuses
//! without one; `--dry-run` only shows. Every append is a `WriteRequest` decided again on the
//! file right before writing (`store::write::apply`).

use super::args::{CutBudget, LeafArg, RequiredSessionArg, SessionArg, WriteFlags};
use super::common::{copy_to_clipboard, load, print_json, resolve_leaf, resolve_ref, session_model};
use crate::engine::compaction::cut::CompactionSettings;
use crate::engine::compaction::offline;
use crate::engine::compaction::summary::Summary;
use crate::engine::edit::entries;
use crate::engine::edit::plan::{self, Write, WriteRequest};
use crate::engine::load::entry::Role;
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::view::context;
use crate::llm::summarize::Summarizer;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use crate::store::{self, Appended};
use clap::Args;
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::{Value, json};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// What the summary should focus on (as after Pi's /compact).
    #[arg(long)]
    pub instructions: Option<String>,
    #[command(flatten)]
    pub budget: CutBudget,
    #[command(flatten)]
    pub at: LeafArg,
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
pub struct NavigateArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
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
    #[command(flatten)]
    pub at: LeafArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct LabelArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The entry to label: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    /// The label; without it the entry's label is cleared.
    pub label: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct RenameArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The session's new name (shown by Pi's /resume and bonsai's picker).
    #[arg(required_unless_present = "suggest", conflicts_with = "suggest")]
    pub name: Option<String>,
    /// Write the title bonsai made for an unnamed session (from its first request, or the
    /// newest summary's goal; what `bonsai list` shows with `~`) as its name.
    #[arg(long)]
    pub suggest: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct ForkArgs {
    #[command(flatten)]
    pub session: RequiredSessionArg,
    /// The user message to fork before: an id, or idx:N for the N-th entry (0-based).
    pub target: String,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct CloneArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct RepairArgs {
    #[command(flatten)]
    pub session: SessionArg,
    /// Also remove an unfinished last line bonsai did not write (only when Pi is not running:
    /// Pi may be writing that line).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub write: WriteFlags,
}

#[derive(Args, Debug)]
pub struct UndoArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub write: WriteFlags,
}

/// The summarizer that runs: the offline one when asked or when no API key is configured.
pub fn choose_summarizer(
    summarizer: Option<&str>,
    model: Option<&str>,
    registry: &Registry,
    session_model: Option<(&str, &str)>,
) -> Result<Option<Summarizer>> {
    if summarizer == Some("offline") {
        return Ok(None);
    }
    match Summarizer::resolve(registry, &agent_dir(), model, session_model) {
        Ok(sm) => {
            eprintln!(
                "bonsai: summarizer: {}/{} (key from {})",
                sm.model.provider, sm.model.id, sm.key.source
            );
            Ok(Some(sm))
        }
        Err(e) if summarizer == Some("llm") || model.is_some() => Err(eyre!(e)),
        Err(e) => {
            eprintln!("bonsai: summarizer: offline ({e})");
            Ok(None)
        }
    }
}

/// A dry run writes nothing, but the summary it shows is the model's: say so before the call.
fn dry_run_calls(sm: Option<&Summarizer>) {
    if let Some(sm) = sm {
        eprintln!(
            "bonsai: --dry-run still calls {}/{} to write the summary it shows (a billed request); --summarizer offline makes no call",
            sm.model.provider, sm.model.id
        );
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// Stream the model's text to stderr when it is a terminal.
fn progress(e: crate::llm::Event) {
    match e {
        crate::llm::Event::Text(t) if std::io::stderr().is_terminal() => eprint!("{t}"),
        crate::llm::Event::Retry { attempt, wait, reason } => {
            eprintln!("bonsai: {reason}; retry {attempt} in {:.1}s", wait.as_secs_f64())
        }
        _ => {}
    }
}

/// One line saying what was written where: on stdout, or on stderr when stdout is JSON.
fn report_write(path: &Path, a: &Appended, what: &str, json_out: bool) {
    let line = format!(
        "appended {what} to {} ({} line{}, {} bytes, fsynced)",
        path.display(),
        a.lines,
        if a.lines == 1 { "" } else { "s" },
        a.bytes
    );
    if json_out {
        eprintln!("bonsai: {line}");
    } else {
        println!("{line}");
    }
    if a.added_newline {
        eprintln!("bonsai: the file did not end with a newline; one was written first (Pi does the same on open)");
    }
    if let Some(n) = a.raced_after {
        eprintln!(
            "bonsai: warning: Pi appended {n} bytes at the same instant, just before bonsai's entry: Pi's lines are intact, but bonsai's entry now branches from the entry before them. Open the session to see both; write again from the new leaf if you want it on Pi's path"
        );
    }
    if a.recently_written {
        eprintln!(
            "bonsai: warning: the file was written in the last seconds; if Pi is running this session it sees the new entry only after it reopens the session"
        );
    }
}

pub(super) fn show(entries: &[Value], json_out: bool, written: bool, extra: Value) {
    if json_out {
        let mut o = json!({"written": written, "entries": entries});
        if let (Value::Object(o), Value::Object(e)) = (&mut o, extra) {
            o.extend(e);
        }
        println!("{}", serde_json::to_string_pretty(&o).unwrap_or_default());
    } else {
        for e in entries {
            println!("{}", entries::to_line(e));
        }
    }
}

/// Whether to write what was just shown: `--dry-run` never, `--yes` always; otherwise ask
/// on a terminal (y/N), and without one refuse with the way out.
pub(super) fn confirm(w: &WriteFlags, what: &str, file: &Path) -> Result<bool> {
    use std::io::Write as _;
    if w.dry_run {
        eprintln!("bonsai: dry run: nothing written");
        return Ok(false);
    }
    if w.yes {
        return Ok(true);
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        eprint!("bonsai: write {what} to {}? [y/N] ", file.display());
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            return Ok(true);
        }
        eprintln!("bonsai: nothing written");
        return Ok(false);
    }
    bail!(
        "nothing written: bonsai asks before writing and there is no terminal to ask on; pass --yes to write without asking, or --dry-run to only show what would be written"
    )
}

/// Print what would be written: the entries as JSON lines (or one JSON document).
pub(super) fn preview(entries: &[Value], json_out: bool, extra: Value) {
    show(entries, json_out, false, extra)
}

/// Say it when a write under `parent` starts a branch (Pi resumes at the file's last line).
pub(super) fn warn_new_branch(s: &Session, parent: usize, what: &str) {
    if let Some(nb) = plan::new_branch(s, parent) {
        eprintln!(
            "bonsai: note: {what} hangs under {}, not under the session's last entry {}: it starts a new branch, and the {} entr{} after the fork point leave Pi's context",
            s.entries[nb.parent].id,
            s.entries[nb.last].id,
            nb.abandoned.len(),
            if nb.abandoned.len() == 1 { "y" } else { "ies" }
        );
    }
}

/// Append a prepared request (decided again on the file as it is now) and report it.
pub(super) fn apply(file: &Path, req: &WriteRequest, what: &str, json_out: bool) -> Result<store::write::Applied> {
    let applied = store::write::apply(file, req)?;
    report_write(file, &applied.appended, what, json_out);
    Ok(applied)
}

/// A compaction at a leaf, as `compact` and `compare` both begin: the session, Pi's settings
/// and models, the leaf's context and model, the settings in effect and Pi's plan.
pub(super) struct CompactionAt {
    pub s0: std::mem::ManuallyDrop<Session>,
    pub settings: crate::engine::settings::Settings,
    pub registry: Registry,
    pub leaf: usize,
    pub proj: context::Projection,
    pub model: Option<(String, String)>,
    pub cs: CompactionSettings,
    pub plan: crate::engine::compaction::cut::CompactionPlan,
}

impl CompactionAt {
    /// The compaction at the arguments' leaf, with their budget over Pi's settings.
    pub fn load(session: &SessionArg, at: &LeafArg, budget: &CutBudget) -> Result<CompactionAt> {
        let (leaf, reserve, keep) = (at.leaf.as_deref(), budget.reserve_tokens, budget.keep_recent_tokens);
        let s0 = load(&session.file)?;
        let settings = load_settings(&cwd());
        let registry = load_registry(&agent_dir());
        let leaf = resolve_leaf(&s0, leaf)?.ok_or_else(|| eyre!("the session has no entries"))?;
        let proj = context::project(&s0, &s0.path_to(leaf));
        let (model, _) = session_model(&proj, &registry);
        let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
        let cs = settings.compaction_settings(mref, reserve, keep);
        let plan = entries::plan_compaction(&s0, leaf, cs)
            .map_err(|e| eyre!("cannot compact: {}; {}", e.reason(), e.next_step()))?;
        Ok(CompactionAt {
            s0,
            settings,
            registry,
            leaf,
            proj,
            model,
            cs,
            plan,
        })
    }

    /// The session's provider and model, borrowed.
    pub fn model_ref(&self) -> Option<(&str, &str)> {
        self.model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()))
    }
}

pub fn compact(a: CompactArgs) -> Result<()> {
    let at = CompactionAt::load(&a.session, &a.at, &a.budget)?;
    let mref = at.model_ref();
    let CompactionAt {
        s0,
        settings,
        registry,
        leaf,
        proj,
        cs,
        plan,
        ..
    } = &at;
    let (leaf, cs) = (*leaf, *cs);
    let wanted = a.model.clone().or(settings.summary_model());
    let sm = choose_summarizer(a.summarizer.as_deref(), wanted.as_deref(), registry, mref)?;
    if a.write.dry_run {
        dry_run_calls(sm.as_ref());
    }
    let summary = match &sm {
        None => offline::compaction_summary(s0, plan, a.instructions.as_deref()),
        Some(sm) => {
            let r = runtime()?.block_on(sm.compaction(
                s0,
                plan,
                a.instructions.as_deref(),
                Some(&proj.thinking_level),
                progress,
            ));
            if std::io::stderr().is_terminal() {
                eprintln!();
            }
            r.map_err(|e| eyre!("summarization failed: {e}; nothing written"))?
        }
    };
    let summarizer_name = sm
        .as_ref()
        .map(|m| format!("{}/{}", m.model.provider, m.model.id))
        .unwrap_or_else(|| "offline".into());
    let audit = crate::engine::compaction::audit::Before::of_plan(s0, plan, leaf).audit(&summary.text);
    let req = WriteRequest {
        write: Write::Compaction {
            leaf: s0.entries[leaf].id.to_string(),
            first_kept: s0.entries[plan.first_kept_entry].id.to_string(),
            summary,
            settings: cs,
        },
        // The summary was written for this state: if Pi appends meanwhile, refuse.
        seen: Some((s0.buf.len(), s0.entries.len())),
    };
    let entry = req
        .prepare(s0, store::clock::entropy(), store::clock::now_ms())?
        .entries;
    eprintln!(
        "bonsai: the summary's audit: {} (after writing, `bonsai audit` lists them and --give-back adds them)",
        audit.headline()
    );
    let mut audit_json = audit.to_json(s0);
    if let Value::Object(m) = &mut audit_json {
        m.remove("entryId");
    }
    let extra = json!({"summarizer": summarizer_name, "audit": audit_json});
    warn_new_branch(s0, leaf, "the compaction");
    if !a.write.yes {
        preview(&entry, a.write.json, extra.clone());
    }
    if !confirm(&a.write, "this compaction", &a.session.file)? {
        return Ok(());
    }
    let applied = apply(&a.session.file, &req, "a compaction", a.write.json)?;
    if a.write.json {
        show(&applied.prepared.entries, true, true, extra);
    }
    Ok(())
}

pub fn navigate(a: NavigateArgs) -> Result<()> {
    if a.summary == "custom" && a.instructions.is_none() {
        bail!("--summary custom needs --instructions TEXT");
    }
    let s0 = load(&a.session.file)?;
    let settings = load_settings(&cwd());
    let registry = load_registry(&agent_dir());
    let target = resolve_ref(&s0, &a.target)?;
    let old_leaf = resolve_leaf(&s0, a.at.leaf.as_deref())?;
    if Some(target) == old_leaf {
        bail!("{}", plan::Refusal::AlreadyThere);
    }
    let old_proj = old_leaf.map(|l| context::project(&s0, &s0.path_to(l)));
    let window = old_proj.as_ref().and_then(|p| session_model(p, &registry).1);
    let budget = crate::engine::compaction::branch_summary::token_budget(window, settings.branch_reserve_tokens());
    let nav0 = entries::plan_navigation(&s0, old_leaf, target, budget);
    let wants = a.summary != "none" && !nav0.branch.entries.is_empty();
    let focus = a.instructions.as_deref();
    let summary: Option<Summary> = if wants {
        let model = old_proj.and_then(|p| p.model.and_then(|(p, m)| Some((p?, m?))));
        let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
        let wanted = settings
            .summary_model()
            .filter(|_| a.summarizer.as_deref() != Some("offline"));
        let sm = choose_summarizer(a.summarizer.as_deref(), wanted.as_deref(), &registry, mref)?;
        if a.write.dry_run {
            dry_run_calls(sm.as_ref());
        }
        match sm {
            None => Some(entries::offline_branch_summary(&s0, &nav0, focus)),
            Some(sm) => Some(
                runtime()?
                    .block_on(sm.branch(&s0, &nav0, focus, a.replace_instructions, progress))
                    .map_err(|e| eyre!("branch summarization failed: {e}; nothing written"))?,
            ),
        }
    } else {
        None
    };
    let req = WriteRequest {
        write: Write::Navigation {
            from: old_leaf.map(|l| s0.entries[l].id.to_string()),
            target: s0.entries[target].id.to_string(),
            summary,
            budget,
        },
        seen: Some((s0.buf.len(), s0.entries.len())),
    };
    let p0 = req.prepare(&s0, store::clock::entropy(), store::clock::now_ms())?;
    let what = if p0.branch_summary {
        "a branch summary"
    } else {
        "a navigation marker"
    };
    if !a.write.yes {
        preview(
            &p0.entries,
            a.write.json,
            json!({"editorText": p0.editor_text, "branchSummary": p0.branch_summary}),
        );
    }
    if !confirm(&a.write, what, &a.session.file)? {
        return Ok(());
    }
    let p = apply(&a.session.file, &req, what, a.write.json)?.prepared;
    if a.write.json {
        show(
            &p.entries,
            true,
            true,
            json!({"editorText": p.editor_text, "branchSummary": p.branch_summary}),
        );
    }
    if let Some(t) = p.editor_text.filter(|t| !t.is_empty()) {
        if !a.write.json {
            eprintln!("bonsai: the selected user message (for the editor):\n{t}");
        }
        copy_to_clipboard(&t);
    }
    Ok(())
}

/// A label or a name: decided again on the file as it is when written (never branches).
fn append_simple(file: &Path, w: &WriteFlags, what: &str, write: Write) -> Result<()> {
    let s0 = load(file)?;
    let req = WriteRequest { write, seen: None };
    let p = req.prepare(&s0, store::clock::entropy(), store::clock::now_ms())?;
    if !w.yes {
        preview(&p.entries, w.json, json!({}));
    }
    if !confirm(w, what, file)? {
        return Ok(());
    }
    let applied = apply(file, &req, what, w.json)?;
    if w.json {
        show(&applied.prepared.entries, true, true, json!({}));
    }
    Ok(())
}

pub fn label(a: LabelArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let target = s.entries[resolve_ref(&s, &a.target)?].id.to_string();
    let what = if a.label.is_some() {
        "a label"
    } else {
        "a label change (cleared)"
    };
    append_simple(&a.session.file, &a.write, what, Write::Label { target, label: a.label })
}

pub fn rename(a: RenameArgs) -> Result<()> {
    let name = match a.name {
        Some(n) => n,
        None => {
            let s = load(&a.session.file)?;
            if let Some(n) = s.session_name() {
                bail!(
                    "{} is already named \"{n}\"; give a NAME to change it (--suggest names only an unnamed session)",
                    a.session.file.display()
                );
            }
            match crate::engine::view::title::of_session(&s) {
                Some(t) => t,
                None => bail!(
                    "{} has no user request and no summary to make a title from; give a NAME",
                    a.session.file.display()
                ),
            }
        }
    };
    append_simple(&a.session.file, &a.write, "a session name", Write::SessionName { name })
}

/// Fork (before a user message, like Pi's /fork) or clone (at the leaf, like /clone).
pub fn fork(file: &Path, target: Option<&str>, leaf: Option<&str>, w: &WriteFlags) -> Result<()> {
    let s = load(file)?;
    let (cut_at, text) = match target {
        Some(t) => {
            let i = resolve_ref(&s, t)?;
            let e = &s.entries[i];
            if e.message().map(|m| &m.role) != Some(&Role::User) {
                bail!(
                    "fork works at a user message (Pi's /fork); {} is a {}",
                    e.id,
                    e.kind.type_name()
                );
            }
            let v = s.entry_value(i);
            (
                s.parent_of(i),
                Some(context::content_text(v["message"].get("content"), "")),
            )
        }
        None => (resolve_leaf(&s, leaf)?, None),
    };
    let now = store::clock::now_ms();
    let sid = entries::session_id(now, store::clock::entropy());
    let abs = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let cwd = s
        .header
        .cwd
        .clone()
        .unwrap_or_else(|| cwd().to_string_lossy().to_string());
    let header = entries::session_header(&sid, &cwd, Some(&abs.to_string_lossy()), now);
    let lines = entries::branched_session(&s, cut_at, header, store::clock::entropy());
    let dir = abs
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let out = store::new_session_path(&dir, &sid, now);
    let what = format!(
        "a new session ({} entr{}{})",
        lines.len() - 1,
        if lines.len() == 2 { "y" } else { "ies" },
        if target.is_some() {
            ", forked before the user message"
        } else {
            ", the active branch"
        }
    );
    if !w.yes {
        if w.json {
            print_json(&json!({"written": false, "file": out, "entries": lines.len() - 1}));
        } else {
            println!("would write {what} to {}", out.display());
        }
    }
    if !confirm(w, &what, &out)? {
        return Ok(());
    }
    store::write_new(&out, &lines, &abs)?;
    if w.json {
        print_json(&json!({"written": true, "file": out, "entries": lines.len() - 1}));
    } else {
        println!("wrote {what} to {}", out.display());
    }
    if let Some(t) = text {
        eprintln!("bonsai: forked before the user message:\n{t}");
        copy_to_clipboard(&t);
    }
    Ok(())
}

pub fn migrate(a: MigrateArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    if s.header.version >= 3.0 {
        println!("{} is already version 3; nothing to do", a.session.file.display());
        return Ok(());
    }
    let what = format!(
        "version 3 in place of version {} (the file as it is kept beside it as a backup)",
        s.header.version
    );
    if !a.write.yes {
        println!("would rewrite {} as {what}", a.session.file.display());
    }
    if !confirm(&a.write, "the migrated session", &a.session.file)? {
        return Ok(());
    }
    let bak = store::migrate(&a.session.file)?;
    if a.write.json {
        print_json(&json!({"written": true, "file": a.session.file, "backup": bak}));
    } else {
        println!(
            "migrated {} to version 3 (backup: {})",
            a.session.file.display(),
            bak.display()
        );
    }
    Ok(())
}

pub fn repair(a: RepairArgs) -> Result<()> {
    let what = |ours: bool| {
        if ours {
            "the unfinished entry bonsai was writing when it was stopped"
        } else {
            "an unfinished last line"
        }
    };
    // Where the bytes are: the end of the file, or inside it with Pi's lines after them.
    let whence = |removed: &std::ops::Range<usize>, len: usize| {
        if removed.end >= len {
            "from the end of".to_string()
        } else {
            format!(
                "at byte {} of (Pi's {} bytes after them kept)",
                removed.start,
                len - removed.end
            )
        }
    };
    if !a.write.yes {
        let plan = store::write::repair_plan(&a.session.file, a.force)?;
        println!(
            "would remove {} bytes ({}) {} {}, keeping a backup",
            plan.removed.len(),
            what(plan.ours),
            whence(&plan.removed, plan.file_len()),
            a.session.file.display(),
        );
    }
    if !confirm(&a.write, "the repaired session", &a.session.file)? {
        return Ok(());
    }
    let r = store::repair(&a.session.file, a.force)?;
    println!(
        "removed {} bytes ({}) {} {}; the file as it was is in {}",
        r.removed.len(),
        what(r.ours),
        if r.rewritten {
            "from inside (Pi's lines after them kept)"
        } else {
            "from the end of"
        },
        a.session.file.display(),
        r.backup.display()
    );
    Ok(())
}

pub fn undo(a: UndoArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let u = crate::engine::edit::undo::plan(&s).map_err(|e| eyre!("nothing undone: {e}"))?;
    write_undo(&a.session.file, &s, u, &a.write)
}

/// Show, confirm and append a planned undo (`bonsai undo`, `bonsai prune --undo`).
pub fn write_undo(
    file: &std::path::Path,
    s: &crate::engine::load::session::Session,
    u: crate::engine::edit::undo::Undo,
    w: &super::args::WriteFlags,
) -> Result<()> {
    let req = WriteRequest {
        write: u.write.clone(),
        // Decided on this state: if Pi appends meanwhile, refuse (look again).
        seen: Some((s.buf.len(), s.entries.len())),
    };
    let p = req.prepare(s, store::clock::entropy(), store::clock::now_ms())?;
    eprintln!("bonsai: undo {}: {}", u.what, u.how);
    if let Write::Undo { write, .. } = &u.write
        && let Write::Resume { at, .. } = &**write
        && let Some(at) = s.idx_of(at)
    {
        warn_new_branch(s, at, "the undo");
    }
    if !w.yes {
        preview(&p.entries, w.json, json!({}));
    }
    let what = format!("the undo of {}", u.what);
    if !confirm(w, &what, file)? {
        return Ok(());
    }
    let applied = apply(file, &req, &what, w.json)?;
    if w.json {
        show(
            &applied.prepared.entries,
            true,
            true,
            json!({"undid": u.what, "how": u.how}),
        );
    }
    Ok(())
}
