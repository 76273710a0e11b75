//! Every span and metric toolsmith makes, exported through `tracing-opentelemetry` and
//! OpenTelemetry's SDK into memory, and checked against the semantic conventions' own YAML
//! registry (`tests/fixtures/semconv`, Apache-2.0), not against a list of our own: each
//! attribute name defined there, each value of the type (and enum member) defined there,
//! each required attribute present, `error.type` exactly on the spans that failed, no
//! content attribute unless asked for, each span's name and kind as its convention says, and
//! each metric's name, unit and instrument as defined.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry::{KeyValue, Value as Otel};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use toolsmith::agent::{Agent, AgentTool, ModelClient, ModelError, ModelRequest, ScriptedModel};
use toolsmith::policy::Defaults;
use toolsmith::provider::ToolCall;
use toolsmith::telemetry::Telemetry;
use toolsmith::tool::BoxFuture;
use toolsmith::{Dialect, ToolContext, Toolbox, tool};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use yaml_rust2::{Yaml, YamlLoader};

#[path = "support/http.rs"]
mod http;

// ---------------------------------------------------------------------------------------
// The registry, read from the conventions' YAML.

/// An attribute's type as the registry defines it.
#[derive(Debug)]
enum Type {
    String,
    Int,
    Double,
    Boolean,
    Strings,
    Any,
    /// An enum: its members' values, and whether other values are allowed (its examples
    /// name values that are not members, as `error.type`'s do).
    Members(BTreeSet<String>, bool),
}

/// How much a convention asks for an attribute.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Level {
    Required,
    Conditional,
    Recommended,
    OptIn,
}

/// A span or metric convention: its attributes (by name, with their level), its kind, its
/// span name's template, or its metric's unit and instrument.
#[derive(Debug, Default)]
struct Convention {
    attributes: BTreeMap<String, Level>,
    span_kind: Option<String>,
    name_template: Option<String>,
    unit: Option<String>,
    instrument: Option<String>,
}

struct Registry {
    attributes: BTreeMap<String, Type>,
    groups: BTreeMap<String, Yaml>,
}

impl Registry {
    fn load() -> Self {
        let mut registry = Self {
            attributes: BTreeMap::new(),
            groups: BTreeMap::new(),
        };
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/semconv/model");
        let mut files = Vec::new();
        for area in std::fs::read_dir(&root).expect("the registry") {
            for file in std::fs::read_dir(area.expect("an area").path()).expect("an area") {
                files.push(file.expect("a file").path());
            }
        }
        assert!(files.len() >= 10, "the registry's files are there");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a YAML file");
            let docs = YamlLoader::load_from_str(&text).expect("the registry's YAML parses");
            for group in docs[0]["groups"].as_vec().expect("groups") {
                let id = group["id"].as_str().expect("a group id").to_owned();
                if group["type"].as_str() == Some("attribute_group") && id.starts_with("registry.")
                {
                    for attribute in group["attributes"].as_vec().into_iter().flatten() {
                        let name = attribute["id"].as_str().expect("an attribute id");
                        registry
                            .attributes
                            .insert(name.to_owned(), type_of(attribute));
                    }
                }
                registry.groups.insert(id, group.clone());
            }
        }
        registry
    }

    /// A convention with the attributes of the groups it extends.
    fn convention(&self, id: &str) -> Convention {
        let group = self
            .groups
            .get(id)
            .unwrap_or_else(|| panic!("the registry has no group `{id}`"));
        let mut convention = match group["extends"].as_str() {
            Some(parent) => self.convention(parent),
            None => Convention::default(),
        };
        for attribute in group["attributes"].as_vec().into_iter().flatten() {
            let name = attribute["ref"]
                .as_str()
                .or_else(|| attribute["id"].as_str())
                .expect("an attribute");
            let level = match &attribute["requirement_level"] {
                Yaml::String(level) if level == "required" => Level::Required,
                Yaml::String(level) if level == "opt_in" => Level::OptIn,
                Yaml::Hash(hash)
                    if hash
                        .keys()
                        .any(|k| k.as_str() == Some("conditionally_required")) =>
                {
                    Level::Conditional
                }
                _ => Level::Recommended,
            };
            convention.attributes.insert(name.to_owned(), level);
        }
        if let Some(kind) = group["span_kind"].as_str() {
            convention.span_kind = Some(kind.to_owned());
        }
        if let Some(note) = group["note"].as_str() {
            if let Some(template) = note
                .split("**Span name** SHOULD be `")
                .nth(1)
                .and_then(|rest| rest.split('`').next())
            {
                convention.name_template = Some(template.to_owned());
            }
        }
        convention.unit = group["unit"]
            .as_str()
            .map(str::to_owned)
            .or(convention.unit);
        convention.instrument = group["instrument"]
            .as_str()
            .map(str::to_owned)
            .or(convention.instrument);
        convention
    }

    /// The metric convention named `name`.
    fn metric(&self, name: &str) -> Option<Convention> {
        let id = self
            .groups
            .iter()
            .find(|(_, g)| {
                g["type"].as_str() == Some("metric") && g["metric_name"].as_str() == Some(name)
            })
            .map(|(id, _)| id.clone())?;
        Some(self.convention(&id))
    }
}

fn type_of(attribute: &Yaml) -> Type {
    let yaml = &attribute["type"];
    match yaml {
        Yaml::String(t) => match t.as_str() {
            "string" => Type::String,
            "int" => Type::Int,
            "double" => Type::Double,
            "boolean" => Type::Boolean,
            "string[]" => Type::Strings,
            _ => Type::Any,
        },
        Yaml::Hash(_) => {
            let members: BTreeSet<String> = yaml["members"]
                .as_vec()
                .into_iter()
                .flatten()
                .filter_map(|m| m["value"].as_str().map(str::to_owned))
                .collect();
            let open = attribute["examples"]
                .as_vec()
                .into_iter()
                .flatten()
                .filter_map(Yaml::as_str)
                .any(|example| !members.contains(example));
            Type::Members(members, open)
        }
        _ => Type::Any,
    }
}

