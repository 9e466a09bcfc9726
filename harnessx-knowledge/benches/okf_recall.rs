//! Recall@5 of `search_concepts` on the relevance set in `tests/common/catalog.rs`: each query
//! searched with only its own bundle attached, then with all four attached. Prints a table (and
//! where each query's concept ranked when it missed).
//!
//! ```sh
//! cargo bench -p harnessx-knowledge --bench okf_recall
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/common/catalog.rs"]
mod catalog;

use harnessx_core::output::ToolCall;
use harnessx_core::registry::ToolRegistry;
use harnessx_knowledge::okf::{OkfBundle, SEARCH_CONCEPTS, attach_okf};
use serde_json::json;

const LIMIT: usize = 20;

/// The 1-based rank of `(bundle, id)` among the results for `query`, if it is in the top
/// [`LIMIT`].
async fn rank(registry: &ToolRegistry, query: &str, bundle: &str, id: &str) -> Option<usize> {
    let call = ToolCall::json(
        "q",
        SEARCH_CONCEPTS,
        json!({"query": query, "limit": LIMIT}),
    );
    let result = registry.execute(&call, None).await;
    let results = result.structured.expect("search_concepts returns results")["results"].clone();
    results
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["id"] == id && r["bundle"] == bundle)
        .map(|i| i + 1)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    catalog::write_catalog(root.path());
    let bundles: Vec<OkfBundle> = catalog::BUNDLES
        .iter()
        .map(|name| {
            OkfBundle::load(root.path().join(name))
                .unwrap()
                .named(*name)
        })
        .collect();
    let all = ToolRegistry::new();
    for bundle in &bundles {
        attach_okf(&all, bundle.clone()).unwrap();
    }
    let alone = |name: &str| {
        let registry = ToolRegistry::new();
        let bundle = bundles.iter().find(|b| b.name() == name).unwrap();
        attach_okf(&registry, bundle.clone()).unwrap();
        registry
    };

    let queries = catalog::QUERIES.len();
    let (mut single_hits, mut all_hits) = (0, 0);
    let (mut single_first, mut all_first) = (0, 0);
    let mut misses = Vec::new();
    for (query, bundle, id) in catalog::QUERIES {
        let single = rank(&alone(bundle), query, bundle, id).await;
        let together = rank(&all, query, bundle, id).await;
        single_hits += usize::from(single.is_some_and(|r| r <= 5));
        all_hits += usize::from(together.is_some_and(|r| r <= 5));
        single_first += usize::from(single == Some(1));
        all_first += usize::from(together == Some(1));
        if single != Some(1) || together != Some(1) {
            let shown = |r: Option<usize>| r.map_or(format!(">{LIMIT}"), |r| r.to_string());
            misses.push(format!(
                "  \"{query}\" → {bundle}/{id}: rank {} alone, {} with all four",
                shown(single),
                shown(together)
            ));
        }
    }
    let sizes: Vec<String> = bundles
        .iter()
        .map(|b| format!("{} {}", b.name(), b.ids().len()))
        .collect();
    println!("bundles (concepts): {}", sizes.join(", "));
    println!("| attached | queries | recall@5 | first place |");
    println!("|---|---|---|---|");
    let share = |n: usize| format!("{:.2} ({n}/{queries})", n as f64 / queries as f64);
    println!(
        "| the query's own bundle | {queries} | {} | {} |",
        share(single_hits),
        share(single_first)
    );
    println!(
        "| all four bundles | {queries} | {} | {} |",
        share(all_hits),
        share(all_first)
    );
    if !misses.is_empty() {
        println!("missed:\n{}", misses.join("\n"));
    }
}
