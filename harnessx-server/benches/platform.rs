//! Runs a second with 1, 2 and 3 `harnessx serve` processes on one PostgreSQL: each round starts
//! the servers on a fresh database, creates `RUNS` runs of a scripted agent spread round-robin
//! over the servers (`CONCURRENCY` requests in flight), and times from the first request until
//! the store holds every run completed. Prints runs/s per server count and the ratio to one.
//!
//! `cargo bench -p harnessx-server --bench platform` (needs PostgreSQL's `initdb` and `pg_ctl`,
//! as the tests do).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

// The tests' serve processes: started, ready and killed the same way here.
#[path = "../tests/common/mod.rs"]
mod common;

use common::{KEY, ServeProcess};

const CONFIG: &str = r#"
[store]
workers = 4
[agents.replier]
model = "script"
script = [{ reply = "hello" }]
"#;
const RUNS: usize = 600;
const CONCURRENCY: usize = 32;
const ROUNDS: usize = 3;

/// `n` serve processes on the database `db`, each ready (`/readyz`), killed when dropped.
async fn start(n: usize, db: &str, dir: &std::path::Path) -> Vec<ServeProcess> {
    let config = dir.join("harnessx.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let mut servers = Vec::with_capacity(n);
    for _ in 0..n {
        servers.push(ServeProcess::spawn(&config, db, &[], Stdio::null()).await);
    }
    servers
}

async fn completed(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM runs WHERE state = 'completed'", &[])
        .await
        .unwrap()
        .get(0)
}

/// One round: runs a second with `n` servers.
async fn round(pg: &harnessx_testkit::PgCluster, n: usize, r: usize) -> f64 {
    let (admin, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let name = format!("bench_{n}_{r}");
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let url = pg.url();
    let db = format!(
        "{}/{name}",
        url.strip_suffix("/postgres")
            .expect("a URL ending in the database")
    );
    let dir = tempfile::tempdir().unwrap();
    let mut servers = start(n, &db, dir.path()).await;
    let (client, conn) = tokio_postgres::connect(&db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let http = reqwest::Client::new();
    let began = Instant::now();
    let bases: Vec<String> = servers.iter().map(|s| s.server.base.clone()).collect();
    futures::stream::iter(0..RUNS)
        .map(|i| {
            let (http, base) = (http.clone(), bases[i % bases.len()].clone());
            async move {
                let r = http
                    .post(format!("{base}/v2/runs"))
                    .bearer_auth(KEY)
                    .json(&json!({"agent": "replier", "input": format!("run {i}")}))
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    while completed(&client).await < RUNS as i64 {
        assert!(
            began.elapsed() < Duration::from_secs(300),
            "runs did not finish"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let rate = RUNS as f64 / began.elapsed().as_secs_f64();
    for serve in &mut servers {
        serve.child.start_kill().unwrap();
        serve.child.wait().await.unwrap();
    }
    rate
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let pg = harnessx_testkit::PgCluster::start().expect("PostgreSQL for the platform bench");
    println!("load average before: {}", load_average());
    let mut medians = Vec::new();
    for n in 1..=3 {
        let mut rates = Vec::new();
        for r in 0..ROUNDS {
            rates.push(round(&pg, n, r).await);
        }
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        medians.push(median);
        println!(
            "{n} server(s): {median:.0} runs/s (rounds: {})",
            rates
                .iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    for (i, m) in medians.iter().enumerate() {
        println!("{} server(s): {:.2}x one server", i + 1, m / medians[0]);
    }
    println!("load average after: {}", load_average());
}
