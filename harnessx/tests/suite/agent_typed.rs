//! Typed answers (`run_typed`) and per-run dependencies (`Deps<T>`).
#![allow(clippy::unwrap_used)]

use harnessx::agent::{AgentError, OUTPUT_RETRIES};
use harnessx::model::TestModel;
use harnessx::{Agent, Conversation, Deps, Message, tool};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
struct Invoice {
    number: String,
    total_cents: u64,
}

/// Look up an invoice's total.
#[tool]
fn invoice_total(number: String) -> u64 {
    if number == "A-1" { 1250 } else { 0 }
}

#[tokio::test]
async fn a_typed_run_sends_the_schema_every_turn_and_parses_the_answer() {
    let model = TestModel::new()
        .then_call("invoice_total", json!({"number": "A-1"}))
        .then_reply(r#"{"number": "A-1", "total_cents": 1250}"#);
    let agent = Agent::builder()
        .model(model.clone())
        .tool(invoice_total)
        .build()
        .unwrap();
    let typed = agent.run_typed::<Invoice>("Total of A-1?").await.unwrap();
    assert_eq!(
        typed.output,
        Invoice {
            number: "A-1".into(),
            total_cents: 1250
        }
    );
    assert_eq!(typed.result.turns, 2);
    for request in model.requests() {
        let output = request
            .output
            .expect("every turn carries the output schema");
        assert_eq!(output.name, "Invoice");
        assert_eq!(output.schema["type"], "object");
        assert_eq!(output.schema["required"], json!(["number", "total_cents"]));
    }
    // An ordinary run sends none.
    let model = TestModel::new().then_reply("hi");
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    agent.run("hello").await.unwrap();
    assert!(model.requests()[0].output.is_none());
}

#[tokio::test]
async fn a_type_that_is_not_an_object_is_the_result_field_of_one() {
    let model = TestModel::new().then_reply("```json\n{\"result\": [\"a\", \"b\"]}\n```");
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    let typed = agent.run_typed::<Vec<String>>("Two letters").await.unwrap();
    assert_eq!(typed.output, ["a", "b"]);
    let schema = model.requests()[0].output.clone().unwrap().schema;
    assert_eq!(schema["properties"]["result"]["type"], "array");
}

#[tokio::test]
async fn a_bad_answer_goes_back_with_the_reason_until_the_retries_run_out() {
    let model = TestModel::new()
        .then_reply("It is 1250 cents.")
        .then_reply(r#"{"number": "A-1"}"#)
        .then_reply(r#"{"number": "A-1", "total": 1250}"#);
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    let mut chat = Conversation::new();
    let err = agent
        .prompt("Total of A-1?")
        .conversation(&mut chat)
        .run_typed::<Invoice>()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::InvalidOutput { attempts, .. } if *attempts == OUTPUT_RETRIES + 1),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "the model's answer did not match the requested output type after 3 attempts: the \
         answer does not match the schema (missing field `total_cents`); check that the model \
         supports structured output, or describe the format in the instructions"
    );
    assert!(
        chat.is_empty(),
        "a failed run leaves the conversation as it was"
    );
    // The second request told the model why its first answer did not fit.
    let sent = &model.requests()[1].messages;
    match sent.last().unwrap() {
        Message::User { content, .. } => assert!(
            content.starts_with(
                "Your final answer must be JSON matching the requested schema, but the answer \
                 is not JSON ("
            ),
            "{content}"
        ),
        other => panic!("expected the retry message, got {other:?}"),
    }
}

struct Customer {
    name: String,
}

/// Greet the customer this run is for.
#[tool]
fn greet_customer(customer: Deps<Customer>) -> String {
    format!("Hello, {}!", customer.name)
}

fn tool_reply(messages: &[Message]) -> String {
    messages
        .iter()
        .find_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn each_run_gives_its_tools_its_own_deps() {
    let model = TestModel::new()
        .then_call("greet_customer", json!({}))
        .then_reply("done")
        .then_call("greet_customer", json!({}))
        .then_reply("done")
        .then_call("greet_customer", json!({}))
        .then_reply("done");
    let agent = Agent::builder()
        .model(model)
        .tool(greet_customer)
        .build()
        .unwrap();
    let ada = agent
        .prompt("Greet")
        .deps(Customer { name: "Ada".into() })
        .run()
        .await
        .unwrap();
    assert_eq!(tool_reply(&ada.messages), "Hello, Ada!");
    let bob = agent
        .prompt("Greet")
        .deps(Customer { name: "Bob".into() })
        .run()
        .await
        .unwrap();
    assert_eq!(tool_reply(&bob.messages), "Hello, Bob!");
    // A run without them: the tool says what the application must do.
    let none = agent.run("Greet").await.unwrap();
    assert_eq!(
        tool_reply(&none.messages),
        "the tool `greet_customer` needs the run's `all::suite::agent_typed::Customer`, but \
         this run was not given one; the application must start the run with \
         `agent.prompt(..).deps(..)`"
    );
}
