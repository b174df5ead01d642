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

pub fn turn_prefix(conversation: &str) -> String {
    format!(
        "<conversation>\n{conversation}\n</conversation>\n\n\
         The messages above are the first part of a turn whose later messages are kept verbatim elsewhere. \
         Summarize only this first part, so the kept messages still make sense after it. Use these sections:\n\n\
         ## Original Request\n## Progress So Far\n## Context Needed to Continue\n\n\
         Only state what the messages above show; do not guess what came later. Be brief."
    )
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
