//! Crash safety with an extension and an MCP server attached (issue 13): `pith` runs a
//! scripted session in print and rpc modes with `extensions/soak.py` (gates every tool call
//! and appends an entry from the gate, registers the tool `stamp` that appends an entry) and
//! `mcp/probe_server.py` (its `nap` tool, on the MCP Python SDK) attached, and is SIGKILLed at
//! random moments: at a random time, or just after a step the extension logs (a gate, an
//! appendEntry, the extension's tool call, the MCP call, a compaction). After every kill:
//! - the session file opens, no line is damaged (only a torn last line) or written twice;
//! - every complete line on disk before the kill is still there;
//! - an entry the extension appended before it allowed a call, or before its tool answered, is
//!   on disk before that call's result;
//! - there is one session file: the next run (`-c`) continues it;
//! - no extension or MCP server process of the killed pith is left running.
//!
//! `PITH_KILL_ROUNDS` kills (default 12, about 15-45 s on 2 cores in a debug build;
//! `PITH_KILL_SEED` varies the moments); `scripts/kill-soak` runs 1,000 in a release build. The fault case: the extension crashes and the MCP server dies in the
//! middle of their calls while pith writes; nothing is lost and the run finishes.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::kill::{Rng, check, complete_lines, session_file};

/// The probe server's `nap`, in milliseconds: long enough for a kill to land mid-call.
const NAP_MS: u64 = 20;
/// How long the children of a killed pith may take to notice and exit.
const CHILD_GRACE: Duration = Duration::from_secs(10);

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli")
}

/// The agent dir, the project and the extension's log under `root`, wired up: `mcp.json`
/// with the probe server, a small keep-recent budget (so `compact` has work), and an
/// extension directory whose manifest runs `soak.py` with `marker` on its command line.
struct Setup {
    agent: PathBuf,
    cwd: PathBuf,
    ext: PathBuf,
    log: PathBuf,
    marker: String,
}

fn setup(root: &Path, crash_at: u32, stamp_ms: u64) -> Setup {
    let (agent, cwd, ext) = (root.join("agent"), root.join("work"), root.join("soak-ext"));
    for d in [&agent, &cwd, &ext] {
        fs::create_dir_all(d).unwrap();
    }
    let marker = format!("soak-marker-{}", root.display());
    // The MCP Python SDK from mcp-server-time's virtualenv (scripts/install-mcp-servers).
    let python =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-servers/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-mcp-servers",
        python.display()
    );
    let probe = tests_dir().join("mcp/probe_server.py");
    let pidfile = root.join("probe.pid");
    fs::write(
        agent.join("mcp.json"),
        json!({"mcpServers": {"probe": {"command": python, "args": [probe, &marker, pidfile]}}})
            .to_string(),
    )
    .unwrap();
    fs::write(
        agent.join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 4}}).to_string(),
    )
    .unwrap();
    let log = root.join("soak.log");
    fs::write(
        ext.join("extension.json"),
        json!({
            "name": "soak", "version": "0", "protocol": 1,
            "command": ["python3", tests_dir().join("extensions/soak.py"), &marker],
            "env": {"SOAK_LOG": log, "SOAK_CRASH": crash_at.to_string(),
                    "SOAK_STAMP_MS": stamp_ms.to_string()},
        })
        .to_string(),
    )
    .unwrap();
    Setup {
        agent,
        cwd,
        ext,
        log,
        marker,
    }
}

/// `turns` replies that each call the extension's `stamp` and the MCP server's `nap` (call ids
/// prefixed with `run`), then a text reply `end`.
fn turns(run: &str, turns: usize, end: &str) -> Vec<Value> {
    let mut replies: Vec<Value> = (0..turns)
        .map(|k| {
            json!({"content": [
                {"type": "text", "text": format!("turn {k}")},
                {"type": "toolCall", "id": format!("{run}s{k}"), "name": "stamp", "arguments": {"n": k}},
                {"type": "toolCall", "id": format!("{run}m{k}"), "name": "mcp__probe__nap",
                 "arguments": {"ms": NAP_MS}}
            ], "delayMs": 2})
        })
        .collect();
    replies.push(json!({"content": [{"type": "text", "text": end}]}));
    replies
}

fn pith(s: &Setup) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pith"));
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PITH_AGENT_DIR", &s.agent)
        .env_remove("RUST_LOG")
        .current_dir(&s.cwd)
        .arg("-e")
        .arg(&s.ext);
    cmd
}

