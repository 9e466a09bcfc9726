//! fetch_url against a loopback HTTP server: conversion, charsets, truncation, redirects, caps,
//! errors, and the registration the helper and the direct tool value produce.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use harnessx::{PermissionLevel, ReplayPolicy, ToolCall, ToolRegistry, ToolResult};
use harnessx_builtin::web::{WebOptions, fetch_url, register_web_tools};
use serde_json::{Value, json};

use super::web_server::{Reply, TestServer};

/// Options that let the tool reach the loopback test server.
fn local() -> WebOptions {
    WebOptions {
        allow_private_networks: true,
        ..WebOptions::default()
    }
}

fn registry(options: WebOptions) -> ToolRegistry {
    let registry = ToolRegistry::new();
    register_web_tools(&registry, options).unwrap();
    registry
}

async fn call(registry: &ToolRegistry, args: Value) -> ToolResult {
    registry
        .execute(&ToolCall::json("c1", "fetch_url", args), None)
        .await
}

const ARTICLE: &str = r#"<!DOCTYPE html><html><head><title>Release notes</title>
<style>.x{display:none}</style><script>track()</script></head>
<body><nav><a href="/">Home</a></nav><main><h1>Version 2</h1>
<p>Faster <em>builds</em> and a <a href="https://example.com/docs">manual</a>.</p>
<pre><code>cargo build</code></pre></main></body></html>"#;

#[tokio::test]
async fn html_becomes_markdown_with_title_and_without_noise() {
    let server = TestServer::start(vec![("/notes", Reply::html(ARTICLE))]).await;
    let registry = registry(local());
    let result = call(&registry, json!({"url": server.url("/notes")})).await;
    assert!(!result.is_error, "{}", result.content);
    let text = &result.content;
    assert!(
        text.starts_with(&format!("URL: {}\n", server.url("/notes"))),
        "{text}"
    );
    assert!(text.contains("Title: Release notes\n"), "{text}");
    assert!(text.contains("Content-Type: text/html\n"), "{text}");
    assert!(text.contains("# Version 2"), "{text}");
    assert!(text.contains("Faster *builds*"), "{text}");
    assert!(
        text.contains("[manual](https://example.com/docs)"),
        "{text}"
    );
    assert!(text.contains("cargo build"), "{text}");
    for noise in ["track()", "display:none", "Home"] {
        assert!(!text.contains(noise), "{noise} leaked into {text}");
    }
    assert!(!text.contains("Truncated"), "{text}");
}

