//! A bounded load test on 127.0.0.1: run creation, 1,000 concurrent event-stream subscribers,
//! and answers, against the real server (in-memory store, scripted agents), beside a bare axum
//! JSON echo route measured in the same run as the floor. Prints requests/s and p99.
//!
//! `cargo bench -p harnessx-server --bench load`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use harnessx_server::{Config, ServeOptions, serve};
use serde_json::{Value, json};

const KEY: &str = "bench-key-0123456789abcdef";
const CONFIG: &str = r#"
[server]
max_subscribers = 4096
max_body_bytes = 65536
[store]
workers = 8
[agents.replier]
model = "script"
script = [{ reply = "hello" }]
[agents.asker]
model = "script"
script = [{ ask = "Proceed?" }, { reply = "saw: {result}" }]
"#;

struct Stats {
    name: &'static str,
    n: usize,
    elapsed: Duration,
    lat: Vec<Duration>,
}

impl Stats {
    fn print(&mut self) {
        self.lat.sort();
        let p = |q: f64| self.lat[((self.lat.len() as f64 * q) as usize).min(self.lat.len() - 1)];
        println!(
            "{:<44} {:>6} reqs  {:>9.0} req/s  p50 {:>8.2} ms  p99 {:>8.2} ms",
            self.name,
            self.n,
            self.n as f64 / self.elapsed.as_secs_f64(),
            p(0.5).as_secs_f64() * 1e3,
            p(0.99).as_secs_f64() * 1e3
        );
    }
}

async fn hammer<F, Fut>(name: &'static str, n: usize, concurrency: usize, f: F) -> Stats
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let start = Instant::now();
    let mut lat = Vec::with_capacity(n);
    let mut pending = FuturesUnordered::new();
    let mut next = 0;
    while next < n || !pending.is_empty() {
        while next < n && pending.len() < concurrency {
            let fut = f(next);
            pending.push(async move {
                let t = Instant::now();
                fut.await;
                t.elapsed()
            });
            next += 1;
        }
        if let Some(d) = pending.next().await {
            lat.push(d);
        }
    }
    Stats {
        name,
        n,
        elapsed: start.elapsed(),
        lat,
    }
}

async fn echo_server() -> String {
    let app = axum::Router::new().route(
        "/echo",
        axum::routing::post(|axum::Json(v): axum::Json<Value>| async move { axum::Json(v) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn wait_state(http: &reqwest::Client, base: &str, id: i64, state: &str) {
    loop {
        let run: Value = http
            .get(format!("{base}/v2/runs/{id}"))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if run["state"] == state {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Reads an event stream until a frame named `event`; returns when it arrived.
async fn until(resp: reqwest::Response, event: &str) -> Instant {
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let needle = format!("event: {event}\n");
    while let Some(chunk) = stream.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if buf.contains(&needle) {
            return Instant::now();
        }
    }
    panic!("the stream ended before `{event}`");
}

#[tokio::main]
async fn main() {
    let running = serve(
        &Config::parse(CONFIG).unwrap(),
        ServeOptions::default()
            .bind("127.0.0.1:0".parse().unwrap())
            .api_key(KEY)
            .sqlite(":memory:"),
    )
    .await
    .unwrap();
    let base = Arc::new(format!("http://{}", running.addr));
    let echo = Arc::new(echo_server().await);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let body = json!({"agent": "replier", "input": "hi"});

    // Floor: a bare axum JSON echo route, same client, same concurrency.
    let mut floor = hammer("floor: bare axum POST /echo (c=64)", 4000, 64, |_| {
        let (http, echo, body) = (http.clone(), Arc::clone(&echo), body.clone());
        async move {
            let r = http
                .post(format!("{echo}/echo"))
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success());
            r.bytes().await.unwrap();
        }
    })
    .await;
    floor.print();

    let mut create = hammer("POST /v2/runs (c=64)", 4000, 64, |_| {
        let (http, base, body) = (http.clone(), Arc::clone(&base), body.clone());
        async move {
            let r = http
                .post(format!("{base}/v2/runs"))
                .bearer_auth(KEY)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success());
            r.bytes().await.unwrap();
        }
    })
    .await;
    create.print();

    // 1,000 subscribers on one run: connect all, then the question reaches each; then the
    // answer, and the completion reaches each. Latency: from the event's cause to each receipt.
    let run: Value = http
        .post(format!("{base}/v2/runs"))
        .bearer_auth(KEY)
        .json(&json!({"agent": "asker", "input": "go"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = run["id"].as_i64().unwrap();
    wait_state(&http, &base, id, "waiting_input").await;
    let subscribers = 1000;
    let mut streams = Vec::with_capacity(subscribers);
    let connect_start = Instant::now();
    for _ in 0..subscribers {
        let resp = http
            .get(format!("{base}/v2/runs/{id}/events"))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        streams.push(resp);
    }
    let connected = connect_start.elapsed();
    let answer_at = Instant::now();
    let waiting: FuturesUnordered<_> = streams.into_iter().map(|r| until(r, "completed")).collect();
    http.post(format!("{base}/v2/runs/{id}/answer"))
        .bearer_auth(KEY)
        .json(&json!({"text": "yes"}))
        .send()
        .await
        .unwrap();
    let arrivals: Vec<Instant> = waiting.collect().await;
    let mut fanout = Stats {
        name: "1,000 SSE subscribers: answer -> `completed`",
        n: subscribers,
        elapsed: answer_at.elapsed(),
        lat: arrivals
            .iter()
            .map(|t| t.duration_since(answer_at))
            .collect(),
    };
    println!(
        "{:<44} {:>6} streams opened in {:.0} ms (resume from the stored backlog)",
        "1,000 SSE subscribers: connect",
        subscribers,
        connected.as_secs_f64() * 1e3
    );
    fanout.print();

    // Answers: 500 runs waiting on a question, answered at c=64.
    let n = 500;
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let run: Value = http
            .post(format!("{base}/v2/runs"))
            .bearer_auth(KEY)
            .json(&json!({"agent": "asker", "input": "go"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push(run["id"].as_i64().unwrap());
    }
    for id in &ids {
        wait_state(&http, &base, *id, "waiting_input").await;
    }
    let ids = Arc::new(ids);
    let mut answers = hammer("POST /v2/runs/{id}/answer (c=64)", n, 64, |i| {
        let (http, base, ids) = (http.clone(), Arc::clone(&base), Arc::clone(&ids));
        async move {
            let r = http
                .post(format!("{base}/v2/runs/{}/answer", ids[i]))
                .bearer_auth(KEY)
                .json(&json!({"answers": [{"selected": ["Yes"]}]}))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{}", r.status());
            r.bytes().await.unwrap();
        }
    })
    .await;
    answers.print();
    running.stop(Duration::from_secs(2)).await;
}
