//! [`AgentCatalog`]: agents that are data — stored, versioned, changed while runs go on — as
//! opposed to agents registered in code with [`RuntimeBuilder::agent`](crate::RuntimeBuilder::agent).
//!
//! A run of a catalog agent records the version it started with
//! ([`RunView::agent_version`](crate::RunView::agent_version)) and every resume asks the
//! catalog for that same version, so a change reaches only later runs. The catalog builds each
//! version's [`Agent`] once and hands out clones: runs on one agent proceed concurrently, each
//! with its own conversation and its own permission session (the conversation's grants).

use harnessx::{Agent, BoxFuture};

/// Where a runtime finds the agents it does not have registered in code.
///
/// ```
/// use std::sync::Arc;
/// use harnessx::{Agent, BoxFuture, TestModel};
/// use harnessx_runtime::{AgentCatalog, Runtime, SqliteStore, StartRun, RunState};
///
/// /// One agent, `greeter`, at version 1.
/// struct Fixed(Agent);
///
/// impl AgentCatalog for Fixed {
///     fn current_version<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<u64>, String>> {
///         Box::pin(async move { Ok((name == "greeter").then_some(1)) })
///     }
///     fn agent<'a>(&'a self, _name: &'a str, _version: u64) -> BoxFuture<'a, Result<Agent, String>> {
///         Box::pin(async move { Ok(self.0.clone()) })
///     }
/// }
///
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = Agent::builder().model(TestModel::new().then_reply("Hello!")).build()?;
/// let runtime = Runtime::builder()
///     .store(SqliteStore::in_memory()?)
///     .catalog(Fixed(agent))
///     .build()?;
/// let run = runtime.start_run(StartRun::new("greeter", "Hi")).await?;
/// assert_eq!(run.agent_version, Some(1));
/// assert_eq!(runtime.settled(run.id).await?.state, RunState::Completed);
/// # Ok(()) }
/// ```
pub trait AgentCatalog: Send + Sync + 'static {
    /// The version a new run of `name` starts with; `None` when there is no such agent.
    fn current_version<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<u64>, String>>;

    /// The agent `name` at `version` (a clone of one built once per version, ideally). The
    /// error is recorded as the run's failure.
    fn agent<'a>(&'a self, name: &'a str, version: u64) -> BoxFuture<'a, Result<Agent, String>>;
}
