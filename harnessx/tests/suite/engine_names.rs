//! Tool names the model gets wrong: repaired only by formatting and only when unambiguous.

use std::sync::atomic::Ordering;

use harnessx::{ToolCall, ToolErrorKind};

use super::engine_common::{counting_tool, registry_with};

#[tokio::test]
async fn formatting_variants_are_repaired_to_the_one_match() {
    let (search, runs) = counting_tool("search_web", "searched");
    let (other, _) = counting_tool("read_file", "read");
    let registry = registry_with([search, other]);
    let variants = [
        "Search_Web",
        "SEARCH_WEB",
        "search-web",
        "searchWeb",
        "SearchWeb",
        "search.web",
        "search web",
        "functions.search_web",
        "tools.search_web",
        "default_api:search_web",
        "functions.searchWeb",
    ];
    for (i, name) in variants.iter().enumerate() {
        let r = registry
            .execute(&ToolCall::new(format!("c{i}"), *name, "{}"), None)
            .await;
        assert!(!r.is_error, "{name}: {}", r.content);
        assert_eq!(r.name, "search_web", "{name}");
        assert_eq!(r.content, "searched");
    }
    assert_eq!(runs.load(Ordering::SeqCst), variants.len());
}

#[tokio::test]
async fn an_exact_name_always_wins() {
    // `searchWeb` and `search_web` normalise to the same key; each exact name reaches its own tool.
    let (a, a_runs) = counting_tool("search_web", "snake");
    let (b, b_runs) = counting_tool("searchWeb", "camel");
    let registry = registry_with([a, b]);
    let r = registry
        .execute(&ToolCall::new("1", "searchWeb", "{}"), None)
        .await;
    assert_eq!(r.content, "camel");
    let r = registry
        .execute(&ToolCall::new("2", "search_web", "{}"), None)
        .await;
    assert_eq!(r.content, "snake");
    assert_eq!(
        (a_runs.load(Ordering::SeqCst), b_runs.load(Ordering::SeqCst)),
        (1, 1)
    );
}

#[tokio::test]
async fn an_ambiguous_alias_is_never_dispatched() {
    let (a, a_runs) = counting_tool("search_web", "snake");
    let (b, b_runs) = counting_tool("search-web", "kebab");
    let registry = registry_with([a, b]);
    let r = registry
        .execute(&ToolCall::new("1", "SearchWeb", "{}"), None)
        .await;
    assert!(r.is_error);
    assert_eq!(r.error_kind, Some(ToolErrorKind::UnknownTool));
    assert_eq!(
        r.content,
        "The tool name `SearchWeb` is ambiguous: it matches search_web and search-web. The call was \
         not run. Call again with the exact name. Available tools: search_web, search-web."
    );
    assert_eq!(
        (a_runs.load(Ordering::SeqCst), b_runs.load(Ordering::SeqCst)),
        (0, 0)
    );
}

#[tokio::test]
async fn a_typo_gets_suggestions_and_the_tool_list_but_never_runs() {
    let (a, runs) = counting_tool("search_web", "x");
    let (b, _) = counting_tool("search_docs", "y");
    let (c, _) = counting_tool("write_file", "z");
    let registry = registry_with([a, b, c]);
    let r = registry
        .execute(&ToolCall::new("1", "serch_web", "{}"), None)
        .await;
    assert!(r.is_error);
    assert_eq!(r.name, "serch_web");
    assert_eq!(r.error_kind, Some(ToolErrorKind::UnknownTool));
    assert_eq!(
        r.content,
        "Unknown tool `serch_web`. Did you mean: search_web, search_docs? The call was not run. \
         Call again with one of the available tools: search_web, search_docs, write_file."
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn at_most_three_suggestions() {
    let defs: Vec<_> = ["file_a", "file_b", "file_c", "file_d"]
        .into_iter()
        .map(|n| counting_tool(n, "x").0)
        .collect();
    let registry = registry_with(defs);
    let r = registry
        .execute(&ToolCall::new("1", "file_", "{}"), None)
        .await;
    let hint = r
        .content
        .split("Did you mean: ")
        .nth(1)
        .unwrap()
        .split('?')
        .next()
        .unwrap();
    assert_eq!(hint.split(", ").count(), 3, "{}", r.content);
}

#[tokio::test]
async fn an_unrelated_name_lists_tools_without_suggestions() {
    let (a, _) = counting_tool("search_web", "x");
    let registry = registry_with([a]);
    let r = registry
        .execute(&ToolCall::new("1", "launch_rocket", "{}"), None)
        .await;
    assert_eq!(
        r.content,
        "Unknown tool `launch_rocket`. The call was not run. Call again with one of the available \
         tools: search_web."
    );
    let empty = harnessx::ToolRegistry::new();
    let r = empty.execute(&ToolCall::new("1", "x", "{}"), None).await;
    assert!(
        r.content.ends_with("available tools: none."),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn a_typo_with_a_prefix_is_still_not_dispatched() {
    let (a, runs) = counting_tool("search_web", "x");
    let registry = registry_with([a]);
    let r = registry
        .execute(&ToolCall::new("1", "functions.search_wbe", "{}"), None)
        .await;
    assert!(r.is_error);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}
