//! The platform's structured `ask_user`: 1–4 multiple-choice questions, free-text answers, and
//! a waiting window after which the question expires and the run goes on.

use std::fmt::Write as _;
use std::future::Future;
use std::time::Duration;

use harnessx::{PermissionLevel, RegistryError, ToolDefinition, ToolOutput, ToolRegistry};
use serde_json::json;

use super::{AskUserOptions, tool_options};

/// The environment variable that sets the waiting window in seconds.
pub const ASK_USER_TIMEOUT_ENV: &str = "ASK_USER_TIMEOUT_SECONDS";

/// The default waiting window: 10 minutes.
pub const DEFAULT_QUESTION_WINDOW_SECONDS: f64 = 600.0;

/// What the model is told when nobody answered within the window (followed by the window).
pub const EXPIRED_MESSAGE: &str = "The question expired: nobody answered within the waiting \
window. Do not ask again; proceed with the available context on the most likely reading, and \
state your assumptions at the start of your reply.";

pub(super) const MAX_QUESTIONS: usize = 4;
pub(super) const MAX_HEADER: usize = 12;
pub(super) const MAX_QUESTION: usize = 500;
pub(super) const MIN_OPTIONS: usize = 2;
pub(super) const MAX_OPTIONS: usize = 4;
pub(super) const MAX_LABEL: usize = 60;
pub(super) const MAX_DESCRIPTION: usize = 200;

pub use harnessx::journal::{Question, QuestionAnswer, QuestionOption, UserReply};

/// Overrides for [`register_ask_user_questions_with`].
#[derive(Debug, Clone, Default)]
pub struct AskUserQuestionsOptions {
    /// The tool's permission (default ALLOW).
    pub permission: Option<PermissionLevel>,
    /// How long to wait for an answer, in seconds (default: `ASK_USER_TIMEOUT_SECONDS` from the
    /// environment, else 600).
    pub window_seconds: Option<f64>,
    /// The tool's own time limit in seconds (default: the window plus one minute, so the window
    /// always ends first).
    pub timeout_seconds: Option<f64>,
    /// Replace an existing `ask_user`.
    pub replace: bool,
}

/// The waiting window from `ASK_USER_TIMEOUT_SECONDS`, or 600 s when it is unset.
///
/// ```
/// use harnessx_builtin::ask_user::question_window_from_env;
/// if std::env::var_os("ASK_USER_TIMEOUT_SECONDS").is_none() {
///     assert_eq!(question_window_from_env()?.as_secs(), 600);
/// }
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn question_window_from_env() -> Result<Duration, RegistryError> {
    match std::env::var(ASK_USER_TIMEOUT_ENV) {
        Err(std::env::VarError::NotPresent) => {
            Ok(Duration::from_secs_f64(DEFAULT_QUESTION_WINDOW_SECONDS))
        }
        Err(std::env::VarError::NotUnicode(_)) => Err(window_error("not valid UTF-8")),
        Ok(raw) => parse_window(&raw),
    }
}

fn parse_window(raw: &str) -> Result<Duration, RegistryError> {
    raw.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        // More seconds than a `Duration` holds is refused like any other unusable value.
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| window_error(&format!("`{raw}`")))
}

fn window_error(what: &str) -> RegistryError {
    RegistryError::Config(format!(
        "{ASK_USER_TIMEOUT_ENV} is {what}, not a positive number of seconds; set it to a number \
         such as 600, or unset it for the 10-minute default"
    ))
}

