//! The agent builder connects MCP servers before the first model request.
//!
//! Declared in `suite/mod.rs` once the agent loop (`harnessx::agent`) is merged.

use harnessx::mcp::McpServer;
use harnessx::model::TestModel;
use harnessx::{Agent, Message};
use serde_json::json;

use super::mcp_servers::everything;

#[tokio::test]
async fn an_agent_connects_its_server_and_the_model_calls_a_tool() {
    let Some(server) = everything("ev") else {
        return;
    };
    let model = TestModel::new()
        .then_call("mcp_ev_get-sum", json!({"a": 2, "b": 40}))
        .then_reply("It is 42.");
    let agent = Agent::builder()
        .model(model.clone())
        .mcp_server(server.allow_tools(["get-sum", "echo"]))
        .build()
        .unwrap();
    assert!(
        !agent.tools().contains("mcp_ev_get-sum"),
        "connects on first use, not at build"
    );
    let result = agent.run("What is 2 + 40?").await.unwrap();
    assert_eq!(result.output, "It is 42.");
    let tool_answer = result.messages.iter().find_map(|m| match m {
        Message::Tool {
            name,
            content,
            is_error,
            ..
        } => Some((name.clone(), content.clone(), *is_error)),
        _ => None,
    });
    assert_eq!(
        tool_answer,
        Some((
            "mcp_ev_get-sum".to_owned(),
            "The sum of 2 and 40 is 42.".to_owned(),
            false
        ))
    );
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        offered.contains(&"mcp_ev_get-sum".to_owned()),
        "{offered:?}"
    );
    assert!(offered.contains(&"mcp_ev_echo".to_owned()), "{offered:?}");
    agent.close().await;
    assert!(!agent.tools().contains("mcp_ev_get-sum"));
}

#[tokio::test]
async fn an_unreachable_server_does_not_fail_the_run() {
    let model = TestModel::new().then_reply("Answered without the server.");
    let agent = Agent::builder()
        .model(model)
        .mcp_server(McpServer::stdio(
            "ghost",
            "/nonexistent/mcp-server",
            ["--x"],
        ))
        .build()
        .unwrap();
    let result = agent.run("hi").await.unwrap();
    assert_eq!(result.output, "Answered without the server.");
    assert!(
        !agent
            .tools()
            .list_tools()
            .iter()
            .any(|n| n.starts_with("mcp_ghost_"))
    );
}

#[tokio::test]
async fn knowledge_attached_to_an_agent_adds_and_removes_knowledge_search() {
    use harnessx::knowledge::{Document, KnowledgeBase, SqliteKnowledgeBase};
    let kb = SqliteKnowledgeBase::in_memory().unwrap().named("faq");
    kb.add_documents(vec![Document::new(
        "faq.md",
        "Refunds take five business days.",
    )])
    .await
    .unwrap();
    let model = TestModel::new()
        .then_call(
            "knowledge_search",
            json!({"query": "how long do refunds take"}),
        )
        .then_reply("Five business days.");
    let agent = Agent::builder().model(model).knowledge(kb).build().unwrap();
    assert!(agent.tools().contains("knowledge_search"));
    let result = agent.run("Refund time?").await.unwrap();
    assert_eq!(result.output, "Five business days.");
    let handles = agent.knowledge();
    assert_eq!(handles.len(), 1);
    assert!(agent.detach_knowledge(&handles[0]));
    assert!(!agent.tools().contains("knowledge_search"));
    let again = agent
        .attach_knowledge(SqliteKnowledgeBase::in_memory().unwrap())
        .unwrap();
    assert!(agent.tools().contains("knowledge_search"));
    assert!(agent.detach_knowledge(&again));
    assert!(!agent.tools().contains("knowledge_search"));
}
