//! The one place where handlers are type-erased: [`ToolHandler`] and the conversions into it.

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::blocking::run_blocking;
use crate::context::ToolContext;
use crate::output::{ToolError, ToolOutput};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The erased operation behind a tool: parsed JSON arguments in, an output or an error out.
///
/// Handlers receive arguments that already passed schema validation. Implement it directly for
/// full control, or build one from a closure with [`handler_fn`] / [`sync_handler_fn`].
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs the operation.
    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

/// A handler from an async closure.
struct AsyncFn<F>(F);

impl<F, Fut> ToolHandler for AsyncFn<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin((self.0)(args, ctx))
    }
}

/// A handler from a closure that reads the arguments at once and returns the call's future
/// already boxed, or the error the arguments gave: the glue of `#[tool]` functions, whose
/// generated code boxes the function's future together with the conversion of its return value,
/// so a call allocates one box where [`AsyncFn`] would box the glue's future around it. An
/// error is answered by a ready future (boxed: only a call the arguments fail pays for it).
struct BoxedFn<F>(F);

/// What the closure of a boxed handler (the glue `#[tool]` generates) returns: the call's boxed
/// future, or the error its arguments gave.
pub type CallFuture = Result<BoxFuture<'static, Result<ToolOutput, ToolError>>, ToolError>;

/// A handler from a closure that returns the call's future already boxed (see [`BoxedFn`]).
pub(crate) fn boxed_handler_fn<F>(f: F) -> Arc<dyn ToolHandler>
where
    F: Fn(Value, ToolContext) -> CallFuture + Send + Sync + 'static,
{
    Arc::new(BoxedFn(f))
}

impl<F> ToolHandler for BoxedFn<F>
where
    F: Fn(Value, ToolContext) -> CallFuture + Send + Sync + 'static,
{
    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        match (self.0)(args, ctx) {
            Ok(fut) => fut,
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

/// A handler from an async closure over the JSON arguments.
///
/// Its future must not block the thread: the engine polls it under its time limit, in the
/// caller's task when the call runs alone, and a future that blocks holds its caller until it
/// returns, past any limit (as a blocking coroutine holds an asyncio event loop). Blocking work
/// belongs in a synchronous handler ([`sync_handler_fn`], a synchronous `#[tool]` function),
/// which runs on the engine's pool of threads and whose wait the time limit does stop.
///
/// ```
/// use harnessx::{handler_fn, ToolOutput};
/// let handler = handler_fn(|args, _ctx| async move {
///     Ok(ToolOutput::text(args["value"].as_str().unwrap_or_default().to_uppercase()))
/// });
/// # let _ = handler;
/// ```
pub fn handler_fn<F, Fut>(f: F) -> Arc<dyn ToolHandler>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    Arc::new(AsyncFn(f))
}

/// A handler from a synchronous closure. It runs on the engine's pool of threads for
/// synchronous handlers, never on an async worker, so it never stalls one; a timeout stops
/// waiting for it but cannot stop the thread. A quick body answers in microseconds: the pool's
/// threads and the caller each wait for a moment before they park.
///
/// ```
/// use harnessx::{sync_handler_fn, ToolOutput};
/// let handler = sync_handler_fn(|args, _ctx| Ok(ToolOutput::text(args.to_string())));
/// # let _ = handler;
/// ```
pub fn sync_handler_fn<F>(f: F) -> Arc<dyn ToolHandler>
where
    F: Fn(Value, ToolContext) -> Result<ToolOutput, ToolError> + Send + Sync + 'static,
{
    let f = Arc::new(f);
    boxed_handler_fn(move |args, ctx| {
        let f = Arc::clone(&f);
        Ok(Box::pin(async move {
            run_blocking(move || f(args, ctx)).await?
        }))
    })
}

/// Anything [`ToolDefinition::new`](crate::ToolDefinition::new) and
/// [`ToolRegistry::register_with_schema`](crate::ToolRegistry::register_with_schema) accept as
/// the operation:
///
/// - a plain `async fn(args) -> Result<T, E>` or `async fn(args, ToolContext) -> Result<T, E>`,
///   where `args` is any `Deserialize` type (a struct, or `serde_json::Value`), `T` is
///   `Serialize` (a `String` becomes plain text; a [`ToolOutput`] is kept as is) and `E` is
///   `Display` (an `Err` becomes an error result the model reads; a [`ToolError`] keeps its
///   kind);
/// - the same as a synchronous `fn`, which runs on the engine's pool of threads for
///   synchronous handlers so it never stalls the async workers;
/// - a handler built with [`handler_fn`] or [`sync_handler_fn`], or any [`ToolHandler`]
///   (by value or in an `Arc`).
///
/// The `Marker` parameter only tells these forms apart; it is inferred.
///
/// ```
/// use harnessx::{ToolCall, ToolOptions, ToolRegistry};
/// use serde::Deserialize;
/// use serde_json::json;
///
/// #[derive(Deserialize)]
/// struct Label {
///     value: String,
/// }
///
/// async fn label(args: Label) -> Result<String, std::convert::Infallible> {
///     Ok(args.value.to_uppercase())
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::RegistryError> {
/// let registry = ToolRegistry::new();
/// let schema = json!({
///     "type": "object",
///     "properties": {"value": {"type": "string", "maxLength": 40}},
///     "required": ["value"],
///     "additionalProperties": false
/// });
/// registry.register_with_schema("label", "Uppercase a short label.", schema, label, ToolOptions::new())?;
/// let result = registry.execute(&ToolCall::json("c1", "label", json!({"value": "draft"})), None).await;
/// assert_eq!(result.content, "DRAFT");
/// # Ok(()) }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool handler",
    label = "expected a function of the tool's arguments returning `Result<T, E>`, or a `ToolHandler`",
    note = "pass an `async fn(args: A) -> Result<T, E>` (optionally taking a `ToolContext` second) or a sync `fn` of the same shape, with `A: Deserialize`, `T: Serialize` and `E: Display`; or a handler from `handler_fn`"
)]
pub trait IntoToolHandler<Marker> {
    /// The erased handler.
    fn into_tool_handler(self) -> Arc<dyn ToolHandler>;
}