// ---------------------------------------------------------------------------------------
// The checks.

/// A finished span as the checks read it: exported here, or by an example's process.
struct Seen {
    name: String,
    kind: SpanKind,
    failed: bool,
    attributes: BTreeMap<String, Otel>,
}

impl From<&SpanData> for Seen {
    fn from(span: &SpanData) -> Self {
        Self {
            name: span.name.to_string(),
            kind: span.span_kind.clone(),
            failed: matches!(span.status, Status::Error { .. }),
            attributes: span
                .attributes
                .iter()
                .map(|kv| (kv.key.as_str().to_owned(), kv.value.clone()))
                .collect(),
        }
    }
}

/// Attributes as an example writes them (`examples/telemetry/mod.rs`): each value under
/// its type's name.
fn attributes_of(json: &Value) -> BTreeMap<String, Otel> {
    let mut out = BTreeMap::new();
    for (name, typed) in json.as_object().into_iter().flatten() {
        let value = if let Some(s) = typed.get("string").and_then(Value::as_str) {
            Otel::from(s.to_owned())
        } else if let Some(i) = typed.get("int").and_then(Value::as_i64) {
            Otel::I64(i)
        } else if let Some(f) = typed.get("double").and_then(Value::as_f64) {
            Otel::F64(f)
        } else if let Some(b) = typed.get("bool").and_then(Value::as_bool) {
            Otel::Bool(b)
        } else if let Some(list) = typed.get("strings").and_then(Value::as_array) {
            Otel::Array(opentelemetry::Array::String(
                list.iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.to_owned().into())
                    .collect(),
            ))
        } else {
            // A type the registry has no attribute of: reported as not of its type.
            Otel::from(format!("unreadable {typed}"))
        };
        out.insert(name.clone(), value);
    }
    out
}

impl Seen {
    fn from_json(line: &Value) -> Self {
        Self {
            name: line["span"].as_str().unwrap_or_default().to_owned(),
            kind: match line["kind"].as_str() {
                Some("server") => SpanKind::Server,
                Some("client") => SpanKind::Client,
                Some("producer") => SpanKind::Producer,
                Some("consumer") => SpanKind::Consumer,
                _ => SpanKind::Internal,
            },
            failed: line["failed"] == true,
            attributes: attributes_of(&line["attributes"]),
        }
    }
}

/// The conventions a span follows: an MCP request's (by its kind), and a GenAI operation's
/// (by its name); a server's `tools/call` follows both.
fn conventions_of(span: &Seen, attributes: &BTreeMap<String, Otel>) -> Vec<&'static str> {
    let mut ids = Vec::new();
    if attributes.contains_key("mcp.method.name") {
        ids.push(match span.kind {
            SpanKind::Client => "span.mcp.client",
            _ => "span.mcp.server",
        });
    }
    ids.extend(convention_of(span, attributes));
    ids
}

/// Which GenAI convention a span follows, by its operation.
fn convention_of(span: &Seen, attributes: &BTreeMap<String, Otel>) -> Option<&'static str> {
    let operation = attributes.get("gen_ai.operation.name")?.as_str();
    Some(match (operation.as_ref(), &span.kind) {
        ("execute_tool", _) => "span.gen_ai.execute_tool.internal",
        ("invoke_agent", SpanKind::Client) => "span.gen_ai.invoke_agent.client",
        ("invoke_agent", _) => "span.gen_ai.invoke_agent.internal",
        ("chat", _) => "span.gen_ai.inference.client",
        _ => return None,
    })
}

fn check_value(registry: &Registry, name: &str, value: &Otel, out: &mut Vec<String>) {
    let Some(defined) = registry.attributes.get(name) else {
        out.push(format!("`{name}` is not defined in the registry"));
        return;
    };
    let fits = match (defined, value) {
        (Type::String, Otel::String(_)) | (Type::Int, Otel::I64(_)) => true,
        (Type::Double, Otel::F64(_) | Otel::I64(_)) | (Type::Boolean, Otel::Bool(_)) => true,
        (Type::Strings, Otel::Array(opentelemetry::Array::String(_))) => true,
        (Type::Any, _) => true,
        (Type::Members(members, open), Otel::String(v)) => {
            if !open && !members.contains(v.as_str()) {
                out.push(format!("`{name}` = `{v}` is not one of {members:?}"));
            }
            true
        }
        _ => false,
    };
    if !fits {
        out.push(format!("`{name}` = {value:?} is not of type {defined:?}"));
    }
}

/// What each span breaks of its convention, with the span named.
fn check_span(registry: &Registry, span: &Seen, content: bool) -> Vec<String> {
    let attributes = &span.attributes;
    let ids = conventions_of(span, attributes);
    let Some(id) = ids.first().copied() else {
        return vec![format!(
            "span `{}` follows no GenAI or MCP convention",
            span.name
        )];
    };
    // The first convention names the span and gives its kind; an attribute of any of them is
    // the span's.
    let mut convention = registry.convention(id);
    for other in &ids[1..] {
        for (name, level) in registry.convention(other).attributes {
            convention.attributes.entry(name).or_insert(level);
        }
    }
    let mut out = Vec::new();
    for (name, value) in attributes {
        check_value(registry, name, value, &mut out);
        match convention.attributes.get(name) {
            None => out.push(format!("`{name}` is not an attribute of {id}")),
            Some(Level::OptIn) if !content => {
                out.push(format!(
                    "`{name}` is opt-in content, recorded without the opt-in"
                ));
            }
            _ => {}
        }
    }
    for (name, level) in &convention.attributes {
        if *level == Level::Required && !attributes.contains_key(name) {
            out.push(format!("required `{name}` is missing"));
        }
    }
    let failed = span.failed;
    if failed != attributes.contains_key("error.type") {
        out.push(format!(
            "`error.type` must be set exactly when the span failed (failed: {failed})"
        ));
    }
    let kind = format!("{:?}", span.kind).to_lowercase();
    if convention.span_kind.as_deref() != Some(kind.as_str()) {
        out.push(format!(
            "kind {kind}, the convention says {:?}",
            convention.span_kind
        ));
    }
    if let Some(template) = &convention.name_template {
        let expected = span_name(template, attributes);
        if span.name != expected {
            out.push(format!(
                "named `{}`, the convention says `{expected}`",
                span.name
            ));
        }
    }
    out.into_iter()
        .map(|v| format!("{} ({id}): {v}", span.name))
        .collect()
}

