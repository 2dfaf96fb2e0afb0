//! The JSON object `pith session dump` prints: the members of a conformance `expected.json`
//! (`../shared/conformance/README.md`), computed the way pi computes them.

use std::path::Path;

use crate::context::build_session_context;
use crate::error::Result;
use crate::list::session_info;
use crate::session::{OpenMode, Session};
use crate::tree::{Leaf, SessionTree};

/// A position to build an extra context at (`--at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    /// `root`: after `resetLeaf()`.
    Root,
    /// An entry id: after `branch(id)`.
    Id(String),
    /// `#N`: the N-th entry in file order (0-based), keyed by its id.
    Nth(usize),
}

impl std::str::FromStr for At {
    type Err = String;

    /// `root`, `#N` or an entry id.
    fn from_str(s: &str) -> Result<At, String> {
        if s == "root" {
            return Ok(At::Root);
        }
        match s.strip_prefix('#') {
            Some(n) => n
                .parse()
                .map(At::Nth)
                .map_err(|_| format!("'{s}': expected #N with N a number")),
            None if s.is_empty() => Err("an empty --at".into()),
            None => Ok(At::Id(s.to_owned())),
        }
    }
}

/// Opens `path` as pi's `SessionManager.open` would (migrating a legacy file atomically, never
/// writing to a blank one) and returns the dump object as compact JSON text, members in
/// `expected.json` order.
///
/// Errors: those of [`Session::open`] (a file that is not a session is refused untouched).
pub fn dump(path: &Path, at: &[At], env: &crate::env::SessionEnv) -> Result<String> {
    let session = Session::open(path, None, None, OpenMode::Inspect, env)?;
    let info = match session.session_file() {
        Some(file) if file.exists() => session_info(file).ok(),
        _ => None,
    };
    Ok(dump_session(&session, at, info.map(|i| i.to_value())))
}

/// The dump of an open session; `info` is its listing entry (`null` when listing skips it).
pub fn dump_session(session: &Session, at: &[At], info: Option<serde_json::Value>) -> String {
    let tree = session.tree();
    let mut out = String::with_capacity(
        tree.entries()
            .iter()
            .map(|e| e.raw().len() * 3)
            .sum::<usize>()
            + 1024,
    );
    out.push_str("{\n\"header\": ");
    out.push_str(session.header().raw());
    out.push_str(",\n\"entries\": [");
    for (i, e) in tree.entries().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(e.raw());
    }
    out.push_str("],\n\"leaf\": ");
    push_json(&mut out, &session.leaf_id());
    out.push_str(",\n\"context\": ");
    out.push_str(&session.build_context().to_json());
    out.push_str(",\n\"contexts_at\": {");
    for (i, a) in at.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (key, leaf) = match a {
            At::Root => ("root".to_owned(), Some(Leaf::Root)),
            At::Id(id) => (id.clone(), tree.index_of(id).map(Leaf::At)),
            At::Nth(n) => match tree.entries().get(*n) {
                Some(e) => (e.id().to_owned(), tree.index_of(e.id()).map(Leaf::At)),
                None => (format!("#{n}"), None),
            },
        };
        push_json(&mut out, &key);
        out.push(':');
        match leaf {
            Some(leaf) => out.push_str(&build_session_context(tree, leaf).to_json()),
            None => push_json(&mut out, &format!("error: Entry {key} not found")),
        }
    }
    out.push_str("},\n\"tree\": ");
    write_tree(&mut out, tree);
    out.push_str(",\n\"info\": ");
    push_json(&mut out, &info);
    out.push_str(",\n\"name\": ");
    push_json(&mut out, &session.session_name());
    out.push_str(",\n\"labels\": {");
    // One member per labelled entry id (labels of ids that are no entry are not listed).
    let mut done = std::collections::HashSet::new();
    for e in tree.entries() {
        let Some(label) = tree.label(e.id()) else {
            continue;
        };
        if !done.insert(e.id()) {
            continue;
        }
        if done.len() > 1 {
            out.push(',');
        }
        push_json(&mut out, &e.id());
        out.push(':');
        out.push_str(&label.value);
    }
    out.push_str("}\n}\n");
    out
}

fn push_json<T: serde::Serialize + ?Sized>(out: &mut String, v: &T) {
    out.push_str(&pith_events::js::to_js_json(v).unwrap_or_else(|_| "null".into()));
}

/// Writes `getTree()` as pi shapes it (`[{entry, children, label?, labelTimestamp?}]`)
/// without recursion: trees nest two JSON levels per entry.
pub fn write_tree(out: &mut String, tree: &SessionTree) {
    let shape = tree.get_tree();
    // Each frame: the list being written and the position in it.
    let mut stack: Vec<(&[usize], usize, Option<usize>)> = vec![(&shape.roots, 0, None)];
    out.push('[');
    while let Some((list, pos, owner)) = stack.pop() {
        if let Some(&node) = list.get(pos) {
            stack.push((list, pos + 1, owner));
            if pos > 0 {
                out.push(',');
            }
            out.push_str("{\"entry\":");
            out.push_str(tree.entries()[node].raw());
            out.push_str(",\"children\":[");
            stack.push((&shape.children[node], 0, Some(node)));
            continue;
        }
        out.push(']');
        if let Some(node) = owner {
            if let Some(label) = tree.label(tree.entries()[node].id()) {
                out.push_str(",\"label\":");
                out.push_str(&label.value);
                if let Some(ts) = &label.timestamp {
                    out.push_str(",\"labelTimestamp\":");
                    out.push_str(ts);
                }
            }
            out.push('}');
        }
    }
}
