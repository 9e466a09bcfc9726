//! Webhooks over real HTTP, on servers in this process: a receiver on 127.0.0.1 that refuses
//! the first attempts gets the event signed on a later one and the delivery log shows every
//! attempt; the API creates, reads, changes and deletes webhooks without ever returning a secret
//! it did not make; a `410 Gone` turns a webhook off; what is pending shows in
//! `harnessx_webhook_backlog`; bad settings are refused naming the field (API) or line (file).

use std::time::Duration;

use harnessx_server::Config;
use serde_json::{Value, json};

use crate::common::receiver::{Received, Receiver, now_secs, verify};
use crate::common::{KEY, Server, scrape};

/// The Standard Webhooks spec's example secret.
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A server over the common agents, with `extra` TOML appended.
async fn server(extra: String) -> Server {
    Server::start_with(move |c| format!("{c}\n{extra}"), |o| o).await
}

/// The webhook's delivery log once `done` holds for it (polled: an attempt is recorded right
/// after the receiver answered it).
async fn log_until(s: &Server, webhook: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..400 {
        let (status, log) = s.get(&format!("/v2/webhooks/{webhook}/deliveries")).await;
        assert_eq!(status, 200, "{log}");
        if done(&log) {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the delivery log of `{webhook}` did not get there");
}

fn message(e: &Value) -> &str {
    e["error"]["message"].as_str().unwrap_or_default()
}

#[test]
fn the_test_verifier_accepts_the_specs_published_example() {
    // The verifier below checks the server's signatures; it must itself be right.
    let example = Received {
        path: "/".into(),
        headers: [
            ("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"),
            ("webhook-timestamp", "1614265330"),
            (
                "webhook-signature",
                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
        body: r#"{"test": 2432232314}"#.into(),
        status: 200,
    };
    assert!(verify(SECRET, &example));
    let mut tampered = example;
    tampered.body = r#"{"test": 2432232315}"#.into();
    assert!(!verify(SECRET, &tampered));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_reaches_a_receiver_that_refused_twice_signed_and_logged() {
    // The first two attempts of each message are refused, the third accepted.
    let receiver = Receiver::start(|_, earlier| if earlier < 2 { 503 } else { 200 }).await;
    let s = server(format!(
        r#"
[server]
webhook_first_retry_seconds = 0.2

[[webhooks]]
id = "pager"
url = "{}"
events = ["run.waiting_input"]
secret = "{SECRET}"
"#,
        receiver.url("/hook")
    ))
    .await;
    let id = s.start_run("asker", "export the report").await["id"]
        .as_i64()
        .unwrap();
    let run = s.wait_for(id, &["waiting_input"]).await;
    let got = receiver
        .wait_until(30, "three attempts", |got| got.len() >= 3)
        .await;
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(
        got.iter().map(|r| r.status).collect::<Vec<_>>(),
        [503, 503, 200]
    );
    let message_id = got[0].header("webhook-id").to_owned();
    assert!(message_id.starts_with("msg_"), "{message_id}");
    for r in &got {
        assert_eq!(r.path, "/hook");
        assert_eq!(r.header("webhook-id"), message_id, "stable across retries");
        assert_eq!(r.header("content-type"), "application/json");
        assert!(verify(SECRET, r), "a bad signature: {r:#?}");
        let sent: i64 = r.header("webhook-timestamp").parse().unwrap();
        assert!((sent - now_secs()).abs() < 120, "{sent}");
        assert_eq!(r.body, got[0].body, "the same body on every attempt");
    }
    let event = got[2].json();
    assert_eq!(event["type"], "run.waiting_input");
    let timestamp = event["timestamp"].as_str().unwrap();
    assert!(
        timestamp.len() == 24 && timestamp.ends_with('Z') && timestamp.as_bytes()[10] == b'T',
        "{timestamp}"
    );
    let data = &event["data"];
    assert_eq!(data["run_id"], id);
    assert_eq!(data["agent"], "asker");
    assert_eq!(data["conversation"], run["conversation"]);
    assert_eq!(data["state"], "waiting_input");
    assert_eq!(
        data["needs_input"], run["needs_input"],
        "what the run's GET shows"
    );
    assert_eq!(data["needs_input"][0]["kind"], "question");

    let log = log_until(&s, "pager", |log| {
        log["deliveries"][0]["state"] == "delivered"
    })
    .await;
    let deliveries = log["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 1, "{log}");
    let d = &deliveries[0];
    assert_eq!(d["message_id"], message_id.as_str());
    assert_eq!(d["event"], "run.waiting_input");
    assert_eq!(d["run_id"], id);
    assert!(d.get("next_attempt_at").is_none(), "{d}");
    let attempts = d["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3, "{d}");
    for (i, a) in attempts.iter().enumerate() {
        assert_eq!(a["attempt"], i + 1);
        assert!(a["at"].as_str().unwrap().ends_with('Z'), "{a}");
        assert!(a["duration_ms"].as_i64().unwrap() >= 0, "{a}");
    }
    assert_eq!(attempts[0]["status"], 503);
    assert_eq!(
        attempts[0]["error"],
        "the receiver answered 503 Service Unavailable"
    );
    assert!(attempts[0]["next_attempt_at"].is_string(), "{d}");
    assert!(attempts[1]["next_attempt_at"].is_string(), "{d}");
    assert_eq!(attempts[2]["status"], 200);
    assert!(attempts[2].get("error").is_none() && attempts[2].get("next_attempt_at").is_none());
    assert!(
        scrape(&s).await.contains("\nharnessx_webhook_backlog 0\n"),
        "nothing is pending"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_manages_webhooks_and_returns_a_secret_only_when_it_made_one() {
    let receiver = Receiver::accepting().await;
    let s = Server::start().await;

    // Made by the server: the secret comes back this once.
    let (status, made) = s
        .post(
            "/v2/webhooks",
            json!({"url": receiver.url("/hook"), "events": ["run.completed", "run.completed"],
                   "description": "ops"}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let id = made["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("wh_") && id.len() == 19, "{id}");
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(
        harnessx_server::webhooks::sign::Secret::parse(&secret).is_ok(),
        "{secret}"
    );
    assert_eq!(made["events"], json!(["run.completed"]));
    assert_eq!(made["enabled"], true);
    assert_eq!(made["version"], 1);
    assert_eq!(made["description"], "ops");

    // Never again.
    let (_, one) = s.get(&format!("/v2/webhooks/{id}")).await;
    assert!(one.get("secret").is_none(), "{one}");
    let (_, list) = s.get("/v2/webhooks").await;
    assert_eq!(list["webhooks"].as_array().unwrap().len(), 1);
    assert!(!list.to_string().contains(&secret), "{list}");

    // Given: not echoed.
    let (status, given) = s
        .post(
            "/v2/webhooks",
            json!({"id": "mine", "url": receiver.url("/mine"), "events": ["run.failed"],
                   "secret": SECRET, "max_attempts": 3}),
        )
        .await;
    assert_eq!(status, 201, "{given}");
    assert!(given.get("secret").is_none(), "{given}");
    assert_eq!(given["max_attempts"], 3);
    let (status, again) = s
        .post(
            "/v2/webhooks",
            json!({"id": "mine", "url": receiver.url("/x"), "events": ["run.failed"]}),
        )
        .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["code"], "webhook_exists");
    assert_eq!(
        message(&again),
        "a webhook with the id `mine` exists already; change it with PATCH /v2/webhooks/mine"
    );

    // The made secret signs what the webhook gets.
    let run = s.start_run("replier", "hi").await["id"].as_i64().unwrap();
    s.wait_for(run, &["completed"]).await;
    let got = receiver
        .wait_until(30, "the completed event", |got| !got.is_empty())
        .await;
    assert!(verify(&secret, &got[0]), "{got:#?}");
    let event = got[0].json();
    assert_eq!(event["type"], "run.completed");
    assert_eq!(event["data"]["run_id"], run);
    assert_eq!(event["data"]["state"], "completed");
    assert_eq!(event["data"]["output"], "hello");
    assert_eq!(got[0].path, "/hook", "`mine` takes failures only");

    // The log pages newest first.
    let second = s.start_run("replier", "again").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(second, &["completed"]).await;
    receiver
        .wait_until(30, "the second event", |got| got.len() == 2)
        .await;
    let (_, page) = s
        .get(&format!("/v2/webhooks/{id}/deliveries?limit=1"))
        .await;
    assert_eq!(page["deliveries"][0]["run_id"], second, "{page}");
    let next = page["next_before"].as_i64().unwrap();
    let (_, rest) = s
        .get(&format!(
            "/v2/webhooks/{id}/deliveries?limit=1&before={next}"
        ))
        .await;
    assert_eq!(rest["deliveries"][0]["run_id"], run, "{rest}");
    let (_, end) = s
        .get(&format!(
            "/v2/webhooks/{id}/deliveries?limit=1&before={}",
            rest["next_before"]
        ))
        .await;
    assert_eq!(end["deliveries"], json!([]), "{end}");
    assert!(end["next_before"].is_null(), "{end}");

    // Changes are versions; a new secret is never shown either.
    let (status, changed) = s
        .patch(
            "/v2/webhooks/mine",
            json!({"events": ["run.cancelled", "run.waiting_input"], "enabled": false,
                   "secret": "whsec_c2VjcmV0LW9mLXR3ZW50eS1mb3VyLWJ5dGVzIQ==", "description": ""}),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["version"], 2);
    assert_eq!(changed["enabled"], false);
    assert_eq!(
        changed["events"],
        json!(["run.waiting_input", "run.cancelled"])
    );
    assert!(changed.get("secret").is_none() && changed.get("description").is_none());

    // Bad values name the field and what to give.
    let all = "run.waiting_input, run.completed, run.failed, run.cancelled";
    let shape = "write it like https://hooks.example.com/harnessx";
    let refusals = [
        (
            json!({"url": "not a url", "events": ["run.failed"]}),
            format!("url: `not a url` is not a URL (relative URL without a base); {shape}"),
        ),
        (
            json!({"url": "ftp://h/x", "events": ["run.failed"]}),
            format!("url: the scheme `ftp` is not http or https; {shape}"),
        ),
        (
            json!({"url": "https://h/x", "events": ["run.done"]}),
            format!("events: `run.done` is not an event; give one or more of {all}"),
        ),
        (
            json!({"url": "https://h/x", "events": []}),
            format!("events: the list is empty; give one or more of {all}"),
        ),
        (
            json!({"url": "https://h/x", "events": ["run.failed"], "secret": "hunter2"}),
            "secret: the secret does not start with `whsec_`; write it as `whsec_` followed by \
             the base64 of 24 to 64 random bytes (make one with `echo whsec_$(openssl rand \
             -base64 32)`), or leave it out and the server makes one"
                .to_owned(),
        ),
        (
            json!({"url": "https://h/x", "events": ["run.failed"], "max_attempts": 0}),
            "max_attempts: 0 is out of range; give 1 to 50".to_owned(),
        ),
        (
            json!({"id": "no spaces", "url": "https://h/x", "events": ["run.failed"]}),
            "id: `no spaces` is not a valid name; use 1 to 64 letters, digits, `_` or `-`"
                .to_owned(),
        ),
    ];
    for (body, expected) in refusals {
        let (status, e) = s.post("/v2/webhooks", body.clone()).await;
        assert_eq!(status, 422, "{body} gave {e}");
        assert_eq!(e["error"]["code"], "invalid_setting", "{e}");
        assert_eq!(message(&e), expected, "{body}");
    }
    let (status, e) = s
        .patch("/v2/webhooks/mine", json!({"url": "https://h/#frag"}))
        .await;
    assert_eq!(status, 422, "{e}");
    assert_eq!(
        message(&e),
        format!("url: the URL has a `#` fragment, which is never sent; remove it; {shape}")
    );
    let (status, e) = s
        .post(
            "/v2/webhooks",
            json!({"url": "https://h/x", "events": ["run.failed"], "secrt": "x"}),
        )
        .await;
    assert_eq!(status, 422, "{e}");
    assert!(message(&e).contains("unknown field `secrt`"), "{e}");
    let (status, e) = s
        .patch("/v2/webhooks/nobody", json!({"enabled": true}))
        .await;
    assert_eq!(status, 404, "{e}");
    assert_eq!(e["error"]["code"], "unknown_webhook");
    assert_eq!(
        message(&e),
        "no webhook has the id `nobody`; GET /v2/webhooks lists them"
    );
    let (status, e) = s.get("/v2/webhooks/mine/deliveries?limit=0").await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(message(&e), "limit is 0; give 1 to 200");
    let (status, e) = s.get("/v2/webhooks/mine/deliveries?before=0").await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(
        message(&e),
        "before is 0; give a delivery id (a positive integer)"
    );

    // Deleted: gone from the list, its log too.
    let (status, deleted) = s.delete("/v2/webhooks/mine").await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted, json!({"id": "mine", "deleted": true}));
    for path in ["/v2/webhooks/mine", "/v2/webhooks/mine/deliveries"] {
        let (status, e) = s.get(path).await;
        assert_eq!(status, 404, "{path}: {e}");
    }
    let (status, _) = s.delete("/v2/webhooks/mine").await;
    assert_eq!(status, 404);

    // Every route is in the OpenAPI document, the log's cursor in the query.
    let (_, doc) = s.get("/v2/openapi.json").await;
    for (path, method) in [
        ("/v2/webhooks", "get"),
        ("/v2/webhooks", "post"),
        ("/v2/webhooks/{id}", "get"),
        ("/v2/webhooks/{id}", "patch"),
        ("/v2/webhooks/{id}", "delete"),
        ("/v2/webhooks/{id}/deliveries", "get"),
    ] {
        assert!(doc["paths"][path][method].is_object(), "{method} {path}");
    }
    let params = doc["paths"]["/v2/webhooks/{id}/deliveries"]["get"]["parameters"]
        .as_array()
        .unwrap();
    for name in ["limit", "before"] {
        let p = params.iter().find(|p| p["name"] == name).unwrap();
        assert_eq!(p["in"], "query", "{p}");
    }
    assert!(doc["components"]["schemas"]["CreatedWebhook"].is_object());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_answering_410_gone_turns_its_webhook_off() {
    let receiver = Receiver::start(|_, _| 410).await;
    let s = server(format!(
        "[[webhooks]]\nid = \"old\"\nurl = \"{}\"\nevents = [\"run.completed\"]\nsecret = \"{SECRET}\"\n",
        receiver.url("/gone")
    ))
    .await;
    let run = s.start_run("replier", "hi").await["id"].as_i64().unwrap();
    s.wait_for(run, &["completed"]).await;
    let log = log_until(&s, "old", |log| log["deliveries"][0]["state"] == "failed").await;
    let attempts = log["deliveries"][0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{log}");
    assert_eq!(attempts[0]["status"], 410);
    assert_eq!(
        attempts[0]["error"],
        "the receiver answered 410 Gone: the delivery was given up and the webhook turned off"
    );
    let (_, hook) = s.get("/v2/webhooks/old").await;
    assert_eq!(hook["enabled"], false, "{hook}");
    let reason = hook["disabled_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the receiver answered 410 Gone at ")
            && reason
                .ends_with("; turn it on again with PATCH /v2/webhooks/old {\"enabled\": true}"),
        "{reason}"
    );
    // Off: the next run's event is not even queued for it.
    let next = s.start_run("replier", "again").await["id"]
        .as_i64()
        .unwrap();
    s.wait_for(next, &["completed"]).await;
    let (_, log) = s.get("/v2/webhooks/old/deliveries").await;
    assert_eq!(log["deliveries"].as_array().unwrap().len(), 1, "{log}");
    assert_eq!(receiver.got().len(), 1);
    let (_, on) = s.patch("/v2/webhooks/old", json!({"enabled": true})).await;
    assert_eq!(on["enabled"], true, "{on}");
    assert!(on.get("disabled_reason").is_none(), "{on}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undelivered_events_are_the_backlog_and_attempts_are_bounded() {
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let s = server(format!(
        r#"
[server]
webhook_first_retry_seconds = 3600

[[webhooks]]
id = "down"
url = "http://{closed}/hook"
events = ["run.completed"]
secret = "{SECRET}"

[[webhooks]]
id = "once"
url = "http://{closed}/once"
events = ["run.completed"]
secret = "{SECRET}"
max_attempts = 1
"#
    ))
    .await;
    let run = s.start_run("replier", "hi").await["id"].as_i64().unwrap();
    s.wait_for(run, &["completed"]).await;
    let down = log_until(&s, "down", |log| {
        log["deliveries"][0]["attempts"]
            .as_array()
            .is_some_and(|a| a.len() == 1)
    })
    .await;
    let d = &down["deliveries"][0];
    assert_eq!(d["state"], "pending", "{d}");
    assert!(d["next_attempt_at"].is_string(), "{d}");
    let error = d["attempts"][0]["error"].as_str().unwrap();
    assert!(error.contains("onnect"), "{error}");
    assert!(d["attempts"][0].get("status").is_none(), "{d}");
    let once = log_until(&s, "once", |log| log["deliveries"][0]["state"] == "failed").await;
    assert_eq!(
        once["deliveries"][0]["attempts"].as_array().unwrap().len(),
        1
    );
    assert!(once["deliveries"][0].get("next_attempt_at").is_none());
    let metrics = scrape(&s).await;
    assert!(
        metrics.contains("\nharnessx_webhook_backlog 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("# HELP harnessx_webhook_backlog Webhook deliveries not yet delivered"),
        "{metrics}"
    );
    s.stop().await;
}

#[test]
fn webhook_settings_in_the_file_name_the_line_and_key() {
    let hook = |body: &str| {
        format!("[agents.a]\nmodel = \"script\"\n\n[[webhooks]]\nurl = \"https://h/x\"\n{body}\n")
    };
    let ok = hook(&format!("events = [\"run.failed\"]\nsecret = \"{SECRET}\""));
    let config = Config::parse(&ok).unwrap();
    assert_eq!(config.webhooks.len(), 1);
    let cases = [
        (
            "[[webhooks]]\nurl = \"ftp://h/x\"\nevents = [\"run.failed\"]\n".to_owned(),
            "line 2: `webhooks[0].url`: the scheme `ftp` is not http or https; write it like \
             https://hooks.example.com/harnessx"
                .to_owned(),
        ),
        (
            hook(&format!(
                "events = [\"run.failed\", \"run.finished\"]\nsecret = \"{SECRET}\""
            )),
            "line 6: `webhooks[0].events[1]`: `run.finished` is not an event; give one or more \
             of run.waiting_input, run.completed, run.failed, run.cancelled"
                .to_owned(),
        ),
        (
            hook(&format!("events = []\nsecret = \"{SECRET}\"")),
            "line 6: `webhooks[0].events`: the list is empty".to_owned(),
        ),
        (
            hook("events = [\"run.failed\"]"),
            "line 4: `webhooks[0].secret`: no secret is given; give the secret receivers verify \
             signatures with"
                .to_owned(),
        ),
        (
            hook("events = [\"run.failed\"]\nsecret = \"whsec_c2hvcnQ=\""),
            "line 7: `webhooks[0].secret`: the secret holds 5 bytes, not 24 to 64".to_owned(),
        ),
        (
            hook(&format!(
                "events = [\"run.failed\"]\nsecret = \"{SECRET}\"\nmax_attempts = 99"
            )),
            "line 8: `webhooks[0].max_attempts`: 99 is out of range; give 1 to 50".to_owned(),
        ),
        (
            hook(&format!(
                "events = [\"run.failed\"]\nsecret = \"{SECRET}\"\nid = \"a b\""
            )),
            "line 8: `webhooks[0].id`: `a b` is not a valid name".to_owned(),
        ),
        (
            format!(
                "{ok}\n[[webhooks]]\nurl = \"https://h/x\"\nevents = [\"run.completed\"]\nsecret = \"{SECRET}\"\n"
            ),
            "line 10: `webhooks[1].url`: the webhook on line 4 has the same id, `wh_".to_owned(),
        ),
        (
            hook(&format!(
                "events = [\"run.failed\"]\nsecret = \"{SECRET}\"\nsecrt = \"x\""
            )),
            "line 8".to_owned(),
        ),
        (
            "[server]\nwebhook_max_attempts = 0\n".to_owned(),
            "line 2: `server.webhook_max_attempts`: 0 is out of range; give 1 to 50".to_owned(),
        ),
        (
            "[server]\nwebhook_first_retry_seconds = 0\n".to_owned(),
            "line 2: `server.webhook_first_retry_seconds`: 0 is out of range; give 0.1 to 3600 \
             seconds"
                .to_owned(),
        ),
    ];
    for (text, expected) in cases {
        let e = Config::parse(&text).unwrap_err().to_string();
        assert!(
            e.contains(&expected),
            "{text}\n  gave: {e}\n  expected: {expected}"
        );
    }
    let e = Config::parse(&hook(&format!(
        "events = [\"run.failed\"]\nsecret = \"{SECRET}\"\nsecrt = \"x\""
    )))
    .unwrap_err()
    .to_string();
    assert!(e.contains("secrt"), "{e}");
    let twice = format!(
        "{ok}id = \"x\"\n\n[[webhooks]]\nid = \"x\"\nurl = \"https://h/y\"\nevents = [\"run.completed\"]\nsecret = \"{SECRET}\"\n"
    );
    let e = Config::parse(&twice).unwrap_err().to_string();
    assert!(
        e.contains(
            "line 11: `webhooks[1].id`: the webhook on line 4 has the id `x` too; give each \
             webhook its own `id`"
        ),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_built_without_webhooks_answers_so() {
    use std::sync::Arc;

    use harnessx_runtime::{Runtime, SqliteStore};
    use harnessx_server::agents::{Agents, Catalog};
    use harnessx_server::api::{ApiKeys, AppState};

    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let agents = Arc::new(Agents::new(store.clone(), Duration::from_secs(60)));
    let runtime = Runtime::builder()
        .store_arc(store)
        .catalog(Catalog(Arc::clone(&agents)))
        .build()
        .unwrap();
    let state = Arc::new(AppState::new(runtime, agents, ApiKeys::new([KEY])));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = harnessx_server::router(state);
    let task = tokio::spawn(async move { axum::serve(listener, app).await });
    let s = Server::remote(base);
    let (status, e) = s.get("/v2/webhooks").await;
    assert_eq!(status, 503, "{e}");
    assert_eq!(e["error"]["code"], "webhooks_unavailable");
    assert_eq!(
        message(&e),
        "this server was built without webhooks (AppState::webhooks was not given)"
    );
    task.abort();
}

#[test]
fn the_other_refusals_say_what_to_do() {
    use harnessx_server::ServeError;
    use harnessx_server::webhooks::WebhookChangeError;
    assert_eq!(
        WebhookChangeError::Busy("pager".into()).to_string(),
        "webhook `pager` was changed by others while this change was made; read it and try again"
    );
    assert_eq!(
        WebhookChangeError::Store("disk full".into()).to_string(),
        "the store failed: disk full"
    );
    assert_eq!(
        ServeError::Webhook {
            webhook: "pager".into(),
            message: "the run store is closed".into()
        }
        .to_string(),
        "webhook `pager`: the run store is closed"
    );
}
