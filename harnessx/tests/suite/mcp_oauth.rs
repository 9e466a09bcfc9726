//! MCP sign-in (OAuth 2.1) against a real authorization server this test starts on 127.0.0.1
//! (`harnessx-testkit`'s `oauth` fixture): metadata endpoints, dynamic client registration,
//! `/authorize` answering with a redirect, `/token` checking PKCE S256 and the `resource`,
//! refresh tokens — in front of a harnessx MCP server reached only through a gateway that checks
//! the bearer token.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{StatusCode, header};
use harnessx::mcp::{
    FileTokenStore, LoopbackRedirect, McpError, McpOAuth, McpServer, MemoryTokenStore, SignIn,
    SignInFn, SignInRequest, TokenStore, TokenStoreError, connect_mcp_server,
};
use harnessx::{PermissionLevel, PermissionManager, ToolCall, ToolRegistry};
use harnessx_testkit::oauth::OAuthServers;
use serde_json::{Value, json};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

/// The servers, with a client pre-registered for [`REDIRECT`] as `preregistered`.
async fn start(offer_registration: bool) -> OAuthServers {
    let servers = OAuthServers::start(offer_registration).await.unwrap();
    servers.with(|auth| {
        auth.clients
            .insert("preregistered".to_owned(), vec![REDIRECT.to_owned()])
    });
    servers
}

/// The person's browser: follows the sign-in address to the authorization server and returns
/// where it was redirected to, counting sign-ins; `forge` swaps the `state` for another.
fn browser(signs: &Arc<AtomicUsize>, forge: bool) -> impl SignIn {
    let signs = Arc::clone(signs);
    SignInFn(move |request: SignInRequest| {
        let signs = Arc::clone(&signs);
        async move {
            signs.fetch_add(1, Ordering::SeqCst);
            assert_eq!(request.redirect_uri, REDIRECT);
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let answer = client
                .get(&request.url)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let location = answer
                .headers()
                .get(header::LOCATION)
                .ok_or_else(|| format!("no redirect: {}", answer.status()))?
                .to_str()
                .unwrap()
                .to_owned();
            assert!(location.starts_with(REDIRECT), "{location}");
            if !forge {
                return Ok(location);
            }
            let mut forged = url::Url::parse(&location).unwrap();
            let pairs: Vec<(String, String)> = forged
                .query_pairs()
                .map(|(k, v)| {
                    let v = if k == "state" { "forged".into() } else { v };
                    (k.into_owned(), v.into_owned())
                })
                .collect();
            forged.query_pairs_mut().clear().extend_pairs(pairs);
            Ok(forged.to_string())
        }
    })
}

async fn whoami(registry: &ToolRegistry) -> String {
    let pm = PermissionManager::new(PermissionLevel::Allow);
    let result = registry
        .execute(&ToolCall::new("c1", "mcp_tickets_whoami", "{}"), Some(&pm))
        .await;
    assert!(!result.is_error, "{result:?}");
    result.content
}

fn guard<F: Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(30), f)
}

/// Connects `server` to a new registry, bounded by [`guard`]; a failed connect fails the test.
async fn connected(server: McpServer) -> (ToolRegistry, harnessx::mcp::McpConnection) {
    let registry = ToolRegistry::new();
    let connection = guard(connect_mcp_server(&registry, server))
        .await
        .unwrap()
        .unwrap();
    (registry, connection)
}

