//! Connecting with sign-in: stored tokens first, then the sign-in the server's challenge asks
//! for, then one more connection attempt with the new tokens.

use std::sync::Arc;

use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest,
    AuthorizationSession,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use super::store::KeyedStore;
use super::{McpOAuth, SignInRequest};
use crate::{McpError, McpServer, error_chain};

/// What one connection attempt came to.
enum Attempt<H: ClientHandler> {
    Connected(RunningService<RoleClient, H>),
    /// The server wants (new) tokens; its `WWW-Authenticate` challenge when it sent one.
    NeedsSignIn(Option<String>),
}

/// Connects to an HTTP server that may need sign-in: with the stored tokens (refreshed when
/// expired), else after signing in through the application's callback.
pub(crate) async fn connect<H>(
    server: &McpServer,
    oauth: &McpOAuth,
    url: &str,
    config: StreamableHttpClientTransportConfig,
    handler: H,
) -> Result<RunningService<RoleClient, H>, McpError>
where
    H: ClientHandler + Clone,
{
    let manager = restored(server, oauth, url).await?.0;
    let challenge = match attempt(server, manager, config.clone(), handler.clone()).await? {
        Attempt::Connected(service) => return Ok(service),
        Attempt::NeedsSignIn(challenge) => challenge,
    };
    // One sign-in per server at a time. A connect that waited here finds the tokens the one
    // before it stored, and tries them before asking the person again.
    let lock = oauth.sign_in_lock(url);
    let _signing_in = lock.lock().await;
    let challenge = match restored(server, oauth, url).await? {
        (manager, true) => match attempt(server, manager, config.clone(), handler.clone()).await? {
            Attempt::Connected(service) => return Ok(service),
            Attempt::NeedsSignIn(challenge) => challenge,
        },
        (_, false) => challenge,
    };
    tracing::info!(server = %server.name, "MCP server needs sign-in");
    let manager = tokio::time::timeout(
        oauth.sign_in_timeout,
        sign_in(server, oauth, url, challenge),
    )
    .await
    .map_err(|_| McpError::SignInTimeout {
        server: server.name.clone(),
        seconds: oauth.sign_in_timeout.as_secs_f64(),
    })??;
    match attempt(server, manager, config, handler).await? {
        Attempt::Connected(service) => Ok(service),
        Attempt::NeedsSignIn(_) => Err(sign_in_failed(
            server,
            "the server refused the token the sign-in just gave; check that the authorization \
             server issues tokens for this server's URL (the `resource` parameter) with the \
             scopes it needs"
                .to_owned(),
        )),
    }
}

/// A manager over this server's entry of the token store, with the stored tokens loaded (and
/// whether there were any).
async fn restored(
    server: &McpServer,
    oauth: &McpOAuth,
    url: &str,
) -> Result<(AuthorizationManager, bool), McpError> {
    let mut manager = manager(server, oauth, url).await?;
    // With tokens in the store this reads the server's metadata, so it shares the deadline.
    let restored = tokio::time::timeout(server.connect_timeout, manager.initialize_from_store())
        .await
        .map_err(|_| connect_timeout(server))?;
    match restored {
        Ok(loaded) => Ok((manager, loaded)),
        Err(e @ AuthError::CredentialStoreError(_)) => Err(sign_in_failed(
            server,
            format!(
                "the stored tokens could not be read ({}); fix the token store or clear this \
                 server's entry to sign in again",
                error_chain(&e)
            ),
        )),
        Err(e) => Err(sign_in_failed(
            server,
            format!(
                "its authorization server could not be reached to check the stored tokens ({}); \
                 check that it is running, then connect again",
                error_chain(&e)
            ),
        )),
    }
}

/// An rmcp authorization manager for `url` over this server's entry of the token store.
async fn manager(
    server: &McpServer,
    oauth: &McpOAuth,
    url: &str,
) -> Result<AuthorizationManager, McpError> {
    let created = if oauth.allow_private_addresses {
        AuthorizationManager::new_allowing_private_addresses(url).await
    } else {
        AuthorizationManager::new(url).await
    };
    let mut manager = created.map_err(|e| {
        sign_in_failed(
            server,
            format!("the OAuth client could not be set up ({})", error_chain(&e)),
        )
    })?;
    manager.set_credential_store(KeyedStore {
        store: Arc::clone(&oauth.store),
        key: url.to_owned(),
    });
    Ok(manager)
}

/// One connection attempt under the connect deadline, with whatever tokens `manager` holds.
async fn attempt<H>(
    server: &McpServer,
    manager: AuthorizationManager,
    config: StreamableHttpClientTransportConfig,
    handler: H,
) -> Result<Attempt<H>, McpError>
where
    H: ClientHandler,
{
    let client = AuthClient::new(reqwest::Client::new(), manager);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    match tokio::time::timeout(server.connect_timeout, handler.serve(transport)).await {
        Ok(Ok(service)) => Ok(Attempt::Connected(service)),
        Ok(Err(e)) if needs_sign_in(&e) => {
            Ok(Attempt::NeedsSignIn(e.auth_challenge().map(str::to_owned)))
        }
        Ok(Err(e)) => Err(McpError::Handshake {
            server: server.name.clone(),
            location: server.location(),
            reason: error_chain(&e),
        }),
        Err(_) => Err(connect_timeout(server)),
    }
}

