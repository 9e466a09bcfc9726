//! The sender: a task in every server that claims due deliveries from the store's outbox, posts
//! them signed, logs each attempt and schedules the next.
//!
//! An attempt is an HTTP `POST` of the event as JSON with the Standard Webhooks headers
//! (`webhook-id`, `webhook-timestamp`, `webhook-signature`), answered within
//! [`DeliverySettings::timeout`] (10 s). A 2xx answer delivers it. Anything else — another
//! status (redirects are not followed), a refused connection, no answer in time — is a failed
//! attempt: the next is due after [`retry_delay`], until the delivery had its most attempts and
//! is given up. A `410 Gone` gives it up at once and turns the webhook off (the receiver says
//! it is gone for good); `PATCH /v2/webhooks/{id}` with `{"enabled": true}` turns it on again.
//!
//! The sender waits for work without polling the database in a tight loop: the store wakes it
//! when this process stores an event, it sleeps until the earliest scheduled attempt, and it
//! looks every [`LOOK_EVERY`] for events other servers stored and left (a server that died).

use std::sync::Arc;
use std::time::{Duration, Instant};

use harnessx::journal::PendingInput;
use harnessx_runtime::store::{
    Asked, AttemptNext, AttemptRecord, DeliveryClaim, PlatformStore, WEBHOOK_KIND, WebhookMessage,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::WebhookSpec;
use super::sign::{Secret, sign};
use crate::api::{Pending, rfc3339};

/// How often the sender looks for due deliveries when nothing woke it.
pub const LOOK_EVERY: Duration = Duration::from_secs(5);

/// The most attempts under way at once in one server.
pub const MAX_IN_FLIGHT: usize = 16;

/// Each wait between attempts is this many times the one before.
pub const BACKOFF_FACTOR: u32 = 5;

/// The longest wait between two attempts.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How far a wait may be moved off its schedule at random, either way (a fifth), so that
/// deliveries that failed together are not all tried again at the same instant.
pub const JITTER: f64 = 0.2;

/// How deliveries are attempted.
///
/// ```
/// use std::time::Duration;
/// use harnessx_server::webhooks::DeliverySettings;
/// let settings = DeliverySettings::default();
/// assert_eq!(settings.max_attempts, 8);
/// assert_eq!(settings.first_retry, Duration::from_secs(5));
/// assert_eq!(settings.timeout, Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeliverySettings {
    /// The most attempts a delivery gets unless its webhook sets its own (default 8: with the
    /// default waits, the last is about 27 hours after the first).
    pub max_attempts: u32,
    /// The wait after the first failed attempt (default 5 s); each next wait is
    /// [`BACKOFF_FACTOR`] times longer, at most [`MAX_RETRY_DELAY`].
    pub first_retry: Duration,
    /// How long an attempt may take (default 10 s).
    pub timeout: Duration,
    /// How long a server holds a claimed delivery (default 60 s): if it dies mid-attempt, any
    /// server sends the delivery again this long after the claim.
    pub lease: Duration,
}

impl Default for DeliverySettings {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            first_retry: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(60),
        }
    }
}

impl DeliverySettings {
    /// At most `n` attempts per delivery.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// The first wait between attempts.
    pub fn first_retry(mut self, wait: Duration) -> Self {
        self.first_retry = wait;
        self
    }
}

/// The wait before the attempt after attempt number `made` failed, before jitter:
/// `first_retry × 5^(made − 1)`, at most [`MAX_RETRY_DELAY`]. With the defaults: 5 s, 25 s,
/// about 2 min, 10 min, 52 min, 4.3 h, 21.7 h.
///
/// ```
/// use std::time::Duration;
/// use harnessx_server::webhooks::DeliverySettings;
/// use harnessx_server::webhooks::deliver::scheduled_delay;
/// let s = DeliverySettings::default();
/// assert_eq!(scheduled_delay(&s, 1), Duration::from_secs(5));
/// assert_eq!(scheduled_delay(&s, 3), Duration::from_secs(125));
/// assert_eq!(scheduled_delay(&s, 30), Duration::from_secs(24 * 3600));
/// ```
pub fn scheduled_delay(settings: &DeliverySettings, made: u32) -> Duration {
    let power = BACKOFF_FACTOR.saturating_pow(made.saturating_sub(1).min(40));
    settings
        .first_retry
        .checked_mul(power)
        .unwrap_or(MAX_RETRY_DELAY)
        .min(MAX_RETRY_DELAY)
}

