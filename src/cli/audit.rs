//! `bonsai audit`: what each summary on the leaf's path lost of the entries it replaced, and
//! `--give-back` to write an amended summary holding the lost items word for word.

use super::args::{LeafArg, SessionArg, WriteFlags};
use super::common::{load, print_json, resolve_leaf, resolve_ref};
use super::write_flow::{apply, confirm, preview, show, warn_new_branch};
use crate::engine::compaction::audit::{self, Audit, Kind, Specific};
use crate::engine::edit::plan::{Write, WriteRequest};
use crate::engine::load::session::Session;
use crate::engine::units;
use crate::store;
use clap::Args;
use color_eyre::eyre::{Result, bail, eyre};
use serde_json::json;

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub at: LeafArg,
    /// The summary to audit: an id, or idx:N (default: every compaction and branch summary on
    /// the leaf's path, oldest first).
    #[arg(long, value_name = "ID")]
    pub entry: Option<String>,
    /// Give lost items back: `all`, kinds (`commands,values`), or the numbers the listing
    /// shows (`1,4,7`). Appends an amended summary at the leaf (asks first). Without --entry,
    /// the newest summary on the path.
    #[arg(long, value_name = "WHICH")]
    pub give_back: Option<String>,
    #[command(flatten)]
    pub write: WriteFlags,
}

pub fn audit_cmd(a: AuditArgs) -> Result<()> {
    let s = load(&a.session.file)?;
    let leaf = resolve_leaf(&s, a.at.leaf.as_deref())?.ok_or_else(|| eyre!("the session has no entries"))?;
    let targets: Vec<usize> = match &a.entry {
        Some(r) => {
            let e = resolve_ref(&s, r)?;
            if audit::replaced(&s, e).is_none() {
                bail!(
                    "{} is a {} entry: only a compaction or a branch summary can be audited (`bonsai tree FILE` shows them)",
                    s.entries[e].id,
                    s.entries[e].kind.type_name()
                );
            }
            vec![e]
        }
        None => audit::summaries_on_path(&s, leaf),
    };
    let audits: Vec<Audit> = audit::audit_all(&s, &targets);
    if let Some(which) = &a.give_back {
        let Some(last) = audits.last() else {
            bail!("no compaction or branch summary on the leaf's path: nothing to give back to");
        };
        return give_back(&a, &s, leaf, last, which);
    }
    if a.write.json {
        print_json(&json!({"audits": audits.iter().map(|x| x.to_json(&s)).collect::<Vec<_>>()}));
        return Ok(());
    }
    if audits.is_empty() {
        println!("no compaction or branch summary on the leaf's path: nothing to audit");
    }
    for (k, x) in audits.iter().enumerate() {
        if k > 0 {
            println!();
        }
        print!("{}", render(&s, x, &a.session.file));
    }
    Ok(())
}

/// The most lost items of one kind the text lists (numbering goes on over the rest).
const SHOWN: usize = 12;

/// An audit as text: the headline, the score by kind, the lost items numbered under their
/// kind with the entry each came from, the invented paths.
pub fn render(s: &Session, x: &Audit, file: &std::path::Path) -> String {
    let e = &s.entries[x.entry];
    let what = match x.kind {
        audit::SummaryKind::Compaction => "compaction",
        audit::SummaryKind::BranchSummary => "branch summary",
    };
    let mut out = format!(
        "{what} {} (line {}) · replaced {} · {}\n",
        e.id,
        e.line,
        units::plural(x.summarized_entries as u64, "entry", "entries"),
        x.headline()
    );
    for k in Kind::ALL {
        let (kept, total) = x.score(k);
        if total > 0 {
            out.push_str(&format!("  {:<15} {kept}/{total} kept\n", k.name()));
        }
    }
    let lost: Vec<&Specific> = x.lost().collect();
    if !lost.is_empty() {
        out.push_str("lost (number: what, from entry):\n");
        let mut n = 0;
        for k in Kind::ALL {
            let of: Vec<&&Specific> = lost.iter().filter(|sp| sp.kind == k).collect();
            if of.is_empty() {
                continue;
            }
            out.push_str(&format!("  {}\n", k.name()));
            let first = n + 1;
            for sp in of.iter().take(SHOWN) {
                n += 1;
                // Most of its words are in the summary, not its negation, qualifier or name.
                let partly = x.items.iter().any(|i| i.partly && std::ptr::eq(&i.specific, **sp));
                out.push_str(&format!(
                    "    {n:>3}. {}{}  ← {}\n",
                    sp.line(),
                    if partly { " (partly kept)" } else { "" },
                    s.entries[sp.entry].id
                ));
            }
            if of.len() > SHOWN {
                let last = first + of.len() - 1;
                out.push_str(&format!(
                    "         … {} more ({}–{last}; --json lists every one)\n",
                    of.len() - SHOWN,
                    n + 1
                ));
                n = last;
            }
        }
        out.push_str(&format!(
            "give them back: bonsai audit {} --entry {} --give-back all (or kinds, or numbers)\n",
            super::out::shell_arg(file),
            e.id
        ));
    }
    if !x.invented.is_empty() {
        out.push_str(&format!(
            "named but never in what it replaced (invented?): {}\n",
            x.invented.join(", ")
        ));
    }
    out
}

