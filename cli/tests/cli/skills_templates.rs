//! Prompt templates, skills and the system-prompt flags as a user meets them: `pith -p`
//! against a local OpenAI-compatible server, asserting what the request carries. The
//! expected texts are what pi 1.6.0 sent for the same files (its `<docs>` section and its
//! bash `PI_*` rule left out; see `docs/divergences.md`).

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

use crate::local_model::{chunk, pith, serve, setup, usage};

fn answer() -> String {
    [
        chunk(json!({"role":"assistant","content":"ok"}), None),
        chunk(json!({}), Some("stop")),
        usage(10, 1),
    ]
    .concat()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Runs `pith -p <args…>` in `cwd` with `HOME=home`; returns the request's system prompt and
/// last user text.
fn request(
    agent: &Path,
    cwd: &Path,
    home: &Path,
    url_server: &crate::local_model::Server,
    args: &[&str],
) -> (String, String) {
    let before = url_server.requests.lock().unwrap().len();
    pith(agent, cwd)
        .env("HOME", home)
        .args(["-p", "--model", "local/qwen"])
        .args(args)
        .assert()
        .success();
    let requests = url_server.requests.lock().unwrap();
    let r: &Value = &requests[before];
    let messages = r["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap().to_owned();
    let user = messages.last().unwrap();
    let text = match &user["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts[0]["text"].as_str().unwrap().to_owned(),
        other => panic!("{other}"),
    };
    (system, text)
}

#[test]
fn templates_and_skills_expand_and_reach_the_request_as_pis() {
    let tmp = tempfile::tempdir().unwrap();
    let server = serve((0..5).map(|_| answer()).collect());
    let (agent, cwd) = setup(tmp.path(), &server.url);
    let home = tmp.path().join("home");
    write(
        &agent.join("prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: \"<file> [focus]\"\n---\nReview $1 focusing on ${2:-bugs}. All: $@\n",
    );
    write(
        &agent.join("prompts/plain.md"),
        "First line\nBody $ARGUMENTS\n",
    );
    write(
        &agent.join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract <text> & \"tables\" from PDFs\n---\n\n# PDF\nUse scripts/x.py\n",
    );
    write(
        &home.join(".agents/skills/web/SKILL.md"),
        "---\ndescription: Browse the web\ndisable-model-invocation: true\n---\nWeb body\n",
    );
    // An untrusted project's own templates and skills are not read.
    write(&cwd.join(".pith/prompts/ptpl.md"), "Project template $1\n");
    write(
        &cwd.join(".pith/skills/proj-skill/SKILL.md"),
        "---\ndescription: Project skill\n---\nProj body\n",
    );

    let (system, user) = request(
        &agent,
        &cwd,
        &home,
        &server,
        &["/review \"a b.rs\" style x"],
    );
    assert_eq!(user, "Review a b.rs focusing on style. All: a b.rs style x");
    let skills = system
        .split("<skills>\n")
        .nth(1)
        .and_then(|s| s.split("\n</skills>").next())
        .unwrap();
    assert_eq!(
        skills,
        format!(
            "The following skills provide specialized instructions for specific tasks.
Use the read tool to load a skill's file when the task matches its description.
Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.

<available_skills>
  <skill>
    <name>pdf-tools</name>
    <description>Extract &lt;text&gt; &amp; &quot;tables&quot; from PDFs</description>
    <location>{}</location>
  </skill>
</available_skills>",
            agent.join("skills/pdf-tools/SKILL.md").display()
        )
    );
    assert!(system.ends_with(&format!("</skills>\n\n<cwd>\n{}\n</cwd>", cwd.display())));

    let (_, user) = request(&agent, &cwd, &home, &server, &["/skill:pdf-tools  do it  "]);
    let skill = agent.join("skills/pdf-tools");
    assert_eq!(
        user,
        format!(
            "<skill name=\"pdf-tools\" location=\"{}/SKILL.md\">\nReferences are relative to {}.\n\n# PDF\nUse scripts/x.py\n</skill>\n\ndo it",
            skill.display(),
            skill.display()
        )
    );
    // disable-model-invocation hides a skill from the prompt, not from /skill:name.
    let (_, user) = request(&agent, &cwd, &home, &server, &["/skill:web"]);
    let web = home.join(".agents/skills/web");
    assert_eq!(
        user,
        format!(
            "<skill name=\"web\" location=\"{}/SKILL.md\">\nReferences are relative to {}.\n\nWeb body\n</skill>",
            web.display(),
            web.display()
        )
    );
    let (_, user) = request(&agent, &cwd, &home, &server, &["/plain one two"]);
    // No frontmatter: the body is the file as it is (pi trims only after a frontmatter block).
    assert_eq!(user, "First line\nBody one two\n");
    let (_, user) = request(&agent, &cwd, &home, &server, &["/ptpl x"]);
    assert_eq!(user, "/ptpl x");
}

#[test]
fn system_prompt_flags_and_files_as_pi() {
    let tmp = tempfile::tempdir().unwrap();
    let server = serve((0..4).map(|_| answer()).collect());
    let (agent, cwd) = setup(tmp.path(), &server.url);
    let home = tmp.path().join("home");
    write(&agent.join("SYSTEM.md"), "\u{feff}From SYSTEM.md.\n");
    write(&agent.join("APPEND_SYSTEM.md"), "Appended from file.");
    write(&cwd.join("AGENTS.md"), "project rules\n");
    write(&cwd.join("AGENTS.override.md"), "override rules\n");
    let c = cwd.display();

    let (system, _) = request(&agent, &cwd, &home, &server, &["hi"]);
    assert_eq!(
        system,
        format!(
            "From SYSTEM.md.\n\n\n<addendum>\nAppended from file.\n</addendum>\n\n<project_context>\nProject-specific instructions and guidelines:\n\n<project_instructions path=\"{c}/AGENTS.override.md\">\noverride rules\n\n</project_instructions>\n</project_context>\n\n<cwd>\n{c}\n</cwd>"
        )
    );

    let extra = tmp.path().join("extra.md");
    write(&extra, "Extra from a file.");
    let (system, _) = request(
        &agent,
        &cwd,
        &home,
        &server,
        &[
            "--system-prompt",
            "Be brief.",
            "--append-system-prompt",
            "One.",
            "--append-system-prompt",
            extra.to_str().unwrap(),
            "--no-context-files",
            "hi",
        ],
    );
    assert_eq!(
        system,
        format!(
            "Be brief.\n\n<addendum>\nOne.\n\nExtra from a file.\n</addendum>\n\n<cwd>\n{c}\n</cwd>"
        )
    );

    // Empty values are nothing: `--system-prompt ""` gives pith's own text (not SYSTEM.md),
    // an empty addendum adds nothing.
    let (system, _) = request(
        &agent,
        &cwd,
        &home,
        &server,
        &[
            "--system-prompt",
            "",
            "--append-system-prompt",
            "",
            "--append-system-prompt",
            "Two.",
            "--no-context-files",
            "--no-tools",
            "hi",
        ],
    );
    assert!(
        system.starts_with("You are a coding assistant running inside pith")
            && system.contains("\n\n<addendum>\nTwo.\n</addendum>\n\n<cwd>"),
        "{system}"
    );

    fs::remove_file(agent.join("SYSTEM.md")).unwrap();
    let (system, _) = request(&agent, &cwd, &home, &server, &["--tools", "read", "hi"]);
    assert!(
        system.starts_with("You are a coding assistant running inside pith, a coding agent harness. Help users inspect files, run commands, and modify code.\n\n<tools>\n- read: Read file contents\n\nAdditional tools may be available.\n</tools>\n\n<rules>\n- Use read to examine files instead of cat or sed.\n- Be concise in your responses\n- Show file paths clearly when working with files\n</rules>\n\n<addendum>\nAppended from file.\n</addendum>"),
        "{system}"
    );
}

/// rpc `prompt`s expand as `-p` does (pi expands in `_preparePrompt`; steering and
/// follow-ups go through the same runtime step).
#[test]
fn rpc_prompts_expand_templates_and_skills() {
    use std::io::{BufRead, BufReader, Write};
    let tmp = tempfile::tempdir().unwrap();
    let server = serve((0..2).map(|_| answer()).collect());
    let (agent, cwd) = setup(tmp.path(), &server.url);
    write(&agent.join("prompts/fix.md"), "Fix $1 now\n");
    write(
        &agent.join("skills/lint/SKILL.md"),
        "---\ndescription: Lint things\n---\nRun the linter\n",
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pith"))
        .args(["--mode", "rpc", "--model", "local/qwen", "--no-session"])
        .env("PITH_AGENT_DIR", &agent)
        .env("HOME", tmp.path())
        .current_dir(&cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut wait_for_end = || {
        for line in lines.by_ref() {
            if line.unwrap().contains(r#""type":"agent_end""#) {
                return;
            }
        }
        panic!("no agent_end");
    };
    writeln!(
        stdin,
        r#"{{"type":"prompt","message":"/fix \"the parser\""}}"#
    )
    .unwrap();
    wait_for_end();
    writeln!(stdin, r#"{{"type":"prompt","message":"/skill:lint src"}}"#).unwrap();
    wait_for_end();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let requests = server.requests.lock().unwrap();
    let last_user = |r: &Value| {
        r["messages"].as_array().unwrap().last().unwrap()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // No frontmatter: the file as it is, its final newline too.
    assert_eq!(last_user(&requests[0]), "Fix the parser now\n");
    let lint = agent.join("skills/lint");
    assert_eq!(
        last_user(&requests[1]),
        format!(
            "<skill name=\"lint\" location=\"{}/SKILL.md\">\nReferences are relative to {}.\n\nRun the linter\n</skill>\n\nsrc",
            lint.display(),
            lint.display()
        )
    );
}