/// The markers that tell the forms of [`IntoToolHandler`] apart. Not named in user code.
#[doc(hidden)]
pub mod marker {
    use std::marker::PhantomData;

    /// An erased `Arc<dyn ToolHandler>`.
    pub enum Erased {}
    /// An `Arc` of a concrete handler.
    pub enum Shared {}
    /// A handler by value.
    pub enum Owned {}
    /// An async function of the arguments.
    pub struct AsyncFn<A>(PhantomData<A>);
    /// An async function of the arguments and the context.
    pub struct AsyncCtxFn<A>(PhantomData<A>);
    /// A synchronous function of the arguments.
    pub struct SyncFn<A>(PhantomData<A>);
    /// A synchronous function of the arguments and the context.
    pub struct SyncCtxFn<A>(PhantomData<A>);
}

impl IntoToolHandler<marker::Erased> for Arc<dyn ToolHandler> {
    fn into_tool_handler(self) -> Arc<dyn ToolHandler> {
        self
    }
}

impl<H: ToolHandler> IntoToolHandler<marker::Shared> for Arc<H> {
    fn into_tool_handler(self) -> Arc<dyn ToolHandler> {
        self
    }
}

impl<H: ToolHandler> IntoToolHandler<marker::Owned> for H {
    fn into_tool_handler(self) -> Arc<dyn ToolHandler> {
        Arc::new(self)
    }
}

/// The arguments as the handler's type; a mismatch is an error the model can fix.
fn parse_args<A: DeserializeOwned>(args: Value) -> Result<A, ToolError> {
    serde_json::from_value(args).map_err(|e| {
        ToolError::invalid_arguments(format!("Invalid arguments: {e}. Fix them and call again."))
    })
}

/// A handler's `Result` as the engine's.
fn convert<T: IntoToolOutput, E: Display + 'static>(
    result: Result<T, E>,
) -> Result<ToolOutput, ToolError> {
    ResultOutput(result).into_tool_output()
}

impl<F, A, Fut, T, E> IntoToolHandler<marker::AsyncFn<A>> for F
where
    F: Fn(A) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + Send + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: IntoToolOutput,
    E: Display + 'static,
{
    fn into_tool_handler(self) -> Arc<dyn ToolHandler> {
        let f = Arc::new(self);
        handler_fn(move |args, _ctx| {
            let f = Arc::clone(&f);
            async move { convert(f(parse_args(args)?).await) }
        })
    }
}

impl<F, A, Fut, T, E> IntoToolHandler<marker::AsyncCtxFn<A>> for F
where
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    A: DeserializeOwned + Send + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: IntoToolOutput,
    E: Display + 'static,
{
    fn into_tool_handler(self) -> Arc<dyn ToolHandler> {
        let f = Arc::new(self);
        handler_fn(move |args, ctx| {
            let f = Arc::clone(&f);
            async move { convert(f(parse_args(args)?, ctx).await) }
        })
    }
}

