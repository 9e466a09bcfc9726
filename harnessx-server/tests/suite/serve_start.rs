//! Starting `harnessx serve` day to day: with no key configured it generates one on its first
//! start and keeps it with the database (`<db>.key`, `0600`, beside a SQLite file; a stored
//! resource shared by every server on a PostgreSQL database), so a restart accepts the same key;
//! the key is printed only once the server serves, with the database and the console's address.
//! A client command next to it on the same database is pointed at the server, and one with
//! `--server` on this machine finds the kept key. Problems in the configuration stop the start
//! (or warn) naming their line.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use harnessx_server::server::KeptIn;
use harnessx_server::{Config, ServeOptions, serve};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `harnessx ARGS` with no key, database or model settings in its environment.
fn harnessx(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_harnessx"));
    command
        .args(args)
        .env_remove("HARNESSX_API_KEY")
        .env_remove("HARNESSX_API_KEYS")
        .env_remove("HARNESSX_DATABASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Starts `harnessx serve ARGS` and returns it with the lines it printed up to and including
/// the line after `API key:` (or all of them, if it exits first).
async fn serve_until_key(args: &[&str]) -> (Child, Vec<String>) {
    let mut child = harnessx(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut after_key = false;
        while let Ok(Some(line)) = lines.next_line().await {
            let done = after_key;
            after_key = line.starts_with("API key: ");
            said.push(line);
            if done {
                break;
            }
        }
    })
    .await
    .expect("harnessx serve said something within a minute");
    // Keep reading, so the pipe never fills.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, said)
}

async fn output(args: &[&str]) -> (bool, String, String) {
    let out = harnessx(args).output().await.unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_key_survives_a_restart_and_is_printed_once_serving() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let key_file = format!("{db}.key");
    let port = free_port().to_string();
    let (mut first, said) = serve_until_key(&["serve", "--db", db, "--port", &port]).await;
    let base = format!("http://127.0.0.1:{port}");
    let key = said
        .iter()
        .find_map(|l| l.strip_prefix("API key: "))
        .unwrap_or_else(|| panic!("no key was printed: {said:?}"))
        .to_owned();
    assert_eq!(
        said,
        [
            format!("harnessx serving on {base}"),
            format!("console: {base}/console/"),
            format!("database: {db}"),
            "agents: assistant".to_owned(),
            format!("API key: {key}"),
            format!(
                "  generated now, kept in `{key_file}`, readable only by you; give your own with \
                 HARNESSX_API_KEY or `[server] api_keys`"
            ),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&key_file).unwrap(),
        format!("{key}\n")
    );
    assert_eq!(mode(Path::new(&key_file)), 0o600);
    let http = reqwest::Client::new();
    let status = |key: String| {
        let http = http.clone();
        let url = format!("{base}/v2/runs");
        async move {
            http.get(url)
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(status(key.clone()).await, 200);

    // A client on this machine finds the kept key; one on the same database without --server
    // is pointed at the server.
    let address = format!("127.0.0.1:{port}");
    let (ok, out, err) = output(&["runs", "--server", &address, "--db", db]).await;
    assert!(ok, "{err}");
    assert_eq!(out, "no runs\n");
    let (ok, _, err) = output(&["runs", "--agent", "assistant", "--db", db]).await;
    assert!(!ok);
    assert_eq!(
        err,
        format!(
            "harnessx: `{db}` is in use by another process, most likely a `harnessx serve` on it; \
             send the command to that server instead (at the address it printed, 127.0.0.1:8080 \
             unless --bind or --port said otherwise):\n  harnessx runs --agent assistant \
             --server 127.0.0.1:8080 --db {db}\nIts API key is read from `{key_file}` when it \
             generated one; otherwise set HARNESSX_API_KEY.\n"
        )
    );

    first.start_kill().unwrap();
    first.wait().await.unwrap();
    let (_second, said) = serve_until_key(&["serve", "--db", db, "--port", &port]).await;
    assert_eq!(said[4], format!("API key: {key}"), "{said:?}");
    assert_eq!(
        said[5],
        format!(
            "  generated on an earlier start, kept in `{key_file}`, readable only by you; give \
             your own with HARNESSX_API_KEY or `[server] api_keys`"
        )
    );
    assert_eq!(
        status(key).await,
        200,
        "the key of the first start still works"
    );
}

#[tokio::test]
async fn a_start_that_fails_prints_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (ok, _, err) = output(&["serve", "--db", db.to_str().unwrap(), "--port", &port]).await;
    assert!(!ok);
    assert!(
        err.starts_with(&format!("harnessx: cannot listen on 127.0.0.1:{port}: ")),
        "{err}"
    );
    assert!(!err.contains("API key"), "{err}");
}

/// The library's side: `ServeOptions::generate_key` keeps the key in `<db>.key` for SQLite and
/// in the database for PostgreSQL, where every server on the database accepts the same key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_key_is_kept_with_either_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let options = || {
        ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .sqlite(db.to_str().unwrap())
            .generate_key()
    };
    let first = serve(&Config::offline(), options()).await.unwrap();
    let made = first.generated_key.clone().unwrap();
    assert!(made.created);
    assert_eq!(made.kept_in, KeptIn::File(dir.path().join("runs.db.key")));
    first.stop(Duration::from_secs(5)).await;
    let again = serve(&Config::offline(), options()).await.unwrap();
    let kept = again.generated_key.clone().unwrap();
    assert_eq!((kept.created, &kept.key), (false, &made.key));
    again.stop(Duration::from_secs(5)).await;

    // A configured key wins: nothing is generated.
    let given = serve(
        &Config::offline(),
        options().api_key("a-configured-key-0123456789"),
    )
    .await
    .unwrap();
    assert!(given.generated_key.is_none());
    given.stop(Duration::from_secs(5)).await;

    let Some(pg) = harnessx_testkit::require_or_skip() else {
        return;
    };
    let on_pg = || {
        ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .database(pg.url())
            .generate_key()
    };
    let a = serve(&Config::offline(), on_pg()).await.unwrap();
    let b = serve(&Config::offline(), on_pg()).await.unwrap();
    let (ka, kb) = (
        a.generated_key.clone().unwrap(),
        b.generated_key.clone().unwrap(),
    );
    assert_eq!(ka.kept_in, KeptIn::Database);
    assert!(ka.created && !kb.created);
    assert_eq!(
        ka.key, kb.key,
        "every server on the database accepts one key"
    );
    let http = reqwest::Client::new();
    for running in [&a, &b] {
        let r = http
            .get(format!("http://{}/v2/runs", running.addr))
            .bearer_auth(&ka.key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    a.stop(Duration::from_secs(5)).await;
    b.stop(Duration::from_secs(5)).await;
    let later = serve(&Config::offline(), on_pg()).await.unwrap();
    assert_eq!(later.generated_key.clone().unwrap().key, ka.key);
    later.stop(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_problems_are_reported_at_start_naming_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("harnessx.toml");
    let cfg = config.to_str().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();

    std::fs::write(&config, "[agents.helper]\nmodel = \"scirpt\"\n").unwrap();
    let (ok, _, err) = output(&["serve", "--config", cfg, "--db", db, "--port", "0"]).await;
    assert!(!ok);
    assert_eq!(
        err,
        format!(
            "harnessx: {cfg}: line 2: `agents.helper.model`: `scirpt` is not a model; did you \
             mean `script` (the scripted model)?\n"
        )
    );

    std::fs::write(
        &config,
        "[agents.helper]\ninstructions = \"Help.\"\n\nmodel = \"openai:gpt-4o\"\n",
    )
    .unwrap();
    let (ok, _, err) = output(&["serve", "--config", cfg, "--db", db, "--port", "0"]).await;
    assert!(!ok);
    assert_eq!(
        err,
        format!(
            "harnessx: {cfg}: line 4: `agents.helper.model`: model = \"openai:gpt-4o\" needs \
             OPENAI_API_KEY: set it to your API key in the server's environment, or set \
             OPENAI_BASE_URL to a server that needs no key\n"
        )
    );
    // `run` checks the same at its start, before any run.
    let (ok, _, err) = output(&["run", "helper", "hi", "--config", cfg, "--db", db]).await;
    assert!(!ok);
    assert!(
        err.contains(
            "line 4: `agents.helper.model`: model = \"openai:gpt-4o\" needs OPENAI_API_KEY"
        ),
        "{err}"
    );

    std::fs::write(
        &config,
        "[agents.files]\nmodel = \"script\"\nbuiltins = [{ name = \"filesystem\" }]\n\
         script = [{ call = \"fetch_url\", arguments = { url = \"https://example.com\" } }]\n",
    )
    .unwrap();
    let port = free_port().to_string();
    let mut child = harnessx(&["serve", "--config", cfg, "--db", db, "--port", &port])
        .env("HARNESSX_API_KEY", "a-long-enough-test-key-0123")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut warnings = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(w) = line.strip_prefix("warning: ") {
                warnings.push(w.to_owned());
                if warnings.len() == 2 {
                    break;
                }
            }
        }
    })
    .await
    .expect("two warnings within a minute");
    assert_eq!(
        warnings,
        [
            format!(
                "{cfg}: line 3: `agents.files.builtins[0]`: the file tools of `filesystem` have \
                 no `base_path`, so they read and write anywhere the server's user may; give \
                 `base_path` to keep them in one folder"
            ),
            format!(
                "{cfg}: line 4: `agents.files.script[0]`: calls `fetch_url`, which agent `files` \
                 does not have (its tools: ask_user, delete, edit_file, generate_file, glob, \
                 grep, list_directory, read_file, write_file); the run gets an unknown-tool \
                 error at this turn"
            ),
        ]
    );
    child.start_kill().unwrap();
}
