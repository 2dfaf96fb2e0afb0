//! The MCP hub: one task per enabled server, their tools as one [`ToolSource`] (spec:
//! extensions.md §1.3).
//!
//! The hub lives as long as the runtime: every session's toolset shares it, so `/new` and
//! `/resume` keep the servers running. [`McpHub::reconfigure`] restarts only the servers
//! whose configuration changed (a switch to another project). [`McpHub::shutdown`] stops every
//! server and waits until their processes are gone; frontends call it before exiting.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pith_tools::{ChildGuard, Tool, ToolSource};

use crate::config::{McpConfig, ServerConfig};
use crate::naming::tool_name;
use crate::server::{ServerHandle, ServerState};
use crate::tool::McpTool;

/// How long the first model request waits for servers still connecting.
pub const FIRST_PROMPT_WAIT: Duration = Duration::from_secs(10);

/// pith warns when the MCP tools offered pass this many (spec: extensions.md §1.3).
pub const MANY_TOOLS: usize = 40;

/// One server's status, as `/mcp` and `pith mcp list` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Where it is.
    pub state: ServerState,
    /// The names of the tools it offers the model (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    /// Every tool the server lists, by its own name (hidden ones too).
    pub listed: Vec<String>,
    /// `command args…` or the URL.
    pub target: String,
    /// The file that defines it.
    pub source: PathBuf,
}

/// Reads the configuration for a working directory (the user's file and, when trusted, that
/// project's): the hub calls it when a session of another directory starts.
pub type Loader = Arc<dyn Fn(&std::path::Path) -> McpConfig + Send + Sync>;

/// The hub; clones share it.
#[derive(Clone, Default)]
pub struct McpHub {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    servers: Mutex<Vec<Arc<ServerHandle>>>,
    /// Reloads the configuration for a new directory; `None`: the servers never change.
    loader: Option<Loader>,
    /// The directory the servers were configured for.
    cwd: Mutex<PathBuf>,
    /// Stdio servers start under `pith __guard` (none outlives a killed pith); `None`: directly.
    guard: Option<ChildGuard>,
    /// The first wait for servers is over; later requests do not wait.
    waited: AtomicBool,
    /// The many-tools warning was logged (once per hub).
    warned: AtomicBool,
}

impl McpHub {
    /// Starts a task for each enabled server of `config` (disabled ones are listed, not
    /// started). `cwd` is the session's working directory. Needs a tokio runtime.
    pub fn start(config: &McpConfig, cwd: PathBuf) -> McpHub {
        McpHub::spawn(config, cwd, None, None)
    }

    /// Starts the servers `loader` gives for `cwd`, and reloads them through it when a
    /// session of another directory starts (servers whose entry is unchanged keep running).
    /// Stdio servers start under `guard` when given ([`ChildGuard`]: none outlives a killed
    /// pith).
    pub fn start_with_loader(loader: Loader, cwd: PathBuf, guard: Option<ChildGuard>) -> McpHub {
        McpHub::spawn(&loader(&cwd), cwd, Some(loader), guard)
    }

    fn spawn(
        config: &McpConfig,
        cwd: PathBuf,
        loader: Option<Loader>,
        guard: Option<ChildGuard>,
    ) -> McpHub {
        let servers = config
            .servers
            .iter()
            .map(|s| Arc::new(ServerHandle::start(s.clone(), cwd.clone(), guard.clone())))
            .collect();
        McpHub {
            inner: Arc::new(Inner {
                loader,
                guard,
                cwd: Mutex::new(cwd),
                servers: Mutex::new(servers),
                waited: AtomicBool::new(false),
                warned: AtomicBool::new(false),
            }),
        }
    }

    fn current_cwd(&self) -> PathBuf {
        self.inner.cwd.lock().map(|c| c.clone()).unwrap_or_default()
    }

    fn servers(&self) -> Vec<Arc<ServerHandle>> {
        self.inner
            .servers
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// Every server's status, in configuration order.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let tools = self.named_tools();
        self.servers()
            .iter()
            .map(|s| ServerStatus {
                name: s.config.name.clone(),
                state: s.state(),
                tools: tools
                    .iter()
                    .filter(|t| Arc::ptr_eq(&t.server, s))
                    .map(|t| t.name.clone())
                    .collect(),
                listed: s
                    .shared
                    .lock()
                    .map(|shared| shared.tools.iter().map(|t| t.name.to_string()).collect())
                    .unwrap_or_default(),
                target: target(&s.config),
                source: s.config.file.clone(),
            })
            .collect()
    }

    /// Waits until every server's first connection attempt ended, at most `limit`.
    pub async fn wait_settled(&self, limit: Duration) {
        let servers = self.servers();
        let all = async {
            for server in &servers {
                server.settled().await;
            }
        };
        let _ = tokio::time::timeout(limit, all).await;
    }

