//! The HTTP side shared by the providers: the reqwest client, endpoint settings, sending a
//! request, and turning HTTP failures into [`ModelError`]s that carry the provider's own message.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::{Map, Value};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};

use super::deadline::{DEFAULT_DEADLINE, stream_within, within};
use super::sse::turn_stream;
use super::turn::TurnDecoder;
use super::{ModelError, ModelRequest, ModelResponse, ModelStreamEvent};
use super::{RetryPolicy, complete_with_retry, stream_with_retry};
use harnessx_core::tool::BoxFuture;

/// The longest provider message kept in an error.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// The client a provider builds for itself unless one is given: 30 s to connect, 300 s of silence
/// at most while reading. Each provider value (and its clones) has its own, built on first use, so
/// pooled connections never outlive the runtime of an unrelated user of the library.
fn default_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .user_agent(concat!("harnessx/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(30))
        .read_timeout(Duration::from_secs(300))
        .build()
        .map_err(|e| error_chain(&e))
}

/// Endpoint, credentials and transport settings one provider instance uses. Its `Debug` output
/// leaves out the key and header values, which are often secrets.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) provider: &'static str,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) extra_body: Map<String, Value>,
    pub(crate) retry: RetryPolicy,
    /// How long one attempt may take, from sending to the end of the answer.
    pub(crate) deadline: Duration,
    pub(crate) client: Arc<OnceLock<Result<reqwest::Client, String>>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &header_names)
            .field("extra_body", &self.extra_body)
            .field("retry", &self.retry)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    pub(crate) fn new(provider: &'static str, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            provider,
            base_url: base_url.to_owned(),
            api_key,
            headers: Vec::new(),
            extra_body: Map::new(),
            retry: RetryPolicy::default(),
            deadline: DEFAULT_DEADLINE,
            client: Arc::default(),
        }
    }

    /// `base_url` without trailing slashes, followed by `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    /// A POST of `body` (with the extra body fields merged over it) to `path`, carrying the
    /// configured extra headers. The caller adds its authentication headers.
    pub(crate) fn post(
        &self,
        path: &str,
        mut body: Map<String, Value>,
    ) -> Result<RequestBuilder, ModelError> {
        let client = self
            .client
            .get_or_init(default_client)
            .clone()
            .map_err(|message| {
                ModelError::Other(format!(
                    "the {} provider could not create its HTTP client ({message}); pass one with \
                     `with_http_client`",
                    self.provider
                ))
            })?;
        for (k, v) in &self.extra_body {
            body.insert(k.clone(), v.clone());
        }
        let mut rb = client.post(self.url(path)).json(&Value::Object(body));
        for (name, value) in &self.headers {
            rb = rb.header(name, value);
        }
        Ok(rb)
    }

    /// Sends the request; a non-success status becomes the matching [`ModelError`].
    pub(crate) async fn send(&self, rb: RequestBuilder) -> Result<Response, ModelError> {
        let response = rb
            .send()
            .await
            .map_err(|e| transport_error(self.provider, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap_or_default();
        Err(status_error(self.provider, status, &headers, &body))
    }

    /// Sends the request and reads the whole body as JSON.
    pub(crate) async fn send_json(&self, rb: RequestBuilder) -> Result<Value, ModelError> {
        read_json(self.provider, self.send(rb).await?).await
    }
}

/// Reads a whole response body as JSON.
pub(crate) async fn read_json(provider: &str, response: Response) -> Result<Value, ModelError> {
    let body = response
        .bytes()
        .await
        .map_err(|e| transport_error(provider, &e))?;
    serde_json::from_slice(&body).map_err(|e| {
        malformed(
            provider,
            format!("the body is not JSON ({e}): {}", snippet(&body)),
        )
    })
}

/// What sets one provider's wire format apart; [`complete`] and [`stream`] do the rest.
pub(crate) trait WireFormat: Send + Sync + 'static {
    /// Reads the provider's event stream.
    type Stream: TurnDecoder + Default;
    /// The endpoint path under the base URL.
    const PATH: &'static str;
    fn endpoint(&self) -> &Endpoint;
    fn endpoint_mut(&mut self) -> &mut Endpoint;
    /// The request body (`stream` asks for server-sent events).
    fn body(&self, request: &ModelRequest, stream: bool) -> Map<String, Value>;
    /// Adds the credentials and any other headers the provider requires.
    fn authenticate(&self, rb: RequestBuilder) -> RequestBuilder;
    /// Reads a whole (non-streamed) response body.
    fn parse(body: &Value) -> Result<ModelResponse, ModelError>;
    /// Adjusts a whole turn to what was asked for in `request` (OpenAI strict mode's `null`s).
    fn finish(&self, _request: &ModelRequest, _response: &mut ModelResponse) {}
}

