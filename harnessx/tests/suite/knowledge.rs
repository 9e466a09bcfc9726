#![allow(clippy::unwrap_used)]
//! Knowledge bases: the embedded FTS5 store and the `knowledge_search` tool that appears while
//! at least one knowledge base is attached.

use std::sync::{Arc, Mutex};

use harnessx::knowledge::{
    Document, KNOWLEDGE_SEARCH, KnowledgeBase, KnowledgeError, Passage, SqliteKnowledgeBase,
    attach_knowledge, attached_knowledge, detach_knowledge, detach_knowledge_named,
};
use harnessx::{
    ApprovalDecision, BoxFuture, PermissionLevel, PermissionManager, ToolCall, ToolOptions,
    ToolOutput, ToolRegistry, handler_fn,
};
use serde_json::json;

async fn handbook() -> SqliteKnowledgeBase {
    let kb = SqliteKnowledgeBase::in_memory().unwrap().named("handbook");
    kb.add_documents(vec![
        Document::new(
            "it/vpn.md",
            "Install WireGuard, download your VPN profile from the portal and connect. \
             The VPN is required for the build servers.",
        )
        .with_title("VPN access"),
        Document::new(
            "hr/leave.md",
            "Request leave in the HR tool at least two weeks ahead.",
        )
        .with_title("Leave"),
        Document::new(
            "it/laptops.md",
            "Laptops are replaced every three years. A broken laptop goes to the IT desk; \
             the VPN profile must be downloaded again on the new laptop.",
        ),
    ])
    .await
    .unwrap();
    kb
}

fn search_call(args: serde_json::Value) -> ToolCall {
    ToolCall::json("k1", KNOWLEDGE_SEARCH, args)
}

#[tokio::test]
async fn the_tool_appears_with_the_first_knowledge_base_and_leaves_with_the_last() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            "echo",
            "Echo.",
            json!({"type": "object"}),
            handler_fn(|_, _| async { Ok(ToolOutput::text("x")) }),
            ToolOptions::new(),
        )
        .unwrap();
    assert_eq!(registry.list_tools(), ["echo"]);

    let first = attach_knowledge(&registry, handbook().await).unwrap();
    assert_eq!(registry.list_tools(), ["echo", "knowledge_search"]);
    let second = attach_knowledge(&registry, SqliteKnowledgeBase::in_memory().unwrap()).unwrap();
    assert_eq!(registry.list_tools(), ["echo", "knowledge_search"]);
    let names: Vec<String> = attached_knowledge(&registry)
        .iter()
        .map(|h| h.name().to_owned())
        .collect();
    assert_eq!(names, ["handbook", "knowledge"]);

    assert!(first.detach());
    assert_eq!(registry.list_tools(), ["echo", "knowledge_search"]);
    assert!(!first.detach(), "a second detach is a no-op");
    assert!(detach_knowledge(&registry, &second));
    assert_eq!(registry.list_tools(), ["echo"]);
    assert!(attached_knowledge(&registry).is_empty());

    attach_knowledge(&registry, handbook().await).unwrap();
    assert_eq!(registry.list_tools(), ["echo", "knowledge_search"]);
}

#[tokio::test]
async fn knowledge_search_is_read_only_and_never_asks() {
    let registry = ToolRegistry::new();
    attach_knowledge(&registry, handbook().await).unwrap();
    let def = registry.get_tool(KNOWLEDGE_SEARCH).unwrap();
    assert_eq!(def.permission, Some(PermissionLevel::Allow));
    assert_eq!(def.annotations.read_only_hint, Some(true));
    assert_eq!(def.annotations.destructive_hint, Some(false));

    let asked = Arc::new(Mutex::new(0));
    let count = Arc::clone(&asked);
    let strict = PermissionManager::new(PermissionLevel::Ask).with_approval(move |_req| {
        *count.lock().unwrap() += 1;
        async { ApprovalDecision::Deny }
    });
    let result = registry
        .execute(
            &search_call(json!({"query": "How do I connect to the VPN?"})),
            Some(&strict),
        )
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(*asked.lock().unwrap(), 0);
    assert!(
        result
            .content
            .starts_with("[1] VPN access — it/vpn.md (score "),
        "{}",
        result.content
    );
    let passages = result.structured.unwrap()["passages"].clone();
    assert_eq!(passages[0]["source"], "it/vpn.md");
    assert_eq!(passages[0]["knowledge_base"], "handbook");
    assert_eq!(passages[1]["source"], "it/laptops.md");
}

