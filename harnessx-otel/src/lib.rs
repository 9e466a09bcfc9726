//! The spans exported over OTLP/HTTP with protobuf bodies (feature `otel`): [`init_otlp`],
//! [`otlp_layer`] and the [`OtlpGuard`] that flushes on drop.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanData, SpanProcessor};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

/// The attributes that the conventions type as string arrays, recorded by the spans as JSON array
/// text (a `tracing` field holds no arrays) and sent as arrays.
const STRING_ARRAYS: &[&str] = &["gen_ai.response.finish_reasons"];

/// Why the OTLP exporter could not be installed or could not send.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The endpoint is not an `http(s)` URL.
    #[error(
        "the OTLP endpoint `{endpoint}` cannot be used: {reason}; give the collector's OTLP/HTTP \
         address, such as `http://localhost:4318`"
    )]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`init_otlp`] found a global subscriber already installed.
    #[error(
        "a global tracing subscriber is already installed; add \
         `harnessx::telemetry::otlp_layer(..)` to it instead of calling `init_otlp`"
    )]
    AlreadyInstalled,
    /// Spans could not be sent (or the exporter was already shut down).
    #[error(
        "the OTLP exporter could not send spans to `{endpoint}`: {message}; check that an OTLP/HTTP \
         collector listens there"
    )]
    Export {
        /// The traces URL spans are sent to.
        endpoint: String,
        /// The exporter's message.
        message: String,
    },
}

/// Keeps the exporter running; dropping it sends the spans still buffered and stops it.
///
/// Hold it for as long as spans should be exported, typically in `main`.
#[must_use = "dropping the guard stops the exporter"]
#[derive(Debug)]
pub struct OtlpGuard {
    provider: SdkTracerProvider,
    endpoint: String,
}

impl OtlpGuard {
    /// The URL spans are sent to (the endpoint given, with `/v1/traces` added when it had no
    /// path).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Sends the spans buffered so far and waits for the collector's answer.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        self.provider
            .force_flush()
            .map_err(|e| self.export_error(e))
    }

    /// Sends the spans still buffered and stops the exporter (what dropping the guard does,
    /// with the outcome reported): an export that fails, such as to a collector that is not
    /// listening, is an error here as in [`flush`](Self::flush). The exporter is stopped either
    /// way.
    pub fn shutdown(self) -> Result<(), TelemetryError> {
        // The batch processor's own shutdown logs a failed export and reports success, so the
        // buffered spans are sent with a flush, whose outcome is the export's.
        let flushed = self.provider.force_flush();
        let stopped = self.provider.shutdown();
        flushed.and(stopped).map_err(|e| self.export_error(e))
    }

    fn export_error(&self, error: impl std::fmt::Display) -> TelemetryError {
        TelemetryError::Export {
            endpoint: self.endpoint.clone(),
            message: error.to_string(),
        }
    }
}

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        // Already shut down by `shutdown`, or the export failed: nothing left to report to.
        let _ = self.provider.shutdown();
    }
}

/// Installs a global `tracing` subscriber that exports every span at level INFO or above (the
/// agent's GenAI spans among them) to the OTLP/HTTP collector at `endpoint`, such as
/// `http://localhost:4318` (`/v1/traces` is added when the URL has no path).
///
/// The service is named by `OTEL_SERVICE_NAME` (default `harnessx`); request headers and the
/// export timeout (default 10 s) follow `OTEL_EXPORTER_OTLP_HEADERS` and
/// `OTEL_EXPORTER_OTLP_TIMEOUT`. Fails when `endpoint` is
/// not an `http(s)` URL and when a global subscriber is already installed (then add
/// [`otlp_layer`] to that one).
///
/// ```no_run
/// # async fn demo(agent: harnessx::Agent) -> Result<(), Box<dyn std::error::Error>> {
/// let _telemetry = harnessx::telemetry::init_otlp("http://localhost:4318")?;
/// agent.run("Summarise the report").await?;
/// // `_telemetry` flushes the run's spans when it goes out of scope.
/// # Ok(()) }
/// ```
pub fn init_otlp(endpoint: &str) -> Result<OtlpGuard, TelemetryError> {
    let (layer, guard) = otlp_layer::<Registry>(endpoint)?;
    tracing_subscriber::registry()
        .with(layer.with_filter(LevelFilter::INFO))
        .try_init()
        .map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(guard)
}

