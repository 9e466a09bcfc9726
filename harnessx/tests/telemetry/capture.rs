//! A `tracing` layer that keeps every span (with its fields and parent) and every event, for the
//! telemetry tests.

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as the layer saw it. `seq` is unique (span ids are reused once a span closes).
#[derive(Debug, Clone)]
pub struct Captured {
    pub seq: usize,
    pub name: &'static str,
    pub parent: Option<usize>,
    pub fields: Map<String, Value>,
    pub closed: bool,
}

impl Captured {
    /// A field's value (strings as strings, integers as numbers).
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.fields.get(field)
    }

    /// A string field.
    pub fn str(&self, field: &str) -> Option<&str> {
        self.get(field).and_then(Value::as_str)
    }
}

/// One event and the span it happened in.
#[derive(Debug, Clone)]
pub struct CapturedEvent {
    pub parent: Option<usize>,
    pub fields: Map<String, Value>,
}

#[derive(Debug, Default)]
struct Store {
    spans: Vec<Captured>,
    events: Vec<CapturedEvent>,
}

/// The capturing layer; clones share what was captured.
#[derive(Debug, Clone, Default)]
pub struct Capture(Arc<Mutex<Store>>);

#[derive(Debug, Clone, Copy)]
struct Seq(usize);

impl Capture {
    /// Installs the layer as this thread's default subscriber until the guard drops (tool
    /// handlers on other threads still report to it: the engine carries the subscriber).
    ///
    /// Then asks every call site again whether it is wanted: tracing caches the answer per call
    /// site for the whole process, from the subscriber of the thread that reached it first, so a
    /// call site first reached by a thread without one would otherwise stay off for this test.
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()));
        tracing::callsite::rebuild_interest_cache();
        guard
    }

    /// Every span captured, in creation order.
    pub fn spans(&self) -> Vec<Captured> {
        self.0.lock().unwrap().spans.clone()
    }

    /// The spans whose `tracing` name is `name`.
    pub fn named(&self, name: &str) -> Vec<Captured> {
        self.spans()
            .into_iter()
            .filter(|s| s.name == name)
            .collect()
    }

    /// Every event captured.
    pub fn events(&self) -> Vec<CapturedEvent> {
        self.0.lock().unwrap().events.clone()
    }
}

struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        // Marked, so that a test sees a count recorded unsigned (OTLP would get a string).
        self.0
            .insert(field.name().to_owned(), Value::from(format!("u64:{value}")));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::from(format!("{value:?}")));
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is in the registry");
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Seq>().map(|s| s.0));
        let mut fields = Map::new();
        attrs.record(&mut Fields(&mut fields));
        let mut store = self.0.lock().unwrap();
        let seq = store.spans.len();
        store.spans.push(Captured {
            seq,
            name: attrs.metadata().name(),
            parent,
            fields,
            closed: false,
        });
        span.extensions_mut().insert(Seq(seq));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(seq) = ctx
            .span(id)
            .and_then(|s| s.extensions().get::<Seq>().map(|s| s.0))
        else {
            return;
        };
        let mut store = self.0.lock().unwrap();
        values.record(&mut Fields(&mut store.spans[seq].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let parent = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<Seq>().map(|s| s.0));
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        self.0
            .lock()
            .unwrap()
            .events
            .push(CapturedEvent { parent, fields });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(seq) = ctx
            .span(&id)
            .and_then(|s| s.extensions().get::<Seq>().map(|s| s.0))
        {
            self.0.lock().unwrap().spans[seq].closed = true;
        }
    }
}
