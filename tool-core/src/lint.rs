//! Schema lints on resolved definitions: what `#[tool]` cannot see in tokens (the shape of a
//! parameter's own type, text from `include_str!`, provider limits), with the same lint names
//! and messages as the compile-time lints.

use std::fmt;

use serde_json::Value;

use crate::definition::ToolDefinition;
use crate::provider::Dialect;

pub(crate) use toolsmith_lint_rules as rules;

pub use rules::Level as LintLevel;

/// One lint finding of [`Toolbox::lint`](crate::Toolbox::lint).
///
/// ```
/// use toolsmith::{tool, Toolbox};
///
/// /// Looks up the weather. Read-only. Not for forecasts beyond a week.
/// #[tool(effect = "read", allow(unbounded_string))]
/// async fn get_weather(
///     /// The city.
///     city: String,
/// ) -> String {
///     city
/// }
///
/// let findings = Toolbox::new().with(GetWeather).lint();
/// assert!(findings.is_empty(), "{findings:#?}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LintFinding {
    /// The lint's name, as written in `allow(...)`.
    pub lint: &'static str,
    /// Its level for this tool.
    pub level: LintLevel,
    /// The tool's name.
    pub tool: String,
    /// JSON pointer into the tool's input schema (empty for the tool itself).
    pub path: String,
    /// What is wrong, why it matters to a model, and what to write instead.
    pub message: String,
}

impl fmt::Display for LintFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: tool `{}`", self.level.name(), self.tool)?;
        if !self.path.is_empty() {
            write!(f, " at {}", self.path)?;
        }
        write!(f, ": {}{}", self.message, rules::note(self.lint))
    }
}

struct Linter<'d> {
    def: &'d ToolDefinition,
    out: Vec<LintFinding>,
}

impl Linter<'_> {
    fn push(&mut self, lint: &'static str, path: &str, message: String) {
        let param = path
            .strip_prefix("/properties/")
            .map(|rest| rest.split('/').next().unwrap_or(rest));
        let level = self.def.lint_level(lint, param);
        if level != LintLevel::Allow {
            self.out.push(LintFinding {
                lint,
                level,
                tool: self.def.name().to_owned(),
                path: path.to_owned(),
                message,
            });
        }
    }
}

/// Every finding for one tool.
pub(crate) fn tool(def: &ToolDefinition) -> Vec<LintFinding> {
    let mut l = Linter {
        def,
        out: Vec::new(),
    };
    let name = def.name();
    if let Some(message) = rules::check_tool_name(name) {
        l.push(rules::TOOL_NAME, "", message);
    }
    let description = def.description();
    if description.trim().is_empty() {
        l.push(rules::MISSING_DOCS, "", format!(
            "tool `{name}` has no description; the model reads it to decide when to call the tool: write what it does, when to use it and when not to"
        ));
    } else {
        let what = format!("the description of `{name}`");
        for (lint, found) in [
            (
                rules::DESCRIPTION_LENGTH,
                rules::check_description_length(name, description),
            ),
            (
                rules::DESCRIPTION_SCOPE,
                rules::check_description_scope(
                    name,
                    description,
                    def.effect().map(crate::spec::Effect::as_str),
                ),
            ),
            (
                rules::DESCRIPTION_INJECTION,
                rules::check_injection(&what, description),
            ),
            (
                rules::SECRET_IN_DESCRIPTION,
                rules::check_secret(&what, description),
            ),
            (
                rules::VOLATILE_DESCRIPTION,
                // A doc comment cannot change between requests: only text built at run time.
                if def.fixed_text() {
                    None
                } else {
                    rules::check_volatile(&what, description)
                },
            ),
        ] {
            if let Some(message) = found {
                l.push(lint, "", message);
            }
        }
    }
    match def.effect() {
        None => l.push(rules::MISSING_EFFECT, "", format!(
            "tool `{name}` declares no effect; approval and retry policies need to know whether it reads or writes: add `#[tool(effect = \"read\")]`, `\"write\"` or `\"destructive\"`"
        )),
        Some(effect) => {
            // Declared destructive, calls wait for approval at run time: gated already.
            let gated = effect == crate::spec::Effect::Destructive || def.requires_approval();
            if rules::is_destructive_name(name) && !gated && !has_environment(def.input_schema()) {
                l.push(rules::DESTRUCTIVE_WITHOUT_ENVIRONMENT, "", format!(
                    "`{name}` is named like a destructive or bulk action, yet calls run without a person's approval: declare `#[tool(effect = \"destructive\")]` (its calls then wait for approval), `#[tool(requires_approval)]`, or an `environment` parameter whose enum lists `staging` and `production`"
                ));
            }
        }
    }
    examples(&mut l);
    let schema = def.input_schema();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (prop, node) in props {
            if node
                .get("description")
                .is_none_or(|d| d.as_str().is_some_and(|d| d.trim().is_empty()))
            {
                l.push(rules::MISSING_DOCS, &format!("/properties/{prop}"), format!(
                    "missing description on parameter `{prop}`; the model reads it to fill in the value"
                ));
            }
        }
    }
    walk(&mut l, schema, "", None);
    if def.output_schema().is_some_and(|out| {
        out.get("type").and_then(Value::as_str) == Some("array") && out.get("maxItems").is_none()
    }) && !has_limit(schema)
    {
        l.push(
            rules::UNBOUNDED_LIST,
            "",
            rules::unbounded_list_message(name),
        );
    }
    for dialect in [
        Dialect::OpenAiChat { strict: true },
        Dialect::Anthropic { strict: true },
        Dialect::Gemini,
    ] {
        if let Err(err) = def.export(dialect) {
            l.push(rules::PROVIDER_INCOMPATIBLE, &err.path, format!(
                "{dialect} cannot express `{name}`: {}; export it with another dialect, or change the type",
                err.reason
            ));
        }
    }
    l.out
}