/// A span name from its template: `{attribute}` replaced by its value, and dropped (with the
/// space before it) when the span has no such attribute.
fn span_name(template: &str, attributes: &BTreeMap<String, Otel>) -> String {
    let mut name = String::new();
    for (i, part) in template.split(' ').enumerate() {
        let value = match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            // An MCP span's target: the tool or the prompt it is about.
            Some("target") => match attributes
                .get("gen_ai.tool.name")
                .or_else(|| attributes.get("gen_ai.prompt.name"))
            {
                Some(value) => value.as_str().into_owned(),
                None => continue,
            },
            Some(attribute) => match attributes.get(attribute) {
                Some(value) => value.as_str().into_owned(),
                None => continue,
            },
            None => part.to_owned(),
        };
        if i > 0 {
            name.push(' ');
        }
        name.push_str(&value);
    }
    name
}

// ---------------------------------------------------------------------------------------
// The runs whose spans are checked.

/// Looks up the weather in a city. Read-only. Not for forecasts.
#[tool(effect = "read")]
fn get_weather(
    /// The city.
    #[arg(length(max = 100))]
    city: String,
    /// The caller's API key.
    #[arg(sensitive, length(max = 100))]
    api_key: String,
) -> String {
    let _ = api_key;
    format!("sunny in {city}; token sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd")
}

/// A model client that names its model.
struct Named(ScriptedModel);

impl ModelClient for Named {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<Value, ModelError>> {
        self.0.complete(request)
    }

    fn model(&self) -> Option<&str> {
        Some("gpt-4.1-mini")
    }
}

fn weather_turns() -> Vec<Value> {
    vec![
        json!({"id": "chatcmpl-1", "model": "gpt-4.1-mini-2025-04-14",
        "usage": {"prompt_tokens": 120, "completion_tokens": 18},
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\",\"api_key\":\"k-123\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":7}"}}
        ]}}]}),
        json!({"id": "chatcmpl-2", "model": "gpt-4.1-mini-2025-04-14",
            "usage": {"prompt_tokens": 180, "completion_tokens": 9},
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Sunny in Oslo."}}]}),
    ]
}

/// One test's subscriber at a time: `tracing` keeps which callsites are wanted for every
/// thread at once, and a subscriber of another test coming or going on its thread changes it.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs `f` with a subscriber exporting to memory, and gives back the finished spans.
async fn spans_of<F: std::future::Future<Output = ()>>(f: F) -> Vec<SpanData> {
    let _one = ONE_AT_A_TIME.lock().await;
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("toolsmith-tests"))
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
    let subscriber = tracing_subscriber::registry().with(layer);
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        f.await;
    }
    provider.force_flush().expect("spans flushed");
    exporter.get_finished_spans().expect("spans")
}

fn check_all(registry: &Registry, spans: &[SpanData], content: bool) {
    let violations: Vec<String> = spans
        .iter()
        .flat_map(|span| check_span(registry, &Seen::from(span), content))
        .collect();
    assert!(
        violations.is_empty(),
        "{} violations:\n{}",
        violations.len(),
        violations.join("\n")
    );
}

fn attribute<'a>(span: &'a SpanData, name: &str) -> Option<&'a Otel> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == name)
        .map(|kv| &kv.value)
}

#[tokio::test]
async fn an_agent_run_its_requests_and_its_tool_calls_follow_the_genai_conventions() {
    let registry = Registry::load();
    let spans = spans_of(async {
        let agent = Agent::new(
            Toolbox::new().with(GetWeather),
            Dialect::OpenAiChat { strict: true },
            Named(ScriptedModel::new(weather_turns())),
        )
        .with_name("weather");
        let mut state = agent.start("Weather in Oslo?");
        let ctx = ToolContext::new().with_run_id("run_otel");
        agent.run(&mut state, &ctx).await.expect("the run answers");
    })
    .await;
    check_all(&registry, &spans, false);
    let named = |name: &str| spans.iter().filter(|s| s.name == name).count();
    assert_eq!(named("invoke_agent weather"), 1);
    assert_eq!(named("chat gpt-4.1-mini"), 2);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(named("execute_tool get_weather"), 2, "{names:?}");
    let agent = spans
        .iter()
        .find(|s| s.name == "invoke_agent weather")
        .unwrap();
    assert_eq!(
        attribute(agent, "gen_ai.conversation.id"),
        Some(&Otel::from("run_otel"))
    );
    // Each request and each call is a child of the run.
    for span in spans.iter().filter(|s| s.name != "invoke_agent weather") {
        assert_eq!(
            span.parent_span_id,
            agent.span_context.span_id(),
            "{}",
            span.name
        );
    }
    let chat = spans.iter().find(|s| s.name.starts_with("chat")).unwrap();
    assert_eq!(
        attribute(chat, "gen_ai.usage.input_tokens"),
        Some(&Otel::I64(120))
    );
    assert_eq!(
        attribute(chat, "gen_ai.response.model"),
        Some(&Otel::from("gpt-4.1-mini-2025-04-14"))
    );
    assert_eq!(
        attribute(chat, "gen_ai.response.finish_reasons"),
        Some(&Otel::Array(opentelemetry::Array::String(vec![
            "tool_calls".into()
        ])))
    );
    // The call with a wrong argument failed: its error code is its `error.type`.
    let failed: Vec<&SpanData> = spans
        .iter()
        .filter(|s| attribute(s, "error.type").is_some())
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(
        attribute(failed[0], "error.type"),
        Some(&Otel::from("invalid_arguments"))
    );
    assert_eq!(
        attribute(failed[0], "gen_ai.tool.call.id"),
        Some(&Otel::from("call_2"))
    );
    // No content without the opt-in.
    assert!(
        spans
            .iter()
            .all(|s| attribute(s, "gen_ai.tool.call.arguments").is_none())
    );
}

