//! One fresh model turn through the hooks: `before_model`, the model (or a hook's answer),
//! `on_model_error`, `after_model`, with the run's usage counted along the way.

use super::run::{Sink, ask_model};
use super::{AgentError, AgentEvent, Inner};
use crate::engine::ToolRun;
use crate::hooks::HookContext;
use crate::model::{ModelRequest, ModelResponse};

/// Asks for turn `turn`'s response. Tokens are counted as the model reported them, before any
/// hook changes the response.
pub(super) async fn model_turn(
    inner: &Inner,
    run: &ToolRun,
    turn: usize,
    mut request: ModelRequest,
    durable: bool,
    sink: Option<Sink<'_>>,
) -> Result<ModelResponse, AgentError> {
    let hooks = run.hooks().clone();
    let ctx = HookContext {
        durable,
        ..HookContext::new(Some(turn), run.count_request())
    };
    let answered = hooks.before_model(&ctx, &mut request).await?;
    let asked = match answered {
        Some(response) => {
            if let Some(sink) = sink
                && !response.content.is_empty()
            {
                sink(AgentEvent::TextDelta {
                    text: response.content.clone(),
                });
            }
            Ok(response)
        }
        None => ask_model(inner, request, sink).await,
    };
    let mut response = match asked {
        Ok(response) => response,
        Err(AgentError::Model(error)) if !hooks.is_empty() => {
            match hooks.on_model_error(&ctx, &error).await? {
                Some(response) => {
                    if let Some(sink) = sink
                        && !response.content.is_empty()
                    {
                        sink(AgentEvent::TextDelta {
                            text: response.content.clone(),
                        });
                    }
                    response
                }
                None => return Err(AgentError::Model(error)),
            }
        }
        Err(other) => return Err(other),
    };
    let ctx = HookContext {
        usage: run.count_tokens(&response.usage),
        ..ctx
    };
    hooks.after_model(&ctx, &mut response).await?;
    Ok(response)
}
