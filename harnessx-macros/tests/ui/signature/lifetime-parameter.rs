use harnessx::tool;

/// Echo a value.
#[tool]
fn echo<'a>(value: String) -> String {
    value
}

fn main() {}
