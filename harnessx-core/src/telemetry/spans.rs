//! The three spans — `invoke_agent`, `chat`, `execute_tool` — and what is recorded on them when
//! their operation ends.

use std::fmt;

use tracing::Span;
use tracing::field::Empty;

use super::{TARGET, content};
use crate::model::{
    Message, ModelErrorKind, ModelRequest, ModelResponse, ServerAddress, StopReason, Usage,
};
use crate::output::{ToolCall, ToolErrorKind, ToolResult};

/// `provider:model` split at the first colon; a name without one is both.
pub(crate) fn split_model_name(name: &str) -> (&str, &str) {
    match name.split_once(':') {
        Some((provider, model)) if !provider.is_empty() && !model.is_empty() => (provider, model),
        _ => (name, name),
    }
}

/// `{operation} {subject}`, or the operation alone: the conventions' span names.
struct SpanName<'a>(&'static str, Option<&'a str>);

impl fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Some(subject) if !subject.is_empty() => write!(f, "{} {subject}", self.0),
            _ => f.write_str(self.0),
        }
    }
}

/// Token counts as the signed integers OpenTelemetry attributes hold.
fn tokens(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn record_usage(span: &Span, usage: &Usage) {
    // A provider that reports no usage leaves every count at zero; recording those zeros would
    // claim a count nobody measured.
    if *usage == Usage::default() {
        return;
    }
    span.record("gen_ai.usage.input_tokens", tokens(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", tokens(usage.output_tokens));
    if usage.cache_read_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            tokens(usage.cache_read_tokens),
        );
    }
}

fn record_error(span: &Span, error_type: &str, description: Option<&str>) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
    if let Some(description) = description {
        span.record("otel.status_description", description);
    }
}

/// A model answer's usage and finish reason, on a `chat` or `invoke_agent` span.
fn record_answer(span: &Span, usage: &Usage, stop: StopReason) {
    record_usage(span, usage);
    span.record(
        "gen_ai.response.finish_reasons",
        content::finish_reasons(stop),
    );
}

/// An error a run or model request span records: its message, and the low-cardinality
/// `error.type` it is counted under. The agent's error implements it; the spans know nothing
/// else of the agent.
pub(crate) trait SpanError: fmt::Display {
    /// The `error.type` attribute.
    fn error_type(&self) -> &'static str;
}

/// A run or model request that failed with `error`.
fn record_span_error(span: &Span, error: &dyn SpanError) {
    let description = error.to_string();
    record_error(span, error.error_type(), Some(description.as_str()));
}

/// The `error.type` of a failed model request.
pub(crate) fn model_error_type(kind: ModelErrorKind) -> &'static str {
    match kind {
        ModelErrorKind::Auth => "auth",
        ModelErrorKind::RateLimited => "rate_limited",
        ModelErrorKind::Server => "server",
        ModelErrorKind::ContextOverflow => "context_overflow",
        ModelErrorKind::InvalidRequest => "invalid_request",
        ModelErrorKind::Malformed => "malformed",
        ModelErrorKind::Timeout => "timeout",
        ModelErrorKind::Transport => "transport",
        ModelErrorKind::Other => "other",
    }
}

fn tool_error_type(kind: ToolErrorKind) -> &'static str {
    match kind {
        ToolErrorKind::UnknownTool => "unknown_tool",
        ToolErrorKind::MalformedArguments => "malformed_arguments",
        ToolErrorKind::InvalidArguments => "invalid_arguments",
        ToolErrorKind::PermissionDenied => "permission_denied",
        ToolErrorKind::TimedOut => "timed_out",
        ToolErrorKind::Failed => "failed",
        ToolErrorKind::Crashed => "crashed",
    }
}

/// A run's `invoke_agent` span.
pub(crate) struct RunTrace {
    span: Span,
    capture: bool,
}

