//! The todo list itself: items, statuses and the shared store the tools write to.

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a step stands.
///
/// ```
/// use harnessx::planning::TodoStatus;
/// assert_eq!(TodoStatus::InProgress.as_str(), "in_progress");
/// assert_eq!(serde_json::to_string(&TodoStatus::Completed).unwrap(), r#""completed""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

impl TodoStatus {
    /// The wire name: `pending`, `in_progress` or `completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
        }
    }
}

impl fmt::Display for TodoStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step of the plan. Keys other than `content` and `status` are kept as they were sent.
///
/// ```
/// use harnessx::planning::{TodoItem, TodoStatus};
/// let item: TodoItem = serde_json::from_value(serde_json::json!(
///     {"content": "Write tests", "status": "in_progress", "priority": "high"}
/// )).unwrap();
/// assert_eq!(item.status, TodoStatus::InProgress);
/// assert_eq!(item.extra["priority"], "high");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TodoItem {
    /// A short description of the step.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// Any other keys the model sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TodoItem {
    /// An item without extra keys.
    pub fn new(content: impl Into<String>, status: TodoStatus) -> Self {
        Self {
            content: content.into(),
            status,
            extra: Map::new(),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    items: Vec<TodoItem>,
    version: u64,
}

/// The shared todo list `write_todos` replaces and `read_todos` returns. Clones share the list.
///
/// ```
/// use harnessx::planning::{TodoItem, TodoList, TodoStatus};
/// let list = TodoList::new();
/// list.replace(vec![TodoItem::new("Plan", TodoStatus::Completed), TodoItem::new("Build", TodoStatus::Pending)]);
/// assert_eq!(list.version(), 1);
/// assert_eq!(list.render(), "Current todo list:\n1. [completed] Plan\n2. [pending] Build");
/// ```
#[derive(Debug, Clone, Default)]
pub struct TodoList {
    state: Arc<Mutex<State>>,
}

impl TodoList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current items.
    pub fn items(&self) -> Vec<TodoItem> {
        self.lock().items.clone()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.lock().items.is_empty()
    }

    /// How many times the list was replaced.
    pub fn version(&self) -> u64 {
        self.lock().version
    }

    /// Replaces the whole list.
    pub fn replace(&self, items: Vec<TodoItem>) {
        let mut state = self.lock();
        state.items = items;
        state.version += 1;
    }

    /// The list as the model sees it: a heading and one numbered line per item, extra keys
    /// shown as compact JSON after the content.
    pub fn render(&self) -> String {
        render_items(&self.lock().items)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) fn render_items(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "Current todo list: (empty)".to_owned();
    }
    let mut out = String::from("Current todo list:");
    for (i, item) in items.iter().enumerate() {
        out.push_str(&format!("\n{}. [{}] {}", i + 1, item.status, item.content));
        if !item.extra.is_empty() {
            out.push_str(&format!(" {}", Value::Object(item.extra.clone())));
        }
    }
    out
}
