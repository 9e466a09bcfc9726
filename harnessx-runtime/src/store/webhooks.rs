//! [`WebhookStore`]: the outbox that carries run events to webhooks.
//!
//! A webhook is a stored resource of kind [`WEBHOOK_KIND`] (see
//! [`ResourceStore`](super::ResourceStore)). Its body is the host's, but two fields belong to
//! the store, which routes events by them: `events`, the event types it subscribes to
//! ([`WebhookEvent::as_str`]), and `enabled` (`false` stops new deliveries; absent means
//! `true`).
//!
//! When a run starts waiting for input, completes, fails or is cancelled, the store writes a
//! [`WebhookMessage`] and one delivery per enabled webhook subscribed to the event **in the
//! transaction that changes the run's state**: the event exists if and only if the state change
//! does, whatever crashes afterwards. Nothing is written when no webhook subscribes.
//!
//! Any process sharing the store sends deliveries: [`claim_deliveries`] takes due ones under a
//! lease (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so two servers never claim the same one; SQLite:
//! one writer), and [`record_attempt`] logs each attempt and says what happens next — delivered,
//! retried at a time the sender chose, or given up. A sender that dies mid-attempt leaves its
//! lease to lapse, and the delivery is claimed again: delivery is at least once, and a receiver
//! tells repeats apart by the message id.
//!
//! [`claim_deliveries`]: WebhookStore::claim_deliveries
//! [`record_attempt`]: WebhookStore::record_attempt

use std::sync::Arc;
use std::time::Duration;

use harnessx::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::RunRecord;
use crate::error::StoreError;
use crate::types::{RunId, RunState};

/// The resource kind of webhooks.
pub const WEBHOOK_KIND: &str = "webhook";

/// A run event a webhook may subscribe to.
///
/// ```
/// use harnessx_runtime::RunState;
/// use harnessx_runtime::store::WebhookEvent;
/// assert_eq!(WebhookEvent::parse("run.completed"), Some(WebhookEvent::Completed));
/// assert_eq!(WebhookEvent::of_state(RunState::WaitingInput), Some(WebhookEvent::WaitingInput));
/// assert_eq!(WebhookEvent::of_state(RunState::Running), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WebhookEvent {
    /// `run.waiting_input`: the run asks a person (a question, an approval, a recovery choice).
    WaitingInput,
    /// `run.completed`: the model answered.
    Completed,
    /// `run.failed`: the run failed.
    Failed,
    /// `run.cancelled`: the run was cancelled.
    Cancelled,
}

impl WebhookEvent {
    /// Every event, in the order they are documented.
    pub const ALL: [Self; 4] = [
        Self::WaitingInput,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
    ];

    /// Its name: `run.waiting_input`, `run.completed`, `run.failed` or `run.cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WaitingInput => "run.waiting_input",
            Self::Completed => "run.completed",
            Self::Failed => "run.failed",
            Self::Cancelled => "run.cancelled",
        }
    }

    /// The event named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// The event a run entering `state` raises, if any.
    pub fn of_state(state: RunState) -> Option<Self> {
        match state {
            RunState::WaitingInput => Some(Self::WaitingInput),
            RunState::Completed => Some(Self::Completed),
            RunState::Failed => Some(Self::Failed),
            RunState::Cancelled => Some(Self::Cancelled),
            RunState::Queued | RunState::Running => None,
        }
    }
}

impl std::fmt::Display for WebhookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event to send: the same on every attempt and to every webhook.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookMessage {
    /// Its id (`msg_` and 32 hex digits): the `webhook-id` a receiver deduplicates by.
    pub id: String,
    /// The event.
    pub event: WebhookEvent,
    /// The run.
    pub run: RunId,
    /// The event's data: the run's id, agent, conversation and state, with what it waits on
    /// (`needs_input`), its `output` or its `error` (see [`event_data`]).
    pub data: Value,
    /// When the run's state changed (ms since the Unix epoch).
    pub created_ms: i64,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryState {
    /// Not delivered yet: an attempt is due, under way, or scheduled.
    Pending,
    /// A receiver accepted it.
    Delivered,
    /// Given up: too many failed attempts, the webhook was deleted or disabled, or the
    /// receiver answered that it is gone.
    Failed,
}

impl DeliveryState {
    /// `pending`, `delivered` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    /// The state stored as `text`.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::Pending, Self::Delivered, Self::Failed]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A delivery a sender claimed: send `message` to `webhook`, then
/// [`record_attempt`](WebhookStore::record_attempt) with this claim.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryClaim {
    /// The delivery's id.
    pub delivery: i64,
    /// The webhook's name (a [`WEBHOOK_KIND`] resource).
    pub webhook: String,
    /// What to send.
    pub message: WebhookMessage,
    /// Attempts made before this one.
    pub attempts: u32,
    /// The claim's number: a record made with an older one is refused.
    pub generation: i64,
}

/// What follows an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptNext {
    /// The receiver accepted it: the delivery is done.
    Delivered,
    /// Try again this long after now.
    RetryIn(Duration),
    /// Stop: the delivery failed for good.
    GiveUp,
}

