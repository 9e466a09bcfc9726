//! Loading built-ins by name: every tool and bundle name, options as JSON, and the errors that
//! list what exists.

#![allow(clippy::unwrap_used)]

use harnessx::{PermissionLevel, ToolCall, ToolRegistry};
use harnessx_builtin::catalog::{BUNDLE_TOOLS, BUNDLES, Builtin, BuiltinExt, builtin_names};
use serde_json::json;

const ALL_NAMES: &str = "tools: read_file, write_file, edit_file, delete, glob, grep, list_directory, generate_file, run_bash, fetch_url, save_memory, search_memories, list_memories, delete_memory, write_todos, read_todos; bundles: filesystem, bash, web, memory, planning, all";

#[test]
fn every_spec_name_is_known() {
    let names = builtin_names();
    for name in [
        "fetch_url",
        "save_memory",
        "search_memories",
        "list_memories",
        "delete_memory",
        "read_file",
        "write_file",
        "edit_file",
        "delete",
        "glob",
        "grep",
        "list_directory",
        "generate_file",
        "run_bash",
        "write_todos",
        "read_todos",
        "filesystem",
        "bash",
        "web",
        "memory",
        "planning",
        "all",
    ] {
        assert!(names.contains(&name), "{name}");
    }
    assert_eq!(names.len(), 16 + BUNDLES.len());
}

#[test]
fn a_bundle_loads_all_its_tools_and_returns_their_names() {
    let registry = ToolRegistry::new();
    assert_eq!(
        registry.load_builtin("web", json!(null)).unwrap(),
        ["fetch_url"]
    );
    let names = registry.load_builtin("memory", json!({})).unwrap();
    assert_eq!(
        names,
        [
            "save_memory",
            "search_memories",
            "list_memories",
            "delete_memory"
        ]
    );
    assert_eq!(
        registry.list_tools(),
        [
            "fetch_url",
            "save_memory",
            "search_memories",
            "list_memories",
            "delete_memory"
        ]
    );
}

