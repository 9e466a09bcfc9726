//! The platform's knowledge bases: each one a stored resource of kind [`KNOWLEDGE_KIND`] (its
//! name and description), its documents kept beside it by the run store's
//! [`KnowledgeStore`] and indexed by the database's own full-text engine, so every server on the
//! database searches the same documents.
//!
//! `POST /v2/knowledge` creates a base, `POST /v2/knowledge/{name}/documents` adds a text or
//! Markdown document (at most [`MAX_DOCUMENT_BYTES`]). An agent attaches bases by name
//! (`knowledge_bases` in its settings): with the first one it gets the read-only
//! `knowledge_search` tool, which searches them through [`StoredKnowledgeBase`]; detaching the
//! last one takes the tool away. A base attached to an agent cannot be deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use harnessx::BoxFuture;
use harnessx::knowledge::{Document, KnowledgeBase, KnowledgeError, Passage};
use harnessx_runtime::store::{
    DocumentError, DocumentFormat, DocumentInfo, Expect, KnowledgeStore, MAX_DOCUMENT_BYTES,
    NewDocument, Resource, ResourceStore,
};
use serde::{Deserialize, Serialize};

use crate::agents::check_name;

/// The resource kind of stored knowledge bases.
pub const KNOWLEDGE_KIND: &str = "knowledge_base";

/// The longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;

/// The longest document title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// A knowledge base as stored (the body of its resource).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaseSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// A new knowledge base (`POST /v2/knowledge`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKnowledgeBase {
    /// The name: 1 to 64 letters, digits, `_` or `-`.
    pub name: String,
    /// What it holds, for people choosing one (at most 2000 characters).
    #[serde(default)]
    pub description: Option<String>,
}

/// A knowledge base as `GET /v2/knowledge` lists it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KnowledgeBaseView {
    /// The name.
    pub name: String,
    /// What it holds.
    pub description: Option<String>,
    /// Its resource version.
    pub version: u64,
    /// When this version was stored (ms since the Unix epoch).
    pub created_ms: i64,
    /// How many documents it holds.
    pub document_count: u64,
    /// The agents it is attached to (by their current version).
    pub agents: Vec<String>,
}

/// How a document is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DocumentFormatName {
    /// Plain text.
    #[default]
    Text,
    /// Markdown.
    Markdown,
}

impl From<DocumentFormatName> for DocumentFormat {
    fn from(f: DocumentFormatName) -> Self {
        match f {
            DocumentFormatName::Text => Self::Text,
            DocumentFormatName::Markdown => Self::Markdown,
        }
    }
}

impl From<DocumentFormat> for DocumentFormatName {
    fn from(f: DocumentFormat) -> Self {
        match f {
            DocumentFormat::Markdown => Self::Markdown,
            _ => Self::Text,
        }
    }
}

/// A document of a knowledge base, without its text.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DocumentView {
    /// Its id (unique on the platform, never reused).
    pub id: u64,
    /// Its title.
    pub title: String,
    /// `text` or `markdown`.
    pub format: DocumentFormatName,
    /// The size of its text in bytes.
    pub bytes: u64,
    /// When it was added (ms since the Unix epoch).
    pub created_ms: i64,
}

impl From<DocumentInfo> for DocumentView {
    fn from(d: DocumentInfo) -> Self {
        Self {
            id: d.id,
            title: d.title,
            format: d.format.into(),
            bytes: d.bytes,
            created_ms: d.created_ms,
        }
    }
}

/// A knowledge base with its documents (`GET /v2/knowledge/{name}`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KnowledgeBaseDetail {
    /// The base.
    #[serde(flatten)]
    pub base: KnowledgeBaseView,
    /// Its documents, oldest first.
    pub documents: Vec<DocumentView>,
}

/// A document to add (`POST /v2/knowledge/{name}/documents`).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDocumentBody {
    /// The title: 1 to 200 characters (a file's name will do).
    pub title: String,
    /// The text: at most 1 MiB (1048576 bytes) of UTF-8.
    pub text: String,
    /// `text` (the default) or `markdown`.
    #[serde(default)]
    pub format: DocumentFormatName,
}

