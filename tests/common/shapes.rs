//! Tool shapes shared by the differential, provider, oracle and snapshot tests: one tool per
//! schema shape, and a toolbox of them all.
#![allow(dead_code)] // the shapes exist for their schemas; the tools do not read their fields

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;

use toolsmith::{Toolbox, tool};

// ---------------------------------------------------------------------------------------------
// Shapes

/// Flat scalars.
#[tool(
    effect = "read",
    allow(description_scope, tool_name, unbounded_string),
    example = r#"{"name": "a", "count": 1, "enabled": true, "ratio": 0.5}"#
)]
pub async fn flat(
    /// A string.
    name: String,
    /// An integer.
    count: i64,
    /// A flag.
    enabled: bool,
    /// A float.
    ratio: f64,
) {
    let _ = (name, count, enabled, ratio);
}

/// A recent time window.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[derive(serde::Serialize)]
pub enum Window {
    D1,
    W1,
    M1,
}

/// The README's search tool.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn search(
    /// Keywords.
    #[arg(length(min = 2, max = 30))]
    query: String,
    /// How many.
    #[arg(range(min = 1, max = 10), default = 5)]
    num_results: u8,
    /// Window.
    date_restrict: Option<Window>,
) {
    let _ = (query, num_results, date_restrict.is_some());
}

/// Unit enum whose variants have docs (schemars writes `oneOf` of `const`).
#[derive(Deserialize, JsonSchema)]
pub enum Priority {
    /// Can wait.
    Low,
    /// Today.
    High,
}

/// Documented enum variants.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn prioritize(
    /// The priority.
    priority: Priority,
    /// Optional second priority.
    fallback: Option<Priority>,
) {
    let _ = (priority, fallback);
}

/// A strict nested object.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Location {
    city: String,
    zip: Option<u32>,
}

/// Nested strict struct.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn locate(
    /// Where.
    location: Location,
    /// Optional second place.
    other: Option<Location>,
) {
    let _ = (location, other);
}

/// A lenient nested object with defaults.
#[derive(Deserialize, JsonSchema)]
pub struct Options {
    #[serde(default)]
    verbose: bool,
    #[serde(default = "default_depth")]
    depth: u16,
    label: Option<String>,
}

pub fn default_depth() -> u16 {
    3
}

/// Nested lenient struct.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn configure(
    /// The options.
    options: Options,
) {
    let _ = options;
}

/// A nested object whose fields carry schemars constraints serde does not enforce.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ticket {
    #[schemars(length(min = 3, max = 12))]
    title: String,
    #[schemars(range(min = 1, max = 5))]
    severity: u8,
    #[schemars(regex(pattern = r"^[A-Z]{2}-\d+$"))]
    reference: Option<String>,
}

/// Constraints inside a user type.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn file_ticket(
    /// The ticket.
    ticket: Ticket,
) {
    let _ = ticket;
}

/// Lists with bounds.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn tag(
    /// Tags.
    #[arg(length(min = 1, max = 3))]
    tags: Vec<String>,
    /// Scores.
    scores: Vec<u8>,
) {
    let _ = (tags, scores);
}

/// A list of objects.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn route(
    /// Stops.
    #[arg(length(max = 4))]
    stops: Vec<Location>,
) {
    let _ = stops;
}

/// A map.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn count_words(
    /// Word counts.
    counts: HashMap<String, i64>,
    /// Labels.
    labels: BTreeMap<String, String>,
) {
    let _ = (counts, labels);
}

/// A tuple (on purpose: the exports' errors for it are tested).
#[tool(
    effect = "read",
    allow(description_scope, tool_name, unbounded_string, provider_incompatible)
)]
pub async fn pair(
    /// A pair.
    pair: (i32, String),
    /// A fixed array.
    rgb: [u8; 3],
) {
    let _ = (pair, rgb);
}

/// Externally tagged data enum.
#[derive(Deserialize, JsonSchema)]
pub enum Shape {
    Empty,
    Circle(f64),
    Rect { w: u8, h: u8 },
}

/// Externally tagged enum.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn draw(
    /// The shape.
    shape: Shape,
    /// More shapes.
    more: Vec<Shape>,
) {
    let _ = (shape, more);
}

/// Internally tagged enum.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Action {
    Stop,
    Move { x: i32, y: i32 },
}

/// Internally tagged.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn act(
    /// The action.
    action: Action,
) {
    let _ = action;
}

/// Untagged enum.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IdOrName {
    Id(u32),
    Name(String),
    Point(Location),
}

/// Untagged.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn lookup(
    /// Who.
    who: IdOrName,
) {
    let _ = who;
}

/// Adjacently tagged enum.
#[derive(Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
pub enum Event {
    Ping,
    Data(String),
}

