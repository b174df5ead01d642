//! Quick phase timings on one file: `cargo run --release --example timing FILE`.
use bonsai::engine::compaction::cut::{self, CompactionSettings};
use bonsai::engine::load::session::Session;
use bonsai::engine::report;
use bonsai::engine::view::{context, tree};
use std::time::Instant;

fn main() {
    let p = std::env::args().nth(1).expect("FILE");
    let t = Instant::now();
    let buf = bonsai::store::files::read_file(std::path::Path::new(&p)).unwrap();
    let read = t.elapsed();
    let t = Instant::now();
    let s = Session::from_bytes(buf).unwrap();
    let parse = t.elapsed();
    let t = Instant::now();
    let path = s.path_to(s.leaf().unwrap());
    let path_t = t.elapsed();
    let t = Instant::now();
    let proj = context::project(&s, &path);
    let proj_t = t.elapsed();
    let t = Instant::now();
    let plan = cut::prepare_path(&s, &path, CompactionSettings::default()).unwrap();
    let cut_t = t.elapsed();
    let t = Instant::now();
    let ser = report::serialized_text(&s, &plan.messages_to_summarize);
    let ser_t = t.elapsed();
    let t = Instant::now();
    let tr = tree::Tree::build(&s);
    let tree_t = t.elapsed();
    println!(
        "read {read:?} parse {parse:?} path {path_t:?} ({} entries) project {proj_t:?} ({} msgs) cut {cut_t:?} serialize {ser_t:?} ({} chars) tree {tree_t:?} ({} roots)",
        path.len(),
        proj.message_count(),
        ser.len(),
        tr.roots.len()
    );
}
