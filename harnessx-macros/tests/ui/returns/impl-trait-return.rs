use harnessx::tool;

/// List numbers.
#[tool]
fn numbers(count: u32) -> impl Iterator<Item = u32> {
    0..count
}

fn main() {}
