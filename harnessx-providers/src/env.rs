//! Choosing a provider from the environment: `HARNESSX_MODEL` plus each provider's key and base
//! URL variables.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use super::anthropic::AnthropicModel;
use super::http::WireFormat;
use super::openai::OpenAiModel;
use super::{Model, ModelError};

/// A model provider harnessx can build from a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions and compatible servers ([`OpenAiModel`]).
    OpenAi,
    /// Anthropic Messages ([`AnthropicModel`]).
    Anthropic,
}

impl Provider {
    /// The spec prefix: `openai` or `anthropic`.
    ///
    /// ```
    /// use harnessx::model::Provider;
    /// assert_eq!(Provider::Anthropic.as_str(), "anthropic");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    /// The environment variable holding the provider's API key: `OPENAI_API_KEY` or
    /// `ANTHROPIC_API_KEY`.
    ///
    /// ```
    /// use harnessx::model::Provider;
    /// assert_eq!(Provider::OpenAi.api_key_var(), "OPENAI_API_KEY");
    /// ```
    pub fn api_key_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_API_KEY",
            Self::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The environment variable holding another base URL for the provider (a compatible
    /// server, a proxy): `OPENAI_BASE_URL` or `ANTHROPIC_BASE_URL`.
    ///
    /// ```
    /// use harnessx::model::Provider;
    /// assert_eq!(Provider::Anthropic.base_url_var(), "ANTHROPIC_BASE_URL");
    /// ```
    pub fn base_url_var(self) -> &'static str {
        match self {
            Self::OpenAi => "OPENAI_BASE_URL",
            Self::Anthropic => "ANTHROPIC_BASE_URL",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed `provider:model` spec, such as `openai:gpt-4o-mini`.
///
/// ```
/// use harnessx::model::{ModelSpec, Provider};
/// let spec: ModelSpec = "anthropic:claude-sonnet-4-5".parse()?;
/// assert_eq!(spec.provider, Provider::Anthropic);
/// assert_eq!(spec.model, "claude-sonnet-4-5");
/// assert_eq!(spec.to_string(), "anthropic:claude-sonnet-4-5");
/// # Ok::<(), harnessx::ModelError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelSpec {
    /// The provider.
    pub provider: Provider,
    /// The provider's model name (everything after the first `:`, so `qwen3:8b` survives).
    pub model: String,
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

impl FromStr for ModelSpec {
    type Err = ModelError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_model_spec(s)
    }
}

const SPEC_EXAMPLE: &str = "write `provider:model`, for example `openai:gpt-4o-mini` or \
                            `anthropic:claude-sonnet-4-5`";

/// Parses `provider:model`. The provider is `openai` (also for vLLM, Ollama, llama.cpp server, LM
/// Studio, OpenRouter: set the base URL) or `anthropic`, in any letter case; the model name is
/// everything after the first `:`.
///
/// ```
/// use harnessx::model::{parse_model_spec, Provider};
/// let spec = parse_model_spec("openai:qwen3:8b")?;
/// assert_eq!((spec.provider, spec.model.as_str()), (Provider::OpenAi, "qwen3:8b"));
/// assert!(parse_model_spec("gpt-4o").is_err());
/// # Ok::<(), harnessx::ModelError>(())
/// ```
pub fn parse_model_spec(spec: &str) -> Result<ModelSpec, ModelError> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(ModelError::Other(format!(
            "the model spec is empty: {SPEC_EXAMPLE}"
        )));
    }
    let Some((provider, model)) = spec.split_once(':') else {
        return Err(ModelError::Other(format!(
            "the model spec `{spec}` names no provider: {SPEC_EXAMPLE}"
        )));
    };
    let provider = match provider.trim().to_ascii_lowercase().as_str() {
        "openai" => Provider::OpenAi,
        "anthropic" => Provider::Anthropic,
        other => {
            return Err(ModelError::Other(format!(
                "the model spec `{spec}` names the unknown provider `{other}`: use `openai` (also for \
                 OpenAI-compatible servers such as vLLM, Ollama, llama.cpp, LM Studio and \
                 OpenRouter, with OPENAI_BASE_URL) or `anthropic`"
            )));
        }
    };
    let model = model.trim();
    if model.is_empty() {
        return Err(ModelError::Other(format!(
            "the model spec `{spec}` has no model name after `{provider}:`: {SPEC_EXAMPLE}"
        )));
    }
    Ok(ModelSpec {
        provider,
        model: model.to_owned(),
    })
}

