//! Each call inside its `execute_tool` span (see [`telemetry`](crate::telemetry)): the span wraps
//! dispatch, it does not live inside it.

use tracing::Instrument;

use super::call_journal::StepKey;
use super::{ToolRun, prepare};
use crate::hooks::HookContext;
use crate::output::{ToolCall, ToolResult};
use crate::telemetry::spans::ToolTrace;

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
        let def = &p.tool.definition;
        let trace = ToolTrace::start(
            &def.name,
            Some(def.description.as_str()),
            call,
            self.capture_content,
        );
        // The call's future is made in the `.await` itself, once per branch: bound to a local
        // or passed to a helper, it would be kept or copied twice over, and it is most of a
        // call's state.
        let result = match trace.enabled_span() {
            None => self.hooked(p, call, step, ctx).await,
            Some(span) => self.hooked(p, call, step, ctx).instrument(span).await,
        };
        trace.finish(&result, step.is_some_and(|k| self.is_waiting(k)));
        result
    }

    /// A call refused before it could run (unknown tool, bad arguments), reported as its span.
    pub(super) fn refused(&self, call: &ToolCall, result: ToolResult) -> ToolResult {
        refused(call, result, self.capture_content)
    }
}

/// A call refused before it could run (unknown tool, bad arguments), reported as its span.
pub(super) fn refused(call: &ToolCall, result: ToolResult, capture_content: bool) -> ToolResult {
    let trace = ToolTrace::start(&result.name, None, call, capture_content);
    trace.finish(&result, false);
    result
}
