//! Turning user text into an FTS5 `MATCH` expression that cannot break the query syntax.

/// The most terms one query uses.
const MAX_TERMS: usize = 32;

/// The words of `text` (letters and digits), each quoted as an FTS5 string and joined with `OR`,
/// so operators, quotes, parentheses, `*`, `:` and column filters in user text are plain words.
/// `None` when the text has no words.
///
/// Ranking (bm25) puts passages matching more and rarer words first. (Only OKF bundles search
/// with one expression; a knowledge base searches word by word, with [`terms`].)
#[cfg(feature = "okf")]
pub(crate) fn match_expression(text: &str) -> Option<String> {
    let terms = terms(text);
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// The distinct words of `text` (at most [`MAX_TERMS`]), each quoted as an FTS5 string: one
/// `MATCH` expression per word.
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .take(MAX_TERMS)
        .map(|w| format!("\"{w}\""))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "okf")]
    #[test]
    fn syntax_in_user_text_becomes_plain_words() {
        assert_eq!(
            match_expression(r#"title:"reset" AND (password* OR NOT x) -y ^z"#).as_deref(),
            Some(
                r#""title" OR "reset" OR "and" OR "password" OR "or" OR "not" OR "x" OR "y" OR "z""#
            )
        );
        assert_eq!(
            match_expression("Ünïcode café").as_deref(),
            Some(r#""ünïcode" OR "café""#)
        );
        assert_eq!(match_expression(" ?!* \"\" "), None);
        let many = (0..100)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            match_expression(&many).unwrap().matches(" OR ").count(),
            MAX_TERMS - 1
        );
    }
}
