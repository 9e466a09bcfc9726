//! Open Knowledge Format bundles: loading with diagnostics, and the read-only concept tools
//! `search_concepts`, `read_concept` and `get_neighbors`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use harnessx::knowledge::okf::{
    Diagnostic, DiagnosticKind, GET_NEIGHBORS, LinkKind, OKF_TOOLS, OkfBundle, OkfError,
    READ_CONCEPT, SEARCH_CONCEPTS, attach_okf, attached_okf, detach_okf,
};
use harnessx::knowledge::{KNOWLEDGE_SEARCH, SqliteKnowledgeBase};
use harnessx::{
    Agent, ApprovalDecision, PermissionLevel, PermissionManager, RegistryError, ToolCall,
    ToolDefinition, ToolOutput, ToolRegistry, ToolResult, handler_fn,
};
use serde_json::{Value, json};
use tempfile::TempDir;

fn write(root: &Path, path: &str, text: impl AsRef<[u8]>) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A small warehouse bundle with one of each problem OKF tolerates.
fn warehouse() -> TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("warehouse");
    let r = root.as_path();
    write(
        r,
        "index.md",
        "# Warehouse\n\n- [Orders](tables/orders.md)\n",
    );
    write(r, "log.md", "## 2026-01-02: Added orders\n");
    write(
        r,
        "tables/orders.md",
        "---\ntype: table\ntitle: Orders\ndescription: One row per order placed in the shop.\n\
         resource: bq://shop.orders\ntags: [sales, core]\ntimestamp: 2026-01-02T10:00:00Z\n\
         owner: data-team\n---\n\
         Each order belongs to a [customer](customers.md). Revenue is defined in\n\
         [the glossary](/glossary.md#revenue). Older notes: [archive](gone.md).\n\n\
         ```\n[not a link](customers.md)\n```\n\n\
         # Citations\n\n- [ERP manual](../sources/erp-manual.md)\n- [Vendor docs](https://example.com/docs)\n",
    );
    write(
        r,
        "tables/customers.md",
        "---\ntype: table\ntitle: Customers\ntags: sales\n---\nCustomers place [orders](./orders.md).\n",
    );
    write(
        r,
        "glossary.md",
        "---\ntype: glossary\ntitle: Glossary\n---\n## Revenue\n\nThe sum of order totals, net of refunds.\n",
    );
    write(
        r,
        "sources/erp-manual.md",
        "---\ntype: source\ntitle: ERP manual\n---\nThe vendor's manual for the ERP export.\n",
    );
    write(
        r,
        "notes/untyped.md",
        "---\ntitle: Shipping\n---\nParcels ship within two days.\n",
    );
    write(
        r,
        "notes/plain.md",
        "Refunds are paid back within a week; see [orders](../tables/orders.md).\n",
    );
    write(
        r,
        "notes/broken-yaml.md",
        "---\ntype: [unclosed\n---\nInvoices are sent monthly.\n",
    );
    write(
        r,
        "notes/escape.md",
        "---\ntype: note\n---\nSee [elsewhere](../../outside.md).\n",
    );
    write(
        r,
        "notes/odd-fields.md",
        "---\ntype: note\ntitle: [not, text]\ntags: {a: 1}\n---\nWarehouse temperatures.\n",
    );
    write(r, "notes/latin1.md", b"---\ntype: note\n---\ncaf\xe9\n");
    write(r, ".drafts/secret.md", "---\ntype: note\n---\nhidden\n");
    write(r, "images/chart.png", [0x89, b'P', b'N', b'G']);
    write(
        tmp.path(),
        "outside.md",
        "---\ntype: note\n---\nOUTSIDE SECRET\n",
    );
    #[cfg(unix)]
    std::os::unix::fs::symlink(tmp.path().join("outside.md"), root.join("notes/link.md")).unwrap();
    tmp
}

fn load(tmp: &TempDir) -> OkfBundle {
    OkfBundle::load(tmp.path().join("warehouse")).unwrap()
}

async fn call(registry: &ToolRegistry, tool: &str, args: Value) -> ToolResult {
    registry
        .execute(&ToolCall::json("c1", tool, args), None)
        .await
}

