//! The export as Debian's chromium renders it, headless, after the page's script ran.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;

use super::fixture::{class_of, export_fixture, index_of};

/// A page that loads the export in a frame, clicks through it as a reader would and writes
/// what it saw into `#out`, one `step: state` per line. Frames of `file://` pages may script
/// each other only with `--allow-file-access-from-files`.
const HARNESS: &str = include_str!("harness.html");

/// The headless browser: `$PITH_CHROMIUM`, else `chromium` or `chromium-browser` on the PATH.
/// A missing browser fails the test: CI installs it (`.ci/run`).
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("PITH_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "the export's browser test needs chromium and none was found on the PATH. Install \
         Debian's package: `apt-get install -y --no-install-recommends chromium` (as root; .ci/run \
         does this), or set PITH_CHROMIUM to a Chromium binary"
    );
}

/// The DOM of `url` after the page's scripts ran, as headless chromium serializes it.
fn dump_dom(url: &str, profile: &Path) -> String {
    dump_dom_with(url, profile, &[])
}

/// [`dump_dom`] with more chromium flags.
fn dump_dom_with(url: &str, profile: &Path, flags: &[&str]) -> String {
    let mut child = Process::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-dev-shm-usage",
        ])
        .args(flags)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = reader.join().unwrap();
    assert!(status.success(), "chromium failed: {status}");
    assert!(!dom.is_empty(), "chromium printed no DOM");
    dom
}

fn file_url(path: &Path) -> String {
    format!("file://{}", path.canonicalize().unwrap().display())
}

/// The text content of the element with this `id` attribute (no nested elements).
fn text_of(dom: &str, id: &str) -> String {
    let re = Regex::new(&format!(r#"id="{id}"[^>]*>([^<]*)<"#)).unwrap();
    re.captures(dom)
        .unwrap_or_else(|| panic!("no #{id} in the DOM"))[1]
        .to_owned()
}

#[test]
fn chromium_renders_the_page_and_its_script_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (entries, _, page) = export_fixture(tmp.path());
    let dom = dump_dom(&file_url(&page), &tmp.path().join("profile"));

    assert!(
        dom.contains(r#"data-ready="true""#),
        "the page's script did not finish"
    );
    // The script filled in the tree status and hid settings rows (pi's default filter).
    let status = text_of(&dom, "tree-status");
    assert!(
        status.contains(&format!(
            "/ {} entries in the tree, 16 on the shown branch",
            entries.len()
        )),
        "{status}"
    );
    let model_row = index_of(&entries, "mc1");
    assert!(class_of(&dom, &format!("t{model_row}")).contains("hid"));
    assert!(text_of(&dom, "shown-branch").contains("a3 (the session's leaf), 16 entries"));
    // The active path is shown, the other branch hidden, and the fork offers both.
    assert!(!class_of(&dom, &format!("e{}", index_of(&entries, "a3"))).contains("off"));
    assert!(class_of(&dom, &format!("e{}", index_of(&entries, "alt1"))).contains("off"));
    assert_eq!(dom.matches(r#"class="go"#).count(), 2);
    assert!(dom.contains(r#"id="branch""#));
    // Markup from the session is text in the DOM: no injected element, no extra script.
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;window.pwned=1&lt;/script&gt;"));
    assert!(!dom.contains("<img src=\"x\""));
    assert_eq!(dom.matches("<script").count(), 2);
    assert!(!dom.contains("data-pwned"));
}

#[test]
fn chromium_switches_to_another_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let (entries, _, page) = export_fixture(tmp.path());
    // pi's deep link: ?leafId=<entry id> shows that branch.
    let url = format!("{}?leafId=alt3&targetId=alt1", file_url(&page));
    let dom = dump_dom(&url, &tmp.path().join("profile"));

    assert!(
        dom.contains(r#"data-ready="true""#),
        "the page's script did not finish"
    );
    for id in ["si1", "u1", "alt1", "alt2", "alt3"] {
        let i = index_of(&entries, id);
        assert!(
            !class_of(&dom, &format!("e{i}")).contains("off"),
            "{id} hidden"
        );
        assert!(class_of(&dom, &format!("t{i}")).contains(" on"), "{id} row");
    }
    for id in ["bs1", "a1", "a3"] {
        let i = index_of(&entries, id);
        assert!(
            class_of(&dom, &format!("e{i}")).contains("off"),
            "{id} shown"
        );
        assert!(
            !class_of(&dom, &format!("t{i}")).contains(" on"),
            "{id} row"
        );
    }
    assert!(text_of(&dom, "shown-branch").contains("alt3 (not the session's leaf), 7 entries"));
    let alt1 = index_of(&entries, "alt1");
    assert!(
        Regex::new(&format!(r#"class="go cur" data-c="{alt1}""#))
            .unwrap()
            .is_match(&dom),
        "the fork's button for the shown branch is current"
    );
    assert!(class_of(&dom, &format!("t{alt1}")).contains("target"));
}

#[test]
fn chromium_clicks_switch_branches_filter_and_search() {
    let tmp = tempfile::tempdir().unwrap();
    let (entries, _, page) = export_fixture(tmp.path());
    let alt2 = index_of(&entries, "alt2");
    let harness = HARNESS
        .replace("PAGE", &page.file_name().unwrap().to_string_lossy())
        .replace("ALT2", &alt2.to_string());
    let harness_path = tmp.path().join("harness.html");
    std::fs::write(&harness_path, harness).unwrap();
    let dom = dump_dom_with(
        &file_url(&harness_path),
        &tmp.path().join("profile"),
        &[
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
        ],
    );
    let out = Regex::new(r#"(?s)<pre id="out">(.*?)</pre>"#)
        .unwrap()
        .captures(&dom)
        .unwrap_or_else(|| panic!("no #out in {dom}"))[1]
        .to_owned();
    let step = |name: &str| -> String {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no step {name:?} in:\n{out}"))
            .to_owned()
    };
    assert!(!out.contains("reloaded"), "{out}");
    assert_eq!(step("ready"), "true", "{out}");
    let (alt1, a3) = (index_of(&entries, "alt1"), index_of(&entries, "a3"));
    // A click on a tree row shows the newest branch through it.
    assert_eq!(
        step("tree click"),
        format!(
            "e{alt1}=e assistant e{a3}=e assistant off shown=ends at entry alt3 (not the session's leaf), 7 entries"
        )
    );
    // The fork's other button goes back to the main branch.
    assert_eq!(
        step("fork click"),
        format!("e{alt1}=e assistant off e{a3}=e assistant")
    );
    // pi's filters: "All" still hides the reply that only calls a tool; "User" keeps the
    // user messages and the shown leaf, redrawn without indentation.
    assert_eq!(
        step("all"),
        "18 / 19 entries in the tree, 16 on the shown branch"
    );
    assert_eq!(
        step("user"),
        "3 / 19 entries in the tree, 16 on the shown branch prefix=\"\""
    );
    assert_eq!(
        step("select"),
        "ends at entry alt3 (not the session's leaf), 7 entries"
    );
    assert_eq!(step("jump"), format!("t{}", index_of(&entries, "u1")));
    assert_eq!(step("long"), "out long open");
    assert_eq!(step("keys"), "hide-thinking");
    assert_eq!(
        step("search"),
        "2 / 19 entries in the tree, 7 on the shown branch"
    );
}
