//! Agent integration: `Agent::builder().knowledge(kb)`, `agent.attach_knowledge(kb)` and
//! `agent.detach_knowledge(&handle)`.
//!
//! Compiled once `harnessx::agent` is merged: the lead adds `mod agent;` in `knowledge.rs`.

use std::sync::Arc;

use super::{
    KnowledgeBase, KnowledgeHandle, attach_knowledge_arc, attached_knowledge, detach_knowledge,
};
use crate::agent::{Agent, AgentBuilder};
use crate::error::RegistryError;

impl AgentBuilder {
    /// Attaches a knowledge base: the agent gets `knowledge_search` (read-only, never asks).
    pub fn knowledge(self, knowledge_base: impl KnowledgeBase) -> Self {
        let knowledge_base: Arc<dyn KnowledgeBase> = Arc::new(knowledge_base);
        self.defer(move |registry| attach_knowledge_arc(registry, knowledge_base).map(drop))
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

    /// The attached knowledge bases (including those given to the builder).
    pub fn knowledge(&self) -> Vec<KnowledgeHandle> {
        attached_knowledge(self.tools())
    }
}
