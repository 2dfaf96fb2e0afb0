//! `/settings`: pi's settings selector (`SettingsSelectorComponent`), with the settings pith
//! honours, in pi's order and with pi's labels, descriptions and values. Each change is saved
//! at once in `<agent dir>/settings.json` through the runtime
//! ([`pith_actors::settings::Settings::save_global`], which keeps the rest of the file and
//! replaces it atomically) and applied to the running session where pi applies it; pi's other
//! entries are listed in docs/divergences.md.

use anyhow::Result;
use serde_json::Value;

use pith_actors::settings::{QueueMode, Settings};

use super::app::App;
use super::commands::{completions, view};
use crate::tui::settings_list::{SettingItem, show_settings};

/// pi's `HTTP_IDLE_TIMEOUT_CHOICES`: label and milliseconds (0: no limit).
const HTTP_IDLE_TIMEOUTS: [(&str, u64); 5] = [
    ("30 sec", 30_000),
    ("1 min", 60_000),
    ("2 min", 120_000),
    ("5 min", 300_000),
    ("disabled", 0),
];

/// pi's `DEFAULT_PROJECT_TRUST_LABELS`: the stored value and its label.
const PROJECT_TRUST: [(&str, &str); 3] = [
    ("ask", "Ask"),
    ("always", "Always trust"),
    ("never", "Never trust"),
];

/// pi's `quietStartup` (`getQuietStartup`: `true`, `"header"`, anything else is `false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuietStartup {
    /// `false` (the default): the header and the startup listings.
    Verbose,
    /// `"header"`: the header only.
    HeaderOnly,
    /// `true`: neither.
    Quiet,
}

impl QuietStartup {
    /// The setting as pi reads it.
    pub fn of(settings: &Settings) -> QuietStartup {
        match settings.get("quietStartup") {
            Some(Value::Bool(true)) => QuietStartup::Quiet,
            Some(Value::String(s)) if s == "header" => QuietStartup::HeaderOnly,
            _ => QuietStartup::Verbose,
        }
    }

    /// The value `/settings` shows.
    fn shown(self) -> &'static str {
        match self {
            QuietStartup::Verbose => "false",
            QuietStartup::HeaderOnly => "header",
            QuietStartup::Quiet => "true",
        }
    }
}

/// pi's `doubleEscapeAction`: what Esc Esc on an empty editor opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoubleEscape {
    /// `/tree` (the default, and what an unknown value means).
    Tree,
    /// `/fork`.
    Fork,
    /// Nothing.
    Nothing,
}

impl DoubleEscape {
    /// The setting as pi reads it.
    pub fn of(settings: &Settings) -> DoubleEscape {
        match settings.get("doubleEscapeAction").and_then(Value::as_str) {
            Some("fork") => DoubleEscape::Fork,
            Some("none") => DoubleEscape::Nothing,
            _ => DoubleEscape::Tree,
        }
    }

    /// The value `/settings` shows.
    fn shown(self) -> &'static str {
        match self {
            DoubleEscape::Tree => "tree",
            DoubleEscape::Fork => "fork",
            DoubleEscape::Nothing => "none",
        }
    }
}

/// What the interactive mode shows of its own (not in the settings file alone).
pub struct Shown {
    /// Ctrl-T's state: thinking blocks hidden.
    pub hide_thinking: bool,
    /// The layout in use (`--tui-mode` may differ from the setting).
    pub fullscreen: bool,
}

/// pi's `formatHttpIdleTimeoutMs`.
fn http_idle_label(ms: u64) -> String {
    HTTP_IDLE_TIMEOUTS
        .iter()
        .find(|(_, v)| *v == ms)
        .map_or_else(
            || format!("{} sec", ms as f64 / 1000.0),
            |(l, _)| l.to_string(),
        )
}

fn bool_item(id: &'static str, label: &'static str, description: &str, value: bool) -> SettingItem {
    SettingItem {
        id,
        label,
        description: description.to_owned(),
        value: value.to_string(),
        values: vec!["true", "false"],
    }
}

fn mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::OneAtATime => "one-at-a-time",
        QueueMode::All => "all",
    }
}

