//! `Agent::builder().builtin("bash")?.sandbox(sandbox)`: the caller's sandbox becomes the engine
//! of the model's shell commands, and `agent.tools().sandbox()` exposes the binding.

use std::sync::Arc;
use std::time::Duration;

use harnessx::model::TestModel;
use harnessx::{Agent, Message, Sandbox};
use harnessx_builtin::{BubblewrapSandbox, BuiltinBuilderExt, LocalSandbox};
use serde_json::json;

use super::bash_support::{bwrap_available, scratch_dir};

fn tool_outputs(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_model_runs_commands_inside_the_bound_bubblewrap_sandbox() {
    if !bwrap_available().await {
        return;
    }
    let root = scratch_dir("bwrap-agent");
    let sandbox: Arc<dyn Sandbox> = Arc::new(BubblewrapSandbox::new(&root).unwrap());
    let model = TestModel::new()
        .then_call("run_bash", json!({"command": "echo from-the-model > /workspace/agent.txt && cat /workspace/agent.txt"}))
        .then_call("read_file", json!({"path": "agent.txt"}))
        .then_reply("done");
    let agent = Agent::builder()
        .model(model)
        .builtin("bash")
        .unwrap()
        .builtin("filesystem")
        .unwrap()
        .sandbox(Arc::clone(&sandbox))
        .build()
        .unwrap();
    let bound = agent.tools().sandbox().expect("the sandbox is bound");
    assert!(
        Arc::ptr_eq(&bound, &sandbox),
        "the caller's own sandbox, not a copy"
    );
    assert_eq!(
        agent.tools().get_tool("read_file").unwrap().timeout,
        Some(Duration::from_secs(300))
    );

    let result = agent.run("write a file").await.unwrap();
    let outputs = tool_outputs(&result.messages);
    assert!(outputs[0].contains("from-the-model"), "{}", outputs[0]);
    assert!(outputs[1].contains("from-the-model"), "{}", outputs[1]);
    assert_eq!(
        std::fs::read_to_string(root.join("agent.txt")).unwrap(),
        "from-the-model\n"
    );
}

#[tokio::test]
async fn the_local_sandbox_leaves_the_file_tools_on_the_host() {
    let sandbox: Arc<dyn Sandbox> = Arc::new(LocalSandbox::new());
    let agent = Agent::builder()
        .model(TestModel::new().then_reply("ok"))
        .builtin("bash")
        .unwrap()
        .builtin("read_file")
        .unwrap()
        .sandbox(Arc::clone(&sandbox))
        .build()
        .unwrap();
    assert_eq!(agent.tools().sandbox().unwrap().name(), "local");
    assert!(agent.tools().sandbox().unwrap().filesystem_root().is_none());
    assert_eq!(
        agent.tools().get_tool("read_file").unwrap().timeout,
        None,
        "host file tools keep the 25 s default"
    );
    assert_eq!(
        agent.tools().get_tool("run_bash").unwrap().timeout,
        Some(Duration::from_secs_f64(303.25))
    );
}