/// Builds the `ask_user` tool over a structured callback, with a waiting window.
///
/// `ask` receives the validated questions and returns the reply, or `None` when nobody can
/// answer. If it has not returned within `window`, the model gets [`EXPIRED_MESSAGE`] and the
/// run goes on. An open question from the model arrives as one question headed "Question"
/// whose options are its suggested answers (none for free text); see the
/// [module](super) documentation.
///
/// ```
/// use std::time::Duration;
/// use harnessx_builtin::ask_user::{QuestionAnswer, UserReply, ask_user_questions_tool};
/// let def = ask_user_questions_tool(
///     |questions| async move {
///         let answers = questions.iter().map(|q| QuestionAnswer::selected([q.options[0].label.clone()])).collect();
///         Some(UserReply::Answers { answers })
///     },
///     Duration::from_secs(600),
/// );
/// assert_eq!(def.name, "ask_user");
/// assert_eq!(def.timeout, Some(Duration::from_secs(660)));
/// ```
pub fn ask_user_questions_tool<F, Fut>(ask: F, window: Duration) -> ToolDefinition
where
    F: Fn(Vec<Question>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<UserReply>> + Send + 'static,
{
    let mut definition = super::tool::definition(super::tool::Asker::structured(ask), Some(window));
    // Set directly: a window near `Duration::MAX` plus a minute does not fit an f64 round trip.
    definition.timeout = Some(window.saturating_add(Duration::from_secs(60)));
    definition
}

/// Registers the structured `ask_user` tool with the window from the environment.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::ask_user::{register_ask_user_questions, QuestionAnswer, UserReply};
/// let registry = ToolRegistry::new();
/// register_ask_user_questions(&registry, |questions| async move {
///     Some(UserReply::Answers {
///         answers: questions.iter().map(|q| QuestionAnswer::selected([q.options[0].label.clone()])).collect(),
///     })
/// })?;
/// assert!(registry.contains("ask_user"));
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn register_ask_user_questions<F, Fut>(
    registry: &ToolRegistry,
    ask: F,
) -> Result<ToolDefinition, RegistryError>
where
    F: Fn(Vec<Question>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<UserReply>> + Send + 'static,
{
    register_ask_user_questions_with(registry, ask, AskUserQuestionsOptions::default())
}

/// Registers the structured `ask_user` tool with overrides.
///
/// ```
/// use harnessx::{ToolCall, ToolRegistry};
/// use harnessx_builtin::ask_user::{AskUserQuestionsOptions, UserReply, register_ask_user_questions_with};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::RegistryError> {
/// let registry = ToolRegistry::new();
/// register_ask_user_questions_with(
///     &registry,
///     |_questions| async { Some(UserReply::FreeText { text: "Use JSON.".into() }) },
///     AskUserQuestionsOptions { window_seconds: Some(120.0), ..Default::default() },
/// )?;
/// let call = ToolCall::json("c1", "ask_user", serde_json::json!({"questions": [
///     {"header": "Format", "question": "Which format?", "options": [{"label": "CSV"}, {"label": "JSON"}]}
/// ]}));
/// let result = registry.execute(&call, None).await;
/// assert!(result.content.ends_with("Use JSON."));
/// # Ok(()) }
/// ```
pub fn register_ask_user_questions_with<F, Fut>(
    registry: &ToolRegistry,
    ask: F,
    options: AskUserQuestionsOptions,
) -> Result<ToolDefinition, RegistryError>
where
    F: Fn(Vec<Question>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<UserReply>> + Send + 'static,
{
    let window = match options.window_seconds {
        Some(s) => parse_window(&s.to_string()).map_err(|_| {
            RegistryError::Config(format!(
                "ask_user `window_seconds` is {s}; give a positive number of seconds"
            ))
        })?,
        None => question_window_from_env()?,
    };
    let tool_opts = tool_options(&AskUserOptions {
        permission: options.permission,
        timeout_seconds: options.timeout_seconds,
        replace: options.replace,
    })?;
    registry.register_tool_with(ask_user_questions_tool(ask, window), tool_opts)
}

/// Checks the limits (the schema states them too) and that labels are distinct; the first
/// problem becomes a one-line error naming the question index and field.
pub(crate) fn validate(questions: &[Question]) -> Result<(), String> {
    let fail = |what: String| {
        format!("Invalid arguments for `ask_user`: {what}. Fix it and call `ask_user` again.")
    };
    let len = |s: &str| s.chars().count();
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        return Err(fail(format!(
            "field `questions` has {} questions; ask 1 to {MAX_QUESTIONS}",
            questions.len()
        )));
    }
    for (i, q) in questions.iter().enumerate() {
        if q.header.trim().is_empty() || len(&q.header) > MAX_HEADER {
            return Err(fail(format!(
                "field `questions[{i}].header` must be 1 to {MAX_HEADER} characters (it has {})",
                len(&q.header)
            )));
        }
        if q.question.trim().is_empty() || len(&q.question) > MAX_QUESTION {
            return Err(fail(format!(
                "field `questions[{i}].question` must be 1 to {MAX_QUESTION} characters (it has {})",
                len(&q.question)
            )));
        }
        if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&q.options.len()) {
            return Err(fail(format!(
                "field `questions[{i}].options` has {} options; give {MIN_OPTIONS} to {MAX_OPTIONS}",
                q.options.len()
            )));
        }
        for (j, o) in q.options.iter().enumerate() {
            if o.label.trim().is_empty() || len(&o.label) > MAX_LABEL {
                return Err(fail(format!(
                    "field `questions[{i}].options[{j}].label` must be 1 to {MAX_LABEL} characters (it has {})",
                    len(&o.label)
                )));
            }
            if o.description
                .as_deref()
                .is_some_and(|d| len(d) > MAX_DESCRIPTION)
            {
                return Err(fail(format!(
                    "field `questions[{i}].options[{j}].description` is longer than {MAX_DESCRIPTION} characters"
                )));
            }
            if q.options[..j].iter().any(|p| p.label == o.label) {
                return Err(fail(format!(
                    "field `questions[{i}].options[{j}].label` repeats the label `{}`; make every label distinct",
                    o.label
                )));
            }
        }
    }
    Ok(())
}

pub(super) fn answered(questions: &[Question], reply: &UserReply) -> ToolOutput {
    ToolOutput::text(render(questions, reply)).with_structured(json!({ "reply": reply }))
}

/// The reply as the model reads it: one line per question.
fn render(questions: &[Question], reply: &UserReply) -> String {
    match reply {
        UserReply::FreeText { text } => {
            format!("The user replied in their own words instead of choosing options: {text}")
        }
        UserReply::Answers { answers } => {
            let mut out = String::from("The user answered:");
            for (i, q) in questions.iter().enumerate() {
                let _ = write!(out, "\n{}. [{}] {} → ", i + 1, q.header, q.question);
                match answers.get(i) {
                    None => out.push_str("no answer"),
                    Some(a) => {
                        let mut parts = Vec::new();
                        if !a.selected.is_empty() {
                            parts.push(a.selected.join(", "));
                        }
                        if let Some(t) = a.text.as_deref().filter(|t| !t.trim().is_empty()) {
                            parts.push(format!("in their own words: {t}"));
                        }
                        if parts.is_empty() {
                            out.push_str("no answer");
                        } else {
                            out.push_str(&parts.join("; "));
                        }
                    }
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(header: &str, labels: &[&str]) -> Question {
        Question {
            header: header.into(),
            question: "Which one?".into(),
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: false,
        }
    }

    #[test]
    fn validate_names_question_and_field() {
        assert!(validate(&[q("Scope", &["a", "b"])]).is_ok());
        let err =
            validate(&[q("Scope", &["a", "b"]), q("A header too long", &["a", "b"])]).unwrap_err();
        assert_eq!(
            err,
            "Invalid arguments for `ask_user`: field `questions[1].header` must be 1 to 12 \
             characters (it has 17). Fix it and call `ask_user` again."
        );
        let err = validate(&[q("Scope", &["a"])]).unwrap_err();
        assert!(err.contains("field `questions[0].options` has 1 options; give 2 to 4"));
        let err = validate(&[q("Scope", &["a", "a"])]).unwrap_err();
        assert!(err.contains("`questions[0].options[1].label` repeats the label `a`"));
        let long = "x".repeat(61);
        let err = validate(&[q("Scope", &["a", &long])]).unwrap_err();
        assert!(
            err.contains("`questions[0].options[1].label` must be 1 to 60 characters (it has 61)")
        );
        let mut too_long_q = q("Scope", &["a", "b"]);
        too_long_q.question = "é".repeat(501);
        assert!(
            validate(&[too_long_q])
                .unwrap_err()
                .contains("`questions[0].question` must be 1 to 500 characters (it has 501)")
        );
        let mut desc = q("Scope", &["a", "b"]);
        desc.options[0].description = Some("d".repeat(201));
        assert!(
            validate(&[desc])
                .unwrap_err()
                .contains("`questions[0].options[0].description` is longer than 200")
        );
        let five: Vec<Question> = (0..5).map(|_| q("S", &["a", "b"])).collect();
        assert!(
            validate(&five)
                .unwrap_err()
                .contains("field `questions` has 5 questions; ask 1 to 4")
        );
        assert!(validate(&[]).unwrap_err().contains("has 0 questions"));
    }

    #[test]
    fn window_parsing() {
        assert_eq!(parse_window(" 30 ").unwrap(), Duration::from_secs(30));
        let err = parse_window("soon").unwrap_err().to_string();
        assert_eq!(
            err,
            "ASK_USER_TIMEOUT_SECONDS is `soon`, not a positive number of seconds; set it to a \
             number such as 600, or unset it for the 10-minute default"
        );
        assert!(parse_window("-5").is_err());
        assert!(parse_window("0").is_err());
    }
}
