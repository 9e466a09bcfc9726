use harnessx::tool;

/// Repeat a word.
#[tool]
fn repeat(word: String, #[arg(default = "twice")] times: usize) -> String {
    word.repeat(times)
}

fn main() {}
