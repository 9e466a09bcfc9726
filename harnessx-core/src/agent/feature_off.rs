//! Builder methods of integrations whose feature is off.
//!
//! `knowledge`, `okf`, `skills` and `mcp` are opt-in features. Without these stand-ins, calling
//! `.skills("skills/")` with the feature off is rustc's "no method named `skills` found", which
//! does not say that a feature exists. Each stand-in takes an argument bound by a trait that no
//! type implements (nor can: it is sealed), so a call never compiles, and the trait's diagnostic
//! names the feature to turn on. They are hidden from the documentation, where the real methods
//! are shown with every feature on.
//!
//! The three are written out rather than made by a `macro_rules!`: rustc's error points into the
//! stand-in's source, and from a macro it would show `$method`, `$trait` and the whole invocation.

use super::AgentBuilder;

mod sealed {
    /// Implemented by no type, so the traits below cannot be implemented either.
    pub trait Never {}
}

/// What `AgentBuilder::knowledge` takes when the `knowledge` feature is off: nothing.
#[cfg(not(feature = "knowledge"))]
#[diagnostic::on_unimplemented(
    message = "`AgentBuilder::knowledge` needs harnessx's `knowledge` feature, which is off",
    label = "knowledge bases need the `knowledge` feature",
    note = "turn it on in Cargo.toml: harnessx = {{ version = \"0.1\", features = [\"knowledge\"] }} (\"okf\" for OKF bundles)"
)]
pub trait KnowledgeFeatureOff: sealed::Never {}

#[cfg(not(feature = "knowledge"))]
impl AgentBuilder {
    /// Stands in for the method of the `knowledge` feature; a call does not compile.
    #[doc(hidden)]
    pub fn knowledge(self, _knowledge: impl KnowledgeFeatureOff) -> Self {
        self
    }
}

/// What `AgentBuilder::skills` takes when the `skills` feature is off: nothing.
#[cfg(not(feature = "skills"))]
#[diagnostic::on_unimplemented(
    message = "`AgentBuilder::skills` needs harnessx's `skills` feature, which is off",
    label = "skills need the `skills` feature",
    note = "turn it on in Cargo.toml: harnessx = {{ version = \"0.1\", features = [\"skills\"] }}"
)]
pub trait SkillsFeatureOff: sealed::Never {}

#[cfg(not(feature = "skills"))]
impl AgentBuilder {
    /// Stands in for the method of the `skills` feature; a call does not compile.
    #[doc(hidden)]
    pub fn skills(self, _skills: impl SkillsFeatureOff) -> Self {
        self
    }
}

/// What `AgentBuilder::mcp_server` takes when the `mcp` feature is off: nothing.
#[cfg(not(feature = "mcp"))]
#[diagnostic::on_unimplemented(
    message = "`AgentBuilder::mcp_server` needs harnessx's `mcp` feature, which is off",
    label = "MCP servers need the `mcp` feature",
    note = "turn it on in Cargo.toml: harnessx = {{ version = \"0.1\", features = [\"mcp\"] }}"
)]
pub trait McpFeatureOff: sealed::Never {}

#[cfg(not(feature = "mcp"))]
impl AgentBuilder {
    /// Stands in for the method of the `mcp` feature; a call does not compile.
    #[doc(hidden)]
    pub fn mcp_server(self, _server: impl McpFeatureOff) -> Self {
        self
    }
}
