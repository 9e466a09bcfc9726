use harnessx::tool;

/// Repeat a word.
///
/// Args:
///     word - The word.
///     times: How many times.
#[tool]
fn repeat(word: String, times: usize) -> String {
    word.repeat(times)
}

fn main() {}
