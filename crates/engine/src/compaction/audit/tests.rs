use super::*;
use serde_json::json;

/// A session whose first turns hold planted specifics of every kind, then a compaction with
/// `summary` that keeps from `u3`, then one more turn.
pub(crate) fn planted(summary: &str) -> Session {
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/home/u/p"}),
    ];
    let mut parent: Option<String> = None;
    let mut n = 0;
    let mut push = |lines: &mut Vec<Value>, id: &str, body: Value| {
        n += 1;
        let mut e = json!({"id": id, "parentId": parent, "timestamp": format!("2026-01-01T00:00:{n:02}.000Z")});
        if let (Value::Object(o), Value::Object(b)) = (&mut e, body) {
            o.extend(b);
        }
        lines.push(e);
        parent = Some(id.to_string());
    };
    let msg = |m: Value| json!({"type": "message", "message": m});
    push(
        &mut lines,
        "u1",
        msg(
            json!({"role": "user", "content": "Fix the header parser in src/load.rs. Never change the public API of SessionManager. The staging port is 8443 and the ticket is https://tracker.example/T-4411.\n```\nrandom pasted 99999 log_line_id\n```"}),
        ),
    );
    push(
        &mut lines,
        "a1",
        msg(json!({"role": "assistant", "stopReason": "toolUse", "content": [
        {"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "/home/u/p/src/load.rs"}},
        {"type": "toolCall", "id": "r2", "name": "read", "arguments": {"path": "docs/format.md"}},
        {"type": "toolCall", "id": "e1", "name": "edit", "arguments": {"path": "src/load.rs", "oldText": "a", "newText": "b"}},
        {"type": "toolCall", "id": "b1", "name": "bash", "arguments": {"command": "cd /home/u/p && cargo test -p loader --release"}}]})),
    );
    push(
        &mut lines,
        "t1",
        msg(
            json!({"role": "toolResult", "toolCallId": "b1", "toolName": "bash", "isError": true, "content": [{"type": "text", "text": "error[E0599]: no method named `parse_v3` found\n\nCommand exited with code 101"}]}),
        ),
    );
    push(
        &mut lines,
        "a2",
        msg(
            json!({"role": "assistant", "stopReason": "stop", "content": [{"type": "text", "text": "The loader fails on parse_v3. Should I rename it to parse_header or add a shim?"}]}),
        ),
    );
    push(&mut lines, "u2", msg(json!({"role": "user", "content": "Add a shim."})));
    push(
        &mut lines,
        "x1",
        msg(json!({"role": "bashExecution", "command": "git diff --stat", "output": "1 file changed", "exitCode": 0})),
    );
    push(
        &mut lines,
        "u3",
        msg(json!({"role": "user", "content": "TODO: bump the version to 2.4.1 later, and keep the changelog short."})),
    );
    push(
        &mut lines,
        "a3",
        msg(json!({"role": "assistant", "stopReason": "stop", "content": [{"type": "text", "text": "Noted."}]})),
    );
    push(
        &mut lines,
        "c1",
        json!({"type": "compaction", "summary": summary, "firstKeptEntryId": "u3", "tokensBefore": 5000}),
    );
    push(&mut lines, "u4", msg(json!({"role": "user", "content": "go on"})));
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    Session::from_bytes(text.into_bytes()).unwrap()
}

fn texts(a: &Audit, kept: bool, k: Kind) -> Vec<String> {
    a.items
        .iter()
        .filter(|i| i.kept == kept && i.specific.kind == k)
        .map(|i| i.specific.text.clone())
        .collect()
}