#[tokio::test]
async fn queries_with_search_syntax_are_plain_words() {
    let kb = handbook().await;
    for q in [
        r#""unbalanced quote"#,
        "AND OR NOT (",
        "title:vpn",
        "vpn*",
        "-leave ^laptop",
        "NEAR(vpn laptop, 2)",
        "'; DROP TABLE passages; --",
    ] {
        let hits = kb.search(q, 5).await.unwrap_or_else(|e| panic!("{q}: {e}"));
        assert!(hits.len() <= 5, "{q}");
    }
    assert!(kb.search("?!", 5).await.unwrap().is_empty());
    let hits = kb.search("laptops replaced", 1).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].source, "it/laptops.md");
    assert_eq!(kb.counts().await.unwrap(), (3, 3));
}

#[tokio::test]
async fn no_match_and_bad_arguments_say_what_to_do() {
    let registry = ToolRegistry::new();
    attach_knowledge(&registry, handbook().await).unwrap();
    let result = registry
        .execute(&search_call(json!({"query": "quarterly revenue"})), None)
        .await;
    assert!(!result.is_error);
    assert_eq!(
        result.content,
        "No passages matched \"quarterly revenue\". Try other words, fewer words, or a broader query."
    );
    let result = registry
        .execute(&search_call(json!({"query": "   "})), None)
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "`query` is empty. Call knowledge_search again with the words to look for."
    );
    let result = registry
        .execute(&search_call(json!({"query": "vpn", "limit": 0})), None)
        .await;
    assert!(result.is_error);
    assert!(
        result.content.contains("field `limit`"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn documents_are_chunked_replaced_removed_and_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.sqlite");
    let kb = SqliteKnowledgeBase::open(&path).unwrap().passage_chars(200);
    assert_eq!(kb.name(), "notes");
    let long = "Paragraph about storage engines and their write amplification. ".repeat(20);
    let added = kb
        .add_documents(vec![Document::new("db.md", long.clone())])
        .await
        .unwrap();
    assert!(added > 5, "{added}");
    assert_eq!(kb.counts().await.unwrap(), (1, added));
    // Same source again: replaced, not duplicated.
    kb.add_documents(vec![Document::new("db.md", "Short now: amplification.")])
        .await
        .unwrap();
    assert_eq!(kb.counts().await.unwrap(), (1, 1));
    drop(kb);

    let reopened = SqliteKnowledgeBase::open(&path).unwrap();
    let hits = reopened.search("amplification", 5).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, "Short now: amplification.");
    assert!(reopened.remove_document("db.md").await.unwrap());
    assert!(!reopened.remove_document("db.md").await.unwrap());
    assert!(
        reopened
            .search("amplification", 5)
            .await
            .unwrap()
            .is_empty()
    );

    let err = reopened
        .add_documents(vec![Document::new("a", "x"), Document::new(" ", "y")])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "document 1 has an empty `source`; give every document a source such as its path or URL"
    );
    let err = SqliteKnowledgeBase::open(dir.path().join("missing/dir/kb.sqlite")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("could not open the knowledge base at "),
        "{err}"
    );
}

/// A knowledge base that is not SQLite: the tool works with any implementation.
struct Fixed(Vec<Passage>);

impl KnowledgeBase for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
    fn search<'a>(
        &'a self,
        _q: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, KnowledgeError>> {
        let hits = self.0.iter().take(limit).cloned().collect();
        Box::pin(async move { Ok(hits) })
    }
    fn add_documents<'a>(
        &'a self,
        _d: Vec<Document>,
    ) -> BoxFuture<'a, Result<usize, KnowledgeError>> {
        Box::pin(async { Err(KnowledgeError::Other("read-only".to_owned())) })
    }
}