/// The items of the selector, with the values `settings` gives (pi's defaults for the rest).
pub fn items(settings: &Settings, shown: &Shown) -> Vec<SettingItem> {
    let text = |key: &str, default: &str| {
        settings
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    };
    let flag = |key: &str, default: bool| {
        settings
            .get(key)
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    let trust = text("defaultProjectTrust", "ask");
    vec![
        bool_item(
            "autocompact",
            "Auto-compact",
            "Automatically compact context when it gets too large",
            settings.compaction().enabled,
        ),
        bool_item(
            "auto-resize-images",
            "Auto-resize images",
            "Resize large images to 2000x2000 max for better model compatibility",
            settings.images_auto_resize(),
        ),
        bool_item(
            "block-images",
            "Block images",
            "Prevent images from being sent to LLM providers",
            settings.images_blocked(),
        ),
        bool_item(
            "skill-commands",
            "Skill commands",
            "Register skills as /skill:name commands",
            flag("enableSkillCommands", true),
        ),
        SettingItem {
            id: "steering-mode",
            label: "Steering mode",
            description: "Enter while streaming queues steering messages. 'one-at-a-time': deliver one, wait for response. 'all': deliver all at once.".into(),
            value: mode_name(settings.steering_mode()).into(),
            values: vec!["one-at-a-time", "all"],
        },
        SettingItem {
            id: "follow-up-mode",
            label: "Follow-up mode",
            description: "Alt+Enter queues follow-up messages until agent stops. 'one-at-a-time': deliver one, wait for response. 'all': deliver all at once.".into(),
            value: mode_name(settings.follow_up_mode()).into(),
            values: vec!["one-at-a-time", "all"],
        },
        SettingItem {
            id: "http-idle-timeout",
            label: "HTTP idle timeout",
            description: "Maximum idle gap while waiting for HTTP headers or body chunks. Disable for local models that pause longer than five minutes.".into(),
            value: http_idle_label(settings.provider_retry().http_idle_timeout_ms),
            values: HTTP_IDLE_TIMEOUTS.iter().map(|(l, _)| *l).collect(),
        },
        bool_item(
            "hide-thinking",
            "Hide thinking",
            "Hide thinking blocks in assistant responses",
            shown.hide_thinking,
        ),
        bool_item(
            "collapse-changelog",
            "Collapse changelog",
            "Show condensed changelog after updates",
            flag("collapseChangelog", false),
        ),
        SettingItem {
            id: "quiet-startup",
            label: "Quiet startup",
            description: "Disable verbose printing at startup (header: keep only the startup header)".into(),
            value: QuietStartup::of(settings).shown().into(),
            values: vec!["true", "header", "false"],
        },
        SettingItem {
            id: "default-project-trust",
            label: "Default project trust",
            description: "Fallback behavior when no extension or saved trust decision decides project trust".into(),
            value: PROJECT_TRUST
                .iter()
                .find(|(v, _)| *v == trust)
                .map_or("Ask", |(_, l)| l)
                .into(),
            values: PROJECT_TRUST.iter().map(|(_, l)| *l).collect(),
        },
        SettingItem {
            id: "double-escape-action",
            label: "Double-escape action",
            description: "Action when pressing Escape twice with empty editor".into(),
            value: DoubleEscape::of(settings).shown().into(),
            values: vec!["tree", "fork", "none"],
        },
        SettingItem {
            id: "tree-filter-mode",
            label: "Tree filter mode",
            description: "Default filter when opening /tree".into(),
            value: text("treeFilterMode", "default"),
            values: vec!["default", "no-tools", "user-only", "labeled-only", "all"],
        },
        SettingItem {
            id: "tui-mode",
            label: "TUI mode",
            description: "Interface layout; regular mode uses the terminal's normal scrollback"
                .into(),
            // The mode in use, as pi shows it.
            value: if shown.fullscreen {
                "fullscreen".into()
            } else {
                "regular".into()
            },
            values: vec!["regular", "fullscreen"],
        },
    ]
}

/// Where pi's setter for `item` writes in `settings.json`, and the value it writes.
pub fn stored(item: &SettingItem) -> Option<(&'static str, Value)> {
    let flag = Value::Bool(item.value == "true");
    let text = Value::String(item.value.clone());
    Some(match item.id {
        "autocompact" => ("compaction.enabled", flag),
        "auto-resize-images" => ("images.autoResize", flag),
        "block-images" => ("images.blockImages", flag),
        "skill-commands" => ("enableSkillCommands", flag),
        "steering-mode" => ("steeringMode", text),
        "follow-up-mode" => ("followUpMode", text),
        "http-idle-timeout" => {
            let (_, ms) = HTTP_IDLE_TIMEOUTS.iter().find(|(l, _)| *l == item.value)?;
            ("httpIdleTimeoutMs", Value::from(*ms))
        }
        "hide-thinking" => ("hideThinkingBlock", flag),
        "collapse-changelog" => ("collapseChangelog", flag),
        // pi's `newValue === "header" ? "header" : newValue === "true"`.
        "quiet-startup" if item.value == "header" => ("quietStartup", text),
        "quiet-startup" => ("quietStartup", flag),
        "default-project-trust" => {
            let (value, _) = PROJECT_TRUST.iter().find(|(_, l)| *l == item.value)?;
            ("defaultProjectTrust", Value::from(*value))
        }
        "double-escape-action" => ("doubleEscapeAction", text),
        "tree-filter-mode" => ("treeFilterMode", text),
        "tui-mode" => ("tuiMode", text),
        _ => return None,
    })
}

impl App {
    /// `/settings`: the selector; each change is saved and applied at once (the runtime takes
    /// the queue modes, compaction, images and timeouts), what the interactive mode shows
    /// itself (thinking blocks, skill completion, the footer's auto-compact mark) when it
    /// closes.
    ///
    /// Errors: the runtime stopped answering.
    pub(super) async fn settings(&mut self) -> Result<()> {
        let cwd = self.rt.current_session().await?.cwd;
        let settings = Settings::load(&self.env.agent_dir, std::path::Path::new(&cwd));
        let shown = Shown {
            hide_thinking: self.transcript.hide_thinking,
            fullscreen: self.editor.fullscreen(),
        };
        let before = items(&settings, &shown);
        let (rt, handle) = (self.rt.clone(), tokio::runtime::Handle::current());
        let list = before.clone();
        let closed = view(move || {
            show_settings("Settings", list, |item| {
                let Some((path, value)) = stored(item) else {
                    return Ok(());
                };
                handle
                    .block_on(rt.set_setting(path, value))
                    .map_err(|e| e.to_string())
            })
        })
        .await;
        let after = match closed {
            Ok(after) => after,
            Err(e) => {
                self.view_failed(&e);
                return Ok(());
            }
        };
        let changed: Vec<&SettingItem> = after
            .iter()
            .zip(&before)
            .filter(|(a, b)| a.value != b.value)
            .map(|(a, _)| a)
            .collect();
        for item in &changed {
            match item.id {
                "tui-mode" => self.editor.set_fullscreen(item.value == "fullscreen"),
                "hide-thinking" => {
                    self.transcript.hide_thinking = item.value == "true";
                    self.screen.toggle(
                        self.transcript.hide_thinking,
                        self.transcript.expand_tools,
                        None,
                    );
                }
                "skill-commands" => {
                    self.skill_commands = item.value == "true";
                    self.editor.set_commands(completions(
                        &self.ext_commands,
                        &self.resources,
                        self.skill_commands,
                    ));
                }
                "http-idle-timeout" => {
                    self.status(&format!("HTTP idle timeout: {}", item.value));
                }
                _ => {}
            }
        }
        if changed.iter().any(|i| i.id == "autocompact") {
            self.footer().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(json: &str) -> Settings {
        let tmp = tempfile::tempdir().expect("tmp");
        std::fs::write(tmp.path().join("settings.json"), json).expect("write");
        Settings::load(tmp.path(), tmp.path())
    }

    #[test]
    fn items_show_the_file_and_pi_defaults_and_write_back_where_pi_writes() {
        let shown = Shown {
            hide_thinking: true,
            fullscreen: false,
        };
        let all = items(&loaded("{}"), &shown);
        let values: Vec<(&str, &str)> = all.iter().map(|i| (i.id, i.value.as_str())).collect();
        assert_eq!(
            values,
            [
                ("autocompact", "true"),
                ("auto-resize-images", "true"),
                ("block-images", "false"),
                ("skill-commands", "true"),
                ("steering-mode", "one-at-a-time"),
                ("follow-up-mode", "one-at-a-time"),
                ("http-idle-timeout", "5 min"),
                ("hide-thinking", "true"),
                ("collapse-changelog", "false"),
                ("quiet-startup", "false"),
                ("default-project-trust", "Ask"),
                ("double-escape-action", "tree"),
                ("tree-filter-mode", "default"),
                ("tui-mode", "regular"),
            ]
        );
        let set = items(
            &loaded(
                r#"{"httpIdleTimeoutMs": 45000, "defaultProjectTrust": "never", "steeringMode": "all"}"#,
            ),
            &shown,
        );
        assert_eq!(set[6].value, "45 sec");
        assert_eq!(set[10].value, "Never trust");
        assert_eq!(set[4].value, "all");

        let mut item = all[6].clone();
        item.value = "disabled".into();
        assert_eq!(stored(&item), Some(("httpIdleTimeoutMs", Value::from(0))));
        let mut item = all[10].clone();
        item.value = "Always trust".into();
        assert_eq!(
            stored(&item),
            Some(("defaultProjectTrust", Value::from("always")))
        );
        let mut item = all[9].clone();
        item.value = "header".into();
        assert_eq!(stored(&item), Some(("quietStartup", Value::from("header"))));
        item.value = "true".into();
        assert_eq!(stored(&item), Some(("quietStartup", Value::Bool(true))));
        let mut item = all[13].clone();
        item.value = "fullscreen".into();
        assert_eq!(stored(&item), Some(("tuiMode", Value::from("fullscreen"))));
        let mut item = all[0].clone();
        item.value = "false".into();
        assert_eq!(
            stored(&item),
            Some(("compaction.enabled", Value::Bool(false)))
        );
        assert_eq!(
            stored(&all[12]),
            Some(("treeFilterMode", Value::from("default")))
        );
    }
}
