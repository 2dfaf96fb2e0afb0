//! Skill and prompt-template discovery, checked against what pi 1.6.0 listed for the same
//! tree (run with `--approve` in `proj/sub`): the order of the system prompt's skills, the
//! git root ending the `.agents/skills` search, names taken from directories, and the
//! project's files only in a trusted project.

use std::path::{Path, PathBuf};

use pith_actors::resources::{DiagnosticKind, ResourceOptions, Resources};
use pith_tests::files::{dir, write};

fn skill(path: &Path, front: &str) {
    write(
        path,
        format!("---\n{front}\n---\nBody of {}\n", path.display()),
    );
}

struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

fn tree() -> Tree {
    let tmp = dir();
    let root = tmp.path().to_path_buf();
    let agent = root.join("home/.pith/agent");
    let proj = root.join("proj");
    std::fs::create_dir_all(proj.join(".git")).unwrap();
    skill(
        &agent.join("skills/pdf-tools/SKILL.md"),
        "name: pdf-tools\ndescription: pdf",
    );
    skill(
        &agent.join("skills/Bad_Name/SKILL.md"),
        "description: bad name",
    );
    skill(&agent.join("skills/nodesc/SKILL.md"), "name: nodesc");
    skill(
        &agent.join("skills/rootloose.md"),
        "description: root loose",
    );
    skill(
        &root.join("home/.agents/skills/web/SKILL.md"),
        "description: web\ndisable-model-invocation: true",
    );
    skill(
        &proj.join(".agents/skills/agent-one/SKILL.md"),
        "description: agent one",
    );
    skill(
        &proj.join(".agents/skills/group/loose.md"),
        "description: loose",
    );
    skill(
        &proj.join("sub/.agents/skills/deep/SKILL.md"),
        "description: deep",
    );
    skill(
        &root.join(".agents/skills/outside/SKILL.md"),
        "description: outside the repo",
    );
    skill(
        &proj.join("sub/.pith/skills/pdf-tools/SKILL.md"),
        "description: project pdf",
    );
    write(&agent.join("prompts/ptpl.md"), "Global ptpl $1\n");
    write(&proj.join("sub/.pith/prompts/ptpl.md"), "Project ptpl $1\n");
    Tree { _tmp: tmp, root }
}

fn options(t: &Tree, trusted: bool) -> ResourceOptions {
    ResourceOptions {
        cwd: t.root.join("proj/sub"),
        agent_dir: t.root.join("home/.pith/agent"),
        home: Some(t.root.join("home")),
        project_trusted: trusted,
        no_skills: false,
        no_prompt_templates: false,
        skill_paths: Vec::new(),
        template_paths: Vec::new(),
        user_entries: Default::default(),
        project_entries: Default::default(),
    }
}

fn names(r: &Resources) -> Vec<(String, String)> {
    r.skills
        .iter()
        .map(|s| (s.name.clone(), s.file_path.display().to_string()))
        .collect()
}

#[test]
fn a_trusted_project_s_skills_come_first_as_pi_lists_them() {
    let t = tree();
    let r = Resources::load(&options(&t, true));
    let p = |s: &str| t.root.join(s).display().to_string();
    assert_eq!(
        names(&r),
        vec![
            (
                "pdf-tools".into(),
                p("proj/sub/.pith/skills/pdf-tools/SKILL.md")
            ),
            ("deep".into(), p("proj/sub/.agents/skills/deep/SKILL.md")),
            (
                "agent-one".into(),
                p("proj/.agents/skills/agent-one/SKILL.md")
            ),
            ("group".into(), p("proj/.agents/skills/group/loose.md")),
            (
                "Bad_Name".into(),
                p("home/.pith/agent/skills/Bad_Name/SKILL.md")
            ),
            ("skills".into(), p("home/.pith/agent/skills/rootloose.md")),
            ("web".into(), p("home/.agents/skills/web/SKILL.md")),
        ]
    );
    assert_eq!(r.expand("/ptpl z"), "Project ptpl z\n");
    let messages: Vec<(String, String)> = r
        .skill_diagnostics
        .iter()
        .map(|d| {
            let kind = match &d.kind {
                DiagnosticKind::Warning => "warning".to_owned(),
                DiagnosticKind::Collision { winner, .. } => {
                    format!("collision with {}", winner.display())
                }
            };
            (
                format!("{kind}: {}", d.message),
                d.path.display().to_string(),
            )
        })
        .collect();
    assert_eq!(
        messages,
        vec![
            (
                "warning: name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)".into(),
                p("home/.pith/agent/skills/Bad_Name/SKILL.md")
            ),
            (
                "warning: description is required".into(),
                p("home/.pith/agent/skills/nodesc/SKILL.md")
            ),
            (
                format!(
                    "collision with {}: name \"pdf-tools\" collision",
                    p("proj/sub/.pith/skills/pdf-tools/SKILL.md")
                ),
                p("home/.pith/agent/skills/pdf-tools/SKILL.md")
            ),
        ]
    );
    assert_eq!(
        r.template_diagnostics
            .iter()
            .map(|d| d.message.as_str())
            .collect::<Vec<_>>(),
        ["name \"/ptpl\" collision"]
    );
}

