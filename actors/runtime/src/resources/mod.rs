//! pi's resources that live as files: prompt templates and skills (pi 1.6.0
//! `core/resource-loader.js`, `core/package-manager.js`), found at startup and used when a
//! prompt is expanded and when the system prompt is built.
//!
//! - [`frontmatter`]: the YAML block that opens a skill or template file.
//! - [`prompt_templates`]: `/name args` templates.
//! - [`skills`]: `SKILL.md` skills, their system-prompt block and `/skill:name`.
//!
//! Project-local files (`.pith/prompts`, `.pith/skills`, `.agents/skills` of the cwd and its
//! ancestors up to the git root) are read only when [`ResourceOptions::project_trusted`].

pub mod frontmatter;
mod ignore_rules;
pub mod prompt_templates;
pub mod skills;

use std::path::{Path, PathBuf};

pub use prompt_templates::PromptTemplate;
pub use skills::{Skill, SkillReader};

/// pith's project config directory (pi's `.pi`).
pub const PROJECT_DIR_NAME: &str = ".pith";

/// Where to look.
#[derive(Debug, Clone)]
pub struct ResourceOptions {
    /// The project directory (the process cwd).
    pub cwd: PathBuf,
    /// `~/.pith/agent`.
    pub agent_dir: PathBuf,
    /// The user's home (for `~/.agents/skills`); `None` skips it.
    pub home: Option<PathBuf>,
    /// Whether the project is trusted: only then are its own prompts and skills read
    /// (pi's `settingsManager.isProjectTrusted()`).
    pub project_trusted: bool,
    /// `--no-skills`.
    pub no_skills: bool,
    /// `--no-prompt-templates`.
    pub no_prompt_templates: bool,
    /// `--skill PATH`s (absolute): files or directories read after the discovered ones.
    pub skill_paths: Vec<PathBuf>,
    /// `--prompt-template PATH`s (absolute): files or directories read after the discovered
    /// ones.
    pub template_paths: Vec<PathBuf>,
}

/// What kind of diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// The file is unusable or questionable.
    Warning,
    /// A second resource of a taken name; `winner` is the one kept.
    Collision {
        /// The name (without `/` for templates).
        name: String,
        /// The file that holds the name.
        winner: PathBuf,
    },
}

/// A problem found while loading (pi's `ResourceDiagnostic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Warning or collision.
    pub kind: DiagnosticKind,
    /// pi's text (`description is required`, `name "x" collision`, ...).
    pub message: String,
    /// The file concerned.
    pub path: PathBuf,
}

impl Diagnostic {
    fn warning(message: impl Into<String>, path: &Path) -> Diagnostic {
        Diagnostic {
            kind: DiagnosticKind::Warning,
            message: message.into(),
            path: path.to_path_buf(),
        }
    }
}

/// The loaded templates and skills.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// Templates, first of each name kept.
    pub templates: Vec<PromptTemplate>,
    /// Skills, first of each name kept.
    pub skills: Vec<Skill>,
    /// Problems with template files.
    pub template_diagnostics: Vec<Diagnostic>,
    /// Problems with skill files.
    pub skill_diagnostics: Vec<Diagnostic>,
}

impl Resources {
    /// Finds and reads templates and skills in pi's order: a trusted project's before the
    /// user's; for skills `.pith/skills`, then each `.agents/skills` from the cwd up to the
    /// git root (or `/`), then `~/.pith/agent/skills`, then `~/.agents/skills`.
    pub fn load(options: &ResourceOptions) -> Resources {
        let mut out = Resources::default();
        let templates = template_files(options, &mut out.template_diagnostics);
        out.templates = load_templates(&templates, &mut out.template_diagnostics);
        let skills = skill_files(options, &mut out.skill_diagnostics);
        out.skills = skills::load_files(&skills, &mut out.skill_diagnostics);
        out
    }

    /// pi's prompt expansion (`_expandSkillCommand`, then `expandPromptTemplate`): what a
    /// prompt, steering message or follow-up `text` becomes before it is sent.
    pub fn expand(&self, text: &str) -> String {
        let text = match skills::expand(text, &self.skills) {
            Ok(t) => t,
            Err((original, error)) => {
                tracing::warn!("skill expansion failed: {error}");
                original
            }
        };
        prompt_templates::expand(&text, &self.templates)
    }
}