#[tokio::test]
async fn a_page_of_200_000_nested_divs_returns_plain_text_and_does_not_crash() {
    let depth = 200_000;
    let page = format!(
        "<html><head><title>Nested</title></head><body>{}<p>The bottom line</p>{}</body></html>",
        "<div>".repeat(depth),
        "</div>".repeat(depth)
    );
    let server = TestServer::start(vec![("/deep", Reply::html(&page))]).await;
    let result = call(&registry(local()), json!({"url": server.url("/deep")})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result.content.contains("Title: Nested"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains(&format!(
            "(This page nests its elements about {} levels deep, more than the 512 that can be \
             converted to Markdown safely, so this is its plain text, without links or \
             formatting.)\n\nThe bottom line",
            depth + 2
        )),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn charsets_from_the_header_and_from_meta_are_decoded() {
    let latin1 = Reply::ok(
        "text/plain; charset=ISO-8859-1",
        b"Caf\xe9 cr\xe8me".to_vec(),
    );
    let meta = Reply::ok(
        "text/html",
        b"<html><head><meta charset=\"windows-1252\"></head><body><p>na\xefve \x80 price</p></body></html>"
            .to_vec(),
    );
    let server = TestServer::start(vec![("/latin1", latin1), ("/meta", meta)]).await;
    let registry = registry(local());
    let a = call(&registry, json!({"url": server.url("/latin1")})).await;
    assert!(a.content.ends_with("\n\nCafé crème"), "{}", a.content);
    let b = call(&registry, json!({"url": server.url("/meta")})).await;
    assert!(b.content.contains("naïve € price"), "{}", b.content);
}

#[tokio::test]
async fn json_and_text_pass_through_unchanged() {
    let body = r#"{"name": "harnessx", "tags": ["<b>not html</b>"]}"#;
    let server = TestServer::start(vec![
        ("/api", Reply::ok("application/json", body)),
        ("/raw", Reply::new(200, None, "plain words, no type")),
    ])
    .await;
    let registry = registry(local());
    let result = call(&registry, json!({"url": server.url("/api")})).await;
    assert!(
        result.content.ends_with(&format!("\n\n{body}")),
        "{}",
        result.content
    );
    assert!(result.content.contains("Content-Type: application/json\n"));
    let raw = call(&registry, json!({"url": server.url("/raw")})).await;
    assert!(
        raw.content.contains("Content-Type: unknown\n"),
        "{}",
        raw.content
    );
    assert!(
        raw.content.ends_with("plain words, no type"),
        "{}",
        raw.content
    );
}

#[tokio::test]
async fn binary_content_is_refused_with_a_clear_message() {
    let server = TestServer::start(vec![
        (
            "/logo.png",
            Reply::ok("image/png", b"\x89PNG\r\n\x1a\n\0\0\0".to_vec()),
        ),
        (
            "/blob",
            Reply::new(200, None, b"\x00\x01\x02binary".to_vec()),
        ),
    ])
    .await;
    let registry = registry(local());
    let png = call(&registry, json!({"url": server.url("/logo.png")})).await;
    assert!(png.is_error);
    assert_eq!(
        png.content,
        format!(
            "{} is binary content (image/png, 11 bytes), and fetch_url returns text only; look for an HTML or plain-text version of it",
            server.url("/logo.png")
        )
    );
    let blob = call(&registry, json!({"url": server.url("/blob")})).await;
    assert!(blob.is_error);
    assert!(
        blob.content
            .contains("is binary content (unknown, 9 bytes)"),
        "{}",
        blob.content
    );
}

#[tokio::test]
async fn truncation_caps_the_text_and_start_index_reads_on() {
    let body: String = (0..100).map(|i| format!("line {i:03}\n")).collect(); // 900 chars
    let server =
        TestServer::start(vec![("/long.txt", Reply::ok("text/plain", body.clone()))]).await;
    let registry = registry(local());
    let first = call(
        &registry,
        json!({"url": server.url("/long.txt"), "max_length": 400}),
    )
    .await;
    assert!(!first.is_error);
    assert!(
        first.content.contains("Showing characters 0-400 of 900\n"),
        "{}",
        first.content
    );
    assert!(first.content.contains(&body[..400]));
    assert!(!first.content.contains(&body[400..410]));
    assert!(first.content.ends_with(
        "[Truncated: 500 more characters. Call fetch_url again with the same url and start_index=400 to read on (max_length sets how many characters you get, up to 50000).]"
    ), "{}", first.content);

    let rest = call(
        &registry,
        json!({"url": server.url("/long.txt"), "start_index": 400, "max_length": 1000}),
    )
    .await;
    assert!(
        rest.content.contains("Showing characters 400-900 of 900\n"),
        "{}",
        rest.content
    );
    assert!(
        rest.content.ends_with(body[400..].trim_end_matches('\n'))
            || rest.content.ends_with(&body[400..])
    );
    assert!(!rest.content.contains("Truncated"));

    let past = call(
        &registry,
        json!({"url": server.url("/long.txt"), "start_index": 900}),
    )
    .await;
    assert!(past.is_error);
    assert_eq!(
        past.content,
        format!(
            "start_index 900 is past the end of the text of {}, which has 900 characters; call fetch_url with a smaller start_index",
            server.url("/long.txt")
        )
    );
}

#[tokio::test]
async fn truncation_counts_characters_not_bytes() {
    let body = "é".repeat(30); // 60 bytes, 30 characters
    let server =
        TestServer::start(vec![("/e", Reply::ok("text/plain; charset=utf-8", body))]).await;
    let registry = registry(local());
    let result = call(
        &registry,
        json!({"url": server.url("/e"), "max_length": 10}),
    )
    .await;
    assert!(
        result.content.contains("Showing characters 0-10 of 30"),
        "{}",
        result.content
    );
    assert!(
        result
            .content
            .contains(&format!("\n\n{}\n\n[Truncated", "é".repeat(10)))
    );
}

#[tokio::test]
async fn a_configured_max_length_leaves_only_url_in_the_schema() {
    let body = "x".repeat(300);
    let server = TestServer::start(vec![("/x", Reply::ok("text/plain", body))]).await;
    let registry = ToolRegistry::new();
    let names = register_web_tools(
        &registry,
        WebOptions {
            include: Some(vec!["fetch_url".into()]),
            max_length: Some(100),
            ..local()
        },
    )
    .unwrap();
    assert_eq!(names, ["fetch_url"]);
    let schema = registry.get_tool("fetch_url").unwrap().input_schema;
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The absolute http:// or https:// URL to fetch."}},
            "required": ["url"],
            "additionalProperties": false
        })
    );
    // The model cannot set the limit: the schema refuses the argument.
    let refused = call(
        &registry,
        json!({"url": server.url("/x"), "max_length": 1000}),
    )
    .await;
    assert!(refused.is_error);
    assert!(
        refused.content.contains("max_length"),
        "{}",
        refused.content
    );
    let result = call(&registry, json!({"url": server.url("/x")})).await;
    assert!(
        result.content.contains("Showing characters 0-100 of 300"),
        "{}",
        result.content
    );
    assert!(result.content.ends_with(
        "[Truncated: 200 more characters. This tool returns at most 100 characters of a page. For the rest, fetch a more specific URL: a sub-page, a single section, or a plain-text or raw version of this document.]"
    ), "{}", result.content);
}

