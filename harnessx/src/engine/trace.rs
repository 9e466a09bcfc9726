//! Each call inside its `execute_tool` span (see [`telemetry`](crate::telemetry)): the span wraps
//! dispatch, it does not live inside it.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use tracing::{Instrument, Span};

use super::{ToolRun, prepare};
use crate::hooks::HookContext;
use crate::journal::StepKey;
use crate::output::{ToolCall, ToolResult};
use crate::telemetry::spans::ToolTrace;
use crate::tool::ToolDefinition;

impl ToolRun {
    /// Records tool arguments, results and error messages on the spans (off by default).
    pub(crate) fn with_content_capture(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// Runs a prepared call, hooks included, inside its span.
    pub(super) async fn traced(
        &self,
        p: prepare::Prepared,
        call: &ToolCall,
        step: Option<StepKey>,
        ctx: HookContext,
    ) -> ToolResult {
        let tool = Arc::clone(&p.tool);
        let work = self.hooked(p, call, step, ctx);
        let waiting = || step.is_some_and(|k| self.is_waiting(k));
        in_span(&tool.definition, call, self.capture_content, work, waiting).await
    }

    /// A call refused before it could run (unknown tool, bad arguments), reported as its span.
    pub(super) fn refused(&self, call: &ToolCall, result: ToolResult) -> ToolResult {
        refused(call, result, self.capture_content)
    }
}

/// `work`, a call of tool `def`, inside the call's span; `waiting` says afterwards whether the
/// call stopped to wait for input rather than finished.
///
/// Combinators, not an `async fn`: an `async fn` would keep `work` twice in its future (the
/// argument, and the future it awaits), and `work` is most of a call's state.
pub(super) fn in_span<W: Future<Output = ToolResult>>(
    def: &ToolDefinition,
    call: &ToolCall,
    capture_content: bool,
    work: W,
    waiting: impl FnOnce() -> bool,
) -> impl Future<Output = ToolResult> {
    let trace = ToolTrace::start(
        &def.name,
        Some(def.description.as_str()),
        call,
        capture_content,
    );
    // Without a subscriber that wants the span there is nothing to enter on each poll.
    let span = if trace.span().is_disabled() {
        Span::none()
    } else {
        trace.span().clone()
    };
    work.instrument(span).map(move |result| {
        trace.finish(&result, waiting());
        result
    })
}

/// A call refused before it could run (unknown tool, bad arguments), reported as its span.
pub(super) fn refused(call: &ToolCall, result: ToolResult, capture_content: bool) -> ToolResult {
    let trace = ToolTrace::start(&result.name, None, call, capture_content);
    trace.finish(&result, false);
    result
}