/// The model `HARNESSX_MODEL` names, built from the process environment; `Ok(None)` when
/// `HARNESSX_MODEL` is unset or empty. See [`from_env_with`] for the variables read.
///
/// ```no_run
/// # fn main() -> Result<(), harnessx::ModelError> {
/// // HARNESSX_MODEL=openai:gpt-4o-mini OPENAI_API_KEY=sk-...
/// match harnessx::model::from_env()? {
///     Some(model) => println!("using {}", model.name()),
///     None => println!("HARNESSX_MODEL is not set; using the scripted model"),
/// }
/// # Ok(()) }
/// ```
pub fn from_env() -> Result<Option<Arc<dyn Model>>, ModelError> {
    from_env_with(|name| std::env::var(name).ok())
}

/// [`from_env`] with the variables looked up through `var` (for tests and configuration files).
///
/// - `HARNESSX_MODEL`: a [`ModelSpec`] such as `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`.
/// - `openai`: `OPENAI_API_KEY`, `OPENAI_BASE_URL`. A base URL without a key is fine (local
///   OpenAI-compatible servers); a key is needed otherwise.
/// - `anthropic`: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`. Likewise, a base URL (a gateway doing
///   its own authentication) may go without a key.
///
/// Empty values count as unset. Errors name the variable and say what to set.
///
/// ```
/// use std::collections::HashMap;
/// use harnessx::model::from_env_with;
///
/// let vars = HashMap::from([
///     ("HARNESSX_MODEL", "openai:llama3.2"),
///     ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
/// ]);
/// let model = from_env_with(|name| vars.get(name).map(|v| v.to_string()))?.unwrap();
/// assert_eq!(model.name(), "openai:llama3.2");
///
/// let err = from_env_with(|name| (name == "HARNESSX_MODEL").then(|| "gpt-4o".to_owned()))
///     .err()
///     .unwrap();
/// assert!(err.to_string().starts_with("HARNESSX_MODEL: "));
/// # Ok::<(), harnessx::ModelError>(())
/// ```
pub fn from_env_with(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<Arc<dyn Model>>, ModelError> {
    let get = |name: &str| {
        var(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let Some(raw) = get("HARNESSX_MODEL") else {
        return Ok(None);
    };
    let spec =
        parse_model_spec(&raw).map_err(|e| ModelError::Other(format!("HARNESSX_MODEL: {e}")))?;
    let (key_var, url_var) = (spec.provider.api_key_var(), spec.provider.base_url_var());
    let key = get(key_var);
    let base_url = get(url_var);
    if let Some(url) = &base_url {
        check_base_url(url_var, url)?;
    }
    if key.is_none() && base_url.is_none() {
        return Err(ModelError::Other(format!(
            "HARNESSX_MODEL is `{spec}`, but {key_var} is not set: set {key_var} to your API key, \
             or set {url_var} to a server that needs no key"
        )));
    }
    let model = match spec.provider {
        Provider::OpenAi => configured(OpenAiModel::new(spec.model), key, base_url),
        Provider::Anthropic => configured(AnthropicModel::new(spec.model), key, base_url),
    };
    Ok(Some(model))
}

/// `model` with exactly the key (none included) and base URL the environment gave.
fn configured<W: WireFormat + Model>(
    mut model: W,
    key: Option<String>,
    base_url: Option<String>,
) -> Arc<dyn Model> {
    let endpoint = model.endpoint_mut();
    endpoint.api_key = key;
    if let Some(url) = base_url {
        endpoint.base_url = url;
    }
    Arc::new(model)
}

fn check_base_url(var: &str, value: &str) -> Result<(), ModelError> {
    let bad = |why: String| {
        ModelError::Other(format!(
            "{var} is `{value}`, which is not a usable base URL ({why}); set it to an http(s) URL \
             such as `http://localhost:11434/v1`"
        ))
    };
    let url = url::Url::parse(value).map_err(|e| bad(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!("the scheme is `{}`", url.scheme())));
    }
    Ok(())
}
