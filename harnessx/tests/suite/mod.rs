#[cfg(feature = "providers")]
mod provider_anthropic;
#[cfg(feature = "providers")]
mod provider_common;
#[cfg(feature = "providers")]
mod provider_openai;
