//! Pi's rules on small hand-made sessions: tree order, labels, migration, context edits,
//! compaction ranges (retain-none included), split turns, file operations.

use bonsai::engine::compaction::cut::{self, CompactionSettings, NoCompaction};
use bonsai::engine::load::entry::Role;
use bonsai::engine::load::session::Session;
use bonsai::engine::view::context;
use bonsai::engine::view::tree::Tree;
use serde_json::{Value, json};

struct B {
    lines: Vec<Value>,
    n: usize,
    last: Option<String>,
}

impl B {
    fn new() -> B {
        B {
            lines: vec![
                json!({"type":"session","version":3,"id":"s","timestamp":"2026-11-22T00:00:00.000Z","cwd":"/p"}),
            ],
            n: 0,
            last: None,
        }
    }
    fn push(&mut self, mut e: Value) -> String {
        self.n += 1;
        let id = format!("e{:07}", self.n);
        let o = e.as_object_mut().unwrap();
        o.insert("id".into(), id.clone().into());
        if !o.contains_key("parentId") {
            o.insert(
                "parentId".into(),
                self.last.clone().map(Value::from).unwrap_or(Value::Null),
            );
        }
        o.insert(
            "timestamp".into(),
            format!("2026-11-22T00:{:02}:{:02}.000Z", self.n / 60, self.n % 60).into(),
        );
        self.lines.push(e);
        self.last = Some(id.clone());
        id
    }
    fn user(&mut self, text: &str) -> String {
        self.push(json!({"type":"message","message":{"role":"user","content":text}}))
    }
    fn assistant(&mut self, text: &str, tools: &[(&str, &str)], usage: u64) -> String {
        let mut content = vec![json!({"type":"text","text":text})];
        for (i, (name, path)) in tools.iter().enumerate() {
            content
                .push(json!({"type":"toolCall","id":format!("c{}{i}", self.n),"name":name,"arguments":{"path":path}}));
        }
        let stop = if tools.is_empty() { "stop" } else { "toolUse" };
        self.push(
            json!({"type":"message","message":{"role":"assistant","content":content,"provider":"p","model":"m",
            "usage":{"input":usage,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":usage},"stopReason":stop}}),
        )
    }
    fn tool(&mut self, text: &str) -> String {
        self.push(json!({"type":"message","message":{"role":"toolResult","toolCallId":"x","toolName":"read","content":[{"type":"text","text":text}],"isError":false}}))
    }
    fn session(&self) -> Session {
        let text: String = self.lines.iter().map(|l| format!("{l}\n")).collect();
        Session::from_bytes(text.into_bytes()).unwrap()
    }
}

#[test]
fn children_sort_by_timestamp_and_labels_last_wins() {
    let mut b = B::new();
    let root = b.user("root");
    // Two children written out of time order: Pi sorts them by timestamp.
    let late = b.push(json!({"type":"message","parentId":root,"message":{"role":"user","content":"late"}}));
    b.lines.last_mut().unwrap()["timestamp"] = "2026-11-22T01:00:00.000Z".into();
    let early = b.push(json!({"type":"message","parentId":root,"message":{"role":"user","content":"early"}}));
    b.push(json!({"type":"label","targetId":root,"label":"one"}));
    b.push(json!({"type":"label","targetId":root,"label":"two"}));
    b.push(json!({"type":"label","targetId":early,"label":"gone"}));
    b.push(json!({"type":"label","targetId":early}));
    let s = b.session();
    let t = Tree::build(&s);
    let kids: Vec<&str> = t.children[0].iter().map(|&i| &*s.entries[i].id).collect();
    assert_eq!(kids, vec![early.as_str(), late.as_str()]);
    assert_eq!(s.label_of(&root), Some("two"));
    assert_eq!(s.label_of(&early), None, "an empty label clears");
}

#[test]
fn v1_migration_chains_entries_and_maps_first_kept_index() {
    let text = [
        r#"{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a"}}"#,
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"b"}]}}"#,
        r#"{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":10}"#,
    ]
    .join("\n");
    let s = Session::from_bytes(text.into_bytes()).unwrap();
    assert!(s.migrated && s.ids_synthesized);
    assert_eq!(&*s.entries[0].id, "00000001");
    assert_eq!(s.parent_id(1), Some("00000001"));
    let v = s.entry_value(2);
    assert_eq!(v["firstKeptEntryId"], "00000002", "file line 2 = the assistant entry");
    assert!(v.get("firstKeptEntryIndex").is_none());
    let p = context::project(&s, &s.path_to(2));
    let roles: Vec<Role> = p.messages().map(|m| m.role.clone()).collect();
    assert_eq!(roles, vec![Role::CompactionSummary, Role::Assistant]);
}

