//! `ask_user`: let the model ask the person it works for.
//!
//! There is one `ask_user` tool. The model sends the platform's structured form (1 to 4
//! multiple-choice questions) or one open question with suggested answers. The tool does not
//! know how to reach a person; the application passes an async `ask` function that does, in
//! either shape, and the tool adapts it to whatever the model sent:
//!
//! - the spec's simple callback, `ask(question, choices) -> Option<String>`
//!   ([`register_ask_user_tool`]): structured questions are asked one by one with the option
//!   labels as choices, and an answer naming options selects them;
//! - the structured callback, `ask(questions) -> Option<UserReply>`
//!   ([`register_ask_user_questions`]): an open question arrives as one question whose options
//!   are the suggested answers (none for free text).
//!
//! In a durable run the tool pauses the run instead of calling either. It is not part of any
//! bundle.
//!
//! ```
//! use harnessx::{ToolCall, ToolRegistry};
//! use harnessx_builtin::ask_user::register_ask_user_tool;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::RegistryError> {
//! let registry = ToolRegistry::new();
//! register_ask_user_tool(&registry, |_question: String, choices: Vec<String>| async move {
//!     choices.last().cloned() // this person always takes the last suggestion
//! })?;
//! let call = ToolCall::json("c1", "ask_user", json!({"questions": [
//!     {"header": "Format", "question": "Which format?", "options": [{"label": "CSV"}, {"label": "JSON"}]}
//! ]}));
//! let result = registry.execute(&call, None).await;
//! assert_eq!(result.content, "The user answered:\n1. [Format] Which format? → JSON");
//! # Ok(()) }
//! ```

mod questions;
mod tool;

use std::future::Future;
use std::time::Duration;

use harnessx::{PermissionLevel, RegistryError, ToolDefinition, ToolOptions, ToolRegistry};

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

/// Builds the `ask_user` tool over the spec's simple callback: ALLOW, one call at a time
/// (`concurrent = false`), safe to replay, one-hour limit. `ask(question, choices)` puts the
/// question in front of someone and returns the answer; `choices` is empty for a free-text
/// question; `None` means nobody can answer, and the model is told to proceed on the most
/// likely reading and say so first. Structured questions from the model are asked one by one
/// (see the [module](self) documentation).
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
    tool::definition(tool::Asker::simple(ask), None).with_timeout_seconds(ASK_USER_TIMEOUT_SECONDS)
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
