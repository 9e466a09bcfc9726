use harnessx::{ToolRegistry, tool};

/// Multiply two numbers.
///
/// Args:
///     a: First number.
///     b: Second number.
#[tool(permission = "allow", replay_policy = "safe")]
fn calculate(a: i64, b: i64) -> i64 {
    a * b
}

fn main() {
    assert_eq!(calculate(2, 3), 6);
    let registry = ToolRegistry::new();
    let def = registry.register_tool(calculate).unwrap();
    assert_eq!(def.description, "Multiply two numbers.");
}
