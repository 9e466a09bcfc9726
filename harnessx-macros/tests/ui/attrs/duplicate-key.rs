use harnessx::tool;

/// Add two numbers.
#[tool(permission = "allow", permission = "ask")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
