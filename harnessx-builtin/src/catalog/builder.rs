//! `.builtin(name)` on the agent builder: the same names and options as
//! [`load_builtin`](super::BuiltinExt::load_builtin), checked when called and registered when the
//! agent is built.

pub use imp::{BuiltinBuilderExt, BuiltinCapability};

mod imp {
    use std::borrow::Cow;

    use harnessx::agent::{AgentBuilder, Capability, CapabilityError};
    use harnessx::{RegistryError, ToolRegistry};
    use serde_json::Value;

    use crate::catalog::Builtin;

    /// Loading built-ins by name on the agent builder (the spec's `Agent(tools=["web"])`).
    ///
    /// The name and options are checked when `.builtin(..)` is called, so a mistake fails at the
    /// line that made it; the tools are registered when the agent is built, after its sandbox is
    /// bound (so `run_bash` and the file tools see it). Registration errors (a duplicate name, a
    /// memory database that cannot be opened) surface from `build()`.
    ///
    /// ```
    /// use harnessx::Agent;
    /// use harnessx::model::TestModel;
    /// use harnessx_builtin::catalog::BuiltinBuilderExt;
    ///
    /// let agent = Agent::builder()
    ///     .model(TestModel::new())
    ///     .builtin("fetch_url")?
    ///     .builtin_with("memory", serde_json::json!({"include": ["save_memory"]}))?
    ///     .build()
    ///     .unwrap();
    /// assert!(agent.tools().contains("fetch_url"));
    /// assert!(agent.tools().contains("save_memory"));
    /// # Ok::<(), harnessx::RegistryError>(())
    /// ```
    pub trait BuiltinBuilderExt: Sized {
        /// Adds the built-in tool or bundle `name` with default options.
        fn builtin(self, name: &str) -> Result<Self, RegistryError> {
            self.builtin_with(name, Value::Null)
        }

        /// Adds the built-in tool or bundle `name` with `options` (a JSON object of the
        /// bundle helper's options, or `null`).
        fn builtin_with(self, name: &str, options: Value) -> Result<Self, RegistryError>;
    }

    impl BuiltinBuilderExt for AgentBuilder {
        fn builtin_with(self, name: &str, options: Value) -> Result<Self, RegistryError> {
            Builtin::parse(name, options.clone())?;
            Ok(self.capability(BuiltinCapability::new(name, options)))
        }
    }

    /// A built-in tool or bundle as an agent [`Capability`]: its name and options are checked
    /// and its tools registered when the agent is built (a mistake fails `build` with
    /// [`AgentError::Registry`](harnessx::AgentError::Registry)).
    /// [`BuiltinBuilderExt::builtin_with`] checks them at once as well.
    ///
    /// ```
    /// use harnessx::Agent;
    /// use harnessx::model::TestModel;
    /// use harnessx_builtin::catalog::BuiltinCapability;
    ///
    /// let agent = Agent::builder()
    ///     .model(TestModel::new())
    ///     .capability(BuiltinCapability::new("web", serde_json::Value::Null))
    ///     .build()?;
    /// assert!(agent.tools().contains("fetch_url"));
    /// # Ok::<(), harnessx::AgentError>(())
    /// ```
    #[derive(Debug, Clone)]
    pub struct BuiltinCapability {
        name: String,
        options: Value,
    }

    impl BuiltinCapability {
        /// The built-in tool or bundle `name` with `options` (a JSON object, or `null`).
        pub fn new(name: impl Into<String>, options: Value) -> Self {
            Self {
                name: name.into(),
                options,
            }
        }
    }

    impl Capability for BuiltinCapability {
        fn name(&self) -> Cow<'_, str> {
            format!("built-in `{}`", self.name).into()
        }

        fn register(&self, registry: &ToolRegistry) -> Result<(), CapabilityError> {
            Builtin::parse(&self.name, self.options.clone())?.register(registry)?;
            Ok(())
        }
    }
}
