//! HTTP model providers for harnessx: the OpenAI Chat Completions and Anthropic Messages wire
//! formats, and [`from_env`] to pick one from `HARNESSX_MODEL`.
//!
//! [`OpenAiModel`] speaks the OpenAI Chat Completions wire format (and so vLLM, Ollama, llama.cpp
//! server, LM Studio and OpenRouter through a base URL), [`AnthropicModel`] the Anthropic Messages
//! API. Both implement `harnessx`'s [`Model`] trait, stream their turns (tool-call arguments
//! arrive incrementally), retry under a [`RetryPolicy`] that honours `Retry-After`, and keep each
//! call within an overall deadline ([`DEFAULT_DEADLINE`]). The agent loop only ever sees the
//! provider-neutral types of `harnessx::model`.
//!
//! Most programs reach these through the `harnessx` facade (`harnessx::model::OpenAiModel`,
//! feature `providers`, on by default).
//!
//! ```no_run
//! use harnessx_providers::{OpenAiModel, from_env};
//!
//! let model = OpenAiModel::new("gpt-4o-mini");
//! // Whatever `HARNESSX_MODEL` names ("openai:gpt-4o-mini", "anthropic:claude-sonnet-4-5", ...);
//! // `None` when it is unset.
//! let chosen = from_env()?;
//! # Ok::<(), harnessx_core::model::ModelError>(())
//! ```

// The provider-neutral types every provider speaks in (`Model`, `ModelRequest`, ...).
#[allow(
    unused_imports,
    reason = "the glob serves the modules below through `super::`"
)]
use harnessx_core::model::*;

mod anthropic;
mod deadline;
mod env;
mod http;
mod openai;
mod sse;
mod turn;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicModel};
pub use deadline::DEFAULT_DEADLINE;
pub use env::{ModelSpec, Provider, from_env, from_env_with, parse_model_spec};
pub use openai::OpenAiModel;
