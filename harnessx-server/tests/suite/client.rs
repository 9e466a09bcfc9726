//! The typed client against a real server: a run started, its question streamed and answered,
//! runs listed by state, agents changed, and the server's errors kept with their codes.

use futures::StreamExt;
use harnessx_server::agents::AgentPatch;
use harnessx_server::api::{AnswerBody, CreateRun};
use harnessx_server::client::{Client, RunQuery};

use crate::common::{KEY, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_client_drives_a_run_and_keeps_error_codes() {
    let s = Server::start().await;
    let client = Client::new(s.base.trim_start_matches("http://"), KEY).unwrap();

    let run = client
        .start_run(&CreateRun::new("asker", "pick one"))
        .await
        .unwrap();
    let mut frames = client.events(run.id, 0).await.unwrap();
    while let Some(frame) = frames.next().await {
        if frame.unwrap().event == "question" {
            break;
        }
    }
    let waiting = client
        .runs(&RunQuery::new().state("waiting_input"))
        .await
        .unwrap();
    assert_eq!(waiting.runs[0].id, run.id);
    client
        .answer(run.id, &AnswerBody::selected(["JSON"]))
        .await
        .unwrap();
    let done = s.wait_for(run.id, &["completed", "failed"]).await;
    assert_eq!(done["state"], "completed", "{done}");
    let read = client.run(run.id).await.unwrap();
    assert_eq!(read.state, "completed");
    assert!(read.output.unwrap().ends_with("JSON"));

    let agents = client.agents().await.unwrap();
    assert!(agents.agents.iter().any(|a| a.id == "asker"));
    let changed = client
        .patch_agent(
            "asker",
            &AgentPatch {
                instructions: Some(Some("Ask briefly.".into())),
                ..AgentPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(changed.instructions.as_deref(), Some("Ask briefly."));

    let missing = client.run(999_999).await.unwrap_err();
    assert_eq!(missing.status, Some(404));
    assert_eq!(missing.code, "unknown_run");
    assert_eq!(
        missing.to_string(),
        "run 999999 does not exist; check the run id"
    );
    let finished = client.cancel(run.id).await.unwrap_err();
    assert_eq!(finished.code, "already_finished");

    let nobody = Client::new("127.0.0.1:9", KEY).unwrap();
    let e = nobody.run(1).await.unwrap_err();
    assert_eq!((e.status, e.code.as_str()), (None, "unreachable"));
    assert!(
        e.message
            .starts_with("cannot reach the server at http://127.0.0.1:9"),
        "{e}"
    );
}
