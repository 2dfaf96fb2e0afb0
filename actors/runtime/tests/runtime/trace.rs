//! Traces: every actor handles its messages in a span that names it and its sender, and a
//! run, a model request and a tool execution are spans of their own.

use std::collections::BTreeSet;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use super::support::*;

/// What the spans of a test said: their names, and the `actor`/`from` of message spans.
#[derive(Default)]
struct Seen {
    names: BTreeSet<String>,
    actors: BTreeSet<String>,
    senders: BTreeSet<String>,
    /// `causation` values of message spans: a flow's later messages name their cause.
    causations: BTreeSet<u64>,
}

struct Record(Arc<Mutex<Seen>>);

struct Fields<'a>(&'a mut Seen, bool);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}").trim_matches('"').to_owned();
        match (self.1, field.name()) {
            (true, "actor") => {
                self.0.actors.insert(text);
            }
            (true, "from") => {
                self.0.senders.insert(text);
            }
            _ => {}
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.1 && field.name() == "causation" {
            self.0.causations.insert(value);
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Record {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: Context<'_, S>,
    ) {
        let mut seen = self.0.lock().unwrap();
        let name = attrs.metadata().name();
        seen.names.insert(name.to_owned());
        attrs.record(&mut Fields(&mut seen, name == "message"));
    }
}

/// A tool that answers `ok`.
struct Echo;

impl pith_tools::Tool for Echo {
    fn spec(&self) -> pith_tools::tool::ToolSpec {
        pith_tools::tool::ToolSpec {
            prefers_strict_schema: false,
            name: "echo".into(),
            description: "answers ok".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn run(
        &self,
        _args: serde_json::Value,
        _ctx: pith_tools::ToolContext,
    ) -> pith_tools::ToolFuture {
        Box::pin(async {
            Ok(pith_tools::ToolOutput {
                content: vec![pith_events::ContentBlock::text("ok")],
                details: serde_json::Value::Null,
                structured_content: None,
            })
        })
    }
}

#[tokio::test(flavor = "current_thread")]
async fn every_actor_appears_by_name_and_runs_requests_and_tools_are_spans() {
    use pith_actors::tree_navigator::NavigateOptions;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let subscriber = tracing_subscriber::registry().with(Record(seen.clone()));
    // The test's runtime runs every actor on this thread, which this subscriber serves.
    let _installed = tracing::subscriber::set_default(subscriber);
    let tmp = tempfile::tempdir().unwrap();
    let env = env(tmp.path());
    let replies = script(
        r#"[{"content":[{"type":"toolCall","id":"t1","name":"echo","arguments":{}}]},
            {"content":[{"type":"text","text":"done"}]},
            {"content":[{"type":"text","text":"BRANCH"}]}]"#,
    );
    let config = RuntimeConfig {
        tools: ToolChoice::Fixed(pith_tools::Toolset::new(vec![Arc::new(Echo)])),
        ..project_config(
            &env,
            Arc::new(Faux::new(replies, env.clock.clone())),
            vec![
                Arc::new(|| Box::new(PromptCounter::default())),
                Arc::new(|| Box::new(NoForkWhileRunning::default())),
            ],
        )
    };
    let rt = Runtime::start(config, FirstSession::New)
        .await
        .unwrap()
        .handle;
    let mut events = rt.subscribe().await.unwrap();
    rt.prompt("go").await.unwrap();
    run_names(&mut events).await;
    let first = rt.snapshot().await.unwrap();
    let prompt = first
        .entries()
        .iter()
        .find(|e| e.raw().contains(r#""text":"go""#))
        .unwrap()
        .id()
        .to_owned();
    let options = NavigateOptions {
        summarize: true,
        ..NavigateOptions::default()
    };
    rt.navigate_tree(&prompt, options).await.unwrap();
    rt.shutdown().await.unwrap();

    let seen = seen.lock().unwrap();
    for actor in [
        "Runtime",
        "SessionWriter",
        "Projection",
        "Agent",
        "Compactor",
        "TreeNavigator",
        "Extension:prompt-counter",
        "Extension:no-fork-while-running",
    ] {
        assert!(seen.actors.contains(actor), "{actor} in {:?}", seen.actors);
    }
    assert!(seen.senders.contains("Frontend"), "{:?}", seen.senders);
    for span in ["run", "provider_request", "tool"] {
        assert!(seen.names.contains(span), "{span} in {:?}", seen.names);
    }
    // Causation names the message that caused this one, not the flow: many distinct ones.
    assert!(seen.causations.len() > 3, "{:?}", seen.causations);
}
