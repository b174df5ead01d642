//! The Pi release bonsai reproduces. Reading, the tree, the context, token estimates and cut
//! points are the same in every release bonsai knows; what a summary is made from, a few
//! `/tree` rows and the summary requests are not. Each difference is one method here, so the
//! code that depends on it names the behaviour, not a version number.

use std::cmp::Ordering;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum PiVersion {
    /// The release bonsai was first exact for (and the engine's default).
    #[default]
    V0_87_1,
    V1_5_2,
    /// The newest release (2026-11-20): every behaviour here as 1.5.2's. Its own answers on the
    /// repository's sessions equal 1.5.2's (`tests/parity.rs`, `pi_1_6_0_answers_as_1_5_2`).
    V1_6_0,
}

/// Text given as a Pi version that is none.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{0}` is not a version (like 1.5.2)")]
pub struct NotAVersion(pub String);

impl PiVersion {
    /// Every release bonsai reproduces, oldest first.
    pub const KNOWN: [PiVersion; 3] = [PiVersion::V0_87_1, PiVersion::V1_5_2, PiVersion::V1_6_0];
    pub const NEWEST: PiVersion = PiVersion::V1_6_0;

    pub fn name(self) -> &'static str {
        match self {
            PiVersion::V0_87_1 => "0.87.1",
            PiVersion::V1_5_2 => "1.5.2",
            PiVersion::V1_6_0 => "1.6.0",
        }
    }

    fn triple(self) -> (u64, u64, u64) {
        match self {
            PiVersion::V0_87_1 => (0, 87, 1),
            PiVersion::V1_5_2 => (1, 5, 2),
            PiVersion::V1_6_0 => (1, 6, 0),
        }
    }

    /// The release to follow for a version string (`1.5.2`, `v1.6.0`, `1.5.2-beta.1`): that
    /// release if bonsai knows it, else the nearest one below with a note saying so (below
    /// the oldest: the oldest, with a note). `Err` for text that is not a version.
    pub fn nearest(text: &str) -> Result<(PiVersion, Option<String>), NotAVersion> {
        let t = text.trim().trim_start_matches('v');
        let core = t.split(['-', '+']).next().unwrap_or("");
        let parts: Vec<&str> = core.split('.').collect();
        let num = |k: usize| -> Result<u64, NotAVersion> {
            parts
                .get(k)
                .map(|p| p.parse::<u64>().map_err(|_| NotAVersion(text.to_string())))
                .unwrap_or(Ok(0))
        };
        if parts.is_empty() || parts.len() > 3 || parts[0].is_empty() {
            return Err(NotAVersion(text.to_string()));
        }
        let v = (num(0)?, num(1)?, num(2)?);
        let pre = core.len() < t.len() && t[core.len()..].starts_with('-');
        if let Some(k) = PiVersion::KNOWN.iter().find(|k| k.triple() == v) {
            return Ok((*k, None));
        }
        let below = PiVersion::KNOWN
            .iter()
            .rev()
            .find(|k| k.triple().cmp(&v) == Ordering::Less);
        Ok(match below {
            Some(k) => (
                *k,
                Some(format!(
                    "Pi {text} is not one bonsai knows{}; it follows {}, the nearest below",
                    if pre { " (a pre-release)" } else { "" },
                    k.name()
                )),
            ),
            None => (
                PiVersion::KNOWN[0],
                Some(format!(
                    "Pi {text} is older than any bonsai knows; it follows {}, the oldest",
                    PiVersion::KNOWN[0].name()
                )),
            ),
        })
    }

    /// `serializeConversation` writes `[Assistant thinking]:` parts (dropped in 1.5.2).
    pub fn serializes_thinking(self) -> bool {
        self < PiVersion::V1_5_2
    }

    /// A summary's truncated tool result never ends in half a surrogate pair (1.5.2's
    /// `sliceHead`; 0.87.1 cut through it, which Node writes as U+FFFD).
    pub fn truncates_whole_characters(self) -> bool {
        self >= PiVersion::V1_5_2
    }

    /// A branch summary's input applies the latest context edit of each target inside the
    /// abandoned segment (`prepareBranchEntries` in 1.5.2).
    pub fn branch_applies_context_edits(self) -> bool {
        self >= PiVersion::V1_5_2
    }

    /// Compaction file lists also take read/write/edit paths from a tool result's
    /// `nestedCalls.calls[]` (1.5.2).
    pub fn nested_call_file_ops(self) -> bool {
        self >= PiVersion::V1_5_2
    }

    /// `/tree` shortens a path under the home folder only at a path-component boundary and
    /// normalised (1.5.2's `shortenHomePath`); 0.87.1 replaced any string prefix.
    pub fn home_shortening_by_component(self) -> bool {
        self >= PiVersion::V1_5_2
    }

    /// `/tree`'s read ranges treat null offset/limit as absent and parse numeric strings
    /// (1.5.2's `formatReadLineRange`).
    pub fn lenient_read_ranges(self) -> bool {
        self >= PiVersion::V1_5_2
    }

    /// Summary requests carry `maxTokens` (0.87.1; 1.5.2 sends none).
    pub fn summary_max_tokens(self) -> bool {
        self < PiVersion::V1_5_2
    }

    /// The turn-prefix summary request carries the user's instructions as
    /// `Additional focus: …` (1.5.2).
    pub fn turn_prefix_focus(self) -> bool {
        self >= PiVersion::V1_5_2
    }

    /// Branch summary requests carry the session's thinking level (1.5.2).
    pub fn branch_summary_thinking(self) -> bool {
        self >= PiVersion::V1_5_2
    }
}

