//! What a webhook's settings may be, checked the same way for the API and the configuration
//! file; each error names the field and what to give instead.

use harnessx_runtime::store::WebhookEvent;

use super::sign::Secret;
use crate::config::{Config, line_of};
use crate::error::ConfigError;

/// The longest URL accepted.
pub const MAX_URL_BYTES: usize = 2048;

/// The most attempts a delivery may be given.
pub const MAX_ATTEMPTS_LIMIT: u32 = 50;

/// The longest description accepted.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// Every event name, as a message lists them.
pub(crate) fn event_names() -> String {
    WebhookEvent::ALL
        .iter()
        .map(|e| e.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks a receiver's URL: `http` or `https`, with a host, at most [`MAX_URL_BYTES`], without
/// a user name, password or `#fragment` (which are never sent).
///
/// ```
/// use harnessx_server::webhooks::check::url;
/// assert!(url("https://hooks.example.com/harnessx").is_ok());
/// assert_eq!(
///     url("ftp://hooks.example.com/x").unwrap_err(),
///     "url: the scheme `ftp` is not http or https; write it like https://hooks.example.com/harnessx"
/// );
/// ```
pub fn url(text: &str) -> Result<(), String> {
    let shape = "write it like https://hooks.example.com/harnessx";
    if text.len() > MAX_URL_BYTES {
        return Err(format!(
            "url: the URL is {} bytes long, more than {MAX_URL_BYTES}; {shape}",
            text.len()
        ));
    }
    let parsed = url::Url::parse(text).map_err(|e| {
        format!(
            "url: `{}` is not a URL ({e}); {shape}",
            crate::redact::urls(&crate::api::extract::shorten(text))
        )
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "url: the scheme `{}` is not http or https; {shape}",
            parsed.scheme()
        ));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("url: the URL names no host; {shape}"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "url: a user name or password in the URL is not supported; the receiver checks \
             the `webhook-signature` header instead"
                .into(),
        );
    }
    if parsed.fragment().is_some() {
        return Err(format!(
            "url: the URL has a `#` fragment, which is never sent; remove it; {shape}"
        ));
    }
    Ok(())
}

/// Checks a list of event names; returns them without repeats, in the documented order.
///
/// ```
/// use harnessx_server::webhooks::check::events;
/// assert_eq!(
///     events(&["run.failed", "run.waiting_input", "run.failed"]).unwrap(),
///     ["run.waiting_input", "run.failed"]
/// );
/// assert!(events(&["run.done"]).unwrap_err().contains("`run.done` is not an event"));
/// ```
pub fn events<S: AsRef<str>>(names: &[S]) -> Result<Vec<String>, String> {
    if names.is_empty() {
        return Err(format!(
            "events: the list is empty; give one or more of {}",
            event_names()
        ));
    }
    let mut chosen = Vec::new();
    for name in names {
        let name = name.as_ref();
        let event = WebhookEvent::parse(name).ok_or_else(|| {
            format!(
                "events: `{}` is not an event; give one or more of {}",
                crate::api::extract::shorten(name),
                event_names()
            )
        })?;
        chosen.push(event);
    }
    chosen.sort();
    chosen.dedup();
    Ok(chosen.into_iter().map(|e| e.as_str().to_owned()).collect())
}

/// Checks a delivery's most attempts: 1 to [`MAX_ATTEMPTS_LIMIT`].
pub fn max_attempts(n: i64) -> Result<u32, String> {
    u32::try_from(n)
        .ok()
        .filter(|n| (1..=MAX_ATTEMPTS_LIMIT).contains(n))
        .ok_or_else(|| format!("max_attempts: {n} is out of range; give 1 to {MAX_ATTEMPTS_LIMIT}"))
}

/// Checks a description: at most [`MAX_DESCRIPTION_CHARS`] characters.
pub fn description(text: &str) -> Result<(), String> {
    let n = text.chars().count();
    if n > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "description: {n} characters is more than {MAX_DESCRIPTION_CHARS}; shorten it"
        ));
    }
    Ok(())
}

/// Checks a webhook id: 1 to 64 letters, digits, `_` or `-`.
pub fn id(text: &str) -> Result<(), String> {
    crate::agents::check_name(text).map_err(|m| format!("id: {m}"))
}

