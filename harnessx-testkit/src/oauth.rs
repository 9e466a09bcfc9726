//! A real OAuth 2.1 setup on 127.0.0.1 for sign-in tests (feature `oauth`): an authorization
//! server (metadata, dynamic client registration, `/authorize` answering with a redirect,
//! `/token` checking PKCE S256 and the `resource`, refresh tokens), and a gateway in front of a
//! harnessx MCP server that forwards `/mcp` only with a bearer token the authorization server
//! issued, and publishes its protected resource metadata (RFC 9728).
//!
//! The MCP server has one tool, `whoami`, answering [`WHOAMI`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use base64::Engine;
use harnessx_core::{
    PermissionLevel, PermissionManager, ReplayPolicy, ToolOptions, ToolOutput, ToolRegistry,
    handler_fn,
};
use harnessx_mcp::server::{McpHttpServer, McpToolServer};
use serde_json::{Value, json};
use sha2::Digest;

use crate::TestkitError;

/// What the protected MCP server's `whoami` tool answers.
pub const WHOAMI: &str = "a signed-in caller";

/// The authorization server's state, shared with the gateway that checks tokens. Tests read
/// the counters and change the switches through [`OAuthServers::with`].
#[derive(Default)]
#[non_exhaustive]
pub struct AuthState {
    /// The authorization server's URL (`http://127.0.0.1:PORT`).
    pub issuer: String,
    /// The protected MCP endpoint's URL: the `resource` tokens are issued for.
    pub resource: String,
    /// Whether the metadata offers dynamic client registration.
    pub offer_registration: bool,
    /// Refuse every sign-in (`error=access_denied`).
    pub refuse: bool,
    /// Client id → its redirect URIs (add pre-registered clients here).
    pub clients: HashMap<String, Vec<String>>,
    /// Codes not exchanged yet.
    pub codes: HashMap<String, Grant>,
    /// Valid access tokens (clear it to make the gateway refuse every token).
    pub access: HashSet<String>,
    /// Refresh token → client id.
    pub refresh: HashMap<String, String>,
    /// Clients registered.
    pub registrations: usize,
    /// Codes exchanged for tokens.
    pub exchanges: usize,
    /// Tokens refreshed.
    pub refreshes: usize,
    /// The query of the latest `/authorize`.
    pub authorize: HashMap<String, String>,
    next: u64,
}

/// A code issued by `/authorize`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Grant {
    /// The client it was issued to.
    pub client_id: String,
    /// The redirect URI it was sent to.
    pub redirect_uri: String,
    /// The PKCE S256 challenge the exchange must answer.
    pub challenge: String,
}

impl AuthState {
    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}-{}", self.next)
    }

    fn tokens(&mut self, client_id: &str) -> Value {
        let access = self.id("at");
        let refresh = self.id("rt");
        self.access.insert(access.clone());
        self.refresh.insert(refresh.clone(), client_id.to_owned());
        json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh})
    }
}

type Shared = Arc<Mutex<AuthState>>;

fn lock(auth: &Shared) -> MutexGuard<'_, AuthState> {
    auth.lock().unwrap_or_else(|p| p.into_inner())
}

fn oauth_error(error: &str, description: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"error": error, "error_description": description})),
    )
        .into_response()
}

async fn as_metadata(State(auth): State<Shared>) -> Response {
    let auth = lock(&auth);
    let issuer = &auth.issuer;
    let mut metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    });
    if auth.offer_registration {
        metadata["registration_endpoint"] = json!(format!("{issuer}/register"));
    }
    axum::Json(metadata).into_response()
}

async fn register(State(auth): State<Shared>, body: Bytes) -> Response {
    let mut auth = lock(&auth);
    if !auth.offer_registration {
        return StatusCode::NOT_FOUND.into_response();
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(uris) = request["redirect_uris"].as_array() else {
        return oauth_error("invalid_redirect_uri", "redirect_uris is required");
    };
    let uris: Vec<String> = uris
        .iter()
        .filter_map(|u| u.as_str().map(str::to_owned))
        .collect();
    let client_id = auth.id("client");
    auth.clients.insert(client_id.clone(), uris.clone());
    auth.registrations += 1;
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "client_id": client_id,
            "client_name": request["client_name"],
            "redirect_uris": uris,
            "token_endpoint_auth_method": "none",
        })),
    )
        .into_response()
}