impl std::fmt::Display for PiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_map_to_the_nearest_known_one_below() {
        assert_eq!(PiVersion::nearest("0.87.1").unwrap(), (PiVersion::V0_87_1, None));
        assert_eq!(PiVersion::nearest("v1.5.2").unwrap(), (PiVersion::V1_5_2, None));
        assert_eq!(PiVersion::nearest("1.6.0").unwrap(), (PiVersion::V1_6_0, None));
        let (v, note) = PiVersion::nearest("1.7.0").unwrap();
        assert_eq!(v, PiVersion::V1_6_0);
        assert!(note.unwrap().contains("follows 1.6.0, the nearest below"));
        let (v, note) = PiVersion::nearest("1.5.9").unwrap();
        assert_eq!(v, PiVersion::V1_5_2);
        assert!(note.unwrap().contains("follows 1.5.2, the nearest below"));
        let (v, note) = PiVersion::nearest("1.2.0").unwrap();
        assert_eq!(v, PiVersion::V0_87_1);
        assert!(note.is_some());
        let (v, note) = PiVersion::nearest("1.5.2-beta.1").unwrap();
        // A pre-release of 1.5.2 is the same triple: followed as 1.5.2.
        assert_eq!((v, note), (PiVersion::V1_5_2, None));
        let (v, note) = PiVersion::nearest("0.73.1").unwrap();
        assert_eq!(v, PiVersion::V0_87_1);
        assert!(note.unwrap().contains("older than any bonsai knows"));
        assert!(PiVersion::nearest("latest").is_err());
        assert!(PiVersion::nearest("").is_err());
        assert!(PiVersion::nearest("1.x").is_err());
    }

    /// 1.6.0 behaves as 1.5.2 in every way bonsai reproduces (Pi's own answers agree:
    /// `tests/parity.rs`).
    #[test]
    fn pi_1_6_0_behaves_as_1_5_2() {
        let (a, b) = (PiVersion::V1_5_2, PiVersion::V1_6_0);
        let each = |v: PiVersion| {
            [
                v.serializes_thinking(),
                v.truncates_whole_characters(),
                v.branch_applies_context_edits(),
                v.nested_call_file_ops(),
                v.home_shortening_by_component(),
                v.lenient_read_ranges(),
                v.summary_max_tokens(),
                v.turn_prefix_focus(),
                v.branch_summary_thinking(),
            ]
        };
        assert_eq!(each(a), each(b));
    }
}