/// The lost items as lines, at most `shown` of each kind ("… N more" after), by kind.
pub fn lost_lines(s: &Session, x: &Audit, shown: usize) -> Vec<String> {
    let mut out = Vec::new();
    for k in Kind::ALL {
        let of: Vec<&Specific> = x.lost().filter(|sp| sp.kind == k).collect();
        if of.is_empty() {
            continue;
        }
        let mut line = format!("{}: ", k.name());
        let items: Vec<String> = of
            .iter()
            .take(shown)
            .map(|sp| format!("{} ← {}", sp.line(), s.entries[sp.entry].id))
            .collect();
        line.push_str(&items.join("; "));
        if of.len() > shown {
            line.push_str(&format!("; … {} more", of.len() - shown));
        }
        out.push(line);
    }
    out
}

/// The lost items in the listing's order (by kind), so numbers match `render`.
fn lost_in_order(x: &Audit) -> Vec<&Specific> {
    let lost: Vec<&Specific> = x.lost().collect();
    Kind::ALL
        .iter()
        .flat_map(|k| lost.iter().copied().filter(move |sp| sp.kind == *k))
        .collect()
}

/// The items `which` names: `all`, kinds, or 1-based numbers of the listing.
fn choose<'a>(x: &'a Audit, which: &str, file: &std::path::Path) -> Result<Vec<&'a Specific>> {
    let lost = lost_in_order(x);
    if which.trim() == "all" {
        return Ok(lost);
    }
    let mut chosen: Vec<&Specific> = Vec::new();
    for part in which.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Ok(n) = part.parse::<usize>() {
            let sp = lost.get(n.wrapping_sub(1)).ok_or_else(|| {
                eyre!(
                    "there is no lost item {n}: the audit lists {} (`bonsai audit {} --entry ID` numbers them)",
                    lost.len(),
                    super::out::shell_arg(file)
                )
            })?;
            if !chosen.contains(sp) {
                chosen.push(sp);
            }
        } else if let Some(k) = Kind::parse(part) {
            for sp in lost.iter().filter(|sp| sp.kind == k) {
                if !chosen.contains(sp) {
                    chosen.push(sp);
                }
            }
        } else {
            let kinds: Vec<&str> = Kind::ALL.iter().map(|k| k.key()).collect();
            bail!(
                "--give-back {part:?}: say all, item numbers, or kinds ({})",
                kinds.join(", ")
            );
        }
    }
    Ok(chosen)
}

fn give_back(a: &AuditArgs, s: &Session, leaf: usize, x: &Audit, which: &str) -> Result<()> {
    let chosen = choose(x, which, &a.session.file)?;
    if chosen.is_empty() {
        bail!("nothing to give back: {} ({})", x.headline(), s.entries[x.entry].id);
    }
    let id = s.entries[x.entry].id.to_string();
    let text = audit::given_back(x.kind, &x.summary, &id, &chosen);
    let req = WriteRequest {
        write: Write::Amend {
            of: id.clone(),
            leaf: s.entries[leaf].id.to_string(),
            summary: text,
        },
        // Decided on this state: if Pi appends meanwhile, refuse (look again).
        seen: Some((s.buf.len(), s.entries.len())),
    };
    let entries = req
        .prepare(s, store::clock::entropy(), store::clock::now_ms())
        .map_err(|e| eyre!("nothing written: {e}"))?
        .entries;
    eprintln!(
        "bonsai: gives back {} to {id}: an amended summary at the leaf {} (undo with `bonsai undo`)",
        units::plural(chosen.len() as u64, "item", "items"),
        s.entries[leaf].id
    );
    warn_new_branch(s, leaf, "the amended summary");
    let extra = json!({"givesBack": chosen.len(), "of": id});
    if !a.write.yes {
        preview(&entries, a.write.json, extra.clone());
    }
    if !confirm(&a.write, "this amended summary", &a.session.file)? {
        return Ok(());
    }
    let applied = apply(&a.session.file, &req, "an amended summary", a.write.json)?;
    if a.write.json {
        show(&applied.prepared.entries, true, true, extra);
    }
    Ok(())
}
