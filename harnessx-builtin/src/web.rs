//! The web bundle: `fetch_url`, which reads a public web page as text behind an SSRF guard.
//!
//! Use the tool directly — [`fetch_url`] is both an async function and a tool value — or
//! configure it through [`register_web_tools`]:
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx_builtin::web::{register_web_tools, WebOptions};
//!
//! let registry = ToolRegistry::new();
//! let registered = register_web_tools(
//!     &registry,
//!     WebOptions { include: Some(vec!["fetch_url".into()]), max_length: Some(20_000), ..WebOptions::default() },
//! )?;
//! assert_eq!(registered, ["fetch_url"]);
//! // A configured max_length is hidden from the model: it can set only `url`.
//! let schema = registry.get_tool("fetch_url").unwrap().input_schema;
//! assert_eq!(schema["required"], serde_json::json!(["url"]));
//! assert_eq!(schema["properties"].as_object().unwrap().len(), 1);
//! # Ok::<(), harnessx::RegistryError>(())
//! ```
//!
//! # What `fetch_url` does
//! - Only `http://` and `https://` URLs; anything else is a one-line error.
//! - Redirects are followed by hand, at most [`WebOptions::max_redirects`] (10) of them, and every
//!   hop is checked like the first URL.
//! - The body is streamed and cut at [`WebOptions::max_download_bytes`] (10 MB). Bodies sent
//!   with `Content-Encoding: gzip` or `deflate` are decoded as they stream in, and the cap counts
//!   decoded bytes, so a small compressed body cannot expand past it; any other encoding is
//!   refused with a message naming it.
//! - Text is decoded by the Content-Type charset, else a `<meta charset>`, else a byte-order
//!   mark, else UTF-8. HTML becomes Markdown without scripts, styles, navigation and form
//!   controls; JSON and other text pass through; binary content is refused. Conversion is
//!   bounded: a page whose tree would nest more than 512 levels deep (the converter recurses once
//!   per level), or that has more than 200 000 tags or 100 000 nodes, is returned as plain text
//!   with a note saying why. The depth is that of the tree the HTML parser builds (`<div/>` opens
//!   a `div`; only void elements close themselves), and parsing stops as soon as a limit is
//!   passed.
//! - The *text returned* is cut to `max_length` characters (20 000 by default) starting at
//!   `start_index`, and the result ends with a note saying how to read on.
//! - The tool's limit is 60 seconds. It is registered concurrent, with the manual replay policy:
//!   fetching is never marked replay-safe.
//!
//! # The SSRF guard
//! By default the tool refuses loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7),
//! link-local (169.254/16, fe80::/10), carrier-grade NAT (100.64/10), unspecified, multicast and
//! reserved addresses, and cloud metadata endpoints (169.254.169.254, 169.254.170.2,
//! 100.100.100.200, Oracle Cloud's 192.0.0.192, fd00:ec2::254, `metadata.google.internal`).
//! Names are checked **after DNS resolution**, on every redirect hop, and the connection is made to exactly the addresses that were checked (the guard is the HTTP
//! client's resolver), so DNS rebinding cannot switch it to another address. IPv4 addresses
//! embedded in IPv6 (`::ffff:127.0.0.1`, NAT64, 6to4 `2002::/16`, and both the server and the
//! client address of Teredo `2001:0::/32`) are judged as IPv4. Proxies from the environment
//! are not used, since a proxy would resolve names out of the guard's sight.
//!
//! [`WebOptions::allow_private_networks`] lifts every refusal except cloud metadata endpoints;
//! [`WebOptions::allow_hosts`] exempts named hosts (an intranet server) from every check.

mod decode;
mod error;
mod fetch;
mod guard;
mod html;
mod page;
mod parse;

