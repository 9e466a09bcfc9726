use harnessx::tool;

/// An error that does not implement `Display`.
#[derive(Debug)]
pub struct Oops;

/// Try something.
#[tool]
fn attempt(input: String) -> Result<String, Oops> {
    if input.is_empty() { Err(Oops) } else { Ok(input) }
}

fn main() {}
