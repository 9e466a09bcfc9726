//! Agent integration: `agent.attach_okf(bundle)`, `agent.detach_okf(&handle)` and
//! `agent.okf_bundles()`. (`Agent::builder().knowledge(bundle)` goes through
//! [`IntoKnowledge`](crate::knowledge::IntoKnowledge).)

use super::{OkfBundle, OkfHandle, attach_okf, attached_okf, detach_okf};
use crate::agent::Agent;
use crate::error::RegistryError;
use crate::knowledge::IntoKnowledge;
use crate::registry::ToolRegistry;

impl IntoKnowledge for OkfBundle {
    fn attach_to(self, registry: &ToolRegistry) -> Result<(), RegistryError> {
        attach_okf(registry, self).map(drop)
    }
}

impl Agent {
    /// Attaches an OKF bundle; the first one adds `search_concepts`, `read_concept` and
    /// `get_neighbors`.
    pub fn attach_okf(&self, bundle: OkfBundle) -> Result<OkfHandle, RegistryError> {
        attach_okf(self.tools(), bundle)
    }

    /// Detaches an OKF bundle; detaching the last one removes the three tools.
    pub fn detach_okf(&self, handle: &OkfHandle) -> bool {
        detach_okf(self.tools(), handle)
    }

    /// The attached OKF bundles (including those given to the builder).
    pub fn okf_bundles(&self) -> Vec<OkfHandle> {
        attached_okf(self.tools())
    }
}
