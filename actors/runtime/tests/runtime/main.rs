//! pith-actors' integration tests, one binary: the runtime end to end on the faux model, one
//! module per concept, and summary requests as they reach a model server.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

mod cancel;
mod compaction;
mod controls;
mod ext_replay;
mod extensions;
mod interception;
mod no_prompt_lost;
mod processes;
mod prompts;
mod replay;
mod resources;
mod retries;
mod selection;
mod sessions;
mod settings;
mod summarize;
mod system_prompt;
mod trace;
mod tree;
