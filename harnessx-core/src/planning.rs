//! Planning: the todo list (`write_todos`, `read_todos`), the fixed system-prompt line, and the
//! attachment of the current list to each request.
//!
//! The agent registers both tools by default (`AgentConfig { planning: false, .. }` switches
//! them off). [`register_planning_tools`] registers them on any registry, which is what the
//! builtin `planning` bundle does.
//!
//! While the built-in `write_todos` is installed and planning is on, the agent attaches the
//! rendered list ([`TodoList::render`]) to the newest message of each request (an empty list is
//! not attached). A message keeps the attachment it was first sent with, so every request's
//! prefix is byte-identical to the previous request and provider prompt caches keep working.

mod todo;
mod tools;

pub use todo::{TodoItem, TodoList, TodoStatus};
pub use tools::{
    PLANNING_PROMPT_LINE, PLANNING_TOOLS, PlanningOptions, READ_TODOS, WRITE_TODOS,
    register_planning_tools,
};

pub(crate) use tools::{installed_todo_list, restore_todos};
