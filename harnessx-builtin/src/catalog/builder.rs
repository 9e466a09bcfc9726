//! `.builtin(name)` on the agent builder: the same names and options as
//! [`load_builtin`](super::BuiltinExt::load_builtin), checked when called and registered when the
//! agent is built.

pub use imp::BuiltinBuilderExt;

mod imp {
    use harnessx::RegistryError;
    use harnessx::agent::AgentBuilder;
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
            let load = Builtin::parse(name, options)?;
            Ok(self.defer(move |registry| load.register(registry).map(drop)))
        }
    }
}
