//! Streamable HTTP: rmcp's tower service on a hyper HTTP/1 listener.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::handler::Handler;

/// A running streamable HTTP MCP server. Dropping it stops the server like
/// [`shutdown`](Self::shutdown) does, without waiting.
#[derive(Debug)]
pub struct McpHttpServer {
    address: SocketAddr,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl McpHttpServer {
    /// The address the server listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The MCP endpoint, `http://<address>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Stops accepting connections, ends every session and waits for the listener to stop.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

pub(super) fn serve(
    handler: Handler,
    listener: TcpListener,
    allowed_origins: &[String],
    api_keys: Vec<String>,
) -> std::io::Result<McpHttpServer> {
    let api_keys = Arc::new(api_keys);
    let address = listener.local_addr()?;
    let cancel = CancellationToken::new();
    // rmcp checks `Host` against loopback names by default; `Origin` is checked against the
    // list, and an empty list refuses every page.
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(cancel.child_token())
        .with_allowed_origins(allowed_origins.iter().cloned())
        .enforce_origin_validation();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let stop = cancel.clone();
    let task = tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                () = stop.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "MCP HTTP server: accepting a connection failed");
                        continue;
                    }
                },
            };
            let inner = TowerToHyperService::new(service.clone());
            let keys = Arc::clone(&api_keys);
            let service = hyper::service::service_fn(
                move |request: hyper::Request<hyper::body::Incoming>| {
                    let inner = inner.clone();
                    let keys = Arc::clone(&keys);
                    async move {
                        if !authorized(&request, &keys) {
                            return Ok::<_, std::convert::Infallible>(unauthorized());
                        }
                        let ending = request.method() == hyper::Method::DELETE;
                        let request = match checked(request).await {
                            Ok(request) => request,
                            Err(answer) => return Ok(answer),
                        };
                        let mut response = hyper::service::Service::call(&inner, request).await?;
                        answer_ending_with_ok(ending, &mut response);
                        Ok(response.map(boxed))
                    }
                },
            );
            let stop = stop.clone();
            tokio::spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                tokio::pin!(connection);
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, "MCP HTTP connection ended with an error");
                        }
                    }
                    () = stop.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        let _ = connection.await;
                    }
                }
            });
        }
    });
    Ok(McpHttpServer {
        address,
        cancel,
        task: Some(task),
    })
}

/// The largest request body read for the checks (larger ones are refused with 413).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

type Body = http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, std::io::Error>;

fn boxed<B>(body: B) -> Body
where
    B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: std::fmt::Display,
{
    use http_body_util::BodyExt;
    body.map_err(|e| std::io::Error::other(e.to_string()))
        .boxed_unsync()
}

/// Reads a `POST` body and answers it here when [`super::checks::check`] says so (a parse
/// error with 400, invalid params with 200, both as JSON-RPC error responses); otherwise hands
/// the request on with the body read.
async fn checked(
    request: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Request<http_body_util::Full<bytes::Bytes>>, hyper::Response<Body>> {
    use http_body_util::BodyExt;
    let (parts, body) = request.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Err(json_answer(
                hyper::StatusCode::PAYLOAD_TOO_LARGE,
                &serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": super::checks::PARSE_ERROR, "message": format!("the message is larger than {MAX_BODY_BYTES} bytes or could not be read")}}),
            ));
        }
    };
    if parts.method == hyper::Method::POST
        && let super::checks::Verdict::Answer(answer) = super::checks::check(&bytes)
    {
        let status = if answer["error"]["code"] == super::checks::PARSE_ERROR {
            hyper::StatusCode::BAD_REQUEST
        } else {
            hyper::StatusCode::OK
        };
        return Err(json_answer(status, &answer));
    }
    Ok(hyper::Request::from_parts(
        parts,
        http_body_util::Full::new(bytes),
    ))
}

fn json_answer(status: hyper::StatusCode, body: &serde_json::Value) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(boxed(http_body_util::Full::new(bytes::Bytes::from(
        serde_json::to_vec(body).unwrap_or_default(),
    ))));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Ending a session (`DELETE`) answers `200 OK` where rmcp answers `202 Accepted`: the official
/// Python SDK client treats anything but 200 or 204 as a failed termination.
fn answer_ending_with_ok<B>(ending: bool, response: &mut hyper::Response<B>) {
    if ending && response.status() == hyper::StatusCode::ACCEPTED {
        *response.status_mut() = hyper::StatusCode::OK;
    }
}

/// Whether `request` carries one of `keys` as its bearer token (any request when there are none).
/// Keys are compared in time that does not depend on where they differ.
fn authorized<B>(request: &hyper::Request<B>, keys: &[String]) -> bool {
    if keys.is_empty() {
        return true;
    }
    let Some(token) = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let mut found = subtle::Choice::from(0);
    for key in keys {
        found |= subtle::ConstantTimeEq::ct_eq(key.as_bytes(), token.as_bytes());
    }
    found.into()
}

fn unauthorized() -> hyper::Response<Body> {
    let body = http_body_util::Full::new(bytes::Bytes::from_static(
        b"Unauthorized: send `Authorization: Bearer <key>` with a key this server was given",
    ));
    let mut response = hyper::Response::new(boxed(body));
    *response.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::server::McpToolServer;
    use harnessx_core::{PermissionManager, ToolRegistry};

    /// The status line of an `initialize` request to `url` sent with these extra headers.
    async fn status(address: std::net::SocketAddr, headers: &str) -> String {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reply = vec![0; 64];
        let n = stream.read(&mut reply).await.unwrap();
        String::from_utf8_lossy(&reply[..n])
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    #[tokio::test]
    async fn with_keys_a_request_needs_one() {
        let server = McpToolServer::new(ToolRegistry::new(), PermissionManager::default())
            .require_api_keys(["key-one-0123456789", "key-two-0123456789"]);
        let http = server.serve_http("127.0.0.1:0").await.unwrap();
        let at = http.local_addr();
        assert_eq!(status(at, "").await, "HTTP/1.1 401 Unauthorized");
        assert_eq!(
            status(at, "Authorization: Bearer key-one-012345678X\r\n").await,
            "HTTP/1.1 401 Unauthorized"
        );
        assert_eq!(
            status(at, "Authorization: Bearer key-two-0123456789\r\n").await,
            "HTTP/1.1 200 OK"
        );
        http.shutdown().await;
    }

    #[tokio::test]
    async fn a_page_from_a_foreign_origin_is_refused_and_a_local_or_allowed_one_served() {
        let server = McpToolServer::new(ToolRegistry::new(), PermissionManager::default());
        let http = server.clone().serve_http("127.0.0.1:0").await.unwrap();
        let at = http.local_addr();
        assert_eq!(
            status(at, "Origin: https://attacker.example\r\n").await,
            "HTTP/1.1 403 Forbidden"
        );
        assert_eq!(
            status(at, "Origin: http://localhost:5173\r\n").await,
            "HTTP/1.1 200 OK"
        );
        assert_eq!(
            status(at, "").await,
            "HTTP/1.1 200 OK",
            "no Origin: not a page"
        );
        http.shutdown().await;

        let http = server
            .allow_origins(["https://tools.example.com:443"])
            .serve_http("127.0.0.1:0")
            .await
            .unwrap();
        let at = http.local_addr();
        assert_eq!(
            status(at, "Origin: https://tools.example.com\r\n").await,
            "HTTP/1.1 200 OK"
        );
        assert_eq!(
            status(at, "Origin: http://localhost:5173\r\n").await,
            "HTTP/1.1 403 Forbidden"
        );
        http.shutdown().await;
    }
}
