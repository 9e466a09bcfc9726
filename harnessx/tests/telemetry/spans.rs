//! The OpenTelemetry GenAI spans as a plain `tracing` subscriber sees them: the tree of one run,
//! names, attributes, failures, and content only on opt-in.

use std::sync::Arc;

use futures::StreamExt;
use harnessx::agent::RunOutcome;
use harnessx::journal::Journal;
use harnessx::model::{
    FallbackModel, FunctionModel, ModelResponse, ModelSettings, StopReason, TestModel,
};
use harnessx::{
    Agent, AgentConfig, AgentError, ModelError, ToolCall, ToolDefinition, ToolError, ToolOutput,
    Usage, handler_fn,
};
use harnessx::{PermissionLevel, SubAgent};
use serde_json::{Value, json};

use super::capture::{Capture, Captured};
use super::journal_support::MemoryJournal;

/// An agent whose model calls `lookup` twice (concurrently) and `broken` once, then answers;
/// `lookup` reports an event and a span of its own from its task.
pub(super) fn scripted_agent(capture_content: bool) -> Agent {
    let usage = |input_tokens, output_tokens| Usage::new(input_tokens, output_tokens);
    let model = TestModel::new()
        .with_name("openai:gpt-4o-mini")
        .then_respond(
            ModelResponse::default()
                .with_tool_calls(vec![
                    ToolCall::json("c1", "lookup", json!({"q": "alpha"})),
                    ToolCall::json("c2", "lookup", json!({"q": "beta"})),
                    ToolCall::json("c3", "broken", json!({})),
                ])
                .with_usage(usage(100, 20))
                .with_stop_reason(StopReason::ToolUse),
        )
        .then_respond(
            ModelResponse::text("secret answer text")
                .with_usage(usage(130, 7).with_cache_read_tokens(64))
                .with_stop_reason(StopReason::EndTurn),
        );
    let lookup = ToolDefinition::new(
        "lookup",
        "Look a word up.",
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        handler_fn(|args, _| async move {
            let q = args["q"].as_str().unwrap_or_default().to_owned();
            tracing::info!(word = %q, "looking up");
            let _inner = tracing::info_span!("lookup_index").entered();
            Ok(ToolOutput::json(json!({"found": q})))
        }),
    );
    let broken = ToolDefinition::new(
        "broken",
        "Always fails.",
        json!({"type": "object"}),
        handler_fn(|_, _| async { Err(ToolError::failed("disk on fire: secret-123")) }),
    );
    Agent::builder()
        .model(model)
        .instructions("secret system prompt")
        .tool(lookup)
        .tool(broken)
        .config(
            AgentConfig::default()
                .with_name("support-bot")
                .with_planning(false)
                .with_capture_content(capture_content),
        )
        .build()
        .unwrap()
}

fn one(spans: Vec<Captured>) -> Captured {
    assert_eq!(spans.len(), 1, "{spans:#?}");
    spans.into_iter().next().unwrap()
}

fn tool_span<'a>(tools: &'a [Captured], call_id: &str) -> &'a Captured {
    tools
        .iter()
        .find(|s| s.str("gen_ai.tool.call.id") == Some(call_id))
        .unwrap_or_else(|| panic!("no execute_tool span for {call_id}: {tools:#?}"))
}

