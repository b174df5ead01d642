//! The policies on sessions built to the token: the issue's vectors in both modes, the marker's
//! format, protected turns and tools, errors, the compaction boundary, zones, distilling,
//! manual edits, undo, and that pruning what was pruned finds nothing new.

use super::*;
use crate::edit::entries::{IdSource, context_edit_entries};

/// A session made turn by turn; a result of `n` tokens has 4n characters of text.
struct B {
    lines: Vec<String>,
    n: usize,
    parent: Option<String>,
}

impl B {
    fn new() -> B {
        B {
            lines: vec![
                r#"{"type":"session","version":3,"id":"t","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/t"}"#.into(),
            ],
            n: 0,
            parent: None,
        }
    }
    fn push(&mut self, body: String) -> String {
        self.n += 1;
        let id = format!("e{:04}", self.n);
        let p = self
            .parent
            .as_ref()
            .map(|p| format!(r#""{p}""#))
            .unwrap_or("null".into());
        self.lines.push(format!(
            r#"{{"id":"{id}","parentId":{p},"timestamp":"2026-01-01T00:00:{:02}.000Z",{body}}}"#,
            self.n % 60
        ));
        self.parent = Some(id.clone());
        id
    }
    fn user(&mut self, text: &str) -> String {
        self.push(format!(
            r#""type":"message","message":{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}"#
        ))
    }
    /// A tool call and its result of `tokens` tokens; returns the result's id.
    fn tool(&mut self, tool: &str, tokens: usize, error: bool) -> String {
        let call = format!("c{}", self.n + 1);
        let args = match tool {
            "bash" => r#"{"command":"cargo test"}"#.to_string(),
            "grep" => r#"{"pattern":"fn main","path":"src"}"#.to_string(),
            _ => format!(r#"{{"path":"src/file{}.rs"}}"#, self.n),
        };
        self.push(format!(
            r#""type":"message","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"{call}","name":"{tool}","arguments":{args}}}],"stopReason":"toolUse","timestamp":2}}"#
        ));
        let text = "x".repeat(tokens * 4);
        self.push(format!(
            r#""type":"message","message":{{"role":"toolResult","toolCallId":"{call}","toolName":"{tool}","content":[{{"type":"text","text":"{text}"}}],"isError":{error},"timestamp":3}}"#
        ))
    }
    fn answer(&mut self) -> String {
        self.push(r#""type":"message","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop","timestamp":4}"#.into())
    }
    /// A turn with these reads (tokens, error), then an answer.
    fn turn(&mut self, reads: &[(usize, bool)]) {
        self.user("go on");
        for &(t, e) in reads {
            self.tool("read", t, e);
        }
        self.answer();
    }
    fn session(&self) -> Session {
        Session::from_bytes((self.lines.join("\n") + "\n").into_bytes()).unwrap()
    }
}

fn pruned_tokens(p: &Plan) -> Vec<u64> {
    p.items
        .iter()
        .filter(|i| i.change == Change::Pruned)
        .map(|i| i.tokens_before)
        .collect()
}

/// Older results (oldest → newest), then two more user turns.
fn vector(reads: &[(usize, bool)]) -> Session {
    let mut b = B::new();
    b.turn(&reads.iter().map(|&(t, e)| (t * 1000, e)).collect::<Vec<_>>());
    b.turn(&[]);
    b.turn(&[]);
    b.session()
}

fn run(s: &Session, compat: bool) -> Plan {
    let settings = PruneSettings {
        compat,
        ..Default::default()
    };
    output(s, s.leaf().unwrap(), &settings, false)
}

#[test]
fn the_issues_vectors() {
    let a = vector(&[(30, false), (15, false), (25, false)]);
    let b = vector(&[(15, true), (10, false), (40, false)]);
    let d = vector(&[(20, false), (30, false), (25, false)]);
    assert_eq!(pruned_tokens(&run(&a, false)), vec![30_000]);
    assert_eq!(pruned_tokens(&run(&b, false)), Vec::<u64>::new());
    assert_eq!(pruned_tokens(&run(&d, false)), vec![20_000, 30_000]);
    // E: a 70k read, then turns of 70k reads each.
    let mut e = B::new();
    e.turn(&[(70_000, false)]);
    e.turn(&[(70_000, false)]);
    e.turn(&[(70_000, false)]);
    let e = e.session();
    assert_eq!(pruned_tokens(&run(&e, false)), vec![70_000]);
    // The extension's own code.
    assert_eq!(pruned_tokens(&run(&a, true)), vec![30_000]);
    assert_eq!(pruned_tokens(&run(&b, true)), vec![10_000]);
    assert_eq!(pruned_tokens(&run(&d, true)), vec![20_000]);
    assert_eq!(pruned_tokens(&run(&e, true)), Vec::<u64>::new());
}

/// Issue 21, item 10: an output shorter than its marker stays under OpenCode's rules (the
/// edit would add tokens), but pi-context-pruning's own code prunes it: compat means its
/// answers.
#[test]
fn compat_prunes_outputs_shorter_than_their_marker() {
    // Past the newest 40,000 tokens of output: a 30,000-token read and two tiny ones.
    let mut b = B::new();
    b.turn(&[(30_000, false), (2, false), (3, false)]);
    b.turn(&[(41_000, false)]);
    b.turn(&[]);
    b.turn(&[]);
    let s = b.session();
    let sorted = |mut v: Vec<u64>| {
        v.sort();
        v
    };
    // OpenCode's rules: the newest 40,000 tokens' budget is passed by the 41,000 read, which is
    // pruned with the 30,000 one; the two tiny outputs stay.
    assert_eq!(sorted(pruned_tokens(&run(&s, false))), vec![30_000, 41_000]);
    // The extension checks the budget before adding (the 41,000 read fills it and is kept),
    // and prunes everything after it, tiny outputs included.
    assert_eq!(sorted(pruned_tokens(&run(&s, true))), vec![2, 3, 30_000]);
}

/// The session with the plan's edits appended (as the store would write them).
fn applied(s: &Session, p: &Plan, undoes: Option<&str>) -> Session {
    let edits: Vec<(String, Value)> = p
        .edits()
        .map(|i| (s.entries[i.entry].id.to_string(), i.replacement.clone()))
        .collect();
    let mut ids = IdSource::new(s, 7);
    let lines = context_edit_entries(s, p.leaf, &edits, record_data(p, undoes), &mut ids, 1_800_000_000_000);
    let mut bytes = s.buf.to_vec();
    for l in lines {
        bytes.extend_from_slice(serde_json::to_string(&l).unwrap().as_bytes());
        bytes.push(b'\n');
    }
    Session::from_bytes(bytes).unwrap()
}

#[test]
fn pruning_what_was_pruned_finds_nothing_new_and_pi_sees_the_marker() {
    let s = vector(&[(30, false), (15, false), (25, false)]);
    let p = run(&s, false);
    assert_eq!(p.edits().count(), 1);
    let after = applied(&s, &p, None);
    // Pi's estimate after the edit is the plan's "after".
    let proj = context::project(&after, &after.path_to(after.leaf().unwrap()));
    assert_eq!(
        context::estimate_projected_tokens(&after, &proj).tokens as u64,
        p.tokens_after
    );
    assert_eq!(p.tokens_after, p.tokens_now as u64 - p.saved());
    let again = run(&after, false);
    assert!(again.is_empty(), "{}", again.note);
    // The marker is what the model sees now.
    let m = proj.messages().find(|m| m.replaced_by.is_some()).unwrap();
    let text = context::materialize(&after, m)["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(text, "[output pruned — ~30,000 tokens | read | path=\"src/file1.rs\"]");
}

#[test]
fn marker_format() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(12_500), "12,500");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(
        marker(12_500, "read", Some(&("path".into(), "src/app.ts".into()))),
        "[output pruned — ~12,500 tokens | read | path=\"src/app.ts\"]"
    );
    assert_eq!(
        marker(40, "custom_tool", None),
        "[output pruned — ~40 tokens | custom_tool]"
    );
    let long = "a".repeat(81);
    let m = marker(1, "bash", Some(&("command".into(), long)));
    assert!(m.ends_with(&format!("command=\"{}...\"]", "a".repeat(77))), "{m}");
    let exactly_80 = "b".repeat(80);
    assert!(marker(1, "bash", Some(&("command".into(), exactly_80.clone()))).contains(&exactly_80));
    // A surrogate pair at the cut is not split.
    let emoji = format!("{}😀{}", "c".repeat(76), "d".repeat(10));
    let m = marker(1, "grep", Some(&("pattern".into(), emoji)));
    assert!(m.contains(&format!("{}...", "c".repeat(76))), "{m}");
}

#[test]
fn the_key_argument_is_the_first_string_of_path_command_pattern_query() {
    let mut b = B::new();
    b.user("go");
    b.tool("grep", 30_000, false);
    b.tool("bash", 30_000, false);
    b.answer();
    b.turn(&[]);
    b.turn(&[]);
    let s = b.session();
    let no_budget = PruneSettings {
        protect: 0,
        ..Default::default()
    };
    let p = output(&s, s.leaf().unwrap(), &no_budget, false);
    let keys: Vec<_> = p.edits().map(|i| i.key_arg.clone().unwrap()).collect();
    // grep has a pattern and a path: path comes first.
    assert_eq!(
        keys,
        vec![
            ("path".to_string(), "src".to_string()),
            ("command".to_string(), "cargo test".to_string())
        ]
    );
}

#[test]
fn protected_turns_errors_and_tool_lists() {
    // Everything in the newest two turns is kept whatever its size.
    let mut b = B::new();
    b.turn(&[]);
    b.turn(&[(90_000, false)]);
    b.turn(&[(90_000, false)]);
    let s = b.session();
    assert!(run(&s, false).is_empty());
    let three = PruneSettings {
        protected_turns: 1,
        ..Default::default()
    };
    assert_eq!(
        pruned_tokens(&output(&s, s.leaf().unwrap(), &three, false)),
        vec![90_000]
    );
    // An error is never counted or pruned.
    let s = vector(&[(90, true), (30, false), (40, false)]);
    assert_eq!(pruned_tokens(&run(&s, false)), vec![30_000]);
    // A tool not in the list is neither counted nor pruned; an empty list means every tool.
    let mut b = B::new();
    b.user("go");
    b.tool("web_fetch", 60_000, false);
    b.tool("read", 35_000, false);
    b.answer();
    b.turn(&[]);
    b.turn(&[]);
    let s = b.session();
    // web_fetch is not in the default list: the 35k read alone fits in the protect budget.
    assert!(run(&s, false).is_empty());
    let all = PruneSettings {
        prunable_tools: vec![],
        ..Default::default()
    };
    assert_eq!(pruned_tokens(&output(&s, s.leaf().unwrap(), &all, false)), vec![60_000]);
    let protect_read = PruneSettings {
        prunable_tools: vec![],
        protected_tools: vec!["web_fetch".into()],
        protect: 10_000,
        ..Default::default()
    };
    assert_eq!(
        pruned_tokens(&output(&s, s.leaf().unwrap(), &protect_read, false)),
        vec![35_000]
    );
}

#[test]
fn the_minimum_is_strict_and_force_ignores_it() {
    // 40k protected, then exactly 20k over: not more than the minimum.
    let s = vector(&[(20, false), (40, false)]);
    assert!(run(&s, false).is_empty());
    let forced = output(&s, s.leaf().unwrap(), &PruneSettings::default(), true);
    assert_eq!(pruned_tokens(&forced), vec![20_000]);
    // The extension prunes at exactly the minimum.
    assert_eq!(pruned_tokens(&run(&s, true)), vec![20_000]);
}

#[test]
fn the_walk_stops_at_the_compaction_boundary() {
    let mut b = B::new();
    b.turn(&[(80_000, false)]);
    let kept_from = b.user("after the summary");
    b.tool("read", 50_000, false);
    b.answer();
    b.push(format!(
        r#""type":"compaction","summary":"earlier work","firstKeptEntryId":"{kept_from}","tokensBefore":100000"#
    ));
    b.turn(&[]);
    b.turn(&[]);
    let s = b.session();
    let p = output(
        &s,
        s.leaf().unwrap(),
        &PruneSettings {
            protect: 0,
            ..Default::default()
        },
        false,
    );
    // The 80k read was summarized: not in the context, not counted. The kept 50k is.
    assert_eq!(pruned_tokens(&p), vec![50_000]);
}

#[test]
fn zones_keep_distill_prune_and_propose_a_compaction() {
    let mut b = B::new();
    b.turn(&[(5_000, false), (6_000, false)]); // turn 1: old
    b.turn(&[(4_000, false)]); // turn 2: old
    b.turn(&[(5_000, false)]); // turn 3: kept, distilled
    b.turn(&[(1_000, false)]); // turn 4: kept, short
    b.turn(&[(6_000, false)]); // turn 5: kept, distilled
    b.turn(&[(9_000, false)]); // turn 6: newest, lossless
    let s = b.session();
    let leaf = s.leaf().unwrap();
    let y = zones(&s, leaf, Zone::Yellow, &PruneSettings::default());
    let by = |p: &Plan, c: fn(&Change) -> bool| {
        p.items
            .iter()
            .filter(|i| c(&i.change))
            .map(|i| i.turn)
            .collect::<Vec<_>>()
    };
    assert_eq!(by(&y, |c| *c == Change::Pruned), vec![1, 1, 2]);
    assert_eq!(by(&y, |c| matches!(c, Change::Distilled { .. })), vec![3, 5]);
    for i in y.items.iter().filter(|i| matches!(i.change, Change::Distilled { .. })) {
        let text = i.replacement["content"][0]["text"].as_str().unwrap();
        // One long line: cut at characters, each end DISTILL_KEEP units.
        assert_eq!(js::utf16_len(text.split('\n').next().unwrap()), DISTILL_KEEP);
        assert!(text.contains(&format!(
            "[distilled: {} characters of this read output left out; {RUN_AGAIN}]",
            thousands(i.tokens_before * 4 - 4000)
        )));
        assert!(i.tokens_after < 1_100);
    }
    let r = zones(&s, leaf, Zone::Red, &PruneSettings::default());
    assert_eq!(by(&r, |c| matches!(c, Change::Distilled { .. })), vec![5]);
    assert!(by(&r, |c| *c == Change::Pruned).is_empty());
    let users: Vec<usize> = (0..s.entries.len())
        .filter(|&i| s.entries[i].message().is_some_and(|m| m.role == Role::User))
        .collect();
    assert_eq!(r.compact_from, Some(users[users.len() - 2]));
    let g = zones(&s, leaf, Zone::Green, &PruneSettings::default());
    assert_eq!(g.zone, Some(Zone::Green));
    assert_eq!(
        pruned_tokens(&g),
        pruned_tokens(&output(&s, leaf, &PruneSettings::default(), false))
    );
    // The gauge's zone decides when none is forced.
    assert_eq!(zone_of(50.0, 100, (0.7, 0.9)), Zone::Green);
    assert_eq!(zone_of(70.0, 100, (0.7, 0.9)), Zone::Yellow);
    assert_eq!(zone_of(95.0, 100, (0.7, 0.9)), Zone::Red);
    assert_eq!(zone_of(150.0, 100, (0.7, 0.9)), Zone::Red);
}

#[test]
fn distill_cuts_at_characters_and_leaves_short_text_alone() {
    assert!(distill(&"a".repeat(DISTILL_OVER), "read", RUN_AGAIN).is_none());
    // One long line: cut at characters, never inside one.
    let text = format!("{}{}", "😀".repeat(7_000), "z".repeat(10));
    let (d, elided) = distill(&text, "bash", RUN_AGAIN).unwrap();
    assert!(!d.contains('\u{FFFD}'));
    let marker = format!(
        "\n[distilled: {} characters of this bash output left out; {RUN_AGAIN}]\n",
        thousands(elided as u64)
    );
    assert!(d.contains(&marker), "{}", &d[3990..4200]);
    assert_eq!(
        js::utf16_len(&text) - elided,
        js::utf16_len(&d) - js::utf16_len(&marker)
    );
}

#[test]
fn distill_keeps_whole_lines_and_says_which_were_left_out() {
    let lines: Vec<String> = (1..=400)
        .map(|i| {
            format!(
                "2026-05-03T10:{:02}:23Z import row {i} posted 320.98 to ACCT-{i:05}",
                i % 60
            )
        })
        .collect();
    let text = lines.join("\n");
    let (d, elided) = distill(&text, "read", "bonsai_recall returns them word for word").unwrap();
    let out: Vec<&str> = d.split('\n').collect();
    let k = out.iter().position(|l| l.starts_with("[distilled: ")).unwrap();
    // Every line kept is a whole line of the output, in order, from each end.
    assert!(out[..k].iter().zip(&lines).all(|(a, b)| a == b));
    assert!(out[k + 1..].iter().rev().zip(lines.iter().rev()).all(|(a, b)| a == b));
    let (first, last) = (k + 1, lines.len() - (out.len() - k - 1));
    assert_eq!(
        out[k],
        format!(
            "[distilled: lines {first}–{last} of 400 ({} characters) of this read output left out; bonsai_recall returns them word for word]",
            thousands(elided as u64)
        )
    );
    let left: usize = lines[first - 1..last].iter().map(|l| l.len() + 1).sum::<usize>() - 1;
    // The middle lines and the two line breaks around them.
    assert_eq!(elided, left + 2);
}

#[test]
fn manual_edits_follow_pis_rules() {
    let mut b = B::new();
    let u = b.user("first question");
    let r = b.tool("read", 100, false);
    let call = s_parent(&b, &r);
    let a = b.answer();
    b.turn(&[]);
    let s = b.session();
    let leaf = s.leaf().unwrap();
    let idx = |id: &str| s.idx_of(id).unwrap();
    assert_eq!(
        edit(&s, leaf, idx(&r), &Edit::Hide).unwrap_err(),
        EditRefusal::HideToolResult
    );
    assert_eq!(
        edit(&s, leaf, idx(&call), &Edit::Hide).unwrap_err(),
        EditRefusal::HideToolCalls
    );
    assert_eq!(
        edit(&s, leaf, idx(&u), &Edit::Restore).unwrap_err(),
        EditRefusal::NothingToRestore(u.clone())
    );
    let hide = edit(&s, leaf, idx(&a), &Edit::Hide).unwrap();
    assert_eq!(hide.items[0].replacement, Value::Null);
    // Replacing an assistant's text keeps its tool calls.
    let rep = edit(&s, leaf, idx(&call), &Edit::Replace("shorter".into())).unwrap();
    let blocks = rep.items[0].replacement["content"].as_array().unwrap();
    assert_eq!(blocks[0]["text"], "shorter");
    assert_eq!(blocks[1]["type"], "toolCall");
    // A user message replaced, then restored: the original content comes back.
    let s2 = applied(
        &s,
        &edit(&s, leaf, idx(&u), &Edit::Replace("shorter".into())).unwrap(),
        None,
    );
    let leaf2 = s2.leaf().unwrap();
    let restore = edit(&s2, leaf2, s2.idx_of(&u).unwrap(), &Edit::Restore).unwrap();
    assert_eq!(restore.items[0].replacement["content"][0]["text"], "first question");
    // Compactions and the like cannot be edited.
    let mut b = B::new();
    b.turn(&[]);
    let c = b.push(r#""type":"compaction","summary":"s","firstKeptEntryId":"e0001","tokensBefore":10"#.into());
    let s = b.session();
    assert!(matches!(
        edit(&s, s.leaf().unwrap(), s.idx_of(&c).unwrap(), &Edit::Hide),
        Err(EditRefusal::NotEditable { .. })
    ));
}

/// The assistant entry holding the call a result answers (its parent here).
fn s_parent(b: &B, result: &str) -> String {
    let line = b
        .lines
        .iter()
        .find(|l| l.contains(&format!(r#""id":"{result}""#)))
        .unwrap();
    let v: Value = serde_json::from_str(line).unwrap();
    v["parentId"].as_str().unwrap().to_string()
}

#[test]
fn undo_puts_back_what_each_edit_replaced() {
    let s = vector(&[(30, false), (15, false), (25, false)]);
    let leaf = s.leaf().unwrap();
    let before = context::project(&s, &s.path_to(leaf));
    let pruned = applied(&s, &run(&s, false), None);
    // Then a manual replace of the same result on top.
    let target = pruned.idx_of("e0003").unwrap();
    let p2 = edit(&pruned, pruned.leaf().unwrap(), target, &Edit::Replace("mine".into())).unwrap();
    let twice = applied(&pruned, &p2, None);
    // Undo the replace: back to the marker.
    let (u1, a1) = undo(&twice, twice.leaf().unwrap()).unwrap();
    assert_eq!(a1.what, "replace");
    assert!(
        u1.items[0].replacement["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(MARKER_PREFIX)
    );
    let once = applied(&twice, &u1, Some(&twice.entries[a1.record].id));
    // Undo again: the prune, back to the original output; the context is as it was.
    let (u2, a2) = undo(&once, once.leaf().unwrap()).unwrap();
    assert_eq!(a2.what, "output");
    let back = applied(&once, &u2, Some(&once.entries[a2.record].id));
    let after = context::project(&back, &back.path_to(back.leaf().unwrap()));
    let tokens = |p: &Projection| p.messages().map(|m| m.est_tokens).collect::<Vec<_>>();
    assert_eq!(tokens(&after), tokens(&before));
    assert_eq!(
        undo(&back, back.leaf().unwrap()).unwrap_err(),
        EditRefusal::NothingToUndo
    );
}
