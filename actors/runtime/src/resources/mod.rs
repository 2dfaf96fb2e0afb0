//! pi's resources that live as files: prompt templates and skills (pi 1.6.0
//! `core/resource-loader.js`, `core/package-manager.js`), found at startup and used when a
//! prompt is expanded and when the system prompt is built.
//!
//! - [`frontmatter`]: the YAML block that opens a skill or template file.
//! - [`prompt_templates`]: `/name args` templates.
//! - [`skills`]: `SKILL.md` skills, their system-prompt block and `/skill:name`.
//!
//! - [`settings_entries`]: the `skills` and `prompts` arrays of settings.json.
//!
//! Project-local files (`.pith/prompts`, `.pith/skills`, `.agents/skills` of the cwd and its
//! ancestors up to the git root, and the project settings' arrays) are read only when
//! [`ResourceOptions::project_trusted`].

pub mod frontmatter;
mod ignore_rules;
pub mod prompt_templates;
pub mod settings_entries;
pub mod skills;
pub mod source_info;

use std::path::{Path, PathBuf};

pub use prompt_templates::PromptTemplate;
pub use settings_entries::SettingsEntries;
pub use skills::{Skill, SkillReader};
pub use source_info::{Scope, Source, SourceInfo};

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
    /// The `skills`/`prompts` arrays of `<agent_dir>/settings.json` (paths from `agent_dir`).
    pub user_entries: SettingsEntries,
    /// Those of `<cwd>/.pith/settings.json` (paths from `<cwd>/.pith`); used only when the
    /// project is trusted.
    pub project_entries: SettingsEntries,
}

impl ResourceOptions {
    /// The settings files' arrays for these options' `agent_dir` and `cwd` (the project's
    /// only when `project_trusted`), read from disk.
    pub fn with_settings_entries(mut self) -> ResourceOptions {
        self.user_entries = SettingsEntries::read(&self.agent_dir.join("settings.json"));
        self.project_entries = if self.project_trusted {
            SettingsEntries::read(&self.cwd.join(PROJECT_DIR_NAME).join("settings.json"))
        } else {
            SettingsEntries::default()
        };
        self
    }
}

/// pi's resource accumulator (`package-manager.js` `resolve`): a path's first place wins
/// (with its source and on/off state); then the places are ordered by precedence — the
/// project's settings entries, the project's discovered files, the user's entries, the
/// user's discovered files — and the files switched off are left out.
#[derive(Default)]
struct Accumulator {
    found: Vec<(PathBuf, SourceInfo, u8, bool)>,
}

impl Accumulator {
    fn add(&mut self, path: PathBuf, info: &SourceInfo, enabled: bool) {
        if self.found.iter().any(|(p, ..)| *p == path) {
            return;
        }
        let rank = match (info.scope, info.source) {
            (Scope::Project, Source::Local) => 0,
            (Scope::Project, Source::Auto) => 1,
            (Scope::User, Source::Local) => 2,
            (Scope::User, Source::Auto) => 3,
            (Scope::Temporary, _) => 4,
        };
        self.found.push((path, info.clone(), rank, enabled));
    }

    fn finish(mut self) -> Vec<Found> {
        self.found.sort_by_key(|(_, _, rank, _)| *rank);
        self.found
            .into_iter()
            .filter(|(.., enabled)| *enabled)
            .map(|(p, info, ..)| (p, info))
            .collect()
    }
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

/// What kind of resource a command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    /// A prompt template (pi's `"prompt"`).
    Prompt,
    /// A skill (pi's `"skill"`).
    Skill,
}

/// A template or skill as a `/` command (pi's rpc `get_commands` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceCommand {
    /// `name` or `skill:name`.
    pub name: String,
    /// The description.
    pub description: String,
    /// Template or skill.
    pub kind: CommandKind,
    /// The file.
    pub path: PathBuf,
    /// Where it came from.
    pub source_info: Option<SourceInfo>,
}