/// One attempt, as the sender made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// When it started (ms since the Unix epoch).
    pub at_ms: i64,
    /// How long it took.
    pub duration_ms: i64,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    /// What went wrong, when it did.
    pub error: Option<String>,
    /// What follows.
    pub next: AttemptNext,
}

/// One attempt, as logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    /// Its number (1 for the first).
    pub attempt: u32,
    /// When it started (ms since the Unix epoch).
    pub at_ms: i64,
    /// How long it took.
    pub duration_ms: i64,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    /// What went wrong, when it did.
    pub error: Option<String>,
    /// When the next attempt was scheduled, if one was.
    pub next_attempt_ms: Option<i64>,
}

/// A delivery with its log.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// Its id.
    pub id: i64,
    /// The webhook's name.
    pub webhook: String,
    /// What is sent.
    pub message: WebhookMessage,
    /// Where it stands.
    pub state: DeliveryState,
    /// When the next attempt is due (pending deliveries).
    pub next_attempt_ms: Option<i64>,
    /// Its attempts, first first.
    pub attempts: Vec<DeliveryAttempt>,
    /// When it was made (ms since the Unix epoch).
    pub created_ms: i64,
}

/// Where the outbox lives: both run stores implement it, in the same database as the runs.
pub trait WebhookStore: Send + Sync + 'static {
    /// Notified (a permit is stored when nobody waits) each time this process stores a webhook
    /// message, so a sender waits for work instead of polling. Messages stored by other
    /// processes are not announced: a sender also looks every few seconds.
    fn messages_stored(&self) -> Arc<tokio::sync::Notify>;

    /// Claims up to `limit` due deliveries for `owner` for `lease_ms`, oldest due first; a
    /// delivery another sender holds under a live lease is skipped.
    fn claim_deliveries<'a>(
        &'a self,
        owner: &'a str,
        lease_ms: i64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<DeliveryClaim>, StoreError>>;

    /// Logs an attempt of a claimed delivery and applies what follows, releasing the lease.
    /// `false` (nothing written) when the claim is no longer the delivery's: its lease lapsed
    /// and another sender claimed it, or it is no longer pending.
    fn record_attempt<'a>(
        &'a self,
        claim: &'a DeliveryClaim,
        attempt: AttemptRecord,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// When the earliest pending delivery is due (or its lease lapses), if any.
    fn next_delivery_ms(&self) -> BoxFuture<'_, Result<Option<i64>, StoreError>>;

    /// The deliveries to `webhook` with an id below `before` (all when `None`), newest first,
    /// at most `limit`, each with its attempts.
    fn deliveries<'a>(
        &'a self,
        webhook: &'a str,
        before: Option<i64>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Delivery>, StoreError>>;

    /// How many deliveries are pending, to every webhook.
    fn webhook_backlog(&self) -> BoxFuture<'_, Result<u64, StoreError>>;
}