#[tokio::test]
async fn several_knowledge_bases_are_searched_and_merged_by_score() {
    let registry = ToolRegistry::new();
    attach_knowledge(&registry, handbook().await).unwrap();
    attach_knowledge(
        &registry,
        Fixed(vec![Passage {
            source: "wiki/vpn".to_owned(),
            title: None,
            text: "The VPN gateway is vpn.example.com.".to_owned(),
            score: 1000.0,
            knowledge_base: "fixed".to_owned(),
        }]),
    )
    .unwrap();
    let result = registry
        .execute(&search_call(json!({"query": "vpn", "limit": 2})), None)
        .await;
    let passages = result.structured.unwrap()["passages"].clone();
    assert_eq!(passages.as_array().unwrap().len(), 2);
    assert_eq!(passages[0]["source"], "wiki/vpn");
    assert_eq!(passages[1]["knowledge_base"], "handbook");
}

#[tokio::test]
async fn a_user_tool_named_knowledge_search_is_not_replaced() {
    let registry = ToolRegistry::new();
    registry
        .register_with_schema(
            KNOWLEDGE_SEARCH,
            "Mine.",
            json!({"type": "object"}),
            handler_fn(|_, _| async { Ok(ToolOutput::text("mine")) }),
            ToolOptions::new(),
        )
        .unwrap();
    let err = attach_knowledge(&registry, handbook().await).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a tool named `knowledge_search` is already registered; pass `replace(true)` to replace it deliberately"
    );
    assert!(attached_knowledge(&registry).is_empty());
}

/// A knowledge base whose searches fail.
struct Broken;

impl KnowledgeBase for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn search<'a>(
        &'a self,
        _q: &'a str,
        _limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, KnowledgeError>> {
        Box::pin(async { Err(KnowledgeError::Other("index offline".to_owned())) })
    }
    fn add_documents<'a>(
        &'a self,
        _d: Vec<Document>,
    ) -> BoxFuture<'a, Result<usize, KnowledgeError>> {
        Box::pin(async { Ok(0) })
    }
}

#[tokio::test]
async fn failing_knowledge_bases_are_reported_to_the_model() {
    let registry = ToolRegistry::new();
    let broken = attach_knowledge(&registry, Broken).unwrap();
    let result = registry
        .execute(&search_call(json!({"query": "vpn"})), None)
        .await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "Searching the knowledge bases failed (`broken`: index offline). Try again later or answer without them."
    );
    attach_knowledge(&registry, handbook().await).unwrap();
    let result = registry
        .execute(&search_call(json!({"query": "vpn", "limit": 1})), None)
        .await;
    assert!(!result.is_error);
    assert!(
        result.content.ends_with(
            "\n\n(Some knowledge bases could not be searched: `broken`: index offline.)"
        ),
        "{}",
        result.content
    );
    // A handler still held after the last detach says so.
    let def = registry.get_tool(KNOWLEDGE_SEARCH).unwrap();
    broken.detach();
    for handle in attached_knowledge(&registry) {
        handle.detach();
    }
    assert!(!registry.contains(KNOWLEDGE_SEARCH));
    let err = def
        .handler
        .call(
            json!({"query": "vpn"}),
            harnessx::ToolContext::new("k9", KNOWLEDGE_SEARCH),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "No knowledge base is attached any more. Answer without it or tell the user."
    );
}

#[tokio::test]
async fn scores_are_a_relevance_the_model_can_read_even_on_a_tiny_corpus() {
    let kb = SqliteKnowledgeBase::in_memory().unwrap().named("tiny");
    kb.add_documents(vec![
        Document::new("vpn.md", "Connect to the VPN with the WireGuard profile."),
        Document::new("leave.md", "Request leave two weeks ahead."),
    ])
    .await
    .unwrap();
    // Every known word of the query is in the passage: full relevance.
    let hits = kb.search("wireguard vpn", 5).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].score, 1.0);
    // Words the knowledge base never uses ("how", "do", "i") say nothing either way.
    let hits = kb.search("how do I use the VPN?", 5).await.unwrap();
    assert_eq!(hits[0].source, "vpn.md");
    assert_eq!(hits[0].score, 1.0);
    // Half the known words: a relevance strictly between 0 and 1, best passage first.
    let hits = kb.search("vpn leave", 5).await.unwrap();
    assert_eq!(hits.len(), 2);
    assert!(
        hits.iter().all(|h| h.score > 0.2 && h.score < 0.8),
        "{hits:?}"
    );

    let registry = ToolRegistry::new();
    attach_knowledge(&registry, kb).unwrap();
    let result = registry
        .execute(&search_call(json!({"query": "wireguard"})), None)
        .await;
    assert_eq!(
        result.content,
        "[1] vpn.md (score 1.00)\nConnect to the VPN with the WireGuard profile."
    );
}

