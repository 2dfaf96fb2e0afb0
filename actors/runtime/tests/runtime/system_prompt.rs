//! pi's system prompt, checked against what pi 1.6.0 sends for the same tools, context files
//! and skills (its `<docs>` section, which points at pi's own files, left out).

use pith_actors::resources::Skill;
use pith_actors::system_prompt::{self, PromptOptions, PromptTool};
use pith_tests::files::{dir, write};

const RULES_DEFAULT: &str = "- Use bash for file operations like ls, rg, find
- Use read to examine files instead of cat or sed.
- Use edit for targeted changes. Batch changes to one file in a single call.
- Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and non-overlapping; merge nearby changes without including large unchanged regions.
- Use write only for new files or complete rewrites.
- Be concise in your responses
- Show file paths clearly when working with files";

#[test]
fn system_prompt_is_pis() {
    let root = dir();
    let agent = root.path().join("agent");
    let cwd = root.path().join("proj/sub");
    write(&agent.join("AGENTS.md"), "global rules\n");
    write(&root.path().join("proj/AGENTS.md"), "project rules\n");
    write(&root.path().join("proj/AGENTS.override.md"), "override\n");
    write(&cwd.join("CLAUDE.md"), "\u{feff}claude sub\n");
    let specs: Vec<_> = pith_tools::builtin_tools()
        .iter()
        .map(|t| PromptTool::builtin(&t.spec().name))
        .collect();
    let prompt = system_prompt::build(&cwd, &agent, &specs);
    let r = root.path().display();
    let expected = format!(
        "You are a coding assistant running inside pith, a coding agent harness. Help users inspect files, run commands, and modify code.

<tools>
- read: Read file contents
- bash: Execute bash commands (ls, grep, find, etc.)
- edit: Make precise file edits with exact text replacement, including multiple disjoint edits in one call
- write: Create or overwrite files

Additional tools may be available.
</tools>

<rules>
{RULES_DEFAULT}
</rules>

<project_context>
Project-specific instructions and guidelines:

<project_instructions path=\"{r}/agent/AGENTS.md\">
global rules

</project_instructions>

<project_instructions path=\"{r}/proj/AGENTS.override.md\">
override

</project_instructions>

<project_instructions path=\"{r}/proj/sub/CLAUDE.md\">
claude sub

</project_instructions>
</project_context>

<cwd>
{r}/proj/sub
</cwd>"
    );
    assert_eq!(prompt, expected);

    let read_only = [PromptTool::builtin("read")];
    let prompt = system_prompt::build(
        &root.path().join("none"),
        &root.path().join("none"),
        &read_only,
    );
    assert_eq!(
        prompt,
        format!(
            "You are a coding assistant running inside pith, a coding agent harness. Help users inspect files, run commands, and modify code.

<tools>
- read: Read file contents

Additional tools may be available.
</tools>

<rules>
- Use read to examine files instead of cat or sed.
- Be concise in your responses
- Show file paths clearly when working with files
</rules>

<cwd>
{r}/none
</cwd>"
        )
    );
}

fn skill(name: &str, hidden: bool) -> Skill {
    Skill {
        name: name.into(),
        description: format!("Does <{name}> & more"),
        file_path: format!("/s/{name}/SKILL.md").into(),
        base_dir: format!("/s/{name}").into(),
        disable_model_invocation: hidden,
        source_info: None,
    }
}

/// A custom prompt (`--system-prompt`, SYSTEM.md) replaces the preamble, tools and rules;
/// the addendum, skills and cwd follow; skills need `read` (or else `bash`).
#[test]
fn custom_prompt_addendum_and_skills_as_pi() {
    let options = PromptOptions {
        custom_prompt: Some("Custom.".into()),
        append: Some("Extra one\n\nExtra two".into()),
        context_files: Vec::new(),
        skills: vec![skill("pdf", false), skill("web", true)],
    };
    let bash = [PromptTool::builtin("bash")];
    let prompt = system_prompt::build_with(std::path::Path::new("/w"), &bash, &options);
    assert_eq!(
        prompt,
        "Custom.

<addendum>
Extra one

Extra two
</addendum>

<skills>
The following skills provide specialized instructions for specific tasks.
Use bash to load a skill's file when the task matches its description.
Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.

<available_skills>
  <skill>
    <name>pdf</name>
    <description>Does &lt;pdf&gt; &amp; more</description>
    <location>/s/pdf/SKILL.md</location>
  </skill>
</available_skills>
</skills>

<cwd>
/w
</cwd>"
    );
    // No reader tool: no skills section.
    let none = system_prompt::build_with(std::path::Path::new("/w"), &[], &options);
    assert!(!none.contains("<skills>"), "{none}");
}

/// pi 1.6.0: in a linked worktree nested inside its main checkout, the main checkout's
/// AGENTS.md is shadowed by the worktree's own (pi sent only `wt/feature/AGENTS.md` for this
/// layout). Real git makes the worktree.
#[test]
fn a_nested_worktree_s_context_file_shadows_the_main_checkout_s() {
    let root = dir();
    let repo = root.path().canonicalize().unwrap().join("repo");
    write(&repo.join("AGENTS.md"), "main rules\n");
    let git = |args: &[&str], cwd: &std::path::Path| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.email=t@t", "-c", "user.name=t"])
            .args(args)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q", "."], &repo);
    git(&["add", "."], &repo);
    git(&["commit", "-qm", "init"], &repo);
    git(&["worktree", "add", "-q", "wt/feature"], &repo);
    let feature = repo.join("wt/feature");
    write(&feature.join("AGENTS.md"), "feature rules\n");
    let agent = root.path().join("agent");
    let paths: Vec<_> = system_prompt::load_context_files(&feature, &agent)
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(paths, [feature.join("AGENTS.md")]);
    // In the main checkout itself nothing is shadowed.
    let paths: Vec<_> = system_prompt::load_context_files(&repo, &agent)
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(paths, [repo.join("AGENTS.md")]);
}
