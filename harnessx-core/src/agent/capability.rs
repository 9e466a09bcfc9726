//! What an integration hands an agent: [`Capability`].

use std::borrow::Cow;

use crate::registry::ToolRegistry;
use crate::tool::BoxFuture;

/// The error a [`Capability`] fails with: any error, kept whole as the source of
/// [`AgentError::Setup`](super::AgentError::Setup).
pub type CapabilityError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A bundle an agent can be given with
/// [`AgentBuilder::capability`](super::AgentBuilder::capability): its tools, a few lines for the
/// system prompt, and setup that needs to wait for something (connecting a server).
///
/// The integrations are capabilities: `harnessx-mcp`'s `McpServer`, `harnessx-skills`'
/// `Skills`, `harnessx-knowledge`'s knowledge bases and OKF bundles. A capability of your own
/// implements the methods it needs; each has a default that does nothing.
///
/// - [`register`](Self::register) runs once, at [`build`](super::AgentBuilder::build), in the
///   order tools and capabilities were added; an error fails `build`.
/// - [`instructions`](Self::instructions) are appended to the agent's system prompt at `build`.
/// - [`setup`](Self::setup) runs before the first model request (or on
///   [`Agent::connect`](super::Agent::connect)); an error fails that run, and the setup is tried
///   again on the next one until it succeeds.
///
/// ```
/// use std::borrow::Cow;
/// use harnessx::agent::{Capability, CapabilityError};
/// use harnessx::{Agent, TestModel, ToolDefinition, ToolOutput, ToolRegistry, handler_fn};
///
/// /// Gives the agent the time of day, and tells it so.
/// struct Clock;
///
/// impl Capability for Clock {
///     fn name(&self) -> Cow<'_, str> {
///         "clock".into()
///     }
///     fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
///         let now = ToolDefinition::new("now", "The time of day.", serde_json::json!({"type": "object"}),
///             handler_fn(|_, _| async { Ok(ToolOutput::text("12:00")) }));
///         registry.register_tool(now)?;
///         Ok(())
///     }
///     fn instructions(&self) -> Option<Cow<'_, str>> {
///         Some("Call `now` before you mention the time.".into())
///     }
/// }
///
/// let agent = Agent::builder()
///     .model(TestModel::new())
///     .instructions("You are terse.")
///     .capability(Clock)
///     .build()?;
/// assert!(agent.tools().contains("now"));
/// assert_eq!(agent.instructions(), Some("You are terse.\n\nCall `now` before you mention the time."));
/// # Ok::<(), harnessx::AgentError>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a capability an agent can be given",
    note = "a capability is an MCP server, skills, a knowledge base or OKF bundle, or a type of your own implementing `harnessx::agent::Capability`; a single tool goes to `.tool(..)`"
)]
pub trait Capability: Send + Sync + 'static {
    /// A short name for errors and logs (`"skills"`, `"MCP server files"`).
    fn name(&self) -> Cow<'_, str>;

    /// Registers the capability's tools on the agent's registry. Runs once, at `build`.
    fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
        let _ = registry;
        Ok(())
    }

    /// Text appended to the agent's system prompt (after its own instructions, separated by a
    /// blank line), read once at `build`.
    fn instructions(&self) -> Option<Cow<'_, str>> {
        None
    }

    /// Setup that waits for something, run before the first model request; a failure fails
    /// that run and is retried on the next.
    fn setup<'a>(
        &'a self,
        registry: &'a ToolRegistry,
    ) -> BoxFuture<'a, Result<(), CapabilityError>> {
        let _ = registry;
        Box::pin(std::future::ready(Ok(())))
    }
}
