//! What the MCP tests share: `pith` with a scratch agent dir, the published and the probe
//! servers, one prompt run in print, json or rpc mode, a small rpc client, and process checks.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};

/// How long one rpc line may take (servers start in about a second).
const WAIT: Duration = Duration::from_secs(30);

/// `pith` with `agent` as its agent dir, in `cwd`, no provider keys.
pub fn pith(agent: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::cargo_bin("pith").expect("binary");
    for var in pith_llm::auth::KEY_VARS {
        cmd.env_remove(var);
    }
    cmd.env("PITH_AGENT_DIR", agent)
        .env_remove("RUST_LOG")
        .current_dir(cwd)
        .timeout(Duration::from_secs(90));
    cmd
}

/// Where scripts/install-mcp-servers puts the published servers.
pub fn mcp_servers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-servers")
}

/// `@modelcontextprotocol/server-filesystem` from npm (scripts/install-mcp-servers).
pub fn filesystem_server() -> PathBuf {
    let bin = mcp_servers_dir().join("node_modules/.bin/mcp-server-filesystem");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/install-mcp-servers",
        bin.display()
    );
    bin
}

/// An `mcp.json` entry for `probe_server.py` (the MCP Python SDK, from mcp-server-time's
/// venv): `marker` is in the command lines of the server and its grandchildren, `pidfile`
/// gets the server's pid at each `pid` call.
pub fn probe_entry(marker: &str, pidfile: &Path, timeout: Option<u64>) -> Value {
    let python = mcp_servers_dir().join("venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-mcp-servers",
        python.display()
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cli/mcp/probe_server.py");
    let mut entry = json!({"command": python, "args": [script, marker, pidfile]});
    if let Some(timeout) = timeout {
        entry["timeout"] = json!(timeout);
    }
    entry
}

/// `agent/` (with `mcp.json` holding `servers`) and `repo/` under `root`.
pub fn setup(root: &Path, servers: Value) -> (PathBuf, PathBuf) {
    let (agent, cwd) = (root.join("agent"), root.join("repo"));
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(&cwd).unwrap();
    fs::write(
        agent.join("mcp.json"),
        serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
    (agent, cwd)
}

/// Writes a faux script of `replies` under `root`.
pub fn script(root: &Path, replies: Value) -> PathBuf {
    let path = root.join("script.json");
    fs::write(&path, replies.to_string()).unwrap();
    path
}

/// Tool calls in one reply: `(id, name, arguments)`.
pub fn calls(calls: &[(&str, &str, Value)]) -> Value {
    let blocks: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"type":"toolCall","id":id,"name":name,"arguments":args}))
        .collect();
    json!({ "content": blocks })
}

/// A text reply.
pub fn text(text: &str) -> Value {
    json!({"content":[{"type":"text","text":text}]})
}

/// The ways a prompt reaches pith.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-p`.
    Print,
    /// `--mode json`.
    Json,
    /// `--mode rpc`, the prompt as a `prompt` command.
    Rpc,
}

pub const MODES: [Mode; 3] = [Mode::Print, Mode::Json, Mode::Rpc];

/// One pith run: where, and its flags (`--session`, `--faux-script`, `-e`, …).
pub struct Run<'a> {
    pub agent: &'a Path,
    pub cwd: &'a Path,
    pub args: Vec<OsString>,
}