#[test]
fn the_specifics_of_a_range_by_kind_with_their_entries() {
    let s = planted("nothing");
    let c = s.idx_of("c1").unwrap();
    let r = replaced(&s, c).unwrap();
    let ids: Vec<&str> = r.entries.iter().map(|&e| &*s.entries[e].id).collect();
    assert_eq!(ids, ["u1", "a1", "t1", "a2", "u2", "x1"], "up to the first kept entry");
    let sp = specifics_of(&s, &r);
    let of = |k: Kind| -> Vec<(String, String)> {
        sp.iter()
            .filter(|x| x.kind == k)
            .map(|x| (x.text.clone(), s.entries[x.entry].id.to_string()))
            .collect()
    };
    let pair = |t: &str, e: &str| (t.to_string(), e.to_string());
    assert_eq!(
        of(Kind::FilesRead),
        [pair("docs/format.md", "a1")],
        "a file read and modified counts as modified"
    );
    assert_eq!(of(Kind::FilesModified), [pair("src/load.rs", "a1")]);
    assert_eq!(
        of(Kind::Commands),
        [
            pair("cd /home/u/p && cargo test -p loader --release", "a1"),
            pair("git diff --stat", "x1")
        ]
    );
    let states: Vec<Option<String>> = sp
        .iter()
        .filter(|x| x.kind == Kind::Commands)
        .map(|x| x.state.clone())
        .collect();
    assert_eq!(states, [Some("exit 101".into()), Some("ok".into())]);
    assert_eq!(
        of(Kind::Errors),
        [pair("error[E0599]: no method named `parse_v3` found", "t1")]
    );
    assert_eq!(
        of(Kind::Decisions),
        [
            pair("Never change the public API of SessionManager.", "u1"),
            pair("Add a shim.", "u2")
        ],
        "a constraint, and the answer to the agent's question"
    );
    assert_eq!(
        of(Kind::Values),
        [
            pair("SessionManager", "u1"),
            pair("https://tracker.example/T-4411", "u1"),
            pair("8443", "u1")
        ],
        "what the user gave, the pasted log left out, src/load.rs counted as the file"
    );
    assert!(of(Kind::OpenTasks).is_empty(), "u3 is kept, not summarized");
}

#[test]
fn an_audit_lists_what_the_summary_left_out_as_lost() {
    let summary = "## Goal\n- Fix the header parser in load.rs without changing SessionManager's public API.\n\n## Progress\n- Ran `cargo test -p loader` and hit E0599: no method named parse_v3 found.\n- User chose: add a shim.\n\n<read-files>\ndocs/format.md\n</read-files>\n\n<modified-files>\n/home/u/p/src/load.rs\n</modified-files>\n\nSee also src/invented.rs.";
    let s = planted(summary);
    let a = audit(&s, s.idx_of("c1").unwrap()).unwrap();
    assert_eq!(
        texts(&a, true, Kind::FilesModified),
        ["src/load.rs"],
        "named absolute under the cwd"
    );
    assert_eq!(texts(&a, true, Kind::FilesRead), ["docs/format.md"]);
    assert_eq!(texts(&a, false, Kind::FilesRead), Vec::<String>::new());
    assert_eq!(
        texts(&a, true, Kind::Commands),
        ["cd /home/u/p && cargo test -p loader --release"]
    );
    assert_eq!(texts(&a, false, Kind::Commands), ["git diff --stat"]);
    assert_eq!(texts(&a, true, Kind::Errors).len(), 1);
    assert_eq!(texts(&a, true, Kind::Decisions).len(), 2, "reworded, most of the words");
    assert_eq!(
        texts(&a, false, Kind::Values),
        ["https://tracker.example/T-4411", "8443"]
    );
    assert_eq!(a.invented, ["src/invented.rs"]);
    assert_eq!(a.score(Kind::Values), (1, 3));
    assert_eq!(a.headline(), "lost 3 of 10 specifics: 2 values, 1 command");
    let j = a.to_json(&s);
    assert_eq!(j["entryId"], "c1");
    assert_eq!(j["type"], "compaction");
    assert_eq!(j["summarizedEntries"], 6);
    assert_eq!(j["score"]["commands"], json!({"kept": 1, "total": 2}));
    assert!(
        j["lost"]
            .as_array()
            .unwrap()
            .contains(&json!({"kind": "commands", "text": "git diff --stat", "entryId": "x1", "state": "ok"}))
    );
}

#[test]
fn the_previous_summary_is_source_and_an_amended_one_keeps_what_it_gives_back() {
    let s = planted("nothing useful");
    let c = s.idx_of("c1").unwrap();
    let a = audit(&s, c).unwrap();
    let lost: Vec<&Specific> = a.lost().collect();
    assert_eq!(lost.len(), a.items.len());
    let amended = amended_summary("## Goal\n- x\n\n<read-files>\na.md\n</read-files>", &lost);
    assert!(amended.starts_with("## Goal\n- x\n\n## Specifics\n"), "{amended}");
    assert!(
        amended.ends_with("\n\n<read-files>\na.md\n</read-files>"),
        "the file tags stay last"
    );
    assert!(amended.contains("\n### Commands\n- `cd /home/u/p && cargo test -p loader --release` (exit 101)\n"));
    // Every item is kept by the amended text.
    let r = Reader::new(&amended, "/home/u/p");
    for sp in &lost {
        assert!(r.keeps(sp), "{sp:?}");
    }
    // Carried into the next audit as its source.
    let mut g = Gather::default();
    carry(&mut g, &amended, 7);
    let carried = g.finish("/home/u/p");
    for sp in &lost {
        assert!(
            carried
                .iter()
                .any(|c| c.kind == sp.kind && c.text == sp.text && c.state == sp.state),
            "{sp:?} not carried: {carried:?}"
        );
    }
}

