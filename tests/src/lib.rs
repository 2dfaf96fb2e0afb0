//! Test support shared by pith's cross-crate tests: where the conformance fixtures are (pi
//! 1.6.0's, `../shared/conformance-1.6`), a Rust port of their comparison rules
//! (`tools/lib/compare-core.mjs` there), the cases where pith's expected value is not pi's
//! (`../shared/spec/divergences.md`, [`policy`]), and [`sse_server`], a local HTTP server that
//! streams scripted model replies in small chunks, with the [`wire`] bodies and [`models`] it
//! serves. It depends on `pith-events` and `pith-llm` only, so every crate's tests can use it.

// Test support: a panic here is a failing test with its message, which is what we want.
#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod files;
pub mod models;
pub mod pi_oracle;
pub mod sse_server;
pub mod wire;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

/// The conformance folder: `$PITH_CONFORMANCE_DIR`, else `../shared/conformance-1.6` beside
/// the checkout (pi 1.6.0's fixtures). Panics (failing the test, never skipping it) when it is
/// missing.
pub fn conformance_dir() -> PathBuf {
    let dir = std::env::var_os("PITH_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("..")
                .join("shared")
                .join("conformance-1.6")
        });
    assert!(
        dir.join("README.md").is_file(),
        "conformance fixtures not found at {} (set PITH_CONFORMANCE_DIR)",
        dir.display()
    );
    dir
}

/// The cases `index.json` lists, as `(name, kind)`. Panics when the index cannot be read.
fn indexed_cases() -> Vec<(String, String)> {
    let index = read_json(&conformance_dir().join("index.json"));
    let cases: Vec<(String, String)> = index["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("index.json has no cases array"))
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
            (field("name"), field("kind"))
        })
        .collect();
    assert!(!cases.is_empty(), "index.json lists no cases");
    cases
}

/// Every session case `index.json` lists (all but listings), sorted by name. A listed case
/// whose `session.jsonl` or `expected.json` is missing fails the calling test: a fixture is
/// never skipped.
pub fn case_dirs() -> Vec<PathBuf> {
    let root = conformance_dir();
    let mut dirs: Vec<PathBuf> = indexed_cases()
        .into_iter()
        .filter(|(_, kind)| kind != "list")
        .map(|(name, _)| {
            let dir = root.join(&name);
            for file in ["session.jsonl", "expected.json"] {
                assert!(
                    dir.join(file).is_file(),
                    "conformance case {name}: {file} cannot be read"
                );
            }
            dir
        })
        .collect();
    dirs.sort();
    dirs
}

/// Every listing case (`_list-*`) `index.json` lists; one without `sessions/` or
/// `expected.json` fails the calling test.
pub fn list_dirs() -> Vec<PathBuf> {
    let root = conformance_dir();
    let mut dirs: Vec<PathBuf> = indexed_cases()
        .into_iter()
        .filter(|(_, kind)| kind == "list")
        .map(|(name, _)| {
            let dir = root.join(&name);
            assert!(
                dir.join("sessions").is_dir() && dir.join("expected.json").is_file(),
                "conformance listing {name} cannot be read"
            );
            dir
        })
        .collect();
    dirs.sort();
    dirs
}

/// Parses JSON of any depth (trees nest two levels per entry). Lone UTF-16 surrogate escapes,
/// which JavaScript strings hold and serde_json refuses, read as U+FFFD on both sides of a
/// comparison (divergences.md: `surrogates_fffd`).
pub fn parse_json(text: &str) -> Value {
    let text = pith_events::js::without_lone_surrogates(text);
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    Value::deserialize(serde_stacker::Deserializer::new(&mut de)).expect("valid JSON")
}

/// Runs `f` on a thread with a stack large enough for trees thousands of levels deep:
/// cloning, comparing and dropping a `serde_json::Value` recurse once per level.
pub fn with_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .stack_size(1 << 30)
            .spawn_scoped(scope, f)
            .expect("a thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> Value {
    parse_json(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// One difference: a JSON path and what differs there.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// `$.tree[0].children[1].entry.parentId` style path.
    pub path: String,
    /// What differs.
    pub message: String,
    /// Expected value (`None` when absent).
    pub expected: Option<Value>,
    /// Actual value (`None` when absent).
    pub actual: Option<Value>,
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| match v {
            None => "(absent)".to_owned(),
            Some(v) => {
                let s = v.to_string();
                if s.chars().count() > 160 {
                    format!("{}...", s.chars().take(157).collect::<String>())
                } else {
                    s
                }
            }
        };
        write!(
            f,
            "{}: {}\n    expected: {}\n    actual:   {}",
            self.path,
            self.message,
            show(&self.expected),
            show(&self.actual)
        )
    }
}