impl Run<'_> {
    /// Runs `prompt` once in `mode` and waits for pith to exit 0. In rpc mode a `confirm`
    /// dialog is answered `confirm`. Returns stdout's lines (rpc: up to `agent_settled`;
    /// print: as JSON strings) and the dialogs asked.
    pub fn prompt(&self, mode: Mode, prompt: &str, confirm: bool) -> (Vec<Value>, Vec<Value>) {
        match mode {
            Mode::Print | Mode::Json => {
                let flag: &[&str] = if mode == Mode::Print {
                    &["-p"]
                } else {
                    &["--mode", "json"]
                };
                let out = pith(self.agent, self.cwd)
                    .args(flag)
                    .args(&self.args)
                    .arg(prompt)
                    .assert()
                    .success();
                let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
                let lines = stdout
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap_or_else(|_| json!(l)))
                    .collect();
                (lines, Vec::new())
            }
            Mode::Rpc => {
                let mut client = Rpc::start(self.agent, self.cwd, &self.args);
                client.send(json!({"type":"prompt","message":prompt}));
                let mut seen = Vec::new();
                let mut dialogs = Vec::new();
                loop {
                    let line = client.next();
                    if line["type"] == "extension_ui_request" && line["method"] == "confirm" {
                        dialogs.push(line.clone());
                        client.send(json!({"type":"extension_ui_response","id":line["id"],
                                           "confirmed":confirm}));
                    }
                    let done = line["type"] == "agent_settled";
                    seen.push(line);
                    if done {
                        break;
                    }
                }
                assert!(client.close().success());
                (seen, dialogs)
            }
        }
    }
}

/// A `pith --mode rpc` child and its stdout lines.
pub struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Rpc {
    /// Starts `pith --mode rpc` in `cwd` with `args`.
    pub fn start(agent: &Path, cwd: &Path, args: &[OsString]) -> Rpc {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pith"));
        for var in pith_llm::auth::KEY_VARS {
            cmd.env_remove(var);
        }
        cmd.env("PITH_AGENT_DIR", agent)
            .env_remove("RUST_LOG")
            .current_dir(cwd)
            .args(["--mode", "rpc"])
            .args(args);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Rpc {
            child,
            stdin,
            lines,
        }
    }

    pub fn send(&mut self, command: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line, parsed.
    pub fn next(&self) -> Value {
        let line = self.lines.recv_timeout(WAIT).expect("a line from pith");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Sends `command` (with `id`) and returns its response, skipping other lines.
    pub fn call(&mut self, id: &str, mut command: Value) -> Value {
        command["id"] = json!(id);
        self.send(command);
        loop {
            let line = self.next();
            if line["type"] == "response" && line["id"] == id {
                return line;
            }
        }
    }

    /// Prompts and returns the lines up to `agent_settled`.
    pub fn prompt(&mut self, text: &str) -> Vec<Value> {
        self.send(json!({"type":"prompt","message":text}));
        let mut seen = Vec::new();
        loop {
            let line = self.next();
            let done = line["type"] == "agent_settled";
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// Closes stdin and waits for the exit.
    pub fn close(mut self) -> std::process::ExitStatus {
        self.stdin = None;
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "pith did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The session file's tool results as `{id, name, text, isError}` (texts joined).
pub fn tool_results(file: &Path) -> Vec<Value> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["message"]["role"] == "toolResult")
        .map(|e| {
            let m = &e["message"];
            let text: Vec<&str> = m["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect();
            json!({"id": m["toolCallId"], "name": m["toolName"], "text": text.join("\n"),
                   "isError": m["isError"]})
        })
        .collect()
}

/// Running processes whose command line mentions `needle` (zombies have none).
pub fn processes_naming(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push(cmdline);
        }
    }
    found
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
pub fn gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// The process group of `pid` (pith starts a server under its guard, `pith __guard`, which
/// leads the group).
pub fn group_of(pid: u32) -> u32 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the `(comm)`: state, ppid, pgrp, …
    stat.rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(2))
        .and_then(|g| g.parse().ok())
        .unwrap()
}

/// The live processes of process group `group` (zombies left out).
pub fn group_members(group: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the `(comm)`: state, ppid, pgrp, …
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.first() != Some(&"Z") && fields.get(2) == Some(&group.to_string().as_str()) {
            found.push(pid);
        }
    }
    found
}

/// Waits up to 5 s for `check` (a killed process group takes a moment to be reaped).
pub fn eventually(check: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}
