//! Knowledge bases and the `knowledge_search` tool, which exists exactly while at least one
//! knowledge base is attached.
//!
//! A [`KnowledgeBase`] returns ranked [`Passage`]s for a query; [`SqliteKnowledgeBase`] is the
//! embedded full-text implementation. [`attach_knowledge`] attaches one to a registry: the first
//! attachment registers `knowledge_search` (read-only, ALLOW: it never asks the user), and
//! detaching the last one removes it. There is no on/off flag.
//!
//! An agent is given knowledge as a [`Capability`](harnessx_core::agent::Capability):
//! `Agent::builder().capability(kb)` for a [`SqliteKnowledgeBase`] or an OKF bundle,
//! [`Knowledge::new`] for a knowledge base of your own. Through the `harnessx` facade this crate
//! is `harnessx::knowledge` (feature `knowledge`; `okf` for bundles).
//!
//! ```
//! use harnessx::ToolRegistry;
//! use harnessx::knowledge::{Document, KnowledgeBase, SqliteKnowledgeBase, attach_knowledge};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let kb = SqliteKnowledgeBase::in_memory()?.named("docs");
//! kb.add_documents(vec![Document::new("faq.md", "Refunds take five business days.")]).await?;
//!
//! let registry = ToolRegistry::new();
//! assert!(!registry.contains("knowledge_search"));
//! let handle = attach_knowledge(&registry, kb)?;
//! assert!(registry.contains("knowledge_search"));
//! handle.detach();
//! assert!(!registry.contains("knowledge_search"));
//! # Ok(()) }
//! ```

mod agent;
mod chunk;
mod dir;
#[cfg(feature = "okf")]
pub mod okf;
mod query;
mod relevance;
mod search;
mod sqlite;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use agent::Knowledge;
pub use dir::TEXT_EXTENSIONS;
pub use search::KNOWLEDGE_SEARCH;
pub use sqlite::{DEFAULT_PASSAGE_CHARS, SqliteKnowledgeBase};

use harnessx_core::error::RegistryError;
use harnessx_core::registry::{ToolRegistry, WeakToolRegistry};
use harnessx_core::tool::BoxFuture;

/// A document to index: where it comes from, an optional title, and its text.
///
/// ```
/// use harnessx::knowledge::Document;
/// let doc = Document::new("docs/setup.md", "Run the installer.").with_title("Setup");
/// assert_eq!(doc.title.as_deref(), Some("Setup"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Where the text comes from (a path, a URL, an id); unique within a knowledge base.
    pub source: String,
    /// A title, searched with double weight.
    pub title: Option<String>,
    /// The text.
    pub text: String,
}

impl Document {
    /// A document without a title.
    pub fn new(source: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            source: source.into(),
            title: None,
            text: text.into(),
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }
}

/// A passage that matched a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    /// The source of the document it comes from.
    pub source: String,
    /// The document's title.
    pub title: Option<String>,
    /// The passage text.
    pub text: String,
    /// Relevance: higher is better. [`SqliteKnowledgeBase`] gives a relevance in `(0, 1]` (the
    /// rarity-weighted share of the query's words the passage contains), comparable across
    /// queries and knowledge bases of that kind; other implementations say what theirs means.
    pub score: f64,
    /// The name of the knowledge base it comes from.
    pub knowledge_base: String,
}

/// A failure of a knowledge base.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KnowledgeError {
    /// The store could not be opened or set up.
    #[error("could not open the knowledge base at {path}")]
    Open {
        /// The file (or `:memory:`).
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A storage operation failed.
    #[error("the knowledge base could not {operation}")]
    Storage {
        /// What it was doing.
        operation: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The worker running an operation panicked or was cancelled.
    #[error("the knowledge base could not {operation}: its worker stopped ({reason})")]
    Crashed {
        /// What it was doing.
        operation: &'static str,
        /// What happened to the worker.
        reason: String,
    },
    /// A file or folder could not be read.
    #[error("could not read {path}; check that it exists and is readable")]
    Read {
        /// The file or folder.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A document has an empty source.
    #[error(
        "document {index} has an empty `source`; give every document a source such as its path or URL"
    )]
    EmptySource {
        /// Its position in the batch.
        index: usize,
    },
    /// Another implementation's failure.
    #[error("{0}")]
    Other(String),
}