#[test]
fn context_edits_omit_and_replace_on_their_branch_only() {
    let mut b = B::new();
    let u = b.user("read it");
    b.assistant("", &[("read", "a.txt")], 0);
    let big = b.tool(&"x".repeat(4000));
    let a2 = b.assistant("done", &[], 1500);
    // A side branch from a2 without the edits.
    b.push(json!({"type":"context_edit","targetId":big,"replacement":{"content":[{"type":"text","text":"[pruned]"}]}}));
    b.push(json!({"type":"context_edit","targetId":u,"replacement":null}));
    let leaf = b.user("next");
    let side = b.push(json!({"type":"message","parentId":a2,"message":{"role":"user","content":"side"}}));
    let s = b.session();
    let main = context::project(&s, &s.path_to(s.idx_of(&leaf).unwrap()));
    let tool = main.messages().find(|m| m.role == Role::ToolResult).unwrap();
    assert_eq!(tool.est_tokens, 2, "[pruned] is 8 chars");
    assert!(
        main.messages().all(|m| *s.entries[m.source].id != u),
        "the user message is omitted"
    );
    let other = context::project(&s, &s.path_to(s.idx_of(&side).unwrap()));
    let tool = other.messages().find(|m| m.role == Role::ToolResult).unwrap();
    assert_eq!(tool.est_tokens, 1000, "edits are branch-relative");
    // Usage before an edit is not trusted for the projected estimate.
    let projected = context::estimate_projected_tokens(&s, &main);
    assert_eq!(projected.last_usage_index, None);
}

#[test]
fn retain_none_compaction_keeps_nothing_before_it() {
    let mut b = B::new();
    b.user("one");
    b.assistant("two", &[], 100);
    let c = b.push(json!({"type":"compaction","summary":"all of it","tokensBefore":100}));
    b.lines.last_mut().unwrap()["firstKeptEntryId"] = c.clone().into();
    let s = b.session();
    let p = context::project(&s, &s.path_to(2));
    assert_eq!(p.message_count(), 1, "only the summary");
    assert_eq!(
        cut::prepare(&s, 2, CompactionSettings::default()).unwrap_err(),
        NoCompaction::AlreadyCompacted
    );
}

#[test]
fn split_turn_and_file_operations() {
    let mut b = B::new();
    b.user("first task");
    b.assistant("ok", &[], 0);
    b.push(json!({"type":"compaction","summary":"earlier","tokensBefore":5,"details":{"readFiles":["old.rs"],"modifiedFiles":["kept.rs"]},"firstKeptEntryId":"e0000001"}));
    b.user("big task");
    for i in 0..6 {
        b.assistant(
            &format!("step {i}"),
            &[("read", &format!("f{i}.rs")), ("edit", "main.rs")],
            0,
        );
        b.tool(&"y".repeat(2000));
    }
    b.assistant("all done", &[], 0);
    let s = b.session();
    let plan = cut::prepare(
        &s,
        s.leaf().unwrap(),
        CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 1200,
        },
    )
    .unwrap();
    assert!(plan.is_split_turn, "the cut falls inside the big turn");
    assert_eq!(plan.turn_start_entry().map(|i| &*s.entries[i].id), Some("e0000004"));
    let (read, modified) = plan.file_ops.lists();
    assert!(modified.contains(&json!("kept.rs")) && modified.contains(&json!("main.rs")));
    assert!(read.contains(&json!("old.rs")) && read.contains(&json!("f0.rs")));
    assert!(
        !read.contains(&json!("main.rs")),
        "modified files are not listed as read"
    );
    // The previous compaction's details come through only when Pi wrote them.
    let mut b2 = B {
        lines: b.lines.clone(),
        n: b.n,
        last: b.last.clone(),
    };
    b2.lines[3]["fromHook"] = true.into();
    let s2 = b2.session();
    let plan2 = cut::prepare(
        &s2,
        s2.leaf().unwrap(),
        CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 1200,
        },
    )
    .unwrap();
    assert!(!plan2.file_ops.lists().1.contains(&json!("kept.rs")));
}
