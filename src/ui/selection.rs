//! What the gauge and the cut preview show for the selected entry taken as a leaf: Pi's context
//! estimate against the window, and where the next compaction would cut. Computed off the key
//! path for large sessions (a job), on it for small ones.

use super::component::Effect;
use crate::engine::compaction::cut::{self, CompactionPlan, NoCompaction};
use crate::engine::load::models::Registry;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::engine::view::context::{self, ContextMessage, ContextTokens, LeafContext};
use crate::engine::view::tokens::Encoding;
use std::collections::HashMap;

/// Where an entry falls in the cut preview.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CutClass {
    /// Already behind the previous compaction's boundary.
    Compacted,
    Summarized,
    TurnPrefix,
    Kept,
    /// The previous compaction (its summary is updated).
    Boundary,
}

impl CutClass {
    /// The symbol column used instead of colour (NO_COLOR).
    pub fn symbol(self) -> char {
        match self {
            CutClass::Compacted => '·',
            CutClass::Summarized => 'S',
            CutClass::TurnPrefix => 'P',
            CutClass::Kept => 'K',
            CutClass::Boundary => 'B',
        }
    }
}

/// The gauge's zone: the engine's, one type for the gauge, pruning and the live policy.
pub use crate::engine::edit::prune::Zone;

#[derive(Debug, Clone)]
pub struct Gauge {
    pub leaf: Option<usize>,
    pub tokens: ContextTokens,
    pub exact: Option<u64>,
    pub window: Option<u64>,
    pub reserve: u64,
    pub keep_recent: u64,
    pub model: Option<String>,
    /// The selection moved and the new numbers are still being computed.
    pub stale: bool,
    /// Pi's figure rests on a reply from before the latest compaction: it still counts the
    /// context as it was, until the model's next reply reports a new usage.
    pub usage_before_compaction: bool,
    /// Context edits follow the reply Pi's figure rests on: what Pi counts once its next call
    /// goes out (its estimate with the edits), while its figure stays the reply's usage.
    pub after_edits: Option<u64>,
    /// Pi's per-message estimate summed over the whole context (the context view's rows):
    /// the basis every before → after is on. Set with the messages (from an index, with the
    /// cut).
    pub estimate: Option<u64>,
}

impl Gauge {
    /// Pi auto-compacts above this.
    pub fn threshold(&self) -> Option<u64> {
        self.window.map(|w| w.saturating_sub(self.reserve))
    }
    pub fn zone(&self, bounds: (f64, f64)) -> Option<Zone> {
        Some(Zone::of_gauge(self.tokens.tokens, self.threshold()?, bounds))
    }
}

/// A selection's gauge and the messages behind it (its cut comes apart: [`SelectionCut`]).
pub struct SelectionInfo {
    pub leaf: usize,
    pub gauge: Gauge,
    /// `None` when the gauge came from bonsai's index: they come with the cut.
    pub messages: Option<Vec<ContextMessage>>,
    pub encoding: Encoding,
}

/// keepRecentTokens as Pi's settings give it for the model of the session's leaf.
pub fn keep_recent_for(s: &Session, settings: &Settings) -> u64 {
    let model = s.leaf().and_then(|leaf| match LeafContext::kept(s, leaf) {
        Some(c) => c.model.clone(),
        None => context::path_settings(s, &s.path_to(leaf)).1,
    });
    keep_recent_of(settings, &named_model(model))
}

/// The provider and model a path restores, when it names both (what Pi's per-model
/// settings are looked up by).
fn named_model(m: Option<(Option<String>, Option<String>)>) -> Option<(String, String)> {
    m.and_then(|(p, m)| Some((p?, m?)))
}

/// Pi's keepRecentTokens for that model: one lookup for the held selection
/// ([`keep_recent_for`]) and the first gauge ([`of_leaf`]), which must agree.
fn keep_recent_of(settings: &Settings, model: &Option<(String, String)>) -> u64 {
    settings.keep_recent_tokens(model.as_ref().map(|(p, m)| (p.as_str(), m.as_str())))
}

/// What the app's first frame asks for: the gauge of the session's leaf at Pi's
/// keepRecentTokens (its cut follows, [`SelectionCut`]). A big session's is computed by the
/// first load (see `ui/app/first_load.rs`); one opened from an unchanged file's index has
/// the leaf's context kept there, and nothing is projected before the cut.
pub fn of_leaf(s: &Session, settings: &Settings, registry: &Registry) -> Option<(SelectionInfo, CutToCome)> {
    let leaf = s.leaf()?;
    if let Some(kept) = LeafContext::kept(s, leaf) {
        return Some(gauge_from(leaf, kept, None, settings, registry, None));
    }
    Some(gauge_of(s, leaf, settings, registry, None))
}