#[tokio::test]
async fn content_is_recorded_only_when_asked_and_then_redacted() {
    let registry = Registry::load();
    let spans = spans_of(async {
        let toolbox = Toolbox::new().with(GetWeather).with_defaults(Defaults {
            telemetry: Telemetry::default().with_content(true),
            ..Defaults::default()
        });
        let call = ToolCall::parse(Dialect::OpenAiChat { strict: true }, &weather_turns()[0])
            .expect("calls")
            .remove(0);
        let out = toolbox
            .provider(Dialect::OpenAiChat { strict: true })
            .run(&call, &ToolContext::new())
            .await;
        assert!(out.is_success());
    })
    .await;
    check_all(&registry, &spans, true);
    assert_eq!(spans.len(), 1);
    let arguments = attribute(&spans[0], "gen_ai.tool.call.arguments")
        .expect("arguments")
        .as_str();
    let arguments: Value = serde_json::from_str(&arguments).unwrap();
    assert_eq!(arguments, json!({"city": "Oslo", "api_key": "[redacted]"}));
    let result = attribute(&spans[0], "gen_ai.tool.call.result")
        .expect("result")
        .as_str();
    assert!(result.contains("sunny in Oslo"), "{result}");
    assert!(
        !result.contains("sk-proj-AbCd"),
        "a secret reached a span: {result}"
    );
}

#[tokio::test]
async fn an_agent_used_as_a_tool_nests_its_run_under_the_call() {
    let registry = Registry::load();
    let spans = spans_of(async {
        let child = Agent::new(
            Toolbox::new().with(GetWeather),
            Dialect::OpenAiChat { strict: true },
            Named(ScriptedModel::new(weather_turns())),
        )
        .with_name("forecaster");
        let parent = Agent::new(
            Toolbox::new().with(AgentTool::new(
                "forecaster",
                "Answers one question about the weather. Read-only. Not for anything else.",
                child,
            )),
            Dialect::OpenAiChat { strict: true },
            ScriptedModel::new([
                json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": "call_f", "type": "function", "function": {"name": "forecaster", "arguments": "{\"task\":\"Oslo?\"}"}}]}}]}),
                json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Sunny."}}]}),
            ]),
        );
        let mut state = parent.start("Weather?");
        parent
            .run(&mut state, &ToolContext::new().with_run_id("run_parent"))
            .await
            .expect("the run answers");
    })
    .await;
    check_all(&registry, &spans, false);
    let call = spans
        .iter()
        .find(|s| s.name == "execute_tool forecaster")
        .expect("the call");
    let child = spans
        .iter()
        .find(|s| s.name == "invoke_agent forecaster")
        .expect("the child run");
    assert_eq!(child.parent_span_id, call.span_context.span_id());
    let parent = spans
        .iter()
        .find(|s| s.name == "invoke_agent")
        .expect("the parent run");
    assert_eq!(call.parent_span_id, parent.span_context.span_id());
}

/// The meter provider of this test binary (the global one), exporting to memory.
fn meters() -> &'static (SdkMeterProvider, InMemoryMetricExporter) {
    static METERS: std::sync::OnceLock<(SdkMeterProvider, InMemoryMetricExporter)> =
        std::sync::OnceLock::new();
    METERS.get_or_init(|| {
        let exporter = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        opentelemetry::global::set_meter_provider(meters.clone());
        (meters, exporter)
    })
}

/// Checks every metric recorded so far against the registry (its name, unit and
/// instrument, and each data point's attributes), and gives each metric's count of
/// measurements.
fn checked_metrics(registry: &Registry) -> BTreeMap<String, u64> {
    let (meters, exporter) = meters();
    meters.force_flush().expect("metrics flushed");
    let exported = exporter.get_finished_metrics().expect("metrics");
    let mut counts = BTreeMap::new();
    let mut violations = Vec::new();
    for metric in exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
    {
        let points: Vec<(u64, BTreeMap<String, Otel>)> = match metric.data() {
            AggregatedMetrics::F64(MetricData::Histogram(histogram)) => histogram
                .data_points()
                .map(|point| {
                    let attributes = point
                        .attributes()
                        .map(|kv: &KeyValue| (kv.key.as_str().to_owned(), kv.value.clone()))
                        .collect();
                    (point.count(), attributes)
                })
                .collect(),
            _ => Vec::new(),
        };
        let histogram = matches!(
            metric.data(),
            AggregatedMetrics::F64(MetricData::Histogram(_))
        );
        let checked = Metric {
            name: metric.name(),
            unit: metric.unit(),
            histogram,
            points: &points,
        };
        checked.check(registry, &mut violations);
        *counts.entry(metric.name().to_owned()).or_insert(0) +=
            points.iter().map(|(n, _)| n).sum::<u64>();
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    counts
}

/// A metric as the checks read it: its name, unit, whether it is a histogram, and its
/// data points (a count and the attributes of each).
struct Metric<'a> {
    name: &'a str,
    unit: &'a str,
    histogram: bool,
    points: &'a [(u64, BTreeMap<String, Otel>)],
}

impl Metric<'_> {
    /// What the metric breaks of its convention: its name, unit and instrument, and each
    /// data point's attributes.
    fn check(&self, registry: &Registry, violations: &mut Vec<String>) {
        let name = self.name;
        let Some(convention) = registry.metric(name) else {
            violations.push(format!("metric `{name}` is not defined"));
            return;
        };
        if convention.unit.as_deref() != Some(self.unit) {
            violations.push(format!(
                "`{name}` in `{}`, defined in {:?}",
                self.unit, convention.unit
            ));
        }
        if !self.histogram {
            violations.push(format!("`{name}` is not a histogram"));
            return;
        }
        if convention.instrument.as_deref() != Some("histogram") {
            violations.push(format!(
                "`{name}` is a histogram, defined as {:?}",
                convention.instrument
            ));
        }
        for (_, attributes) in self.points {
            for (attribute, value) in attributes {
                check_value(registry, attribute, value, violations);
                if !convention.attributes.contains_key(attribute) {
                    violations.push(format!("`{attribute}` is not an attribute of `{name}`"));
                }
            }
            for (attribute, level) in &convention.attributes {
                if *level == Level::Required && !attributes.contains_key(attribute) {
                    violations.push(format!("`{name}`: required `{attribute}` is missing"));
                }
            }
        }
    }
}

