//! The `write_todos` and `read_todos` tools, their registration helper and the prompt line.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};

use super::todo::{TodoItem, TodoList, TodoStatus, render_items};
use crate::error::RegistryError;
use crate::output::{ToolError, ToolOutput};
use crate::registry::ToolRegistry;
use crate::tool::{
    PermissionLevel, ReplayPolicy, ToolAnnotations, ToolDefinition, ToolHandler, ToolOptions,
    handler_fn,
};

/// The name of the tool that replaces the whole todo list.
pub const WRITE_TODOS: &str = "write_todos";
/// The name of the tool that returns the todo list.
pub const READ_TODOS: &str = "read_todos";
/// The planning tools, in registration order.
pub const PLANNING_TOOLS: [&str; 2] = [WRITE_TODOS, READ_TODOS];

/// The one fixed line the system prompt gets while the built-in `write_todos` is installed.
pub const PLANNING_PROMPT_LINE: &str = "For any task with three or more steps, plan it with \
`write_todos` before you start, update the list in the same turn as the work it tracks (mark a \
step in_progress when you begin it and completed when it is done), and when the work is done \
just answer.";

/// Options for [`register_planning_tools`], the builtin `planning` bundle's helper.
///
/// ```
/// use harnessx::planning::{PlanningOptions, register_planning_tools};
/// use harnessx::ToolRegistry;
/// let registry = ToolRegistry::new();
/// let names = register_planning_tools(&registry, PlanningOptions {
///     include: Some(vec!["read_todos".into()]),
///     ..PlanningOptions::default()
/// })?;
/// assert_eq!(names, vec!["read_todos".to_string()]);
/// # Ok::<(), harnessx::RegistryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct PlanningOptions {
    /// Register only these tools (`None`: both).
    pub include: Option<Vec<String>>,
    /// Leave these tools out.
    pub exclude: Vec<String>,
    /// The tools' permission (`None` inherits the permission manager's default).
    pub permission: Option<PermissionLevel>,
    /// Replace existing tools of the same names instead of failing.
    pub replace: bool,
    /// The list to write to (`None`: the registry's current planning list, or a new one).
    pub list: Option<TodoList>,
}

/// What the registry remembers about its built-in planning tools.
struct PlanningState {
    list: TodoList,
    /// The built-in `write_todos` handler, to tell it apart from a user's tool of that name.
    write_handler: Option<Weak<dyn ToolHandler>>,
}

