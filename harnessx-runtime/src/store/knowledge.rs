//! [`KnowledgeStore`]: the documents of the platform's knowledge bases, in the same database as
//! the runs and indexed by that database's own full-text engine (SQLite's FTS5, PostgreSQL's
//! `tsvector` with a GIN index), so every process sharing the store searches the same documents.
//!
//! A knowledge base is named by the host (the server keeps each one as a resource of its own,
//! see [`ResourceStore`](super::ResourceStore)); this store keeps its documents: a title, a
//! [`DocumentFormat`] and a body of at most [`MAX_DOCUMENT_BYTES`]. A search takes any text:
//! its words are looked up (any of them may match), the documents are ranked by the engine's
//! relevance, and each hit carries a snippet of its body.

use harnessx::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::error::StoreError;

/// The largest document body a store takes: 1 MiB of UTF-8.
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// The most words of a query that are looked up (the rest are ignored).
pub const MAX_QUERY_WORDS: usize = 32;

/// How a document's body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentFormat {
    /// Plain text.
    Text,
    /// Markdown.
    Markdown,
}

impl DocumentFormat {
    /// `text` or `markdown`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Markdown => "markdown",
        }
    }

    /// The format stored as `s`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "text" => Some(Self::Text),
            "markdown" => Some(Self::Markdown),
            _ => None,
        }
    }
}

/// A document to add to a knowledge base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDocument {
    /// The knowledge base's name.
    pub base: String,
    /// The title (searched with more weight than the body).
    pub title: String,
    /// How the body is written.
    pub format: DocumentFormat,
    /// The text, at most [`MAX_DOCUMENT_BYTES`].
    pub body: String,
}

/// A stored document, without its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentInfo {
    /// Its id, unique in the store and never reused.
    pub id: u64,
    /// The knowledge base it belongs to.
    pub base: String,
    /// Its title.
    pub title: String,
    /// How its body is written.
    pub format: DocumentFormat,
    /// The body's size in bytes.
    pub bytes: u64,
    /// When it was added (ms since the Unix epoch).
    pub created_ms: i64,
}

/// A document that matched a search.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeHit {
    /// The knowledge base it belongs to.
    pub base: String,
    /// The document's id.
    pub document: u64,
    /// The document's title.
    pub title: String,
    /// A passage of the body around the words that matched.
    pub snippet: String,
    /// Relevance, higher is better: the engine's own (SQLite: bm25 negated, titles weighing
    /// double; PostgreSQL: `ts_rank` with titles weighing more), comparable within one store.
    pub score: f64,
}

/// A document a store refuses; nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// The body is larger than [`MAX_DOCUMENT_BYTES`].
    #[error(
        "the document's text is {bytes} bytes, more than the limit of {limit} bytes (1 MiB) a \
         document; split it into smaller documents"
    )]
    TooLarge {
        /// The body's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The database's full-text engine cannot index the body (PostgreSQL's `tsvector` holds at
    /// most 1 MiB of distinct words with their positions).
    #[error(
        "the document's text has too many distinct words to be indexed ({message}); split it \
         into smaller documents"
    )]
    Unindexable {
        /// The database's message.
        message: String,
    },
}

impl NewDocument {
    /// Checks the body's size.
    pub fn check(&self) -> Result<(), DocumentError> {
        if self.body.len() > MAX_DOCUMENT_BYTES {
            return Err(DocumentError::TooLarge {
                bytes: self.body.len(),
                limit: MAX_DOCUMENT_BYTES,
            });
        }
        Ok(())
    }
}

/// Common English words a query is looked up without, when it has others: matching any of
/// them says little about a document (PostgreSQL's `english` configuration drops them too).
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for",
    "from", "get", "has", "have", "how", "i", "if", "in", "is", "it", "its", "me", "my", "not",
    "of", "on", "or", "our", "so", "that", "the", "their", "there", "this", "to", "was", "we",
    "what", "when", "where", "which", "who", "why", "will", "with", "you", "your",
];

/// The words of a query a store looks up: runs of letters and digits, lower-cased, each once,
/// at most [`MAX_QUERY_WORDS`], without common English words unless the query has nothing
/// else. Only letters and digits reach the engine's query syntax, so any text is a valid query.
///
/// ```
/// use harnessx_runtime::store::query_words;
/// assert_eq!(query_words("How do I get on the VPN? (vpn!) Wireguard"), ["vpn", "wireguard"]);
/// assert_eq!(query_words("the who"), ["the", "who"]);
/// assert!(query_words("\"*) - ()").is_empty());
/// ```
pub fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
    }
    if words.iter().any(|w| !STOP_WORDS.contains(&w.as_str())) {
        words.retain(|w| !STOP_WORDS.contains(&w.as_str()));
    }
    words.truncate(MAX_QUERY_WORDS);
    words
}