use std::ops::Deref;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use harnessx::{
    BoxFuture, IntoTool, PermissionLevel, RegistryError, ToolDefinition, ToolError, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde::Deserialize;
use serde_json::{Value, json};

pub use error::FetchError;
pub use page::FetchedPage;

use crate::bundle::{register_selected, select_tools};
use fetch::{FetchConfig, Fetcher};
use guard::Policy;
use page::Paging;

/// The tools of the web bundle, in registration order.
pub const WEB_TOOLS: [&str; 1] = ["fetch_url"];

/// Characters of text one call returns when the model does not say.
pub const DEFAULT_MAX_LENGTH: usize = 20_000;

/// The most characters of text one call returns, whatever `max_length` the model asks for.
pub const MAX_LENGTH_CEILING: usize = 50_000;

/// The default download cap: 10 MB.
pub const DEFAULT_MAX_DOWNLOAD_BYTES: u64 = 10 * 1024 * 1024;

/// The tool's time limit in seconds (the spec's `fetch_url` row).
pub const FETCH_TIMEOUT_SECONDS: f64 = 60.0;

/// Options of [`register_web_tools`] (and of `load_builtin("web", ..)`, which parses them from
/// JSON; unknown keys are refused with the list of valid ones).
///
/// ```
/// use harnessx_builtin::web::WebOptions;
/// let options: WebOptions = serde_json::from_value(serde_json::json!({
///     "max_length": 8000,
///     "allow_hosts": ["docs.intranet.example"]
/// })).unwrap();
/// assert_eq!(options.max_length, Some(8000));
/// assert_eq!(options.max_redirects, 10);
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebOptions {
    /// Register only these tools (`None`: the whole bundle).
    pub include: Option<Vec<String>>,
    /// Leave these tools out.
    pub exclude: Vec<String>,
    /// The permission of the registered tools (`None`: inherit the manager's default).
    pub permission: Option<PermissionLevel>,
    /// Replace tools already registered under the same names.
    pub replace: bool,
    /// Fix the characters returned per call. `Some` hides `max_length` and `start_index` from the
    /// model, which can then set only `url`; `None` lets the model choose (default
    /// [`DEFAULT_MAX_LENGTH`], at most [`MAX_LENGTH_CEILING`]).
    pub max_length: Option<usize>,
    /// Allow loopback, private, link-local and other non-public addresses (cloud metadata
    /// endpoints stay refused). For agents meant to reach an internal network.
    pub allow_private_networks: bool,
    /// Hosts exempt from every address check, by exact name or IP literal, such as
    /// `"docs.intranet.example"` or `"10.0.0.5"`. A redirect to another host is still checked.
    pub allow_hosts: Vec<String>,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// Stop downloading a body after this many bytes (default 10 MB).
    pub max_download_bytes: u64,
    /// Redirects followed before giving up (default 10).
    pub max_redirects: usize,
    /// The tool's time limit in seconds, also applied to direct calls (default 60). A fetch gives
    /// up a tenth earlier (at most 3 s earlier), so the model gets a message naming the URL
    /// rather than the engine's generic timeout.
    pub timeout_seconds: f64,
}

impl Default for WebOptions {
    fn default() -> Self {
        Self {
            include: None,
            exclude: Vec::new(),
            permission: None,
            replace: false,
            max_length: None,
            allow_private_networks: false,
            allow_hosts: Vec::new(),
            user_agent: concat!("harnessx/", env!("CARGO_PKG_VERSION"), " (fetch_url)").to_owned(),
            max_download_bytes: DEFAULT_MAX_DOWNLOAD_BYTES,
            max_redirects: 10,
            timeout_seconds: FETCH_TIMEOUT_SECONDS,
        }
    }
}

impl WebOptions {
    fn check(&self) -> Result<(), RegistryError> {
        let bad = |field: &str, why: &str| {
            Err(RegistryError::Config(format!("web option `{field}` {why}")))
        };
        if self.max_length == Some(0) {
            return bad(
                "max_length",
                "must be at least 1 character; leave it unset to let the model choose",
            );
        }
        if self.max_download_bytes == 0 {
            return bad("max_download_bytes", "must be at least 1 byte");
        }
        if self.timeout().is_none() {
            return bad("timeout_seconds", "must be a positive number of seconds");
        }
        Ok(())
    }

    /// `timeout_seconds` as a duration: `None` when it is not positive, not finite, or too large
    /// for a [`Duration`].
    fn timeout(&self) -> Option<Duration> {
        Duration::try_from_secs_f64(self.timeout_seconds)
            .ok()
            .filter(|d| !d.is_zero() && self.timeout_seconds.is_finite())
    }

    /// The fetcher's configuration; call [`check`](Self::check) first (an unusable
    /// `timeout_seconds` falls back to the default here).
    fn fetch_config(&self) -> FetchConfig {
        FetchConfig {
            user_agent: self.user_agent.clone(),
            max_download_bytes: self.max_download_bytes,
            max_redirects: self.max_redirects,
            timeout: self
                .timeout()
                .unwrap_or(Duration::from_secs(FETCH_TIMEOUT_SECONDS as u64)),
            policy: Policy {
                allow_private_networks: self.allow_private_networks,
                allow_hosts: self.allow_hosts.clone(),
            },
            pool_idle: true,
        }
    }
}

/// Registers the web bundle's tools and returns their names in bundle order.
///
/// Fails when `include` or `exclude` names a tool the bundle does not have, when an option is
/// out of range, or when a tool of the same name exists and `replace` is not set; nothing is
/// registered then.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::web::{register_web_tools, WebOptions};
/// let registry = ToolRegistry::new();
/// assert_eq!(register_web_tools(&registry, WebOptions::default())?, ["fetch_url"]);
/// let schema = registry.get_tool("fetch_url").unwrap().input_schema;
/// assert!(schema["properties"]["max_length"].is_object()); // the model chooses
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
pub fn register_web_tools(
    registry: &ToolRegistry,
    options: WebOptions,
) -> Result<Vec<String>, RegistryError> {
    let selected = select_tools(
        "web",
        &WEB_TOOLS,
        options.include.as_deref(),
        &options.exclude,
    )?;
    options.check()?;
    let fetcher =
        Fetcher::new(options.fetch_config()).map_err(|e| RegistryError::Config(e.to_string()))?;
    let fetcher = Arc::new(fetcher);
    // The bundle has one tool, so whatever survived the filters is `fetch_url`.
    let definitions = selected
        .iter()
        .map(|_| fetch_url_definition(Arc::clone(&fetcher), options.max_length))
        .collect();
    register_selected(registry, definitions, options.permission, options.replace)
}

/// The signature behind [`fetch_url`]: `(url, max_length)`.
pub type FetchUrlFn =
    fn(&str, Option<usize>) -> BoxFuture<'static, Result<FetchedPage, FetchError>>;

/// Fetches a web page and returns its text, with the default [`WebOptions`] (the SSRF guard on).
///
/// `fetch_url` is two things at once, like a `#[tool]` function:
/// - an async function `fetch_url(url, max_length)` — an ordinary Rust call that bypasses the
///   registry (no schema validation, permission check or tool timeout; the 60 s fetch limit
///   still applies). `max_length: None` returns [`DEFAULT_MAX_LENGTH`] characters;
/// - a tool value: `registry.register_tool(fetch_url)` registers it with ordinary registration
///   metadata (inherited permission, concurrent, manual replay) and its own 60 s limit. The model
///   then sets `url`, `max_length` and `start_index`.
///
/// ```no_run
/// use harnessx::ToolRegistry;
/// use harnessx_builtin::web::fetch_url;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let page = fetch_url("https://example.com/", Some(5_000)).await?;
/// println!("{}: {}", page.final_url, page.text);
///
/// let registry = ToolRegistry::new();
/// registry.register_tool(fetch_url)?;
/// # Ok(()) }
/// ```
#[expect(
    non_camel_case_types,
    reason = "a tool value named like the function it calls, as `#[tool]` emits"
)]
#[derive(Debug, Clone, Copy, Default)]
pub struct fetch_url;