impl RunTrace {
    /// Opens the span of a run over `conversation` (the prompt included).
    pub(crate) fn start(
        agent_name: Option<&str>,
        model_name: &str,
        instructions: Option<&str>,
        conversation: &[Message],
        capture: bool,
    ) -> Self {
        let (provider, model) = split_model_name(model_name);
        let span = tracing::info_span!(
            target: TARGET,
            "invoke_agent",
            otel.name = %SpanName("invoke_agent", agent_name),
            otel.kind = "internal",
            otel.status_code = Empty,
            otel.status_description = Empty,
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = provider,
            gen_ai.agent.name = agent_name,
            gen_ai.request.model = model,
            gen_ai.response.finish_reasons = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.usage.cache_read.input_tokens = Empty,
            error.type = Empty,
            harnessx.run.outcome = Empty,
            gen_ai.system_instructions = Empty,
            gen_ai.input.messages = Empty,
            gen_ai.output.messages = Empty,
        );
        let capture = capture && !span.is_disabled();
        if capture {
            if let Some(system) = instructions {
                span.record(
                    "gen_ai.system_instructions",
                    content::system_instructions(system),
                );
            }
            span.record(
                "gen_ai.input.messages",
                content::input_messages(conversation),
            );
        }
        Self { span, capture }
    }

    /// The span, to instrument the run with.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// Records a run that answered `output`, with the run's total `usage`.
    pub(crate) fn completed(&self, output: &str, usage: &Usage, stop: StopReason) {
        if self.span.is_disabled() {
            return;
        }
        record_answer(&self.span, usage, stop);
        self.span.record("harnessx.run.outcome", "completed");
        if self.capture {
            self.span.record(
                "gen_ai.output.messages",
                content::final_answer(output, stop),
            );
        }
    }

    /// Records a run that paused for a person.
    pub(crate) fn waiting(&self) {
        self.span.record("harnessx.run.outcome", "needs_input");
    }

    /// Records a run that failed.
    pub(crate) fn failed(&self, error: &dyn SpanError) {
        if !self.span.is_disabled() {
            record_span_error(&self.span, error);
        }
    }
}

/// A model request's `chat` span.
pub(crate) struct ChatTrace {
    span: Span,
    capture: bool,
}

impl ChatTrace {
    /// Opens the span of `request` to the model called `model_name`, served at `server` when
    /// the model says where.
    pub(crate) fn start(
        model_name: &str,
        server: Option<&ServerAddress>,
        request: &ModelRequest,
        streaming: bool,
        capture: bool,
    ) -> Self {
        let (provider, model) = split_model_name(model_name);
        let span = tracing::info_span!(
            target: TARGET,
            "chat",
            otel.name = %SpanName("chat", Some(model)),
            otel.kind = "client",
            otel.status_code = Empty,
            otel.status_description = Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider,
            gen_ai.request.model = model,
            gen_ai.request.max_tokens = request.settings.max_tokens.map(i64::from),
            gen_ai.request.temperature = request.settings.temperature.map(f64::from),
            gen_ai.request.stream = streaming.then_some(true),
            gen_ai.response.model = Empty,
            gen_ai.response.id = Empty,
            gen_ai.response.finish_reasons = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            gen_ai.usage.cache_read.input_tokens = Empty,
            server.address = server.map(|s| s.host.as_str()),
            server.port = server.map(|s| i64::from(s.port)),
            error.type = Empty,
            gen_ai.system_instructions = Empty,
            gen_ai.input.messages = Empty,
            gen_ai.output.messages = Empty,
        );
        let capture = capture && !span.is_disabled();
        if capture {
            if let Some(system) = &request.system {
                span.record(
                    "gen_ai.system_instructions",
                    content::system_instructions(system),
                );
            }
            span.record(
                "gen_ai.input.messages",
                content::input_messages(&request.messages),
            );
        }
        Self { span, capture }
    }

