//! Turning user text into an FTS5 `MATCH` expression that cannot break the query syntax.

/// The most terms one query uses.
const MAX_TERMS: usize = 32;

/// The distinct words of `text` (at most [`MAX_TERMS`]), each quoted as an FTS5 string: one
/// `MATCH` expression per word. [Stop words](is_stop_word) are left out.
pub(crate) fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .map(|w| format!("\"{w}\""))
        .collect()
}

/// The distinct lower-case words of `text` (letters and digits), at most [`MAX_TERMS`], without
/// [stop words](is_stop_word).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !is_stop_word(w))
        .filter(|w| seen.insert(w.clone()))
        .take(MAX_TERMS)
        .collect()
}

/// Whether `word` (lower case) is an English function word such as `the`, `for` or `in`. They
/// occur in nearly every text, so a match on them says nothing about relevance: a concept that
/// shares only `for the` with a query is not a result.
pub(crate) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// English function words (articles, pronouns, prepositions, conjunctions, auxiliaries), sorted
/// for binary search. Content words that are common in questions but carry meaning in a
/// knowledge base (`date`, `year`, `time`, `new`, `first`) are deliberately not here.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_in_user_text_becomes_plain_words() {
        assert_eq!(
            terms(r#"title:"reset" AND (password* OR NOT x) -y ^z"#),
            [
                r#""title""#,
                r#""reset""#,
                r#""password""#,
                r#""x""#,
                r#""y""#,
                r#""z""#
            ]
        );
        assert_eq!(terms("Ünïcode café"), [r#""ünïcode""#, r#""café""#]);
        assert!(terms(" ?!* \"\" ").is_empty());
        let many = (0..100)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(terms(&many).len(), MAX_TERMS);
    }

    #[test]
    fn stop_words_are_left_out() {
        assert_eq!(
            words("Revenue for the year in Q3"),
            ["revenue", "year", "q3"]
        );
        assert!(words("what is it for").is_empty());
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted, STOP_WORDS,
            "the list must stay sorted for binary search"
        );
    }
}