#[test]
fn a_bundle_loads_its_concepts_links_and_problems() {
    let tmp = warehouse();
    let bundle = load(&tmp);
    assert_eq!(bundle.name(), "warehouse");
    assert_eq!(
        bundle.ids(),
        [
            "glossary",
            "notes/broken-yaml",
            "notes/escape",
            "notes/odd-fields",
            "notes/plain",
            "notes/untyped",
            "sources/erp-manual",
            "tables/customers",
            "tables/orders",
        ]
    );
    let orders = bundle.concept("tables/orders").unwrap();
    assert_eq!(orders.concept_type(), Some("table"));
    assert_eq!(orders.title(), Some("Orders"));
    assert_eq!(
        orders.description(),
        Some("One row per order placed in the shop.")
    );
    assert_eq!(orders.resource(), Some("bq://shop.orders"));
    assert_eq!(orders.tags(), ["sales", "core"]);
    assert_eq!(orders.timestamp(), Some("2026-01-02T10:00:00Z"));
    assert_eq!(orders.front_matter["owner"], "data-team");
    assert!(
        orders
            .body
            .starts_with("Each order belongs to a [customer]")
    );
    let links: Vec<(&str, &str, LinkKind)> = orders
        .links
        .iter()
        .map(|l| (l.to.as_str(), l.text.as_str(), l.kind))
        .collect();
    assert_eq!(
        links,
        [
            ("tables/customers", "customer", LinkKind::Link),
            ("glossary", "the glossary", LinkKind::Link),
            ("sources/erp-manual", "ERP manual", LinkKind::Citation),
        ]
    );
    let incoming: Vec<&str> = bundle
        .incoming("tables/orders")
        .iter()
        .map(|l| l.from.as_str())
        .collect();
    assert_eq!(incoming, ["notes/plain", "tables/customers"]);
    assert_eq!(
        bundle.concept("tables/customers").unwrap().tags(),
        ["sales"]
    );
    assert_eq!(
        bundle.concept("notes/broken-yaml").unwrap().body,
        "Invoices are sent monthly.\n"
    );
    assert!(
        bundle
            .concept("notes/plain")
            .unwrap()
            .front_matter
            .is_empty()
    );

    let shown: Vec<(String, DiagnosticKind)> = bundle
        .diagnostics()
        .iter()
        .map(|d| (d.to_string(), d.kind))
        .collect();
    let mut expected = vec![
        (
            "notes/broken-yaml.md: its front matter is not valid YAML (line 3: ".to_owned(),
            DiagnosticKind::FrontMatter,
        ),
        (
            "notes/escape.md: the link \"elsewhere\" points to `../../outside.md`, which is \
             outside the bundle"
                .to_owned(),
            DiagnosticKind::BrokenLink,
        ),
        (
            "notes/latin1.md: skipped: it is not UTF-8 text; save it as UTF-8".to_owned(),
            DiagnosticKind::Skipped,
        ),
    ];
    #[cfg(unix)]
    expected.push((
        "notes/link.md: skipped: it is a symbolic link, which is not followed because it can \
         lead outside the bundle; put the file itself in the bundle"
            .to_owned(),
        DiagnosticKind::Skipped,
    ));
    expected.extend([
        (
            "notes/odd-fields.md: `title` should be text; it is ignored".to_owned(),
            DiagnosticKind::InvalidField,
        ),
        (
            "notes/odd-fields.md: `tags` should be a list of text (`tags: [a, b]`); the entries \
             that are not text are ignored"
                .to_owned(),
            DiagnosticKind::InvalidField,
        ),
        (
            "notes/plain.md: it does not start with YAML front matter (a `---` line, `key: \
             value` lines, then a closing `---` line); the concept is loaded without front \
             matter fields"
                .to_owned(),
            DiagnosticKind::FrontMatter,
        ),
        (
            "notes/untyped.md: its front matter has no `type` (text), which OKF requires; add \
             one such as `type: concept`"
                .to_owned(),
            DiagnosticKind::MissingType,
        ),
        (
            "tables/orders.md: the link \"archive\" points to `gone.md`, but the bundle has no \
             concept `tables/gone`"
                .to_owned(),
            DiagnosticKind::BrokenLink,
        ),
    ]);
    assert_eq!(shown.len(), expected.len(), "{shown:#?}");
    for ((got, got_kind), (want, want_kind)) in shown.iter().zip(&expected) {
        assert!(got.starts_with(want.as_str()), "{got}\n{want}");
        assert_eq!(got_kind, want_kind, "{got}");
    }
    assert!(
        shown[0]
            .0
            .ends_with("; the concept is loaded without front matter fields")
    );
    assert_eq!(bundle.diagnostics_for("notes/odd-fields").len(), 2);
    let diagnostic: &Diagnostic = &bundle.diagnostics()[0];
    assert_eq!(
        serde_json::to_value(diagnostic).unwrap()["kind"],
        "front_matter"
    );
}

