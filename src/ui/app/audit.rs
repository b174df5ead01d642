//! The audit of a summary (`a` on a compaction or branch-summary row): opened over the tree,
//! built by a job, and the chosen lost items given back through the confirm dialog.

use super::*;
use crate::engine::compaction::audit::{self, Specific, SummaryKind};
use crate::engine::edit::plan::{Write, WriteRequest};
use crate::engine::load::entry::Kind;
use crate::engine::units;
use crate::ui::component::Component;
use crate::ui::dialog::{Dialog, PendingWrite, Seen};

impl App {
    pub(super) fn open_audit(&mut self) {
        let Some(sel) = self.selected() else { return };
        let s = self.doc.session.clone();
        if !matches!(s.entries[sel].kind, Kind::Compaction(_) | Kind::BranchSummary(_)) {
            self.log.status = Some(
                "a audits a summary: select a compaction or a branch summary (] jumps to the next compaction)".into(),
            );
            return;
        }
        let generation = self.parts.audit.open(sel);
        self.screen.overlay = Overlay::Audit;
        self.start_for::<crate::ui::audit_view::AuditState, _>(crate::ui::jobs::AuditJob {
            generation,
            session: s,
            entry: sel,
        });
    }

    pub fn audit_data(&self) -> Option<&crate::ui::audit_view::AuditData> {
        self.parts.audit.data.as_deref()
    }

    pub(super) fn on_audit(&mut self, action: Action) -> bool {
        let effects = self.parts.audit.update(&action, ());
        self.apply(effects)
    }

    /// Ask before giving `items` back to summary `of`: what the new entry is and where it goes.
    pub(super) fn confirm_give_back(&mut self, of: usize, items: &[Specific]) {
        if !self.writable() {
            return;
        }
        let s = self.doc.session.clone();
        let Some(leaf) = s.leaf() else { return };
        let kind = match s.entries[of].kind {
            Kind::Compaction(_) => SummaryKind::Compaction,
            _ => SummaryKind::BranchSummary,
        };
        let id = s.entries[of].id.to_string();
        let old = s
            .entry_value(of)
            .get("summary")
            .map(crate::engine::load::js::js_to_string)
            .unwrap_or_default();
        let refs: Vec<&Specific> = items.iter().collect();
        let text = audit::given_back(kind, &old, &id, &refs);
        let n = units::plural(items.len() as u64, "lost item", "lost items");
        let mut lines = vec![match kind {
            SummaryKind::Compaction => format!(
                "A new compaction at the leaf {}: the summary of {id} with a Specifics section holding {n} word for word.",
                s.entries[leaf].id
            ),
            SummaryKind::BranchSummary => format!(
                "A new branch summary at the leaf {} holding {n} word for word (the summary of {id} stays).",
                s.entries[leaf].id
            ),
        }];
        lines.push(format!(
            "Pi's model gets them from its next call: about {} tokens more (Pi's estimate).",
            units::count(
                crate::engine::compaction::summary::estimate_text(&text).saturating_sub(match kind {
                    SummaryKind::Compaction => crate::engine::compaction::summary::estimate_text(&old),
                    SummaryKind::BranchSummary => 0,
                })
            )
        ));
        lines.push("Nothing else in the context changes; u undoes it.".into());
        if let Some((short, _)) = self.branch_note(leaf) {
            lines.push(format!("{short}."));
        }
        lines.push("Write it?".into());
        let seen = Seen::of(&s);
        self.parts.dialog = Some(Dialog::Confirm {
            title: "Give the lost items back".into(),
            lines,
            then: Box::new(PendingWrite {
                request: WriteRequest {
                    write: Write::Amend {
                        of: id,
                        leaf: s.entries[leaf].id.to_string(),
                        summary: text,
                    },
                    seen: Some((seen.len, seen.entries)),
                },
                what: format!("an amended summary ({n} given back)"),
                select: None,
            }),
        });
        self.screen.overlay = Overlay::None;
    }
}

#[cfg(test)]
mod tests;
