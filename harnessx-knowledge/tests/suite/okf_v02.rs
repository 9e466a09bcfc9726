//! OKF v0.2's provenance, trust and lifecycle fields, and neighbors listed once.

use std::path::Path;

use harnessx_core::output::ToolCall;
use harnessx_core::registry::ToolRegistry;
use harnessx_knowledge::okf::{
    DiagnosticKind, GET_NEIGHBORS, OkfBundle, READ_CONCEPT, SEARCH_CONCEPTS, Trust, attach_okf,
};
use serde_json::json;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const REVENUE: &str = "---
type: Attested Computation
title: Revenue for fiscal year
status: stable
generated: { by: reference_agent/gemini-2.5-pro, at: 2026-06-20T22:53:05Z }
timestamp: 2025-01-01
verified:
  - { by: process:finance-nightly, at: 2026-06-26T02:00:00Z }
  - { by: human:ahormati, at: 2026-06-25T09:00:00Z }
stale_after: 2026-09-23
sources:
  - id: rev-policy
    resource: https://wiki.acme/finance/revenue-recognition
    title: Revenue recognition policy
    author: team:finance
    usage_count: 5000
    last_modified: 2026-05-30
---
SELECT SUM(amount) FROM finance.recognized_revenue
";

#[test]
fn v02_fields_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "computations/revenue.md", REVENUE);
    write(
        tmp.path(),
        "old.md",
        "---\ntype: Metric\ntimestamp: 2025-01-01\nverified: { by: process:nightly }\nstatus: Deprecated\n---\n",
    );
    write(tmp.path(), "plain.md", "---\ntype: Metric\n---\n");
    let bundle = OkfBundle::load(tmp.path()).unwrap();
    assert!(
        bundle.diagnostics().is_empty(),
        "{:?}",
        bundle.diagnostics()
    );

    let revenue = bundle.concept("computations/revenue").unwrap();
    assert_eq!(
        revenue.timestamp(),
        Some("2026-06-20T22:53:05Z"),
        "generated.at wins"
    );
    assert_eq!(
        revenue.generated_by(),
        Some("reference_agent/gemini-2.5-pro")
    );
    assert_eq!(revenue.status(), Some("stable"));
    assert!(!revenue.is_deprecated());
    let verified = revenue.verified();
    assert_eq!(verified.len(), 2);
    assert_eq!(verified[0].by, "process:finance-nightly");
    assert_eq!(verified[1].at.as_deref(), Some("2026-06-25T09:00:00Z"));
    assert_eq!(revenue.last_verified(), Some("2026-06-26T02:00:00Z"));
    assert_eq!(revenue.trust(), Trust::HumanReviewed);
    assert_eq!(revenue.stale_after(), Some("2026-09-23"));
    assert!(!revenue.is_stale_on("2026-09-22"));
    assert!(revenue.is_stale_on("2026-09-23"));
    let sources = revenue.sources();
    assert_eq!(sources.len(), 1);
    assert_eq!(
        sources[0].resource,
        "https://wiki.acme/finance/revenue-recognition"
    );
    assert_eq!(sources[0].id.as_deref(), Some("rev-policy"));
    assert_eq!(
        sources[0].title.as_deref(),
        Some("Revenue recognition policy")
    );
    assert_eq!(sources[0].author.as_deref(), Some("team:finance"));
    assert_eq!(sources[0].usage_count, Some(5000));
    assert_eq!(sources[0].last_modified.as_deref(), Some("2026-05-30"));

    let old = bundle.concept("old").unwrap();
    assert_eq!(
        old.timestamp(),
        Some("2025-01-01"),
        "v0.1's timestamp is the fallback"
    );
    assert!(old.is_deprecated(), "status is read without regard to case");
    assert_eq!(
        old.trust(),
        Trust::MachineConfirmed,
        "a bare mapping is a list of one"
    );
    assert_eq!(old.verified()[0].at, None);

    let plain = bundle.concept("plain").unwrap();
    assert_eq!(plain.trust(), Trust::Unverified);
    assert_eq!(plain.timestamp(), None);
    assert!(plain.sources().is_empty() && !plain.is_stale() && !plain.is_deprecated());
    assert_eq!(Trust::HumanReviewed.as_str(), "human-reviewed");
    assert_eq!(Trust::MachineConfirmed.as_str(), "machine-confirmed");
    assert_eq!(Trust::Unverified.as_str(), "unverified");
}

