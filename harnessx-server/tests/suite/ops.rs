//! Running in production: `/metrics` moves with the runs and tool calls, `/readyz` says whether
//! the store answers with this release's schema, every request has a request id, and
//! `serve --log-format json` writes JSON lines carrying request and run ids, never a secret.

use std::process::Stdio;
use std::time::Duration;

use harnessx_runtime::store::SCHEMA_VERSION;
use serde_json::{Value, json};

use crate::common::{KEY, ServeProcess, Server, must, scrape, split, value};

/// Agents that call a tool well, call it badly, and call a tool that does not exist.
fn with_tool_callers(config: String) -> String {
    let base = config
        .split("base_path = \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    format!(
        r#"{config}
[agents.lister]
model = "script"
builtins = [{{ name = "list_directory", options = {{ permission = "allow", base_path = "{base}" }} }}]
script = [
  {{ call = "list_directory", arguments = {{ path = "." }} }},
  {{ reply = "saw: {{result}}" }},
]

[agents.misuser]
model = "script"
builtins = [{{ name = "list_directory", options = {{ permission = "allow", base_path = "{base}" }} }}]
script = [
  {{ call = "list_directory", arguments = {{ path = 5 }} }},
  {{ reply = "saw: {{result}}" }},
]

[agents.inventor]
model = "script"
script = [
  {{ call = "no_such_tool", arguments = {{}} }},
  {{ reply = "saw: {{result}}" }},
]
"#
    )
}

fn run_id(run: &Value) -> i64 {
    run["id"].as_i64().unwrap()
}

