//! What every bundle helper shares: choosing tools with `include`/`exclude`, and registering the
//! chosen definitions all or nothing.

use harnessx::{PermissionLevel, RegistryError, ToolDefinition, ToolOptions, ToolRegistry};

use crate::annotations::with_builtin_hints;

/// The bundle's tools that `include` and `exclude` select, in bundle order. Names the bundle
/// does not have are an error that names every one of them and lists the bundle's tools.
pub(crate) fn select_tools(
    bundle: &str,
    tools: &[&'static str],
    include: Option<&[String]>,
    exclude: &[String],
) -> Result<Vec<&'static str>, RegistryError> {
    let check = |filter: &str, names: &[String]| {
        let unknown: Vec<String> = names
            .iter()
            .filter(|n| !tools.contains(&n.as_str()))
            .map(|n| format!("`{n}`"))
            .collect();
        match unknown.as_slice() {
            [] => Ok(()),
            [one] => Err(RegistryError::Config(format!(
                "`{filter}` names {one}, which is not a tool of the {bundle} bundle; its tools are: {}",
                tools.join(", ")
            ))),
            many => Err(RegistryError::Config(format!(
                "`{filter}` names {}, which are not tools of the {bundle} bundle; its tools are: {}",
                many.join(", "),
                tools.join(", ")
            ))),
        }
    };
    if let Some(include) = include {
        check("include", include)?;
    }
    check("exclude", exclude)?;
    Ok(tools
        .iter()
        .copied()
        .filter(|t| include.is_none_or(|inc| inc.iter().any(|n| n == t)))
        .filter(|t| !exclude.iter().any(|n| n == t))
        .collect())
}

/// Registers `definitions` with the bundle's `permission` and `replace`, and the hints of
/// [`BUILTIN_ANNOTATIONS`](crate::annotations::BUILTIN_ANNOTATIONS), and returns their names.
/// Without `replace`, a name that is already taken fails before anything is registered.
pub(crate) fn register_selected(
    registry: &ToolRegistry,
    definitions: Vec<ToolDefinition>,
    permission: Option<PermissionLevel>,
    replace: bool,
) -> Result<Vec<String>, RegistryError> {
    if !replace && let Some(taken) = definitions.iter().find(|d| registry.contains(&d.name)) {
        return Err(RegistryError::Duplicate(taken.name.clone()));
    }
    let mut options = ToolOptions::new().replace(replace);
    if let Some(level) = permission {
        options = options.permission(level);
    }
    definitions
        .into_iter()
        .map(|mut def| {
            def.annotations = with_builtin_hints(&def.name, def.annotations);
            registry
                .register_tool_with(def, options.clone())
                .map(|d| d.name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["a", "b", "c"];

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn include_and_exclude_keep_bundle_order() {
        assert_eq!(select_tools("x", &TOOLS, None, &[]).unwrap(), TOOLS);
        assert_eq!(
            select_tools("x", &TOOLS, Some(&names(&["c", "a"])), &[]).unwrap(),
            ["a", "c"]
        );
        assert_eq!(
            select_tools("x", &TOOLS, None, &names(&["b"])).unwrap(),
            ["a", "c"]
        );
    }

    #[test]
    fn unknown_names_list_the_bundle() {
        let err = select_tools("x", &TOOLS, Some(&names(&["d"])), &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`include` names `d`, which is not a tool of the x bundle; its tools are: a, b, c"
        );
        let err = select_tools("x", &TOOLS, None, &names(&["e"])).unwrap_err();
        assert!(err.to_string().starts_with("`exclude` names `e`"));
        let err = select_tools("x", &TOOLS, Some(&names(&["d", "a", "e"])), &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`include` names `d`, `e`, which are not tools of the x bundle; its tools are: a, b, c"
        );
    }
}