#[tokio::test]
async fn the_download_stops_at_the_cap() {
    let body = "a".repeat(5000);
    let server = TestServer::start(vec![("/big", Reply::ok("text/plain", body))]).await;
    let registry = registry(WebOptions {
        max_download_bytes: 1000,
        ..local()
    });
    let result = call(&registry, json!({"url": server.url("/big")})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result
            .content
            .contains(&format!("\n\n{}\n\n", "a".repeat(1000)))
    );
    assert!(!result.content.contains(&"a".repeat(1001)));
    assert!(result.content.ends_with(
        "[The page is larger than the download limit of 1000 bytes; the text above is its beginning only. For the rest, fetch a smaller or more specific URL.]"
    ), "{}", result.content);
}

fn encoded(reply: Reply, encoding: &str) -> Reply {
    let mut reply = reply;
    reply
        .headers
        .push(("Content-Encoding".to_owned(), encoding.to_owned()));
    reply
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test]
async fn compressed_bodies_are_decoded_or_refused_by_name() {
    use std::io::Write as _;
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zlib.write_all(b"<p>deflated words</p>").unwrap();
    let server = TestServer::start(vec![
        (
            "/gz",
            encoded(Reply::html(""), "gzip").with_body(gzip(ARTICLE.as_bytes())),
        ),
        (
            "/deflate",
            encoded(Reply::html(""), "deflate").with_body(zlib.finish().unwrap()),
        ),
        (
            "/br",
            encoded(Reply::html(""), "br").with_body(b"\x1b\x03\x00".to_vec()),
        ),
    ])
    .await;
    let registry = registry(local());
    let gz = call(&registry, json!({"url": server.url("/gz")})).await;
    assert!(!gz.is_error, "{}", gz.content);
    assert!(
        gz.content.contains("Title: Release notes\n"),
        "{}",
        gz.content
    );
    assert!(gz.content.contains("# Version 2"), "{}", gz.content);
    let deflate = call(&registry, json!({"url": server.url("/deflate")})).await;
    assert!(
        deflate.content.ends_with("\n\ndeflated words"),
        "{}",
        deflate.content
    );
    let br = call(&registry, json!({"url": server.url("/br")})).await;
    assert!(br.is_error);
    assert_eq!(
        br.content,
        format!(
            "{} sent its content compressed as `br`, which fetch_url cannot decode (it decodes gzip and deflate); fetch another URL or a plain version of the page",
            server.url("/br")
        )
    );
}

