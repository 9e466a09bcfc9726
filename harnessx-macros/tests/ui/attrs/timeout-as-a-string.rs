use harnessx::tool;

/// Add two numbers.
#[tool(timeout_seconds = "120")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
