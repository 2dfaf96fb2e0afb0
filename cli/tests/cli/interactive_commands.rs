//! The interactive mode's `/settings`, `/changelog`, `/trust` and `/share` (issue #16), and the
//! footer printed again after `/name`, `/model` and `/thinking`: the real binary in a
//! pseudo-terminal, the files it writes read afterwards.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use super::interactive::setup;

/// pith's version: the newest heading of its CHANGELOG.md.
const VERSION: &str = env!("CARGO_PKG_VERSION");

const DOWN: &str = "\x1b[B";

fn settings_json(agent: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(agent.join("settings.json")).unwrap()).unwrap()
}

#[test]
fn interactive_settings_saves_each_change_keeps_the_file_and_applies_it() {
    let s = setup(
        r#"[{"content": [{"type": "thinking", "thinking": "A secret musing."},
                        {"type": "text", "text": "The visible answer."}]}]"#,
    );
    fs::create_dir_all(&s.agent).unwrap();
    let before = format!(
        r#"{{"theme":"dark","lastChangelogVersion":"{VERSION}","compaction":{{"keepRecentTokens":5}},"unknownKey":[1,2]}}"#
    );
    fs::write(s.agent.join("settings.json"), &before).unwrap();
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/settings");
    pith.expect_screen("→ Auto-compact");
    pith.expect_screen("Automatically compact context when it gets too large");
    // Enter turns auto-compaction off; it is saved at once.
    pith.send("\r");
    pith.expect_screen("→ Auto-compact           false");
    // Down to "Hide thinking" (the 8th), Space turns it on.
    pith.send(&DOWN.repeat(7));
    pith.expect_screen("Hide thinking blocks in assistant responses");
    pith.send(" ");
    pith.expect_screen("→ Hide thinking          true");
    pith.send("\x1b");
    pith.prompt();
    assert_eq!(
        settings_json(&s.agent),
        json!({
            "theme": "dark",
            "lastChangelogVersion": VERSION,
            "compaction": {"keepRecentTokens": 5, "enabled": false},
            "unknownKey": [1, 2],
            "hideThinkingBlock": true
        })
    );
    let text = fs::read_to_string(s.agent.join("settings.json")).unwrap();
    assert!(
        text.starts_with("{\n  \"theme\": \"dark\",\n  \"lastChangelogVersion\""),
        "{text}"
    );
    // No temporary file is left beside it.
    let names: Vec<String> = fs::read_dir(&s.agent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("settings"))
        .collect();
    assert_eq!(names, ["settings.json"]);
    // The running session hides thinking now.
    pith.line("think aloud");
    pith.expect("The visible answer.");
    pith.idle();
    assert!(
        !pith.transcript().contains("A secret musing."),
        "{}",
        pith.transcript()
    );
    assert_eq!(pith.quit(), 0);
}

