//! Scale: does a store's history slow the platform down? On each store (SQLite, PostgreSQL), a
//! *big* database — `SCALE_RUNS` runs (default 100,000; 1% waiting for a person, the rest
//! finished) with 10 events each (1,000,000), a journal step, a transcript — is measured beside
//! a *small* one holding 1,000 runs, half of them waiting, so that every page asked returns 50
//! runs on both. Both are filled in bulk (one SQLite transaction of prepared statements;
//! PostgreSQL `generate_series`) into databases the stores created and migrated.
//!
//! Measured, the two databases interleaved request by request (the side going first
//! alternating), `ROUNDS` rounds, medians and p99:
//! - `GET /v2/runs` pages through a server on each database: the first page and the deepest full
//!   one (a cursor 50 matches from the oldest), unfiltered, by agent, by state
//!   (`waiting_input`), by both;
//! - a worker's claim (`RunStore::claim_next` of a run just queued, on the store itself).
//!
//! Then on the big database: deleting every finished run (`POST /v2/runs/prune`, 500 runs a
//! transaction), the list pages again, and the database's size before and after (SQLite: the
//! file and its write-ahead log, and after a checkpoint; PostgreSQL: `pg_database_size`, and
//! after `VACUUM`).
//!
//! `cargo bench -p harnessx-server --bench scale` (`SCALE_ENGINES=sqlite` or `postgres` for
//! one; PostgreSQL's programs as the tests find them). `SCALE_WITHOUT_INDEXES=1` drops the list
//! indexes of migration 0006 from both databases first, to show what they are for.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::Path;
use std::time::{Duration, Instant};

use harnessx::{Message, RunResult};
use harnessx_runtime::store::{NewRun, RunEnd};
use harnessx_runtime::{PostgresStore, RunStore, SqliteStore};
use harnessx_server::{Config, ServeOptions, serve};

const KEY: &str = "bench-key-0123456789abcdef";
const SMALL_RUNS: i64 = 1_000;
const EVENTS_PER_RUN: i64 = 10;
const PAGE: usize = 50;
const ROUNDS: usize = 200;
const CLAIMS: usize = 200;
/// The agent the filtered pages ask for: a tenth of the runs.
const AGENT: &str = "a3";
/// An agent with few runs: 0.1% of the big store's (none of them waiting).
const RARE: &str = "rare";

/// Every how many runs one is the rare agent's: enough on the small store for a full deep page.
fn rare_every(waiting_every: i64) -> i64 {
    if waiting_every < 10 {
        10
    } else {
        10 * waiting_every
    }
}

const RESULT: &str = r#"{"output":"Your order shipped on Monday.","messages":[{"role":"user","content":"Where is my order?"},{"role":"assistant","content":"Your order shipped on Monday."}],"turns":1,"usage":{"input_tokens":812,"output_tokens":41,"cache_read_tokens":0},"todos":[],"stop_reason":"end_turn"}"#;
const PENDING: &str = r#"{"key":{"turn":1,"index":0},"call_id":"call_0","kind":"question","form":{"form":"structured","questions":[{"header":"Format","question":"Which format?","options":[{"label":"CSV"},{"label":"JSON"}],"multi_select":false}]},"window_ms":600000}"#;
const RESPONSE: &str = r#"{"content":"Your order shipped on Monday.","tool_calls":[],"usage":{"input_tokens":812,"output_tokens":41,"cache_read_tokens":0},"stop_reason":"end_turn"}"#;