/// A selection's cut, worked out after its gauge: on a long path it costs as much as the
/// gauge (every summarized message and its files), and neither the gauge nor the first
/// frame shows it (the cut preview says "computing the cut…" until it is there).
pub struct SelectionCut {
    pub leaf: usize,
    pub cut: Result<CompactionPlan, NoCompaction>,
    /// The cut preview's classes (only when the preview is on: it touches every path entry).
    pub classes: Option<HashMap<usize, CutClass>>,
    /// The gauge's messages and their encoding, when its figures came from bonsai's index
    /// (projected here).
    pub messages: Option<(Vec<ContextMessage>, Encoding)>,
}

/// What the gauge's step hands to the cut's: the projection it made (none when the gauge
/// came from bonsai's index: the cut makes it), and the compaction settings of the path's
/// model.
pub struct CutToCome {
    leaf: usize,
    projection: Option<context::Projection>,
    settings: cut::CompactionSettings,
    encoding: Encoding,
}

impl CutToCome {
    pub fn cut(self, s: &Session, want_classes: bool) -> SelectionCut {
        let (projection, messages) = match self.projection {
            Some(p) => (p, None),
            None => {
                let p = context::project(s, &s.path_to(self.leaf));
                let messages = p.messages().cloned().collect();
                (p, Some((messages, self.encoding)))
            }
        };
        let cut = cut::prepare_projected(s, projection, self.settings);
        let classes = want_classes.then(|| cut_classes(&cut));
        SelectionCut {
            leaf: self.leaf,
            cut,
            classes,
            messages,
        }
    }
}

/// The gauge for `leaf` (its cut left to [`CutToCome::cut`]); `keep_recent` `None`: Pi's
/// setting for the model of the path (as [`keep_recent_for`] gives it, from the path walked
/// once here instead of twice).
pub(crate) fn gauge_of(
    s: &Session,
    leaf: usize,
    settings: &Settings,
    registry: &Registry,
    keep_recent: Option<u64>,
) -> (SelectionInfo, CutToCome) {
    let proj = context::project(s, &s.path_to(leaf));
    let facts = LeafContext::gauge_of(s, leaf, &proj);
    gauge_from(leaf, &facts, Some(proj), settings, registry, keep_recent)
}

/// The gauge of the leaf context `facts` under the settings; `proj`: its projection, when
/// made (its messages are the gauge's; otherwise they come with the cut).
fn gauge_from(
    leaf: usize,
    facts: &LeafContext,
    proj: Option<context::Projection>,
    settings: &Settings,
    registry: &Registry,
    keep_recent: Option<u64>,
) -> (SelectionInfo, CutToCome) {
    let model = named_model(facts.model.clone());
    let window = model
        .as_ref()
        .and_then(|(p, m)| registry.find(p, m))
        .map(|m| m.context_window);
    let mref = model.as_ref().map(|(p, m)| (p.as_str(), m.as_str()));
    let keep_recent = keep_recent.unwrap_or_else(|| keep_recent_of(settings, &model));
    let reserve = settings.reserve_tokens(mref);
    let encoding = Encoding::for_model(mref.map(|m| m.0), mref.map(|m| m.1));
    let messages: Option<Vec<ContextMessage>> = proj.as_ref().map(|p| p.messages().cloned().collect());
    let estimate = messages.as_ref().map(|m| m.iter().map(|x| x.est_tokens).sum());
    let to_come = CutToCome {
        leaf,
        settings: settings.compaction_settings(mref, Some(reserve), Some(keep_recent)),
        projection: proj,
        encoding,
    };
    let info = SelectionInfo {
        leaf,
        gauge: Gauge {
            leaf: Some(leaf),
            tokens: facts.tokens,
            exact: None,
            window,
            reserve,
            keep_recent,
            model: model.map(|(p, m)| format!("{p}/{m}")),
            stale: false,
            usage_before_compaction: facts.usage_before_compaction,
            after_edits: facts.after_edits,
            estimate,
        },
        messages,
        encoding,
    };
    (info, to_come)
}