#[tokio::test]
async fn signs_in_once_with_registration_pkce_and_resource_then_reuses_the_tokens() {
    let servers = start(true).await;
    let signs = Arc::new(AtomicUsize::new(0));
    let store = MemoryTokenStore::new();
    let oauth = McpOAuth::new(REDIRECT, browser(&signs, false)).token_store(store.clone());

    let (registry, conn) =
        connected(McpServer::http("tickets", servers.url()).oauth(oauth.clone())).await;
    assert_eq!(conn.tool_names(), ["mcp_tickets_whoami"]);
    assert_eq!(whoami(&registry).await, "a signed-in caller");
    assert_eq!(signs.load(Ordering::SeqCst), 1);
    servers.with(|auth| {
        assert_eq!((auth.registrations, auth.exchanges), (1, 1));
        assert_eq!(auth.authorize["code_challenge_method"], "S256");
        assert_eq!(auth.authorize["resource"], servers.url());
        assert_eq!(auth.authorize["client_id"], "client-1");
    });
    let kept = store.load(servers.url()).await.unwrap().unwrap();
    assert_eq!(kept.client_id(), "client-1");
    assert!(kept.has_refresh_token());
    assert!(!format!("{kept:?}").contains("at-"), "{kept:?}");
    registry.close().await;

    // A second connection (a new registry, as after a restart) uses the stored tokens.
    let (registry, _) = connected(McpServer::http("tickets", servers.url()).oauth(oauth)).await;
    assert_eq!(whoami(&registry).await, "a signed-in caller");
    assert_eq!(signs.load(Ordering::SeqCst), 1, "no second sign-in");
    servers.with(|auth| assert_eq!((auth.registrations, auth.exchanges), (1, 1)));
    registry.close().await;
}

/// Two connects of one server at once (the runs of a busy agent) ask the person once: the
/// second waits for the first's sign-in and uses the tokens it stored.
#[tokio::test]
async fn connects_at_once_sign_in_once() {
    let servers = start(true).await;
    let signs = Arc::new(AtomicUsize::new(0));
    let oauth = McpOAuth::new(REDIRECT, browser(&signs, false));
    let server = McpServer::http("tickets", servers.url()).oauth(oauth);
    let ((first, _a), (second, _b)) =
        tokio::join!(connected(server.clone()), connected(server.clone()));
    assert_eq!(whoami(&first).await, "a signed-in caller");
    assert_eq!(whoami(&second).await, "a signed-in caller");
    assert_eq!(signs.load(Ordering::SeqCst), 1, "one sign-in for both");
    servers.with(|auth| assert_eq!((auth.registrations, auth.exchanges), (1, 1)));
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn a_loopback_listener_receives_the_redirect_from_the_browser() {
    let servers = start(true).await;
    let redirect = Arc::new(LoopbackRedirect::bind(0).await.unwrap());
    let uri = redirect.redirect_uri().to_owned();
    assert!(
        uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"),
        "{uri}"
    );
    let browsers = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::clone(&browsers);
    let oauth = McpOAuth::new(
        uri,
        SignInFn(move |request: SignInRequest| {
            let redirect = Arc::clone(&redirect);
            // The browser, on its own: it asks the loopback listener for a favicon, then the
            // sign-in page redirects it there.
            started.lock().unwrap().push(tokio::spawn(async move {
                let browser = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .unwrap();
                let base = request.redirect_uri.trim_end_matches("/callback");
                let favicon = browser.get(format!("{base}/favicon.ico")).send().await;
                let to = browser.get(&request.url).send().await.unwrap();
                let location = to.headers()[header::LOCATION].to_str().unwrap().to_owned();
                let page = browser.get(&location).send().await.unwrap();
                let status = page.status();
                (
                    favicon.unwrap().status(),
                    status,
                    page.text().await.unwrap(),
                )
            }));
            async move { redirect.wait().await.map_err(|e| e.to_string()) }
        }),
    );
    let (registry, _) = connected(McpServer::http("tickets", servers.url()).oauth(oauth)).await;
    assert_eq!(whoami(&registry).await, "a signed-in caller");
    let browser = browsers.lock().unwrap().pop().unwrap();
    assert!(browsers.lock().unwrap().is_empty(), "one sign-in");
    let (favicon, status, text) = guard(browser).await.unwrap().unwrap();
    assert_eq!(favicon, StatusCode::NOT_FOUND);
    assert_eq!(status, StatusCode::OK);
    assert!(text.contains("You can close this window"), "{text}");
    registry.close().await;
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn refreshes_a_token_the_server_refuses_and_an_expired_one_without_signing_in_again() {
    let servers = start(true).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config/harnessx/mcp-tokens.json");
    let signs = Arc::new(AtomicUsize::new(0));
    let oauth =
        McpOAuth::new(REDIRECT, browser(&signs, false)).token_store(FileTokenStore::new(&path));
    let server = McpServer::http("tickets", servers.url()).oauth(oauth);

    let (registry, _) = connected(server.clone()).await;
    assert_eq!(whoami(&registry).await, "a signed-in caller");
    #[cfg(unix)]
    {
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }

    // The server stops accepting the access token (revoked, or expired on its clock): the
    // next call gets a 401, the token is refreshed and the call goes through.
    servers.with(|auth| auth.access.clear());
    assert_eq!(whoami(&registry).await, "a signed-in caller");
    servers.with(|auth| assert_eq!(auth.refreshes, 1));
    registry.close().await;

    // The stored token expired long ago: connecting refreshes it before using it.
    let mut file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    file[servers.url()]["token_received_at"] = json!(0);
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let (registry, _) = connected(server).await;
    assert_eq!(whoami(&registry).await, "a signed-in caller");
    servers.with(|auth| {
        assert_eq!(auth.refreshes, 2);
        assert_eq!((auth.registrations, auth.exchanges), (1, 1));
    });
    assert_eq!(
        signs.load(Ordering::SeqCst),
        1,
        "refreshing needs no sign-in"
    );
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600, "rewritten files stay private");
    registry.close().await;
}

#[tokio::test]
async fn a_redirect_with_another_state_is_refused() {
    let servers = start(true).await;
    let signs = Arc::new(AtomicUsize::new(0));
    let store = MemoryTokenStore::new();
    let oauth = McpOAuth::new(REDIRECT, browser(&signs, true)).token_store(store.clone());
    let registry = ToolRegistry::new();
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()).oauth(oauth),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, McpError::SignInState { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the sign-in redirect for MCP server `tickets` carries a `state` that is not the one harnessx sent, so it was refused (it may be forged, or from an older sign-in); connect again to sign in again"
    );
    servers.with(|auth| assert_eq!(auth.exchanges, 0, "the code was never exchanged"));
    assert!(store.is_empty());
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_refused_sign_in_names_the_server_and_the_reason() {
    let servers = start(true).await;
    servers.with(|auth| auth.refuse = true);
    let signs = Arc::new(AtomicUsize::new(0));
    let oauth = McpOAuth::new(REDIRECT, browser(&signs, false));
    let registry = ToolRegistry::new();
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()).oauth(oauth),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, McpError::SignInRefused { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the sign-in to MCP server `tickets` was refused by its authorization server (access_denied: The user declined the request); sign in again and approve the access, or ask the server's administrator for access"
    );
    assert!(registry.is_empty());
}