/// Registers `write_todos` and/or `read_todos` on `registry` and returns the registered names.
///
/// Unknown names in `include`/`exclude` fail with [`RegistryError::Config`]. The list is kept in
/// the registry, so an agent using this registry attaches it to its requests and adds
/// [`PLANNING_PROMPT_LINE`] to its system prompt (while this `write_todos` stays registered).
///
/// ```
/// use harnessx::planning::{PlanningOptions, TodoList, register_planning_tools};
/// use harnessx::{ToolCall, ToolRegistry};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::RegistryError> {
/// let registry = ToolRegistry::new();
/// let list = TodoList::new();
/// let names = register_planning_tools(&registry, PlanningOptions { list: Some(list.clone()), ..Default::default() })?;
/// assert_eq!(names, ["write_todos", "read_todos"]);
/// let call = ToolCall::json("c1", "write_todos", serde_json::json!({"todos": [{"content": "Plan", "status": "pending"}]}));
/// let result = registry.execute(&call, None).await;
/// assert_eq!(result.content, "Todo list updated: 1 item (0 completed, 0 in progress, 1 pending).");
/// assert_eq!(list.items()[0].content, "Plan");
/// # Ok(()) }
/// ```
pub fn register_planning_tools(
    registry: &ToolRegistry,
    options: PlanningOptions,
) -> Result<Vec<String>, RegistryError> {
    for name in options.include.iter().flatten().chain(&options.exclude) {
        if !PLANNING_TOOLS.contains(&name.as_str()) {
            return Err(RegistryError::Config(format!(
                "unknown planning tool `{name}`; the planning tools are {}",
                PLANNING_TOOLS.join(", ")
            )));
        }
    }
    let wanted: Vec<&str> = PLANNING_TOOLS
        .into_iter()
        .filter(|n| {
            options
                .include
                .as_ref()
                .is_none_or(|inc| inc.iter().any(|i| i == n))
        })
        .filter(|n| !options.exclude.iter().any(|e| e == n))
        .collect();
    let existing = registry.state_map().get::<PlanningState>();
    let list = options
        .list
        .clone()
        .or_else(|| existing.as_ref().map(|s| s.list.clone()))
        .unwrap_or_default();
    let mut reg_options = ToolOptions::new().replace(options.replace);
    if let Some(p) = options.permission {
        reg_options = reg_options.permission(p);
    }
    let mut registered = Vec::new();
    let mut write_handler: Option<Weak<dyn ToolHandler>> = None;
    for name in wanted {
        let def = match name {
            WRITE_TODOS => write_todos_definition(list.clone()),
            _ => read_todos_definition(list.clone()),
        };
        let handler = Arc::downgrade(&def.handler);
        registry.register_tool_with(def, reg_options.clone())?;
        if name == WRITE_TODOS {
            write_handler = Some(handler);
        }
        registered.push(name.to_owned());
    }
    let write_handler = write_handler.or_else(|| existing.and_then(|s| s.write_handler.clone()));
    registry.insert_state(PlanningState {
        list,
        write_handler,
    });
    Ok(registered)
}

/// The list behind the registry's `write_todos`, when that tool is the built-in one.
pub(crate) fn installed_todo_list(registry: &ToolRegistry) -> Option<TodoList> {
    let state = registry.state_map().get::<PlanningState>()?;
    let tool = registry.lookup(WRITE_TODOS)?;
    let ours = state.write_handler.as_ref()?.upgrade()?;
    std::ptr::addr_eq(Arc::as_ptr(&ours), Arc::as_ptr(&tool.definition.handler))
        .then(|| state.list.clone())
}

fn write_todos_definition(list: TodoList) -> ToolDefinition {
    ToolDefinition::new(
        WRITE_TODOS,
        "Replace the todo list with the whole list you send. Send every item every time: the \
         list you send replaces the previous one. Each item needs `content` (a short description \
         of the step) and `status` (pending, in_progress or completed); other keys are kept.",
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The whole list, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {
                                "type": "string",
                                "minLength": 1,
                                "description": "A short description of the step."
                            },
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "completed"]
                            }
                        },
                        "required": ["content", "status"]
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        }),
        handler_fn(move |args, _ctx| {
            let list = list.clone();
            async move {
                let items = parse_todos(&args).map_err(ToolError::invalid_arguments)?;
                let summary = summarize(&items);
                list.replace(items);
                Ok(ToolOutput::text(format!("Todo list updated: {summary}.")))
            }
        }),
    )
    .with_concurrent(false)
    .with_replay_policy(ReplayPolicy::Idempotent)
    // Replaces the whole list: destructive, and the same list twice leaves the same list.
    .with_annotations(ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(true),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    })
}

fn read_todos_definition(list: TodoList) -> ToolDefinition {
    ToolDefinition::new(
        READ_TODOS,
        "Return the current todo list.",
        json!({"type": "object", "properties": {}, "additionalProperties": false}),
        handler_fn(move |_args, _ctx| {
            let items = list.items();
            async move {
                let structured = json!({ "todos": items });
                Ok(ToolOutput::text(render_items(&items)).with_structured(structured))
            }
        }),
    )
    .with_replay_policy(ReplayPolicy::Safe)
    .with_annotations(ToolAnnotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    })
}

