//! Resolving a name and its JSON options into a checked registration plan for one bundle (or
//! all of them), and carrying it out.

use harnessx::schema::json_kind;
use harnessx::{RegistryError, ToolRegistry};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{BUNDLE_TOOLS, BUNDLES, builtin_names};

/// A checked registration: the bundle and its parsed options.
#[derive(Debug)]
pub(crate) enum Plan {
    #[cfg(feature = "fs")]
    Filesystem(crate::fs::FilesystemOptions),
    #[cfg(feature = "bash")]
    Bash(crate::bash::BashOptions),
    #[cfg(feature = "web")]
    Web(crate::web::WebOptions),
    #[cfg(feature = "memory")]
    Memory(crate::memory::MemoryOptions),
    Planning(harnessx::planning::PlanningOptions),
    /// `all`: each bundle's plan in bundle order.
    All(Vec<Plan>),
}

impl Plan {
    pub(crate) fn parse(name: &str, options: Value) -> Result<Self, RegistryError> {
        let mut object = options_object(name, options)?;
        if name == "all" {
            return Self::parse_all(object);
        }
        let bundle = if BUNDLES.contains(&name) {
            name
        } else {
            let bundle = bundle_of(name).ok_or_else(|| unknown_name(name))?;
            // A single tool is its bundle with `include: [name]`.
            if let Some(key) = ["include", "exclude"]
                .into_iter()
                .find(|k| object.contains_key(*k))
            {
                return Err(RegistryError::Config(format!(
                    "options for the single tool `{name}` cannot contain `{key}`; load the bundle `{bundle}` to choose among its tools"
                )));
            }
            object.insert("include".to_owned(), Value::from(vec![name]));
            bundle
        };
        Self::parse_bundle(bundle, name, object)
    }

    #[cfg_attr(
        not(any(feature = "web", feature = "memory")),
        allow(
            unused_variables,
            reason = "no bundle that takes options is compiled in"
        )
    )]
    fn parse_bundle(
        bundle: &str,
        loaded_as: &str,
        object: Map<String, Value>,
    ) -> Result<Self, RegistryError> {
        match bundle {
            #[cfg(feature = "fs")]
            "filesystem" => Ok(Self::Filesystem(parse_options(loaded_as, object)?)),
            #[cfg(feature = "bash")]
            "bash" => Ok(Self::Bash(parse_options(loaded_as, object)?)),
            #[cfg(feature = "web")]
            "web" => Ok(Self::Web(parse_options(loaded_as, object)?)),
            #[cfg(feature = "memory")]
            "memory" => Ok(Self::Memory(parse_options(loaded_as, object)?)),
            "planning" => {
                let options: PlanningJson = parse_options(loaded_as, object)?;
                Ok(Self::Planning(harnessx::planning::PlanningOptions {
                    include: options.include,
                    exclude: options.exclude,
                    permission: options.permission,
                    replace: options.replace,
                    ..Default::default()
                }))
            }
            other => Err(unavailable(other, loaded_as)),
        }
    }

    fn parse_all(object: Map<String, Value>) -> Result<Self, RegistryError> {
        let bundles: Vec<&str> = BUNDLE_TOOLS.iter().map(|(b, _)| *b).collect();
        if let Some(key) = object.keys().find(|k| !bundles.contains(&k.as_str())) {
            return Err(RegistryError::Config(format!(
                "options for `all` take one entry per bundle ({}), not `{key}`; put a bundle's options under its name",
                bundles.join(", ")
            )));
        }
        let mut plans = Vec::new();
        for bundle in bundles {
            let given = object.contains_key(bundle);
            let options = match object.get(bundle) {
                Some(Value::Bool(false)) => continue,
                Some(v @ (Value::Object(_) | Value::Null)) => v.clone(),
                None => Value::Null,
                Some(other) => {
                    return Err(RegistryError::Config(format!(
                        "`all` entry `{bundle}` must be an options object, null for the defaults, or false to leave the bundle out, not {}",
                        json_kind(other)
                    )));
                }
            };
            match Self::parse_bundle(bundle, bundle, options_object(bundle, options)?) {
                Ok(plan) => plans.push(plan),
                // Defaults always parse, so this bundle is compiled out (a cargo feature is
                // off): `all` means all that this build has, unless the bundle was configured.
                Err(_) if !given => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Self::All(plans))
    }

    pub(crate) fn register(self, registry: &ToolRegistry) -> Result<Vec<String>, RegistryError> {
        match self {
            #[cfg(feature = "fs")]
            Self::Filesystem(options) => crate::fs::register_filesystem_tools(registry, options),
            #[cfg(feature = "bash")]
            Self::Bash(options) => crate::bash::register_bash_tools(registry, options),
            #[cfg(feature = "web")]
            Self::Web(options) => crate::web::register_web_tools(registry, options),
            #[cfg(feature = "memory")]
            Self::Memory(options) => crate::memory::register_memory_tools(registry, options),
            Self::Planning(options) => {
                harnessx::planning::register_planning_tools(registry, options)
            }
            Self::All(plans) => {
                let mut names = Vec::new();
                for plan in plans {
                    names.extend(plan.register(registry)?);
                }
                Ok(names)
            }
        }
    }
}

/// The planning bundle's options as JSON (its options struct also carries a live list, which
/// cannot come from JSON).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
struct PlanningJson {
    include: Option<Vec<String>>,
    exclude: Vec<String>,
    permission: Option<harnessx::PermissionLevel>,
    replace: bool,
}

/// The bundle a single tool belongs to.
fn bundle_of(tool: &str) -> Option<&'static str> {
    BUNDLE_TOOLS
        .iter()
        .find(|(_, tools)| tools.contains(&tool))
        .map(|(bundle, _)| *bundle)
}

/// Options as a JSON object: `null` is empty, anything else but an object is an error.
fn options_object(name: &str, options: Value) -> Result<Map<String, Value>, RegistryError> {
    match options {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        other => Err(RegistryError::Config(format!(
            "options for built-in `{name}` must be a JSON object (or null for the defaults), not {}",
            json_kind(&other)
        ))),
    }
}

#[cfg_attr(
    not(any(feature = "web", feature = "memory")),
    allow(dead_code, reason = "no bundle that takes options is compiled in")
)]
fn parse_options<T: DeserializeOwned>(
    name: &str,
    object: Map<String, Value>,
) -> Result<T, RegistryError> {
    serde_json::from_value(Value::Object(object))
        .map_err(|e| RegistryError::Config(format!("invalid options for built-in `{name}`: {e}")))
}

fn unknown_name(name: &str) -> RegistryError {
    let squash = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    let names = builtin_names();
    let hint = names
        .iter()
        .find(|n| squash(n) == squash(name))
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    let tools: Vec<&str> = BUNDLE_TOOLS
        .iter()
        .flat_map(|(_, t)| t.iter().copied())
        .collect();
    RegistryError::Config(format!(
        "no built-in tool or bundle is named `{name}`{hint}; tools: {}; bundles: {}",
        tools.join(", "),
        BUNDLES.join(", ")
    ))
}

/// A known bundle this build cannot load: its cargo feature is off (or, before the merge, its
/// code is not in this branch).
fn unavailable(bundle: &str, loaded_as: &str) -> RegistryError {
    let feature = match bundle {
        "filesystem" => "fs",
        other => other,
    };
    let what = if bundle == loaded_as {
        format!("the bundle `{bundle}`")
    } else {
        format!("`{loaded_as}` (bundle `{bundle}`)")
    };
    RegistryError::Config(format!(
        "{what} is not available in this build of harnessx-builtin; enable its cargo feature `{feature}`"
    ))
}