/// Signs the person in at once (or refuses) and redirects back with `code` and `state`.
async fn authorize(
    State(auth): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut auth = lock(&auth);
    auth.authorize = query.clone();
    let get = |k: &str| query.get(k).cloned().unwrap_or_default();
    let (client_id, redirect_uri) = (get("client_id"), get("redirect_uri"));
    let registered = auth
        .clients
        .get(&client_id)
        .is_some_and(|uris| uris.contains(&redirect_uri));
    let Ok(mut back) = url::Url::parse(&redirect_uri) else {
        return (StatusCode::BAD_REQUEST, "the redirect URI is not a URL").into_response();
    };
    if !registered || get("response_type") != "code" {
        return (StatusCode::BAD_REQUEST, "unknown client or redirect URI").into_response();
    }
    if auth.refuse {
        back.query_pairs_mut()
            .append_pair("error", "access_denied")
            .append_pair("error_description", "The user declined the request")
            .append_pair("state", &get("state"));
    } else if get("code_challenge_method") != "S256" || get("resource") != auth.resource {
        back.query_pairs_mut()
            .append_pair("error", "invalid_request")
            .append_pair("state", &get("state"));
    } else {
        let code = auth.id("code");
        auth.codes.insert(
            code.clone(),
            Grant {
                client_id,
                redirect_uri,
                challenge: get("code_challenge"),
            },
        );
        back.query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", &get("state"));
    }
    (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
}

async fn token(State(auth): State<Shared>, body: Bytes) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let get = |k: &str| form.get(k).cloned().unwrap_or_default();
    let mut auth = lock(&auth);
    if get("resource") != auth.resource {
        return oauth_error("invalid_target", "wrong resource");
    }
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some(grant) = auth.codes.remove(&get("code")) else {
                return oauth_error("invalid_grant", "unknown code");
            };
            let verifier = get("code_verifier");
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if challenge != grant.challenge
                || grant.client_id != get("client_id")
                || grant.redirect_uri != get("redirect_uri")
            {
                return oauth_error("invalid_grant", "PKCE, client or redirect URI mismatch");
            }
            auth.exchanges += 1;
            axum::Json(auth.tokens(&grant.client_id)).into_response()
        }
        "refresh_token" => {
            let Some(client_id) = auth.refresh.remove(&get("refresh_token")) else {
                return oauth_error("invalid_grant", "unknown refresh token");
            };
            auth.refreshes += 1;
            axum::Json(auth.tokens(&client_id)).into_response()
        }
        _ => oauth_error("unsupported_grant_type", "no"),
    }
}

/// The gateway in front of the MCP server: its protected resource metadata, and `/mcp`
/// forwarded only with a valid bearer token.
#[derive(Clone)]
struct Gateway {
    auth: Shared,
    upstream: String,
    http: reqwest::Client,
}

async fn resource_metadata(State(gateway): State<Gateway>) -> Response {
    let auth = lock(&gateway.auth);
    axum::Json(json!({
        "resource": auth.resource,
        "authorization_servers": [auth.issuer],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    }))
    .into_response()
}

async fn gateway_mcp(State(gateway): State<Gateway>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let presented = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let valid = presented
        .as_ref()
        .is_some_and(|t| lock(&gateway.auth).access.contains(t));
    if !valid {
        let metadata = format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            lock(&gateway.auth).resource.trim_end_matches("/mcp")
        );
        let mut challenge = format!("Bearer resource_metadata=\"{metadata}\"");
        if presented.is_some() {
            challenge.push_str(", error=\"invalid_token\"");
        }
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, challenge)],
        )
            .into_response();
    }
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let mut forward = gateway
        .http
        .request(parts.method, &gateway.upstream)
        .body(body);
    for (name, value) in &parts.headers {
        if ![header::HOST, header::AUTHORIZATION, header::CONTENT_LENGTH].contains(name) {
            forward = forward.header(name, value);
        }
    }
    let Ok(answer) = forward.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let mut response = Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        if ![header::CONTENT_LENGTH, header::TRANSFER_ENCODING].contains(name) {
            response = response.header(name, value);
        }
    }
    response
        .body(Body::from_stream(answer.bytes_stream()))
        .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
}

