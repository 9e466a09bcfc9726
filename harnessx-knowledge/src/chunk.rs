//! Chunking: a document's text cut into passages of bounded size along paragraph, sentence and
//! word boundaries.

/// Cuts `text` into passages of at most `max_chars` characters. Paragraphs (separated by blank
/// lines) are kept together while they fit; a longer paragraph is cut at sentence ends, and a
/// longer sentence at spaces (or, for text without spaces, anywhere).
pub(crate) fn chunk(text: &str, max_chars: usize) -> Vec<String> {
    let max = max_chars.max(16);
    let mut passages = Packer::new(max, "\n\n");
    for paragraph in paragraphs(text) {
        for piece in fit(&paragraph, max) {
            passages.push(&piece);
        }
    }
    passages.finish()
}

/// Joins pieces with a separator into strings of at most `max` characters (a piece longer
/// than `max` stands alone).
struct Packer {
    max: usize,
    separator: &'static str,
    current: String,
    out: Vec<String>,
}

impl Packer {
    fn new(max: usize, separator: &'static str) -> Self {
        Self {
            max,
            separator,
            current: String::new(),
            out: Vec::new(),
        }
    }

    fn push(&mut self, piece: &str) {
        let joined =
            self.current.chars().count() + self.separator.chars().count() + piece.chars().count();
        if !self.current.is_empty() && joined > self.max {
            self.out.push(std::mem::take(&mut self.current));
        }
        if !self.current.is_empty() {
            self.current.push_str(self.separator);
        }
        self.current.push_str(piece);
    }

    /// Ends the current string and returns them all.
    fn finish(mut self) -> Vec<String> {
        if !self.current.is_empty() {
            self.out.push(self.current);
        }
        self.out
    }
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

/// Pieces of one paragraph, each at most `max` characters: whole sentences while they fit.
fn fit(paragraph: &str, max: usize) -> Vec<String> {
    if paragraph.chars().count() <= max {
        return vec![paragraph.to_owned()];
    }
    let mut pieces = Packer::new(max, " ");
    for sentence in sentences(paragraph) {
        for part in split_long(sentence, max) {
            pieces.push(&part);
        }
    }
    pieces.finish()
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
    let mut parts = Packer::new(max, " ");
    for word in sentence.split(' ') {
        let chars: Vec<char> = word.chars().collect();
        for piece in chars.chunks(max) {
            parts.push(&piece.iter().collect::<String>());
        }
    }
    parts.finish()
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
