//! One MCP server: a task owning its rmcp connection (spec: extensions.md §1.3).
//!
//! The task (`McpServer`) takes `ServerMsg`s. It connects at start (10 s for the
//! handshake and the first `tools/list`), answers `ServerMsg::Peer` with a live connection
//! (reconnecting first when the old one dropped: pi's "a dropped server reconnects on the next
//! call"), refreshes its tools on `tools/list_changed`, and on `ServerMsg::Stop` closes the
//! connection: stdin closed, SIGTERM, SIGKILL (rmcp's graceful shutdown, sent to the child's
//! process group), then SIGKILL to whatever is left of the group, so `npx`/`uvx`
//! grandchildren do not outlive pith.
//!
//! Calls do not go through the task: a tool asks for the peer and sends its `tools/call`
//! itself, so slow calls run side by side.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pith_tools::ChildGuard;
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot, watch};

use crate::config::{ServerConfig, Transport, resolve_values};

/// Time for the handshake plus the first `tools/list` (Codex's default, pi's too).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a stopping server gets for rmcp's stdin-close / SIGTERM / SIGKILL sequence.
const STOP_TIMEOUT: Duration = Duration::from_secs(7);

/// The last bytes of a stdio server's stderr kept for a failure message.
const STDERR_TAIL: usize = 2048;

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Starting, or reconnecting.
    Connecting,
    /// Ready; its tools are offered.
    Connected,
    /// The last attempt failed (the message says why); the next call tries again.
    Failed(String),
    /// `enabled: false`: configured, not started.
    Disabled,
}

impl std::fmt::Display for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerState::Connecting => f.write_str("connecting"),
            ServerState::Connected => f.write_str("connected"),
            ServerState::Failed(why) => write!(f, "failed: {why}"),
            ServerState::Disabled => f.write_str("disabled"),
        }
    }
}

/// What the hub and the tools read of a server without asking its task.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: ServerState,
    /// Its tools, as the last `tools/list` gave them.
    pub(crate) tools: Vec<rmcp::model::Tool>,
    /// The stdio child's process group while it runs, for a last-resort kill.
    pub(crate) group: Option<u32>,
}

/// A request to a server's task.
pub(crate) enum ServerMsg {
    /// Answered with a live connection's peer, reconnecting first when needed; `Err` is why
    /// there is none.
    Peer(oneshot::Sender<Result<Peer<RoleClient>, String>>),
    /// The server said `tools/list_changed`: list them again.
    Refresh,
    /// Drop the connection and connect again (`/mcp reconnect`); answered, when asked,
    /// once the new attempt ended either way.
    Reconnect(Option<oneshot::Sender<()>>),
    /// Close the connection and end the task; answered once the server is gone.
    Stop(oneshot::Sender<()>),
}

/// Where a running call's progress notifications go, by progress token.
pub(crate) type ProgressRoutes = Arc<
    Mutex<
        std::collections::HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>,
    >,
>;

/// The hub's handle to one server.
pub(crate) struct ServerHandle {
    pub(crate) config: ServerConfig,
    pub(crate) shared: Arc<Mutex<Shared>>,
    /// Progress of running calls, filled by the tools, read by the rmcp handler.
    pub(crate) progress: ProgressRoutes,
    tx: mpsc::UnboundedSender<ServerMsg>,
    /// `true` once the first connection attempt ended (either way).
    settled: watch::Receiver<bool>,
}

impl ServerHandle {
    /// Starts the server's task (none for a disabled one). Needs a tokio runtime.
    pub(crate) fn start(
        config: ServerConfig,
        cwd: PathBuf,
        guard: Option<ChildGuard>,
    ) -> ServerHandle {
        let (tx, rx) = mpsc::unbounded_channel();
        let (settled_tx, settled) = watch::channel(!config.enabled);
        let state = if config.enabled {
            ServerState::Connecting
        } else {
            ServerState::Disabled
        };
        let shared = Arc::new(Mutex::new(Shared {
            state,
            tools: Vec::new(),
            group: None,
        }));
        let progress = ProgressRoutes::default();
        if config.enabled {
            let server = McpServer {
                config: config.clone(),
                cwd,
                guard,
                shared: shared.clone(),
                progress: progress.clone(),
                me: tx.downgrade(),
                conn: None,
            };
            tokio::spawn(server.run(rx, settled_tx));
        }
        ServerHandle {
            config,
            shared,
            progress,
            tx,
            settled,
        }
    }

