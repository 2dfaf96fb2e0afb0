//! pith-tests' integration tests, one binary: what crosses crates (pi's conformance fixtures,
//! the divergences from pi, listing, properties of the log) and the workspace's own rules
//! (no file-level import cycles).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod attacks;
mod conformance;
mod divergences;
mod import_cycles;
mod listing;
mod outline;
mod properties;
mod search;