/// Options of [`compare`], as `compare.mjs` has them.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// Paths where only the JSON type is compared.
    pub volatile: HashSet<String>,
    /// Top-level members to skip (besides `_meta`).
    pub skip_top: HashSet<String>,
    /// Stop after this many differences (0 = 50).
    pub max: usize,
}

fn child_path(base: &str, key: &str) -> String {
    let ident = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        format!("{base}.{key}")
    } else {
        format!("{base}[{}]", Value::String(key.to_owned()))
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const INFO_KEYS: [&str; 7] = [
    "path",
    "id",
    "created",
    "modified",
    "messageCount",
    "firstMessage",
    "allMessagesText",
];

fn looks_like_info(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| INFO_KEYS.iter().all(|k| o.contains_key(*k)))
}

pub(crate) fn failure_prefix(v: &Value) -> Option<&'static str> {
    let s = v.as_str()?;
    if s.starts_with("error: ") {
        Some("error: ")
    } else if s.starts_with("hang: ") {
        Some("hang: ")
    } else {
        None
    }
}

pub(crate) fn basename(s: &str) -> &str {
    s.rsplit(['/', '\\']).next().unwrap_or(s)
}

fn instant(s: &str) -> Option<f64> {
    let t = pith_events::js::date_parse(s);
    (!t.is_nan()).then_some(t)
}

/// Semantic comparison of two JSON documents with the conformance rules: member order is
/// ignored, arrays are ordered, numbers compare by value, SessionInfo paths by basename and
/// dates as instants, `"error: …"` expectations need any `"error: …"` value.
pub fn compare(expected: &Value, actual: &Value, opts: &CompareOptions) -> Vec<Diff> {
    let max = if opts.max == 0 { 50 } else { opts.max };
    let mut diffs = Vec::new();
    let mut stack: Vec<(String, &Value, &Value, bool)> =
        vec![("$".into(), expected, actual, false)];
    let push = |diffs: &mut Vec<Diff>,
                path: &str,
                message: String,
                e: Option<&Value>,
                a: Option<&Value>| {
        diffs.push(Diff {
            path: path.to_owned(),
            message,
            expected: e.cloned(),
            actual: a.cloned(),
        });
    };
    while let Some((path, e, a, in_info)) = stack.pop() {
        if diffs.len() >= max {
            break;
        }
        if opts.volatile.contains(&path) {
            if json_type(e) != json_type(a) {
                push(
                    &mut diffs,
                    &path,
                    format!(
                        "volatile value: JSON type differs ({} vs {})",
                        json_type(e),
                        json_type(a)
                    ),
                    Some(e),
                    Some(a),
                );
            }
            continue;
        }
        if let Some(fp) = failure_prefix(e) {
            if failure_prefix(a) != Some(fp) {
                push(
                    &mut diffs,
                    &path,
                    format!("expected pi to fail ({}), got a value", fp.trim()),
                    Some(e),
                    Some(a),
                );
            }
            continue;
        }
        if json_type(e) != json_type(a) {
            push(
                &mut diffs,
                &path,
                format!(
                    "type differs: expected {}, actual {}",
                    json_type(e),
                    json_type(a)
                ),
                Some(e),
                Some(a),
            );
            continue;
        }
        match (e, a) {
            (Value::Number(x), Value::Number(y)) => {
                if x.as_f64() != y.as_f64() {
                    push(&mut diffs, &path, "number differs".into(), Some(e), Some(a));
                }
            }
            (Value::String(x), Value::String(y)) => {
                let differs = if in_info && path.ends_with(".path") {
                    basename(x) != basename(y)
                } else if in_info && (path.ends_with(".created") || path.ends_with(".modified")) {
                    match (instant(x), instant(y)) {
                        (Some(i), Some(j)) => i != j,
                        _ => x != y,
                    }
                } else {
                    x != y
                };
                if differs {
                    push(&mut diffs, &path, "string differs".into(), Some(e), Some(a));
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    push(
                        &mut diffs,
                        &path,
                        format!(
                            "array length differs: expected {}, actual {}",
                            x.len(),
                            y.len()
                        ),
                        None,
                        None,
                    );
                }
                for i in (0..x.len().min(y.len())).rev() {
                    stack.push((format!("{path}[{i}]"), &x[i], &y[i], false));
                }
            }
            (Value::Object(x), Value::Object(y)) => {
                let is_info = looks_like_info(e) || looks_like_info(a);
                let top = path == "$";
                let skip = |k: &str| top && (k == "_meta" || opts.skip_top.contains(k));
                let mut children = Vec::new();
                let keys: Vec<&String> = x
                    .keys()
                    .chain(y.keys().filter(|k| !x.contains_key(*k)))
                    .collect();
                for k in keys {
                    if skip(k) {
                        continue;
                    }
                    let p = child_path(&path, k);
                    match (x.get(k), y.get(k)) {
                        (Some(ev), Some(av)) => children.push((p, ev, av, is_info)),
                        _ if opts.volatile.contains(&p) => {}
                        (Some(ev), None) => push(
                            &mut diffs,
                            &p,
                            "member missing in actual".into(),
                            Some(ev),
                            None,
                        ),
                        (None, Some(av)) => push(
                            &mut diffs,
                            &p,
                            "unexpected member in actual".into(),
                            None,
                            Some(av),
                        ),
                        (None, None) => {}
                    }
                }
                stack.extend(children.into_iter().rev());
            }
            _ => {
                if e != a {
                    push(
                        &mut diffs,
                        &path,
                        format!("{} differs", json_type(e)),
                        Some(e),
                        Some(a),
                    );
                }
            }
        }
    }
    diffs
}

