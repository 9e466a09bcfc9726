//! `GET /metrics`: what the store holds (runs by state, the queue, leases), read at each
//! scrape, and what this process saw (model and tool calls, journal writes, store errors),
//! counted as it happens, in the Prometheus text format. The names, types, units and labels
//! are listed in `harnessx/docs/production.md`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use harnessx::ToolErrorKind;
use harnessx::ToolResult;
use harnessx_runtime::store::{RunCounts, WebhookStore};
use harnessx_runtime::{Observer, RunState, Runtime, StoreError};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The `Content-Type` of the exposition: the Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The most distinct `tool` label values kept; calls of further tools are counted under
/// [`OTHER_TOOLS`], so a model that invents names cannot grow the exposition without bound.
pub const MAX_TOOL_LABELS: usize = 200;

/// The `tool` label of calls to a tool no agent has (the model wrote a name that matched none).
pub const UNKNOWN_TOOL: &str = "_unknown";

/// The `tool` label of calls past [`MAX_TOOL_LABELS`] distinct tools.
pub const OTHER_TOOLS: &str = "_other";

/// Where a store error counted by `harnessx_store_errors_total` happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreErrorSource {
    /// The runtime's workers: claiming, leases, question deadlines, a run's journal writes.
    Runtime,
    /// An API request (answered with a 5xx).
    Api,
    /// `/metrics` or `/readyz` reading the store.
    Probe,
}

impl StoreErrorSource {
    fn as_str(self) -> &'static str {
        match self {
            Self::Runtime => "runtime",
            Self::Api => "api",
            Self::Probe => "probe",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct SourceLabel {
    source: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

/// One tool's series, looked up by name without allocating.
#[derive(Clone)]
struct ToolSeries {
    calls: Counter,
    errors: Counter,
    duration: Histogram,
}

/// The figures read from the store at the last scrape: `None` when it could not be read.
#[derive(Debug, Clone, Default)]
struct StoreFigures {
    counts: RunCounts,
    queued: u64,
    waiting_input: u64,
    leases: u64,
    leases_held: u64,
    workers: u64,
    /// Pending webhook deliveries, when the metrics read a webhook store.
    webhook_backlog: Option<u64>,
}

/// Encodes the store's figures of the scrape in progress (read before encoding).
#[derive(Debug, Default)]
struct StoreCollector {
    figures: Mutex<Option<StoreFigures>>,
}

fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    let value = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    value.encode(metric)
}

impl Collector for StoreCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let figures = self
            .figures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        gauge(
            &mut encoder,
            "harnessx_store_up",
            "Whether this scrape read the run store (1) or not (0): the store's figures are left out when it did not",
            u64::from(figures.is_some()),
        )?;
        let Some(f) = figures else {
            return Ok(());
        };
        {
            let mut runs = encoder.encode_descriptor(
                "harnessx_runs",
                "Runs in the store by state (every server on the store sees the same)",
                None,
                MetricType::Gauge,
            )?;
            for state in [
                RunState::Queued,
                RunState::Running,
                RunState::WaitingInput,
                RunState::Completed,
                RunState::Failed,
                RunState::Cancelled,
            ] {
                let label = StateLabel {
                    state: state.as_str(),
                };
                let n = i64::try_from(f.counts.get(state)).unwrap_or(i64::MAX);
                ConstGauge::new(n).encode(runs.encode_family(&label)?)?;
            }
        }
        gauge(
            &mut encoder,
            "harnessx_queue_depth",
            "Runs queued for a worker",
            f.queued,
        )?;
        gauge(
            &mut encoder,
            "harnessx_runs_waiting_input",
            "Runs waiting for a person: a question's answer or an approval",
            f.waiting_input,
        )?;
        gauge(
            &mut encoder,
            "harnessx_leases",
            "Leases on running runs held by any server on the store",
            f.leases,
        )?;
        gauge(
            &mut encoder,
            "harnessx_leases_held",
            "Leases on running runs held by this server process",
            f.leases_held,
        )?;
        gauge(
            &mut encoder,
            "harnessx_workers",
            "How many runs this server process drives at once, at most",
            f.workers,
        )?;
        if let Some(backlog) = f.webhook_backlog {
            gauge(
                &mut encoder,
                "harnessx_webhook_backlog",
                "Webhook deliveries not yet delivered nor given up, to every webhook (every server on the store sees the same)",
                backlog,
            )?;
        }
        Ok(())
    }
}

