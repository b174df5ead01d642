//! A short title for a session Pi has no name for, made offline from what the session says.
//!
//! Pi names a session only when the user runs `/name` (a `session_info` entry). A listing of
//! three hundred unnamed sessions then shows three hundred first requests, cut wherever the
//! column ends. The title here is made without a model call, so it is free, instant and the
//! same on every run for the same bytes:
//! - the first request's first sentence, with the greeting and the asking phrase taken off
//!   ("hi, can you please fix …" → "Fix …");
//! - when that leaves fewer than three words ("continue", "look at this"), the goal the
//!   latest summary states (the first line under its `## Goal` heading) instead;
//! - cut at a word to at most [`MAX_CHARS`] characters, the cut marked with `…`.
//!
//! It is shown as bonsai's, never written, until the user asks for it to become Pi's name.

/// The longest title, in characters (the ellipsis included).
pub const MAX_CHARS: usize = 60;

/// Fewer words than this and a request does not say what the session is about.
const MIN_WORDS: usize = 3;

/// Opening words that say nothing of the task, taken off the front (lower case, longest
/// first where one begins another).
const OPENERS: &[&str] = &[
    "i would like you to",
    "i'd like you to",
    "i want you to",
    "i need you to",
    "could you please",
    "can you please",
    "would you please",
    "will you please",
    "could you",
    "can you",
    "would you",
    "will you",
    "please",
    "help me to",
    "help me",
    "let's",
    "lets",
    "good morning",
    "hello",
    "hey",
    "hi",
    "ok so",
    "okay so",
    "ok",
    "okay",
    "so",
    "now",
    "the user wants to",
    "the user wants",
    "the user is trying to",
    "user wants to",
];

/// The title for a session with first request `request` and latest summary `summary` (a
/// compaction's or a branch summary's text); `None` when neither says anything.
pub fn suggested(request: Option<&str>, summary: Option<&str>) -> Option<String> {
    with_goal(request, summary.and_then(goal_of).as_deref())
}

/// [`suggested`] with the summary's goal already read (what the listing keeps).
pub fn with_goal(request: Option<&str>, goal: Option<&str>) -> Option<String> {
    let from_request = request.map(|r| tidy(first_sentence(r))).filter(|t| !t.is_empty());
    if let Some(t) = &from_request
        && words(t) >= MIN_WORDS
    {
        return Some(cut(t));
    }
    let from_goal = goal.map(|g| tidy(first_sentence(g))).filter(|t| !t.is_empty());
    from_goal.or(from_request).map(|t| cut(&t))
}

/// [`suggested`] for a loaded session: its first user request and its newest summary (in
/// file order, whichever branch it is on), as the listing reads them.
pub fn of_session(s: &crate::load::session::Session) -> Option<String> {
    use crate::load::entry::Kind;
    let request = (0..s.entries.len()).find_map(|i| match &s.entries[i].kind {
        Kind::Message(m) if m.role.as_str() == "user" => {
            let t = crate::view::context::content_text(s.entry_value(i)["message"].get("content"), " ");
            (!t.trim().is_empty()).then_some(t)
        }
        _ => None,
    });
    let summary = (0..s.entries.len())
        .rev()
        .find(|&i| matches!(s.entries[i].kind, Kind::Compaction(_) | Kind::BranchSummary(_)))
        .and_then(|i| s.entry_value(i)["summary"].as_str().map(str::to_string));
    suggested(request.as_deref(), summary.as_deref())
}

