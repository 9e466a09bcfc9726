//! The network side of `fetch_url`: one guarded HTTP client, redirects followed by hand so every
//! hop is checked, and a body download, decompressed as it streams in, that stops at the cap.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};

use super::decode::{self, Kind};
use super::error::FetchError;
use super::guard::{GuardedResolver, Policy, find_refusal};

/// Everything the network side needs, taken from [`WebOptions`](super::WebOptions).
#[derive(Debug, Clone)]
pub(crate) struct FetchConfig {
    pub(crate) user_agent: String,
    pub(crate) max_download_bytes: u64,
    pub(crate) max_redirects: usize,
    pub(crate) timeout: Duration,
    pub(crate) policy: Policy,
    /// Keep idle connections for reuse. Off for a client shared by several tokio runtimes,
    /// whose pooled connections would die with the runtime that opened them.
    pub(crate) pool_idle: bool,
}

/// A downloaded response, before conversion to text.
#[derive(Debug)]
pub(crate) struct Download {
    /// The URL the body came from (after redirects).
    pub(crate) final_url: Url,
    pub(crate) status: StatusCode,
    /// Lowercase media type without parameters; empty when the server sent none.
    pub(crate) media: String,
    pub(crate) charset: Option<String>,
    pub(crate) kind: Kind,
    pub(crate) body: Vec<u8>,
    /// The body was longer than `max_download_bytes` and was cut there.
    pub(crate) capped: bool,
}

/// A configured, guarded HTTP client. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub(crate) struct Fetcher {
    client: reqwest::Client,
    policy: Arc<Policy>,
    config: FetchConfig,
}

