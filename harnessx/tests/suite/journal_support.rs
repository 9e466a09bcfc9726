//! A journal kept in memory, as a store would keep it between a pause and a resume: model turns
//! and calls are recorded, and a test answers a pending input with [`MemoryJournal::answer`].
//! Shared by the suite and the telemetry binary.

use std::collections::HashMap;
use std::sync::Mutex;

use harnessx::journal::{CallJournal, CallRecord, InputReply, Journal, JournalError, StepKey};
use harnessx::model::ModelResponse;
use harnessx::{BoxFuture, ReplayPolicy, ToolCall, ToolResult};

#[derive(Default)]
pub struct MemoryJournal {
    turns: Mutex<HashMap<usize, ModelResponse>>,
    calls: Mutex<HashMap<StepKey, CallRecord>>,
    replies: Mutex<HashMap<StepKey, InputReply>>,
    /// Every call recorded started, as recorded.
    pub started: Mutex<Vec<ToolCall>>,
}

impl MemoryJournal {
    /// Answers the pending input of step `key`, as a person would before the run resumes.
    pub fn answer(&self, key: StepKey, reply: InputReply) {
        self.replies.lock().unwrap().insert(key, reply);
    }
}

impl CallJournal for MemoryJournal {
    fn is_durable(&self) -> bool {
        true
    }

    fn call(&self, key: StepKey) -> CallRecord {
        let calls = self.calls.lock().unwrap();
        calls.get(&key).cloned().unwrap_or(CallRecord::New)
    }

    fn reply(&self, key: StepKey) -> Option<InputReply> {
        self.replies.lock().unwrap().get(&key).cloned()
    }

    fn record_started<'a>(
        &'a self,
        key: StepKey,
        call: &'a ToolCall,
        _policy: ReplayPolicy,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        self.started.lock().unwrap().push(call.clone());
        self.calls
            .lock()
            .unwrap()
            .insert(key, CallRecord::Interrupted { starts: 1 });
        Box::pin(async { Ok(()) })
    }

    fn record_finished<'a>(
        &'a self,
        key: StepKey,
        result: &'a ToolResult,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        self.calls
            .lock()
            .unwrap()
            .insert(key, CallRecord::Finished(result.clone()));
        Box::pin(async { Ok(()) })
    }
}

impl Journal for MemoryJournal {
    fn recorded_turn(&self, turn: usize) -> Option<ModelResponse> {
        self.turns.lock().unwrap().get(&turn).cloned()
    }

    fn record_turn<'a>(
        &'a self,
        turn: usize,
        response: &'a ModelResponse,
    ) -> BoxFuture<'a, Result<(), JournalError>> {
        self.turns.lock().unwrap().insert(turn, response.clone());
        Box::pin(async { Ok(()) })
    }
}
