//! Tools as a program sees them: each tool a typed function signature, generated from its
//! input schema and its output schema, with its descriptions as the docstring. A model that
//! writes a program against these signatures knows the shape of each result instead of
//! guessing it.
//!
//! The signatures are Python (the language sandboxed interpreters such as Monty run, and the
//! one models write most readily): keyword-only parameters, `TypedDict` classes for objects
//! with named fields, `Literal` for enums, `X | None` for what may be absent, and `Any` only
//! where a schema says nothing. [`Signature::untyped`] lists where `Any` was written, so an
//! application can tell a typed tool from one whose result the model must guess.
//!
//! ```
//! use toolsmith::code::Signature;
//! use toolsmith::{tool, Tool};
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Forecast {
//!     /// Degrees Celsius.
//!     temp_c: f64,
//!     /// Rain expected.
//!     rain: bool,
//! }
//!
//! /// Gets the weather in a city. Read-only. Not for past weather.
//! #[tool(effect = "read")]
//! fn get_weather(
//!     /// The city.
//!     #[arg(length(min = 1, max = 60))]
//!     city: String,
//!     /// How many days ahead, 0 for today.
//!     #[arg(range(max = 7))]
//!     days: Option<u8>,
//! ) -> Forecast {
//!     Forecast { temp_c: 21.0, rain: false }
//! }
//!
//! let signature = Signature::python(GetWeather.definition());
//! assert!(signature.is_typed(), "{:?}", signature.untyped());
//! let text = signature.text();
//! assert!(text.contains("def get_weather(*, city: str, days: int | None = None) -> GetWeatherResult:"), "{text}");
//! assert!(text.contains("class GetWeatherResult(TypedDict):\n    temp_c: float\n    \"\"\"Degrees Celsius.\"\"\""), "{text}");
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::definition::ToolDefinition;

/// What the signatures need above them: postponed annotations (a class may name one written
/// after it) and the names they use from `typing`.
pub const PRELUDE: &str = "from __future__ import annotations\nfrom typing import Any, Literal, NoReturn, NotRequired, TypedDict\n";

/// A tool as a typed Python function: the classes its parameters and result use, then the
/// function with its docstring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    name: String,
    text: String,
    untyped: Vec<String>,
}

impl Signature {
    /// The signature of `definition`, from its input schema and its output schema (for a
    /// `#[tool]` function, its return type's; a tool with none returns `Any`).
    #[must_use]
    pub fn python(definition: &ToolDefinition) -> Self {
        let name = identifier(definition.name());
        let mut writer = Writer::new();
        let input = definition.input_schema();
        writer.defs = defs_of(input);
        let required: Vec<&str> = input
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut params = Vec::new();
        let mut docs = Vec::new();
        let properties = input.get("properties").and_then(Value::as_object);
        for (field, schema) in properties.into_iter().flatten() {
            let pointer = format!("/properties/{field}");
            let hint = format!("{}{}", camel(&name), camel(field));
            let ty = writer.type_of(schema, &hint, &pointer);
            let param = identifier(field);
            if required.contains(&field.as_str()) {
                params.push(format!("{param}: {ty}"));
            } else {
                params.push(format!("{param}: {} = None", optional(&ty)));
            }
            if let Some(text) = description(schema, &writer.defs) {
                docs.push((param, text));
            }
        }
        let returns = match definition.output_schema() {
            Some(output) => {
                writer.defs = defs_of(output);
                writer.type_of(output, &format!("{}Result", camel(&name)), "output")
            }
            None => writer.any("output"),
        };
        let mut text = String::new();
        for class in &writer.classes {
            text.push_str(class);
            text.push_str("\n\n");
        }
        let params = if params.is_empty() {
            String::new()
        } else {
            format!("*, {}", params.join(", "))
        };
        let _ = writeln!(text, "def {name}({params}) -> {returns}:");
        text.push_str("    \"\"\"");
        text.push_str(&docstring(definition.description()));
        if !docs.is_empty() {
            text.push_str("\n\n    Args:");
            for (param, doc) in &docs {
                let _ = write!(text, "\n        {param}: {}", docstring(doc));
            }
        }
        text.push_str("\n    \"\"\"");
        Self {
            name,
            text,
            untyped: writer.untyped,
        }
    }

