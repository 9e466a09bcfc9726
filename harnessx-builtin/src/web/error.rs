//! Why a fetch failed, worded for the model: what went wrong and what to do next.

use harnessx::ToolError;
use reqwest::Url;

use super::guard::Refused;

/// A failed `fetch_url`. Its `Display` is the text the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The text is not an absolute URL.
    #[error("`{url}` is not a valid URL ({reason}); pass an absolute http:// or https:// URL")]
    InvalidUrl {
        /// The text given.
        url: String,
        /// What the URL parser said.
        reason: String,
    },
    /// The URL's scheme is not http or https.
    #[error(
        "fetch_url supports only http:// and https:// URLs, not `{scheme}:` ({url}); pass a web URL"
    )]
    UnsupportedScheme {
        /// The URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A redirect pointed to a scheme other than http or https.
    #[error(
        "{from} redirected to {to}, which is not an http:// or https:// URL; fetch_url does not follow it"
    )]
    RedirectScheme {
        /// The redirecting URL.
        from: String,
        /// Where it pointed.
        to: String,
    },
    /// The address policy refused the host (before connecting, or at a redirect).
    #[error(
        "fetch_url refused {url}{}: {reason}; fetch a public URL instead",
        redirect_from.as_deref().map(|f| format!(" (a redirect from {f})")).unwrap_or_default()
    )]
    Refused {
        /// The refused URL.
        url: String,
        /// The URL that redirected to it, when it came from a redirect.
        redirect_from: Option<String>,
        /// Which address was refused and why ("localhost resolves to 127.0.0.1, a loopback
        /// address, and this tool may only reach public internet addresses").
        reason: String,
    },
    /// More redirects than the limit.
    #[error(
        "{url} was reached after {limit} redirects, the limit; the site redirects in a loop or too often, so fetch the final page's URL directly"
    )]
    TooManyRedirects {
        /// The last URL reached.
        url: String,
        /// The limit.
        limit: usize,
    },
    /// A redirect status without a usable `Location` header.
    #[error("{url} answered HTTP {status} (a redirect) without a Location header; try another URL")]
    RedirectWithoutLocation {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
    },
    /// The server answered with an error status.
    #[error("{url} answered HTTP {status}{}", excerpt_suffix(excerpt, *status))]
    Status {
        /// The URL (after redirects).
        url: String,
        /// The status code.
        status: u16,
        /// The start of the error page's text.
        excerpt: String,
    },
    /// The content is not text.
    #[error(
        "{url} is binary content ({content_type}{}), and fetch_url returns text only; look for an HTML or plain-text version of it",
        bytes.map(|b| format!(", {b} bytes")).unwrap_or_default()
    )]
    Binary {
        /// The URL (after redirects).
        url: String,
        /// The media type.
        content_type: String,
        /// Its size, when known.
        bytes: Option<u64>,
    },
    /// The body is compressed in a way the tool does not decode.
    #[error(
        "{url} sent its content compressed as `{encoding}`, which fetch_url cannot decode (it decodes gzip and deflate); fetch another URL or a plain version of the page"
    )]
    UnsupportedEncoding {
        /// The URL (after redirects).
        url: String,
        /// The `Content-Encoding` the server declared.
        encoding: String,
    },
    /// The fetch did not finish within the time limit.
    #[error(
        "fetching {url} did not finish within {} s; the site is slow or unreachable, so try again later or another URL",
        limit.as_secs_f64()
    )]
    Timeout {
        /// The URL.
        url: String,
        /// The time limit.
        limit: std::time::Duration,
    },
    /// The connection or the request failed.
    #[error("fetching {url} failed: {reason}; check the URL, or try again later")]
    Request {
        /// The URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// `start_index` lies past the end of the text.
    #[error(
        "start_index {start_index} is past the end of the text of {url}, which has {total_chars} characters; call fetch_url with a smaller start_index"
    )]
    StartIndexPastEnd {
        /// The URL.
        url: String,
        /// The offset asked for.
        start_index: usize,
        /// The length of the text.
        total_chars: usize,
    },
    /// The HTTP client could not be built (TLS setup failed).
    #[error("the HTTP client for fetch_url could not be built: {reason}")]
    Client {
        /// What failed.
        reason: String,
    },
}

fn excerpt_suffix(excerpt: &str, status: u16) -> String {
    let advice = match status {
        404 | 410 => "the page does not exist; check the URL",
        401 | 403 => "the page needs access this tool does not have; try a public page",
        429 => "the site is rate limiting; wait before trying again",
        500..=599 => "the server failed; try again later",
        _ => "check the URL",
    };
    if excerpt.is_empty() {
        format!("; {advice}")
    } else {
        format!("; {advice}. The page says: {excerpt}")
    }
}

impl FetchError {
    pub(crate) fn refused(url: &Url, from: Option<&Url>, refused: Refused) -> Self {
        Self::Refused {
            url: url.to_string(),
            redirect_from: from.map(Url::to_string),
            reason: refused.to_string(),
        }
    }

    /// Whether trying again later may succeed (timeouts, network failures, 429 and 5xx).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Timeout { .. } | Self::Request { .. } => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }
}

impl From<FetchError> for ToolError {
    fn from(e: FetchError) -> Self {
        if e.is_transient() {
            ToolError::transient(e.to_string())
        } else {
            ToolError::failed(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> FetchError {
        FetchError::Status {
            url: "https://x.test/".into(),
            status,
            excerpt: String::new(),
        }
    }

    #[test]
    fn server_trouble_is_transient_and_client_mistakes_are_not() {
        assert!(status(503).is_transient());
        assert!(status(429).is_transient());
        assert!(!status(404).is_transient());
        assert!(ToolError::from(status(502)).is_transient());
        assert!(!ToolError::from(status(403)).is_transient());
        assert_eq!(
            status(403).to_string(),
            "https://x.test/ answered HTTP 403; the page needs access this tool does not have; try a public page"
        );
        assert_eq!(
            status(429).to_string(),
            "https://x.test/ answered HTTP 429; the site is rate limiting; wait before trying again"
        );
        assert_eq!(
            status(500).to_string(),
            "https://x.test/ answered HTTP 500; the server failed; try again later"
        );
        let client = FetchError::Client {
            reason: "no TLS roots".into(),
        };
        assert_eq!(
            client.to_string(),
            "the HTTP client for fetch_url could not be built: no TLS roots"
        );
        let encoding = FetchError::UnsupportedEncoding {
            url: "https://x.test/".into(),
            encoding: "br".into(),
        };
        assert_eq!(
            encoding.to_string(),
            "https://x.test/ sent its content compressed as `br`, which fetch_url cannot decode (it decodes gzip and deflate); fetch another URL or a plain version of the page"
        );
        assert!(!encoding.is_transient());
    }
}
