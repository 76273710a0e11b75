//! What changed between two registries, and what each change means for a tool's version.
//!
//! A tool's input schema is what a model's calls must fit: a change that refuses a call the
//! old schema accepted (a removed parameter, a new required one, a narrower type, enum, range,
//! length or pattern) is breaking; one that accepts more (a new optional parameter, a wider
//! constraint) is a minor change; one that only says things differently (descriptions,
//! titles, examples) is a patch. Its output schema is read the other way round, by whoever
//! consumes the results: a value the old schema did not allow is breaking, one fewer is not.
//! What the tool may do (its effect, approval, scopes) is part of the contract too.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use super::record::{Policy, Registry, ToolRecord};

/// How much a change matters to those who depend on the tool, as semantic versioning counts
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Says the same thing differently: a patch release.
    Patch,
    /// Accepts or offers more, and breaks no one: a minor release.
    Minor,
    /// Refuses what was accepted, removes what was offered, or changes what the tool may do:
    /// a major release.
    Major,
}

impl Verdict {
    /// `"patch"`, `"minor"` or `"major"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Patch => "patch",
            Self::Minor => "minor",
            Self::Major => "major",
        }
    }
}

/// The kinds of change the registry tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// A tool was added.
    ToolAdded,
    /// A tool was removed.
    ToolRemoved,
    /// The description changed.
    DescriptionChanged,
    /// The title changed.
    TitleChanged,
    /// The effect (read, write, destructive) changed.
    EffectChanged,
    /// Approval was turned on or off.
    ApprovalChanged,
    /// A scope a caller needs was added.
    ScopeAdded,
    /// A scope was dropped.
    ScopeRemoved,
    /// The data classification changed.
    DataClassificationChanged,
    /// The tool now reaches, or no longer reaches, outside systems.
    OpenWorldChanged,
    /// A behaviour hint other than the effect's changed.
    AnnotationChanged,
    /// The timeout, attempts, concurrency, sequencing or fallback changed.
    PolicyChanged,
    /// Whether repeating a call is safe changed.
    IdempotencyChanged,
    /// The examples changed.
    ExamplesChanged,
    /// A parameter (or an output field) was added; optional for an input.
    PropertyAdded,
    /// A required input parameter was added.
    RequiredPropertyAdded,
    /// A parameter (or an output field) was removed.
    PropertyRemoved,
    /// An input parameter became required (or an output field may now be absent).
    BecameRequired,
    /// An input parameter became optional (or an output field is now always there).
    BecameOptional,
    /// The type was narrowed (e.g. number to integer).
    TypeNarrowed,
    /// The type was widened (e.g. integer to number).
    TypeWidened,
    /// The type changed to an unrelated one.
    TypeChanged,
    /// `null` is allowed now.
    NullAllowed,
    /// `null` is no longer allowed.
    NullRefused,
    /// Enum values were removed.
    EnumNarrowed,
    /// Enum values were added.
    EnumWidened,
    /// The constant value changed.
    ConstChanged,
    /// A bound (`minimum`, `maxLength`, `maxItems`, ...) was added or tightened.
    BoundTightened,
    /// A bound was loosened or removed.
    BoundLoosened,
    /// A pattern was added.
    PatternAdded,
    /// A pattern was removed.
    PatternRemoved,
    /// A pattern changed.
    PatternChanged,
    /// A format was added or changed.
    FormatTightened,
    /// A format was removed.
    FormatRemoved,
    /// Unknown keys are refused now (`additionalProperties: false`).
    ClosedObject,
    /// Unknown keys are accepted now.
    OpenedObject,
    /// The default value changed.
    DefaultChanged,
    /// A parameter's (or field's) description or title changed.
    DocumentationChanged,
    /// The tool now declares an output schema.
    OutputSchemaAdded,
    /// The tool no longer declares an output schema.
    OutputSchemaRemoved,
}

