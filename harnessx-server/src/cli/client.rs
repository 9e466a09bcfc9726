//! A small HTTP client of the /v2 API, with a server-sent events reader.

use futures::StreamExt;
use serde_json::Value;

pub(crate) struct Client {
    base: String,
    key: String,
    http: reqwest::Client,
}

/// One server-sent event.
pub(crate) struct Frame {
    pub(crate) event: String,
    pub(crate) data: Value,
}

impl Client {
    pub(crate) fn new(base: &str, key: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_owned(),
            key: key.to_owned(),
            http: reqwest::Client::new(),
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Value, String> {
        let r = req
            .bearer_auth(&self.key)
            .send()
            .await
            .map_err(|e| format!("cannot reach the server at {}: {e}", self.base))?;
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        if status.is_success() {
            Ok(body)
        } else {
            Err(format!(
                "{} ({})",
                body["error"]["message"].as_str().unwrap_or("request failed"),
                status
            ))
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Result<Value, String> {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    pub(crate) async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        self.send(self.http.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    /// Calls `on_frame` for each event of the run until the stream ends or it returns `false`.
    pub(crate) async fn follow(
        &self,
        run: i64,
        mut on_frame: impl AsyncFnMut(Frame) -> bool,
    ) -> Result<(), String> {
        let r = self
            .http
            .get(format!("{}/v2/runs/{run}/events", self.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .map_err(|e| format!("cannot reach the server at {}: {e}", self.base))?;
        if !r.status().is_success() {
            return Err(format!("the event stream was refused ({})", r.status()));
        }
        let mut stream = r.bytes_stream();
        let mut buf = String::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| format!("the event stream broke: {e}"))?;
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let raw: String = buf.drain(..end + 2).collect();
                let mut event = String::from("message");
                let mut data = String::new();
                for line in raw.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
                if !on_frame(Frame { event, data }).await {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}
