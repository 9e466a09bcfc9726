use harnessx::tool;

/// Not a function.
#[tool]
struct Calculator;

fn main() {}
