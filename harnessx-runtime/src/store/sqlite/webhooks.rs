//! [`WebhookStore`] on SQLite: the outbox written in the transaction of the run's state change,
//! deliveries claimed on the store's one writer thread.

use std::sync::Arc;

use harnessx::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::{SqliteStore, db, json, parse, read_run};
use crate::error::StoreError;
use crate::store::now_ms;
use crate::store::webhooks::{
    AttemptNext, AttemptRecord, Delivery, DeliveryAttempt, DeliveryClaim, DeliveryState,
    WEBHOOK_KIND, WebhookEvent, WebhookMessage, WebhookStore, count, event_data, millis,
    subscribes,
};
use crate::types::RunId;

/// Writes `run`'s `event` to the outbox with a delivery for every enabled webhook subscribed to
/// it, in the caller's transaction (the one changing the run's state). Returns whether it wrote
/// anything.
pub(super) fn enqueue(
    tx: &Transaction<'_>,
    run: RunId,
    event: WebhookEvent,
) -> Result<bool, StoreError> {
    const WHAT: &str = "writing a webhook event";
    let hooks: Vec<String> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT r.name, v.body FROM resources r JOIN resource_versions v
                   ON v.kind = r.kind AND v.name = r.name AND v.version = r.version
                 WHERE r.kind = ?1 AND NOT r.deleted ORDER BY r.name",
            )
            .map_err(db(WHAT))?;
        let rows = stmt
            .query_map([WEBHOOK_KIND], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db(WHAT))?;
        let mut hooks = Vec::new();
        for row in rows {
            let (name, body) = row.map_err(db(WHAT))?;
            if subscribes(&body, event) {
                hooks.push(name);
            }
        }
        hooks
    };
    if hooks.is_empty() {
        return Ok(false);
    }
    let record = read_run(tx, run)?.ok_or_else(|| StoreError::Corrupt {
        what: run.to_string(),
        message: "the run vanished while its state changed".into(),
    })?;
    let now = now_ms();
    let id: String = tx
        .prepare_cached(
            "INSERT INTO webhook_messages (id, event, run_id, data, created_ms)
             VALUES ('msg_' || lower(hex(randomblob(16))), ?1, ?2, ?3, ?4) RETURNING id",
        )
        .map_err(db(WHAT))?
        .query_row(
            params![event.as_str(), run.0, json(&event_data(&record))?, now],
            |r| r.get(0),
        )
        .map_err(db(WHAT))?;
    let mut stmt = tx
        .prepare_cached(
            "INSERT INTO webhook_deliveries (message_id, webhook, next_attempt_ms, created_ms,
               updated_ms) VALUES (?1, ?2, ?3, ?3, ?3)",
        )
        .map_err(db(WHAT))?;
    for hook in hooks {
        stmt.execute(params![id, hook, now]).map_err(db(WHAT))?;
    }
    Ok(true)
}

/// Drops every delivery lease: on open, the leases of a SQLite store were its dead
/// predecessor's (one process owns the file).
pub(super) fn release_all(conn: &Connection) -> rusqlite::Result<usize> {
    conn.execute(
        "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until_ms = NULL
         WHERE state = 'pending' AND lease_owner IS NOT NULL",
        [],
    )
}

fn message(conn: &Connection, id: &str) -> Result<WebhookMessage, StoreError> {
    const WHAT: &str = "reading a webhook message";
    let (event, run, data, created_ms): (String, i64, String, i64) = conn
        .prepare_cached(
            "SELECT event, run_id, data, created_ms FROM webhook_messages WHERE id = ?1",
        )
        .map_err(db(WHAT))?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .map_err(db(WHAT))?;
    Ok(WebhookMessage {
        event: WebhookEvent::parse(&event).ok_or_else(|| StoreError::Corrupt {
            what: format!("webhook message {id}"),
            message: format!("`{event}` is not an event"),
        })?,
        data: parse(&format!("webhook message {id}"), &data)?,
        id: id.to_owned(),
        run: RunId(run),
        created_ms,
    })
}

fn attempts(conn: &Connection, delivery: i64) -> Result<Vec<DeliveryAttempt>, StoreError> {
    const WHAT: &str = "reading a delivery's attempts";
    let mut stmt = conn
        .prepare_cached(
            "SELECT attempt, at_ms, duration_ms, status, error, next_attempt_ms
             FROM webhook_attempts WHERE delivery_id = ?1 ORDER BY attempt",
        )
        .map_err(db(WHAT))?;
    let rows = stmt
        .query_map([delivery], |r| {
            Ok(DeliveryAttempt {
                attempt: count(r.get(0)?),
                at_ms: r.get(1)?,
                duration_ms: r.get(2)?,
                status: r
                    .get::<_, Option<i64>>(3)?
                    .and_then(|s| u16::try_from(s).ok()),
                error: r.get(4)?,
                next_attempt_ms: r.get(5)?,
            })
        })
        .map_err(db(WHAT))?;
    rows.collect::<Result<_, _>>().map_err(db(WHAT))
}

