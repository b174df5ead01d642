//! The CLI says the figures the TUI says, on the same bases (`engine::units::Basis`), for one
//! of the repository's Pi-written sessions: `bonsai context`, `bonsai cut` and `bonsai prune`
//! against the engine's own numbers. The TUI's side is
//! `ui::app::tests::every_view_says_the_same_figures_on_the_same_basis`.

mod common;

use bonsai::engine::units::{Basis, count, tokens};
use bonsai::engine::view::context;
use std::process::Command;

fn bonsai(args: &[&str], agent: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bonsai"))
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .current_dir(agent)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bonsai {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_cli_says_the_same_figures_on_the_same_basis() {
    let file = common::repo().join("fixtures/pi-0.87.1/long.jsonl");
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("models.json"),
        r#"{"providers":{"fakellm":{"baseUrl":"http://127.0.0.1:9","api":"openai-completions",
            "models":[{"id":"fakecoder-large","contextWindow":200000,"maxTokens":8192}]}}}"#,
    )
    .unwrap();
    // The engine's figures at the leaf: the estimate (the rows' sum) and Pi's figure.
    let s = bonsai::store::load_session(&file).unwrap();
    let leaf = s.leaf().unwrap();
    let proj = context::project(&s, &s.path_to(leaf));
    let msgs: Vec<&context::ContextMessage> = proj.messages().collect();
    let estimate = count(msgs.iter().map(|m| m.est_tokens).sum());
    let pi = tokens(context::estimate_context_tokens(&s, &msgs).tokens);
    assert_ne!(estimate, pi, "the two bases differ on this session");
    let f = file.to_str().unwrap();

    let out = bonsai(&["context", f], agent.path());
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with(&format!(
            "context: {estimate} tokens ({}, the rows' sum) · {} {pi} of 200,000",
            Basis::Estimate.label(),
            Basis::Pi.label()
        )),
        "{last}"
    );

    let out = bonsai(&["cut", f], agent.path());
    assert!(
        out.contains(&format!(
            "tokens:          {} {estimate} → kept ",
            Basis::Estimate.label()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("{}:     {pi} now", Basis::Pi.label())), "{out}");

    let out = bonsai(&["prune", f], agent.path());
    assert!(
        out.contains(&format!(
            "context {estimate} tokens ({}) · {} {pi} · no edit to write",
            Basis::Estimate.label(),
            Basis::Pi.label()
        )),
        "{out}"
    );
    let out = bonsai(&["prune", f, "--force"], agent.path());
    assert!(out.contains(&format!("context {estimate} → ")), "{out}");
    assert!(
        out.contains(&format!(" tokens ({}, −", Basis::Estimate.label())),
        "{out}"
    );
}