#[tokio::test]
async fn without_registration_a_configured_client_id_signs_in() {
    let servers = start(false).await;
    let signs = Arc::new(AtomicUsize::new(0));
    let registry = ToolRegistry::new();
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url())
            .oauth(McpOAuth::new(REDIRECT, browser(&signs, false))),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "could not sign in to MCP server `tickets` (URL {}): its authorization server offers no dynamic client registration; register a client with it and give the client id with `McpOAuth::client_id`",
            servers.url()
        )
    );
    assert_eq!(signs.load(Ordering::SeqCst), 0);

    let oauth = McpOAuth::new(REDIRECT, browser(&signs, false)).client_id("preregistered");
    guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()).oauth(oauth),
    ))
    .await
    .unwrap()
    .unwrap();
    assert_eq!(whoami(&registry).await, "a signed-in caller");
    servers.with(|auth| {
        assert_eq!(auth.registrations, 0);
        assert_eq!(auth.authorize["client_id"], "preregistered");
    });
    registry.close().await;
}

#[tokio::test]
async fn a_sign_in_that_fails_or_never_finishes_names_the_server() {
    let servers = start(true).await;
    let registry = ToolRegistry::new();
    let closed = McpOAuth::new(
        REDIRECT,
        SignInFn(|_: SignInRequest| async { Err::<String, _>("the window was closed".to_owned()) }),
    );
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()).oauth(closed),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "could not sign in to MCP server `tickets` (URL {}): the application's sign-in did not complete (the window was closed); connect again to retry",
            servers.url()
        )
    );

    let not_a_url = McpOAuth::new(
        REDIRECT,
        SignInFn(|_: SignInRequest| async { Ok::<_, String>("code=1".to_owned()) }),
    );
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()).oauth(not_a_url),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "could not sign in to MCP server `tickets` (URL {}): the sign-in callback returned `code=1`, which is not a URL (relative URL without a base); return the full address the browser was redirected to",
            servers.url()
        )
    );

    let waiting = McpOAuth::new(
        REDIRECT,
        SignInFn(|_: SignInRequest| std::future::pending::<Result<String, String>>()),
    )
    .sign_in_timeout(Duration::from_millis(300));
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()).oauth(waiting),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the sign-in to MCP server `tickets` did not finish within 0.3 s; connect again to sign in, or raise `McpOAuth::sign_in_timeout`"
    );
    assert!(registry.is_empty());
}