fn build<W: WireFormat>(
    wire: &W,
    request: &ModelRequest,
    stream: bool,
) -> Result<RequestBuilder, ModelError> {
    let rb = wire.endpoint().post(W::PATH, wire.body(request, stream))?;
    Ok(wire.authenticate(rb))
}

/// [`Model::complete`](super::Model::complete) for a wire format, with its retry, all under the
/// call's deadline.
pub(crate) fn complete<W: WireFormat>(
    wire: &W,
    request: ModelRequest,
) -> BoxFuture<'_, Result<ModelResponse, ModelError>> {
    Box::pin(async move {
        let request = &request;
        let endpoint = wire.endpoint();
        let attempts = complete_with_retry(&endpoint.retry, || {
            Box::pin(async move {
                let rb = build(wire, request, false)?;
                let mut response = W::parse(&endpoint.send_json(rb).await?)?;
                wire.finish(request, &mut response);
                Ok(response)
            })
        });
        within(endpoint.provider, endpoint.deadline, attempts).await
    })
}

/// [`Model::stream`](super::Model::stream) for a wire format, with its retry, all under the
/// call's deadline.
pub(crate) fn stream<W: WireFormat>(
    wire: &W,
    request: ModelRequest,
) -> BoxStream<'_, Result<ModelStreamEvent, ModelError>> {
    let endpoint = wire.endpoint();
    let attempts = stream_with_retry(endpoint.retry.clone(), move || {
        let endpoint = endpoint.clone();
        let built = build(wire, &request, true);
        let request = request.clone();
        futures::stream::once(async move {
            let response = endpoint.send(built?).await?;
            Ok::<_, ModelError>(turn_stream(
                endpoint.provider,
                response,
                W::Stream::default(),
                W::parse,
            ))
        })
        .try_flatten()
        .map_ok(move |event| match event {
            ModelStreamEvent::Completed { mut response } => {
                wire.finish(&request, &mut response);
                ModelStreamEvent::Completed { response }
            }
            other => other,
        })
        .boxed()
    });
    stream_within(endpoint.provider, endpoint.deadline, attempts)
}