/// The server's metrics: a registry, the series the runtime's [`Observer`] feeds, and the
/// store's figures read at each scrape.
pub struct Metrics {
    registry: Registry,
    store: Arc<StoreCollector>,
    tools: RwLock<HashMap<String, ToolSeries>>,
    tool_calls: Family<ToolLabel, Counter>,
    tool_errors: Family<ToolLabel, Counter>,
    tool_duration: Family<ToolLabel, Histogram, fn() -> Histogram>,
    model_duration: Histogram,
    step_duration: Histogram,
    store_errors: Family<SourceLabel, Counter>,
    /// One scrape at a time: the store's figures belong to the scrape that encodes them.
    scrape: tokio::sync::Mutex<()>,
    /// Where the webhook backlog is read.
    webhooks: Option<Arc<dyn WebhookStore>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Model calls: from 50 ms to 2 minutes.
const MODEL_BUCKETS: [f64; 11] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0];

/// Tool calls: from 1 ms to 5 minutes.
const TOOL_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Journal writes (one transaction each): from 0.5 ms to 2.5 s.
const STEP_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

fn tool_histogram() -> Histogram {
    Histogram::new(TOOL_BUCKETS)
}

impl Metrics {
    /// Every series registered, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let store = Arc::new(StoreCollector::default());
        registry.register_collector(Box::new(Arc::clone(&store)));
        let tool_calls = Family::<ToolLabel, Counter>::default();
        registry.register(
            "harnessx_tool_calls",
            "Tool calls of runs this process drove, by tool",
            tool_calls.clone(),
        );
        let tool_errors = Family::<ToolLabel, Counter>::default();
        registry.register(
            "harnessx_tool_errors",
            "Tool calls of runs this process drove that ended in an error, by tool",
            tool_errors.clone(),
        );
        let tool_duration: Family<ToolLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(tool_histogram);
        registry.register_with_unit(
            "harnessx_tool_call_duration",
            "How long a tool call took, from its started record to its result, by tool",
            Unit::Seconds,
            tool_duration.clone(),
        );
        let model_duration = Histogram::new(MODEL_BUCKETS);
        registry.register_with_unit(
            "harnessx_model_call_duration",
            "How long a run's model request took (turns read back from the journal are not asked again)",
            Unit::Seconds,
            model_duration.clone(),
        );
        let step_duration = Histogram::new(STEP_BUCKETS);
        registry.register_with_unit(
            "harnessx_step_duration",
            "How long writing one durable step of a run to the store took (a model turn, a call started or finished: one transaction)",
            Unit::Seconds,
            step_duration.clone(),
        );
        let store_errors = Family::<SourceLabel, Counter>::default();
        registry.register(
            "harnessx_store_errors",
            "Run store calls that failed after the store's own retries, by where: runtime, api, probe",
            store_errors.clone(),
        );
        // Every source shows from the start, at 0, so a rate over it is defined at once.
        for source in [
            StoreErrorSource::Runtime,
            StoreErrorSource::Api,
            StoreErrorSource::Probe,
        ] {
            let _ = store_errors.get_or_create_owned(&SourceLabel {
                source: source.as_str(),
            });
        }
        Self {
            registry,
            store,
            tools: RwLock::default(),
            tool_calls,
            tool_errors,
            tool_duration,
            model_duration,
            step_duration,
            store_errors,
            scrape: tokio::sync::Mutex::new(()),
            webhooks: None,
        }
    }

    /// Reads `harnessx_webhook_backlog` from `store` at each scrape.
    pub fn webhook_backlog(mut self, store: Arc<dyn WebhookStore>) -> Self {
        self.webhooks = Some(store);
        self
    }

    /// Counts a failed store call.
    pub fn store_error(&self, source: StoreErrorSource) {
        self.store_errors
            .get_or_create(&SourceLabel {
                source: source.as_str(),
            })
            .inc();
    }

    /// The series of `tool`, made on its first call (or those of [`OTHER_TOOLS`] once
    /// [`MAX_TOOL_LABELS`] tools have series).
    fn tool(&self, tool: &str) -> ToolSeries {
        if let Some(series) = self
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tool)
        {
            return series.clone();
        }
        let mut tools = self.tools.write().unwrap_or_else(|p| p.into_inner());
        let name = if tools.len() >= MAX_TOOL_LABELS && !tools.contains_key(tool) {
            OTHER_TOOLS
        } else {
            tool
        };
        if let Some(series) = tools.get(name) {
            return series.clone();
        }
        let label = ToolLabel {
            tool: name.to_owned(),
        };
        let series = ToolSeries {
            calls: self.tool_calls.get_or_create_owned(&label),
            errors: self.tool_errors.get_or_create_owned(&label),
            duration: self.tool_duration.get_or_create_owned(&label),
        };
        tools.insert(name.to_owned(), series.clone());
        series
    }

    /// Reads the store's figures through `runtime` and encodes every series. The store's
    /// figures are left out (and `harnessx_store_up` is 0) when the store does not answer
    /// within `deadline`; the process's own series are always there.
    pub async fn render(&self, runtime: &Runtime, deadline: Duration) -> String {
        let _one_at_a_time = self.scrape.lock().await;
        let read = async {
            let status = runtime.status().await?;
            let counts = runtime.store().count_runs().await?;
            let backlog = match &self.webhooks {
                Some(store) => Some(store.webhook_backlog().await?),
                None => None,
            };
            Ok::<_, harnessx_runtime::RuntimeError>((status, counts, backlog))
        };
        let figures = match tokio::time::timeout(deadline, read).await {
            Ok(Ok((status, counts, webhook_backlog))) => {
                let held = status
                    .store
                    .leases
                    .iter()
                    .filter(|l| l.owner == status.owner)
                    .count();
                Some(StoreFigures {
                    counts,
                    queued: status.store.queued,
                    waiting_input: status.store.waiting_input,
                    leases: status.store.leases.len() as u64,
                    leases_held: held as u64,
                    workers: status.workers as u64,
                    webhook_backlog,
                })
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "/metrics could not read the run store");
                self.store_error(StoreErrorSource::Probe);
                None
            }
            Err(_) => {
                tracing::warn!(
                    "/metrics could not read the run store within {deadline:?}; its figures are \
                     left out"
                );
                self.store_error(StoreErrorSource::Probe);
                None
            }
        };
        *self.store.figures.lock().unwrap_or_else(|p| p.into_inner()) = figures;
        let mut out = String::with_capacity(8 * 1024);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

impl Observer for Metrics {
    fn model_call(&self, elapsed: Duration) {
        self.model_duration.observe(elapsed.as_secs_f64());
    }

    fn tool_call(&self, result: &ToolResult, elapsed: Option<Duration>) {
        let name = if result.error_kind == Some(ToolErrorKind::UnknownTool) {
            UNKNOWN_TOOL
        } else {
            result.name.as_str()
        };
        let series = self.tool(name);
        series.calls.inc();
        if result.is_error {
            series.errors.inc();
        }
        if let Some(elapsed) = elapsed {
            series.duration.observe(elapsed.as_secs_f64());
        }
    }

    fn step_written(&self, elapsed: Duration) {
        self.step_duration.observe(elapsed.as_secs_f64());
    }

    fn store_error(&self, _error: &StoreError) {
        self.store_error(StoreErrorSource::Runtime);
    }
}
