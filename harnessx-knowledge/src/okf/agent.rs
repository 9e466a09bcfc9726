//! An OKF bundle as an agent [`Capability`]: `Agent::builder().capability(bundle)`.

use std::borrow::Cow;

use harnessx_core::agent::{Capability, CapabilityError};
use harnessx_core::registry::ToolRegistry;

use super::{OkfBundle, attach_okf};

/// Attached when the agent is built; the first bundle adds `search_concepts`, `read_concept`
/// and `get_neighbors` (read-only, never ask).
impl Capability for OkfBundle {
    fn name(&self) -> Cow<'_, str> {
        format!("OKF bundle `{}`", self.name()).into()
    }

    fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
        attach_okf(registry, self.clone())?;
        Ok(())
    }
}