fn resolve<'s>(root: &'s Value, node: &'s Value) -> &'s Value {
    match node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
    {
        Some(pointer) => root.pointer(pointer).unwrap_or(node),
        None => node,
    }
}

/// Whether the input has a numeric parameter with a maximum named like a limit (`limit`,
/// `max_results`, `page_size`, ...).
fn has_limit(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| {
            props.iter().any(|(name, node)| {
                let node = resolve(schema, node);
                rules::is_limit_param(name)
                    && (node.get("maximum").is_some() || node.get("exclusiveMaximum").is_some())
            })
        })
}

fn has_environment(schema: &Value) -> bool {
    ["environment", "env"].iter().any(|key| {
        schema
            .pointer(&format!("/properties/{key}"))
            .is_some_and(|node| {
                let mut values = Vec::new();
                collect_names(schema, node, &mut values);
                !values.is_empty()
            })
    })
}

/// The string values an enum-like node allows (through `$ref`, `anyOf`/`oneOf`, `const`).
fn collect_names(root: &Value, node: &Value, out: &mut Vec<String>) {
    let node = resolve(root, node);
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        out.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    if let Some(Value::String(c)) = node.get("const") {
        out.push(c.clone());
    }
    for key in ["anyOf", "oneOf"] {
        for branch in node
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_names(root, branch, out);
        }
    }
}

fn is_string_node(node: &Value) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    }
}

fn shaped(node: &Value) -> bool {
    ["pattern", "format", "enum", "const"]
        .iter()
        .any(|k| node.get(*k).is_some())
}

