#![allow(clippy::unwrap_used)]
//! A loopback HTTP server replaying canned provider responses, helpers shared by the provider
//! tests, and the tests of choosing a model from the environment.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt};
use harnessx::model::{ModelError, ModelStreamEvent, Provider, from_env_with, parse_model_spec};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Captured {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// How a streamed body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Chunked encoding, properly terminated.
    Complete,
    /// No length and no chunking: the body is whatever came before the server closed.
    CloseDelimited,
    /// Chunked encoding, connection dropped without the final chunk.
    Abort,
}

/// A canned reply.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: Vec<String>,
    streamed: Option<End>,
    /// Stop after this many chunks until the gate is opened.
    pause: Option<(usize, Arc<tokio::sync::Notify>)>,
}

impl Reply {
    /// A complete body with a Content-Length.
    pub fn body(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.into())],
            chunks: vec![body.into()],
            streamed: None,
            pause: None,
        }
    }

    pub fn json(status: u16, body: Value) -> Self {
        Self::body(status, "application/json", body.to_string())
    }

    /// A `text/event-stream` body written chunk by chunk with a flush and a short pause after each.
    pub fn sse<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: chunks.into_iter().map(Into::into).collect(),
            streamed: Some(End::Complete),
            pause: None,
        }
    }

    pub fn ending(mut self, end: End) -> Self {
        self.streamed = Some(end);
        self
    }

    /// Holds the rest of the body back after `chunks` chunks until `gate` is notified.
    pub fn pause_after(mut self, chunks: usize, gate: Arc<tokio::sync::Notify>) -> Self {
        self.pause = Some((chunks, gate));
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// `data: {json}\n\n` for each value: one OpenAI-style SSE event per chunk.
pub fn data_events(values: &[Value]) -> Vec<String> {
    values.iter().map(|v| format!("data: {v}\n\n")).collect()
}

/// A loopback server on 127.0.0.1 with an ephemeral port. Each connection gets the next reply and
/// is closed after it.
pub struct Server {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Captured>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(replies);
        let next = Arc::new(AtomicUsize::new(0));
        let captured = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let (replies, next, captured) = (
                    Arc::clone(&replies),
                    Arc::clone(&next),
                    Arc::clone(&captured),
                );
                tokio::spawn(async move {
                    let _ = serve(socket, &replies, &next, &captured).await;
                });
            }
        });
        Self {
            base_url,
            requests,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Captured> {
        self.requests.lock().unwrap().clone()
    }

    pub fn only_request(&self) -> Captured {
        let all = self.requests();
        assert_eq!(all.len(), 1, "expected exactly one request");
        all.into_iter().next().unwrap()
    }
}

async fn serve(
    mut socket: TcpStream,
    replies: &[Reply],
    next: &AtomicUsize,
    captured: &Mutex<Vec<Captured>>,
) -> std::io::Result<()> {
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    captured.lock().unwrap().push(request);
    let n = next.fetch_add(1, Ordering::SeqCst);
    let fallback;
    let reply = match replies.get(n) {
        Some(r) => r,
        None => {
            fallback = Reply::body(
                500,
                "text/plain",
                format!("loopback: no canned reply for request {n}"),
            );
            &fallback
        }
    };
    let mut head = format!("HTTP/1.1 {} X\r\nconnection: close\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match reply.streamed {
        None => {
            let body = reply.chunks.concat();
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
        Some(end) => {
            if end != End::CloseDelimited {
                head.push_str("transfer-encoding: chunked\r\n");
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.flush().await?;
            for (i, chunk) in reply.chunks.iter().enumerate() {
                if let Some((at, gate)) = &reply.pause
                    && *at == i
                {
                    gate.notified().await;
                }
                if end == End::CloseDelimited {
                    socket.write_all(chunk.as_bytes()).await?;
                } else {
                    let framed = format!("{:x}\r\n{chunk}\r\n", chunk.len());
                    socket.write_all(framed.as_bytes()).await?;
                }
                socket.flush().await?;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            if end == End::Complete {
                socket.write_all(b"0\r\n\r\n").await?;
            }
        }
    }
    socket.flush().await?;
    socket.shutdown().await
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<Captured>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(Captured {
        method,
        path,
        headers,
        body,
    }))
}

/// Every item of a model stream: the events, and the error that ended it, if any.
pub async fn drain(
    stream: impl Stream<Item = Result<ModelStreamEvent, ModelError>>,
) -> (Vec<ModelStreamEvent>, Option<ModelError>) {
    let mut events = Vec::new();
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => {
                assert!(
                    stream.next().await.is_none(),
                    "the stream goes on after an error"
                );
                return (events, Some(e));
            }
        }
    }
    (events, None)
}

/// The text deltas of a stream, concatenated, and how many there were.
pub fn text_of(events: &[ModelStreamEvent]) -> (String, usize) {
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ModelStreamEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (deltas.concat(), deltas.len())
}

