use super::*;

fn registry_with(json: &str) -> ModelRegistry {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("models.json"), json).unwrap();
    ModelRegistry::load(dir.path())
}

#[test]
fn builtin_table_reads_and_prices_like_pi() {
    let r = ModelRegistry::builtin();
    assert!(r.problems().is_empty(), "{:?}", r.problems());
    let sonnet = r.find("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.api, Api::AnthropicMessages);
    assert_eq!(sonnet.base_url, "https://api.anthropic.com");
    assert_eq!(sonnet.context_window, 200_000);
    let mut usage = pith_events::Usage {
        input: 1000,
        output: 500,
        cache_read: 2000,
        cache_write: 100,
        ..Default::default()
    };
    sonnet.price(&mut usage);
    // 3 / 15 / 0.3 / 3.75 USD per million tokens.
    assert_eq!(usage.cost.input, 3.0 / 1e6 * 1000.0);
    assert_eq!(usage.cost.output, 15.0 / 1e6 * 500.0);
    assert_eq!(usage.cost.cache_read, 0.3 / 1e6 * 2000.0);
    assert_eq!(usage.cost.cache_write, 3.75 / 1e6 * 100.0);
    assert_eq!(
        usage.cost.total,
        usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write
    );
    // pith reaches OpenAI's models through Chat Completions.
    assert_eq!(
        r.find("openai", "gpt-4o").unwrap().api,
        Api::OpenAiCompletions
    );
    assert!(r.find("faux", "faux-1").is_some());
}

#[test]
fn resolves_models_as_pi_does() {
    let r = ModelRegistry::builtin();
    let got = r.resolve(None, "anthropic/claude-sonnet-4-5:high").unwrap();
    assert_eq!(got.model.qualified_id(), "anthropic/claude-sonnet-4-5");
    assert_eq!(got.thinking_level.as_deref(), Some("high"));
    // Partial ids prefer aliases over dated versions.
    let got = r.resolve(Some("anthropic"), "sonnet-4-5").unwrap();
    assert_eq!(got.model.id, "claude-sonnet-4-5");
    // --provider with a provider-prefixed --model.
    let got = r.resolve(Some("OpenAI"), "openai/gpt-4o").unwrap();
    assert_eq!(got.model.qualified_id(), "openai/gpt-4o");
    // A strict CLI pattern: an unknown suffix is part of the id.
    let err = r.resolve(None, "nonexistent-model").unwrap_err();
    assert_eq!(
        err,
        "Model \"nonexistent-model\" not found. Use --list-models to see available models."
    );
    assert_eq!(
        r.resolve(Some("nope"), "x").unwrap_err(),
        "Unknown provider \"nope\". Use --list-models to see available providers/models."
    );
    // An unknown id of a known provider borrows the provider's default model settings.
    let got = r.resolve(None, "anthropic/claude-next").unwrap();
    assert_eq!(got.model.id, "claude-next");
    assert_eq!(got.model.api, Api::AnthropicMessages);
    assert_eq!(
        got.warning.as_deref(),
        Some("Model \"claude-next\" not found for provider \"anthropic\". Using custom model id.")
    );
}

#[test]
fn clamps_thinking_levels_as_pi_does() {
    let r = ModelRegistry::builtin();
    let faux = r.find("faux", "faux-1").unwrap();
    assert_eq!(clamp_thinking_level(faux, "high"), "off");
    let sonnet = r.find("anthropic", "claude-sonnet-4-5").unwrap();
    assert!(sonnet.reasoning);
    assert_eq!(clamp_thinking_level(sonnet, "medium"), "medium");
    // xhigh needs a thinkingLevelMap entry; the nearest level below is taken.
    assert_eq!(clamp_thinking_level(sonnet, "xhigh"), "high");
    let mut m = sonnet.clone();
    m.thinking_level_map = Some(BTreeMap::from([("minimal".to_owned(), None)]));
    assert_eq!(clamp_thinking_level(&m, "minimal"), "low");
}

#[test]
fn models_json_adds_overrides_and_reports() {
    let r = registry_with(
        r#"{
  // a local server
  "providers": {
    "local": {
      "baseUrl": "http://127.0.0.1:8080/v1",
      "api": "openai-completions",
      "apiKey": "LOCAL_KEY_VAR",
      "models": [{"id": "qwen", "contextWindow": 32768,},],
    },
    "anthropic": {
      "baseUrl": "https://proxy.example/anthropic",
      "modelOverrides": {"claude-sonnet-4-5": {"name": "Sonnet via proxy", "cost": {"input": 1}}}
    }
  }
}"#,
    );
    assert!(r.problems().is_empty(), "{:?}", r.problems());
    let local = r.find("local", "qwen").unwrap();
    assert_eq!(local.base_url, "http://127.0.0.1:8080/v1");
    assert_eq!(local.api, Api::OpenAiCompletions);
    assert_eq!(local.context_window, 32768);
    assert_eq!(local.max_tokens, 16384);
    assert_eq!(local.name, "qwen");
    assert_eq!(r.configured_key("local"), Some("LOCAL_KEY_VAR"));
    let sonnet = r.find("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.base_url, "https://proxy.example/anthropic");
    assert_eq!(sonnet.name, "Sonnet via proxy");
    assert_eq!(sonnet.cost.input, 1.0);
    assert_eq!(sonnet.cost.output, 15.0);
    assert_eq!(
        r.find("anthropic", "claude-opus-4-5").unwrap().base_url,
        "https://proxy.example/anthropic"
    );

    let bad =
        registry_with(r#"{"providers": {"x": {"baseUrl": "http://h", "models": [{"id": "m"}]}}}"#);
    assert_eq!(bad.problems().len(), 1);
    assert!(
        bad.problems()[0].ends_with(
            "models.json: Provider x: \"apiKey\" is required when defining custom models.; its models are not used"
        ),
        "{:?}",
        bad.problems()
    );
    assert!(bad.find("x", "m").is_none());
    let broken = registry_with("{\"providers\": {\n  \"x\": [}");
    assert!(
        broken.problems()[0].contains("models.json: line 2, column"),
        "{:?}",
        broken.problems()
    );
}

#[test]
fn strips_comments_but_not_inside_strings() {
    assert_eq!(
        strip_json_comments("{\"a\": \"http://x//y\", // c\n \"b\": [1,2,],}"),
        "{\"a\": \"http://x//y\", \n \"b\": [1,2]}"
    );
}