#[tokio::test]
async fn a_provider_s_tool_call_records_the_operation_duration_metric_as_defined() {
    let registry = Registry::load();
    let _one = ONE_AT_A_TIME.lock().await;
    meters();
    let toolbox = Arc::new(Toolbox::new().with(GetWeather));
    let provider = toolbox.provider(Dialect::OpenAiChat { strict: true });
    for call in ToolCall::parse(Dialect::OpenAiChat { strict: true }, &weather_turns()[0]).unwrap()
    {
        provider.run(&call, &ToolContext::new()).await;
    }
    // One measurement per call: these two, and those of the other tests of this file that
    // ran before it under the same meter provider.
    let counts = checked_metrics(&registry);
    assert!(
        counts
            .get("gen_ai.client.operation.duration")
            .copied()
            .unwrap_or(0)
            >= 2,
        "{counts:?}"
    );
}

/// Sends one JSON-RPC message to the server and, for a request, reads lines to its answer.
async fn rpc<R, W>(
    read: &mut tokio::io::Lines<tokio::io::BufReader<R>>,
    write: &mut W,
    message: Value,
) -> Option<Value>
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncWriteExt;
    write
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
    let id = message.get("id")?.clone();
    loop {
        let line = read.next_line().await.unwrap().expect("the server answers");
        let answer: Value = serde_json::from_str(&line).unwrap();
        if answer.get("id") == Some(&id) {
            return Some(answer);
        }
    }
}

#[tokio::test]
async fn the_mcp_server_s_requests_are_server_spans_and_a_tool_call_is_one_span_in_the_client_s_trace()
 {
    use tokio::io::AsyncBufReadExt;
    let registry = Registry::load();
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    meters();
    let spans = spans_of(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let served = tokio::spawn(toolsmith::mcp::McpServer::new(Toolbox::new().with(GetWeather)).serve(tokio::io::split(server)));
        let (read, mut write) = tokio::io::split(client);
        let mut read = tokio::io::BufReader::new(read).lines();
        rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "otel", "version": "1"}}})).await;
        rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        let listed = rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await.unwrap();
        assert_eq!(listed["result"]["tools"][0]["name"], "get_weather");
        let called = rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "get_weather", "arguments": {"city": "Oslo", "api_key": "k"}, "_meta": {"traceparent": traceparent}}})).await.unwrap();
        assert_eq!(called["result"]["isError"], false, "{called}");
        let failed = rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "get_weather", "arguments": {"city": 7}}})).await.unwrap();
        assert_eq!(failed["result"]["isError"], true, "{failed}");
        let refused = rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "greet"}})).await.unwrap();
        assert!(refused["error"]["code"].is_i64(), "{refused}");
        let pong = rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": 6, "method": "ping"})).await.unwrap();
        assert!(pong["result"].is_object(), "{pong}");
        drop(write);
        drop(read);
        let _ = served.await;
    })
    .await;
    check_all(&registry, &spans, false);
    let named = |name: &str| spans.iter().filter(|s| s.name == name).collect::<Vec<_>>();
    assert_eq!(named("tools/list").len(), 1);
    assert_eq!(named("prompts/get greet").len(), 1);
    // The handshake and a ping, which rmcp would answer unseen, are spans too.
    for request in ["initialize", "ping"] {
        let span = named(request);
        assert_eq!(span.len(), 1, "{request}");
        assert_eq!(span[0].span_kind, SpanKind::Server);
        assert_eq!(
            attribute(span[0], "mcp.method.name"),
            Some(&Otel::from(request))
        );
    }
    assert_eq!(
        attribute(named("initialize")[0], "mcp.protocol.version"),
        Some(&Otel::from("2025-11-25"))
    );
    let calls = named("tools/call get_weather");
    assert_eq!(
        calls.len(),
        2,
        "one span per call, not an MCP span beside an execute_tool span"
    );
    assert!(spans.iter().all(|s| !s.name.starts_with("execute_tool")));
    for call in &calls {
        assert_eq!(call.span_kind, SpanKind::Server);
        assert_eq!(
            attribute(call, "network.transport"),
            Some(&Otel::from("pipe"))
        );
    }
    // The call that carried the client's traceparent continues the client's trace.
    let traced = calls
        .iter()
        .find(|s| attribute(s, "jsonrpc.request.id") == Some(&Otel::from("3")))
        .expect("the traced call");
    assert_eq!(
        traced.span_context.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(traced.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert!(traced.parent_span_is_remote);
    let failed = calls
        .iter()
        .find(|s| attribute(s, "jsonrpc.request.id") == Some(&Otel::from("4")))
        .expect("the failed call");
    assert_eq!(
        attribute(failed, "error.type"),
        Some(&Otel::from("tool_error"))
    );
    let prompt = named("prompts/get greet")[0];
    assert_eq!(attribute(prompt, "error.type"), Some(&Otel::from("-32602")));
    assert_eq!(
        attribute(prompt, "rpc.response.status_code"),
        Some(&Otel::from("-32602"))
    );
    // Each request's duration: tools/list, the two calls, prompts/get.
    let counts = checked_metrics(&registry);
    assert!(
        counts
            .get("mcp.server.operation.duration")
            .copied()
            .unwrap_or(0)
            >= 4,
        "{counts:?}"
    );
}

#[tokio::test]
async fn an_mcp_toolset_s_call_is_a_client_span_whose_trace_the_server_continues() {
    let registry = Registry::load();
    let spans = spans_of(async {
        // Its worker rests after each request: the handshake replayed to wake it is not
        // the client's, and is no span.
        let http = toolsmith::mcp::McpServer::new(Toolbox::new().with(GetWeather))
            .with_http(toolsmith::mcp::HttpOptions {
                session_worker_idle: std::time::Duration::ZERO,
                ..Default::default()
            })
            .bind_http("127.0.0.1:0")
            .await
            .expect("a server on a free port");
        let remote = toolsmith::toolset::McpToolset::http("weather", &http.url())
            .await
            .expect("connected")
            .with_read_only(["get_weather"]);
        let toolbox = Toolbox::new().with_toolset(remote.tools().await.expect("listed"));
        let out = toolbox
            .call(
                "get_weather",
                json!({"city": "Oslo", "api_key": "k"}),
                &ToolContext::new(),
            )
            .await;
        assert!(out.is_success(), "{}", out.to_json());
        let out = toolbox
            .call(
                "get_weather",
                json!({"city": "Oslo", "api_key": 7}),
                &ToolContext::new(),
            )
            .await;
        assert!(!out.is_success());
    })
    .await;
    check_all(&registry, &spans, false);
    let client: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "tools/call get_weather" && s.span_kind == SpanKind::Client)
        .collect();
    let server: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "tools/call get_weather" && s.span_kind == SpanKind::Server)
        .collect();
    assert_eq!(
        client.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    // The call refused by the proxy's own validation never reached the server.
    assert_eq!(server.len(), 1);
    let handshakes = spans.iter().filter(|s| s.name == "initialize").count();
    assert_eq!(
        handshakes,
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    assert_eq!(
        server[0].span_context.trace_id(),
        client[0].span_context.trace_id()
    );
    assert_eq!(server[0].parent_span_id, client[0].span_context.span_id());
    assert_eq!(
        attribute(client[0], "network.transport"),
        Some(&Otel::from("tcp"))
    );
    assert_eq!(
        attribute(server[0], "network.protocol.name"),
        Some(&Otel::from("http"))
    );
    assert!(attribute(client[0], "mcp.protocol.version").is_some());
    assert!(
        attribute(server[0], "mcp.session.id").is_some(),
        "a session's digest"
    );
}

#[tokio::test]
async fn a_client_s_malformed_traceparent_or_long_id_starts_no_trace_of_its_own_and_is_cut_short() {
    use tokio::io::AsyncBufReadExt;
    let registry = Registry::load();
    let long_id = "i".repeat(100_000);
    let hostile = [
        json!("00-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz-00f067aa0ba902b7-01"),
        json!("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"),
        json!("x".repeat(200_000)),
        json!({"not": "a string"}),
    ];
    let spans = spans_of(async {
        let (client, server) = tokio::io::duplex(1 << 20);
        let served = tokio::spawn(
            toolsmith::mcp::McpServer::new(Toolbox::new().with(GetWeather))
                .serve(tokio::io::split(server)),
        );
        let (read, mut write) = tokio::io::split(client);
        let mut read = tokio::io::BufReader::new(read).lines();
        rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "otel", "version": "1"}}})).await;
        rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        for (i, traceparent) in hostile.iter().enumerate() {
            let called = rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": format!("c{i}"), "method": "tools/call", "params": {
                "name": "get_weather", "arguments": {"city": "Oslo", "api_key": "k"}, "_meta": {"traceparent": traceparent}}})).await.unwrap();
            assert_eq!(called["result"]["isError"], false, "{called}");
        }
        let listed = rpc(&mut read, &mut write, json!({"jsonrpc": "2.0", "id": long_id, "method": "tools/list"})).await.unwrap();
        assert!(listed["result"]["tools"].is_array());
        drop(write);
        drop(read);
        let _ = served.await;
    })
    .await;
    check_all(&registry, &spans, false);
    let calls: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == "tools/call get_weather")
        .collect();
    assert_eq!(calls.len(), hostile.len());
    for call in calls {
        assert!(
            !call.parent_span_is_remote,
            "a malformed traceparent became a parent"
        );
    }
    let listed = spans
        .iter()
        .find(|s| s.name == "tools/list")
        .expect("the listing");
    let id = attribute(listed, "jsonrpc.request.id")
        .expect("its id")
        .as_str();
    assert!(
        id.len() < 1_000,
        "the client's id reached the span whole ({} bytes)",
        id.len()
    );
}

