//! Where an example's spans and metrics go. Nowhere, unless `TOOLSMITH_TELEMETRY_DIR` names a
//! directory: then toolsmith's spans go through `tracing-opentelemetry` into OpenTelemetry's
//! SDK, its metrics to the global meter provider, both into memory, and when the example
//! ends they are written to that directory as JSON lines (a file per process), for the test
//! that checks them against OpenTelemetry's semantic conventions (`tests/otel_conventions.rs`).
//!
//! An application wires OpenTelemetry the same way, with its collector's exporter (OTLP) in
//! place of the in-memory ones.

use std::path::PathBuf;

use opentelemetry::trace::{Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value as Otel};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{Map, Value, json};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;

/// The exporters of a process, written out when dropped (at the end of `main`).
pub struct Exported {
    dir: PathBuf,
    tracer: SdkTracerProvider,
    spans: InMemorySpanExporter,
    meters: SdkMeterProvider,
    metrics: InMemoryMetricExporter,
}

/// Installs the exporters when `TOOLSMITH_TELEMETRY_DIR` is set; keep the value until the
/// example ends.
pub fn export() -> Option<Exported> {
    let dir = PathBuf::from(std::env::var_os("TOOLSMITH_TELEMETRY_DIR")?);
    let spans = InMemorySpanExporter::default();
    let tracer = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer.tracer("toolsmith-example"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_level(false)
        .with_target(false)
        // toolsmith's spans: those of the crates under it (rmcp's) are theirs to name.
        .with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target("toolsmith", tracing::Level::INFO),
        );
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).ok()?;
    let metrics = InMemoryMetricExporter::default();
    let meters = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics.clone()).build())
        .build();
    opentelemetry::global::set_meter_provider(meters.clone());
    Some(Exported {
        dir,
        tracer,
        spans,
        meters,
        metrics,
    })
}

impl Drop for Exported {
    fn drop(&mut self) {
        let _ = self.tracer.force_flush();
        let _ = self.meters.force_flush();
        let mut lines = String::new();
        for span in self.spans.get_finished_spans().unwrap_or_default() {
            let line = json!({
                "span": span.name,
                "kind": format!("{:?}", span.span_kind).to_lowercase(),
                "failed": matches!(span.status, Status::Error { .. }),
                "attributes": attributes(span.attributes.iter()),
            });
            lines.push_str(&format!("{line}\n"));
        }
        let exported = self.metrics.get_finished_metrics().unwrap_or_default();
        // Each export holds the totals so far: the last one has every measurement.
        for metric in exported
            .last()
            .into_iter()
            .flat_map(|r| r.scope_metrics())
            .flat_map(|s| s.metrics())
        {
            let points: Vec<Value> = match metric.data() {
                AggregatedMetrics::F64(MetricData::Histogram(histogram)) => histogram
                    .data_points()
                    .map(|point| {
                        json!({"count": point.count(), "attributes": attributes(point.attributes())})
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let histogram = matches!(
                metric.data(),
                AggregatedMetrics::F64(MetricData::Histogram(_))
            );
            let line = json!({"metric": metric.name(), "unit": metric.unit(),
                "histogram": histogram, "points": points});
            lines.push_str(&format!("{line}\n"));
        }
        let file = self.dir.join(format!("{}.jsonl", std::process::id()));
        if let Err(err) = std::fs::write(&file, lines) {
            eprintln!(
                "the telemetry could not be written to {}: {err}",
                file.display()
            );
        }
    }
}

/// Attributes as JSON, each value under its type's name.
fn attributes<'a>(list: impl Iterator<Item = &'a KeyValue>) -> Value {
    let mut out = Map::new();
    for kv in list {
        let value = match &kv.value {
            Otel::Bool(b) => json!({"bool": b}),
            Otel::I64(i) => json!({"int": i}),
            Otel::F64(f) => json!({"double": f}),
            Otel::String(s) => json!({"string": s.as_str()}),
            Otel::Array(opentelemetry::Array::String(list)) => {
                json!({"strings": list.iter().map(|s| s.as_str()).collect::<Vec<_>>()})
            }
            other => json!({"other": format!("{other:?}")}),
        };
        out.insert(kv.key.as_str().to_owned(), value);
    }
    Value::Object(out)
}
