//! bonsai's session index (`store::index`): a session opened from its index is the session a
//! fresh parse gives, in every field the views use, on every fixture, and after the file
//! changed in each way it can (lines appended, a partial last line finished, truncated,
//! rewritten in place, replaced by another file). An index that is damaged, foreign or of
//! another session is ignored and replaced, never trusted.

mod common;

use bonsai::engine::load::pi_version::PiVersion;
use bonsai::engine::load::session::Session;
use bonsai::engine::view::{tree, tree_view};
use bonsai::store::index::{self, Place, Used};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Everything the views read of a session, as one value to compare.
fn views(s: &Session) -> String {
    // The views first, as an app asks for them: a session from its index reads its estimates
    // and tool calls in the index without taking the measures (compared below).
    let mut labels: Vec<_> = s.labels.iter().map(|(k, v)| format!("{k}={}@{}", v.0, v.1)).collect();
    labels.sort();
    let mut ids: Vec<Option<usize>> = s.entries.iter().map(|e| s.idx_of(&e.id)).collect();
    // And ids no entry has (a parent or a label's target may name one).
    ids.extend(["", "no such id", "0000000"].map(|id| s.idx_of(id)));
    let tree_text = s.leaf().map(|leaf| {
        let t = tree::Tree::build(s);
        let view = tree_view::TreeView::new(s, &t, Some(leaf), tree_view::FilterMode::All, 0);
        view.render_plain(s, 100, None)
    });
    let inspect = s.leaf().map(|l| common::inspect_at(s, l));
    // What a compaction keeping almost nothing would summarize, and the files it tracks
    // (under Pi 1.5.2 these include the calls tool results name in `nestedCalls`).
    let keep_little = s.leaf().map(|l| {
        bonsai::engine::compaction::cut::prepare(
            s,
            l,
            bonsai::engine::compaction::cut::CompactionSettings {
                reserve_tokens: 16384,
                keep_recent_tokens: 1,
            },
        )
        .map(|p| {
            format!(
                "{:?} {:?} {:?} {:?} {}",
                p.file_ops.read,
                p.file_ops.written,
                p.file_ops.edited,
                p.history,
                p.messages_to_summarize.len()
            )
        })
        .map_err(|e| format!("{e:?}"))
    });
    // The files every message on the leaf's path would add to a summary's lists.
    let file_ops = s.leaf().map(|l| {
        let proj = bonsai::engine::view::context::project(s, &s.path_to(l));
        let mut ops = bonsai::engine::compaction::serialize::FileOps::default();
        for m in proj.messages() {
            bonsai::engine::compaction::cut::add_file_ops(s, m, &mut ops);
        }
        format!("{:?} {:?} {:?}", ops.read, ops.written, ops.edited)
    });
    // Then every message measured on both sides: an index keeps the measures taken so far,
    // a parse takes some at load; what is compared is what they are.
    for i in 0..s.entries.len() {
        s.measures_of(i);
    }
    // Where a message's measures sit in an index, and what it noted of a line to spare
    // reading it again, are bookkeeping, not the session (what they stand for is compared
    // through the views below).
    let bookkeeping = regex::Regex::new(r"(slot: \d+|names_nested_calls: (None|Some\((true|false)\))), ").unwrap();
    let entries = bookkeeping
        .replace_all(&format!("{:?}", s.entries), "")
        .replace("}, Entry {", "},\nEntry {");
    // Each entry's parentId as its line has it (an index keeps only the unresolved ones).
    let parent_ids: Vec<Option<&str>> = (0..s.entries.len()).map(|i| s.parent_id(i)).collect();
    format!(
        "file ops {file_ops:?}\ncompaction keeping little {keep_little:?}\nentries {entries}\nparent ids {parent_ids:?}\nparents {:?}\nby id {ids:?}\nlabels {labels:?}\nname {:?}\nheader {:?}\ndiagnostics {:?}\nskipped {} dups {} newline {} migrated {} synthesized {} pi {:?}\ntree {tree_text:#?}\ninspect {}",
        s.parent_idx,
        s.session_name(),
        s.header,
        s.diagnostics,
        s.skipped_lines,
        s.has_duplicate_ids,
        s.file_ends_with_newline,
        s.migrated,
        s.ids_synthesized,
        s.pi,
        serde_json::to_string_pretty(&inspect).unwrap(),
    )
}

fn fixtures() -> Vec<PathBuf> {
    let repo = common::repo();
    let mut v = vec![repo.join("fixtures/demo.jsonl")];
    for d in [
        "fixtures/bad",
        "fixtures/pi-0.27.9",
        "fixtures/pi-0.87.1",
        "fixtures/pi-1.5.2",
    ] {
        v.extend(common::sessions_in(&repo.join(d)));
    }
    for d in common::shared_fixture_dirs() {
        v.extend(common::sessions_in(&d));
    }
    v
}

