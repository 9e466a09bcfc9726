//! A bounded load test on 127.0.0.1: run creation, 1,000 concurrent event-stream subscribers,
//! and answers, against the real server (in-memory store, scripted agents), beside a bare axum
//! JSON echo route measured in the same run as the floor. Prints requests/s, p50 and p99.
//!
//! With `LANGGRAPH_URL` set (e.g. `http://127.0.0.1:2024`, a `langgraph dev` serving the graphs
//! of `benches/peers/langgraph_server/`), each workload is also run against LangGraph's server
//! API, right after the harnessx one, in the same process and run:
//!
//! - run creation: `POST /threads/{new uuid}/runs` with `if_not_exists: "create"` (one request
//!   makes the thread and a background run of the `replier` graph, whose one plain Python node
//!   replies "hello"), against `POST /v2/runs` of the scripted `replier` agent;
//! - 1,000 subscribers on `GET /threads/{id}/stream?stream_modes=lifecycle` of a thread
//!   interrupted by `interrupt()`, until the resumed run's `run_done` frame; and 1,000 on the
//!   run join stream `GET /threads/{id}/runs/{run_id}/stream` of a resume run created pending
//!   (`after_seconds`), until each stream ends;
//! - answers: resuming 500 interrupted threads with `POST /threads/{id}/runs` and
//!   `command: {"resume": "Yes"}`, against `POST /v2/runs/{id}/answer`.
//!
//! Every request's status is checked and every run created is followed until it finished
//! (`completed` / `success`); failures are counted and printed, never hidden.
//!
//! `cargo bench -p harnessx-server --bench load` (harnessx and the floor only), or
//! `bash benches/peers/langgraph_server.sh` (starts `langgraph dev`, sets `LANGGRAPH_URL`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::{Arc, Mutex};
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

/// Requests in the run-creation workloads (and the floor).
const CREATE: usize = 4000;
/// Runs answered in the answer workloads.
const ANSWERS: usize = 500;
/// Subscribers in the fan-out workloads.
const SUBSCRIBERS: usize = 1000;
/// Concurrent requests in the request workloads.
const CONCURRENCY: usize = 64;
/// Concurrent pollers while following runs to their end (not timed as a workload).
const POLLERS: usize = 16;
/// How long any one wait (a run finishing, a frame arriving) may take before it is an error.
const WAIT_LIMIT: Duration = Duration::from_secs(300);
/// How long opening the subscribers of one fan-out may take before the rest are given up.
const CONNECT_LIMIT: Duration = Duration::from_secs(300);

struct Stats {
    name: String,
    n: usize,
    elapsed: Duration,
    lat: Vec<Duration>,
    errors: Vec<String>,
}

impl Stats {
    fn rate(&self) -> f64 {
        self.n as f64 / self.elapsed.as_secs_f64()
    }

    fn quantile(&mut self, q: f64) -> Duration {
        self.lat.sort();
        if self.lat.is_empty() {
            return Duration::ZERO;
        }
        self.lat[((self.lat.len() as f64 * q) as usize).min(self.lat.len() - 1)]
    }

    fn print(&mut self) {
        let (p50, p99) = (self.quantile(0.5), self.quantile(0.99));
        println!(
            "{:<58} {:>6} reqs  {:>9.0} req/s  p50 {:>8.2} ms  p99 {:>8.2} ms  errors {}",
            self.name,
            self.n,
            self.rate(),
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            self.errors.len()
        );
        print_errors(&self.errors);
    }
}

fn print_errors(errors: &[String]) {
    for e in errors.iter().take(5) {
        println!("    error: {e}");
    }
    if errors.len() > 5 {
        println!("    ... and {} more errors", errors.len() - 5);
    }
}

/// Prints harnessx's figures over LangGraph's for one workload (above 1: harnessx is faster).
fn compare(harnessx: &mut Stats, langgraph: &mut Stats, rate: bool) {
    let p99 = langgraph.quantile(0.99).as_secs_f64() / harnessx.quantile(0.99).as_secs_f64();
    if rate {
        println!(
            "{:<58} req/s {:.1}x, p99 {:.1}x lower",
            "  harnessx / langgraph",
            harnessx.rate() / langgraph.rate(),
            p99
        );
    } else {
        println!("{:<58} p99 {:.1}x lower", "  harnessx / langgraph", p99);
    }
}

