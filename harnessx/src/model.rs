//! Talking to a model: the provider-neutral request/response types, the [`Model`] trait, and
//! the HTTP providers.
//!
//! [`OpenAiModel`] speaks the OpenAI Chat Completions wire format (and so vLLM, Ollama, llama.cpp
//! server, LM Studio and OpenRouter through a base URL), [`AnthropicModel`] the Anthropic Messages
//! API, and [`from_env`] picks one from `HARNESSX_MODEL` (feature `providers`, on by default).
//! The agent loop only ever sees the provider-neutral types. Around any model: [`RetryPolicy`]
//! (retry with backoff that honours `Retry-After`, also applied by the HTTP providers themselves,
//! under each call's overall deadline), [`RetryingModel`] (that policy for a model of your own)
//! and [`FallbackModel`] (the next model when one fails with a [`ModelErrorKind`] it names).
//!
//! The provider-neutral half is `harnessx-core`'s `model` module, re-exported here whole.

pub use harnessx_core::model::*;

#[cfg(feature = "providers")]
mod anthropic;
#[cfg(feature = "providers")]
mod deadline;
#[cfg(feature = "providers")]
mod env;
#[cfg(feature = "providers")]
mod http;
#[cfg(feature = "providers")]
mod openai;
#[cfg(feature = "providers")]
mod sse;
#[cfg(feature = "providers")]
mod turn;
#[cfg(feature = "providers")]
pub use anthropic::{ANTHROPIC_VERSION, AnthropicModel};
#[cfg(feature = "providers")]
pub use deadline::DEFAULT_DEADLINE;
#[cfg(feature = "providers")]
pub use env::{ModelSpec, Provider, from_env, from_env_with, parse_model_spec};
#[cfg(feature = "providers")]
pub use openai::OpenAiModel;