#[test]
fn an_untrusted_project_gives_only_the_user_s() {
    let t = tree();
    let r = Resources::load(&options(&t, false));
    let listed: Vec<String> = names(&r).into_iter().map(|(n, _)| n).collect();
    assert_eq!(listed, ["Bad_Name", "pdf-tools", "skills", "web"]);
    assert_eq!(r.expand("/ptpl z"), "Global ptpl z\n");
    // Unknown names and non-commands pass through untouched.
    assert_eq!(r.expand("/skill:nope x"), "/skill:nope x");
    assert_eq!(r.expand("/nope x"), "/nope x");

    let mut none = options(&t, false);
    none.no_skills = true;
    none.no_prompt_templates = true;
    none.skill_paths = vec![
        t.root.join("proj/.agents/skills/agent-one"),
        t.root.join("missing"),
    ];
    none.template_paths = vec![t.root.join("proj/sub/.pith/prompts/ptpl.md")];
    let r = Resources::load(&none);
    let listed: Vec<String> = names(&r).into_iter().map(|(n, _)| n).collect();
    assert_eq!(listed, ["agent-one"]);
    assert_eq!(r.skill_diagnostics[0].message, "skill path does not exist");
    assert_eq!(r.expand("/ptpl z"), "Project ptpl z\n");
}

/// rpc `get_commands` entries as pi 1.6.0 printed them for the same kinds of files.
#[test]
fn commands_carry_pi_s_source_info() {
    let t = tree();
    let mut o = options(&t, false);
    o.skill_paths = vec![t.root.join("proj/.agents/skills/agent-one")];
    write(&t.root.join("extra.md"), "Extra from a file.");
    o.template_paths = vec![t.root.join("extra.md")];
    let r = Resources::load(&o);
    let p = |s: &str| t.root.join(s).display().to_string();
    let json: Vec<serde_json::Value> = r.commands().iter().map(|c| c.to_json()).collect();
    let find = |name: &str| json.iter().find(|c| c["name"] == name).unwrap().clone();
    assert_eq!(
        find("ptpl"),
        serde_json::json!({"name": "ptpl", "description": "Global ptpl $1", "source": "prompt",
            "sourceInfo": {"path": p("home/.pith/agent/prompts/ptpl.md"), "source": "auto",
                "scope": "user", "origin": "top-level", "baseDir": p("home/.pith/agent")}})
    );
    assert_eq!(
        find("skill:web")["sourceInfo"],
        serde_json::json!({"path": p("home/.agents/skills/web/SKILL.md"), "source": "auto",
            "scope": "user", "origin": "top-level", "baseDir": p("home/.agents")})
    );
    assert_eq!(
        find("extra"),
        serde_json::json!({"name": "extra", "description": "Extra from a file.", "source": "prompt",
            "sourceInfo": {"path": p("extra.md"), "source": "local", "scope": "temporary",
                "origin": "top-level", "baseDir": t.root.display().to_string()}})
    );
    assert_eq!(
        find("skill:agent-one")["sourceInfo"],
        serde_json::json!({"path": p("proj/.agents/skills/agent-one/SKILL.md"), "source": "local",
            "scope": "temporary", "origin": "top-level", "baseDir": p("proj/.agents/skills/agent-one")})
    );
    // Templates first, then skills.
    let names: Vec<&str> = json.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "ptpl",
            "extra",
            "skill:Bad_Name",
            "skill:pdf-tools",
            "skill:skills",
            "skill:web",
            "skill:agent-one"
        ]
    );
}

