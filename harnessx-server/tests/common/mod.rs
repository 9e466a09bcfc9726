//! A server on 127.0.0.1 (port 0) over an in-memory store, a client with its key, and an SSE
//! frame reader.

#![allow(dead_code)]

use std::time::Duration;

use futures::StreamExt;
use harnessx_server::{Config, Running, ServeOptions, serve};
use serde_json::Value;

pub const KEY: &str = "test-key-0123456789abcdef";

/// More than the default body limit.
pub const HUGE: usize = 70 * 1024;

/// The agents every test server has.
pub fn config_text(workspace: &std::path::Path) -> String {
    format!(
        r#"
[agents.replier]
model = "script"
script = [{{ reply = "hello" }}]

[agents.asker]
model = "script"
script = [
  {{ ask = {{ questions = [{{ header = "Format", question = "Which format?", options = [{{ label = "CSV" }}, {{ label = "JSON" }}] }}] }} }},
  {{ reply = "saw: {{result}}" }},
]

[agents.asker2]
model = "script"
script = [
  {{ ask = "Proceed?" }},
  {{ reply = "saw: {{result}}" }},
]

[agents.approver]
model = "script"
builtins = [{{ name = "list_directory", options = {{ permission = "ask", base_path = "{}" }} }}]
script = [
  {{ call = "list_directory", arguments = {{ path = "." }} }},
  {{ reply = "saw: {{result}}" }},
]
"#,
        workspace.display()
    )
}

pub struct Server {
    pub running: Option<Running>,
    pub base: String,
    pub http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    pub async fn start() -> Self {
        Self::start_with(|c| c, |o| o).await
    }

