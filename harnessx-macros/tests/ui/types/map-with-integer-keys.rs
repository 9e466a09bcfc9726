use std::collections::HashMap;

use harnessx::tool;

/// Sum scores by player number.
#[tool]
fn total(scores: HashMap<u32, i64>) -> i64 {
    scores.values().sum()
}

fn main() {}
