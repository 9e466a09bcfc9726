//! AgentBuilder: models, registries, policy, permissions, sandbox binding and setup hooks.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::borrow::Cow;

use harnessx::agent::{AgentError, Capability, CapabilityError, IntoModel};
use harnessx::model::{Model, TestModel};
use harnessx::{
    Agent, AgentConfig, ApprovalDecision, BoxFuture, Message, PermissionLevel, PermissionManager,
    RegistryError, Sandbox, SandboxError, ToolOptions, ToolPolicy, ToolRegistry,
};
use serde_json::json;

use super::agent_support::add_tool;

#[test]
fn build_without_a_model_fails_with_the_fix() {
    let err = Agent::builder().build().unwrap_err();
    assert!(matches!(err, AgentError::NoModel));
    assert_eq!(
        err.to_string(),
        "the agent has no model: call `.model(..)` on the builder before `build()`"
    );
}

#[test]
fn zero_max_turns_is_a_config_error() {
    let err = Agent::builder()
        .model(TestModel::new())
        .config(AgentConfig::default().with_max_turns(0))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid agent configuration: `max_turns` is 0, so the agent could never ask the model; \
         set it to at least 1"
    );
}

#[test]
fn a_shared_model_handle_is_accepted() {
    let model: Arc<dyn Model> = Arc::new(TestModel::new().with_name("shared"));
    let agent = Agent::builder().model(Arc::clone(&model)).build().unwrap();
    assert!(Arc::ptr_eq(agent.model(), &model));
    assert_eq!(TestModel::new().into_model().name(), "test");
}

#[test]
fn an_attached_registry_is_the_same_registry_not_a_clone() {
    let registry = ToolRegistry::new();
    let agent = Agent::builder()
        .model(TestModel::new())
        .tool(add_tool())
        .registry(registry.clone())
        .build()
        .unwrap();
    assert!(agent.tools().same_registry(&registry));
    // Tools given to the builder land in the attached registry, and later registrations show up
    // in the agent.
    assert!(registry.contains("add"));
    registry
        .register_tool(add_tool().apply(&ToolOptions::new().name("plus")))
        .unwrap();
    assert!(agent.tools().contains("plus"));
}

#[test]
fn the_agent_policy_reaches_the_registry_but_registry_values_win() {
    let config = AgentConfig::default().with_tools(
        ToolPolicy::new()
            .with_default_timeout_seconds(60)
            .with_dedupe_calls(true),
    );
    let agent = Agent::builder()
        .model(TestModel::new())
        .tool(add_tool())
        .config(config.clone())
        .build()
        .unwrap();
    assert_eq!(agent.tools().policy().default_timeout_seconds, 60.0);
    assert!(agent.tools().policy().dedupe_calls);

    let explicit = ToolRegistry::builder()
        .default_timeout_seconds(10.0)
        .build();
    let agent = Agent::builder()
        .model(TestModel::new())
        .registry(explicit)
        .config(config)
        .build()
        .unwrap();
    assert_eq!(agent.tools().policy().default_timeout_seconds, 10.0);
    assert!(agent.tools().policy().dedupe_calls);
}

#[test]
fn registration_errors_surface_from_build() {
    let err = Agent::builder()
        .model(TestModel::new())
        .tool(add_tool())
        .tool(add_tool())
        .build()
        .unwrap_err();
    assert!(matches!(err, AgentError::Registry(RegistryError::Duplicate(ref n)) if n == "add"));
    assert_eq!(
        err.to_string(),
        "a tool named `add` is already registered; pass `replace(true)` to replace it deliberately"
    );
}

struct HostShell;

impl Sandbox for HostShell {
    fn name(&self) -> &str {
        "host-shell"
    }
    fn filesystem_root(&self) -> Option<&Path> {
        None
    }
    fn start(&self) -> BoxFuture<'_, Result<(), SandboxError>> {
        Box::pin(async { Ok(()) })
    }
    fn command(&self, script: &str) -> Result<tokio::process::Command, SandboxError> {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c").arg(script);
        Ok(cmd)
    }
}

/// A capability made of closures, for the tests below.
struct Probe<R, S> {
    register: R,
    setup: S,
    instructions: Option<&'static str>,
}

impl<R, S> Capability for Probe<R, S>
where
    R: Fn(&ToolRegistry) -> Result<(), CapabilityError> + Send + Sync + 'static,
    S: Fn(&ToolRegistry) -> Result<(), CapabilityError> + Send + Sync + 'static,
{
    fn name(&self) -> Cow<'_, str> {
        "probe".into()
    }
    fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
        (self.register)(registry)
    }
    fn instructions(&self) -> Option<Cow<'_, str>> {
        self.instructions.map(Cow::from)
    }
    fn setup<'a>(
        &'a self,
        registry: &'a ToolRegistry,
    ) -> BoxFuture<'a, Result<(), CapabilityError>> {
        Box::pin(async move { (self.setup)(registry) })
    }
}

fn registers(
    f: impl Fn(&ToolRegistry) -> Result<(), CapabilityError> + Send + Sync + 'static,
) -> impl Capability {
    Probe {
        register: f,
        setup: |_: &ToolRegistry| Ok(()),
        instructions: None,
    }
}