static FETCH_URL: FetchUrlFn = fetch_url_direct;

impl Deref for fetch_url {
    type Target = FetchUrlFn;
    fn deref(&self) -> &FetchUrlFn {
        &FETCH_URL
    }
}

impl IntoTool for fetch_url {
    fn into_tool(self) -> ToolDefinition {
        match default_fetcher() {
            Ok(fetcher) => fetch_url_definition(fetcher, None),
            // The definition still registers; each call reports why the client is unusable.
            Err(e) => broken_definition(e),
        }
    }
}

fn fetch_url_direct(
    url: &str,
    max_length: Option<usize>,
) -> BoxFuture<'static, Result<FetchedPage, FetchError>> {
    let url = url.to_owned();
    Box::pin(async move {
        let fetcher = default_fetcher()?;
        let max_length = max_length.unwrap_or(DEFAULT_MAX_LENGTH).max(1);
        fetch_page(&fetcher, url, 0, max_length).await
    })
}

/// The fetcher behind the direct function and the plain tool value: default options, and no
/// idle connections kept, since it is shared by every tokio runtime in the process.
fn default_fetcher() -> Result<Arc<Fetcher>, FetchError> {
    static FETCHER: OnceLock<Result<Arc<Fetcher>, FetchError>> = OnceLock::new();
    FETCHER
        .get_or_init(|| {
            let mut config = WebOptions::default().fetch_config();
            config.pool_idle = false;
            Fetcher::new(config).map(Arc::new)
        })
        .clone()
}

