//! Signing a connector in over HTTP, against the real authorization server and protected MCP
//! server of `harnessx-testkit` (feature `oauth`): the sign-in address, the browser's redirects
//! followed by hand, the callback on this server or another one sharing the database, the
//! connector `ready` and a run calling its tool — and the adversary's side: callbacks with an
//! unknown or used `state` refused before any exchange, tokens sealed at rest, never in an
//! answer.

use harnessx_server::Config;
use harnessx_testkit::oauth::{OAuthServers, WHOAMI};
use serde_json::{Value, json};

use crate::common::Server;

pub const SECRET: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f000112233445566778899aabbccddeeff";

fn config(url: &str, secret: Option<&str>) -> String {
    let server = secret.map_or_else(String::new, |k| format!("[server]\nsecret_key = \"{k}\"\n"));
    format!(
        r#"{server}
[connectors.tickets]
url = "{url}"
oauth = {{}}

[agents.ticketer]
model = "script"
connectors = [{{ name = "tickets" }}]
script = [
  {{ call = "mcp_tickets_whoami", arguments = {{}} }},
  {{ reply = "saw: {{result}}" }},
]
"#
    )
}

/// A browser that does not follow redirects, so each hop can be checked.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Follows the authorization address to the authorization server and returns where it sends
/// the browser back to.
async fn authorize(url: &str) -> String {
    let answer = browser().get(url).send().await.unwrap();
    assert_eq!(answer.status(), 302, "{:?}", answer.text().await);
    answer.headers()["location"].to_str().unwrap().to_owned()
}