#[test]
fn interactive_changelog_shows_the_entries_with_the_newest_heading() {
    let s = setup("[]");
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/changelog");
    pith.expect("What's New");
    pith.expect(&format!("[{VERSION}]"));
    pith.expect("### Added");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn interactive_startup_shows_new_changelog_entries_once() {
    let s = setup("[]");
    fs::create_dir_all(&s.agent).unwrap();
    // A fresh install records the version and shows nothing.
    let mut pith = s.start(&[]);
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    assert!(!pith.transcript().contains("What's New"));
    assert_eq!(settings_json(&s.agent)["lastChangelogVersion"], VERSION);

    // After an upgrade: the newer entries, once.
    fs::write(
        s.agent.join("settings.json"),
        r#"{"lastChangelogVersion":"0.0.1","steeringMode":"all"}"#,
    )
    .unwrap();
    let mut pith = s.start(&[]);
    pith.expect("What's New");
    pith.expect(&format!("[{VERSION}]"));
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    assert_eq!(
        settings_json(&s.agent),
        json!({"lastChangelogVersion": VERSION, "steeringMode": "all"})
    );
    let mut pith = s.start(&[]);
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    assert!(!pith.transcript().contains("What's New"));

    // collapseChangelog: one line.
    fs::write(
        s.agent.join("settings.json"),
        r#"{"lastChangelogVersion":"0.0.1","collapseChangelog":true}"#,
    )
    .unwrap();
    let mut pith = s.start(&[]);
    pith.expect(&format!(
        "Updated to v{VERSION}. Use /changelog to view full changelog."
    ));
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    assert!(!pith.transcript().contains("What's New"));
}

#[test]
fn interactive_trust_shows_and_toggles_the_project_decision() {
    let s = setup("[]");
    let project = s.work.display().to_string();
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/trust");
    pith.expect_screen("Project trust");
    pith.expect_screen("Saved decision: none");
    pith.expect_screen("Current session: trusted");
    pith.expect_screen("›   Trust");
    pith.send(DOWN);
    pith.expect_screen("›   Do not trust");
    pith.send("\r");
    pith.expect("Saved trust decision: untrusted. Restart pith for this to take effect.");
    pith.prompt();
    let trust: Value =
        serde_json::from_str(&fs::read_to_string(s.agent.join("trust.json")).unwrap()).unwrap();
    assert_eq!(
        trust,
        json!({ project.as_str(): {"decision": "untrusted", "fingerprints": {}} })
    );
    pith.line("/trust");
    pith.expect_screen(&format!("Saved decision: untrusted ({project})"));
    pith.expect_screen("› ✓ Do not trust");
    pith.send("\x1b[A\r");
    pith.expect("Saved trust decision: trusted.");
    pith.prompt();
    let trust: Value =
        serde_json::from_str(&fs::read_to_string(s.agent.join("trust.json")).unwrap()).unwrap();
    assert_eq!(trust[project.as_str()]["decision"], "trusted");
    assert_eq!(pith.quit(), 0);
}

#[test]
fn interactive_share_uploads_the_html_export_with_gh() {
    let s = setup(r#"[{"content": [{"type": "text", "text": "shared reply"}]}]"#);
    let bin = s.root.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let log = s.root.join("gh.log");
    let copy = s.root.join("uploaded.html");
    let gh = bin.join("gh");
    fs::write(
        &gh,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\ncase \"$1\" in\n  auth) exit 0 ;;\n  gist) cp \"$4\" '{}'; echo https://gist.github.com/me/abc123 ;;\nesac\n",
            log.display(),
            copy.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&gh, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let path = std::ffi::OsString::from(path);
    let viewer = std::ffi::OsString::from("https://viewer.example/session/");
    let mut pith = s.start_with_env(
        &[],
        &[
            ("PATH", path.as_os_str()),
            ("PITH_SHARE_VIEWER_URL", viewer.as_os_str()),
        ],
    );
    pith.prompt();
    pith.line("/share");
    pith.expect("Error: Failed to export session: the session has no file yet");
    pith.prompt();
    pith.line("hello");
    pith.expect("shared reply");
    pith.idle();
    pith.line("/share");
    pith.expect("Share URL: https://viewer.example/session/#abc123");
    pith.expect("Gist: https://gist.github.com/me/abc123");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    let calls = fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls[0], "auth status");
    let upload = calls[1]
        .strip_prefix("gist create --public=false ")
        .unwrap_or_else(|| panic!("{calls:?}"));
    assert!(upload.ends_with("/session.html"), "{upload}");
    // The temporary folder is gone; the page was the session's export.
    assert!(!Path::new(upload).exists());
    let html = fs::read_to_string(&copy).unwrap();
    assert!(html.contains("<html") && html.contains("shared reply"));
}

#[test]
fn interactive_share_without_gh_says_it_is_needed() {
    let s = setup(r#"[{"content": [{"type": "text", "text": "reply"}]}]"#);
    let empty = s.root.join("empty-bin");
    fs::create_dir_all(&empty).unwrap();
    let path = format!("{}:/usr/bin:/bin", empty.display());
    assert!(!Path::new("/usr/bin/gh").exists() && !Path::new("/bin/gh").exists());
    let path = std::ffi::OsString::from(path);
    let mut pith = s.start_with_env(&[], &[("PATH", path.as_os_str())]);
    pith.prompt();
    pith.line("hi");
    pith.expect("reply");
    pith.idle();
    pith.line("/share");
    pith.expect("Error: GitHub CLI (gh) is not installed. Install it from https://cli.github.com/");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn interactive_footer_is_printed_again_after_name_model_and_thinking() {
    let s = setup("[]");
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("/name Footer check");
    pith.expect("Session name set: Footer check");
    pith.expect("~/work • Footer check");
    pith.prompt();
    pith.line("/model faux/faux-1");
    pith.expect("Model: faux-1");
    pith.expect("~/work • Footer check");
    pith.expect("faux-1");
    pith.prompt();
    pith.line("/thinking off");
    pith.expect("Thinking level: off");
    pith.expect("~/work • Footer check");
    pith.prompt();
    pith.line("/session");
    pith.expect("Session Info");
    pith.expect("~/work • Footer check");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn interactive_settings_that_change_keys_and_startup_are_honoured() {
    let s = setup("[]");
    fs::create_dir_all(&s.agent).unwrap();
    fs::write(
        s.agent.join("settings.json"),
        format!(
            r#"{{"lastChangelogVersion":"{VERSION}","quietStartup":true,"doubleEscapeAction":"fork"}}"#
        ),
    )
    .unwrap();
    let mut pith = s.start(&[]);
    pith.prompt();
    // quietStartup: true shows no header.
    assert!(
        !pith.transcript().contains("pith v"),
        "{}",
        pith.transcript()
    );
    // Ctrl-T is saved as pi saves it.
    pith.send("\x14");
    pith.expect("Thinking blocks: hidden");
    pith.prompt();
    assert_eq!(settings_json(&s.agent)["hideThinkingBlock"], true);
    // doubleEscapeAction: fork. Esc Esc opens /fork instead of /tree.
    pith.send("\x1b");
    std::thread::sleep(std::time::Duration::from_millis(100));
    pith.send("\x1b");
    pith.expect("No messages to fork from");
    pith.prompt();
    assert_eq!(pith.quit(), 0);

    // quietStartup: "header" keeps the header.
    fs::write(
        s.agent.join("settings.json"),
        format!(r#"{{"lastChangelogVersion":"{VERSION}","quietStartup":"header"}}"#),
    )
    .unwrap();
    let mut pith = s.start(&[]);
    pith.expect("pith v");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
}

#[test]
fn interactive_an_untrusted_project_is_named_at_startup_until_trust_saves_a_decision() {
    let s = setup("[]");
    fs::create_dir_all(s.work.join(".pith")).unwrap();
    fs::write(
        s.work.join(".pith/settings.json"),
        r#"{"steeringMode":"all"}"#,
    )
    .unwrap();
    const WARNING: &str = "This project is not trusted. Project .pith resources are ignored. Use /trust to save a trust decision, then restart pith.";
    let mut pith = s.start(&[]);
    pith.expect(WARNING);
    pith.prompt();
    pith.line("/trust");
    pith.expect_screen("Current session: untrusted");
    pith.send("\r");
    pith.expect("Saved trust decision: trusted.");
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    let mut pith = s.start(&[]);
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    assert!(!pith.transcript().contains(WARNING));
}

#[test]
fn sigterm_while_the_tree_is_open_quits_quietly_and_keeps_the_session() {
    let s = setup(&format!("[{}]", super::interactive::text_reply("kept")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("remember this");
    pith.expect("kept");
    pith.idle();
    pith.send("/tree\r");
    pith.expect_screen("Session Tree");
    let pid = rustix::process::Pid::from_raw(pith.pid()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert_eq!(pith.exit_code(), 0);
    let text = pith.transcript();
    assert!(!text.contains("Error:"), "{text}");
    assert_eq!(
        super::interactive::user_texts(&s.sessions()[0]),
        ["remember this"]
    );
}

#[test]
fn closing_the_tree_leaves_nothing_in_the_transcript() {
    let s = setup(&format!("[{}]", super::interactive::text_reply("hello")));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("hi");
    pith.expect("hello");
    pith.idle();
    let footers = pith.transcript().matches("faux-1").count();
    pith.send("/tree\r");
    pith.expect_screen("Session Tree");
    pith.send("\x1b");
    pith.prompt();
    pith.send("/quit\r");
    assert_eq!(pith.exit_code(), 0);
    assert_eq!(pith.transcript().matches("faux-1").count(), footers);
}

#[test]
fn resuming_the_session_already_open_keeps_it_open() {
    let s = setup(&format!(
        "[{}, {}]",
        super::interactive::text_reply("first reply"),
        super::interactive::text_reply("second reply")
    ));
    let mut pith = s.start(&[]);
    pith.prompt();
    pith.line("only session");
    pith.expect("first reply");
    pith.idle();
    pith.line("/resume");
    pith.expect_screen("Resume Session");
    pith.expect_screen("only session");
    pith.send("\r");
    pith.expect("Resumed session");
    pith.prompt();
    assert!(
        !pith.transcript().contains("Error:"),
        "{}",
        pith.transcript()
    );
    pith.line("still here");
    pith.expect("second reply");
    pith.idle();
    assert_eq!(pith.quit(), 0);
    assert_eq!(s.sessions().len(), 1);
    assert_eq!(
        super::interactive::user_texts(&s.sessions()[0]),
        ["only session", "still here"]
    );
}
