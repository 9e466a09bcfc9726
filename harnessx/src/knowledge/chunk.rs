//! Chunking: a document's text cut into passages of bounded size along paragraph, sentence and
//! word boundaries.

/// Cuts `text` into passages of at most `max_chars` characters. Paragraphs (separated by blank
/// lines) are kept together while they fit; a longer paragraph is cut at sentence ends, and a
/// longer sentence at spaces (or, for text without spaces, anywhere).
pub(crate) fn chunk(text: &str, max_chars: usize) -> Vec<String> {
    let max = max_chars.max(16);
    let mut out = Vec::new();
    let mut current = String::new();
    for paragraph in paragraphs(text) {
        for piece in fit(&paragraph, max) {
            let joined = current.chars().count() + 2 + piece.chars().count();
            if !current.is_empty() && joined > max {
                out.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push_str("\n\n");
            }
            current.push_str(&piece);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Paragraphs with their inner whitespace normalised to single spaces.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !words.is_empty() {
                out.push(words.join(" "));
                words.clear();
            }
        } else {
            words.extend(line.split_whitespace());
        }
    }
    if !words.is_empty() {
        out.push(words.join(" "));
    }
    out
}

/// Pieces of one paragraph, each at most `max` characters.
fn fit(paragraph: &str, max: usize) -> Vec<String> {
    if paragraph.chars().count() <= max {
        return vec![paragraph.to_owned()];
    }
    let mut pieces = Vec::new();
    let mut current = String::new();
    for sentence in sentences(paragraph) {
        for part in split_long(sentence, max) {
            if !current.is_empty() && current.chars().count() + 1 + part.chars().count() > max {
                pieces.push(std::mem::take(&mut current));
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(&part);
        }
    }
    if !current.is_empty() {
        pieces.push(current);
    }
    pieces
}

/// Sentences: cut after `.`, `!` or `?` followed by a space.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1) == Some(&b' ') {
            out.push(text[start..=i].trim());
            start = i + 1;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// A sentence cut at spaces into parts of at most `max` characters; a word longer than `max`
/// is cut on character boundaries.
fn split_long(sentence: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for word in sentence.split(' ') {
        let mut word = word.to_owned();
        while word.chars().count() > max {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            let cut: String = word.chars().take(max).collect();
            word = word.chars().skip(max).collect();
            out.push(cut);
        }
        if !current.is_empty() && current.chars().count() + 1 + word.chars().count() > max {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(&word);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_paragraphs_share_a_passage() {
        let text = "First paragraph.\n\nSecond one\nwraps here.\n\n\nThird.";
        assert_eq!(
            chunk(text, 1000),
            ["First paragraph.\n\nSecond one wraps here.\n\nThird."]
        );
    }

    #[test]
    fn long_text_is_cut_within_the_limit_and_keeps_every_word() {
        let sentence = "The quick brown fox jumps over the lazy dog. ";
        let text = sentence.repeat(100);
        let chunks = chunk(&text, 200);
        assert!(chunks.len() > 10);
        assert!(
            chunks.iter().all(|c| c.chars().count() <= 200),
            "{chunks:?}"
        );
        let words: usize = chunks.iter().map(|c| c.split_whitespace().count()).sum();
        assert_eq!(words, text.split_whitespace().count());
        let long_word = "é".repeat(500);
        let chunks = chunk(&long_word, 100);
        assert_eq!(chunks.len(), 5);
        assert!(chunks.iter().all(|c| c.chars().count() == 100));
    }

    #[test]
    fn empty_text_has_no_passages() {
        assert!(chunk("  \n\n \t", 100).is_empty());
    }
}
