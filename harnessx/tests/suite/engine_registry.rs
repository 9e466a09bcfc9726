//! Registration: duplicates, replacement, option overrides, schemas, inspection.

use harnessx::{
    PermissionLevel, RegistryError, ReplayPolicy, ToolCall, ToolDefinition, ToolOptions,
    ToolOutput, ToolRegistry, handler_fn,
};
use serde_json::json;

use super::engine_common::{counting_tool, empty_schema};

#[test]
fn duplicate_names_fail_unless_replaced() {
    let registry = ToolRegistry::new();
    registry.register_tool(counting_tool("t", "one").0).unwrap();
    let err = registry
        .register_tool(counting_tool("t", "two").0)
        .unwrap_err();
    assert!(matches!(err, RegistryError::Duplicate(_)));
    assert_eq!(
        err.to_string(),
        "a tool named `t` is already registered; pass `replace(true)` to replace it deliberately"
    );
    registry
        .register_tool_with(
            counting_tool("t", "two").0,
            ToolOptions::new().replace(true),
        )
        .unwrap();
    assert_eq!(registry.get_tool("t").unwrap().description, "Answer two.");
    assert_eq!(registry.len(), 1);
}

#[tokio::test]
async fn replacing_does_not_disturb_a_call_in_flight() {
    let registry = ToolRegistry::new();
    registry
        .register_tool(super::engine_common::sleeping_tool("t", 100))
        .unwrap();
    let call = ToolCall::new("c", "t", r#"{"tag":"old"}"#);
    let in_flight = registry.execute(&call, None);
    let swap = async {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        registry
            .register_tool_with(
                counting_tool("t", "new").0,
                ToolOptions::new().replace(true),
            )
            .unwrap();
        registry.unregister("t");
    };
    let (r, ()) = tokio::join!(in_flight, swap);
    assert_eq!(r.content, "old");
}

#[test]
fn registering_a_definition_keeps_its_metadata_unless_overridden() {
    let def = counting_tool("q", "x")
        .0
        .with_permission(PermissionLevel::Ask)
        .with_replay_policy(ReplayPolicy::Idempotent)
        .with_concurrent(false)
        .with_timeout_seconds(90.0);
    let registry = ToolRegistry::new();
    let got = registry
        .register_tool_with(&def, ToolOptions::new().description("Query."))
        .unwrap();
    assert_eq!(got.permission, Some(PermissionLevel::Ask));
    assert_eq!(got.replay_policy, ReplayPolicy::Idempotent);
    assert!(!got.concurrent);
    assert_eq!(got.timeout, Some(std::time::Duration::from_secs(90)));
    assert_eq!(got.description, "Query.");

    let other = ToolRegistry::new();
    let got = other
        .register_tool_with(
            def.clone(),
            ToolOptions::new()
                .permission(PermissionLevel::Deny)
                .name("q2"),
        )
        .unwrap();
    assert_eq!(got.permission, Some(PermissionLevel::Deny));
    assert_eq!(got.replay_policy, ReplayPolicy::Idempotent, "not reset");
    assert_eq!(got.name, "q2");
}

#[test]
fn ordinary_registration_defaults() {
    let registry = ToolRegistry::new();
    let def = registry.register_tool(counting_tool("t", "x").0).unwrap();
    assert_eq!(def.permission, None);
    assert!(def.concurrent);
    assert_eq!(def.replay_policy, ReplayPolicy::Manual);
    assert_eq!(def.replay_policy.as_str(), "manual");
    assert_eq!(def.timeout, None);
    assert!(def.retry.is_none());
}

#[test]
fn replay_policy_accepts_strings() {
    assert_eq!("safe".parse::<ReplayPolicy>().unwrap(), ReplayPolicy::Safe);
    assert_eq!(
        ReplayPolicy::try_from("Idempotent").unwrap(),
        ReplayPolicy::Idempotent
    );
    assert_eq!(
        "manual".parse::<ReplayPolicy>().unwrap(),
        ReplayPolicy::Manual
    );
    assert_eq!(
        "sometimes".parse::<ReplayPolicy>().unwrap_err().to_string(),
        "replay_policy `sometimes` is not recognised; use \"safe\", \"idempotent\" or \"manual\""
    );
    assert_eq!(
        "ASK".parse::<PermissionLevel>().unwrap(),
        PermissionLevel::Ask
    );
    assert_eq!(
        "maybe".parse::<PermissionLevel>().unwrap_err().to_string(),
        "permission `maybe` is not recognised; use \"allow\", \"ask\" or \"deny\""
    );
}

#[test]
fn register_with_schema_matches_the_spec_example() {
    let registry = ToolRegistry::new();
    let def = registry
        .register_with_schema(
            "label",
            "Uppercase a short label.",
            json!({
                "type": "object",
                "properties": {"value": {"type": "string", "maxLength": 40}},
                "required": ["value"],
                "additionalProperties": false,
            }),
            handler_fn(|args, _ctx| async move {
                Ok(ToolOutput::text(
                    args["value"].as_str().unwrap_or_default().to_uppercase(),
                ))
            }),
            ToolOptions::new()
                .permission(PermissionLevel::Allow)
                .concurrent(false)
                .timeout_seconds(5.0),
        )
        .unwrap();
    assert_eq!(def.permission, Some(PermissionLevel::Allow));
    assert!(!def.concurrent);
    let params = registry.get_tool_params();
    assert_eq!(params.len(), 1);
    assert_eq!(params[0].name, "label");
    assert_eq!(
        params[0].input_schema["properties"]["value"]["maxLength"],
        40
    );
}

#[tokio::test]
async fn the_schema_is_enforced_at_call_time() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "label",
            "Uppercase a short label.",
            json!({"type": "object", "properties": {"value": {"type": "string", "maxLength": 4}}, "required": ["value"]}),
            handler_fn(|args, _ctx| async move { Ok(ToolOutput::text(args["value"].to_string())) }),
            ToolOptions::new(),
        )
        .unwrap();
    let r = registry
        .execute(
            &ToolCall::new("c", "label", r#"{"value":"too long"}"#),
            None,
        )
        .await;
    assert_eq!(
        r.content,
        "Invalid arguments for `label`: field `value`: \"too long\" is longer than 4 characters. Fix it and call `label` again."
    );
}

