//! One Pi session's engine state, and what every method reads from it: the session file,
//! the window and reserve of a call, the compaction plan at Pi's leaf.

use super::protocol::{Fail, Hello, HelloAnswer, LiveSettingsView, Marks, ModelRef, PROTOCOL, Usage, bad};
use crate::engine::compaction::cut::CompactionPlan;
use crate::engine::edit::entries;
use crate::engine::live::{self, CallEnv, Latch, LiveReport, LiveSettings, LiveState, Prices};
use crate::engine::load::models::Registry;
use crate::engine::load::pi_version::PiVersion;
use crate::engine::load::session::Session;
use crate::engine::settings::Settings;
use crate::store::config::{agent_dir, load_registry};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One Pi session's engine state.
pub struct Served {
    pub cwd: PathBuf,
    pub session_file: Option<PathBuf>,
    pub settings: Settings,
    pub live: LiveSettings,
    pub registry: Registry,
    pub latch: Latch,
    pub last: Option<LiveReport>,
    pub calls: u64,
    pub compactions: u64,
    pub last_decision: Option<String>,
    /// Pi's messages as the package sent them, the chain of their fingerprints
    /// (`chain[k]`: of the first `k`), and the policy's state after them.
    pub messages: Vec<Value>,
    pub chain: Vec<u32>,
    pub state: LiveState,
    /// The Pi release the package runs in (`hello`'s `piVersion`): sessions are read as it.
    pub pi: PiVersion,
    /// What the newest compaction lost (the notice said after it; `/ctx-status` keeps it).
    pub last_audit: Option<String>,
    /// How each of Pi's messages went out on the last call (what `bonsai_recall` searches).
    pub last_sending: Vec<live::recall::Sending>,
    /// The bill so far, computed apart from the requests (`/ctx-status` never waits for it).
    pub bill: std::sync::Arc<std::sync::Mutex<BillSlot>>,
}

/// The bill so far of one session file, as last computed, and whether a computation runs.
#[derive(Default)]
pub struct BillSlot {
    /// The file and its size and modification time when the figures were computed.
    pub of: Option<(PathBuf, u64, std::time::SystemTime)>,
    pub value: Option<super::protocol::BillSoFar>,
    pub running: bool,
}

/// The fingerprint chain's start: FNV-1a's offset basis.
pub const CHAIN_START: u32 = 0x811c_9dc5;

impl Served {
    pub fn new(cwd: PathBuf) -> Served {
        Served::trusting(cwd, None)
    }

    /// The state for a Pi session in `cwd`, its project settings read only when the Pi it
    /// runs in trusts the folder (`trusted`; `None`: decided as Pi decides it).
    pub fn trusting(cwd: PathBuf, trusted: Option<bool>) -> Served {
        let settings = crate::store::config::load_settings_trusting(&cwd, trusted);
        let live = settings.live_settings();
        Served {
            cwd,
            session_file: None,
            settings,
            live,
            registry: load_registry(&agent_dir()),
            latch: Latch::Idle,
            last: None,
            calls: 0,
            compactions: 0,
            last_decision: None,
            messages: Vec::new(),
            chain: vec![CHAIN_START],
            state: LiveState::default(),
            pi: crate::store::pi_version::followed(),
            last_audit: None,
            last_sending: Vec::new(),
            bill: Default::default(),
        }
    }

    /// `hello`: the state afresh for the package's session, and what the engine is.
    pub fn hello(&mut self, p: Hello) -> Result<HelloAnswer, Fail> {
        if p.protocol != PROTOCOL {
            return Err(Fail(
                "protocol",
                format!(
                    "the package speaks protocol {}, this bonsai ({}) speaks {PROTOCOL}: install matching versions",
                    p.protocol,
                    env!("CARGO_PKG_VERSION")
                ),
            ));
        }
        if let Some(cwd) = p.cwd {
            // The Pi the package runs in decided whether the folder is trusted.
            *self = Served::trusting(PathBuf::from(cwd), p.project_trusted);
        }
        self.session_file = p.session_file.map(PathBuf::from);
        let mut problems: Vec<String> = self.live.problems.iter().map(|x| x.to_string()).collect();
        // The Pi the package runs in is the one to reproduce (its summaries, its file lists).
        if let Some(v) = p.pi_version {
            match PiVersion::nearest(&v) {
                Ok((pi, note)) => {
                    self.pi = pi;
                    problems.extend(note);
                }
                Err(e) => problems.push(format!("piVersion: {e}; following Pi {}", self.pi)),
            }
        }
        problems.extend(self.settings.warnings.iter().cloned());
        problems.extend(self.settings.project_ignored.iter().cloned());
        Ok(HelloAnswer {
            protocol: PROTOCOL,
            engine: engine_name(),
            settings: self.settings_view(),
            pi_version: self.pi.name().to_string(),
            problems,
        })
    }