/// Implements [`WebhookStore`] for a store whose inherent `async fn`s of the same names do the work
/// (the SQLite and PostgreSQL stores): each trait method boxes the inherent method's future. An
/// inherent method comes first in method resolution, so `self.name(..)` here calls it, not the
/// trait method. Items given in braces after the type join the impl.
macro_rules! boxed_webhook_store {
    ($store:ty $({ $($item:item)* })?) => {
        impl WebhookStore for $store {
            $($($item)*)?

            fn messages_stored(&self) -> Arc<tokio::sync::Notify> {
                Arc::clone(&self.webhooks)
            }

            fn claim_deliveries<'a>(
                &'a self,
                owner: &'a str,
                lease_ms: i64,
                limit: usize,
            ) -> BoxFuture<'a, Result<Vec<DeliveryClaim>, StoreError>> {
                Box::pin(self.claim_deliveries(owner, lease_ms, limit))
            }

            fn record_attempt<'a>(
                &'a self,
                claim: &'a DeliveryClaim,
                attempt: AttemptRecord,
            ) -> BoxFuture<'a, Result<bool, StoreError>> {
                Box::pin(self.record_attempt(claim, attempt))
            }

            fn next_delivery_ms(&self) -> BoxFuture<'_, Result<Option<i64>, StoreError>> {
                Box::pin(self.next_delivery_ms())
            }

            fn deliveries<'a>(
                &'a self,
                webhook: &'a str,
                before: Option<i64>,
                limit: usize,
            ) -> BoxFuture<'a, Result<Vec<Delivery>, StoreError>> {
                Box::pin(self.deliveries(webhook, before, limit))
            }

            fn webhook_backlog(&self) -> BoxFuture<'_, Result<u64, StoreError>> {
                Box::pin(self.webhook_backlog())
            }
        }
    };
}
pub(crate) use boxed_webhook_store;

/// The fields of a webhook's body the store routes by.
#[derive(Deserialize)]
struct Subscription {
    #[serde(default)]
    events: Vec<String>,
    #[serde(default = "enabled")]
    enabled: bool,
}

fn enabled() -> bool {
    true
}

/// Whether a webhook whose stored body is `body` (JSON text) takes `event`. A body the store
/// cannot read subscribes to nothing.
pub(crate) fn subscribes(body: &str, event: WebhookEvent) -> bool {
    serde_json::from_str::<Subscription>(body)
        .is_ok_and(|s| s.enabled && s.events.iter().any(|e| e == event.as_str()))
}

/// The data of a run's event: `run_id`, `agent`, `agent_version`, `conversation` and `state`;
/// `needs_input` for a run waiting for input (its unanswered items with their deadlines, each
/// an [`Asked`](super::Asked) as JSON, which a host shows as it shows a waiting run), `output`
/// for a completed one, `error` for a failed one.
///
/// ```
/// # use harnessx_runtime::{RunId, RunState};
/// # use harnessx_runtime::store::{RunRecord, event_data};
/// let run = RunRecord {
///     id: RunId(7), agent: "support".into(), conversation: "c1".into(), input: "hi".into(),
///     state: RunState::Failed, pending: vec![], result: None, error: Some("boom".into()),
///     agent_version: Some(2), created_ms: 0, updated_ms: 0,
/// };
/// let data = event_data(&run);
/// assert_eq!(data["run_id"], 7);
/// assert_eq!(data["error"], "boom");
/// ```
pub fn event_data(run: &RunRecord) -> Value {
    let mut data = json!({
        "run_id": run.id.0,
        "agent": run.agent,
        "agent_version": run.agent_version,
        "conversation": run.conversation,
        "state": run.state.as_str(),
    });
    match run.state {
        RunState::WaitingInput => {
            data["needs_input"] = serde_json::to_value(&run.pending).unwrap_or(Value::Null);
        }
        RunState::Completed => {
            data["output"] = run
                .result
                .as_ref()
                .map_or(Value::Null, |r| Value::String(r.output.clone()));
        }
        RunState::Failed => {
            data["error"] = run.error.clone().map_or(Value::Null, Value::String);
        }
        _ => {}
    }
    data
}

/// A delivery's attempt count as stored.
pub(crate) fn count(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A delay in milliseconds, as stored.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_subscribe_by_events_and_enabled() {
        let body = r#"{"url":"http://x","events":["run.completed","run.failed"]}"#;
        assert!(subscribes(body, WebhookEvent::Completed));
        assert!(!subscribes(body, WebhookEvent::WaitingInput));
        let off = r#"{"events":["run.completed"],"enabled":false}"#;
        assert!(!subscribes(off, WebhookEvent::Completed));
        assert!(!subscribes("not json", WebhookEvent::Completed));
        assert!(!subscribes(
            r#"{"events":"run.completed"}"#,
            WebhookEvent::Completed
        ));
    }

    #[test]
    fn names_round_trip() {
        for e in WebhookEvent::ALL {
            assert_eq!(WebhookEvent::parse(e.as_str()), Some(e));
            assert_eq!(e.to_string(), e.as_str());
        }
        assert_eq!(WebhookEvent::parse("run.done"), None);
        for s in [
            DeliveryState::Pending,
            DeliveryState::Delivered,
            DeliveryState::Failed,
        ] {
            assert_eq!(DeliveryState::parse(s.as_str()), Some(s));
        }
    }
}