fn place(dir: &Path) -> Place {
    Place {
        dir: dir.join("index"),
        limit: 1 << 30,
        view: Default::default(),
    }
}

/// Open `path` through the index at `place` (writing a new index when the open says so) and
/// the same file parsed fresh; both must be the same session.
fn open_and_compare(path: &Path, place: &Place, what: &str) -> Used {
    let opened = index::open(path, Some(place), None, None);
    let fresh = bonsai::store::files::load_session(path);
    match (opened, fresh) {
        (Ok(mut o), Ok(mut f)) => {
            // Read as each Pi release bonsai follows (1.5.2 also tracks the files of the
            // calls a tool result names in `nestedCalls`, which the index records).
            let mut a = String::new();
            let mut b = String::new();
            for pi in [PiVersion::V0_87_1, PiVersion::V1_5_2] {
                o.session.pi = pi;
                f.pi = pi;
                a += &views(&o.session);
                b += &views(&f);
            }
            if a != b {
                let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(0);
                panic!(
                    "{} ({what}, {:?}): the session from the index differs from a fresh parse near\n{}\n---\n{}",
                    path.display(),
                    o.used,
                    &a[at.saturating_sub(300)..(at + 300).min(a.len())],
                    &b[at.saturating_sub(300)..(at + 300).min(b.len())]
                );
            }
            if same_stored_view(&o.session, &f, place.view, path) {
                VIEWS_IN_PLACE.with(|n| n.set(n.get() + 1));
            }
            if o.used.wants_saving() {
                index::save(place, &o.source, &o.session).unwrap();
            }
            o.used
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.to_string(), b.to_string(), "{}: {what}", path.display());
            Used::Parsed("both refuse it".into())
        }
        (a, b) => panic!(
            "{} ({what}): index {:?} but fresh parse {:?}",
            path.display(),
            a.map(|o| o.used),
            b.map(|_| ())
        ),
    }
}

