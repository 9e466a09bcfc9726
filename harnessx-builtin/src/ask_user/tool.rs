//! The one `ask_user` tool: it takes the structured form (1–4 multiple-choice questions) or a
//! single free-text question, and asks through whichever callback the application gave —
//! adapting the simple callback to structured questions and the structured callback to a
//! simple question.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use harnessx::journal::{InputReply, QuestionForm};
use harnessx::{
    BoxFuture, PermissionLevel, ReplayPolicy, ToolContext, ToolDefinition, ToolError, ToolOutput,
    handler_fn,
};
use serde_json::{Value, json};

use super::questions::{
    EXPIRED_MESSAGE, MAX_DESCRIPTION, MAX_HEADER, MAX_LABEL, MAX_OPTIONS, MAX_QUESTION,
    MAX_QUESTIONS, MIN_OPTIONS, answered, validate,
};
use super::{ASK_USER, NO_ANSWER_MESSAGE, Question, QuestionAnswer, QuestionOption, UserReply};

type SimpleAsk = dyn Fn(String, Vec<String>) -> BoxFuture<'static, Option<String>> + Send + Sync;
type StructuredAsk = dyn Fn(Vec<Question>) -> BoxFuture<'static, Option<UserReply>> + Send + Sync;

/// How the application reaches a person.
#[derive(Clone)]
pub(super) enum Asker {
    /// `ask(question, choices) -> Option<answer>`.
    Simple(Arc<SimpleAsk>),
    /// `ask(questions) -> Option<reply>`.
    Structured(Arc<StructuredAsk>),
}