/// The OTLP/HTTP exporter of [`init_otlp`] as a [`Layer`] for a subscriber of your own, with the
/// guard that keeps it running.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
/// # fn main() -> Result<(), harnessx::telemetry::TelemetryError> {
/// let (layer, guard) = harnessx::telemetry::otlp_layer("http://127.0.0.1:4318")?;
/// assert_eq!(guard.endpoint(), "http://127.0.0.1:4318/v1/traces");
/// let subscriber = tracing_subscriber::registry().with(layer);
/// tracing::subscriber::with_default(subscriber, || {
///     // Agent runs here are exported; the guard flushes them when dropped.
/// });
/// # Ok(()) }
/// ```
pub fn otlp_layer<S>(endpoint: &str) -> Result<(impl Layer<S>, OtlpGuard), TelemetryError>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let url = traces_url(endpoint)?;
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url.as_str())
        .build()
        .map_err(|e| TelemetryError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason: e.to_string(),
        })?;
    let provider = SdkTracerProvider::builder()
        .with_span_processor(TypedArrays(BatchSpanProcessor::builder(exporter).build()))
        .with_resource(resource())
        .build();
    let scope = InstrumentationScope::builder("harnessx")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer_with_scope(scope))
        .with_tracked_inactivity(false)
        .with_threads(false);
    let guard = OtlpGuard {
        provider,
        endpoint: url.to_string(),
    };
    Ok((layer, guard))
}

/// The traces URL for `endpoint`: `/v1/traces` is added to a URL without a path.
fn traces_url(endpoint: &str) -> Result<url::Url, TelemetryError> {
    let invalid = |reason: String| TelemetryError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason,
    };
    let mut url = url::Url::parse(endpoint.trim()).map_err(|e| invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "the scheme is `{}`, not `http` or `https` (OTLP over gRPC is not supported)",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("it names no host".to_owned()));
    }
    if url.path() == "/" {
        url.set_path("/v1/traces");
    }
    Ok(url)
}

/// The service's resource: named by `OTEL_SERVICE_NAME`, else `harnessx`.
fn resource() -> Resource {
    let builder = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_some() {
        builder.build()
    } else {
        builder.with_service_name("harnessx").build()
    }
}

/// Whether an attribute is one the OpenTelemetry conventions could define, and so is exported:
/// harnessx's own `harnessx.*` fields (attempts, outcome) are for local subscribers, and a key
/// without a namespace (`tracing`'s bookkeeping) is no convention's.
fn is_convention_key(key: &str) -> bool {
    key.contains('.') && !key.starts_with("harnessx.")
}

/// Drops the attributes no convention defines ([`is_convention_key`]) and sends the
/// [`STRING_ARRAYS`] attributes as string arrays, then hands the span on.
#[derive(Debug)]
struct TypedArrays<P>(P);

impl<P: SpanProcessor> SpanProcessor for TypedArrays<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        span.attributes
            .retain(|a| is_convention_key(a.key.as_str()));
        for attribute in &mut span.attributes {
            if STRING_ARRAYS.contains(&attribute.key.as_str()) {
                retype_array(attribute);
            }
        }
        self.0.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.0.set_resource(resource);
    }
}

/// JSON array text → string array; anything else is left as it is.
fn retype_array(attribute: &mut KeyValue) {
    let Value::String(text) = &attribute.value else {
        return;
    };
    if let Ok(items) = serde_json::from_str::<Vec<String>>(text.as_str()) {
        attribute.value = Value::Array(Array::String(
            items.into_iter().map(StringValue::from).collect(),
        ));
    }
}