/// A searchable store of documents.
///
/// Implement it for a vector store, a search service or anything else that returns passages;
/// [`SqliteKnowledgeBase`] is the embedded default.
///
/// ```
/// use harnessx::BoxFuture;
/// use harnessx::knowledge::{Document, KnowledgeBase, KnowledgeError, Passage};
///
/// /// Answers every query with one fixed passage.
/// struct Motd(String);
///
/// impl KnowledgeBase for Motd {
///     fn name(&self) -> &str { "motd" }
///     fn search<'a>(&'a self, _query: &'a str, limit: usize)
///         -> BoxFuture<'a, Result<Vec<Passage>, KnowledgeError>> {
///         let passage = Passage {
///             source: "motd".into(), title: None, text: self.0.clone(), score: 1.0,
///             knowledge_base: "motd".into(),
///         };
///         Box::pin(async move { Ok(std::iter::once(passage).take(limit).collect()) })
///     }
///     fn add_documents<'a>(&'a self, _documents: Vec<Document>)
///         -> BoxFuture<'a, Result<usize, KnowledgeError>> {
///         Box::pin(async { Err(KnowledgeError::Other("the message of the day is fixed".into())) })
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let hits = Motd("Deploys freeze on Fridays.".into()).search("deploy", 5).await.unwrap();
/// assert_eq!(hits[0].text, "Deploys freeze on Fridays.");
/// # }
/// ```
pub trait KnowledgeBase: Send + Sync + 'static {
    /// A short name shown with its passages.
    fn name(&self) -> &str;

    /// Up to `limit` passages relevant to `query`, best first. Any text is a valid query.
    fn search<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, KnowledgeError>>;

    /// Indexes documents (replacing ones with the same source); returns how many passages were
    /// stored.
    fn add_documents<'a>(
        &'a self,
        documents: Vec<Document>,
    ) -> BoxFuture<'a, Result<usize, KnowledgeError>>;
}

/// The knowledge bases attached to one registry, kept in its shared state.
#[derive(Default)]
pub(crate) struct Attached {
    bases: Mutex<Vec<(u64, Arc<dyn KnowledgeBase>)>>,
}