fn json_field(span: &Captured, field: &str) -> Value {
    let text = span
        .str(field)
        .unwrap_or_else(|| panic!("{field} missing on {span:#?}"));
    serde_json::from_str(text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_is_an_invoke_agent_span_with_chat_and_execute_tool_children() {
    let capture = Capture::default();
    let _guard = capture.install();
    let agent = scripted_agent(false);
    let result = agent.run("secret prompt text").await.unwrap();
    assert_eq!(result.output, "secret answer text");

    let run = one(capture.named("invoke_agent"));
    assert_eq!(run.parent, None);
    assert_eq!(run.str("otel.name"), Some("invoke_agent support-bot"));
    assert_eq!(run.str("otel.kind"), Some("internal"));
    assert_eq!(run.str("gen_ai.operation.name"), Some("invoke_agent"));
    assert_eq!(run.str("gen_ai.provider.name"), Some("openai"));
    assert_eq!(run.str("gen_ai.request.model"), Some("gpt-4o-mini"));
    assert_eq!(run.str("gen_ai.agent.name"), Some("support-bot"));
    assert_eq!(run.get("gen_ai.usage.input_tokens"), Some(&json!(230)));
    assert_eq!(run.get("gen_ai.usage.output_tokens"), Some(&json!(27)));
    assert_eq!(
        run.str("gen_ai.response.finish_reasons"),
        Some(r#"["stop"]"#)
    );
    assert_eq!(run.str("harnessx.run.outcome"), Some("completed"));
    assert_eq!(run.get("error.type"), None);
    assert!(run.closed);

    let chats = capture.named("chat");
    assert_eq!(chats.len(), 2, "{chats:#?}");
    for chat in &chats {
        assert_eq!(chat.parent, Some(run.seq));
        assert_eq!(chat.str("otel.name"), Some("chat gpt-4o-mini"));
        assert_eq!(chat.str("otel.kind"), Some("client"));
        assert_eq!(chat.str("gen_ai.operation.name"), Some("chat"));
        assert_eq!(chat.str("gen_ai.provider.name"), Some("openai"));
        assert_eq!(chat.str("gen_ai.request.model"), Some("gpt-4o-mini"));
        // `run` does not stream, and says nothing about it.
        assert_eq!(chat.get("gen_ai.request.stream"), None);
        assert_eq!(chat.get("error.type"), None);
    }
    assert_eq!(chats[0].get("gen_ai.usage.input_tokens"), Some(&json!(100)));
    assert_eq!(chats[0].get("gen_ai.usage.output_tokens"), Some(&json!(20)));
    assert_eq!(
        chats[0].str("gen_ai.response.finish_reasons"),
        Some(r#"["tool_call"]"#)
    );
    assert_eq!(chats[1].get("gen_ai.usage.input_tokens"), Some(&json!(130)));
    assert_eq!(
        chats[1].get("gen_ai.usage.cache_read.input_tokens"),
        Some(&json!(64))
    );
    // None read from the cache: nothing said.
    assert_eq!(chats[0].get("gen_ai.usage.cache_read.input_tokens"), None);
    assert_eq!(
        chats[1].str("gen_ai.response.finish_reasons"),
        Some(r#"["stop"]"#)
    );

    let tools = capture.named("execute_tool");
    assert_eq!(tools.len(), 3, "{tools:#?}");
    for (id, name) in [("c1", "lookup"), ("c2", "lookup"), ("c3", "broken")] {
        let span = tool_span(&tools, id);
        assert_eq!(span.parent, Some(run.seq), "{span:#?}");
        assert_eq!(
            span.str("otel.name"),
            Some(&*format!("execute_tool {name}"))
        );
        assert_eq!(span.str("gen_ai.operation.name"), Some("execute_tool"));
        assert_eq!(span.str("gen_ai.tool.name"), Some(name));
        assert_eq!(span.str("gen_ai.tool.type"), Some("function"));
        assert_eq!(span.get("harnessx.tool.attempts"), Some(&json!(1)));
        assert!(span.closed);
    }
    let c1 = tool_span(&tools, "c1");
    assert_eq!(c1.str("gen_ai.tool.description"), Some("Look a word up."));
    assert_eq!(c1.get("error.type"), None);
    assert_eq!(c1.get("otel.status_code"), None);
    let broken = tool_span(&tools, "c3");
    assert_eq!(broken.str("error.type"), Some("failed"));
    assert_eq!(broken.str("otel.status_code"), Some("error"));
    // The error message is content: without the opt-in the description names the kind.
    assert_eq!(
        broken.str("otel.status_description"),
        Some(
            "the tool call ended with error type `failed` (its message is recorded when content \
             capture is on)"
        )
    );

    // The handlers ran on spawned tasks; what they reported is inside their call's span.
    for (id, word) in [("c1", "alpha"), ("c2", "beta")] {
        let span = tool_span(&tools, id);
        let event = capture
            .events()
            .into_iter()
            .find(|e| e.fields.get("word") == Some(&json!(word)))
            .unwrap();
        assert_eq!(event.parent, Some(span.seq), "the {id} handler's event");
    }
    let inner = capture.named("lookup_index");
    assert_eq!(inner.len(), 2);
    let lookup_seqs = [tool_span(&tools, "c1").seq, tool_span(&tools, "c2").seq];
    assert!(
        inner
            .iter()
            .all(|s| lookup_seqs.contains(&s.parent.unwrap()))
    );

    // Nothing the user, the model or a tool said is on any span.
    for span in capture.spans() {
        for content in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert_eq!(span.get(content), None, "{content} on {span:#?}");
        }
        let text = Value::Object(span.fields.clone()).to_string();
        assert!(!text.contains("secret"), "{text}");
        assert!(!text.contains("alpha"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_is_recorded_when_the_agent_opts_in() {
    let capture = Capture::default();
    let _guard = capture.install();
    scripted_agent(true)
        .run("secret prompt text")
        .await
        .unwrap();

    let run = one(capture.named("invoke_agent"));
    assert_eq!(
        json_field(&run, "gen_ai.system_instructions"),
        json!([{"type": "text", "content": "secret system prompt"}])
    );
    assert_eq!(
        json_field(&run, "gen_ai.input.messages"),
        json!([{"role": "user", "parts": [{"type": "text", "content": "secret prompt text"}]}])
    );
    assert_eq!(
        json_field(&run, "gen_ai.output.messages"),
        json!([{"role": "assistant", "finish_reason": "stop",
                "parts": [{"type": "text", "content": "secret answer text"}]}])
    );

    let chats = capture.named("chat");
    assert_eq!(
        json_field(&chats[0], "gen_ai.output.messages"),
        json!([{"role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": "alpha"}},
            {"type": "tool_call", "id": "c2", "name": "lookup", "arguments": {"q": "beta"}},
            {"type": "tool_call", "id": "c3", "name": "broken", "arguments": {}},
        ]}])
    );
    // The second request carried the tool results, in the conventions' message format.
    let sent = json_field(&chats[1], "gen_ai.input.messages");
    assert_eq!(sent.as_array().unwrap().len(), 5, "{sent}");
    assert_eq!(
        sent[2],
        json!({"role": "tool", "parts": [
            {"type": "tool_call_response", "id": "c1", "response": "{\"found\":\"alpha\"}"}]})
    );

    let tools = capture.named("execute_tool");
    let c1 = tool_span(&tools, "c1");
    assert_eq!(
        json_field(c1, "gen_ai.tool.call.arguments"),
        json!({"q": "alpha"})
    );
    assert_eq!(
        json_field(c1, "gen_ai.tool.call.result"),
        json!({"found": "alpha"})
    );
    let broken = tool_span(&tools, "c3");
    assert_eq!(broken.get("gen_ai.tool.call.result"), None);
    assert!(
        broken
            .str("otel.status_description")
            .is_some_and(|d| d.contains("disk on fire")),
        "{broken:#?}"
    );
}

#[tokio::test]
async fn a_failed_model_request_marks_its_chat_span_and_the_run() {
    let capture = Capture::default();
    let _guard = capture.install();
    let model = FunctionModel::try_new(|_, _| {
        Err(ModelError::RateLimited {
            provider: "anthropic".into(),
            retry_after: None,
            message: "slow down".into(),
        })
    })
    .with_name("anthropic:claude-test");
    let agent = Agent::builder().model(model).build().unwrap();
    let err = agent.run("Hi").await.unwrap_err();
    assert!(matches!(err, AgentError::Model(_)), "{err:?}");

    let run = one(capture.named("invoke_agent"));
    // No name configured: the span is named by the operation alone.
    assert_eq!(run.str("otel.name"), Some("invoke_agent"));
    assert_eq!(run.get("gen_ai.agent.name"), None);
    assert_eq!(run.str("gen_ai.provider.name"), Some("anthropic"));
    assert_eq!(run.str("error.type"), Some("rate_limited"));
    assert_eq!(run.str("otel.status_code"), Some("error"));
    let chat = one(capture.named("chat"));
    assert_eq!(chat.parent, Some(run.seq));
    assert_eq!(chat.str("otel.name"), Some("chat claude-test"));
    assert_eq!(chat.str("error.type"), Some("rate_limited"));
    assert_eq!(chat.str("otel.status_code"), Some("error"));
    assert!(
        chat.str("otel.status_description")
            .is_some_and(|d| d.contains("slow down")),
        "{chat:#?}"
    );
    assert_eq!(chat.get("gen_ai.usage.input_tokens"), None);
}

#[tokio::test]
async fn a_run_out_of_turns_and_a_call_to_no_tool_are_reported() {
    let capture = Capture::default();
    let _guard = capture.install();
    let model = TestModel::new().then_call("no_such_tool", json!({}));
    let agent = Agent::builder()
        .model(model)
        .config(
            AgentConfig::default()
                .with_max_turns(1)
                .with_planning(false),
        )
        .build()
        .unwrap();
    let err = agent.run("Hi").await.unwrap_err();
    assert!(matches!(err, AgentError::MaxTurns { limit: 1 }), "{err:?}");

    let run = one(capture.named("invoke_agent"));
    assert_eq!(run.str("error.type"), Some("max_turns"));
    // A model name without a provider prefix is both provider and model.
    assert_eq!(run.str("gen_ai.provider.name"), Some("test"));
    assert_eq!(run.str("gen_ai.request.model"), Some("test"));
    let tool = one(capture.named("execute_tool"));
    assert_eq!(tool.parent, Some(run.seq));
    assert_eq!(tool.str("otel.name"), Some("execute_tool no_such_tool"));
    assert_eq!(tool.str("error.type"), Some("unknown_tool"));
    assert_eq!(tool.get("harnessx.tool.attempts"), Some(&json!(0)));
}

#[tokio::test]
async fn a_streamed_request_says_so_and_names_the_fallback_model_that_answered() {
    let capture = Capture::default();
    let _guard = capture.install();
    let failing = FunctionModel::try_new(|_, _| {
        Err(ModelError::Server {
            retry_after: None,
            provider: "openai".into(),
            status: 503,
            message: "overloaded".into(),
        })
    })
    .with_name("openai:gpt-4o");
    let backup = TestModel::new()
        .with_name("anthropic:claude-backup")
        .then_reply("Hello");
    let agent = Agent::builder()
        .model(FallbackModel::new(failing).with_fallback(backup))
        .config(AgentConfig::default().with_settings(ModelSettings {
            max_tokens: Some(256),
            temperature: Some(0.5),
            ..ModelSettings::default()
        }))
        .build()
        .unwrap();
    let events: Vec<_> = agent.run_stream("Hi").collect().await;
    assert!(events.last().unwrap().is_ok());

    let chat = one(capture.named("chat"));
    assert_eq!(chat.get("gen_ai.request.stream"), Some(&json!(true)));
    assert_eq!(chat.str("gen_ai.request.model"), Some("gpt-4o"));
    assert_eq!(chat.str("gen_ai.response.model"), Some("claude-backup"));
    assert_eq!(chat.get("gen_ai.request.max_tokens"), Some(&json!(256)));
    assert_eq!(chat.get("gen_ai.request.temperature"), Some(&json!(0.5)));
    assert_eq!(chat.get("error.type"), None);
}

#[tokio::test]
async fn a_durable_run_waiting_for_approval_is_not_a_failure_and_a_replayed_turn_is_no_request() {
    let capture = Capture::default();
    let _guard = capture.install();
    let deploy = ToolDefinition::new(
        "deploy",
        "Deploy the site.",
        json!({"type": "object"}),
        handler_fn(|_, _| async { Ok(ToolOutput::text("deployed")) }),
    )
    .with_permission(PermissionLevel::Ask);
    let model = TestModel::new().then_call("deploy", json!({}));
    let agent = Agent::builder()
        .model(model.clone())
        .tool(deploy)
        .build()
        .unwrap();
    let journal: Arc<dyn Journal> = Arc::new(MemoryJournal::default());

    for attempt in 1..=2 {
        let outcome = agent
            .run_journaled(Vec::new(), "Deploy", Arc::clone(&journal), None)
            .await
            .unwrap();
        assert!(matches!(outcome, RunOutcome::NeedsInput(_)), "{outcome:?}");
        let runs = capture.named("invoke_agent");
        assert_eq!(runs.len(), attempt);
        let run = &runs[attempt - 1];
        assert_eq!(run.str("harnessx.run.outcome"), Some("needs_input"));
        assert_eq!(run.get("error.type"), None);
        let tools = capture.named("execute_tool");
        let tool = &tools[attempt - 1];
        assert_eq!(tool.parent, Some(run.seq));
        assert_eq!(tool.str("harnessx.tool.outcome"), Some("needs_input"));
        assert_eq!(tool.get("error.type"), None);
        assert_eq!(tool.get("otel.status_code"), None);
    }
    // The second run read the model's turn back from the journal: one request, one chat span.
    assert_eq!(model.requests().len(), 1);
    assert_eq!(capture.named("chat").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_run_is_a_named_invoke_agent_span_under_the_call_that_started_it() {
    let capture = Capture::default();
    let _guard = capture.install();
    let specialist = SubAgent::new(
        "researcher",
        "Research a question.",
        TestModel::new()
            .with_name("anthropic:claude-small")
            .then_reply("Findings"),
        "Research carefully.",
    );
    let agent = Agent::builder()
        .model(
            TestModel::new()
                .with_name("openai:gpt-4o")
                .then_call("researcher", json!({"task": "look into it"}))
                .then_reply("Done"),
        )
        .tool(specialist)
        .config(
            AgentConfig::default()
                .with_name("lead")
                .with_planning(false),
        )
        .build()
        .unwrap();
    agent.run("Go").await.unwrap();

    let runs = capture.named("invoke_agent");
    assert_eq!(runs.len(), 2, "{runs:#?}");
    let lead = runs
        .iter()
        .find(|r| r.str("otel.name") == Some("invoke_agent lead"))
        .unwrap();
    let call = one(capture.named("execute_tool"));
    assert_eq!(call.str("otel.name"), Some("execute_tool researcher"));
    assert_eq!(call.parent, Some(lead.seq));
    let sub = runs
        .iter()
        .find(|r| r.str("otel.name") == Some("invoke_agent researcher"))
        .unwrap();
    assert_eq!(sub.parent, Some(call.seq));
    assert_eq!(sub.str("gen_ai.provider.name"), Some("anthropic"));
    let sub_chat = capture
        .named("chat")
        .into_iter()
        .find(|c| c.str("gen_ai.request.model") == Some("claude-small"))
        .unwrap();
    assert_eq!(sub_chat.parent, Some(sub.seq));
}

#[tokio::test]
async fn token_counts_a_model_never_reported_are_not_recorded() {
    let capture = Capture::default();
    let _guard = capture.install();
    let model = TestModel::new()
        .with_name("openai:gpt-4o-mini")
        .then_respond(ModelResponse::text("no usage here"));
    let agent = Agent::builder().model(model).build().unwrap();
    agent.run("Hi").await.unwrap();
    let chat = one(capture.named("chat"));
    assert_eq!(chat.get("gen_ai.usage.input_tokens"), None, "{chat:#?}");
    assert_eq!(chat.get("gen_ai.usage.output_tokens"), None);
    let run = one(capture.named("invoke_agent"));
    assert_eq!(run.get("gen_ai.usage.input_tokens"), None, "{run:#?}");
}