#[test]
fn an_unreadable_root_is_the_only_load_error() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let err = OkfBundle::load(&missing).unwrap_err();
    assert!(matches!(err, OkfError::Read { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "cannot read the OKF bundle at `{}`; give the path of a readable directory",
            missing.display()
        )
    );
    write(tmp.path(), "file.md", "x");
    let err = OkfBundle::load(tmp.path().join("file.md")).unwrap_err();
    assert!(matches!(err, OkfError::Read { .. }));
    // An empty directory is an empty bundle.
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let empty = OkfBundle::load(tmp.path().join("empty")).unwrap();
    assert!(empty.ids().is_empty() && empty.diagnostics().is_empty());
}

#[tokio::test]
async fn the_tools_come_with_the_first_bundle_and_leave_with_the_last() {
    let tmp = warehouse();
    let registry = ToolRegistry::new();
    let first = attach_okf(&registry, load(&tmp)).unwrap();
    assert_eq!(registry.list_tools(), OKF_TOOLS);
    let err = attach_okf(&registry, load(&tmp)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "an OKF bundle named `warehouse` is already attached; give this one another name with \
         `OkfBundle::named`"
    );
    let second = attach_okf(&registry, load(&tmp).named("copy")).unwrap();
    let names: Vec<String> = attached_okf(&registry)
        .iter()
        .map(|h| h.name().to_owned())
        .collect();
    assert_eq!(names, ["warehouse", "copy"]);
    assert!(first.detach());
    assert_eq!(registry.list_tools(), OKF_TOOLS);
    assert!(!first.detach(), "a second detach is a no-op");
    assert!(detach_okf(&registry, &second));
    assert!(registry.list_tools().is_empty());
    assert!(attached_okf(&registry).is_empty());
}

#[test]
fn a_taken_tool_name_fails_the_attachment_and_leaves_nothing_behind() {
    let tmp = warehouse();
    let registry = ToolRegistry::new();
    registry
        .register_tool(ToolDefinition::new(
            GET_NEIGHBORS,
            "Mine.",
            json!({"type": "object"}),
            handler_fn(|_, _| async { Ok(ToolOutput::text("x")) }),
        ))
        .unwrap();
    let err = attach_okf(&registry, load(&tmp)).unwrap_err();
    assert!(matches!(err, RegistryError::Duplicate(_)));
    assert_eq!(registry.list_tools(), [GET_NEIGHBORS]);
    assert!(attached_okf(&registry).is_empty());
}

#[tokio::test]
async fn the_tools_are_read_only_and_never_ask() {
    let tmp = warehouse();
    let registry = ToolRegistry::new();
    attach_okf(&registry, load(&tmp)).unwrap();
    let asked = Arc::new(Mutex::new(0));
    let count = Arc::clone(&asked);
    let strict = PermissionManager::new(PermissionLevel::Ask).with_approval(move |_req| {
        *count.lock().unwrap() += 1;
        async { ApprovalDecision::Deny }
    });
    for (tool, args) in [
        (SEARCH_CONCEPTS, json!({"query": "orders"})),
        (READ_CONCEPT, json!({"id": "glossary"})),
        (GET_NEIGHBORS, json!({"id": "glossary"})),
    ] {
        let def = registry.get_tool(tool).unwrap();
        assert_eq!(def.permission, Some(PermissionLevel::Allow), "{tool}");
        assert_eq!(def.annotations.read_only_hint, Some(true), "{tool}");
        assert_eq!(def.annotations.destructive_hint, Some(false), "{tool}");
        let result = registry
            .execute(&ToolCall::json("c", tool, args), Some(&strict))
            .await;
        assert!(!result.is_error, "{tool}: {result:?}");
    }
    assert_eq!(*asked.lock().unwrap(), 0);
}