/// Live processes whose command line holds `marker` (zombies left out).
fn processes_with(marker: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = fs::read_to_string(entry.path().join("stat"))
            .map(|st| {
                st.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if cmdline.contains(marker) && !zombie {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Waits for every process holding `marker` to exit; fails (after killing them) when one is
/// still there after [`CHILD_GRACE`].
fn assert_children_gone(marker: &str, after: &str) {
    let start = Instant::now();
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        if start.elapsed() > CHILD_GRACE {
            for (pid, _) in &left {
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            }
            panic!("{after}: left running: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// All session files under the agent dir.
fn session_files(agent: &Path) -> Vec<PathBuf> {
    let Ok(dirs) = fs::read_dir(agent.join("sessions")) else {
        return Vec::new();
    };
    dirs.flatten()
        .filter_map(|d| fs::read_dir(d.path()).ok())
        .flat_map(|files| files.flatten().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect()
}

/// Parsed complete lines of `file`.
fn entries(file: &Path) -> Vec<Value> {
    let text = fs::read_to_string(file).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// An entry the extension appended before allowing a call (`soak-gate`) or before its tool
/// answered (`soak-stamp`) is on disk before that call's result; a stamp's answer names an
/// entry that exists.
fn check_ordering(file: &Path, after: &str) {
    let entries = entries(file);
    let mut custom: HashMap<(String, String), usize> = HashMap::new();
    let ids: HashSet<&str> = entries.iter().filter_map(|e| e["id"].as_str()).collect();
    for (i, e) in entries.iter().enumerate() {
        if e["type"] == "custom"
            && let (Some(t), Some(call)) = (e["customType"].as_str(), e["data"]["call"].as_str())
        {
            custom.entry((t.to_owned(), call.to_owned())).or_insert(i);
        }
    }
    for (i, e) in entries.iter().enumerate() {
        let m = &e["message"];
        if m["role"] != "toolResult" || m["isError"] == true {
            continue;
        }
        let call = m["toolCallId"].as_str().unwrap().to_owned();
        let gate = custom.get(&("soak-gate".to_owned(), call.clone()));
        assert!(
            gate.is_some_and(|g| *g < i),
            "{after}: the result of {call} is on disk without the gate's entry before it"
        );
        if m["toolName"] == "stamp" {
            let stamp = custom.get(&("soak-stamp".to_owned(), call.clone()));
            assert!(
                stamp.is_some_and(|s| *s < i),
                "{after}: the result of {call} is on disk without the stamp's entry before it"
            );
            let text = m["content"][0]["text"].as_str().unwrap();
            let id = text.strip_prefix("stamped ").unwrap();
            assert!(ids.contains(id), "{after}: {text} names no entry");
        }
    }
}

/// When a round is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Moment {
    /// A random time after the spawn (startup included).
    Time,
    /// Just after the extension was asked to gate `stamp`.
    GateStamp,
    /// Just after it sent an appendEntry.
    Append,
    /// In the extension's `stamp` call.
    ExtensionTool,
    /// In the MCP server's `nap` call (just after its gate allowed it).
    McpCall,
    /// In a compaction (rpc rounds; its summary reply takes 30 ms).
    Compaction,
}

const MOMENTS: [Moment; 6] = [
    Moment::Time,
    Moment::GateStamp,
    Moment::Append,
    Moment::ExtensionTool,
    Moment::McpCall,
    Moment::Compaction,
];

impl Moment {
    /// The extension's log line that starts the moment, and the most jitter after it (µs).
    fn trigger(self) -> Option<(&'static str, u64)> {
        match self {
            Moment::Time => None,
            Moment::GateStamp => Some(("gate stamp ", 3_000)),
            Moment::Append => Some(("append ", 2_000)),
            Moment::ExtensionTool => Some(("tool ", 8_000)),
            Moment::McpCall => Some(("gate mcp__probe__nap ", NAP_MS * 1_000 + 5_000)),
            Moment::Compaction => Some(("compact", 35_000)),
        }
    }
}

/// How many lines of `log` start with `prefix`.
fn count(log: &Path, prefix: &str) -> usize {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

/// Starts a round's pith: print mode (`-p`), or rpc mode driven by a thread: a prompt, then
/// `compact` once it settles, then a second prompt, then stdin closes.
fn spawn_round(s: &Setup, i: usize, rpc: bool, script: &Path) -> Child {
    let mut cmd = pith(s);
    cmd.arg("--faux-script").arg(script);
    if i > 0 {
        cmd.arg("-c");
    }
    cmd.stderr(Stdio::null());
    if !rpc {
        return cmd
            .arg("-p")
            .arg(format!("prompt {i}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
    }
    let mut child = cmd
        .args(["--mode", "rpc"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut send = |v: Value| {
            let ok = writeln!(stdin, "{v}").is_ok() && stdin.flush().is_ok();
            ok.then_some(())
        };
        send(json!({"id": "p1", "type": "prompt", "message": format!("prompt {i}")}))?;
        let mut settled = 0;
        for line in BufReader::new(stdout).lines() {
            let v: Value = serde_json::from_str(&line.ok()?).ok()?;
            if v["type"] == "agent_settled" {
                settled += 1;
                match settled {
                    1 => send(json!({"id": "c", "type": "compact"}))?,
                    _ => return Some(()),
                }
            }
            if v["type"] == "response" && v["id"] == "c" {
                send(json!({"id": "p2", "type": "prompt", "message": format!("again {i}")}))?;
            }
        }
        Some(())
    });
    child
}

#[test]
fn sigkill_with_an_extension_and_an_mcp_server_attached_loses_nothing() {
    let rounds: usize = std::env::var("PITH_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let tmp = tempfile::tempdir().unwrap();
    let s = setup(tmp.path(), 0, 5);
    // `PITH_KILL_SEED` picks other moments (xorshift: any value but 0).
    let seed = std::env::var("PITH_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|s| *s != 0)
        .unwrap_or(0x2545_F491_4F6C_DD1D);
    let mut rng = Rng(seed);
    let mut accepted: HashSet<String> = HashSet::new();
    let mut torn: HashSet<String> = HashSet::new();
    let mut entries_seen = 0;
    let mut landed: HashMap<(Moment, bool), usize> = HashMap::new();
    let started = Instant::now();
    for i in 0..rounds {
        let rpc = i % 2 == 1;
        let run = format!("r{i}");
        let mut replies = turns(&run, 3, "done");
        if rpc {
            replies.push(json!({"content": [{"type": "text", "text": "summary"}], "delayMs": 30}));
            replies.extend(turns(&format!("{run}b"), 2, "done again"));
        }
        let script = tmp.path().join("script.json");
        fs::write(&script, Value::from(replies).to_string()).unwrap();
        fs::write(&s.log, "").unwrap();
        let moment = MOMENTS[(rng.next() % MOMENTS.len() as u64) as usize];
        let moment = if moment == Moment::Compaction && !rpc {
            Moment::McpCall
        } else {
            moment
        };
        let mut child = spawn_round(&s, i, rpc, &script);
        let start = Instant::now();
        let deadline = match moment.trigger() {
            None => start + Duration::from_micros(rng.next() % 3_000_000),
            Some((prefix, jitter)) => {
                let nth = 1 + (rng.next() % 3) as usize;
                let nth = if moment == Moment::Compaction { 1 } else { nth };
                while count(&s.log, prefix) < nth
                    && child.try_wait().unwrap().is_none()
                    && start.elapsed() < Duration::from_secs(30)
                {
                    std::thread::sleep(Duration::from_micros(300));
                }
                Instant::now() + Duration::from_micros(rng.next() % jitter)
            }
        };
        while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_micros(200));
        }
        let mid_run = child.try_wait().unwrap().is_none();
        *landed.entry((moment, mid_run)).or_default() += 1;
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        let after = format!(
            "kill {i} ({moment:?}, {})",
            if rpc { "rpc" } else { "print" }
        );
        assert_children_gone(&s.marker, &after);
        let files = session_files(&s.agent);
        assert!(
            files.len() <= 1,
            "{after}: more than one session: {files:?}"
        );
        if let Some(file) = session_file(&s.agent) {
            let now = check(&file, &s.agent, &mut torn);
            assert!(now >= entries_seen, "{after}: entries went missing");
            entries_seen = now;
            let lines = complete_lines(&file);
            if let Some(lost) = accepted.difference(&lines).next() {
                panic!("{after} lost an accepted line: {lost}");
            }
            accepted = lines;
            check_ordering(&file, &after);
        }
    }
    let mut landed: Vec<_> = landed.into_iter().collect();
    landed.sort_by_key(|((m, mid), _)| (format!("{m:?}"), *mid));
    eprintln!(
        "{rounds} kills in {:?}; (moment, mid-run) → count: {landed:?}",
        started.elapsed()
    );
    // A clean run continues the session after all that, with both attached.
    let script = tmp.path().join("script.json");
    fs::write(
        &script,
        Value::from(turns("final", 1, "all done")).to_string(),
    )
    .unwrap();
    let out = pith(&s)
        .arg("--faux-script")
        .arg(&script)
        .args(["-p", "-c", "after the kills"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "all done\n");
    let files = session_files(&s.agent);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    assert!(check(file, &s.agent, &mut torn) > entries_seen);
    assert!(
        accepted.is_subset(&complete_lines(file)),
        "the clean run lost an accepted line"
    );
    check_ordering(file, "the clean run");
    let results: Vec<Value> = entries(file)
        .into_iter()
        .filter(|e| {
            e["message"]["role"] == "toolResult"
                && e["message"]["toolCallId"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("final"))
        })
        .map(|e| {
            json!([
                e["message"]["toolCallId"],
                e["message"]["content"][0]["text"]
            ])
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[1], json!(["finalm0", "slept"]));
    assert_children_gone(&s.marker, "the clean run");
    let locks: Vec<_> = fs::read_dir(file.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".lock"))
        .map(|e| e.file_name())
        .collect();
    assert!(locks.is_empty(), "lock files left: {locks:?}");
    let mid_run: usize = landed
        .iter()
        .filter(|((_, mid), _)| *mid)
        .map(|(_, n)| n)
        .sum();
    assert!(
        mid_run * 2 >= rounds,
        "only {mid_run} of {rounds} kills landed mid-run"
    );
}

/// The extension exits in the middle of its second `stamp` call (after its entry was
/// appended) and the MCP server exits in the middle of a call, while pith writes the turn:
/// both calls end as error results, the run finishes, and every entry is on disk.
#[test]
fn an_extension_and_an_mcp_server_dying_mid_call_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = setup(tmp.path(), 2, 5);
    let call = |id: &str, name: &str, args: Value| json!({"type": "toolCall", "id": id, "name": name, "arguments": args});
    let script = json!([
        {"content": [call("a1", "stamp", json!({"n": 1})), call("n1", "mcp__probe__nap", json!({"ms": 1}))]},
        {"content": [call("a2", "stamp", json!({"n": 2})), call("d2", "mcp__probe__die", json!({}))]},
        {"content": [call("a3", "stamp", json!({"n": 3}))]},
        {"content": [{"type": "text", "text": "done"}]}
    ]);
    let path = tmp.path().join("script.json");
    fs::write(&path, script.to_string()).unwrap();
    let out = pith(&s)
        .arg("--faux-script")
        .arg(&path)
        .args(["-p", "go"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n", "{stderr}");
    let files = session_files(&s.agent);
    let file = &files[0];
    let mut torn = HashSet::new();
    check(file, &s.agent, &mut torn);
    assert!(torn.is_empty());
    check_ordering(file, "the fault run");
    let entries = entries(file);
    let results: Vec<(String, bool)> = entries
        .iter()
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| {
            (
                e["message"]["toolCallId"].as_str().unwrap().to_owned(),
                e["message"]["isError"] == true,
            )
        })
        .collect();
    let by_id: HashMap<_, _> = results.iter().cloned().collect();
    assert_eq!(results.len(), 5, "{results:?}");
    assert!(!by_id["a1"] && !by_id["n1"], "{results:?}");
    assert!(by_id["a2"], "the extension died mid-call: {results:?}");
    assert!(by_id["d2"], "the MCP server died mid-call: {results:?}");
    // The entry appended in the call the extension died in is there.
    let stamps: Vec<&str> = entries
        .iter()
        .filter(|e| e["customType"] == "soak-stamp")
        .filter_map(|e| e["data"]["call"].as_str())
        .collect();
    assert!(
        stamps.starts_with(&["a1", "a2"]),
        "stamps on disk: {stamps:?}"
    );
    let roles: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["message"]["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    assert_children_gone(&s.marker, "the fault run");
}

/// An extension busy in a long tool call and an MCP server in a call that never ends do not
/// read their stdin, so they would not notice a SIGKILLed pith for as long as the calls last;
/// their guards (`pith __guard`) end them at once.
#[test]
fn busy_children_of_a_killed_pith_end_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = setup(tmp.path(), 0, 600_000);
    let call =
        |id: &str, name: &str| json!({"type": "toolCall", "id": id, "name": name, "arguments": {}});
    let script = json!([
        {"content": [call("h", "mcp__probe__hang"), call("s", "stamp")]},
        {"content": [{"type": "text", "text": "never"}]}
    ]);
    let path = tmp.path().join("script.json");
    fs::write(&path, script.to_string()).unwrap();
    let mut child = pith(&s)
        .arg("--faux-script")
        .arg(&path)
        .args(["-p", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while count(&s.log, "tool s") == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the stamp call never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Both calls are running: the extension sleeps, the server waits.
    std::thread::sleep(Duration::from_millis(300));
    let running = processes_with(&s.marker);
    // The extension and the server, each with its guard.
    assert_eq!(running.len(), 4, "{running:?}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = Instant::now();
    while !processes_with(&s.marker).is_empty() {
        assert!(
            killed.elapsed() < Duration::from_secs(3),
            "still running {:?} after the kill: {:?}",
            killed.elapsed(),
            processes_with(&s.marker)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
