//! Where pith's expected value is not pi's: the rules of `../shared/spec/divergences.md`
//! ("checked by"), applied to a case's comparison and to the `_list-*` listings, so the library
//! and `pith session dump` harnesses check the same thing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{basename, compare_case, failure_prefix, read_json};

/// How a case is checked where divergences.md gives pith another expected value than pi's
/// (`tools/divergence-policy.json` of the fixtures names the same rules).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Top-level members not compared with pi's values.
    pub skip: BTreeSet<&'static str>,
    /// `expect_ok`: pi refuses the file, pith reads it (a leading BOM).
    pub expect_ok: bool,
    /// `skip`: nothing of pi's answer applies (pi keeps pseudo-entries pith skips); pith must
    /// still open the file.
    pub skip_all: bool,
    /// `tree_each_line_once`: pith's tree shows every entry of the file exactly once.
    pub tree_each_line_once: bool,
    /// `info_listed`: pi's listing drops the file, pith lists it (`info` is an object).
    pub info_listed: bool,
    /// `info_name`: as `info_listed`, and the listed name is pith's session name.
    pub info_name: bool,
}

/// The policy of one case (spec: divergences.md, "checked by"). Rules follow the reason, not
/// only the public case names, so the hidden cases of the same kinds are covered.
pub fn policy(case: &str, expected: &Value) -> Policy {
    let mut p = Policy::default();
    let refused = |v: &Value| failure_prefix(v) == Some("error: ");
    match case {
        "corrupt-duplicate-id" | "nasty-self-parent-and-skew" => {
            p.skip.insert("tree");
            p.tree_each_line_once = true;
        }
        "nasty-scalar-lines" => p.skip_all = true,
        "nasty-numeric-session-name" => p.info_name = true,
        _ => {}
    }
    // A leading BOM: pi 1.6.0 refuses the file, pith reads it without the BOM.
    if case.starts_with("corrupt-bom") && refused(&expected["header"]) {
        p.expect_ok = true;
    }
    // `content: null` on a user or assistant message: pi's listing drops the file.
    if expected["_meta"]["profile"] == "null-content" && expected["info"].is_null() {
        p.info_listed = true;
    }
    if p.info_name {
        p.skip.insert("info");
        if refused(&expected["name"]) {
            p.skip.insert("name");
        }
    }
    if p.info_listed {
        p.skip.insert("info");
    }
    p
}

/// The value a harness compares for a file pith refused to open: every member pi reported is
/// an error, as pith failed at open, except `info`: what pith's listing reported for the
/// file (`None`: left out, `null`).
pub fn refusal(expected: &Value, why: &str, listed: Option<Value>) -> Value {
    let mut out = Map::new();
    if let Some(members) = expected.as_object() {
        for key in members.keys().filter(|k| *k != "_meta") {
            out.insert(key.clone(), Value::String(format!("error: {why}")));
        }
    }
    out.insert("info".into(), listed.unwrap_or(Value::Null));
    if expected["info"]
        .as_str()
        .is_some_and(|s| s.starts_with("error: "))
        && out["info"].is_null()
    {
        // pi's oracle reports the listing of a refused file as an error too.
        out.insert("info".into(), Value::String(format!("error: {why}")));
    }
    Value::Object(out)
}

/// Checks a case: the semantic comparison with `expected` ([`expected_for_pith`]) under the
/// case's [`policy`], and the policy's own requirements. `actual` is pith's dump (or a
/// [`refusal`]).
/// Returns what differs, one line each (empty when the case passes).
pub fn check_case(case_dir: &Path, expected: &Value, actual: &Value) -> Vec<String> {
    let refused = |v: &Value| failure_prefix(v) == Some("error: ");
    let name = case_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let p = policy(&name, expected);
    let opened = actual["header"].is_object() && actual["entries"].is_array();
    let mut problems = Vec::new();
    if p.expect_ok || p.skip_all {
        if !opened {
            problems.push(format!(
                "pith must open this file, got {}",
                actual["header"]
            ));
        }
        return problems;
    }
    let mut skip: Vec<&str> = p.skip.iter().copied().collect();
    if refused(&expected["header"]) && refused(&actual["header"]) {
        // Both refuse the file. pith never lists what it cannot open (divergences.md: a
        // CR-only file, which pi's listing shows), whatever pi's listing says.
        skip.push("info");
        if actual["info"].is_object() {
            problems.push("$.info: pith lists a file it refuses to open".into());
        }
    }
    problems.extend(
        compare_case(expected, actual, &skip)
            .iter()
            .map(ToString::to_string),
    );
    if p.tree_each_line_once && !tree_shows_each_line_once(actual) {
        problems.push("$.tree: every entry must appear exactly once".into());
    }
    if p.info_listed || p.info_name {
        if !actual["info"].is_object() {
            problems.push(format!(
                "$.info: pith lists this file, got {}",
                actual["info"]
            ));
        } else if p.info_name
            && actual["info"].get("name") != actual.get("name").filter(|n| !n.is_null())
        {
            problems.push(format!(
                "$.info.name: {} is not the session name {}",
                actual["info"]["name"], actual["name"]
            ));
        }
    }
    problems
}

