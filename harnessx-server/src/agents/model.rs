//! The model an agent's spec names: `script` (the scripted model), or `provider:model` built
//! with the provider's key and base URL from the server's environment. A spec that is a near
//! miss of `script` or of a provider's name is answered with the likely one.

use std::sync::Arc;

use harnessx::model::{Model, Provider, parse_model_spec};

use crate::config::ScriptTurn;

/// The providers' names, as a spec starts with them.
const PROVIDERS: [&str; 2] = ["openai", "anthropic"];

/// The closest of `candidates` to `given` (ignoring case), when it is at most two edits away.
fn near<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let given = given.trim().to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(&given, c), *c))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Checks a spec's shape: `script`, or `provider:model` with a known provider.
///
/// A near miss is named: `scirpt` gets "did you mean `script`?", `opnai:gpt-4o` gets "did you
/// mean `openai:gpt-4o`?".
pub(crate) fn check_spec(spec: &str) -> Result<(), String> {
    if spec == "script" {
        return Ok(());
    }
    let Err(e) = parse_model_spec(spec) else {
        return Ok(());
    };
    let trimmed = spec.trim();
    match trimmed.split_once(':') {
        None if near(trimmed, &["script"]).is_some() => Err(format!(
            "`{trimmed}` is not a model; did you mean `script` (the scripted model)?"
        )),
        None => Err(format!("{e}; or give `script` for the scripted model")),
        Some((provider, model)) => match near(provider, &PROVIDERS) {
            Some(known) if !PROVIDERS.contains(&provider.trim().to_ascii_lowercase().as_str()) => {
                Err(format!(
                    "the model spec `{trimmed}` names the unknown provider `{}`; did you mean \
                     `{known}:{}`?",
                    provider.trim(),
                    model.trim()
                ))
            }
            _ => Err(e.to_string()),
        },
    }
}

/// The provider's key variable and base-URL variable when `spec` names a provider and the
/// environment (`env`) sets neither: the model cannot be called.
pub(crate) fn missing_key(
    spec: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(&'static str, &'static str)> {
    let provider: Provider = parse_model_spec(spec).ok()?.provider;
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    let (key, url) = (provider.api_key_var(), provider.base_url_var());
    (!set(key) && !set(url)).then_some((key, url))
}

/// Builds the model a spec names: `script` (playing `script`) or `provider:model` (with the
/// provider's key and base URL from `env`).
pub(crate) fn model_for(
    spec: &str,
    script: &[ScriptTurn],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, String> {
    if spec == "script" {
        return Ok(Arc::new(crate::script::script_model(script)));
    }
    check_spec(spec)?;
    if let Some((key, url)) = missing_key(spec, env) {
        return Err(format!(
            "`{}` needs {key}: set it to your API key in the server's environment, or set {url} \
             to a server that needs no key",
            spec.trim()
        ));
    }
    harnessx::model::from_env_with(|name| {
        if name == "HARNESSX_MODEL" {
            Some(spec.to_owned())
        } else {
            env(name)
        }
    })
    .map_err(|e| e.to_string())?
    .ok_or_else(|| format!("the model spec `{spec}` is empty"))
}

/// The process environment, as [`model_for`] reads it.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_are_named() {
        assert_eq!(
            check_spec("scirpt").unwrap_err(),
            "`scirpt` is not a model; did you mean `script` (the scripted model)?"
        );
        assert_eq!(
            check_spec("Script").unwrap_err(),
            "`Script` is not a model; did you mean `script` (the scripted model)?"
        );
        assert_eq!(
            check_spec("opnai:gpt-4o").unwrap_err(),
            "the model spec `opnai:gpt-4o` names the unknown provider `opnai`; did you mean \
             `openai:gpt-4o`?"
        );
        assert!(
            check_spec("gpt-4o")
                .unwrap_err()
                .ends_with("; or give `script` for the scripted model"),
        );
        assert!(check_spec("openai:gpt-4o").is_ok() && check_spec("script").is_ok());
    }

    #[test]
    fn a_missing_key_names_the_variables() {
        let none = |_: &str| None;
        let e = model_for("openai:gpt-4o", &[], &none).err().unwrap();
        assert_eq!(
            e,
            "`openai:gpt-4o` needs OPENAI_API_KEY: set it to your API key in the server's \
             environment, or set OPENAI_BASE_URL to a server that needs no key"
        );
        let local = |n: &str| (n == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:1/v1".to_owned());
        assert!(model_for("openai:llama3.2", &[], &local).is_ok());
        assert_eq!(
            missing_key("anthropic:claude-sonnet-4-5", &none),
            Some(("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"))
        );
    }
}
