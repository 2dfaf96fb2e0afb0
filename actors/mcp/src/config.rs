//! pi 1.6.0's `mcp.json` (spec: extensions.md §1.3): `~/.pith/agent/mcp.json`, then a trusted
//! project's `.pith/mcp.json`.
//!
//! - A project entry replaces the user entry of the same name; a project entry without
//!   `command`, `url` or `type` overrides only `enabled`, `exposure` and `toolExposure` of the
//!   user entry (so a repository cannot change where a credential goes).
//! - An invalid file or entry becomes a [`ConfigProblem`] naming the file and the server, and
//!   is skipped; loading never fails.
//! - Values are kept as written: `${VAR}`, `$VAR` and `!command` in `env` and `headers` are
//!   resolved when the server is started ([`resolve_values`]), so a missing variable fails
//!   that server only, as in pi.
//!
//! The file is edited by `pith mcp add|remove` with [`add_server`] and [`remove_server`],
//! which keep the rest of the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// A call's time limit when the entry gives no `timeout` (pi: 60 s).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The fields a project entry without `command`/`url`/`type` may set.
const OVERRIDE_KEYS: [&str; 3] = ["enabled", "exposure", "toolExposure"];

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// The program (`~/` names the home directory).
        command: String,
        /// Its arguments (`~/` expanded too).
        args: Vec<String>,
        /// Extra environment, values unresolved (`${VAR}`, `!cmd`).
        env: BTreeMap<String, String>,
        /// Its working directory, relative to the session's cwd; `None` = the cwd.
        cwd: Option<String>,
    },
    /// Streamable HTTP (`type` `http` or `streamable-http`).
    Http {
        /// The endpoint, `http(s)://…`.
        url: String,
        /// Headers sent with every request, values unresolved.
        headers: BTreeMap<String, String>,
    },
}

/// How a tool is offered to the model (pi's exposures). pith has no code mode and no tool
/// search yet, so everything but `hidden` is offered directly (docs/divergences.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// pi's default: tools are called from a code-mode script.
    Codemode,
    /// Found through a tool search first.
    Deferred,
    /// Offered to the model as a tool.
    Direct,
    /// Not offered at all.
    Hidden,
}

