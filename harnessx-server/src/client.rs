//! A typed Rust client of the `/v2` API: runs, their events, answers and approvals,
//! conversations and agents, with the server's error codes kept. The `harnessx` command line's
//! client commands use it.
//!
//! ```no_run
//! use harnessx_server::api::{AnswerBody, CreateRun};
//! use harnessx_server::client::{Client, RunQuery};
//! # async fn demo() -> Result<(), harnessx_server::client::ClientError> {
//! let client = Client::new("127.0.0.1:8080", "a-long-random-api-key")?;
//! let run = client.start_run(&CreateRun::new("support", "Where is my order?")).await?;
//! let waiting = client.runs(&RunQuery::new().state("waiting_input")).await?;
//! for run in waiting.runs {
//!     client.answer(run.id, &AnswerBody::text("It is order 1234")).await?;
//! }
//! # let _ = run; Ok(()) }
//! ```

use futures::{Stream, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::agents::{AgentPatch, AgentView, NewAgent};
use crate::api::{
    AgentList, AnswerBody, ApprovalBody, ConversationBody, CreateRun, MessageBody, MessageOutcome,
    PruneBody, Pruned, RunBody, RunList,
};

/// A failed call: the server's error code and message, or why the server could not be reached.
/// `Display` is the message alone, worded for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ClientError {
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The server's error code (`unknown_run`, `not_waiting`, ...), or `unreachable`,
    /// `invalid_url` or `invalid_response` for failures on this side.
    pub code: String,
    /// What went wrong and what to do.
    pub message: String,
}

impl ClientError {
    fn local(code: &str, message: String) -> Self {
        Self {
            status: None,
            code: code.to_owned(),
            message,
        }
    }
}

/// Which runs [`Client::runs`] lists.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunQuery {
    /// At most this many (1–200; the server's default is 50).
    pub limit: Option<u32>,
    /// The cursor: the `next_before` of the page before.
    pub before: Option<i64>,
    /// Only runs of this agent.
    pub agent: Option<String>,
    /// Only runs in this state.
    pub state: Option<String>,
    /// Only runs of this conversation.
    pub conversation: Option<String>,
}

impl RunQuery {
    /// Every run, newest first.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `n` runs.
    pub fn limit(mut self, n: u32) -> Self {
        self.limit = Some(n);
        self
    }

    /// The page after the one whose `next_before` this is.
    pub fn before(mut self, cursor: i64) -> Self {
        self.before = Some(cursor);
        self
    }

    /// Only runs of `agent`.
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Only runs in `state` (`queued`, `running`, `waiting_input`, `completed`, `failed`,
    /// `cancelled`).
    pub fn state(mut self, state: impl Into<String>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// Only runs of `conversation`.
    pub fn conversation(mut self, conversation: impl Into<String>) -> Self {
        self.conversation = Some(conversation.into());
        self
    }
}

/// One server-sent event of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// Its sequence number (the `Last-Event-ID` to resume after).
    pub id: Option<u64>,
    /// Its name: `state`, `question`, `approval`, `tool_call_started`, ...
    pub event: String,
    /// Its data.
    pub data: Value,
}

/// A client of one server.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    key: String,
    http: reqwest::Client,
}

impl Client {
    /// A client of the server at `base` (`http://host:port`, or `host:port`) with an API key.
    pub fn new(base: &str, api_key: &str) -> Result<Self, ClientError> {
        let base = base.trim().trim_end_matches('/');
        let base = if base.contains("://") {
            base.to_owned()
        } else {
            format!("http://{base}")
        };
        url::Url::parse(&base).map_err(|e| {
            ClientError::local(
                "invalid_url",
                format!("`{base}` is not a server address ({e}); give one like 127.0.0.1:8080"),
            )
        })?;
        Ok(Self {
            base,
            key: api_key.to_owned(),
            http: reqwest::Client::new(),
        })
    }