#[tokio::test]
async fn a_decompression_bomb_stops_at_the_download_cap() {
    // 32 MiB of text in a gzip body of about 32 KB: the cap counts decoded bytes.
    let bomb = gzip(&vec![b'a'; 32 * 1024 * 1024]);
    assert!(bomb.len() < 100_000, "{}", bomb.len());
    let server = TestServer::start(vec![(
        "/bomb",
        encoded(Reply::ok("text/plain", bomb), "gzip"),
    )])
    .await;
    let registry = registry(WebOptions {
        max_download_bytes: 1000,
        ..local()
    });
    let result = call(&registry, json!({"url": server.url("/bomb")})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result
            .content
            .contains(&format!("\n\n{}\n\n", "a".repeat(1000)))
    );
    assert!(!result.content.contains(&"a".repeat(1001)));
    assert!(result.content.ends_with(
        "[The page is larger than the download limit of 1000 bytes; the text above is its beginning only. For the rest, fetch a smaller or more specific URL.]"
    ), "{}", result.content);
}

#[tokio::test]
async fn redirects_are_followed_and_bounded() {
    let server = TestServer::start(vec![
        ("/old", Reply::redirect(301, "/middle")),
        ("/middle", Reply::redirect(307, "/new")),
        ("/new", Reply::html("<p>arrived</p>")),
        ("/loop", Reply::redirect(302, "/loop")),
        ("/nowhere", Reply::new(302, None, "")),
        ("/to-file", Reply::redirect(302, "file:///etc/passwd")),
    ])
    .await;
    let registry = registry(WebOptions {
        max_redirects: 3,
        ..local()
    });
    let ok = call(&registry, json!({"url": server.url("/old")})).await;
    assert!(
        ok.content.starts_with(&format!(
            "URL: {}\nRedirected from: {}\n",
            server.url("/new"),
            server.url("/old")
        )),
        "{}",
        ok.content
    );
    assert!(ok.content.ends_with("arrived"));

    let looped = call(&registry, json!({"url": server.url("/loop")})).await;
    assert_eq!(
        looped.content,
        format!(
            "{} was reached after 3 redirects, the limit; the site redirects in a loop or too often, so fetch the final page's URL directly",
            server.url("/loop")
        )
    );
    let nowhere = call(&registry, json!({"url": server.url("/nowhere")})).await;
    assert_eq!(
        nowhere.content,
        format!(
            "{} answered HTTP 302 (a redirect) without a Location header; try another URL",
            server.url("/nowhere")
        )
    );
    let file = call(&registry, json!({"url": server.url("/to-file")})).await;
    assert_eq!(
        file.content,
        format!(
            "{} redirected to file:///etc/passwd, which is not an http:// or https:// URL; fetch_url does not follow it",
            server.url("/to-file")
        )
    );
}

#[tokio::test]
async fn error_statuses_are_errors_with_advice_and_an_excerpt() {
    let server = TestServer::start(vec![(
        "/gone",
        Reply::new(
            410,
            Some("text/html"),
            "<h1>Gone</h1><p>This page moved away.</p>",
        ),
    )])
    .await;
    let registry = registry(local());
    let gone = call(&registry, json!({"url": server.url("/gone")})).await;
    assert!(gone.is_error);
    assert_eq!(
        gone.content,
        format!(
            "{} answered HTTP 410; the page does not exist; check the URL. The page says: # Gone This page moved away.",
            server.url("/gone")
        )
    );
    let missing = call(&registry, json!({"url": server.url("/missing")})).await;
    assert!(
        missing
            .content
            .contains("answered HTTP 404; the page does not exist"),
        "{}",
        missing.content
    );
}