    /// The function's name in a program: the tool's name, with any character Python does not
    /// take in a name as `_`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The classes and the function, as Python source.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the signature says `Any` because the schema says nothing of a value's shape:
    /// `/properties/<name>...` in the input, `output` (and below it) in the result.
    #[must_use]
    pub fn untyped(&self) -> &[String] {
        &self.untyped
    }

    /// Whether nothing in the signature is `Any`.
    #[must_use]
    pub fn is_typed(&self) -> bool {
        self.untyped.is_empty()
    }
}

/// Writes the types of one signature, and the classes they need.
struct Writer {
    defs: BTreeMap<String, Value>,
    classes: Vec<String>,
    named: BTreeMap<String, String>,
    untyped: Vec<String>,
    depth: usize,
}

/// How deep a type is written before it is `Any` (a schema that refers to itself).
const MAX_DEPTH: usize = 24;

impl Writer {
    fn new() -> Self {
        Self {
            defs: BTreeMap::new(),
            classes: Vec::new(),
            named: BTreeMap::new(),
            untyped: Vec::new(),
            depth: 0,
        }
    }

    fn any(&mut self, pointer: &str) -> String {
        self.untyped.push(pointer.to_owned());
        "Any".to_owned()
    }

    /// The Python type of `schema`; a class made for an object is named `hint`.
    fn type_of(&mut self, schema: &Value, hint: &str, pointer: &str) -> String {
        if self.depth >= MAX_DEPTH {
            return self.any(pointer);
        }
        self.depth += 1;
        let ty = self.type_inner(schema, hint, pointer);
        self.depth -= 1;
        ty
    }

    fn type_inner(&mut self, schema: &Value, hint: &str, pointer: &str) -> String {
        let Some(object) = schema.as_object() else {
            // `true` (anything) or `false` (nothing can match).
            return if schema == &Value::Bool(false) {
                "NoReturn".to_owned()
            } else {
                self.any(pointer)
            };
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let name = reference.rsplit('/').next().unwrap_or(reference);
            // Each definition is written once, however often it is named: a schema whose
            // definitions name each other many times costs its size, not the number of paths.
            if let Some(known) = self.named.get(name) {
                return if known == "Any" {
                    self.any(pointer)
                } else {
                    known.clone()
                };
            }
            let Some(target) = self.defs.get(name).cloned() else {
                return self.any(pointer);
            };
            let class = identifier(name);
            // Named before it is written, so a type that refers to itself stops here: a class
            // by its name, anything else as `Any`.
            let placeholder = if is_record(&target) {
                quoted(&class)
            } else {
                "Any".to_owned()
            };
            self.named.insert(name.to_owned(), placeholder);
            let ty = self.type_of(&target, &class, pointer);
            self.named.insert(name.to_owned(), ty.clone());
            return ty;
        }
        if let Some(value) = object.get("const") {
            return format!("Literal[{}]", literal(value));
        }
        if let Some(values) = object.get("enum").and_then(Value::as_array) {
            let mut literals: Vec<String> = Vec::new();
            let mut nullable = false;
            for value in values {
                if value.is_null() {
                    nullable = true;
                } else {
                    literals.push(literal(value));
                }
            }
            let ty = if literals.is_empty() {
                "None".to_owned()
            } else {
                format!("Literal[{}]", literals.join(", "))
            };
            return if nullable && !literals.is_empty() {
                optional(&ty)
            } else {
                ty
            };
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = object.get(key).and_then(Value::as_array) {
                let mut types = Vec::new();
                for (i, option) in options.iter().enumerate() {
                    let ty = self.type_of(
                        option,
                        &format!("{hint}{}", i + 1),
                        &format!("{pointer}/{key}/{i}"),
                    );
                    push_union(&mut types, ty);
                }
                return union(types);
            }
        }
        if let Some(parts) = object.get("allOf").and_then(Value::as_array)
            && parts.len() == 1
        {
            return self.type_of(&parts[0], hint, &format!("{pointer}/allOf/0"));
        }
        match object.get("type") {
            Some(Value::String(kind)) => self.of_kind(kind, object, hint, pointer),
            Some(Value::Array(kinds)) => {
                let mut types = Vec::new();
                for kind in kinds.iter().filter_map(Value::as_str) {
                    let ty = self.of_kind(kind, object, hint, pointer);
                    push_union(&mut types, ty);
                }
                union(types)
            }
            _ if object.contains_key("properties") => self.of_kind("object", object, hint, pointer),
            _ if object.contains_key("items") => self.of_kind("array", object, hint, pointer),
            _ => self.any(pointer),
        }
    }