/// Adjacently tagged.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn emit(
    /// The event.
    event: Event,
) {
    let _ = event;
}

/// A recursive type.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tree {
    value: i32,
    children: Vec<Tree>,
}

/// Recursion.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn walk(
    /// The tree.
    tree: Tree,
) {
    let _ = tree;
}

/// No arguments.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn ping() -> &'static str {
    "pong"
}

/// Every integer width.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub fn widths(
    /// u8
    a: u8,
    /// i8
    b: i8,
    /// u16
    c: u16,
    /// i32
    d: i32,
    /// u32
    e: u32,
    /// i64
    f: i64,
    /// u64
    g: u64,
) {
    let _ = (a, b, c, d, e, f, g);
}

/// Text formats.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn contact(
    /// A code.
    #[arg(pattern = r"^[a-z]{3}\d?$")]
    code: String,
    /// An email.
    #[arg(email)]
    email: Option<String>,
    /// A URL.
    #[arg(url)]
    homepage: Option<String>,
) {
    let _ = (code, email, homepage);
}

/// Optional values with constraints.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn optional(
    /// A nickname.
    #[arg(length(min = 2, max = 5))]
    nickname: Option<String>,
    /// A level.
    #[arg(range(exclusive_min = 0, max = 9))]
    level: Option<u8>,
    /// A ratio.
    #[arg(range(exclusive_min = -1.5, exclusive_max = 2.5))]
    ratio: Option<f64>,
) {
    let _ = (nickname, level, ratio);
}

/// Renamed parameters and defaults.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub fn rename(
    /// The query.
    #[arg(rename = "q", length(max = 8))]
    query: String,
    /// The language.
    #[arg(default = "en", length(min = 2, max = 2))]
    lang: String,
    /// The page.
    #[arg(default = 1, range(min = 1))]
    page: u32,
) {
    let _ = (query, lang, page);
}

/// A newtype.
#[derive(Deserialize, JsonSchema)]
pub struct Meters(f64);

/// Boxes, chars and newtypes.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn misc(
    /// A boxed location.
    boxed: Box<Location>,
    /// A character.
    initial: char,
    /// A distance.
    distance: Meters,
    /// Bytes.
    bytes: Option<Vec<u8>>,
) {
    let _ = (boxed, initial, distance.0, bytes);
}

/// Nested options and unit.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn nested_options(
    /// Maybe a list of maybe numbers.
    values: Option<Vec<Option<i16>>>,
    /// Nothing.
    nothing: (),
) {
    let _ = (values, nothing);
}

/// A level written as an integer (what `serde_repr` produces), with a hand-written schema.
#[derive(Clone, Copy, Debug)]
pub enum Level {
    Low = 1,
    Mid = 2,
    High = 3,
}

impl<'de> Deserialize<'de> for Level {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match u8::deserialize(d)? {
            1 => Ok(Self::Low),
            2 => Ok(Self::Mid),
            3 => Ok(Self::High),
            n => Err(serde::de::Error::custom(format!("no level {n}"))),
        }
    }
}

impl JsonSchema for Level {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Level".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "integer", "enum": [1, 2, 3]})
    }
}

/// An integer enum.
#[tool(effect = "read", allow(description_scope, tool_name, unbounded_string))]
pub async fn set_level(
    /// The level.
    level: Level,
    /// An optional second level.
    backup: Option<Level>,
) {
    let _ = (level, backup);
}

/// A weather report.
#[derive(serde::Serialize, JsonSchema)]
pub struct Report {
    /// Degrees Celsius.
    pub celsius: f64,
    /// Sky.
    pub sky: Window,
}

/// Returns structured data.
#[tool(
    title = "Weather forecast",
    read_only,
    open_world = false,
    effect = "read",
    allow(description_scope, tool_name, unbounded_string)
)]
pub async fn forecast(
    /// The city.
    #[arg(length(min = 1, max = 50))]
    city: String,
) -> Result<Report, toolsmith::ToolError> {
    let _ = city;
    Ok(Report {
        celsius: 21.5,
        sky: Window::W1,
    })
}

pub fn toolbox() -> Toolbox {
    Toolbox::new()
        .with(Flat)
        .with(Search)
        .with(Prioritize)
        .with(Locate)
        .with(Configure)
        .with(FileTicket)
        .with(Tag)
        .with(Route)
        .with(CountWords)
        .with(Pair)
        .with(Draw)
        .with(Act)
        .with(Lookup)
        .with(Emit)
        .with(Walk)
        .with(Ping)
        .with(Widths)
        .with(Contact)
        .with(Optional)
        .with(Rename)
        .with(Misc)
        .with(NestedOptions)
        .with(SetLevel)
        .with(Forecast)
}
