//! Crash safety: a scripted multi-turn session runs in a child `pith` and is killed with
//! SIGKILL at random moments. After every kill the file opens, holds no line twice, no entry
//! lost its parent, and the next run continues it on a fresh line.
//!
//! 20 kills by default (CI); `PITH_KILL_ITERATIONS=200` (or `PITH_KILL_ROUNDS`) for
//! more, and `scripts/kill-soak` (1,000 kills, release build; or the ignored test below) for
//! the long run. Every complete line on disk before a kill is on disk after it: nothing accepted
//! is lost. Lock files of the killed runs do not pile up.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pith_store::{OpenMode, Session, SessionEnv};

pub(super) fn session_file(agent: &Path) -> Option<PathBuf> {
    let dir = fs::read_dir(agent.join("sessions"))
        .ok()?
        .next()?
        .ok()?
        .path();
    fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}

/// A small deterministic generator (xorshift) for kill delays.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Checks the file after a kill; `torn` collects the torn last lines seen so far (a write cut
/// by SIGKILL where it crosses a page boundary): such a fragment stays in the file, skipped,
/// and the next run starts on a new line (spec: divergences.md "Writing").
pub(super) fn check(file: &Path, agent: &Path, torn: &mut HashSet<String>) -> usize {
    let env = SessionEnv {
        agent_dir: agent.to_owned(),
        ..SessionEnv::system()
    };
    let s = Session::open(file, None, None, OpenMode::Inspect, &env)
        .expect("the file opens after a kill");
    let text = fs::read_to_string(file).unwrap();
    // No line twice (ids are random 8-hex: a repeated line would be a double write).
    let mut seen = HashSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        assert!(seen.insert(line), "a line was written twice: {line}");
    }
    // Every entry's parent is an earlier entry (or none): nothing in the chain went missing.
    let mut ids = HashSet::new();
    for e in s.entries() {
        if let Some(p) = e.parent().id() {
            assert!(ids.contains(p), "entry {} lost its parent {p}", e.id());
        }
        ids.insert(e.id().to_owned());
    }
    // Only the last line may be torn, or a line that was the torn last line after an earlier
    // kill.
    let all: Vec<&str> = text.lines().collect();
    for w in s
        .warnings()
        .iter()
        .filter(|w| w.problem.contains("invalid JSON"))
    {
        let line = all[w.line - 1];
        if w.line == all.len() && !text.ends_with('\n') {
            torn.insert(line.to_owned());
        } else {
            assert!(torn.contains(line), "line {} is torn: {line}", w.line);
        }
    }
    s.entries().len()
}