/// Why a change to the knowledge bases was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KnowledgeChangeError {
    /// No knowledge base has this name.
    #[error("no knowledge base is named `{0}`; GET /v2/knowledge lists them")]
    Unknown(String),
    /// A knowledge base has this name already.
    #[error(
        "a knowledge base named `{0}` exists already; add documents to it with \
         POST /v2/knowledge/{0}/documents"
    )]
    Exists(String),
    /// The base has no such document.
    #[error("knowledge base `{base}` has no document {id}; GET /v2/knowledge/{base} lists them")]
    UnknownDocument {
        /// The base.
        base: String,
        /// The id asked for.
        id: u64,
    },
    /// A value cannot be used.
    #[error("{0}")]
    Invalid(String),
    /// The document's text is too large.
    #[error(
        "text: the document is {bytes} bytes, more than the limit of {limit} bytes (1 MiB) a \
         document; split it into smaller documents"
    )]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Agents have it attached.
    #[error(
        "knowledge base `{name}` is attached to the agents {agents}; detach it from them first \
         (their `knowledge_bases` without it)"
    )]
    InUse {
        /// The base.
        name: String,
        /// The agents, listed.
        agents: String,
    },
    /// This server was started without a store for documents.
    #[error("this server keeps no knowledge bases (its store has no place for documents)")]
    Unavailable,
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(String),
}

fn store_error(e: impl std::fmt::Display) -> KnowledgeChangeError {
    KnowledgeChangeError::Store(e.to_string())
}

/// Checks a title: 1 to [`MAX_TITLE_CHARS`] characters, no control characters.
fn check_title(title: &str) -> Result<String, KnowledgeChangeError> {
    let title = title.trim();
    if title.is_empty() {
        return Err(KnowledgeChangeError::Invalid(
            "title: the title is empty; give the document a title, such as its file name".into(),
        ));
    }
    let chars = title.chars().count();
    if chars > MAX_TITLE_CHARS {
        return Err(KnowledgeChangeError::Invalid(format!(
            "title: the title is {chars} characters; shorten it to at most {MAX_TITLE_CHARS}"
        )));
    }
    if title.chars().any(char::is_control) {
        return Err(KnowledgeChangeError::Invalid(
            "title: the title holds control characters (such as a line break); give it on one line"
                .into(),
        ));
    }
    Ok(title.to_owned())
}

/// The stored knowledge bases and their documents.
#[derive(Clone)]
pub struct KnowledgeBases {
    resources: Arc<dyn ResourceStore>,
    documents: Arc<dyn KnowledgeStore>,
}

impl std::fmt::Debug for KnowledgeBases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeBases").finish_non_exhaustive()
    }
}

impl KnowledgeBases {
    /// The knowledge bases kept in `resources`, their documents in `documents` (one database).
    pub fn new(resources: Arc<dyn ResourceStore>, documents: Arc<dyn KnowledgeStore>) -> Self {
        Self {
            resources,
            documents,
        }
    }

    /// The store holding the documents.
    pub fn documents(&self) -> &Arc<dyn KnowledgeStore> {
        &self.documents
    }

    fn parse(r: &Resource) -> Result<BaseSpec, KnowledgeChangeError> {
        serde_json::from_value(r.body.clone()).map_err(|e| {
            KnowledgeChangeError::Store(format!(
                "knowledge base `{}` version {} is stored in a shape this server cannot read: {e}",
                r.name, r.version
            ))
        })
    }

    fn view(
        r: &Resource,
        count: u64,
        agents: Vec<String>,
    ) -> Result<KnowledgeBaseView, KnowledgeChangeError> {
        Ok(KnowledgeBaseView {
            description: Self::parse(r)?.description,
            name: r.name.clone(),
            version: r.version,
            created_ms: r.created_ms,
            document_count: count,
            agents,
        })
    }

    /// The names of every knowledge base.
    pub async fn names(&self) -> Result<BTreeSet<String>, KnowledgeChangeError> {
        Ok(self
            .resources
            .resources(KNOWLEDGE_KIND)
            .await
            .map_err(store_error)?
            .into_iter()
            .map(|r| r.name)
            .collect())
    }

    /// Every knowledge base with its document count; `attached` gives each base's agents.
    pub async fn list(
        &self,
        attached: &BTreeMap<String, Vec<String>>,
    ) -> Result<Vec<KnowledgeBaseView>, KnowledgeChangeError> {
        let stored = self
            .resources
            .resources(KNOWLEDGE_KIND)
            .await
            .map_err(store_error)?;
        let counts = self
            .documents
            .document_counts()
            .await
            .map_err(store_error)?;
        stored
            .iter()
            .map(|r| {
                Self::view(
                    r,
                    counts.get(&r.name).copied().unwrap_or(0),
                    attached.get(&r.name).cloned().unwrap_or_default(),
                )
            })
            .collect()
    }

