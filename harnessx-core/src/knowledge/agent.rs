//! Agent integration: `Agent::builder().knowledge(kb)`, `agent.attach_knowledge(kb)` and
//! `agent.detach_knowledge(&handle)`.

use std::sync::Arc;

use super::{
    KnowledgeBase, KnowledgeHandle, attach_knowledge_arc, attached_knowledge, detach_knowledge,
    detach_knowledge_named,
};
use crate::agent::{Agent, AgentBuilder};
use crate::error::RegistryError;
use crate::registry::ToolRegistry;

/// Knowledge an agent can be given with
/// [`AgentBuilder::knowledge`](crate::AgentBuilder::knowledge): any [`KnowledgeBase`]
/// (searched by `knowledge_search`) or, with the `okf` feature, an OKF bundle
/// (`knowledge::okf::OkfBundle`, read with `search_concepts`, `read_concept` and
/// `get_neighbors`).
pub trait IntoKnowledge: Send + 'static {
    /// Attaches it to `registry`, registering its tools with the first attachment.
    fn attach_to(self, registry: &ToolRegistry) -> Result<(), RegistryError>;
}

impl<K: KnowledgeBase> IntoKnowledge for K {
    fn attach_to(self, registry: &ToolRegistry) -> Result<(), RegistryError> {
        attach_knowledge_arc(registry, Arc::new(self)).map(drop)
    }
}

impl AgentBuilder {
    /// Attaches knowledge: a [`KnowledgeBase`] gives the agent `knowledge_search`; an OKF
    /// bundle gives it `search_concepts`, `read_concept` and `get_neighbors`. All are read-only
    /// and never ask. Feature `knowledge` (`okf` for bundles); neither is on by default.
    pub fn knowledge(self, knowledge: impl IntoKnowledge) -> Self {
        self.defer(move |registry| knowledge.attach_to(registry))
    }
}

impl Agent {
    /// Attaches a knowledge base; the first one adds `knowledge_search`.
    pub fn attach_knowledge(
        &self,
        knowledge_base: impl KnowledgeBase,
    ) -> Result<KnowledgeHandle, RegistryError> {
        attach_knowledge_arc(self.tools(), Arc::new(knowledge_base))
    }

    /// Detaches a knowledge base; detaching the last one removes `knowledge_search`.
    pub fn detach_knowledge(&self, handle: &KnowledgeHandle) -> bool {
        detach_knowledge(self.tools(), handle)
    }

    /// Detaches every knowledge base named `name`; detaching the last one removes
    /// `knowledge_search`. Returns how many were detached.
    ///
    /// ```
    /// use harnessx::{Agent, TestModel};
    /// use harnessx::knowledge::SqliteKnowledgeBase;
    ///
    /// let agent = Agent::builder()
    ///     .model(TestModel::new())
    ///     .knowledge(SqliteKnowledgeBase::in_memory()?.named("handbook"))
    ///     .build()?;
    /// assert!(agent.tools().contains("knowledge_search"));
    /// assert_eq!(agent.detach_knowledge_named("handbook"), 1);
    /// assert!(!agent.tools().contains("knowledge_search"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn detach_knowledge_named(&self, name: &str) -> usize {
        detach_knowledge_named(self.tools(), name)
    }

    /// The attached knowledge bases (including those given to the builder).
    pub fn knowledge(&self) -> Vec<KnowledgeHandle> {
        attached_knowledge(self.tools())
    }
}
