//! The JSON object `pith session dump` prints: the members of a conformance `expected.json`
//! (`../shared/conformance-1.6/README.md`), computed the way pi 1.6.0 computes them.

use std::io::Write;

use crate::context::build_session_context;
use crate::session::Session;
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
    type Err = crate::Error;

    /// `root`, `#N` or an entry id.
    fn from_str(s: &str) -> Result<At, crate::Error> {
        if s == "root" {
            return Ok(At::Root);
        }
        match s.strip_prefix('#') {
            Some(n) => n.parse().map(At::Nth).map_err(|_| {
                crate::Error::InvalidArgument(format!("'{s}': expected #N with N a number"))
            }),
            None if s.is_empty() => Err(crate::Error::InvalidArgument("an empty --at".into())),
            None => Ok(At::Id(s.to_owned())),
        }
    }
}

/// The dump of an open session; `info` is its listing entry (`null` when listing skips it).
pub fn dump_session(session: &Session, at: &[At], info: Option<serde_json::Value>) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_dump(&mut out, session, at, info);
    String::from_utf8(out).unwrap_or_default()
}

/// Streams the dump of an open session to `out` (it holds every entry twice, in `entries`
/// and in `tree`, so it is never built in memory by the CLI).
///
/// Errors: those of `out`.
pub fn write_dump(
    out: &mut impl Write,
    session: &Session,
    at: &[At],
    info: Option<serde_json::Value>,
) -> std::io::Result<()> {
    let tree = session.tree();
    out.write_all("{\n\"header\": ".as_bytes())?;
    out.write_all(crate::scan::js_compatible(session.header().raw()).as_bytes())?;
    out.write_all(",\n\"entries\": [".as_bytes())?;
    for (i, e) in tree.entries().iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        out.write_all(e.js_raw().as_bytes())?;
    }
    out.write_all("],\n\"leaf\": ".as_bytes())?;
    push_json(out, &session.leaf_id())?;
    out.write_all(",\n\"context\": ".as_bytes())?;
    out.write_all(session.build_context().to_json().as_bytes())?;
    out.write_all(",\n\"contexts_at\": {".as_bytes())?;
    let mut keys = std::collections::HashSet::new();
    for a in at {
        let (key, leaf) = match a {
            At::Root => ("root".to_owned(), Some(Leaf::Root)),
            At::Id(id) => (id.clone(), tree.index_of(id).map(Leaf::At)),
            At::Nth(n) => match tree.entries().get(*n) {
                Some(e) => (e.id().to_owned(), tree.index_of(e.id()).map(Leaf::At)),
                None => (format!("#{n}"), None),
            },
        };
        // One member per key, as a JavaScript object holds it.
        if !keys.insert(key.clone()) {
            continue;
        }
        if keys.len() > 1 {
            out.write_all(b",")?;
        }
        push_json(out, &key)?;
        out.write_all(b":")?;
        match leaf {
            Some(leaf) => out.write_all(build_session_context(tree, leaf).to_json().as_bytes())?,
            None => push_json(out, &format!("error: Entry {key} not found"))?,
        }
    }
    out.write_all("},\n\"tree\": ".as_bytes())?;
    write_tree(out, tree)?;
    out.write_all(",\n\"info\": ".as_bytes())?;
    push_json(out, &info)?;
    out.write_all(",\n\"name\": ".as_bytes())?;
    push_json(out, &session.session_name())?;
    out.write_all(",\n\"labels\": {".as_bytes())?;
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
            out.write_all(b",")?;
        }
        push_json(out, &e.id())?;
        out.write_all(b":")?;
        out.write_all(label.value.as_bytes())?;
    }
    out.write_all("}\n}\n".as_bytes())?;
    Ok(())
}

fn push_json<T: serde::Serialize + ?Sized>(out: &mut impl Write, v: &T) -> std::io::Result<()> {
    out.write_all(
        pith_events::js::to_js_json(v)
            .unwrap_or_else(|_| "null".into())
            .as_bytes(),
    )
}

/// Writes `getTree()` as pi shapes it (`[{entry, children, label?, labelTimestamp?}]`)
/// without recursion: trees nest two JSON levels per entry.
///
/// Errors: those of `out`.
pub fn write_tree(out: &mut impl Write, tree: &SessionTree) -> std::io::Result<()> {
    let shape = tree.get_tree();
    // Each frame: the list being written and the position in it.
    let mut stack: Vec<(&[usize], usize, Option<usize>)> = vec![(&shape.roots, 0, None)];
    out.write_all(b"[")?;
    while let Some((list, pos, owner)) = stack.pop() {
        if let Some(&node) = list.get(pos) {
            stack.push((list, pos + 1, owner));
            if pos > 0 {
                out.write_all(b",")?;
            }
            out.write_all("{\"entry\":".as_bytes())?;
            out.write_all(tree.entries()[node].js_raw().as_bytes())?;
            out.write_all(",\"children\":[".as_bytes())?;
            stack.push((&shape.children[node], 0, Some(node)));
            continue;
        }
        out.write_all(b"]")?;
        if let Some(node) = owner {
            if let Some(label) = tree.label(tree.entries()[node].id()) {
                out.write_all(",\"label\":".as_bytes())?;
                out.write_all(label.value.as_bytes())?;
                if let Some(ts) = &label.timestamp {
                    out.write_all(",\"labelTimestamp\":".as_bytes())?;
                    out.write_all(ts.as_bytes())?;
                }
            }
            out.write_all(b"}")?;
        }
    }
    Ok(())
}
