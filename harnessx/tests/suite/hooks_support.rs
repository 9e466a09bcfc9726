//! A configurable hook for the hook tests: it logs every stage it sees and does what its fields
//! say at each one.

use std::sync::{Arc, Mutex};

use harnessx::hooks::{BeforeModel, BeforeTool, Hook, HookContext, HookStop, ToolInvocation};
use harnessx::model::{ModelRequest, ModelResponse};
use harnessx::{BoxFuture, ModelError, ToolOutput, ToolResult};
use serde_json::Value;

/// A shared, ordered log of what the hooks saw.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// What a [`Scripted`] hook does; every field defaults to "nothing".
#[derive(Default)]
pub struct Scripted {
    pub name: String,
    pub log: Log,
    /// `before_tool`: set these argument fields.
    pub set_args: Vec<(&'static str, Value)>,
    /// `before_tool`: deny with this reason.
    pub deny: Option<String>,
    /// `before_tool`: answer with this text.
    pub respond: Option<String>,
    /// `before_tool`: stop the run with this reason.
    pub stop_tool: Option<String>,
    /// `after_tool`: append this to successful results.
    pub append: Option<String>,
    /// `on_tool_error`: replace an error result with this successful text.
    pub recover_tool: Option<String>,
    /// `before_model`: answer with this text instead of the model.
    pub answer_model: Option<String>,
    /// `before_model`: replace every user message's text with this.
    pub redact_user: Option<String>,
    /// `after_model`: replace the answer text with this.
    pub rewrite_answer: Option<String>,
    /// `on_model_error`: answer with this text.
    pub recover_model: Option<String>,
    /// `before_model`: stop the run with this reason.
    pub stop_model: Option<String>,
}

impl Scripted {
    pub fn named(name: &str, log: &Log) -> Self {
        Self {
            name: name.to_owned(),
            log: log.clone(),
            ..Self::default()
        }
    }
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl Hook for Scripted {
    fn name(&self) -> &str {
        &self.name
    }

    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        request: &'a mut ModelRequest,
    ) -> BoxFuture<'a, Result<BeforeModel, HookStop>> {
        self.log.push(format!(
            "{} before_model turn={:?} requests={}",
            self.name,
            ctx.turn.unwrap_or(0),
            ctx.usage.model_requests
        ));
        if let Some(reason) = &self.stop_model {
            return ready(Err(HookStop::new(reason.clone())));
        }
        if let Some(text) = &self.redact_user {
            for message in &mut request.messages {
                if let harnessx::Message::User { content, .. } = message {
                    *content = text.clone();
                }
            }
        }
        ready(Ok(match &self.answer_model {
            Some(text) => BeforeModel::Respond(ModelResponse::text(text.clone())),
            None => BeforeModel::Continue,
        }))
    }

    fn after_model<'a>(
        &'a self,
        ctx: &'a HookContext,
        response: &'a mut ModelResponse,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        self.log.push(format!(
            "{} after_model {:?} tokens={}",
            self.name,
            response.content,
            ctx.usage.total_tokens()
        ));
        if let Some(text) = &self.rewrite_answer {
            response.content = text.clone();
        }
        ready(Ok(()))
    }

    fn on_model_error<'a>(
        &'a self,
        _ctx: &'a HookContext,
        error: &'a ModelError,
    ) -> BoxFuture<'a, Result<Option<ModelResponse>, HookStop>> {
        self.log
            .push(format!("{} on_model_error {error}", self.name));
        ready(Ok(self
            .recover_model
            .as_ref()
            .map(|text| ModelResponse::text(text.clone()))))
    }

    fn before_tool<'a>(
        &'a self,
        ctx: &'a HookContext,
        call: &'a mut ToolInvocation,
    ) -> BoxFuture<'a, Result<BeforeTool, HookStop>> {
        self.log.push(format!(
            "{} before_tool {} {} #{}",
            self.name,
            call.tool(),
            call.arguments(),
            ctx.usage.tool_calls
        ));
        if let Some(reason) = &self.stop_tool {
            return ready(Err(HookStop::new(reason.clone())));
        }
        for (field, value) in &self.set_args {
            call.arguments_mut()[*field] = value.clone();
        }
        ready(Ok(if let Some(reason) = &self.deny {
            BeforeTool::Deny(reason.clone())
        } else if let Some(text) = &self.respond {
            BeforeTool::Respond(ToolOutput::text(text.clone()))
        } else {
            BeforeTool::Continue
        }))
    }

    fn after_tool<'a>(
        &'a self,
        _ctx: &'a HookContext,
        call: &'a ToolInvocation,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        self.log.push(format!(
            "{} after_tool {} {:?}",
            self.name,
            call.tool(),
            result.content
        ));
        if let Some(extra) = &self.append {
            result.content.push_str(extra);
        }
        ready(Ok(()))
    }

    fn on_tool_error<'a>(
        &'a self,
        _ctx: &'a HookContext,
        call: &'a ToolInvocation,
        result: &'a mut ToolResult,
    ) -> BoxFuture<'a, Result<(), HookStop>> {
        self.log.push(format!(
            "{} on_tool_error {} {:?}",
            self.name,
            call.tool(),
            result.content
        ));
        if let Some(text) = &self.recover_tool {
            result.content = text.clone();
            result.is_error = false;
            result.error_kind = None;
        }
        ready(Ok(()))
    }
}
