use harnessx::tool;

/// Repeat a word.
///
/// Args:
///     word: The word.
///
///         This line continues nothing.
#[tool]
fn repeat(word: String) -> String {
    word
}

fn main() {}
