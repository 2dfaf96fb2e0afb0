//! Names of MCP tools as the model sees them: `mcp__<server>__<tool>` (pi-mcp 1.6.0
//! `createMcpToolName`, also Claude Code's and Codex's convention; spec: extensions.md §1.3).

use sha2::{Digest, Sha256};

/// Provider tool names are limited to 64 characters of `[A-Za-z0-9_-]`.
pub const MAX_TOOL_NAME_LENGTH: usize = 64;

/// `mcp__<server>__<tool>` with every character outside `[A-Za-z0-9_]` replaced by `_`.
///
/// When that name is longer than [`MAX_TOOL_NAME_LENGTH`] or `is_taken` says another MCP tool
/// has it (`a-b` and `a_b` sanitise alike), it is cut to 55 characters and `_` plus the first
/// 8 hex digits of sha256(`<server>\0<tool>`) is appended, as pi does.
pub fn tool_name(server: &str, tool: &str, is_taken: impl Fn(&str) -> bool) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.len() <= MAX_TOOL_NAME_LENGTH && !is_taken(&name) {
        return name;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    // Every character is ASCII after sanitising, so byte slicing is safe.
    let keep = MAX_TOOL_NAME_LENGTH - hash.len() - 1;
    format!("{}_{hash}", &name[..name.len().min(keep)])
}

/// A server's namespace, `mcp__<server>` with `-` as `_`: two server names that differ only
/// there would share it, so a configuration must not have both (pi's `mcpNamespace`).
pub fn namespace(server: &str) -> String {
    format!("mcp__{}", server.replace('-', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_kept_and_others_sanitised() {
        assert_eq!(
            tool_name("fs", "read_file", |_| false),
            "mcp__fs__read_file"
        );
        assert_eq!(
            tool_name("my-docs", "search.v2", |_| false),
            "mcp__my_docs__search_v2"
        );
    }

    #[test]
    fn long_and_taken_names_are_hashed_as_pi_does() {
        // pi-mcp 1.6.0's createMcpToolName gives exactly these.
        assert_eq!(
            tool_name("s", &"x".repeat(80), |_| false),
            "mcp__s__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_cbf4205d"
        );
        assert_eq!(
            tool_name("a", "b-c", |n| n == "mcp__a__b_c"),
            "mcp__a__b_c_02654a5c"
        );
    }
}