impl ResourceCommand {
    /// pi's JSON: `{name, description, source: "prompt"|"skill", sourceInfo}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "name": self.name,
            "description": self.description,
            "source": match self.kind { CommandKind::Prompt => "prompt", CommandKind::Skill => "skill" },
        });
        if let Some(info) = &self.source_info {
            v["sourceInfo"] = info.to_json(&self.path);
        }
        v
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

    /// The templates, then the skills (as `skill:name`), as `/` commands: pi's rpc
    /// `get_commands` lists them after the extension commands.
    pub fn commands(&self) -> Vec<ResourceCommand> {
        let templates = self.templates.iter().map(|t| ResourceCommand {
            name: t.name.clone(),
            description: t.description.clone(),
            kind: CommandKind::Prompt,
            path: t.file_path.clone(),
            source_info: t.source_info.clone(),
        });
        let skills = self.skills.iter().map(|s| ResourceCommand {
            name: format!("skill:{}", s.name),
            description: s.description.clone(),
            kind: CommandKind::Skill,
            path: s.file_path.clone(),
            source_info: s.source_info.clone(),
        });
        templates.chain(skills).collect()
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
fn template_files(options: &ResourceOptions, diagnostics: &mut Vec<Diagnostic>) -> Vec<Found> {
    use settings_entries::{Kind, enabled_by_overrides, local_files};
    let mut files = Vec::new();
    if !options.no_prompt_templates {
        let mut acc = Accumulator::default();
        let project = options.cwd.join(PROJECT_DIR_NAME);
        let (user, home) = (&options.agent_dir, options.home.as_deref());
        let (project_entries, user_entries) = (
            &options.project_entries.prompts,
            &options.user_entries.prompts,
        );
        if options.project_trusted {
            let info = SourceInfo::setting(Scope::Project);
            for (f, on) in local_files(project_entries, &project, home, Kind::Prompts) {
                acc.add(f, &info, on);
            }
        }
        let info = SourceInfo::setting(Scope::User);
        for (f, on) in local_files(user_entries, user, home, Kind::Prompts) {
            acc.add(f, &info, on);
        }
        if options.project_trusted {
            let info = SourceInfo::auto(Scope::Project, &project);
            for f in prompt_templates::collect_entries(&project.join("prompts")) {
                let on = enabled_by_overrides(&f, project_entries, &project);
                acc.add(f, &info, on);
            }
        }
        let info = SourceInfo::auto(Scope::User, user);
        for f in prompt_templates::collect_entries(&user.join("prompts")) {
            let on = enabled_by_overrides(&f, user_entries, user);
            acc.add(f, &info, on);
        }
        files = acc.finish();
    }
    for path in &options.template_paths {
        let info = SourceInfo::local(path);
        if path.is_dir() {
            files.extend(tag(prompt_templates::collect_entries(path), &info));
        } else if path.is_file() {
            if path.to_string_lossy().ends_with(".md") {
                files.push((path.clone(), info));
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
fn load_templates(files: &[Found], diagnostics: &mut Vec<Diagnostic>) -> Vec<PromptTemplate> {
    let mut templates: Vec<PromptTemplate> = Vec::new();
    let mut collisions = Vec::new();
    for (f, info) in files {
        let Some(mut t) = prompt_templates::load_file(f, diagnostics) else {
            continue;
        };
        t.source_info = Some(info.clone());
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
fn skill_files(options: &ResourceOptions, diagnostics: &mut Vec<Diagnostic>) -> Vec<Found> {
    use settings_entries::{Kind, enabled_by_overrides, local_files};
    use skills::Mode;
    let parent = |d: &Path| d.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut files = Vec::new();
    if !options.no_skills {
        let mut acc = Accumulator::default();
        let project = options.cwd.join(PROJECT_DIR_NAME);
        let (user, home) = (&options.agent_dir, options.home.as_deref());
        let (project_entries, user_entries) = (
            &options.project_entries.skills,
            &options.user_entries.skills,
        );
        let user_agents = home.map(|h| h.join(".agents").join("skills"));
        if options.project_trusted {
            let info = SourceInfo::setting(Scope::Project);
            for (f, on) in local_files(project_entries, &project, home, Kind::Skills) {
                acc.add(f, &info, on);
            }
        }
        let info = SourceInfo::setting(Scope::User);
        for (f, on) in local_files(user_entries, user, home, Kind::Skills) {
            acc.add(f, &info, on);
        }
        // Discovered files, each switched off or on by its scope's patterns (pi's
        // `isEnabledByOverrides`, against the base directory the file was found under).
        let discovered = |acc: &mut Accumulator, dir: &Path, mode, scope, base: &Path| {
            let entries = match scope {
                Scope::Project => project_entries,
                Scope::User | Scope::Temporary => user_entries,
            };
            let info = SourceInfo::auto(scope, base);
            for f in skills::collect_entries(dir, mode) {
                let on = enabled_by_overrides(&f, entries, base);
                acc.add(f, &info, on);
            }
        };
        if options.project_trusted {
            discovered(
                &mut acc,
                &project.join("skills"),
                Mode::Pith,
                Scope::Project,
                &project,
            );
            for dir in ancestor_agents_skill_dirs(&options.cwd) {
                if Some(&dir) != user_agents.as_ref() {
                    discovered(&mut acc, &dir, Mode::Agents, Scope::Project, &parent(&dir));
                }
            }
        }
        discovered(
            &mut acc,
            &user.join("skills"),
            Mode::Pith,
            Scope::User,
            user,
        );
        if let Some(dir) = &user_agents {
            discovered(&mut acc, dir, Mode::Agents, Scope::User, &parent(dir));
        }
        files = acc.finish();
    }
    for path in &options.skill_paths {
        let info = SourceInfo::local(path);
        if path.is_dir() {
            files.extend(tag(skills::collect_entries(path, Mode::Pith), &info));
        } else if path.is_file() && path.to_string_lossy().ends_with(".md") {
            files.push((path.clone(), info));
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

/// A file to read and where it came from.
type Found = (PathBuf, SourceInfo);

fn tag(paths: Vec<PathBuf>, info: &SourceInfo) -> impl Iterator<Item = Found> + '_ {
    paths.into_iter().map(move |p| (p, info.clone()))
}

/// Each path once, first place kept (pi's `mergePaths`).
fn dedup(files: Vec<Found>) -> Vec<Found> {
    let mut seen = std::collections::HashSet::new();
    files
        .into_iter()
        .filter(|(f, _)| seen.insert(f.clone()))
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
