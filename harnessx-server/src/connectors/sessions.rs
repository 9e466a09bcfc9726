//! One live MCP session per connector in this server process, shared by every agent built over
//! it and so by all their runs.
//!
//! Without it, each agent version built would start its own server process (or open its own
//! HTTP session) for every connector it uses, and pay the start and the handshake again. Here a
//! connector's session is made once, by the first agent that needs it, and kept while the
//! connector's version stays the same: a change (`PATCH /v2/connectors/{name}`) makes the next
//! agent built connect a new one. The session is an [`McpSession`]: a dead stdio server is
//! restarted by the first call that finds it dead, with a backoff after repeated failures, and
//! the tool list follows `tools/list_changed` for every agent at once.
//!
//! A session that cannot be made is not retried for a while (1 s after the first failure,
//! doubling up to 30 s), so a server that is down is not started again for every run; the runs
//! meanwhile get the connector's tools through a connection of their own, which registers a
//! placeholder tool that reports the failure to the model (see `harnessx::mcp`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harnessx::mcp::{McpServer, McpSession};

/// How long after a failed connect the next attempt waits, at most.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// This process's connector sessions, by connector name.
#[derive(Default)]
pub(crate) struct Sessions {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

/// One connector version's session, made at most once at a time.
struct Slot {
    version: u64,
    state: tokio::sync::Mutex<State>,
}

enum State {
    Empty,
    Live(McpSession),
    Failed {
        at: Instant,
        failures: u32,
        reason: String,
    },
}

impl Sessions {
    /// The live session with connector `name` at `version`, connecting `server` when there is
    /// none (one connect at a time per connector; the others wait for it). An `Err` says why
    /// there is no session now; it is not retried before its backoff has passed.
    pub(crate) async fn session(
        &self,
        name: &str,
        version: u64,
        server: McpServer,
    ) -> Result<McpSession, String> {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            let slot = slots.entry(name.to_owned()).or_insert_with(|| {
                Arc::new(Slot {
                    version,
                    state: tokio::sync::Mutex::new(State::Empty),
                })
            });
            if slot.version != version {
                // A new version: its session is new. Agents built over the old one keep it
                // until they are dropped.
                *slot = Arc::new(Slot {
                    version,
                    state: tokio::sync::Mutex::new(State::Empty),
                });
            }
            Arc::clone(slot)
        };
        let mut state = slot.state.lock().await;
        let failures = match &*state {
            State::Live(session) if !session.is_closed() => return Ok(session.clone()),
            State::Failed {
                at,
                failures,
                reason,
            } => {
                if at.elapsed() < backoff(*failures) {
                    return Err(reason.clone());
                }
                *failures
            }
            _ => 0,
        };
        match McpSession::connect(server).await {
            Ok(session) => {
                *state = State::Live(session.clone());
                Ok(session)
            }
            Err(e) => {
                let reason = harnessx::error::error_chain(&e);
                tracing::warn!(
                    connector = name,
                    "connecting the connector's session failed: {reason}"
                );
                *state = State::Failed {
                    at: Instant::now(),
                    failures: failures + 1,
                    reason: reason.clone(),
                };
                Err(reason)
            }
        }
    }

    /// Ends the sessions of connectors `exists` says are gone (deleted here or by another
    /// server): their servers stop. Agents using a connector keep it from being deleted, so no
    /// built agent still needs them.
    pub(crate) async fn close_unless(&self, exists: impl Fn(&str) -> bool) {
        let gone: Vec<Arc<Slot>> = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            let names: Vec<String> = slots.keys().filter(|n| !exists(n)).cloned().collect();
            names.iter().filter_map(|n| slots.remove(n)).collect()
        };
        for slot in gone {
            if let State::Live(session) = &*slot.state.lock().await {
                session.close().await;
            }
        }
    }
}

/// The wait after `failures` failed connects in a row: 1 s, 2 s, 4 s … at most 30 s.
fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1)
        .saturating_mul(1 << failures.saturating_sub(1).min(5))
        .min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_thirty_seconds() {
        let waits: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
