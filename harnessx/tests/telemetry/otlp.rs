//! The spans of one run exported over OTLP/HTTP (feature `otel`) to a collector on 127.0.0.1 that
//! the test starts, decoded from the protobuf the exporter sent.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use harnessx::telemetry::{TelemetryError, otlp_layer};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;
use tokio::net::TcpListener;
use tracing_subscriber::layer::SubscriberExt;

use super::spans::scripted_agent;

/// One export request: its path, content type and decoded body.
type Received = (String, String, ExportTraceServiceRequest);

/// An OTLP/HTTP collector on a free loopback port that keeps every request it receives.
async fn start_collector() -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let received: Arc<Mutex<Vec<Received>>> = Arc::default();
    let store = Arc::clone(&received);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let store = Arc::clone(&store);
            let service = service_fn(move |request: Request<Incoming>| {
                let store = Arc::clone(&store);
                async move {
                    let path = request.uri().path().to_owned();
                    let content_type = request
                        .headers()
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    let decoded = ExportTraceServiceRequest::decode(body).unwrap();
                    store.lock().unwrap().push((path, content_type, decoded));
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::new())))
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    (url, received)
}

/// Runs the scripted agent with the OTLP layer as this thread's subscriber, shuts the exporter
/// down (which sends what is buffered) and returns every span the collector received.
async fn export_one_run(capture_content: bool) -> Vec<Span> {
    export_run(scripted_agent(capture_content)).await
}

/// [`export_one_run`] for any agent.
async fn export_run(agent: harnessx::Agent) -> Vec<Span> {
    let (url, received) = start_collector().await;
    let (layer, guard) = otlp_layer(&url).unwrap();
    assert_eq!(guard.endpoint(), format!("{url}/v1/traces"));
    {
        let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        // As `Capture::install` does: every call site is asked again, now with this subscriber.
        tracing::callsite::rebuild_interest_cache();
        agent.run("secret prompt text").await.unwrap();
    }
    guard.shutdown().unwrap();
    let received = received.lock().unwrap();
    assert!(!received.is_empty(), "the collector received nothing");
    let mut spans = Vec::new();
    for (path, content_type, request) in received.iter() {
        assert_eq!(path, "/v1/traces");
        assert_eq!(content_type, "application/x-protobuf");
        for resource_spans in &request.resource_spans {
            let resource = resource_spans.resource.as_ref().unwrap();
            assert_eq!(
                attr(&resource.attributes, "service.name"),
                Some(&Any::StringValue("harnessx".into()))
            );
            for scope_spans in &resource_spans.scope_spans {
                assert_eq!(scope_spans.scope.as_ref().unwrap().name, "harnessx");
                spans.extend(scope_spans.spans.iter().cloned());
            }
        }
    }
    spans
}

fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Any> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn get<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    attr(&span.attributes, key)
}

