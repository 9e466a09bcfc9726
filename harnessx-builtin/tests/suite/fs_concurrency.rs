//! Serial writes: edits of one file never interleave, in a batch or as separate direct calls.

use harnessx::ToolCall;
use serde_json::json;

use super::fs_support::Workspace;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_edits_of_one_file_in_a_batch_both_land() {
    let ws = Workspace::new();
    for round in 0..20 {
        let body: String = (0..200).map(|i| format!("line {i} = old\n")).collect();
        ws.put("shared.txt", &body);
        let calls: Vec<ToolCall> = (0..2)
            .map(|k| {
                ToolCall::json(
                    format!("edit-{k}"),
                    "edit_file",
                    json!({"path": "shared.txt", "old_string": format!("line {} = old", k * 100), "new_string": format!("line {} = new", k * 100)}),
                )
            })
            .chain([ToolCall::json("read", "read_file", json!({"path": "shared.txt"}))])
            .collect();
        let results = ws.registry.run(None).execute_batch(&calls, None).await;
        assert!(
            results.iter().all(|r| !r.is_error),
            "round {round}: {results:?}"
        );
        let text = ws.read("shared.txt");
        assert!(
            text.contains("line 0 = new\n"),
            "round {round}: first edit lost"
        );
        assert!(
            text.contains("line 100 = new\n"),
            "round {round}: second edit lost"
        );
        assert_eq!(text.lines().count(), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_concurrent_direct_edits_of_one_file_all_land() {
    let ws = Workspace::new();
    ws.put("log.txt", "START\nEND\n");
    let calls: Vec<ToolCall> = (0..40)
        .map(|k| {
            ToolCall::json(
                format!("edit-{k}"),
                "edit_file",
                json!({"path": "log.txt", "old_string": "END\n", "new_string": format!("marker-{k}\nEND\n")}),
            )
        })
        .collect();
    // Each call is a run of its own, as when several agents share one registry.
    let results =
        futures::future::join_all(calls.iter().map(|c| ws.registry.execute(c, None))).await;
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    let text = ws.read("log.txt");
    for k in 0..40 {
        assert!(
            text.lines().any(|l| l == format!("marker-{k}")),
            "edit {k} was acknowledged but lost:\n{text}"
        );
    }
    assert_eq!(text.lines().count(), 42);
}