/// Each path entry's place in the cut.
fn cut_classes(plan: &Result<CompactionPlan, NoCompaction>) -> HashMap<usize, CutClass> {
    let mut classes = HashMap::new();
    let Ok(p) = plan else { return classes };
    let in_projection: std::collections::HashSet<usize> = p.projection.entries.iter().map(|e| e.source).collect();
    for &i in &p.projection.path {
        if !in_projection.contains(&i) {
            classes.insert(i, CutClass::Compacted);
        }
    }
    for (k, pe) in p.projection.entries.iter().enumerate() {
        let class = if Some(k) == p.previous_compaction {
            CutClass::Boundary
        } else if k < p.history.start {
            CutClass::Compacted
        } else if k < p.history.end {
            CutClass::Summarized
        } else if k < p.first_kept {
            CutClass::TurnPrefix
        } else {
            CutClass::Kept
        };
        classes.insert(pe.source, class);
    }
    classes
}

/// What depends on the selected entry taken as a leaf.
#[derive(Default)]
pub struct SelectionState {
    pub generation: u64,
    pub gauge: Option<Gauge>,
    pub cut: Option<Result<CompactionPlan, NoCompaction>>,
    pub cut_classes: HashMap<usize, CutClass>,
    /// Exact counts of the selection's context messages, once counted.
    pub exact: Option<Vec<u64>>,
    /// keepRecentTokens for the cut preview (the setting until changed here).
    pub keep_recent: u64,
    /// What bonsai's Pi package would send at the selection (for the gauge's mark), once
    /// counted; `None` while counting or when the live policy is off.
    pub live: Option<Box<crate::engine::live::LiveReport>>,
}

/// The selection's job outputs, taken here; each belongs to the selection of its
/// generation, and an older one's is dropped. What else they need is said as effects.
impl SelectionState {
    /// The gauge of the selection: its cut is still to come.
    pub fn take_gauge(&mut self, generation: u64, info: SelectionInfo) -> Vec<Effect> {
        if generation != self.generation {
            return vec![];
        }
        self.gauge = Some(info.gauge);
        // The old leaf's cut is not this one's: "computing the cut…" until it comes.
        self.cut = None;
        let mut out = Vec::new();
        // From bonsai's index the messages come with the cut (then counted).
        if let Some(messages) = info.messages {
            out.push(Effect::CountExactly {
                generation,
                messages,
                encoding: info.encoding,
            });
        }
        out.push(Effect::GaugeKnown);
        out
    }

    /// The selection's cut, after its gauge.
    pub fn take_cut(&mut self, generation: u64, cut: SelectionCut) -> Vec<Effect> {
        if generation != self.generation {
            return vec![];
        }
        let mut out = Vec::new();
        if let Some((messages, encoding)) = cut.messages {
            if let Some(g) = &mut self.gauge {
                g.estimate = Some(messages.iter().map(|m| m.est_tokens).sum());
            }
            out.push(Effect::CountExactly {
                generation,
                messages,
                encoding,
            });
        }
        self.cut = Some(cut.cut);
        if let Some(c) = cut.classes {
            self.cut_classes = c;
        }
        out
    }

    /// The exact counts of the selection's messages.
    pub fn take_exact(&mut self, generation: u64, total: u64, per_message: Vec<u64>) {
        if generation == self.generation {
            if let Some(g) = &mut self.gauge {
                g.exact = Some(total);
            }
            self.exact = Some(per_message);
        }
    }

    /// What bonsai's Pi package would send at the selection.
    pub fn take_live(&mut self, generation: u64, report: Box<crate::engine::live::LiveReport>) {
        if generation == self.generation {
            self.live = Some(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::load::entry::Kind;
    use crate::engine::load::models::Registry;
    use crate::engine::load::session::Session;
    use crate::engine::settings::Settings;

    #[test]
    fn just_after_a_compaction_pis_figure_is_marked_as_from_before_it() {
        let s = Session::from_bytes(crate::ui::DEMO.to_vec()).unwrap();
        let c = (0..s.entries.len())
            .rfind(|&i| matches!(s.entries[i].kind, Kind::Compaction(_)))
            .expect("the demo has a compaction");
        let at = |leaf| super::gauge_of(&s, leaf, &Settings::default(), &Registry::builtin_only(), Some(20_000)).0;
        let g = at(c).gauge;
        assert!(g.tokens.last_usage_index.is_some());
        assert!(
            g.usage_before_compaction,
            "the kept reply's usage predates the compaction"
        );
        // At the file's last entry the model has replied since: the figure is fresh.
        let last = s.entries.len() - 1;
        assert!(!at(last).gauge.usage_before_compaction);
    }
}