/// The runtime expands prompts, steering messages and follow-ups with its resources (pi's
/// `_preparePrompt` and `_queueUserInput` expand each), so every frontend gets it.
#[tokio::test(start_paused = true)]
async fn the_runtime_expands_prompts_steering_and_follow_ups() {
    use super::support::*;
    let tmp = tempfile::tempdir().unwrap();
    let agent = tmp.path().join("agent");
    write(
        &agent.join("prompts/t.md"),
        "---\ndescription: t\n---\nT($1)\n",
    );
    let env = env(tmp.path());
    let resources = Resources::load(&ResourceOptions {
        cwd: "/project".into(),
        agent_dir: agent,
        home: None,
        project_trusted: false,
        no_skills: false,
        no_prompt_templates: false,
        skill_paths: Vec::new(),
        template_paths: Vec::new(),
        user_entries: Default::default(),
        project_entries: Default::default(),
    });
    let config = RuntimeConfig {
        resources: Arc::new(resources),
        ..project_config(
            &env,
            Arc::new(Faux::new(
                script(
                    r#"[{"content":[{"type":"text","text":"one"}],"delayMs":1000},
                        {"content":[{"type":"text","text":"two"}]},
                        {"content":[{"type":"text","text":"three"}]}]"#,
                ),
                env.clock.clone(),
            )),
            Vec::new(),
        )
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    rt.prompt("/t a").await.unwrap();
    rt.steer("/t b");
    rt.follow_up("/t c");
    rt.wait_idle().await.unwrap();
    let file = rt.current_session().await.unwrap().session_file.unwrap();
    rt.shutdown().await.unwrap();
    let users: Vec<String> = transcript(&file)
        .into_iter()
        .filter(|l| l.starts_with("user:"))
        .collect();
    assert_eq!(users, ["user:T(a)", "user:T(b)", "user:T(c)"]);
}

/// A symlink loop under a skills directory ends the search instead of the process.
#[test]
fn a_symlink_loop_in_a_skills_directory_is_searched_once() {
    let tmp = dir();
    let agent = tmp.path().join("agent");
    skill(&agent.join("skills/a/inner/SKILL.md"), "description: inner");
    std::fs::create_dir_all(agent.join("skills/loop")).unwrap();
    std::os::unix::fs::symlink(agent.join("skills"), agent.join("skills/loop/back")).unwrap();
    let r = Resources::load(&ResourceOptions {
        cwd: tmp.path().join("work"),
        agent_dir: agent,
        home: None,
        project_trusted: false,
        no_skills: false,
        no_prompt_templates: false,
        skill_paths: Vec::new(),
        template_paths: Vec::new(),
        user_entries: Default::default(),
        project_entries: Default::default(),
    });
    let listed: Vec<String> = names(&r).into_iter().map(|(n, _)| n).collect();
    assert_eq!(listed, ["inner"]);
}

/// The project's settings.json names skills and templates (paths from `<cwd>/.pith`) and
/// switches off one of the project's discovered skills (its patterns reach the project's
/// resources only, as in pi); the user's switches off a user skill. The project's file is
/// read in a trusted project only; the user's counts in both.
#[test]
fn settings_arrays_of_a_project_count_only_when_it_is_trusted() {
    let t = tree();
    let cwd = t.root.join("proj/sub");
    let agent = t.root.join("home/.pith/agent");
    skill(
        &t.root.join("shared/skills/review/SKILL.md"),
        "description: shared review",
    );
    write(&t.root.join("shared/prompts/deploy.md"), "Deploy $1\n");
    write(
        &cwd.join(".pith/settings.json"),
        r#"{"skills": ["../../../shared/skills", "!agent-one"], "prompts": ["../../../shared/prompts"]}"#,
    );
    write(
        &agent.join("settings.json"),
        r#"{"skills": ["-skills/Bad_Name/SKILL.md"]}"#,
    );
    let load = |trusted: bool| {
        Resources::load(&ResourceOptions::with_settings_entries(options(
            &t, trusted,
        )))
    };
    let skill_names =
        |r: &Resources| -> Vec<String> { r.skills.iter().map(|s| s.name.clone()).collect() };

    let trusted = load(true);
    assert_eq!(
        skill_names(&trusted),
        ["review", "pdf-tools", "deep", "group", "skills", "web"]
    );
    assert_eq!(trusted.expand("/deploy prod"), "Deploy prod\n");
    let review = &trusted.commands()[trusted.templates.len()];
    assert_eq!(
        review.to_json()["sourceInfo"],
        serde_json::json!({"path": t.root.join("shared/skills/review/SKILL.md"),
            "source": "local", "scope": "project", "origin": "top-level"})
    );

    let untrusted = load(false);
    assert_eq!(skill_names(&untrusted), ["pdf-tools", "skills", "web"]);
    assert_eq!(untrusted.expand("/deploy prod"), "/deploy prod");
}
