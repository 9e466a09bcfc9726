use harnessx::tool;

/// Repeat a word.
#[tool]
fn repeat(word: String, #[arg(default = 2)] #[arg(default = 3)] times: usize) -> String {
    word.repeat(times)
}

fn main() {}
