//! The loop: model → tool batch → model, for `run` and `run_stream`.

use std::sync::Arc;

use futures::channel::mpsc;
use futures::{FutureExt, Stream, StreamExt};
use tracing::Instrument;

use super::RunOutcome;
use super::request::{OUTPUT_RETRIES, RunSpec, retry_message};
use super::{AgentError, AgentEvent, Inner, RunResult};
use crate::engine::{ToolEvent, ToolRun};
use crate::journal::{CallRecord, Journal, JournalError, NoJournal, StepKey};
use crate::model::{
    Message, Messages, ModelError, ModelRequest, ModelResponse, ModelStreamEvent, Usage,
};
use crate::planning::{PLANNING_PROMPT_LINE, TodoList, installed_todo_list};
use crate::telemetry::spans::{ChatTrace, RunTrace, SpanError};

pub(super) type Sink<'a> = &'a (dyn Fn(AgentEvent) + Send + Sync);

/// Runs the loop and streams its events; the final item is the result or the error.
pub(super) fn stream(
    inner: Arc<Inner>,
    history: Vec<Message>,
    prompt: String,
    spec: RunSpec,
) -> impl Stream<Item = Result<AgentEvent, AgentError>> + Send + Unpin + 'static {
    let (tx, rx) = mpsc::unbounded();
    let driver = async move {
        let sink = |event| {
            // The receiver is gone only when the stream was dropped, which also drops us.
            let _ = tx.unbounded_send(Ok(event));
        };
        let outcome = drive(inner, history, prompt, spec, Some(&sink)).await;
        let _ = tx.unbounded_send(outcome.map(|result| AgentEvent::Completed { result }));
    };
    // The driver yields nothing itself; polling it makes progress and fills the channel, which
    // closes when the driver (holding the sender) finishes.
    let driver = driver
        .into_stream()
        .filter_map(|()| std::future::ready(None))
        .boxed();
    futures::stream::select(rx, driver)
}

/// Cancels the calls still running when a run ends early (its future was dropped).
struct CancelOnDrop<'a>(&'a ToolRun);

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A direct run over `history` (the conversation before `prompt`).
pub(super) async fn drive(
    inner: Arc<Inner>,
    history: Vec<Message>,
    prompt: String,
    spec: RunSpec,
    sink: Option<Sink<'_>>,
) -> Result<RunResult, AgentError> {
    let journal: Arc<dyn Journal> = Arc::new(NoJournal);
    match run_loop(inner, history, prompt, journal, spec, sink).await? {
        RunOutcome::Completed(result) => Ok(result),
        // Only a durable journal asks the engine to wait; `NoJournal` never does.
        RunOutcome::NeedsInput(_) => Err(AgentError::Journal(JournalError::Write {
            step: "pause".to_owned(),
            message: "a direct run cannot wait for input".to_owned(),
        })),
    }
}

/// The run through a journal over a caller-kept transcript.
pub(super) async fn drive_journaled(
    inner: Arc<Inner>,
    transcript: Vec<Message>,
    prompt: String,
    journal: Arc<dyn Journal>,
    spec: RunSpec,
    sink: Option<Sink<'_>>,
) -> Result<RunOutcome, AgentError> {
    run_loop(inner, transcript, prompt, journal, spec, sink).await
}

/// Every run: the loop through a journal (a direct run's is [`NoJournal`]).
async fn run_loop(
    inner: Arc<Inner>,
    transcript: Vec<Message>,
    prompt: String,
    journal: Arc<dyn Journal>,
    spec: RunSpec,
    sink: Option<Sink<'_>>,
) -> Result<RunOutcome, AgentError> {
    let agent = super::Agent {
        inner: Arc::clone(&inner),
    };
    agent.connect().await?;
    let mut conversation = Messages::from(transcript);
    let start = conversation.len();
    conversation.push(Message::user(prompt));
    traced_turns(&inner, &mut conversation, start, sink, journal, &spec).await
}

/// [`turns`] inside the run's `invoke_agent` span.
async fn traced_turns(
    inner: &Inner,
    conversation: &mut Messages,
    start: usize,
    sink: Option<Sink<'_>>,
    journal: Arc<dyn Journal>,
    spec: &RunSpec,
) -> Result<RunOutcome, AgentError> {
    let trace = RunTrace::start(
        inner.config.name.as_deref(),
        inner.model.name(),
        inner.instructions.as_deref(),
        conversation,
        inner.config.capture_content,
    );
    let outcome = turns(inner, conversation, start, sink, journal, spec)
        .instrument(trace.span().clone())
        .await;
    match &outcome {
        Ok(RunOutcome::Completed(result)) => {
            trace.completed(&result.output, &result.usage, result.stop_reason);
        }
        Ok(RunOutcome::NeedsInput(_)) => trace.waiting(),
        Err(error) => trace.failed(error),
    }
    outcome
}

