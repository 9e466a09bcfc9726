//! [`WebhookStore`] on PostgreSQL: the outbox written in the transaction of the run's state
//! change; due deliveries claimed with `FOR UPDATE SKIP LOCKED`, so with any number of servers on
//! the database each delivery is in one server's hands at a time.

use std::sync::Arc;

use deadpool_postgres::GenericClient;
use harnessx::BoxFuture;

use super::retry::Attempt;
use super::{PostgresStore, exec, json, one, parse, read_run, rows};
use crate::error::StoreError;
use crate::store::webhooks::{
    AttemptNext, AttemptRecord, Delivery, DeliveryAttempt, DeliveryClaim, DeliveryState,
    WEBHOOK_KIND, WebhookEvent, WebhookMessage, WebhookStore, count, event_data, millis,
    subscribes,
};
use crate::types::RunId;

/// Writes `run`'s `event` to the outbox with a delivery for every enabled webhook subscribed to
/// it, in the caller's transaction (the one changing the run's state). Returns whether it wrote
/// anything.
pub(super) async fn enqueue<C: GenericClient>(
    c: &C,
    run: RunId,
    event: WebhookEvent,
) -> Result<bool, Attempt> {
    const WHAT: &str = "writing a webhook event";
    let hooks: Vec<String> = rows(
        c,
        WHAT,
        "SELECT r.name, v.body FROM resources r JOIN resource_versions v
           ON v.kind = r.kind AND v.name = r.name AND v.version = r.version
         WHERE r.kind = $1 AND NOT r.deleted ORDER BY r.name",
        &[&WEBHOOK_KIND],
    )
    .await?
    .iter()
    .filter(|r| subscribes(r.get::<_, &str>(1), event))
    .map(|r| r.get(0))
    .collect();
    if hooks.is_empty() {
        return Ok(false);
    }
    let record = read_run(c, run).await?.ok_or_else(|| StoreError::Corrupt {
        what: run.to_string(),
        message: "the run vanished while its state changed".into(),
    })?;
    let data = json(&event_data(&record))?;
    exec(
        c,
        WHAT,
        "WITH m AS (
           INSERT INTO webhook_messages (id, event, run_id, data, created_ms)
           VALUES ('msg_' || md5(random()::text || clock_timestamp()::text || pg_backend_pid()),
                   $1, $2, $3, harnessx_now_ms())
           RETURNING id, created_ms
         )
         INSERT INTO webhook_deliveries (message_id, webhook, next_attempt_ms, created_ms,
           updated_ms)
         SELECT m.id, h.name, m.created_ms, m.created_ms, m.created_ms
         FROM m, unnest($4::text[]) AS h(name)",
        &[&event.as_str(), &run.0, &data, &hooks],
    )
    .await?;
    Ok(true)
}

fn message(r: &tokio_postgres::Row, at: usize) -> Result<WebhookMessage, StoreError> {
    let id: String = r.get(at);
    let event: String = r.get(at + 1);
    let data: String = r.get(at + 3);
    Ok(WebhookMessage {
        event: WebhookEvent::parse(&event).ok_or_else(|| StoreError::Corrupt {
            what: format!("webhook message {id}"),
            message: format!("`{event}` is not an event"),
        })?,
        data: parse(&format!("webhook message {id}"), &data)?,
        run: RunId(r.get(at + 2)),
        created_ms: r.get(at + 4),
        id,
    })
}

