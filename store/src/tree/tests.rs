use super::*;

fn tree_of(lines: &[&str]) -> (SessionTree, Vec<Warning>) {
    let entries = lines
        .iter()
        .enumerate()
        .map(|(i, l)| Entry::parse(l, i + 2).expect("entry"))
        .collect();
    SessionTree::new(entries)
}

fn ids(tree: &SessionTree, idx: &[usize]) -> Vec<String> {
    idx.iter()
        .map(|&i| tree.entries()[i].id().to_owned())
        .collect()
}

#[test]
fn children_sort_by_timestamp_and_orphans_become_roots() {
    // tree-and-context.md §6.3 example: late(09s), early(02s), same(02s) → early, same, late.
    let (t, w) = tree_of(&[
        r#"{"type":"message","id":"r","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user"}}"#,
        r#"{"type":"message","id":"late","parentId":"r","timestamp":"2025-01-01T00:00:09.000Z","message":{"role":"user"}}"#,
        r#"{"type":"message","id":"early","parentId":"r","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user"}}"#,
        r#"{"type":"message","id":"same","parentId":"r","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user"}}"#,
        r#"{"type":"message","id":"orphan","parentId":"missing","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user"}}"#,
    ]);
    assert!(w.is_empty());
    let tree = t.get_tree();
    assert_eq!(ids(&t, &tree.roots), ["r", "orphan"]);
    assert_eq!(ids(&t, &tree.children[0]), ["early", "same", "late"]);
    assert_eq!(t.leaf_id(), Some("orphan"));
}

#[test]
fn cycles_are_cut_and_reported() {
    let (t, w) = tree_of(&[
        r#"{"type":"custom","id":"a","parentId":"c","timestamp":"t"}"#,
        r#"{"type":"custom","id":"b","parentId":"a","timestamp":"t"}"#,
        r#"{"type":"custom","id":"c","parentId":"b","timestamp":"t"}"#,
        r#"{"type":"custom","id":"self","parentId":"self","timestamp":"t"}"#,
    ]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].problem.contains("parent cycle"));
    // From the leaf c: c → b → a → (c again) stops; root first.
    let path: Vec<&str> = t.get_branch(Some("c")).iter().map(|e| e.id()).collect();
    assert_eq!(path, ["a", "b", "c"]);
    let tree = t.get_tree();
    assert_eq!(ids(&t, &tree.roots), ["a", "self"]);
    assert_eq!(ids(&t, &tree.children[0]), ["b"]);
    assert_eq!(ids(&t, &tree.children[1]), ["c"]);
}

#[test]
fn duplicate_ids_resolve_to_the_last_and_appear_once() {
    let (t, _) = tree_of(&[
        r#"{"type":"custom","id":"r","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}"#,
        r#"{"type":"custom","id":"d","parentId":"r","timestamp":"2025-01-01T00:00:01.000Z","data":1}"#,
        r#"{"type":"custom","id":"d","parentId":"r","timestamp":"2025-01-01T00:00:02.000Z","data":2}"#,
        r#"{"type":"custom","id":"k","parentId":"d","timestamp":"2025-01-01T00:00:03.000Z"}"#,
    ]);
    assert!(t.get("d").is_some_and(|e| e.raw().contains("\"data\":2")));
    let tree = t.get_tree();
    assert_eq!(tree.children[0], [1, 2]);
    assert_eq!(tree.children[2], [3]);
    assert!(tree.children[1].is_empty());
    assert_eq!(t.get_children("r").len(), 1, "byId holds one entry per id");
}

#[test]
fn labels_replay_in_file_order_and_names_take_the_latest_string() {
    let (t, _) = tree_of(&[
        r#"{"type":"custom","id":"x","parentId":null,"timestamp":"t0"}"#,
        r#"{"type":"label","id":"l1","parentId":"x","timestamp":"t1","targetId":"x","label":"one"}"#,
        r#"{"type":"label","id":"l2","parentId":"x","timestamp":"t2","targetId":"ghost","label":"g"}"#,
        r#"{"type":"label","id":"l3","parentId":"x","timestamp":"t3","targetId":"x"}"#,
        r#"{"type":"label","id":"l4","parentId":"x","timestamp":"t4","targetId":"x","label":"two"}"#,
        r#"{"type":"session_info","id":"n1","parentId":"x","timestamp":"t5","name":"  My session "}"#,
        r#"{"type":"session_info","id":"n2","parentId":"x","timestamp":"t6","name":42}"#,
    ]);
    let labels: Vec<(&str, String)> = t.labels().map(|(k, v)| (k, v.text())).collect();
    assert_eq!(labels, [("ghost", "g".to_owned()), ("x", "two".to_owned())]);
    assert_eq!(
        t.label("x").and_then(|l| l.timestamp.clone()).as_deref(),
        Some("\"t4\"")
    );
    assert_eq!(t.session_name().as_deref(), Some("My session"));
}

#[test]
fn v8_sort_with_unparseable_timestamps() {
    // NaN compares as equal (V8 maps a NaN comparator result to 0); V8's run detection and
    // binary insertion decide. Run: [NaN, 5] (ascending, 0 does not break it), 1 < 5 breaks.
    // Insert 1: mid=1 → 1<5 → right=1, mid=0 → 1 vs NaN = 0 → left=1: [NaN,1,5].
    // Insert 3: mid=1 → 3 vs 1 → left=2, mid=2 → 3<5 → [NaN,1,3,5].
    let ms = [f64::NAN, 5.0, 1.0, 3.0];
    let mut items = vec![0, 1, 2, 3];
    sort_like_v8(&mut items, &ms);
    assert_eq!(items, [0, 2, 3, 1]);
    // The reviewer's case (verified against pi): children 5s, 1s, NaN, 3s → c1 c3 c5 cx.
    // Descending run [5, 1] reversed to [1, 5]; NaN vs 5 = 0 ends it... order(NaN,1)=0 ≥ 0.
    let ms = [5.0, 1.0, f64::NAN, 3.0];
    let mut items = vec![0, 1, 2, 3];
    sort_like_v8(&mut items, &ms);
    assert_eq!(items, [1, 3, 0, 2]);
}