/// The authorization server, the gateway and the MCP server behind it, all on 127.0.0.1, served
/// on the current tokio runtime until dropped.
///
/// ```no_run
/// # async fn demo() -> Result<(), harnessx_testkit::TestkitError> {
/// let servers = harnessx_testkit::oauth::OAuthServers::start(true).await?;
/// println!("MCP at {} signs in at {}", servers.url(), servers.issuer());
/// let exchanged = servers.with(|auth| auth.exchanges);
/// # let _ = exchanged;
/// # Ok(()) }
/// ```
pub struct OAuthServers {
    auth: Shared,
    url: String,
    issuer: String,
    _mcp: McpHttpServer,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for OAuthServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthServers")
            .field("url", &self.url)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl Drop for OAuthServers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn io(action: &'static str) -> impl FnOnce(std::io::Error) -> TestkitError {
    move |source| TestkitError::Io {
        action,
        path: "127.0.0.1:0".into(),
        source,
    }
}

impl OAuthServers {
    /// Starts the three servers; `offer_registration` says whether the authorization server
    /// offers dynamic client registration.
    pub async fn start(offer_registration: bool) -> Result<Self, TestkitError> {
        let registry = ToolRegistry::new();
        registry
            .register_with_schema(
                "whoami",
                "Say who the caller is.",
                json!({"type": "object", "properties": {}}),
                handler_fn(|_, _| async { Ok(ToolOutput::text(WHOAMI)) }),
                ToolOptions::new()
                    .permission(PermissionLevel::Allow)
                    .replay_policy(ReplayPolicy::Safe),
            )
            .map_err(|e| io("register the whoami tool on")(std::io::Error::other(e.to_string())))?;
        let mcp = McpToolServer::new(registry, PermissionManager::new(PermissionLevel::Allow))
            .serve_http("127.0.0.1:0")
            .await
            .map_err(|e| io("serve MCP on")(std::io::Error::other(e.to_string())))?;

        let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(io("bind the authorization server on"))?;
        let rs_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(io("bind the gateway on"))?;
        let issuer = format!(
            "http://{}",
            as_listener
                .local_addr()
                .map_err(io("read the address of"))?
        );
        let url = format!(
            "http://{}/mcp",
            rs_listener
                .local_addr()
                .map_err(io("read the address of"))?
        );
        let auth: Shared = Arc::new(Mutex::new(AuthState {
            issuer: issuer.clone(),
            resource: url.clone(),
            offer_registration,
            ..AuthState::default()
        }));

        let authorization_server = Router::new()
            .route("/.well-known/oauth-authorization-server", get(as_metadata))
            .route("/register", post(register))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(Arc::clone(&auth));
        let gateway = Gateway {
            auth: Arc::clone(&auth),
            upstream: mcp.url(),
            http: reqwest::Client::new(),
        };
        let resource_server = Router::new()
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .route("/mcp", any(gateway_mcp))
            .with_state(gateway);
        let tasks = vec![
            tokio::spawn(async move {
                let _ = axum::serve(as_listener, authorization_server).await;
            }),
            tokio::spawn(async move {
                let _ = axum::serve(rs_listener, resource_server).await;
            }),
        ];
        Ok(Self {
            auth,
            url,
            issuer,
            _mcp: mcp,
            tasks,
        })
    }

    /// The protected MCP endpoint (`http://127.0.0.1:PORT/mcp`, through the gateway).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The authorization server (`http://127.0.0.1:PORT`).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Reads or changes the authorization server's state.
    pub fn with<T>(&self, f: impl FnOnce(&mut AuthState) -> T) -> T {
        f(&mut lock(&self.auth))
    }
}
