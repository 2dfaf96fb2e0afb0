//! pith-llm's integration tests, one binary: the providers against a local server that streams
//! scripted bodies in small chunks (`providers`, `providers_gemini_responses`), pi-ai 1.6.0's
//! recorded wire traffic replayed (`pi_ai_wire`), and servers that misbehave
//! (`hostile_servers`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod hostile_servers;
mod pi_ai_wire;
mod providers;
mod providers_gemini_responses;
