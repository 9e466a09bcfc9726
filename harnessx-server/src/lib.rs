//! # harnessx-server — the runs server
//!
//! `harnessx serve` puts durable agent runs ([`harnessx_runtime`]) behind a JSON HTTP API, the
//! one the platform's runs page describes: a run pauses in `waiting_input` when its agent asks
//! the user (or needs an approval), the event stream sends a `question` (or `approval`) frame, a
//! conversation reports its `pending_question`, and an answer arrives by
//! `POST /v2/runs/{run_id}/answer` or as the conversation's next message. An approval may be
//! allowed with edited arguments, checked against the tool's schema; the run's `answered` event
//! names who decided (the API key by its last four characters). Runs and events carry their
//! times, and `GET /v2/conversations` lists the conversations by their latest run.
//!
//! ## Agents, stored and versioned
//! [`Config`] reads `harnessx.toml` — the `[server]`, the `[store]` (a SQLite file or a
//! PostgreSQL URL, which any number of server processes share), MCP `[connectors.NAME]` and
//! `[agents.NAME]` (model spec or `script`, instructions, built-in bundles with their options,
//! connectors with the tools chosen from each, knowledge bases). Every unknown key and bad value
//! is an error naming the key and its line.
//! [`agents::Agents`] keeps the agents in the database as versioned resources: the file's tables
//! seed them, `POST`/`PATCH`/`DELETE /v2/agents` change them, and every server on the database
//! sees a change at once. A run records the agent version it started with and resumes with it;
//! each version's agent is built once per server and shared by its runs.
//! `ask_user` (the platform built-in, listed by `GET /v2/tools/builtin`) is on unless turned off.
//! `GET /v2/agents/{id}/tools` ([`agent_tools`]) lists every tool an agent's model sees, by
//! source, with what a call of it does (runs, asks first, denied) and whether it only reads.
//!
//! A connector with `oauth` is signed in from the console
//! ([`connectors::oauth`]): `POST /v2/connectors/{name}/sign-in` answers the authorization
//! address, the browser comes back to `GET /v2/connectors/oauth/callback` on any server of the
//! database, and the tokens are kept sealed (`[server] secret_key`) in the database.
//!
//! ## Knowledge bases, stored
//! [`knowledge`] keeps knowledge bases as resources of kind `knowledge_base` and their documents
//! in the same database (the run store's
//! [`KnowledgeStore`](harnessx_runtime::store::KnowledgeStore): SQLite's FTS5 or PostgreSQL's
//! `tsvector`), so every server searches the same ones. `POST /v2/knowledge` creates a base,
//! `POST /v2/knowledge/{name}/documents` adds a text or Markdown document of at most 1 MiB, and
//! an agent attaches bases by name (`knowledge_bases`): with the first one its runs get the
//! read-only `knowledge_search` tool, which searches the stored documents
//! ([`knowledge::StoredKnowledgeBase`]); with none attached the tool is gone. A base attached
//! to an agent cannot be deleted.
//!
//! ## Webhooks
//! [`webhooks`] tells URLs when a run waits for a person, completes, fails or is cancelled, so a
//! person can be reached without anyone polling. Webhooks are resources of kind `webhook` (the
//! file's `[[webhooks]]` tables seed them, `/v2/webhooks` changes them); the run store writes
//! each event to an outbox in the transaction that changes the run's state, and every server's
//! sender claims due deliveries under a lease, posts them signed as the Standard Webhooks spec
//! says, and retries failures with exponential backoff: at least once, from one server at a
//! time. `GET /v2/webhooks/{id}/deliveries` is the delivery log.
//!
//! A `model = "script"` agent plays a list of turns — `{ reply = ".. {result} .." }`,
//! `{ call = "tool", arguments = {..} }`, `{ ask = "question?" }` or
//! `{ ask = { questions = [..] } }` — by its position in the run, so a question, an approval, a
//! tool call and a reply all run offline against a real server.
//!
//! ## The API
//! [`router`] assembles the routes over one [`AppState`] (handlers are thin calls into the
//! runtime); [`api::openapi`] is the OpenAPI document generated from the handlers, served at
//! `/v2/openapi.json`. Every error is an [`ApiError`]: a status and
//! `{"error": {"code", "message"}}`. Bearer API keys guard everything but the probes
//! `GET /healthz` (liveness) and `GET /readyz` (the store answers with this release's schema);
//! request bodies and open event streams are bounded. `GET /metrics` ([`metrics`]) is the
//! Prometheus text exposition, behind a key unless `[server] metrics = "open"`. Every request
//! runs in a span holding its request id (echoed as `X-Request-Id`), and `serve --log-format
//! json` writes JSON lines with secrets hidden (`harnessx/docs/production.md`).
//!
//! ```
//! use harnessx_server::{Config, ServeOptions, serve};
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let running = serve(
//!     &Config::offline(),
//!     ServeOptions::default()
//!         .bind("127.0.0.1:0".parse()?)
//!         .api_key("a-long-random-test-key")
//!         .sqlite(":memory:"),
//! )
//! .await?;
//! println!("listening on http://{}", running.addr);
//! running.stop(std::time::Duration::from_secs(1)).await;
//! # Ok(()) }
//! ```
//!
//! ## Retention
//! [`retention`] deletes finished runs once they are older than `[store] retain_days`, with
//! everything kept for them, in small batches a background task of the server runs;
//! `POST /v2/runs/prune` (and `harnessx runs prune --older-than 30d`) does it at once.
//!
//! ## The command line
//! [`cli`] is the `harnessx` binary: `serve` (with no key configured, a generated one kept with
//! the database: see [`server::GeneratedKey`]), and the clients `run AGENT "prompt"` (streams the
//! run, asks its questions at the prompt and approvals as y/n, or `--detach`), `runs`, `show`,
//! `answer`, `approve`, `recover`, `cancel` and `runs prune --older-than 30d`, against
//! `--server ADDRESS` or embedded on the database; `backup FILE` copies the SQLite store while a
//! server uses it. At start [`Config::check_start`] builds every agent's tools and looks for its
//! model's key, naming the line of what fails.
#![doc(html_no_source)]

pub mod agent_tools;
pub mod agents;
pub mod api;
pub mod cli;
pub mod client;
pub mod config;
pub mod connectors;
pub mod console;
mod error;
pub mod knowledge;
mod listen;
mod logs;
pub mod metrics;
pub mod redact;
pub mod retention;
mod script;
pub mod server;
pub mod webhooks;

pub use api::{AppState, router};
pub use config::Config;
pub use error::{ApiError, ConfigError, ServeError};
pub use server::{Running, ServeOptions, serve};

/// The configuration `harnessx serve` uses without `--config`: one offline agent on the
/// scripted model.
pub const OFFLINE_CONFIG: &str = r#"
[agents.assistant]
model = "script"
instructions = "Greet the user the way they choose."
script = [
  { ask = { questions = [{ header = "Greeting", question = "How should I greet you?", options = [{ label = "Formally" }, { label = "Casually" }] }] } },
  { reply = "Hello! You chose: {result}" },
]
"#;
