//! Several `harnessx serve` processes on one PostgreSQL act as one platform: a run started on
//! one server is watched on another and answered on a third, `Last-Event-ID` resumes a stream
//! on a different server, and when a server is killed with SIGKILL mid-run the others resume
//! its runs — asking a person before a `manual` call runs again.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::common::{Frame, ServeProcess, Server};

fn config(marks: &std::path::Path) -> String {
    CONFIG.replace("MARKS", &marks.display().to_string())
}

const CONFIG: &str = r#"
[store]
workers = 2
lease_seconds = 2

[agents.asker]
model = "script"
script = [
  { ask = { questions = [{ header = "Format", question = "Which format?", options = [{ label = "CSV" }, { label = "JSON" }] }] } },
  { reply = "saw: {result}" },
]

[agents.worker]
model = "script"
builtins = [{ name = "bash", options = { permission = "allow" } }]
script = [
  { call = "run_bash", arguments = { command = "echo started >> MARKS; sleep 4; echo done" } },
  { reply = "saw: {result}" },
]
"#;

/// A `harnessx serve` process on `db` with the agents above, its bash calls marking `marks`.
async fn spawn_server(dir: &std::path::Path, db: &str, marks: &std::path::Path) -> ServeProcess {
    let file = dir.join("harnessx.toml");
    std::fs::write(&file, config(marks)).unwrap();
    ServeProcess::spawn(&file, db, &[], Stdio::null()).await
}

/// Every event of a run, read from `server`'s stream from the start until it ends.
async fn all_frames(server: &Server, id: i64) -> Vec<Frame> {
    to_end(server.events(id, Some(0)).await).await
}

/// The frames of a stream until it ends (after the run's final state).
async fn to_end(mut frames: crate::common::Frames) -> Vec<Frame> {
    let mut seen = Vec::new();
    while let Some(frame) = tokio::time::timeout(Duration::from_secs(30), frames.next())
        .await
        .expect("no frame for 30 s")
    {
        seen.push(frame);
    }
    seen
}

/// The stream of a finished run holds each sequence number once, from 1 without a gap, and
/// its final state.
fn assert_whole(id: i64, frames: &[Frame]) {
    let ids: Vec<u64> = frames.iter().filter_map(|f| f.id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(
        ids, expected,
        "run {id}: events lost or repeated: {frames:?}"
    );
    assert!(
        frames
            .iter()
            .any(|f| f.event == "state" && f.data["state"] == "completed"),
        "run {id}: {frames:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_share_runs_and_survive_one_killed_mid_run() {
    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks.txt");
    let db = pg.url();
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(spawn_server(dir.path(), &db, &marks).await);
    }
    let at = |i: usize| &servers[i % 3].server;

    // Questions: started on one server, watched on the next, answered on the third.
    let mut askers = Vec::new();
    for i in 0..3 {
        let run = at(i).start_run("asker", &format!("question {i}")).await;
        askers.push((i, run["id"].as_i64().unwrap()));
    }
    for &(i, id) in &askers {
        let mut watch = at(i + 1).events(id, None).await;
        watch.until("question").await;
        let (status, body) = at(i + 2)
            .post(
                &format!("/v2/runs/{id}/answer"),
                json!({"answers": [{"selected": ["JSON"]}]}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        // The stream opened on the second server carries what the answer on the third caused,
        // and ends when the run does.
        let rest = to_end(watch).await;
        assert!(rest.iter().any(|f| f.event == "answered"), "{rest:?}");
        assert!(rest.iter().any(|f| f.event == "completed"), "{rest:?}");
        let run = at(i).wait_for(id, &["completed", "failed"]).await;
        assert!(run["output"].as_str().unwrap().ends_with("→ JSON"), "{run}");
    }

    // Six commands on six workers (two a server): each server drives two when the first dies.
    let mut workers = Vec::new();
    for i in 0..6 {
        let run = at(i).start_run("worker", &format!("job {i}")).await;
        workers.push(run["id"].as_i64().unwrap());
    }
    for &id in &workers {
        at(1)
            .events(id, None)
            .await
            .until("tool_call_started")
            .await;
    }
    // Every command is running (each writes its mark before it sleeps).
    for _ in 0..400 {
        let marked = std::fs::read_to_string(&marks).unwrap_or_default();
        if marked.lines().count() == workers.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Half a stream read on server 1, resumed with Last-Event-ID on server 2.
    let first = workers[0];
    let mut part = at(1).events(first, None).await;
    let head = part.until("tool_call_started").await;
    let last_id = head.iter().filter_map(|f| f.id).max().unwrap();
    drop(part);

    let killed = servers.remove(0);
    let mut child = killed.child;
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    // The survivors finish every run; a run the killed server drove stops on a recovery
    // question, which a person answers: the command took effect.
    let mut recovered = 0;
    for &id in &workers {
        let run = servers[0]
            .server
            .wait_for(id, &["completed", "failed", "waiting_input"])
            .await;
        if run["state"] == "waiting_input" {
            assert_eq!(run["needs_input"][0]["kind"], "recovery", "{run}");
            recovered += 1;
            let (status, body) = servers[1]
                .server
                .post(
                    &format!("/v2/runs/{id}/answer"),
                    json!({"recovery": {"choice": "took_effect", "result": "done"}}),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
        let run = servers[0]
            .server
            .wait_for(id, &["completed", "failed"])
            .await;
        assert_eq!(run["state"], "completed", "{run}");
    }
    assert!(
        recovered >= 1,
        "the killed server drove none of the six runs, so nothing was recovered"
    );
    // No command ran twice: a person said the interrupted ones took effect.
    let started = std::fs::read_to_string(&marks).unwrap();
    assert_eq!(started.lines().count(), workers.len(), "{started}");

    // Every event of every run, once, in order, on either survivor.
    for &id in askers.iter().map(|(_, id)| id).chain(&workers) {
        let a = all_frames(&servers[0].server, id).await;
        let b = all_frames(&servers[1].server, id).await;
        assert_whole(id, &a);
        assert_eq!(
            a.iter().map(|f| f.id).collect::<Vec<_>>(),
            b.iter().map(|f| f.id).collect::<Vec<_>>(),
            "run {id}"
        );
    }
    // The stream resumed on another server continues right after the last event seen.
    let mut resumed = servers[1].server.events(first, Some(last_id)).await;
    let next = resumed.next().await.unwrap();
    assert_eq!(next.id, Some(last_id + 1), "{next:?}");
    drop(pg);
}
