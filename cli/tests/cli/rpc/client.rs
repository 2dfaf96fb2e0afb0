//! The test client: a `pith --mode rpc` child on the offline model, fed JSON lines and read
//! line by line with a timeout; and helpers to read what it wrote to disk.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a line may take: generous, runs are milliseconds.
pub const WAIT: Duration = Duration::from_secs(20);

/// A running `pith --mode rpc` and the lines it wrote.
pub struct Client {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Taken by [`Client::close`], which hands it over to read the files afterwards.
    root: Option<tempfile::TempDir>,
}

impl Client {
    /// pith on the offline model playing `script` (a JSON array of replies), with
    /// `settings` as the agent's settings.json.
    pub fn start(script: Value, settings: Value) -> Client {
        Client::start_in(tempfile::tempdir().unwrap(), script, settings, &[])
    }

    /// [`Client::start`] in `root` (the folder a closed client handed back, so its sessions
    /// are there), with `args` after the mode's.
    pub fn start_in(
        root: tempfile::TempDir,
        script: Value,
        settings: Value,
        args: &[&str],
    ) -> Client {
        let (agent, cwd) = (root.path().join("agent"), root.path().join("work"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
        let script_path = root.path().join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pith"));
        // The offline model must not turn into a real provider on a machine with keys.
        for var in pith_llm::auth::KEY_VARS {
            cmd.env_remove(var);
        }
        let mut child = cmd
            .env("PITH_AGENT_DIR", &agent)
            .current_dir(&cwd)
            .args(["--mode", "rpc", "--faux-script"])
            .arg(&script_path)
            .args(args)
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
        Client {
            child,
            stdin,
            lines,
            root: Some(root),
        }
    }

    pub fn agent(&self) -> PathBuf {
        self.root.as_ref().unwrap().path().join("agent")
    }

    pub fn send_raw(&mut self, bytes: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, command: Value) {
        self.send_raw(&format!("{command}\n"));
    }

    /// The next line, parsed.
    pub fn next(&self) -> Value {
        let line = self.lines.recv_timeout(WAIT).expect("a line from pith");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Lines up to and including the first that `stop` accepts.
    pub fn until(&self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let v = self.next();
            let done = stop(&v);
            seen.push(v);
            if done {
                return seen;
            }
        }
    }

    /// Sends `command` and returns the next line: its response when it causes no events.
    pub fn call(&mut self, command: Value) -> Value {
        self.send(command);
        self.next()
    }

    /// Sends `command`; the events it caused, then its response.
    pub fn call_with_events(&mut self, command: Value) -> (Vec<Value>, Value) {
        self.send(command);
        let mut seen = self.until(|v| v["type"] == "response");
        let response = seen.pop().unwrap();
        (seen, response)
    }

    /// No line within `wait`.
    pub fn assert_quiet(&self, wait: Duration) {
        match self.lines.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("unexpected: {other:?}"),
        }
    }

    /// Closes stdin and waits for the exit.
    pub fn close(mut self) -> (ExitStatus, tempfile::TempDir) {
        self.stdin = None;
        let status = wait_for(&mut self.child);
        (status, self.root.take().unwrap())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait_for(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "pith did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn reply(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

pub fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

pub use pith_tests::files::session_files;

/// Each line's `type`, or the role for messages.
pub fn kinds(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            match v["type"].as_str().unwrap() {
                "message" => v["message"]["role"].as_str().unwrap().to_owned(),
                t => t.to_owned(),
            }
        })
        .collect()
}

pub fn faux_model() -> Value {
    json!({
        "id": "faux-1",
        "name": "faux (offline)",
        "api": "faux",
        "provider": "faux",
        "baseUrl": "",
        "reasoning": false,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000,
        "maxTokens": 16384
    })
}