impl Attached {
    /// The attached knowledge bases, in attachment order.
    pub(crate) fn list(&self) -> Vec<Arc<dyn KnowledgeBase>> {
        let bases = self.bases.lock().unwrap_or_else(|p| p.into_inner());
        bases.iter().map(|(_, kb)| Arc::clone(kb)).collect()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Serialises attach and detach, so the tool's presence always matches the attachments.
static ATTACHING: Mutex<()> = Mutex::new(());

/// Attaches a knowledge base to `registry`. The first attachment registers `knowledge_search`.
///
/// Fails only when the registry already has a tool named `knowledge_search` that is not the
/// built-in one.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx::knowledge::{SqliteKnowledgeBase, attach_knowledge, attached_knowledge, detach_knowledge};
///
/// let registry = ToolRegistry::new();
/// let a = attach_knowledge(&registry, SqliteKnowledgeBase::in_memory()?.named("a"))?;
/// let b = attach_knowledge(&registry, SqliteKnowledgeBase::in_memory()?.named("b"))?;
/// assert_eq!(attached_knowledge(&registry).len(), 2);
/// assert!(detach_knowledge(&registry, &a));
/// assert!(registry.contains("knowledge_search")); // `b` is still attached
/// assert!(b.detach());
/// assert!(!registry.contains("knowledge_search"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn attach_knowledge(
    registry: &ToolRegistry,
    knowledge_base: impl KnowledgeBase,
) -> Result<KnowledgeHandle, RegistryError> {
    attach_knowledge_arc(registry, Arc::new(knowledge_base))
}

/// [`attach_knowledge`] for a shared knowledge base.
pub fn attach_knowledge_arc(
    registry: &ToolRegistry,
    knowledge_base: Arc<dyn KnowledgeBase>,
) -> Result<KnowledgeHandle, RegistryError> {
    let _turn = ATTACHING.lock().unwrap_or_else(|p| p.into_inner());
    let attached: Arc<Attached> = match registry.state::<Arc<Attached>>() {
        Some(state) => Arc::clone(&state),
        None => {
            let fresh = Arc::new(Attached::default());
            registry.insert_state(Arc::clone(&fresh));
            fresh
        }
    };
    let mut bases = attached.bases.lock().unwrap_or_else(|p| p.into_inner());
    if bases.is_empty() {
        registry.register_tool(search::definition(Arc::clone(&attached)))?;
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let name = knowledge_base.name().to_owned();
    bases.push((id, knowledge_base));
    Ok(KnowledgeHandle {
        id,
        name,
        registry: registry.downgrade(),
    })
}

/// Detaches a knowledge base; detaching the last one removes `knowledge_search`. Returns
/// whether it was attached.
pub fn detach_knowledge(registry: &ToolRegistry, handle: &KnowledgeHandle) -> bool {
    let _turn = ATTACHING.lock().unwrap_or_else(|p| p.into_inner());
    let Some(attached) = registry.state::<Arc<Attached>>() else {
        return false;
    };
    let mut bases = attached.bases.lock().unwrap_or_else(|p| p.into_inner());
    let before = bases.len();
    bases.retain(|(id, _)| *id != handle.id);
    let removed = bases.len() < before;
    if removed && bases.is_empty() {
        registry.unregister(KNOWLEDGE_SEARCH);
    }
    removed
}

/// Detaches every knowledge base named `name` (see [`KnowledgeHandle::name`]); detaching the
/// last one removes `knowledge_search`. Returns how many were detached.
///
/// ```
/// use harnessx::ToolRegistry;
/// use harnessx::knowledge::{SqliteKnowledgeBase, attach_knowledge, detach_knowledge_named};
///
/// let registry = ToolRegistry::new();
/// attach_knowledge(&registry, SqliteKnowledgeBase::in_memory()?.named("handbook"))?;
/// assert_eq!(detach_knowledge_named(&registry, "wiki"), 0);
/// assert_eq!(detach_knowledge_named(&registry, "handbook"), 1);
/// assert!(!registry.contains("knowledge_search"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn detach_knowledge_named(registry: &ToolRegistry, name: &str) -> usize {
    attached_knowledge(registry)
        .iter()
        .filter(|h| h.name() == name)
        .filter(|h| detach_knowledge(registry, h))
        .count()
}

/// The knowledge bases attached to `registry`, in attachment order.
pub fn attached_knowledge(registry: &ToolRegistry) -> Vec<KnowledgeHandle> {
    let Some(attached) = registry.state::<Arc<Attached>>() else {
        return Vec::new();
    };
    let bases = attached.bases.lock().unwrap_or_else(|p| p.into_inner());
    bases
        .iter()
        .map(|(id, kb)| KnowledgeHandle {
            id: *id,
            name: kb.name().to_owned(),
            registry: registry.downgrade(),
        })
        .collect()
}

/// One attachment of a knowledge base to a registry, returned by [`attach_knowledge`].
#[derive(Debug, Clone)]
pub struct KnowledgeHandle {
    id: u64,
    name: String,
    registry: WeakToolRegistry,
}

impl KnowledgeHandle {
    /// The knowledge base's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Detaches it from the registry it was attached to (see [`detach_knowledge`]).
    pub fn detach(&self) -> bool {
        self.registry
            .upgrade()
            .is_some_and(|registry| detach_knowledge(&registry, self))
    }
}