#[tokio::test]
async fn search_ranks_concepts_and_returns_ids_and_snippets() {
    let tmp = warehouse();
    let registry = ToolRegistry::new();
    attach_okf(&registry, load(&tmp)).unwrap();

    let result = call(&registry, SEARCH_CONCEPTS, json!({"query": "orders"})).await;
    assert!(!result.is_error, "{result:?}");
    let results = result.structured.clone().unwrap()["results"].clone();
    assert_eq!(
        results[0]["id"], "tables/orders",
        "the title match ranks first: {results:#}"
    );
    assert_eq!(results[0]["type"], "table");
    assert_eq!(results[0]["bundle"], "warehouse");
    assert_eq!(results[0]["tags"], json!(["sales", "core"]));
    assert_eq!(results[0]["problems"], 1);
    let first = result.content.split("\n\n").next().unwrap();
    assert!(
        first.starts_with("[1] tables/orders — Orders (type: table; score "),
        "{first}"
    );
    assert!(
        first.contains("\nOne row per order placed in the shop.\ntags: sales, core\n"),
        "{first}"
    );
    assert!(
        first.contains(
            "\nEach **order** belongs to a customer. Revenue is defined in the glossary."
        ),
        "the snippet is plain text with the match marked: {first}"
    );
    assert!(first.ends_with("(note: this concept's file has problems; read_concept lists them)"));
    let ids: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"tables/customers") && ids.contains(&"notes/plain"),
        "{ids:?}"
    );
    assert!(!ids.contains(&"notes/latin1"));

    // Tags, descriptions and bodies are searched, with stemming.
    let by_tag = call(&registry, SEARCH_CONCEPTS, json!({"query": "core"})).await;
    assert_eq!(
        by_tag.structured.unwrap()["results"][0]["id"],
        "tables/orders"
    );
    let by_body = call(
        &registry,
        SEARCH_CONCEPTS,
        json!({"query": "refund", "limit": 1}),
    )
    .await;
    let body_results = by_body.structured.unwrap()["results"].clone();
    assert_eq!(body_results.as_array().unwrap().len(), 1);
    let hit = body_results[0]["id"].as_str().unwrap();
    assert!(["notes/plain", "glossary"].contains(&hit), "{hit}");
    assert!(
        body_results[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("**Refunds**")
            || body_results[0]["snippet"]
                .as_str()
                .unwrap()
                .contains("**refunds**")
    );
    // A concept whose front matter could not be read is still searchable.
    let untyped = call(&registry, SEARCH_CONCEPTS, json!({"query": "invoices"})).await;
    assert!(
        untyped
            .content
            .starts_with("[1] notes/broken-yaml (type: none; score "),
        "{}",
        untyped.content
    );

    let none = call(&registry, SEARCH_CONCEPTS, json!({"query": "zebra"})).await;
    assert!(!none.is_error);
    assert_eq!(
        none.content,
        "No concepts matched \"zebra\". Try other words, fewer words, or a broader query."
    );
    let syntax = call(
        &registry,
        SEARCH_CONCEPTS,
        json!({"query": "title:\"orders* AND ("}),
    )
    .await;
    assert!(
        !syntax.is_error,
        "search syntax is read as words: {syntax:?}"
    );
    let empty = call(&registry, SEARCH_CONCEPTS, json!({"query": "  "})).await;
    assert!(empty.is_error);
    assert_eq!(
        empty.content,
        "`query` is empty. Call search_concepts again with the words to look for."
    );
}

#[tokio::test]
async fn read_concept_returns_front_matter_and_body() {
    let tmp = warehouse();
    let registry = ToolRegistry::new();
    attach_okf(&registry, load(&tmp)).unwrap();
    let result = call(&registry, READ_CONCEPT, json!({"id": "tables/customers"})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.content,
        "Concept `tables/customers` (bundle `warehouse`)\n---\ntype: table\ntitle: Customers\n\
         tags: sales\n---\nCustomers place [orders](./orders.md).\n\n\
         Links: 1 from this concept, 1 to it (get_neighbors lists them)."
    );
    let structured = result.structured.unwrap();
    assert_eq!(structured["front_matter"]["title"], "Customers");
    assert_eq!(structured["diagnostics"], json!([]));

    // IDs written as paths are accepted.
    for id in ["/tables/orders.md", "./tables/orders", " tables/orders.md "] {
        let result = call(&registry, READ_CONCEPT, json!({"id": id})).await;
        assert!(
            result.content.starts_with("Concept `tables/orders`"),
            "{id}: {}",
            result.content
        );
    }
    let orders = call(&registry, READ_CONCEPT, json!({"id": "tables/orders"})).await;
    assert!(
        orders.content.contains("\ntags: [\"sales\",\"core\"]\n"),
        "{}",
        orders.content
    );
    assert!(orders.content.ends_with(
        "\n\nNote: this concept's file has problems, so some fields or links may be missing: \
         the link \"archive\" points to `gone.md`, but the bundle has no concept `tables/gone`."
    ));

    let untyped = call(&registry, READ_CONCEPT, json!({"id": "notes/untyped"})).await;
    assert!(
        untyped.content.ends_with(
            "Note: this concept's file has problems, so some fields or links may be missing: its \
         front matter has no `type` (text), which OKF requires; add one such as `type: concept`."
        ),
        "{}",
        untyped.content
    );
    assert_eq!(
        untyped.structured.unwrap()["diagnostics"][0]["kind"],
        "missing_type"
    );

    let unknown = call(&registry, READ_CONCEPT, json!({"id": "tables/order"})).await;
    assert!(unknown.is_error);
    assert_eq!(
        unknown.content,
        "There is no concept `tables/order` in bundle `warehouse`. Did you mean \
         `tables/orders`? Call search_concepts to find concept IDs."
    );
    let far = call(&registry, READ_CONCEPT, json!({"id": "zzz"})).await;
    assert_eq!(
        far.content,
        "There is no concept `zzz` in bundle `warehouse`. Call search_concepts to find concept IDs."
    );
    let reserved = call(&registry, READ_CONCEPT, json!({"id": "index"})).await;
    assert!(reserved.is_error, "index.md is not a concept");
    let empty = call(&registry, READ_CONCEPT, json!({"id": "/"})).await;
    assert_eq!(
        empty.content,
        "`id` is empty. Call read_concept with a concept ID from search_concepts."
    );
}