thread_local! {
    /// Opens (on this test's thread) whose tree and view, parents and `byId` were read in
    /// place from the index.
    static VIEWS_IN_PLACE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The tree and `/tree` view a session from its index shows (read in place where the index
/// keeps them) are the ones built on a fresh parse: every table, the rows, and again after
/// each of a run of keys (moves, folds, filters, a search), which make the tables anew.
fn same_stored_view(o: &Session, f: &Session, filter: tree_view::FilterMode, path: &Path) -> bool {
    let (to, tf) = (tree::Tree::build(o), tree::Tree::build(f));
    assert_eq!(to, tf, "{}: the tree", path.display());
    let mut vo = tree_view::TreeView::new(o, &to, o.leaf(), filter, 0);
    let mut vf = tree_view::TreeView::new(f, &tf, f.leaf(), filter, 0);
    // The parents and `byId` too (compared through `views`).
    let mut in_place = to.children.is_in_place() && vo.flat.is_in_place() && o.derived_in_place();
    // And the context at the leaf (the first frame's gauge and edits) is the one projected.
    if let Some(leaf) = o.leaf() {
        use bonsai::engine::view::context::{self, LeafContext};
        let fresh = LeafContext::of_projection(f, leaf, &context::project(f, &f.path_to(leaf)));
        match LeafContext::kept(o, leaf) {
            Some(kept) => assert_eq!(kept, &fresh, "{}: the leaf's context", path.display()),
            None => in_place = false,
        }
    }
    let same = |vo: &tree_view::TreeView, vf: &tree_view::TreeView, after: &str| {
        if let Err(e) = vo.same_tables_as(vf) {
            panic!("{} ({filter:?}, after {after}): {e}", path.display());
        }
        assert_eq!(
            vo.render_plain(o, 100, None),
            vf.render_plain(f, 100, None),
            "{} ({filter:?}, after {after})",
            path.display()
        );
    };
    same(&vo, &vf, "the open");
    type Key = fn(&mut tree_view::TreeView, &Session);
    let keys: [(&str, Key); 8] = [
        ("up", |v, _| v.move_up()),
        ("fold", |v, s| v.fold_or_up(s)),
        ("unfold", |v, s| v.unfold_or_down(s)),
        ("page up and fold", |v, s| {
            v.page_up(7);
            v.fold_or_up(s)
        }),
        ("no-tools", |v, s| v.toggle_filter(s, tree_view::FilterMode::NoTools)),
        ("search", |v, s| v.set_search(s, "a".into())),
        ("archived shown", |v, s| v.set_show_archived(s, true)),
        ("all", |v, s| v.set_filter(s, tree_view::FilterMode::All)),
    ];
    for (name, key) in keys {
        key(&mut vo, o);
        key(&mut vf, f);
        same(&vo, &vf, name);
    }
    in_place
}

#[test]
fn a_session_from_its_index_is_the_fresh_parse_on_every_fixture() {
    let tmp = tempfile::tempdir().unwrap();
    let mut place = place(tmp.path());
    let mut from_index = 0;
    for (k, f) in fixtures().into_iter().enumerate() {
        // Every filter's stored view, one fixture after another.
        place.view = tree_view::FilterMode::CYCLE[k % 5];
        let copy = tmp.path().join("s.jsonl");
        std::fs::copy(&f, &copy).unwrap();
        let _ = index::clear(&place, std::slice::from_ref(&copy));
        let first = open_and_compare(&copy, &place, "first open");
        assert!(matches!(first, Used::Parsed(_)), "{}: {first:?}", f.display());
        let second = open_and_compare(&copy, &place, "second open");
        if Session::from_bytes(std::fs::read(&copy).unwrap()).is_ok() {
            assert_eq!(second, Used::Unchanged, "{}", f.display());
            from_index += 1;
        }
    }
    assert!(from_index >= 20, "only {from_index} fixtures were opened from an index");
    let in_place = VIEWS_IN_PLACE.with(|n| n.get());
    assert_eq!(in_place, from_index, "every open from an index read its view in place");
}

/// Lines appended one by one (with a partial last line first), as Pi writes them: each open
/// parses only what was appended and still equals the whole parse.
#[test]
fn appends_and_a_partial_last_line_extend_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let place = place(tmp.path());
    let mut grown = 0;
    for f in fixtures() {
        let bytes = std::fs::read(&f).unwrap();
        if Session::from_bytes(bytes.clone()).is_err() {
            continue;
        }
        let ends: Vec<usize> = memchr::memchr_iter(b'\n', &bytes).map(|k| k + 1).collect();
        if ends.len() < 4 {
            continue;
        }
        let copy = tmp.path().join("s.jsonl");
        let _ = index::clear(&place, std::slice::from_ref(&copy));
        // Start from the first half, then grow: a line cut inside, then finished, then more.
        let mut at = ends[ends.len() / 2];
        std::fs::write(&copy, &bytes[..at]).unwrap();
        open_and_compare(&copy, &place, "half");
        let mut steps = vec![];
        for &e in &ends[ends.len() / 2 + 1..] {
            steps.push(e.saturating_sub(7).max(at));
            steps.push(e);
        }
        steps.truncate(12);
        steps.push(bytes.len());
        for next in steps {
            if next <= at {
                continue;
            }
            let mut fh = std::fs::OpenOptions::new().append(true).open(&copy).unwrap();
            fh.write_all(&bytes[at..next]).unwrap();
            drop(fh);
            at = next;
            let used = open_and_compare(&copy, &place, &format!("grown to {at}"));
            // A v1 session's ids are made up at load: it is read whole when it grows.
            if matches!(used, Used::Extended(_)) {
                grown += 1;
            }
        }
    }
    assert!(grown >= 50, "only {grown} opens extended an index");
    // Most appends derive only what was appended (the rest: a partial last line read again,
    // an appended entry taking over an id or found by an orphan).
    let quick = bonsai::engine::load::session::appended_only_derivations();
    assert!(
        quick * 2 >= grown,
        "only {quick} of {grown} extensions derived only the appended entries"
    );
}

/// Appended entries that change what earlier ones derive (one takes over an id, one is the
/// parent an earlier entry was missing) make the whole derivation run again; labels, a name,
/// orphans and a cycle among appended entries are derived from the appended alone. Each open
/// equals a fresh parse.
#[test]
fn appended_entries_derive_alone_unless_they_change_earlier_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let place = place(tmp.path());
    let file = tmp.path().join("s.jsonl");
    let line = |id: &str, parent: Option<&str>, body: &str| {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(r#"{{"id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z",{body}}}"#) + "\n"
    };
    let user = |text: &str| format!(r#""type":"message","message":{{"role":"user","content":"{text}","timestamp":1}}"#);
    let mut text =
        String::from(r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#)
            + "\n";
    text += &line("a1", None, &user("one"));
    text += &line("a2", Some("a1"), &user("two"));
    text += &line("o1", Some("gone"), &user("orphan"));
    std::fs::write(&file, &text).unwrap();
    open_and_compare(&file, &place, "first");
    let append = |more: String, what: &str, quick: bool| {
        let before = bonsai::engine::load::session::appended_only_derivations();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(more.as_bytes())
            .unwrap();
        let used = open_and_compare(&file, &place, what);
        assert!(matches!(used, Used::Extended(_)), "{what}: {used:?}");
        let after = bonsai::engine::load::session::appended_only_derivations();
        assert_eq!(
            after - before,
            quick as usize,
            "{what}: derived from the appended alone?"
        );
    };
    append(
        line("l1", Some("a2"), r#""type":"label","targetId":"a1","label":"start""#)
            + &line("i1", Some("l1"), r#""type":"session_info","name":"  named  ""#)
            + &line("o2", Some("also-gone"), &user("another orphan"))
            + &line("c1", Some("c2"), &user("cycle one"))
            + &line("c2", Some("c1"), &user("cycle two"))
            + &line("s1", Some("s1"), &user("its own parent")),
        "labels, a name, an orphan, a cycle, a self-parent",
        true,
    );
    append(
        line("l2", Some("i1"), r#""type":"label","targetId":"a1","label":"""#),
        "a label removed",
        true,
    );
    append(
        line("gone", Some("a2"), &user("the orphan's parent")),
        "an earlier orphan's parent",
        false,
    );
    append(
        line("a2", Some("gone"), &user("a second a2")),
        "an id taken over",
        false,
    );
    append(
        line("z1", Some("a2"), &user("after a duplicate")),
        "after a duplicate",
        true,
    );
}

/// Truncated, rewritten in place at the same length, rewritten at another length, replaced by
/// another file (a new inode), touched: each is read whole and gets a new index.
#[test]
fn a_truncated_rewritten_or_replaced_file_is_parsed_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let place = place(tmp.path());
    let src = common::repo().join("fixtures/demo.jsonl");
    let bytes = std::fs::read(&src).unwrap();
    let copy = tmp.path().join("s.jsonl");
    let fresh_index = |why: &str| {
        std::fs::write(&copy, &bytes).unwrap();
        let _ = index::clear(&place, std::slice::from_ref(&copy));
        assert!(matches!(open_and_compare(&copy, &place, why), Used::Parsed(_)));
        assert_eq!(open_and_compare(&copy, &place, why), Used::Unchanged);
    };
    let parsed_because = |why: &str| match open_and_compare(&copy, &place, why) {
        Used::Parsed(reason) => reason,
        other => panic!("{why}: {other:?}"),
    };

    fresh_index("truncated");
    let cut = memchr::memrchr(b'\n', &bytes[..bytes.len() - 1]).unwrap() + 1;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&copy)
        .unwrap()
        .set_len(cut as u64)
        .unwrap();
    assert!(parsed_because("truncated").contains("shorter"));
    // Truncated then grown past the old length: the old last block differs.
    fresh_index("truncated and grown");
    std::fs::write(&copy, {
        let mut v = bytes[..cut].to_vec();
        v.extend_from_slice(
            b"{\"type\":\"label\",\"id\":\"zzzzzzzz\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:00.000Z\"}\n",
        );
        v.extend_from_slice(&bytes[cut..]);
        v
    })
    .unwrap();
    assert!(parsed_because("truncated and grown").contains("changed"));

    fresh_index("rewritten at the same length");
    let mut same_len = bytes.clone();
    let k = same_len.len() - 10;
    same_len[k] = if same_len[k] == b'a' { b'b' } else { b'a' };
    let mut f = std::fs::OpenOptions::new().write(true).open(&copy).unwrap();
    f.write_all(&same_len).unwrap();
    drop(f);
    parsed_because("rewritten at the same length");

    fresh_index("a byte in the middle changed, then grown");
    let mut changed = bytes.clone();
    changed[bytes.len() / 2] ^= 0x20;
    // The middle is not hashed: the file's time at the same length and a grown file whose
    // blocks still match are what is trusted (Pi only appends). Same length with a new
    // time is read whole.
    let mut f = std::fs::OpenOptions::new().write(true).open(&copy).unwrap();
    f.write_all(&changed).unwrap();
    let f = f;
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    let why = parsed_because("same length, new time");
    assert!(why.contains("same length") || why.contains("changed"), "{why}");

    fresh_index("replaced");
    let other = tmp.path().join("other.jsonl");
    std::fs::write(&other, &bytes).unwrap();
    std::fs::rename(&other, &copy).unwrap();
    assert!(parsed_because("replaced").contains("replaced"));
}

/// Every byte of an index flipped in turn (a sample over a big one): the open ignores the
/// index (a whole parse), never opens a wrong session, and the next open has a good index again.
#[test]
fn a_damaged_or_foreign_index_is_ignored_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let place = place(tmp.path());
    let copy = tmp.path().join("s.jsonl");
    std::fs::copy(common::repo().join("fixtures/demo.jsonl"), &copy).unwrap();
    open_and_compare(&copy, &place, "first");
    let file = place.file_for(&index::resolved(&copy));
    let good = std::fs::read(&file).unwrap();
    let step = (good.len() / 400).max(1);
    let mut ignored = 0;
    // Spread over the whole index, then every byte of its end: the tree's and `/tree`'s
    // tables kept there are read in place, so none of their bytes may go unchecked.
    let tail = good.len().saturating_sub(512)..good.len();
    for k in (0..good.len()).step_by(step).chain(tail) {
        let mut bad = good.clone();
        bad[k] ^= 0x41;
        std::fs::write(&file, &bad).unwrap();
        match open_and_compare(&copy, &place, &format!("byte {k} flipped")) {
            Used::Parsed(_) => ignored += 1,
            other => panic!("byte {k} of {} flipped, the index was used: {other:?}", good.len()),
        }
        assert_eq!(open_and_compare(&copy, &place, "after the flip"), Used::Unchanged);
    }
    assert!(ignored >= 800);
    // Cut short, empty, another file's bytes, another session's index.
    for bad in [&good[..good.len() / 2], &b""[..], &b"{\"type\":\"session\"}\n"[..]] {
        std::fs::write(&file, bad).unwrap();
        assert!(matches!(open_and_compare(&copy, &place, "bad index"), Used::Parsed(_)));
    }
    let second = tmp.path().join("t.jsonl");
    std::fs::copy(&copy, &second).unwrap();
    open_and_compare(&second, &place, "second session");
    std::fs::copy(place.file_for(&index::resolved(&second)), &file).unwrap();
    let why = match open_and_compare(&copy, &place, "another session's index") {
        Used::Parsed(why) => why,
        other => panic!("{other:?}"),
    };
    assert!(why.contains("another session"), "{why}");
}

/// The folder stays within its limit: the least recently opened index goes first, and one
/// bigger than the limit alone is not written. Files are 0600 in a 0700 folder.
#[test]
fn the_index_folder_stays_within_its_limit_dropping_the_least_recently_opened() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let src = common::repo().join("fixtures/demo.jsonl");
    let mut place = place(tmp.path());
    let names = ["a", "b", "c"];
    for n in names {
        let p = tmp.path().join(format!("{n}.jsonl"));
        std::fs::copy(&src, &p).unwrap();
    }
    let path = |n: &str| tmp.path().join(format!("{n}.jsonl"));
    open_and_compare(&path("a"), &place, "a");
    let one = std::fs::metadata(place.file_for(&index::resolved(&path("a"))))
        .unwrap()
        .len();
    // Room for two indexes.
    place.limit = one * 2 + one / 2;
    open_and_compare(&path("b"), &place, "b");
    // a is opened again (from its index), so b is now the least recently opened.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(open_and_compare(&path("a"), &place, "a again"), Used::Unchanged);
    std::thread::sleep(std::time::Duration::from_millis(20));
    open_and_compare(&path("c"), &place, "c");
    let at = place.clone();
    let has = |n: &str| at.file_for(&index::resolved(&path(n))).exists();
    assert!(
        has("a") && has("c") && !has("b"),
        "a {} b {} c {}",
        has("a"),
        has("b"),
        has("c")
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&place.dir), 0o700);
    assert_eq!(mode(&place.file_for(&index::resolved(&path("a")))), 0o600);
    // Too small for any index: nothing is written, the open still works.
    place.limit = one / 2;
    let _ = index::clear(&place, &[]);
    let o = index::open(&path("a"), Some(&place), None, None).unwrap();
    assert!(index::save(&place, &o.source, &o.session).is_err());
    assert!(!has("a"));
    // Off: no index is read.
    place.limit = 0;
    assert!(matches!(open_and_compare(&path("a"), &place, "off"), Used::Parsed(_)));
}

/// A tool result naming `nestedCalls` (Pi 1.5.2 tracks those calls' files): the index records
/// which results do, and a session opened from it tracks the same files without reading them.
#[test]
fn the_index_records_which_tool_results_name_nested_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let place = place(tmp.path());
    let text = std::fs::read_to_string(common::repo().join("fixtures/pi-1.5.2/changed-in-1.5.2.jsonl")).unwrap();
    assert!(text.contains("\"nestedCalls\""));
    // A path only a nested call names.
    let text = text.replacen(
        "\"name\":\"read\",\"arguments\":{\"path\":\"src/refund.py\"}",
        "\"name\":\"read\",\"arguments\":{\"path\":\"only/nested.py\"}",
        1,
    );
    assert!(text.contains("only/nested.py"));
    let copy = tmp.path().join("s.jsonl");
    std::fs::write(&copy, &text).unwrap();
    open_and_compare(&copy, &place, "first");
    let mut o = index::open(&copy, Some(&place), None, None).unwrap();
    assert_eq!(o.used, Used::Unchanged);
    o.session.pi = PiVersion::V1_5_2;
    let s = &o.session;
    let result = s.entries.iter().position(|e| &*e.id == "4c5e5222").unwrap();
    let proj = bonsai::engine::view::context::project(s, &s.path_to(result));
    let mut ops = bonsai::engine::compaction::serialize::FileOps::default();
    for m in proj.messages() {
        bonsai::engine::compaction::cut::add_file_ops(s, m, &mut ops);
    }
    assert!(ops.read.iter().any(|p| p == "only/nested.py"), "{:?}", ops.read);
    open_and_compare(&copy, &place, "second");
}