#[test]
fn the_sandbox_is_bound_before_capabilities_register() {
    let seen = Arc::new(AtomicUsize::new(0));
    let seen2 = Arc::clone(&seen);
    let agent = Agent::builder()
        .model(TestModel::new())
        .capability(registers(move |registry| {
            if registry.sandbox().is_some_and(|s| s.name() == "host-shell") {
                seen2.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        }))
        .sandbox(Arc::new(HostShell))
        .build()
        .unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(agent.tools().sandbox().unwrap().name(), "host-shell");
}

#[test]
fn capabilities_register_in_order_and_their_errors_surface() {
    // A registration error stays a registration error.
    let err = Agent::builder()
        .model(TestModel::new())
        .capability(registers(|r| Ok(r.register_tool(add_tool()).map(drop)?)))
        .capability(registers(|_| {
            Err(RegistryError::Config("unknown bundle `nope`".into()).into())
        }))
        .build()
        .unwrap_err();
    assert!(matches!(err, AgentError::Registry(_)), "{err:?}");
    assert_eq!(err.to_string(), "unknown bundle `nope`");

    // Any other error is the capability's setup failing, with the error as its source.
    let err = Agent::builder()
        .model(TestModel::new())
        .tool(add_tool())
        .capability(registers(|r| {
            assert!(
                r.contains("add"),
                "tools given before it are registered first"
            );
            Err("the folder is empty".into())
        }))
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "could not set up the agent's probe");
    assert_eq!(
        harnessx::error::error_chain(&err),
        "could not set up the agent's probe: the folder is empty"
    );
}

#[test]
fn capability_instructions_follow_the_agents_own() {
    let with = |instructions| Probe {
        register: |_: &ToolRegistry| Ok(()),
        setup: |_: &ToolRegistry| Ok(()),
        instructions,
    };
    let agent = Agent::builder()
        .model(TestModel::new())
        .instructions("Be brief.")
        .capability(with(Some("Cite the handbook.")))
        .capability(with(None))
        .capability(with(Some("Ask before deleting.")))
        .build()
        .unwrap();
    assert_eq!(
        agent.instructions(),
        Some("Be brief.\n\nCite the handbook.\n\nAsk before deleting.")
    );
    let agent = Agent::builder()
        .model(TestModel::new())
        .capability(with(Some("Cite the handbook.")))
        .build()
        .unwrap();
    assert_eq!(agent.instructions(), Some("Cite the handbook."));
}

fn ask_tool_model() -> TestModel {
    TestModel::new()
        .then_call("add", json!({"a": 1, "b": 2}))
        .then_reply("done")
}

fn last_tool_content(model: &TestModel) -> String {
    let requests = model.requests();
    match requests.last().unwrap().messages.last().unwrap() {
        Message::Tool { content, .. } => content.clone(),
        other => panic!("expected a tool message, got {other:?}"),
    }
}

#[tokio::test]
async fn ask_tools_run_only_with_an_approval_callback() {
    let ask = add_tool().with_permission(PermissionLevel::Ask);

    let model = ask_tool_model();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(ask.clone())
        .build()
        .unwrap();
    agent.run("add").await.unwrap();
    assert_eq!(last_tool_content(&model), "Permission denied");

    let asked = Arc::new(AtomicUsize::new(0));
    let asked2 = Arc::clone(&asked);
    let model = ask_tool_model();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(ask)
        .approval(move |req: harnessx::ApprovalRequest| {
            assert_eq!(req.tool_name, "add");
            asked2.fetch_add(1, Ordering::SeqCst);
            async { ApprovalDecision::AllowOnce }
        })
        .build()
        .unwrap();
    agent.run("add").await.unwrap();
    assert_eq!(last_tool_content(&model), "3");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_permission_manager_decides_every_call() {
    let model = ask_tool_model();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(add_tool())
        .permissions(PermissionManager::new(PermissionLevel::Deny))
        .build()
        .unwrap();
    assert_eq!(agent.permissions().default_level(), PermissionLevel::Deny);
    agent.run("add").await.unwrap();
    assert_eq!(last_tool_content(&model), "Permission denied");
}

#[tokio::test]
async fn capability_setup_runs_once_before_the_first_request_and_retries_after_failure() {
    let runs = Arc::new(AtomicUsize::new(0));
    let runs2 = Arc::clone(&runs);
    let model = TestModel::new().then_reply("one").then_reply("two");
    let agent = Agent::builder()
        .model(model.clone())
        .capability(Probe {
            register: |_: &ToolRegistry| Ok(()),
            setup: move |registry: &ToolRegistry| {
                if runs2.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err("the server did not answer".into());
                }
                registry.register_tool(add_tool())?;
                Ok(())
            },
            instructions: None,
        })
        .build()
        .unwrap();
    let err = agent.run("hi").await.unwrap_err();
    assert!(matches!(&err, AgentError::Setup { capability, .. } if capability == "probe"));
    assert_eq!(
        harnessx::error::error_chain(&err),
        "could not set up the agent's probe: the server did not answer"
    );
    assert!(
        model.requests().is_empty(),
        "no request before setup succeeded"
    );
    agent.connect().await.unwrap();
    assert!(agent.tools().contains("add"));
    agent.run("hi").await.unwrap();
    agent.run("again").await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "a setup that succeeded never runs again"
    );
    assert!(model.requests()[0].tools.iter().any(|t| t.name == "add"));
}

#[tokio::test]
async fn close_releases_the_registry_resources() {
    let closed = Arc::new(AtomicUsize::new(0));
    let closed2 = Arc::clone(&closed);
    let agent = Agent::builder().model(TestModel::new()).build().unwrap();
    agent.tools().on_close(move || async move {
        closed2.fetch_add(1, Ordering::SeqCst);
    });
    agent.close().await;
    agent.close().await;
    assert_eq!(closed.load(Ordering::SeqCst), 1);
}
