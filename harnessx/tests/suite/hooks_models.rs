//! Hooks around model requests: changing the request, answering without the model, changing
//! the response, recovering from a failure, stopping; in `run` and `run_stream`.

use futures::StreamExt;
use harnessx::agent::{AgentError, AgentEvent};
use harnessx::model::TestModel;
use harnessx::{Agent, AgentConfig, Message, ModelError};

use super::hooks_support::{Log, Scripted};

fn agent(model: &TestModel, hooks: Vec<Scripted>) -> Agent {
    let builder = Agent::builder()
        .model(model.clone())
        .config(AgentConfig::default().with_planning(false));
    hooks
        .into_iter()
        .fold(builder, |b, h| b.hook(h))
        .build()
        .unwrap()
}

#[tokio::test]
async fn before_model_changes_the_request_but_not_the_conversation() {
    let log = Log::default();
    let model = TestModel::new().then_reply("Hello");
    let agent = agent(
        &model,
        vec![Scripted {
            redact_user: Some("[redacted]".into()),
            ..Scripted::named("redact", &log)
        }],
    );
    let result = agent.run("my password is hunter2").await.unwrap();
    assert_eq!(model.requests()[0].messages, [Message::user("[redacted]")]);
    assert_eq!(result.messages[0], Message::user("my password is hunter2"));
    assert_eq!(
        log.entries(),
        [
            "redact before_model turn=1 requests=1",
            r#"redact after_model "Hello" tokens=0"#
        ]
    );
}

#[tokio::test]
async fn before_model_can_answer_without_asking_the_model() {
    let log = Log::default();
    let model = TestModel::new().then_reply("from the model");
    let agent = agent(
        &model,
        vec![
            Scripted {
                answer_model: Some("from the cache".into()),
                ..Scripted::named("cache", &log)
            },
            Scripted::named("later", &log),
        ],
    );
    let result = agent.run("Hi").await.unwrap();
    assert_eq!(result.output, "from the cache");
    assert!(model.requests().is_empty(), "the model was not asked");
    assert_eq!(model.remaining(), 1);
    // The answer ends the before chain; after_model runs on it for every hook.
    assert_eq!(
        log.entries(),
        [
            "cache before_model turn=1 requests=1",
            r#"cache after_model "from the cache" tokens=0"#,
            r#"later after_model "from the cache" tokens=0"#,
        ]
    );
}

#[tokio::test]
async fn after_model_changes_the_response_the_run_keeps() {
    let log = Log::default();
    let model = TestModel::new().then_reply("draft");
    let agent = agent(
        &model,
        vec![Scripted {
            rewrite_answer: Some("final".into()),
            ..Scripted::named("editor", &log)
        }],
    );
    let mut chat = harnessx::Conversation::new();
    let result = agent.run_in(&mut chat, "Write").await.unwrap();
    assert_eq!(result.output, "final");
    assert_eq!(chat.messages()[1], Message::assistant("final"));
}

#[tokio::test]
async fn on_model_error_may_answer_in_the_models_place() {
    let log = Log::default();
    let model = TestModel::new().then_fail("the provider is down");
    let agent = agent(
        &model,
        vec![
            Scripted::named("observer", &log),
            Scripted {
                recover_model: Some("Sorry, try again later.".into()),
                ..Scripted::named("apology", &log)
            },
        ],
    );
    let result = agent.run("Hi").await.unwrap();
    assert_eq!(result.output, "Sorry, try again later.");
    let entries = log.entries();
    assert_eq!(
        entries[..2],
        [
            "observer before_model turn=1 requests=1",
            "apology before_model turn=1 requests=1"
        ]
    );
    assert!(
        entries[2].starts_with("observer on_model_error "),
        "{entries:?}"
    );
    assert!(entries[2].contains("the provider is down"), "{entries:?}");
    assert!(
        entries[3].starts_with("apology on_model_error "),
        "{entries:?}"
    );
    assert_eq!(
        entries[4..],
        [
            r#"observer after_model "Sorry, try again later." tokens=0"#,
            r#"apology after_model "Sorry, try again later." tokens=0"#,
        ]
    );
}

#[tokio::test]
async fn without_an_answer_the_model_error_ends_the_run() {
    let log = Log::default();
    let model = TestModel::new().then_fail("the provider is down");
    let agent = agent(&model, vec![Scripted::named("observer", &log)]);
    let error = agent.run("Hi").await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Model(ModelError::Other(m)) if m.contains("the provider is down")),
        "{error:?}"
    );
}

#[tokio::test]
async fn before_model_can_stop_the_run() {
    let log = Log::default();
    let model = TestModel::new().then_reply("never");
    let agent = agent(
        &model,
        vec![Scripted {
            stop_model: Some("outside business hours".into()),
            ..Scripted::named("hours", &log)
        }],
    );
    let error = agent.run("Hi").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the run was stopped by hook `hours`: outside business hours"
    );
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn a_streamed_run_reports_a_hooks_answer_as_text_and_the_changed_turn() {
    let log = Log::default();
    let model = TestModel::new();
    let agent = agent(
        &model,
        vec![Scripted {
            answer_model: Some("cached answer".into()),
            rewrite_answer: Some("edited answer".into()),
            ..Scripted::named("cache", &log)
        }],
    );
    let events: Vec<AgentEvent> = agent.run_stream("Hi").map(|e| e.unwrap()).collect().await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "cached answer");
    assert!(events.iter().any(
        |e| matches!(e, AgentEvent::TurnCompleted { response, .. } if response.content == "edited answer")
    ));
    assert!(
        matches!(events.last(), Some(AgentEvent::Completed { result }) if result.output == "edited answer")
    );
}