async fn turns(
    inner: &Inner,
    conversation: &mut Messages,
    start: usize,
    sink: Option<Sink<'_>>,
    journal: Arc<dyn Journal>,
    spec: &RunSpec,
) -> Result<RunOutcome, AgentError> {
    let registry = &inner.registry;
    let permissions = spec
        .permissions
        .clone()
        .unwrap_or_else(|| inner.permissions.clone());
    let run = registry
        .run(Some(permissions))
        .with_journal(journal.clone())
        .with_hooks(inner.middleware.clone())
        .with_content_capture(inner.config.capture_content)
        .with_extensions(&spec.extensions);
    let _cancel = CancelOnDrop(&run);
    let emit = |event: AgentEvent| {
        if let Some(sink) = sink {
            sink(event);
        }
    };
    let mut usage = Usage::default();
    let limit = inner.config.max_turns;
    // Whether a todo list was attached to a message already (found once, then kept up to date,
    // so that no turn scans the history).
    let mut attached = conversation.iter().any(has_attachment);
    let mut output_retries = OUTPUT_RETRIES;
    for turn in 1..=limit {
        let todos = planning_list(inner);
        if let Some(list) = &todos {
            attached |= attach_todos(conversation, list, attached);
        }
        // The request shares the conversation (no message is copied); by the time the loop
        // appends to it, the model has usually dropped its copy, so appending copies nothing.
        let request = ModelRequest {
            system: system_prompt(inner.instructions.as_deref(), todos.is_some()),
            messages: conversation.clone(),
            tools: registry.get_tool_params(),
            settings: inner.config.settings.clone(),
            output: spec.output.as_ref().map(|o| o.schema.clone()),
        };
        // A turn the journal recorded is read back, never asked again (and reported when it ran);
        // no model hook runs for it, but it counts toward the run's usage.
        let response = match journal.recorded_turn(turn) {
            Some(recorded) => {
                run.count_request();
                run.count_tokens(&recorded.usage);
                recorded
            }
            None => {
                let durable = journal.is_durable();
                let response =
                    super::hooked::model_turn(inner, &run, turn, request, durable, sink).await?;
                emit(AgentEvent::TurnCompleted {
                    turn,
                    response: response.clone(),
                });
                journal.record_turn(turn, &response).await?;
                response
            }
        };
        usage += response.usage;
        conversation.push(Message::from(&response));
        if response.tool_calls.is_empty() {
            if let Some(output) = &spec.output
                && let Err(reason) = (output.check)(&response.content)
            {
                if output_retries == 0 {
                    return Err(AgentError::InvalidOutput {
                        attempts: OUTPUT_RETRIES + 1,
                        reason,
                    });
                }
                output_retries -= 1;
                conversation.push(retry_message(&reason));
                continue;
            }
            return Ok(RunOutcome::Completed(RunResult {
                output: response.content,
                messages: conversation[start..].to_vec(),
                turns: turn,
                usage,
                todos: planning_list(inner).map(|l| l.items()).unwrap_or_default(),
                stop_reason: response.stop_reason,
            }));
        }
        if let Some(list) = &todos {
            restore_replayed_todos(journal.as_ref(), turn, &response.tool_calls, list);
        }
        let version = todos.as_ref().map(TodoList::version);
        let on_tool_event = |event: ToolEvent| emit(event.into());
        let results = run
            .execute_turn(Some(turn), &response.tool_calls, Some(&on_tool_event))
            .await;
        if let Some(stop) = run.stopped() {
            return Err(stop.into());
        }
        let stops = run.take_stops();
        if let Some(error) = stops.error {
            return Err(error.into());
        }
        if !stops.pending.is_empty() {
            let mut pending = stops.pending;
            pending.sort_by_key(|p| p.key);
            return Ok(RunOutcome::NeedsInput(pending));
        }
        conversation.extend(results.into_iter().map(|r| Message::Tool {
            call_id: r.call_id,
            name: r.name,
            content: r.content,
            is_error: r.is_error,
            attachment: None,
        }));
        if let Some(list) = &todos
            && Some(list.version()) != version
        {
            emit(AgentEvent::TodosUpdated {
                todos: list.items(),
            });
        }
    }
    Err(AgentError::MaxTurns { limit })
}

