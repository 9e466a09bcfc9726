//! Random names and random argument bytes never panic the engine and always get a result.

use harnessx::{ToolCall, ToolOptions, ToolRegistry};
use proptest::prelude::*;
use serde_json::json;

use super::engine_common::{counting_tool, sleeping_tool};

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register_tool(counting_tool("search_web", "ok").0)
        .unwrap();
    registry.register_tool(sleeping_tool("echo", 0)).unwrap();
    registry
        .register_with_schema(
            "nested",
            "Nested.",
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {"b": {"type": "integer", "minimum": 0}}}}}, "required": ["a"]}),
            harnessx::handler_fn(|args, _c| async move { Ok(harnessx::ToolOutput::json(args)) }),
            ToolOptions::new().concurrent(false),
        )
        .unwrap();
    registry
}

fn name_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("search_web".to_owned()),
        Just("functions.searchWeb".to_owned()),
        Just("nested".to_owned()),
        Just("echo".to_owned()),
        ".{0,40}",
        "[a-zA-Z_.: -]{0,20}",
    ]
}

fn args_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        ".{0,100}",
        Just(r#"{"a": [{"b": 1}, {"b": -1}]}"#.to_owned()),
        Just(r#"{"tag": "x"}"#.to_owned()),
        "\\{\"a\": \\[\\{\"b\": [0-9-]{1,5}\\}\\]".prop_map(|s| s),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, .. ProptestConfig::default() })]

    #[test]
    fn execute_never_panics_and_always_answers(calls in proptest::collection::vec((name_strategy(), args_strategy()), 1..6)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let registry = registry();
        let calls: Vec<ToolCall> = calls
            .into_iter()
            .enumerate()
            .map(|(i, (name, args))| ToolCall::new(format!("c{i}"), name, args))
            .collect();
        let results = rt.block_on(async {
            let run = registry.run(None);
            let mut single = Vec::new();
            for call in &calls {
                single.push(run.execute(call).await);
            }
            (single, run.execute_batch(&calls, None).await)
        });
        prop_assert_eq!(results.0.len(), calls.len());
        prop_assert_eq!(results.1.len(), calls.len());
        for (call, r) in calls.iter().zip(&results.1) {
            prop_assert_eq!(&r.call_id, &call.id);
            prop_assert!(!r.content.is_empty() || !r.is_error);
            if r.is_error {
                prop_assert!(r.error_kind.is_some());
            }
        }
    }
}