/// The complete lines of `file` (a torn last line was never accepted).
pub(super) fn complete_lines(file: &Path) -> HashSet<String> {
    let text = fs::read_to_string(file).unwrap();
    let complete = match text.rfind('\n') {
        Some(end) => &text[..end],
        None => "",
    };
    complete
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn sigkill_at_random_points_loses_and_repeats_nothing() {
    let iterations: usize = std::env::var("PITH_KILL_ITERATIONS")
        .or_else(|_| std::env::var("PITH_KILL_ROUNDS"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    kill_at_random(iterations, 0x9E37_79B9_7F4A_7C15);
}

/// `scripts/kill-soak`: 1,000 kills.
#[test]
#[ignore = "a long soak: scripts/kill-soak runs it"]
fn sigkill_a_thousand_times() {
    kill_at_random(1_000, 0xD1B5_4A32_D192_ED03);
}

fn kill_at_random(iterations: usize, seed: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let cwd = tmp.path().join("work");
    fs::create_dir_all(&cwd).unwrap();
    // 40 tool-using turns with small pauses: a run long enough for kills to land mid-turn.
    let mut replies: Vec<String> = (0..40)
        .map(|i| format!(r#"{{"content":[{{"type":"text","text":"turn {i}"}},{{"type":"toolCall","id":"t{i}","name":"noop","arguments":{{}}}}],"delayMs":2}}"#))
        .collect();
    replies.push(r#"{"content":[{"type":"text","text":"done"}]}"#.to_owned());
    let script = tmp.path().join("script.json");
    fs::write(&script, format!("[{}]", replies.join(","))).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("pith");
    let mut rng = Rng(seed);
    let mut entries = 0;
    let mut accepted: HashSet<String> = HashSet::new();
    let mut torn: HashSet<String> = HashSet::new();
    let mut killed_mid_run = 0;
    for i in 0..iterations {
        let mut cmd = Command::new(&bin);
        cmd.current_dir(&cwd)
            .env("PITH_AGENT_DIR", &agent)
            .arg("-p")
            .arg("--faux-script")
            .arg(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if i > 0 {
            cmd.arg("-c");
        }
        cmd.arg(format!("prompt {i}"));
        let mut child = cmd.spawn().unwrap();
        let delay = Duration::from_micros(rng.next() % 60_000);
        let start = Instant::now();
        while start.elapsed() < delay {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
        if child.try_wait().unwrap().is_none() {
            killed_mid_run += 1;
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        if let Some(file) = session_file(&agent) {
            let now = check(&file, &agent, &mut torn);
            assert!(
                now >= entries,
                "entries went missing after kill {i}: {now} < {entries}"
            );
            entries = now;
            let lines = complete_lines(&file);
            if let Some(lost) = accepted.difference(&lines).next() {
                panic!("kill {i} lost an accepted line: {lost}");
            }
            accepted = lines;
        }
    }
    // A clean run continues the session after all that.
    let out = Command::new(&bin)
        .current_dir(&cwd)
        .env("PITH_AGENT_DIR", &agent)
        .args(["-p", "-c", "after the kills"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = session_file(&agent).expect("a session exists");
    assert!(check(&file, &agent, &mut torn) > entries);
    assert!(
        fs::read_to_string(&file)
            .unwrap()
            .contains("after the kills")
    );
    assert!(
        accepted.is_subset(&complete_lines(&file)),
        "the clean run lost an accepted line"
    );
    // The killed runs' lock files were swept, and the clean run removed its own.
    let locks: Vec<_> = fs::read_dir(file.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".lock"))
        .map(|e| e.file_name())
        .collect();
    assert!(locks.is_empty(), "lock files left: {locks:?}");
    assert!(
        killed_mid_run > iterations / 4,
        "only {killed_mid_run} of {iterations} kills landed mid-run"
    );
}

/// pi 1.6.0 creates a new session's file at the first user message (spec: format.md §7.1):
/// a SIGKILL while the first reply is still on its way keeps the prompt, with the lines pi
/// leaves (header, `model_change`, `thinking_level_change`, the prompt), each once.
#[test]
fn sigkill_during_the_first_request_keeps_the_prompt() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    let cwd = tmp.path().join("work");
    fs::create_dir_all(&cwd).unwrap();
    let script = tmp.path().join("script.json");
    fs::write(
        &script,
        r#"[{"content":[{"type":"text","text":"too late"}],"delayMs":60000}]"#,
    )
    .unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("pith"))
        .current_dir(&cwd)
        .env("PITH_AGENT_DIR", &agent)
        .args(["-p", "--faux-script"])
        .arg(&script)
        .arg("the first prompt")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let file = loop {
        if let Some(f) = session_file(&agent)
            && fs::read_to_string(&f).unwrap().contains("the first prompt")
        {
            break f;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no session file with the prompt while the reply is delayed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        child.try_wait().unwrap().is_none(),
        "still waiting for the reply"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let text = fs::read_to_string(&file).unwrap();
    let types: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            match v["type"].as_str().unwrap() {
                "message" => format!("message:{}", v["message"]["role"].as_str().unwrap()),
                other => other.to_owned(),
            }
        })
        .collect();
    assert_eq!(
        types,
        [
            "session",
            "model_change",
            "thinking_level_change",
            "message:user"
        ]
    );
    assert_eq!(text.matches("the first prompt").count(), 1);
    // `-c` continues it: the prompt is in the context of the next run.
    let out = Command::new(assert_cmd::cargo::cargo_bin("pith"))
        .current_dir(&cwd)
        .env("PITH_AGENT_DIR", &agent)
        .args(["-p", "-c", "again"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("the first prompt").count(), 1);
    assert!(text.contains("again"));
}
