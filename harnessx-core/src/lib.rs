//! # harnessx-core — the tool model, the engine and the agent loop
//!
//! Tools and their schemas, the registry, permissions, the execution engine, hooks, the journal
//! seam that durable runs drive the loop through, the model trait, the agent loop, planning and
//! subagents. The integrations build on it from crates of their own (`harnessx-providers`,
//! `harnessx-mcp`, `harnessx-knowledge`, `harnessx-skills`, `harnessx-otel`), each handing the
//! agent builder a [`Capability`](agent::Capability). Depend on
//! [`harnessx`](https://docs.rs/harnessx) instead: it re-exports everything here under the same
//! paths, with each integration behind a feature, and its documentation is the guided tour.
//!
//! The modules form layers, each importing only those below it (`tests/layers.rs` fails on a
//! module that reaches up): the vocabulary of tools, calls, results, questions and model turns;
//! the [`registry`]; the [`engine`] with [`hooks`] and [`telemetry`] (the engine records calls
//! through the calls' half of the journal, [`journal::CallJournal`]); the [`journal`], which adds
//! the model turns; and the [`agent`] loop with [`planning`] and [`subagent`]s.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent;
pub mod context;
pub mod engine;
pub mod error;
#[cfg(feature = "frontmatter")]
#[cfg_attr(docsrs, doc(cfg(feature = "frontmatter")))]
pub mod frontmatter;
pub mod hooks;
pub mod journal;
pub mod model;
pub mod output;
pub mod permissions;
pub mod planning;
pub mod prelude;
mod question;
pub mod registry;
pub mod sandbox;
pub mod schema;
pub mod subagent;
pub mod telemetry;
pub mod tool;

