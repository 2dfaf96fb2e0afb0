//! pith-tools' integration tests, one binary: pi's built-in tools on real directories
//! (`builtin`), and grep/find/ls against pi 1.6.0's recorded results (`search`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod builtin;
mod search;