/// An MCP toolset's requests and session, and the server's session, each recorded on the
/// MCP conventions' duration histogram, as the registry defines them.
#[tokio::test]
async fn mcp_requests_and_sessions_record_the_conventions_duration_metrics() {
    let registry = Registry::load();
    let _one = ONE_AT_A_TIME.lock().await;
    meters();
    let http = toolsmith::mcp::McpServer::new(Toolbox::new().with(GetWeather))
        .with_http(toolsmith::mcp::HttpOptions {
            // Short, so that the server's session ends soon after the toolset is gone, yet
            // long enough for a client on a loaded machine to finish its handshake.
            session_idle_timeout: std::time::Duration::from_secs(3),
            ..Default::default()
        })
        .bind_http("127.0.0.1:0")
        .await
        .expect("a server on a free port");
    {
        let remote = toolsmith::toolset::McpToolset::http("weather", &http.url())
            .await
            .expect("connected")
            .with_read_only(["get_weather"]);
        let toolbox = Toolbox::new().with_toolset(remote.tools().await.expect("listed"));
        let out = toolbox
            .call(
                "get_weather",
                json!({"city": "Oslo", "api_key": "k"}),
                &ToolContext::new(),
            )
            .await;
        assert!(out.is_success(), "{}", out.to_json());
    }
    // The toolset is gone: its session ended on the client, and on the server when the
    // client closed it or it sat idle.
    let wanted = [
        "mcp.client.operation.duration",
        "mcp.client.session.duration",
        "mcp.server.operation.duration",
        "mcp.server.session.duration",
    ];
    let mut counts = BTreeMap::new();
    for _ in 0..200 {
        counts = checked_metrics(&registry);
        if wanted.iter().all(|m| counts.contains_key(*m)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for metric in wanted {
        assert!(
            counts.get(metric).copied().unwrap_or(0) >= 1,
            "{metric}: {counts:?}"
        );
    }
    // `tools/list` and `tools/call`, at least.
    assert!(counts["mcp.client.operation.duration"] >= 2, "{counts:?}");
    http.shutdown().await.expect("shut down");
}

// ---------------------------------------------------------------------------------------
// Every example, run as its own process with its telemetry exported
// (`examples/telemetry/mod.rs`).

/// An example's binary, built beside this test (`cargo build --examples`).
fn example_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    dir.join("examples").join(name)
}

/// Where one example's telemetry goes.
fn dir_of(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("toolsmith-telemetry-{}-{name}", std::process::id()))
}

