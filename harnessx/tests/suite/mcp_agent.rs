//! The agent builder connects MCP servers before the first model request.

use harnessx::knowledge::{Knowledge, attach_knowledge, attached_knowledge, detach_knowledge};
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
        .capability(server.allow_tools(["get-sum", "echo"]))
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

/// The text of the first tool result in a run's transcript.
fn first_tool_result(messages: &[Message]) -> Option<(String, String, bool)> {
    messages.iter().find_map(|m| match m {
        Message::Tool {
            name,
            content,
            is_error,
            ..
        } => Some((name.clone(), content.clone(), *is_error)),
        _ => None,
    })
}

#[tokio::test]
async fn an_unreachable_server_becomes_a_failed_tool_result_not_a_failed_run() {
    let model = TestModel::new()
        .then_call("mcp_ghost_connect", json!({}))
        .then_reply("The ghost server is down; I answered without it.");
    let agent = Agent::builder()
        .model(model.clone())
        .capability(McpServer::stdio(
            "ghost",
            "/nonexistent/mcp-server",
            ["--x"],
        ))
        .build()
        .unwrap();
    let result = agent.run("hi").await.unwrap();
    assert_eq!(
        result.output,
        "The ghost server is down; I answered without it."
    );
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        offered.contains(&"mcp_ghost_connect".to_owned()),
        "{offered:?}"
    );
    let description = &agent
        .tools()
        .get_tool("mcp_ghost_connect")
        .unwrap()
        .description;
    assert!(
        description
            .starts_with("The MCP server `ghost` could not be reached when the agent started ("),
        "{description}"
    );
    assert_eq!(
        agent.tools().get_tool("mcp_ghost_connect").unwrap().timeout,
        Some(std::time::Duration::from_secs(35)),
        "longer than the 30 s connect deadline"
    );
    let (name, content, is_error) = first_tool_result(&result.messages).unwrap();
    assert_eq!(name, "mcp_ghost_connect");
    assert!(is_error);
    assert!(
        content.starts_with("The MCP server `ghost` is still unreachable: "),
        "{content}"
    );
    assert!(
        content.ends_with("Work around its tools or tell the user."),
        "{content}"
    );
}

#[tokio::test]
async fn the_reconnect_tool_brings_the_servers_tools_once_it_answers() {
    use harnessx::ToolCall;
    use harnessx::model::{FunctionModel, ModelResponse};
    let Some(real) = super::mcp_servers::reference_server("server-everything") else {
        return;
    };
    // The server's entry script appears only after the agent started: the first connect fails.
    let dir = tempfile::tempdir().unwrap();
    let late = dir.path().join("index.js");
    let server = McpServer::stdio(
        "late",
        "node",
        [late.display().to_string(), "stdio".to_owned()],
    )
    .allow_tools(["get-sum"]);
    let model = FunctionModel::new(move |_request, info| {
        let call = |name: &str, args| {
            ModelResponse::default().with_tool_calls(vec![ToolCall::json(
                format!("c{}", info.turn),
                name,
                args,
            )])
        };
        match info.turn {
            0 => call("mcp_late_connect", json!({})),
            1 => {
                std::os::unix::fs::symlink(&real, &late).unwrap();
                call("mcp_late_connect", json!({}))
            }
            2 => call("mcp_late_get-sum", json!({"a": 1, "b": 2})),
            _ => ModelResponse::text("1 + 2 is 3."),
        }
    });
    let agent = Agent::builder()
        .model(model)
        .capability(server)
        .build()
        .unwrap();
    let result = agent.run("add 1 and 2").await.unwrap();
    let answers: Vec<(String, bool)> = result
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { name, is_error, .. } => Some((name.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("mcp_late_connect".to_owned(), true),
            ("mcp_late_connect".to_owned(), false),
            ("mcp_late_get-sum".to_owned(), false),
        ]
    );
    assert_eq!(result.output, "1 + 2 is 3.");
    assert!(agent.tools().contains("mcp_late_get-sum"));
    assert!(!agent.tools().contains("mcp_late_connect"));
    agent.close().await;
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
    let agent = Agent::builder()
        .model(model)
        .capability(Knowledge::new(kb))
        .build()
        .unwrap();
    assert!(agent.tools().contains("knowledge_search"));
    let result = agent.run("Refund time?").await.unwrap();
    assert_eq!(result.output, "Five business days.");
    let handles = attached_knowledge(agent.tools());
    assert_eq!(handles.len(), 1);
    assert!(detach_knowledge(agent.tools(), &handles[0]));
    assert!(!agent.tools().contains("knowledge_search"));
    let again = attach_knowledge(agent.tools(), SqliteKnowledgeBase::in_memory().unwrap()).unwrap();
    assert!(agent.tools().contains("knowledge_search"));
    assert!(detach_knowledge(agent.tools(), &again));
    assert!(!agent.tools().contains("knowledge_search"));
}

/// A mistake in the server's configuration does not heal by reconnecting: `connect` fails with it.
#[tokio::test]
async fn a_misconfigured_server_fails_setup_with_its_mistake() {
    let agent = Agent::builder()
        .model(TestModel::new().then_reply("unused"))
        .capability(McpServer::http("web", "not a url"))
        .build()
        .unwrap();
    let err = agent.connect().await.unwrap_err();
    assert!(
        matches!(&err, harnessx::AgentError::Setup { capability, .. } if capability == "MCP server `web`"),
        "{err:?}"
    );
    assert!(err.to_string().contains("`web`"), "{err}");
    assert!(
        !agent
            .tools()
            .list_tools()
            .iter()
            .any(|n| n.starts_with("mcp_web"))
    );
}
