//! The store-backed [`Journal`] a worker drives a run with: reads answered from the run's
//! journal loaded at claim, each write one store transaction carrying the events since the
//! last one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use harnessx::journal::{CallJournal, CallRecord, InputReply, Journal, JournalError, StepKey};
use harnessx::{AgentEvent, BoxFuture, ModelResponse, ReplayPolicy, ToolCall, ToolResult};
use tokio::sync::broadcast;

use crate::observe::Observer;
use crate::store::{Lease, RunStore, Step};
use crate::types::{RunEvent, StoredEvent};

#[derive(Default)]
struct Replay {
    turns: HashMap<u32, ModelResponse>,
    calls: HashMap<StepKey, CallRecord>,
    replies: HashMap<StepKey, InputReply>,
}

impl Replay {
    fn apply(&mut self, step: &Step) {
        match step {
            Step::Turn { turn, response } => {
                self.turns.insert(*turn, response.clone());
            }
            Step::Started { key, .. } => {
                let starts = match self.calls.get(key) {
                    Some(CallRecord::Interrupted { starts }) => starts + 1,
                    _ => 1,
                };
                self.calls.insert(*key, CallRecord::Interrupted { starts });
                // A recovery choice answers the interruption before this start, not a later one.
                if let Some(InputReply::Recovery { .. }) = self.replies.get(key) {
                    self.replies.remove(key);
                }
            }
            Step::Finished { key, result } => {
                self.calls
                    .insert(*key, CallRecord::Finished(result.clone()));
            }
            Step::Replied { key, reply } => {
                self.replies.insert(*key, reply.clone());
            }
            Step::Asked { .. } | Step::Cancelled => {}
        }
    }
}

/// When the model turn and the calls in flight started, for an [`Observer`].
#[derive(Default)]
struct Timing {
    /// The turn the model is being asked for, since when.
    turn: Option<(usize, Instant)>,
    /// Calls whose `started` record is written, since then.
    calls: HashMap<StepKey, Instant>,
}

/// A claimed run's journal.
pub(crate) struct StoreJournal {
    store: Arc<dyn RunStore>,
    lease: Lease,
    replay: Mutex<Replay>,
    /// Text deltas (coalesced) and todo updates, stored with the next write.
    buffer: Mutex<Vec<RunEvent>>,
    live: broadcast::Sender<StoredEvent>,
    /// Told about model calls, tool calls and writes; no clock is read without one.
    observer: Option<Arc<dyn Observer>>,
    timing: Mutex<Timing>,
}

impl StoreJournal {
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        lease: Lease,
        steps: &[Step],
        live: broadcast::Sender<StoredEvent>,
        observer: Option<Arc<dyn Observer>>,
    ) -> Self {
        let mut replay = Replay::default();
        for step in steps {
            replay.apply(step);
        }
        Self {
            store,
            lease,
            replay: Mutex::new(replay),
            buffer: Mutex::default(),
            live,
            observer,
            timing: Mutex::default(),
        }
    }

    fn timing(&self) -> std::sync::MutexGuard<'_, Timing> {
        self.timing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The loop's event sink: steps' own events are written with the steps, so only text and
    /// todo updates are kept here.
    pub(crate) fn on_event(&self, event: AgentEvent) {
        let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            AgentEvent::TextDelta { text } => match buffer.last_mut() {
                Some(RunEvent::TextDelta { text: so_far }) => so_far.push_str(&text),
                _ => buffer.push(RunEvent::TextDelta { text }),
            },
            AgentEvent::TodosUpdated { todos } => buffer.push(RunEvent::TodosUpdated { todos }),
            _ => {}
        }
    }

    /// The events not yet written.
    pub(crate) fn take_buffer(&self) -> Vec<RunEvent> {
        std::mem::take(&mut *self.buffer.lock().unwrap_or_else(|p| p.into_inner()))
    }

    async fn write(&self, what: String, step: Step, event: RunEvent) -> Result<(), JournalError> {
        let mut events = self.take_buffer();
        events.push(event);
        let started = self.observer.as_ref().map(|_| Instant::now());
        let written = self
            .store
            .append_step(&self.lease, step.clone(), events)
            .await;
        if let (Some(observer), Some(started)) = (&self.observer, started) {
            match &written {
                Ok(_) => observer.step_written(started.elapsed()),
                Err(e) => observer.store_error(e),
            }
        }
        let stored = written.map_err(|e| JournalError::Write {
            step: what,
            message: e.to_string(),
        })?;
        self.replay
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .apply(&step);
        for event in stored {
            let _ = self.live.send(event);
        }
        Ok(())
    }
}

impl CallJournal for StoreJournal {
    fn is_durable(&self) -> bool {
        true
    }

    fn call(&self, key: StepKey) -> CallRecord {
        let replay = self.replay.lock().unwrap_or_else(|p| p.into_inner());
        replay.calls.get(&key).cloned().unwrap_or(CallRecord::New)
    }

    fn reply(&self, key: StepKey) -> Option<InputReply> {
        let replay = self.replay.lock().unwrap_or_else(|p| p.into_inner());
        replay.replies.get(&key).cloned()
    }

    fn record_started<'a>(
        &'a self,
        key: StepKey,
        call: &'a ToolCall,
        policy: ReplayPolicy,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        Box::pin(async move {
            self.write(
                format!("call {}.{} started", key.turn, key.index),
                Step::Started {
                    key,
                    call: call.clone(),
                    policy,
                },
                RunEvent::ToolCallStarted {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            )
            .await?;
            if self.observer.is_some() {
                self.timing().calls.insert(key, Instant::now());
            }
            Ok(())
        })
    }

    fn record_finished<'a>(
        &'a self,
        key: StepKey,
        result: &'a ToolResult,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        if let Some(observer) = &self.observer {
            let elapsed = self.timing().calls.remove(&key).map(|at| at.elapsed());
            observer.tool_call(result, elapsed);
        }
        Box::pin(self.write(
            format!("call {}.{} finished", key.turn, key.index),
            Step::Finished {
                key,
                result: result.clone(),
            },
            RunEvent::ToolResult {
                result: result.clone(),
            },
        ))
    }
}

impl Journal for StoreJournal {
    fn recorded_turn(&self, turn: usize) -> Option<ModelResponse> {
        let recorded = {
            let replay = self.replay.lock().unwrap_or_else(|p| p.into_inner());
            replay
                .turns
                .get(&u32::try_from(turn).unwrap_or(u32::MAX))
                .cloned()
        };
        // Not recorded: the loop asks the model now.
        if recorded.is_none() && self.observer.is_some() {
            self.timing().turn = Some((turn, Instant::now()));
        }
        recorded
    }

    fn record_turn<'a>(
        &'a self,
        turn: usize,
        response: &'a ModelResponse,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        if let Some(observer) = &self.observer
            && let Some((asked, at)) = self.timing().turn.take()
            && asked == turn
        {
            observer.model_call(at.elapsed());
        }
        let turn = u32::try_from(turn).unwrap_or(u32::MAX);
        Box::pin(self.write(
            format!("model turn {turn}"),
            Step::Turn {
                turn,
                response: response.clone(),
            },
            RunEvent::TurnCompleted {
                turn,
                response: response.clone(),
            },
        ))
    }
}