fn walk(l: &mut Linter<'_>, node: &Value, path: &str, name: Option<&str>) {
    if node == &Value::Bool(true) {
        if let Some(name) = name {
            l.push(rules::OPEN_MAP, path, format!(
                "`{name}` is an open map or free JSON: models guess its keys, and strict provider modes cannot express it; use a struct with named fields, or a list of key/value structs"
            ));
        }
        return;
    }
    let Value::Object(map) = node else { return };
    if let Some(text) = map.get("description").and_then(Value::as_str) {
        let what = match name {
            Some(name) => format!("the doc of parameter `{name}`"),
            None => format!("a description in `{}`", l.def.name()),
        };
        if let Some(message) = rules::check_injection(&what, text) {
            l.push(rules::DESCRIPTION_INJECTION, path, message);
        }
        if let Some(message) = rules::check_secret(&what, text) {
            l.push(rules::SECRET_IN_DESCRIPTION, path, message);
        }
        if !l.def.fixed_text()
            && let Some(message) = rules::check_volatile(&what, text)
        {
            l.push(rules::VOLATILE_DESCRIPTION, path, message);
        }
    }
    if let Some(name) = name {
        let string = is_string_node(node);
        if string && !shaped(node) {
            if node.get("maxLength").is_none() {
                l.push(rules::UNBOUNDED_STRING, path, format!(
                    "`{name}` is a string with no maximum length, pattern or format; a model can send anything, of any size: add `#[arg(length(max = 200))]` (or `#[schemars(length(max = 200))]` in its type), a `pattern`, or use an enum"
                ));
            }
            if let Some(found) = map
                .get("description")
                .and_then(Value::as_str)
                .and_then(rules::stringly_enum)
            {
                l.push(
                    rules::STRINGLY_ENUM,
                    path,
                    rules::stringly_enum_message(name, &found),
                );
            }
        }
        let strings = string || node.get("items").is_some_and(is_string_node);
        if rules::is_dangerous(name) && strings && node.get("pattern").is_none() {
            l.push(
                rules::DANGEROUS_PARAMETER,
                path,
                rules::dangerous_message(name),
            );
        }
        if rules::is_permission(name) {
            l.push(
                rules::SELF_DECLARED_PERMISSION,
                path,
                rules::permission_message(name),
            );
        }
        if rules::is_destination(name) && strings && !shaped(node) {
            l.push(
                rules::UNRESTRICTED_DESTINATION,
                path,
                rules::destination_message(name),
            );
        }
        if crate::schema::accepts_any_json(map)
            || matches!(map.get("additionalProperties"), Some(v) if v != &Value::Bool(false))
        {
            l.push(rules::OPEN_MAP, path, format!(
                "`{name}` is an open map or free JSON: models guess its keys, and strict provider modes cannot express it; use a struct with named fields, or a list of key/value structs"
            ));
        }
    }
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (prop, child) in props {
            walk(l, child, &format!("{path}/properties/{prop}"), Some(prop));
        }
    }
    if let Some(items) = map.get("items") {
        walk(l, items, &format!("{path}/items"), name);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for (i, branch) in map
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(l, branch, &format!("{path}/{key}/{i}"), name);
        }
    }
    if let Some(Value::Object(extra)) = map.get("additionalProperties") {
        walk(
            l,
            &Value::Object(extra.clone()),
            &format!("{path}/additionalProperties"),
            name,
        );
    }
    if path.is_empty()
        && let Some(defs) = map.get("$defs").and_then(Value::as_object)
    {
        for (def_name, def) in defs {
            walk(l, def, &format!("/$defs/{def_name}"), None);
        }
    }
}

/// Each example call against the schema: a valid one must be accepted, an invalid one refused
/// with an error at the pointer it names.
fn examples(l: &mut Linter<'_>) {
    let def = l.def;
    let name = def.name();
    for (n, example) in def.examples().iter().enumerate() {
        let text = example.arguments.to_string();
        let shown = crate::echo::echo(&text);
        let outcome = def.validate(text.as_str().into());
        let problem = match (&example.error, outcome) {
            (None, Ok(_)) => None,
            (None, Err(err)) => Some(format!(
                "example {} of `{name}` ({shown}) does not fit the tool's schema: {}; models copy examples, so fix the example or the schema",
                n + 1,
                err.message()
            )),
            (Some(pointer), Ok(_)) => Some(format!(
                "invalid example {} of `{name}` ({shown}) is accepted, but is declared refused at `{pointer}`; make it break the rule it shows, or drop it",
                n + 1
            )),
            (Some(pointer), Err(err)) => {
                let at: Vec<&str> = err.fields().iter().map(|f| f.pointer.as_str()).collect();
                (!pointer.is_empty() && !at.contains(&pointer.as_str())).then(|| format!(
                    "invalid example {} of `{name}` ({shown}) is refused at {}, not at `{pointer}`; name the pointer it is refused at",
                    n + 1,
                    if at.is_empty() { "the whole call".to_owned() } else { at.join(", ") }
                ))
            }
        };
        if let Some(message) = problem {
            l.push(rules::INVALID_EXAMPLE, "", message);
        }
    }
}
