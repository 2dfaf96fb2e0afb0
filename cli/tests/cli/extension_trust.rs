//! Scenario (m) of extensions.md §4 step 2, project trust, as one snapshot: a project's
//! extension is not spawned before the project is trusted (print mode says so on stderr), the
//! interactive mode asks first and spawns it once the answer is yes, an unchanged project is
//! not asked again, and a changed extension (its fingerprint) is skipped in print mode and
//! asked about again interactively. Trust is the `pith` binary's decision, taken before any
//! runtime starts, so this lives here rather than with the runtime's replays (whose transcript
//! tap has nothing to record for an extension that never runs).

use std::fs;
use std::path::Path;

use super::interactive::{Setup, setup};

/// The question the interactive mode asks.
const QUESTION: &str = "Trust this project and run them? [y/N]";

fn manifest(mode: &str, log: &Path) -> String {
    let fault = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/extensions/fault.py");
    serde_json::json!({"name":"fault","command":["python3", fault],
                       "env":{"FAULT_MODE": mode, "FAULT_LOG": log}})
    .to_string()
}

/// Runs `pith -p hi` with `extra` flags: its stderr lines about project extensions.
fn print(s: &Setup, extra: &[&str]) -> Vec<String> {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pith"));
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    let out = cmd
        .env("PITH_AGENT_DIR", &s.agent)
        .env("HOME", &s.root)
        .current_dir(&s.work)
        .args(["-p", "--faux-script"])
        .arg(&s.script)
        .args(extra)
        .arg("hi")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("project extension"))
        .map(str::to_owned)
        .collect()
}

/// Starts the interactive mode, answers the trust question with `answer` if it is asked, and
/// quits: the question as shown (`None` when not asked).
fn interactive(s: &Setup, answer: &str) -> Option<String> {
    let mut pith = s.start(&[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let asked = loop {
        let text = pith.transcript();
        if let Some(at) = text.find(QUESTION) {
            let start = text.find("The project").unwrap_or(0);
            break Some(text[start..at + QUESTION.len()].to_owned());
        }
        if text.contains("> ") {
            break None;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    if asked.is_some() {
        pith.send(&format!("{answer}\r"));
    }
    pith.prompt();
    assert_eq!(pith.quit(), 0);
    asked
}

#[test]
fn extension_replay_m_project_trust_spawns_nothing_before_approval_and_asks_again_on_change() {
    let s = setup("[]");
    let log = s.root.join("spawned.log");
    let dir = s.work.join(".pith/extensions/fault");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("extension.json"), manifest("ok", &log)).unwrap();
    let mut story = Vec::new();
    let spawned = |story: &mut Vec<String>| {
        let was = log.exists();
        let _ = fs::remove_file(&log);
        story.push(format!("spawned: {was}"));
    };

    story.push("== pith -p (no decision yet)".to_owned());
    story.extend(print(&s, &[]));
    spawned(&mut story);

    story.push("== pith (interactive), answered y".to_owned());
    story.push(format!("asked: {:?}", interactive(&s, "y")));
    spawned(&mut story);

    story.push("== pith (interactive) again, nothing changed".to_owned());
    story.push(format!("asked: {:?}", interactive(&s, "y")));
    spawned(&mut story);

    fs::write(dir.join("extension.json"), manifest("hang", &log)).unwrap();
    story.push("== the manifest changed: pith -p".to_owned());
    story.extend(print(&s, &[]));
    spawned(&mut story);

    story.push("== pith (interactive), asked again, answered n".to_owned());
    story.push(format!("asked: {:?}", interactive(&s, "n")));
    spawned(&mut story);

    story.push("== pith -p --approve".to_owned());
    story.extend(print(&s, &["--approve"]));
    spawned(&mut story);

    let trust: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(s.agent.join("trust.json")).unwrap()).unwrap();
    story.push("== trust.json".to_owned());
    story.push(serde_json::to_string_pretty(&trust).unwrap());

    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let text = story
        .join("\n")
        .replace(&s.root.to_string_lossy().into_owned(), "[ROOT]")
        .replace(&repo, "[REPO]");
    let sha = regex::Regex::new(r"[0-9a-f]{64}").unwrap();
    let text = sha.replace_all(&text, "[SHA256]").into_owned();
    insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("ext_replay_m_project_trust", text);
    });
}
