//! pi's skills (`core/skills.js`, discovery in `core/package-manager.js`, docs/skills.md):
//! directories holding a `SKILL.md` whose frontmatter names and describes it. The system
//! prompt lists them; `/skill:name args` inserts one.

use std::path::{Path, PathBuf};

use super::frontmatter::{self, Value};
use super::ignore_rules::IgnoreRules;
use super::{Diagnostic, DiagnosticKind};

/// Longest valid name (Agent Skills spec).
const MAX_NAME_LENGTH: usize = 64;
/// Longest valid description (Agent Skills spec).
const MAX_DESCRIPTION_LENGTH: usize = 1024;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Frontmatter `name`, else the parent directory's name.
    pub name: String,
    /// Frontmatter `description` (required).
    pub description: String,
    /// The skill's markdown file.
    pub file_path: PathBuf,
    /// Its directory: relative references in the skill resolve against it.
    pub base_dir: PathBuf,
    /// `disable-model-invocation: true`: left out of the system prompt, `/skill:name` only.
    pub disable_model_invocation: bool,
    /// Where it was found (`None` for skills built by hand).
    pub source_info: Option<super::SourceInfo>,
}

/// How a skills directory is scanned (pi's `collectSkillEntries` modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `~/.pith/agent/skills`, `.pith/skills`: `.md` files directly in the root are skills too.
    Pith,
    /// `.agents/skills`: `.md` files below the root (not in it) are skills too.
    Agents,
}

/// pi's `collectSkillEntries`: a directory holding `SKILL.md` is a skill and is not descended
/// further; otherwise its subdirectories are searched (dot entries and `node_modules`
/// skipped, ignore files honoured), and loose `.md` files count as the mode says.
///
/// A directory reached twice (a symlink loop) is searched once: pi would recurse until the
/// OS refuses the path.
pub(crate) fn collect_entries(dir: &Path, mode: Mode) -> Vec<PathBuf> {
    let mut rules = IgnoreRules::new(dir);
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    collect(dir, dir, mode, &mut rules, &mut seen, &mut out);
    out
}

fn collect(
    dir: &Path,
    root: &Path,
    mode: Mode,
    rules: &mut IgnoreRules,
    seen: &mut std::collections::HashSet<PathBuf>,
    out: &mut Vec<PathBuf>,
) {
    if !dir.exists() {
        return;
    }
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !seen.insert(real) {
        return;
    }
    rules.add_dir(dir);
    let entries = super::read_dir_sorted(dir);
    let skill_md = dir.join("SKILL.md");
    if entries.iter().any(|e| e.file_name() == "SKILL.md")
        && std::fs::metadata(&skill_md).is_ok_and(|m| m.is_file())
        && !rules.ignores(&skill_md, false)
    {
        out.push(skill_md);
        return;
    }
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue; // broken symlink
        };
        let loose_md = match mode {
            Mode::Pith => dir == root,
            Mode::Agents => dir != root,
        };
        if meta.is_file() && name.ends_with(".md") && !rules.ignores(&path, false) && loose_md {
            out.push(path);
            continue;
        }
        if !meta.is_dir() || rules.ignores(&path, true) {
            continue;
        }
        collect(&path, root, mode, rules, seen, out);
    }
}

/// pi's `validateName`.
fn name_errors(name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let len = name.encode_utf16().count();
    if len > MAX_NAME_LENGTH {
        errors.push(format!("name exceeds {MAX_NAME_LENGTH} characters ({len})"));
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        errors.push(
            "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)"
                .to_owned(),
        );
    }
    if name.starts_with('-') || name.ends_with('-') {
        errors.push("name must not start or end with a hyphen".to_owned());
    }
    if name.contains("--") {
        errors.push("name must not contain consecutive hyphens".to_owned());
    }
    errors
}