    /// The server's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn send<T: DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, ClientError> {
        let r = req
            .bearer_auth(&self.key)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(ClientError {
                status: Some(status.as_u16()),
                code: body["error"]["code"]
                    .as_str()
                    .unwrap_or("request_failed")
                    .to_owned(),
                message: body["error"]["message"]
                    .as_str()
                    .map_or_else(|| refusal(status.as_u16()), str::to_owned),
            });
        }
        serde_json::from_value(body).map_err(|e| {
            ClientError::local(
                "invalid_response",
                format!("the server's answer was not what this client expects: {e}"),
            )
        })
    }

    /// A request that never reached the server: why, at the bottom of the error's causes
    /// (`Connection refused`), and what to check.
    fn unreachable(&self, e: &reqwest::Error) -> ClientError {
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        ClientError::local(
            "unreachable",
            format!(
                "cannot reach the server at {} ({cause}); check that it is running and that the \
                 address is right",
                self.base
            ),
        )
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v2{path}", self.base)
    }

    /// `GET /v2{path}` as JSON.
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        self.send(self.http.get(self.url(path))).await
    }

    /// `POST /v2{path}` with a JSON body.
    pub async fn post<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        self.send(self.http.post(self.url(path)).json(body)).await
    }

    /// Starts a run.
    pub async fn start_run(&self, run: &CreateRun) -> Result<RunBody, ClientError> {
        self.post("/runs", run).await
    }

    /// Reads a run.
    pub async fn run(&self, id: i64) -> Result<RunBody, ClientError> {
        self.get(&format!("/runs/{id}")).await
    }

    /// Lists runs.
    pub async fn runs(&self, query: &RunQuery) -> Result<RunList, ClientError> {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        if let Some(n) = query.limit {
            q.append_pair("limit", &n.to_string());
        }
        if let Some(n) = query.before {
            q.append_pair("before", &n.to_string());
        }
        for (name, value) in [
            ("agent", &query.agent),
            ("state", &query.state),
            ("conversation", &query.conversation),
        ] {
            if let Some(v) = value {
                q.append_pair(name, v);
            }
        }
        let q = q.finish();
        let path = if q.is_empty() {
            "/runs".to_owned()
        } else {
            format!("/runs?{q}")
        };
        self.get(&path).await
    }

    /// Answers a run's question or recovery question.
    pub async fn answer(&self, id: i64, answer: &AnswerBody) -> Result<RunBody, ClientError> {
        self.post(&format!("/runs/{id}/answer"), answer).await
    }

    /// Decides a run's approval: `allow`, `conversation` or `deny` (or the API's own names).
    pub async fn approve(&self, id: i64, decision: &str) -> Result<RunBody, ClientError> {
        self.post(
            &format!("/runs/{id}/approval"),
            &serde_json::json!({"decision": decision}),
        )
        .await
    }

    /// Decides with a typed body.
    pub async fn approval(&self, id: i64, body: &ApprovalBody) -> Result<RunBody, ClientError> {
        self.post(&format!("/runs/{id}/approval"), body).await
    }

    /// Cancels a run.
    pub async fn cancel(&self, id: i64) -> Result<RunBody, ClientError> {
        self.post(&format!("/runs/{id}/cancel"), &serde_json::json!({}))
            .await
    }

    /// Deletes the runs that finished more than `older_than` ago, with their events and
    /// journal (`POST /v2/runs/prune`); answers how many.
    pub async fn prune_runs(&self, older_than: std::time::Duration) -> Result<Pruned, ClientError> {
        let body = PruneBody {
            older_than_seconds: i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX),
        };
        self.post("/runs/prune", &body).await
    }

    /// Reads a conversation.
    pub async fn conversation(&self, id: &str) -> Result<ConversationBody, ClientError> {
        self.get(&format!("/conversations/{}", encode(id))).await
    }

    /// Posts a message to a conversation.
    pub async fn send_message(
        &self,
        conversation: &str,
        message: &MessageBody,
    ) -> Result<MessageOutcome, ClientError> {
        self.post(
            &format!("/conversations/{}/messages", encode(conversation)),
            message,
        )
        .await
    }

    /// Lists the agents.
    pub async fn agents(&self) -> Result<AgentList, ClientError> {
        self.get("/agents").await
    }

    /// Reads an agent.
    pub async fn agent(&self, id: &str) -> Result<AgentView, ClientError> {
        self.get(&format!("/agents/{}", encode(id))).await
    }

    /// Creates an agent.
    pub async fn create_agent(&self, agent: &NewAgent) -> Result<AgentView, ClientError> {
        self.post("/agents", agent).await
    }

    /// Changes an agent.
    pub async fn patch_agent(
        &self,
        id: &str,
        patch: &AgentPatch,
    ) -> Result<AgentView, ClientError> {
        self.send(
            self.http
                .patch(self.url(&format!("/agents/{}", encode(id))))
                .json(patch),
        )
        .await
    }

    /// Deletes an agent.
    pub async fn delete_agent(&self, id: &str) -> Result<(), ClientError> {
        self.send::<Value>(
            self.http
                .delete(self.url(&format!("/agents/{}", encode(id)))),
        )
        .await
        .map(drop)
    }

    /// A run's events after sequence `after` (0: from the start), until the stream ends (after
    /// the run does) or breaks.
    pub async fn events(
        &self,
        run: i64,
        after: u64,
    ) -> Result<impl Stream<Item = Result<Frame, ClientError>> + Send + Unpin + use<>, ClientError>
    {
        let r = self
            .http
            .get(self.url(&format!("/runs/{run}/events")))
            .header("Last-Event-ID", after.to_string())
            .bearer_auth(&self.key)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        if !r.status().is_success() {
            let status = r.status();
            let body: Value = r.json().await.unwrap_or(Value::Null);
            return Err(ClientError {
                status: Some(status.as_u16()),
                code: body["error"]["code"]
                    .as_str()
                    .unwrap_or("request_failed")
                    .to_owned(),
                message: body["error"]["message"]
                    .as_str()
                    .map_or_else(|| refusal(status.as_u16()), str::to_owned),
            });
        }
        let bytes = r.bytes_stream();
        let state = (bytes, String::new());
        Ok(Box::pin(futures::stream::unfold(
            state,
            |(mut bytes, mut buf)| async move {
                loop {
                    if let Some(frame) = Frame::take(&mut buf) {
                        return Some((Ok(frame), (bytes, buf)));
                    }
                    match bytes.next().await {
                        Some(Ok(chunk)) => buf.push_str(&String::from_utf8_lossy(&chunk)),
                        Some(Err(e)) => {
                            let e = ClientError::local(
                                "unreachable",
                                format!("the event stream broke: {e}"),
                            );
                            return Some((Err(e), (bytes, String::new())));
                        }
                        None => return None,
                    }
                }
            },
        )))
    }
}