    async fn live(&self, name: &str) -> Result<Resource, KnowledgeChangeError> {
        self.resources
            .resource(KNOWLEDGE_KIND, name, None)
            .await
            .map_err(store_error)?
            .ok_or_else(|| KnowledgeChangeError::Unknown(crate::api::extract::shorten(name)))
    }

    /// One knowledge base with its documents.
    pub async fn get(
        &self,
        name: &str,
        agents: Vec<String>,
    ) -> Result<KnowledgeBaseDetail, KnowledgeChangeError> {
        let r = self.live(name).await?;
        let documents: Vec<DocumentView> = self
            .documents
            .documents(name)
            .await
            .map_err(store_error)?
            .into_iter()
            .map(DocumentView::from)
            .collect();
        Ok(KnowledgeBaseDetail {
            base: Self::view(&r, documents.len() as u64, agents)?,
            documents,
        })
    }

    /// Creates a knowledge base, empty.
    pub async fn create(
        &self,
        new: NewKnowledgeBase,
    ) -> Result<KnowledgeBaseView, KnowledgeChangeError> {
        check_name(&new.name).map_err(|m| KnowledgeChangeError::Invalid(format!("name: {m}")))?;
        let description = new
            .description
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty());
        if let Some(d) = &description {
            let chars = d.chars().count();
            if chars > MAX_DESCRIPTION_CHARS {
                return Err(KnowledgeChangeError::Invalid(format!(
                    "description: the description is {chars} characters; shorten it to at most \
                     {MAX_DESCRIPTION_CHARS}"
                )));
            }
        }
        let body = serde_json::to_value(BaseSpec { description }).map_err(store_error)?;
        match self
            .resources
            .put_resource(KNOWLEDGE_KIND, &new.name, body, Expect::Absent)
            .await
            .map_err(store_error)?
        {
            Ok(r) => Self::view(&r, 0, Vec::new()),
            Err(_) => Err(KnowledgeChangeError::Exists(new.name)),
        }
    }

    /// Deletes a knowledge base and its documents (the caller checked no agent has it).
    pub async fn delete(&self, name: &str) -> Result<(), KnowledgeChangeError> {
        self.live(name).await?;
        self.documents
            .delete_documents(name)
            .await
            .map_err(store_error)?;
        if self
            .resources
            .delete_resource(KNOWLEDGE_KIND, name)
            .await
            .map_err(store_error)?
        {
            Ok(())
        } else {
            Err(KnowledgeChangeError::Unknown(crate::api::extract::shorten(
                name,
            )))
        }
    }

    /// Adds a document to a knowledge base.
    pub async fn add_document(
        &self,
        name: &str,
        body: NewDocumentBody,
    ) -> Result<DocumentView, KnowledgeChangeError> {
        self.live(name).await?;
        let title = check_title(&body.title)?;
        if body.text.len() > MAX_DOCUMENT_BYTES {
            return Err(KnowledgeChangeError::TooLarge {
                bytes: body.text.len(),
                limit: MAX_DOCUMENT_BYTES,
            });
        }
        if body.text.trim().is_empty() {
            return Err(KnowledgeChangeError::Invalid(
                "text: the document has no text; send the file's contents in `text`".into(),
            ));
        }
        let added = self
            .documents
            .add_document(NewDocument {
                base: name.to_owned(),
                title,
                format: body.format.into(),
                body: body.text,
            })
            .await
            .map_err(store_error)?;
        match added {
            Ok(info) => Ok(info.into()),
            Err(DocumentError::TooLarge { bytes, limit }) => {
                Err(KnowledgeChangeError::TooLarge { bytes, limit })
            }
            Err(e) => Err(KnowledgeChangeError::Invalid(format!("text: {e}"))),
        }
    }

    /// Deletes one document of a knowledge base.
    pub async fn delete_document(&self, name: &str, id: u64) -> Result<(), KnowledgeChangeError> {
        self.live(name).await?;
        if self
            .documents
            .delete_document(name, id)
            .await
            .map_err(store_error)?
        {
            Ok(())
        } else {
            Err(KnowledgeChangeError::UnknownDocument {
                base: crate::api::extract::shorten(name),
                id,
            })
        }
    }

    /// Checks an agent's `knowledge_bases`: each one exists and is listed once.
    pub(crate) async fn check_attached(
        &self,
        names: &[String],
    ) -> Result<(), KnowledgeChangeError> {
        if names.is_empty() {
            return Ok(());
        }
        let known = self.names().await?;
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(KnowledgeChangeError::Invalid(format!(
                    "knowledge_bases[{i}]: `{name}` is listed twice; list each knowledge base once"
                )));
            }
            if !known.contains(name) {
                let listed: Vec<&str> = known.iter().map(String::as_str).collect();
                return Err(KnowledgeChangeError::Invalid(format!(
                    "knowledge_bases[{i}]: no knowledge base is named `{}`; the knowledge bases \
                     are: {} (POST /v2/knowledge creates one)",
                    crate::api::extract::shorten(name),
                    if listed.is_empty() {
                        "(none)".into()
                    } else {
                        listed.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }
}

/// A stored knowledge base as the `knowledge_search` tool searches it: each search asks the
/// store, so documents added or deleted through any server are found (or not) at once.
#[derive(Clone)]
pub struct StoredKnowledgeBase {
    name: String,
    store: Arc<dyn KnowledgeStore>,
}

impl std::fmt::Debug for StoredKnowledgeBase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKnowledgeBase")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl StoredKnowledgeBase {
    /// The knowledge base `name` in `store`.
    pub fn new(store: Arc<dyn KnowledgeStore>, name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            store,
        }
    }
}

impl KnowledgeBase for StoredKnowledgeBase {
    fn name(&self) -> &str {
        &self.name
    }

    /// The best documents for `query`: each passage is a snippet of one document, its source
    /// the document's API path, its score the store's relevance.
    fn search<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, KnowledgeError>> {
        Box::pin(async move {
            let hits = self
                .store
                .search_documents(std::slice::from_ref(&self.name), query, limit)
                .await
                .map_err(|e| KnowledgeError::Other(e.to_string()))?;
            Ok(hits
                .into_iter()
                .map(|h| Passage {
                    source: format!("/v2/knowledge/{}/documents/{}", h.base, h.document),
                    title: Some(h.title),
                    text: h.snippet,
                    score: h.score,
                    knowledge_base: h.base,
                })
                .collect())
        })
    }

    /// Adds each document as a text document titled by its title (or its source).
    fn add_documents<'a>(
        &'a self,
        documents: Vec<Document>,
    ) -> BoxFuture<'a, Result<usize, KnowledgeError>> {
        Box::pin(async move {
            let mut added = 0;
            for d in documents {
                let title = d.title.unwrap_or(d.source);
                self.store
                    .add_document(NewDocument {
                        base: self.name.clone(),
                        title: title.clone(),
                        format: DocumentFormat::Text,
                        body: d.text,
                    })
                    .await
                    .map_err(|e| KnowledgeError::Other(e.to_string()))?
                    .map_err(|e| KnowledgeError::Other(format!("document `{title}`: {e}")))?;
                added += 1;
            }
            Ok(added)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_names_the_field_and_says_what_to_do() {
        let cases = [
            (
                KnowledgeChangeError::Unknown("kb".into()),
                "no knowledge base is named `kb`; GET /v2/knowledge lists them",
            ),
            (
                KnowledgeChangeError::Exists("kb".into()),
                "a knowledge base named `kb` exists already; add documents to it with POST /v2/knowledge/kb/documents",
            ),
            (
                KnowledgeChangeError::UnknownDocument {
                    base: "kb".into(),
                    id: 7,
                },
                "knowledge base `kb` has no document 7; GET /v2/knowledge/kb lists them",
            ),
            (
                KnowledgeChangeError::TooLarge {
                    bytes: 2_000_000,
                    limit: MAX_DOCUMENT_BYTES,
                },
                "text: the document is 2000000 bytes, more than the limit of 1048576 bytes (1 MiB) a document; split it into smaller documents",
            ),
            (
                KnowledgeChangeError::InUse {
                    name: "kb".into(),
                    agents: "`a`, `b`".into(),
                },
                "knowledge base `kb` is attached to the agents `a`, `b`; detach it from them first (their `knowledge_bases` without it)",
            ),
            (
                KnowledgeChangeError::Unavailable,
                "this server keeps no knowledge bases (its store has no place for documents)",
            ),
            (
                KnowledgeChangeError::Store("disk full".into()),
                "the store failed: disk full",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
        assert_eq!(
            check_title("  ").unwrap_err().to_string(),
            "title: the title is empty; give the document a title, such as its file name"
        );
        assert_eq!(
            check_title(&"t".repeat(201)).unwrap_err().to_string(),
            "title: the title is 201 characters; shorten it to at most 200"
        );
        assert_eq!(
            check_title("a\nb").unwrap_err().to_string(),
            "title: the title holds control characters (such as a line break); give it on one line"
        );
        assert_eq!(check_title(" notes.md ").unwrap(), "notes.md");
    }
}