async fn fetch_page(
    fetcher: &Fetcher,
    url: String,
    start_index: usize,
    max_length: usize,
) -> Result<FetchedPage, FetchError> {
    let download = fetcher.fetch(&url).await?;
    page::from_download(
        url,
        download,
        fetcher.config().max_download_bytes,
        start_index,
        max_length,
    )
    .await
}

/// The `fetch_url` definition over `fetcher`. `fixed_length: Some(n)` hides `max_length` and
/// `start_index` from the model and returns `n` characters per call.
fn fetch_url_definition(fetcher: Arc<Fetcher>, fixed_length: Option<usize>) -> ToolDefinition {
    let config = fetcher.config().clone();
    let schema = fetch_url_schema(fixed_length);
    let description = fetch_url_description(&config, fixed_length);
    let handler = handler_fn(move |args: Value, _ctx| {
        let fetcher = Arc::clone(&fetcher);
        async move {
            let url = args["url"].as_str().unwrap_or_default().to_owned();
            let (start_index, max_length, paging) = match fixed_length {
                Some(n) => (0, n, Paging::Fixed),
                None => (
                    crate::args::count(&args, "start_index")?.unwrap_or(0),
                    crate::args::count(&args, "max_length")?
                        .unwrap_or(DEFAULT_MAX_LENGTH)
                        .clamp(1, MAX_LENGTH_CEILING),
                    Paging::Model {
                        ceiling: MAX_LENGTH_CEILING,
                    },
                ),
            };
            let page = fetch_page(&fetcher, url, start_index, max_length)
                .await
                .map_err(ToolError::from)?;
            Ok(ToolOutput::text(page.render(paging)))
        }
    });
    let mut definition = ToolDefinition::new("fetch_url", description, schema, handler);
    // Set directly: a timeout near `Duration::MAX` does not survive a round trip through f64.
    definition.timeout = Some(config.timeout);
    definition
}

/// A definition whose every call reports that the HTTP client could not be built.
fn broken_definition(error: FetchError) -> ToolDefinition {
    let config = WebOptions::default().fetch_config();
    let message = error.to_string();
    let handler = handler_fn(move |_args, _ctx| {
        let message = message.clone();
        async move { Err(ToolError::failed(message)) }
    });
    let mut definition = ToolDefinition::new(
        "fetch_url",
        fetch_url_description(&config, None),
        fetch_url_schema(None),
        handler,
    );
    definition.timeout = Some(config.timeout);
    definition
}

fn fetch_url_schema(fixed_length: Option<usize>) -> Value {
    let url = json!({
        "type": "string",
        "description": "The absolute http:// or https:// URL to fetch."
    });
    match fixed_length {
        Some(_) => json!({
            "type": "object",
            "properties": {"url": url},
            "required": ["url"],
            "additionalProperties": false
        }),
        None => json!({
            "type": "object",
            "properties": {
                "url": url,
                "max_length": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_MAX_LENGTH,
                    "description": format!(
                        "How many characters of text to return (default {DEFAULT_MAX_LENGTH}, at most {MAX_LENGTH_CEILING})."
                    )
                },
                "start_index": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Character offset to start from; use the value a truncated result gives to read on."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        }),
    }
}

fn fetch_url_description(config: &FetchConfig, fixed_length: Option<usize>) -> String {
    let reach = if config.policy.allow_private_networks {
        "Public and private network addresses can be reached; cloud metadata endpoints cannot."
    } else {
        "Only public internet addresses can be reached."
    };
    let window = match fixed_length {
        Some(n) => format!(
            "Returns at most {n} characters of a page's text; when a page is longer the result \
             says so, and the rest can be read by fetching a more specific URL."
        ),
        None => format!(
            "Returns max_length characters (default {DEFAULT_MAX_LENGTH}, at most \
             {MAX_LENGTH_CEILING}) starting at start_index; when the text is longer the result \
             ends with the start_index to call again with to read on."
        ),
    };
    format!(
        "Fetch a web page over http or https and return its readable text: HTML is converted to \
         Markdown (scripts, styles and navigation removed), JSON and plain text are returned as \
         they are, and binary files (images, PDFs, archives) are refused. {window} Follows up to \
         {} redirects, downloads at most {} and gives up after {} seconds. {reach}",
        config.max_redirects,
        page::size_text(config.max_download_bytes),
        config.timeout.as_secs_f64()
    )
}