/// `bonsai index`: makes an index, says how each stands (fresh, grown, stale), removes them.
#[test]
fn bonsai_index_makes_shows_and_clears_indexes() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let file = tmp.path().join("s.jsonl");
    let bytes = std::fs::read(common::repo().join("fixtures/demo.jsonl")).unwrap();
    let cut = memchr::memrchr(b'\n', &bytes[..bytes.len() - 1]).unwrap() + 1;
    std::fs::write(&file, &bytes[..cut]).unwrap();
    let run = |args: &[&str]| {
        let out = bonsai_with_agent(&agent, tmp.path(), args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let f = file.to_str().unwrap();
    let made = run(&["index", f]);
    assert!(made.contains("indexed") && made.contains("written"), "{made}");
    assert!(run(&["index", f]).contains("fresh already"));
    let status = run(&["index", "--status"]);
    assert!(status.starts_with("fresh"), "{status}");
    // Pi appends the last line.
    let mut fh = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    fh.write_all(&bytes[cut..]).unwrap();
    drop(fh);
    let status: serde_json::Value = serde_json::from_str(&run(&["index", "--status", "--json", f])).unwrap();
    assert_eq!(status["indexes"][0]["state"], "grown", "{status}");
    assert!(run(&["index", f]).contains("appended since"));
    // Rewritten: stale until indexed again.
    std::fs::write(&file, &bytes[..cut]).unwrap();
    let status: serde_json::Value = serde_json::from_str(&run(&["index", "--status", "--json"])).unwrap();
    assert_eq!(status["indexes"][0]["state"], "stale", "{status}");
    assert!(status["totalBytes"].as_u64().unwrap() > 0);
    assert!(run(&["index", "--clear"]).contains("removed 1 index file"));
    assert!(run(&["index", "--status"]).contains("no session index"));
}

/// The bonsai binary run in `dir` with `agent` as Pi's agent folder.
fn bonsai_with_agent(agent: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(common::bonsai_bin())
        .args(args)
        .env("PI_CODING_AGENT_DIR", agent)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A session of `turns` turns as Pi writes them (a user prompt, a reply calling `read` on a
/// file, its result), under a model and thinking level, with the ids Pi would use.
fn generated_session(turns: usize) -> String {
    let mut out = String::from(
        r#"{"type":"session","version":3,"id":"0a1b2c3d-0000-7000-8000-000000000001","timestamp":"2026-11-20T09:00:00.000Z","cwd":"/tmp"}"#,
    );
    out.push('\n');
    out += r#"{"type":"model_change","id":"m0000000","parentId":null,"timestamp":"2026-11-20T09:00:00.001Z","provider":"fakeco","modelId":"fake-model"}"#;
    out.push('\n');
    let mut parent = "m0000000".to_string();
    for t in 0..turns {
        let (u, a, r) = (format!("u{t:07}"), format!("a{t:07}"), format!("r{t:07}"));
        let ts = |k: usize| {
            format!(
                "2026-11-20T{:02}:{:02}:{:02}.{:03}Z",
                10 + t / 3600 % 12,
                t / 60 % 60,
                t % 60,
                k
            )
        };
        out += &format!(
            r#"{{"type":"message","id":"{u}","parentId":"{parent}","timestamp":"{}","message":{{"role":"user","content":[{{"type":"text","text":"Turn {t}: read src/file{t}.rs"}}],"timestamp":1}}}}"#,
            ts(1)
        );
        out.push('\n');
        out += &format!(
            r#"{{"type":"message","id":"{a}","parentId":"{u}","timestamp":"{}","message":{{"role":"assistant","content":[{{"type":"text","text":"Reading it."}},{{"type":"toolCall","id":"call_{t}","name":"read","arguments":{{"path":"src/file{t}.rs"}}}}],"provider":"fakeco","model":"fake-model","usage":{{"input":{},"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":{}}},"stopReason":"toolUse","timestamp":2}}}}"#,
            ts(2),
            1000 + t * 60,
            1020 + t * 60
        );
        out.push('\n');
        out += &format!(
            r#"{{"type":"message","id":"{r}","parentId":"{a}","timestamp":"{}","message":{{"role":"toolResult","toolCallId":"call_{t}","toolName":"read","content":[{{"type":"text","text":"fn f{t}() {{}}\n"}}],"isError":false,"timestamp":3}}}}"#,
            ts(3)
        );
        out.push('\n');
        parent = r;
    }
    out
}

/// What the first frame of a session shows, computed as the app does: the tree, `/tree`'s
/// window of rows at the leaf, the leaf's context size and what a compaction would
/// summarize and track.
fn first_frame(s: &Session) -> String {
    let leaf = s.leaf().unwrap();
    let t = tree::Tree::build(s);
    let view = tree_view::TreeView::new(s, &t, Some(leaf), tree_view::FilterMode::Default, 0);
    let rows = view.render_plain(s, 120, Some(40));
    let proj = bonsai::engine::view::context::project(s, &s.path_to(leaf));
    let msgs: Vec<_> = proj.messages().collect();
    let tokens = bonsai::engine::view::context::estimate_context_tokens(s, &msgs);
    let plan = bonsai::engine::compaction::cut::prepare_projected(
        s,
        proj.clone(),
        bonsai::engine::compaction::cut::CompactionSettings {
            reserve_tokens: 16384,
            keep_recent_tokens: 2000,
        },
    )
    .map(|p| {
        format!(
            "{:?} {} {:?}",
            p.file_ops.read,
            p.messages_to_summarize.len(),
            p.history
        )
    })
    .map_err(|e| format!("{e:?}"));
    format!("{rows:#?}\n{tokens:?}\n{plan:?}")
}

/// Opening a session from its index decodes no message; its first frame decodes only the
/// messages it shows (the rows on screen, the newest reply's usage, the summary's
/// boundary), not every message of the session, and is the fresh parse's first frame.
/// An index saved from such a session (grown since) copies what it did not decode.
#[test]
fn a_session_from_its_index_decodes_only_what_its_first_frame_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let place = place(tmp.path());
    let path = tmp.path().join("long.jsonl");
    let text = generated_session(3000);
    std::fs::write(&path, &text).unwrap();
    let first = index::open(&path, Some(&place), None, None).unwrap();
    assert!(matches!(first.used, Used::Parsed(_)), "{:?}", first.used);
    index::save(&place, &first.source, &first.session).unwrap();

    let again = index::open(&path, Some(&place), None, None).unwrap();
    assert!(matches!(again.used, Used::Unchanged), "{:?}", again.used);
    let s = &again.session;
    assert_eq!(s.decoded_messages(), 0, "opening decoded messages");
    let frame = first_frame(s);
    let decoded = s.decoded_messages();
    assert!(
        decoded <= 60,
        "the first frame decoded {decoded} of {} messages",
        s.entries.len()
    );
    let fresh = bonsai::store::files::load_session(&path).unwrap();
    assert_eq!(
        frame,
        first_frame(&fresh),
        "the first frame differs from a fresh parse's"
    );

    // Pi appends; the session is opened from its index and the new lines, and its index saved
    // again before anything reads it: what was never decoded is copied as it was.
    let mut more = generated_session(3100);
    let extra: String = more.split_off(text.len());
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(extra.as_bytes())
        .unwrap();
    let grown = index::open(&path, Some(&place), None, None).unwrap();
    assert!(matches!(grown.used, Used::Extended(_)), "{:?}", grown.used);
    index::save(&place, &grown.source, &grown.session).unwrap();
    assert!(
        grown.session.decoded_messages() < 400,
        "saving decoded what it could copy"
    );
    let used = open_and_compare(&path, &place, "saved from a session that decoded little");
    assert!(matches!(used, Used::Unchanged), "{used:?}");
}

/// The commands that only read a session (`stats`, `inspect`, `tree`, `context`, `cut`,
/// `export`) print the same from its index as from a parse, on every fixture: with no index,
/// with one that describes the file (it was opened: its time moved on), and after Pi appended
/// a line (the index and the new bytes).
#[test]
fn reading_commands_print_the_same_from_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let run = |args: &[&str]| {
        let out = bonsai_with_agent(&agent, tmp.path(), args);
        (out.status.code(), out.stdout, out.stderr)
    };
    let commands: [&[&str]; 7] = [
        &["stats", "--json"],
        &["inspect"],
        &["tree", "--width", "100", "--filter", "all"],
        &["context", "--json", "--no-exact"],
        &["cut", "--json", "--keep-recent-tokens", "200"],
        &["export", "--format", "md"],
        &["export", "--format", "json"],
    ];
    let outputs = |f: &str| -> Vec<_> { commands.iter().map(|c| run(&[c, &[f][..]].concat())).collect() };
    let (mut checked, mut from_index) = (0, 0);
    for (k, fixture) in fixtures().iter().enumerate() {
        let bytes = std::fs::read(fixture).unwrap();
        // A file of its own, so each index is this test's (and the fixture is never touched).
        let file = tmp.path().join(format!("s{k}.jsonl"));
        let Some(cut) = bytes
            .len()
            .checked_sub(1)
            .and_then(|end| memchr::memrchr(b'\n', &bytes[..end]))
        else {
            continue;
        };
        std::fs::write(&file, &bytes[..cut + 1]).unwrap();
        let f = file.to_str().unwrap();
        let parsed = outputs(f);
        let (code, _, err) = run(&["index", f]);
        if code != Some(0) {
            // Not a session bonsai opens (the bad corpus): no index, the same errors.
            assert_eq!(parsed, outputs(f), "{}", String::from_utf8_lossy(&err));
            continue;
        }
        let idx = Place {
            dir: agent.join("bonsai").join("index"),
            limit: 0,
            view: Default::default(),
        }
        .file_for(&index::resolved(&file));
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .append(true)
            .open(&idx)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let indexed = outputs(f);
        let opened = std::fs::metadata(&idx).unwrap().modified().unwrap() > old;
        from_index += opened as usize;
        for (c, (a, b)) in commands.iter().zip(parsed.iter().zip(&indexed)) {
            assert!(
                a == b,
                "{} {c:?}: from the index:\n{}\n{}\nparsed:\n{}\n{}",
                fixture.display(),
                String::from_utf8_lossy(&b.1),
                String::from_utf8_lossy(&b.2),
                String::from_utf8_lossy(&a.1),
                String::from_utf8_lossy(&a.2)
            );
        }
        // Pi appends the last line: the index and the new bytes, as a parse of the whole.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(&bytes[cut + 1..])
            .unwrap();
        let grown = outputs(f);
        std::fs::write(&idx, b"").unwrap();
        assert_eq!(grown, outputs(f), "{}: after an append", fixture.display());
        checked += 1;
    }
    assert!(
        checked >= 10 && from_index == checked,
        "{from_index} of {checked} read from their index"
    );
}

/// A reading command that parses a session of 64 MB or more whole writes its index, so the
/// next command (or the TUI) reads it from there; a smaller session gets none.
#[test]
fn a_reading_command_indexes_a_big_session_it_parsed_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let small = generated_session(20);
    // One tool result of 64 MiB makes the same session big.
    let big = small.replace(
        r#""text":"fn f19() {}\n""#,
        &format!(r#""text":"{}""#, "x".repeat(64 << 20)),
    );
    assert!(big.len() as u64 >= 64 << 20);
    let index_of = |file: &Path| {
        Place {
            dir: agent.join("bonsai").join("index"),
            limit: 0,
            view: Default::default(),
        }
        .file_for(&index::resolved(file))
    };
    for (name, text, indexed) in [("small.jsonl", &small, false), ("big.jsonl", &big, true)] {
        let file = tmp.path().join(name);
        std::fs::write(&file, text).unwrap();
        let f = file.to_str().unwrap();
        let first = bonsai_with_agent(&agent, tmp.path(), &["cut", "--json", f]);
        assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
        assert!(first.stderr.is_empty(), "{}", String::from_utf8_lossy(&first.stderr));
        assert_eq!(index_of(&file).exists(), indexed, "{name}");
        for command in [
            &["cut", "--json", f][..],
            &["tree", "--width", "100", f],
            &["context", "--no-exact", f],
        ] {
            let again = bonsai_with_agent(&agent, tmp.path(), command);
            assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
        }
        let second = bonsai_with_agent(&agent, tmp.path(), &["cut", "--json", f]);
        assert_eq!(first.stdout, second.stdout, "{name}: the same from the index");
    }
}
