//! Starting, using, restarting and dropping real PostgreSQL clusters.

use std::net::TcpStream;

use harnessx_testkit::{PgCluster, PgOptions, require_or_skip, require_or_skip_with};
use tokio_postgres::NoTls;

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("connect to the test cluster");
    tokio::spawn(async move {
        // Ends with an error when the server goes away; the test then sees a client error.
        let _ = connection.await;
    });
    client
}

async fn select_one(client: &tokio_postgres::Client) -> i32 {
    client
        .query_one("select 1", &[])
        .await
        .expect("select 1")
        .get(0)
}

#[tokio::test]
async fn a_cluster_starts_on_loopback_and_answers_select_1() {
    let Some(pg) = require_or_skip() else { return };
    assert!(pg.url().starts_with("postgresql://postgres@127.0.0.1:"));
    assert!(pg.is_running());
    let client = connect(&pg.url()).await;
    assert_eq!(select_one(&client).await, 1);
    // fsync is on by default: the cluster is honest enough to benchmark against.
    let fsync: String = client.query_one("show fsync", &[]).await.unwrap().get(0);
    assert_eq!(fsync, "on");
    let listen: String = client
        .query_one("show listen_addresses", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(listen, "127.0.0.1");
    // The server does not run as root (PostgreSQL refuses to).
    let user: String = client
        .query_one("select current_user", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(user, "postgres");
}

#[tokio::test]
async fn options_reach_the_server() {
    let Some(pg) = require_or_skip_with(
        PgOptions::default()
            .fsync(false)
            .setting("max_connections", "42"),
    ) else {
        return;
    };
    let client = connect(&pg.url()).await;
    let fsync: String = client.query_one("show fsync", &[]).await.unwrap().get(0);
    assert_eq!(fsync, "off");
    let max: String = client
        .query_one("show max_connections", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(max, "42");
}

#[tokio::test]
async fn restart_drops_connections_keeps_data_and_the_port() {
    let Some(mut pg) = require_or_skip() else {
        return;
    };
    let port = pg.port();
    let before = connect(&pg.url()).await;
    before
        .batch_execute("create table kept (v int); insert into kept values (7)")
        .await
        .unwrap();

    pg.restart().unwrap();
    assert_eq!(pg.port(), port);
    assert!(pg.is_running());
    // The old session was ended by the fast shutdown.
    assert!(before.query_one("select 1", &[]).await.is_err());
    let after = connect(&pg.url()).await;
    let v: i32 = after
        .query_one("select v from kept", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 7);

    // stop() then restart() brings a stopped server back.
    pg.stop().unwrap();
    assert!(!pg.is_running());
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    pg.stop().unwrap(); // stopping a stopped server does nothing
    pg.restart().unwrap();
    assert_eq!(select_one(&connect(&pg.url()).await).await, 1);
    assert!(
        pg.log()
            .contains("database system is ready to accept connections")
    );
}

#[tokio::test]
async fn drop_stops_the_server_and_removes_its_directory() {
    let Some(pg) = require_or_skip() else { return };
    let data = pg.data_dir();
    let root = data.parent().unwrap().to_path_buf();
    let port = pg.port();
    let pid: u32 = std::fs::read_to_string(data.join("postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // The server never runs as root, even when the test does.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_ne!(uid, "0", "the postmaster runs as root");
    let client = connect(&pg.url()).await;
    assert_eq!(select_one(&client).await, 1);

    drop(pg);
    assert!(!root.exists(), "{} should be removed", root.display());
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z"),
        "postmaster {pid} should be gone: {state}"
    );
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    assert!(client.query_one("select 1", &[]).await.is_err());
}

#[test]
fn two_clusters_run_side_by_side_on_different_ports() {
    let Some(a) = require_or_skip() else { return };
    let b = PgCluster::start().unwrap();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.data_dir(), b.data_dir());
    assert_eq!(a.bin_dir(), b.bin_dir());
    assert!(b.bin_dir().join("postgres").exists());
}
