//! The write flow every command that writes shares: show what would be written, ask (or `--yes`, `--dry-run`), say when a write starts a branch, append (decided again on the file as it is now) and say what was written where.

use super::args::{CutBudget, LeafArg, SessionArg, WriteFlags};
use super::common::{load, resolve_leaf, session_model};
use crate::engine::compaction::cut::CompactionSettings;
use crate::engine::edit::entries;
use crate::engine::edit::plan::{self, Write, WriteRequest};
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::view::context;
use crate::llm::summarize::Summarizer;
use crate::store::config::{agent_dir, cwd, load_registry, load_settings};
use crate::store::{self, Appended};
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::{Value, json};
use std::io::IsTerminal;
use std::path::Path;

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
pub(super) fn dry_run_calls(sm: Option<&Summarizer>) {
    if let Some(sm) = sm {
        eprintln!(
            "bonsai: --dry-run still calls {}/{} to write the summary it shows (a billed request); --summarizer offline makes no call",
            sm.model.provider, sm.model.id
        );
    }
}

pub(super) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// Stream the model's text to stderr when it is a terminal.
pub(super) fn progress(e: crate::llm::Event) {
    match e {
        crate::llm::Event::Text(t) if std::io::stderr().is_terminal() => eprint!("{t}"),
        crate::llm::Event::Retry { attempt, wait, reason } => {
            eprintln!("bonsai: {reason}; retry {attempt} in {:.1}s", wait.as_secs_f64())
        }
        _ => {}
    }
}

/// One line saying what was written where: on stdout, or on stderr when stdout is JSON.
pub(super) fn report_write(path: &Path, a: &Appended, what: &str, json_out: bool) {
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

/// A label or a name: decided again on the file as it is when written (never branches).
pub(super) fn append_simple(file: &Path, w: &WriteFlags, what: &str, write: Write) -> Result<()> {
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
