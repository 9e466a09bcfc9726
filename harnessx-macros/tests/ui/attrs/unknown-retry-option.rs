use harnessx::tool;

/// Add two numbers.
#[tool(replay_policy = "safe", retry(max_attempts = 3, backoff = 100))]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
