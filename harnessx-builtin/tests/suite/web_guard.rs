//! The SSRF guard end to end: the default refuses loopback, private and metadata addresses
//! after DNS resolution and at every redirect hop, before any request reaches them.

#![allow(clippy::unwrap_used)]

use harnessx::{ToolCall, ToolRegistry, ToolResult};
use harnessx_builtin::web::{WebOptions, register_web_tools};
use serde_json::json;

use super::web_server::{Reply, TestServer};

fn registry(options: WebOptions) -> ToolRegistry {
    let registry = ToolRegistry::new();
    register_web_tools(&registry, options).unwrap();
    registry
}

async fn fetch(registry: &ToolRegistry, url: &str) -> ToolResult {
    registry
        .execute(
            &ToolCall::json("c1", "fetch_url", json!({"url": url})),
            None,
        )
        .await
}

#[tokio::test]
async fn the_default_refuses_a_loopback_address_without_connecting() {
    let server = TestServer::start(vec![("/secret", Reply::html("<p>internal</p>"))]).await;
    let registry = registry(WebOptions::default());
    let result = fetch(&registry, &server.url("/secret")).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        format!(
            "fetch_url refused {}: 127.0.0.1 is a loopback address, and this tool may only reach public internet addresses; fetch a public URL instead",
            server.url("/secret")
        )
    );
    assert!(server.requested().is_empty());
}

#[tokio::test]
async fn the_default_refuses_a_name_that_resolves_to_loopback() {
    let server = TestServer::start(vec![("/secret", Reply::html("<p>internal</p>"))]).await;
    let registry = registry(WebOptions::default());
    let result = fetch(&registry, &server.localhost_url("/secret")).await;
    assert!(result.is_error);
    assert!(
        result.content.starts_with(&format!(
            "fetch_url refused {}: localhost resolves to ",
            server.localhost_url("/secret")
        )),
        "{}",
        result.content
    );
    assert!(
        result.content.contains(
            ", a loopback address, and this tool may only reach public internet addresses"
        ),
        "{}",
        result.content
    );
    assert!(server.requested().is_empty());
}

#[tokio::test]
async fn the_default_refuses_a_redirect_to_loopback() {
    // The first host is exempt by name; the redirect target is checked again and refused.
    let server = TestServer::start(vec![("/secret", Reply::html("<p>internal</p>"))]).await;
    let entry = TestServer::start(vec![(
        "/hop",
        Reply::redirect(302, &server.localhost_url("/secret")),
    )])
    .await;
    let registry = registry(WebOptions {
        allow_hosts: vec!["127.0.0.1".into()],
        ..WebOptions::default()
    });
    let result = fetch(&registry, &entry.url("/hop")).await;
    assert!(result.is_error);
    assert!(
        result.content.starts_with(&format!(
            "fetch_url refused {} (a redirect from {}): localhost resolves to ",
            server.localhost_url("/secret"),
            entry.url("/hop")
        )),
        "{}",
        result.content
    );
    assert_eq!(entry.requested(), ["/hop"]);
    assert!(server.requested().is_empty());

    // A redirect to another loopback address, and to a private IP literal, are refused the same way.
    let to_loopback = TestServer::start(vec![(
        "/hop",
        Reply::redirect(
            302,
            &format!("http://127.0.0.2:{}/secret", server.addr.port()),
        ),
    )])
    .await;
    let result = fetch(&registry, &to_loopback.url("/hop")).await;
    assert_eq!(
        result.content,
        format!(
            "fetch_url refused http://127.0.0.2:{}/secret (a redirect from {}): 127.0.0.2 is a loopback address, and this tool may only reach public internet addresses; fetch a public URL instead",
            server.addr.port(),
            to_loopback.url("/hop")
        )
    );
    // A redirect to a private IP literal is refused the same way.
    let to_private = TestServer::start(vec![(
        "/hop",
        Reply::redirect(301, "http://10.0.0.7/admin"),
    )])
    .await;
    let result = fetch(&registry, &to_private.url("/hop")).await;
    assert_eq!(
        result.content,
        format!(
            "fetch_url refused http://10.0.0.7/admin (a redirect from {}): 10.0.0.7 is a private network address, and this tool may only reach public internet addresses; fetch a public URL instead",
            to_private.url("/hop")
        )
    );
}

#[tokio::test]
async fn loopback_in_other_spellings_is_refused() {
    let registry = registry(WebOptions::default());
    for (url, reason) in [
        ("http://[::1]:9/", "::1 is a loopback address"),
        (
            "http://[::ffff:127.0.0.1]:9/",
            "::ffff:127.0.0.1 is a loopback address",
        ),
        ("http://2130706433:9/", "127.0.0.1 is a loopback address"),
        ("http://0x7f.1:9/", "127.0.0.1 is a loopback address"),
        ("http://0.0.0.0:9/", "0.0.0.0 is the unspecified address"),
        (
            "http://192.168.1.1/",
            "192.168.1.1 is a private network address",
        ),
        (
            "http://100.64.1.1/",
            "100.64.1.1 is a carrier-grade NAT (shared) address",
        ),
        ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ] {
        let result = fetch(&registry, url).await;
        assert!(result.is_error, "{url}");
        assert!(result.content.contains(reason), "{url}: {}", result.content);
    }
}

#[tokio::test]
async fn cloud_metadata_stays_refused_when_private_networks_are_allowed() {
    let server = TestServer::start(vec![
        ("/ok", Reply::html("<p>intranet page</p>")),
        (
            "/hop",
            Reply::redirect(302, "http://169.254.169.254/latest/meta-data/"),
        ),
    ])
    .await;
    let registry = registry(WebOptions {
        allow_private_networks: true,
        ..WebOptions::default()
    });
    // Private networks are reachable, by IP and by name...
    let ok = fetch(&registry, &server.localhost_url("/ok")).await;
    assert!(!ok.is_error, "{}", ok.content);
    assert!(ok.content.ends_with("intranet page"));
    // ...but not the metadata service, directly, by redirect or by name.
    let direct = fetch(&registry, "http://169.254.169.254/latest/meta-data/").await;
    assert_eq!(
        direct.content,
        "fetch_url refused http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a cloud metadata endpoint, which this tool never reaches; fetch a public URL instead"
    );
    let hop = fetch(&registry, &server.url("/hop")).await;
    assert!(hop.content.contains("(a redirect from"), "{}", hop.content);
    assert!(
        hop.content
            .contains("169.254.169.254 is a cloud metadata endpoint")
    );
    let v6 = fetch(&registry, "http://[fd00:ec2::254]/").await;
    assert!(
        v6.content
            .contains("fd00:ec2::254 is a cloud metadata endpoint"),
        "{}",
        v6.content
    );
    let by_name = fetch(
        &registry,
        "http://metadata.google.internal/computeMetadata/v1/",
    )
    .await;
    assert!(
        by_name
            .content
            .contains("metadata.google.internal is a cloud metadata endpoint"),
        "{}",
        by_name.content
    );
}