// The `WebhookStore` methods, boxed into the trait's own by `boxed_webhook_store!` below.
impl SqliteStore {
    async fn claim_deliveries(
        &self,
        owner: &str,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<DeliveryClaim>, StoreError> {
        const WHAT: &str = "claiming webhook deliveries";
        let owner = owner.to_owned();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.write(WHAT, move |tx| {
            let now = now_ms();
            let claimed: Vec<(i64, String, i64, i64, String)> = {
                let mut stmt = tx
                    .prepare_cached(
                        "UPDATE webhook_deliveries SET lease_owner = ?1, lease_until_ms = ?2 + ?3,
                           lease_gen = lease_gen + 1, updated_ms = ?2
                         WHERE id IN (
                           SELECT id FROM webhook_deliveries
                           WHERE state = 'pending' AND next_attempt_ms <= ?2
                             AND (lease_until_ms IS NULL OR lease_until_ms < ?2)
                           ORDER BY next_attempt_ms, id LIMIT ?4)
                         RETURNING id, webhook, attempts, lease_gen, message_id",
                    )
                    .map_err(db(WHAT))?;
                let rows = stmt
                    .query_map(params![owner, now, lease_ms, limit], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .map_err(db(WHAT))?;
                rows.collect::<Result<_, _>>().map_err(db(WHAT))?
            };
            let mut out = Vec::with_capacity(claimed.len());
            for (delivery, webhook, attempts, generation, message_id) in claimed {
                out.push(DeliveryClaim {
                    delivery,
                    webhook,
                    message: message(tx, &message_id)?,
                    attempts: count(attempts),
                    generation,
                });
            }
            out.sort_by_key(|c| c.delivery);
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
        let (delivery, generation) = (claim.delivery, claim.generation);
        self.write(WHAT, move |tx| {
            let now = now_ms();
            let (state, next) = match attempt.next {
                AttemptNext::Delivered => (DeliveryState::Delivered, None),
                AttemptNext::RetryIn(d) => {
                    (DeliveryState::Pending, Some(now.saturating_add(millis(d))))
                }
                AttemptNext::GiveUp => (DeliveryState::Failed, None),
            };
            let made: Option<i64> = tx
                .prepare_cached(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, state = ?1,
                       next_attempt_ms = ?2, lease_owner = NULL, lease_until_ms = NULL,
                       updated_ms = ?3
                     WHERE id = ?4 AND lease_gen = ?5 AND lease_owner IS NOT NULL
                       AND state = 'pending'
                     RETURNING attempts",
                )
                .map_err(db(WHAT))?
                .query_row(
                    params![state.as_str(), next, now, delivery, generation],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db(WHAT))?;
            let Some(number) = made else {
                return Ok(false);
            };
            tx.prepare_cached(
                "INSERT INTO webhook_attempts (delivery_id, attempt, at_ms, duration_ms, status,
                   error, next_attempt_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(db(WHAT))?
            .execute(params![
                delivery,
                number,
                attempt.at_ms,
                attempt.duration_ms,
                attempt.status,
                attempt.error,
                next
            ])
            .map_err(db(WHAT))?;
            Ok(true)
        })
        .await
    }

    async fn next_delivery_ms(&self) -> Result<Option<i64>, StoreError> {
        self.earliest_ms(
            "reading when the next webhook delivery is due",
            "SELECT MIN(MAX(next_attempt_ms, COALESCE(lease_until_ms, 0)))
             FROM webhook_deliveries WHERE state = 'pending'",
            Vec::new(),
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
        let webhook = webhook.to_owned();
        let before = before.unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.call(move |conn| {
            let rows: Vec<(i64, String, String, Option<i64>, i64)> = {
                let mut stmt = conn
                    .prepare_cached(
                        "SELECT id, message_id, state, next_attempt_ms, created_ms
                         FROM webhook_deliveries WHERE webhook = ?1 AND id < ?2
                         ORDER BY id DESC LIMIT ?3",
                    )
                    .map_err(db(WHAT))?;
                let rows = stmt
                    .query_map(params![webhook, before, limit], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .map_err(db(WHAT))?;
                rows.collect::<Result<_, _>>().map_err(db(WHAT))?
            };
            let mut out = Vec::with_capacity(rows.len());
            for (id, message_id, state, next_attempt_ms, created_ms) in rows {
                out.push(Delivery {
                    id,
                    webhook: webhook.clone(),
                    message: message(conn, &message_id)?,
                    state: DeliveryState::parse(&state).ok_or_else(|| StoreError::Corrupt {
                        what: format!("webhook delivery {id}"),
                        message: format!("`{state}` is not a delivery state"),
                    })?,
                    next_attempt_ms,
                    attempts: attempts(conn, id)?,
                    created_ms,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn webhook_backlog(&self) -> Result<u64, StoreError> {
        self.call(|conn| {
            conn.query_row(
                "SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| u64::try_from(n).unwrap_or(0))
            .map_err(db("counting pending webhook deliveries"))
        })
        .await
    }
}

crate::store::webhooks::boxed_webhook_store!(SqliteStore);