/// [`scheduled_delay`] moved by up to [`JITTER`] either way; `unit` is a random number in
/// `[0, 1)`.
pub fn retry_delay(settings: &DeliverySettings, made: u32, unit: f64) -> Duration {
    let factor = 1.0 - JITTER + 2.0 * JITTER * unit.clamp(0.0, 1.0);
    scheduled_delay(settings, made).mul_f64(factor)
}

/// An item a run waits for, as the store keeps it in an event's data.
#[derive(serde::Deserialize)]
struct StoredAsked {
    pending: PendingInput,
    deadline_ms: Option<i64>,
}

/// What a receiver gets: `{"type", "timestamp", "data"}`, with what a waiting run waits on
/// (`needs_input`) in the shape `GET /v2/runs/{id}` shows it ([`Pending`]).
///
/// ```
/// use harnessx_runtime::RunId;
/// use harnessx_runtime::store::{WebhookEvent, WebhookMessage};
/// use harnessx_server::webhooks::deliver::payload;
/// let message = WebhookMessage {
///     id: "msg_1".into(), event: WebhookEvent::Completed, run: RunId(4),
///     data: serde_json::json!({"run_id": 4}), created_ms: 0,
/// };
/// assert_eq!(
///     payload(&message).to_string(),
///     r#"{"type":"run.completed","timestamp":"1970-01-01T00:00:00.000Z","data":{"run_id":4}}"#
/// );
/// ```
pub fn payload(message: &WebhookMessage) -> Value {
    let mut data = message.data.clone();
    if let Some(items) = data.get("needs_input").and_then(Value::as_array) {
        let shown = items
            .iter()
            .map(|item| match StoredAsked::deserialize(item) {
                Ok(stored) => {
                    let asked = Asked {
                        pending: stored.pending,
                        deadline_ms: stored.deadline_ms,
                    };
                    serde_json::to_value(Pending::of(message.run, &asked))
                        .unwrap_or_else(|_| item.clone())
                }
                Err(_) => item.clone(),
            })
            .collect();
        data["needs_input"] = Value::Array(shown);
    }
    json!({
        "type": message.event.as_str(),
        "timestamp": rfc3339(message.created_ms),
        "data": data,
    })
}

/// The running sender of one server; dropping it stops it at once.
#[derive(Debug)]
pub struct Sender {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What one attempt needs.
#[derive(Clone)]
struct Attempts {
    store: Arc<dyn PlatformStore>,
    http: reqwest::Client,
    settings: DeliverySettings,
}

impl Sender {
    /// Starts sending the deliveries of `store` (inside a tokio runtime).
    pub fn start(store: Arc<dyn PlatformStore>, settings: DeliverySettings) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("harnessx-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        let (stop, stopped) = watch::channel(false);
        let owner = {
            let tag: [u8; 6] = rand::random();
            format!(
                "webhooks-{}-{}",
                std::process::id(),
                tag.iter().map(|b| format!("{b:02x}")).collect::<String>()
            )
        };
        let attempts = Attempts {
            store,
            http,
            settings,
        };
        let task = tokio::spawn(run(attempts, owner, stopped));
        Self { stop, task }
    }

    /// Stops claiming, lets attempts under way finish for at most `grace`, then stops.
    pub async fn stop(mut self, grace: Duration) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(grace, &mut self.task).await;
    }