// The `WebhookStore` methods, boxed into the trait's own by `boxed_webhook_store!` below.
impl PostgresStore {
    async fn claim_deliveries(
        &self,
        owner: &str,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<DeliveryClaim>, StoreError> {
        const WHAT: &str = "claiming webhook deliveries";
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // One statement: a claim whose answer is lost leaves leases that lapse, and the
        // deliveries are claimed again then.
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let found = rows(
                &c,
                WHAT,
                "WITH due AS (
                   SELECT id FROM webhook_deliveries
                   WHERE state = 'pending' AND next_attempt_ms <= harnessx_now_ms()
                     AND (lease_until_ms IS NULL OR lease_until_ms < harnessx_now_ms())
                   ORDER BY next_attempt_ms, id LIMIT $3
                   FOR UPDATE SKIP LOCKED
                 ), claimed AS (
                   UPDATE webhook_deliveries d SET lease_owner = $1,
                     lease_until_ms = harnessx_now_ms() + $2, lease_gen = d.lease_gen + 1,
                     updated_ms = harnessx_now_ms()
                   FROM due WHERE d.id = due.id
                   RETURNING d.id, d.webhook, d.attempts, d.lease_gen, d.message_id
                 )
                 SELECT c.id, c.webhook, c.attempts, c.lease_gen,
                        m.id, m.event, m.run_id, m.data, m.created_ms
                 FROM claimed c JOIN webhook_messages m ON m.id = c.message_id
                 ORDER BY c.id",
                &[&owner, &lease_ms, &limit],
            )
            .await?;
            let mut out = Vec::with_capacity(found.len());
            for r in &found {
                out.push(DeliveryClaim {
                    delivery: r.get(0),
                    webhook: r.get(1),
                    attempts: count(i64::from(r.get::<_, i32>(2))),
                    generation: r.get(3),
                    message: message(r, 4)?,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn record_attempt(
        &self,
        claim: &DeliveryClaim,
        attempt: AttemptRecord,
    ) -> Result<bool, StoreError> {
        const WHAT: &str = "recording a webhook attempt";
        let (state, delay) = match attempt.next {
            AttemptNext::Delivered => (DeliveryState::Delivered, None),
            AttemptNext::RetryIn(d) => (DeliveryState::Pending, Some(millis(d))),
            AttemptNext::GiveUp => (DeliveryState::Failed, None),
        };
        let status = attempt.status.map(i32::from);
        let attempt = &attempt;
        // The update matches only while the claim holds the lease, so an attempt replayed after
        // a lost commit finds the lease gone and records nothing twice.
        self.retry(WHAT, || async {
            let mut c = self.client(WHAT).await?;
            let tx = c.transaction().await.map_err(super::retry::pg(WHAT))?;
            let made = super::opt(
                &tx,
                WHAT,
                "UPDATE webhook_deliveries SET attempts = attempts + 1, state = $1,
                   next_attempt_ms = harnessx_now_ms() + $2, lease_owner = NULL,
                   lease_until_ms = NULL, updated_ms = harnessx_now_ms()
                 WHERE id = $3 AND lease_gen = $4 AND lease_owner IS NOT NULL
                   AND state = 'pending'
                 RETURNING attempts, next_attempt_ms",
                &[&state.as_str(), &delay, &claim.delivery, &claim.generation],
            )
            .await?;
            let Some(made) = made else {
                return Ok(false);
            };
            let number: i32 = made.get(0);
            let next: Option<i64> = made.get(1);
            exec(
                &tx,
                WHAT,
                "INSERT INTO webhook_attempts (delivery_id, attempt, at_ms, duration_ms, status,
                   error, next_attempt_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &claim.delivery,
                    &number,
                    &attempt.at_ms,
                    &attempt.duration_ms,
                    &status,
                    &attempt.error,
                    &next,
                ],
            )
            .await?;
            tx.commit().await.map_err(super::retry::pg_commit(WHAT))?;
            Ok(true)
        })
        .await
    }

    async fn next_delivery_ms(&self) -> Result<Option<i64>, StoreError> {
        self.earliest_ms(
            "reading when the next webhook delivery is due",
            "SELECT MIN(GREATEST(next_attempt_ms, COALESCE(lease_until_ms, 0)))
             FROM webhook_deliveries WHERE state = 'pending'",
            &[],
        )
        .await
    }

    async fn deliveries(
        &self,
        webhook: &str,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<Delivery>, StoreError> {
        const WHAT: &str = "reading webhook deliveries";
        let before = before.unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let found = rows(
                &c,
                WHAT,
                "SELECT d.id, d.state, d.next_attempt_ms, d.created_ms,
                        m.id, m.event, m.run_id, m.data, m.created_ms
                 FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id
                 WHERE d.webhook = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3",
                &[&webhook, &before, &limit],
            )
            .await?;
            let ids: Vec<i64> = found.iter().map(|r| r.get(0)).collect();
            let logged = rows(
                &c,
                WHAT,
                "SELECT delivery_id, attempt, at_ms, duration_ms, status, error, next_attempt_ms
                 FROM webhook_attempts WHERE delivery_id = ANY($1)
                 ORDER BY delivery_id, attempt",
                &[&ids],
            )
            .await?;
            let mut out = Vec::with_capacity(found.len());
            for r in &found {
                let id: i64 = r.get(0);
                let state: String = r.get(1);
                out.push(Delivery {
                    id,
                    webhook: webhook.to_owned(),
                    state: DeliveryState::parse(&state).ok_or_else(|| StoreError::Corrupt {
                        what: format!("webhook delivery {id}"),
                        message: format!("`{state}` is not a delivery state"),
                    })?,
                    next_attempt_ms: r.get(2),
                    created_ms: r.get(3),
                    message: message(r, 4)?,
                    attempts: logged
                        .iter()
                        .filter(|a| a.get::<_, i64>(0) == id)
                        .map(|a| DeliveryAttempt {
                            attempt: count(i64::from(a.get::<_, i32>(1))),
                            at_ms: a.get(2),
                            duration_ms: a.get(3),
                            status: a
                                .get::<_, Option<i32>>(4)
                                .and_then(|s| u16::try_from(s).ok()),
                            error: a.get(5),
                            next_attempt_ms: a.get(6),
                        })
                        .collect(),
                });
            }
            Ok(out)
        })
        .await
    }

    async fn webhook_backlog(&self) -> Result<u64, StoreError> {
        const WHAT: &str = "counting pending webhook deliveries";
        self.retry(WHAT, || async {
            let c = self.client(WHAT).await?;
            let n: i64 = one(
                &c,
                WHAT,
                "SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'",
                &[],
            )
            .await?
            .get(0);
            Ok(u64::try_from(n).unwrap_or(0))
        })
        .await
    }
}

crate::store::webhooks::boxed_webhook_store!(PostgresStore);
