use harnessx::tool;

/// Repeat a word.
///
/// # Arguments
///
/// * `word` - The word.
/// * `count` - How many times.
#[tool]
fn repeat(word: String, times: usize) -> String {
    word.repeat(times)
}

fn main() {}
