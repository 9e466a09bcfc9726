//! Webhooks from `harnessx serve` processes: the four events on both stores (a run fails on a
//! model provider that refuses every request), a server killed with SIGKILL between two attempts
//! resumes the delivery when it starts again, and with two servers on one PostgreSQL each event
//! reaches the receiver once, not once per server.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::webhooks::SECRET;
use crate::common::receiver::{Received, Receiver, verify};
use crate::common::{ServeProcess, Server};

/// A `harnessx serve` process; killed with SIGKILL when dropped.
struct Process {
    child: tokio::process::Child,
    server: Server,
    log: std::path::PathBuf,
}

impl Process {
    /// Kills it with SIGKILL and waits for it to be gone.
    async fn kill(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn config(receiver: &Receiver, first_retry: f64) -> String {
    format!(
        r#"
[server]
webhook_first_retry_seconds = {first_retry}

[agents.replier]
model = "script"
script = [{{ reply = "hello" }}]

[agents.asker]
model = "script"
script = [{{ ask = "Proceed?" }}, {{ reply = "saw: {{result}}" }}]

[agents.failer]
model = "openai:gpt-4o-mini"

[[webhooks]]
id = "all"
url = "{}"
events = ["run.waiting_input", "run.completed", "run.failed", "run.cancelled"]
secret = "{SECRET}"
"#,
        receiver.url("/hook")
    )
}

/// Starts `harnessx serve` with `config` on `db`; its model provider is the receiver's
/// `/model/`, which refuses every request.
async fn spawn(
    dir: &std::path::Path,
    n: usize,
    config: &str,
    db: &str,
    receiver: &Receiver,
) -> Process {
    let file = dir.join("harnessx.toml");
    std::fs::write(&file, config).unwrap();
    let log = dir.join(format!("server-{n}.log"));
    let model = receiver.url("/model/v1");
    let env = [
        ("OPENAI_API_KEY", "test-key"),
        ("OPENAI_BASE_URL", model.as_str()),
        ("RUST_LOG", "warn"),
    ];
    let stderr = std::fs::File::create(&log).unwrap();
    let ServeProcess { child, server } = ServeProcess::spawn(&file, db, &env, stderr.into()).await;
    Process { child, server, log }
}

/// The delivery log of webhook `all` once `done` holds for it.
async fn log_until(s: &Server, seconds: u64, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        let (status, log) = s.get("/v2/webhooks/all/deliveries").await;
        assert_eq!(status, 200, "{log}");
        let deliveries = log["deliveries"].as_array().unwrap().clone();
        if done(&deliveries) {
            return deliveries;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the delivery log did not get there within {seconds} s: {deliveries:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The accepted events by type.
fn by_type(got: &[Received]) -> BTreeMap<String, Value> {
    got.iter()
        .filter(|r| r.status == 200)
        .map(|r| {
            let event = r.json();
            (
                event["type"].as_str().unwrap().to_owned(),
                event["data"].clone(),
            )
        })
        .collect()
}

async fn four_events(db: &str) {
    let receiver = Receiver::accepting().await;
    let dir = tempfile::tempdir().unwrap();
    let p = spawn(dir.path(), 0, &config(&receiver, 1.0), db, &receiver).await;
    let s = &p.server;
    let completed = s.start_run("replier", "hi").await["id"].as_i64().unwrap();
    let asked = s.start_run("asker", "go?").await["id"].as_i64().unwrap();
    let failed = s.start_run("failer", "hi").await["id"].as_i64().unwrap();
    s.wait_for(completed, &["completed"]).await;
    let waiting = s.wait_for(asked, &["waiting_input"]).await;
    let failure = s.wait_for(failed, &["failed", "completed"]).await;
    assert_eq!(failure["state"], "failed", "{failure}\n{}", p.log());
    receiver
        .wait_until(30, "the waiting_input event", |got| {
            by_type(got).contains_key("run.waiting_input")
        })
        .await;
    let (status, cancelled) = s
        .post(&format!("/v2/runs/{asked}/cancel"), Value::Null)
        .await;
    assert_eq!(status, 200, "{cancelled}");
    let got = receiver
        .wait_until(30, "four events", |got| by_type(got).len() == 4)
        .await;
    assert!(got.iter().all(|r| verify(SECRET, r)), "{got:#?}");
    let events = by_type(&got);
    let completed_data = &events["run.completed"];
    assert_eq!(completed_data["run_id"], completed);
    assert_eq!(completed_data["agent"], "replier");
    assert_eq!(completed_data["output"], "hello");
    let waiting_data = &events["run.waiting_input"];
    assert_eq!(waiting_data["run_id"], asked);
    assert_eq!(waiting_data["needs_input"], waiting["needs_input"]);
    let failed_data = &events["run.failed"];
    assert_eq!(failed_data["run_id"], failed);
    assert_eq!(failed_data["state"], "failed");
    assert_eq!(failed_data["error"], failure["error"]);
    let cancelled_data = &events["run.cancelled"];
    assert_eq!(cancelled_data["run_id"], asked);
    assert_eq!(cancelled_data["state"], "cancelled");
    assert_eq!(got.len(), 4, "each event once: {got:#?}");
    let log = log_until(s, 30, |d| {
        d.len() == 4 && d.iter().all(|d| d["state"] == "delivered")
    })
    .await;
    assert!(
        log.iter()
            .all(|d| d["attempts"].as_array().unwrap().len() == 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_events_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    four_events(dir.path().join("runs.db").to_str().unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_events_on_postgres() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    four_events(&pg.url()).await;
}

/// Each message's first two attempts are refused; later ones accepted.
fn refusing_twice(_: &Received, earlier: usize) -> u16 {
    if earlier < 2 { 503 } else { 200 }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_between_attempts_delivers_after_it_restarts() {
    let receiver = Receiver::start(refusing_twice).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let text = config(&receiver, 2.0);
    let first = spawn(dir.path(), 0, &text, db, &receiver).await;
    let id = first.server.start_run("asker", "go?").await["id"]
        .as_i64()
        .unwrap();
    first.server.wait_for(id, &["waiting_input"]).await;
    // The first attempt was refused and recorded; the second is two seconds away.
    log_until(&first.server, 30, |d| {
        d.first()
            .is_some_and(|d| d["attempts"].as_array().unwrap().len() == 1)
    })
    .await;
    first.kill().await;
    assert_eq!(receiver.got().len(), 1, "killed between the attempts");

    let second = spawn(dir.path(), 1, &text, db, &receiver).await;
    let got = receiver
        .wait_until(60, "the accepted attempt", |got| {
            got.iter().any(|r| r.status == 200)
        })
        .await;
    let id_header = got[0].header("webhook-id");
    assert!(got.iter().all(|r| r.header("webhook-id") == id_header));
    assert!(got.iter().all(|r| verify(SECRET, r)));
    assert_eq!(got.iter().filter(|r| r.status == 200).count(), 1);
    assert_eq!(got[0].json()["data"]["run_id"], id);
    let log = log_until(&second.server, 30, |d| d[0]["state"] == "delivered").await;
    let statuses: Vec<i64> = log[0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [503, 503, 200], "{}", second.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_postgres_deliver_each_event_once_and_survive_a_kill() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    // Questions are refused twice; everything else is accepted at once.
    let receiver = Receiver::start(|r, earlier| {
        if r.body.contains("\"run.waiting_input\"") && earlier < 2 {
            503
        } else {
            200
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let text = config(&receiver, 2.0);
    let db = pg.url();
    let a = spawn(dir.path(), 0, &text, &db, &receiver).await;
    let b = spawn(dir.path(), 1, &text, &db, &receiver).await;

    // Six runs over both servers: six events, each received once.
    let mut runs = Vec::new();
    for i in 0..6 {
        let at = if i % 2 == 0 { &a.server } else { &b.server };
        runs.push(
            at.start_run("replier", &format!("hi {i}")).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    receiver
        .wait_until(30, "six completed events", |got| got.len() >= 6)
        .await;

    // A question: refused on its first attempt; the server that holds it is killed before
    // the second, then started again.
    let asked = a.server.start_run("asker", "go?").await["id"]
        .as_i64()
        .unwrap();
    log_until(&b.server, 30, |d| {
        d.iter()
            .any(|d| d["run_id"] == asked && d["attempts"].as_array().unwrap().len() == 1)
    })
    .await;
    a.kill().await;
    let restarted = spawn(dir.path(), 2, &text, &db, &receiver).await;
    let got = receiver
        .wait_until(60, "the question accepted", |got| {
            got.iter()
                .any(|r| r.status == 200 && r.body.contains("\"run.waiting_input\""))
        })
        .await;
    // Long enough for every server to have looked for due deliveries again.
    tokio::time::sleep(harnessx_server::webhooks::deliver::LOOK_EVERY + Duration::from_secs(2))
        .await;
    let got = {
        let later = receiver.got();
        assert!(later.len() >= got.len());
        later
    };
    let mut per_message: BTreeMap<String, Vec<u16>> = BTreeMap::new();
    for r in &got {
        assert!(verify(SECRET, r));
        per_message
            .entry(r.header("webhook-id").to_owned())
            .or_default()
            .push(r.status);
    }
    assert_eq!(per_message.len(), 7, "{per_message:#?}");
    for (id, statuses) in &per_message {
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            1,
            "message {id} was accepted {statuses:?}"
        );
    }
    let completed: Vec<i64> = got
        .iter()
        .filter(|r| r.body.contains("\"run.completed\""))
        .map(|r| r.json()["data"]["run_id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        completed.len(),
        6,
        "each completed event once: {completed:?}"
    );
    for run in &runs {
        assert!(completed.contains(run), "run {run} was not announced");
    }
    let log = log_until(&restarted.server, 30, |d| {
        d.len() == 7 && d.iter().all(|d| d["state"] == "delivered")
    })
    .await;
    let question = log.iter().find(|d| d["run_id"] == asked).unwrap();
    let statuses: Vec<i64> = question["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [503, 503, 200], "{question}");
    drop(b);
}