pub use agent::{
    Agent, AgentBuilder, AgentConfig, AgentError, AgentEvent, Conversation, RunResult,
};
pub use context::{Deps, FromToolContext, State, ToolContext};
pub use engine::{
    MAX_ARGUMENT_BYTES, MAX_TOOL_NAME_BYTES, PERMISSION_DENIED, SerialLane, ToolEvent, ToolRun,
};
pub use error::RegistryError;
/// Turns a function into a tool that is still an ordinary function.
///
/// `#[tool]` goes on a free `fn` or `async fn`. It replaces the function with a unit struct of
/// the same name and visibility that implements [`IntoTool`] (so it can be handed to
/// [`ToolRegistry::register_tool`]) and dereferences to a function pointer (so it can still be
/// called). The input schema, the description and the handler are generated from the signature
/// and the doc comment.
///
/// ```
/// use harnessx::{tool, ToolRegistry};
///
/// /// Multiply two numbers.
/// ///
/// /// Args:
/// ///     a: First number.
/// ///     b: Second number.
/// #[tool(permission = "allow", replay_policy = "safe")]
/// fn calculate(a: i64, b: i64) -> i64 {
///     a * b
/// }
///
/// assert_eq!(calculate(2, 3), 6);
///
/// let registry = ToolRegistry::new();
/// let def = registry.register_tool(calculate)?;
/// assert_eq!(def.description, "Multiply two numbers.");
/// assert_eq!(
///     def.input_schema,
///     serde_json::json!({
///         "type": "object",
///         "properties": {
///             "a": {"type": "integer", "description": "First number."},
///             "b": {"type": "integer", "description": "Second number."}
///         },
///         "required": ["a", "b"],
///         "additionalProperties": false
///     })
/// );
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
///
/// # The doc comment
///
/// - The **description** is the text before the first recognised section, multiple lines and
///   paragraphs kept. Sections are Google style (`Args:`, `Arguments:`, `Parameters:`,
///   `Returns:`, `Raises:`, `Errors:`, `Examples:`, `Note:`, ...) and rustdoc headings
///   (`# Arguments`, `# Returns`, `# Errors`, `# Examples`, `# Panics`, ...).
///   `#[tool(description = "...")]` replaces it.
/// - **Parameters** are documented under `Args:` as `name: text` or `name (type): text`, with
///   continuation lines indented under their entry, or under `# Arguments` as
///   ``* `name` - text``. Documenting a name the function does not have is a compile error on
///   that doc line. `#[arg(description = "...")]` on a parameter works too.
///
/// # Parameter types
///
/// | Rust | JSON Schema |
/// |---|---|
/// | `String`, `bool`, integers, floats | `string`, `boolean`, `integer` (with `minimum: 0` for unsigned), `number` |
/// | `Option<T>` | `T` or `null` — **still required** unless it has a default |
/// | `Vec<T>`, nested `Vec`s, arrays | `array` |
/// | `HashMap<String, T>`, `BTreeMap<String, T>` | `object` with `additionalProperties` |
/// | `serde_json::Value` | any value |
/// | enums and structs deriving `Deserialize` and `JsonSchema` | their schema, under `$defs` |
///
/// References, raw pointers, tuples, `impl Trait`, trait objects, maps with non-`String` keys,
/// generic or lifetime parameters, `self` receivers and patterns are compile errors on the
/// offending token; any other type without `Deserialize + JsonSchema` fails with
/// "`T` cannot be a tool parameter", spanned on the type.
///
/// `#[arg(default = expr)]` makes a parameter optional: the model may leave it out, the schema
/// shows `"default"`, and the handler receives `expr`. "May be omitted" (a default) and "may be
/// null" (`Option`) stay distinct:
///
/// ```
/// use harnessx::{tool, ToolCall, ToolRegistry};
///
/// /// Greet someone.
/// ///
/// /// Args:
/// ///     name: Who to greet, or null for everyone.
/// ///     greeting: The word to use.
/// #[tool]
/// fn greet(name: Option<String>, #[arg(default = "Hello")] greeting: String) -> String {
///     format!("{greeting}, {}!", name.as_deref().unwrap_or("everyone"))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), harnessx::RegistryError> {
/// let registry = ToolRegistry::new();
/// let def = registry.register_tool(greet)?;
/// assert_eq!(def.input_schema["required"], serde_json::json!(["name"]));
/// assert_eq!(def.input_schema["properties"]["greeting"]["default"], "Hello");
///
/// let call = ToolCall::json("1", "greet", serde_json::json!({"name": null}));
/// assert_eq!(registry.execute(&call, None).await.content, "Hello, everyone!");
/// # Ok(())
/// # }
/// ```
///
/// # Context parameters
///
/// A parameter whose type implements [`FromToolContext`] — [`ToolContext`], [`State<T>`] or an
/// extractor of your own — is supplied by the runtime and left out of the schema. It is
/// recognised by that trait, not by its name: a type of yours called `State` is an ordinary
/// argument. `State<T>` is what
/// [`ToolRegistry::insert_state`] registered — a connection pool, an HTTP client, ...
///
/// ```
/// use harnessx::{tool, State, ToolContext, ToolError};
///
/// struct Db;
/// impl Db {
///     async fn lookup(&self, id: u64) -> Option<String> { (id == 1).then(|| "Ada".into()) }
/// }
///
/// /// Look a user up by id.
/// ///
/// /// # Arguments
/// ///
/// /// * `id` - The user's numeric id.
/// #[tool(replay_policy = "safe", timeout_seconds = 10)]
/// async fn find_user(id: u64, db: State<Db>, ctx: ToolContext) -> Result<String, ToolError> {
///     let _ = ctx.call_id();
///     db.lookup(id).await.ok_or_else(|| ToolError::failed(format!("no user {id}; list users first")))
/// }
///
/// let registry = harnessx::ToolRegistry::new();
/// registry.insert_state(Db);
/// let def = registry.register_tool(find_user)?;
/// assert_eq!(def.input_schema["required"], serde_json::json!(["id"]));
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
///
/// An `async fn` tool stays awaitable: `find_user(1, db, ctx).await` works, through a function
/// pointer returning a [`BoxFuture`]. A synchronous tool runs on the engine's pool of threads for
/// synchronous handlers when the registry executes it, so it never stalls the async workers.
///
/// # Return types
///
/// Any `T: Serialize` (a `String` becomes plain text, other values compact JSON plus structured
/// content), a [`ToolOutput`], or `Result<T, E>` with `E: Display`: an `Err` becomes an error
/// result the model reads, and [`ToolError::Transient`] asks for a retry under the tool's
/// [`ToolRetry`] (only for `safe` and `idempotent` tools).
///
/// # Options
///
/// | Option | Values | Default |
/// |---|---|---|
/// | `name` | `"..."`: 1–64 of `A-Z a-z 0-9 _ -`, checked at compile time | the function's name |
/// | `description` | `"..."` | the doc comment's description |
/// | `permission` | `"allow"`, `"ask"`, `"deny"` or `PermissionLevel::Allow`, ... | inherit the manager's default |
/// | `concurrent` | `true`, `false` (a bare `concurrent` means `true`) | `true` |
/// | `replay_policy` | `"safe"`, `"idempotent"`, `"manual"` or `ReplayPolicy::Safe`, ... | `"manual"` |
/// | `timeout_seconds` | a number greater than 0 (`120`, `2.5`) | the registry's default (25 s) |
/// | `retry` | `retry = 3` (maximum attempts, at least 1), or `retry(max_attempts = 3, initial_backoff_ms = 200, max_backoff_ms = 5000, multiplier = 2.0)`; unset fields keep [`ToolRetry::default`]'s | the registry's policy |
/// | `crate` | a path to this crate, when it is renamed: `crate = my_harnessx` | `::harnessx` |
///
/// Unknown or duplicate keys and bad values are compile errors on the token, all reported at
/// once; the function itself is still emitted, so one mistake gives one error.
///
/// ```compile_fail
/// /// Add.
/// #[harnessx::tool(permission = "sometimes")] // error: unknown permission `sometimes`: use "allow", "ask" or "deny"
/// fn add(a: i64, b: i64) -> i64 { a + b }
/// ```
///
/// # Names in the value namespace
///
/// The generated unit struct occupies the function's name in both the type and the value
/// namespace of its module, so a `let` binding of the same name in that module (including one
/// inside a derive's expansion) does not compile ("let bindings cannot shadow unit structs").
/// Give such a tool another function name and keep the tool name with `name = "..."`.
pub use harnessx_macros::tool;
pub use model::{
    FunctionModel, Message, Messages, Model, ModelError, ModelRequest, ModelResponse,
    ModelSettings, ModelStreamEvent, StopReason, TestModel, Usage,
};
pub use output::{ToolCall, ToolError, ToolErrorKind, ToolOutput, ToolResult, truncate_result};
pub use permissions::{
    ApprovalCallback, ApprovalDecision, ApprovalFn, ApprovalRequest, PermissionManager,
    PermissionOutcome,
};
pub use registry::{
    DEFAULT_MAX_RESULT_BYTES, DEFAULT_TOOL_TIMEOUT_SECONDS, RegisteredTool, ToolPolicy,
    ToolRegistry, ToolRegistryBuilder, WeakToolRegistry,
};
pub use sandbox::{Sandbox, SandboxError};
pub use subagent::SubAgent;
pub use tool::{
    BoxFuture, IntoTimeout, IntoTool, IntoToolHandler, IntoToolOutput, ParseLevelError,
    PermissionLevel, ReplayPolicy, RetryIfResult, ToolAnnotations, ToolDefinition, ToolHandler,
    ToolOptions, ToolParams, ToolRetry, handler_fn, sync_handler_fn,
};