impl Exposure {
    fn parse(value: &str) -> Option<Exposure> {
        match value {
            "codemode" | "codemode-deferred" => Some(Exposure::Codemode),
            "deferred" => Some(Exposure::Deferred),
            "direct" => Some(Exposure::Direct),
            "hidden" => Some(Exposure::Hidden),
            _ => None,
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name: letters, digits, `_` and `-`.
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Time limit of one call (`timeout`, seconds); progress notifications restart it.
    pub timeout: Duration,
    /// `false` keeps it configured but not started.
    pub enabled: bool,
    /// A one-line summary (`description`).
    pub description: Option<String>,
    /// The server's exposure (`exposure`).
    pub exposure: Option<Exposure>,
    /// Per-tool exposures (`toolExposure`): exact names or `*` patterns, in file order.
    pub tool_exposure: Vec<(String, Exposure)>,
    /// The file that defines it.
    pub file: PathBuf,
    /// The project file whose override entry (no `command`/`url`) changed `enabled` or the
    /// exposures; `/mcp enable|disable` writes there, as pi does.
    pub override_file: Option<PathBuf>,
}

impl ServerConfig {
    /// The file `/mcp enable|disable` edits: the project override's, else the defining one.
    pub fn settings_file(&self) -> &Path {
        self.override_file.as_deref().unwrap_or(&self.file)
    }

    /// Whether the model is offered `tool` of this server: its `toolExposure` entry (exact,
    /// then the first matching pattern), else the server's `exposure`, is not `hidden`.
    pub fn offers(&self, tool: &str) -> bool {
        let exact = self.tool_exposure.iter().find(|(p, _)| p == tool);
        let pattern = || {
            self.tool_exposure
                .iter()
                .find(|(p, _)| p.contains('*') && glob_match(p, tool))
        };
        let exposure = exact
            .or_else(pattern)
            .map(|(_, e)| *e)
            .or(self.exposure)
            .unwrap_or(Exposure::Direct);
        match exposure {
            Exposure::Hidden => false,
            Exposure::Codemode | Exposure::Deferred | Exposure::Direct => true,
        }
    }
}

/// An entry or file that was skipped, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The file.
    pub file: PathBuf,
    /// The server, when one entry was at fault.
    pub server: Option<String>,
    /// pi's message (`server "x": args must be an array of strings`, …).
    pub message: String,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

/// The servers of both files, in order (user file first, project entries replacing theirs in
/// place), and what was skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    /// Every valid entry, disabled ones included.
    pub servers: Vec<ServerConfig>,
    /// What was skipped.
    pub problems: Vec<ConfigProblem>,
}

/// The user's file: `<agent dir>/mcp.json`.
pub fn user_file(agent_dir: &Path) -> PathBuf {
    agent_dir.join("mcp.json")
}

/// A project's file: `<cwd>/.pith/mcp.json`.
pub fn project_file(cwd: &Path) -> PathBuf {
    cwd.join(".pith").join("mcp.json")
}

/// Reads the user file and, when `project_trusted`, the project's (spec: extensions.md
/// §1.3). Missing files are no servers; nothing here fails.
pub fn load(agent_dir: &Path, cwd: &Path, project_trusted: bool) -> McpConfig {
    let mut config = McpConfig::default();
    read_file(&user_file(agent_dir), Scope::User, &mut config);
    if project_trusted {
        read_file(&project_file(cwd), Scope::Project, &mut config);
    }
    config
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    User,
    Project,
}

fn read_file(path: &Path, scope: Scope, config: &mut McpConfig) {
    let problem = |server: Option<&str>, message: String| ConfigProblem {
        file: path.to_path_buf(),
        server: server.map(str::to_owned),
        message,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            config.problems.push(problem(None, e.to_string()));
            return;
        }
    };
    let parsed: Value = match serde_json::from_str(text.trim_start_matches('\u{feff}')) {
        Ok(v) => v,
        Err(e) => {
            config.problems.push(problem(None, e.to_string()));
            return;
        }
    };
    let servers = match parsed.as_object().map(|o| o.get("mcpServers")) {
        Some(None) => return,
        Some(Some(Value::Object(servers))) => servers,
        _ => {
            config.problems.push(problem(
                None,
                r#"expected an object with an "mcpServers" object"#.to_owned(),
            ));
            return;
        }
    };
    for (name, value) in servers {
        let existing = config.servers.iter().position(|s| &s.name == name);
        if scope == Scope::Project
            && let Value::Object(entry) = value
            && is_override(entry)
        {
            let Some(index) = existing else {
                config.problems.push(problem(
                    Some(name),
                    format!(
                        r#"server "{name}" needs "command" or "url", or a global server to override"#
                    ),
                ));
                continue;
            };
            if entry.keys().any(|k| !OVERRIDE_KEYS.contains(&k.as_str())) {
                config.problems.push(problem(
                    Some(name),
                    format!(
                        r#"server "{name}": an override can only set {}"#,
                        OVERRIDE_KEYS.join(", ")
                    ),
                ));
                continue;
            }
            match apply_override(&config.servers[index], entry) {
                Ok(server) => {
                    config.servers[index] = ServerConfig {
                        override_file: Some(path.to_path_buf()),
                        ..server
                    }
                }
                Err(message) => config.problems.push(problem(Some(name), message)),
            }
            continue;
        }
        match validate(name, value, path) {
            Ok(server) => {
                let clash = config.servers.iter().find(|s| {
                    &s.name != name
                        && crate::naming::namespace(&s.name) == crate::naming::namespace(name)
                });
                if let Some(other) = clash {
                    config.problems.push(problem(
                        Some(name),
                        format!(r#"server "{name}" conflicts with "{}""#, other.name),
                    ));
                } else if let Some(index) = existing {
                    config.servers[index] = server;
                } else {
                    config.servers.push(server);
                }
            }
            Err(message) => config.problems.push(problem(Some(name), message)),
        }
    }
}

/// pi's `isMcpServerOverride`: no `command`, `url` or `type`.
fn is_override(entry: &Map<String, Value>) -> bool {
    !entry.contains_key("command") && !entry.contains_key("url") && !entry.contains_key("type")
}

fn apply_override(
    base: &ServerConfig,
    entry: &Map<String, Value>,
) -> std::result::Result<ServerConfig, String> {
    let name = &base.name;
    let mut server = base.clone();
    if let Some(enabled) = entry.get("enabled") {
        server.enabled = enabled
            .as_bool()
            .ok_or_else(|| format!(r#"server "{name}": enabled must be a boolean"#))?;
    }
    if let Some(exposure) = entry.get("exposure") {
        server.exposure = Some(parse_exposure(name, exposure)?);
    }
    if let Some(tools) = entry.get("toolExposure") {
        server.tool_exposure = parse_tool_exposure(name, tools)?;
    }
    Ok(server)
}

/// pi-mcp's `validateMcpServerConfig` plus pi's exposure checks, with pi's messages.
fn validate(name: &str, raw: &Value, file: &Path) -> std::result::Result<ServerConfig, String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            r#"invalid server name "{name}" (use letters, digits, "_" and "-")"#
        ));
    }
    let Value::Object(entry) = raw else {
        return Err(format!(r#"server "{name}" must be an object"#));
    };
    let fail = |what: &str| format!(r#"server "{name}": {what}"#);
    let enabled = match entry.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(fail("enabled must be a boolean")),
    };
    let description = match entry.get("description") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(fail("description must be a string")),
    };
    let timeout = match entry.get("timeout") {
        None => DEFAULT_CALL_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(secs) if secs > 0.0 && secs.is_finite() => Duration::from_secs_f64(secs),
            _ => return Err(fail("timeout must be a positive number of seconds")),
        },
    };
    let kind = entry.get("type").map(|t| t.as_str().unwrap_or("?"));
    if kind == Some("sse") {
        return Err(fail(
            "legacy SSE transport is not supported; use the streamable HTTP URL",
        ));
    }
    let transport = if let Some(Value::String(url)) = entry.get("url")
        && matches!(kind, None | Some("http") | Some("streamable-http"))
    {
        let scheme_ok = reqwest::Url::parse(url)
            .map(|u| u.scheme() == "http" || u.scheme() == "https")
            .unwrap_or(false);
        if !scheme_ok {
            return Err(fail("url must be an http or https URL"));
        }
        let headers = string_map(entry.get("headers"))
            .ok_or_else(|| fail("headers must map names to strings"))?;
        Transport::Http {
            url: url.clone(),
            headers,
        }
    } else if let Some(Value::String(command)) = entry.get("command")
        && matches!(kind, None | Some("stdio"))
    {
        let args = match entry.get("args") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|a| a.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| fail("args must be an array of strings"))?,
            Some(_) => return Err(fail("args must be an array of strings")),
        };
        let env =
            string_map(entry.get("env")).ok_or_else(|| fail("env must map names to strings"))?;
        let cwd = match entry.get("cwd") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(fail("cwd must be a string")),
        };
        Transport::Stdio {
            command: command.clone(),
            args,
            env,
            cwd,
        }
    } else {
        return Err(format!(
            r#"server "{name}" needs either "command" (stdio) or "url" (streamable HTTP)"#
        ));
    };
    let exposure = entry
        .get("exposure")
        .map(|e| parse_exposure(name, e))
        .transpose()?;
    let tool_exposure = entry
        .get("toolExposure")
        .map(|t| parse_tool_exposure(name, t))
        .transpose()?
        .unwrap_or_default();
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        timeout,
        enabled,
        description,
        exposure,
        tool_exposure,
        file: file.to_path_buf(),
        override_file: None,
    })
}

