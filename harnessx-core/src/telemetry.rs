//! Observability: OpenTelemetry GenAI spans for every agent run, model request and tool call,
//! and (feature `otel`) their export over OTLP/HTTP.
//!
//! The spans are plain [`tracing`] spans, named and attributed as the
//! [OpenTelemetry GenAI semantic conventions](https://opentelemetry.io/docs/specs/semconv/gen-ai/)
//! say, under the target [`TARGET`] at level INFO. Any `tracing` subscriber sees them; with no
//! subscriber installed they cost a check per span and nothing is formatted or serialized.
//!
//! | span (`otel.name`) | kind | when | attributes |
//! | --- | --- | --- | --- |
//! | `invoke_agent {name}` (`invoke_agent` without a name) | internal | one per run ([`Agent::run`](crate::Agent::run), `run_stream`, `run_journaled`) | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.agent.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`/`output_tokens`/`cache_read.input_tokens` (the run's totals), `gen_ai.response.finish_reasons` |
//! | `chat {model}` | client | one per model request, child of the run | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.request.max_tokens`, `gen_ai.request.temperature`, `gen_ai.request.stream`, `server.address`/`server.port` (the provider's base URL), `gen_ai.response.model` and `gen_ai.response.id` (as the provider sent them), `gen_ai.usage.*` (when reported), `gen_ai.response.finish_reasons` |
//! | `execute_tool {tool}` | internal | one per tool call, child of the run, also for calls that run concurrently on their own tasks | `gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type` (`function`), `gen_ai.tool.description`, `harnessx.tool.attempts`, `harnessx.tool.deduplicated` |
//!
//! The provider and model come from [`Model::name`](crate::model::Model::name): `openai:gpt-4o`
//! is provider `openai`, model `gpt-4o`; a name without a colon is both. The agent's name is
//! [`AgentConfig::name`](crate::AgentConfig::name). A tool handler's own spans and events are
//! children of its `execute_tool` span, on whichever thread its task runs.
//!
//! **Failures** set the span status to error and `error.type` to a low-cardinality value:
//! a model request's [`ModelErrorKind`](crate::model::ModelErrorKind) (`rate_limited`, `server`,
//! `timeout`, `context_overflow`, `auth`, `invalid_request`, `malformed`, `transport`, `other`);
//! a tool call's [`ToolErrorKind`](crate::ToolErrorKind) (`unknown_tool`, `malformed_arguments`,
//! `invalid_arguments`, `permission_denied`, `timed_out`, `failed`, `crashed`); a run's
//! `max_turns`, `journal`, `setup` or the model request's kind. A tool call that waits for a
//! person in a durable run is not a failure: it has `harnessx.tool.outcome = "needs_input"`, and
//! its run `harnessx.run.outcome = "needs_input"`.
//!
//! **Content** — prompts, the system instructions, model answers, tool arguments, tool results and
//! tool error messages — is recorded only when
//! [`AgentConfig::capture_content`](crate::AgentConfig::capture_content) is on (it is off by
//! default: content may hold personal data), as `gen_ai.system_instructions`,
//! `gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments` and
//! `gen_ai.tool.call.result`, JSON text in the conventions' message format.
//!
//! ```
//! use harnessx::{Agent, AgentConfig};
//! use harnessx::model::TestModel;
//! let agent = Agent::builder()
//!     .model(TestModel::new().with_name("openai:gpt-4o-mini").then_reply("Hi"))
//!     .config(AgentConfig::default().with_name("greeter").with_capture_content(true))
//!     .build()?;
//! // Each run is now an `invoke_agent greeter` span with a `chat gpt-4o-mini` child per request.
//! # Ok::<(), harnessx::AgentError>(())
//! ```
//!
//! With feature `otel`, `init_otlp(endpoint)` installs a global subscriber that exports every
//! span over OTLP/HTTP (protobuf) to a collector and returns a guard that flushes on drop, and
//! `otlp_layer(endpoint)` gives the same exporter as a layer for a subscriber of your own.

mod content;
pub(crate) mod spans;

/// The `tracing` target of every span this crate reports, for filtering
/// (`harnessx::genai=info`).
pub const TARGET: &str = "harnessx::genai";
