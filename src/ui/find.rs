//! The find component (Ctrl+F): the query being typed, the hits as they stream in, and the
//! one shown. The app starts its search and moves between hits (`app/find.rs`).

use crate::ui::action::Action;
use crate::ui::component::{self, Effect};
use crate::ui::input::LineEditor;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A find in the open session.
pub struct Find {
    pub id: u64,
    /// Being typed (Ctrl+F until Enter).
    pub editor: Option<LineEditor>,
    pub query: String,
    /// What matches in decoded text (for the detail pane), once a search ran.
    pub regex: Option<regex::Regex>,
    /// Hits by their place in tree order: (entry, matches in it).
    pub hits: BTreeMap<u32, (usize, usize)>,
    /// The hit shown (its place in tree order).
    pub current: Option<u32>,
    pub running: bool,
    pub cancel: Arc<AtomicBool>,
    pub error: Option<String>,
    pub elapsed_ms: u64,
    /// The detail pane is to scroll to the first match once it shows the hit.
    pub scroll_pending: bool,
    /// Each entry's place in the tree's order (as the view shows it).
    order: Arc<Vec<u32>>,
}

impl Find {
    /// A find whose first query is being typed.
    pub fn typing() -> Find {
        Find {
            id: 0,
            editor: Some(LineEditor::new("", false)),
            query: String::new(),
            regex: None,
            hits: BTreeMap::new(),
            current: None,
            running: false,
            cancel: Arc::new(AtomicBool::new(false)),
            error: None,
            elapsed_ms: 0,
            scroll_pending: false,
            order: Arc::new(vec![]),
        }
    }

    /// A find of `query` running as job `id`, its hits placed by the view's order `flat`
    /// (`regex`: what the detail pane marks).
    pub fn searching(
        id: u64,
        query: String,
        regex: regex::Regex,
        cancel: Arc<AtomicBool>,
        entries: usize,
        flat: &[usize],
    ) -> Find {
        Find {
            id,
            editor: None,
            query,
            regex: Some(regex),
            hits: BTreeMap::new(),
            current: None,
            running: true,
            cancel,
            error: None,
            elapsed_ms: 0,
            scroll_pending: false,
            order: Arc::new(tree_order(entries, flat)),
        }
    }

    /// Hits of the find `id` (another find's are dropped); the first shown when none is.
    pub fn take_hits(&mut self, id: u64, hits: Vec<(usize, usize)>) -> Vec<Effect> {
        if id != self.id {
            return vec![];
        }
        self.add_hits(hits);
        if self.current.is_none() {
            vec![Effect::FindFirstHit]
        } else {
            vec![]
        }
    }

    /// The end of the find `id`: an error, or nothing found, is said.
    pub fn take_done(&mut self, id: u64, elapsed_ms: u64, error: Option<String>) -> Vec<Effect> {
        if id != self.id {
            return vec![];
        }
        self.running = false;
        self.elapsed_ms = elapsed_ms;
        self.error = error.clone();
        if let Some(e) = error {
            vec![Effect::Say(format!("find: {e}"))]
        } else if self.hits.is_empty() {
            vec![Effect::Say(format!(
                "find: {:?} is nowhere in this session",
                self.query
            ))]
        } else {
            vec![]
        }
    }

    /// Hits come in: each placed by the entry's place in the tree's order.
    pub fn add_hits(&mut self, hits: Vec<(usize, usize)>) {
        for (entry, matches) in hits {
            let at = self.order.get(entry).copied().unwrap_or(u32::MAX - 1);
            self.hits.insert(at, (entry, matches));
        }
    }

    /// "3/17" (or "…/17" before the first jump), and whether it is still searching.
    pub fn count(&self) -> String {
        let n = self.hits.len();
        let at = self
            .current
            .and_then(|c| self.hits.keys().position(|k| *k == c))
            .map(|k| (k + 1).to_string())
            .unwrap_or_else(|| "-".into());
        format!("{at}/{n}{}", if self.running { " …" } else { "" })
    }
}

/// Every entry's place in the tree as the view orders it (Pi's flattened order: pre-order,
/// the active branch first); entries outside it come last, in file order.
fn tree_order(entries: usize, flat: &[usize]) -> Vec<u32> {
    let mut order = vec![u32::MAX; entries];
    for (k, &e) in flat.iter().enumerate() {
        if let Some(o) = order.get_mut(e) {
            *o = k as u32;
        }
    }
    for (next, o) in (flat.len() as u32..).zip(order.iter_mut().filter(|o| **o == u32::MAX)) {
        *o = next;
    }
    order
}

impl crate::ui::component::Component for Find {
    type Lent<'a> = ();
    const NAME: &'static str = "find";

    /// A key while the query is typed: Enter finds it (an empty query ends the find), Esc
    /// stops typing (and ends a find that never ran).
    fn update(&mut self, action: &crate::ui::action::Action, (): Self::Lent<'_>) -> Vec<crate::ui::component::Effect> {
        let Some(ed) = &mut self.editor else {
            return component::ignored();
        };
        match action {
            Action::Edit(key) if !ed.input(*key) => return component::ignored(),
            Action::Edit(_) => {}
            Action::Paste(text) => ed.paste(text),
            Action::Close if self.query.is_empty() => return vec![Effect::EndFind],
            Action::Close => self.editor = None,
            Action::Select => {
                let q = ed.text();
                self.editor = None;
                return vec![if q.is_empty() { Effect::EndFind } else { Effect::Find(q) }];
            }
            _ => return component::ignored(),
        }
        component::changed()
    }
}
