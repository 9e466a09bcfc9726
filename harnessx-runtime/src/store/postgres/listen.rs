//! The listening connection: one dedicated connection runs `LISTEN harnessx_runs` and turns
//! each notification into a [`Wakeup`]. When it is lost it reconnects with backoff, and while
//! it is down it sends [`Wakeup::Resync`] at each attempt, so the workers fall back to polling.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::StreamExt;
use tokio::sync::{broadcast, mpsc};
use tokio_postgres::AsyncMessage;

use super::retry::{FIRST_DELAY, next_delay};
use super::tls::{self, MakeRustls};
use crate::store::Wakeup;
use crate::types::RunId;

/// The channel every store notifies.
pub(super) const CHANNEL: &str = "harnessx_runs";

/// Parses a notification's payload: `queued`, `asked`, `cancel:<run id>`,
/// `events:<run id>:<seq>`.
pub(super) fn parse(payload: &str) -> Option<Wakeup> {
    match payload {
        "queued" => Some(Wakeup::Queued),
        "asked" => Some(Wakeup::Deadlines),
        other => {
            if let Some(id) = other.strip_prefix("cancel:") {
                return id.parse().ok().map(|id| Wakeup::Cancel(RunId(id)));
            }
            let (run, seq) = other.strip_prefix("events:")?.split_once(':')?;
            Some(Wakeup::Events {
                run: RunId(run.parse().ok()?),
                seq: seq.parse().ok()?,
            })
        }
    }
}

/// Listens until the store is dropped (the task is aborted then). It connects with the
/// store's TLS settings; a refused TLS connection is logged as an error, and tried again with
/// the same backoff (the certificate may be fixed while the store runs).
pub(super) async fn listen(
    config: tokio_postgres::Config,
    tls: MakeRustls,
    wake: broadcast::Sender<Wakeup>,
    losses: Arc<AtomicU64>,
    listening: Arc<AtomicBool>,
) {
    let mut delay = FIRST_DELAY;
    loop {
        match config.connect(tls.clone()).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    let mut messages =
                        futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(AsyncMessage::Notification(n)) => {
                                if tx.send(n.payload().to_owned()).is_err() {
                                    return;
                                }
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::warn!(error = %e, "the LISTEN connection failed");
                                return;
                            }
                        }
                    }
                });
                match client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    Ok(()) => {
                        delay = FIRST_DELAY;
                        listening.store(true, Ordering::SeqCst);
                        // Anything notified while this connection was not listening is missed.
                        let _ = wake.send(Wakeup::Resync);
                        while let Some(payload) = rx.recv().await {
                            if let Some(w) = parse(&payload) {
                                let _ = wake.send(w);
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "LISTEN failed"),
                }
                listening.store(false, Ordering::SeqCst);
                driver.abort();
                drop(client);
                losses.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    retry_in_ms = delay.as_millis() as u64,
                    "lost the PostgreSQL LISTEN connection; polling until it is back"
                );
            }
            Err(e) => match tls::refusal(&e, tls.settings(), &tls::hosts(&config)) {
                Some(refused) => tracing::error!(
                    error = %refused,
                    retry_in_ms = delay.as_millis() as u64,
                    "the LISTEN connection was refused; polling until it connects"
                ),
                None => tracing::warn!(
                    error = %e,
                    retry_in_ms = delay.as_millis() as u64,
                    "cannot reach PostgreSQL for LISTEN; polling until it is back"
                ),
            },
        }
        let _ = wake.send(Wakeup::Resync);
        tokio::time::sleep(delay).await;
        delay = next_delay(delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_parse_and_unknown_ones_are_ignored() {
        assert_eq!(parse("queued"), Some(Wakeup::Queued));
        assert_eq!(parse("asked"), Some(Wakeup::Deadlines));
        assert_eq!(parse("cancel:42"), Some(Wakeup::Cancel(RunId(42))));
        assert_eq!(parse("cancel:x"), None);
        assert_eq!(
            parse("events:7:12"),
            Some(Wakeup::Events {
                run: RunId(7),
                seq: 12
            })
        );
        assert_eq!(parse("events:7"), None);
        assert_eq!(parse("events:x:1"), None);
        assert_eq!(parse("something else"), None);
    }
}