impl<F, A, T, E> IntoToolHandler<marker::SyncFn<A>> for F
where
    F: Fn(A) -> Result<T, E> + Send + Sync + 'static,
    A: DeserializeOwned + Send + 'static,
    T: IntoToolOutput,
    E: Display + 'static,
{
    fn into_tool_handler(self) -> Arc<dyn ToolHandler> {
        sync_handler_fn(move |args, _ctx| convert(self(parse_args(args)?)))
    }
}

impl<F, A, T, E> IntoToolHandler<marker::SyncCtxFn<A>> for F
where
    F: Fn(A, ToolContext) -> Result<T, E> + Send + Sync + 'static,
    A: DeserializeOwned + Send + 'static,
    T: IntoToolOutput,
    E: Display + 'static,
{
    fn into_tool_handler(self) -> Arc<dyn ToolHandler> {
        sync_handler_fn(move |args, ctx| convert(self(parse_args(args)?, ctx)))
    }
}

/// What a `#[tool]` function may return: any `T: Serialize` (strings become plain text),
/// a [`ToolOutput`], or `Result<T, E>` with `E: Display` (an `Err` becomes an error result; a
/// [`ToolError`] keeps its kind, so `ToolError::Transient` can trigger a retry).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "the return type must be `Serialize`, a `ToolOutput`, or `Result<T, E>` with `E: Display`",
    note = "derive `serde::Serialize` for the type, or convert it to a `String`"
)]
pub trait IntoToolOutput {
    /// Converts the return value.
    fn into_tool_output(self) -> Result<ToolOutput, ToolError>;
}

impl<T: Serialize + 'static> IntoToolOutput for T {
    fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        // A `ToolOutput` or a `String` is moved into the result, never copied: a tool's text
        // can be megabytes.
        let mut value = Some(self);
        if let Some(out) = take_as::<T, ToolOutput>(&mut value) {
            return Ok(out);
        }
        if let Some(text) = take_as::<T, String>(&mut value) {
            return Ok(ToolOutput::text(text));
        }
        // `Some(v)` serialises as `v`.
        serde_json::to_value(&value)
            .map(ToolOutput::json)
            .map_err(|e| {
                ToolError::failed(format!("the tool's result could not be serialised: {e}"))
            })
    }
}

/// Moves the value out of `slot` when `T` is `U`; otherwise leaves it there.
fn take_as<T: 'static, U: 'static>(slot: &mut Option<T>) -> Option<U> {
    let any: &mut dyn Any = slot;
    any.downcast_mut::<Option<U>>().and_then(Option::take)
}

/// Wraps a `Result` so it can be told apart from `T: Serialize` (a `Result` is `Serialize` too).
#[doc(hidden)]
pub struct ResultOutput<T, E>(pub Result<T, E>);

impl<T: IntoToolOutput, E: Display + 'static> ResultOutput<T, E> {
    /// Converts the result.
    pub fn into_tool_output(self) -> Result<ToolOutput, ToolError> {
        match self.0 {
            Ok(v) => v.into_tool_output(),
            Err(e) => {
                let mut error = Some(e);
                match take_as::<E, ToolError>(&mut error) {
                    Some(te) => Err(te),
                    None => Err(ToolError::failed(
                        error.map(|e| e.to_string()).unwrap_or_default(),
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returned_string_or_output_is_moved_into_the_result_not_copied() {
        let text = "x".repeat(4096);
        let at = text.as_ptr();
        let out = text.into_tool_output().expect("text");
        assert_eq!(out.content.as_ptr(), at);

        let output = ToolOutput::text("y".repeat(4096));
        let at = output.content.as_ptr();
        let out = ResultOutput(Ok::<_, ToolError>(output))
            .into_tool_output()
            .expect("output");
        assert_eq!(out.content.as_ptr(), at);
    }

    #[test]
    fn other_values_are_serialised_and_errors_keep_their_kind() {
        let out = vec![1, 2].into_tool_output().expect("json");
        assert_eq!(out.structured, Some(serde_json::json!([1, 2])));
        let err = ResultOutput(Err::<String, _>(ToolError::transient("busy")))
            .into_tool_output()
            .expect_err("error");
        assert!(err.is_transient());
        let err = ResultOutput(Err::<String, _>("plain"))
            .into_tool_output()
            .expect_err("error");
        assert_eq!(err.message(), "plain");
    }
}