/// Runs `n` requests, `concurrency` at a time; each returns `Err` with what went wrong.
async fn hammer<F, Fut>(name: &str, n: usize, concurrency: usize, f: F) -> Stats
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let start = Instant::now();
    let mut lat = Vec::with_capacity(n);
    let mut errors = Vec::new();
    let mut pending = FuturesUnordered::new();
    let mut next = 0;
    while next < n || !pending.is_empty() {
        while next < n && pending.len() < concurrency {
            let fut = f(next);
            pending.push(async move {
                let t = Instant::now();
                let result = fut.await;
                (t.elapsed(), result)
            });
            next += 1;
        }
        if let Some((d, result)) = pending.next().await {
            lat.push(d);
            if let Err(e) = result {
                errors.push(e);
            }
        }
    }
    Stats {
        name: name.to_owned(),
        n,
        elapsed: start.elapsed(),
        lat,
        errors,
    }
}

fn snippet(text: &str) -> &str {
    let end = text.char_indices().nth(300).map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// Sends a request; `Ok` with its JSON body only for a 2xx answer.
async fn send_json(req: reqwest::RequestBuilder, what: &str) -> Result<Value, String> {
    let r = req.send().await.map_err(|e| format!("{what}: {e}"))?;
    let status = r.status();
    let text = r
        .text()
        .await
        .map_err(|e| format!("{what}: reading the body: {e}"))?;
    if !status.is_success() {
        return Err(format!("{what}: HTTP {status}: {}", snippet(&text)));
    }
    serde_json::from_str(&text).map_err(|e| format!("{what}: not JSON ({e}): {}", snippet(&text)))
}

/// Opens an event stream; `Ok` only for a 200.
async fn open_stream(
    req: reqwest::RequestBuilder,
    what: &str,
) -> Result<reqwest::Response, String> {
    let r = req.send().await.map_err(|e| format!("{what}: {e}"))?;
    if r.status() != 200 {
        let status = r.status();
        let text = r.text().await.unwrap_or_default();
        return Err(format!("{what}: HTTP {status}: {}", snippet(&text)));
    }
    Ok(r)
}

/// Reads an event stream until `needle` appears (or, with `None`, until the stream ends);
/// returns when that happened.
async fn until(resp: reqwest::Response, needle: Option<&str>) -> Result<Instant, String> {
    let read = async {
        let mut stream = resp.bytes_stream();
        let mut buf = String::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| format!("reading the stream: {e}"))?;
            buf.push_str(&String::from_utf8_lossy(&chunk));
            if needle.is_some_and(|n| buf.contains(n)) {
                return Ok((Instant::now(), buf));
            }
        }
        Ok::<_, String>((Instant::now(), buf))
    };
    let (at, buf) = tokio::time::timeout(WAIT_LIMIT, read)
        .await
        .map_err(|_| format!("no {needle:?} within {WAIT_LIMIT:?}"))??;
    match needle {
        Some(n) if !buf.contains(n) => Err(format!(
            "the stream ended before {n:?}; it sent: {}",
            snippet(&buf)
        )),
        _ => Ok(at),
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

/// The harnessx server under test.
struct Harnessx {
    http: reqwest::Client,
    base: String,
}

impl Harnessx {
    async fn create(&self, agent: &str, input: &str) -> Result<i64, String> {
        let run = send_json(
            self.http
                .post(format!("{}/v2/runs", self.base))
                .bearer_auth(KEY)
                .json(&json!({"agent": agent, "input": input})),
            "POST /v2/runs",
        )
        .await?;
        run["id"]
            .as_i64()
            .ok_or_else(|| format!("POST /v2/runs: no `id` in {run}"))
    }

    /// Polls a run until it is in `state`; a run that ends in another state is an error.
    async fn wait_state(&self, id: i64, state: &str) -> Result<(), String> {
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            let run = send_json(
                self.http
                    .get(format!("{}/v2/runs/{id}", self.base))
                    .bearer_auth(KEY),
                "GET /v2/runs/{id}",
            )
            .await?;
            let now = run["state"].as_str().unwrap_or("?");
            if now == state {
                return Ok(());
            }
            if matches!(now, "completed" | "failed" | "cancelled") || Instant::now() > deadline {
                return Err(format!("run {id} is `{now}`, waited for `{state}`"));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// LangGraph's server API (`langgraph dev`), serving `replier` and `asker`.
struct LangGraph {
    http: reqwest::Client,
    base: String,
}

/// A fresh random (version 4) UUID, for a thread id.
fn uuid4() -> String {
    let b: [u8; 16] = rand::random();
    let mut b = b;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

impl LangGraph {
    /// A background run on thread `thread` (created if new); returns the run id.
    async fn run(&self, thread: &str, body: Value) -> Result<String, String> {
        let run = send_json(
            self.http
                .post(format!("{}/threads/{thread}/runs", self.base))
                .json(&body),
            "POST /threads/{id}/runs",
        )
        .await?;
        run["run_id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("POST /threads/{{id}}/runs: no `run_id` in {run}"))
    }

    async fn start(&self, graph: &str, thread: &str) -> Result<String, String> {
        let input = if graph == "replier" { "hi" } else { "go" };
        self.run(
            thread,
            json!({"assistant_id": graph, "input": {"input": input}, "if_not_exists": "create"}),
        )
        .await
    }

    async fn resume(&self, thread: &str, extra: Value) -> Result<String, String> {
        let mut body = json!({"assistant_id": "asker", "command": {"resume": "Yes"}});
        if let (Some(b), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(extra.clone());
        }
        self.run(thread, body).await
    }

    /// Polls a thread until its status is `want` (`interrupted` once `interrupt()` was hit).
    async fn wait_thread(&self, thread: &str, want: &str) -> Result<(), String> {
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            let t = send_json(
                self.http.get(format!("{}/threads/{thread}", self.base)),
                "GET /threads/{id}",
            )
            .await?;
            let now = t["status"].as_str().unwrap_or("?");
            if now == want {
                return Ok(());
            }
            if now == "error" || Instant::now() > deadline {
                return Err(format!("thread {thread} is `{now}`, waited for `{want}`"));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Polls a run until it ends; `Ok` only for `success`.
    async fn wait_run(&self, thread: &str, run: &str) -> Result<(), String> {
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            let r = send_json(
                self.http
                    .get(format!("{}/threads/{thread}/runs/{run}", self.base)),
                "GET /threads/{id}/runs/{run_id}",
            )
            .await?;
            match r["status"].as_str().unwrap_or("?") {
                "success" => return Ok(()),
                "pending" | "running" if Instant::now() <= deadline => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                other => return Err(format!("run {run} on thread {thread} is `{other}`")),
            }
        }
    }

    /// The thread's last reply, to check the resumed graph saw the answer.
    async fn reply(&self, thread: &str) -> Result<String, String> {
        let t = send_json(
            self.http.get(format!("{}/threads/{thread}", self.base)),
            "GET /threads/{id}",
        )
        .await?;
        Ok(t["values"]["reply"].as_str().unwrap_or("").to_owned())
    }
}

/// Follows runs to their end with [`POLLERS`] pollers; prints how long after `since` the last
/// one finished and what failed.
async fn drained<F, Fut>(label: &str, since: Instant, n: usize, check: F) -> Vec<String>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let stats = hammer(label, n, POLLERS, check).await;
    println!(
        "{:<58} all {} finished {:.2} s after the first request; {} did not succeed",
        format!("  {label}"),
        n,
        since.elapsed().as_secs_f64(),
        stats.errors.len()
    );
    print_errors(&stats.errors);
    stats.errors
}

/// Collects the arrival times of a fan-out; `Stats` with latencies from `cause`.
fn fanout_stats(name: &str, cause: Instant, arrivals: Vec<Result<Instant, String>>) -> Stats {
    let n = arrivals.len();
    let mut lat = Vec::with_capacity(n);
    let mut errors = Vec::new();
    let mut last = cause;
    for a in arrivals {
        match a {
            Ok(t) => {
                lat.push(t.saturating_duration_since(cause));
                last = last.max(t);
            }
            Err(e) => errors.push(e),
        }
    }
    Stats {
        name: name.to_owned(),
        n,
        elapsed: last.saturating_duration_since(cause),
        lat,
        errors,
    }
}

/// Opens [`SUBSCRIBERS`] event streams one after another, stopping at [`CONNECT_LIMIT`]; the
/// streams opened, the failures (a stream not opened in time is one) and the time it took.
async fn open_many(
    what: &str,
    request: impl Fn() -> reqwest::RequestBuilder,
) -> (Vec<reqwest::Response>, Vec<String>, Duration) {
    let mut streams = Vec::with_capacity(SUBSCRIBERS);
    let mut errors = Vec::new();
    let start = Instant::now();
    for i in 0..SUBSCRIBERS {
        if start.elapsed() > CONNECT_LIMIT {
            errors.push(format!(
                "{what}: {} streams not opened: opening the first {i} took over {CONNECT_LIMIT:?}",
                SUBSCRIBERS - i
            ));
            break;
        }
        match open_stream(request(), what).await {
            Ok(r) => streams.push(r),
            Err(e) => errors.push(e),
        }
    }
    (streams, errors, start.elapsed())
}

fn print_connect(name: &str, opened: usize, took: Duration, errors: &[String]) {
    println!(
        "{:<58} {:>6} streams opened in {:.0} ms, {} failed to open",
        name,
        opened,
        took.as_secs_f64() * 1e3,
        errors.len()
    );
    print_errors(errors);
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
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
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let hx = Arc::new(Harnessx {
        http: http.clone(),
        base: format!("http://{}", running.addr),
    });
    let echo = Arc::new(echo_server().await);
    let lg = match std::env::var("LANGGRAPH_URL") {
        Ok(url) if !url.trim().is_empty() => {
            let lg = LangGraph {
                http: http.clone(),
                base: url.trim().trim_end_matches('/').to_owned(),
            };
            if let Err(e) = send_json(lg.http.get(format!("{}/ok", lg.base)), "GET /ok").await {
                panic!(
                    "LANGGRAPH_URL={url} does not answer `GET /ok` ({e}); start `langgraph dev` \
                     (bash benches/peers/langgraph_server.sh does) or unset LANGGRAPH_URL"
                );
            }
            println!(
                "langgraph: {} (each workload below also runs there)",
                lg.base
            );
            Some(Arc::new(lg))
        }
        _ => {
            println!("langgraph: skipped (LANGGRAPH_URL not set)");
            None
        }
    };
    println!("load average at start: {}", load_average());
    let body = json!({"agent": "replier", "input": "hi"});

    // Floor: a bare axum JSON echo route, same client, same concurrency.
    let mut floor = hammer(
        "floor: bare axum POST /echo (c=64)",
        CREATE,
        CONCURRENCY,
        |_| {
            let (http, echo, body) = (http.clone(), Arc::clone(&echo), body.clone());
            async move {
                send_json(http.post(format!("{echo}/echo")).json(&body), "POST /echo")
                    .await
                    .map(drop)
            }
        },
    )
    .await;
    floor.print();

    // 1,000 subscribers on one run: connect all, then post the answer, and the completion
    // reaches each. Latency: from posting the answer to each receipt.
    let id = hx.create("asker", "go").await.unwrap();
    hx.wait_state(id, "waiting_input").await.unwrap();
    let (streams, open_errors, connected) = open_many("GET /v2/runs/{id}/events", || {
        hx.http
            .get(format!("{}/v2/runs/{id}/events", hx.base))
            .bearer_auth(KEY)
    })
    .await;
    let opened = streams.len();
    let answer_at = Instant::now();
    let waiting: FuturesUnordered<_> = streams
        .into_iter()
        .map(|r| until(r, Some("event: completed\n")))
        .collect();
    let answered = send_json(
        hx.http
            .post(format!("{}/v2/runs/{id}/answer", hx.base))
            .bearer_auth(KEY)
            .json(&json!({"text": "yes"})),
        "POST /v2/runs/{id}/answer",
    )
    .await;
    let arrivals: Vec<_> = waiting.collect().await;
    let mut fanout = fanout_stats(
        "1,000 SSE subscribers: answer -> `completed`",
        answer_at,
        arrivals,
    );
    if let Err(e) = answered {
        fanout.errors.push(e);
    }
    print_connect(
        "1,000 SSE subscribers: connect",
        opened,
        connected,
        &open_errors,
    );
    fanout.print();

    if let Some(lg) = &lg {
        // The thread stream: subscribers join before the answer, like harnessx's.
        let thread = uuid4();
        lg.start("asker", &thread).await.unwrap();
        lg.wait_thread(&thread, "interrupted").await.unwrap();
        let (streams, open_errors, connected) = open_many("GET /threads/{id}/stream", || {
            lg.http.get(format!(
                "{}/threads/{thread}/stream?stream_modes=lifecycle",
                lg.base
            ))
        })
        .await;
        // The server joins its subscription queue just after it sent the response head; let
        // the last ones settle so that none misses the run (not part of the timed figure).
        tokio::time::sleep(Duration::from_secs(1)).await;
        let opened = streams.len();
        let answer_at = Instant::now();
        let waiting: FuturesUnordered<_> = streams
            .into_iter()
            .map(|r| until(r, Some("\"status\":\"run_done\"")))
            .collect();
        let resumed = lg.resume(&thread, json!({})).await;
        let arrivals: Vec<_> = waiting.collect().await;
        let mut lg_fanout = fanout_stats(
            "langgraph: 1,000 thread-stream subscribers: resume -> run_done",
            answer_at,
            arrivals,
        );
        match resumed {
            Ok(run) => {
                if let Err(e) = lg.wait_run(&thread, &run).await {
                    lg_fanout.errors.push(e);
                }
            }
            Err(e) => lg_fanout.errors.push(e),
        }
        print_connect(
            "langgraph: 1,000 thread-stream subscribers: connect",
            opened,
            connected,
            &open_errors,
        );
        lg_fanout.print();
        compare(&mut fanout, &mut lg_fanout, false);

        // The run join stream needs the run's id, so the resume run is made first, pending
        // for `after_seconds`, and the subscribers join it meanwhile. Latency: from the first
        // event any subscriber got (the run started; keep-alive comments do not count) to each
        // stream's end.
        let thread = uuid4();
        lg.start("asker", &thread).await.unwrap();
        lg.wait_thread(&thread, "interrupted").await.unwrap();
        let delay = (connected.as_secs() * 2 + 3).min(60);
        let run = lg
            .resume(&thread, json!({"after_seconds": delay}))
            .await
            .unwrap();
        let (streams, open_errors, connected) =
            open_many("GET /threads/{id}/runs/{run_id}/stream", || {
                lg.http
                    .get(format!("{}/threads/{thread}/runs/{run}/stream", lg.base))
            })
            .await;
        let opened = streams.len();
        let first_frame = Arc::new(Mutex::new(None::<Instant>));
        let waiting: FuturesUnordered<_> = streams
            .into_iter()
            .map(|r| {
                let first_frame = Arc::clone(&first_frame);
                async move {
                    let mut stream = r.bytes_stream();
                    let mut buf = String::new();
                    let read = async {
                        while let Some(chunk) = stream.next().await {
                            let chunk = chunk.map_err(|e| format!("reading the stream: {e}"))?;
                            let now = Instant::now();
                            let text = String::from_utf8_lossy(&chunk);
                            // The run's first event, not a keep-alive comment (`: ping`).
                            if text.contains("event: ") {
                                let mut first = first_frame.lock().unwrap();
                                *first = Some(first.map_or(now, |t| t.min(now)));
                            }
                            buf.push_str(&text);
                        }
                        Ok::<_, String>(Instant::now())
                    };
                    let end = tokio::time::timeout(WAIT_LIMIT + Duration::from_secs(delay), read)
                        .await
                        .map_err(|_| {
                            format!("the run join stream did not end within {WAIT_LIMIT:?}")
                        })??;
                    if buf.contains("saw: Yes") {
                        Ok(end)
                    } else {
                        Err(format!(
                            "the run join stream ended without the reply; it sent: {}",
                            snippet(&buf)
                        ))
                    }
                }
            })
            .collect();
        let arrivals: Vec<_> = waiting.collect().await;
        let start = first_frame.lock().unwrap().unwrap_or_else(Instant::now);
        let mut lg_join = fanout_stats(
            "langgraph: 1,000 run-join-stream subscribers: start -> end",
            start,
            arrivals,
        );
        if let Err(e) = lg.wait_run(&thread, &run).await {
            lg_join.errors.push(e);
        }
        print_connect(
            &format!("langgraph: 1,000 run-join-stream subscribers: connect ({delay} s delay)"),
            opened,
            connected,
            &open_errors,
        );
        lg_join.print();
    }

    // Run creation. harnessx: each run completes meanwhile (8 workers).
    let ids = Arc::new(Mutex::new(Vec::with_capacity(CREATE)));
    let started = Instant::now();
    let mut create = hammer("POST /v2/runs (c=64)", CREATE, CONCURRENCY, |_| {
        let (hx, ids) = (Arc::clone(&hx), Arc::clone(&ids));
        async move {
            let id = hx.create("replier", "hi").await?;
            ids.lock().unwrap().push(id);
            Ok(())
        }
    })
    .await;
    create.print();
    let ids = Arc::new(std::mem::take(&mut *ids.lock().unwrap()));
    drained("runs reach `completed`", started, ids.len(), |i| {
        let (hx, ids) = (Arc::clone(&hx), Arc::clone(&ids));
        async move { hx.wait_state(ids[i], "completed").await }
    })
    .await;

    if let Some(lg) = &lg {
        let threads: Arc<Vec<String>> = Arc::new((0..CREATE).map(|_| uuid4()).collect());
        let runs = Arc::new(Mutex::new(Vec::with_capacity(CREATE)));
        let started = Instant::now();
        let mut lg_create = hammer(
            "langgraph: POST /threads/{new}/runs (c=64)",
            CREATE,
            CONCURRENCY,
            |i| {
                let (lg, threads, runs) = (Arc::clone(lg), Arc::clone(&threads), Arc::clone(&runs));
                async move {
                    let run = lg.start("replier", &threads[i]).await?;
                    runs.lock().unwrap().push((threads[i].clone(), run));
                    Ok(())
                }
            },
        )
        .await;
        lg_create.print();
        let runs = Arc::new(std::mem::take(&mut *runs.lock().unwrap()));
        drained(
            "langgraph: runs reach `success`",
            started,
            runs.len(),
            |i| {
                let (lg, runs) = (Arc::clone(lg), Arc::clone(&runs));
                async move { lg.wait_run(&runs[i].0, &runs[i].1).await }
            },
        )
        .await;
        compare(&mut create, &mut lg_create, true);
    }

    // Answers: 500 runs waiting on a question, answered at c=64.
    let mut ids = Vec::with_capacity(ANSWERS);
    for _ in 0..ANSWERS {
        ids.push(hx.create("asker", "go").await.unwrap());
    }
    for id in &ids {
        hx.wait_state(*id, "waiting_input").await.unwrap();
    }
    let ids = Arc::new(ids);
    let started = Instant::now();
    let mut answers = hammer(
        "POST /v2/runs/{id}/answer (c=64)",
        ANSWERS,
        CONCURRENCY,
        |i| {
            let (hx, ids) = (Arc::clone(&hx), Arc::clone(&ids));
            async move {
                send_json(
                    hx.http
                        .post(format!("{}/v2/runs/{}/answer", hx.base, ids[i]))
                        .bearer_auth(KEY)
                        .json(&json!({"answers": [{"selected": ["Yes"]}]})),
                    "POST /v2/runs/{id}/answer",
                )
                .await
                .map(drop)
            }
        },
    )
    .await;
    answers.print();
    drained("answered runs reach `completed`", started, ANSWERS, |i| {
        let (hx, ids) = (Arc::clone(&hx), Arc::clone(&ids));
        async move { hx.wait_state(ids[i], "completed").await }
    })
    .await;

    if let Some(lg) = &lg {
        let threads: Arc<Vec<String>> = Arc::new((0..ANSWERS).map(|_| uuid4()).collect());
        for t in threads.iter() {
            lg.start("asker", t).await.unwrap();
        }
        for t in threads.iter() {
            lg.wait_thread(t, "interrupted").await.unwrap();
        }
        let runs = Arc::new(Mutex::new(Vec::with_capacity(ANSWERS)));
        let started = Instant::now();
        let mut lg_answers = hammer(
            "langgraph: resume POST /threads/{id}/runs (c=64)",
            ANSWERS,
            CONCURRENCY,
            |i| {
                let (lg, threads, runs) = (Arc::clone(lg), Arc::clone(&threads), Arc::clone(&runs));
                async move {
                    let run = lg.resume(&threads[i], json!({})).await?;
                    runs.lock().unwrap().push((threads[i].clone(), run));
                    Ok(())
                }
            },
        )
        .await;
        lg_answers.print();
        let runs = Arc::new(std::mem::take(&mut *runs.lock().unwrap()));
        drained(
            "langgraph: resumed runs reach `success`",
            started,
            runs.len(),
            |i| {
                let (lg, runs) = (Arc::clone(lg), Arc::clone(&runs));
                async move {
                    let (thread, run) = &runs[i];
                    lg.wait_run(thread, run).await?;
                    match lg.reply(thread).await? {
                        r if r == "saw: Yes" => Ok(()),
                        r => Err(format!("thread {thread} replied {r:?}, not \"saw: Yes\"")),
                    }
                }
            },
        )
        .await;
        compare(&mut answers, &mut lg_answers, true);
    }
    println!("load average at end: {}", load_average());
    running.stop(Duration::from_secs(2)).await;
}