    /// Stops at once.
    pub fn abort(self) {
        self.task.abort();
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

async fn run(attempts: Attempts, owner: String, mut stopped: watch::Receiver<bool>) {
    let wake = attempts.store.messages_stored();
    let lease_ms = i64::try_from(attempts.settings.lease.as_millis()).unwrap_or(i64::MAX);
    let mut in_flight = JoinSet::new();
    let mut failing = Duration::ZERO;
    loop {
        if *stopped.borrow() {
            break;
        }
        while in_flight.try_join_next().is_some() {}
        let free = MAX_IN_FLIGHT.saturating_sub(in_flight.len());
        let mut wait = LOOK_EVERY;
        if free > 0 {
            match attempts
                .store
                .claim_deliveries(&owner, lease_ms, free)
                .await
            {
                Ok(claims) => {
                    failing = Duration::ZERO;
                    let full = claims.len() == free;
                    for claim in claims {
                        in_flight.spawn(attempt(attempts.clone(), claim));
                    }
                    if full {
                        wait = Duration::ZERO;
                    } else {
                        match attempts.store.next_delivery_ms().await {
                            Ok(Some(at)) => {
                                let until = u64::try_from(at - now_ms()).unwrap_or(0);
                                // A due delivery nobody could claim (the database's clock is
                                // behind this one's): look again shortly, not at once.
                                wait = Duration::from_millis(until.max(100)).min(LOOK_EVERY);
                            }
                            Ok(None) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "webhooks: reading when the next delivery is due failed")
                            }
                        }
                    }
                }
                Err(e) => {
                    failing = (failing * 2).clamp(Duration::from_millis(500), LOOK_EVERY);
                    wait = failing;
                    tracing::warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "webhooks: claiming deliveries failed");
                }
            }
        }
        if wait.is_zero() {
            continue;
        }
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
            _ = stopped.changed() => {}
        }
    }
    while in_flight.join_next().await.is_some() {}
}

/// Makes one attempt of `claim` and records it.
async fn attempt(a: Attempts, claim: DeliveryClaim) {
    let at_ms = now_ms();
    let started = Instant::now();
    let made = claim.attempts + 1;
    let spec = match a.store.resource(WEBHOOK_KIND, &claim.webhook, None).await {
        Ok(found) => found.map(|r| serde_json::from_value::<WebhookSpec>(r.body)),
        Err(e) => {
            // Nothing recorded: the lease lapses and the delivery is tried again.
            tracing::warn!(webhook = %claim.webhook, error = %e, "webhooks: reading the webhook failed");
            return;
        }
    };
    let (status, error, next) = match spec {
        None => (
            None,
            Some("the webhook was deleted; the delivery was given up".to_owned()),
            AttemptNext::GiveUp,
        ),
        Some(Err(e)) => (
            None,
            Some(format!(
                "the webhook is stored in a shape this server cannot read ({e}); the delivery was \
                 given up"
            )),
            AttemptNext::GiveUp,
        ),
        Some(Ok(spec)) if !spec.enabled => (
            None,
            Some("the webhook is disabled; the delivery was given up".to_owned()),
            AttemptNext::GiveUp,
        ),
        Some(Ok(spec)) => send(&a, &claim, &spec, made).await,
    };
    let record = AttemptRecord {
        at_ms,
        duration_ms: i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
        status,
        error,
        next,
    };
    match a.store.record_attempt(&claim, record).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            webhook = %claim.webhook, delivery = claim.delivery,
            "webhooks: the attempt took longer than the delivery's lease; another server may \
             have sent it too"
        ),
        Err(e) => tracing::warn!(
            webhook = %claim.webhook, delivery = claim.delivery, error = %e,
            "webhooks: recording an attempt failed; the delivery is sent again when its lease \
             lapses"
        ),
    }
}

