//! The CLI's writing commands: compact, navigate, label, rename, fork, clone, migrate.
//! Nothing is written without `--yes`; `--dry-run` prints the entries instead.

use crate::cli::{load, resolve_leaf, resolve_ref, session_model};
use crate::engine::actions::{self, IdSource, Summary};
use crate::engine::compaction::CompactionSettings;
use crate::engine::context;
use crate::engine::models::Registry;
use crate::engine::session::Session;
use crate::store::{self, Appended};
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::{Value, json};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
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
    /// Print the entry, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write without asking.
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// The summarizer that runs: the offline one when asked or when no API key is configured.
pub fn choose_summarizer(
    summarizer: Option<&str>,
    model: Option<&str>,
    registry: &Registry,
    session_model: Option<(&str, &str)>,
) -> Result<Option<crate::llm::summarize::Summarizer>> {
    if summarizer == Some("offline") {
        return Ok(None);
    }
    match crate::llm::summarize::Summarizer::resolve(registry, &crate::store::config::agent_dir(), model, session_model)
    {
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

fn report_write(path: &Path, a: &Appended, what: &str) {
    eprintln!(
        "bonsai: appended {what} to {} ({} line(s), {} bytes, fsynced)",
        path.display(),
        a.lines,
        a.bytes
    );
    if a.added_newline {
        eprintln!("bonsai: the file did not end with a newline; one was written first (Pi does the same on open)");
    }
    if a.recently_written {
        eprintln!(
            "bonsai: warning: the file was written in the last seconds; if Pi is running this session it sees the new entry only after it reopens the session"
        );
    }
}

fn show(entries: &[Value], json_out: bool, written: bool, extra: Value) {
    if json_out {
        let mut o = json!({"written": written, "entries": entries});
        if let (Value::Object(o), Value::Object(e)) = (&mut o, extra) {
            o.extend(e);
        }
        println!("{}", serde_json::to_string_pretty(&o).unwrap());
    } else {
        for e in entries {
            println!("{}", actions::to_line(e));
        }
    }
}

fn not_written() {
    eprintln!("bonsai: nothing written (pass --yes to append, or --dry-run to only print)");
}

pub fn compact(a: CompactArgs) -> Result<()> {
    let s0 = load(&a.file)?;
    let settings = crate::store::config::load_settings(&cwd());
    let registry = crate::store::config::load_registry(&crate::store::config::agent_dir());
    let plan_for = |s: &Session| -> std::result::Result<
        (
            usize,
            crate::engine::compaction::CompactionPlan,
            Option<(String, String)>,
            String,
        ),
        String,
    > {
        let leaf = resolve_leaf(s, a.leaf.as_deref())
            .map_err(|e| e.to_string())?
            .ok_or("the session has no entries")?;
        let proj = context::project(s, &s.path_to(leaf));
        let (model, _) = session_model(s, &proj, &registry);
        let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
        let cs = CompactionSettings {
            reserve_tokens: a.reserve_tokens.unwrap_or(settings.reserve_tokens(mref)),
            keep_recent_tokens: a.keep_recent_tokens.unwrap_or(settings.keep_recent_tokens(mref)),
        };
        let plan = actions::plan_compaction(s, leaf, cs).map_err(|e| format!("cannot compact: {}", e.reason()))?;
        Ok((leaf, plan, model, proj.thinking_level.clone()))
    };
    let (leaf0, plan0, model, thinking) = plan_for(&s0).map_err(|e| eyre!(e))?;
    let first_kept = s0.entries[plan0.first_kept_entry].id.to_string();
    let leaf_id = s0.entries[leaf0].id.to_string();
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let wanted = a.model.clone().or(settings.summary_model());
    let sm = choose_summarizer(a.summarizer.as_deref(), wanted.as_deref(), &registry, mref)?;
    let summary = match &sm {
        None => actions::offline_compaction_summary(&s0, &plan0, a.instructions.as_deref()),
        Some(sm) => {
            let r =
                runtime()?.block_on(sm.compaction(&s0, &plan0, a.instructions.as_deref(), Some(&thinking), progress));
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
    let build = |s: &Session| -> std::result::Result<Value, String> {
        let (leaf, plan, _, _) = plan_for(s)?;
        let fk = s.entries[plan.first_kept_entry].id.to_string();
        if fk != first_kept || *s.entries[leaf].id != *leaf_id {
            return Err(format!(
                "the session changed while the summary was written (leaf {leaf_id} → {}, cut {first_kept} → {fk}); run the command again",
                s.entries[leaf].id
            ));
        }
        Ok(actions::compaction_entry(
            s,
            leaf,
            &plan,
            &summary,
            &IdSource::new(s, crate::store::clock::entropy()).next(),
            crate::store::clock::now_ms(),
        ))
    };
    let entry = build(&s0).map_err(|e| eyre!(e))?;
    if a.dry_run || !a.yes {
        show(&[entry], a.json, false, json!({"summarizer": summarizer_name}));
        if !a.dry_run {
            not_written();
        }
        return Ok(());
    }
    if s0.header.version < 3.0 {
        return Err(store::WriteError::NeedsMigration {
            version: s0.header.version,
        }
        .into());
    }
    let mut written = None;
    let (_, appended) = store::append_with(&a.file, |s| {
        let e = build(s)?;
        written = Some(e.clone());
        Ok(vec![e])
    })?;
    report_write(&a.file, &appended, "a compaction");
    show(
        &[written.unwrap()],
        a.json,
        true,
        json!({"summarizer": summarizer_name}),
    );
    Ok(())
}

/// Put text on the clipboard with OSC 52 where the terminal allows it.
fn osc52(text: &str) {
    if std::io::stdout().is_terminal() {
        let b64 = base64(text.as_bytes());
        print!("\x1b]52;c;{b64}\x1b\\");
    }
}

fn base64(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                out.push(T[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
pub fn navigate(
    file: &Path,
    target: &str,
    summary: &str,
    instructions: Option<String>,
    replace_instructions: bool,
    summarizer: Option<&str>,
    leaf: Option<String>,
    dry_run: bool,
    yes: bool,
    json_out: bool,
) -> Result<()> {
    if summary == "custom" && instructions.is_none() {
        bail!("--summary custom needs --instructions TEXT");
    }
    let s0 = load(file)?;
    let settings = crate::store::config::load_settings(&cwd());
    let registry = crate::store::config::load_registry(&crate::store::config::agent_dir());
    let target_id = s0.entries[resolve_ref(&s0, target)?].id.to_string();
    let plan_for = |s: &Session| -> std::result::Result<actions::Navigation, String> {
        let old_leaf = resolve_leaf(s, leaf.as_deref()).map_err(|e| e.to_string())?;
        let t = s
            .idx_of(&target_id)
            .ok_or_else(|| format!("entry {target_id} not found"))?;
        if Some(t) == old_leaf {
            return Err("already at this point: the target is the leaf".into());
        }
        let window = old_leaf
            .map(|l| context::project(s, &s.path_to(l)))
            .and_then(|p| session_model(s, &p, &registry).1)
            .filter(|w| *w > 0)
            .unwrap_or(128000);
        Ok(actions::plan_navigation(
            s,
            old_leaf,
            t,
            window as i64 - settings.branch_reserve_tokens() as i64,
        ))
    };
    let nav0 = plan_for(&s0).map_err(|e| eyre!(e))?;
    let wants = summary != "none" && !nav0.branch.entries.is_empty();
    let focus = instructions.as_deref();
    let summary_text: Option<Summary> = if wants {
        let model = nav0
            .old_leaf
            .map(|l| context::project(&s0, &s0.path_to(l)))
            .and_then(|p| p.model.and_then(|(p, m)| Some((p?, m?))));
        let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
        match choose_summarizer(
            summarizer,
            settings
                .summary_model()
                .as_deref()
                .filter(|_| summarizer != Some("offline")),
            &registry,
            mref,
        )? {
            None => Some(actions::offline_branch_summary(&s0, &nav0, focus)),
            Some(sm) => Some(
                runtime()?
                    .block_on(sm.branch(&s0, &nav0, focus, replace_instructions, progress))
                    .map_err(|e| eyre!("branch summarization failed: {e}; nothing written"))?,
            ),
        }
    } else {
        None
    };
    let old_leaf_id = nav0.old_leaf.map(|l| s0.entries[l].id.to_string());
    let build = |s: &Session| -> std::result::Result<(Vec<Value>, Option<String>, bool), String> {
        let nav = plan_for(s)?;
        if nav.old_leaf.map(|l| s.entries[l].id.to_string()) != old_leaf_id {
            return Err("the session changed (Pi appended); run the command again".into());
        }
        let mut ids = IdSource::new(s, crate::store::clock::entropy());
        let now = crate::store::clock::now_ms();
        let entry = match &summary_text {
            Some(sm) => actions::branch_summary_entry(s, &nav, sm, &ids.next(), now),
            None => actions::navigation_marker(s, &nav, &ids.next(), now),
        };
        Ok((vec![entry], nav.editor_text.clone(), summary_text.is_some()))
    };
    let (entries, editor_text, with_summary) = build(&s0).map_err(|e| eyre!(e))?;
    let extra = json!({"editorText": editor_text, "branchSummary": with_summary});
    if dry_run || !yes {
        show(&entries, json_out, false, extra);
        if !dry_run {
            not_written();
        }
        return Ok(());
    }
    let mut last = None;
    let (_, appended) = store::append_with(file, |s| {
        let (e, t, w) = build(s)?;
        last = Some((e.clone(), t, w));
        Ok(e)
    })?;
    let (e, text, w) = last.unwrap();
    report_write(
        file,
        &appended,
        if w { "a branch summary" } else { "a navigation marker" },
    );
    show(&e, json_out, true, json!({"editorText": text, "branchSummary": w}));
    if let Some(t) = text.filter(|t| !t.is_empty()) {
        if !json_out {
            eprintln!("bonsai: the selected user message (for the editor):\n{t}");
        }
        osc52(&t);
    }
    Ok(())
}

fn append_simple(
    file: &Path,
    yes: bool,
    what: &str,
    build: impl Fn(&Session) -> std::result::Result<Value, String>,
) -> Result<()> {
    let s0 = load(file)?;
    let e = build(&s0).map_err(|e| eyre!(e))?;
    if !yes {
        show(&[e], false, false, json!({}));
        not_written();
        return Ok(());
    }
    let (_, a) = store::append_with(file, |s| build(s).map(|e| vec![e]))?;
    report_write(file, &a, what);
    Ok(())
}

pub fn label(file: &Path, target: &str, label: Option<&str>, yes: bool) -> Result<()> {
    let target = target.to_string();
    append_simple(file, yes, "a label", |s| {
        let t = resolve_ref(s, &target).map_err(|e| e.to_string())?;
        Ok(actions::label_entry(
            s,
            s.leaf(),
            t,
            label,
            &IdSource::new(s, crate::store::clock::entropy()).next(),
            crate::store::clock::now_ms(),
        ))
    })
}

pub fn rename(file: &Path, name: &str, yes: bool) -> Result<()> {
    append_simple(file, yes, "a session name", |s| {
        Ok(actions::session_info_entry(
            s,
            s.leaf(),
            name,
            &IdSource::new(s, crate::store::clock::entropy()).next(),
            crate::store::clock::now_ms(),
        ))
    })
}

/// Fork (before a user message, like Pi's /fork) or clone (at the leaf, like /clone).
pub fn fork(file: &Path, target: Option<&str>, leaf: Option<&str>, yes: bool) -> Result<()> {
    let s = load(file)?;
    let (cut_at, text) = match target {
        Some(t) => {
            let i = resolve_ref(&s, t)?;
            let e = &s.entries[i];
            if e.message().map(|m| &m.role) != Some(&crate::engine::entry::Role::User) {
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
    let now = crate::store::clock::now_ms();
    let sid = actions::session_id(now, crate::store::clock::entropy());
    let abs = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let cwd = s
        .header
        .cwd
        .clone()
        .unwrap_or_else(|| cwd().to_string_lossy().to_string());
    let header = actions::session_header(&sid, &cwd, Some(&abs.to_string_lossy()), now);
    let lines = actions::branched_session(&s, cut_at, header, crate::store::clock::entropy());
    let dir = abs
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let out = store::new_session_path(&dir, &sid, now);
    if !yes {
        eprintln!(
            "bonsai: would write {} ({} entries); pass --yes",
            out.display(),
            lines.len() - 1
        );
        return Ok(());
    }
    store::write_new(&out, &lines)?;
    println!("{}", out.display());
    if let Some(t) = text {
        eprintln!("bonsai: forked before the user message:\n{t}");
        osc52(&t);
    }
    Ok(())
}

pub fn migrate(file: &Path) -> Result<()> {
    let s = load(file)?;
    if s.header.version >= 3.0 {
        println!("{} is already version 3; nothing to do", file.display());
        return Ok(());
    }
    let bak = store::migrate(file)?;
    println!("migrated {} to version 3 (backup: {})", file.display(), bak.display());
    Ok(())
}