fn tickets(list: &Value) -> Value {
    list["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "tickets")
        .cloned()
        .unwrap()
}

/// Every token the authorization server issued.
fn tokens(servers: &OAuthServers) -> Vec<String> {
    servers.with(|auth| {
        auth.access
            .iter()
            .chain(auth.refresh.keys())
            .cloned()
            .collect()
    })
}

fn assert_no_token(servers: &OAuthServers, seen: &str) {
    for token in tokens(servers) {
        assert!(!seen.contains(&token), "a token was shown: {seen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_signs_in_through_the_redirect_and_an_agent_runs_its_tool() {
    let servers = OAuthServers::start(true).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let s = Server::on(&config(servers.url(), Some(SECRET)), db.to_str().unwrap()).await;
    let mut seen = String::new();

    let (status, list) = s.get("/v2/connectors").await;
    assert_eq!(status, 200, "{list}");
    let before = tickets(&list);
    assert_eq!(before["status"], "needs_sign_in", "{before}");
    assert_eq!(before["oauth"], json!({}), "{before}");
    assert_eq!(
        before["error"],
        "connector `tickets` needs a sign-in: press Sign in on the console's Connectors page \
         (POST /v2/connectors/tickets/sign-in)"
    );
    // Listing never registers a client nor starts a sign-in.
    servers.with(|auth| assert_eq!(auth.registrations, 0));

    let (status, started) = s.post("/v2/connectors/tickets/sign-in", json!({})).await;
    assert_eq!(status, 200, "{started}");
    let address = started["authorization_url"].as_str().unwrap().to_owned();
    assert!(
        address.starts_with(&format!("{}/authorize?", servers.issuer())),
        "{address}"
    );
    let back = authorize(&address).await;
    let callback = format!("{}/v2/connectors/oauth/callback?", s.base);
    assert!(back.starts_with(&callback), "{back}");
    servers.with(|auth| {
        assert_eq!(auth.authorize["code_challenge_method"], "S256");
        assert_eq!(
            auth.authorize["redirect_uri"],
            callback.trim_end_matches('?')
        );
    });

    // The callback is a browser navigation: no API key.
    let landed = browser().get(&back).send().await.unwrap();
    assert_eq!(landed.status(), 303);
    assert_eq!(
        landed.headers()["location"],
        "/console/#/connectors?signed_in=tickets"
    );
    servers.with(|auth| assert_eq!(auth.exchanges, 1));

    // The same redirect again: the state was used.
    let again = browser().get(&back).send().await.unwrap();
    assert_eq!(again.status(), 400);
    let body: Value = again.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unknown_state", "{body}");
    assert_eq!(
        body["error"]["message"],
        "this sign-in callback's `state` is unknown, used or expired; start the sign-in again \
         from the console's Connectors page"
    );
    servers.with(|auth| assert_eq!(auth.exchanges, 1, "no second exchange"));

    let (_, list) = s.get("/v2/connectors").await;
    let after = tickets(&list);
    assert_eq!(after["status"], "ready", "{after}");
    assert_eq!(after["tools"][0]["name"], "whoami", "{after}");
    seen.push_str(&list.to_string());

    // Signed in already: nothing to do.
    let (status, ready) = s.post("/v2/connectors/tickets/sign-in", json!({})).await;
    assert_eq!((status, ready.clone()), (200, json!({"status": "ready"})));

    let id = s.start_run("ticketer", "who am I?").await["id"]
        .as_i64()
        .unwrap();
    let run = s.wait_for(id, &["completed", "failed"]).await;
    assert_eq!(run["state"], "completed", "{run}");
    assert!(run["output"].as_str().unwrap().contains(WHOAMI), "{run}");
    seen.push_str(&run.to_string());
    let (_, one) = s.get("/v2/connectors/tickets").await;
    seen.push_str(&one.to_string());
    let (_, doc) = s.get("/v2/openapi.json").await;
    assert!(doc["paths"]["/v2/connectors/{name}/sign-in"]["post"].is_object());
    assert!(doc["paths"]["/v2/connectors/oauth/callback"]["get"].is_object());
    assert_no_token(&servers, &seen);
    s.stop().await;

    // At rest the tokens are sealed: no token in any of the database's files.
    let issued = tokens(&servers);
    assert!(!issued.is_empty());
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for token in &issued {
            assert!(
                !text.contains(token.as_str()),
                "{token} is stored in the clear"
            );
        }
    }

    // A restart with the same key and database is still signed in.
    let s = Server::on(&config(servers.url(), Some(SECRET)), db.to_str().unwrap()).await;
    let (_, list) = s.get("/v2/connectors").await;
    assert_eq!(tickets(&list)["status"], "ready", "{list}");

    // Deleting the connector forgets its tokens: created again, it needs a sign-in.
    s.delete("/v2/agents/ticketer").await;
    let (status, gone) = s.delete("/v2/connectors/tickets").await;
    assert_eq!(status, 200, "{gone}");
    let (status, made) = s
        .post(
            "/v2/connectors",
            json!({"name": "tickets", "url": servers.url(), "oauth": {}}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["status"], "needs_sign_in", "{made}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_with_an_unknown_or_forged_state_is_refused_without_an_exchange() {
    let servers = OAuthServers::start(true).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let s = Server::on(
        &config(servers.url(), Some(SECRET)),
        dir.path().join("h.db").to_str().unwrap(),
    )
    .await;
    let (_, started) = s.post("/v2/connectors/tickets/sign-in", json!({})).await;
    let back = authorize(started["authorization_url"].as_str().unwrap()).await;
    let code = url::Url::parse(&back)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .unwrap()
        .1
        .into_owned();
    let callback = s.url("/v2/connectors/oauth/callback");
    for query in [
        format!("code={code}&state=forged"),
        format!("code={code}"),
        format!("code={code}&state=%00%0a"),
        format!("code={code}&state={}", "a".repeat(500)),
        String::new(),
    ] {
        let answer = browser()
            .get(format!("{callback}?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "{query}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unknown_state", "{query}: {body}");
    }
    servers.with(|auth| assert_eq!(auth.exchanges, 0, "the code was never exchanged"));
    let (_, list) = s.get("/v2/connectors").await;
    assert_eq!(tickets(&list)["status"], "needs_sign_in");

    // A refused sign-in comes back with `error`: the console is told why.
    servers.with(|auth| auth.refuse = true);
    let (_, started) = s.post("/v2/connectors/tickets/sign-in", json!({})).await;
    let back = authorize(started["authorization_url"].as_str().unwrap()).await;
    let landed = browser().get(&back).send().await.unwrap();
    assert_eq!(landed.status(), 303);
    let location = landed.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("/console/#/connectors?sign_in_error="),
        "{location}"
    );
    let said: String = url::form_urlencoded::parse(location.split_once('?').unwrap().1.as_bytes())
        .find(|(k, _)| k == "sign_in_error")
        .unwrap()
        .1
        .into_owned();
    assert!(said.contains("connector `tickets`"), "{said}");
    assert!(said.contains("access_denied"), "{said}");

    // A connector whose server cannot be reached: the sign-in cannot start, and says why.
    let (status, made) = s
        .post(
            "/v2/connectors",
            json!({"name": "down", "url": "http://127.0.0.1:9/mcp", "oauth": {}, "connect_timeout_seconds": 5}),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["status"], "unreachable", "{made}");
    let (status, body) = s.post("/v2/connectors/down/sign-in", json!({})).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "sign_in_failed");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("MCP server `down` (URL http://127.0.0.1:9/mcp) failed the MCP handshake"),
        "{body}"
    );

    // The first sign-in still waits for its browser; stopping the server ends it, so the
    // database is free for the next server in this process at once.
    s.stop().await;
    harnessx_runtime::SqliteStore::open(dir.path().join("h.db"))
        .expect("the stopped server let go of its database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_says_what_is_missing() {
    let servers = OAuthServers::start(true).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // No key (the test environment sets no HARNESSX_SECRET_KEY).
    assert!(std::env::var_os("HARNESSX_SECRET_KEY").is_none());
    let s = Server::on(
        &format!(
            "{}\n[connectors.plain]\nurl = \"{}\"\n",
            config(servers.url(), None),
            servers.url()
        ),
        dir.path().join("h.db").to_str().unwrap(),
    )
    .await;
    let (status, body) = s.post("/v2/connectors/tickets/sign-in", json!({})).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "no_secret_key");
    assert_eq!(
        body["error"]["message"],
        "no secret key to seal connector sign-in tokens with: set [server] secret_key or \
         HARNESSX_SECRET_KEY to 32 random bytes in hex (`openssl rand -hex 32`), the same on \
         every server sharing the database"
    );
    let (_, list) = s.get("/v2/connectors").await;
    let listed = tickets(&list);
    assert_eq!(listed["status"], "unreachable");
    assert!(
        listed["error"]
            .as_str()
            .unwrap()
            .contains("[server] secret_key"),
        "{listed}"
    );

    // A connector without `oauth` that answers 401.
    let plain = list["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "plain")
        .unwrap()
        .clone();
    assert_eq!(plain["status"], "needs_sign_in", "{plain}");
    assert_eq!(
        plain["error"],
        "connector `plain` needs a sign-in (its server answered HTTP 401); give it \
         `\"oauth\": {}` to sign in from the console, or an `Authorization` header"
    );
    let (status, body) = s.post("/v2/connectors/plain/sign-in", json!({})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "not_oauth");
    assert_eq!(
        body["error"]["message"],
        "connector `plain` does not sign in with OAuth; give it `\"oauth\": {}` (PATCH \
         /v2/connectors/plain) when its server asks for a sign-in"
    );
    let (status, body) = s.post("/v2/connectors/nobody/sign-in", json!({})).await;
    assert_eq!(status, 404, "{body}");

    // `oauth` is for URL connectors, and its settings are checked.
    for (body, message) in [
        (
            json!({"name": "x", "command": "true", "oauth": {}}),
            "`oauth` belongs to a `url` connector; a `command` connector takes its credentials \
             from `env`",
        ),
        (
            json!({"name": "x", "url": servers.url(), "oauth": {"client_id": " "}}),
            "oauth.client_id is empty; give the registered client id or leave it out to \
             register dynamically",
        ),
        (
            json!({"name": "x", "url": servers.url(), "oauth": {"scopes": ["a b"]}}),
            "oauth.scopes: a scope is empty or holds a space; give each scope as its own string",
        ),
    ] {
        let (status, answer) = s.post("/v2/connectors", body).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["error"]["message"], message);
    }
    // PATCH turns OAuth on and off.
    let (status, on) = s
        .patch(
            "/v2/connectors/plain",
            json!({"oauth": {"scopes": ["mcp"]}}),
        )
        .await;
    assert_eq!(status, 200, "{on}");
    assert_eq!(on["oauth"], json!({"scopes": ["mcp"]}));
    let (status, off) = s
        .patch("/v2/connectors/plain", json!({"oauth": null}))
        .await;
    assert_eq!(status, 200, "{off}");
    assert!(off.get("oauth").is_none(), "{off}");
    s.stop().await;
}

#[test]
fn the_configuration_checks_the_sign_in_settings() {
    for (text, key, message) in [
        (
            "[server]\nsecret_key = \"abc\"\n",
            "server.secret_key",
            "the key is not 32 bytes written as 64 hex digits or in base64; make one with \
             `openssl rand -hex 32`",
        ),
        (
            "[server]\npublic_url = \"harnessx.example.com\"\n",
            "server.public_url",
            "`harnessx.example.com` is not a URL (relative URL without a base); write it like \
             https://harnessx.example.com (the address browsers reach the server at)",
        ),
        (
            "[server]\npublic_url = \"ftp://harnessx.example.com\"\n",
            "server.public_url",
            "`ftp://harnessx.example.com` is not an http or https address; write it like \
             https://harnessx.example.com (the address browsers reach the server at)",
        ),
        (
            "[server]\npublic_url = \"https://h.example.com/?a=b\"\n",
            "server.public_url",
            "`https://h.example.com/?a=b` has a query, fragment or user name; write it like \
             https://harnessx.example.com (the address browsers reach the server at)",
        ),
        (
            "[connectors.x]\ncommand = \"true\"\noauth = {}\n",
            "connectors.x",
            "`oauth` belongs to a `url` connector; a `command` connector takes its credentials \
             from `env`",
        ),
    ] {
        let err = Config::parse(text).unwrap_err().to_string();
        assert!(err.contains(key), "{err}");
        assert!(err.contains(message), "{err}");
    }
    let ok = Config::parse(&format!(
        "[server]\npublic_url = \"https://harnessx.example.com\"\nsecret_key = \"{SECRET}\"\n\
         [connectors.t]\nurl = \"https://mcp.example.com/mcp\"\n\
         oauth = {{ client_id = \"registered\", scopes = [\"tickets:read\"] }}\n"
    ))
    .unwrap();
    assert_eq!(
        ok.connectors["t"]
            .oauth
            .as_ref()
            .unwrap()
            .client_id
            .as_deref(),
        Some("registered")
    );
}

/// Two servers on one PostgreSQL database: the sign-in starts on one, the browser comes back
/// to the other, which hands the redirect over through the store; the second server then
/// lists the connector ready and runs its tool with the tokens the first one stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callback_lands_on_another_server_and_hands_the_redirect_over() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let servers = OAuthServers::start(true).await.unwrap();
    let text = config(servers.url(), Some(SECRET));
    let a = Server::on(&text, &pg.url()).await;
    let b = Server::on(&text, &pg.url()).await;

    let (_, list) = b.get("/v2/connectors").await;
    assert_eq!(tickets(&list)["status"], "needs_sign_in");
    let (status, started) = a.post("/v2/connectors/tickets/sign-in", json!({})).await;
    assert_eq!(status, 200, "{started}");
    let back = authorize(started["authorization_url"].as_str().unwrap()).await;
    // The browser comes back to B (behind one public address, say).
    let on_b = back.replacen(&a.base, &b.base, 1);
    assert_ne!(on_b, back);
    let landed = browser().get(&on_b).send().await.unwrap();
    assert_eq!(landed.status(), 303);
    assert_eq!(
        landed.headers()["location"],
        "/console/#/connectors?signed_in=tickets"
    );
    servers.with(|auth| assert_eq!(auth.exchanges, 1));
    // Used on B: refused on A as well.
    let replay = browser().get(&back).send().await.unwrap();
    assert_eq!(replay.status(), 400);

    let (_, list) = b.get("/v2/connectors").await;
    assert_eq!(tickets(&list)["status"], "ready", "{list}");

    // A refresh by one server serves the other: the gateway forgets every access token, A's
    // listing refreshes, and B's first run uses the refreshed token without another sign-in.
    servers.with(|auth| auth.access.clear());
    let (_, one) = a.get("/v2/connectors/tickets").await;
    assert_eq!(one["status"], "ready", "{one}");
    servers.with(|auth| assert_eq!((auth.refreshes, auth.exchanges), (1, 1)));
    let id = b.start_run("ticketer", "who am I?").await["id"]
        .as_i64()
        .unwrap();
    let run = b.wait_for(id, &["completed", "failed"]).await;
    assert_eq!(run["state"], "completed", "{run}");
    assert!(run["output"].as_str().unwrap().contains(WHOAMI), "{run}");
    servers.with(|auth| assert_eq!((auth.refreshes, auth.exchanges), (1, 1)));
    a.stop().await;
    b.stop().await;
}
