use harnessx::tool;

/// Repeat a word.
#[tool]
fn repeat(word: String, #[arg(defualt = 2)] times: usize) -> String {
    word.repeat(times)
}

fn main() {}
