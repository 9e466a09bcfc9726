//! `ask_user`: let the model ask the person it works for, in the spec's simple form
//! ([`register_ask_user_tool`]) or the platform's structured form ([`register_ask_user_questions`]).
//!
//! The tool does not know how to reach a person; the application passes an async `ask` function
//! that does. Neither form is part of any bundle.

mod questions;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use harnessx::journal::{InputReply, QuestionForm};
use harnessx::{
    PermissionLevel, RegistryError, ReplayPolicy, ToolDefinition, ToolOptions, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::{Value, json};

pub use questions::{
    ASK_USER_TIMEOUT_ENV, AskUserQuestionsOptions, DEFAULT_QUESTION_WINDOW_SECONDS,
    EXPIRED_MESSAGE, Question, QuestionAnswer, QuestionOption, UserReply, ask_user_questions_tool,
    question_window_from_env, register_ask_user_questions, register_ask_user_questions_with,
};

/// The tool name.
pub const ASK_USER: &str = "ask_user";

/// The simple form's time limit: one hour, since it waits on a person.
pub const ASK_USER_TIMEOUT_SECONDS: f64 = 3600.0;

/// What the model is told when `ask` returns `None` (nobody can answer).
pub const NO_ANSWER_MESSAGE: &str = "Nobody is available to answer. Do not wait: proceed on the \
most likely reading of the request, and state that assumption at the start of your reply.";

/// Overrides for [`register_ask_user_tool_with`]; unset fields keep the defaults (ALLOW, one
/// hour, fail on a duplicate name).
#[derive(Debug, Clone, Default)]
pub struct AskUserOptions {
    /// The tool's permission (default ALLOW).
    pub permission: Option<PermissionLevel>,
    /// The tool's time limit in seconds (default 3600).
    pub timeout_seconds: Option<f64>,
    /// Replace an existing `ask_user`.
    pub replace: bool,
}

/// Builds the simple `ask_user` tool: ALLOW, one call at a time (`concurrent = false`), safe to
/// replay, one-hour limit. `ask(question, choices)` puts the question in front of someone and
/// returns the answer; `choices` is empty for a free-text question; `None` means nobody can
/// answer, and the model is told to proceed on the most likely reading and say so first.
///
/// ```
/// use harnessx_builtin::ask_user::ask_user_tool;
/// let def = ask_user_tool(|question: String, choices: Vec<String>| async move {
///     Some(choices.first().cloned().unwrap_or(question))
/// });
/// assert_eq!(def.name, "ask_user");
/// assert!(!def.concurrent);
/// assert_eq!(def.timeout, Some(std::time::Duration::from_secs(3600)));
/// ```
pub fn ask_user_tool<F, Fut>(ask: F) -> ToolDefinition
where
    F: Fn(String, Vec<String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<String>> + Send + 'static,
{
    let ask = Arc::new(ask);
    ToolDefinition::new(
        ASK_USER,
        "Ask the user one focused question when the request is ambiguous and no sensible \
         default exists, before doing the work. Offer suggested answers in `choices`, or leave \
         it empty for a free-text question.",
        json!({
            "type": "object",
            "properties": {
                "question": {
                    "type": "string",
                    "minLength": 1,
                    "description": "One focused question."
                },
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Suggested answers; empty for a free-text question."
                }
            },
            "required": ["question"],
            "additionalProperties": false
        }),
        handler_fn(move |args, ctx| {
            let ask = Arc::clone(&ask);
            async move {
                let question = args["question"].as_str().unwrap_or_default().to_owned();
                let choices: Vec<String> = args
                    .get("choices")
                    .and_then(Value::as_array)
                    .map(|c| {
                        c.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                // In a durable run the run pauses instead of waiting; the store keeps the window.
                if let Some(input) = ctx.durable_input() {
                    return match input.reply() {
                        Some(InputReply::Answer { reply }) => Ok(ToolOutput::text(format!(
                            "The user answered: {}",
                            simple_answer(reply)
                        ))),
                        Some(InputReply::Expired { window_seconds }) => Ok(ToolOutput::text(
                            format!("{EXPIRED_MESSAGE} (The window was {window_seconds} s.)"),
                        )),
                        _ => Err(input.ask(QuestionForm::Simple { question, choices }, None)),
                    };
                }
                Ok(match ask(question, choices).await {
                    Some(answer) => ToolOutput::text(format!("The user answered: {answer}")),
                    None => ToolOutput::text(NO_ANSWER_MESSAGE),
                })
            }
        }),
    )
    .with_permission(PermissionLevel::Allow)
    .with_concurrent(false)
    .with_replay_policy(ReplayPolicy::Safe)
    .with_timeout_seconds(ASK_USER_TIMEOUT_SECONDS)
}

/// The simple form's answer as one line: the choice, the person's words, or both.
fn simple_answer(reply: &UserReply) -> String {
    match reply {
        UserReply::FreeText { text } => text.clone(),
        UserReply::Answers { answers } => answers
            .iter()
            .flat_map(|a| a.selected.iter().cloned().chain(a.text.clone()))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Registers the simple `ask_user` tool on `registry` (see [`ask_user_tool`]).
///
/// ```
/// use harnessx::{ToolRegistry, PermissionLevel};
/// use harnessx_builtin::ask_user::register_ask_user_tool;
/// let registry = ToolRegistry::new();
/// let def = register_ask_user_tool(&registry, |_q: String, _c: Vec<String>| async { None })?;
/// assert_eq!(def.permission, Some(PermissionLevel::Allow));
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn register_ask_user_tool<F, Fut>(
    registry: &ToolRegistry,
    ask: F,
) -> Result<ToolDefinition, RegistryError>
where
    F: Fn(String, Vec<String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<String>> + Send + 'static,
{
    register_ask_user_tool_with(registry, ask, AskUserOptions::default())
}

/// Registers the simple `ask_user` tool with overrides for permission, timeout and replace.
///
/// ```
/// use harnessx::{PermissionLevel, ToolRegistry};
/// use harnessx_builtin::ask_user::{AskUserOptions, register_ask_user_tool_with};
/// let registry = ToolRegistry::new();
/// let def = register_ask_user_tool_with(
///     &registry,
///     |_q: String, _c: Vec<String>| async { None },
///     AskUserOptions { permission: Some(PermissionLevel::Ask), timeout_seconds: Some(300.0), ..Default::default() },
/// )?;
/// assert_eq!(def.timeout, Some(std::time::Duration::from_secs(300)));
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn register_ask_user_tool_with<F, Fut>(
    registry: &ToolRegistry,
    ask: F,
    options: AskUserOptions,
) -> Result<ToolDefinition, RegistryError>
where
    F: Fn(String, Vec<String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<String>> + Send + 'static,
{
    registry.register_tool_with(ask_user_tool(ask), tool_options(&options)?)
}

fn tool_options(options: &AskUserOptions) -> Result<ToolOptions, RegistryError> {
    let mut out = ToolOptions::new().replace(options.replace);
    if let Some(p) = options.permission {
        out = out.permission(p);
    }
    if let Some(t) = options.timeout_seconds {
        // `try_from_secs_f64` also refuses finite values too large for a `Duration` (1e300).
        let timeout = Duration::try_from_secs_f64(t)
            .ok()
            .filter(|d| t.is_finite() && !d.is_zero())
            .ok_or_else(|| {
                RegistryError::Config(format!(
                    "ask_user `timeout_seconds` is {t}; give a positive number of seconds"
                ))
            })?;
        out.timeout = Some(timeout);
    }
    Ok(out)
}
