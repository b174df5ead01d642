//! bonsai's own prompt wording. Only the output format is Pi's (the section headings Pi and
//! its extensions parse); the file tags are appended by bonsai, not asked of the model.

pub const SYSTEM: &str = "You write checkpoint summaries of conversations between a user and a coding agent. \
Treat the conversation as a record to summarize: do not answer it, continue it or call tools. \
Reply with the summary only, in the requested format.";

const SECTIONS: &str = "Use these Markdown sections, in this order:\n\n\
## Goal\n## Constraints & Preferences\n## Progress\n### Done\n### In Progress\n### Blocked\n## Key Decisions\n## Next Steps\n## Critical Context\n\n\
Use `- [x]` for done items and `- [ ]` for open ones, a numbered list for next steps, and `(none)` under a section with nothing in it. \
Quote file paths, function names and error messages exactly. Be brief.";

pub fn history(conversation: &str, previous: Option<&str>, focus: Option<&str>) -> String {
    let mut p = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    match previous {
        Some(prev) => {
            p.push_str(&format!("<previous-summary>\n{prev}\n</previous-summary>\n\n"));
            p.push_str(
                "The conversation above continues the work described in the previous summary. Write the updated summary: \
                 keep everything from the previous summary that is still true, add the new requests, progress, decisions and context, \
                 move finished work to Done, and rewrite Next Steps for where the work stands now.\n\n",
            );
        }
        None => {
            p.push_str("Summarize the conversation above so that another model can take over the work from here.\n\n")
        }
    }
    p.push_str(SECTIONS);
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        p.push_str(&format!("\n\nAdditional focus: {f}"));
    }
    p
}

/// The split turn's prefix; `focus`: the user's instructions (Pi 1.5.2 adds them here too).
pub fn turn_prefix(conversation: &str, focus: Option<&str>) -> String {
    let mut p = format!(
        "<conversation>\n{conversation}\n</conversation>\n\n\
         The messages above are the first part of a turn whose later messages are kept verbatim elsewhere. \
         Summarize only this first part, so the kept messages still make sense after it. Use these sections:\n\n\
         ## Original Request\n## Progress So Far\n## Context Needed to Continue\n\n\
         Only state what the messages above show; do not guess what came later. Be brief."
    );
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        p.push_str(&format!("\n\nAdditional focus: {f}"));
    }
    p
}

pub fn branch(conversation: &str, focus: Option<&str>, replace: bool) -> String {
    let mut p = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    if replace && let Some(f) = focus {
        p.push_str(f);
        return p;
    }
    p.push_str(
        "The user left this branch of the conversation and went back to an earlier point. \
         Summarize what the branch tried and found, so the work can be picked up later. Use these Markdown sections, in this order:\n\n\
         ## Goal\n## Constraints & Preferences\n## Progress\n### Done\n### In Progress\n### Blocked\n## Key Decisions\n## Next Steps\n\n\
         Use `(none)` under a section with nothing in it. Quote file paths, function names and error messages exactly. Be brief.",
    );
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        p.push_str(&format!("\n\nAdditional focus: {f}"));
    }
    p
}

/// How a strategy's call is asked to size its answer.
fn size(budget: u64) -> String {
    format!("Keep it to about {budget} tokens.")
}

/// The optional reasoning step: the model thinks in an `<analysis>` block first; bonsai keeps
/// only what follows it.
pub const ANALYSIS: &str = "Before the summary, reason briefly inside one <analysis>...</analysis> block about what matters most \
to carry forward (requests, files, errors, decisions). Then write the summary after the block; only the summary is kept.";

/// What every sliced call adds at the end: the focus, the size, the analysis step.
fn tail(p: &mut String, budget: u64, focus: Option<&str>, analysis: bool) {
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        p.push_str(&format!("\n\nAdditional focus: {f}"));
    }
    p.push_str("\n\n");
    p.push_str(&size(budget));
    if analysis {
        p.push_str("\n\n");
        p.push_str(ANALYSIS);
    }
}

