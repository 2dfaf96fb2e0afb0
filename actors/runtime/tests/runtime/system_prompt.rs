//! pi's system prompt, checked against what pi 0.73.1 produces for the same tools and
//! context files.

use pith_actors::system_prompt;
use pith_tests::files::{dir, write};
use pith_tools::tool::Tool;

#[test]
fn system_prompt_is_pis() {
    let root = dir();
    let agent = root.path().join("agent");
    let cwd = root.path().join("proj/sub");
    write(&agent.join("AGENTS.md"), "global rules\n");
    write(&root.path().join("proj/AGENTS.md"), "project rules\n");
    write(&cwd.join("CLAUDE.md"), "claude sub\n");
    let specs: Vec<_> = pith_tools::builtin_tools()
        .iter()
        .map(|t| t.spec())
        .collect();
    let prompt = system_prompt::build(&cwd, &agent, &specs, "2026-11-30");
    let r = root.path().display();
    let expected = format!(
        "You are an expert coding assistant operating inside pith, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.

Available tools:
- read: Read file contents
- bash: Execute bash commands (ls, grep, find, etc.)
- edit: Make precise file edits with exact text replacement, including multiple disjoint edits in one call
- write: Create or overwrite files

In addition to the tools above, you may have access to other custom tools depending on the project.

Guidelines:
- Use bash for file operations like ls, rg, find
- Use read to examine files instead of cat or sed.
- Use edit for precise changes (edits[].oldText must match exactly)
- When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls
- Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.
- Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.
- Use write only for new files or complete rewrites.
- Be concise in your responses
- Show file paths clearly when working with files

# Project Context

Project-specific instructions and guidelines:

## {r}/agent/AGENTS.md

global rules


## {r}/proj/AGENTS.md

project rules


## {r}/proj/sub/CLAUDE.md

claude sub



Current date: 2026-11-30
Current working directory: {r}/proj/sub"
    );
    assert_eq!(prompt, expected);

    let read_only = [pith_tools::read::ReadTool.spec()];
    let prompt = system_prompt::build(
        &root.path().join("none"),
        &root.path().join("none"),
        &read_only,
        "2026-01-02",
    );
    assert_eq!(
        prompt,
        format!(
            "You are an expert coding assistant operating inside pith, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.

Available tools:
- read: Read file contents

In addition to the tools above, you may have access to other custom tools depending on the project.

Guidelines:
- Use read to examine files instead of cat or sed.
- Be concise in your responses
- Show file paths clearly when working with files
Current date: 2026-01-02
Current working directory: {r}/none"
        )
    );
}
