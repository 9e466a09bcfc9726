//! Usage budgets: what a run has used ([`RunUsage`]) and the built-in hook that stops it past a
//! limit ([`UsageLimits`]).

use serde::{Deserialize, Serialize};

use super::{BeforeModel, BeforeTool, Hook, HookContext, HookStop, ToolInvocation};
use crate::model::{ModelRequest, ModelResponse};
use crate::tool::BoxFuture;

/// What a run has used so far. Model turns a durable run reads back from its journal count as
/// they did when they ran, so a resumed run goes on from its totals.
///
/// ```
/// use harnessx::hooks::RunUsage;
/// let usage = RunUsage { input_tokens: 120, output_tokens: 30, ..RunUsage::default() };
/// assert_eq!(usage.total_tokens(), 150);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunUsage {
    /// Model requests, including ones a hook answered and turns read back from a journal.
    pub model_requests: u64,
    /// Tool calls the model made, in call order (each call of each batch, including ones refused
    /// before running and ones read back from a journal).
    pub tool_calls: u64,
    /// Prompt tokens the model reported.
    pub input_tokens: u64,
    /// Generated tokens the model reported.
    pub output_tokens: u64,
}

impl RunUsage {
    /// Input plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// The value of one limit's counter.
    ///
    /// ```
    /// use harnessx::hooks::{RunUsage, UsageLimit};
    /// let usage = RunUsage { tool_calls: 4, ..RunUsage::default() };
    /// assert_eq!(usage.get(UsageLimit::ToolCalls), 4);
    /// ```
    pub fn get(&self, limit: UsageLimit) -> u64 {
        match limit {
            UsageLimit::ModelRequests => self.model_requests,
            UsageLimit::ToolCalls => self.tool_calls,
            UsageLimit::InputTokens => self.input_tokens,
            UsageLimit::OutputTokens => self.output_tokens,
            UsageLimit::TotalTokens => self.total_tokens(),
        }
    }
}

/// One of the limits [`UsageLimits`] can set; it displays as the field's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UsageLimit {
    /// [`UsageLimits::model_requests`].
    ModelRequests,
    /// [`UsageLimits::tool_calls`].
    ToolCalls,
    /// [`UsageLimits::input_tokens`].
    InputTokens,
    /// [`UsageLimits::output_tokens`].
    OutputTokens,
    /// [`UsageLimits::total_tokens`].
    TotalTokens,
}

impl UsageLimit {
    /// Every limit, in the order they are checked.
    pub const ALL: [Self; 5] = [
        Self::ModelRequests,
        Self::ToolCalls,
        Self::InputTokens,
        Self::OutputTokens,
        Self::TotalTokens,
    ];

    /// The field's name (`tool_calls`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ModelRequests => "model_requests",
            Self::ToolCalls => "tool_calls",
            Self::InputTokens => "input_tokens",
            Self::OutputTokens => "output_tokens",
            Self::TotalTokens => "total_tokens",
        }
    }
}

