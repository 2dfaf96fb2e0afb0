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
    // OpenAI's models go through the Responses API, as in pi 1.6.0, those only it serves
    // included; Gemini through Google's API.
    for id in ["gpt-4o", "gpt-5-pro", "gpt-5.3-codex"] {
        assert_eq!(
            r.find("openai", id).unwrap().api,
            Api::OpenAiResponses,
            "{id}"
        );
    }
    let gemini = r.find("google", "gemini-2.5-pro").unwrap();
    assert_eq!(gemini.api, Api::GoogleGenerativeAi);
    assert_eq!(
        gemini.base_url,
        "https://generativelanguage.googleapis.com/v1beta"
    );
    // Above 200000 prompt tokens Gemini 2.5 Pro costs its second tier: 2.5 / 15 USD.
    let mut long = pith_events::Usage {
        input: 150_000,
        output: 1000,
        cache_read: 60_000,
        ..Default::default()
    };
    gemini.price(&mut long);
    assert_eq!(long.cost.input, 2.5 / 1e6 * 150_000.0);
    assert_eq!(long.cost.output, 15.0 / 1e6 * 1000.0);
    long.cache_read = 10_000;
    gemini.price(&mut long);
    assert_eq!(long.cost.input, 1.25 / 1e6 * 150_000.0);
    assert!(r.find("faux", "faux-1").is_some());
    // Every default model pi names for a provider pith knows is in the table.
    for (provider, id) in DEFAULT_MODEL_PER_PROVIDER {
        assert!(r.find(provider, id).is_some(), "{provider}/{id}");
    }
}

#[test]
fn resolves_models_as_pi_does() {
    let r = ModelRegistry::builtin();
    let got = r.resolve(None, "anthropic/claude-sonnet-4-5:high").unwrap();
    assert_eq!(got.model.qualified_id(), "anthropic/claude-sonnet-4-5");
    assert_eq!(got.thinking_level, Some(pith_events::ThinkingLevel::High));
    // Partial ids prefer aliases over dated versions.
    let got = r.resolve(Some("anthropic"), "sonnet-4-5").unwrap();
    assert_eq!(got.model.id, "claude-sonnet-4-5");
    // --provider with a provider-prefixed --model.
    let got = r.resolve(Some("OpenAI"), "openai/gpt-4o").unwrap();
    assert_eq!(got.model.qualified_id(), "openai/gpt-4o");
    // A strict CLI pattern: an unknown suffix is part of the id.
    let err = r.resolve(None, "nonexistent-model").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Model \"nonexistent-model\" not found. Use --list-models to see available models."
    );
    assert_eq!(
        r.resolve(Some("nope"), "x").unwrap_err().to_string(),
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
    use pith_events::ThinkingLevel::*;
    assert_eq!(clamp_thinking_level(faux, High), Off);
    let sonnet = r.find("anthropic", "claude-sonnet-4-5").unwrap();
    assert!(sonnet.reasoning);
    assert_eq!(clamp_thinking_level(sonnet, Medium), Medium);
    // xhigh needs a thinkingLevelMap entry; the nearest level below is taken.
    assert_eq!(clamp_thinking_level(sonnet, Xhigh), High);
    let mut m = sonnet.clone();
    m.thinking_level_map = Some(BTreeMap::from([("minimal".to_owned(), None)]));
    assert_eq!(clamp_thinking_level(&m, Minimal), Low);
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

#[test]
fn cycling_goes_round_the_models_with_keys_and_leaves_the_offline_one_out() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("models.json"),
        r#"{"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "apiKey": "none", "models": [{"id": "a"}, {"id": "b"}]}}}"#,
    )
    .unwrap();
    let registry = ModelRegistry::load(dir.path());
    let creds = Credentials::load(dir.path());
    let next = |provider: &str, id: &str| {
        registry
            .next_model(&creds, &ModelRef::new(provider, id))
            .map(|m| format!("{}/{}", m.provider, m.id))
    };
    assert_eq!(next("mock", "a").as_deref(), Some("mock/b"));
    assert_eq!(next("mock", "b").as_deref(), Some("mock/a"));
    // From the offline model the cycle enters the keyed ones.
    assert_eq!(next("faux", "faux-1").as_deref(), Some("mock/a"));

    let only_one = tempfile::tempdir().unwrap();
    std::fs::write(
        only_one.path().join("models.json"),
        r#"{"providers": {"mock": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "apiKey": "none", "models": [{"id": "a"}]}}}"#,
    )
    .unwrap();
    let registry = ModelRegistry::load(only_one.path());
    let creds = Credentials::load(only_one.path());
    assert!(
        registry
            .next_model(&creds, &ModelRef::new("mock", "a"))
            .is_none(),
        "one keyed model: nothing to cycle to, as in pi"
    );
}
