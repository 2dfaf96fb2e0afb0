//! A full disk: the run says so, keeps the session in memory, and writes everything once
//! space returns, with no line twice. Runs pith in a private mount namespace on a tiny tmpfs
//! (`unshare` from util-linux; CI runs as root, and user namespaces work elsewhere).

use std::collections::HashSet;
use std::fs;
use std::process::Command;

#[test]
fn a_full_disk_loses_nothing_once_space_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let (mnt, work, out) = (
        tmp.path().join("mnt"),
        tmp.path().join("work"),
        tmp.path().join("out"),
    );
    for d in [&mnt, &work, &out] {
        fs::create_dir_all(d).unwrap();
    }
    let big = "x".repeat(20_000);
    let script = tmp.path().join("script.json");
    fs::write(
        &script,
        format!(
            r#"[{{"content":[{{"type":"text","text":"{big}"}},{{"type":"toolCall","id":"t","name":"noop","arguments":{{}}}}]}},
                {{"content":[{{"type":"text","text":"after the disk emptied"}}],"delayMs":1500}}]"#
        ),
    )
    .unwrap();
    let sh = r#"
set -e
mount -t tmpfs -o size=256k tmpfs "$MNT"
export PITH_AGENT_DIR="$MNT/agent"
cd "$WORK"
"$PITH" -p "first" > /dev/null 2>&1
dd if=/dev/zero of="$MNT/filler" bs=4k > /dev/null 2>&1 || true
( sleep 0.7; rm -f "$MNT/filler" ) &
set +e
"$PITH" -p -c --faux-script "$SCRIPT" "second" > "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/code"
wait
cp "$MNT"/agent/sessions/*/*.jsonl "$OUT/session.jsonl"
"#;
    let status = Command::new("unshare")
        .args(["-r", "-m", "sh", "-c", sh])
        .env("MNT", &mnt)
        .env("WORK", &work)
        .env("OUT", &out)
        .env("SCRIPT", &script)
        .env("PITH", assert_cmd::cargo::cargo_bin("pith"))
        .status()
        .expect("unshare (util-linux) runs");
    assert!(status.success(), "the namespace script failed");
    let stderr = fs::read_to_string(out.join("stderr")).unwrap();
    assert!(stderr.contains("could not save the session"), "{stderr}");
    assert_eq!(
        fs::read_to_string(out.join("code")).unwrap().trim(),
        "1",
        "a failed write fails the run"
    );
    let text = fs::read_to_string(out.join("session.jsonl")).unwrap();
    let mut seen = HashSet::new();
    let mut roles = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        assert!(seen.insert(line), "a line was written twice");
        // A write cut by the full disk leaves a fragment; everything else is whole.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line)
            && let Some(role) = v["message"]["role"].as_str()
        {
            roles.push(role.to_owned());
        }
    }
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "toolResult",
            "assistant"
        ],
        "{text}"
    );
    assert!(text.contains("after the disk emptied"));
}