/// pi's `loadSkillFromFile`: a `SKILL.md` is always reported on; another `.md` file is a
/// skill only when it has a description. A skill without a description is not loaded; other
/// problems are warnings and the skill loads anyway.
pub(crate) fn load_file(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<Skill> {
    let declared = path.file_name().is_some_and(|n| n == "SKILL.md");
    let raw = match super::read_text(path) {
        Ok(raw) => raw,
        Err(message) => {
            diagnostics.push(Diagnostic::warning(message, path));
            return None;
        }
    };
    let parsed = match frontmatter::parse(&raw) {
        Ok(p) => p,
        Err(e) => {
            if declared {
                diagnostics.push(Diagnostic::warning(e.to_string(), path));
            }
            return None;
        }
    };
    let description = parsed.string("description").map(str::to_owned);
    let has_description = description.as_deref().is_some_and(|d| !d.trim().is_empty());
    if !declared && !has_description {
        return None;
    }
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    match &description {
        Some(d) if has_description => {
            let len = d.encode_utf16().count();
            if len > MAX_DESCRIPTION_LENGTH {
                diagnostics.push(Diagnostic::warning(
                    format!("description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len})"),
                    path,
                ));
            }
        }
        _ => diagnostics.push(Diagnostic::warning("description is required", path)),
    }
    let name = match parsed.string("name") {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => base_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    for e in name_errors(&name) {
        diagnostics.push(Diagnostic::warning(e, path));
    }
    let description = description.filter(|_| has_description)?;
    Some(Skill {
        name,
        description,
        file_path: path.to_path_buf(),
        base_dir,
        disable_model_invocation: parsed.frontmatter.get("disable-model-invocation")
            == Some(&Value::Bool(true)),
        source_info: None,
    })
}

/// pi's `loadSkills` over explicit files: symlinked duplicates of one file are dropped
/// silently; a second skill of a taken name loses, with a `collision` diagnostic (listed
/// after all others).
pub(crate) fn load_files(
    paths: &[(PathBuf, super::SourceInfo)],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    let mut real_paths: Vec<PathBuf> = Vec::new();
    let mut collisions = Vec::new();
    for (path, info) in paths {
        let Some(mut skill) = load_file(path, diagnostics) else {
            continue;
        };
        skill.source_info = Some(info.clone());
        let real =
            std::fs::canonicalize(&skill.file_path).unwrap_or_else(|_| skill.file_path.clone());
        if real_paths.contains(&real) {
            continue;
        }
        if let Some(winner) = skills.iter().find(|s| s.name == skill.name) {
            collisions.push(Diagnostic {
                kind: DiagnosticKind::Collision {
                    name: skill.name.clone(),
                    winner: winner.file_path.clone(),
                },
                message: format!("name \"{}\" collision", skill.name),
                path: skill.file_path.clone(),
            });
        } else {
            real_paths.push(real);
            skills.push(skill);
        }
    }
    diagnostics.extend(collisions);
    skills
}

/// Which tool the system prompt tells the model to load skill files with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillReader {
    /// The `read` tool.
    Read,
    /// `bash`.
    Bash,
    /// None named (the reader is only reachable through another tool).
    Indirect,
}

/// pi's `formatSkillsForPrompt`: the skills the model may invoke, as the Agent Skills XML
/// block (text escaped), starting with two newlines; empty when there are none.
pub fn format_for_prompt(skills: &[Skill], reader: SkillReader) -> String {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return String::new();
    }
    let mut lines = vec![
        "\n\nThe following skills provide specialized instructions for specific tasks.".to_owned(),
        match reader {
            SkillReader::Read => {
                "Use the read tool to load a skill's file when the task matches its description."
            }
            SkillReader::Bash => {
                "Use bash to load a skill's file when the task matches its description."
            }
            SkillReader::Indirect => "Load a skill's file when the task matches its description.",
        }
        .to_owned(),
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.".to_owned(),
        String::new(),
        "<available_skills>".to_owned(),
    ];
    for s in visible {
        lines.push("  <skill>".to_owned());
        lines.push(format!("    <name>{}</name>", escape_xml(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&s.file_path.to_string_lossy())
        ));
        lines.push("  </skill>".to_owned());
    }
    lines.push("</available_skills>".to_owned());
    lines.join("\n")
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// pi's `_expandSkillCommand`: `/skill:name args` becomes the skill's body in a `<skill>`
/// block, then the arguments after a blank line. Unknown names are returned as they are;
/// `Err` carries the original text and the read error (pi reports it and sends the text).
pub fn expand(text: &str, skills: &[Skill]) -> Result<String, (String, String)> {
    let Some(rest) = text.strip_prefix("/skill:") else {
        return Ok(text.to_owned());
    };
    let (name, args) = match rest.find(' ') {
        Some(i) => (&rest[..i], rest[i + 1..].trim()),
        None => (rest, ""),
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return Ok(text.to_owned());
    };
    let body = super::read_text(&skill.file_path)
        .and_then(|raw| frontmatter::strip(&raw).map_err(|e| e.to_string()))
        .map_err(|e| (text.to_owned(), e))?;
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        skill.file_path.display(),
        skill.base_dir.display(),
        body.trim()
    );
    Ok(if args.is_empty() {
        block
    } else {
        format!("{block}\n\n{args}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated_like_pi() {
        assert!(name_errors("pdf-tools").is_empty());
        assert_eq!(
            name_errors("-Bad--"),
            vec![
                "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
                "name must not start or end with a hyphen",
                "name must not contain consecutive hyphens"
            ]
        );
    }

    #[test]
    fn prompt_block_escapes_and_hides() {
        let s = |name: &str, hidden| Skill {
            name: name.into(),
            description: "Use <x> & 'y'".into(),
            file_path: PathBuf::from(format!("/s/{name}/SKILL.md")),
            base_dir: PathBuf::from(format!("/s/{name}")),
            disable_model_invocation: hidden,
            source_info: None,
        };
        let text = format_for_prompt(&[s("a", false), s("b", true)], SkillReader::Read);
        assert_eq!(
            text,
            "\n\nThe following skills provide specialized instructions for specific tasks.\nUse the read tool to load a skill's file when the task matches its description.\nResolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.\n\n<available_skills>\n  <skill>\n    <name>a</name>\n    <description>Use &lt;x&gt; &amp; &apos;y&apos;</description>\n    <location>/s/a/SKILL.md</location>\n  </skill>\n</available_skills>"
        );
        assert_eq!(format_for_prompt(&[s("b", true)], SkillReader::Read), "");
    }
}
