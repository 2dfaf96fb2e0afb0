use super::*;

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn user_and_trusted_project_files_merge_as_pi_does() {
    let agent = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write(
        agent.path(),
        "mcp.json",
        r#"{"mcpServers":{
            "fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","."]},
            "docs":{"url":"https://example.com/mcp","headers":{"Authorization":"Bearer ${T}"},"timeout":5},
            "internal":{"command":"srv","env":{"K":"!echo k"}},
            "bad":{"command":"x","args":"nope"},
            "old":{"type":"sse","url":"https://example.com/sse"}}}"#,
    );
    write(
        cwd.path(),
        ".pith/mcp.json",
        r#"{"mcpServers":{
            "internal":{"enabled":false,"toolExposure":{"delete_*":"hidden"}},
            "docs":{"command":"local-docs"},
            "ghost":{"enabled":true},
            "fs":{"enabled":true,"env":{}}}}"#,
    );
    let config = load(agent.path(), cwd.path(), true);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fs", "docs", "internal"]);
    assert_eq!(
        config.servers[1].transport,
        Transport::Stdio {
            command: "local-docs".into(),
            args: vec![],
            env: BTreeMap::new(),
            cwd: None
        }
    );
    let internal = &config.servers[2];
    assert!(!internal.enabled);
    assert_eq!(internal.file, agent.path().join("mcp.json"));
    assert!(!internal.offers("delete_file"));
    assert!(internal.offers("read_file"));
    let problems: Vec<String> = config.problems.iter().map(|p| p.message.clone()).collect();
    assert_eq!(
        problems,
        [
            r#"server "bad": args must be an array of strings"#,
            r#"server "old": legacy SSE transport is not supported; use the streamable HTTP URL"#,
            r#"server "ghost" needs "command" or "url", or a global server to override"#,
            r#"server "fs": an override can only set enabled, exposure, toolExposure"#,
        ]
    );
    assert_eq!(config.problems[0].server.as_deref(), Some("bad"));
    assert_eq!(config.problems[2].file, cwd.path().join(".pith/mcp.json"));

    // An untrusted project is not read.
    let untrusted = load(agent.path(), cwd.path(), false);
    assert_eq!(untrusted.servers.len(), 3);
    assert!(untrusted.servers[2].enabled);
    assert_eq!(untrusted.problems.len(), 2);
}

#[test]
fn a_broken_file_is_one_problem_not_a_crash() {
    let agent = tempfile::tempdir().unwrap();
    write(agent.path(), "mcp.json", "{not json");
    let config = load(agent.path(), agent.path(), false);
    assert!(config.servers.is_empty());
    assert_eq!(config.problems.len(), 1);
    assert!(config.problems[0].server.is_none());
    write(agent.path(), "mcp.json", r#"{"mcpServers":[]}"#);
    let config = load(agent.path(), agent.path(), false);
    assert_eq!(
        config.problems[0].to_string(),
        format!(
            r#"{}: expected an object with an "mcpServers" object"#,
            agent.path().join("mcp.json").display()
        )
    );
}

#[test]
fn values_resolve_from_variables_and_commands() {
    let values: BTreeMap<String, String> = [
        ("A".to_owned(), "x-${HOME}-y".to_owned()),
        ("B".to_owned(), "!printf cmd-value".to_owned()),
    ]
    .into();
    let home = std::env::var("HOME").unwrap();
    let resolved = resolve_values("s", "env", &values).unwrap();
    assert_eq!(resolved["A"], format!("x-{home}-y"));
    assert_eq!(resolved["B"], "cmd-value");
    let missing: BTreeMap<String, String> = [(
        "Authorization".to_owned(),
        "Bearer ${PITH_MCP_SURELY_UNSET}".to_owned(),
    )]
    .into();
    assert_eq!(
        resolve_values("docs", "header", &missing).unwrap_err(),
        r#"Failed to resolve MCP server "docs" header "Authorization" from environment variable: PITH_MCP_SURELY_UNSET"#
    );
}

#[test]
fn add_and_remove_keep_the_rest_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent/mcp.json");
    assert!(!add_server(&path, "fs", serde_json::json!({"command":"npx"})).unwrap());
    assert!(add_server(&path, "fs", serde_json::json!({"command":"uvx"})).unwrap());
    assert!(
        !add_server(
            &path,
            "t",
            serde_json::json!({"url":"http://127.0.0.1:1/mcp"})
        )
        .unwrap()
    );
    assert!(remove_server(&path, "t").unwrap());
    assert!(!remove_server(&path, "t").unwrap());
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        serde_json::json!({"mcpServers":{"fs":{"command":"uvx"}}})
    );
}

#[test]
fn patterns_match_like_pi() {
    assert!(glob_match("delete_*", "delete_file"));
    assert!(glob_match("*_file", "read_file"));
    assert!(glob_match("a*b*c", "axxbyyc"));
    assert!(!glob_match("a*b*c", "axxbyy"));
    assert!(!glob_match("read", "read_file"));
}

#[test]
fn enable_and_disable_edit_the_file_that_decides_as_pi_does() {
    let agent = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    write(
        agent.path(),
        "mcp.json",
        r#"{"mcpServers":{"fs":{"command":"npx","enabled":true},"t":{"command":"t"}}}"#,
    );
    write(
        cwd.path(),
        ".pith/mcp.json",
        r#"{"mcpServers":{"t":{"enabled":false}}}"#,
    );
    let user = agent.path().join("mcp.json");
    let project = cwd.path().join(".pith/mcp.json");
    let read = |path: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let config = load(agent.path(), cwd.path(), true);
    assert_eq!(config.servers[0].settings_file(), user);
    assert_eq!(config.servers[1].settings_file(), project);
    // A full entry: off writes `false`, on drops the key (the default).
    set_enabled(&user, "fs", false, false).unwrap();
    assert_eq!(
        read(&user)["mcpServers"]["fs"],
        serde_json::json!({"command":"npx","enabled":false})
    );
    set_enabled(&user, "fs", true, false).unwrap();
    assert_eq!(
        read(&user)["mcpServers"]["fs"],
        serde_json::json!({"command":"npx"})
    );
    // An override keeps the value written out.
    set_enabled(&project, "t", true, false).unwrap();
    assert_eq!(
        read(&project)["mcpServers"]["t"],
        serde_json::json!({"enabled":true})
    );
    assert!(load(agent.path(), cwd.path(), true).servers[1].enabled);
    // A server the file does not define is an error naming the file, unless an override is
    // to be added.
    assert_eq!(
        set_enabled(&project, "fs", false, false)
            .unwrap_err()
            .to_string(),
        format!(r#"{}: does not define MCP server "fs""#, project.display())
    );
    set_enabled(&project, "fs", false, true).unwrap();
    assert_eq!(
        read(&project)["mcpServers"]["fs"],
        serde_json::json!({"enabled":false})
    );
}
