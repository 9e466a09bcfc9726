//! `write_file` against another process racing it: what appears at the path between the tool's
//! check and its rename is never replaced.

use std::time::Duration;

use serde_json::json;

use super::fs_support::Workspace;

#[tokio::test]
async fn a_link_created_between_the_check_and_the_rename_is_never_replaced() {
    let ws = Workspace::new();
    let secret = ws.outside().join("secret.txt");
    let before = ws.outside_snapshot();
    let mut races_lost_by_the_tool = 0;
    for round in 0..80u64 {
        let name = format!("t{round}.txt");
        let path = ws.root().join(&name);
        // Each round the racer waits a little longer, so its link lands before the check, between
        // the check and the rename, or after the rename.
        let racer = {
            let (path, secret) = (path.clone(), secret.clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_micros(round * 50));
                std::os::unix::fs::symlink(&secret, &path).is_ok()
            })
        };
        let r = ws
            .call("write_file", json!({"path": name, "content": "mine"}))
            .await;
        let racer_won = racer.join().unwrap();
        let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
        if r.is_error {
            assert!(racer_won, "round {round}: {}", r.content);
            assert!(kind.is_symlink(), "round {round}: the link is still there");
            races_lost_by_the_tool += 1;
        } else {
            assert!(
                !racer_won,
                "round {round}: write_file reported `{}` although a link was made at the path \
                 after its check and before its rename, and replaced it",
                r.content
            );
            assert!(kind.is_file());
            assert_eq!(ws.read(&name), "mine");
        }
    }
    assert_eq!(ws.outside_snapshot(), before);
    println!("the racer's link came first in {races_lost_by_the_tool} of 80 rounds");
}
