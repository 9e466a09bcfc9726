//! What a tool asks a person: one question with suggested answers or up to four multiple-choice
//! questions ([`QuestionForm`]), and what the person answers ([`UserReply`]). `ask_user` asks
//! them; a tool in a durable run raises one as [`NeedsInput`] (through
//! [`DurableInput::ask`](crate::journal::DurableInput::ask)) and the run pauses until it is
//! answered.

use serde::{Deserialize, Serialize};

/// One multiple-choice question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// A concise title, up to 12 characters.
    pub header: String,
    /// The question, up to 500 characters.
    pub question: String,
    /// 2 to 4 options.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen.
    #[serde(default)]
    pub multi_select: bool,
}

/// One option of a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// The option, up to 60 characters.
    pub label: String,
    /// What choosing it means, up to 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The answer to one question: chosen option labels and/or the person's own words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    /// The labels chosen (one for single-choice questions).
    #[serde(default)]
    pub selected: Vec<String>,
    /// Free text typed instead of, or besides, a choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl QuestionAnswer {
    /// An answer choosing these labels.
    pub fn selected<S: Into<String>>(labels: impl IntoIterator<Item = S>) -> Self {
        Self {
            selected: labels.into_iter().map(Into::into).collect(),
            text: None,
        }
    }

    /// An answer in the person's own words.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            selected: Vec::new(),
            text: Some(text.into()),
        }
    }
}

/// What came back from the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserReply {
    /// One answer per question, in order.
    Answers {
        /// The answers.
        answers: Vec<QuestionAnswer>,
    },
    /// A message in the person's own words answering the questions as a whole (for example a new
    /// chat message sent while the questions were pending).
    FreeText {
        /// The message.
        text: String,
    },
}

/// A question a tool puts to the person, in either form of `ask_user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum QuestionForm {
    /// One question with suggested answers (`choices` empty: free text only).
    Simple {
        /// The question.
        question: String,
        /// Suggested answers.
        #[serde(default)]
        choices: Vec<String>,
    },
    /// 1 to 4 multiple-choice questions.
    Structured {
        /// The questions.
        questions: Vec<Question>,
    },
}

impl QuestionForm {
    /// Checks that `reply` fits this question: every label is an option, a single-choice
    /// question has at most one selection, and there are no more answers than questions.
    ///
    /// ```
    /// use harnessx::journal::{QuestionAnswer, QuestionForm, UserReply};
    /// let q = QuestionForm::Simple { question: "Which format?".into(), choices: vec!["CSV".into(), "JSON".into()] };
    /// assert!(q.check(&UserReply::Answers { answers: vec![QuestionAnswer::selected(["CSV"])] }).is_ok());
    /// let err = q.check(&UserReply::Answers { answers: vec![QuestionAnswer::selected(["XML"])] }).unwrap_err();
    /// assert_eq!(err, "answers[0].selected: `XML` is not one of the options (CSV, JSON)");
    /// ```
    ///
    /// Each option is chosen at most once:
    ///
    /// ```
    /// use harnessx::journal::{Question, QuestionAnswer, QuestionForm, QuestionOption, UserReply};
    /// let q = QuestionForm::Structured { questions: vec![Question {
    ///     header: "Formats".into(),
    ///     question: "Which formats?".into(),
    ///     options: vec![
    ///         QuestionOption { label: "CSV".into(), description: None },
    ///         QuestionOption { label: "JSON".into(), description: None },
    ///     ],
    ///     multi_select: true,
    /// }] };
    /// let err = q.check(&UserReply::Answers {
    ///     answers: vec![QuestionAnswer::selected(vec!["CSV"; 500])],
    /// }).unwrap_err();
    /// assert_eq!(err, "answers[0].selected: `CSV` is chosen more than once; choose each option at most once");
    /// ```
    pub fn check(&self, reply: &UserReply) -> Result<(), String> {
        let answers = match reply {
            UserReply::FreeText { text } if text.trim().is_empty() => {
                return Err("text: the answer is empty; type an answer or choose an option".into());
            }
            UserReply::FreeText { .. } => return Ok(()),
            UserReply::Answers { answers } => answers,
        };
        let shapes: Vec<(Vec<&str>, bool)> = match self {
            Self::Simple { choices, .. } => {
                vec![(choices.iter().map(String::as_str).collect(), false)]
            }
            Self::Structured { questions } => questions
                .iter()
                .map(|q| {
                    let labels = q.options.iter().map(|o| o.label.as_str()).collect();
                    (labels, q.multi_select)
                })
                .collect(),
        };
        if answers.is_empty() {
            return Err("answers: no answer given; answer at least the first question".into());
        }
        if answers.len() > shapes.len() {
            return Err(format!(
                "answers: {} answers for {} question(s); give one answer per question",
                answers.len(),
                shapes.len()
            ));
        }
        for (i, (answer, (labels, multi))) in answers.iter().zip(&shapes).enumerate() {
            if !multi && answer.selected.len() > 1 {
                return Err(format!(
                    "answers[{i}].selected: {} options chosen, but the question allows one",
                    answer.selected.len()
                ));
            }
            for (j, label) in answer.selected.iter().enumerate() {
                if !labels.contains(&label.as_str()) {
                    return Err(format!(
                        "answers[{i}].selected: `{label}` is not one of the options ({})",
                        labels.join(", ")
                    ));
                }
                // The choices are a set: a label chosen twice is a client's mistake.
                if answer.selected[..j].contains(label) {
                    return Err(format!(
                        "answers[{i}].selected: `{label}` is chosen more than once; choose each \
                         option at most once"
                    ));
                }
            }
            if answer.selected.is_empty()
                && answer.text.as_deref().is_none_or(|t| t.trim().is_empty())
            {
                return Err(format!(
                    "answers[{i}]: neither a choice nor text; choose an option or type an answer"
                ));
            }
        }
        Ok(())
    }
}

/// A question a handler raised through
/// [`DurableInput::ask`](crate::journal::DurableInput::ask).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeedsInput {
    /// The question.
    pub form: QuestionForm,
    /// The window the tool asks for, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
}