/// The first line of a summary's `## Goal` section, bullets and numbering taken off.
pub fn goal_of(summary: &str) -> Option<String> {
    let mut lines = summary.lines();
    lines.find(|l| {
        let h = l.trim();
        h.starts_with('#') && h.trim_start_matches('#').trim().eq_ignore_ascii_case("goal")
    })?;
    lines
        .map(str::trim)
        .take_while(|l| !l.starts_with('#'))
        .map(|l| l.trim_start_matches(['-', '*', '•', ' ']))
        .map(|l| {
            l.trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start_matches(['.', ')', ' '])
        })
        .map(|l| l.trim_start_matches("[ ]").trim_start_matches("[x]").trim())
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Up to the end of the first sentence: a `.`, `?` or `!` followed by a space or the end (a
/// dot inside `load.rs` or `2.5` is not one), or a line end.
fn first_sentence(s: &str) -> &str {
    let s = s.trim();
    let s = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let bytes = s.as_bytes();
    for (i, c) in s.char_indices() {
        if matches!(c, '.' | '?' | '!' | '…') {
            let next = bytes.get(i + c.len_utf8());
            if next.is_none_or(|b| b.is_ascii_whitespace()) {
                // Keep a question mark (it says what kind of session it is); drop a full stop.
                return if c == '?' { &s[..=i] } else { &s[..i] };
            }
        }
    }
    s
}

/// Openers, a leading `Turn N:`-like label and trailing punctuation off; the first letter
/// upper case; spaces collapsed.
fn tidy(s: &str) -> String {
    let mut t: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    loop {
        let lower = t.to_lowercase();
        let opener = OPENERS.iter().find(|o| {
            lower.starts_with(**o)
                && lower[o.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '\'')
        });
        let Some(o) = opener else { break };
        // An opener that is the whole text is the text (a request of just "continue" stays).
        let rest = t[o.len()..].trim_start_matches([',', ':', ';', '!', '.', ' ', '-', '—']);
        if rest.is_empty() {
            break;
        }
        t = rest.to_string();
    }
    let t = t.trim_end_matches([',', ';', ':', ' ', '-']);
    let mut chars = t.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// At most [`MAX_CHARS`] characters, cut after a whole word when one ends in the last third.
fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_CHARS {
        return s.to_string();
    }
    let head: String = s.chars().take(MAX_CHARS - 1).collect();
    let at_word = head
        .rfind(' ')
        .filter(|i| head[..*i].chars().count() >= MAX_CHARS * 2 / 3)
        .map_or(head.as_str(), |i| &head[..i]);
    format!("{}…", at_word.trim_end_matches([',', ';', ':', ' ', '-', '.']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_loses_its_greeting_and_asking_phrase() {
        assert_eq!(
            suggested(
                Some("hi, can you please fix the flaky parser test? it fails on CI"),
                None
            )
            .as_deref(),
            Some("Fix the flaky parser test?")
        );
        assert_eq!(
            suggested(Some("Read src/ledger.py and tell me what it does."), None).as_deref(),
            Some("Read src/ledger.py and tell me what it does")
        );
        // A dot inside a word is not a sentence's end.
        assert_eq!(
            suggested(Some("Bump serde to 1.0.200 in Cargo.toml and rebuild"), None).as_deref(),
            Some("Bump serde to 1.0.200 in Cargo.toml and rebuild")
        );
    }

    #[test]
    fn a_long_request_is_cut_at_a_word_within_sixty_characters() {
        let t = suggested(
            Some(
                "The CSV importer drops orders whose customer name has a quoted comma, like \"Smith, Jane\". Can you find out why?",
            ),
            None,
        )
        .unwrap();
        assert!(t.chars().count() <= MAX_CHARS, "{t}");
        assert_eq!(t, "The CSV importer drops orders whose customer name has a…");
        // One word longer than the limit is cut inside it.
        let long = "x".repeat(200);
        assert_eq!(suggested(Some(&long), None).unwrap().chars().count(), MAX_CHARS);
    }

    #[test]
    fn a_request_that_says_nothing_gives_way_to_the_summary_goal() {
        let summary = "## Goal\n- Make the importer report skipped rows and log them.\n\n## Progress\n- x";
        assert_eq!(
            suggested(Some("continue"), Some(summary)).as_deref(),
            Some("Make the importer report skipped rows and log them")
        );
        // Without a goal, the short request is still the title.
        assert_eq!(
            suggested(Some("ok, continue"), Some("no sections")).as_deref(),
            Some("Continue")
        );
        assert_eq!(suggested(None, None), None);
        assert_eq!(suggested(Some("  "), None), None);
        // An opener that is all the text stays.
        assert_eq!(suggested(Some("hello"), None).as_deref(), Some("Hello"));
    }

    #[test]
    fn a_goal_is_read_from_pi_s_and_a_branch_summary_s_layout() {
        let branch = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\nCheck whether pandas.read_csv would be a simpler importer.\n\n## Constraints";
        assert_eq!(
            goal_of(branch).as_deref(),
            Some("Check whether pandas.read_csv would be a simpler importer.")
        );
        assert_eq!(goal_of("## Goal\n1. [ ] Ship it\n"), Some("Ship it".into()));
        assert_eq!(goal_of("## Goal\n\n## Progress\n- a"), None);
        assert_eq!(
            suggested(Some("go"), Some("## Goal\nThe user wants to rename the crate")).as_deref(),
            Some("Rename the crate")
        );
    }

    #[test]
    fn the_same_text_always_gives_the_same_title() {
        let a = suggested(Some("Please add a --json flag to bonsai list"), None);
        assert_eq!(a, suggested(Some("Please add a --json flag to bonsai list"), None));
        assert_eq!(a.as_deref(), Some("Add a --json flag to bonsai list"));
    }
}
