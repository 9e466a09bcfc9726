//! Accepting connections: HTTP/1 through hyper with a deadline for a request's headers, so
//! half-sent requests cannot hold the server's file descriptors, and an accept loop that keeps
//! going when descriptors run short.

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long a client has to send a request's headers, and how long a kept-alive connection may
/// wait idle for its next request, unless [`ServeOptions`](crate::server::ServeOptions) says
/// otherwise.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the loop waits before accepting again after `accept` failed (out of descriptors:
/// the connections whose headers are late are closed meanwhile).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `app` on `listener` until `stop` fires; then stops accepting, asks every connection
/// to close after its request, and returns when they have.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    header_read_timeout: Duration,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let (closing, closed) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let stream = tokio::select! {
            _ = &mut stop => break,
            // Finished connections are collected as they go, so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed; trying again");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let service = TowerToHyperService::new(app.clone());
        let mut closed = closed.clone();
        connections.spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "a connection ended with an error");
                    }
                }
                // The flag only ever turns on: any change (or the sender gone) means closing.
                _ = closed.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    let _ = closing.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}
