//! A small HTTP/1.1 server on 127.0.0.1 for the web tests: fixed replies per path, one request
//! per connection.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One canned reply.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Wait this long before answering (to trip timeouts).
    pub delay: Duration,
}

impl Reply {
    pub fn new(status: u16, content_type: Option<&str>, body: impl Into<Vec<u8>>) -> Self {
        let headers = content_type
            .map(|ct| vec![("Content-Type".to_owned(), ct.to_owned())])
            .unwrap_or_default();
        Self {
            status,
            headers,
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self::new(200, Some(content_type), body)
    }

    pub fn html(body: &str) -> Self {
        Self::ok("text/html; charset=utf-8", body)
    }

    pub fn redirect(status: u16, location: &str) -> Self {
        let mut r = Self::new(status, None, Vec::new());
        r.headers.push(("Location".to_owned(), location.to_owned()));
        r
    }

    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A running server; it stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    requested: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Serves `routes` (path → reply); other paths get 404.
    pub async fn start(routes: Vec<(&str, Reply)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<HashMap<String, Reply>> =
            Arc::new(routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect());
        let requested = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&requested);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let routes = Arc::clone(&routes);
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let _ = serve(stream, &routes, &log).await;
                });
            }
        });
        Self {
            addr,
            requested,
            task,
        }
    }

    /// The paths requested so far, in order.
    pub fn requested(&self) -> Vec<String> {
        self.requested.lock().unwrap().clone()
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `http://localhost:PORT{path}`: the same server under a name that needs DNS.
    pub fn localhost_url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.addr.port())
    }
}

async fn serve(
    mut stream: TcpStream,
    routes: &HashMap<String, Reply>,
    log: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        request.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&request);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
    log.lock().unwrap().push(path.clone());
    let reply = routes
        .get(&path)
        .cloned()
        .unwrap_or_else(|| Reply::new(404, Some("text/plain"), "no such page here"));
    tokio::time::sleep(reply.delay).await;
    let mut head = format!("HTTP/1.1 {} Whatever\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        reply.body.len()
    ));
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(&reply.body).await?;
    stream.shutdown().await
}
