//! The MCP server side of a registry: tool definitions as MCP tools, calls through the engine,
//! results as MCP results.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use harnessx_core::output::{ToolCall, ToolErrorKind, ToolResult};
use harnessx_core::permissions::PermissionManager;
use harnessx_core::registry::ToolRegistry;
use harnessx_core::tool::{PermissionLevel, ReplayPolicy, ToolDefinition};

/// What every session of one server shares.
pub(crate) struct Served {
    pub(crate) registry: ToolRegistry,
    pub(crate) permissions: PermissionManager,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    /// Appended to a denial of the named tool, saying how the owner grants it.
    pub(crate) denied_advice: Option<DeniedAdvice>,
}

/// The advice a server appends to a permission denial, given the tool's name.
pub(crate) type DeniedAdvice = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// One session's handler; clones share the registry and the permission manager.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) served: Arc<Served>,
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.served.name.clone(),
                self.served.version.clone(),
            ));
        if let Some(text) = &self.served.instructions {
            info = info.with_instructions(text.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.served
            .registry
            .get_tool(name)
            .map(|def| mcp_tool(&def, &self.served.permissions))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default()).to_string();
        let call = ToolCall::new(request_id(&context), request.name.to_string(), arguments);
        let run = self
            .served
            .registry
            .run(Some(self.served.permissions.clone()));
        let execution = run.execute(&call);
        tokio::pin!(execution);
        let result = tokio::select! {
            result = &mut execution => result,
            () = context.ct.cancelled() => {
                // The client cancelled the request: the call's context token fires and the
                // engine finishes it (a cancelled result nobody reads).
                run.cancel();
                execution.await
            }
        };
        let result = with_denied_advice(result, self.served.denied_advice.as_ref());
        Ok(call_result(result).into())
    }
}

impl Handler {
    /// Every registered tool, in registration order, as an MCP tool.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        let registry = &self.served.registry;
        registry
            .list_tools()
            .iter()
            .filter_map(|name| registry.get_tool(name))
            .map(|def| mcp_tool(&def, &self.served.permissions))
            .collect()
    }
}

fn request_id(context: &RequestContext<RoleServer>) -> String {
    match serde_json::to_value(&context.id) {
        Ok(Value::String(s)) => format!("mcp-{s}"),
        Ok(other) => format!("mcp-{other}"),
        Err(_) => "mcp-call".to_owned(),
    }
}

/// A definition as an MCP tool: the same name, description and input schema, and annotations
/// from its metadata (see [`read_only`]).
pub(crate) fn mcp_tool(def: &ToolDefinition, permissions: &PermissionManager) -> Tool {
    let a = &def.annotations;
    let read_only = read_only(def, permissions);
    let mut annotations = Map::new();
    if let Some(title) = &a.title {
        annotations.insert("title".into(), json!(title));
    }
    annotations.insert("readOnlyHint".into(), json!(read_only));
    if !read_only {
        // MCP: destructiveHint and idempotentHint are meaningful only when not read-only.
        annotations.insert(
            "destructiveHint".into(),
            json!(a.destructive_hint.unwrap_or(true)),
        );
        let idempotent = a
            .idempotent_hint
            .unwrap_or(def.replay_policy == ReplayPolicy::Idempotent);
        annotations.insert("idempotentHint".into(), json!(idempotent));
    }
    if let Some(open) = a.open_world_hint {
        annotations.insert("openWorldHint".into(), json!(open));
    }
    let mut tool = json!({
        "name": def.name,
        "description": def.description,
        "inputSchema": def.input_schema,
        "annotations": annotations,
    });
    if let Some(title) = &a.title {
        tool["title"] = json!(title);
    }
    // A definition's schema is always an object schema, so this cannot fail; the fallback keeps
    // the tool listed with an open schema rather than dropping it.
    serde_json::from_value(tool).unwrap_or_else(|_| {
        Tool::new(
            def.name.clone(),
            def.description.clone(),
            Arc::new(Map::from_iter([("type".to_owned(), json!("object"))])),
        )
    })
}

/// The `readOnlyHint` a served tool carries:
///
/// 1. a tool the owner's permission manager DENIES is never read-only (the hint would tell
///    clients to call it without asking, and every call fails);
/// 2. otherwise the tool's own `read_only_hint` annotation, when it sets one;
/// 3. otherwise `true` exactly when the tool's own permission is ALLOW and its replay policy is
///    [`ReplayPolicy::Safe`] (the engine runs it without asking and may repeat it freely, which
///    is what a read-only tool is), `false` for everything else.
pub(crate) fn read_only(def: &ToolDefinition, permissions: &PermissionManager) -> bool {
    if permissions.effective_level(&def.name, def.permission) == PermissionLevel::Deny {
        return false;
    }
    def.annotations.read_only_hint.unwrap_or(
        def.permission == Some(PermissionLevel::Allow) && def.replay_policy == ReplayPolicy::Safe,
    )
}