impl Fetcher {
    pub(crate) fn new(config: FetchConfig) -> Result<Self, FetchError> {
        let policy = Arc::new(config.policy.clone());
        let mut builder = reqwest::Client::builder();
        if !config.pool_idle {
            builder = builder.pool_max_idle_per_host(0);
        }
        let client = builder
            .user_agent(config.user_agent.clone())
            // Redirects are followed in `fetch` so that each hop is checked.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve names itself, out of the guard's sight.
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver {
                policy: Arc::clone(&policy),
            }))
            .connect_timeout(config.timeout.min(Duration::from_secs(20)))
            .timeout(config.timeout)
            .build()
            .map_err(|e| FetchError::Client {
                reason: error_text(&e),
            })?;
        Ok(Self {
            client,
            policy,
            config,
        })
    }

    pub(crate) fn config(&self) -> &FetchConfig {
        &self.config
    }

    /// The deadline of one fetch: a little inside the tool's limit, so that a slow site gets this
    /// module's message (which names the URL) rather than the engine's generic timeout.
    fn deadline(&self) -> Duration {
        let limit = self.config.timeout;
        limit.saturating_sub((limit / 10).min(Duration::from_secs(3)))
    }

    /// Fetches `url`, following up to `max_redirects` redirects, all within the deadline.
    pub(crate) async fn fetch(&self, url: &str) -> Result<Download, FetchError> {
        let start = parse_url(url)?;
        match tokio::time::timeout(self.deadline(), self.follow(start)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout {
                url: url.to_owned(),
                limit: self.deadline(),
            }),
        }
    }

    async fn follow(&self, start: Url) -> Result<Download, FetchError> {
        let mut current = start;
        let mut from: Option<Url> = None;
        for _ in 0..=self.config.max_redirects {
            self.check(&current, from.as_ref())?;
            let response = self
                .client
                .get(current.clone())
                .send()
                .await
                .map_err(|e| self.request_error(&current, from.as_ref(), &e))?;
            let status = response.status();
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                let next = redirect_target(&current, &response)?;
                from = Some(current);
                current = next;
                continue;
            }
            return self.download(current, response).await;
        }
        Err(FetchError::TooManyRedirects {
            url: current.to_string(),
            limit: self.config.max_redirects,
        })
    }

    /// Checks a URL before connecting: its scheme and its host (IP literals and metadata names
    /// here; names that need DNS in the resolver).
    fn check(&self, url: &Url, from: Option<&Url>) -> Result<(), FetchError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(match from {
                Some(from) => FetchError::RedirectScheme {
                    from: from.to_string(),
                    to: url.to_string(),
                },
                None => FetchError::UnsupportedScheme {
                    url: url.to_string(),
                    scheme: url.scheme().to_owned(),
                },
            });
        }
        let host = url.host().ok_or_else(|| FetchError::InvalidUrl {
            url: url.to_string(),
            reason: "it has no host".to_owned(),
        })?;
        self.policy
            .check_host(&host)
            .map_err(|refused| FetchError::refused(url, from, refused))
    }

    fn request_error(&self, url: &Url, from: Option<&Url>, e: &reqwest::Error) -> FetchError {
        if let Some(refused) = find_refusal(e) {
            return FetchError::refused(url, from, refused);
        }
        if e.is_timeout() {
            return FetchError::Timeout {
                url: url.to_string(),
                limit: self.deadline(),
            };
        }
        FetchError::Request {
            url: url.to_string(),
            reason: error_text(e),
        }
    }

    async fn download(
        &self,
        url: Url,
        mut response: reqwest::Response,
    ) -> Result<Download, FetchError> {
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let (media, charset) = decode::parse_content_type(&content_type);
        // The client asks for gzip and deflate and decodes them as the body streams in, removing
        // the header; the download cap below counts decoded bytes, so a small compressed body
        // cannot expand past it. Any encoding still declared was not decoded: refuse it rather
        // than hand compressed bytes to the model.
        if let Some(encoding) = response
            .headers()
            .get(CONTENT_ENCODING)
            .map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .trim()
                    .to_ascii_lowercase()
            })
            .filter(|e| !e.is_empty() && e != "identity")
        {
            return Err(FetchError::UnsupportedEncoding {
                url: url.to_string(),
                encoding,
            });
        }
        // A declared binary type is refused before its body is downloaded.
        if decode::classify(&media, b"x") == Kind::Binary && !media.is_empty() {
            return Err(FetchError::Binary {
                url: url.to_string(),
                content_type: media,
                bytes: response.content_length(),
            });
        }
        let cap = self.config.max_download_bytes;
        let mut body: Vec<u8> = Vec::new();
        let mut capped = false;
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => return Err(self.request_error(&url, None, &e)),
            };
            let room = cap.saturating_sub(body.len() as u64);
            if chunk.len() as u64 > room {
                body.extend_from_slice(&chunk[..room as usize]);
                capped = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        drop(response);
        let kind = decode::classify(&media, &body);
        if kind == Kind::Binary {
            return Err(FetchError::Binary {
                url: url.to_string(),
                content_type: if media.is_empty() {
                    "unknown".to_owned()
                } else {
                    media
                },
                bytes: Some(body.len() as u64),
            });
        }
        Ok(Download {
            final_url: url,
            status,
            media,
            charset,
            kind,
            body,
            capped,
        })
    }
}

/// Parses the URL the model gave.
fn parse_url(url: &str) -> Result<Url, FetchError> {
    let trimmed = url.trim();
    Url::parse(trimmed).map_err(|e| FetchError::InvalidUrl {
        url: trimmed.to_owned(),
        reason: e.to_string(),
    })
}

/// The absolute URL a redirect response points to.
fn redirect_target(current: &Url, response: &reqwest::Response) -> Result<Url, FetchError> {
    let location = response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| FetchError::RedirectWithoutLocation {
            url: current.to_string(),
            status: response.status().as_u16(),
        })?;
    current.join(location).map_err(|e| FetchError::InvalidUrl {
        url: location.to_owned(),
        reason: format!("the redirect from {current} points to it: {e}"),
    })
}

/// The last two causes of an error on one line ("tcp connect error: Connection refused"): the
/// outer layers of reqwest and hyper only repeat the URL and say that a request failed.
fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut chain: Vec<String> = Vec::new();
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        let text = err.to_string();
        if !chain.iter().any(|p| p.contains(&text)) {
            chain.push(text);
        }
        current = err.source();
    }
    let keep = chain.len().saturating_sub(2);
    chain.drain(..keep);
    chain.join(": ")
}
