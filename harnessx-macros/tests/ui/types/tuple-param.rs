use harnessx::tool;

/// Add a pair.
#[tool]
fn add(pair: (i64, i64)) -> i64 {
    pair.0 + pair.1
}

fn main() {}
