//! `pith --export FILE [OUT]`: the HTML page's content (every entry kind, every branch, the
//! active path marked, everything escaped), the file it is written to, and the page as a real
//! browser renders it after its script ran (Debian's chromium, headless).

mod browser;
mod fixture;

use std::fs;

use fixture::{PNG, class_of, export_fixture, fixture, index_of, pith, write_session};
use pith_tests::case_dirs;
use regex::Regex;

#[test]
fn the_page_shows_every_entry_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, html, _) = export_fixture(tmp.path());
    for needle in [
        // header: id, name, cwd, created, totals
        "sess-1",
        "Demo &lt;export&gt; &amp; more",
        "/home/dev/proj",
        "2025-03-05T10:00:00.000Z",
        "anthropic/claude-test",
        "Cost</dt><dd>$3.750",
        "↑6.0k ↓1.5k",
        "2 user, 5 assistant, 2 tool results, 2 custom, 1 compactions, 1 branch summaries",
        // messages of every kind
        "USER-PROMPT",
        r#"<details class="thinking" open><summary>Thinking</summary><div class="think-text">THINKING-TEXT</div>"#,
        "MAIN-ANSWER with <code>code</code>",
        "echo &#39;&lt;/script&gt;&#39; BASH-ARG",
        "<dt>timeout</dt><dd><code class=\"arg-json\">30</code>",
        "TOOL-OUTPUT &lt;/pre&gt;&lt;/b&gt;",
        &format!(r#"src="data:image/png;base64,{PNG}""#),
        "[read: ~/proj/missing.rs]",
        r#"<span class="badge err">error</span>"#,
        "ENOENT-ERROR",
        "$ make BASH-EXEC",
        "BASH-OUT",
        "(exit 2)",
        "CUSTOM-SHOWN",
        "CUSTOM-HIDDEN",
        "Not displayed in pi's conversation view",
        "CUSTOM-DATA",
        "LABEL-ONE",
        "COMPACTION-SUMMARY",
        "Compacted from 12345 tokens",
        "BRANCH-SUMMARY",
        "Switched to model: <b>anthropic/claude-test</b>",
        "Thinking level: <b>high</b>",
        "Session named <b>Demo &lt;export&gt; &amp; more</b>",
        "FINAL-ANSWER",
        "ALT-BRANCH reply",
        "ALT-ERROR 529",
    ] {
        assert!(html.contains(needle), "missing {needle:?}");
    }
    // The error result and the failed shell command are marked as errors.
    let entries = fixture();
    assert!(class_of(&html, &format!("e{}", index_of(&entries, "tr2"))).contains("err"));
    assert!(class_of(&html, &format!("e{}", index_of(&entries, "bx1"))).contains("err"));
    assert!(!class_of(&html, &format!("e{}", index_of(&entries, "tr1"))).contains("err"));
}