/// One difference between the committed registry and the toolbox.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// The tool.
    pub tool: String,
    /// Where: `input` or `output` and a JSON pointer into that schema, or the field of the
    /// tool's metadata (`description`, `risk.effect`, ...).
    pub path: String,
    /// What kind of change.
    pub kind: ChangeKind,
    /// What it means for the version.
    pub verdict: Verdict,
    /// The change in words: the old and the new value.
    pub detail: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({:?}): {}",
            self.verdict.as_str(),
            self.path,
            self.kind,
            self.detail
        )
    }
}

/// Every change from `old` to `new`, tool by tool in name order.
///
/// ```
/// use toolsmith::registry::{diff, Registry, Verdict};
/// #[toolsmith::tool(effect = "read", version = "1.0.0")]
/// /// The weather in a city now. Not for forecasts.
/// fn current_weather(
///     /// The city.
///     #[arg(length(max = 80))]
///     city: String,
/// ) -> String {
///     city
/// }
/// let before = Registry::of(&toolsmith::Toolbox::new().with(CurrentWeather));
/// let mut after = before.clone();
/// let record = after.tools.get_mut("current_weather").unwrap();
/// record.input_schema["properties"]["city"]["maxLength"] = 40.into();
/// let changes = diff::diff(&before, &after);
/// assert_eq!(changes[0].verdict, Verdict::Major, "{}", changes[0]);
/// ```
#[must_use]
pub fn diff(old: &Registry, new: &Registry) -> Vec<Change> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = old.tools.keys().chain(new.tools.keys()).collect();
    for name in names {
        match (old.tools.get(name), new.tools.get(name)) {
            (Some(a), Some(b)) => tool(a, b, &mut out),
            (None, Some(_)) => out.push(change(
                name,
                "",
                ChangeKind::ToolAdded,
                Verdict::Minor,
                "a new tool",
            )),
            (Some(_), None) => out.push(change(
                name,
                "",
                ChangeKind::ToolRemoved,
                Verdict::Major,
                "the tool is gone: calls of it fail",
            )),
            (None, None) => {}
        }
    }
    out
}

fn change(
    tool: &str,
    path: &str,
    kind: ChangeKind,
    verdict: Verdict,
    detail: impl Into<String>,
) -> Change {
    Change {
        tool: tool.to_owned(),
        path: path.to_owned(),
        kind,
        verdict,
        detail: detail.into(),
    }
}

fn shown<T: fmt::Debug>(value: &T) -> String {
    format!("{value:?}")
}