/// The journal step of the run's model turn.
fn turn_step() -> String {
    format!(r#"{{"kind":"turn","turn":1,"response":{RESPONSE}}}"#)
}

/// A run's agent and state, the same on both stores: one of ten agents `a0`..`a9` (or, for
/// every [`rare_every`]th run, `rare`); every `waiting_every`th run waits for a person, and of
/// the rest 2% failed, 2% were cancelled, the others completed.
fn shape(g: i64, waiting_every: i64) -> (String, &'static str) {
    let agent = if g % rare_every(waiting_every) == 3 {
        RARE.to_owned()
    } else {
        format!("a{}", g * 2_654_435_761 / 1000 % 10)
    };
    let state = if g % waiting_every == 0 {
        "waiting_input"
    } else if g % 50 == 1 {
        "failed"
    } else if g % 50 == 2 {
        "cancelled"
    } else {
        "completed"
    };
    (agent, state)
}

/// The ten events of run `g`, numbered 1 to 10; the journal step rides on event 7.
fn event(g: i64, seq: i64, waiting: bool) -> String {
    match seq {
        1 => r#"{"type":"state","state":"queued"}"#.into(),
        2 => r#"{"type":"state","state":"running"}"#.into(),
        3 | 6 | 8 => {
            format!(r#"{{"type":"text_delta","text":"Looking up order {g} for you, one moment"}}"#)
        }
        4 => format!(
            r#"{{"type":"tool_call_started","call_id":"call_0","name":"lookup_order","arguments":"{{\"order\":{g}}}"}}"#
        ),
        5 => format!(
            r#"{{"type":"tool_result","result":{{"call_id":"call_0","tool_name":"lookup_order","content":"order {g}: shipped Monday","is_error":false}}}}"#
        ),
        7 => format!(r#"{{"type":"turn_completed","turn":1,"response":{RESPONSE}}}"#),
        9 if waiting => format!(r#"{{"type":"needs_input","pending":{PENDING}}}"#),
        9 => format!(r#"{{"type":"completed","result":{RESULT}}}"#),
        _ if waiting => r#"{"type":"state","state":"waiting_input"}"#.into(),
        _ => r#"{"type":"state","state":"completed"}"#.into(),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Fills a SQLite store the store itself created with `runs` runs, in one transaction.
fn fill_sqlite(path: &Path, runs: i64, waiting_every: i64) {
    drop(SqliteStore::open(path).unwrap());
    let mut conn = loop {
        // The closed store's thread may still hold the file for a moment.
        let conn = rusqlite::Connection::open(path).unwrap();
        if conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").is_ok() {
            break conn;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let now = now_ms();
    let day = 86_400_000;
    let step_body = turn_step();
    let tx = conn.transaction().unwrap();
    {
        let mut conversation = tx
            .prepare("INSERT OR IGNORE INTO conversations (id, created_ms) VALUES (?1, ?2)")
            .unwrap();
        let mut run = tx
            .prepare(
                "INSERT INTO runs (id, agent, conversation, input, state, lease_gen, result, error,
                   created_ms, updated_ms, finished_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8, ?8, ?9)",
            )
            .unwrap();
        let mut event_row = tx
            .prepare(
                "INSERT INTO events (run_id, seq, body, step, kind, turn, idx)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .unwrap();
        let mut pending = tx
            .prepare(
                "INSERT INTO pending (run_id, turn, idx, body, asked_ms, deadline_ms)
                 VALUES (?1, 1, 0, ?2, ?3, NULL)",
            )
            .unwrap();
        let mut message = tx
            .prepare(
                "INSERT INTO messages (conversation, seq, run_id, body) VALUES (?1, ?2, ?3, ?4)",
            )
            .unwrap();
        for g in 1..=runs {
            let (agent, state) = shape(g, waiting_every);
            let waiting = state == "waiting_input";
            // Created over the last 90 days, oldest first; finished a minute later.
            let created = now - 90 * day + g * (90 * day / runs);
            let c = format!("c-{}", (g - 1) / 5);
            conversation.execute(rusqlite::params![c, created]).unwrap();
            run.execute(rusqlite::params![
                g,
                agent,
                c,
                format!("Where is my order {g}?"),
                state,
                (state == "completed").then_some(RESULT),
                (state == "failed").then_some("the model failed"),
                created,
                (!waiting).then_some(created + 60_000),
            ])
            .unwrap();
            for seq in 1..=EVENTS_PER_RUN {
                let step = seq == 7;
                event_row
                    .execute(rusqlite::params![
                        g,
                        seq,
                        event(g, seq, waiting),
                        step.then_some(step_body.as_str()),
                        step.then_some("turn"),
                        step.then_some(1),
                        step.then_some(0),
                    ])
                    .unwrap();
            }
            if waiting {
                pending
                    .execute(rusqlite::params![g, PENDING, created])
                    .unwrap();
            } else if state == "completed" {
                let seq = (g - 1) % 5 * 2;
                message
                    .execute(rusqlite::params![
                        c,
                        seq + 1,
                        g,
                        r#"{"role":"user","content":"Where is my order?"}"#
                    ])
                    .unwrap();
                message
                    .execute(rusqlite::params![
                        c,
                        seq + 2,
                        g,
                        r#"{"role":"assistant","content":"Your order shipped on Monday."}"#
                    ])
                    .unwrap();
            }
        }
    }
    tx.commit().unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

/// Fills a PostgreSQL database the store created with `runs` runs, with `generate_series`.
async fn fill_postgres(url: &str, runs: i64, waiting_every: i64) {
    drop(PostgresStore::connect(url).await.unwrap());
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let now = now_ms();
    let day: i64 = 86_400_000;
    let state = format!(
        "CASE WHEN g % {waiting_every} = 0 THEN 'waiting_input' WHEN g % 50 = 1 THEN 'failed'
              WHEN g % 50 = 2 THEN 'cancelled' ELSE 'completed' END"
    );
    let created = format!("({now} - 90 * {day}::bigint + g * ({} / {runs}))", 90 * day);
    let body = |seq: i64, waiting: bool| {
        event(0, seq, waiting)
            .replace('\'', "''")
            .replace("order 0", "order ' || r || '")
            .replace(r#"{\"order\":0}"#, r#"{\"order\":' || r || '}"#)
    };
    let mut events = String::from("CASE");
    for seq in 1..=EVENTS_PER_RUN {
        let (a, b) = (body(seq, true), body(seq, false));
        events.push_str(&format!(
            " WHEN s = {seq} THEN CASE WHEN r % {waiting_every} = 0 THEN '{a}' ELSE '{b}' END"
        ));
    }
    events.push_str(" END");
    let sql = format!(
        "BEGIN;
         ALTER TABLE events DISABLE TRIGGER events_notify;
         INSERT INTO conversations (id, created_ms)
           SELECT 'c-' || c, {now} FROM generate_series(0, ({runs} - 1) / 5) c;
         INSERT INTO runs (id, agent, conversation, input, state, lease_gen, result, error,
                           step_seq, event_seq, created_ms, updated_ms, finished_ms)
           SELECT g, CASE WHEN g % {rare} = 3 THEN '{RARE}'
                          ELSE 'a' || (g::bigint * 2654435761 / 1000 % 10) END,
                  'c-' || ((g - 1) / 5),
                  'Where is my order ' || g || '?', {state}, 1,
                  CASE WHEN {state} = 'completed' THEN '{result}' END,
                  CASE WHEN {state} = 'failed' THEN 'the model failed' END,
                  1, {EVENTS_PER_RUN}, {created}, {created},
                  CASE WHEN g % {waiting_every} <> 0 THEN {created} + 60000 END
           FROM generate_series(1, {runs}) g;
         SELECT setval(pg_get_serial_sequence('runs', 'id'), {runs});
         INSERT INTO events (run_id, seq, body)
           SELECT r, s, {events} FROM generate_series(1, {runs}) r, generate_series(1, {EVENTS_PER_RUN}) s;
         INSERT INTO steps (run_id, seq, kind, turn, idx, body)
           SELECT g, 1, 'turn', 1, 0, '{step}' FROM generate_series(1, {runs}) g;
         INSERT INTO pending (run_id, turn, idx, body, asked_ms, deadline_ms)
           SELECT id, 1, 0, '{pending}', created_ms, NULL FROM runs WHERE state = 'waiting_input';
         INSERT INTO messages (conversation, seq, run_id, body)
           SELECT conversation, (id - 1) % 5 * 2 + m, id,
                  CASE WHEN m = 1 THEN '{{\"role\":\"user\",\"content\":\"Where is my order?\"}}'
                       ELSE '{{\"role\":\"assistant\",\"content\":\"Your order shipped on Monday.\"}}' END
           FROM runs, generate_series(1, 2) m WHERE state = 'completed';
         ALTER TABLE events ENABLE TRIGGER events_notify;
         COMMIT;",
        result = RESULT.replace('\'', "''"),
        step = turn_step().replace('\'', "''"),
        pending = PENDING.replace('\'', "''"),
        rare = rare_every(waiting_every),
    );
    client.batch_execute(&sql).await.unwrap();
    // What autovacuum would do soon after such a load: statistics for the planner.
    client.batch_execute("VACUUM ANALYZE").await.unwrap();
}

/// The list indexes of migration 0006 (`runs_finished` stays: the prune needs it).
const LIST_INDEXES: &str = "DROP INDEX runs_by_agent; DROP INDEX runs_by_agent_state;";

fn without_indexes() -> bool {
    std::env::var_os("SCALE_WITHOUT_INDEXES").is_some()
}

/// The ids of the runs a filter matches, oldest first, as [`shape`] makes them.
fn matching(runs: i64, waiting_every: i64, agent: Option<&str>, waiting: bool) -> Vec<i64> {
    (1..=runs)
        .filter(|g| {
            let (a, s) = shape(*g, waiting_every);
            agent.is_none_or(|agent| a == agent) && (!waiting || s == "waiting_input")
        })
        .collect()
}

/// The page queries: (name, path) for a store of `runs` runs.
fn queries(runs: i64, waiting_every: i64) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, agent, waiting) in [
        ("all", None, false),
        ("agent", Some(AGENT), false),
        ("rare agent", Some(RARE), false),
        ("waiting", None, true),
        ("agent+waiting", Some(AGENT), true),
    ] {
        let mut query = format!("/v2/runs?limit={PAGE}");
        if let Some(agent) = agent {
            query.push_str(&format!("&agent={agent}"));
        }
        if waiting {
            query.push_str("&state=waiting_input");
        }
        let ids = matching(runs, waiting_every, agent, waiting);
        assert!(ids.len() > PAGE, "{name}: {} runs match", ids.len());
        out.push((format!("{name}, first page"), query.clone()));
        // The deepest full page: the cursor is the match after the oldest 50.
        out.push((
            format!("{name}, deepest page"),
            format!("{query}&before={}", ids[PAGE]),
        ));
    }
    out
}

struct Side {
    base: String,
    queries: Vec<(String, String)>,
}

/// A median and a 99th percentile.
#[derive(Clone, Copy)]
struct Stats {
    p50: Duration,
    p99: Duration,
}

/// One page query's figures on both databases.
struct Row {
    name: String,
    small: Stats,
    big: Stats,
}

fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    Stats {
        p50: v[v.len() / 2],
        p99: v[(v.len() * 99).div_ceil(100) - 1],
    }
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

async fn page(http: &reqwest::Client, base: &str, path: &str) -> Duration {
    let began = Instant::now();
    let r = http
        .get(format!("{base}{path}"))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{path}: {}", r.status());
    let body: serde_json::Value = r.json().await.unwrap();
    let elapsed = began.elapsed();
    assert_eq!(body["runs"].as_array().unwrap().len(), PAGE, "{path}");
    elapsed
}

/// Every query on both sides, interleaved; returns (small, big) stats per query.
async fn pages(small: &Side, big: &Side) -> Vec<Row> {
    let http = reqwest::Client::new();
    let mut out = Vec::new();
    for (i, (name, small_path)) in small.queries.iter().enumerate() {
        let big_path = &big.queries[i].1;
        let (mut s, mut b) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS + 10 {
            let (ts, tb) = if round % 2 == 0 {
                let ts = page(&http, &small.base, small_path).await;
                (ts, page(&http, &big.base, big_path).await)
            } else {
                let tb = page(&http, &big.base, big_path).await;
                (page(&http, &small.base, small_path).await, tb)
            };
            // The first rounds warm the connections and caches.
            if round >= 10 {
                s.push(ts);
                b.push(tb);
            }
        }
        out.push(Row {
            name: name.clone(),
            small: stats(s),
            big: stats(b),
        });
    }
    out
}

fn print_pages(rows: &[Row]) {
    println!(
        "  {:<28} {:>10} {:>10} {:>7}   {:>10} {:>10}",
        "GET /v2/runs", "small p50", "big p50", "ratio", "small p99", "big p99"
    );
    for Row { name, small, big } in rows {
        println!(
            "  {:<28} {:>10} {:>10} {:>6.2}x   {:>10} {:>10}",
            name,
            us(small.p50),
            us(big.p50),
            big.p50.as_secs_f64() / small.p50.as_secs_f64(),
            us(small.p99),
            us(big.p99)
        );
    }
}

/// A worker's claim of a run just queued, on both stores in turn; (small, big) stats.
async fn claims(small: &dyn RunStore, big: &dyn RunStore) -> (Stats, Stats) {
    let (mut s, mut b) = (Vec::new(), Vec::new());
    for i in 0..CLAIMS + 10 {
        let order: [(&dyn RunStore, bool); 2] = if i % 2 == 0 {
            [(small, true), (big, false)]
        } else {
            [(big, false), (small, true)]
        };
        for (store, is_small) in order {
            store
                .create_run(NewRun {
                    agent: "bench".into(),
                    input: format!("claim {i}"),
                    conversation: None,
                    idempotency_key: None,
                    agent_version: None,
                })
                .await
                .unwrap();
            let began = Instant::now();
            let claim = store.claim_next("bench", 60_000).await.unwrap().unwrap();
            let elapsed = began.elapsed();
            store
                .finish(
                    &claim.lease,
                    RunEnd::Completed(RunResult {
                        output: "done".into(),
                        messages: vec![Message::user("claim"), Message::assistant("done")],
                        turns: 1,
                        ..RunResult::default()
                    }),
                    Vec::new(),
                )
                .await
                .unwrap();
            if i >= 10 {
                (if is_small { &mut s } else { &mut b }).push(elapsed);
            }
        }
    }
    (stats(s), stats(b))
}

async fn start_server(db: &str) -> harnessx_server::Running {
    for _ in 0..200 {
        match serve(
            &Config::parse("[store]\nworkers = 1\n").unwrap(),
            ServeOptions::default()
                .bind("127.0.0.1:0".parse().unwrap())
                .api_key(KEY)
                .database(db),
        )
        .await
        {
            Ok(running) => return running,
            Err(e) if format!("{e:?}").contains("Locked") => {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    panic!("{db} stayed locked");
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn file_bytes(path: &Path) -> u64 {
    let wal = path.with_file_name(format!(
        "{}-wal",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::metadata(path).map_or(0, |m| m.len()) + std::fs::metadata(wal).map_or(0, |m| m.len())
}

async fn pg_size(url: &str) -> u64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let n: i64 = client
        .query_one("SELECT pg_database_size(current_database())", &[])
        .await
        .unwrap()
        .get(0);
    n as u64
}

/// A server over `db`, and the list queries of its `runs` runs (one in `waiting_every` waiting).
async fn serve_side(db: &str, runs: i64, waiting_every: i64) -> (harnessx_server::Running, Side) {
    let server = start_server(db).await;
    let side = Side {
        base: format!("http://{}", server.addr),
        queries: queries(runs, waiting_every),
    };
    (server, side)
}

fn print_claims((s, b): (Stats, Stats)) {
    println!(
        "  claim: small p50 {} p99 {}, big p50 {} p99 {} ({:.2}x)",
        us(s.p50),
        us(s.p99),
        us(b.p50),
        us(b.p99),
        b.p50.as_secs_f64() / s.p50.as_secs_f64()
    );
}

fn print_prune(deleted: u64, took: Duration) {
    println!(
        "  prune: {deleted} runs in {:.2} s ({:.0} runs/s)",
        took.as_secs_f64(),
        deleted as f64 / took.as_secs_f64()
    );
}

async fn prune(base: &str) -> (u64, Duration) {
    let began = Instant::now();
    let r = reqwest::Client::new()
        .post(format!("{base}/v2/runs/prune"))
        .bearer_auth(KEY)
        .json(&serde_json::json!({"older_than_seconds": 0}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let body: serde_json::Value = r.json().await.unwrap();
    (body["deleted"].as_u64().unwrap(), began.elapsed())
}

/// The page queries that still have full pages once the big store's finished runs are gone:
/// the waiting runs'.
fn still_full(side: &Side) -> Side {
    Side {
        base: side.base.clone(),
        queries: side
            .queries
            .iter()
            .filter(|(name, _)| name.starts_with("waiting") || name.starts_with("agent+"))
            .cloned()
            .collect(),
    }
}

/// The pages again after the prune, interleaved with the small store as before.
async fn pages_after(small: &Side, big: &Side) {
    println!("  after the prune (the big store keeps its waiting runs):");
    print_pages(&pages(&still_full(small), &still_full(big)).await);
}

async fn sqlite(runs: i64) {
    println!("== SQLite");
    let dir = tempfile::tempdir().unwrap();
    let (small_db, big_db) = (dir.path().join("small.db"), dir.path().join("big.db"));
    let began = Instant::now();
    fill_sqlite(&small_db, SMALL_RUNS, 2);
    fill_sqlite(&big_db, runs, 100);
    if without_indexes() {
        for db in [&small_db, &big_db] {
            rusqlite::Connection::open(db)
                .unwrap()
                .execute_batch(LIST_INDEXES)
                .unwrap();
        }
        println!("  without the list indexes of migration 0006");
    }
    println!(
        "  filled {runs} + {SMALL_RUNS} runs in {:.1} s",
        began.elapsed().as_secs_f64()
    );
    {
        let small = SqliteStore::open(&small_db).unwrap();
        let big = SqliteStore::open(&big_db).unwrap();
        print_claims(claims(&small, &big).await);
    }
    let (small_server, small) = serve_side(small_db.to_str().unwrap(), SMALL_RUNS, 2).await;
    let (big_server, big) = serve_side(big_db.to_str().unwrap(), runs, 100).await;
    let rows = pages(&small, &big).await;
    print_pages(&rows);
    let before = file_bytes(&big_db);
    let (deleted, took) = prune(&big.base).await;
    let after = file_bytes(&big_db);
    rusqlite::Connection::open(&big_db)
        .unwrap()
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let checkpointed = file_bytes(&big_db);
    print_prune(deleted, took);
    println!(
        "  size: {} before, {} after (file + WAL), {} after a checkpoint ({:.3}x)",
        mb(before),
        mb(after),
        mb(checkpointed),
        checkpointed as f64 / before as f64
    );
    pages_after(&small, &big).await;
    small_server.stop(Duration::from_secs(2)).await;
    big_server.stop(Duration::from_secs(2)).await;
}

async fn postgres(runs: i64) {
    println!("== PostgreSQL");
    let pg = harnessx_testkit::PgCluster::start().expect("PostgreSQL for the scale bench");
    let (admin, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    for name in ["small", "big"] {
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
    }
    let url = |name: &str| {
        format!(
            "{}/{name}",
            pg.url().strip_suffix("/postgres").expect("a database URL")
        )
    };
    let (small_db, big_db) = (url("small"), url("big"));
    let began = Instant::now();
    fill_postgres(&small_db, SMALL_RUNS, 2).await;
    fill_postgres(&big_db, runs, 100).await;
    if without_indexes() {
        for db in [&small_db, &big_db] {
            let (client, connection) = tokio_postgres::connect(db, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .batch_execute(&format!("{LIST_INDEXES} DROP INDEX runs_by_state;"))
                .await
                .unwrap();
        }
        println!("  without the list indexes of migration 0006");
    }
    println!(
        "  filled {runs} + {SMALL_RUNS} runs in {:.1} s",
        began.elapsed().as_secs_f64()
    );
    {
        let small = PostgresStore::connect(&small_db).await.unwrap();
        let big = PostgresStore::connect(&big_db).await.unwrap();
        print_claims(claims(&small, &big).await);
    }
    let (small_server, small) = serve_side(&small_db, SMALL_RUNS, 2).await;
    let (big_server, big) = serve_side(&big_db, runs, 100).await;
    let rows = pages(&small, &big).await;
    print_pages(&rows);
    let before = pg_size(&big_db).await;
    let (deleted, took) = prune(&big.base).await;
    let after = pg_size(&big_db).await;
    let (client, connection) = tokio_postgres::connect(&big_db, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.batch_execute("VACUUM").await.unwrap();
    let vacuumed = pg_size(&big_db).await;
    print_prune(deleted, took);
    println!(
        "  size: {} before, {} after, {} after VACUUM ({:.3}x)",
        mb(before),
        mb(after),
        mb(vacuumed),
        vacuumed as f64 / before as f64
    );
    pages_after(&small, &big).await;
    small_server.stop(Duration::from_secs(2)).await;
    big_server.stop(Duration::from_secs(2)).await;
}

#[tokio::main]
async fn main() {
    let runs: i64 = std::env::var("SCALE_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let engines = std::env::var("SCALE_ENGINES").unwrap_or_else(|_| "sqlite,postgres".into());
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", load.trim());
    }
    if engines.contains("sqlite") {
        sqlite(runs).await;
    }
    if engines.contains("postgres") {
        postgres(runs).await;
    }
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", load.trim());
    }
}