#[test]
fn markup_in_the_session_stays_text() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, html, _) = export_fixture(tmp.path());
    assert!(
        !html.contains("window.pwned=1</script>"),
        "a message closed a script"
    );
    assert!(!html.contains("<script>window.pwned"));
    assert!(!html.contains("<img src=x"));
    assert!(!html.contains("<b>bold</b>"));
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;window.pwned=1&lt;/script&gt;"));
    // Exactly the page's own two scripts (data and code), and every one of them closed.
    assert_eq!(html.matches("<script").count(), 2);
    assert_eq!(html.matches("</script>").count(), 2);
    // An id with quotes and angle brackets is escaped inside attributes.
    assert!(html.contains(r#"data-id="id&quot;&lt;2&gt;""#));
    // Nothing may load from the network.
    assert!(html.contains("default-src 'none'; img-src data:"));
    assert!(
        !Regex::new(r#"(src|href)="(https?:)?//"#)
            .unwrap()
            .is_match(&html)
    );
}

#[test]
fn the_whole_tree_is_there_with_the_active_path_marked() {
    let tmp = tempfile::tempdir().unwrap();
    let (entries, html, _) = export_fixture(tmp.path());
    let on_path = [
        "si1", "mc1", "tl1", "u1", "bs1", "a1", "tr1", "a2", "tr2", "bx1", "cm1", "id\"<2>", "cu1",
        "lb1", "cp1", "a3",
    ];
    for (i, e) in entries.iter().enumerate() {
        let id = e["id"].as_str().unwrap();
        let msg = class_of(&html, &format!("e{i}"));
        let row = class_of(&html, &format!("t{i}"));
        if on_path.contains(&id) {
            assert!(!msg.contains("off"), "{id} should be shown: {msg}");
            assert!(row.contains(" on"), "{id} row should be on the path: {row}");
        } else {
            assert!(msg.contains("off"), "{id} should start hidden: {msg}");
            assert!(
                !row.contains(" on"),
                "{id} row should be off the path: {row}"
            );
        }
    }
    let leaf = index_of(&entries, "a3");
    assert!(class_of(&html, &format!("t{leaf}")).contains("leaf"));
    // Every entry has a tree row, and the fork at u1 offers both branches.
    assert_eq!(html.matches(r#"<div class="tn "#).count(), entries.len());
    let alt_leaf = index_of(&entries, "alt3");
    assert!(html.contains(&format!(r#"data-leaf="{alt_leaf}""#)));
    assert!(html.contains(&format!(r#"data-leaf="{leaf}""#)));
    assert!(html.contains(&format!(
        r#"<option value="{leaf}" selected>a3 (session leaf)"#
    )));
    assert!(html.contains(&format!(r#"<option value="{alt_leaf}">alt3"#)));
    assert!(html.contains(&format!(r#""leaf":{leaf}}}</script>"#)));
    assert!(
        html.contains(r#"[LABEL-ONE]</span> <span class="r-user">user:"#),
        "the label is shown in the tree row"
    );
}

#[test]
fn the_default_name_is_pis_with_pith_as_the_app() {
    let tmp = tempfile::tempdir().unwrap();
    let session = write_session(tmp.path(), &fixture());
    let before = fs::read(&session).unwrap();
    pith(tmp.path())
        .arg("--export")
        .arg(&session)
        .assert()
        .success()
        .stdout("Exported to: pith-session-2025-03-05T10-00-00-000Z_sess-1.html\n");
    assert!(
        tmp.path()
            .join("pith-session-2025-03-05T10-00-00-000Z_sess-1.html")
            .is_file()
    );
    assert_eq!(
        fs::read(&session).unwrap(),
        before,
        "the session is not touched"
    );
    // No temporary file is left behind.
    let names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
}

#[test]
fn a_missing_file_is_an_error_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    pith(tmp.path())
        .args(["--export", "nope.jsonl"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("File not found: nope.jsonl"));
    let written: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "html")
        })
        .collect();
    assert!(written.is_empty());
}

#[test]
fn every_conformance_case_exports_and_legacy_files_are_not_migrated() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exported = 0;
    for case in case_dirs() {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let copy = tmp.path().join(format!("{name}.jsonl"));
        fs::copy(case.join("session.jsonl"), &copy).unwrap();
        let before = fs::read(&copy).unwrap();
        let out = tmp.path().join(format!("{name}.html"));
        let run = pith(tmp.path())
            .arg("--export")
            .arg(&copy)
            .arg(&out)
            .output()
            .unwrap();
        if before.iter().all(u8::is_ascii_whitespace) {
            // pi: an empty file is a new session, nothing to export yet; pith exports the
            // empty page rather than failing.
            assert!(run.status.success(), "{name}");
        } else {
            assert!(
                run.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&run.stderr)
            );
        }
        assert_eq!(fs::read(&copy).unwrap(), before, "{name}: the file changed");
        let html = fs::read_to_string(&out).unwrap();
        assert!(html.ends_with("</html>\n"), "{name}");
        exported += 1;
    }
    assert!(exported >= 30, "only {exported} cases");
}

/// A session that forks at every level: `depth` user messages in a chain, each level with a
/// second, abandoned reply beside the next message (so every level indents the tree once).
fn comb_session(dir: &std::path::Path, depth: usize) -> std::path::PathBuf {
    let path = dir.join(format!("comb-{depth}.jsonl"));
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"comb","timestamp":"2025-03-05T10:00:00.000Z","cwd":"/w"}"#,
    );
    text.push('\n');
    let mut parent = "null".to_owned();
    for i in 0..depth {
        for (id, word) in [(format!("s{i}"), "side"), (format!("m{i}"), "main")] {
            text.push_str(&format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-03-05T10:00:01.000Z","message":{{"role":"user","content":"{word} {i}","timestamp":1}}}}"#
            ));
            text.push('\n');
        }
        parent = format!("\"m{i}\"");
    }
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_session_that_forks_at_every_level_exports_in_linear_size() {
    // Issue 13: a 10,000-deep branching session made a 512 MB page in 192 s. Sizes, not
    // times: four times the depth must be about four times the page and the tree text.
    let tmp = tempfile::tempdir().unwrap();
    let mut sizes = Vec::new();
    for depth in [500, 2000] {
        let file = comb_session(tmp.path(), depth);
        let out = tmp.path().join(format!("comb-{depth}.html"));
        pith(tmp.path())
            .arg("--export")
            .arg(&file)
            .arg(&out)
            .assert()
            .success();
        let page = fs::metadata(&out).unwrap().len();
        let tree = pith(tmp.path())
            .args(["session", "tree"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(tree.status.success());
        let deepest = String::from_utf8_lossy(&tree.stdout)
            .lines()
            .map(|l| l.chars().count())
            .max()
            .unwrap();
        assert!(deepest < 250, "a tree line of {deepest} characters");
        sizes.push((page as f64, tree.stdout.len() as f64));
    }
    let (page_ratio, tree_ratio) = (sizes[1].0 / sizes[0].0, sizes[1].1 / sizes[0].1);
    assert!(
        page_ratio < 4.6,
        "page grew {page_ratio:.1}× for 4× the depth"
    );
    assert!(
        tree_ratio < 4.6,
        "tree grew {tree_ratio:.1}× for 4× the depth"
    );
}
