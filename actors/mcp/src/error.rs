//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong in pith-mcp.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An `mcp.json` could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An `mcp.json` is not an object with an `mcpServers` object, or an entry is invalid.
    #[error("{path}: {message}")]
    Config {
        /// The file.
        path: PathBuf,
        /// What was expected.
        message: String,
    },
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;