#[tokio::test]
async fn other_schemes_and_bad_urls_get_one_line_errors() {
    let registry = registry(local());
    let file = call(&registry, json!({"url": "file:///etc/passwd"})).await;
    assert!(file.is_error);
    assert_eq!(
        file.content,
        "fetch_url supports only http:// and https:// URLs, not `file:` (file:///etc/passwd); pass a web URL"
    );
    let ftp = call(&registry, json!({"url": "ftp://example.com/x"})).await;
    assert!(
        ftp.content
            .starts_with("fetch_url supports only http:// and https:// URLs, not `ftp:`")
    );
    let bad = call(&registry, json!({"url": "not a url"})).await;
    assert_eq!(
        bad.content,
        "`not a url` is not a valid URL (relative URL without a base); pass an absolute http:// or https:// URL"
    );
    assert!(!bad.content.contains('\n'));
}

#[tokio::test]
async fn a_refused_connection_is_reported_with_the_url() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    let result = call(&registry(local()), json!({"url": url})).await;
    assert!(result.is_error);
    assert!(
        result
            .content
            .starts_with(&format!("fetching {url} failed: ")),
        "{}",
        result.content
    );
    assert!(
        result
            .content
            .ends_with("; check the URL, or try again later"),
        "{}",
        result.content
    );
    assert!(!result.content.contains('\n'));
}

#[tokio::test]
async fn a_slow_server_hits_the_time_limit() {
    let server = TestServer::start(vec![(
        "/slow",
        Reply::html("<p>late</p>").delayed(Duration::from_secs(5)),
    )])
    .await;
    let registry = registry(WebOptions {
        timeout_seconds: 1.0,
        ..local()
    });
    let result = call(&registry, json!({"url": server.url("/slow")})).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        format!(
            "fetching {} did not finish within 0.9 s; the site is slow or unreachable, so try again later or another URL",
            server.url("/slow")
        )
    );
}

