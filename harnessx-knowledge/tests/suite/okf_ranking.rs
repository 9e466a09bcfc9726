//! `search_concepts` ranks the concepts of several bundles on one scale.

use std::path::Path;

use harnessx_core::output::{ToolCall, ToolResult};
use harnessx_core::registry::ToolRegistry;
use harnessx_knowledge::okf::{OkfBundle, SEARCH_CONCEPTS, attach_okf};
use serde_json::{Value, json};

use crate::common::catalog;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

async fn search(registry: &ToolRegistry, query: &str, limit: usize) -> ToolResult {
    let call = ToolCall::json(
        "s",
        SEARCH_CONCEPTS,
        json!({"query": query, "limit": limit}),
    );
    let result = registry.execute(&call, None).await;
    assert!(!result.is_error, "{result:?}");
    result
}

fn results(result: &ToolResult) -> Vec<Value> {
    result.structured.as_ref().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}

/// The four catalog bundles attached to one registry.
fn catalog_registry(root: &Path) -> ToolRegistry {
    catalog::write_catalog(root);
    let registry = ToolRegistry::new();
    for name in catalog::BUNDLES {
        attach_okf(
            &registry,
            OkfBundle::load(root.join(name)).unwrap().named(name),
        )
        .unwrap();
    }
    registry
}

/// Where `(bundle, id)` is among the results for `query`, from 1.
async fn position(registry: &ToolRegistry, query: &str, bundle: &str, id: &str) -> Option<usize> {
    results(&search(registry, query, 20).await)
        .iter()
        .position(|r| r["bundle"] == bundle && r["id"] == id)
        .map(|i| i + 1)
}

#[tokio::test]
async fn with_four_bundles_attached_the_right_concept_comes_first() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = catalog_registry(tmp.path());
    // The small HR bundle's concepts are not buried under the large finance bundle's partial
    // matches ("employees" in the expense policy, "time" and "role" in its tables).
    for (query, id) in [
        ("time to hire for a role", "metrics/time-to-hire"),
        ("employee attrition", "metrics/attrition"),
        ("how many vacation days do I get", "policies/paid-time-off"),
    ] {
        assert_eq!(
            position(&registry, query, "hr", id).await,
            Some(1),
            "{query}"
        );
    }
    // A concept ranks where it ranks in its own bundle, whatever else is attached.
    let alone = ToolRegistry::new();
    attach_okf(
        &alone,
        OkfBundle::load(tmp.path().join("finance"))
            .unwrap()
            .named("finance"),
    )
    .unwrap();
    let query = "year to date revenue";
    let id = "metrics/ytd-revenue";
    let together = position(&registry, query, "finance", id).await;
    assert_eq!(together, position(&alone, query, "finance", id).await);
    assert!(together.is_some_and(|r| r <= 2), "{together:?}");
}

#[tokio::test]
async fn recall_at_five_holds_with_every_bundle_attached() {
    let tmp = tempfile::tempdir().unwrap();
    let registry = catalog_registry(tmp.path());
    let mut missed = Vec::new();
    for (query, bundle, id) in catalog::QUERIES {
        let found = results(&search(&registry, query, 5).await);
        if !found
            .iter()
            .any(|r| r["bundle"] == *bundle && r["id"] == *id)
        {
            missed.push(*query);
        }
    }
    // The bench (`okf_recall`) reports the figure; this keeps it from sliding back.
    assert!(
        missed.len() * 10 <= catalog::QUERIES.len(),
        "recall@5 fell under 0.9; missed: {missed:?}"
    );
}

#[tokio::test]
async fn a_concept_that_shares_only_stop_words_with_the_query_is_not_a_result() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "office.md",
        "---\ntype: Policy\ntitle: Working from the office\n---\nBook a desk for the day in the app.\n",
    );
    write(
        tmp.path(),
        "holidays.md",
        "---\ntype: Policy\ntitle: Public holidays\n---\nThe calendar of public holidays.\n",
    );
    let registry = ToolRegistry::new();
    attach_okf(&registry, OkfBundle::load(tmp.path()).unwrap()).unwrap();

    let found = results(&search(&registry, "rules for the holidays in spring", 5).await);
    let ids: Vec<&str> = found.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["holidays"],
        "\"for\", \"the\" and \"in\" match nothing"
    );

    let only = search(&registry, "what is it for", 5).await;
    assert_eq!(
        only.content,
        "\"what is it for\" has only very common words (such as \"the\", \"for\" or \"in\"), \
         which match nothing. Call search_concepts again with the words that name what you look \
         for."
    );
    assert!(results(&only).is_empty());
}

#[tokio::test]
async fn the_best_match_of_a_small_bundle_scores_above_zero() {
    let tmp = tempfile::tempdir().unwrap();
    // Every concept holds "leave": bm25 would give each a score of about zero.
    write(
        tmp.path(),
        "parental.md",
        "---\ntype: Policy\ntitle: Parental leave\n---\nSixteen weeks of leave.\n",
    );
    write(
        tmp.path(),
        "sick.md",
        "---\ntype: Policy\ntitle: Sick leave\n---\nTell your manager; leave is paid.\n",
    );
    let registry = ToolRegistry::new();
    attach_okf(&registry, OkfBundle::load(tmp.path()).unwrap()).unwrap();
    let result = search(&registry, "leave", 5).await;
    let found = results(&result);
    assert_eq!(found.len(), 2);
    for r in &found {
        let score = r["score"].as_f64().unwrap();
        assert!((0.1..1.0).contains(&score), "{found:#?}");
    }
    assert!(!result.content.contains("score 0.00"), "{}", result.content);
}

#[tokio::test]
async fn deprecated_concepts_rank_after_current_ones_and_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "revenue-legacy.md",
        "---\ntype: Metric\ntitle: Revenue\nstatus: deprecated\n---\nRevenue, revenue, revenue.\n",
    );
    write(
        tmp.path(),
        "bookings.md",
        "---\ntype: Metric\ntitle: Bookings\n---\nSigned contracts, before revenue is recognized.\n",
    );
    let registry = ToolRegistry::new();
    attach_okf(&registry, OkfBundle::load(tmp.path()).unwrap()).unwrap();
    let result = search(&registry, "revenue", 5).await;
    let found = results(&result);
    let ids: Vec<&str> = found.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["bookings", "revenue-legacy"]);
    assert_eq!(found[1]["deprecated"], true);
    assert_eq!(found[1]["status"], "deprecated");
    assert!(
        found[1]["score"].as_f64().unwrap() > found[0]["score"].as_f64().unwrap(),
        "it matches better, and still comes last"
    );
    let second = result.content.split("\n\n").nth(1).unwrap();
    assert!(
        second.starts_with("[2] revenue-legacy — Revenue (type: Metric; score ")
            && second.contains("; DEPRECATED)"),
        "{second}"
    );
    assert!(second.ends_with(
        "(note: this concept is deprecated: kept for history, no longer current; prefer a \
         current concept)"
    ));
}
