use harnessx::tool;

/// Repeat a word.
///
/// Args:
///     word: The word.
///     times: How many times.
///     word: The word again.
#[tool]
fn repeat(word: String, times: usize) -> String {
    word.repeat(times)
}

fn main() {}
