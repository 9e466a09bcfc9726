use harnessx::{PermissionLevel, ReplayPolicy, ToolRegistry, tool};

/// Ask first.
#[tool(
    name = "ask-first",
    description = "Overrides the doc comment.",
    permission = PermissionLevel::Ask,
    concurrent,
    replay_policy = ReplayPolicy::Idempotent,
    timeout_seconds = 2.5,
    retry(max_attempts = 5, initial_backoff_ms = 100, max_backoff_ms = 2000, multiplier = 1.5),
)]
fn ask_first() -> String {
    String::new()
}

/// Deny.
#[tool(permission = "deny", replay_policy = "manual", retry = 2, timeout_seconds = 120)]
fn denied() -> String {
    String::new()
}

fn main() {
    let registry = ToolRegistry::new();
    let def = registry.register_tool(ask_first).unwrap();
    assert_eq!(def.name, "ask-first");
    assert_eq!(def.description, "Overrides the doc comment.");
    assert_eq!(def.permission, Some(PermissionLevel::Ask));
    assert!(def.concurrent);
    assert_eq!(def.replay_policy, ReplayPolicy::Idempotent);
    assert_eq!(def.timeout, Some(std::time::Duration::from_millis(2500)));
    assert_eq!(def.retry.unwrap().max_attempts, 5);
    let def = registry.register_tool(denied).unwrap();
    assert_eq!(def.permission, Some(PermissionLevel::Deny));
}
