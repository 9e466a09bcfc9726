//! # harnessx — the tool layer of LLM agents
//!
//! harnessx turns ordinary Rust functions into schema-bearing tools, exposes them to a model,
//! and executes the calls the model makes: with name repair, argument validation, permissions,
//! timeouts, retries, deduplication, concurrency and errors the model can act on.
//!
//! ## Tools
//! A tool is a [`ToolDefinition`]: a name, a description, an input schema, an execution policy
//! and a [`ToolHandler`]. The [`#[tool]`](macro@tool) attribute builds one from a function and its doc comment:
//!
//! ```
//! use harnessx::{tool, ToolRegistry};
//!
//! /// Multiply two numbers.
//! ///
//! /// Args:
//! ///     a: First number.
//! ///     b: Second number.
//! #[tool(permission = "allow", replay_policy = "safe")]
//! fn calculate(a: i64, b: i64) -> i64 {
//!     a * b
//! }
//!
//! assert_eq!(calculate(2, 3), 6); // still an ordinary function
//! let registry = ToolRegistry::new();
//! let def = registry.register_tool(calculate)?;
//! assert_eq!(def.description, "Multiply two numbers.");
//! # Ok::<(), harnessx::RegistryError>(())
//! ```
//!
//! Without the macro, any `async fn(args) -> Result<T, E>` (or sync `fn`) is a handler, with
//! `args` any `Deserialize` type, `T: Serialize` and `E: Display` ([`IntoToolHandler`]); give it
//! to [`ToolDefinition::new`] or register it with an explicit schema through
//! [`ToolRegistry::register_with_schema`]. [`handler_fn`] takes a closure over the raw JSON.
//!
//! ```
//! use harnessx::prelude::*; // the macro, registry, agent, models and the extension traits
//! use serde_json::json;
//!
//! async fn label(args: serde_json::Value) -> Result<String, ToolError> {
//!     Ok(args["value"].as_str().unwrap_or_default().to_uppercase())
//! }
//!
//! let registry = ToolRegistry::new();
//! let schema = json!({"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]});
//! registry.register_with_schema("label", "Uppercase a label.", schema, label, ToolOptions::new().timeout_seconds(10))?;
//! # Ok::<(), harnessx::RegistryError>(())
//! ```
//!
//! Time limits are seconds, whole or fractional, or a [`Duration`](std::time::Duration),
//! everywhere ([`IntoTimeout`]): `#[tool(timeout_seconds = 120)]`,
//! `ToolOptions::new().timeout_seconds(2.5)`, `ToolRegistry::builder().default_timeout_seconds(60)`,
//! `ToolPolicy::new().with_default_timeout_seconds(60)`.
//!
//! ## Registry
//! [`ToolRegistry`] holds the tools under their names, rejects duplicates unless replaced,
//! compiles every schema once, and carries the registry-wide [`ToolPolicy`] (default timeout,
//! deduplication, retry, the 64 KB result cap). [`schema::export`] turns its provider-neutral
//! [`ToolParams`] into OpenAI, Anthropic or Gemini tool declarations.
//!
//! ## Permissions
//! [`PermissionManager`] decides whether a call may run: an override for the tool name beats the
//! tool's own [`PermissionLevel`], which beats the manager's default. ASK needs an
//! [`ApprovalCallback`]; without one it is denied.
//!
//! ## Execution
//! [`ToolRegistry::execute`] runs one [`ToolCall`] and [`ToolRegistry::execute_batch`] a model
//! turn's calls; a [`ToolRun`] executes batch after batch with shared deduplication, concurrent
//! tools together and serial tools in order on a shared [`SerialLane`]. Every
//! failure the model can fix comes back as an error [`ToolResult`]; only setup mistakes are
//! Rust errors ([`RegistryError`]).
//!
//! ## Speed
//! A call's cost stays small and flat as tools, calls and turns grow: a direct `execute` of an
//! allowed tool costs about what rmcp's tool router does, a synchronous tool never stalls an
//! async worker, and a turn of a 500-turn run costs what a turn of a 20-turn run does. The agent
//! loop hands each turn the conversation as shared [`Messages`] (read them as a slice; build them
//! from a `Vec<Message>` with `.into()`). How the engine keeps it so is private and explained in
//! [`guide::performance`]; BENCHMARKS.md has the figures.
//!
//! ## Agent
//! [`Agent::builder`] assembles a [`Model`], instructions, tools (or an existing registry), an
//! [`AgentConfig`] and a permission manager. [`Agent::run`] loops model → tool batch → model
//! until the model answers; [`Agent::run_stream`] reports the same run as [`AgentEvent`]s.
//! Planning ([`planning`]: `write_todos`/`read_todos`) is on by default; a [`SubAgent`] hands a
//! task to a specialist. [`TestModel`] and [`FunctionModel`] script a model for tests and
//! offline use, building turns with [`ModelResponse::text`] and [`ModelResponse::tool_calls`]:
//!
//! ```
//! use harnessx::{Agent, TestModel};
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
//! let agent = Agent::builder().model(TestModel::new().then_reply("Hello!")).build()?;
//! assert_eq!(agent.run("Hi").await?.output, "Hello!");
//! # Ok(()) }
//! ```
//!
//! ## Models
//! [`model::OpenAiModel`] speaks the OpenAI Chat Completions wire format (and so vLLM, Ollama,
//! llama.cpp server, LM Studio and OpenRouter through a base URL); [`model::AnthropicModel`] the
//! Anthropic Messages API. Both stream server-sent events, assemble tool-call arguments from
//! fragments and retry 429/5xx under a [`model::RetryPolicy`]. [`model::from_env`] picks one from
//! `HARNESSX_MODEL` (`openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`) and the provider's key
//! or base URL. (Feature `providers`.)
//!
//! Messages carry more than text: a user message may hold [`model::Image`]s, and an assistant
//! message keeps the [`model::Thinking`] blocks of Anthropic extended thinking, which go back
//! unchanged (signatures included) in the next request. The OpenAI provider declares tools in
//! strict mode when every schema allows it ([`ModelSettings::strict_tools`] switches it per
//! agent), and the Anthropic provider places prompt-cache breakpoints that stay put between the
//! requests of a run.
//!
//! ## Models: retries and fallback
//! A model's [`model::RetryPolicy`] (separate from the tools' [`ToolRetry`]) retries rate
//! limits, server failures, timeouts and broken connections with exponential backoff and jitter,
//! waiting as long as the provider's `Retry-After` asks (seconds or an HTTP date), within a cap
//! on attempts, on each wait and on all waits together. [`ModelError::kind`] classifies every
//! failure as a [`model::ModelErrorKind`] and [`ModelError::status`] gives its HTTP status; a
//! request too long for the context window is its own kind,
//! [`ContextOverflow`](model::ModelErrorKind::ContextOverflow). A [`model::FallbackModel`] asks
//! the next model when one fails with a kind it names, and a streamed run reports each move as
//! [`AgentEvent::ModelFallback`]. Every call of an HTTP provider has an overall deadline
//! (`with_deadline`, [`model::DEFAULT_DEADLINE`] unless set), so even an answer that trickles in
//! forever ends, with [`ModelError::Timeout`]:
//!
//! ```
//! use futures::StreamExt;
//! use harnessx::model::{FallbackModel, FunctionModel, ModelErrorKind, TestModel};
//! use harnessx::{Agent, AgentEvent, ModelError};
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::AgentError> {
//! let limited = FunctionModel::try_new(|_, _| Err(ModelError::RateLimited {
//!     provider: "openai".into(), retry_after: None, message: "slow down".into(),
//! }));
//! let model = FallbackModel::new(limited).with_fallback(TestModel::new().then_reply("Hello!"));
//! let agent = Agent::builder().model(model).build()?;
//! let mut events = agent.run_stream("Hi");
//! let first = events.next().await.unwrap()?;
//! assert!(matches!(first, AgentEvent::ModelFallback { kind: ModelErrorKind::RateLimited, .. }));
//! # Ok(()) }
//! ```
//!
//! ## Hooks and usage budgets
//! A [`hooks::Hook`] is middleware around each model request and each tool call of an agent's
//! runs ([`AgentBuilder::hook`]; [`ToolRun::with_hook`] for calls executed directly). Before a
//! request a hook may change it or answer without the model; after, change the response; on a
//! model error, answer in its place. Before a call it may change the arguments, deny the call
//! with a reason the model reads, or answer without running the tool; after, change the result
//! (`after_tool` for a success, `on_tool_error` for an error). Any stage may stop the run
//! ([`AgentError::HookStopped`]). The engine's checks stay in force: changed arguments are
//! validated and permission-checked as changed, and the result cap applies after the hooks.
//! [`hooks::UsageLimits`] is a built-in hook that ends a run past a limit on tool calls, model
//! requests or tokens with [`AgentError::UsageLimitExceeded`]; durable runs count what their
//! journal recorded:
//!
//! ```
//! use harnessx::hooks::{UsageLimit, UsageLimits};
//! use harnessx::{Agent, AgentError, ModelResponse, ToolCall, Usage};
//! use harnessx::model::TestModel;
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), AgentError> {
//! let turn = ModelResponse::tool_calls([ToolCall::new("c1", "read_todos", "{}")])
//!     .with_usage(Usage::new(900, 200));
//! let agent = Agent::builder()
//!     .model(TestModel::from_responses([turn.clone(), turn]))
//!     .usage_limits(UsageLimits { total_tokens: Some(2_000), ..UsageLimits::default() })
//!     .build()?;
//! let Err(AgentError::UsageLimitExceeded { limit, max, reached }) = agent.run("Plan").await else {
//!     panic!("the budget should stop the run");
//! };
//! assert_eq!((limit, max, reached), (UsageLimit::TotalTokens, 2_000, 2_200));
//! # Ok(()) }
//! ```
//!
//! ## Capabilities: MCP, knowledge, skills
//! An integration hands the agent builder a [`Capability`](agent::Capability) — its tools, a
//! few lines for the system prompt, and setup that waits for something — with
//! [`AgentBuilder::capability`]: an `mcp::McpServer` connects before the first model request
//! and registers its tools as `mcp_<server>_<tool>`, asking before tools the server does not
//! mark read-only (feature `mcp`; OAuth 2.1 sign-in with `mcp-oauth`); a
//! `knowledge::SqliteKnowledgeBase` or OKF bundle adds the read-only `knowledge_search` (or
//! `search_concepts`, `read_concept`, `get_neighbors`) tools (features `knowledge`, `okf`);
//! `skills::Skills` adds the `Skill` tool (feature `skills`). `mcp_server` serves any registry
//! as an MCP server (feature `mcp-server`). A capability of your own implements the trait.
//! [`guide::capabilities`], [`guide::mcp`] and [`guide::knowledge_and_skills`] say more.
//!
//! ```
//! use std::borrow::Cow;
//! use harnessx::agent::Capability;
//! use harnessx::{Agent, TestModel};
//!
//! /// Tells the agent the house rules; registers no tool.
//! struct HouseRules;
//!
//! impl Capability for HouseRules {
//!     fn name(&self) -> Cow<'_, str> {
//!         "house rules".into()
//!     }
//!     fn instructions(&self) -> Option<Cow<'_, str>> {
//!         Some("Never delete a file without asking.".into())
//!     }
//! }
//!
//! let agent = Agent::builder().model(TestModel::new()).capability(HouseRules).build()?;
//! assert_eq!(agent.instructions(), Some("Never delete a file without asking."));
//! # Ok::<(), harnessx::AgentError>(())
//! ```
//!
//! ## Features
//! Only `providers` (the HTTP model providers) is on by default; the integrations are opt-in:
//! `mcp` (with `mcp-oauth` and `mcp-server`), `knowledge`, `okf` (which turns `knowledge` on),
//! `skills` and `otel`. The documentation marks each item with the feature that brings it.
//!
//! ```toml
//! harnessx = { version = "0.1", features = ["mcp", "knowledge", "okf", "skills"] }
//! ```
//!
//! ## Observability
//! Every run is an OpenTelemetry GenAI span tree: an `invoke_agent {name}` span, a `chat {model}`
//! child per model request (provider, model, token usage, finish reason) and an
//! `execute_tool {tool}` child per tool call (call id, error type on failure), reported through
//! [`tracing`](https://docs.rs/tracing) so that any subscriber sees them; prompts, answers and
//! tool arguments are recorded only with [`AgentConfig::capture_content`]. Feature `otel` exports
//! them over OTLP/HTTP: `telemetry::init_otlp("http://localhost:4318")` installs the exporter
//! and returns a guard that flushes on drop. The span and attribute list is in [`telemetry`].
//!
//! ## Sandboxes
//! [`Sandbox`] is the engine the bash tool runs commands through; the file tools work inside a
//! sandbox that owns its filesystem (see `harnessx-builtin`).
//!
//! ## The crates behind this one
//! `harnessx` is a facade: depend on it alone and turn on the features you use. The core
//! (`harnessx-core`: tools, registry, engine, journal seam, model trait, agent loop) is
//! re-exported whole under the same paths; each integration is a crate of its own, re-exported
//! under a feature, and hands the agent builder a [`Capability`](agent::Capability):
//!
//! | Feature | Crate | Here as |
//! |---|---|---|
//! | `providers` (default) | `harnessx-providers` | [`model::OpenAiModel`], [`model::AnthropicModel`], [`model::from_env`] |
//! | `mcp`, `mcp-oauth` | `harnessx-mcp` | `mcp` |
//! | `mcp-server` | `harnessx-mcp` (feature `server`) | `mcp_server` |
//! | `knowledge`, `okf` | `harnessx-knowledge` | `knowledge` |
//! | `skills` | `harnessx-skills` | `skills` |
//! | `otel` | `harnessx-otel` | `telemetry::init_otlp` |
//!
//! The built-in bundles (`harnessx-builtin`), durable runs (`harnessx-runtime`) and the server
//! (`harnessx-server`) build on this crate.

#![cfg_attr(docsrs, feature(doc_cfg))]

// The core (tools, registry, engine, journal seam, model trait, agent loop) under its own paths;
// the modules defined below extend `model`, `telemetry` and `prelude` with the integrations.
pub use harnessx_core::*;

/// Talking to a model: the provider-neutral request/response types, the [`Model`] trait, retry
/// and fallback around any model, scripted models for tests, and (feature `providers`, on by
/// default) the HTTP providers: [`OpenAiModel`](model::OpenAiModel),
/// [`AnthropicModel`](model::AnthropicModel) and [`from_env`](model::from_env).
pub mod model {
    pub use harnessx_core::model::*;
    #[cfg(feature = "providers")]
    #[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
    pub use harnessx_providers::*;
}

/// Observability: the OpenTelemetry GenAI spans of every run, model request and tool call, and
/// (feature `otel`) their export over OTLP/HTTP.
pub mod telemetry {
    pub use harnessx_core::telemetry::*;
    #[cfg(feature = "otel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
    pub use harnessx_otel::*;
}

/// MCP servers as tool sources (stdio and streamable HTTP, with OAuth 2.1 sign-in under
/// `mcp-oauth`): the `harnessx-mcp` crate.
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub use harnessx_mcp as mcp;

/// Any [`ToolRegistry`] served as an MCP server over stdio and streamable HTTP.
#[cfg(feature = "mcp-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-server")))]
pub use harnessx_mcp::server as mcp_server;

/// Knowledge bases behind `knowledge_search`, and (feature `okf`) OKF bundles: the
/// `harnessx-knowledge` crate.
#[cfg(feature = "knowledge")]
#[cfg_attr(docsrs, doc(cfg(feature = "knowledge")))]
pub use harnessx_knowledge as knowledge;

/// Agent Skills folders behind the `Skill` tool: the `harnessx-skills` crate.
#[cfg(feature = "skills")]
#[cfg_attr(docsrs, doc(cfg(feature = "skills")))]
pub use harnessx_skills as skills;

/// The guide: the pages of this crate's `docs/` folder (`harnessx/docs/` in the repository),
/// one module per concern (each page opens with what it covers). Their Rust examples run as
/// doctests.
///
/// - [`tools`](guide::tools): Tools: `#[tool]`, schemas, handlers without the macro, registering, time limits.
/// - [`execution`](guide::execution): How a call is executed: names, arguments, permissions, limits, retries, scheduling, results.
/// - [`hooks`](guide::hooks): Hooks around model requests and tool calls, and usage budgets.
/// - [`models`](guide::models): Model providers, retries, deadlines and fallback.
/// - [`capabilities`](guide::capabilities): Capabilities: what an integration hands the agent builder.
/// - [`mcp`](guide::mcp): MCP servers as tool sources, sign-in, and serving tools over MCP.
/// - [`knowledge_and_skills`](guide::knowledge_and_skills): Knowledge bases, OKF bundles and Agent Skills.
/// - [`builtin`](guide::builtin): The built-in tool bundles.
/// - [`observability`](guide::observability): The GenAI spans and their export.
/// - [`durable_runs`](guide::durable_runs): Durable runs: the journal, pauses for people, recovery, stores.
/// - [`server`](guide::server): `harnessx serve`: the API, the console and the CLI.
/// - [`production`](guide::production): Running `harnessx serve` in production: probes, metrics, logs.
/// - [`features`](guide::features): The cargo features and the crates behind them.
/// - [`threat_model`](guide::threat_model): What the library, the server, the CLI and the MCP server promise against hostile input.
/// - [`performance`](guide::performance): How the engine stays fast (for people changing it).
pub mod guide {
    #[doc = include_str!("../docs/tools.md")]
    pub mod tools {}

    #[doc = include_str!("../docs/execution.md")]
    pub mod execution {}

    #[doc = include_str!("../docs/hooks.md")]
    pub mod hooks {}

    #[doc = include_str!("../docs/models.md")]
    pub mod models {}

    #[doc = include_str!("../docs/capabilities.md")]
    pub mod capabilities {}

    #[doc = include_str!("../docs/mcp.md")]
    pub mod mcp {}

    #[doc = include_str!("../docs/knowledge-and-skills.md")]
    pub mod knowledge_and_skills {}

    #[doc = include_str!("../docs/builtin.md")]
    pub mod builtin {}

    #[doc = include_str!("../docs/observability.md")]
    pub mod observability {}

    #[doc = include_str!("../docs/durable-runs.md")]
    pub mod durable_runs {}

    #[doc = include_str!("../docs/server.md")]
    pub mod server {}

    #[doc = include_str!("../docs/production.md")]
    pub mod production {}

    #[doc = include_str!("../docs/features.md")]
    pub mod features {}

    #[doc = include_str!("../docs/threat-model.md")]
    pub mod threat_model {}

    #[doc = include_str!("../docs/internals/performance.md")]
    pub mod performance {}
}

/// The names most programs use, for a glob import: `use harnessx::prelude::*;`.
pub mod prelude {
    pub use harnessx_core::prelude::*;
    #[cfg(feature = "knowledge")]
    #[cfg_attr(docsrs, doc(cfg(feature = "knowledge")))]
    pub use harnessx_knowledge::{Document, KnowledgeBase, SqliteKnowledgeBase};
    #[cfg(feature = "skills")]
    #[cfg_attr(docsrs, doc(cfg(feature = "skills")))]
    pub use harnessx_skills::Skills;
}