/// A replayed `write_todos` call is not run again; its list is put back from its arguments so
/// the todo list (and the attachments built from it) are what they were when it ran.
fn restore_replayed_todos(
    journal: &dyn Journal,
    turn: usize,
    calls: &[crate::ToolCall],
    list: &TodoList,
) {
    if !journal.is_durable() {
        return;
    }
    for (i, call) in calls.iter().enumerate() {
        if call.name == crate::planning::WRITE_TODOS
            && let CallRecord::Finished(result) = journal.call(StepKey::call(turn, i))
            && !result.is_error
        {
            crate::planning::restore_todos(list, call);
        }
    }
}

/// The todo list to attach and announce, when planning is on and the built-in tool installed.
fn planning_list(inner: &Inner) -> Option<TodoList> {
    inner
        .config
        .planning
        .then(|| installed_todo_list(&inner.registry))
        .flatten()
}

fn has_attachment(message: &Message) -> bool {
    matches!(
        message,
        Message::User {
            attachment: Some(_),
            ..
        } | Message::Tool {
            attachment: Some(_),
            ..
        }
    )
}

/// Attaches the current list to the newest message once; messages already sent keep theirs.
/// An empty list is attached only once a list was attached before (`attached_before`), so the
/// model learns that the list it saw last was cleared. Returns whether it attached the list.
fn attach_todos(conversation: &mut Messages, list: &TodoList, attached_before: bool) -> bool {
    if list.is_empty() && !attached_before {
        return false;
    }
    // Look before borrowing mutably: a mutable borrow copies the messages when a model kept
    // the previous request.
    if !matches!(
        conversation.last(),
        Some(
            Message::User {
                attachment: None,
                ..
            } | Message::Tool {
                attachment: None,
                ..
            }
        )
    ) {
        return false;
    }
    if let Some(Message::User { attachment, .. } | Message::Tool { attachment, .. }) =
        conversation.last_mut()
    {
        *attachment = Some(list.render());
        return true;
    }
    false
}

fn system_prompt(instructions: Option<&str>, planning: bool) -> Option<String> {
    match (instructions, planning) {
        (Some(i), true) => Some(format!("{i}\n\n{PLANNING_PROMPT_LINE}")),
        (Some(i), false) => Some(i.to_owned()),
        (None, true) => Some(PLANNING_PROMPT_LINE.to_owned()),
        (None, false) => None,
    }
}

/// One model request (streamed when there is a sink), inside its `chat` span.
pub(super) async fn ask_model(
    inner: &Inner,
    request: ModelRequest,
    sink: Option<Sink<'_>>,
) -> Result<ModelResponse, AgentError> {
    let trace = ChatTrace::start(
        inner.model.name(),
        inner.model.server_address().as_ref(),
        &request,
        sink.is_some(),
        inner.config.capture_content,
    );
    let result = async {
        match sink {
            Some(sink) => {
                // A fallback model that takes over is the one that answers.
                let sink = |event: AgentEvent| {
                    if let AgentEvent::ModelFallback { to, .. } = &event {
                        trace.fell_back(to);
                    }
                    sink(event);
                };
                stream_turn(inner, request, &sink).await
            }
            None => inner
                .model
                .complete(request)
                .await
                .map_err(AgentError::from),
        }
    }
    .instrument(trace.span().clone())
    .await;
    trace.finish(result.as_ref().map_err(|e| e as &dyn SpanError));
    result
}

async fn stream_turn(
    inner: &Inner,
    request: ModelRequest,
    sink: Sink<'_>,
) -> Result<ModelResponse, AgentError> {
    let mut events = inner.model.stream(request);
    while let Some(event) = events.next().await {
        match event? {
            ModelStreamEvent::TextDelta { text } => sink(AgentEvent::TextDelta { text }),
            ModelStreamEvent::Completed { response } => return Ok(response),
            ModelStreamEvent::Fallback {
                from,
                to,
                kind,
                error,
            } => sink(AgentEvent::ModelFallback {
                from,
                to,
                kind,
                error,
            }),
            ModelStreamEvent::ToolCallStarted { .. } | ModelStreamEvent::ToolCallDelta { .. } => {}
        }
    }
    Err(AgentError::Model(ModelError::Malformed {
        provider: inner.model.name().to_owned(),
        message: "the response stream ended before the turn was complete; run again".to_owned(),
    }))
}
