//! What is checked when a server starts, beyond the file's own shape: every agent's built-in
//! tools are built (a `base_path` that does not exist is found here, not by the first run), its
//! model's key is in the environment, and its script calls only tools it has. What works but is
//! most likely a mistake is a warning naming its line.

use std::collections::BTreeSet;

use harnessx::ToolRegistry;
use harnessx_builtin::ask_user::ASK_USER;
use harnessx_builtin::catalog::{BUNDLE_TOOLS, Builtin};
use serde_json::Value;

use super::{AgentConfig, BuiltinConfig, Config};
use crate::agents::model::{missing_key, model_for, process_env};
use crate::error::ConfigError;

/// The tool a knowledge base attached from the file adds.
const KNOWLEDGE_SEARCH: &str = "knowledge_search";

impl Config {
    /// Checks what a server needs from the machine, with the process environment: see
    /// [`check_start_with`](Self::check_start_with).
    pub fn check_start(&self) -> Result<Vec<String>, ConfigError> {
        self.check_start_with(&process_env)
    }

    /// Checks what a server needs from the machine and returns the warnings, each naming its
    /// line: every agent's built-in tools are built (a missing `base_path` folder is an error),
    /// a `provider:model` finds its key in `env` (an error naming the line that chose the
    /// provider), and a script calls only tools its agent has (a warning). A file with no
    /// agents, and file tools without `base_path`, are warnings too.
    ///
    /// ```
    /// use harnessx_server::Config;
    /// let config = Config::parse("[agents.a]\nmodel = \"openai:gpt-4o\"\n")?;
    /// let err = config.check_start_with(&|_| None).unwrap_err();
    /// assert!(err.to_string().starts_with("line 2: `agents.a.model`: model = \"openai:gpt-4o\" needs OPENAI_API_KEY"));
    /// let warnings = Config::parse("")?.check_start_with(&|_| None)?;
    /// assert!(warnings[0].starts_with("the configuration defines no agents"));
    /// # Ok::<(), harnessx_server::ConfigError>(())
    /// ```
    pub fn check_start_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<String>, ConfigError> {
        let mut warnings = Vec::new();
        if self.agents.is_empty() {
            warnings.push(self.located(
                None,
                "the configuration defines no agents ([agents.NAME] tables); only agents already \
                 stored in the database, or added with POST /v2/agents or the console, can run"
                    .into(),
            ));
        }
        for (name, agent) in &self.agents {
            self.check_agent(name, agent, env, &mut warnings)
                .map_err(|e| match &self.path {
                    Some(path) => e.in_file(path),
                    None => e,
                })?;
        }
        Ok(warnings)
    }

    /// `message` as the file, the line and the key name it (`harnessx.toml: line 4: ...`).
    fn located(&self, at: Option<(usize, &str)>, message: String) -> String {
        let place = match at {
            Some((line, key)) => format!("line {line}: `{key}`: {message}"),
            None => message,
        };
        match &self.path {
            Some(path) => format!("{}: {place}", path.display()),
            None => place,
        }
    }

    fn check_agent(
        &self,
        name: &str,
        agent: &AgentConfig,
        env: &dyn Fn(&str) -> Option<String>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ConfigError> {
        let key = |k: &str| format!("agents.{name}.{k}");
        let model = agent.model.get_ref();
        if model != "script" {
            let invalid = |message| ConfigError::Invalid {
                line: self.line(agent.model.span().start),
                key: key("model"),
                message,
            };
            if let Some((key_var, url_var)) = missing_key(model, env) {
                return Err(invalid(format!(
                    "model = \"{model}\" needs {key_var}: set it to your API key in the server's \
                     environment, or set {url_var} to a server that needs no key"
                )));
            }
            model_for(model, &[], env).map_err(invalid)?;
        }

        let mut tools: BTreeSet<String> = BTreeSet::new();
        if agent.ask_user != Some(false) {
            tools.insert(ASK_USER.to_owned());
        }
        let registry = ToolRegistry::new();
        for (i, builtin) in agent.builtins.iter().enumerate() {
            let b = builtin.get_ref();
            let at = (
                self.line(builtin.span().start),
                format!("{}[{i}]", key("builtins")),
            );
            let options = b.options.clone().unwrap_or(Value::Null);
            let names = Builtin::parse(&b.name, options)
                .and_then(|load| load.register(&registry))
                .map_err(|e| ConfigError::Invalid {
                    line: at.0,
                    key: at.1.clone(),
                    message: e.to_string(),
                })?;
            tools.extend(names);
            if unconfined_file_tools(b) {
                warnings.push(self.located(
                    Some((at.0, &at.1)),
                    format!(
                        "the file tools of `{}` have no `base_path`, so they read and write \
                         anywhere the server's user may; give `base_path` to keep them in one \
                         folder",
                        b.name
                    ),
                ));
            }
        }
        if !agent.knowledge.is_empty() {
            tools.insert(KNOWLEDGE_SEARCH.to_owned());
        }
        // A connector's tools are known once it is reached; any `mcp_<connector>_...` name may
        // be one of them.
        let connector_prefixes: Vec<String> = agent
            .connectors
            .iter()
            .map(|c| format!("mcp_{}_", c.get_ref().name))
            .collect();

        for (i, turn) in agent.script.iter().enumerate() {
            let at = (
                self.line(turn.span().start),
                format!("{}[{i}]", key("script")),
            );
            let t = turn.get_ref();
            if let Some(call) = &t.call
                && !tools.contains(call)
                && !connector_prefixes.iter().any(|p| call.starts_with(p))
            {
                let has: Vec<&str> = tools.iter().map(String::as_str).collect();
                warnings.push(self.located(
                    Some((at.0, &at.1)),
                    format!(
                        "calls `{call}`, which agent `{name}` does not have (its tools: {}); the \
                         run gets an unknown-tool error at this turn",
                        if has.is_empty() {
                            "none".to_owned()
                        } else {
                            has.join(", ")
                        }
                    ),
                ));
            }
            if t.ask.is_some() && agent.ask_user == Some(false) {
                warnings.push(self.located(
                    Some((at.0, &at.1)),
                    format!(
                        "asks the user, but `ask_user = false` takes `{ASK_USER}` away from agent \
                         `{name}`; the run gets an unknown-tool error at this turn"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Whether a built-in loads file tools without `base_path` (host filesystem access).
fn unconfined_file_tools(b: &BuiltinConfig) -> bool {
    let file_tools = BUNDLE_TOOLS
        .iter()
        .find(|(bundle, _)| *bundle == "filesystem")
        .map_or(&[][..], |(_, tools)| *tools);
    let options = b.options.as_ref().unwrap_or(&Value::Null);
    let lacks_base = |o: &Value| o.get("base_path").is_none_or(Value::is_null);
    match b.name.as_str() {
        "filesystem" => lacks_base(options),
        "all" => match options.get("filesystem") {
            Some(Value::Bool(false)) => false,
            Some(fs) => lacks_base(fs),
            None => true,
        },
        tool => file_tools.contains(&tool) && lacks_base(options),
    }
}