/// The changes to one tool.
fn tool(a: &ToolRecord, b: &ToolRecord, out: &mut Vec<Change>) {
    let name = &b.name;
    let mut push = |path: &str, kind, verdict, detail: String| {
        out.push(change(name, path, kind, verdict, detail));
    };
    let was = |x: &dyn fmt::Debug, y: &dyn fmt::Debug| format!("{x:?} → {y:?}");
    // The metadata compared as a whole: where, the old and new values, what kind of change,
    // and its verdict.
    let (ra, rb) = (&a.risk, &b.risk);
    let fields: [(&str, String, String, ChangeKind, Verdict); 5] = [
        (
            "title",
            shown(&a.title),
            shown(&b.title),
            ChangeKind::TitleChanged,
            Verdict::Patch,
        ),
        (
            "risk.effect",
            shown(&ra.effect),
            shown(&rb.effect),
            ChangeKind::EffectChanged,
            Verdict::Major,
        ),
        (
            "risk.requires_approval",
            shown(&ra.requires_approval),
            shown(&rb.requires_approval),
            ChangeKind::ApprovalChanged,
            Verdict::Major,
        ),
        (
            "risk.data_classification",
            shown(&ra.data_classification),
            shown(&rb.data_classification),
            ChangeKind::DataClassificationChanged,
            Verdict::Major,
        ),
        (
            "risk.open_world",
            shown(&ra.open_world),
            shown(&rb.open_world),
            ChangeKind::OpenWorldChanged,
            if rb.open_world {
                Verdict::Major
            } else {
                Verdict::Minor
            },
        ),
    ];
    if a.description != b.description {
        push(
            "description",
            ChangeKind::DescriptionChanged,
            Verdict::Patch,
            "reworded".to_owned(),
        );
    }
    for (path, old, new, kind, verdict) in fields {
        if old != new {
            push(path, kind, verdict, format!("{old} → {new}"));
        }
    }
    let scopes = [
        (
            &rb.scopes,
            &ra.scopes,
            ChangeKind::ScopeAdded,
            Verdict::Major,
            "callers now need",
        ),
        (
            &ra.scopes,
            &rb.scopes,
            ChangeKind::ScopeRemoved,
            Verdict::Minor,
            "callers no longer need",
        ),
    ];
    for (these, others, kind, verdict, what) in scopes {
        for scope in these.iter().filter(|s| !others.contains(s)) {
            push("risk.scopes", kind, verdict, format!("{what} `{scope}`"));
        }
    }
    let hints: BTreeSet<&String> = a
        .annotations
        .keys()
        .chain(b.annotations.keys())
        .filter(|k| !["openWorldHint", "idempotentHint"].contains(&k.as_str()))
        .collect();
    for hint in hints {
        if a.annotations.get(hint) != b.annotations.get(hint) {
            push(
                &format!("annotations.{hint}"),
                ChangeKind::AnnotationChanged,
                Verdict::Minor,
                was(&a.annotations.get(hint), &b.annotations.get(hint)),
            );
        }
    }
    if a.policy.idempotent != b.policy.idempotent {
        push(
            "policy.idempotent",
            ChangeKind::IdempotencyChanged,
            if b.policy.idempotent {
                Verdict::Minor
            } else {
                Verdict::Major
            },
            was(&a.policy.idempotent, &b.policy.idempotent),
        );
    }
    let runtime = |p: &Policy| {
        (
            p.timeout_ms,
            p.max_attempts,
            p.concurrency,
            p.sequential,
            p.fallback.clone(),
        )
    };
    if runtime(&a.policy) != runtime(&b.policy) {
        push(
            "policy",
            ChangeKind::PolicyChanged,
            Verdict::Patch,
            was(&runtime(&a.policy), &runtime(&b.policy)),
        );
    }
    if a.examples != b.examples {
        push(
            "examples",
            ChangeKind::ExamplesChanged,
            Verdict::Patch,
            format!("{} → {} examples", a.examples.len(), b.examples.len()),
        );
    }
    for (path, kind, verdict, detail) in schema_changes(a, b) {
        push(&path, kind, verdict, detail);
    }
}

/// What changed in a tool's input and output schemas: where, what kind of change, its
/// verdict and a detail.
fn schema_changes(a: &ToolRecord, b: &ToolRecord) -> Vec<(String, ChangeKind, Verdict, String)> {
    let mut schema_changes = Vec::new();
    Schemas {
        old_root: &a.input_schema,
        new_root: &b.input_schema,
        input: true,
        out: &mut schema_changes,
    }
    .node(&a.input_schema, &b.input_schema, "input:", 0);
    match (&a.output_schema, &b.output_schema) {
        (Some(x), Some(y)) => Schemas {
            old_root: x,
            new_root: y,
            input: false,
            out: &mut schema_changes,
        }
        .node(x, y, "output:", 0),
        (None, Some(_)) => schema_changes.push((
            "output".to_owned(),
            ChangeKind::OutputSchemaAdded,
            Verdict::Minor,
            "the tool declares its output".to_owned(),
        )),
        (Some(_), None) => schema_changes.push((
            "output".to_owned(),
            ChangeKind::OutputSchemaRemoved,
            Verdict::Major,
            "the tool no longer declares its output".to_owned(),
        )),
        (None, None) => {}
    }
    schema_changes
}

/// How deep two schemas are compared (a recursive type stops here).
const MAX_DEPTH: usize = 32;