impl std::fmt::Display for UsageLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A usage budget for each run: a built-in [`Hook`] that ends a run with
/// [`AgentError::UsageLimitExceeded`](crate::AgentError::UsageLimitExceeded), naming the limit
/// and the value reached, as soon as it passes one. `None` means no limit.
///
/// - `model_requests` and `tool_calls` are checked before the request or call that would pass
///   them, which is then not made: with `tool_calls: Some(3)` the fourth call does not run (calls
///   before it in the same batch do).
/// - Token limits are checked as soon as a response reports its usage, and again before each
///   request (so a resumed durable run already over a limit asks nothing more).
///
/// The counts are the run's [`RunUsage`], kept by the run, so one `UsageLimits` serves every run
/// of an agent and each run gets the whole budget.
///
/// ```
/// use harnessx::hooks::{UsageLimit, UsageLimits};
/// use harnessx::{Agent, AgentError};
/// use harnessx::model::TestModel;
/// use serde_json::json;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), AgentError> {
/// let model = TestModel::new()
///     .then_call("read_todos", json!({}))
///     .then_call("read_todos", json!({}))
///     .then_reply("done");
/// let agent = Agent::builder()
///     .model(model)
///     .usage_limits(UsageLimits { model_requests: Some(2), ..UsageLimits::default() })
///     .build()?;
/// match agent.run("Go").await {
///     Err(AgentError::UsageLimitExceeded { limit, max, reached }) => {
///         assert_eq!((limit, max, reached), (UsageLimit::ModelRequests, 2, 3));
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UsageLimits {
    /// The most tool calls one run may make.
    pub tool_calls: Option<u64>,
    /// The most model requests one run may make.
    pub model_requests: Option<u64>,
    /// The most prompt tokens one run may use, summed over its requests.
    pub input_tokens: Option<u64>,
    /// The most generated tokens one run may use.
    pub output_tokens: Option<u64>,
    /// The most input plus output tokens one run may use.
    pub total_tokens: Option<u64>,
}

impl UsageLimits {
    /// The maximum set for `limit`, if any.
    pub fn max(&self, limit: UsageLimit) -> Option<u64> {
        match limit {
            UsageLimit::ModelRequests => self.model_requests,
            UsageLimit::ToolCalls => self.tool_calls,
            UsageLimit::InputTokens => self.input_tokens,
            UsageLimit::OutputTokens => self.output_tokens,
            UsageLimit::TotalTokens => self.total_tokens,
        }
    }

    /// The first of `limits` that `usage` passes, as a stop.
    ///
    /// ```
    /// use harnessx::hooks::{RunUsage, UsageLimit, UsageLimits};
    /// let limits = UsageLimits { total_tokens: Some(100), ..UsageLimits::default() };
    /// let usage = RunUsage { input_tokens: 90, output_tokens: 20, ..RunUsage::default() };
    /// let stop = limits.check(&usage, &UsageLimit::ALL).unwrap_err();
    /// assert_eq!(stop.usage_limit_exceeded(), Some((UsageLimit::TotalTokens, 100, 110)));
    /// assert!(limits.check(&RunUsage::default(), &UsageLimit::ALL).is_ok());
    /// ```
    pub fn check(&self, usage: &RunUsage, limits: &[UsageLimit]) -> Result<(), HookStop> {
        for &limit in limits {
            if let Some(max) = self.max(limit) {
                let reached = usage.get(limit);
                if reached > max {
                    return Err(HookStop::usage_limit(limit, max, reached));
                }
            }
        }
        Ok(())
    }
}

const TOKENS: [UsageLimit; 3] = [
    UsageLimit::InputTokens,
    UsageLimit::OutputTokens,
    UsageLimit::TotalTokens,
];

const BEFORE_REQUEST: [UsageLimit; 4] = [
    UsageLimit::ModelRequests,
    UsageLimit::InputTokens,
    UsageLimit::OutputTokens,
    UsageLimit::TotalTokens,
];

impl Hook for UsageLimits {
    fn name(&self) -> &str {
        "UsageLimits"
    }

    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        _request: &'a mut ModelRequest,
    ) -> BoxFuture<'a, Result<BeforeModel, HookStop>> {
        let checked = self
            .check(&ctx.usage, &BEFORE_REQUEST)
            .map(|()| BeforeModel::Continue);
        Box::pin(std::future::ready(checked))
    }

    fn after_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        _response: &'a mut ModelResponse,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        Box::pin(std::future::ready(self.check(&ctx.usage, &TOKENS)))
    }

    fn before_tool<'a>(
        &'a self,
        ctx: &'a HookContext,
        _call: &'a mut ToolInvocation,
    ) -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
        let checked = self
            .check(&ctx.usage, &[UsageLimit::ToolCalls])
            .map(|()| BeforeTool::Continue);
        Box::pin(std::future::ready(checked))
    }
}
