//! What fills the context at the selection, built by its job: totals by role, tool and
//! file, and the largest messages.

use crate::engine::load::entry::{Kind, Role};
use crate::engine::load::session::Session;
use crate::engine::view::context::{self, ContextMessage};
use crate::engine::view::tokens::{Encoding, TokenCache};
use std::collections::HashMap;

/// One total: what, how many messages, their estimate and exact count.
#[derive(Debug, Clone, PartialEq)]
pub struct FillRow {
    pub label: String,
    pub count: usize,
    pub est: u64,
    pub exact: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Largest {
    pub entry: usize,
    pub what: String,
    pub est: u64,
    pub exact: u64,
}

#[derive(Debug, Clone)]
pub struct FillsData {
    pub generation: u64,
    pub leaf: usize,
    pub messages: usize,
    pub est: u64,
    pub exact: u64,
    pub encoding: &'static str,
    /// Image blocks in the messages: each counts as Pi's estimate in both columns.
    pub images: usize,
    pub by_role: Vec<FillRow>,
    pub by_tool: Vec<FillRow>,
    pub by_file: Vec<FillRow>,
    pub largest: Vec<Largest>,
}

/// The largest messages listed.
pub const LARGEST: usize = 20;
/// Files listed (the rest are summed in one row).
const FILES: usize = 12;

fn add(map: &mut HashMap<String, FillRow>, label: &str, est: u64, exact: u64) {
    let r = map.entry(label.to_string()).or_insert_with(|| FillRow {
        label: label.to_string(),
        count: 0,
        est: 0,
        exact: 0,
    });
    r.count += 1;
    r.est += est;
    r.exact += exact;
}

fn sorted(map: HashMap<String, FillRow>) -> Vec<FillRow> {
    let mut v: Vec<FillRow> = map.into_values().collect();
    v.sort_by(|a, b| b.est.cmp(&a.est).then_with(|| a.label.cmp(&b.label)));
    v
}

/// The file a tool result read, from its call's arguments.
fn file_of(s: &Session, entry: usize) -> Option<String> {
    let (_, args) = crate::engine::view::context::tool_call_for(s, entry)?;
    ["path", "file_path", "filePath"]
        .iter()
        .find_map(|k| args.get(*k).and_then(|v| v.as_str()).map(String::from))
}

pub fn build(s: &Session, generation: u64, leaf: usize, encoding: Encoding, cache: &TokenCache) -> FillsData {
    let proj = context::project(s, &s.path_to(leaf));
    let msgs: Vec<&ContextMessage> = proj.messages().collect();
    let exact = cache.count_all(s, &msgs, encoding);
    let (mut roles, mut tools, mut files) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut largest = Vec::new();
    let mut images = 0;
    for (m, &x) in msgs.iter().zip(&exact) {
        images += match (&s.entries[m.source].kind, m.replaced_by) {
            (Kind::Message(sm), None) => s.measures(sm).content.images,
            _ => crate::engine::view::tokens::images_in(&context::materialize(s, m)),
        };
        add(&mut roles, m.role.as_str(), m.est_tokens, x);
        let tool = match &s.entries[m.source].kind {
            Kind::Message(sm) if m.role == Role::ToolResult => sm.tool_name.as_deref().map(String::from),
            _ => None,
        };
        if let Some(t) = &tool {
            add(&mut tools, t, m.est_tokens, x);
            if let Some(f) = file_of(s, m.source) {
                add(&mut files, &f, m.est_tokens, x);
            }
        }
        largest.push(Largest {
            entry: m.source,
            what: tool.unwrap_or_else(|| m.role.as_str().to_string()),
            est: m.est_tokens,
            exact: x,
        });
    }
    largest.sort_by(|a, b| b.est.cmp(&a.est).then(a.entry.cmp(&b.entry)));
    largest.truncate(LARGEST);
    let mut by_file = sorted(files);
    if by_file.len() > FILES {
        let rest = by_file.split_off(FILES - 1);
        by_file.push(FillRow {
            label: format!("{} more files", rest.len()),
            count: rest.iter().map(|r| r.count).sum(),
            est: rest.iter().map(|r| r.est).sum(),
            exact: rest.iter().map(|r| r.exact).sum(),
        });
    }
    FillsData {
        generation,
        leaf,
        messages: msgs.len(),
        est: msgs.iter().map(|m| m.est_tokens).sum(),
        exact: exact.iter().sum(),
        encoding: encoding.name(),
        images,
        by_role: sorted(roles),
        by_tool: sorted(tools),
        by_file,
        largest,
    }
}