fn text(value: &str) -> Any {
    Any::StringValue(value.to_owned())
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn string_array(values: &[&str]) -> Any {
    Any::ArrayValue(opentelemetry_proto::tonic::common::v1::ArrayValue {
        values: values
            .iter()
            .map(|v| AnyValue {
                value: Some(Any::StringValue((*v).to_owned())),
            })
            .collect(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_run_reaches_an_otlp_http_collector_as_one_span_tree() {
    let spans = export_one_run(false).await;

    let runs = named(&spans, "invoke_agent support-bot");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert!(run.parent_span_id.is_empty());
    assert_eq!(run.kind, SpanKind::Internal as i32);
    assert_eq!(
        get(run, "gen_ai.operation.name"),
        Some(&text("invoke_agent"))
    );
    assert_eq!(get(run, "gen_ai.provider.name"), Some(&text("openai")));
    assert_eq!(get(run, "gen_ai.agent.name"), Some(&text("support-bot")));
    assert_eq!(get(run, "gen_ai.request.model"), Some(&text("gpt-4o-mini")));
    assert_eq!(
        get(run, "gen_ai.usage.input_tokens"),
        Some(&Any::IntValue(230))
    );
    assert_eq!(
        get(run, "gen_ai.usage.output_tokens"),
        Some(&Any::IntValue(27))
    );
    assert_eq!(
        get(run, "gen_ai.response.finish_reasons"),
        Some(&string_array(&["stop"]))
    );
    assert!(spans.iter().all(|s| s.trace_id == run.trace_id));

    let chats = named(&spans, "chat gpt-4o-mini");
    assert_eq!(chats.len(), 2);
    for chat in &chats {
        assert_eq!(chat.parent_span_id, run.span_id);
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_eq!(get(chat, "gen_ai.operation.name"), Some(&text("chat")));
        assert_eq!(get(chat, "gen_ai.provider.name"), Some(&text("openai")));
    }
    let first = chats
        .iter()
        .find(|c| get(c, "gen_ai.usage.input_tokens") == Some(&Any::IntValue(100)))
        .expect("the first request's span");
    assert_eq!(
        get(first, "gen_ai.usage.output_tokens"),
        Some(&Any::IntValue(20))
    );
    assert_eq!(
        get(first, "gen_ai.response.finish_reasons"),
        Some(&string_array(&["tool_call"]))
    );

    // An in-process model has no server, and these answers name no model or id.
    for chat in &chats {
        for key in [
            "server.address",
            "server.port",
            "gen_ai.response.model",
            "gen_ai.response.id",
        ] {
            assert_eq!(get(chat, key), None, "{key}");
        }
    }

    let lookups = named(&spans, "execute_tool lookup");
    assert_eq!(lookups.len(), 2);
    let broken = named(&spans, "execute_tool broken");
    assert_eq!(broken.len(), 1);
    let mut call_ids = Vec::new();
    for tool in lookups.iter().chain(&broken) {
        assert_eq!(tool.parent_span_id, run.span_id);
        assert_eq!(tool.kind, SpanKind::Internal as i32);
        assert_eq!(
            get(tool, "gen_ai.operation.name"),
            Some(&text("execute_tool"))
        );
        assert_eq!(get(tool, "gen_ai.tool.type"), Some(&text("function")));
        match get(tool, "gen_ai.tool.call.id") {
            Some(Any::StringValue(id)) => call_ids.push(id.clone()),
            other => panic!("call id {other:?}"),
        }
    }
    call_ids.sort();
    assert_eq!(call_ids, ["c1", "c2", "c3"]);
    for lookup in &lookups {
        assert_ne!(
            lookup.status.as_ref().map(|s| s.code),
            Some(StatusCode::Error as i32)
        );
        assert_eq!(get(lookup, "error.type"), None);
    }
    let broken = broken[0];
    assert_eq!(get(broken, "error.type"), Some(&text("failed")));
    assert_eq!(
        broken.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    // The handlers' own spans, from their spawned tasks, hang under their calls.
    let inner = named(&spans, "lookup_index");
    assert_eq!(inner.len(), 2);
    for span in inner {
        assert!(lookups.iter().any(|l| l.span_id == span.parent_span_id));
    }

    // Only the conventions' attributes are exported: harnessx's own fields and keys without a
    // namespace stay with local subscribers.
    for span in &spans {
        for kv in &span.attributes {
            assert!(
                kv.key.contains('.') && !kv.key.starts_with("harnessx."),
                "{} on {}",
                kv.key,
                span.name
            );
        }
    }

    // No content without the opt-in.
    for span in &spans {
        for kv in &span.attributes {
            assert!(
                !kv.key.starts_with("gen_ai.input")
                    && !kv.key.starts_with("gen_ai.output")
                    && !kv.key.starts_with("gen_ai.tool.call.")
                    || kv.key == "gen_ai.tool.call.id",
                "{} on {}",
                kv.key,
                span.name
            );
            if let Some(Any::StringValue(text)) = kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                assert!(!text.contains("secret"), "{}={text}", kv.key);
            }
        }
        if let Some(status) = &span.status {
            assert!(!status.message.contains("secret"), "{}", status.message);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opted_in_content_is_exported_as_json_text() {
    let spans = export_one_run(true).await;
    let run = named(&spans, "invoke_agent support-bot")[0];
    let Some(Any::StringValue(input)) = get(run, "gen_ai.input.messages") else {
        panic!("no input messages: {run:#?}");
    };
    let input: serde_json::Value = serde_json::from_str(input).unwrap();
    assert_eq!(input[0]["parts"][0]["content"], "secret prompt text");
    let lookup = named(&spans, "execute_tool lookup")[0];
    assert!(matches!(
        get(lookup, "gen_ai.tool.call.arguments"),
        Some(Any::StringValue(args)) if args.starts_with("{\"q\":")
    ));
}

/// A guard for an address where nothing listens, holding one span to send.
fn one_span_for_no_collector() -> (String, harnessx::telemetry::OtlpGuard) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let (layer, guard) = otlp_layer(&url).unwrap();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
        tracing::info_span!("lost").in_scope(|| {});
    });
    (url, guard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_is_reported_by_flush() {
    let (url, guard) = one_span_for_no_collector();
    let err = guard.flush().unwrap_err();
    assert!(matches!(err, TelemetryError::Export { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "the OTLP exporter could not send spans to `{url}/v1/traces`: "
        )),
        "{text}"
    );
    assert!(
        text.ends_with("; check that an OTLP/HTTP collector listens there"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_is_reported_by_shutdown() {
    let (url, guard) = one_span_for_no_collector();
    let err = guard.shutdown().unwrap_err();
    assert!(matches!(err, TelemetryError::Export { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(&format!(
            "the OTLP exporter could not send spans to `{url}/v1/traces`: "
        )),
        "{err}"
    );
}

#[test]
fn endpoints_that_are_not_http_urls_are_refused() {
    for (endpoint, reason) in [
        (
            "localhost:4317",
            "the scheme is `localhost`, not `http` or `https` (OTLP over gRPC is not supported)",
        ),
        (
            "grpc://collector:4317",
            "the scheme is `grpc`, not `http` or `https` (OTLP over gRPC is not supported)",
        ),
        ("not a url", "relative URL without a base"),
    ] {
        let err = otlp_layer::<tracing_subscriber::Registry>(endpoint)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "the OTLP endpoint `{endpoint}` cannot be used: {reason}; give the collector's \
                 OTLP/HTTP address, such as `http://localhost:4318`"
            )
        );
    }
    // A URL with a path is used as it is.
    let (_layer, guard) =
        otlp_layer::<tracing_subscriber::Registry>("https://otel.example/api/traces").unwrap();
    assert_eq!(guard.endpoint(), "https://otel.example/api/traces");
}

/// A scripted model that says it is served at `api.example.com:8443`.
struct AtServer(harnessx::TestModel);

impl harnessx::Model for AtServer {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn complete(
        &self,
        request: harnessx::ModelRequest,
    ) -> harnessx::BoxFuture<'_, Result<harnessx::ModelResponse, harnessx::ModelError>> {
        self.0.complete(request)
    }

    fn server_address(&self) -> Option<harnessx::model::ServerAddress> {
        Some(harnessx::model::ServerAddress::new("api.example.com", 8443))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_spans_carry_the_server_and_the_model_and_id_that_answered() {
    use harnessx::ModelResponse;
    let model = harnessx::TestModel::new()
        .with_name("openai:gpt-4o-mini")
        .then_respond(
            ModelResponse::text("first")
                .with_model("gpt-4o-mini-2024-07-18")
                .with_id("chatcmpl-abc123"),
        );
    let agent = harnessx::Agent::builder()
        .model(AtServer(model))
        .build()
        .unwrap();
    let spans = export_run(agent).await;
    let chats = named(&spans, "chat gpt-4o-mini");
    assert_eq!(chats.len(), 1, "{spans:#?}");
    let chat = chats[0];
    assert_eq!(get(chat, "server.address"), Some(&text("api.example.com")));
    assert_eq!(get(chat, "server.port"), Some(&Any::IntValue(8443)));
    assert_eq!(
        get(chat, "gen_ai.request.model"),
        Some(&text("gpt-4o-mini"))
    );
    assert_eq!(
        get(chat, "gen_ai.response.model"),
        Some(&text("gpt-4o-mini-2024-07-18"))
    );
    assert_eq!(
        get(chat, "gen_ai.response.id"),
        Some(&text("chatcmpl-abc123"))
    );
}