/// A sampling setting as JSON, with the digits it was written with: `0.7f32` is sent as `0.7`, not
/// as the `0.699999988…` a plain widening to `f64` gives.
pub(crate) fn decimal(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// A [`ModelError::Malformed`].
pub(crate) fn malformed(provider: &str, message: impl Into<String>) -> ModelError {
    ModelError::Malformed {
        provider: provider.to_owned(),
        message: message.into(),
    }
}

/// The error for a response with a failure status.
pub(crate) fn status_error(
    provider: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
) -> ModelError {
    let message = error_message(body).unwrap_or_else(|| {
        format!(
            "no message in the response body (HTTP {} {})",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .trim_end()
        .to_owned()
    });
    let provider = provider.to_owned();
    let code = status.as_u16();
    if matches!(code, 400 | 413) && is_context_overflow(&error_code(body), &message) {
        return ModelError::ContextOverflow {
            provider,
            status: code,
            message,
        };
    }
    match code {
        401 | 403 => ModelError::Auth {
            provider,
            status: code,
            message,
        },
        429 => ModelError::RateLimited {
            provider,
            retry_after: retry_after(headers, SystemTime::now()),
            message,
        },
        500..=599 => ModelError::Server {
            provider,
            status: code,
            retry_after: retry_after(headers, SystemTime::now()),
            message,
        },
        _ => ModelError::InvalidRequest {
            provider,
            status: code,
            message,
        },
    }
}

/// The error code of an error body: `error.code` (OpenAI), else `error.type` (Anthropic, and
/// OpenAI's older bodies), else empty.
fn error_code(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return String::new();
    };
    ["/error/code", "/error/type"]
        .into_iter()
        .find_map(|p| value.pointer(p).and_then(Value::as_str))
        .unwrap_or("")
        .to_owned()
}

/// Whether an error with this code or type and message says the request does not fit the
/// context window. OpenAI sends the code `context_length_exceeded`, llama.cpp server
/// `exceed_context_size_error`; Anthropic says so only in the message (`prompt is too long: …`,
/// `input length and max_tokens exceed context limit: …`), as do vLLM and others (`This model's
/// maximum context length is …`).
pub(crate) fn is_context_overflow(code: &str, message: &str) -> bool {
    if matches!(
        code,
        "context_length_exceeded" | "exceed_context_size_error"
    ) {
        return true;
    }
    let message = message.to_ascii_lowercase();
    [
        "maximum context length",
        "context length exceeded",
        "context_length_exceeded",
        "context window",
        "exceed context limit",
        "exceeds the context",
        "exceeds the available context size",
        "prompt is too long",
    ]
    .iter()
    .any(|phrase| message.contains(phrase))
}

/// The error a provider reports inside a stream or in place of an answer, by its error `type`
/// (or `code`): the status it would have had as an HTTP response decides the variant.
pub(crate) fn stream_error(provider: &str, kind: &str, message: String) -> ModelError {
    let provider = provider.to_owned();
    if matches!(
        kind,
        "invalid_request_error" | "context_length_exceeded" | "exceed_context_size_error"
    ) && is_context_overflow(kind, &message)
    {
        return ModelError::ContextOverflow {
            provider,
            status: 400,
            message,
        };
    }
    let status = match kind {
        "authentication_error" | "invalid_api_key" => 401,
        "permission_error" => 403,
        "rate_limit_error" | "rate_limit_exceeded" | "tokens" | "requests" => {
            return ModelError::RateLimited {
                provider,
                retry_after: None,
                message,
            };
        }
        "overloaded_error" => 529,
        "invalid_request_error" => 400,
        "not_found_error" => 404,
        "request_too_large" => 413,
        _ => 500,
    };
    match status {
        401 | 403 => ModelError::Auth {
            provider,
            status,
            message,
        },
        400..=499 => ModelError::InvalidRequest {
            provider,
            status,
            message,
        },
        _ => ModelError::Server {
            provider,
            status,
            retry_after: None,
            message,
        },
    }
}

/// The provider's own message from an error body: `{"error": {"message": ..}}` (OpenAI,
/// Anthropic), `{"error": ".."}` (Ollama), `{"message": ..}` (vLLM), `{"detail": ..}`; otherwise
/// the body text itself.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let found = [
            value.pointer("/error/message"),
            value.get("error"),
            value.get("message"),
            value.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_str);
        if let Some(m) = found {
            return Some(cap(m.trim()));
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (!text.is_empty()).then(|| cap(text))
}

fn cap(s: &str) -> String {
    match s.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// A short excerpt of a body for an error message.
pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("`{}…`", &text[..cut]),
        None if text.is_empty() => "the body is empty".to_owned(),
        None => format!("`{text}`"),
    }
}

/// The error for a request that got no (complete) answer.
pub(crate) fn transport_error(provider: &str, e: &reqwest::Error) -> ModelError {
    let chain = error_chain(e);
    if e.is_builder() {
        return ModelError::Other(format!(
            "the {provider} request could not be built ({chain}); check the base URL and the extra \
             headers"
        ));
    }
    if e.is_timeout() {
        return ModelError::Timeout {
            provider: provider.to_owned(),
            message: format!(
                "the HTTP client stopped waiting ({chain}); give it longer with \
                 `with_http_client`"
            ),
        };
    }
    let message = if e.is_body() || e.is_decode() {
        format!("the connection broke while the response was being read ({chain})")
    } else {
        chain
    };
    ModelError::Transport {
        provider: provider.to_owned(),
        message,
    }
}

