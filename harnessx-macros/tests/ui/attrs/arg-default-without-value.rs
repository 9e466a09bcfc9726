use harnessx::tool;

/// Repeat a word.
#[tool]
fn repeat(word: String, #[arg(default)] times: usize) -> String {
    word.repeat(times)
}

fn main() {}