/// The template files to read, in order: the trusted project's, the user's (unless
/// `--no-prompt-templates`), then the explicit paths (always, as in pi).
fn template_files(options: &ResourceOptions, diagnostics: &mut Vec<Diagnostic>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if !options.no_prompt_templates {
        if options.project_trusted {
            let project = options.cwd.join(PROJECT_DIR_NAME).join("prompts");
            files.extend(prompt_templates::collect_entries(&project));
        }
        files.extend(prompt_templates::collect_entries(
            &options.agent_dir.join("prompts"),
        ));
    }
    for path in &options.template_paths {
        if path.is_dir() {
            files.extend(prompt_templates::collect_entries(path));
        } else if path.is_file() {
            if path.to_string_lossy().ends_with(".md") {
                files.push(path.clone());
            }
        } else {
            diagnostics.push(Diagnostic::warning(
                "Prompt template path does not exist",
                path,
            ));
        }
    }
    dedup(files)
}

/// pi's `loadPromptTemplates` + `dedupePrompts`: the first template of a name wins, later
/// ones are `name "/x" collision` diagnostics (after the others).
fn load_templates(files: &[PathBuf], diagnostics: &mut Vec<Diagnostic>) -> Vec<PromptTemplate> {
    let mut templates: Vec<PromptTemplate> = Vec::new();
    let mut collisions = Vec::new();
    for f in files {
        let Some(t) = prompt_templates::load_file(f, diagnostics) else {
            continue;
        };
        if let Some(winner) = templates.iter().find(|w| w.name == t.name) {
            collisions.push(Diagnostic {
                kind: DiagnosticKind::Collision {
                    name: t.name.clone(),
                    winner: winner.file_path.clone(),
                },
                message: format!("name \"/{}\" collision", t.name),
                path: t.file_path.clone(),
            });
        } else {
            templates.push(t);
        }
    }
    diagnostics.extend(collisions);
    templates
}

/// The skill files to read, in pi's order (see [`Resources::load`]), then the explicit
/// `--skill` paths (always, as in pi): a directory is searched as `~/.pith/agent/skills` is,
/// a `.md` file is read as it is.
fn skill_files(options: &ResourceOptions, diagnostics: &mut Vec<Diagnostic>) -> Vec<PathBuf> {
    use skills::Mode;
    let mut files = Vec::new();
    if !options.no_skills {
        let project = options.cwd.join(PROJECT_DIR_NAME);
        let user_agents = options
            .home
            .as_ref()
            .map(|h| h.join(".agents").join("skills"));
        if options.project_trusted {
            files.extend(skills::collect_entries(&project.join("skills"), Mode::Pith));
            for dir in ancestor_agents_skill_dirs(&options.cwd) {
                if Some(&dir) != user_agents.as_ref() {
                    files.extend(skills::collect_entries(&dir, Mode::Agents));
                }
            }
        }
        files.extend(skills::collect_entries(
            &options.agent_dir.join("skills"),
            Mode::Pith,
        ));
        if let Some(dir) = &user_agents {
            files.extend(skills::collect_entries(dir, Mode::Agents));
        }
    }
    for path in &options.skill_paths {
        if path.is_dir() {
            files.extend(skills::collect_entries(path, Mode::Pith));
        } else if path.is_file() && path.to_string_lossy().ends_with(".md") {
            files.push(path.clone());
        } else if path.exists() {
            diagnostics.push(Diagnostic::warning(
                "skill path is not a markdown file",
                path,
            ));
        } else {
            diagnostics.push(Diagnostic::warning("skill path does not exist", path));
        }
    }
    dedup(files)
}

/// Each path once, first place kept (pi's `mergePaths`).
fn dedup(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    files
        .into_iter()
        .filter(|f| seen.insert(f.clone()))
        .collect()
}

/// pi's `collectAncestorAgentsSkillDirs`: `<dir>/.agents/skills` for the cwd and each
/// ancestor, stopping at the git repository root (the first with `.git`) or at `/`.
fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let git_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        out.push(dir.join(".agents").join("skills"));
        if Some(dir) == git_root {
            break;
        }
    }
    out
}

/// A resource file's text (Node's `readFileSync(.., "utf-8")`: invalid UTF-8 replaced), size-
/// and type-limited.
fn read_text(path: &Path) -> Result<String, String> {
    match pith_llm::config_file::read_text_limited(path, pith_llm::config_file::CONTEXT_MAX_BYTES) {
        Ok(Some(text)) => Ok(text),
        Ok(None) => Err(format!(
            "ENOENT: no such file or directory, open '{}'",
            path.display()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// A directory's entries sorted by name (Node returns them in the OS's order; a sorted order
/// makes pith's choice among same-named resources the same on every filesystem).
fn read_dir_sorted(dir: &Path) -> Vec<std::fs::DirEntry> {
    let mut entries: Vec<std::fs::DirEntry> = match std::fs::read_dir(dir) {
        Ok(r) => r.filter_map(Result::ok).collect(),
        Err(_) => return Vec::new(),
    };
    entries.sort_by_key(|e| e.file_name());
    entries
}
