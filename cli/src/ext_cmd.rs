//! `pith extension list` and `pith extension check <path>` (spec: extensions.md §1.2
//! "Discovery and manifest").
//!
//! `check` speaks PXP/1 to the extension as pith would, without a model: `initialize`, then
//! `session_start` and one harmless `intercept` for each interceptable event it subscribed
//! to, then `shutdown`; it prints each exchange and fails on a malformed or late answer. With
//! `--transcript FILE` it plays a golden wire transcript instead (`crate::ext_replay`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};

use pith_events::ext::{self, Decision, Incoming, InitializeResult, Scope};

/// `pith extension …`.
#[derive(Debug, Subcommand)]
pub enum ExtensionCommand {
    /// The extensions a session in this directory would load, in load order.
    List {
        /// Add these, as `-e` would.
        #[arg(short = 'e', long = "extension", value_name = "PATH")]
        extensions: Vec<PathBuf>,
    },
    /// Run an extension through the protocol's handshake and sample events, or replay a
    /// golden transcript against it.
    Check {
        /// A directory with extension.json, a manifest, or a program.
        path: PathBuf,
        /// A wire transcript (JSON lines, as in docs/extension-protocol/transcripts/): pith's
        /// lines are sent as recorded and the extension's compared, ids normalised; a
        /// difference exits non-zero.
        #[arg(long, value_name = "FILE")]
        transcript: Option<PathBuf>,
    },
}

/// Runs the subcommand.
///
/// Errors: an extension that cannot be loaded or started.
pub fn run(cmd: ExtensionCommand) -> Result<ExitCode> {
    match cmd {
        ExtensionCommand::List { extensions } => {
            let env = pith_store::SessionEnv::system();
            let cwd = std::env::current_dir()?;
            // Listing never asks and never trusts: it shows what a trusted project adds.
            let project = crate::ext_discovery::scan(
                &crate::ext_discovery::project_dir(&cwd),
                Scope::Project,
            );
            let specs = crate::ext_discovery::discover(&crate::ext_discovery::Sources {
                agent_dir: &env.agent_dir,
                cwd: &cwd,
                cli: &extensions,
                no_discovery: false,
                project: &crate::ext_trust::Allowed::default(),
            })?;
            for s in &specs {
                println!(
                    "{}\t{}\t{}",
                    s.manifest.name,
                    s.scope.as_str(),
                    s.manifest.command.join(" ")
                );
            }
            for s in &project {
                println!(
                    "{}\tproject (runs once the project is trusted)\t{}",
                    s.manifest.name,
                    s.manifest.command.join(" ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ExtensionCommand::Check { path, transcript } => {
            let spec = crate::ext_discovery::load(&path, Scope::Cli)?;
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            match transcript {
                Some(file) => rt.block_on(crate::ext_replay::replay(spec, &file)),
                None => rt.block_on(check(spec)),
            }
        }
    }
}

struct Conn {
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next: u64,
}

impl Conn {
    async fn ask(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next += 1;
        let line = ext::request(self.next, method, params);
        println!("→ {line}");
        self.stdin.write_all(format!("{line}\n").as_bytes()).await?;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .with_context(|| format!("no answer to {method} within 30 s"))??
                .with_context(|| format!("the extension exited before answering {method}"))?;
            println!("← {line}");
            match Incoming::parse(&line) {
                Some(Incoming::Response { id, result }) if id == json!(self.next) => {
                    return result.map_err(|e| anyhow::anyhow!("{method} failed: {e}"));
                }
                Some(Incoming::Request { id, method, .. }) => {
                    // An empty session; no UI here: dialogs are cancelled, as in print mode.
                    let reply = match method.as_str() {
                        "session/getBranch" => ext::response(&id, json!({"entries": []})),
                        "session/appendEntry" => ext::response(&id, json!({"entryId": "check"})),
                        "session/sendMessage" => ext::response(&id, json!({})),
                        m if m.starts_with("ui/") => ext::error_response(
                            &id,
                            ext::code::NO_UI,
                            "no-ui",
                            Some(json!({"cancelled": true})),
                        ),
                        _ => ext::error_response(
                            &id,
                            ext::code::METHOD_NOT_FOUND,
                            "unknown method",
                            None,
                        ),
                    };
                    println!("→ {reply}");
                    self.stdin
                        .write_all(format!("{reply}\n").as_bytes())
                        .await?;
                }
                Some(_) => {}
                None => bail!("not a JSON-RPC line: {line}"),
            }
        }
    }
}

async fn check(spec: pith_events::ext::ExtensionSpec) -> Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let (mut child, stdin, lines) = crate::ext_replay::start(&spec, &cwd, "print")?;
    let mut conn = Conn {
        stdin,
        lines,
        next: 0,
    };
    let init = conn
        .ask(
            "initialize",
            json!({"protocolVersion":1,"host":{"name":"pith","version":env!("CARGO_PKG_VERSION")},
                "mode":"print","hasUI":false,"cwd":cwd,"session":{"id":"check","file":null},
                "extension":{"name":spec.manifest.name,"scope":"cli","dir":spec.dir}}),
        )
        .await?;
    let init: InitializeResult =
        serde_json::from_value(init).context("the initialize answer does not fit PXP/1")?;
    if init.protocol_version != ext::PROTOCOL_VERSION {
        bail!("protocolVersion {} (pith speaks 1)", init.protocol_version);
    }
    let samples = [
        (
            "session_start",
            json!({"type":"session_start","reason":"startup","previousSessionFile":null,"leafId":null,"customEntries":[]}),
        ),
        (
            "input",
            json!({"type":"input","text":"hello","images":[],"source":"interactive"}),
        ),
        (
            "before_agent_start",
            json!({"type":"before_agent_start","prompt":"hello","images":[],"systemPrompt":""}),
        ),
        (
            "tool_call",
            json!({"type":"tool_call","toolCallId":"check_1","toolName":"read","input":{"path":"README.md"},"source":"builtin","annotations":{}}),
        ),
        (
            "tool_result",
            json!({"type":"tool_result","toolCallId":"check_1","toolName":"read","input":{"path":"README.md"},"content":[{"type":"text","text":"hi"}],"details":null,"isError":false}),
        ),
    ];
    for (event, payload) in samples {
        match init.subscribe.get(event) {
            Some(ext::SubscribeMode::Observe) => {
                let line = ext::notification("event", json!({"event": payload}));
                println!("→ {line}");
                conn.stdin.write_all(format!("{line}\n").as_bytes()).await?;
            }
            Some(_) => {
                let answer = conn.ask("intercept", json!({"event": payload})).await?;
                serde_json::from_value::<Decision>(answer)
                    .with_context(|| format!("the {event} decision does not fit PXP/1"))?;
            }
            None => {}
        }
    }
    let _ = conn.ask("shutdown", json!({})).await;
    drop(conn);
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    println!(
        "ok: {} speaks PXP/1 ({} tools, {} commands)",
        spec.manifest.name,
        init.tools.len(),
        init.commands.len()
    );
    Ok(ExitCode::SUCCESS)
}