impl Asker {
    pub(super) fn simple<F, Fut>(ask: F) -> Self
    where
        F: Fn(String, Vec<String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<String>> + Send + 'static,
    {
        Self::Simple(Arc::new(move |q, c| Box::pin(ask(q, c))))
    }

    pub(super) fn structured<F, Fut>(ask: F) -> Self
    where
        F: Fn(Vec<Question>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<UserReply>> + Send + 'static,
    {
        Self::Structured(Arc::new(move |q| Box::pin(ask(q))))
    }

    /// Puts structured questions to the person. The simple callback is asked each question in
    /// turn, with the option labels as its choices; an answer naming options selects them (for
    /// a multi-select question, labels separated by commas), any other answer is the person's
    /// own words. `None` when nobody answered any question.
    async fn ask_questions(&self, questions: Vec<Question>) -> Option<UserReply> {
        match self {
            Self::Structured(ask) => ask(questions).await,
            Self::Simple(ask) => {
                let mut answers = Vec::with_capacity(questions.len());
                for q in &questions {
                    let labels = q.options.iter().map(|o| o.label.clone()).collect();
                    let answer = ask(q.question.clone(), labels).await;
                    answers.push(answer.map(|a| answer_for(q, &a)));
                }
                if answers.iter().all(Option::is_none) {
                    return None;
                }
                let answers = answers.into_iter().map(Option::unwrap_or_default).collect();
                Some(UserReply::Answers { answers })
            }
        }
    }

    /// Puts one question with suggested answers to the person; the structured callback gets it
    /// as one question headed "Question" whose options are the choices (none for free text).
    async fn ask_simple(&self, question: String, choices: Vec<String>) -> Option<String> {
        match self {
            Self::Simple(ask) => ask(question, choices).await,
            Self::Structured(ask) => {
                let q = Question {
                    header: "Question".to_owned(),
                    question,
                    options: choices
                        .into_iter()
                        .map(|label| QuestionOption {
                            label,
                            description: None,
                        })
                        .collect(),
                    multi_select: false,
                };
                ask(vec![q]).await.map(|reply| simple_answer(&reply))
            }
        }
    }
}

/// A simple callback's answer to a structured question: the options it names, or its words.
fn answer_for(question: &Question, answer: &str) -> QuestionAnswer {
    let label = |part: &str| {
        question
            .options
            .iter()
            .find(|o| o.label.trim().eq_ignore_ascii_case(part.trim()))
            .map(|o| o.label.clone())
    };
    if let Some(l) = label(answer) {
        return QuestionAnswer::selected([l]);
    }
    if question.multi_select {
        let parts: Option<Vec<String>> = answer.split(',').map(label).collect();
        if let Some(labels) = parts.filter(|l| !l.is_empty()) {
            return QuestionAnswer::selected(labels);
        }
    }
    QuestionAnswer::text(answer)
}

/// A reply to a simple question as one line: the choice, the person's words, or both.
pub(super) fn simple_answer(reply: &UserReply) -> String {
    match reply {
        UserReply::FreeText { text } => text.clone(),
        UserReply::Answers { answers } => answers
            .iter()
            .flat_map(|a| a.selected.iter().cloned().chain(a.text.clone()))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// The one `ask_user` tool: ALLOW, one call at a time, safe to replay. With a `window`, an
/// unanswered question expires after it; the caller sets the time limit.
pub(super) fn definition(asker: Asker, window: Option<Duration>) -> ToolDefinition {
    ToolDefinition::new(
        ASK_USER,
        "Ask the user when you need a decision from them to proceed and no sensible default \
         exists, before doing the work. Prefer `questions`: 1 to 4 multiple-choice questions, \
         each with a short `header` (up to 12 characters), the `question` (up to 500), 2 to 4 \
         `options` (`label` up to 60 characters, optional `description` up to 200) and \
         `multi_select` when several options may be chosen; the user may also answer in their \
         own words. For one open question send `question` instead, with suggested answers in \
         `choices` (or none).",
        input_schema(),
        handler_fn(move |args, ctx| {
            let asker = asker.clone();
            async move { ask(asker, window, args, ctx).await }
        }),
    )
    .with_permission(PermissionLevel::Allow)
    .with_concurrent(false)
    .with_replay_policy(ReplayPolicy::Safe)
}

/// What the model sent: structured questions or one simple question.
enum Asked {
    Questions(Vec<Question>),
    Simple {
        question: String,
        choices: Vec<String>,
    },
}

fn parse(args: &Value) -> Result<Asked, ToolError> {
    let fail = |what: String| {
        ToolError::invalid_arguments(format!(
            "Invalid arguments for `ask_user`: {what}. Fix it and call `ask_user` again."
        ))
    };
    match (args.get("questions"), args.get("question")) {
        (Some(_), Some(_)) => Err(fail(
            "send either `questions` (multiple-choice questions) or `question` (one open \
             question), not both"
                .to_owned(),
        )),
        (None, None) => Err(fail(
            "field `questions` is missing; send 1 to 4 multiple-choice questions in `questions`, \
             or one open question in `question`"
                .to_owned(),
        )),
        (Some(questions), None) => {
            let questions: Vec<Question> = serde_json::from_value(questions.clone())
                .map_err(|e| fail(format!("field `questions`: {e}")))?;
            validate(&questions).map_err(ToolError::invalid_arguments)?;
            Ok(Asked::Questions(questions))
        }
        (None, Some(question)) => {
            let question = question
                .as_str()
                .map(str::trim)
                .filter(|q| !q.is_empty())
                .ok_or_else(|| fail("field `question` must be a non-empty string".to_owned()))?
                .to_owned();
            let choices = match args.get("choices") {
                None | Some(Value::Null) => Vec::new(),
                Some(c) => serde_json::from_value(c.clone())
                    .map_err(|e| fail(format!("field `choices`: {e}")))?,
            };
            Ok(Asked::Simple { question, choices })
        }
    }
}

async fn ask(
    asker: Asker,
    window: Option<Duration>,
    args: Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let asked = parse(&args)?;
    // In a durable run the run pauses instead of waiting; the store keeps the window.
    if let Some(input) = ctx.extensions().get::<harnessx::journal::DurableInput>() {
        return match (input.reply(), asked) {
            (Some(InputReply::Answer { reply }), Asked::Questions(questions)) => {
                Ok(answered(&questions, reply))
            }
            (Some(InputReply::Answer { reply }), Asked::Simple { .. }) => Ok(ToolOutput::text(
                format!("The user answered: {}", simple_answer(reply)),
            )),
            (Some(InputReply::Expired { window_seconds }), _) => Ok(ToolOutput::text(format!(
                "{EXPIRED_MESSAGE} (The window was {window_seconds} s.)"
            ))),
            (_, Asked::Questions(questions)) => {
                Err(input.ask(QuestionForm::Structured { questions }, window))
            }
            (_, Asked::Simple { question, choices }) => {
                Err(input.ask(QuestionForm::Simple { question, choices }, window))
            }
        };
    }
    match asked {
        Asked::Questions(questions) => {
            let reply = within(window, asker.ask_questions(questions.clone())).await;
            Ok(match reply {
                Err(expired) => expired,
                Ok(None) => ToolOutput::text(NO_ANSWER_MESSAGE),
                Ok(Some(reply)) => answered(&questions, &reply),
            })
        }
        Asked::Simple { question, choices } => {
            let answer = within(window, asker.ask_simple(question, choices)).await;
            Ok(match answer {
                Err(expired) => expired,
                Ok(None) => ToolOutput::text(NO_ANSWER_MESSAGE),
                Ok(Some(answer)) => ToolOutput::text(format!("The user answered: {answer}")),
            })
        }
    }
}

/// Waits for `asking`, up to the window when there is one; past it, the expiry message.
async fn within<T>(
    window: Option<Duration>,
    asking: impl Future<Output = T>,
) -> Result<T, ToolOutput> {
    match window {
        None => Ok(asking.await),
        Some(window) => tokio::time::timeout(window, asking).await.map_err(|_| {
            ToolOutput::text(format!(
                "{EXPIRED_MESSAGE} (The window was {} s.)",
                window.as_secs_f64()
            ))
        }),
    }
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_QUESTIONS,
                "description": "1 to 4 multiple-choice questions (preferred).",
                "items": {
                    "type": "object",
                    "properties": {
                        "header": {"type": "string", "minLength": 1, "maxLength": MAX_HEADER,
                                   "description": "A concise title, up to 12 characters."},
                        "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION},
                        "options": {
                            "type": "array",
                            "minItems": MIN_OPTIONS,
                            "maxItems": MAX_OPTIONS,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string", "minLength": 1, "maxLength": MAX_LABEL},
                                    "description": {"type": "string", "maxLength": MAX_DESCRIPTION}
                                },
                                "required": ["label"],
                                "additionalProperties": false
                            }
                        },
                        "multi_select": {"type": "boolean", "default": false}
                    },
                    "required": ["header", "question", "options"],
                    "additionalProperties": false
                }
            },
            "question": {
                "type": "string",
                "minLength": 1,
                "description": "One open question, instead of `questions`."
            },
            "choices": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Suggested answers to `question`; empty for a free-text question."
            }
        },
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(labels: &[&str], multi_select: bool) -> Question {
        Question {
            header: "H".into(),
            question: "Which?".into(),
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select,
        }
    }

    #[test]
    fn a_simple_answer_naming_options_selects_them() {
        let single = q(&["CSV", "JSON"], false);
        assert_eq!(
            answer_for(&single, " json "),
            QuestionAnswer::selected(["JSON"])
        );
        assert_eq!(
            answer_for(&single, "XML please"),
            QuestionAnswer::text("XML please")
        );
        let multi = q(&["id", "email", "name"], true);
        assert_eq!(
            answer_for(&multi, "id, Email"),
            QuestionAnswer::selected(["id", "email"])
        );
        assert_eq!(
            answer_for(&multi, "id, phone"),
            QuestionAnswer::text("id, phone")
        );
    }

    #[test]
    fn the_model_sends_one_shape_or_is_told_which() {
        let err = |v: Value| match parse(&v) {
            Err(e) => e.message().to_owned(),
            Ok(_) => panic!("{v} parsed"),
        };
        assert_eq!(
            err(json!({})),
            "Invalid arguments for `ask_user`: field `questions` is missing; send 1 to 4 \
             multiple-choice questions in `questions`, or one open question in `question`. Fix \
             it and call `ask_user` again."
        );
        assert!(err(json!({"question": "a", "questions": []})).contains("not both"));
        assert!(err(json!({"question": "  "})).contains("field `question` must be a non-empty"));
        assert!(err(json!({"question": "a", "choices": [1]})).contains("field `choices`: "));
        assert!(matches!(
            parse(&json!({"question": "Which day?", "choices": ["Mon"]})),
            Ok(Asked::Simple { .. })
        ));
    }
}