#[test]
fn schemas_with_a_non_object_root_are_refused() {
    let registry = ToolRegistry::new();
    let h = || handler_fn(|_a, _c| async { Ok(ToolOutput::text("")) });
    let err = registry
        .register_with_schema("s", "d", json!({"type": "string"}), h(), ToolOptions::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the input schema of tool `s` must have an object root (`{\"type\": \"object\", ...}`), but it is a schema of type \"string\""
    );
    let err = registry
        .register_with_schema("s", "d", json!([]), h(), ToolOptions::new())
        .unwrap_err();
    assert!(err.to_string().ends_with("but it is an array"));
    let err = registry
        .register_with_schema("s", "d", json!({"properties": {}}), h(), ToolOptions::new())
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("but it is a schema without `\"type\": \"object\"`")
    );
    let err = registry
        .register_with_schema(
            "s",
            "d",
            json!({"type": "object", "properties": {"a": {"type": 12}}}),
            h(),
            ToolOptions::new(),
        )
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the input schema of tool `s` is not a valid JSON Schema: "),
        "{err}"
    );
    assert!(registry.is_empty());
}

#[test]
fn tool_names_must_suit_model_apis() {
    let registry = ToolRegistry::new();
    for bad in ["", "has space", "dots.bad", &"x".repeat(65)] {
        let err = registry
            .register_with_schema(
                bad,
                "d",
                empty_schema(),
                handler_fn(|_a, _c| async { Ok(ToolOutput::text("")) }),
                ToolOptions::new(),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("tool name `{bad}` is not valid: use 1 to 64 letters, digits, `_` or `-`")
        );
    }
}

#[test]
fn inspection_in_registration_order() {
    let registry = ToolRegistry::new();
    for n in ["b", "a", "c"] {
        registry.register_tool(counting_tool(n, "x").0).unwrap();
    }
    assert_eq!(registry.list_tools(), ["b", "a", "c"]);
    assert!(registry.get_tool("a").is_some());
    assert!(registry.get_tool("z").is_none());
    assert!(registry.contains("c"));
    let clone = registry.clone();
    assert!(clone.same_registry(&registry));
    clone.unregister("a");
    assert_eq!(
        registry.list_tools(),
        ["b", "c"],
        "clones share the registry"
    );
    assert!(!ToolRegistry::new().same_registry(&registry));
}

#[tokio::test]
async fn close_runs_registered_closers_once() {
    let registry = ToolRegistry::new();
    let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let m = n.clone();
    registry.on_close(move || async move {
        m.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    registry.close().await;
    registry.close().await;
    assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn definitions_debug_without_handlers() {
    let def = ToolDefinition::new(
        "t",
        "d",
        empty_schema(),
        handler_fn(|_a, _c| async { Ok(ToolOutput::text("")) }),
    );
    let text = format!("{def:?}");
    assert!(text.starts_with("ToolDefinition { name: \"t\""));
}