/// The final response of a stream (its last event).
pub fn completed(events: &[ModelStreamEvent]) -> harnessx::ModelResponse {
    match events.last() {
        Some(ModelStreamEvent::Completed { response }) => response.clone(),
        other => panic!("the stream did not end with Completed: {other:?}"),
    }
}

/// A request holding one user message.
pub fn ask(text: &str) -> harnessx::ModelRequest {
    harnessx::ModelRequest::new(vec![harnessx::Message::user(text)])
}

/// A base URL nothing listens on.
pub async fn dead_base_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

fn env_error(pairs: &[(&str, &str)]) -> String {
    match from_env_with(env(pairs)) {
        Ok(m) => panic!(
            "expected an error, got {:?}",
            m.map(|m| m.name().to_owned())
        ),
        Err(e) => e.to_string(),
    }
}

#[test]
fn model_specs_parse_with_clear_errors() {
    let spec = parse_model_spec(" OpenAI:gpt-4o-mini ").unwrap();
    assert_eq!(
        (spec.provider, spec.model.as_str()),
        (Provider::OpenAi, "gpt-4o-mini")
    );
    let spec = parse_model_spec("openai:qwen3:8b").unwrap();
    assert_eq!(spec.model, "qwen3:8b");
    assert_eq!(spec.to_string(), "openai:qwen3:8b");
    let spec = parse_model_spec("anthropic:claude-sonnet-4-5").unwrap();
    assert_eq!(spec.provider, Provider::Anthropic);

    let err = |s: &str| parse_model_spec(s).unwrap_err().to_string();
    assert_eq!(
        err(""),
        "the model spec is empty: write `provider:model`, for example `openai:gpt-4o-mini` or \
         `anthropic:claude-sonnet-4-5`"
    );
    assert_eq!(
        err("gpt-4o"),
        "the model spec `gpt-4o` names no provider: write `provider:model`, for example \
         `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`"
    );
    assert_eq!(
        err("gemini:pro"),
        "the model spec `gemini:pro` names the unknown provider `gemini`: use `openai` (also for \
         OpenAI-compatible servers such as vLLM, Ollama, llama.cpp, LM Studio and OpenRouter, with \
         OPENAI_BASE_URL) or `anthropic`"
    );
    assert_eq!(
        err("anthropic:"),
        "the model spec `anthropic:` has no model name after `anthropic:`: write `provider:model`, \
         for example `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`"
    );
}

#[test]
fn from_env_builds_the_named_provider() {
    assert!(from_env_with(env(&[])).unwrap().is_none());
    assert!(
        from_env_with(env(&[("HARNESSX_MODEL", "  ")]))
            .unwrap()
            .is_none()
    );

    let m = from_env_with(env(&[
        ("HARNESSX_MODEL", "openai:gpt-4o-mini"),
        ("OPENAI_API_KEY", "sk"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!(m.name(), "openai:gpt-4o-mini");
    let m = from_env_with(env(&[
        ("HARNESSX_MODEL", "openai:llama3.2"),
        ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!(m.name(), "openai:llama3.2");
    let m = from_env_with(env(&[
        ("HARNESSX_MODEL", "anthropic:claude-sonnet-4-5"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
    ]))
    .unwrap()
    .unwrap();
    assert_eq!(m.name(), "anthropic:claude-sonnet-4-5");
}

#[test]
fn from_env_errors_name_the_variable() {
    assert_eq!(
        env_error(&[("HARNESSX_MODEL", "gpt-4o")]),
        "HARNESSX_MODEL: the model spec `gpt-4o` names no provider: write `provider:model`, for \
         example `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`"
    );
    assert_eq!(
        env_error(&[("HARNESSX_MODEL", "openai:gpt-4o-mini")]),
        "HARNESSX_MODEL is `openai:gpt-4o-mini`, but OPENAI_API_KEY is not set: set OPENAI_API_KEY \
         to your API key, or set OPENAI_BASE_URL to a server that needs no key"
    );
    assert_eq!(
        env_error(&[
            ("HARNESSX_MODEL", "anthropic:claude-sonnet-4-5"),
            ("ANTHROPIC_API_KEY", "")
        ]),
        "HARNESSX_MODEL is `anthropic:claude-sonnet-4-5`, but ANTHROPIC_API_KEY is not set: set \
         ANTHROPIC_API_KEY to your API key, or set ANTHROPIC_BASE_URL to a server that needs no key"
    );
    assert_eq!(
        env_error(&[
            ("HARNESSX_MODEL", "openai:x"),
            ("OPENAI_BASE_URL", "localhost:11434")
        ]),
        "OPENAI_BASE_URL is `localhost:11434`, which is not a usable base URL (the scheme is \
         `localhost`); set it to an http(s) URL such as `http://localhost:11434/v1`"
    );
    assert_eq!(
        env_error(&[
            ("HARNESSX_MODEL", "anthropic:x"),
            ("ANTHROPIC_BASE_URL", "not a url")
        ]),
        "ANTHROPIC_BASE_URL is `not a url`, which is not a usable base URL (relative URL without a \
         base); set it to an http(s) URL such as `http://localhost:11434/v1`"
    );
}
