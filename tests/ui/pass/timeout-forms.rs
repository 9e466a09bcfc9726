use std::time::Duration;

use harnessx::{ToolRegistry, tool};

/// Whole seconds.
#[tool(timeout_seconds = 120)]
fn whole() -> String {
    String::new()
}

/// Fractional seconds.
#[tool(timeout_seconds = 2.5)]
fn fractional() -> String {
    String::new()
}

/// A suffixed literal.
#[tool(timeout_seconds = 30u64)]
fn suffixed() -> String {
    String::new()
}

fn main() {
    let registry = ToolRegistry::new();
    let whole = registry.register_tool(whole).unwrap();
    assert_eq!(whole.timeout, Some(Duration::from_secs(120)));
    let fractional = registry.register_tool(fractional).unwrap();
    assert_eq!(fractional.timeout, Some(Duration::from_millis(2500)));
    let suffixed = registry.register_tool(suffixed).unwrap();
    assert_eq!(suffixed.timeout, Some(Duration::from_secs(30)));
}
