//! The MCP listing of every built-in tool carries the hints of the one annotations table.

use harnessx::mcp_server::McpToolServer;
use harnessx::{PermissionLevel, PermissionManager, ToolRegistry};
use harnessx_builtin::annotations::{BUILTIN_ANNOTATIONS, builtin_hints};
use harnessx_builtin::catalog::BuiltinExt;
use serde_json::json;

#[test]
fn every_builtin_is_listed_with_the_tables_hints() {
    let registry = ToolRegistry::new();
    registry.load_builtin("all", json!(null)).unwrap();
    let listed = McpToolServer::new(registry, PermissionManager::new(PermissionLevel::Ask)).tools();
    assert_eq!(listed.len(), BUILTIN_ANNOTATIONS.len());
    for tool in &listed {
        let name = tool["name"].as_str().unwrap();
        let hints = builtin_hints(name).unwrap_or_else(|| panic!("{name} is not in the table"));
        let a = &tool["annotations"];
        assert_eq!(a["readOnlyHint"], json!(hints.read_only), "{name}");
        assert_eq!(a["openWorldHint"], json!(hints.open_world), "{name}");
        if hints.read_only {
            // MCP gives destructive and idempotent hints meaning only for tools that write.
            assert!(a.get("destructiveHint").is_none(), "{name}: {a}");
        } else {
            assert_eq!(a["destructiveHint"], json!(hints.destructive), "{name}");
            assert_eq!(a["idempotentHint"], json!(hints.idempotent), "{name}");
        }
    }
}

#[test]
fn tools_that_only_read_are_advertised_read_only() {
    let registry = ToolRegistry::new();
    registry.load_builtin("all", json!(null)).unwrap();
    let listed = McpToolServer::new(registry, PermissionManager::new(PermissionLevel::Ask)).tools();
    let annotations = |name: &str| {
        listed
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["annotations"].clone())
            .unwrap()
    };
    for name in [
        "read_todos",
        "list_memories",
        "search_memories",
        "fetch_url",
        "read_file",
    ] {
        assert_eq!(annotations(name)["readOnlyHint"], json!(true), "{name}");
    }
    assert_eq!(annotations("fetch_url")["openWorldHint"], json!(true));
    assert_eq!(annotations("run_bash")["destructiveHint"], json!(true));
    assert_eq!(annotations("delete_memory")["destructiveHint"], json!(true));
    assert_eq!(annotations("save_memory")["destructiveHint"], json!(false));
}
