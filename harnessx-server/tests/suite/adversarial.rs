//! Bad keys, bodies, headers and ids: always a JSON error with a code and a 4xx status.

use serde_json::{Value, json};

use crate::common::{KEY, Server, split};

fn code(body: &Value) -> &str {
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not a JSON error: {body}"))
}

#[tokio::test]
async fn no_key_no_access_except_healthz() {
    let s = Server::start().await;
    let r = s.http.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    for path in [
        "/v2/runs",
        "/v2/agents",
        "/v2/openapi.json",
        "/v2/runs/1",
        "/v2/nowhere",
    ] {
        let r = s.http.get(s.url(path)).send().await.unwrap();
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let (status, body) = split(r).await;
        assert_eq!((status, code(&body)), (401, "unauthorized"), "{path}");
        let r = s
            .http
            .get(s.url(path))
            .bearer_auth("test-key-0123456789abcdeX")
            .send()
            .await
            .unwrap();
        assert_eq!(split(r).await.0, 401, "{path} with a wrong key");
        let r = s
            .http
            .get(s.url(path))
            .header("Authorization", format!("Basic {KEY}"))
            .send()
            .await
            .unwrap();
        assert_eq!(split(r).await.0, 401, "{path} with another scheme");
    }
    let r = s
        .http
        .post(s.url("/v2/runs"))
        .json(&json!({"agent": "replier", "input": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(split(r).await.0, 401);
    let (_, list) = s.get("/v2/runs").await;
    assert!(
        list["runs"].as_array().unwrap().is_empty(),
        "an unauthorised POST created nothing"
    );
}

/// Every route and method the OpenAPI document lists refuses a request without a key, with a
/// run and a conversation in the store to find; only the probes `/healthz` and `/readyz` and
/// the console's static pages (which hold no data) answer without one.
#[tokio::test]
async fn every_documented_route_refuses_a_request_without_a_key() {
    let s = Server::start().await;
    let run = s.start_run("replier", "a run to look for").await;
    let run_id = run["id"].as_i64().unwrap().to_string();
    let conversation = run["conversation"].as_str().unwrap().to_owned();
    let (status, doc) = s.get("/v2/openapi.json").await;
    assert_eq!(status, 200);
    let paths = doc["paths"].as_object().unwrap();
    let mut checked = 0;
    // The routes documented as needing no key (`security: [{}]`): exactly these two.
    let public: Vec<&str> = paths
        .iter()
        .filter(|(_, item)| {
            item.as_object()
                .unwrap()
                .values()
                .any(|op| op["security"] == json!([{}]))
        })
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(
        public,
        ["/healthz", "/readyz", "/v2/connectors/oauth/callback"]
    );
    // The sign-in callback takes no key, and nothing but a `state` a server issued.
    let (status, body) = split(
        s.http
            .get(s.url("/v2/connectors/oauth/callback?state=guess&code=x"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code(&body)), (400, "unknown_state"));
    for (path, item) in paths.iter().filter(|(p, _)| !public.contains(&p.as_str())) {
        for method in item.as_object().unwrap().keys() {
            let id = if path.starts_with("/v2/agents/") {
                "replier"
            } else {
                conversation.as_str()
            };
            let concrete = path
                .replace("{run_id}", &run_id)
                .replace("{id}", id)
                .replace("{name}", "a-connector");
            assert!(
                !concrete.contains('{'),
                "an unknown path parameter in {path}"
            );
            let url = s.url(&concrete);
            let request = match method.as_str() {
                "get" => s.http.get(&url),
                "post" => s.http.post(&url).json(&json!({})),
                "patch" => s.http.patch(&url).json(&json!({})),
                "put" => s.http.put(&url).json(&json!({})),
                "delete" => s.http.delete(&url),
                other => panic!("{other} {path}: a method this test does not know"),
            };
            let (status, body) = split(request.send().await.unwrap()).await;
            assert_eq!(
                (status, code(&body)),
                (401, "unauthorized"),
                "{method} {path}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 12, "only {checked} routes in the document");
    // The run is as it was: nothing above reached it.
    let (_, after) = s.get(&format!("/v2/runs/{run_id}")).await;
    assert_eq!(after["input"], run["input"]);

    // The console's files answer without a key, and none of them holds an agent, run or key.
    for file in ["", "app.js", "agent.js", "conversation.js", "style.css"] {
        let r = s
            .http
            .get(s.url(&format!("/console/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "/console/{file}");
        let text = r.text().await.unwrap();
        for secret in ["replier", "a run to look for", KEY] {
            assert!(!text.contains(secret), "/console/{file} holds `{secret}`");
        }
    }
}

#[tokio::test]
async fn bad_bodies_get_4xx_with_codes() {
    let s = Server::start().await;
    let post_raw = |body: &'static str, content_type: Option<&'static str>| {
        let mut r = s.http.post(s.url("/v2/runs")).bearer_auth(KEY).body(body);
        if let Some(ct) = content_type {
            r = r.header("content-type", ct);
        }
        r.send()
    };
    let (status, body) = split(
        post_raw("{\"agent\": ", Some("application/json"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code(&body)), (400, "malformed_json"));
    let (status, body) = split(
        post_raw("{\"agent\":\"replier\",\"input\":\"x\"}", None)
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code(&body)), (415, "unsupported_media_type"));
    let (status, body) = split(
        post_raw(
            "{\"agent\":\"replier\",\"input\":\"x\"}",
            Some("text/plain"),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((status, code(&body)), (415, "unsupported_media_type"));
    let (status, body) = split(
        post_raw("{\"agent\":\"replier\"}", Some("application/json"))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));
    assert!(
        body["error"]["message"].as_str().unwrap().contains("input"),
        "{body}"
    );
    let (status, body) = split(
        post_raw(
            "{\"agent\":\"replier\",\"input\":\"x\",\"extra\":1}",
            Some("application/json"),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));
    assert!(
        body["error"]["message"].as_str().unwrap().contains("extra"),
        "{body}"
    );
    let (status, body) = split(post_raw("[1,2,3]", Some("application/json")).await.unwrap()).await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));
    let (status, body) = s
        .post("/v2/runs", json!({"agent": "nobody", "input": "x"}))
        .await;
    assert_eq!((status, code(&body)), (404, "unknown_agent"));
    let (status, body) = s
        .post(
            "/v2/runs",
            json!({"agent": "replier", "input": "x", "conversation": ""}),
        )
        .await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));

    let huge = "x".repeat(crate::common::HUGE);
    let r = s
        .http
        .post(s.url("/v2/runs"))
        .bearer_auth(KEY)
        .json(&json!({"agent": "replier", "input": huge}))
        .send()
        .await
        .unwrap();
    // The unread rest of the body is on the connection: the client is told not to reuse it.
    assert_eq!(r.headers()["connection"], "close");
    let (status, body) = split(r).await;
    assert_eq!((status, code(&body)), (413, "body_too_large"));

    let (status, body) = s.post("/v2/runs/1/answer", json!({})).await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));
    let (status, body) = s
        .post("/v2/runs/1/answer", json!({"text": "a", "answers": []}))
        .await;
    assert_eq!((status, code(&body)), (422, "invalid_body"));
    let (_, list) = s.get("/v2/runs").await;
    assert!(
        list["runs"].as_array().unwrap().is_empty(),
        "no bad request created a run"
    );
}

#[tokio::test]
async fn bad_ids_headers_and_routes_get_4xx_with_codes() {
    let s = Server::start().await;
    for (path, status, expect) in [
        ("/v2/runs/abc", 400, "invalid_run_id"),
        ("/v2/runs/0", 400, "invalid_run_id"),
        ("/v2/runs/-5", 400, "invalid_run_id"),
        ("/v2/runs/99999999999999999999999", 400, "invalid_run_id"),
        ("/v2/runs/9223372036854775807", 404, "unknown_run"),
        ("/v2/runs/42/events", 404, "unknown_run"),
        ("/v2/conversations/nope", 404, "unknown_conversation"),
        ("/v2/conversations/%00x", 400, "invalid_id"),
        ("/v2/agents/nobody", 404, "unknown_agent"),
        ("/v2/runs?limit=0", 400, "invalid_query"),
        ("/v2/runs?limit=abc", 400, "invalid_query"),
        ("/v2/runs?before=-1", 400, "invalid_query"),
        ("/v2/nowhere", 404, "no_route"),
        ("/elsewhere", 404, "no_route"),
    ] {
        let (got, body) = s.get(path).await;
        assert_eq!((got, code(&body)), (status, expect), "{path}: {body}");
    }
    let (status, body) = s.post("/v2/runs/42/answer", json!({"text": "x"})).await;
    assert_eq!((status, code(&body)), (404, "unknown_run"));
    let (status, body) = s.post("/v2/runs/42/cancel", json!(null)).await;
    assert_eq!((status, code(&body)), (404, "unknown_run"));
    let (status, body) = s
        .post("/v2/conversations/nope/messages", json!({"text": "x"}))
        .await;
    assert_eq!((status, code(&body)), (404, "unknown_conversation"));
    let r = s
        .http
        .delete(s.url("/v2/runs"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    let (status, body) = split(r).await;
    assert_eq!((status, code(&body)), (405, "method_not_allowed"));

    let id = s.start_run("replier", "x").await["id"].as_i64().unwrap();
    s.wait_for(id, &["completed"]).await;
    let (status, body) = s
        .post(&format!("/v2/runs/{id}/answer"), json!({"text": "x"}))
        .await;
    assert_eq!((status, code(&body)), (409, "not_waiting"));
    let (status, body) = s
        .post(
            &format!("/v2/runs/{id}/approval"),
            json!({"decision": "deny"}),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "not_waiting"));

    for bad in ["", "has space", "é", &"k".repeat(300)] {
        let r = s
            .http
            .post(s.url("/v2/runs"))
            .bearer_auth(KEY)
            .header("Idempotency-Key", bad.as_bytes())
            .json(&json!({"agent": "replier", "input": "x"}))
            .send()
            .await
            .unwrap();
        let (status, body) = split(r).await;
        assert_eq!(
            (status, code(&body)),
            (400, "invalid_idempotency_key"),
            "{bad:?}"
        );
    }
    for bad in [
        "abc",
        "-1",
        "1.5",
        "9223372036854775808",
        "18446744073709551615",
    ] {
        let r = s
            .http
            .get(s.url(&format!("/v2/runs/{id}/events")))
            .bearer_auth(KEY)
            .header("Last-Event-ID", bad)
            .send()
            .await
            .unwrap();
        let (status, body) = split(r).await;
        assert_eq!(
            (status, code(&body)),
            (400, "invalid_last_event_id"),
            "{bad:?}"
        );
    }
    // A sequence past what a store holds would wrap to a negative number and replay everything.
    let r = s
        .http
        .get(s.url(&format!("/v2/runs/{id}/events?after=9223372036854775808")))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    let (status, body) = split(r).await;
    assert_eq!((status, code(&body)), (400, "invalid_after"), "{body}");
    assert_eq!(
        body["error"]["message"],
        "`after` must be a sequence number of at most 9223372036854775807"
    );
}

#[tokio::test]
async fn event_streams_are_bounded() {
    let s = Server::start_with(|c| format!("[server]\nmax_subscribers = 1\n{c}"), |o| o).await;
    let id = s.start_run("asker", "x").await["id"].as_i64().unwrap();
    let held = s.events(id, None).await;
    let r = s
        .http
        .get(s.url(&format!("/v2/runs/{id}/events")))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    let (status, body) = split(r).await;
    assert_eq!((status, code(&body)), (503, "too_many_subscribers"));
    drop(held);
    // The slot comes back once the first stream is gone.
    let mut ok = false;
    for _ in 0..50 {
        let r = s
            .http
            .get(s.url(&format!("/v2/runs/{id}/events")))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(ok, "the subscriber slot was never released");
}

/// Credentials in a connector's URL are never shown: not in `GET /v2/connectors`, not in a
/// config error quoting its line, not accepted as a short key from the environment.
#[tokio::test]
async fn secrets_are_kept_out_of_what_is_shown() {
    let config = harnessx_server::Config::parse(
        r#"
[connectors.crm]
url = "http://bot:hunter2hunter2@127.0.0.1:9/mcp?token=tok-8f3a1c"
connect_timeout_seconds = 2
"#,
    )
    .unwrap();
    let running = harnessx_server::serve(
        &config,
        harnessx_server::ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .api_key(KEY)
            .sqlite(":memory:"),
    )
    .await
    .unwrap();
    let s = Server::attach(running);
    let (status, body) = s.get("/v2/connectors").await;
    assert_eq!(status, 200);
    let shown = body.to_string();
    assert!(body["connectors"][0]["error"].is_string(), "{shown}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("tok-8f3a1c"),
        "{shown}"
    );
    assert!(shown.contains("redacted@127.0.0.1:9"), "{shown}");

    let e = harnessx_server::Config::parse(
        "[server]\napi_keys = [\"a-secret-key-of-some-length\" \"second\"]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("line 2"), "{e}");
    assert!(!e.contains("a-secret-key-of-some-length"), "{e}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args(["serve", "--bind", "127.0.0.1:0", "--db", ":memory:"])
        .env("HARNESSX_API_KEYS", "x")
        .env_remove("HARNESSX_API_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "HARNESSX_API_KEY or HARNESSX_API_KEYS holds a key of 1 characters; an API key \
             shorter than 16 characters is too easy to guess"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Half-sent requests are closed once their headers are late, and the server keeps answering
/// everyone else meanwhile.
#[tokio::test]
async fn slow_clients_are_cut_off_and_others_still_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let config = harnessx_server::Config::parse("").unwrap();
    let running = harnessx_server::serve(
        &config,
        harnessx_server::ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .api_key(KEY)
            .sqlite(":memory:")
            .header_read_timeout(std::time::Duration::from_millis(300)),
    )
    .await
    .unwrap();
    let s = Server::attach(running);
    let addr = s.url("").trim_start_matches("http://").to_owned();
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(stream);
    }
    let (status, _) = s.get("/healthz").await;
    assert_eq!(status, 200, "a slow client must not hold up others");
    // Each half-sent request is answered with its connection closed once its headers are late.
    for mut stream in slow {
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            stream.read_to_end(&mut rest),
        )
        .await;
        assert!(closed.is_ok(), "a half-sent request was left open");
    }
}
