//! Which model answers ([`ModelRef`]) and how hard it thinks ([`ThinkingLevel`]): the values
//! `model_change` and `thinking_level_change` entries record and every request carries.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A model by provider and id, as `model_change` entries and `--model provider/id` name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ModelRef {
    /// Provider name, e.g. `anthropic`, `faux`, or a custom one from `models.json`.
    pub provider: String,
    /// The model id within the provider, e.g. `claude-sonnet-4-5`.
    pub id: String,
}

impl ModelRef {
    /// `provider/id`.
    pub fn new(provider: impl Into<String>, id: impl Into<String>) -> ModelRef {
        ModelRef {
            provider: provider.into(),
            id: id.into(),
        }
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.id)
    }
}

/// pi's thinking levels (`off` … `xhigh`), lowest first; serialized as pi spells them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning.
    #[default]
    Off,
    /// `minimal`.
    Minimal,
    /// `low`.
    Low,
    /// `medium` (pi's default).
    Medium,
    /// `high`.
    High,
    /// `xhigh`: only models whose `thinkingLevelMap` names it.
    Xhigh,
    /// `max` (pi ≥ 1.x): only models whose `thinkingLevelMap` names it.
    Max,
}

impl ThinkingLevel {
    /// Every level, lowest first.
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    /// pi's spelling: `off`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    /// The levels as pi lists them in messages: `off, minimal, low, medium, high, xhigh, max`.
    pub fn list() -> String {
        ThinkingLevel::ALL.map(ThinkingLevel::as_str).join(", ")
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A thinking level pi does not know (the crate's one error: everything else here is data).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown thinking level {0:?} (one of {list})", list = ThinkingLevel::list())]
pub struct UnknownThinkingLevel(pub String);

impl FromStr for ThinkingLevel {
    type Err = UnknownThinkingLevel;

    /// Exactly pi's spellings (no case folding, as pi compares them).
    fn from_str(s: &str) -> Result<ThinkingLevel, UnknownThinkingLevel> {
        ThinkingLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| UnknownThinkingLevel(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_read_and_print_as_pi_spells_them() {
        for level in ThinkingLevel::ALL {
            assert_eq!(level.as_str().parse::<ThinkingLevel>(), Ok(level));
            assert_eq!(
                serde_json::to_string(&level).ok(),
                Some(format!("\"{level}\""))
            );
        }
        assert!("High".parse::<ThinkingLevel>().is_err());
        assert_eq!(
            ThinkingLevel::list(),
            "off, minimal, low, medium, high, xhigh, max"
        );
        assert_eq!(ModelRef::new("faux", "faux-1").to_string(), "faux/faux-1");
    }
}