#[test]
fn a_command_is_kept_by_its_program_and_distinctive_arguments() {
    assert_eq!(
        command_key("cd /x && FOO=1 cargo test -p core --release 2>&1 | tail -5"),
        ("cargo".to_string(), vec!["test".to_string(), "core".to_string()])
    );
    assert_eq!(
        command_key("./scripts/run.sh deploy eu-west"),
        ("run.sh".to_string(), vec!["deploy".into(), "eu-west".into()])
    );
    let sp = Specific {
        kind: Kind::Commands,
        text: "npm run build -- --prod".into(),
        entry: 0,
        state: None,
        said: None,
    };
    assert!(Reader::new("ran npm run build", "").keeps(&sp));
    assert!(!Reader::new("ran npm build", "").keeps(&sp));
    assert!(!Reader::new("ran npm\nthe run build", "").keeps(&sp), "on one line");
}

#[test]
fn tasks_values_and_decisions_are_read_from_plain_words() {
    assert_eq!(
        values("pay $40, see http://a.example/x?y=1. Use v3 on port 5432"),
        ["http://a.example/x?y=1", "$40", "v3", "5432"]
    );
    assert_eq!(
        values("see JIRA-42 in eu-west-1, not 42"),
        ["JIRA-42", "eu-west-1", "42"]
    );
    assert_eq!(
        sentences("- Keep it.\n1. Then go on!  Done"),
        ["Keep it.", "Then go on!", "Done"]
    );
    let d = Specific {
        kind: Kind::Decisions,
        text: "Don't touch the public API of the loader.".into(),
        entry: 0,
        state: None,
        said: None,
    };
    // Reworded without its negation: most of its words, not what it forbids.
    let reworded = Reader::new("Constraint: leave the loader's public API alone", "");
    assert!(!reworded.keeps(&d));
    assert!(reworded.partly(&d));
    assert!(Reader::new("Constraint: do not touch the loader's public API", "").keeps(&d));
    assert!(!Reader::new("Constraint: tests first", "").keeps(&d));
    assert!(!Reader::new("Constraint: tests first", "").partly(&d));
}

/// A constraint whose negation or qualifier is gone is lost (partly kept), never kept; a
/// compound sentence is two items, each judged.
#[test]
fn a_decision_keeps_its_negation_its_qualifiers_and_each_clause() {
    let d = |t: &str| Specific {
        kind: Kind::Decisions,
        text: t.into(),
        entry: 0,
        state: None,
        said: None,
    };
    let money = d("Please keep amounts as Decimal, never float.");
    let half = Reader::new(
        "## Constraints & Preferences\n- Importer work: and keep amounts as Decimal",
        "",
    );
    assert!(!half.keeps(&money), "the negation is gone");
    assert!(half.partly(&money));
    assert!(Reader::new("- Amounts are Decimal, never float", "").keeps(&money));
    assert!(Reader::new("- Keep amounts in Decimal; do not use float", "").keeps(&money));
    // "float" said, but not negated.
    assert!(!Reader::new("- amounts: Decimal or float", "").keeps(&money));
    // A qualifier is part of it.
    let only = d("Only touch files under src/importer.");
    assert!(!Reader::new("- Touch files under src/importer", "").keeps(&only));
    assert!(Reader::new("- Only touch files under src/importer", "").keeps(&only));
    // A name is part of it.
    let iso = d("We decided to use ISO dates everywhere.");
    assert!(!Reader::new("- We decided on dates everywhere", "").keeps(&iso));
    // Two clauses, two items.
    assert_eq!(
        clauses("We decided to keep Decimal end to end; also bump the schema to version 14"),
        [
            "We decided to keep Decimal end to end",
            "also bump the schema to version 14"
        ]
    );
    assert_eq!(
        clauses("Keep the importer as it is, and never edit the logs by hand"),
        ["Keep the importer as it is", "never edit the logs by hand"]
    );
    assert_eq!(
        clauses("Keep amounts as Decimal, never float."),
        ["Keep amounts as Decimal, never float."]
    );
    let g = {
        let msg = serde_json::json!({"role": "user", "content": [{"type": "text",
            "text": "We decided to keep Decimal end to end; also bump the schema to version 14."}]});
        let mut g = Gather::default();
        g.add_messages(&[(0, &msg)]);
        g.finish("")
    };
    let decisions: Vec<&Specific> = g.iter().filter(|x| x.kind == Kind::Decisions).collect();
    assert_eq!(decisions.len(), 2);
    let summary = "- We decided to keep Decimal end to end.";
    let a = audit_text(
        SummaryKind::Compaction,
        0,
        1,
        decisions.iter().map(|x| (*x).clone()).collect(),
        summary,
        "",
        &Known::of_texts(vec![]),
    );
    assert_eq!(a.score(Kind::Decisions), (1, 2), "half kept is one kept and one lost");
    // Each clause quotes the user's whole sentence when it is given back.
    assert_eq!(
        a.lost().next().unwrap().quote(),
        "We decided to keep Decimal end to end; also bump the schema to version 14."
    );
}

