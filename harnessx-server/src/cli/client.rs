//! The command line's view of the typed [`crate::client::Client`]: JSON in and out, errors as
//! the person-facing message.

use futures::StreamExt;
use serde_json::Value;

pub(crate) use crate::client::Frame;

pub(crate) struct Client(crate::client::Client);

impl Client {
    pub(crate) fn new(base: &str, key: &str) -> Result<Self, String> {
        crate::client::Client::new(base, key)
            .map(Self)
            .map_err(|e| e.to_string())
    }

    /// `GET` of a path under the server (`/v2/...`).
    pub(crate) async fn get(&self, path: &str) -> Result<Value, String> {
        let path = path.strip_prefix("/v2").unwrap_or(path);
        self.0.get(path).await.map_err(|e| e.to_string())
    }

    /// `POST` of a path under the server (`/v2/...`).
    pub(crate) async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        let path = path.strip_prefix("/v2").unwrap_or(path);
        self.0.post(path, body).await.map_err(|e| e.to_string())
    }

    /// Calls `on_frame` for each event of the run until the stream ends or it returns `false`.
    pub(crate) async fn follow(
        &self,
        run: i64,
        mut on_frame: impl AsyncFnMut(Frame) -> bool,
    ) -> Result<(), String> {
        let mut frames = self.0.events(run, 0).await.map_err(|e| e.to_string())?;
        while let Some(frame) = frames.next().await {
            if !on_frame(frame.map_err(|e| e.to_string())?).await {
                return Ok(());
            }
        }
        Ok(())
    }
}
