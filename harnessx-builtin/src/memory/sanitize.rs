//! Cleaning and bounding what stores keep, and reducing search text to words — shared by every
//! store so they refuse exactly the same input.

use std::collections::HashSet;

use super::{MemoryError, MemoryLimits};

/// Most search words used from one query.
const MAX_TERMS: usize = 32;

/// Cleans a new memory: control characters other than newline and tab removed, line endings
/// normalised, surrounding blank space trimmed; tags trimmed, stripped of control characters
/// and de-duplicated (case-insensitively, first spelling kept). Then the limits are checked.
/// Linear in the size of the input; stores call it before they take their lock or connection.
pub(crate) fn new_memory(
    content: &str,
    tags: &[String],
    limits: &MemoryLimits,
) -> Result<(String, Vec<String>), MemoryError> {
    let content = clean_text(content);
    if content.is_empty() {
        return Err(MemoryError::Empty {
            field: "content",
            advice: "pass the text to remember (control characters and surrounding blank space are removed)",
        });
    }
    if content.len() > limits.max_content_bytes {
        return Err(MemoryError::TooLarge {
            field: "content",
            size: content.len(),
            limit_name: "max_content_bytes",
            limit: limits.max_content_bytes,
            advice: "save a shorter summary, or split it into several memories",
        });
    }
    let mut clean_tags: Vec<String> = Vec::new();
    // Lowercased tags seen so far: one lookup per tag keeps the check linear in the list's length.
    let mut seen: HashSet<String> = HashSet::new();
    for tag in tags {
        let tag = clean_tag(tag);
        if tag.is_empty() || !seen.insert(tag.to_ascii_lowercase()) {
            continue;
        }
        if tag.len() > limits.max_tag_bytes {
            return Err(MemoryError::TooLarge {
                field: "tags",
                size: tag.len(),
                limit_name: "max_tag_bytes",
                limit: limits.max_tag_bytes,
                advice: "use short tags of a word or two",
            });
        }
        clean_tags.push(tag);
    }
    if clean_tags.len() > limits.max_tags {
        return Err(MemoryError::TooManyTags {
            count: clean_tags.len(),
            limit: limits.max_tags,
        });
    }
    Ok((content, clean_tags))
}

/// A tag filter as stores compare it: cleaned, `None` when blank.
pub(crate) fn tag_filter(tag: Option<&str>) -> Option<String> {
    tag.map(clean_tag).filter(|t| !t.is_empty())
}

/// The words of a search, lowercased, at most [`MAX_TERMS`]. Empty or over-long text is an error.
pub(crate) fn search_terms(text: &str, limits: &MemoryLimits) -> Result<Vec<String>, MemoryError> {
    if text.len() > limits.max_query_bytes {
        return Err(MemoryError::TooLarge {
            field: "query",
            size: text.len(),
            limit_name: "max_query_bytes",
            limit: limits.max_query_bytes,
            advice: "search with a few keywords",
        });
    }
    let mut terms: Vec<String> = Vec::new();
    for word in words(text) {
        if !terms.contains(&word) {
            terms.push(word);
        }
        if terms.len() == MAX_TERMS {
            break;
        }
    }
    if terms.is_empty() {
        return Err(MemoryError::Empty {
            field: "query",
            advice: "search with one or more words of letters or digits (punctuation is ignored)",
        });
    }
    Ok(terms)
}

/// Lowercased runs of letters and digits: the words search matches on.
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Clamps a requested result count to `1..=max_results`; 0 means the default of 10.
pub(crate) fn clamp_limit(requested: usize, limits: &MemoryLimits) -> usize {
    let wanted = if requested == 0 { 10 } else { requested };
    wanted.min(limits.max_results.max(1))
}

fn clean_text(text: &str) -> String {
    let normalised = text.replace("\r\n", "\n").replace('\r', "\n");
    let kept: String = normalised
        .chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect();
    kept.trim().to_owned()
}

fn clean_tag(tag: &str) -> String {
    let kept: String = tag
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_stripped_and_lines_normalised() {
        let (content, tags) = new_memory(
            "  hello\u{0}\u{7} world\r\nsecond\rthird\t!\u{1b}[31m ",
            &[
                "  Rust\u{0} ".into(),
                "rust".into(),
                "".into(),
                "two  words".into(),
            ],
            &MemoryLimits::default(),
        )
        .unwrap();
        assert_eq!(content, "hello world\nsecond\nthird\t![31m");
        assert_eq!(tags, ["Rust", "two words"]);
    }

    #[test]
    fn limits_are_enforced_with_one_line_errors() {
        let limits = MemoryLimits {
            max_content_bytes: 5,
            max_tags: 1,
            max_tag_bytes: 3,
            max_query_bytes: 4,
            ..MemoryLimits::default()
        };
        assert_eq!(
            new_memory("123456", &[], &limits).unwrap_err().to_string(),
            "`content` is 6 bytes, more than the limit `max_content_bytes` (5 bytes); save a shorter summary, or split it into several memories"
        );
        assert_eq!(
            new_memory("ok", &["a".into(), "b".into()], &limits)
                .unwrap_err()
                .to_string(),
            "`tags` has 2 tags, more than the limit `max_tags` (1); keep the most useful ones"
        );
        assert_eq!(
            new_memory("ok", &["long".into()], &limits)
                .unwrap_err()
                .to_string(),
            "`tags` is 4 bytes, more than the limit `max_tag_bytes` (3 bytes); use short tags of a word or two"
        );
        assert_eq!(
            new_memory(" \u{0} ", &[], &limits).unwrap_err().to_string(),
            "`content` is empty once cleaned; pass the text to remember (control characters and surrounding blank space are removed)"
        );
        assert_eq!(
            search_terms("12345", &limits).unwrap_err().to_string(),
            "`query` is 5 bytes, more than the limit `max_query_bytes` (4 bytes); search with a few keywords"
        );
        assert_eq!(
            search_terms("\"*", &limits).unwrap_err().to_string(),
            "`query` is empty once cleaned; search with one or more words of letters or digits (punctuation is ignored)"
        );
    }

    #[test]
    fn a_hundred_thousand_tags_are_counted_in_one_pass() {
        // Distinct tags: a pairwise duplicate check would compare 5 billion pairs.
        let tags: Vec<String> = (0..100_000).map(|i| format!("t{i}")).collect();
        assert_eq!(
            new_memory("x", &tags, &MemoryLimits::default()).unwrap_err(),
            MemoryError::TooManyTags {
                count: 100_000,
                limit: 16
            }
        );
        // Duplicates in any case collapse to the first spelling.
        let dupes: Vec<String> = (0..100_000)
            .map(|i| if i % 2 == 0 { "Tag" } else { "tAG" }.to_owned())
            .collect();
        let (_, kept) = new_memory("x", &dupes, &MemoryLimits::default()).unwrap();
        assert_eq!(kept, ["Tag"]);
    }

    #[test]
    fn search_text_becomes_plain_words() {
        let terms = search_terms(
            "Rust\" OR content:* NEAR(x y) -z ^déjà",
            &MemoryLimits::default(),
        )
        .unwrap();
        assert_eq!(
            terms,
            ["rust", "or", "content", "near", "x", "y", "z", "déjà"]
        );
    }

    #[test]
    fn limits_clamp_result_counts() {
        let limits = MemoryLimits::default();
        assert_eq!(clamp_limit(0, &limits), 10);
        assert_eq!(clamp_limit(7, &limits), 7);
        assert_eq!(clamp_limit(500, &limits), 50);
    }
}
