//! Running the installed hooks of one stage in order, stopping the chain where a hook decides.

use std::sync::Arc;

use super::{BeforeModel, BeforeTool, Hook, HookContext, HookStop, ToolInvocation};
use crate::model::{ModelError, ModelRequest, ModelResponse};
use crate::output::ToolResult;

/// The hooks of an agent or a tool run, in the order they were installed.
#[derive(Clone)]
pub(crate) struct Hooks(Arc<[Arc<dyn Hook>]>);

impl Default for Hooks {
    /// No hooks, shared: a run without hooks (every direct `execute`) allocates none.
    fn default() -> Self {
        static NONE: std::sync::LazyLock<Arc<[Arc<dyn Hook>]>> =
            std::sync::LazyLock::new(|| Arc::from(Vec::new()));
        Self(Arc::clone(&NONE))
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|h| h.name()))
            .finish()
    }
}

impl Hooks {
    pub(crate) fn new(hooks: Vec<Arc<dyn Hook>>) -> Self {
        Self(hooks.into())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These hooks followed by `hook`.
    pub(crate) fn with(&self, hook: Arc<dyn Hook>) -> Self {
        Self(self.0.iter().cloned().chain([hook]).collect())
    }

    /// `before_model` in order: the first answer ends the chain.
    pub(crate) async fn before_model(
        &self,
        ctx: &HookContext,
        request: &mut ModelRequest,
    ) -> Result<Option<ModelResponse>, HookStop> {
        for hook in self.0.iter() {
            match hook.before_model(ctx, request).await {
                Ok(BeforeModel::Continue) => {}
                Ok(BeforeModel::Respond(response)) => return Ok(Some(response)),
                Err(stop) => return Err(stop.by(hook.name())),
            }
        }
        Ok(None)
    }

    /// `on_model_error` in order: the first answer ends the chain.
    pub(crate) async fn on_model_error(
        &self,
        ctx: &HookContext,
        error: &ModelError,
    ) -> Result<Option<ModelResponse>, HookStop> {
        for hook in self.0.iter() {
            match hook.on_model_error(ctx, error).await {
                Ok(None) => {}
                Ok(Some(response)) => return Ok(Some(response)),
                Err(stop) => return Err(stop.by(hook.name())),
            }
        }
        Ok(None)
    }

    /// `after_model` in order.
    pub(crate) async fn after_model(
        &self,
        ctx: &HookContext,
        response: &mut ModelResponse,
    ) -> Result<(), HookStop> {
        for hook in self.0.iter() {
            hook.after_model(ctx, response)
                .await
                .map_err(|stop| stop.by(hook.name()))?;
        }
        Ok(())
    }

    /// `before_tool` in order: a denial or an answer ends the chain.
    pub(crate) async fn before_tool(
        &self,
        ctx: &HookContext,
        call: &mut ToolInvocation,
    ) -> Result<BeforeTool, HookStop> {
        for hook in self.0.iter() {
            match hook.before_tool(ctx, call).await {
                Ok(BeforeTool::Continue) => {}
                Ok(decided) => return Ok(decided),
                Err(stop) => return Err(stop.by(hook.name())),
            }
        }
        Ok(BeforeTool::Continue)
    }

    /// `after_tool` (a success) or `on_tool_error` (an error result) in order. Each hook sees the
    /// result as the one before left it, so one that turns an error into a success hands the
    /// rest of the chain a success.
    pub(crate) async fn after_tool(
        &self,
        ctx: &HookContext,
        call: &ToolInvocation,
        result: &mut ToolResult,
    ) -> Result<(), HookStop> {
        for hook in self.0.iter() {
            let done = if result.is_error {
                hook.on_tool_error(ctx, call, result).await
            } else {
                hook.after_tool(ctx, call, result).await
            };
            done.map_err(|stop| stop.by(hook.name()))?;
        }
        Ok(())
    }
}
