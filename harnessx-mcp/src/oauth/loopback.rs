//! Receiving the sign-in redirect on a loopback port (RFC 8252 §7.3), for applications that
//! open the system browser.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The most of a request harnessx reads from the browser.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// How long one browser connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

const PAGE: &str = "<!doctype html><meta charset=\"utf-8\"><title>Signed in</title>\
<p>You can close this window and go back to the application.</p>";

/// A listener on `127.0.0.1` that receives the browser's redirect after sign-in: its
/// [`redirect_uri`](Self::redirect_uri) goes to [`McpOAuth::new`](super::McpOAuth::new), and
/// [`wait`](Self::wait) in the [`SignIn`](super::SignIn) callback returns the redirect, after
/// showing the person a page saying they can close the window.
///
/// ```no_run
/// use std::sync::Arc;
/// use harnessx::mcp::{LoopbackRedirect, McpOAuth, SignInFn, SignInRequest};
///
/// # async fn demo() -> std::io::Result<()> {
/// let redirect = Arc::new(LoopbackRedirect::bind(0).await?); // any free port
/// let uri = redirect.redirect_uri().to_owned();
/// let oauth = McpOAuth::new(uri, SignInFn(move |request: SignInRequest| {
///     let redirect = Arc::clone(&redirect);
///     async move {
///         println!("Opening {} in your browser", request.url); // or open it for the person
///         redirect.wait().await.map_err(|e| e.to_string())
///     }
/// }));
/// # let _ = oauth; Ok(()) }
/// ```
#[derive(Debug)]
pub struct LoopbackRedirect {
    listener: TcpListener,
    redirect_uri: String,
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1:<port>` (port 0 picks a free one) for redirects to `/callback`.
    pub async fn bind(port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        Ok(Self {
            listener,
            redirect_uri: format!("http://{address}/callback"),
        })
    }

    /// The redirect URI, `http://127.0.0.1:<port>/callback`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits for the browser's request to `/callback` and returns its full address (with
    /// `code` and `state`, or `error`). Other requests (a browser's `/favicon.ico`) get a 404
    /// and the wait goes on. Put a deadline on it with `McpOAuth::sign_in_timeout`.
    pub async fn wait(&self) -> std::io::Result<String> {
        loop {
            let (mut stream, _) = self.listener.accept().await?;
            let target = match tokio::time::timeout(REQUEST_TIMEOUT, read_target(&mut stream)).await
            {
                Ok(Ok(target)) => target,
                Ok(Err(_)) | Err(_) => continue,
            };
            let Some(target) = target.filter(|t| t == "/callback" || t.starts_with("/callback?"))
            else {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{PAGE}",
                PAGE.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            let base = self.redirect_uri.trim_end_matches("/callback");
            return Ok(format!("{base}{target}"));
        }
    }
}

/// The request target of a `GET` (`/callback?code=..`), or `None` for another method.
async fn read_target(stream: &mut tokio::net::TcpStream) -> std::io::Result<Option<String>> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0_u8; 1024];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        if buffer.len() >= MAX_REQUEST_BYTES {
            return Ok(None);
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let text = String::from_utf8_lossy(&buffer);
    let mut words = text.lines().next().unwrap_or_default().split(' ');
    Ok(match (words.next(), words.next()) {
        (Some("GET"), Some(target)) => Some(target.to_owned()),
        _ => None,
    })
}