/// A permission denial with the server's advice on granting the tool appended; every other
/// result unchanged.
pub(crate) fn with_denied_advice(
    mut result: ToolResult,
    advice: Option<&DeniedAdvice>,
) -> ToolResult {
    if let Some(advice) = advice
        && result.error_kind == Some(ToolErrorKind::PermissionDenied)
    {
        result.content = format!("{}. {}", result.content, advice(&result.name));
    }
    result
}

/// An engine result as an MCP result: the text the model would read, the structured content,
/// and `isError` for every failure (denied, timed out, bad arguments, unknown tool, tool error).
pub(crate) fn call_result(result: ToolResult) -> CallToolResult {
    let content = vec![ContentBlock::text(result.content)];
    let mut out = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    out.structured_content = result.structured;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use harnessx_core::output::ToolOutput;
    use harnessx_core::tool::{ToolAnnotations, handler_fn};

    fn def(
        permission: Option<PermissionLevel>,
        replay: ReplayPolicy,
        hint: Option<bool>,
    ) -> ToolDefinition {
        let mut d = ToolDefinition::new(
            "t",
            "A tool.",
            json!({"type": "object"}),
            handler_fn(|_, _| async { Ok(ToolOutput::text("")) }),
        );
        d.permission = permission;
        d.replay_policy = replay;
        d.annotations = ToolAnnotations::new();
        d.annotations.read_only_hint = hint;
        d
    }

    #[test]
    fn the_read_only_rule() {
        let allow = PermissionManager::default();
        let allow_safe = def(Some(PermissionLevel::Allow), ReplayPolicy::Safe, None);
        assert!(read_only(&allow_safe, &allow));
        // Inherited permission, or a replay policy other than Safe: not read-only.
        assert!(!read_only(&def(None, ReplayPolicy::Safe, None), &allow));
        assert!(!read_only(
            &def(Some(PermissionLevel::Allow), ReplayPolicy::Idempotent, None),
            &allow
        ));
        // The tool's own hint wins over the derivation, both ways.
        assert!(read_only(
            &def(None, ReplayPolicy::Manual, Some(true)),
            &allow
        ));
        assert!(!read_only(
            &def(
                Some(PermissionLevel::Allow),
                ReplayPolicy::Safe,
                Some(false)
            ),
            &allow
        ));
        // The owner's DENY beats everything.
        let deny = PermissionManager::default().with_override("t", PermissionLevel::Deny);
        assert!(!read_only(&allow_safe, &deny));
        assert!(!read_only(
            &def(None, ReplayPolicy::Manual, Some(true)),
            &deny
        ));
    }

    #[test]
    fn results_keep_text_structure_and_error_flag() {
        let mut r = ToolResult::error(
            "c",
            "t",
            harnessx_core::output::ToolErrorKind::TimedOut,
            "too slow",
        );
        r.structured = Some(json!({"n": 1}));
        let out = serde_json::to_value(call_result(r)).expect("serialises");
        assert_eq!(out["isError"], true);
        assert_eq!(
            out["content"],
            json!([{"type": "text", "text": "too slow"}])
        );
        assert_eq!(out["structuredContent"], json!({"n": 1}));
    }
}

#[cfg(test)]
mod denied_advice_tests {
    use super::*;
    use harnessx_core::engine::PERMISSION_DENIED;

    #[test]
    fn advice_follows_a_denial_and_nothing_else() {
        let advice: DeniedAdvice = Arc::new(|tool| format!("grant it with `--grant {tool}`"));
        let denied = ToolResult::error(
            "c1",
            "write_file",
            ToolErrorKind::PermissionDenied,
            PERMISSION_DENIED,
        );
        assert_eq!(
            with_denied_advice(denied.clone(), Some(&advice)).content,
            "Permission denied. grant it with `--grant write_file`"
        );
        assert_eq!(
            with_denied_advice(denied, None).content,
            "Permission denied"
        );
        let failed = ToolResult::error("c2", "write_file", ToolErrorKind::Failed, "disk full");
        assert_eq!(
            with_denied_advice(failed, Some(&advice)).content,
            "disk full"
        );
    }
}