/// A mend gives back what was lost, the user's words first, within its budget, and says how
/// much did not fit.
#[test]
fn a_mend_gives_back_the_users_words_first_within_its_budget() {
    let sp = |kind, text: &str, said: Option<&str>| Specific {
        kind,
        text: text.into(),
        entry: 0,
        state: None,
        said: said.map(String::from),
    };
    let mut items = vec![
        sp(Kind::Commands, "cat data/a.log", None),
        sp(
            Kind::Values,
            "ACCT-77812",
            Some("The customer's account id is ACCT-77812."),
        ),
        sp(Kind::Decisions, "Keep amounts as Decimal, never float.", None),
    ];
    for k in 0..60 {
        items.push(sp(
            Kind::FilesRead,
            &format!("data/day-{k:02}-with-a-long-name.log"),
            None,
        ));
    }
    let a = audit_text(
        SummaryKind::Compaction,
        0,
        1,
        items,
        "## Goal\n- Fix the importer\n\n<read-files>\nx.log\n</read-files>",
        "",
        &Known::of_texts(vec![]),
    );
    let m = mend(&a, 200).unwrap();
    assert!(
        m.summary.len().div_ceil(4) <= a.summary.len().div_ceil(4) + 200,
        "{}",
        m.summary.len()
    );
    let d = m.summary.find("Keep amounts as Decimal, never float.").unwrap();
    let v = m.summary.find("The customer's account id is ACCT-77812.").unwrap();
    // Files newest first: the newest one read is given, the oldest did not fit.
    let f = m.summary.find("data/day-59").unwrap();
    assert!(!m.summary.contains("data/day-00"));
    assert!(d < v && v < f, "{}", m.summary);
    // Pi's file tags stay last.
    assert!(m.summary.trim_end().ends_with("</read-files>"));
    assert!(m.left > 0 && m.given >= 3, "{m:?}");
    assert_eq!(m.given + m.left, 63);
}

#[test]
fn keeps_all_answers_as_keeps_does_item_by_item() {
    let summary = "Ran `cargo test -p loader` on src/load.rs\nthen git on the\nstash list; port 8443 and /home/u/p/docs/format.md";
    let items: Vec<Specific> = [
        (Kind::Commands, "cargo test -p loader --release"),
        (Kind::Commands, "git stash list"),
        (Kind::FilesRead, "docs/format.md"),
        (Kind::FilesModified, "/home/u/p/src/load.rs"),
        (Kind::Values, "8443"),
        (Kind::Values, "844"),
        (Kind::Decisions, "Never touch the loader"),
    ]
    .into_iter()
    .map(|(kind, text)| Specific {
        kind,
        text: text.into(),
        entry: 0,
        state: None,
        said: None,
    })
    .collect();
    let r = Reader::new(summary, "/home/u/p");
    let one: Vec<bool> = items.iter().map(|sp| r.keeps(sp)).collect();
    let all = r.keeps_all(&items.iter().collect::<Vec<_>>());
    assert_eq!(all, one);
    assert_eq!(all, [true, false, true, true, true, false, false]);
}
