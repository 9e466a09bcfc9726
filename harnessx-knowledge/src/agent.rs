//! Knowledge as an agent [`Capability`]: `Agent::builder().capability(kb)` for a
//! [`SqliteKnowledgeBase`], [`Knowledge::new`] for a [`KnowledgeBase`] of your own.

use std::borrow::Cow;
use std::sync::Arc;

use harnessx_core::agent::{Capability, CapabilityError};
use harnessx_core::registry::ToolRegistry;

use super::{KnowledgeBase, SqliteKnowledgeBase, attach_knowledge_arc};

/// Any [`KnowledgeBase`] as a [`Capability`]: attached when the agent is built, adding
/// `knowledge_search` (read-only, never asks) with the first knowledge base. A
/// [`SqliteKnowledgeBase`] is a capability itself; this wraps the others.
///
/// ```
/// use harnessx::{Agent, TestModel};
/// use harnessx::knowledge::{Knowledge, SqliteKnowledgeBase, attached_knowledge, detach_knowledge_named};
///
/// let handbook = SqliteKnowledgeBase::in_memory()?.named("handbook");
/// let agent = Agent::builder()
///     .model(TestModel::new())
///     .capability(Knowledge::new(handbook))
///     .build()?;
/// assert!(agent.tools().contains("knowledge_search"));
/// assert_eq!(attached_knowledge(agent.tools())[0].name(), "handbook");
/// // Detaching the last knowledge base removes the tool.
/// assert_eq!(detach_knowledge_named(agent.tools(), "handbook"), 1);
/// assert!(!agent.tools().contains("knowledge_search"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Knowledge(Arc<dyn KnowledgeBase>);

impl Knowledge {
    /// Wraps a knowledge base.
    pub fn new(knowledge_base: impl KnowledgeBase) -> Self {
        Self(Arc::new(knowledge_base))
    }

    /// Wraps a knowledge base already shared (the same base can serve several agents).
    pub fn from_arc(knowledge_base: Arc<dyn KnowledgeBase>) -> Self {
        Self(knowledge_base)
    }
}

impl std::fmt::Debug for Knowledge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Knowledge").field(&self.0.name()).finish()
    }
}

impl Capability for Knowledge {
    fn name(&self) -> Cow<'_, str> {
        format!("knowledge base `{}`", self.0.name()).into()
    }

    fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
        attach_knowledge_arc(registry, Arc::clone(&self.0))?;
        Ok(())
    }
}

impl Capability for SqliteKnowledgeBase {
    fn name(&self) -> Cow<'_, str> {
        format!("knowledge base `{}`", KnowledgeBase::name(self)).into()
    }

    fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
        attach_knowledge_arc(registry, Arc::new(self.clone()))?;
        Ok(())
    }
}