/// Posts the claim's message to `spec`'s URL; returns the status, the error and what follows.
async fn send(
    a: &Attempts,
    claim: &DeliveryClaim,
    spec: &WebhookSpec,
    made: u32,
) -> (Option<u16>, Option<String>, AttemptNext) {
    let secret = match Secret::parse(&spec.secret) {
        Ok(s) => s,
        Err(m) => {
            return (
                None,
                Some(format!(
                    "the webhook's stored secret cannot be used ({m}); the delivery was given up"
                )),
                AttemptNext::GiveUp,
            );
        }
    };
    let body = payload(&claim.message).to_string();
    let timestamp = now_ms() / 1000;
    let signature = sign(&secret, &claim.message.id, timestamp, body.as_bytes());
    let sent = a
        .http
        .post(&spec.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("webhook-id", &claim.message.id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .timeout(a.settings.timeout)
        .body(body)
        .send()
        .await;
    let most = spec.max_attempts.unwrap_or(a.settings.max_attempts).max(1);
    let retry = || {
        if made >= most {
            AttemptNext::GiveUp
        } else {
            AttemptNext::RetryIn(retry_delay(&a.settings, made, rand::random::<f64>()))
        }
    };
    let failed = |status: Option<u16>, error: String, next: AttemptNext| {
        let shown = crate::redact::urls(&error).into_owned();
        let given_up = next == AttemptNext::GiveUp;
        tracing::warn!(
            webhook = %claim.webhook, delivery = claim.delivery, attempt = made,
            error = %shown, given_up, "webhooks: a delivery attempt failed"
        );
        (status, Some(shown), next)
    };
    match sent {
        Ok(response) if response.status().is_success() => (
            Some(response.status().as_u16()),
            None,
            AttemptNext::Delivered,
        ),
        Ok(response) if response.status() == reqwest::StatusCode::GONE => {
            let reason = format!(
                "the receiver answered 410 Gone at {}; turn it on again with \
                 PATCH /v2/webhooks/{} {{\"enabled\": true}}",
                rfc3339(now_ms()),
                claim.webhook
            );
            if let Err(e) = super::disable(&a.store, &claim.webhook, &reason).await {
                tracing::warn!(webhook = %claim.webhook, error = %e, "webhooks: turning the webhook off failed");
            }
            failed(
                Some(410),
                "the receiver answered 410 Gone: the delivery was given up and the webhook turned \
                 off"
                .into(),
                AttemptNext::GiveUp,
            )
        }
        Ok(response) => {
            let status = response.status();
            failed(
                Some(status.as_u16()),
                format!("the receiver answered {status}"),
                retry(),
            )
        }
        Err(e) if e.is_timeout() => failed(
            None,
            format!("no answer within {} s", a.settings.timeout.as_secs_f64()),
            retry(),
        ),
        Err(e) => failed(None, harnessx::error::error_chain(&e), retry()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_fivefold_with_a_fifth_of_jitter() {
        let s = DeliverySettings::default();
        let schedule: Vec<u64> = (1..=7).map(|n| scheduled_delay(&s, n).as_secs()).collect();
        assert_eq!(schedule, [5, 25, 125, 625, 3125, 15_625, 78_125]);
        assert_eq!(schedule.iter().sum::<u64>(), 97_655, "about 27 hours");
        assert_eq!(retry_delay(&s, 2, 0.0), Duration::from_secs(20));
        assert_eq!(retry_delay(&s, 2, 0.5), Duration::from_secs(25));
        assert!(retry_delay(&s, 2, 0.999_999) <= Duration::from_secs(30));
        assert_eq!(retry_delay(&s, 60, 0.5), MAX_RETRY_DELAY);
        let quick = DeliverySettings::default().first_retry(Duration::from_millis(200));
        assert_eq!(scheduled_delay(&quick, 2), Duration::from_secs(1));
        assert_eq!(DeliverySettings::default().max_attempts(0).max_attempts, 1);
    }
}