#[tokio::test]
async fn get_neighbors_lists_links_both_ways_with_text_and_kind() {
    let tmp = warehouse();
    let registry = ToolRegistry::new();
    attach_okf(&registry, load(&tmp)).unwrap();
    let result = call(&registry, GET_NEIGHBORS, json!({"id": "tables/orders"})).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.content,
        "Neighbors of `tables/orders` (bundle `warehouse`)\n\n\
         Links from it (3):\n\
         - [link] tables/customers — Customers (link text: \"customer\")\n\
         - [link] glossary — Glossary (link text: \"the glossary\")\n\
         - [citation] sources/erp-manual — ERP manual (link text: \"ERP manual\")\n\n\
         Links to it (2):\n\
         - [link] notes/plain (link text: \"orders\")\n\
         - [link] tables/customers — Customers (link text: \"orders\")\n\n\
         Note: this concept's file has problems, so some fields or links may be missing: the \
         link \"archive\" points to `gone.md`, but the bundle has no concept `tables/gone`."
    );
    let structured = result.structured.unwrap();
    assert_eq!(
        structured["outgoing"][2],
        json!({"id": "sources/erp-manual", "title": "ERP manual", "text": "ERP manual", "kind": "citation"})
    );
    assert_eq!(structured["incoming"][0]["id"], "notes/plain");

    let lonely = call(&registry, GET_NEIGHBORS, json!({"id": "notes/untyped"})).await;
    assert!(lonely.content.starts_with(
        "Neighbors of `notes/untyped` (bundle `warehouse`)\n\nLinks from it (0):\n(none)\n\n\
         Links to it (0):\n(none)"
    ));
    let cited = call(
        &registry,
        GET_NEIGHBORS,
        json!({"id": "sources/erp-manual"}),
    )
    .await;
    assert!(cited.content.contains(
        "Links to it (1):\n- [citation] tables/orders — Orders (link text: \"ERP manual\")"
    ));
}

#[tokio::test]
async fn several_bundles_are_told_apart_by_name() {
    let tmp = warehouse();
    let other = tempfile::tempdir().unwrap();
    write(
        other.path(),
        "glossary.md",
        "---\ntype: glossary\ntitle: HR glossary\n---\nLeave: time off.\n",
    );
    write(
        other.path(),
        "policies/leave.md",
        "---\ntype: policy\n---\nBook leave early.\n",
    );
    let registry = ToolRegistry::new();
    attach_okf(&registry, load(&tmp)).unwrap();
    attach_okf(
        &registry,
        OkfBundle::load(other.path()).unwrap().named("hr"),
    )
    .unwrap();

    let ambiguous = call(&registry, READ_CONCEPT, json!({"id": "glossary"})).await;
    assert!(ambiguous.is_error);
    assert_eq!(
        ambiguous.content,
        "Concept `glossary` exists in several bundles (`warehouse`, `hr`). Call read_concept \
         again with `bundle` set to one of them."
    );
    let picked = call(
        &registry,
        READ_CONCEPT,
        json!({"id": "glossary", "bundle": "hr"}),
    )
    .await;
    assert!(
        picked
            .content
            .starts_with("Concept `glossary` (bundle `hr`)"),
        "{}",
        picked.content
    );
    let unique = call(&registry, GET_NEIGHBORS, json!({"id": "policies/leave"})).await;
    assert!(
        unique
            .content
            .starts_with("Neighbors of `policies/leave` (bundle `hr`)")
    );
    let wrong = call(
        &registry,
        READ_CONCEPT,
        json!({"id": "glossary", "bundle": "finance"}),
    )
    .await;
    assert_eq!(
        wrong.content,
        "No bundle named `finance` is attached. Attached bundles: `warehouse`, `hr`. Call \
         read_concept again with one of them, or without `bundle`."
    );
    let nowhere = call(&registry, READ_CONCEPT, json!({"id": "policies/sick"})).await;
    assert_eq!(
        nowhere.content,
        "There is no concept `policies/sick`. Did you mean `policies/leave`? Call \
         search_concepts to find concept IDs."
    );
    let search = call(
        &registry,
        SEARCH_CONCEPTS,
        json!({"query": "glossary leave"}),
    )
    .await;
    assert!(search.content.contains("bundle: hr;"), "{}", search.content);
    assert!(
        search.content.contains("bundle: warehouse;"),
        "{}",
        search.content
    );
}

