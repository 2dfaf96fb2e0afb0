//! pi 1.6.0's own `RpcClient` drives `pith --mode rpc` (issue 12 item 3): the checks are in
//! `pi_rpc_client.mjs`, run with pi's Node 22. The oracle (Node and pi, installed by
//! `scripts/install-pi`, which `scripts/test` runs when it is missing) is found at
//! `$PITH_PI_ORACLE` or `<repo>/target/pi-oracle`.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

#[test]
fn pis_own_rpc_client_drives_pith() {
    let oracle = pith_tests::pi_oracle::install();
    let rpc_client =
        oracle.join("pi/node_modules/@earendil-works/pi-coding-agent/dist/modes/rpc/rpc-client.js");
    assert!(rpc_client.is_file(), "{} is missing", rpc_client.display());
    let tmp = tempfile::tempdir().unwrap();
    let (agent, cwd) = (tmp.path().join("agent"), tmp.path().join("work"));
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    // A small keep-recent budget, so that `compact` has something to summarize.
    std::fs::write(
        agent.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 4}}).to_string(),
    )
    .unwrap();
    let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
    let mut slow = text("slow reply");
    slow["delayMs"] = json!(800);
    let mut never = text("never");
    never["delayMs"] = json!(5000);
    let script = json!([
        text("first reply"),
        slow,
        text("after steer"),
        text("after follow-up"),
        never
    ]);
    let script_path = tmp.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mjs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/rpc/pi_rpc_client.mjs");
    let mut cmd = Command::new(oracle.join("bin/node"));
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    let out = cmd
        .env("PITH_AGENT_DIR", &agent)
        .arg(&mjs)
        .arg(&rpc_client)
        .arg(env!("CARGO_BIN_EXE_pith"))
        .arg(&cwd)
        .arg(&script_path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pi's RpcClient failed against pith:\n{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["checks"], 34);
}