const EXPOSURES: &str = r#""codemode", "deferred", "direct", "hidden""#;

fn parse_exposure(name: &str, value: &Value) -> std::result::Result<Exposure, String> {
    value
        .as_str()
        .and_then(Exposure::parse)
        .ok_or_else(|| format!(r#"server "{name}": exposure must be one of {EXPOSURES}"#))
}

fn parse_tool_exposure(
    name: &str,
    value: &Value,
) -> std::result::Result<Vec<(String, Exposure)>, String> {
    let Value::Object(map) = value else {
        return Err(format!(
            r#"server "{name}": toolExposure must map tool names to exposures"#
        ));
    };
    map.iter()
        .map(|(tool, e)| {
            e.as_str()
                .and_then(Exposure::parse)
                .map(|e| (tool.clone(), e))
                .ok_or_else(|| {
                    format!(r#"server "{name}": toolExposure "{tool}" must be one of {EXPOSURES}"#)
                })
        })
        .collect()
}

/// `None` when `value` is there and not an object of strings.
fn string_map(value: Option<&Value>) -> Option<BTreeMap<String, String>> {
    match value {
        None => Some(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
            .collect(),
        Some(_) => None,
    }
}

/// `*` matches any run of characters; everything else is literal (pi's `toolPatternRegExp`).
fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = match parts.split_first() {
        Some(split) => split,
        None => return text.is_empty(),
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

/// Resolves `env` or `headers` values as pi 1.6.0 does (`${VAR}`, `$VAR`, `!command`;
/// pith-llm's [`pith_llm::auth::resolve_config_value_or_error`]).
///
/// Errors: the first value that cannot be resolved, e.g. `Failed to resolve MCP server "docs"
/// header "Authorization" from environment variable: DOCS_TOKEN`.
pub fn resolve_values(
    server: &str,
    what: &str,
    values: &BTreeMap<String, String>,
) -> std::result::Result<BTreeMap<String, String>, String> {
    values
        .iter()
        .map(|(key, value)| {
            pith_llm::auth::resolve_config_value_or_error(
                value,
                &format!(r#"MCP server "{server}" {what} "{key}""#),
            )
            .map(|v| (key.clone(), v))
            .map_err(|e| e.to_string())
        })
        .collect()
}

/// Adds (or replaces) `name` in the `mcp.json` at `path`, creating the file and its folder
/// when missing; other content is kept. Returns whether an entry was replaced.
///
/// Errors: the file is not JSON or has no `mcpServers` object, or cannot be written.
pub fn add_server(path: &Path, name: &str, entry: Value) -> Result<bool> {
    let mut replaced = false;
    edit_servers(path, |servers| {
        replaced = servers.insert(name.to_owned(), entry).is_some();
        true
    })?;
    Ok(replaced)
}

/// Removes `name` from the `mcp.json` at `path`. Returns `false` when it was not there.
///
/// Errors: as [`add_server`].
pub fn remove_server(path: &Path, name: &str) -> Result<bool> {
    if !path.exists() {
        return Ok(false);
    }
    let mut removed = false;
    edit_servers(path, |servers| {
        removed = servers.remove(name).is_some();
        removed
    })?;
    Ok(removed)
}

/// Turns `name` on or off in the `mcp.json` at `path` (pi 1.6.0's `updateMcpServerConfig`
/// for `/mcp enable|disable`): a full entry loses `enabled` when turned on (the default) and
/// gets `"enabled": false` when turned off; an override entry (no `command`/`url`/`type`)
/// keeps the value written out, and one is added when the file has none for `name` and
/// `add_override` is set. Other content is kept.
///
/// Errors: the file does not define `name` (and no override is to be added), is not JSON, or
/// cannot be written.
pub fn set_enabled(path: &Path, name: &str, enabled: bool, add_override: bool) -> Result<()> {
    let mut missing = false;
    edit_servers(path, |servers| {
        if add_override && !servers.contains_key(name) {
            servers.insert(name.to_owned(), Value::Object(Map::new()));
        }
        let Some(Value::Object(entry)) = servers.get_mut(name) else {
            missing = true;
            return false;
        };
        if enabled && !is_override(entry) {
            entry.remove("enabled");
        } else {
            entry.insert("enabled".to_owned(), Value::Bool(enabled));
        }
        true
    })?;
    if missing {
        return Err(Error::Config {
            path: path.to_path_buf(),
            message: format!(r#"does not define MCP server "{name}""#),
        });
    }
    Ok(())
}

fn edit_servers(path: &Path, edit: impl FnOnce(&mut Map<String, Value>) -> bool) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let invalid = |message: String| Error::Config {
        path: path.to_path_buf(),
        message,
    };
    let mut root = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str::<Value>(text.trim_start_matches('\u{feff}'))
            .map_err(|e| invalid(e.to_string()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(e) => return Err(io(e)),
    };
    let expected = || invalid(r#"expected an object with an "mcpServers" object"#.to_owned());
    let object = root.as_object_mut().ok_or_else(expected)?;
    let servers = object
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(expected)?;
    if !edit(servers) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let text = serde_json::to_string_pretty(&root).map_err(|e| invalid(e.to_string()))?;
    std::fs::write(path, format!("{text}\n")).map_err(io)
}

#[cfg(test)]
mod tests;