/// One schema comparison: whose `$ref`s resolve where, and which way round it is read.
struct Schemas<'a> {
    old_root: &'a Value,
    new_root: &'a Value,
    /// An input schema (narrower is breaking), or an output schema (wider is breaking).
    input: bool,
    out: &'a mut Vec<(String, ChangeKind, Verdict, String)>,
}

impl Schemas<'_> {
    /// A narrowing: breaking for inputs, minor for outputs; a widening the other way round.
    fn narrowed(&mut self, path: &str, kind: ChangeKind, detail: String) {
        let verdict = if self.input {
            Verdict::Major
        } else {
            Verdict::Minor
        };
        self.out.push((path.to_owned(), kind, verdict, detail));
    }

    fn widened(&mut self, path: &str, kind: ChangeKind, detail: String) {
        let verdict = if self.input {
            Verdict::Minor
        } else {
            Verdict::Major
        };
        self.out.push((path.to_owned(), kind, verdict, detail));
    }

    fn push(&mut self, path: &str, kind: ChangeKind, verdict: Verdict, detail: String) {
        self.out.push((path.to_owned(), kind, verdict, detail));
    }

    fn node(&mut self, a: &Value, b: &Value, path: &str, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let (a, b) = (resolve(self.old_root, a), resolve(self.new_root, b));
        let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
            if a != b {
                self.push(
                    path,
                    ChangeKind::TypeChanged,
                    Verdict::Major,
                    "the schema changed".to_owned(),
                );
            }
            return;
        };
        // `Option<T>`: `anyOf: [T, {"type": "null"}]`, or `type: [T, "null"]`.
        let (a_inner, a_null) = nullable(a);
        let (b_inner, b_null) = nullable(b);
        match (a_null, b_null) {
            (false, true) => {
                self.widened(path, ChangeKind::NullAllowed, "null is accepted".to_owned())
            }
            (true, false) => {
                self.narrowed(path, ChangeKind::NullRefused, "null is refused".to_owned())
            }
            _ => {}
        }
        if !std::ptr::eq(a_inner, a) || !std::ptr::eq(b_inner, b) {
            // The annotations of an optional value sit on the outer node: compare them there,
            // then the schemas inside without them.
            self.documentation(a, b, path);
            self.default(a, b, path);
            let bare = |m: &Map<String, Value>| {
                let mut m = m.clone();
                for key in ["description", "title", "default"] {
                    m.shift_remove(key);
                }
                Value::Object(m)
            };
            return self.node(&bare(a_inner), &bare(b_inner), path, depth + 1);
        }
        self.documentation(a, b, path);
        self.default(a, b, path);
        self.types(a, b, path);
        self.enums(a, b, path);
        if a.get("const") != b.get("const") {
            self.push(
                path,
                ChangeKind::ConstChanged,
                Verdict::Major,
                format!("{:?} → {:?}", a.get("const"), b.get("const")),
            );
        }
        for key in [
            "minimum",
            "exclusiveMinimum",
            "minLength",
            "minItems",
            "minProperties",
        ] {
            self.bound(a, b, path, key, true);
        }
        for key in [
            "maximum",
            "exclusiveMaximum",
            "maxLength",
            "maxItems",
            "maxProperties",
        ] {
            self.bound(a, b, path, key, false);
        }
        match (a.get("multipleOf"), b.get("multipleOf")) {
            (x, y) if x == y => {}
            (_, None) => self.widened(
                path,
                ChangeKind::BoundLoosened,
                "multipleOf removed".to_owned(),
            ),
            (x, y) => self.narrowed(
                path,
                ChangeKind::BoundTightened,
                format!("multipleOf {x:?} → {y:?}"),
            ),
        }
        if a.get("uniqueItems") != b.get("uniqueItems") {
            if b.get("uniqueItems") == Some(&Value::Bool(true)) {
                self.narrowed(
                    path,
                    ChangeKind::BoundTightened,
                    "items must be unique".to_owned(),
                );
            } else {
                self.widened(
                    path,
                    ChangeKind::BoundLoosened,
                    "items may repeat".to_owned(),
                );
            }
        }
        match (a.get("pattern"), b.get("pattern")) {
            (x, y) if x == y => {}
            (None, Some(p)) => {
                self.narrowed(path, ChangeKind::PatternAdded, format!("must match {p}"))
            }
            (Some(p), None) => self.widened(
                path,
                ChangeKind::PatternRemoved,
                format!("need not match {p}"),
            ),
            (Some(x), Some(y)) => self.push(
                path,
                ChangeKind::PatternChanged,
                Verdict::Major,
                format!("{x} → {y}"),
            ),
            (None, None) => {}
        }
        match (a.get("format"), b.get("format")) {
            (x, y) if x == y => {}
            (Some(f), None) => self.widened(
                path,
                ChangeKind::FormatRemoved,
                format!("format {f} removed"),
            ),
            (x, y) => self.narrowed(
                path,
                ChangeKind::FormatTightened,
                format!("format {x:?} → {y:?}"),
            ),
        }
        self.object(a, b, path, depth);
        if let (Some(x), Some(y)) = (a.get("items"), b.get("items")) {
            self.node(x, y, &format!("{path}/items"), depth + 1);
        }
    }

    fn documentation(&mut self, a: &Map<String, Value>, b: &Map<String, Value>, path: &str) {
        for key in ["description", "title"] {
            if a.get(key) != b.get(key) {
                self.push(
                    path,
                    ChangeKind::DocumentationChanged,
                    Verdict::Patch,
                    format!("{key} reworded"),
                );
            }
        }
    }

    fn default(&mut self, a: &Map<String, Value>, b: &Map<String, Value>, path: &str) {
        if a.get("default") != b.get("default") {
            let detail = format!("{:?} → {:?}", a.get("default"), b.get("default"));
            self.push(path, ChangeKind::DefaultChanged, Verdict::Minor, detail);
        }
    }

    fn types(&mut self, a: &Map<String, Value>, b: &Map<String, Value>, path: &str) {
        let (x, y) = (types(a), types(b));
        if x == y || x.is_empty() && y.is_empty() {
            return;
        }
        let widen = |from: &BTreeSet<String>, to: &BTreeSet<String>| {
            !to.is_empty()
                && from
                    .iter()
                    .all(|t| to.contains(t) || (t == "integer" && to.contains("number")))
                || to.is_empty()
        };
        let detail = format!("type {x:?} → {y:?}");
        if widen(&x, &y) {
            self.widened(path, ChangeKind::TypeWidened, detail);
        } else if widen(&y, &x) {
            self.narrowed(path, ChangeKind::TypeNarrowed, detail);
        } else {
            self.push(path, ChangeKind::TypeChanged, Verdict::Major, detail);
        }
    }

    fn enums(&mut self, a: &Map<String, Value>, b: &Map<String, Value>, path: &str) {
        let values = |m: &Map<String, Value>| -> Option<Vec<Value>> {
            m.get("enum").and_then(Value::as_array).cloned()
        };
        match (values(a), values(b)) {
            (Some(x), Some(y)) => {
                let removed: Vec<&Value> = x.iter().filter(|v| !y.contains(v)).collect();
                let added: Vec<&Value> = y.iter().filter(|v| !x.contains(v)).collect();
                if !removed.is_empty() {
                    self.narrowed(
                        path,
                        ChangeKind::EnumNarrowed,
                        format!("no longer {removed:?}"),
                    );
                }
                if !added.is_empty() {
                    self.widened(path, ChangeKind::EnumWidened, format!("also {added:?}"));
                }
            }
            (None, Some(y)) => self.narrowed(path, ChangeKind::EnumNarrowed, format!("only {y:?}")),
            (Some(_), None) => self.widened(path, ChangeKind::EnumWidened, "any value".to_owned()),
            (None, None) => {}
        }
    }

    /// A lower bound (`lower`) is tightened when it rises; an upper one when it falls.
    fn bound(
        &mut self,
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        path: &str,
        key: &str,
        lower: bool,
    ) {
        let (x, y) = (
            a.get(key).and_then(Value::as_f64),
            b.get(key).and_then(Value::as_f64),
        );
        let tightened = match (x, y) {
            (Some(x), Some(y)) if (x - y).abs() > f64::EPSILON => (y > x) == lower,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            _ => return,
        };
        let detail = format!("{key} {} → {}", shown_bound(x), shown_bound(y));
        if tightened {
            self.narrowed(path, ChangeKind::BoundTightened, detail);
        } else {
            self.widened(path, ChangeKind::BoundLoosened, detail);
        }
    }

    fn object(&mut self, a: &Map<String, Value>, b: &Map<String, Value>, path: &str, depth: usize) {
        let props = |m: &Map<String, Value>| {
            m.get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let required = |m: &Map<String, Value>| -> BTreeSet<String> {
            m.get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        };
        let (pa, pb) = (props(a), props(b));
        let (ra, rb) = (required(a), required(b));
        for (name, x) in &pa {
            let at = format!("{path}/properties/{name}");
            match pb.get(name) {
                None if self.input => self.push(
                    &at,
                    ChangeKind::PropertyRemoved,
                    Verdict::Major,
                    "removed: calls that send it are refused".to_owned(),
                ),
                None => self.push(
                    &at,
                    ChangeKind::PropertyRemoved,
                    Verdict::Major,
                    "removed: results no longer have it".to_owned(),
                ),
                Some(y) => {
                    match (ra.contains(name), rb.contains(name)) {
                        (false, true) => self.narrowed(
                            &at,
                            ChangeKind::BecameRequired,
                            "now required".to_owned(),
                        ),
                        (true, false) => {
                            self.widened(&at, ChangeKind::BecameOptional, "now optional".to_owned())
                        }
                        _ => {}
                    }
                    self.node(x, y, &at, depth + 1);
                }
            }
        }
        for name in pb.keys().filter(|n| !pa.contains_key(*n)) {
            let at = format!("{path}/properties/{name}");
            if self.input && rb.contains(name) {
                self.push(
                    &at,
                    ChangeKind::RequiredPropertyAdded,
                    Verdict::Major,
                    "new and required: old calls lack it".to_owned(),
                );
            } else {
                self.push(
                    &at,
                    ChangeKind::PropertyAdded,
                    Verdict::Minor,
                    "new".to_owned(),
                );
            }
        }
        let closed =
            |m: &Map<String, Value>| m.get("additionalProperties") == Some(&Value::Bool(false));
        if m_has_object(a) || m_has_object(b) {
            match (closed(a), closed(b)) {
                (false, true) => self.narrowed(
                    path,
                    ChangeKind::ClosedObject,
                    "unknown keys are refused".to_owned(),
                ),
                (true, false) => self.widened(
                    path,
                    ChangeKind::OpenedObject,
                    "unknown keys are accepted".to_owned(),
                ),
                _ => {}
            }
        }
    }
}

