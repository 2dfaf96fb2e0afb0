//! One extension process: spawned without a shell in its own process group, stdin fed by a
//! writer task, stdout read line by line (at most 16 MiB a line), stderr appended to a
//! rotated log file with its last lines kept for crash reports (spec: extensions.md §1.2
//! "Framing", "Process").

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use ractor::ActorRef;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use pith_events::ext::{ExtensionSpec, MAX_LINE_BYTES};
use pith_tools::ChildGuard;

use crate::envelope::Envelope;
use crate::extension::ExtensionMsg;
use crate::extensions::outbox::Outbox;
use crate::extensions::process_input::ProcessInput;
use crate::trace::{ActorName, MessageIds, Trace};

/// The log is rotated (to `<name>.log.1`) when it passes this size.
const LOG_ROTATE_BYTES: u64 = 5 * 1024 * 1024;
/// Lines of stderr kept for crash reports.
const TAIL_LINES: usize = 50;
/// How long the exit report waits for the rest of stdout and stderr to be read.
const DRAIN_AFTER_EXIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The last lines an extension wrote to stderr.
pub type Tail = Arc<Mutex<VecDeque<String>>>;

/// A running extension process.
pub struct Child {
    /// Lines to write to its stdin (a newline is added); closing it closes stdin.
    pub stdin: Outbox,
    /// Its process group (= its pid).
    pub pgid: i32,
}

impl Drop for Child {
    /// Its stdin closes once what is queued is written; the writer task ends.
    fn drop(&mut self) {
        self.stdin.close();
    }
}

impl Child {
    /// Sends a signal to its whole process group; errors (it is gone) are ignored.
    pub fn signal(&self, signal: rustix::process::Signal) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.pgid) {
            let _ = rustix::process::kill_process_group(pid, signal);
        }
    }
}

/// How the child reaches its actor.
pub struct Wiring {
    /// The actor.
    pub me: ActorRef<Envelope<ExtensionMsg>>,
    /// Numbers the messages the child's tasks send.
    pub ids: MessageIds,
    /// `Extension:<name>`.
    pub name: ActorName,
    /// Which incarnation this is: reports of older ones are ignored.
    pub generation: u64,
}

impl Wiring {
    fn send(&self, input: ProcessInput) {
        let trace = Trace::root(&self.ids, self.name.clone());
        let _ = self.me.cast(Envelope {
            trace,
            msg: ExtensionMsg::Process(input),
        });
    }
}

/// The environment every extension process gets besides its manifest's `env` (spec:
/// extensions.md §1.2 "Discovery and manifest"): `PITH_EXTENSION_PROTOCOL`, `PITH_SESSION_ID`,
/// `PITH_SESSION_FILE` (empty without a file), `PITH_CWD`, `PITH_EXTENSION_DIR`, `PITH_MODE`.
pub fn protocol_env(
    spec: &ExtensionSpec,
    mode: &str,
    cwd: &Path,
    session_id: &str,
    session_file: Option<&Path>,
) -> Vec<(String, String)> {
    let text = |p: &Path| p.to_string_lossy().into_owned();
    vec![
        (
            "PITH_EXTENSION_PROTOCOL".into(),
            pith_events::ext::PROTOCOL_VERSION.to_string(),
        ),
        ("PITH_SESSION_ID".into(), session_id.to_owned()),
        (
            "PITH_SESSION_FILE".into(),
            session_file.map(text).unwrap_or_default(),
        ),
        ("PITH_CWD".into(), text(cwd)),
        ("PITH_EXTENSION_DIR".into(), text(&spec.dir)),
        ("PITH_MODE".into(), mode.to_owned()),
    ]
}

/// The argv with relative paths resolved against the extension's directory: the program when
/// it names a path (or a file in the directory), and every argument that names a file there.
pub fn resolve_command(spec: &ExtensionSpec) -> Vec<String> {
    let dir = &spec.dir;
    spec.manifest
        .command
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let p = Path::new(arg);
            let local = dir.join(p);
            let resolve = p.is_relative()
                && ((i == 0 && arg.contains('/')) || local.is_file() || local.is_dir());
            if resolve {
                local.to_string_lossy().into_owned()
            } else {
                arg.clone()
            }
        })
        .collect()
}