    fn of_kind(
        &mut self,
        kind: &str,
        object: &serde_json::Map<String, Value>,
        hint: &str,
        pointer: &str,
    ) -> String {
        match kind {
            "string" => "str".to_owned(),
            "integer" => "int".to_owned(),
            "number" => "float".to_owned(),
            "boolean" => "bool".to_owned(),
            "null" => "None".to_owned(),
            "array" => {
                if let Some(items) = object.get("prefixItems").and_then(Value::as_array) {
                    let types: Vec<String> = items
                        .iter()
                        .enumerate()
                        .map(|(i, item)| {
                            self.type_of(
                                item,
                                &format!("{hint}{}", i + 1),
                                &format!("{pointer}/prefixItems/{i}"),
                            )
                        })
                        .collect();
                    return format!("tuple[{}]", types.join(", "));
                }
                let item = match object.get("items") {
                    Some(items) => {
                        self.type_of(items, &format!("{hint}Item"), &format!("{pointer}/items"))
                    }
                    None => self.any(&format!("{pointer}/items")),
                };
                format!("list[{item}]")
            }
            "object" => self.object(object, hint, pointer),
            _ => self.any(pointer),
        }
    }

    /// A `TypedDict` for an object with named fields; `dict[str, T]` for a map.
    fn object(
        &mut self,
        object: &serde_json::Map<String, Value>,
        hint: &str,
        pointer: &str,
    ) -> String {
        let properties = object.get("properties").and_then(Value::as_object);
        let Some(properties) = properties.filter(|p| !p.is_empty()) else {
            let value = match object.get("additionalProperties") {
                Some(Value::Object(values)) => self.type_of(
                    &Value::Object(values.clone()),
                    &format!("{hint}Value"),
                    &format!("{pointer}/additionalProperties"),
                ),
                _ => self.any(&format!("{pointer}/additionalProperties")),
            };
            return format!("dict[str, {value}]");
        };
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let named = object
            .get("title")
            .and_then(Value::as_str)
            .map_or_else(|| identifier(hint), identifier);
        let class = unique(&self.classes, &named);
        // Fields that are not Python names make the class's functional form.
        let functional = properties.keys().any(|k| identifier(k) != *k);
        let mut fields = Vec::new();
        for (field, schema) in properties {
            let ty = self.type_of(
                schema,
                &format!("{class}{}", camel(field)),
                &format!("{pointer}/properties/{field}"),
            );
            let ty = if required.contains(&field.as_str()) {
                ty
            } else {
                format!("NotRequired[{ty}]")
            };
            fields.push((field.clone(), ty, description(schema, &self.defs)));
        }
        let mut text = String::new();
        if functional {
            let _ = write!(text, "{class} = TypedDict(\"{class}\", {{");
            let listed: Vec<String> = fields
                .iter()
                .map(|(field, ty, _)| format!("{}: {ty}", literal(&Value::String(field.clone()))))
                .collect();
            text.push_str(&listed.join(", "));
            text.push_str("})");
        } else {
            let _ = write!(text, "class {class}(TypedDict):");
            if let Some(doc) = object.get("description").and_then(Value::as_str) {
                let _ = write!(text, "\n    \"\"\"{}\"\"\"", docstring(doc));
            }
            for (field, ty, doc) in &fields {
                let _ = write!(text, "\n    {field}: {ty}");
                if let Some(doc) = doc {
                    let _ = write!(text, "\n    \"\"\"{}\"\"\"", docstring(doc));
                }
            }
        }
        self.classes.push(text);
        class
    }
}