/// An error and its sources, `outer: inner: innermost`, without repeats.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// How long the provider asked to wait: `retry-after-ms` (milliseconds), else `retry-after` in
/// seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Ok(wait) = Duration::try_from_secs_f64(ms / 1000.0)
    {
        return Some(wait);
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form servers must send.
fn parse_http_date(s: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = s.split_ascii_whitespace().collect();
    let [_weekday, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as u32
        + 1;
    let year: i64 = year.parse().ok().filter(|y| (1970..=9999).contains(y))?;
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3_600 + m * 60 + sec;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// What both providers share on top of their [`WireFormat`]: the [`Model`](super::Model)
/// implementation and the builder methods, each with a doc example for the provider type.
macro_rules! endpoint_builders {
    ($ty:ident, $model:literal) => {
        impl harnessx_core::model::Model for $ty {
            fn name(&self) -> &str {
                &self.name
            }

            fn server_address(&self) -> Option<harnessx_core::model::ServerAddress> {
                harnessx_core::model::ServerAddress::from_url(&self.endpoint.base_url)
            }

            fn complete(
                &self,
                request: harnessx_core::model::ModelRequest,
            ) -> harnessx_core::tool::BoxFuture<'_, Result<harnessx_core::model::ModelResponse, harnessx_core::model::ModelError>> {
                $crate::http::complete(self, request)
            }

            fn stream(
                &self,
                request: harnessx_core::model::ModelRequest,
            ) -> futures::stream::BoxStream<
                '_,
                Result<harnessx_core::model::ModelStreamEvent, harnessx_core::model::ModelError>,
            > {
                $crate::http::stream(self, request)
            }
        }

        impl $ty {
            #[doc = concat!(
                "Sends this API key, replacing one read from the environment.\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\").with_api_key(\"sk-test\");\n",
                "assert!(model.has_api_key());\n```"
            )]
            pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
                self.endpoint.api_key = Some(key.into());
                self
            }

            #[doc = concat!(
                "Sends no API key, even when one is set in the environment (for local servers).\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\").without_api_key();\n",
                "assert!(!model.has_api_key());\n```"
            )]
            pub fn without_api_key(mut self) -> Self {
                self.endpoint.api_key = None;
                self
            }

            #[doc = concat!(
                "Whether an API key will be sent.\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "assert!(", stringify!($ty), "::new(\"", $model, "\").with_api_key(\"k\").has_api_key());\n```"
            )]
            pub fn has_api_key(&self) -> bool {
                self.endpoint.api_key.is_some()
            }

            #[doc = concat!(
                "Talks to another server: a proxy, a gateway or a compatible local server.\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\").with_base_url(\"http://127.0.0.1:8080\");\n",
                "assert_eq!(model.base_url(), \"http://127.0.0.1:8080\");\n```"
            )]
            pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
                self.endpoint.base_url = base_url.into();
                self
            }

            #[doc = concat!(
                "The base URL requests go to.\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "assert!(", stringify!($ty), "::new(\"", $model, "\").base_url().starts_with(\"https://\"));\n```"
            )]
            pub fn base_url(&self) -> &str {
                &self.endpoint.base_url
            }

            #[doc = concat!(
                "Adds a header to every request (for example OpenRouter's `HTTP-Referer`, or a ",
                "gateway's own key). A name or value HTTP does not allow fails the call with ",
                "[`ModelError::Other`](harnessx_core::model::ModelError::Other).\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\").with_header(\"x-team\", \"search\");\n",
                "# let _ = model;\n```"
            )]
            pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.endpoint.headers.push((name.into(), value.into()));
                self
            }

            #[doc = concat!(
                "Sets a top-level field of every request body, over what harnessx would send ",
                "(provider-specific options such as `max_completion_tokens`, `top_k`, `metadata`).\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\")\n",
                "    .with_extra_body(\"top_p\", serde_json::json!(0.9));\n",
                "# let _ = model;\n```"
            )]
            pub fn with_extra_body(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
                self.endpoint.extra_body.insert(key.into(), value);
                self
            }

            #[doc = concat!(
                "Sets how failed calls are retried (default: [`RetryPolicy::default`](harnessx_core::model::RetryPolicy::default)).\n\n```\n",
                "use harnessx::model::{", stringify!($ty), ", RetryPolicy};\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\").with_retry(RetryPolicy::none());\n",
                "assert_eq!(model.retry(), &RetryPolicy::none());\n```"
            )]
            pub fn with_retry(mut self, retry: harnessx_core::model::RetryPolicy) -> Self {
                self.endpoint.retry = retry;
                self
            }

            #[doc = concat!(
                "The retry settings.\n\n```\n",
                "use harnessx::model::{", stringify!($ty), ", RetryPolicy};\n",
                "assert_eq!(", stringify!($ty), "::new(\"", $model, "\").retry(), &RetryPolicy::default());\n```"
            )]
            pub fn retry(&self) -> &harnessx_core::model::RetryPolicy {
                &self.endpoint.retry
            }

            #[doc = concat!(
                "Sets the overall deadline of a call, from sending the first request to the end of ",
                "the answer, retries and the waits between them included (default ",
                "[`DEFAULT_DEADLINE`](crate::DEFAULT_DEADLINE), 10 minutes). A call still ",
                "running when it passes, even an answer that keeps streaming, ends with ",
                "[`ModelError::Timeout`](harnessx_core::model::ModelError::Timeout); the HTTP client's own ",
                "timeouts only bound connecting and silences.\n\n```\n",
                "use std::time::Duration;\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\").with_deadline(Duration::from_secs(120));\n",
                "assert_eq!(model.deadline(), Duration::from_secs(120));\n```"
            )]
            pub fn with_deadline(mut self, deadline: std::time::Duration) -> Self {
                self.endpoint.deadline = deadline;
                self
            }

            #[doc = concat!(
                "The overall deadline of a call.\n\n```\n",
                "use harnessx::model::{", stringify!($ty), ", DEFAULT_DEADLINE};\n",
                "assert_eq!(", stringify!($ty), "::new(\"", $model, "\").deadline(), DEFAULT_DEADLINE);\n```"
            )]
            pub fn deadline(&self) -> std::time::Duration {
                self.endpoint.deadline
            }

            #[doc = concat!(
                "Uses this HTTP client (proxies, custom timeouts, extra root certificates). By ",
                "default the model builds its own client, which waits 30 s to connect and 300 s for the next bytes.\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "let client = reqwest::Client::new();\n",
                "let model = ", stringify!($ty), "::new(\"", $model, "\").with_http_client(client);\n",
                "# let _ = model;\n```"
            )]
            pub fn with_http_client(mut self, client: reqwest::Client) -> Self {
                self.endpoint.client = std::sync::Arc::new(std::sync::OnceLock::from(Ok(client)));
                self
            }

            #[doc = concat!(
                "The model name sent to the provider.\n\n```\n",
                "use harnessx::model::", stringify!($ty), ";\n",
                "assert_eq!(", stringify!($ty), "::new(\"", $model, "\").model(), \"", $model, "\");\n```"
            )]
            pub fn model(&self) -> &str {
                &self.model
            }
        }
    };
}
pub(crate) use endpoint_builders;

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn debug_output_hides_secrets() {
        let mut e = Endpoint::new("openai", "http://x", Some("sk-secret".into()));
        e.headers.push(("x-gateway-key".into(), "gw-secret".into()));
        let text = format!("{e:?}");
        assert!(!text.contains("secret"), "{text}");
        assert!(
            text.contains("<redacted>") && text.contains("x-gateway-key"),
            "{text}"
        );
    }

    #[test]
    fn decimals_keep_their_digits() {
        assert_eq!(decimal(0.7).to_string(), "0.7");
        assert_eq!(decimal(1.0).to_string(), "1.0");
        assert_eq!(decimal(f32::NAN), Value::Null);
    }

    #[test]
    fn http_dates_parse() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(
            t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            784_111_777
        );
        let t = parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT").unwrap();
        assert_eq!(t, SystemTime::UNIX_EPOCH);
        assert!(parse_http_date("Sun, 06 Nov 1994 08:49:37 PST").is_none());
        assert!(parse_http_date("Sun, 32 Nov 1994 08:49:37 GMT").is_none());
        assert!(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT").is_none());
        assert!(parse_http_date("Sun, 06 Nov 1994 08:49 GMT").is_none());
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_770);
        let d = |pairs: &[(&'static str, &str)]| retry_after(&headers(pairs), now);
        assert_eq!(d(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            d(&[("retry-after", "1.5")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            d(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            d(&[("retry-after", "Sun, 06 Nov 1994 08:49:00 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(
            d(&[("retry-after", "3"), ("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(d(&[("retry-after", "soon")]), None);
        assert_eq!(d(&[("retry-after", "-1")]), None);
        assert_eq!(d(&[("retry-after", "1e300")]), None);
        assert_eq!(d(&[("retry-after", "NaN")]), None);
        assert_eq!(
            d(&[("retry-after-ms", "1e300"), ("retry-after", "2")]),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            d(&[("retry-after", "Sun, 06 Nov 99999999999 08:49:37 GMT")]),
            None
        );
        assert_eq!(d(&[]), None);
    }

    #[test]
    fn error_messages_from_every_body_shape() {
        let m = |b: &str| error_message(b.as_bytes());
        assert_eq!(
            m(
                r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
            ),
            Some("Incorrect API key provided".into())
        );
        assert_eq!(
            m(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
            Some("Overloaded".into())
        );
        assert_eq!(
            m(r#"{"error":"model 'x' not found"}"#),
            Some("model 'x' not found".into())
        );
        assert_eq!(
            m(r#"{"object":"error","message":"bad"}"#),
            Some("bad".into())
        );
        assert_eq!(m(r#"{"detail":"Not Found"}"#), Some("Not Found".into()));
        assert_eq!(m("  upstream timeout \n"), Some("upstream timeout".into()));
        assert_eq!(m(""), None);
        let long = "x".repeat(MAX_MESSAGE_CHARS + 10);
        assert_eq!(m(&long).unwrap().chars().count(), MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn retry_after_is_kept_on_a_5xx_as_on_a_429() {
        let e = status_error(
            "openai",
            StatusCode::SERVICE_UNAVAILABLE,
            &headers(&[("retry-after", "7")]),
            br#"{"error": {"message": "busy"}}"#,
        );
        assert_eq!(
            e,
            ModelError::Server {
                provider: "openai".into(),
                status: 503,
                retry_after: Some(Duration::from_secs(7)),
                message: "busy".into(),
            }
        );
        let e = status_error("openai", StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"");
        assert!(matches!(
            e,
            ModelError::Server {
                status: 502,
                retry_after: None,
                ..
            }
        ));
    }

    #[test]
    fn stream_errors_map_by_type() {
        let e = stream_error("anthropic", "overloaded_error", "Overloaded".into());
        assert!(matches!(e, ModelError::Server { status: 529, .. }));
        let e = stream_error("anthropic", "authentication_error", "no".into());
        assert!(matches!(e, ModelError::Auth { status: 401, .. }));
        let e = stream_error("openai", "rate_limit_exceeded", "slow".into());
        assert!(matches!(e, ModelError::RateLimited { .. }));
        let e = stream_error("openai", "invalid_request_error", "bad".into());
        assert!(matches!(e, ModelError::InvalidRequest { status: 400, .. }));
        let e = stream_error("openai", "whatever", "odd".into());
        assert!(matches!(e, ModelError::Server { status: 500, .. }));
        let e = stream_error("openai", "context_length_exceeded", "Too long.".into());
        assert!(matches!(e, ModelError::ContextOverflow { status: 400, .. }));
        let e = stream_error(
            "openai",
            "invalid_request_error",
            "Prompt is too long".into(),
        );
        assert!(matches!(e, ModelError::ContextOverflow { .. }));
    }

    #[test]
    fn context_overflow_is_recognised_by_code_or_message() {
        let overflow = |status: u16, body: &str| {
            let status = StatusCode::from_u16(status).unwrap();
            status_error("p", status, &HeaderMap::new(), body.as_bytes()).kind()
        };
        let llama = r#"{"error":{"code":400,"type":"exceed_context_size_error","message":"the request exceeds the available context size, try increasing it"}}"#;
        assert_eq!(
            overflow(400, llama),
            super::super::ModelErrorKind::ContextOverflow
        );
        let too_large = r#"{"error":{"message":"Input exceeds the context window of this model"}}"#;
        assert_eq!(
            overflow(413, too_large),
            super::super::ModelErrorKind::ContextOverflow
        );
        // The same words with a status that is no rejection of the request are not an overflow.
        assert_eq!(
            overflow(500, too_large),
            super::super::ModelErrorKind::Server
        );
        assert_eq!(
            overflow(400, r#"{"error":{"message":"Unknown model"}}"#),
            super::super::ModelErrorKind::InvalidRequest
        );
    }
}
