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
    // The macro makes each function a unit struct of its name, so the results get other names.
    let registered = registry.register_tool(whole).unwrap();
    assert_eq!(registered.timeout, Some(Duration::from_secs(120)));
    let registered = registry.register_tool(fractional).unwrap();
    assert_eq!(registered.timeout, Some(Duration::from_millis(2500)));
    let registered = registry.register_tool(suffixed).unwrap();
    assert_eq!(registered.timeout, Some(Duration::from_secs(30)));
}