#[tokio::test]
async fn metrics_move_as_runs_are_queued_completed_and_tools_called() {
    let s = Server::start_with(with_tool_callers, |o| o).await;
    let before = scrape(&s).await;
    for state in [
        "queued",
        "running",
        "waiting_input",
        "completed",
        "failed",
        "cancelled",
    ] {
        assert_eq!(
            must(&before, &format!("harnessx_runs{{state=\"{state}\"}}")),
            0.0
        );
    }
    assert_eq!(must(&before, "harnessx_store_up"), 1.0);
    assert_eq!(must(&before, "harnessx_queue_depth"), 0.0);
    assert_eq!(must(&before, "harnessx_runs_waiting_input"), 0.0);
    assert_eq!(must(&before, "harnessx_leases"), 0.0);
    assert_eq!(must(&before, "harnessx_leases_held"), 0.0);
    assert_eq!(must(&before, "harnessx_workers"), 4.0);
    assert_eq!(
        must(&before, "harnessx_model_call_duration_seconds_count"),
        0.0
    );
    assert_eq!(must(&before, "harnessx_step_duration_seconds_count"), 0.0);
    for source in ["runtime", "api", "probe"] {
        assert_eq!(
            must(
                &before,
                &format!("harnessx_store_errors_total{{source=\"{source}\"}}")
            ),
            0.0
        );
    }
    assert_eq!(
        value(
            &before,
            "harnessx_tool_calls_total{tool=\"list_directory\"}"
        ),
        None
    );

    // A run that completes: one model call, its turn written.
    let replier = run_id(&s.start_run("replier", "hi").await);
    s.wait_for(replier, &["completed"]).await;
    let after = scrape(&s).await;
    assert_eq!(must(&after, "harnessx_runs{state=\"completed\"}"), 1.0);
    assert_eq!(
        must(&after, "harnessx_model_call_duration_seconds_count"),
        1.0
    );
    assert!(must(&after, "harnessx_step_duration_seconds_count") >= 1.0);
    assert!(
        must(
            &after,
            "harnessx_model_call_duration_seconds_bucket{le=\"+Inf\"}"
        ) >= 1.0
    );

    // A tool call that works, one that fails, one to a tool that does not exist.
    let lister = run_id(&s.start_run("lister", "list").await);
    s.wait_for(lister, &["completed"]).await;
    let misuser = run_id(&s.start_run("misuser", "list").await);
    s.wait_for(misuser, &["completed"]).await;
    let inventor = run_id(&s.start_run("inventor", "invent").await);
    s.wait_for(inventor, &["completed"]).await;
    let tools = scrape(&s).await;
    assert_eq!(
        must(&tools, "harnessx_tool_calls_total{tool=\"list_directory\"}"),
        2.0,
        "{tools}"
    );
    assert_eq!(
        must(
            &tools,
            "harnessx_tool_errors_total{tool=\"list_directory\"}"
        ),
        1.0
    );
    assert_eq!(
        must(
            &tools,
            "harnessx_tool_call_duration_seconds_count{tool=\"list_directory\"}"
        ),
        2.0
    );
    // The name the model invented is not a label: every unknown tool is `_unknown`.
    assert_eq!(
        must(&tools, "harnessx_tool_calls_total{tool=\"_unknown\"}"),
        1.0
    );
    assert_eq!(
        must(&tools, "harnessx_tool_errors_total{tool=\"_unknown\"}"),
        1.0
    );
    assert!(!tools.contains("no_such_tool"), "{tools}");
    assert_eq!(must(&tools, "harnessx_runs{state=\"completed\"}"), 4.0);
    assert!(must(&tools, "harnessx_model_call_duration_seconds_count") >= 7.0);

    // A run waiting for a person, and a run queued behind it in its conversation.
    let approver = s.start_run("approver", "list").await;
    s.wait_for(run_id(&approver), &["waiting_input"]).await;
    let (status, queued) = s
        .post(
            "/v2/runs",
            json!({"agent": "replier", "input": "after", "conversation": approver["conversation"]}),
        )
        .await;
    assert_eq!(status, 200, "{queued}");
    let waiting = scrape(&s).await;
    assert_eq!(
        must(&waiting, "harnessx_runs{state=\"waiting_input\"}"),
        1.0
    );
    assert_eq!(must(&waiting, "harnessx_runs_waiting_input"), 1.0);
    assert_eq!(must(&waiting, "harnessx_runs{state=\"queued\"}"), 1.0);
    assert_eq!(must(&waiting, "harnessx_queue_depth"), 1.0);

    // Cancelled: the waiting run; then the queued one runs and completes.
    let (status, body) = s
        .post(&format!("/v2/runs/{}/cancel", run_id(&approver)), json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    s.wait_for(run_id(&queued), &["completed"]).await;
    let end = scrape(&s).await;
    assert_eq!(must(&end, "harnessx_runs{state=\"cancelled\"}"), 1.0);
    assert_eq!(must(&end, "harnessx_runs{state=\"completed\"}"), 5.0);
    assert_eq!(must(&end, "harnessx_runs{state=\"waiting_input\"}"), 0.0);
    assert_eq!(must(&end, "harnessx_queue_depth"), 0.0);
    assert_eq!(
        must(&end, "harnessx_store_errors_total{source=\"runtime\"}"),
        0.0
    );
}

#[tokio::test]
async fn metrics_need_the_key_unless_the_configuration_opens_them() {
    let s = Server::start().await;
    let (status, body) = split(s.http.get(s.url("/metrics")).send().await.unwrap()).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("unauthorized"))
    );
    let r = s
        .http
        .get(s.url("/metrics"))
        .bearer_auth("test-key-0123456789abcdeX")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = s
        .http
        .post(s.url("/metrics"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    let (status, body) = split(r).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (405, &json!("method_not_allowed"))
    );

    let open = Server::start_with(|c| format!("[server]\nmetrics = \"open\"\n{c}"), |o| o).await;
    let r = open.http.get(open.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("harnessx_runs{state=\"queued\"} 0")
    );
    // Opening the metrics opens nothing else.
    let (status, _) = split(open.http.get(open.url("/v2/runs")).send().await.unwrap()).await;
    assert_eq!(status, 401);

    let keyed = Server::start_with(|c| format!("[server]\nmetrics = \"key\"\n{c}"), |o| o).await;
    let r = keyed.http.get(keyed.url("/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 401);

    let err = harnessx_server::Config::parse("[server]\nmetrics = \"public\"\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 2: `server.metrics`: `public` is not a choice; give \"key\" (the default: /metrics \
         needs an API key) or \"open\" (anyone who reaches the port may read it)"
    );
}

#[tokio::test]
async fn readyz_is_200_on_a_good_store_and_needs_no_key() {
    let s = Server::start().await;
    let (status, body) = split(s.http.get(s.url("/readyz")).send().await.unwrap()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"status": "ready", "schema_version": SCHEMA_VERSION})
    );
    let (status, body) = split(s.http.get(s.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    // Both are in the OpenAPI document, without a security requirement.
    let (_, doc) = s.get("/v2/openapi.json").await;
    for path in ["/healthz", "/readyz"] {
        assert_eq!(doc["paths"][path]["get"]["security"], json!([{}]), "{path}");
    }
    assert!(doc["paths"].get("/metrics").is_none(), "metrics is text");
}

/// An in-process server on `pg`; `/readyz` with a deadline of its own.
async fn readyz(s: &Server) -> (u16, Value) {
    let r = tokio::time::timeout(Duration::from_secs(15), s.http.get(s.url("/readyz")).send())
        .await
        .expect("/readyz took more than 15 s")
        .unwrap();
    split(r).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_503_with_a_reason_when_postgres_stops_or_its_schema_differs() {
    let Some(mut pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let url = pg.url();
    let s = Server::start_with(|c| c, |o| o.database(url.clone())).await;
    assert_eq!(
        readyz(&s).await,
        (
            200,
            json!({"status": "ready", "schema_version": SCHEMA_VERSION})
        )
    );

    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    // Behind: a migration this release knows is not applied.
    client
        .batch_execute(&format!(
            "DELETE FROM schema_version WHERE version = {SCHEMA_VERSION}"
        ))
        .await
        .unwrap();
    let (status, body) = readyz(&s).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "schema_behind");
    assert_eq!(
        body["error"]["message"],
        format!(
            "the database's schema is version {}, older than this release's {SCHEMA_VERSION}: \
             its migrations are not applied; restart the server, which applies them as it starts",
            harnessx_runtime::store::previous_schema_version()
        )
    );
    // Ahead: a newer release migrated the database.
    client
        .batch_execute(&format!(
            "INSERT INTO schema_version VALUES ({SCHEMA_VERSION}), ({})",
            SCHEMA_VERSION + 1
        ))
        .await
        .unwrap();
    let (status, body) = readyz(&s).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "schema_ahead");
    assert_eq!(
        body["error"]["message"],
        format!(
            "the database's schema is version {}, newer than this release's {SCHEMA_VERSION}: a \
             newer release migrated it; upgrade this server",
            SCHEMA_VERSION + 1
        )
    );
    client
        .batch_execute(&format!(
            "DELETE FROM schema_version WHERE version = {}",
            SCHEMA_VERSION + 1
        ))
        .await
        .unwrap();
    assert_eq!(readyz(&s).await.0, 200);
    drop(client);
    connection.abort();

    // The database stops: not ready, fast, and the reason names no host or user.
    pg.stop().unwrap();
    let started = std::time::Instant::now();
    let (status, body) = readyz(&s).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "store_unavailable");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message == "the run store did not answer; check the database (the server's log says why)"
            || message == "the run store did not answer within 3 s; check the database",
        "{message}"
    );
    assert!(
        !message.contains("127.0.0.1") && !message.contains("postgres"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Liveness is not readiness.
    let (status, _) = split(s.http.get(s.url("/healthz")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    // The metrics still answer: the process's own series, the store's left out.
    let text = scrape(&s).await;
    assert_eq!(must(&text, "harnessx_store_up"), 0.0);
    assert_eq!(
        value(&text, "harnessx_runs{state=\"queued\"}"),
        None,
        "{text}"
    );
    assert!(must(&text, "harnessx_store_errors_total{source=\"probe\"}") >= 2.0);

    // Back up: ready again.
    pg.restart().unwrap();
    let mut ready = false;
    for _ in 0..50 {
        if readyz(&s).await.0 == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "not ready after the database came back");
    if let Some(running) = s.running {
        running.stop(Duration::from_secs(2)).await;
    }
}

#[tokio::test]
async fn request_ids_are_taken_when_well_formed_else_generated_and_always_echoed() {
    let s = Server::start().await;
    let id_of = |r: &reqwest::Response| {
        r.headers()
            .get("x-request-id")
            .expect("no x-request-id in the response")
            .to_str()
            .unwrap()
            .to_owned()
    };
    for given in [
        "abc-123",
        "0190f3c2-7a4e-7c1b-9b1e-3f2d6c1a9e77",
        "01J0ABCDEFGHJKMNPQRSTVWXYZ",
        "trace:span.1_2",
    ] {
        let r = s
            .http
            .get(s.url("/v2/runs"))
            .bearer_auth(KEY)
            .header("X-Request-Id", given)
            .send()
            .await
            .unwrap();
        assert_eq!(id_of(&r), given);
    }
    let long = "a".repeat(129);
    for bad in ["has space", "semi;colon", "quote\"", long.as_str(), ""] {
        let r = s
            .http
            .get(s.url("/v2/runs"))
            .bearer_auth(KEY)
            .header("X-Request-Id", bad)
            .send()
            .await
            .unwrap();
        let id = id_of(&r);
        assert_ne!(id, bad);
        assert_eq!(id.len(), 32, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    }
    // Every response has one, errors and keyless routes included, each its own.
    let mut seen = std::collections::HashSet::new();
    for (path, key) in [
        ("/healthz", false),
        ("/readyz", false),
        ("/v2/runs", false),
        ("/nowhere", true),
        ("/metrics", true),
    ] {
        let mut request = s.http.get(s.url(path));
        if key {
            request = request.bearer_auth(KEY);
        }
        let r = request.send().await.unwrap();
        assert!(seen.insert(id_of(&r)), "{path}: an id seen before");
    }
}

#[test]
fn log_format_is_text_or_json() {
    use harnessx_server::cli::{Args, LogFormat};
    let args = |a: &[&str]| Args::parse(a.iter().map(|s| s.to_string()));
    assert_eq!(args(&["serve"]).unwrap().log_format, LogFormat::Text);
    assert_eq!(
        args(&["serve", "--log-format", "json"]).unwrap().log_format,
        LogFormat::Json
    );
    assert_eq!(
        args(&["serve", "--log-format", "yaml"]).unwrap_err(),
        "--log-format `yaml` is not a log format; give text or json"
    );
    assert_eq!(
        args(&["serve", "--log-format"]).unwrap_err(),
        "--log-format needs a value"
    );
}

#[tokio::test]
async fn json_logs_refuse_to_start_without_an_api_key() {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_harnessx"))
        .args([
            "serve",
            "--port",
            "0",
            "--db",
            ":memory:",
            "--log-format",
            "json",
        ])
        .env_remove("HARNESSX_API_KEY")
        .env_remove("HARNESSX_API_KEYS")
        .env_remove("HARNESSX_DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        "harnessx: no API key is configured; with --log-format json the server does not write a \
         generated key into its log, so set HARNESSX_API_KEY (or HARNESSX_API_KEYS, or \
         `[server] api_keys` in the configuration)"
    );
}

const SECRETS_CONFIG: &str = r#"
[connectors.vault]
command = "/nonexistent/harnessx-vault-server"
env = { VAULT_TOKEN = "env-secret-7f3a9c1d2e4b" }

[connectors.crm]
url = "http://127.0.0.1:9/mcp?token=url-secret-5d8e2a7c"
headers = { Authorization = "Bearer header-secret-0b6f4e9a1c", "X-Api-Key" = "header-secret-9c2d7e1f3a" }

[agents.asker]
model = "script"
script = [
  { ask = { questions = [{ header = "Format", question = "Which format?", options = [{ label = "CSV" }, { label = "JSON" }] }] } },
  { reply = "saw: {result}" },
]

[agents.writer]
model = "openai:gpt-4o-mini"
"#;

/// `harnessx serve --log-format json` with `RUST_LOG=debug`: a run started and answered,
/// connectors with secrets listed and created, every request and run logged — every stderr
/// line is a JSON object, requests carry `request_id`, runs `run_id`, and no secret appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_request_and_run_ids_and_no_secret() {
    let pg = harnessx_testkit::require_or_skip();
    let dir = tempfile::tempdir().unwrap();
    let db_password = "db-secret-3e7a1f9c";
    let db = match &pg {
        // Trust authentication ignores the password, but the URL holds one to hide.
        Some(pg) => format!(
            "postgresql://postgres:{db_password}@127.0.0.1:{}/postgres",
            pg.port()
        ),
        None => dir.path().join("h.db").display().to_string(),
    };
    let file = dir.path().join("harnessx.toml");
    std::fs::write(&file, SECRETS_CONFIG).unwrap();
    let model_key = "sk-model-secret-4a1e8b2c9d";
    let ServeProcess { child, server: s } = ServeProcess::spawn_with(
        &file,
        &db,
        &["--log-format", "json"],
        &[("RUST_LOG", "debug"), ("OPENAI_API_KEY", model_key)],
        Stdio::piped(),
    )
    .await;

    // A run, started with a request id of the client's, then answered.
    let r = s
        .http
        .post(s.url("/v2/runs"))
        .bearer_auth(KEY)
        .header("X-Request-Id", "client-chosen-id-42")
        .json(&json!({"agent": "asker", "input": "export"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "client-chosen-id-42");
    let (status, run) = split(r).await;
    assert_eq!(status, 200, "{run}");
    let id = run_id(&run);
    s.wait_for(id, &["waiting_input"]).await;
    let (status, body) = s
        .post(
            &format!("/v2/runs/{id}/answer"),
            json!({"answers": [{"selected": ["JSON"]}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    s.wait_for(id, &["completed"]).await;

    // Connectors with secrets: listed (each is asked for its tools, and fails), and one
    // created through the API.
    let (status, body) = s.get("/v2/connectors").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = s
        .post(
            "/v2/connectors",
            json!({
                "name": "ledger",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer api-header-secret-6c1b8f2e"},
            }),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {body}");
    let (status, body) = s.get("/v2/connectors/ledger").await;
    assert_eq!(status, 200, "{body}");
    // A wrong key is refused and not logged either.
    let wrong = "wrong-key-secret-2f9a7c3e1b";
    let r = s
        .http
        .get(s.url("/v2/runs"))
        .bearer_auth(wrong)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    scrape(&s).await;

    let mut child = child;
    child.start_kill().unwrap();
    let out = child.wait_with_output().await.unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();

    for secret in [
        KEY,
        wrong,
        model_key,
        db_password,
        "env-secret-7f3a9c1d2e4b",
        "url-secret-5d8e2a7c",
        "header-secret-0b6f4e9a1c",
        "header-secret-9c2d7e1f3a",
        "api-header-secret-6c1b8f2e",
    ] {
        assert!(!log.contains(secret), "`{secret}` is in the log:\n{log}");
    }

    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    assert!(lines.len() > 10, "{log}");
    for line in &lines {
        assert!(
            line["timestamp"].is_string() && line["level"].is_string(),
            "{line}"
        );
    }
    let in_span = |line: &Value, name: &str| -> Option<Value> {
        line["spans"]
            .as_array()?
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
    };
    // Every request's line carries its request id; the client's one is kept.
    let finished: Vec<&Value> = lines
        .iter()
        .filter(|l| l["message"] == "request finished")
        .collect();
    assert!(finished.len() >= 8, "{log}");
    for line in &finished {
        let request = in_span(line, "request").unwrap_or_else(|| panic!("{line}"));
        assert!(request["request_id"].is_string(), "{line}");
        assert!(line["status"].is_u64(), "{line}");
    }
    assert!(
        finished
            .iter()
            .any(|l| l["span"]["request_id"] == "client-chosen-id-42"
                && l["span"]["path"] == "/v2/runs"
                && l["status"] == 200),
        "{log}"
    );
    // Every line of the run's drive carries its run id: started, paused, resumed, ended.
    let of_run: Vec<&Value> = lines
        .iter()
        .filter(|l| in_span(l, "run").is_some_and(|r| r["run_id"] == id))
        .collect();
    let messages: Vec<&str> = of_run
        .iter()
        .filter_map(|l| l["message"].as_str())
        .collect();
    for expected in [
        "driving the run",
        "the run waits for input",
        "the run ended",
    ] {
        assert!(
            messages.contains(&expected),
            "{expected}: {messages:?}\n{log}"
        );
    }
    assert_eq!(
        messages.iter().filter(|m| **m == "driving the run").count(),
        2,
        "started, then resumed after the answer: {messages:?}"
    );
    for line in lines
        .iter()
        .filter(|l| l["target"] == "harnessx_runtime::worker")
    {
        assert!(
            in_span(line, "run").is_some(),
            "a worker line without its run: {line}"
        );
    }
    // The start-up lines are JSON too.
    assert!(
        lines.iter().any(|l| l["target"] == "harnessx::serve"
            && l["message"] == format!("harnessx serving on {}", s.base)),
        "{log}"
    );
    drop(pg);
}

/// Under the default filter (warnings and errors), a warning logged while a request is served
/// still carries the request's id.
#[tokio::test]
async fn json_warnings_carry_the_request_id_under_the_default_filter() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("harnessx.toml");
    std::fs::write(
        &file,
        "[connectors.broken]\ncommand = \"/nonexistent/harnessx-test-server\"\n",
    )
    .unwrap();
    let ServeProcess { child, server: s } = ServeProcess::spawn_with(
        &file,
        ":memory:",
        &["--log-format", "json"],
        &[],
        Stdio::piped(),
    )
    .await;
    let r = s
        .http
        .get(s.url("/v2/connectors"))
        .bearer_auth(KEY)
        .header("X-Request-Id", "listing-7")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut child = child;
    child.start_kill().unwrap();
    let out = child.wait_with_output().await.unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let warning = lines
        .iter()
        .find(|l| l["level"] == "WARN" && l["connector"] == "broken")
        .unwrap_or_else(|| panic!("no warning about the connector:\n{log}"));
    assert_eq!(warning["span"]["request_id"], "listing-7", "{warning}");
    // The request's own `info` line is below the default filter.
    assert!(!log.contains("request finished"), "{log}");
}
