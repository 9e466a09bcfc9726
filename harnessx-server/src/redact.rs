//! Secrets kept out of what the server shows and logs: credentials in URLs, and the text of a
//! configuration line that may hold a key.

use std::borrow::Cow;

/// `text` with the credentials of every `http://` or `https://` URL in it hidden: the user and
/// password before `@`, and every query parameter's value (tokens travel under many names). A
/// URL ends at white space, a quote, a bracket or a backslash, so a URL quoted inside a JSON
/// string keeps its escapes.
///
/// ```
/// use harnessx_server::redact::urls;
/// assert_eq!(
///     urls("cannot reach `https://bot:s3cret@crm.example/mcp?token=abc&v=2`: refused"),
///     "cannot reach `https://redacted@crm.example/mcp?token=redacted&v=redacted`: refused"
/// );
/// assert_eq!(urls("no address here"), "no address here");
/// assert_eq!(
///     urls(r#"{"message":"url: \"http://h/mcp?token=abc\""}"#),
///     r#"{"message":"url: \"http://h/mcp?token=redacted\""}"#
/// );
/// ```
pub fn urls(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_scheme(rest) {
        out.push_str(&rest[..at]);
        let end = rest[at..]
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '<' | '>' | ')' | '\\')
            })
            .map_or(rest.len(), |n| at + n);
        out.push_str(&redact_url(&rest[at..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A database URL or libpq `key=value` string with its password removed (the user name, host,
/// database and options stay: they are what a person checks at start-up).
///
/// ```
/// use harnessx_server::redact::database_url;
/// assert_eq!(
///     database_url("postgresql://hx:s3cret@db.internal:5432/hx?sslmode=verify-full"),
///     "postgresql://hx@db.internal:5432/hx?sslmode=verify-full"
/// );
/// assert_eq!(database_url("host=db user=hx password=s3cret"), "host=db user=hx password=redacted");
/// ```
pub fn database_url(text: &str) -> String {
    if text.contains("://") {
        return match url::Url::parse(text) {
            Ok(mut url) => {
                if url.password().is_some() {
                    let _ = url.set_password(None);
                }
                let pairs: Vec<(String, String)> = url
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if k == "password" {
                            "redacted".into()
                        } else {
                            v.into_owned()
                        };
                        (k.into_owned(), v)
                    })
                    .collect();
                if !pairs.is_empty() {
                    url.query_pairs_mut().clear().extend_pairs(pairs);
                }
                url.to_string()
            }
            Err(_) => text.split_once("://").map_or_else(
                || "redacted".into(),
                |(scheme, _)| format!("{scheme}://redacted"),
            ),
        };
    }
    text.split_whitespace()
        .map(|pair| match pair.split_once('=') {
            Some(("password", _)) => "password=redacted".to_owned(),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn find_scheme(text: &str) -> Option<usize> {
    match (text.find("http://"), text.find("https://")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn redact_url(raw: &str) -> String {
    let Ok(mut url) = url::Url::parse(raw) else {
        // Not a URL after all: hide everything after the scheme rather than risk a secret.
        return raw.split_once("://").map_or_else(
            || raw.to_owned(),
            |(scheme, _)| format!("{scheme}://redacted"),
        );
    };
    if url.username().is_empty() && url.password().is_none() && url.query().is_none() {
        // Nothing to hide: shown as written, not as the parser would normalise it.
        return raw.to_owned();
    }
    if !url.username().is_empty() || url.password().is_some() {
        let _ = url.set_password(None);
        let _ = url.set_username("redacted");
    }
    if url.query().is_some() {
        let names: Vec<String> = url
            .query_pairs()
            .map(|(name, _)| name.into_owned())
            .collect();
        url.query_pairs_mut()
            .clear()
            .extend_pairs(names.iter().map(|n| (n.as_str(), "redacted")));
    }
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::urls;

    #[test]
    fn credentials_are_hidden_and_the_rest_kept() {
        assert_eq!(
            urls("http://user@127.0.0.1:9/mcp and https://x.example/a?key=1"),
            "http://redacted@127.0.0.1:9/mcp and https://x.example/a?key=redacted"
        );
        assert_eq!(
            urls("see https://x.example/docs."),
            "see https://x.example/docs."
        );
        assert_eq!(urls("(http://[bad)"), "(http://redacted)");
        assert_eq!(urls("on http://127.0.0.1:8080"), "on http://127.0.0.1:8080");
    }
}
