//! pith's grep, find and ls against pi 1.6.0's: the tree of `fixtures/search/tree.json` is
//! built in a temporary directory, every call of `cases.json` runs through pith's tool, and
//! the result must equal what pi's own tool returned for the same call on the same tree
//! (`expected.json`, written by `scripts/gen-search-fixtures`).

use std::path::Path;
use std::sync::Arc;

use pith_tests::files::{dir, write};
use pith_tools::tool::{Tool, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/search");

fn load(name: &str) -> Value {
    let path = Path::new(FIXTURES).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `{i}` / `{i:N}` in tree names and texts.
fn fill(template: &str, i: u64) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{i") {
        out.push_str(&rest[..start]);
        let end = start
            + rest[start..]
                .find('}')
                .unwrap_or_else(|| panic!("bad {template}"));
        let width: usize = rest[start + 2..end].strip_prefix(':').map_or(0, |w| {
            w.parse().unwrap_or_else(|e| panic!("{template}: {e}"))
        });
        out.push_str(&format!("{i:0width$}"));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

fn part_bytes(part: &Value) -> Vec<u8> {
    use base64::Engine;
    if let Some(text) = part["text"].as_str() {
        return text.as_bytes().to_vec();
    }
    if let Some(b64) = part["base64"].as_str() {
        return base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap_or_else(|e| panic!("base64: {e}"));
    }
    let repeat = &part["repeat"];
    let text = repeat["text"].as_str().unwrap_or_else(|| panic!("{part}"));
    let count = repeat["count"].as_u64().unwrap_or_else(|| panic!("{part}"));
    (1..=count)
        .flat_map(|i| fill(text, i).into_bytes())
        .collect()
}

fn build_tree(root: &Path) {
    let tree = load("tree.json");
    for entry in tree["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("entries"))
    {
        if let Some(many) = entry.get("many") {
            let d = root.join(many["dir"].as_str().unwrap_or_default());
            let name = many["name"].as_str().unwrap_or_default();
            let text = many["text"].as_str().unwrap_or_default();
            for i in 1..=many["count"].as_u64().unwrap_or(0) {
                write(&d.join(fill(name, i)), fill(text, i));
            }
            continue;
        }
        let path = root.join(entry["path"].as_str().unwrap_or_else(|| panic!("{entry}")));
        if entry["dir"].as_bool() == Some(true) {
            std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir: {e}"));
        } else if let Some(target) = entry["symlink"].as_str() {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
            }
            std::os::unix::fs::symlink(target, &path).unwrap_or_else(|e| panic!("symlink: {e}"));
        } else {
            let parts = entry["parts"]
                .as_array()
                .unwrap_or_else(|| panic!("{entry}"));
            write(
                &path,
                parts.iter().flat_map(part_bytes).collect::<Vec<u8>>(),
            );
        }
    }
}

fn substitute(value: &Value, root: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("$ROOT", root)),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, root)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn normalize(value: Value, root: &str) -> Value {
    let text = value.to_string().replace(root, "$ROOT");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"))
}

async fn run(tool: &Arc<dyn Tool>, cwd: &Path, args: Value) -> Value {
    let ctx = ToolContext::new(cwd, CancellationToken::new(), "call_1");
    match tool.run(args, ctx).await {
        Ok(out) => json!({"ok": {"content": out.content, "details": out.details}}),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// The parts of a result that do not depend on which results came first: details, the
/// notice line and the number of lines.
fn shape(result: &Value) -> Value {
    let text = result["ok"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let (body, notice) = text.rsplit_once("\n\n").unwrap_or((text, ""));
    json!({
        "details": result["ok"]["details"],
        "notice": notice,
        "lines": body.split('\n').count(),
    })
}

#[tokio::test]
async fn grep_find_ls_equal_pi() {
    let tmp = dir();
    let root = std::fs::canonicalize(tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    build_tree(&root);
    let root_text = root.display().to_string();
    let cases = load("cases.json");
    let expected = load("expected.json");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (case, want) in cases["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("cases"))
        .iter()
        .zip(
            expected["results"]
                .as_array()
                .unwrap_or_else(|| panic!("results")),
        )
    {
        assert_eq!(
            case["name"], want["name"],
            "cases.json and expected.json differ"
        );
        let name = case["tool"].as_str().unwrap_or_default();
        let tool = pith_tools::tool_by_name(name).unwrap_or_else(|| panic!("no tool {name}"));
        let cwd = root.join(case["cwd"].as_str().unwrap_or_default());
        let got = normalize(
            run(&tool, &cwd, substitute(&case["args"], &root_text)).await,
            &root_text,
        );
        let mut want = want.clone();
        if let Some(map) = want.as_object_mut() {
            map.remove("name");
        }
        let equal = match case["compare"].as_str() {
            Some("shape") => shape(&got) == shape(&want),
            _ => got == want,
        };
        if !equal {
            failures.push(format!("{}:\n  pith: {got}\n  pi:   {want}", case["name"]));
        }
        checked += 1;
    }
    assert_eq!(checked, 87, "every case ran");
    assert!(
        failures.is_empty(),
        "{} of {checked} cases differ from pi 1.6.0:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn specs_equal_pi() {
    let expected = load("expected.json");
    for name in ["grep", "find", "ls"] {
        let spec = pith_tools::tool_by_name(name)
            .unwrap_or_else(|| panic!("no tool {name}"))
            .spec();
        let want = &expected["specs"][name];
        assert_eq!(spec.name, want["name"].as_str().unwrap_or_default());
        assert_eq!(
            spec.description,
            want["description"].as_str().unwrap_or_default()
        );
        assert_eq!(spec.parameters, want["parameters"], "{name}");
        assert_eq!(
            pith_tools::prompt_snippet(name),
            want["promptSnippet"].as_str(),
            "{name}"
        );
        assert!(pith_tools::prompt_guidelines(name).is_empty());
    }
}

/// Where pi's order is not deterministic (fd prints over 1000 results as it finds them), pith
/// keeps the first results in path order.
#[tokio::test]
async fn over_the_limit_pith_keeps_the_first_in_path_order() {
    let tmp = dir();
    for i in 1..=30 {
        write(&tmp.path().join(format!("m/f{i:02}.txt")), "needle\n");
    }
    write(&tmp.path().join("m/sub/a.txt"), "needle\n");
    let find = pith_tools::tool_by_name("find").unwrap_or_else(|| panic!("find"));
    let got = run(&find, tmp.path(), json!({"pattern": "*.txt", "limit": 3})).await;
    assert_eq!(
        got["ok"]["content"][0]["text"],
        "m/f01.txt\nm/f02.txt\nm/f03.txt\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]"
    );
    // A directory's entries come right after it, before the next sibling of the directory.
    let got = run(&find, tmp.path(), json!({"pattern": "m/**", "limit": 100})).await;
    let text = got["ok"]["content"][0]["text"].as_str().unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 32);
    assert_eq!(&lines[29..], ["m/f30.txt", "m/sub/", "m/sub/a.txt"]);
}

#[tokio::test]
async fn an_abort_stops_a_search() {
    let tmp = dir();
    write(&tmp.path().join("a.txt"), "needle\n");
    let abort = CancellationToken::new();
    abort.cancel();
    for (name, args) in [
        ("grep", json!({"pattern": "needle"})),
        ("find", json!({"pattern": "*"})),
        ("ls", json!({})),
    ] {
        let tool = pith_tools::tool_by_name(name).unwrap_or_else(|| panic!("{name}"));
        let ctx = ToolContext::new(tmp.path(), abort.clone(), "call_1");
        assert_eq!(
            tool.run(args, ctx).await,
            Err(pith_tools::ToolError::Aborted),
            "{name}"
        );
    }
}