#[test]
fn a_single_tool_is_its_bundle_with_include_and_takes_the_bundle_options() {
    let registry = ToolRegistry::new();
    let names = registry
        .load_builtin(
            "fetch_url",
            json!({"max_length": 5000, "permission": "ask"}),
        )
        .unwrap();
    assert_eq!(names, ["fetch_url"]);
    let def = registry.get_tool("fetch_url").unwrap();
    assert_eq!(def.permission, Some(PermissionLevel::Ask));
    // A configured max_length hides the limit from the model, as with the helper.
    assert_eq!(def.input_schema["properties"].as_object().unwrap().len(), 1);

    assert_eq!(
        registry
            .load_builtin("search_memories", json!(null))
            .unwrap(),
        ["search_memories"]
    );
    assert!(!registry.contains("save_memory"));

    let err = registry
        .load_builtin("save_memory", json!({"include": ["list_memories"]}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "options for the single tool `save_memory` cannot contain `include`; load the bundle `memory` to choose among its tools"
    );
}

#[test]
fn unknown_names_list_every_valid_name() {
    let registry = ToolRegistry::new();
    let err = registry.load_builtin("browser", json!(null)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("no built-in tool or bundle is named `browser`; {ALL_NAMES}")
    );
    let near = registry.load_builtin("Fetch-URL", json!(null)).unwrap_err();
    assert_eq!(
        near.to_string(),
        format!(
            "no built-in tool or bundle is named `Fetch-URL` (did you mean `fetch_url`?); {ALL_NAMES}"
        )
    );
}

#[test]
fn unknown_filters_and_options_fail_listing_what_exists() {
    let registry = ToolRegistry::new();
    let filter = registry
        .load_builtin("memory", json!({"exclude": ["forget"]}))
        .unwrap_err();
    assert_eq!(
        filter.to_string(),
        "`exclude` names `forget`, which is not a tool of the memory bundle; its tools are: save_memory, search_memories, list_memories, delete_memory"
    );
    let key = registry
        .load_builtin("web", json!({"max_len": 10}))
        .unwrap_err();
    assert_eq!(
        key.to_string(),
        "invalid options for built-in `web`: unknown field `max_len`, expected one of `include`, `exclude`, `permission`, `replace`, `max_length`, `allow_private_networks`, `allow_hosts`, `user_agent`, `max_download_bytes`, `max_redirects`, `timeout_seconds`"
    );
    let store = registry
        .load_builtin("memory", json!({"store": "x"}))
        .unwrap_err();
    assert_eq!(
        store.to_string(),
        "invalid options for built-in `memory`: unknown field `store`, expected one of `include`, `exclude`, `permission`, `replace`, `path`, `limits`"
    );
    let typed = registry
        .load_builtin("web", json!({"max_length": "big"}))
        .unwrap_err();
    assert_eq!(
        typed.to_string(),
        "invalid options for built-in `web`: invalid type: string \"big\", expected usize"
    );
    let level = registry
        .load_builtin("web", json!({"permission": "sometimes"}))
        .unwrap_err();
    assert!(level.to_string().starts_with("invalid options for built-in `web`: unknown variant `sometimes`, expected one of `allow`, `ask`, `deny`"), "{level}");
    let not_object = registry
        .load_builtin("web", json!(["fetch_url"]))
        .unwrap_err();
    assert_eq!(
        not_object.to_string(),
        "options for built-in `web` must be a JSON object (or null for the defaults), not an array"
    );
    // Nothing was registered by the failed loads.
    assert!(registry.is_empty());
}

#[tokio::test]
async fn memory_tools_loaded_one_by_one_share_the_registry_store() {
    let registry = ToolRegistry::new();
    registry.load_builtin("save_memory", json!(null)).unwrap();
    registry.load_builtin("search_memories", json!({})).unwrap();
    let saved = registry
        .execute(
            &ToolCall::json(
                "c1",
                "save_memory",
                json!({"content": "The deploy key rotates on Mondays"}),
            ),
            None,
        )
        .await;
    assert_eq!(saved.content, "Saved memory 1.");
    let found = registry
        .execute(
            &ToolCall::json("c2", "search_memories", json!({"query": "deploy"})),
            None,
        )
        .await;
    assert!(!found.is_error, "{}", found.content);
    assert!(
        found.content.contains("The deploy key rotates on Mondays"),
        "{}",
        found.content
    );

    // Another registry has its own store.
    let other = ToolRegistry::new();
    other.load_builtin("search_memories", json!(null)).unwrap();
    let found = other
        .execute(
            &ToolCall::json("c3", "search_memories", json!({"query": "deploy"})),
            None,
        )
        .await;
    assert!(!found.content.contains("Mondays"), "{}", found.content);

    // Different limits cannot silently reuse the shared store.
    let err = registry
        .load_builtin("list_memories", json!({"limits": {"max_memories": 5}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "memory option `limits` differs from the limits of the in-memory store this registry's memory tools already share; pass the same limits, or choose another store with `store` or `path`"
    );
    assert!(!registry.contains("list_memories"));
}

#[test]
fn a_huge_web_timeout_is_refused_not_a_panic() {
    let registry = ToolRegistry::new();
    let err = registry
        .load_builtin("web", json!({"timeout_seconds": 1e300}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "web option `timeout_seconds` must be a positive number of seconds"
    );
    assert!(!registry.contains("fetch_url"));
    // The largest timeout a `Duration` holds still registers, with exactly that limit.
    registry
        .load_builtin("web", json!({"timeout_seconds": 1e19}))
        .unwrap();
    assert!(registry.get_tool("fetch_url").unwrap().timeout.is_some());
}

#[test]
fn all_takes_per_bundle_entries() {
    let registry = ToolRegistry::new();
    let names = registry
        .load_builtin(
            "all",
            json!({"web": {"max_length": 100}, "memory": {"include": ["save_memory"]}, "bash": false}),
        )
        .unwrap();
    assert!(names.contains(&"fetch_url".to_owned()));
    assert!(names.contains(&"save_memory".to_owned()));
    assert!(!names.contains(&"search_memories".to_owned()));
    assert!(!names.contains(&"run_bash".to_owned()));
    assert_eq!(names, registry.list_tools());

    let err = ToolRegistry::new()
        .load_builtin("all", json!({"browser": {}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "options for `all` take one entry per bundle (filesystem, bash, web, memory, planning), not `browser`; put a bundle's options under its name"
    );
    let err = ToolRegistry::new()
        .load_builtin("all", json!({"web": true}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`all` entry `web` must be an options object, null for the defaults, or false to leave the bundle out, not a boolean"
    );
    let err = ToolRegistry::new()
        .load_builtin("all", json!({"web": {"nope": 1}}))
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid options for built-in `web`: unknown field `nope`"),
        "{err}"
    );
}

#[test]
fn loading_twice_fails_unless_replace_is_set() {
    let registry = ToolRegistry::new();
    registry.load_builtin("web", json!(null)).unwrap();
    let err = registry.load_builtin("fetch_url", json!(null)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a tool named `fetch_url` is already registered; pass `replace(true)` to replace it deliberately"
    );
    assert_eq!(
        registry
            .load_builtin("fetch_url", json!({"replace": true}))
            .unwrap(),
        ["fetch_url"]
    );
}

#[test]
fn a_parsed_builtin_registers_later() {
    let load = Builtin::parse("memory", json!({"include": ["list_memories"]})).unwrap();
    assert_eq!(load.name(), "memory");
    let registry = ToolRegistry::new();
    assert_eq!(load.register(&registry).unwrap(), ["list_memories"]);
}

/// The catalog's table agrees with what each bundle actually registers.
#[test]
fn bundle_table_matches_registration() {
    for (bundle, tools) in BUNDLE_TOOLS {
        let registry = ToolRegistry::new();
        let names = registry.load_builtin(bundle, json!(null)).unwrap();
        assert_eq!(names, tools, "{bundle}");
    }
    let registry = ToolRegistry::new();
    let all = registry.load_builtin("all", json!(null)).unwrap();
    let expected: Vec<&str> = BUNDLE_TOOLS
        .iter()
        .flat_map(|(_, t)| t.iter().copied())
        .collect();
    assert_eq!(all, expected);
}

/// The bundles this crate had before the others merged (kept: a subset of the test above).
#[test]
fn bundle_table_matches_registration_for_web_and_memory() {
    for (bundle, tools) in BUNDLE_TOOLS
        .iter()
        .filter(|(b, _)| ["web", "memory"].contains(b))
    {
        let registry = ToolRegistry::new();
        assert_eq!(
            &registry.load_builtin(bundle, json!(null)).unwrap(),
            tools,
            "{bundle}"
        );
    }
}

#[test]
fn filesystem_tools_load_by_name_with_the_bundle_options() {
    let dir = tempfile::tempdir().unwrap();
    let registry = ToolRegistry::new();
    let names = registry
        .load_builtin(
            "read_file",
            json!({"base_path": dir.path(), "max_read_bytes": 1000}),
        )
        .unwrap();
    assert_eq!(names, ["read_file"]);
    let err = registry
        .load_builtin("glob", json!({"base_pth": "/"}))
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "invalid options for built-in `glob`: unknown field `base_pth`, expected one of `include`"
        ),
        "{err}"
    );
}

#[test]
fn run_bash_loads_by_name_with_the_bundle_options() {
    let registry = ToolRegistry::new();
    let names = registry
        .load_builtin("run_bash", json!({"max_output_bytes": 2000}))
        .unwrap();
    assert_eq!(names, ["run_bash"]);
    let err = registry
        .load_builtin("bash", json!({"max_output": 1}))
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "invalid options for built-in `bash`: unknown field `max_output`, expected one of `include`"
        ),
        "{err}"
    );
}

#[test]
fn planning_tools_load_by_name() {
    let registry = ToolRegistry::new();
    assert_eq!(
        registry.load_builtin("read_todos", json!(null)).unwrap(),
        ["read_todos"]
    );
    let err = registry
        .load_builtin("planning", json!({"list": []}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid options for built-in `planning`: unknown field `list`, expected one of `include`, `exclude`, `permission`, `replace`"
    );
}

mod builder {
    use harnessx::Agent;
    use harnessx::model::TestModel;
    use harnessx_builtin::catalog::BuiltinBuilderExt;
    use serde_json::json;

    #[test]
    fn the_agent_builder_loads_by_name() {
        let agent = Agent::builder()
            .model(TestModel::new())
            .builtin("web")
            .unwrap()
            .builtin_with(
                "memory",
                json!({"include": ["save_memory", "search_memories"]}),
            )
            .unwrap()
            .builtin("planning")
            .unwrap()
            .build()
            .unwrap();
        for name in [
            "fetch_url",
            "save_memory",
            "search_memories",
            "write_todos",
            "read_todos",
        ] {
            assert!(agent.tools().contains(name), "{name}");
        }
        assert!(!agent.tools().contains("list_memories"));
        // Mistakes fail at the call that made them, before build.
        let err = Agent::builder().builtin("Fetch-Url").unwrap_err();
        assert!(
            err.to_string().starts_with(
                "no built-in tool or bundle is named `Fetch-Url` (did you mean `fetch_url`?)"
            ),
            "{err}"
        );
        let err = Agent::builder()
            .builtin_with("web", json!({"bogus": 1}))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid options for built-in `web`: unknown field `bogus`"),
            "{err}"
        );
    }

    /// The spec's `Agent(tools=[fetch_url])`: the direct function is a tool value.
    #[test]
    fn the_agent_builder_takes_fetch_url_as_a_tool_value() {
        let agent = Agent::builder()
            .model(TestModel::new())
            .tool(harnessx_builtin::web::fetch_url)
            .build()
            .unwrap();
        let def = agent.tools().get_tool("fetch_url").unwrap();
        assert_eq!(def.replay_policy, harnessx::ReplayPolicy::Manual);
        assert!(def.input_schema["properties"]["max_length"].is_object());
    }

    #[test]
    fn the_agent_builder_loads_all() {
        let agent = Agent::builder()
            .model(TestModel::new())
            .builtin("all")
            .unwrap()
            .build()
            .unwrap();
        for name in [
            "read_file",
            "run_bash",
            "fetch_url",
            "save_memory",
            "write_todos",
        ] {
            assert!(agent.tools().contains(name), "{name}");
        }
    }
}

/// The catalog's list of every bundle's tools is the bundles' own lists, in their order.
#[test]
fn the_catalog_lists_each_bundles_own_tools() {
    use harnessx_builtin::catalog::BUNDLE_TOOLS;
    let own: [(&str, &[&str]); 5] = [
        ("filesystem", &harnessx_builtin::fs::FILESYSTEM_TOOLS),
        ("bash", &harnessx_builtin::bash::BASH_TOOLS),
        ("web", &harnessx_builtin::web::WEB_TOOLS),
        ("memory", &harnessx_builtin::memory::MEMORY_TOOLS),
        ("planning", &harnessx::planning::PLANNING_TOOLS),
    ];
    assert_eq!(BUNDLE_TOOLS, own);
}
