//! MCP calls pass the same gates as built-in tools: `examples/extensions/python/mcp_approval.py`
//! (a real child process) blocks the filesystem server's `write_file` (`destructiveHint:
//! true`) and lets `read_text_file` (`readOnlyHint: true`) through, in print, json and rpc
//! modes; in rpc mode it asks first, and a yes lets the write happen.

use std::ffi::OsString;
use std::fs;
use std::path::PathBuf;

use serde_json::json;

use super::support::*;

fn approval_gate() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/extensions/python/mcp_approval.py")
}

#[test]
fn a_gate_blocks_a_destructive_mcp_tool_and_a_read_only_one_passes_in_every_mode() {
    for mode in MODES {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (agent, cwd) = setup(
            &root,
            json!({"fs": {"command": filesystem_server(), "args": [root.join("repo")]}}),
        );
        fs::write(cwd.join("notes.txt"), "the secret is 42\n").unwrap();
        let out = cwd.join("out.txt");
        let script = script(
            &root,
            json!([
                calls(&[
                    (
                        "w1",
                        "mcp__fs__write_file",
                        json!({"path": out, "content": "gone"})
                    ),
                    (
                        "r1",
                        "mcp__fs__read_text_file",
                        json!({"path": cwd.join("notes.txt")})
                    ),
                ]),
                text("done"),
            ]),
        );
        let run = Run {
            agent: &agent,
            cwd: &cwd,
            args: vec![
                OsString::from("--session"),
                "s.jsonl".into(),
                "--faux-script".into(),
                script.clone().into(),
                "-e".into(),
                approval_gate().into(),
            ],
        };
        let (_, dialogs) = run.prompt(mode, "tidy up", false);
        let blocked = match mode {
            Mode::Print | Mode::Json => {
                "mcp__fs__write_file (mcp:fs) may be destructive; blocked without a UI to confirm"
            }
            Mode::Rpc => "Blocked by user",
        };
        assert_eq!(
            tool_results(&cwd.join("s.jsonl")),
            [
                json!({"id":"w1","name":"mcp__fs__write_file","text":blocked,"isError":true}),
                json!({"id":"r1","name":"mcp__fs__read_text_file","text":"the secret is 42\n",
                       "isError":false}),
            ],
            "{mode:?}"
        );
        assert!(!out.exists(), "{mode:?}: the blocked write happened");
        if mode == Mode::Rpc {
            // The gate asked once, about the destructive call only, with the server's hint.
            assert_eq!(dialogs.len(), 1, "{dialogs:?}");
            assert_eq!(dialogs[0]["title"], "Allow mcp__fs__write_file?");
            assert!(
                dialogs[0]["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("mcp:fs marks it destructive."),
                "{dialogs:?}"
            );
            // Allowed, the write reaches the server.
            let run = Run {
                args: vec![
                    OsString::from("--session"),
                    "yes.jsonl".into(),
                    "--faux-script".into(),
                    script.clone().into(),
                    "-e".into(),
                    approval_gate().into(),
                ],
                ..run
            };
            run.prompt(mode, "tidy up", true);
            let results = tool_results(&cwd.join("yes.jsonl"));
            assert_eq!(results[0]["isError"], false, "{results:?}");
            assert_eq!(fs::read_to_string(&out).unwrap(), "gone");
        }
        let left = processes_naming(&root.display().to_string());
        assert!(left.is_empty(), "{mode:?}: left running: {left:?}");
    }
}