    /// The span, to instrument the request with.
    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// A fallback model took over: the answer comes from `to` (a model name).
    pub(crate) fn fell_back(&self, to: &str) {
        self.span
            .record("gen_ai.response.model", split_model_name(to).1);
    }

    /// Records how the request ended.
    pub(crate) fn finish(&self, result: Result<&ModelResponse, &dyn SpanError>) {
        if self.span.is_disabled() {
            return;
        }
        match result {
            Ok(response) => {
                record_answer(&self.span, &response.usage, response.stop_reason);
                // The provider's own name for the model that answered is the most exact one;
                // without it the span keeps what `fell_back` recorded, or nothing.
                if let Some(model) = response.model.as_deref().filter(|m| !m.is_empty()) {
                    self.span.record("gen_ai.response.model", model);
                }
                if let Some(id) = response.id.as_deref().filter(|id| !id.is_empty()) {
                    self.span.record("gen_ai.response.id", id);
                }
                if self.capture {
                    self.span
                        .record("gen_ai.output.messages", content::output_messages(response));
                }
            }
            Err(error) => record_span_error(&self.span, error),
        }
    }
}

/// A tool call's `execute_tool` span.
pub(crate) struct ToolTrace {
    span: Span,
    capture: bool,
}

impl ToolTrace {
    /// Opens the span of `call` to the tool registered as `name` (the name the model wrote when
    /// none matched).
    pub(crate) fn start(
        name: &str,
        description: Option<&str>,
        call: &ToolCall,
        capture: bool,
    ) -> Self {
        let call_id = Some(call.id.as_str()).filter(|id| !id.is_empty());
        let span = tracing::info_span!(
            target: TARGET,
            "execute_tool",
            otel.name = %SpanName("execute_tool", Some(name)),
            otel.kind = "internal",
            otel.status_code = Empty,
            otel.status_description = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = name,
            gen_ai.tool.call.id = call_id,
            gen_ai.tool.type = "function",
            gen_ai.tool.description = description,
            error.type = Empty,
            harnessx.tool.attempts = Empty,
            harnessx.tool.deduplicated = Empty,
            harnessx.tool.outcome = Empty,
            gen_ai.tool.call.arguments = Empty,
            gen_ai.tool.call.result = Empty,
        );
        let capture = capture && !span.is_disabled();
        if capture {
            span.record(
                "gen_ai.tool.call.arguments",
                content::json_or_text(&call.arguments),
            );
        }
        Self { span, capture }
    }

    /// The span to instrument the call with, `None` when no subscriber wants it: then there is
    /// nothing to enter on each poll, and the call's future is awaited as it is.
    pub(crate) fn enabled_span(&self) -> Option<Span> {
        (!self.span.is_disabled()).then(|| self.span.clone())
    }

    /// Records how the call ended; `waiting` when it paused for a person's answer.
    pub(crate) fn finish(&self, result: &ToolResult, waiting: bool) {
        if self.span.is_disabled() {
            return;
        }
        self.span
            .record("harnessx.tool.attempts", i64::from(result.attempts));
        if result.deduplicated {
            self.span.record("harnessx.tool.deduplicated", true);
        }
        if waiting {
            self.span.record("harnessx.tool.outcome", "needs_input");
            return;
        }
        if result.is_error {
            let kind = result.error_kind.unwrap_or(ToolErrorKind::Failed);
            // A failed span always says why. The tool's message can quote the model's arguments
            // or the tool's data, so it is content: without the opt-in the description names the
            // failure's kind instead.
            let error_type = tool_error_type(kind);
            let description = if self.capture {
                result.content.clone()
            } else {
                format!(
                    "the tool call ended with error type `{error_type}` (its message is recorded \
                     when content capture is on)"
                )
            };
            record_error(&self.span, error_type, Some(&description));
        } else if self.capture {
            let value = result
                .structured
                .as_ref()
                .map_or_else(|| content::json_or_text(&result.content), |v| v.to_string());
            self.span.record("gen_ai.tool.call.result", value);
        }
    }
}