/// Checks the whole list; the first problem becomes a one-line error naming the item and field.
fn parse_todos(args: &Value) -> Result<Vec<TodoItem>, String> {
    let fail = |what: String| {
        format!(
            "Invalid todo list: {what}. The list was not changed; send the whole list again with \
             every item as {{\"content\": \"...\", \"status\": \"pending|in_progress|completed\"}}."
        )
    };
    let Some(todos) = args.get("todos").and_then(Value::as_array) else {
        return Err(fail("field `todos` must be an array of items".to_owned()));
    };
    let mut items = Vec::with_capacity(todos.len());
    for (i, raw) in todos.iter().enumerate() {
        let Some(obj) = raw.as_object() else {
            return Err(fail(format!("`todos[{i}]` must be an object")));
        };
        let content = match obj.get("content") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => {
                return Err(fail(format!("`todos[{i}].content` is blank")));
            }
            Some(_) => return Err(fail(format!("`todos[{i}].content` must be a string"))),
            None => return Err(fail(format!("`todos[{i}].content` is missing"))),
        };
        let status = match obj.get("status").and_then(Value::as_str) {
            Some("pending") => TodoStatus::Pending,
            Some("in_progress") => TodoStatus::InProgress,
            Some("completed") => TodoStatus::Completed,
            Some(other) => {
                return Err(fail(format!(
                    "`todos[{i}].status` is \"{other}\", not pending, in_progress or completed"
                )));
            }
            None => {
                return Err(fail(format!(
                    "`todos[{i}].status` is missing or not a string"
                )));
            }
        };
        let mut extra = obj.clone();
        extra.remove("content");
        extra.remove("status");
        items.push(TodoItem {
            content,
            status,
            extra,
        });
    }
    Ok(items)
}

fn summarize(items: &[TodoItem]) -> String {
    let count = |s| items.iter().filter(|i| i.status == s).count();
    format!(
        "{} {} ({} completed, {} in progress, {} pending)",
        items.len(),
        if items.len() == 1 { "item" } else { "items" },
        count(TodoStatus::Completed),
        count(TodoStatus::InProgress),
        count(TodoStatus::Pending)
    )
}

/// Puts back the list a finished `write_todos` call wrote (a durable run reads the call back
/// from its journal instead of running it again).
pub(crate) fn restore_todos(list: &TodoList, call: &crate::output::ToolCall) {
    if let Ok(args) = serde_json::from_str::<Value>(&call.arguments)
        && let Ok(items) = parse_todos(&args)
    {
        list.replace(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_names_index_and_field() {
        let err = parse_todos(&json!({"todos": [
            {"content": "a", "status": "pending"},
            {"content": "  ", "status": "pending"}
        ]}))
        .unwrap_err();
        assert!(err.starts_with("Invalid todo list: `todos[1].content` is blank."));
        assert!(!err.contains('\n'));
        let err = parse_todos(&json!({"todos": [{"content": "a", "status": "done"}]})).unwrap_err();
        assert!(err.contains("`todos[0].status` is \"done\""));
        let err = parse_todos(&json!({"todos": [{"status": "done"}]})).unwrap_err();
        assert!(err.contains("`todos[0].content` is missing"));
        let err = parse_todos(&json!({"todos": [{"content": 3, "status": "done"}]})).unwrap_err();
        assert!(err.contains("`todos[0].content` must be a string"));
        let err = parse_todos(&json!({"todos": [1]})).unwrap_err();
        assert!(err.contains("`todos[0]` must be an object"));
        let err = parse_todos(&json!({"todos": {}})).unwrap_err();
        assert!(err.contains("field `todos` must be an array"));
        let err = parse_todos(&json!({"todos": [{"content": "a"}]})).unwrap_err();
        assert!(err.contains("`todos[0].status` is missing or not a string"));
    }

    #[test]
    fn parse_keeps_extra_keys() {
        let items =
            parse_todos(&json!({"todos": [{"content": "a", "status": "completed", "id": 7}]}))
                .unwrap();
        assert_eq!(items[0].extra["id"], 7);
        assert_eq!(
            summarize(&items),
            "1 item (1 completed, 0 in progress, 0 pending)"
        );
    }
}