#[tokio::test]
async fn a_protected_server_without_sign_in_says_what_to_do() {
    let servers = start(true).await;
    let registry = ToolRegistry::new();
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, McpError::SignInRequired { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "MCP server `tickets` (URL {}) needs a sign-in (it answered HTTP 401); configure it with `McpServer::oauth` (feature `mcp-oauth`) or give a token with `bearer_token`",
            servers.url()
        )
    );
    let err = guard(connect_mcp_server(
        &registry,
        McpServer::http("tickets", servers.url()).bearer_token("stale"),
    ))
    .await
    .unwrap()
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "MCP server `tickets` (URL {}) failed the MCP handshake: the server refused the bearer token (HTTP 401); check that the token is current and meant for this server",
            servers.url()
        )
    );
}

#[cfg(unix)]
#[tokio::test]
async fn the_token_file_must_stay_private_and_whole() {
    use std::os::unix::fs::PermissionsExt;

    let servers = start(true).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    let signs = Arc::new(AtomicUsize::new(0));
    let oauth =
        McpOAuth::new(REDIRECT, browser(&signs, false)).token_store(FileTokenStore::new(&path));
    let server = McpServer::http("tickets", servers.url()).oauth(oauth);
    let (registry, _) = connected(server.clone()).await;
    registry.close().await;

    // Opened up to other users: refused, by the store and so by the connect.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = FileTokenStore::new(&path);
    let err = store.load(servers.url()).await.unwrap_err();
    let expected = format!(
        "the token file {p} can be read or written by other users (mode 644); run `chmod 600 {p}` or delete it to sign in again",
        p = path.display()
    );
    assert!(matches!(err, TokenStoreError::Permissions { .. }));
    assert_eq!(err.to_string(), expected);
    let registry = ToolRegistry::new();
    let err = guard(connect_mcp_server(&registry, server.clone()))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, McpError::SignIn { .. }), "{err:?}");
    assert!(err.to_string().contains(&expected), "{err}");
    assert!(
        err.to_string()
            .starts_with("could not sign in to MCP server `tickets`"),
        "{err}"
    );
    assert_eq!(
        signs.load(Ordering::SeqCst),
        1,
        "no sign-in over a bad store"
    );

    // Not JSON: refused with what to do.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&path, "{not json").unwrap();
    let err = store.load(servers.url()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the token file {} is not a harnessx token file (key must be a string at line 1 column 2); delete it to sign in again",
            path.display()
        )
    );

    // A folder where the file should be; a name so long that no file beside it can be
    // created (the new file is written beside the old one, then renamed over it).
    let folder = dir.path().join("folder.json");
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    let err = FileTokenStore::new(&folder).load("k").await.unwrap_err();
    assert!(matches!(err, TokenStoreError::Read { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "could not read the token file {}; check that harnessx may read it",
            folder.display()
        )
    );
    let long_name = dir.path().join(format!("{}.json", "t".repeat(245)));
    let kept = MemoryTokenStore::new();
    let tokens = {
        // Any real tokens will do: take the ones of a fresh sign-in.
        let oauth = McpOAuth::new(REDIRECT, browser(&signs, false)).token_store(kept.clone());
        let (registry, _) = connected(McpServer::http("tickets", servers.url()).oauth(oauth)).await;
        registry.close().await;
        kept.load(servers.url()).await.unwrap().unwrap()
    };
    let err = FileTokenStore::new(&long_name)
        .save("k", tokens)
        .await
        .unwrap_err();
    assert!(matches!(err, TokenStoreError::Write { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "could not write the token file {}; check that its folder can be created and written",
            long_name.display()
        )
    );
}