/// What pith must answer for a case: its `expected.json`, except for an `expect_ok` case
/// (pi refuses a file pith reads) whose fixtures hold the `<case>-pith` twin: that case's
/// `expected.json`, pi's answer for the same session without the leading BOM.
pub fn expected_for_pith(case_dir: &Path) -> Value {
    let expected = read_json(&case_dir.join("expected.json"));
    let name = case_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if policy(&name, &expected).expect_ok
        && let Some(twin) = twin_case(case_dir)
    {
        return read_json(&twin.join("expected.json"));
    }
    expected
}

/// The `<case>-pith` folder whose input is this case's file without its leading BOM (or the
/// same file), if the fixtures hold one.
fn twin_case(case_dir: &Path) -> Option<PathBuf> {
    let name = case_dir.file_name()?.to_string_lossy().into_owned();
    let twin = case_dir.with_file_name(format!("{name}-pith"));
    let ours = std::fs::read(case_dir.join("session.jsonl")).ok()?;
    let theirs = std::fs::read(twin.join("session.jsonl")).ok()?;
    let stripped = ours
        .strip_prefix(b"\xef\xbb\xbf".as_slice())
        .unwrap_or(&ours);
    (theirs == ours || theirs == stripped).then_some(twin)
}

/// Whether `tree` holds every element of `entries` exactly once (as a multiset of values).
pub fn tree_shows_each_line_once(dump: &Value) -> bool {
    let (Some(entries), Some(roots)) = (dump["entries"].as_array(), dump["tree"].as_array()) else {
        return false;
    };
    let mut shown: Vec<String> = Vec::new();
    let mut stack: Vec<&Value> = roots.iter().collect();
    while let Some(node) = stack.pop() {
        shown.push(node["entry"].to_string());
        if let Some(children) = node["children"].as_array() {
            stack.extend(children);
        }
    }
    let mut all: Vec<String> = entries.iter().map(Value::to_string).collect();
    shown.sort();
    all.sort();
    shown == all
}

/// The files of a listing directory that pi 1.6.0 leaves out and pith lists
/// (divergences.md: a leading BOM, a non-string session name, `content: null` on a user or
/// assistant message — `must_also_list`), by file name.
pub fn listed_by_pith_only(sessions: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let entries =
        std::fs::read_dir(sessions).unwrap_or_else(|e| panic!("{}: {e}", sessions.display()));
    for e in entries {
        let path = e
            .unwrap_or_else(|e| panic!("{}: {e}", sessions.display()))
            .path();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let hidden_by_pi = text.starts_with('\u{feff}')
            || text.lines().any(|line| {
                let Ok(v) =
                    serde_json::from_str::<Value>(&pith_events::js::without_lone_surrogates(line))
                else {
                    return false;
                };
                let bad_name = v["type"] == "session_info"
                    && v.get("name")
                        .is_some_and(|n| !n.is_string() && !n.is_null());
                let null_content = v["type"] == "message"
                    && matches!(v["message"]["role"].as_str(), Some("user" | "assistant"))
                    && v["message"].get("content").is_some_and(Value::is_null);
                bad_name || null_content
            });
        if hidden_by_pi {
            out.insert(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    out
}

/// The files of a listing directory that pith refuses although pi's listing shows them:
/// CR-only line endings (`must_not_list`), by file name.
pub fn listed_by_pi_only(sessions: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let entries =
        std::fs::read_dir(sessions).unwrap_or_else(|e| panic!("{}: {e}", sessions.display()));
    for e in entries {
        let path = e
            .unwrap_or_else(|e| panic!("{}: {e}", sessions.display()))
            .path();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if bytes.contains(&b'\r') && !bytes.contains(&b'\n') {
            out.insert(
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    out
}

/// Checks a `_list-*` case: pith's listing (`SessionInfo` values) against pi's under the
/// listing rules of divergences.md. Returns what differs (empty when it passes).
pub fn check_listing(list_dir: &Path, expected: &Value, actual: &[Value]) -> Vec<String> {
    let sessions = list_dir.join("sessions");
    let extra = listed_by_pith_only(&sessions);
    let missing = listed_by_pi_only(&sessions);
    let file = |v: &Value| basename(v["path"].as_str().unwrap_or("")).to_owned();
    let mut problems = Vec::new();
    for name in &extra {
        if !actual.iter().any(|v| file(v) == *name) {
            problems.push(format!("{name}: pith must list it (divergences.md)"));
        }
    }
    for v in actual {
        if missing.contains(&file(v)) {
            problems.push(format!(
                "{}: pith must not list it (divergences.md)",
                file(v)
            ));
        }
    }
    let expected_list: Vec<Value> = expected["list"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|v| !missing.contains(&file(v)))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let actual_list: Vec<Value> = actual
        .iter()
        .filter(|v| !extra.contains(&file(v)))
        .cloned()
        .collect();
    let mut wanted = expected.clone();
    wanted["list"] = Value::Array(expected_list);
    problems.extend(
        compare_case(&wanted, &serde_json::json!({ "list": actual_list }), &[])
            .iter()
            .map(ToString::to_string),
    );
    problems
}
