//! ask_user: the simple form (question + choices) and the structured platform form.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use harnessx::model::TestModel;
use harnessx::{Agent, Message, PermissionLevel, ReplayPolicy, ToolCall, ToolRegistry};
use harnessx_builtin::ask_user::{
    ASK_USER_TIMEOUT_ENV, AskUserOptions, AskUserQuestionsOptions, EXPIRED_MESSAGE,
    NO_ANSWER_MESSAGE, Question, QuestionAnswer, UserReply, question_window_from_env,
    register_ask_user_questions, register_ask_user_questions_with, register_ask_user_tool,
    register_ask_user_tool_with,
};
use serde_json::json;

type Seen = Arc<Mutex<Vec<(String, Vec<String>)>>>;

fn recording_ask(
    seen: Seen,
    answer: Option<&'static str>,
) -> impl Fn(String, Vec<String>) -> std::future::Ready<Option<String>> + Send + Sync + 'static {
    move |question, choices| {
        seen.lock().unwrap().push((question, choices));
        std::future::ready(answer.map(str::to_owned))
    }
}

#[test]
fn the_simple_tool_is_allow_serial_safe_with_a_one_hour_limit() {
    let registry = ToolRegistry::new();
    let def = register_ask_user_tool(&registry, recording_ask(Seen::default(), None)).unwrap();
    assert_eq!(def.name, "ask_user");
    assert_eq!(def.permission, Some(PermissionLevel::Allow));
    assert!(!def.concurrent);
    assert_eq!(def.replay_policy, ReplayPolicy::Safe);
    assert_eq!(def.timeout, Some(Duration::from_secs(3600)));

    let err = register_ask_user_tool(&registry, recording_ask(Seen::default(), None)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a tool named `ask_user` is already registered; pass `replace(true)` to replace it deliberately"
    );
    let def = register_ask_user_tool_with(
        &registry,
        recording_ask(Seen::default(), None),
        AskUserOptions {
            permission: Some(PermissionLevel::Ask),
            timeout_seconds: Some(120.0),
            replace: true,
        },
    )
    .unwrap();
    assert_eq!(def.permission, Some(PermissionLevel::Ask));
    assert_eq!(def.timeout, Some(Duration::from_secs(120)));
    let err = register_ask_user_tool_with(
        &registry,
        recording_ask(Seen::default(), None),
        AskUserOptions {
            timeout_seconds: Some(-1.0),
            replace: true,
            ..AskUserOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "ask_user `timeout_seconds` is -1; give a positive number of seconds"
    );
    // Finite but beyond what a `Duration` holds: the same refusal, not a panic.
    let err = register_ask_user_tool_with(
        &registry,
        recording_ask(Seen::default(), None),
        AskUserOptions {
            timeout_seconds: Some(1e300),
            replace: true,
            ..AskUserOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "ask_user `timeout_seconds` is {}; give a positive number of seconds",
            1e300_f64
        )
    );
}

#[tokio::test]
async fn the_model_asks_and_reads_the_answer() {
    let seen = Seen::default();
    let model = TestModel::new()
        .then_call(
            "ask_user",
            json!({"question": "Which format?", "choices": ["CSV", "JSON"]}),
        )
        .then_call("ask_user", json!({"question": "Any deadline?"}))
        .then_reply("Exporting JSON.");
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    register_ask_user_tool(
        agent.tools(),
        recording_ask(Arc::clone(&seen), Some("JSON")),
    )
    .unwrap();
    agent.run("Export the data.").await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "Which format?".to_string(),
                vec!["CSV".to_string(), "JSON".to_string()]
            ),
            ("Any deadline?".to_string(), vec![]),
        ]
    );
    match model.requests()[1].messages.last().unwrap() {
        Message::Tool {
            content, is_error, ..
        } => {
            assert!(!is_error);
            assert_eq!(content, "The user answered: JSON");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn nobody_answering_tells_the_model_to_proceed_and_state_its_assumption() {
    let registry = ToolRegistry::new();
    register_ask_user_tool(&registry, recording_ask(Seen::default(), None)).unwrap();
    let result = registry
        .execute(
            &ToolCall::json("c1", "ask_user", json!({"question": "Which one?"})),
            None,
        )
        .await;
    assert!(!result.is_error);
    assert_eq!(result.content, NO_ANSWER_MESSAGE);
    assert_eq!(
        result.content,
        "Nobody is available to answer. Do not wait: proceed on the most likely reading of the \
         request, and state that assumption at the start of your reply."
    );
}

fn questions_json() -> serde_json::Value {
    json!({"questions": [
        {"header": "Format", "question": "Which export format?", "options": [
            {"label": "CSV", "description": "Spreadsheet friendly"},
            {"label": "JSON"}
        ]},
        {"header": "Fields", "question": "Which fields?", "multi_select": true, "options": [
            {"label": "name"}, {"label": "email"}, {"label": "phone"}
        ]}
    ]})
}

fn structured(
    registry: &ToolRegistry,
    window: f64,
    reply: Option<UserReply>,
    delay: Duration,
) -> Arc<Mutex<Vec<Vec<Question>>>> {
    let seen: Arc<Mutex<Vec<Vec<Question>>>> = Arc::default();
    let seen2 = Arc::clone(&seen);
    register_ask_user_questions_with(
        registry,
        move |questions| {
            seen2.lock().unwrap().push(questions);
            let reply = reply.clone();
            async move {
                tokio::time::sleep(delay).await;
                reply
            }
        },
        AskUserQuestionsOptions {
            window_seconds: Some(window),
            ..AskUserQuestionsOptions::default()
        },
    )
    .unwrap();
    seen
}

#[tokio::test]
async fn structured_questions_are_answered_with_choices_or_free_text() {
    let registry = ToolRegistry::new();
    let seen = structured(
        &registry,
        600.0,
        Some(UserReply::Answers {
            answers: vec![
                QuestionAnswer::selected(["JSON"]),
                QuestionAnswer {
                    selected: vec!["name".into(), "email".into()],
                    text: Some("and the signup date".into()),
                },
            ],
        }),
        Duration::ZERO,
    );
    let def = registry.get_tool("ask_user").unwrap();
    assert_eq!(def.timeout, Some(Duration::from_secs(660)));
    assert!(!def.concurrent);
    let result = registry
        .execute(&ToolCall::json("c1", "ask_user", questions_json()), None)
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        result.content,
        "The user answered:\n1. [Format] Which export format? → JSON\n2. [Fields] Which fields? \
         → name, email; in their own words: and the signup date"
    );
    assert_eq!(result.structured.unwrap()["reply"]["type"], "answers");
    let asked = seen.lock().unwrap()[0].clone();
    assert_eq!(
        asked[0].options[0].description.as_deref(),
        Some("Spreadsheet friendly")
    );
    assert!(asked[1].multi_select);
    assert!(!asked[0].multi_select);

    let registry = ToolRegistry::new();
    structured(
        &registry,
        600.0,
        Some(UserReply::FreeText {
            text: "Whatever is quickest.".into(),
        }),
        Duration::ZERO,
    );
    let result = registry
        .execute(&ToolCall::json("c2", "ask_user", questions_json()), None)
        .await;
    assert_eq!(
        result.content,
        "The user replied in their own words instead of choosing options: Whatever is quickest."
    );
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_run_goes_on() {
    let model = TestModel::new()
        .then_call("ask_user", questions_json())
        .then_reply("Going with CSV, as nobody answered.");
    let agent = Agent::builder().model(model.clone()).build().unwrap();
    structured(
        agent.tools(),
        0.05,
        Some(UserReply::FreeText {
            text: "too late".into(),
        }),
        Duration::from_secs(30),
    );
    let result = tokio::time::timeout(Duration::from_secs(5), agent.run("Export."))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.output, "Going with CSV, as nobody answered.");
    match model.requests()[1].messages.last().unwrap() {
        Message::Tool {
            content, is_error, ..
        } => {
            assert!(!is_error);
            assert_eq!(
                content,
                &format!("{EXPIRED_MESSAGE} (The window was 0.05 s.)")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn structured_limits_are_one_line_errors_naming_question_and_field() {
    let registry = ToolRegistry::new();
    let seen = structured(&registry, 600.0, None, Duration::ZERO);
    let cases = [
        (
            json!({"questions": [{"header": "Much too long", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]}]}),
            "field `questions[0].header`",
        ),
        (
            json!({"questions": [
                {"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]},
                {"header": "B", "question": "q?", "options": [{"label": "a"}]}
            ]}),
            "field `questions[1].options`",
        ),
        (
            json!({"questions": [{"header": "A", "question": "x".repeat(501), "options": [{"label": "a"}, {"label": "b"}]}]}),
            "field `questions[0].question`",
        ),
        (
            json!({"questions": [{"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b", "description": "d".repeat(201)}]}]}),
            "field `questions[0].options[1].description`",
        ),
        (
            json!({"questions": [{"header": "A", "question": "q?", "options": [{"label": "l".repeat(61)}, {"label": "b"}]}]}),
            "field `questions[0].options[0].label`",
        ),
        (json!({"questions": []}), "field `questions`"),
        (
            json!({"questions": [
                {"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]},
                {"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]},
                {"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]},
                {"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]},
                {"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]}
            ]}),
            "field `questions`",
        ),
        (
            json!({"questions": [{"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "a"}]}]}),
            "field `questions[0].options[1].label` repeats the label `a`",
        ),
    ];
    for (args, field) in cases {
        let result = registry
            .execute(&ToolCall::json("c", "ask_user", args), None)
            .await;
        assert!(result.is_error);
        assert!(!result.content.contains('\n'), "{}", result.content);
        assert!(
            result
                .content
                .starts_with("Invalid arguments for `ask_user`: ")
                && result.content.contains(field),
            "expected {field} in: {}",
            result.content
        );
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "nobody was asked a bad question"
    );
}

#[test]
fn a_bad_window_is_refused_at_registration() {
    let err = register_ask_user_questions_with(
        &ToolRegistry::new(),
        |_| async { None },
        AskUserQuestionsOptions {
            window_seconds: Some(0.0),
            ..AskUserQuestionsOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "ask_user `window_seconds` is 0; give a positive number of seconds"
    );
    let err = register_ask_user_questions_with(
        &ToolRegistry::new(),
        |_| async { None },
        AskUserQuestionsOptions {
            window_seconds: Some(1e300),
            ..AskUserQuestionsOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "ask_user `window_seconds` is {}; give a positive number of seconds",
            1e300_f64
        )
    );
}

#[test]
fn a_window_near_the_largest_duration_still_registers() {
    // The largest f64 below 2^64: a valid `Duration`, whose seconds plus a minute round to 2^64
    // as an f64 (which `Duration::from_secs_f64` would refuse with a panic).
    let window = 2f64.powi(64) - 2048.0;
    let def = register_ask_user_questions_with(
        &ToolRegistry::new(),
        |_| async { None },
        AskUserQuestionsOptions {
            window_seconds: Some(window),
            ..AskUserQuestionsOptions::default()
        },
    )
    .unwrap();
    assert_eq!(def.timeout, Some(Duration::from_secs(u64::MAX - 2047 + 60)));
}

/// Runs itself in child processes with `ASK_USER_TIMEOUT_SECONDS` set, since a test must not
/// change its own process environment.
#[test]
fn the_window_comes_from_ask_user_timeout_seconds() {
    const NAME: &str = "suite::ask_user::the_window_comes_from_ask_user_timeout_seconds";
    match std::env::var(ASK_USER_TIMEOUT_ENV).ok().as_deref() {
        None => {
            assert_eq!(
                question_window_from_env().unwrap(),
                Duration::from_secs(600)
            );
            for value in ["5", "abc"] {
                let output = std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", NAME, "--test-threads=1"])
                    .env(ASK_USER_TIMEOUT_ENV, value)
                    .output()
                    .unwrap();
                let stdout = String::from_utf8_lossy(&output.stdout);
                assert!(output.status.success(), "child with {value}: {stdout}");
                assert!(
                    stdout.contains("1 passed"),
                    "the child ran the test: {stdout}"
                );
            }
        }
        Some("5") => {
            assert_eq!(question_window_from_env().unwrap(), Duration::from_secs(5));
            let registry = ToolRegistry::new();
            register_ask_user_questions(&registry, |_| async { None }).unwrap();
            let def = registry.get_tool("ask_user").unwrap();
            assert_eq!(def.timeout, Some(Duration::from_secs(65)));
        }
        Some(other) => {
            let err =
                register_ask_user_questions(&ToolRegistry::new(), |_| async { None }).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "ASK_USER_TIMEOUT_SECONDS is `{other}`, not a positive number of seconds; set \
                     it to a number such as 600, or unset it for the 10-minute default"
                )
            );
        }
    }
}

#[tokio::test]
async fn one_tool_serves_both_forms_through_the_simple_callback() {
    let registry = ToolRegistry::new();
    let seen = Seen::default();
    // This person answers every question with "name, email": no option of the first question
    // (their own words), two options of the multi-select second one.
    register_ask_user_tool(
        &registry,
        recording_ask(Arc::clone(&seen), Some("name, email")),
    )
    .unwrap();
    let def = registry.get_tool("ask_user").unwrap();
    assert!(def.input_schema["properties"]["questions"].is_object());
    assert!(def.input_schema["properties"]["question"].is_object());

    let result = registry
        .execute(&ToolCall::json("c1", "ask_user", questions_json()), None)
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        result.content,
        "The user answered:\n1. [Format] Which export format? → in their own words: name, \
         email\n2. [Fields] Which fields? → name, email"
    );
    let asked = seen.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            (
                "Which export format?".to_owned(),
                vec!["CSV".to_owned(), "JSON".to_owned()]
            ),
            (
                "Which fields?".to_owned(),
                vec!["name".to_owned(), "email".to_owned(), "phone".to_owned()]
            ),
        ]
    );

    // An answer that names an option selects it.
    let registry = ToolRegistry::new();
    register_ask_user_tool(&registry, recording_ask(Seen::default(), Some("json"))).unwrap();
    let result = registry
        .execute(&ToolCall::json("c2", "ask_user", questions_json()), None)
        .await;
    assert_eq!(
        result.content,
        "The user answered:\n1. [Format] Which export format? → JSON\n2. [Fields] Which fields? \
         → in their own words: json"
    );
    assert_eq!(
        result.structured.unwrap()["reply"]["answers"][0]["selected"],
        json!(["JSON"])
    );

    // Nobody answering any question: the model proceeds on its own reading.
    let registry = ToolRegistry::new();
    register_ask_user_tool(&registry, recording_ask(Seen::default(), None)).unwrap();
    let result = registry
        .execute(&ToolCall::json("c3", "ask_user", questions_json()), None)
        .await;
    assert_eq!(result.content, NO_ANSWER_MESSAGE);
}

#[tokio::test]
async fn one_tool_serves_both_forms_through_the_structured_callback() {
    let registry = ToolRegistry::new();
    let seen = structured(
        &registry,
        600.0,
        Some(UserReply::Answers {
            answers: vec![QuestionAnswer::selected(["Tue"])],
        }),
        Duration::ZERO,
    );
    let result = registry
        .execute(
            &ToolCall::json(
                "c1",
                "ask_user",
                json!({"question": "Which day?", "choices": ["Mon", "Tue"]}),
            ),
            None,
        )
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "The user answered: Tue");
    let asked = seen.lock().unwrap()[0].clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].header, "Question");
    assert_eq!(asked[0].question, "Which day?");
    let labels: Vec<_> = asked[0].options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(labels, ["Mon", "Tue"]);

    // Neither shape, or both: one line saying what to send.
    for (args, expected) in [
        (
            json!({}),
            "Invalid arguments for `ask_user`: field `questions` is missing; send 1 to 4 \
             multiple-choice questions in `questions`, or one open question in `question`. Fix \
             it and call `ask_user` again.",
        ),
        (
            json!({"question": "Which day?", "questions": [
                {"header": "A", "question": "q?", "options": [{"label": "a"}, {"label": "b"}]}
            ]}),
            "Invalid arguments for `ask_user`: send either `questions` (multiple-choice \
             questions) or `question` (one open question), not both. Fix it and call `ask_user` \
             again.",
        ),
    ] {
        let result = registry
            .execute(&ToolCall::json("c2", "ask_user", args), None)
            .await;
        assert!(result.is_error);
        assert_eq!(result.content, expected);
    }
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "nobody was asked a bad question"
    );
}