fn needs_sign_in(e: &ClientInitializeError) -> bool {
    e.is_authorization_required() || e.auth_challenge().is_some()
}

/// Discovery, client registration, the person's sign-in and the code exchange. Returns a
/// manager holding the new tokens (also saved in the store).
async fn sign_in(
    server: &McpServer,
    oauth: &McpOAuth,
    url: &str,
    challenge: Option<String>,
) -> Result<AuthorizationManager, McpError> {
    let mut manager = manager(server, oauth, url).await?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|e| {
            sign_in_failed(
                server,
                format!(
                    "its authorization server could not be found ({}); check that the server \
                     publishes OAuth protected resource metadata (RFC 9728) naming a reachable \
                     authorization server",
                    error_chain(&e)
                ),
            )
        })?;
    if oauth.client_id.is_none() && resolution.metadata.registration_endpoint.is_none() {
        return Err(sign_in_failed(
            server,
            "its authorization server offers no dynamic client registration; register a client \
             with it and give the client id with `McpOAuth::client_id`"
                .to_owned(),
        ));
    }
    manager.set_metadata(resolution.metadata);

    let mut request = AuthorizationRequest::new(oauth.redirect_uri.clone())
        .with_client_name(oauth.client_name.clone());
    if let Some(client_id) = &oauth.client_id {
        request = request.with_preregistered_client(client_id.clone());
        if let Some(secret) = &oauth.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.clone());
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| sign_in_failed(server, describe(&e)))?;
    let sent_state = url::Url::parse(&session.auth_url)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| {
            sign_in_failed(
                server,
                "the sign-in address has no `state` (an internal error)".to_owned(),
            )
        })?;

    let request = SignInRequest {
        server: server.name.clone(),
        resource: url.to_owned(),
        url: session.auth_url.clone(),
        redirect_uri: session.redirect_uri.clone(),
    };
    let redirect = oauth.sign_in.sign_in(request).await.map_err(|reason| {
        sign_in_failed(
            server,
            format!(
                "the application's sign-in did not complete ({reason}); connect again to retry"
            ),
        )
    })?;
    let callback = check_redirect(server, &redirect, &sent_state)?;
    session
        .handle_callback_with_issuer(
            &callback.code,
            &callback.csrf_token,
            callback.issuer.as_deref(),
        )
        .await
        .map_err(|e| sign_in_failed(server, describe(&e)))?;
    tracing::info!(server = %server.name, "signed in to MCP server");
    Ok(session.auth_manager)
}

/// Reads the redirect the browser came back with: the `state` must be the one sent, an `error`
/// is a refused sign-in, else there must be a `code`.
fn check_redirect(
    server: &McpServer,
    redirect: &str,
    sent_state: &str,
) -> Result<AuthorizationCallback, McpError> {
    let parsed = url::Url::parse(redirect).map_err(|e| {
        sign_in_failed(
            server,
            format!(
                "the sign-in callback returned `{redirect}`, which is not a URL ({e}); return the \
                 full address the browser was redirected to"
            ),
        )
    })?;
    let param = |name: &str| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if param("state").as_deref() != Some(sent_state) {
        return Err(McpError::SignInState {
            server: server.name.clone(),
        });
    }
    if let Some(error) = param("error") {
        return Err(McpError::SignInRefused {
            server: server.name.clone(),
            error,
            description: param("error_description").unwrap_or_default(),
        });
    }
    AuthorizationCallback::from_redirect_url(redirect).map_err(|_| {
        sign_in_failed(
            server,
            "the redirect has no `code`; return the full address the browser was redirected to"
                .to_owned(),
        )
    })
}

/// What went wrong in rmcp's part of the sign-in, worded with what to do.
fn describe(e: &AuthError) -> String {
    match e {
        AuthError::PkceUnsupported => "its authorization server does not support PKCE with \
             S256, which the MCP authorization spec requires; use an authorization server that does"
            .to_owned(),
        AuthError::RegistrationFailed(reason) => format!(
            "registering harnessx as a client failed ({reason}); register a client with the \
             authorization server and give its id with `McpOAuth::client_id`"
        ),
        AuthError::TokenExchangeFailed(reason) => format!(
            "the authorization server did not exchange the sign-in code for a token ({reason}); \
             connect again to sign in again"
        ),
        AuthError::AuthorizationServerMismatch { .. }
        | AuthError::AuthorizationServerMissingIssuer { .. } => format!(
            "the redirect did not come from the expected authorization server ({e}); connect \
             again to sign in again"
        ),
        other => format!("{}; connect again to retry", error_chain(other)),
    }
}

fn sign_in_failed(server: &McpServer, reason: String) -> McpError {
    McpError::SignIn {
        server: server.name.clone(),
        location: server.location(),
        reason,
    }
}

fn connect_timeout(server: &McpServer) -> McpError {
    McpError::ConnectTimeout {
        server: server.name.clone(),
        location: server.location(),
        seconds: server.connect_timeout.as_secs_f64(),
    }
}