/// Checks the `[server] webhook_*` keys and the `[[webhooks]]` tables of `config`, whose text
/// is `text`; an error names the line and key.
pub(crate) fn config(config: &Config, text: &str) -> Result<(), ConfigError> {
    let line = |span: std::ops::Range<usize>| line_of(text, span.start);
    let bad = |span: std::ops::Range<usize>, key: String, message: String| ConfigError::Invalid {
        line: line(span),
        key,
        message,
    };
    if let Some(n) = &config.server.webhook_max_attempts {
        max_attempts(*n.get_ref()).map_err(|m| {
            bad(
                n.span(),
                "server.webhook_max_attempts".into(),
                m.replacen("max_attempts: ", "", 1),
            )
        })?;
    }
    if let Some(t) = &config.server.webhook_first_retry_seconds
        && !(t.get_ref().is_finite() && *t.get_ref() >= 0.1 && *t.get_ref() <= 3600.0)
    {
        return Err(bad(
            t.span(),
            "server.webhook_first_retry_seconds".into(),
            format!("{} is out of range; give 0.1 to 3600 seconds", t.get_ref()),
        ));
    }
    // Each id with the line of the table that has it.
    let mut seen: Vec<(String, usize)> = Vec::new();
    for (i, table) in config.webhooks.iter().enumerate() {
        let at = line(table.span());
        let key = |k: &str| format!("webhooks[{i}].{k}");
        let w = table.get_ref();
        if let Some(given) = &w.id {
            id(given.get_ref()).map_err(|m| bad(given.span(), key("id"), without_field(&m)))?;
        }
        url(w.url.get_ref()).map_err(|m| bad(w.url.span(), key("url"), without_field(&m)))?;
        if w.events.get_ref().is_empty() {
            events::<&str>(&[])
                .map_err(|m| bad(w.events.span(), key("events"), without_field(&m)))?;
        }
        for (j, name) in w.events.get_ref().iter().enumerate() {
            events(&[name.get_ref()]).map_err(|m| {
                bad(
                    name.span(),
                    format!("webhooks[{i}].events[{j}]"),
                    without_field(&m),
                )
            })?;
        }
        match &w.secret {
            None => {
                return Err(ConfigError::Invalid {
                    line: at,
                    key: key("secret"),
                    message: "no secret is given; give the secret receivers verify signatures \
                              with: `whsec_` followed by the base64 of 24 to 64 random bytes \
                              (make one with `echo whsec_$(openssl rand -base64 32)`)"
                        .into(),
                });
            }
            Some(secret) => {
                Secret::parse(secret.get_ref())
                    .map_err(|m| bad(secret.span(), key("secret"), m))?;
            }
        }
        if let Some(d) = &w.description {
            description(d).map_err(|m| ConfigError::Invalid {
                line: at,
                key: key("description"),
                message: without_field(&m),
            })?;
        }
        if let Some(n) = &w.max_attempts {
            max_attempts(*n.get_ref())
                .map_err(|m| bad(n.span(), key("max_attempts"), without_field(&m)))?;
        }
        let made = super::config_id(w);
        if let Some((_, first)) = seen.iter().find(|(other, _)| *other == made) {
            return Err(match &w.id {
                Some(given) => bad(
                    given.span(),
                    key("id"),
                    format!(
                        "the webhook on line {first} has the id `{made}` too; give each webhook \
                         its own `id`"
                    ),
                ),
                None => bad(
                    w.url.span(),
                    key("url"),
                    format!(
                        "the webhook on line {first} has the same id, `{made}` (made from the \
                         url); give each of them an `id`"
                    ),
                ),
            });
        }
        seen.push((made, at));
    }
    Ok(())
}

/// A check's message without the field name it starts with (the key is named beside it).
fn without_field(message: &str) -> String {
    match message.split_once(": ") {
        Some((field, rest)) if !field.contains(' ') => rest.to_owned(),
        _ => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_named_with_what_to_write() {
        let shape = "write it like https://hooks.example.com/harnessx";
        assert_eq!(
            url("not a url").unwrap_err(),
            format!("url: `not a url` is not a URL (relative URL without a base); {shape}")
        );
        assert_eq!(
            url("https://user:pw@hooks.example.com/").unwrap_err(),
            "url: a user name or password in the URL is not supported; the receiver checks the \
             `webhook-signature` header instead"
        );
        assert_eq!(
            url("https://hooks.example.com/#x").unwrap_err(),
            format!("url: the URL has a `#` fragment, which is never sent; remove it; {shape}")
        );
        assert_eq!(
            url(&format!("https://h/{}", "a".repeat(3000))).unwrap_err(),
            format!("url: the URL is 3010 bytes long, more than 2048; {shape}")
        );
        assert_eq!(
            url("http://").unwrap_err(),
            format!("url: `http://redacted` is not a URL (empty host); {shape}")
        );
        assert_eq!(
            url("mailto:ops@example.com").unwrap_err(),
            format!("url: the scheme `mailto` is not http or https; {shape}")
        );
        assert!(url("http://127.0.0.1:9000/hook?team=ops").is_ok());
    }

    #[test]
    fn events_and_numbers_are_named() {
        let all = "run.waiting_input, run.completed, run.failed, run.cancelled";
        assert_eq!(
            events::<&str>(&[]).unwrap_err(),
            format!("events: the list is empty; give one or more of {all}")
        );
        assert_eq!(
            events(&["run.completed", "run.done"]).unwrap_err(),
            format!("events: `run.done` is not an event; give one or more of {all}")
        );
        assert_eq!(max_attempts(8), Ok(8));
        assert_eq!(
            max_attempts(0).unwrap_err(),
            "max_attempts: 0 is out of range; give 1 to 50"
        );
        assert_eq!(
            max_attempts(51).unwrap_err(),
            "max_attempts: 51 is out of range; give 1 to 50"
        );
        assert_eq!(
            description(&"x".repeat(501)).unwrap_err(),
            "description: 501 characters is more than 500; shorten it"
        );
        assert_eq!(
            id("a b").unwrap_err(),
            "id: `a b` is not a valid name; use 1 to 64 letters, digits, `_` or `-`"
        );
    }
}