    /// A live connection, reconnecting when the last one dropped.
    pub(crate) async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        if !self.config.enabled {
            return Err(format!(r#"MCP server "{}" is disabled"#, self.config.name));
        }
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(ServerMsg::Peer(reply))
            .map_err(|_| format!(r#"MCP server "{}" was stopped"#, self.config.name))?;
        answer
            .await
            .map_err(|_| format!(r#"MCP server "{}" was stopped"#, self.config.name))?
    }

    /// Asks for a fresh connection.
    pub(crate) fn reconnect(&self) {
        let _ = self.tx.send(ServerMsg::Reconnect(None));
    }

    /// Drops the connection, connects again and waits until that attempt ended.
    pub(crate) async fn reconnect_and_wait(&self) {
        let (reply, done) = oneshot::channel();
        if self.tx.send(ServerMsg::Reconnect(Some(reply))).is_ok() {
            let _ = done.await;
        }
    }

    /// Waits until the first connection attempt ended.
    pub(crate) async fn settled(&self) {
        let mut settled = self.settled.clone();
        let _ = settled.wait_for(|done| *done).await;
    }

    /// Stops the server and waits until it is gone.
    pub(crate) async fn stop(&self) {
        let (reply, done) = oneshot::channel();
        if self.tx.send(ServerMsg::Stop(reply)).is_ok() {
            let _ = done.await;
        }
    }

    /// SIGKILL to the server's process group, now (no graceful close): for a hub dropped
    /// without [`crate::McpHub::shutdown`].
    pub(crate) fn kill_now(&self) {
        if let Some(group) = self.shared.lock().ok().and_then(|s| s.group) {
            kill_group(group);
        }
    }

    pub(crate) fn state(&self) -> ServerState {
        self.shared
            .lock()
            .map(|s| s.state.clone())
            .unwrap_or(ServerState::Failed("state lock poisoned".into()))
    }
}

/// rmcp's client side of one connection: it reports `tools/list_changed` to the task.
#[derive(Clone)]
struct Handler {
    me: mpsc::WeakUnboundedSender<ServerMsg>,
    progress: ProgressRoutes,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route = self
            .progress
            .lock()
            .ok()
            .and_then(|routes| routes.get(&params.progress_token).cloned());
        if let Some(route) = route {
            let _ = route.send(params);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(me) = self.me.upgrade() {
            let _ = me.send(ServerMsg::Refresh);
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("pith", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A live connection.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// The stdio child's process group (its pid), for the final SIGKILL.
    group: Option<u32>,
}

/// The task of one server.
struct McpServer {
    config: ServerConfig,
    /// The session's working directory: a stdio server's `cwd` is relative to it.
    cwd: PathBuf,
    /// A stdio server starts under `pith __guard` when given (it does not outlive pith).
    guard: Option<ChildGuard>,
    shared: Arc<Mutex<Shared>>,
    progress: ProgressRoutes,
    /// Handed to the rmcp handler; weak so the task ends when the hub lets go.
    me: mpsc::WeakUnboundedSender<ServerMsg>,
    conn: Option<Connection>,
}

impl McpServer {
    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<ServerMsg>,
        settled: watch::Sender<bool>,
    ) {
        self.connect().await;
        let _ = settled.send(true);
        while let Some(msg) = rx.recv().await {
            match msg {
                ServerMsg::Peer(reply) => {
                    let alive = self.conn.as_ref().is_some_and(|c| {
                        !c.service.is_closed() && !c.service.peer().is_transport_closed()
                    });
                    if !alive {
                        self.disconnect().await;
                        self.connect().await;
                    }
                    let answer = match (&self.conn, self.state()) {
                        (Some(conn), _) => Ok(conn.service.peer().clone()),
                        (None, ServerState::Failed(why)) => Err(format!(
                            r#"MCP server "{}" is not connected: {why}"#,
                            self.config.name
                        )),
                        (None, state) => Err(format!(
                            r#"MCP server "{}" is not connected ({state})"#,
                            self.config.name
                        )),
                    };
                    let _ = reply.send(answer);
                }
                ServerMsg::Refresh => self.refresh().await,
                ServerMsg::Reconnect(reply) => {
                    self.disconnect().await;
                    self.connect().await;
                    if let Some(reply) = reply {
                        let _ = reply.send(());
                    }
                }
                ServerMsg::Stop(reply) => {
                    self.disconnect().await;
                    let _ = reply.send(());
                    return;
                }
            }
        }
        // The hub is gone without a Stop: still leave no process behind.
        self.disconnect().await;
    }

    fn state(&self) -> ServerState {
        self.shared
            .lock()
            .map(|s| s.state.clone())
            .unwrap_or(ServerState::Failed("state lock poisoned".into()))
    }

    fn set(&self, state: ServerState, tools: Option<Vec<rmcp::model::Tool>>) {
        if let Ok(mut shared) = self.shared.lock() {
            shared.state = state;
            if let Some(tools) = tools {
                shared.tools = tools;
            }
        }
    }

    async fn connect(&mut self) {
        self.set(ServerState::Connecting, None);
        let handler = Handler {
            me: self.me.clone(),
            progress: self.progress.clone(),
        };
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        let stderr_reader = Arc::new(Mutex::new(None));
        let attempt = tokio::time::timeout(
            CONNECT_TIMEOUT,
            open(
                &self.config,
                &self.cwd,
                self.guard.as_ref(),
                handler,
                stderr_tail.clone(),
                stderr_reader.clone(),
            ),
        )
        .await;
        let outcome = match attempt {
            Ok(Ok((conn, tools))) => Ok((conn, tools)),
            Ok(Err((why, group))) => Err((why, group)),
            Err(_) => Err((
                format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
                None,
            )),
        };
        match outcome {
            Ok((conn, tools)) => {
                tracing::info!(server = %self.config.name, tools = tools.len(), "MCP server connected");
                if let Ok(mut shared) = self.shared.lock() {
                    shared.group = conn.group;
                }
                self.conn = Some(conn);
                self.set(ServerState::Connected, Some(tools));
            }
            Err((mut why, group)) => {
                if let Some(group) = group {
                    kill_group(group);
                }
                // What the server said before it died ends with its stderr.
                let reader = stderr_reader.lock().ok().and_then(|mut r| r.take());
                if let Some(reader) = reader {
                    let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
                }
                let tail = stderr_tail
                    .lock()
                    .map(|t| t.trim().to_owned())
                    .unwrap_or_default();
                if !tail.is_empty() {
                    why = format!("{why}\n{tail}");
                }
                tracing::warn!(server = %self.config.name, error = %why, "MCP server failed");
                self.set(ServerState::Failed(why), Some(Vec::new()));
            }
        }
    }

    async fn refresh(&mut self) {
        let Some(conn) = &self.conn else { return };
        match tokio::time::timeout(CONNECT_TIMEOUT, conn.service.peer().list_all_tools()).await {
            Ok(Ok(tools)) => self.set(ServerState::Connected, Some(tools)),
            Ok(Err(e)) => {
                tracing::warn!(server = %self.config.name, error = %e, "tools/list failed")
            }
            Err(_) => tracing::warn!(server = %self.config.name, "tools/list timed out"),
        }
    }

    async fn disconnect(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let _ = conn.service.close_with_timeout(STOP_TIMEOUT).await;
        if let Some(group) = conn.group {
            kill_group(group);
        }
        if let Ok(mut shared) = self.shared.lock() {
            shared.group = None;
        }
        self.set(
            ServerState::Failed("disconnected".to_owned()),
            Some(Vec::new()),
        );
    }
}

/// Opens a connection and lists its tools. The error carries the process group to kill.
async fn open(
    config: &ServerConfig,
    session_cwd: &Path,
    guard: Option<&ChildGuard>,
    handler: Handler,
    stderr_tail: Arc<Mutex<String>>,
    stderr_reader: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
) -> Result<(Connection, Vec<rmcp::model::Tool>), (String, Option<u32>)> {
    let name = &config.name;
    let (service, group) = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let env = resolve_values(name, "env", env).map_err(|e| (e, None))?;
            let dir = session_cwd.join(expand_home(cwd.as_deref().unwrap_or(".")));
            let program = OsString::from(expand_home(command));
            let args: Vec<OsString> = args.iter().map(|a| expand_home(a).into()).collect();
            let (program, args) = match guard {
                Some(guard) => {
                    let path = env
                        .iter()
                        .find(|(k, _)| k.as_str() == "PATH")
                        .map(|(_, v)| OsString::from(v))
                        .or_else(|| std::env::var_os("PATH"));
                    guard.wrap(&program, args, &dir, path.as_deref())
                }
                None => (program, args),
            };
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args).envs(env).current_dir(dir);
            let mut wrap = CommandWrap::from(cmd);
            wrap.wrap(ProcessGroup::leader());
            let (child, stderr) = TokioChildProcess::builder(wrap)
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| (format!("could not start {command}: {e}"), None))?;
            let group = child.id();
            if let Some(mut stderr) = stderr {
                let reader = tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = stderr.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        if let Ok(mut tail) = stderr_tail.lock() {
                            tail.push_str(&String::from_utf8_lossy(&buf[..n]));
                            if tail.len() > STDERR_TAIL {
                                let mut cut = tail.len() - STDERR_TAIL;
                                while !tail.is_char_boundary(cut) {
                                    cut += 1;
                                }
                                tail.drain(..cut);
                            }
                        }
                    }
                });
                if let Ok(mut slot) = stderr_reader.lock() {
                    *slot = Some(reader);
                }
            }
            let service = handler
                .serve(child)
                .await
                .map_err(|e| (e.to_string(), group))?;
            (service, group)
        }
        Transport::Http { url, headers } => {
            let headers = resolve_values(name, "header", headers).map_err(|e| (e, None))?;
            let mut custom = std::collections::HashMap::new();
            for (key, value) in headers {
                let key = reqwest::header::HeaderName::from_bytes(key.as_bytes())
                    .map_err(|e| (format!("header {key}: {e}"), None))?;
                let value = reqwest::header::HeaderValue::from_str(&value)
                    .map_err(|e| (format!("header {key}: {e}"), None))?;
                custom.insert(key, value);
            }
            let transport = StreamableHttpClientTransport::with_client(
                reqwest::Client::new(),
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| (e.to_string(), None))?;
            (service, None)
        }
    };
    match service.peer().list_all_tools().await {
        Ok(tools) => Ok((Connection { service, group }, tools)),
        Err(e) => {
            let mut service = service;
            let _ = service.close_with_timeout(STOP_TIMEOUT).await;
            Err((format!("tools/list failed: {e}"), group))
        }
    }
}

/// SIGKILL to a process group; nothing when it is gone already.
pub(crate) fn kill_group(group: u32) {
    let Some(pid) = i32::try_from(group)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

/// `~` and `~/…` name the home directory, as in a shell (pi's `expandHome`).
fn expand_home(value: &str) -> String {
    let home = || std::env::var("HOME").unwrap_or_default();
    if value == "~" {
        home()
    } else if let Some(rest) = value.strip_prefix("~/") {
        format!("{}/{rest}", home())
    } else {
        value.to_owned()
    }
}