impl Frame {
    /// Takes the next whole frame off the front of `buf`, the text of an event stream read so
    /// far; comments and frames without data are skipped, and an unfinished frame stays.
    ///
    /// ```
    /// use harnessx_server::client::Frame;
    /// let mut buf = String::from(": hi\n\nid: 1\nevent: state\ndata: {\"state\":\"queued\"}\n\ndata");
    /// let frame = Frame::take(&mut buf).unwrap();
    /// assert_eq!((frame.id, frame.event.as_str()), (Some(1), "state"));
    /// assert!(Frame::take(&mut buf).is_none());
    /// ```
    pub fn take(buf: &mut String) -> Option<Frame> {
        next_frame(buf)
    }
}

/// What a refusal without the server's own message means, in words (an answer from a proxy, or
/// from something that is not a harnessx server).
fn refusal(status: u16) -> String {
    match status {
        401 | 403 => "the server refused the API key; give the key it was started with".into(),
        404 => "the server has nothing at this address; check that it is a harnessx server and \
                that the address is right"
            .into(),
        408 | 429 | 502..=504 => {
            "the server (or a proxy in front of it) is busy or cannot reach it; try again later"
                .into()
        }
        500..=599 => "the server failed while answering; its log says why".into(),
        _ => "the server refused the request without saying why".into(),
    }
}

fn next_frame(buf: &mut String) -> Option<Frame> {
    while let Some(end) = buf.find("\n\n") {
        let raw: String = buf.drain(..end + 2).collect();
        let mut frame = Frame {
            id: None,
            event: "message".into(),
            data: Value::Null,
        };
        let mut data = String::new();
        for line in raw.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                frame.id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("event:") {
                frame.event = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if data.is_empty() {
            continue;
        }
        frame.data = serde_json::from_str(&data).unwrap_or(Value::String(data));
        return Some(frame);
    }
    None
}

/// A path segment, percent-encoded.
fn encode(segment: &str) -> String {
    url::form_urlencoded::byte_serialize(segment.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_whole_and_comments_skipped() {
        let mut buf = String::from(
            ": keep-alive\n\nid: 3\nevent: state\ndata: {\"state\":\"running\"}\n\nid: 4\nev",
        );
        let frame = next_frame(&mut buf).unwrap();
        assert_eq!(frame.id, Some(3));
        assert_eq!(frame.event, "state");
        assert_eq!(frame.data["state"], "running");
        assert!(next_frame(&mut buf).is_none());
        assert_eq!(buf, "id: 4\nev");
    }

    #[test]
    fn refusals_without_a_message_are_worded_without_status_codes() {
        assert_eq!(
            refusal(401),
            "the server refused the API key; give the key it was started with"
        );
        assert_eq!(
            refusal(404),
            "the server has nothing at this address; check that it is a harnessx server and \
             that the address is right"
        );
        assert_eq!(
            refusal(503),
            "the server (or a proxy in front of it) is busy or cannot reach it; try again later"
        );
        assert_eq!(
            refusal(500),
            "the server failed while answering; its log says why"
        );
        assert_eq!(
            refusal(418),
            "the server refused the request without saying why"
        );
    }

    #[test]
    fn an_address_without_a_scheme_is_http_and_a_bad_one_is_named() {
        assert_eq!(
            Client::new("127.0.0.1:8080", "k").unwrap().base(),
            "http://127.0.0.1:8080"
        );
        let e = Client::new("http://[bad", "k").unwrap_err();
        assert_eq!(e.code, "invalid_url");
        assert!(
            e.message
                .starts_with("`http://[bad` is not a server address ("),
            "{e}"
        );
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
    }
}