    pub fn settings_view(&self) -> LiveSettingsView {
        let l = &self.live;
        let on = l.policy != live::LivePolicy::Off;
        LiveSettingsView {
            policy: l.policy.name().to_string(),
            steps: Marks {
                high: l.marks.high,
                low: l.marks.low,
            },
            floor_turns: l.floor_turns,
            cache_ttl_seconds: l.cache_ttl_ms / 1000.0,
            packet_tokens: l.packet_tokens,
            gauge_zones: l.zones,
            compact_early: l.compact_early,
            summarizer: l.summarizer.name().to_string(),
            recall: l.recall && on,
            recall_tool: live::RECALL_TOOL.to_string(),
            recall_tokens: l.recall_tokens,
            mend: l.mend && on,
            mend_tokens: l.mend_tokens,
        }
    }

    /// A model's prices from Pi's registry.
    pub fn prices(&self, provider: &str, id: &str) -> Option<Prices> {
        self.registry.find(provider, id).map(Prices::of_model)
    }

    /// The window and reserve of a call: Pi's window for its model (else the model table's,
    /// else Pi's fallback), the reserve from Pi's settings for that model.
    pub fn window_and_reserve(&self, usage: Option<&Usage>, model: Option<&ModelRef>) -> (u64, u64) {
        let mref = ModelRef::pair(model);
        let window = usage.and_then(|u| u.context_window).filter(|w| *w > 0).or_else(|| {
            mref.and_then(|(a, b)| self.registry.find(a, b))
                .map(|m| m.context_window)
        });
        let window = crate::engine::load::models::window_or_default(window);
        (window, self.settings.reserve_tokens(mref))
    }

    /// A call's window, reserve and prices.
    pub fn call_env(&self, usage: Option<&Usage>, model: Option<&ModelRef>) -> CallEnv {
        let (context_window, reserve_tokens) = self.window_and_reserve(usage, model);
        CallEnv {
            context_window,
            reserve_tokens,
            prices: model.and_then(|m| self.prices(&m.provider, &m.id)),
        }
    }

    /// The session file of a request (its own, else the one `hello` named).
    pub fn file_of(&self, session_file: Option<&str>) -> Option<PathBuf> {
        session_file.map(PathBuf::from).or_else(|| self.session_file.clone())
    }

    /// [`Self::file_of`], which a method that writes or plans needs.
    pub fn session_of(&self, session_file: Option<&str>) -> Result<PathBuf, Fail> {
        self.file_of(session_file)
            .ok_or_else(|| bad("no session file: Pi's session is not saved to a file"))
    }

    /// The session at Pi's leaf and the compaction plan there, with Pi's settings for the model.
    pub fn plan_at(
        &self,
        file: &Path,
        leaf_id: Option<&str>,
        model: Option<(&str, &str)>,
    ) -> Result<(Session, usize, CompactionPlan), Fail> {
        self.plan_keeping(file, leaf_id, model, None)
    }

    /// What bonsai's own compaction keeps of the recent turns: the zones policy's low mark
    /// (what it sends of them after a step), at most Pi's `keepRecentTokens`. The turns past
    /// it are left out of every request anyway; keeping them in Pi's context would only bring
    /// the next compaction sooner. `None` (Pi's setting) for the other policies.
    pub fn live_keep(&self, model: Option<(&str, &str)>, window: u64) -> Option<u64> {
        (self.live.policy == live::LivePolicy::Zones).then(|| {
            let cs = self.settings.compaction_settings(model, None, None);
            let low = self.live.marks.within(window.saturating_sub(cs.reserve_tokens)).low;
            low.min(cs.keep_recent_tokens)
        })
    }

    /// [`Self::plan_at`] keeping `keep` recent tokens (`None`: Pi's setting).
    pub fn plan_keeping(
        &self,
        file: &Path,
        leaf_id: Option<&str>,
        model: Option<(&str, &str)>,
        keep: Option<u64>,
    ) -> Result<(Session, usize, CompactionPlan), Fail> {
        let s = crate::store::load_session(file)
            .map_err(|e| Fail("failed", format!("{}: {e}", file.display())))?
            .read_as(self.pi);
        let leaf = match leaf_id {
            Some(id) => s
                .idx_of(id)
                .ok_or_else(|| Fail("failed", format!("entry {id} is not in {}", file.display())))?,
            None => s
                .leaf()
                .ok_or_else(|| Fail("failed", "the session has no entries".into()))?,
        };
        let cs = self.settings.compaction_settings(model, None, keep);
        let plan = entries::plan_compaction(&s, leaf, cs)
            .map_err(|e| Fail("failed", format!("nothing to compact: {}", e.reason())))?;
        Ok((s, leaf, plan))
    }

    /// A session file for a request that only reads it: through bonsai's index where one
    /// still describes it (a line that fails its check makes it parsed whole), read as the Pi
    /// the package runs in.
    pub fn read_session(&self, file: &Path) -> Result<Session, Fail> {
        use crate::store::index;
        let place = index::Place::in_agent(&agent_dir(), &self.settings);
        let opened =
            index::open_proven(file, &place).map_err(|e| Fail("failed", format!("{}: {e}", file.display())))?;
        Ok(opened.session.read_as(self.pi))
    }
}

/// `bonsai VERSION`, as `hello` and `status` name the engine.
pub fn engine_name() -> String {
    format!("bonsai {}", env!("CARGO_PKG_VERSION"))
}