/// Support for code generated by `#[tool]`. Not a public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
    pub use serde_json;

    pub use crate::context::FromToolContext;
    pub use crate::schema::{ParamSpec, build_input_schema, schema_generator};
    pub use crate::tool::handler::{CallFuture, ResultOutput};
    pub use crate::tool::{
        BoxFuture, IntoTool, IntoToolOutput, PermissionLevel, ReplayPolicy, ToolDefinition,
        ToolRetry, handler_fn,
    };
    pub use crate::{ToolContext, ToolError, ToolOutput};

    use std::fmt::Display;
    use std::marker::PhantomData;
    use std::time::Duration;

    use serde_json::Value;

    /// A type a `#[tool]` parameter may have: deserialisable from the model's JSON and able to
    /// describe itself as JSON Schema.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a tool parameter",
        label = "this parameter type has no JSON Schema or cannot be deserialised",
        note = "derive `serde::Deserialize` and `schemars::JsonSchema` for it, or use a supported type (String, bool, integers, floats, Option, Vec, HashMap<String, _>, serde_json::Value)"
    )]
    pub trait ToolParam: serde::de::DeserializeOwned + schemars::JsonSchema {}
    impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> ToolParam for T {}

    /// A `Result` a `#[tool]` function may return: `Ok` converts like any output, `Err` becomes
    /// an error result (a [`ToolError`] keeps its kind, so `ToolError::Transient` is retried).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be returned from a tool",
        label = "the `Ok` type must be `Serialize` (or a `ToolOutput`) and the `Err` type must implement `Display`",
        note = "return `Result<T, E>` with `T: Serialize` and `E: Display`, for example `Result<String, ToolError>`"
    )]
    pub trait IntoToolResult {
        /// Converts the result.
        fn into_tool_result(self) -> Result<ToolOutput, ToolError>;
    }

    impl<T: IntoToolOutput, E: Display + 'static> IntoToolResult for Result<T, E> {
        fn into_tool_result(self) -> Result<ToolOutput, ToolError> {
            ResultOutput(self).into_tool_output()
        }
    }

    /// How generated code reads one parameter type: built by [`param`], the single place where
    /// the type is checked (so a bad type gives one error, spanned on it).
    pub struct ParamOps<T> {
        /// The type's schema.
        pub schema: fn(&mut schemars::SchemaGenerator) -> Value,
        /// Reads a required argument (a missing one reads as `null`, which `Option` accepts).
        pub take: fn(Option<Value>, &str) -> Result<T, ToolError>,
        /// Reads an argument that has a default: `None` when the model left it out.
        pub take_opt: fn(Option<Value>, &str) -> Result<Option<T>, ToolError>,
    }

    impl<T> Clone for ParamOps<T> {
        fn clone(&self) -> Self {
            *self
        }
    }
    impl<T> Copy for ParamOps<T> {}

    /// The operations for a parameter type; fails to compile for unsupported types.
    pub fn param<T: ToolParam>() -> ParamOps<T> {
        ParamOps {
            schema: crate::schema::param_schema::<T>,
            take: take_arg::<T>,
            take_opt: take_arg_opt::<T>,
        }
    }

    fn take_arg<T: ToolParam>(arg: Option<Value>, name: &str) -> Result<T, ToolError> {
        parse_arg(arg.unwrap_or(Value::Null), name)
    }

    fn take_arg_opt<T: ToolParam>(arg: Option<Value>, name: &str) -> Result<Option<T>, ToolError> {
        arg.map(|v| parse_arg(v, name)).transpose()
    }

    fn parse_arg<T: ToolParam>(value: Value, name: &str) -> Result<T, ToolError> {
        serde_json::from_value(value).map_err(|e| invalid_field(name, e))
    }

    // The generic helpers above are compiled into the user's crate, once per parameter type;
    // the work that does not depend on the type stays in plain functions compiled here. A
    // `format!` or a slice search in them would make the user's crate compile generic
    // instances of its own (`Argument::new_display`, `<[T]>::iter`), and a debug build takes
    // each from whichever dependency exports it with the smallest crate hash, linking that
    // dependency (`harnessx/docs/internals/performance.md`, "Build time").

    /// The error for an argument that does not deserialize into its parameter's type.
    fn invalid_field(name: &str, e: serde_json::Error) -> ToolError {
        ToolError::invalid_arguments(format!(
            "Invalid arguments: field `{name}`: {e}. Fix it and call again."
        ))
    }

    /// How generated code converts the return value: built by [`output`] or [`result_output`],
    /// the single place where the return type is checked.
    pub struct OutputOps<R> {
        /// Converts a return value.
        pub convert: fn(R) -> Result<ToolOutput, ToolError>,
    }

    impl<R> Clone for OutputOps<R> {
        fn clone(&self) -> Self {
            *self
        }
    }
    impl<R> Copy for OutputOps<R> {}

    /// The conversion for a plain return type (`T: Serialize`, `String`, `ToolOutput`).
    pub fn output<R: IntoToolOutput>() -> OutputOps<R> {
        OutputOps {
            convert: R::into_tool_output,
        }
    }

    /// The conversion for a `Result` return type.
    pub fn result_output<R: IntoToolResult>() -> OutputOps<R> {
        OutputOps {
            convert: R::into_tool_result,
        }
    }

    /// Sorts the model's arguments into one slot per parameter, in the order of `names`, in
    /// one pass over the object: no key is hashed, and nothing is moved but the values taken.
    /// Keys that name no parameter are left out (the schema check refused them already where
    /// the schema forbids them).
    pub fn slots<const N: usize>(args: Value, names: [&str; N]) -> [Option<Value>; N] {
        let mut slots = [const { None }; N];
        fill_slots(args, &names, &mut slots);
        slots
    }

    /// [`slots`] without its length, compiled once here (see `invalid_field`).
    fn fill_slots(args: Value, names: &[&str], slots: &mut [Option<Value>]) {
        if let Value::Object(map) = args {
            for (key, value) in map {
                if let Some(i) = names.iter().position(|name| *name == key) {
                    slots[i] = Some(value);
                }
            }
        }
    }

    // Where a parameter comes from is decided by its type's traits, never by its name: a type
    // implementing `FromToolContext` is supplied by the runtime, any other is read from the
    // model's arguments (and must then be a `ToolParam`). The choice is made by method
    // resolution on `(&&Probe::<T>::new()).__harnessx_source()`: the impl on `&Probe<T>` (which
    // needs `T: FromToolContext`) is found before the one on `Probe<T>` (which needs nothing),
    // so a user type named `State` or `ToolContext` is an ordinary argument.

    /// The type a parameter's source is looked up on.
    pub struct Probe<T>(PhantomData<fn() -> T>);

    impl<T> Probe<T> {
        /// The probe for `T`.
        #[expect(clippy::new_without_default, reason = "only generated code makes one")]
        pub const fn new() -> Self {
            Self(PhantomData)
        }
    }

    /// Chosen first: the runtime supplies `T`.
    pub trait ViaContext<T> {
        /// The context source.
        fn __harnessx_source(&self) -> ContextOps<T>;
    }

    impl<T: FromToolContext> ViaContext<T> for &Probe<T> {
        fn __harnessx_source(&self) -> ContextOps<T> {
            ContextOps(PhantomData)
        }
    }

    /// Chosen otherwise: the model sends `T`.
    pub trait ViaArguments<T> {
        /// The argument source, checked by [`ArgSource::ops`].
        fn __harnessx_source(&self) -> ArgSource<T>;
    }

    impl<T> ViaArguments<T> for Probe<T> {
        fn __harnessx_source(&self) -> ArgSource<T> {
            ArgSource(PhantomData)
        }
    }

    /// A parameter the model sends, before its type is checked.
    pub struct ArgSource<T>(PhantomData<fn() -> T>);

    impl<T> ArgSource<T> {
        /// The operations for the type: the one place an unsupported type is reported.
        pub fn ops(self) -> ParamOps<T>
        where
            T: ToolParam,
        {
            param::<T>()
        }
    }

    /// A parameter the runtime supplies from the call's context.
    pub struct ContextOps<T>(PhantomData<fn() -> T>);

    impl<T> Clone for ContextOps<T> {
        fn clone(&self) -> Self {
            *self
        }
    }
    impl<T> Copy for ContextOps<T> {}

    impl<T> ContextOps<T> {
        /// Itself: a context type needs no further check.
        pub fn ops(self) -> Self {
            self
        }
    }

    /// How generated code reads a parameter without a default, whatever its source.
    pub trait ParamSource<T> {
        /// The parameter's entry in the input schema; `None` for a context parameter.
        fn spec(
            &self,
            generator: &mut schemars::SchemaGenerator,
            name: &'static str,
            description: Option<&'static str>,
        ) -> Option<ParamSpec>;
        /// The value for one call, from the argument the model sent under its name, if any.
        fn take(&self, arg: Option<Value>, ctx: &ToolContext, name: &str) -> Result<T, ToolError>;
    }

    impl<T> ParamSource<T> for ParamOps<T> {
        fn spec(
            &self,
            generator: &mut schemars::SchemaGenerator,
            name: &'static str,
            description: Option<&'static str>,
        ) -> Option<ParamSpec> {
            Some(ParamSpec {
                name,
                description,
                schema: (self.schema)(generator),
                required: true,
                default: None,
            })
        }
        fn take(&self, arg: Option<Value>, _ctx: &ToolContext, name: &str) -> Result<T, ToolError> {
            (self.take)(arg, name)
        }
    }

    impl<T: FromToolContext> ParamSource<T> for ContextOps<T> {
        fn spec(
            &self,
            _generator: &mut schemars::SchemaGenerator,
            _name: &'static str,
            _description: Option<&'static str>,
        ) -> Option<ParamSpec> {
            None
        }
        fn take(
            &self,
            _arg: Option<Value>,
            ctx: &ToolContext,
            _name: &str,
        ) -> Result<T, ToolError> {
            T::from_tool_context(ctx)
        }
    }

    /// A source that `#[arg]` options may describe: only a parameter the model sends.
    #[diagnostic::on_unimplemented(
        message = "`#[arg]` options describe what the model sends, but this is a context parameter",
        label = "remove this `#[arg]` option: context parameters are supplied by the runtime and never seen by the model",
        note = "a parameter whose type implements `FromToolContext` (`ToolContext`, `State<T>`) is a context parameter"
    )]
    pub trait ModelArgument {
        /// The operations `#[arg]` options use.
        type Ops;
        /// Them.
        fn model_ops(self) -> Self::Ops;
    }

    impl<T> ModelArgument for ParamOps<T> {
        type Ops = ParamOps<T>;
        fn model_ops(self) -> Self::Ops {
            self
        }
    }

    /// The operations of a parameter with `#[arg]` options; fails to compile for a context
    /// parameter.
    pub fn model_argument<S: ModelArgument>(source: S) -> S::Ops {
        source.model_ops()
    }

    /// The schema entry of a parameter with a default.
    pub fn spec_with_default<T: serde::Serialize>(
        ops: &ParamOps<T>,
        generator: &mut schemars::SchemaGenerator,
        name: &'static str,
        description: Option<&'static str>,
        default: T,
    ) -> Option<ParamSpec> {
        Some(ParamSpec {
            name,
            description,
            schema: (ops.schema)(generator),
            required: false,
            default: Some(default_value(default)),
        })
    }

    /// The handler of a `#[tool]`: the glue reads the arguments when it is called and returns
    /// one box, the function's future together with the conversion of its value (for a
    /// synchronous function, the wait for [`run_blocking`]), the one allocation of a call's
    /// future.
    pub fn tool_handler<F>(f: F) -> std::sync::Arc<dyn crate::ToolHandler>
    where
        F: Fn(Value, crate::ToolContext) -> CallFuture + Send + Sync + 'static,
    {
        crate::tool::handler::boxed_handler_fn(f)
    }

    /// Runs a synchronous tool body on the engine's pool of threads for synchronous handlers.
    pub async fn run_blocking<F>(f: F) -> Result<ToolOutput, ToolError>
    where
        F: FnOnce() -> Result<ToolOutput, ToolError> + Send + 'static,
    {
        crate::tool::blocking::run_blocking(f).await?
    }

    /// Serialises a parameter default for the schema.
    pub fn default_value<T: serde::Serialize>(value: T) -> Value {
        serde_json::to_value(value).unwrap_or(Value::Null)
    }

    /// The retry policy `#[tool(retry = ...)]` describes; unset fields keep
    /// [`ToolRetry::default`]'s values.
    pub fn retry(
        max_attempts: u32,
        initial_backoff_ms: Option<u64>,
        max_backoff_ms: Option<u64>,
        multiplier: Option<f64>,
    ) -> ToolRetry {
        let mut retry = ToolRetry {
            max_attempts,
            ..ToolRetry::default()
        };
        if let Some(ms) = initial_backoff_ms {
            retry.initial_backoff = Duration::from_millis(ms);
        }
        if let Some(ms) = max_backoff_ms {
            retry.max_backoff = Duration::from_millis(ms);
        }
        if let Some(m) = multiplier {
            retry.multiplier = m;
        }
        retry
    }
}
