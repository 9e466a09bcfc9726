use harnessx::tool;

/// Add two numbers.
#[tool(concurrent = "yes")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
