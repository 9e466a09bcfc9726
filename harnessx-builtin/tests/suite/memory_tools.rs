//! The memory tools through the registry: registration, schemas, descriptions, and the text the
//! model reads.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use harnessx::{ReplayPolicy, ToolCall, ToolRegistry, ToolResult};
use harnessx_builtin::memory::{
    InMemoryStore, MemoryLimits, MemoryOptions, MemoryStore, register_memory_tools,
};
use serde_json::{Value, json};

async fn call(registry: &ToolRegistry, name: &str, args: Value) -> ToolResult {
    registry
        .execute(&ToolCall::json("c1", name, args), None)
        .await
}

fn registry_with(store: Arc<dyn MemoryStore>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    register_memory_tools(
        &registry,
        MemoryOptions {
            store: Some(store),
            ..MemoryOptions::default()
        },
    )
    .unwrap();
    registry
}

#[tokio::test]
async fn helper_calls_without_a_store_share_the_registry_store() {
    let registry = ToolRegistry::new();
    let limits = MemoryLimits {
        max_memories: 3,
        ..MemoryLimits::default()
    };
    register_memory_tools(
        &registry,
        MemoryOptions {
            include: Some(vec!["save_memory".into()]),
            limits: limits.clone(),
            ..MemoryOptions::default()
        },
    )
    .unwrap();
    register_memory_tools(
        &registry,
        MemoryOptions {
            exclude: vec!["save_memory".into()],
            limits,
            ..MemoryOptions::default()
        },
    )
    .unwrap();
    let saved = call(&registry, "save_memory", json!({"content": "Prefers tabs"})).await;
    assert_eq!(saved.content, "Saved memory 1.");
    let listed = call(&registry, "list_memories", json!({})).await;
    assert!(
        listed.content.contains("Prefers tabs"),
        "{}",
        listed.content
    );
    let found = call(&registry, "search_memories", json!({"query": "tabs"})).await;
    assert!(found.content.contains("Prefers tabs"), "{}", found.content);

    // A later load with other limits is refused rather than given a second store.
    let err = register_memory_tools(
        &registry,
        MemoryOptions {
            include: Some(vec!["save_memory".into()]),
            replace: true,
            ..MemoryOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "memory option `limits` differs from the limits of the in-memory store this registry's memory tools already share; pass the same limits, or choose another store with `store` or `path`"
    );
}

#[tokio::test]
async fn save_search_list_and_delete_through_the_tools() {
    let registry = registry_with(Arc::new(InMemoryStore::new()));
    let saved = call(
        &registry,
        "save_memory",
        json!({"content": "User's timezone is CET", "tags": ["user", "time"]}),
    )
    .await;
    assert_eq!(saved.content, "Saved memory 1 with tags: user, time.");
    assert_eq!(
        saved.structured,
        Some(json!({"id": 1, "tags": ["user", "time"]}))
    );
    let plain = call(
        &registry,
        "save_memory",
        json!({"content": "Repo uses cargo-nextest"}),
    )
    .await;
    assert_eq!(plain.content, "Saved memory 2.");

    let found = call(&registry, "search_memories", json!({"query": "timezone"})).await;
    assert!(!found.is_error);
    let expected_head = "1 memory matches for \"timezone\", most relevant first:\n\n[1] ";
    assert!(
        found.content.starts_with(expected_head),
        "{}",
        found.content
    );
    assert!(
        found
            .content
            .ends_with(" UTC · tags: user, time\nUser's timezone is CET"),
        "{}",
        found.content
    );

    let none = call(&registry, "search_memories", json!({"query": "kubernetes"})).await;
    assert_eq!(
        none.content,
        "No memories match \"kubernetes\". Try other words, or list_memories to see what is saved."
    );

    let listed = call(&registry, "list_memories", json!({})).await;
    assert!(
        listed
            .content
            .starts_with("Memories 1-2 of 2, newest first:\n\n[2] "),
        "{}",
        listed.content
    );
    assert!(!listed.content.contains("more; call"));

    let deleted = call(&registry, "delete_memory", json!({"id": 2})).await;
    assert_eq!(deleted.content, "Deleted memory 2.");
    let again = call(&registry, "delete_memory", json!({"id": 2})).await;
    assert!(again.is_error);
    assert_eq!(
        again.content,
        "No memory has id 2; call list_memories or search_memories to find the right id."
    );
}

#[tokio::test]
async fn listing_says_how_to_get_the_next_page_and_previews_long_text() {
    let registry = registry_with(Arc::new(InMemoryStore::new()));
    for i in 0..3 {
        call(
            &registry,
            "save_memory",
            json!({"content": format!("note {i} {}", "x".repeat(300))}),
        )
        .await;
    }
    let first = call(&registry, "list_memories", json!({"limit": 2})).await;
    assert!(
        first
            .content
            .starts_with("Memories 1-2 of 3, newest first:"),
        "{}",
        first.content
    );
    assert!(
        first
            .content
            .ends_with("1 more; call list_memories with offset=2 for the next page."),
        "{}",
        first.content
    );
    assert!(
        first
            .content
            .contains("… (107 more characters; search_memories shows the full text)"),
        "{}",
        first.content
    );
    let last = call(&registry, "list_memories", json!({"limit": 2, "offset": 2})).await;
    assert!(
        last.content.starts_with("Memories 3-3 of 3"),
        "{}",
        last.content
    );
    let past = call(&registry, "list_memories", json!({"offset": 9})).await;
    assert_eq!(
        past.content,
        "offset 9 is past the end: there are 3 memories; call list_memories with a smaller offset."
    );
    let empty = registry_with(Arc::new(InMemoryStore::new()));
    assert_eq!(
        call(&empty, "list_memories", json!({})).await.content,
        "No memories are saved yet."
    );
}

#[tokio::test]
async fn store_refusals_reach_the_model_as_error_results() {
    let store = InMemoryStore::with_limits(MemoryLimits {
        max_content_bytes: 10,
        max_results: 2,
        ..MemoryLimits::default()
    });
    let registry = registry_with(Arc::new(store));
    let big = call(
        &registry,
        "save_memory",
        json!({"content": "much too long text"}),
    )
    .await;
    assert!(big.is_error);
    assert_eq!(
        big.content,
        "`content` is 18 bytes, more than the limit `max_content_bytes` (10 bytes); save a shorter summary, or split it into several memories"
    );
    let empty = call(&registry, "search_memories", json!({"query": "?!"})).await;
    assert!(empty.is_error);
    for i in 0..3 {
        call(
            &registry,
            "save_memory",
            json!({"content": format!("tip {i}")}),
        )
        .await;
    }
    let capped = call(
        &registry,
        "search_memories",
        json!({"query": "tip", "limit": 40}),
    )
    .await;
    assert!(capped.content.ends_with(
        "Showing the 2 best matches, the most one search returns; use more specific words to narrow it down."
    ), "{}", capped.content);
}

#[tokio::test]
async fn registration_metadata_schemas_and_descriptions() {
    let registry = ToolRegistry::new();
    let names = register_memory_tools(&registry, MemoryOptions::default()).unwrap();
    assert_eq!(
        names,
        [
            "save_memory",
            "search_memories",
            "list_memories",
            "delete_memory"
        ]
    );
    for name in &names {
        let def = registry.get_tool(name).unwrap();
        assert_eq!(def.replay_policy, ReplayPolicy::Manual, "{name}");
        assert_eq!(
            def.timeout, None,
            "{name}: memory tools use the default limit"
        );
        assert_eq!(def.permission, None, "{name}");
        assert_eq!(def.input_schema["additionalProperties"], json!(false));
    }
    // Writes run one at a time, reads together.
    assert!(!registry.get_tool("save_memory").unwrap().concurrent);
    assert!(!registry.get_tool("delete_memory").unwrap().concurrent);
    assert!(registry.get_tool("search_memories").unwrap().concurrent);
    assert!(registry.get_tool("list_memories").unwrap().concurrent);
    // Every description states its limits and how to get more.
    let d = |n: &str| registry.get_tool(n).unwrap().description;
    assert!(d("save_memory").contains("at most 4000 bytes"));
    assert!(d("save_memory").contains("at most 10000 memories"));
    assert!(d("search_memories").contains("default 10, at most 50"));
    assert!(d("search_memories").contains("page through everything with list_memories"));
    assert!(d("list_memories").contains("the result says which offset shows the next page"));
    assert!(d("delete_memory").contains("cannot be undone"));
}

#[tokio::test]
async fn options_choose_one_store_and_reject_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let store: Arc<dyn MemoryStore> = Arc::new(InMemoryStore::new());
    let both = register_memory_tools(
        &ToolRegistry::new(),
        MemoryOptions {
            store: Some(Arc::clone(&store)),
            path: Some(path.clone()),
            ..MemoryOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        both.to_string(),
        "memory options `store` and `path` both choose the store; pass only one"
    );
    let limits = register_memory_tools(
        &ToolRegistry::new(),
        MemoryOptions {
            store: Some(store),
            limits: MemoryLimits {
                max_memories: 3,
                ..MemoryLimits::default()
            },
            ..MemoryOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        limits.to_string(),
        "memory option `limits` configures the store the helper builds, but `store` is set; configure limits on that store instead"
    );
    let unknown = register_memory_tools(
        &ToolRegistry::new(),
        MemoryOptions {
            include: Some(vec!["remember".into()]),
            ..MemoryOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "`include` names `remember`, which is not a tool of the memory bundle; its tools are: save_memory, search_memories, list_memories, delete_memory"
    );

    // A path from JSON config gives a durable store shared by the tools.
    let options: MemoryOptions =
        serde_json::from_value(json!({"path": path, "limits": {"max_results": 5}})).unwrap();
    let registry = ToolRegistry::new();
    register_memory_tools(&registry, options).unwrap();
    call(&registry, "save_memory", json!({"content": "kept on disk"})).await;
    let reopened = ToolRegistry::new();
    register_memory_tools(
        &reopened,
        MemoryOptions {
            path: Some(path),
            ..MemoryOptions::default()
        },
    )
    .unwrap();
    let found = call(&reopened, "search_memories", json!({"query": "disk"})).await;
    assert!(found.content.ends_with("kept on disk"), "{}", found.content);

    let bad: Result<MemoryOptions, _> =
        serde_json::from_value(json!({"limits": {"max_memory": 1}}));
    assert!(
        bad.unwrap_err()
            .to_string()
            .starts_with("unknown field `max_memory`, expected one of `max_content_bytes`")
    );
}

#[tokio::test]
async fn oversized_tag_lists_are_refused_by_the_schema() {
    let registry = registry_with(Arc::new(InMemoryStore::new()));
    let schema = registry.get_tool("save_memory").unwrap().input_schema;
    assert_eq!(schema["properties"]["tags"]["maxItems"], json!(16));
    assert_eq!(
        schema["properties"]["tags"]["items"]["maxLength"],
        json!(64)
    );
    let many: Vec<String> = (0..100_000).map(|i| format!("t{i}")).collect();
    let refused = call(
        &registry,
        "save_memory",
        json!({"content": "x", "tags": many}),
    )
    .await;
    assert!(refused.is_error);
    assert!(refused.content.contains("tags"), "{}", refused.content);
    let long = call(
        &registry,
        "save_memory",
        json!({"content": "x", "tags": ["y".repeat(65)]}),
    )
    .await;
    assert!(long.is_error);
    assert!(long.content.contains("tags"), "{}", long.content);
    // Nothing was saved; the largest allowed list is.
    assert_eq!(
        call(&registry, "list_memories", json!({})).await.content,
        "No memories are saved yet."
    );
    let most: Vec<String> = (0..16).map(|i| format!("{i:0>64}")).collect();
    let saved = call(
        &registry,
        "save_memory",
        json!({"content": "x", "tags": most}),
    )
    .await;
    assert!(!saved.is_error, "{}", saved.content);
}

#[tokio::test]
async fn whole_number_floats_are_the_integers_the_schema_accepts() {
    let registry = registry_with(Arc::new(InMemoryStore::new()));
    for i in 0..6 {
        call(
            &registry,
            "save_memory",
            json!({"content": format!("note {i}")}),
        )
        .await;
    }
    // JSON Schema counts 5.0 as an integer, so it is memory 5 (never 0, never an error).
    let deleted = call(&registry, "delete_memory", json!({"id": 5.0})).await;
    assert!(!deleted.is_error, "{}", deleted.content);
    assert_eq!(deleted.content, "Deleted memory 5.");
    let listed = call(&registry, "list_memories", json!({})).await;
    assert!(!listed.content.contains("note 4"), "{}", listed.content);
    assert!(listed.content.contains("note 3"), "{}", listed.content);
    // A fraction is refused by the schema, naming the field.
    let half = call(&registry, "delete_memory", json!({"id": 5.5})).await;
    assert!(half.is_error);
    assert!(half.content.contains("id"), "{}", half.content);
    // Offsets and limits read the same way: offset 2.0 skips two (notes 5 and 3).
    let page = call(
        &registry,
        "list_memories",
        json!({"offset": 2.0, "limit": 1.0}),
    )
    .await;
    assert!(
        page.content.starts_with("Memories 3-3 of 5"),
        "{}",
        page.content
    );
    assert!(page.content.contains("note 2"), "{}", page.content);
}