fn m_has_object(m: &Map<String, Value>) -> bool {
    m.contains_key("properties") || types(m).contains("object")
}

fn shown_bound(x: Option<f64>) -> String {
    x.map_or_else(
        || "none".to_owned(),
        |x| shown(&x).trim_end_matches(".0").to_owned(),
    )
}

/// A node's `$ref` (`#/$defs/...` or `#/definitions/...`) resolved in `root`.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    let mut node = node;
    for _ in 0..MAX_DEPTH {
        let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
            return node;
        };
        match reference.strip_prefix('#').and_then(|p| root.pointer(p)) {
            Some(target) => node = target,
            None => return node,
        }
    }
    node
}

/// The schema without its `null` alternative, and whether it had one.
fn nullable(m: &Map<String, Value>) -> (&Map<String, Value>, bool) {
    if let Some(branches) = m
        .get("anyOf")
        .or_else(|| m.get("oneOf"))
        .and_then(Value::as_array)
        && branches.len() == 2
    {
        let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
        if let Some(other) = branches.iter().find(|v| !is_null(v))
            && branches.iter().any(is_null)
            && let Some(inner) = other.as_object()
        {
            return (inner, true);
        }
    }
    let null_in_type = m
        .get("type")
        .and_then(Value::as_array)
        .is_some_and(|t| t.iter().any(|v| v == "null"));
    (m, null_in_type)
}

