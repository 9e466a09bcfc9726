//! `telemetry::init_otlp`: installs the process-wide subscriber, so it has a test binary of its
//! own (in the suite binary it would capture every other test's spans).
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use harnessx::Agent;
use harnessx::model::TestModel;
use harnessx::telemetry::{TelemetryError, init_otlp};

/// A one-request OTLP/HTTP collector: answers 200 and hands over the request's head and body.
fn collector() -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut data = Vec::new();
        let mut buf = [0u8; 8192];
        // Read the head, then as many body bytes as Content-Length says.
        let (head, body_len) = loop {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the exporter closed the connection early");
            data.extend_from_slice(&buf[..n]);
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..end]).into_owned();
                let len = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .expect("a Content-Length header");
                break (head, (end + 4, len));
            }
        };
        while data.len() < body_len.0 + body_len.1 {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the exporter closed the connection mid-body");
            data.extend_from_slice(&buf[..n]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .unwrap();
        let _ = tx.send((head, data[body_len.0..].to_vec()));
    });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_otlp_exports_the_runs_of_the_whole_process_and_refuses_a_second_install() {
    let (url, received) = collector();
    let guard = init_otlp(&url).unwrap();

    let agent = Agent::builder()
        .model(
            TestModel::new()
                .with_name("anthropic:claude-x")
                .then_reply("Hi"),
        )
        .build()
        .unwrap();
    // On another thread too: the subscriber is global.
    tokio::spawn(async move { agent.run("Hello").await.unwrap() })
        .await
        .unwrap();

    let err = init_otlp(&url).unwrap_err();
    assert!(matches!(err, TelemetryError::AlreadyInstalled));
    assert_eq!(
        err.to_string(),
        "a global tracing subscriber is already installed; add \
         `harnessx::telemetry::otlp_layer(..)` to it instead of calling `init_otlp`"
    );

    // Dropping the guard sends what is buffered.
    drop(guard);
    let (head, body) = received.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(head.starts_with("POST /v1/traces HTTP/1.1"), "{head}");
    // The protobuf body carries the span names as plain bytes.
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("invoke_agent"), "{body}");
    assert!(body.contains("chat claude-x"), "{body}");
}