/// A fresh directory for one example's telemetry.
fn telemetry_dir(name: &str) -> std::path::PathBuf {
    let dir = dir_of(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// The command for example `name`, exporting to `dir`.
fn example(name: &str, dir: &Path) -> std::process::Command {
    let binary = example_binary(name);
    assert!(
        binary.exists(),
        "{} is missing: run `cargo build --examples --all-features` (scripts/test.sh does)",
        binary.display()
    );
    let mut command = std::process::Command::new(binary);
    command
        .env("TOOLSMITH_TELEMETRY_DIR", dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command
}

/// Waits for `child` to end (at most five minutes) and says it succeeded.
fn ended(name: &str, mut child: std::process::Child) {
    for _ in 0..3000 {
        if let Some(status) = child.try_wait().expect("the example's status") {
            assert!(status.success(), "{name} ended with {status}");
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("{name} did not end within five minutes");
}

/// The spans and metrics the processes of one example wrote to `dir`, checked against the
/// registry: the violations, and how many spans and measurements there were.
fn checked_telemetry(registry: &Registry, name: &str, dir: &Path) -> (Vec<String>, usize, u64) {
    let (mut violations, mut spans, mut measured) = (Vec::new(), 0, 0);
    let files = std::fs::read_dir(dir).expect("the telemetry directory");
    for file in files.flatten() {
        let text = std::fs::read_to_string(file.path()).expect("a telemetry file");
        for line in text.lines() {
            let line: Value = serde_json::from_str(line).expect("a JSON line");
            if line.get("span").is_some() {
                spans += 1;
                violations.extend(check_span(registry, &Seen::from_json(&line), false));
            } else {
                let points: Vec<(u64, BTreeMap<String, Otel>)> = line["points"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        (
                            p["count"].as_u64().unwrap_or(0),
                            attributes_of(&p["attributes"]),
                        )
                    })
                    .collect();
                measured += points.iter().map(|(n, _)| n).sum::<u64>();
                let metric = Metric {
                    name: line["metric"].as_str().unwrap_or_default(),
                    unit: line["unit"].as_str().unwrap_or_default(),
                    histogram: line["histogram"] == true,
                    points: &points,
                };
                metric.check(registry, &mut violations);
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    let violations = violations
        .into_iter()
        .map(|v| format!("{name}: {v}"))
        .collect();
    (violations, spans, measured)
}

/// Whether a server an example needs is here; when it is not, the example is skipped,
/// unless the run requires it (`scripts/test.sh` installs each and requires it).
fn available(name: &str, found: bool, required: &str) -> bool {
    if !found {
        assert!(
            std::env::var_os(required).is_none(),
            "{name} needs a server this machine lacks ({required} is set)"
        );
        eprintln!("{name}: its server is not installed here; skipped");
    }
    found
}

/// The first line `child` writes on stdout: the URL it serves at, on the loopback interface.
fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("its stdout"))
        .read_line(&mut line)
        .expect("the process says where it listens");
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    url
}

/// Stops `child` as Ctrl-C would (SIGINT), and waits for it to end well.
fn interrupted(name: &str, child: std::process::Child) {
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "{name} could not be interrupted");
    ended(name, child);
}

/// Runs the MCP conformance server example and, against it, the conformance client example
/// (which calls each tool with arguments made from its schema), then stops the server as
/// Ctrl-C would.
fn conformance_pair(server_dir: &Path, client_dir: &Path) {
    let mut server = example("mcp_conformance", server_dir)
        .arg("127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the conformance server starts");
    let url = first_line(&mut server);
    let client = example("mcp_conformance_client", client_dir)
        .arg(&url)
        .spawn()
        .expect("the conformance client starts");
    ended("mcp_conformance_client", client);
    interrupted("mcp_conformance", server);
}

/// Runs the MCP server example over stdio: the handshake, the list, a call, a failing one
/// and a ping, then the end of its input.
fn mcp_server_over_stdio(dir: &Path) {
    use std::io::Write;
    let mut server = example("mcp_server", dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("the MCP server starts");
    {
        let mut stdin = server.stdin.take().expect("its stdin");
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "add", "arguments": {"a": "two"}}}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        ] {
            writeln!(stdin, "{message}").expect("the server reads");
        }
        // Give the server its requests before its input ends.
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    ended("mcp_server", server);
}

/// Where `scripts/test.sh` installed the test authorization server's package.
fn oauth_modules() -> Option<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/oauth/node_modules");
    dir.join("oauth2-mock-server").exists().then_some(dir)
}

/// Runs the protected MCP server example against the test authorization server
/// (`tests/oauth/server.js`), lists its tools and calls one with a token issued for it, then
/// stops it as Ctrl-C would.
fn protected_server(dir: &Path, modules: &Path) {
    let mut issuer = std::process::Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/oauth/server.js"
        ))
        .env("NODE_PATH", modules)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node runs");
    let issuer_url = first_line(&mut issuer);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut server = example("mcp_auth", dir)
        .args([issuer_url.as_str(), &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the protected server starts");
    let url = first_line(&mut server);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let issuer_addr: std::net::SocketAddr =
            issuer_url.trim_start_matches("http://").parse().expect("an address");
        let body = format!(
            "grant_type=client_credentials&sub=ada&aud={}&scope=tickets%3Aread",
            url.replace(':', "%3A").replace('/', "%2F")
        );
        let request = format!(
            "POST /token HTTP/1.1\r\nhost: {issuer_addr}\r\ncontent-type: application/x-www-form-urlencoded\r\nauthorization: Basic ZGVzazpzZWNyZXQ=\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let answer = http::exchange(issuer_addr, request, |_| false).await;
        let json = &answer[answer.find("\r\n\r\n").expect("a body") + 4..];
        let token: Value = serde_json::from_str(json.trim()).expect("a token answer");
        let token = token["access_token"].as_str().expect("a token").to_owned();
        let remote = toolsmith::toolset::McpToolset::http_signed_in(
            "tickets",
            &url,
            toolsmith::toolset::StaticToken::new(token),
        )
        .await
        .expect("signed in")
        .trusted();
        let toolbox = Toolbox::new().with_toolset(remote.tools().await.expect("listed"));
        let names: Vec<String> = toolbox.names().map(str::to_owned).collect();
        assert!(!names.is_empty(), "the tools its token may call");
        let read = names.iter().find(|n| n.contains("read")).expect("the read tool");
        let def = toolbox.get(read).expect("a tool").definition().clone();
        let arguments = toolsmith::testing::sample(def.input_schema()).expect("a sample");
        toolbox.call(read, arguments, &ToolContext::new()).await;
    });
    interrupted("mcp_auth", server);
    let _ = issuer.kill();
    let _ = issuer.wait();
}

/// Runs a fleet replica (its state in memory) and the load generator against it for half a
/// second, then stops the replica as Ctrl-C would.
fn fleet_pair(replica_dir: &Path, load_dir: &Path) {
    let mut replica = example("fleet_replica", replica_dir)
        .args(["memory", "127.0.0.1:0", "/dev/null"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the replica starts");
    let url = first_line(&mut replica);
    let load = example("fleet_load", load_dir)
        .args([
            "--urls",
            &url,
            "--tool",
            "add",
            "--clients",
            "2",
            "--seconds",
            "0.5",
        ])
        .spawn()
        .expect("the load generator starts");
    ended("fleet_load", load);
    interrupted("fleet_replica", replica);
}

/// Every example, run as its own process with its spans and metrics exported, each checked
/// against the registry: 0 violations. The MCP server example is driven over stdio, the
/// conformance server by the conformance client example, a fleet replica by the load
/// generator, the protected server by a client with a token from the test authorization
/// server.
#[test]
fn every_example_s_spans_and_metrics_follow_the_conventions() {
    let registry = Registry::load();
    let redis = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| dir.join("redis-server").exists())
    });
    let redis = available("durable", redis, "TOOLSMITH_REQUIRE_REDIS");
    let restate = std::env::var_os("TOOLSMITH_RESTATE_SERVER").is_some();
    let restate = available("restate", restate, "TOOLSMITH_REQUIRE_RESTATE");
    let oauth = oauth_modules();
    let oauth_here = available("mcp_auth", oauth.is_some(), "TOOLSMITH_REQUIRE_OAUTH");
    let plain: [(&str, &[&str]); 8] = [
        ("quickstart", &[]),
        ("agent_turn", &[]),
        ("code_mode", &[]),
        ("delegate", &[]),
        ("export", &["openai-strict"]),
        ("idempotent_write", &[]),
        ("large_toolset", &[]),
        ("streaming", &[]),
    ];
    // The examples run side by side, each on ports of its own, and are checked after.
    std::thread::scope(|scope| {
        let alone = scope.spawn(|| {
            let children: Vec<_> = plain
                .iter()
                .map(|(name, args)| {
                    let dir = telemetry_dir(name);
                    let child = example(name, &dir).args(*args).spawn().expect("starts");
                    (*name, child)
                })
                .collect();
            for (name, child) in children {
                ended(name, child);
            }
        });
        let servers = scope.spawn(|| {
            mcp_server_over_stdio(&telemetry_dir("mcp_server"));
            conformance_pair(
                &telemetry_dir("mcp_conformance"),
                &telemetry_dir("mcp_conformance_client"),
            );
            fleet_pair(
                &telemetry_dir("fleet_replica"),
                &telemetry_dir("fleet_load"),
            );
            if let Some(modules) = &oauth {
                protected_server(&telemetry_dir("mcp_auth"), modules);
            }
        });
        let durable = scope.spawn(move || {
            for (name, here) in [("durable", redis), ("restate", restate)] {
                if here {
                    let dir = telemetry_dir(name);
                    ended(name, example(name, &dir).spawn().expect("starts"));
                }
            }
        });
        for thread in [alone, servers, durable] {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    let mut violations = Vec::new();
    let mut seen = BTreeMap::new();
    let servers = [
        "mcp_server",
        "mcp_conformance",
        "mcp_conformance_client",
        "fleet_replica",
        "fleet_load",
    ];
    let durable = [
        ("durable", redis),
        ("restate", restate),
        ("mcp_auth", oauth_here),
    ]
    .into_iter()
    .filter_map(|(name, here)| here.then_some(name));
    for name in plain
        .iter()
        .map(|(name, _)| *name)
        .chain(servers)
        .chain(durable)
    {
        let (found, spans, measured) = checked_telemetry(&registry, name, &dir_of(name));
        violations.extend(found);
        seen.insert(name.to_owned(), (spans, measured));
    }
    assert!(
        violations.is_empty(),
        "{} violations:\n{}",
        violations.len(),
        violations.join("\n")
    );
    println!("spans and measurements per example: {seen:?}");
    // Each example that calls a tool made spans; each MCP one measured its requests.
    for name in [
        "quickstart",
        "agent_turn",
        "code_mode",
        "delegate",
        "durable",
        "idempotent_write",
        "large_toolset",
        "restate",
        "streaming",
        "mcp_server",
        "mcp_conformance",
        "mcp_conformance_client",
        "fleet_replica",
        "mcp_auth",
    ] {
        // (`durable`, `restate` and `mcp_auth` only where their servers are.)
        if let Some((spans, _)) = seen.get(name) {
            assert!(*spans > 0, "{name} made no span: {seen:?}");
        }
    }
    for name in [
        "mcp_server",
        "mcp_conformance",
        "mcp_conformance_client",
        "fleet_replica",
    ] {
        assert!(seen[name].1 > 0, "{name} recorded no measurement: {seen:?}");
    }
}