#[tokio::test]
async fn passages_matching_more_of_the_query_rank_first() {
    let kb = handbook().await;
    let hits = kb.search("broken laptop vpn profile", 3).await.unwrap();
    assert_eq!(hits[0].source, "it/laptops.md", "{hits:?}");
    assert!(hits[0].score > hits[1].score, "{hits:?}");
    assert!(hits.iter().all(|h| h.score > 0.0 && h.score <= 1.0));
}

#[tokio::test]
async fn a_whole_number_limit_sent_as_a_float_is_honoured() {
    let registry = ToolRegistry::new();
    attach_knowledge(&registry, handbook().await).unwrap();
    let result = registry
        .execute(
            &search_call(json!({"query": "vpn laptop", "limit": 1.0})),
            None,
        )
        .await;
    assert!(!result.is_error, "{}", result.content);
    let passages = result.structured.unwrap()["passages"].clone();
    assert_eq!(passages.as_array().unwrap().len(), 1);

    let result = registry
        .execute(&search_call(json!({"query": "vpn", "limit": 1.5})), None)
        .await;
    assert!(result.is_error);
    assert!(result.content.contains("limit"), "{}", result.content);
}

#[tokio::test]
async fn a_folder_becomes_a_knowledge_base_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("handbook");
    std::fs::create_dir_all(root.join("it/.drafts")).unwrap();
    std::fs::write(
        root.join("it/vpn.md"),
        "# VPN access\n\nInstall WireGuard and connect.",
    )
    .unwrap();
    std::fs::write(root.join("leave.txt"), "Request leave two weeks ahead.").unwrap();
    std::fs::write(root.join("it/.drafts/secret.md"), "WireGuard draft").unwrap();
    std::fs::write(root.join("logo.png"), [0x89, b'P', b'N', b'G']).unwrap();
    std::fs::write(root.join("binary.txt"), [0xff, 0xfe, 0x00, 0x57]).unwrap();

    let kb = SqliteKnowledgeBase::from_dir(&root).await.unwrap();
    assert_eq!(kb.name(), "handbook");
    assert_eq!(
        kb.counts().await.unwrap().0,
        2,
        "only the readable text files"
    );
    let hits = kb.search("wireguard", 5).await.unwrap();
    assert_eq!(hits.len(), 1, "hidden folders are skipped: {hits:?}");
    assert_eq!(hits[0].source, "it/vpn.md");
    assert_eq!(hits[0].title.as_deref(), Some("VPN access"));
    assert_eq!(kb.search("leave", 5).await.unwrap()[0].title, None);

    let missing = root.join("nope");
    let err = SqliteKnowledgeBase::from_dir(&missing).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "could not read {}; check that it exists and is readable",
            missing.display()
        )
    );
}

#[tokio::test]
async fn knowledge_bases_detach_by_name() {
    let registry = ToolRegistry::new();
    attach_knowledge(&registry, handbook().await).unwrap();
    attach_knowledge(
        &registry,
        SqliteKnowledgeBase::in_memory().unwrap().named("wiki"),
    )
    .unwrap();
    assert_eq!(detach_knowledge_named(&registry, "nope"), 0);
    assert_eq!(detach_knowledge_named(&registry, "handbook"), 1);
    assert!(registry.contains(KNOWLEDGE_SEARCH));
    assert_eq!(detach_knowledge_named(&registry, "wiki"), 1);
    assert!(!registry.contains(KNOWLEDGE_SEARCH));
}
