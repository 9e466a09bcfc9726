//! The scripted model of `model = "script"`: harnessx's [`FunctionModel`] playing a list of turns
//! by the run's position (the assistant turns since the last user message), so a run resumed on
//! another worker, or the next run of a conversation, gets the same answers.

use harnessx::model::{FunctionModel, fill_result};
use harnessx::{Message, ModelRequest, ModelResponse, StopReason, ToolCall};
use serde_json::{Value, json};

use crate::config::ScriptTurn;

/// Checks one turn: exactly one of `reply`, `call` or `ask`; `arguments` only with `call`.
pub(crate) fn check_turn(turn: &ScriptTurn) -> Result<(), String> {
    let given = [
        turn.reply.is_some(),
        turn.call.is_some(),
        turn.ask.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        return Err(
            "give exactly one of `reply`, `call` (with `arguments`) or `ask` in each turn".into(),
        );
    }
    if turn.arguments.is_some() && turn.call.is_none() {
        return Err("`arguments` belongs to a `call` turn".into());
    }
    if let Some(args) = &turn.arguments
        && !args.is_object()
    {
        return Err("`arguments` must be a table, such as { path = \"notes.txt\" }".into());
    }
    if let Some(ask) = &turn.ask
        && !(ask.is_string() || ask.get("questions").is_some_and(Value::is_array))
    {
        return Err(
            "`ask` is a question string, or a table with `questions = [{ header, question, options }]`"
                .into(),
        );
    }
    Ok(())
}

/// What a turn makes the model do.
#[derive(Debug, Clone)]
enum Step {
    Reply(String),
    Call(String, Value),
}

fn step(turn: &ScriptTurn) -> Step {
    if let Some(name) = &turn.call {
        return Step::Call(
            name.clone(),
            turn.arguments.clone().unwrap_or_else(|| json!({})),
        );
    }
    if let Some(ask) = &turn.ask {
        let args = match ask {
            Value::String(q) => json!({"questions": [{"header": "Question", "question": q,
                "options": [{"label": "Yes"}, {"label": "No"}]}]}),
            other => other.clone(),
        };
        return Step::Call(harnessx_builtin::ask_user::ASK_USER.to_owned(), args);
    }
    Step::Reply(turn.reply.clone().unwrap_or_default())
}

/// The model for `turns`. Past the end it gives the last reply again (or says the script ended).
pub(crate) fn script_model(turns: &[ScriptTurn]) -> FunctionModel {
    let steps: Vec<Step> = turns.iter().map(step).collect();
    FunctionModel::new(move |request: &ModelRequest, _| {
        let since_user: Vec<&Message> = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .collect();
        let k = since_user
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let step = steps.get(k).cloned().unwrap_or_else(|| match steps.last() {
            Some(Step::Reply(text)) => Step::Reply(text.clone()),
            _ => Step::Reply("The script has no more turns.".into()),
        });
        match step {
            Step::Call(name, args) => ModelResponse::default()
                .with_tool_calls(vec![ToolCall::json(format!("call_{k}"), name, args)])
                .with_stop_reason(StopReason::ToolUse),
            // `{result}` is filled as `TestModel::then_reply` fills it.
            Step::Reply(text) => ModelResponse::text(fill_result(&text, request))
                .with_stop_reason(StopReason::EndTurn),
        }
    })
    .with_name("script")
}

#[cfg(test)]
mod tests {
    use harnessx::model::{Model, TestModel};
    use harnessx::{Message, ModelRequest};

    use super::*;

    fn tool(content: &str) -> Message {
        Message::Tool {
            call_id: "c".into(),
            name: "t".into(),
            content: content.into(),
            is_error: false,
            attachment: None,
        }
    }

    /// The server's scripted model and `TestModel::then_reply` fill `{result}` alike: the last
    /// tool result since the user's last message, or nothing.
    #[tokio::test]
    async fn a_reply_fills_result_as_test_model_does() {
        let requests = [
            vec![Message::user("go")],
            vec![Message::user("go"), tool("first"), tool("second")],
            vec![Message::user("go"), tool("old"), Message::user("again")],
        ];
        let expected = ["saw: ", "saw: second", "saw: "];
        for (messages, expected) in requests.into_iter().zip(expected) {
            let mut request = ModelRequest::default();
            request.messages = messages.into();
            let turn = ScriptTurn {
                reply: Some("saw: {result}".into()),
                call: None,
                arguments: None,
                ask: None,
            };
            // The script answers by position: a request with no assistant turn since the user
            // plays its first turn.
            let served = script_model(std::slice::from_ref(&turn))
                .complete(request.clone())
                .await
                .unwrap();
            let tested = TestModel::new()
                .then_reply("saw: {result}")
                .complete(request)
                .await
                .unwrap();
            assert_eq!(served.content, expected);
            assert_eq!(tested.content, expected);
        }
    }
}