#[tokio::test]
async fn the_helper_registers_ordinary_metadata_and_never_marks_fetching_replay_safe() {
    let registry = registry(WebOptions::default());
    let def = registry.get_tool("fetch_url").unwrap();
    assert_eq!(def.replay_policy, ReplayPolicy::Manual);
    assert!(def.concurrent);
    assert_eq!(def.permission, None);
    assert_eq!(def.timeout, Some(Duration::from_secs(60)));
    let props = def.input_schema["properties"].as_object().unwrap();
    assert_eq!(
        props.keys().collect::<Vec<_>>(),
        ["url", "max_length", "start_index"]
    );
    // The description says what the tool does, its limits, and how to get more.
    for needle in [
        "Fetch a web page over http or https",
        "default 20000, at most 50000",
        "start_index to call again with to read on",
        "up to 10 redirects",
        "downloads at most 10 MB",
        "after 60 seconds",
        "Only public internet addresses",
    ] {
        assert!(
            def.description.contains(needle),
            "{needle}: {}",
            def.description
        );
    }

    let ask = ToolRegistry::new();
    register_web_tools(
        &ask,
        WebOptions {
            permission: Some(PermissionLevel::Ask),
            ..WebOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        ask.get_tool("fetch_url").unwrap().permission,
        Some(PermissionLevel::Ask)
    );
}

#[tokio::test]
async fn the_helper_refuses_unknown_tools_duplicates_and_bad_options() {
    let registry = ToolRegistry::new();
    let err = register_web_tools(
        &registry,
        WebOptions {
            include: Some(vec!["fetch".into()]),
            ..WebOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`include` names `fetch`, which is not a tool of the web bundle; its tools are: fetch_url"
    );
    let excluded = register_web_tools(
        &registry,
        WebOptions {
            exclude: vec!["fetch_url".into()],
            ..WebOptions::default()
        },
    )
    .unwrap();
    assert!(excluded.is_empty());
    register_web_tools(&registry, WebOptions::default()).unwrap();
    let dup = register_web_tools(&registry, WebOptions::default()).unwrap_err();
    assert_eq!(
        dup.to_string(),
        "a tool named `fetch_url` is already registered; pass `replace(true)` to replace it deliberately"
    );
    let replaced = register_web_tools(
        &registry,
        WebOptions {
            replace: true,
            max_length: Some(10),
            ..WebOptions::default()
        },
    )
    .unwrap();
    assert_eq!(replaced, ["fetch_url"]);
    let zero = register_web_tools(
        &ToolRegistry::new(),
        WebOptions {
            max_length: Some(0),
            ..WebOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        zero.to_string(),
        "web option `max_length` must be at least 1 character; leave it unset to let the model choose"
    );
    for (options, message) in [
        (
            WebOptions {
                max_download_bytes: 0,
                ..WebOptions::default()
            },
            "web option `max_download_bytes` must be at least 1 byte",
        ),
        (
            WebOptions {
                timeout_seconds: -1.0,
                ..WebOptions::default()
            },
            "web option `timeout_seconds` must be a positive number of seconds",
        ),
        (
            // Finite, but more seconds than a `Duration` holds: refused, not a panic.
            WebOptions {
                timeout_seconds: 1e300,
                ..WebOptions::default()
            },
            "web option `timeout_seconds` must be a positive number of seconds",
        ),
        (
            WebOptions {
                timeout_seconds: f64::NAN,
                ..WebOptions::default()
            },
            "web option `timeout_seconds` must be a positive number of seconds",
        ),
    ] {
        let err = register_web_tools(&ToolRegistry::new(), options).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[tokio::test]
async fn fetch_url_is_a_plain_function_and_a_tool_value() {
    // As a tool value: ordinary registration metadata, the model sets url, max_length and start_index.
    let registry = ToolRegistry::new();
    let def = registry.register_tool(fetch_url).unwrap();
    assert_eq!(def.name, "fetch_url");
    assert_eq!(def.replay_policy, ReplayPolicy::Manual);
    assert_eq!(def.permission, None);
    assert!(def.concurrent);
    assert_eq!(def.timeout, Some(Duration::from_secs(60)));
    assert_eq!(def.input_schema["required"], json!(["url"]));
    assert!(def.input_schema["properties"]["start_index"].is_object());

    // As a function: an ordinary call with the default guard, which refuses loopback.
    let err = fetch_url("http://127.0.0.1:9/", None).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "fetch_url refused http://127.0.0.1:9/: 127.0.0.1 is a loopback address, and this tool may only reach public internet addresses; fetch a public URL instead"
    );
    assert!(!err.is_transient());
}

#[tokio::test]
async fn a_page_of_self_closing_lookalikes_returns_plain_text_with_a_note() {
    let page = format!(
        "<html><head><title>Marquees</title></head><body>{}</body></html>",
        "<marquee/>scroll ".repeat(20_000)
    );
    let server = TestServer::start(vec![("/m", Reply::html(&page))]).await;
    let result = call(&registry(local()), json!({"url": server.url("/m")})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result.content.contains(
            "\n\n(This page nests its elements about 20002 levels deep, more than the 512 that can be converted to Markdown safely, so this is its plain text, without links or formatting.)\n\nscroll scroll"
        ),
        "{}",
        &result.content[..400]
    );
}

#[tokio::test]
async fn whole_number_floats_are_accepted_as_offsets() {
    let server = TestServer::start(vec![("/t", Reply::ok("text/plain", "0123456789"))]).await;
    let registry = registry(local());
    let result = call(
        &registry,
        json!({"url": server.url("/t"), "start_index": 4.0, "max_length": 3.0}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result
            .content
            .contains("Showing characters 4-7 of 10\n\n456"),
        "{}",
        result.content
    );
}