    /// Drops and reopens the connection of `name` (`/mcp reconnect`), and answers its state
    /// once the new attempt ended.
    ///
    /// Errors: no server is called `name`, or it is disabled (pi's messages).
    pub async fn reconnect(&self, name: &str) -> Result<ServerState, String> {
        let server = self.find(name)?;
        if !server.config.enabled {
            return Err(format!(r#"MCP server "{name}" is disabled."#));
        }
        server.reconnect_and_wait().await;
        Ok(server.state())
    }

    fn find(&self, name: &str) -> Result<Arc<ServerHandle>, String> {
        self.servers()
            .into_iter()
            .find(|s| s.config.name == name)
            .ok_or_else(|| format!(r#"No MCP server named "{name}"."#))
    }

    /// `/mcp enable|disable <name>` (pi 1.6.0's `setEnabled`): writes the choice to the file
    /// that decides it ([`ServerConfig::settings_file`], [`crate::config::set_enabled`]),
    /// then stops the server and takes its tools away, or starts it. Answers once a stopped
    /// server's processes are gone; a started one connects in the background
    /// ([`McpHub::wait_settled`] waits for it). Nothing changes when it is already so.
    ///
    /// Errors: no server is called `name`; the file could not be written (nothing changes).
    pub async fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), String> {
        let old = self.find(name)?;
        if old.config.enabled == enabled {
            return Ok(());
        }
        let file = old.config.settings_file();
        crate::config::set_enabled(file, name, enabled, false)
            .map_err(|e| format!("Could not update {e}"))?;
        let config = ServerConfig {
            enabled,
            ..old.config.clone()
        };
        let new = Arc::new(ServerHandle::start(
            config,
            self.current_cwd(),
            self.inner.guard.clone(),
        ));
        if let Ok(mut servers) = self.inner.servers.lock()
            && let Some(slot) = servers.iter_mut().find(|s| Arc::ptr_eq(s, &old))
        {
            *slot = new;
        }
        old.stop().await;
        Ok(())
    }

    /// Switches to `config` (another project's servers): servers whose configuration is
    /// unchanged keep running, changed and removed ones are stopped, new ones started.
    pub async fn reconfigure(&self, config: &McpConfig, cwd: PathBuf) {
        let old = self.servers();
        let mut next = Vec::new();
        for wanted in &config.servers {
            match old.iter().find(|s| same(&s.config, wanted)) {
                Some(kept) => next.push(kept.clone()),
                None => next.push(Arc::new(ServerHandle::start(
                    wanted.clone(),
                    cwd.clone(),
                    self.inner.guard.clone(),
                ))),
            }
        }
        for server in &old {
            if !next.iter().any(|n| Arc::ptr_eq(n, server)) {
                server.stop().await;
            }
        }
        if let Ok(mut servers) = self.inner.servers.lock() {
            *servers = next;
        }
    }

    /// Stops every server and waits until they are gone (their process groups killed).
    pub async fn shutdown(&self) {
        let servers =
            std::mem::take(&mut *self.inner.servers.lock().unwrap_or_else(|p| p.into_inner()));
        for server in &servers {
            server.stop().await;
        }
    }

    /// The tools offered now, named across all servers in configuration order.
    fn named_tools(&self) -> Vec<McpTool> {
        let mut tools: Vec<McpTool> = Vec::new();
        for server in self.servers() {
            let listed = match server.shared.lock() {
                Ok(shared) if shared.state == ServerState::Connected => shared.tools.clone(),
                _ => continue,
            };
            for tool in listed {
                if !server.config.offers(&tool.name) {
                    continue;
                }
                let name = tool_name(&server.config.name, &tool.name, |n| {
                    tools.iter().any(|t| t.name == n)
                });
                tools.push(McpTool {
                    name,
                    server: server.clone(),
                    tool,
                });
            }
        }
        tools
    }
}

/// A hub dropped without [`McpHub::shutdown`] (an error path of a frontend) still leaves no
/// stdio server behind: their process groups get SIGKILL.
impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(servers) = self.servers.lock() {
            for server in servers.iter() {
                server.kill_now();
            }
        }
    }
}

impl ToolSource for McpHub {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let tools = self.named_tools();
        if tools.len() > MANY_TOOLS && !self.inner.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                count = tools.len(),
                "more than {MANY_TOOLS} MCP tools are offered"
            );
        }
        tools
            .into_iter()
            .map(|t| Arc::new(t) as Arc<dyn Tool>)
            .collect()
    }

    fn cwd_changed<'a>(
        &'a self,
        cwd: &'a std::path::Path,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let Some(loader) = &self.inner.loader else {
                return;
            };
            if self.current_cwd() == cwd {
                return;
            }
            let config = loader(cwd);
            for problem in &config.problems {
                tracing::warn!("MCP config error: {problem}");
            }
            self.reconfigure(&config, cwd.to_path_buf()).await;
            if let Ok(mut current) = self.inner.cwd.lock() {
                *current = cwd.to_path_buf();
            }
        })
    }

    fn ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if !self.inner.waited.swap(true, Ordering::SeqCst) {
                self.wait_settled(FIRST_PROMPT_WAIT).await;
            }
        })
    }
}

/// Whether two entries start the same server (the defining files do not matter).
fn same(a: &ServerConfig, b: &ServerConfig) -> bool {
    ServerConfig {
        file: PathBuf::new(),
        override_file: None,
        ..a.clone()
    } == ServerConfig {
        file: PathBuf::new(),
        override_file: None,
        ..b.clone()
    }
}

fn target(config: &ServerConfig) -> String {
    match &config.transport {
        crate::config::Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        crate::config::Transport::Http { url, .. } => url.clone(),
    }
}
