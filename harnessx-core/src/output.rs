//! What goes into a tool and what comes out: calls, handler outputs, errors and results.

use std::fmt;

mod cap;

pub(crate) use cap::echo;
pub use cap::truncate_result;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call the model made: an id, the name it used, and the raw argument text.
///
/// The arguments stay raw text because a model (or a damaged stream) can send text that is not
/// JSON at all; the engine parses them and answers a parse error to the model.
///
/// ```
/// use harnessx::ToolCall;
/// let call = ToolCall::json("call_1", "calculate", serde_json::json!({"a": 2, "b": 3}));
/// assert_eq!(call.arguments, r#"{"a":2,"b":3}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id, echoed back with the result.
    pub id: String,
    /// The tool name as the model wrote it (it may need repair).
    pub name: String,
    /// The argument text as the model sent it.
    pub arguments: String,
}

impl ToolCall {
    /// A call with raw argument text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// A call whose arguments are a JSON value.
    pub fn json(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self::new(id, name, arguments.to_string())
    }
}

/// What a handler produced: text for the model, optionally structured content.
///
/// ```
/// use harnessx::ToolOutput;
/// let out = ToolOutput::json(serde_json::json!({"ok": true}));
/// assert_eq!(out.content, r#"{"ok":true}"#);
/// assert!(!out.is_error);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The text the model reads.
    pub content: String,
    /// Structured content kept beside the text (for example an MCP tool's `structuredContent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// The operation reports failure (the model sees an error result).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful text output.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            structured: None,
            is_error: false,
        }
    }

    /// A successful JSON output: a string value becomes plain text, anything else is shown as
    /// compact JSON and kept as structured content.
    pub fn json(value: Value) -> Self {
        match value {
            Value::String(s) => Self::text(s),
            Value::Null => Self::text("null"),
            other => Self {
                content: other.to_string(),
                structured: Some(other),
                is_error: false,
            },
        }
    }

    /// An output that reports failure to the model.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            structured: None,
            is_error: true,
        }
    }

    /// Attaches structured content.
    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = Some(structured);
        self
    }
}

/// A failure a handler reports. The model sees its message as an error result.
///
/// `Transient` marks a repeatable failure: safe and idempotent tools are retried under their
/// [`ToolRetry`](crate::ToolRetry). Return it from a handler as `Err(ToolError::transient(..))`.
///
/// ```
/// use harnessx::ToolError;
/// let e = ToolError::transient("upstream returned 503; try again");
/// assert!(e.is_transient());
/// assert_eq!(e.to_string(), "upstream returned 503; try again");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ToolError {
    /// The operation failed; retrying will not help.
    Failed(String),
    /// The operation failed in a way that may succeed on another attempt.
    Transient(String),
    /// The arguments could not be used (bad value, missing context).
    InvalidArguments(String),
    /// The call needs a person's answer first. Only a durable run can wait for one: it pauses
    /// and runs the handler again with the answer (see
    /// [`DurableInput::ask`](crate::journal::DurableInput::ask)). In a direct run the model gets
    /// [`NEEDS_INPUT_MESSAGE`] instead.
    NeedsInput(Box<crate::question::NeedsInput>),
}

/// What the model gets when a tool asks for a person's answer in a run that cannot wait.
pub const NEEDS_INPUT_MESSAGE: &str = "The tool needs a person's answer, which only a durable \
run can wait for. Proceed without it on the most likely reading, and state that assumption.";

impl ToolError {
    /// A permanent failure.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
    /// A repeatable failure (the spec's `TransientToolError`).
    pub fn transient(message: impl Into<String>) -> Self {
        Self::Transient(message.into())
    }
    /// Arguments that could not be used.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self::InvalidArguments(message.into())
    }
    /// True for [`ToolError::Transient`].
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transient(_))
    }
    /// The message the model sees.
    pub fn message(&self) -> &str {
        match self {
            Self::Failed(m) | Self::Transient(m) | Self::InvalidArguments(m) => m,
            Self::NeedsInput(_) => NEEDS_INPUT_MESSAGE,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Why a result is an error, for hosts that log or branch on it. The model reads only
/// [`ToolResult::content`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// No tool matched the name.
    UnknownTool,
    /// The argument text was not a JSON object.
    MalformedArguments,
    /// The arguments broke the schema.
    InvalidArguments,
    /// The permission check refused the call.
    PermissionDenied,
    /// The tool did not answer within its time limit.
    TimedOut,
    /// The handler reported failure.
    Failed,
    /// The handler panicked or its task was lost.
    Crashed,
}

/// The answer to one call, in the form the model receives it. Built with
/// [`success`](Self::success) or [`error`](Self::error) and the `with_*` methods (it will gain
/// fields).
///
/// ```
/// use harnessx::{ToolErrorKind, ToolOutput, ToolResult};
/// let ok = ToolResult::success("call_1", "read_file", ToolOutput::text("hello"));
/// assert!(!ok.is_error);
/// let denied = ToolResult::error("call_2", "run_bash", ToolErrorKind::PermissionDenied, "denied");
/// assert_eq!(denied.error_kind, Some(ToolErrorKind::PermissionDenied));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The registered name that ran, or the name the model used when none matched.
    pub name: String,
    /// The text the model reads.
    pub content: String,
    /// Structured content, when the tool produced any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// The call failed.
    pub is_error: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ToolErrorKind>,
    /// The content was cut to the result cap.
    pub truncated: bool,
    /// How many times the handler ran (0 when it never did).
    pub attempts: u32,
    /// The result was answered from an identical earlier call in the same run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deduplicated: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn success(
        call_id: impl Into<String>,
        name: impl Into<String>,
        output: ToolOutput,
    ) -> Self {
        let kind = output.is_error.then_some(ToolErrorKind::Failed);
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: output.content,
            structured: output.structured,
            is_error: output.is_error,
            error_kind: kind,
            truncated: false,
            attempts: 1,
            deduplicated: false,
        }
    }

    /// An error result.
    pub fn error(
        call_id: impl Into<String>,
        name: impl Into<String>,
        kind: ToolErrorKind,
        message: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: message.into(),
            structured: None,
            is_error: true,
            error_kind: Some(kind),
            truncated: false,
            attempts: 0,
            deduplicated: false,
        }
    }

    /// The same result with this structured content.
    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = Some(structured);
        self
    }

    /// The same result, marked as cut (or not) to the result cap.
    pub fn with_truncated(mut self, truncated: bool) -> Self {
        self.truncated = truncated;
        self
    }

    /// The same result, with the handler having run this many times.
    ///
    /// ```
    /// use harnessx::{ToolOutput, ToolResult};
    /// let result = ToolResult::success("call_1", "fetch", ToolOutput::text("ok")).with_attempts(3);
    /// assert_eq!(result.attempts, 3);
    /// ```
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// The same result, marked as answered (or not) from an identical earlier call.
    pub fn with_deduplicated(mut self, deduplicated: bool) -> Self {
        self.deduplicated = deduplicated;
        self
    }
}
