//! Pi's filter modes, search and folds: which entries a `/tree` view shows (`applyFilter`).

use super::model::{FilterMode, TreeView};
use super::text::searchable_text;
use crate::load::entry::{Kind, Role};
use crate::load::session::Session;
use rustc_hash::FxHashSet as HashSet;

impl TreeView {
    fn is_settings_entry(kind: &Kind) -> bool {
        matches!(
            kind,
            Kind::Label { .. }
                | Kind::ContextEdit { .. }
                | Kind::Custom { .. }
                | Kind::ModelChange { .. }
                | Kind::ThinkingLevelChange { .. }
                | Kind::SessionInfo { .. }
        )
    }

    fn passes(&self, s: &Session, i: usize) -> bool {
        let e = &s.entries[i];
        if matches!(e.kind, Kind::Usage) {
            return false;
        }
        // A message's facts, not the message: every entry passes through here, and a session
        // opened from its index decodes a message only when something reads it.
        let facts = match &e.kind {
            Kind::Message(m) => Some(m.facts()),
            _ => None,
        };
        if let Some(f) = facts
            && f.is(&Role::Assistant)
            && Some(i) != self.leaf
            && !f.visible_text()
            && !f.stopped_abnormally()
        {
            return false;
        }
        let is = |role: &Role| facts.is_some_and(|f| f.is(role));
        match self.filter {
            FilterMode::UserOnly => is(&Role::User),
            FilterMode::NoTools => !Self::is_settings_entry(&e.kind) && !is(&Role::ToolResult),
            FilterMode::LabeledOnly => s.label_of(&e.id).is_some(),
            FilterMode::All => true,
            FilterMode::Default => !Self::is_settings_entry(&e.kind),
        }
    }

    /// Every entry's searchable text, made on the first search on every core: it reads every
    /// message (a session opened from bonsai's index decodes each here, for the first time).
    fn ensure_search_text(&mut self, s: &Session) {
        use rayon::prelude::*;
        if self.search_text.is_none() {
            let texts = (0..s.entries.len())
                .into_par_iter()
                .with_min_len(256)
                .map(|i| searchable_text(s, i).to_lowercase())
                .collect();
            self.search_text = Some(texts);
        }
    }

    /// The selected entry, kept across a change of the visible rows.
    fn remember_selection(&mut self) {
        if !self.visible.is_empty() {
            self.last_selected = self
                .visible
                .get(self.selected)
                .map(|&f| self.flat[f])
                .or(self.last_selected);
        }
    }

    /// Pi's `applyFilter`: filter, search, folds, re-layout, keep the selection.
    pub fn apply_filter(&mut self, s: &Session) {
        self.remember_selection();
        let tokens: Vec<String> = self
            .search
            .to_lowercase()
            .split_whitespace()
            .map(String::from)
            .collect();
        if !tokens.is_empty() {
            self.ensure_search_text(s);
        }
        let mut visible = Vec::with_capacity(self.flat.len());
        let texts = self.search_text.as_deref().filter(|_| !tokens.is_empty());
        for (fi, &i) in self.flat.iter().enumerate() {
            if !self.passes(s, i) || (!self.show_archived && self.is_archived(i)) {
                continue;
            }
            if let Some(texts) = texts
                && !tokens.iter().all(|k| texts[i].contains(k.as_str()))
            {
                continue;
            }
            visible.push(fi);
        }
        if !self.folded.is_empty() {
            let mut skip: HashSet<usize> = HashSet::default();
            for &i in &self.flat {
                if let Some(p) = s.parent_of(i)
                    && (self.folded.contains(&p) || skip.contains(&p))
                {
                    skip.insert(i);
                }
            }
            visible.retain(|&fi| !skip.contains(&self.flat[fi]));
        }
        self.visible = visible.into();
        self.relayout(s);
        if let Some(ls) = self.last_selected {
            self.selected = self.nearest_visible(s, Some(ls));
        } else if self.selected >= self.visible.len() {
            self.selected = self.visible.len().saturating_sub(1);
        }
        self.remember_selection();
    }
}
