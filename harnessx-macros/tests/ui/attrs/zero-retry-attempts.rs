use harnessx::tool;

/// Add two numbers.
#[tool(replay_policy = "safe", retry = 0)]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
