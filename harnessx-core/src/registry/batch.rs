//! One model turn's batch in one call: [`ToolRegistry::execute_batch`].

use super::ToolRegistry;
use crate::output::{ToolCall, ToolResult};
use crate::permissions::PermissionManager;

impl ToolRegistry {
    /// Executes one model turn's calls, as an agent does: concurrent tools run together,
    /// serial tools (`concurrent = false`) one at a time in the order the model made them, and
    /// the results come back in call order. One failing or timed-out call cancels none of the
    /// others. Without a manager the ordinary ALLOW default applies, as in
    /// [`execute`](Self::execute).
    ///
    /// It is [`ToolRun::execute_batch`](crate::ToolRun::execute_batch) on a fresh
    /// [`run`](Self::run); start a run yourself to share deduplication across turns or to
    /// receive [`ToolEvent`](crate::ToolEvent)s.
    ///
    /// ```
    /// use harnessx::{ToolCall, ToolRegistry, tool};
    /// use serde_json::json;
    ///
    /// /// Add two numbers.
    /// #[tool]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), harnessx::RegistryError> {
    /// let registry = ToolRegistry::new();
    /// registry.register_tool(add)?;
    /// let calls = [
    ///     ToolCall::json("c1", "add", json!({"a": 1, "b": 2})),
    ///     ToolCall::json("c2", "add", json!({"a": 3})),
    /// ];
    /// let results = registry.execute_batch(&calls, None).await;
    /// assert_eq!(results[0].content, "3");
    /// assert!(results[1].is_error); // `b` is missing: the model reads why and calls again
    /// # Ok(()) }
    /// ```
    pub async fn execute_batch(
        &self,
        calls: &[ToolCall],
        permissions: Option<&PermissionManager>,
    ) -> Vec<ToolResult> {
        self.run(permissions.cloned())
            .execute_batch(calls, None)
            .await
    }
}