/// Whether `schema` is an object with named fields (written as a class).
fn is_record(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
}

/// The `$defs` (or `definitions`) of a schema's root.
fn defs_of(root: &Value) -> BTreeMap<String, Value> {
    ["$defs", "definitions"]
        .iter()
        .filter_map(|key| root.get(*key).and_then(Value::as_object))
        .flat_map(|defs| defs.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect()
}

/// A schema's description, through a `$ref` when it has none of its own.
fn description(schema: &Value, defs: &BTreeMap<String, Value>) -> Option<String> {
    if let Some(text) = schema.get("description").and_then(Value::as_str) {
        return Some(text.to_owned());
    }
    let name = schema.get("$ref")?.as_str()?.rsplit('/').next()?;
    defs.get(name)?
        .get("description")?
        .as_str()
        .map(str::to_owned)
}

/// `ty`, or `None`.
fn optional(ty: &str) -> String {
    if ty == "Any" || ty == "None" || ty.ends_with("| None") {
        ty.to_owned()
    } else {
        format!("{ty} | None")
    }
}

fn push_union(types: &mut Vec<String>, ty: String) {
    for part in ty.split(" | ") {
        if !types.iter().any(|t| t == part) {
            types.push(part.to_owned());
        }
    }
}

/// The union of `types`, its literals as one `Literal[...]`, `None` last; `Any` swallows the
/// rest.
fn union(types: Vec<String>) -> String {
    if types.iter().any(|t| t == "Any") {
        return "Any".to_owned();
    }
    let mut literals: Vec<&str> = Vec::new();
    let mut others: Vec<String> = Vec::new();
    for ty in &types {
        match ty
            .strip_prefix("Literal[")
            .and_then(|t| t.strip_suffix(']'))
        {
            Some(values) => literals.push(values),
            None => others.push(ty.clone()),
        }
    }
    let mut types = Vec::new();
    if !literals.is_empty() {
        types.push(format!("Literal[{}]", literals.join(", ")));
    }
    types.extend(others);
    if let Some(i) = types.iter().position(|t| t == "None") {
        let none = types.remove(i);
        types.push(none);
    }
    if types.is_empty() {
        return "Any".to_owned();
    }
    types.join(" | ")
}

/// A JSON value as a Python literal.
fn literal(value: &Value) -> String {
    match value {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        // JSON's string escapes are Python's, for what a schema holds.
        other => other.to_string(),
    }
}

/// A name as a Python identifier: characters outside `[A-Za-z0-9_]` as `_`, a leading digit
/// or a keyword given a trailing `_`.
fn identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// `snake_case` or `dotted.name` as `CamelCase`.
fn camel(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// A reference to a class not written yet (a type that refers to itself): its name, which
/// the [`PRELUDE`]'s postponed annotations let stand before the class.
fn quoted(class: &str) -> String {
    class.to_owned()
}

/// `class`, or `class2`, `class3`… when a class of that name was written already.
fn unique(classes: &[String], class: &str) -> String {
    let taken = |name: &str| {
        classes.iter().any(|c| {
            c.starts_with(&format!("class {name}(")) || c.starts_with(&format!("{name} = "))
        })
    };
    if !taken(class) {
        return class.to_owned();
    }
    (2..)
        .map(|n| format!("{class}{n}"))
        .find(|name| !taken(name))
        .unwrap_or_else(|| class.to_owned())
}

/// Text safe inside a `"""` docstring, its lines indented as the docstring's.
fn docstring(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"")
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n    ")
        .replace("\n    \n", "\n\n")
}