/// The types a node allows, `null` left out (it is compared on its own).
fn types(m: &Map<String, Value>) -> BTreeSet<String> {
    match m.get("type") {
        Some(Value::String(t)) if t != "null" => BTreeSet::from([t.clone()]),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .map(str::to_owned)
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// The least release `changes` need: the largest verdict among them (`None`: no change).
#[must_use]
pub fn required_bump<'a>(changes: impl IntoIterator<Item = &'a Change>) -> Option<Verdict> {
    changes.into_iter().map(|c| c.verdict).max()
}

/// The release a version change makes, as Cargo reads semantic versions: for `1.y.z` and up
/// the first number is major and the second minor; for `0.y.z` the second is major and the
/// third minor; for `0.0.z` the third is major. `None` when the version did not rise.
///
/// ```
/// use toolsmith::registry::{diff::bump, Verdict};
/// assert_eq!(bump("1.4.2", "2.0.0"), Some(Verdict::Major));
/// assert_eq!(bump("1.4.2", "1.5.0"), Some(Verdict::Minor));
/// assert_eq!(bump("0.3.1", "0.4.0"), Some(Verdict::Major));
/// assert_eq!(bump("0.3.1", "0.3.2"), Some(Verdict::Minor));
/// assert_eq!(bump("1.4.2", "1.4.2"), None);
/// ```
#[must_use]
pub fn bump(old: &str, new: &str) -> Option<Verdict> {
    let (a, b) = (
        semver::Version::parse(old).ok()?,
        semver::Version::parse(new).ok()?,
    );
    if b <= a {
        return None;
    }
    Some(if b.major != a.major {
        Verdict::Major
    } else if a.major > 0 {
        if b.minor != a.minor {
            Verdict::Minor
        } else {
            Verdict::Patch
        }
    } else if b.minor != a.minor {
        Verdict::Major
    } else if a.minor > 0 {
        Verdict::Minor
    } else {
        Verdict::Major
    })
}

/// Whether `new`'s version rose as far as `changes` (from `old`) require.
///
/// # Errors
///
/// What is wrong, in words: a version that is not semantic, one that did not rise far
/// enough, or none declared for a tool with minor or breaking changes.
pub fn check_version(
    old: &ToolRecord,
    new: &ToolRecord,
    changes: &[&Change],
) -> Result<(), String> {
    let Some(needed) = required_bump(changes.iter().copied()) else {
        return Ok(());
    };
    let worst = changes
        .iter()
        .find(|c| c.verdict == needed)
        .map(|c| format!("{} ({:?})", c.path, c.kind))
        .unwrap_or_default();
    let (Some(from), Some(to)) = (&old.version, &new.version) else {
        return if needed == Verdict::Patch {
            Ok(())
        } else {
            Err(format!(
                "a {} change ({worst}) to a tool that declares no version: add `#[tool(version = \"...\")]`",
                needed.as_str()
            ))
        };
    };
    if semver::Version::parse(to).is_err() {
        return Err(format!("`{to}` is not a semantic version"));
    }
    match bump(from, to) {
        Some(made) if made >= needed => Ok(()),
        made => Err(format!(
            "a {} change ({worst}) needs a {} release, but the version went {from} → {to}{}",
            needed.as_str(),
            needed.as_str(),
            made.map(|m| format!(" (a {} release)", m.as_str()))
                .unwrap_or_default()
        )),
    }
}