    pub async fn start_with(
        edit: impl FnOnce(String) -> String,
        options: impl FnOnce(ServeOptions) -> ServeOptions,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "n").unwrap();
        let config = Config::parse(&edit(config_text(dir.path()))).unwrap();
        let opts = options(
            ServeOptions::default()
                .bind("127.0.0.1:0".parse().unwrap())
                .api_key(KEY)
                .sqlite(":memory:"),
        );
        let running = serve(&config, opts).await.unwrap();
        let base = format!("http://{}", running.addr);
        Self {
            running: Some(running),
            base,
            http: reqwest::Client::new(),
            _dir: dir,
        }
    }

    /// A server on 127.0.0.1 with `config` (TOML) and `database` (a SQLite file, `:memory:` or
    /// a PostgreSQL URL).
    pub async fn on(config: &str, database: &str) -> Self {
        let running = serve(
            &Config::parse(config).unwrap(),
            ServeOptions::default()
                .bind("127.0.0.1:0".parse().unwrap())
                .api_key(KEY)
                .database(database),
        )
        .await
        .unwrap();
        Self::attach(running)
    }

    /// Stops the server started in this process (as SIGTERM does).
    pub async fn stop(mut self) {
        self.running
            .take()
            .unwrap()
            .stop(Duration::from_secs(5))
            .await;
    }

    /// A client for a server in another process, at `base` (`http://127.0.0.1:PORT`).
    pub fn remote(base: String) -> Self {
        Self {
            running: None,
            base,
            http: reqwest::Client::new(),
            _dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A client for a server started elsewhere.
    pub fn attach(running: Running) -> Self {
        let base = format!("http://{}", running.addr);
        Self {
            running: Some(running),
            base,
            http: reqwest::Client::new(),
            _dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(self.url(path))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        split(r).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(self.url(path))
            .bearer_auth(KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        split(r).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .patch(self.url(path))
            .bearer_auth(KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        split(r).await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .delete(self.url(path))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        split(r).await
    }

    /// Starts a run and returns its body.
    pub async fn start_run(&self, agent: &str, input: &str) -> Value {
        let (status, body) = self
            .post(
                "/v2/runs",
                serde_json::json!({"agent": agent, "input": input}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Reads the run until its state is one of `states` (following its event stream, no sleeps).
    pub async fn wait_for(&self, id: i64, states: &[&str]) -> Value {
        let mut frames = self.events(id, None).await;
        loop {
            let (_, run) = self.get(&format!("/v2/runs/{id}")).await;
            if states.contains(&run["state"].as_str().unwrap()) {
                return run;
            }
            let next = tokio::time::timeout(Duration::from_secs(20), frames.next())
                .await
                .expect("no event for 20 s");
            if next.is_none() {
                frames = self.events(id, None).await;
            }
        }
    }

    /// Opens a run's event stream.
    pub async fn events(&self, id: i64, last: Option<u64>) -> Frames {
        let mut req = self
            .http
            .get(self.url(&format!("/v2/runs/{id}/events")))
            .bearer_auth(KEY);
        if let Some(last) = last {
            req = req.header("Last-Event-ID", last.to_string());
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        Frames {
            stream: Box::pin(r.bytes_stream()),
            buf: String::new(),
        }
    }
}

pub async fn split(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

pub use harnessx_server::client::Frame;

pub struct Frames {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: String,
}

impl Frames {
    /// The next frame (comments skipped); `None` when the stream ends.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(frame) = Frame::take(&mut self.buf) {
                return Some(frame);
            }
            match self.stream.next().await {
                Some(Ok(bytes)) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                _ => return None,
            }
        }
    }

    /// Frames until one named `event` (returned last).
    pub async fn until(&mut self, event: &str) -> Vec<Frame> {
        let mut seen = Vec::new();
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(20), self.next())
                .await
                .expect("no frame for 20 s")
                .unwrap_or_else(|| panic!("the stream ended before a `{event}` frame: {seen:?}"));
            let done = frame.event == event;
            seen.push(frame);
            if done {
                return seen;
            }
        }
    }
}
pub mod receiver;

/// A `harnessx serve` process on a free port of 127.0.0.1, accepting [`KEY`]; killed with
/// SIGKILL when dropped.
pub struct ServeProcess {
    /// The process.
    pub child: tokio::process::Child,
    /// A client of it.
    pub server: Server,
}

impl ServeProcess {
    /// Starts `harnessx serve --config config --db db` (a SQLite file or a PostgreSQL URL) with
    /// `env` set, its log going to `stderr`, and waits until it is ready (`/readyz`).
    pub async fn spawn(
        config: &std::path::Path,
        db: &str,
        env: &[(&str, &str)],
        stderr: std::process::Stdio,
    ) -> Self {
        Self::spawn_with(config, db, &[], env, stderr).await
    }

    /// [`spawn`](Self::spawn) with more arguments for `serve` (`--log-format json`).
    pub async fn spawn_with(
        config: &std::path::Path,
        db: &str,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: std::process::Stdio,
    ) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bind = format!("127.0.0.1:{port}");
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
            .args([
                "serve",
                "--config",
                config.to_str().unwrap(),
                "--bind",
                &bind,
            ])
            .args(["--db", db])
            .args(args)
            .env("HARNESSX_API_KEYS", KEY)
            .env_remove("HARNESSX_API_KEY")
            .env_remove("RUST_LOG")
            .env_remove("HARNESSX_DATABASE_URL")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let server = Server::remote(format!("http://{bind}"));
        for _ in 0..200 {
            let ready = server.http.get(server.url("/readyz")).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return Self { child, server };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the server on {bind} did not start (on {db})");
    }
}

/// The value of one series (`name` or `name{label="value"}`) in a Prometheus text exposition.
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok())?
        })
}

/// [`value`], which must be there.
pub fn must(text: &str, series: &str) -> f64 {
    value(text, series).unwrap_or_else(|| panic!("no series `{series}` in:\n{text}"))
}

/// `GET /metrics` with the key: the Prometheus text exposition (checked to be one).
pub async fn scrape(s: &Server) -> String {
    let r = s
        .http
        .get(s.url("/metrics"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let content_type = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    r.text().await.unwrap()
}
