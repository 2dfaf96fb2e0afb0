//! Any bytes as a session file: loading never panics, and what loads answers every query
//! (context at every entry and at the root, the tree, the dump) without panicking or looping.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pith_store::load::{Loaded, load_from};
use pith_store::{Leaf, SessionTree, build_session_context};

fuzz_target!(|data: &[u8]| {
    let mut n = 0u64;
    let mut ids = || {
        n += 1;
        format!("{n:08x}")
    };
    let Ok(Loaded::Log(log)) = load_from(data, std::path::Path::new("fuzz.jsonl"), &mut ids) else { return };
    let (tree, _) = SessionTree::new(log.entries);
    for i in 0..tree.entries().len() {
        let ctx = build_session_context(&tree, Leaf::At(i));
        let _ = ctx.to_json();
        let _ = tree.path_to(i);
    }
    let _ = build_session_context(&tree, Leaf::Root).to_json();
    let shape = tree.get_tree();
    let shown = shape.roots.len() + shape.children.iter().map(Vec::len).sum::<usize>();
    assert_eq!(shown, tree.entries().len(), "the tree shows every entry exactly once");
    let _ = tree.session_name();
    let mut out = Vec::new();
    pith_store::dump::write_tree(&mut out, &tree).expect("writing to a Vec");
    let text = String::from_utf8(out).expect("the tree is UTF-8");
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    // Deep trees: check validity without building a deep value.
    let _ = serde::de::IgnoredAny::deserialize(&mut de).expect("the tree is JSON");
});

use serde::Deserialize;