/// actual id → expected id by position in `entries` (for `_meta.random_ids` cases).
pub fn positional_id_map(expected: &Value, actual: &Value) -> HashMap<String, String> {
    let mut map = HashMap::new();
    let (Some(e), Some(a)) = (expected["entries"].as_array(), actual["entries"].as_array()) else {
        return map;
    };
    for (x, y) in e.iter().zip(a) {
        if let (Some(ei), Some(ai)) = (x["id"].as_str(), y["id"].as_str())
            && ei != ai
            && !map.contains_key(ai)
        {
            map.insert(ai.to_owned(), ei.to_owned());
        }
    }
    map
}

/// Renames every string value and object key found in `map`, like `mapIds`.
pub fn map_ids(value: &mut Value, map: &HashMap<String, String>) {
    if map.is_empty() {
        return;
    }
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if let Some(new) = map.get(s.as_str()) {
                    *s = new.clone();
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(obj) => {
                if obj.keys().any(|k| map.contains_key(k)) {
                    let old = std::mem::take(obj);
                    *obj = old
                        .into_iter()
                        .map(|(k, v)| (map.get(&k).cloned().unwrap_or(k), v))
                        .collect::<Map<_, _>>();
                }
                stack.extend(obj.values_mut());
            }
            _ => {}
        }
    }
}

/// Compares a case's `expected.json` with an actual dump, applying `_meta` (volatile paths,
/// random ids) as `compare.mjs` does. `skip` names top-level members left out.
pub fn compare_case(expected: &Value, actual: &Value, skip: &[&str]) -> Vec<Diff> {
    let meta = &expected["_meta"];
    let volatile: HashSet<String> = meta["volatile"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let renamed;
    let actual = if meta["random_ids"].as_bool() == Some(true) {
        let mut copy = actual.clone();
        let map = positional_id_map(expected, &copy);
        map_ids(&mut copy, &map);
        renamed = copy;
        &renamed
    } else {
        actual
    };
    let opts = CompareOptions {
        volatile,
        skip_top: skip.iter().map(|s| s.to_string()).collect(),
        max: 20,
    };
    compare(expected, actual, &opts)
}

/// The `--at` arguments that reproduce a case's `contexts_at` keys: `root` stays, an id that
/// is an entry of the expected file is given by position (`#i`) so random-id cases work.
pub fn at_args(expected: &Value) -> Vec<String> {
    let Some(keys) = expected["contexts_at"].as_object() else {
        return Vec::new();
    };
    let entries = expected["entries"].as_array().cloned().unwrap_or_default();
    keys.keys()
        .map(|k| {
            if k == "root" {
                return k.clone();
            }
            match entries.iter().position(|e| e["id"].as_str() == Some(k)) {
                Some(i) if expected["_meta"]["random_ids"].as_bool() == Some(true) => {
                    format!("#{i}")
                }
                _ => k.clone(),
            }
        })
        .collect()
}

mod policy;
pub use policy::{
    Policy, check_case, check_listing, expected_for_pith, listed_by_pi_only, listed_by_pith_only,
    policy, refusal, tree_shows_each_line_once,
};
