//! OpenTelemetry: every run is a GenAI span tree (`invoke_agent`, a `chat` span per model
//! request, an `execute_tool` span per call). With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the spans
//! are exported over OTLP/HTTP to that collector; without it, they are printed as they open.
//!
//! ```sh
//! cargo run --example otel                                                  # prints the spans
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 cargo run --example otel # exports them
//! ```
//!
//! It runs offline on a scripted model; with `HARNESSX_MODEL` (and the provider's key) set, a
//! real model answers (and its token usage appears on the `chat` spans).

mod common;

use harnessx::{Agent, AgentConfig, TestModel, tool};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Look up the weather of a city.
///
/// Args:
///     city: The city.
#[tool(permission = "allow", replay_policy = "safe")]
fn weather(city: String) -> String {
    format!("Sunny in {city}, 21 °C")
}

/// Prints each span as it opens, indented under its parent, by its OpenTelemetry name.
struct PrintSpans;

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for PrintSpans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let depth = ctx.span(id).map_or(0, |span| span.scope().count() - 1);
        let mut name = OtelName(attrs.metadata().name().to_owned());
        attrs.record(&mut name);
        println!("{}span {}", "  ".repeat(depth), name.0);
    }
}

/// The `otel.name` field of a span (`execute_tool weather`), else its `tracing` name.
struct OtelName(String);

impl Visit for OtelName {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "otel.name" {
            self.0 = format!("{value:?}");
        }
    }
}

/// The scripted model of an offline run.
fn script() -> TestModel {
    TestModel::new()
        .then_call("weather", json!({"city": "Lisbon"}))
        .then_reply("It is sunny in Lisbon, 21 °C.")
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::report(run()).await
}

async fn run() -> Result<(), common::Error> {
    // Dropped at the end: flushes the exporter's last spans.
    let _telemetry = match std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT") {
        Ok(endpoint) => Some(harnessx::telemetry::init_otlp(&endpoint)?),
        Err(_) => {
            let printing = tracing_subscriber::registry().with(PrintSpans);
            tracing::subscriber::set_global_default(printing)?;
            None
        }
    };
    let config = AgentConfig::default().with_name("forecaster");
    let agent = Agent::builder()
        .model(common::model_or(script())?)
        .tool(weather)
        .config(config)
        .build()?;
    let result = agent.run("What is the weather in Lisbon?").await?;
    println!("assistant: {}", result.output);
    Ok(())
}