#[test]
fn badly_shaped_v02_fields_are_diagnostics_that_say_how_to_write_them() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "bad.md",
        "---\ntype: Metric\ngenerated: human:ana\nverified: [{ at: 2026-01-01 }]\n\
         status: retired\nstale_after: next year\nsources: [{ title: no resource }]\n---\n",
    );
    write(
        tmp.path(),
        "worse.md",
        "---\ntype: Metric\nstatus: [a]\nsources: https://example.com\n---\n",
    );
    let bundle = OkfBundle::load(tmp.path()).unwrap();
    let messages: Vec<String> = bundle
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        [
            "bad.md: `generated` should be a mapping with `by` (and `at`), such as \
             `generated: { by: human:ana, at: 2026-06-20T09:00:00Z }`; it is ignored",
            "bad.md: `verified` should be a list of `{ by, at }` entries (or one such mapping); \
             the entries without `by` are ignored",
            "bad.md: `status` is `retired`; OKF knows `draft`, `stable` and `deprecated`, so the \
             concept is read as current",
            "bad.md: `stale_after` is `next year`, not a date; write it as `YYYY-MM-DD` (it is \
             ignored)",
            "bad.md: some `sources` entries have no `resource` (text), which OKF requires in \
             each; they are ignored",
            "worse.md: `status` should be text; it is ignored",
            "worse.md: `sources` should be a list of entries with a `resource` each; it is ignored",
        ]
    );
    assert!(
        bundle
            .diagnostics()
            .iter()
            .all(|d| d.kind == DiagnosticKind::InvalidField)
    );
    let bad = bundle.concept("bad").unwrap();
    assert_eq!(bad.trust(), Trust::Unverified);
    assert!(!bad.is_stale_on("2999-01-01"));
    assert!(bad.sources().is_empty() && !bad.is_deprecated());
}

#[tokio::test]
async fn search_shows_trust_and_staleness() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "computations/revenue.md", REVENUE);
    let registry = ToolRegistry::new();
    attach_okf(&registry, OkfBundle::load(tmp.path()).unwrap()).unwrap();
    let call = ToolCall::json("s", SEARCH_CONCEPTS, json!({"query": "revenue"}));
    let result = registry.execute(&call, None).await;
    let found = &result.structured.as_ref().unwrap()["results"][0];
    assert_eq!(found["trust"], "human_reviewed");
    assert_eq!(found["stale_after"], "2026-09-23");
    assert_eq!(found["timestamp"], "2026-06-20T22:53:05Z");
    let first = result.content.lines().next().unwrap();
    assert!(first.ends_with("; human-reviewed)"), "{first}");
    assert_eq!(found["stale"], first.contains("; stale since 2026-09-23;"));
}

#[tokio::test]
async fn get_neighbors_lists_each_neighbor_once() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "tables/orders.md",
        "---\ntype: Table\ntitle: Orders\n---\nEach order has a [customer](customers.md); \
         see [the customer table](/tables/customers.md) for the key.\n\n\
         # Citations\n\n- [Customers](customers.md)\n",
    );
    write(
        tmp.path(),
        "tables/customers.md",
        "---\ntype: Table\ntitle: Customers\n---\nOne row per customer.\n",
    );
    let registry = ToolRegistry::new();
    attach_okf(&registry, OkfBundle::load(tmp.path()).unwrap()).unwrap();
    let call = ToolCall::json("n", GET_NEIGHBORS, json!({"id": "tables/orders"}));
    let result = registry.execute(&call, None).await;
    assert_eq!(
        result.content,
        "Neighbors of `tables/orders` (bundle `customers`)\n\n\
         Links from it (1):\n\
         - [link] tables/customers — Customers (link text: \"customer\")\n\n\
         Links to it (0):\n(none)"
            .replace("`customers`", &format!("`{}`", bundle_name(tmp.path())))
    );
    let structured = result.structured.unwrap();
    assert_eq!(structured["outgoing"].as_array().unwrap().len(), 1);
    let back = ToolCall::json("n", GET_NEIGHBORS, json!({"id": "tables/customers"}));
    let back = registry.execute(&back, None).await.structured.unwrap();
    assert_eq!(back["incoming"].as_array().unwrap().len(), 1);
    assert_eq!(back["incoming"][0]["id"], "tables/orders");

    let read = ToolCall::json("r", READ_CONCEPT, json!({"id": "tables/orders"}));
    assert!(!registry.execute(&read, None).await.is_error);
}

fn bundle_name(root: &Path) -> String {
    std::fs::canonicalize(root)
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}