/// Where the documents of knowledge bases live: both run stores implement it, in the same
/// database.
pub trait KnowledgeStore: Send + Sync + 'static {
    /// Adds a document to its knowledge base; refuses one that is too large.
    fn add_document(
        &self,
        document: NewDocument,
    ) -> BoxFuture<'_, Result<Result<DocumentInfo, DocumentError>, StoreError>>;

    /// A knowledge base's documents, oldest first.
    fn documents<'a>(
        &'a self,
        base: &'a str,
    ) -> BoxFuture<'a, Result<Vec<DocumentInfo>, StoreError>>;

    /// How many documents each knowledge base holds (bases without any are left out).
    fn document_counts(
        &self,
    ) -> BoxFuture<'_, Result<std::collections::BTreeMap<String, u64>, StoreError>>;

    /// Deletes one document of a knowledge base; `false` when the base has no such document.
    fn delete_document<'a>(
        &'a self,
        base: &'a str,
        id: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Deletes every document of a knowledge base; returns how many.
    fn delete_documents<'a>(&'a self, base: &'a str) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// Up to `limit` documents of `bases` that contain any word of `query` (see
    /// [`query_words`]), best first.
    fn search_documents<'a>(
        &'a self,
        bases: &'a [String],
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<KnowledgeHit>, StoreError>>;
}

/// Implements [`KnowledgeStore`] for a store whose inherent `async fn`s of the same names do the work
/// (the SQLite and PostgreSQL stores): each trait method boxes the inherent method's future. An
/// inherent method comes first in method resolution, so `self.name(..)` here calls it, not the
/// trait method. Items given in braces after the type join the impl.
macro_rules! boxed_knowledge_store {
    ($store:ty $({ $($item:item)* })?) => {
        impl KnowledgeStore for $store {
            $($($item)*)?

            fn add_document(
                &self,
                document: NewDocument,
            ) -> BoxFuture<'_, Result<Result<DocumentInfo, DocumentError>, StoreError>> {
                Box::pin(self.add_document(document))
            }

            fn documents<'a>(
                &'a self,
                base: &'a str,
            ) -> BoxFuture<'a, Result<Vec<DocumentInfo>, StoreError>> {
                Box::pin(self.documents(base))
            }

            fn document_counts(&self) -> BoxFuture<'_, Result<BTreeMap<String, u64>, StoreError>> {
                Box::pin(self.document_counts())
            }

            fn delete_document<'a>(
                &'a self,
                base: &'a str,
                id: u64,
            ) -> BoxFuture<'a, Result<bool, StoreError>> {
                Box::pin(self.delete_document(base, id))
            }

            fn delete_documents<'a>(&'a self, base: &'a str) -> BoxFuture<'a, Result<u64, StoreError>> {
                Box::pin(self.delete_documents(base))
            }

            fn search_documents<'a>(
                &'a self,
                bases: &'a [String],
                query: &'a str,
                limit: usize,
            ) -> BoxFuture<'a, Result<Vec<KnowledgeHit>, StoreError>> {
                Box::pin(self.search_documents(bases, query, limit))
            }
        }
    };
}
pub(crate) use boxed_knowledge_store;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_too_large_document_names_the_limit() {
        let doc = NewDocument {
            base: "b".into(),
            title: "t".into(),
            format: DocumentFormat::Text,
            body: "x".repeat(MAX_DOCUMENT_BYTES + 1),
        };
        let e = doc.check().unwrap_err();
        assert_eq!(
            e.to_string(),
            "the document's text is 1048577 bytes, more than the limit of 1048576 bytes (1 MiB) \
             a document; split it into smaller documents"
        );
        assert_eq!(
            DocumentError::Unindexable {
                message: "string is too long for tsvector".into()
            }
            .to_string(),
            "the document's text has too many distinct words to be indexed (string is too long \
             for tsvector); split it into smaller documents"
        );
    }

    #[test]
    fn query_words_are_letters_and_digits_once_each() {
        assert_eq!(query_words("Ünïcode ÜNÏCODE 42x"), ["ünïcode", "42x"]);
        assert_eq!(query_words("\"or\" OR"), ["or"]);
        let many = (0..100)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(query_words(&many).len(), MAX_QUERY_WORDS);
        assert_eq!(
            DocumentFormat::parse("markdown"),
            Some(DocumentFormat::Markdown)
        );
        assert_eq!(DocumentFormat::parse("html"), None);
        assert_eq!(DocumentFormat::Text.as_str(), "text");
    }
}