/// Spawns the extension in `cwd` with `env` added, under `guard` when given (so it does not
/// outlive a killed pith). Reports go to the actor as [`ProcessInput::Line`] and
/// [`ProcessInput::Closed`].
///
/// Errors: the program cannot be started.
pub fn spawn(
    spec: &ExtensionSpec,
    cwd: &Path,
    env: &[(String, String)],
    guard: Option<&ChildGuard>,
    log: PathBuf,
    tail: Tail,
    wiring: Wiring,
) -> io::Result<Child> {
    let argv = resolve_command(spec);
    let Some((program, args)) = argv.split_first() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the manifest's command is empty",
        ));
    };
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let (program, args) = match guard {
        Some(guard) => {
            // The child's PATH: the manifest's or ours.
            let path = env
                .iter()
                .map(|(k, v)| (k, v))
                .chain(spec.manifest.env.iter())
                .find(|(k, _)| k.as_str() == "PATH")
                .map(|(_, v)| OsString::from(v))
                .or_else(|| std::env::var_os("PATH"));
            guard.wrap(OsStr::new(program), args, cwd, path.as_deref())
        }
        None => (OsString::from(program), args),
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .envs(spec.manifest.env.iter())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn()?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .unwrap_or(0);
    let outbox = Outbox::default();
    if let Some(mut stdin) = child.stdin.take() {
        let outbox = outbox.clone();
        tokio::spawn(async move {
            while let Some(line) = outbox.next().await {
                let mut bytes = line.into_bytes();
                bytes.push(b'\n');
                if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
    }
    let wiring = Arc::new(wiring);
    let stdout = child.stdout.take().map(|stdout| {
        let wiring = wiring.clone();
        tokio::spawn(async move { read_lines(stdout, &wiring).await })
    });
    let stderr = child
        .stderr
        .take()
        .map(|stderr| tokio::spawn(async move { log_stderr(stderr, log, tail).await }));
    tokio::spawn(async move {
        let why = match child.wait().await {
            Ok(status) => match status.code() {
                Some(code) => format!("exited (status {code})"),
                None => format!("exited ({status})"),
            },
            Err(e) => format!("could not be waited for: {e}"),
        };
        // What it wrote before it exited comes first: its last lines are handled (a reply, a
        // progress note) and its last stderr line is in the crash report. A descendant that
        // keeps the pipes open does not hold the report back for long.
        for task in [stdout, stderr].into_iter().flatten() {
            let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, task).await;
        }
        wiring.send(ProcessInput::Closed {
            generation: wiring.generation,
            why,
        });
    });
    Ok(Child {
        stdin: outbox,
        pgid,
    })
}

async fn read_lines(stdout: tokio::process::ChildStdout, wiring: &Wiring) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let limit = (MAX_LINE_BYTES + 1) as u64;
        match (&mut reader).take(limit).read_until(b'\n', &mut buf).await {
            // End of stdout: the exit report follows.
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if buf.last() != Some(&b'\n') && buf.len() > MAX_LINE_BYTES {
            wiring.send(ProcessInput::Closed {
                generation: wiring.generation,
                why: "wrote a line over 16 MiB".into(),
            });
            return;
        }
        let line = String::from_utf8_lossy(&buf).trim_end().to_owned();
        if line.is_empty() {
            continue;
        }
        wiring.send(ProcessInput::Line {
            generation: wiring.generation,
            line,
        });
    }
}

async fn log_stderr(stderr: tokio::process::ChildStderr, log: PathBuf, tail: Tail) {
    if let Some(dir) = log.parent() {
        let _ = tokio::fs::create_dir_all(dir).await;
    }
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(mut t) = tail.lock() {
            if t.len() == TAIL_LINES {
                t.pop_front();
            }
            t.push_back(line.clone());
        }
        if tokio::fs::metadata(&log)
            .await
            .is_ok_and(|m| m.len() > LOG_ROTATE_BYTES)
        {
            let _ = tokio::fs::rename(&log, log.with_extension("log.1")).await;
        }
        if let Ok(mut f) = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .await
        {
            let _ = f.write_all(format!("{line}\n").as_bytes()).await;
        }
    }
}