#[tokio::test]
async fn the_builder_takes_a_bundle_beside_passage_knowledge_bases() {
    let tmp = warehouse();
    let model = harnessx::model::TestModel::new()
        .then_call(SEARCH_CONCEPTS, json!({"query": "who places orders"}))
        .then_reply("Customers do.");
    let agent = Agent::builder()
        .model(model.clone())
        .capability(load(&tmp))
        .capability(SqliteKnowledgeBase::in_memory().unwrap())
        .build()
        .unwrap();
    assert_eq!(
        agent.tools().list_tools(),
        [
            SEARCH_CONCEPTS,
            READ_CONCEPT,
            GET_NEIGHBORS,
            KNOWLEDGE_SEARCH,
            "write_todos",
            "read_todos"
        ]
    );
    assert_eq!(
        agent.run("Who places orders?").await.unwrap().output,
        "Customers do."
    );
    let sent = &model.requests()[1].messages;
    assert!(sent.iter().any(|m| matches!(
        m,
        harnessx::Message::Tool { content, .. } if content.contains("tables/customers")
    )));

    let handles = attached_okf(agent.tools());
    assert_eq!(handles.len(), 1);
    assert!(detach_okf(agent.tools(), &handles[0]));
    assert_eq!(
        agent.tools().list_tools(),
        [KNOWLEDGE_SEARCH, "write_todos", "read_todos"]
    );
    let again = attach_okf(agent.tools(), load(&tmp)).unwrap();
    assert!(agent.tools().contains(SEARCH_CONCEPTS));
    assert_eq!(again.name(), "warehouse");
}

#[tokio::test]
async fn a_detached_bundle_copy_of_the_tool_says_so() {
    let tmp = warehouse();
    let registry = ToolRegistry::new();
    let handle = attach_okf(&registry, load(&tmp)).unwrap();
    let kept = registry.get_tool(SEARCH_CONCEPTS).unwrap();
    handle.detach();
    let copy = ToolRegistry::new();
    copy.register_tool(kept).unwrap();
    let result = call(&copy, SEARCH_CONCEPTS, json!({"query": "orders"})).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "No knowledge bundle is attached any more. Answer without it or tell the user."
    );
}

#[cfg(unix)]
#[test]
fn oversized_and_badly_named_files_are_skipped_and_reported() {
    use std::os::unix::ffi::OsStrExt as _;

    let tmp = tempfile::tempdir().unwrap();
    let mut big = b"---\ntype: note\n---\n".to_vec();
    big.resize(4 * 1024 * 1024 + 1, b'a');
    write(tmp.path(), "big.md", big);
    write(tmp.path(), "ok.md", "---\ntype: note\n---\nfine\n");
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
    std::fs::write(tmp.path().join(odd), "---\ntype: note\n---\n").unwrap();
    let bundle = OkfBundle::load(tmp.path()).unwrap();
    assert_eq!(bundle.ids(), ["ok"]);
    let messages: Vec<String> = bundle
        .diagnostics()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        [
            "big.md: skipped: it is 4194305 bytes, more than the 4194304 bytes a concept may \
             have; split it into smaller concepts",
            "caf\u{fffd}.md: skipped: its name is not valid UTF-8; rename it",
        ]
    );
    assert!(
        bundle
            .diagnostics()
            .iter()
            .all(|d| d.kind == DiagnosticKind::Skipped)
    );
}