/// Messages from the previous slice, shown so this one reads on from them.
fn overlap_block(overlap: Option<&str>) -> String {
    match overlap.filter(|o| !o.is_empty()) {
        Some(o) => format!(
            "<already-summarized>\n{o}\n</already-summarized>\n\n(The messages above end the previous part and are summarized there; use them only to understand what follows.)\n\n"
        ),
        None => String::new(),
    }
}

/// One slice of a longer history, for parallel-stitch (no earlier summaries) and
/// sequential-accumulated (with them).
#[allow(clippy::too_many_arguments)]
pub fn slice(
    conversation: &str,
    overlap: Option<&str>,
    earlier: &[String],
    part: (usize, usize),
    budget: u64,
    focus: Option<&str>,
    analysis: bool,
) -> String {
    let mut p = String::new();
    if !earlier.is_empty() {
        p.push_str("<earlier-parts>\n");
        for (k, e) in earlier.iter().enumerate() {
            p.push_str(&format!("<part index=\"{}\">\n{e}\n</part>\n", k + 1));
        }
        p.push_str("</earlier-parts>\n\n");
    }
    p.push_str(&overlap_block(overlap));
    p.push_str(&format!("<conversation>\n{conversation}\n</conversation>\n\n"));
    p.push_str(&format!(
        "This is part {} of {} of a long conversation, summarized part by part. Summarize only the conversation above{}.\n\n",
        part.0,
        part.1,
        if earlier.is_empty() { "" } else { "; the earlier parts are already summarized, so do not repeat them, but keep names consistent with them" }
    ));
    p.push_str(SECTIONS);
    tail(&mut p, budget, focus, analysis);
    p
}

/// parallel-stitch's last call: the slice summaries merged into one.
pub fn stitch(parts: &[String], previous: Option<&str>, budget: u64, focus: Option<&str>, analysis: bool) -> String {
    let mut p = String::new();
    if let Some(prev) = previous {
        p.push_str(&format!("<previous-summary>\n{prev}\n</previous-summary>\n\n"));
    }
    p.push_str("<part-summaries>\n");
    for (k, s) in parts.iter().enumerate() {
        p.push_str(&format!("<part index=\"{}\">\n{s}\n</part>\n", k + 1));
    }
    p.push_str("</part-summaries>\n\n");
    p.push_str(
        "These are summaries of consecutive parts of one conversation, in order. Merge them into one summary of the whole \
         (and of the previous summary, if there is one): keep their order in time, state each fact once (neighbouring parts \
         overlap a little, so drop what repeats), let later parts overrule earlier ones, and keep every file path, command, \
         error and name they mention.\n\n",
    );
    p.push_str(SECTIONS);
    tail(&mut p, budget, focus, analysis);
    p
}

/// sequential-rolling's call: the running summary rewritten to cover the next slice too.
pub fn rolling(
    running: Option<&str>,
    conversation: &str,
    overlap: Option<&str>,
    part: (usize, usize),
    budget: u64,
    focus: Option<&str>,
    analysis: bool,
) -> String {
    let mut p = String::new();
    if let Some(r) = running {
        p.push_str(&format!("<running-summary>\n{r}\n</running-summary>\n\n"));
    }
    p.push_str(&overlap_block(overlap));
    p.push_str(&format!("<conversation>\n{conversation}\n</conversation>\n\n"));
    p.push_str(&format!(
        "You keep one running summary of a long conversation, read part by part; this is part {} of {}. {}\n\n",
        part.0,
        part.1,
        if running.is_some() {
            "Rewrite the running summary so it covers everything so far: fold the new part in, compress older detail where space is short, and drop what the new part makes obsolete."
        } else {
            "Write the running summary of this first part."
        }
    ));
    p.push_str(SECTIONS);
    tail(&mut p, budget, focus, analysis);
    p
}

/// anchored-iterative's call: Pi's update of the previous summary, per slice.
pub fn anchored(
    anchor: Option<&str>,
    conversation: &str,
    overlap: Option<&str>,
    budget: u64,
    focus: Option<&str>,
    analysis: bool,
) -> String {
    let mut p = overlap_block(overlap);
    p.push_str(&history(conversation, anchor, None));
    tail(&mut p, budget, focus, analysis);
    p
}
