//! Building the canonical input schema from the generated argument struct.
//!
//! schemars makes the schema of the struct; then the facts only `#[tool]` knows are merged in:
//! parameter descriptions, `#[arg]` constraints and defaults. Before the merge, the schema is
//! checked for constraints that serde alone does not enforce (they can only come from the
//! parameters' own types, e.g. `#[schemars(length(..))]` inside a user struct); a tool whose
//! schema has any runs the full validator on every call instead of only on failures.

use jsonschema::Validator;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::json::number::compare_json_numbers;
use crate::spec::{Bound, Constraint, LengthKind, ParamSpec, ToolSpec};

pub(crate) struct Built {
    pub(crate) schema: Value,
    pub(crate) compiled: Compiled,
    pub(crate) full_validation: bool,
}

/// Per-parameter validators for `pattern` and `format`, compiled once.
#[derive(Default)]
pub(crate) struct Compiled {
    pub(crate) text: Vec<Option<Validator>>,
    pub(crate) problem: Option<String>,
}

/// Turns doc-comment text into a description, as rustdoc reads Markdown: the lines of a
/// paragraph are joined with a space (a hard-wrapped sentence reaches the model whole), while
/// blank lines between paragraphs, list items, headings, tables, block quotes, hard breaks
/// (two trailing spaces or a backslash) and code blocks (fenced or indented) keep their lines.
/// One leading space is stripped from each line (the one after `///`), and blank lines at the
/// start and end are dropped.
///
/// ```
/// # use toolsmith::__private::normalize_doc;
/// assert_eq!(normalize_doc(" Books a seat;\n nothing is held.\n\n - one\n - two"),
///            "Books a seat; nothing is held.\n\n- one\n- two");
/// ```
#[must_use]
pub fn normalize_doc(raw: &str) -> String {
    let lines: Vec<&str> = raw
        .lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(start, |i| i + 1);
    let mut out = String::with_capacity(raw.len());
    // Whether the last line written is paragraph text a following text line joins.
    let mut joinable = false;
    // The opening fence of the code block being copied (its character and length).
    let mut fence: Option<(char, usize)> = None;
    for &line in &lines[start..end] {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some((ch, len)) = fence {
            out.push('\n');
            out.push_str(line.trim_end());
            if fence_of(trimmed).is_some_and(|(c, n)| c == ch && n >= len)
                && trimmed.trim_end().chars().all(|c| c == ch)
            {
                fence = None;
            }
            continue;
        }
        if trimmed.is_empty() {
            out.push('\n');
            joinable = false;
            continue;
        }
        let hard_break = line.ends_with("  ") || line.ends_with('\\');
        let text = line.trim_end();
        // An indented line goes on with a paragraph too: an indented code block cannot
        // interrupt one (CommonMark), only follow a blank line.
        if joinable && !starts_block(trimmed) {
            out.push(' ');
            out.push_str(trimmed.trim_end());
            joinable = !hard_break;
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        if let Some(opened) = fence_of(trimmed) {
            fence = Some(opened);
            out.push_str(text);
            joinable = false;
            continue;
        }
        if indent >= 4 && !joinable {
            // An indented code block, or a list item's continuation kept as written.
            out.push_str(text);
            joinable = false;
            continue;
        }
        out.push_str(text);
        joinable = !hard_break && !trimmed.starts_with('#') && !trimmed.starts_with('|');
    }
    out
}

/// The fence a line opens or closes a code block with: three or more backticks or tildes.
fn fence_of(line: &str) -> Option<(char, usize)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.chars().take_while(|c| *c == ch).count();
    (len >= 3).then_some((ch, len))
}

/// Whether a line starts a block of its own instead of going on with a paragraph: a list
/// item, a heading, a table row, a block quote, a fence or a rule.
fn starts_block(line: &str) -> bool {
    let bullet = ["- ", "* ", "+ "].iter().any(|b| line.starts_with(b));
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let numbered = digits > 0
        && digits < 10
        && matches!(line[digits..].chars().next(), Some('.' | ')'))
        && line[digits + 1..].starts_with(' ');
    bullet
        || numbered
        || line.starts_with('#')
        || line.starts_with('|')
        || line.starts_with('>')
        || fence_of(line).is_some()
        || (line.len() >= 3 && line.chars().all(|c| c == '-' || c == '*' || c == '_'))
}

/// The JSON Schema (2020-12) schemars writes for `A`.
#[must_use]
pub fn schema_of<A: JsonSchema + ?Sized>() -> Value {
    SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value()
}

/// Whether a schema node (an object) accepts any JSON: it has no keyword that gives it a type
/// or a shape (`serde_json::Value`'s schema, once written as an object).
pub(crate) fn accepts_any_json(node: &Map<String, Value>) -> bool {
    const SHAPES: &[&str] = &[
        "type",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "properties",
        "items",
        "$ref",
    ];
    !SHAPES.iter().any(|key| node.contains_key(*key))
}

/// The canonical input schema from the argument struct's `schema` and the tool's spec.
pub(crate) fn build(spec: &ToolSpec, mut schema: Value) -> Built {
    let full_validation = has_unenforced_constraints(&schema);
    add_integer_bounds(&mut schema);
    let mut compiled = Compiled::default();
    if let Value::Object(root) = &mut schema {
        // `shift_remove` keeps the order of the other keys (property order is what models see).
        root.shift_remove("title");
        root.shift_remove("description");
        let props = root
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        for param in spec.params {
            // Any JSON (`serde_json::Value`): schemars writes the schema `true`. Written as the
            // empty schema, which means the same and can carry a description.
            if let Some(any @ Value::Bool(true)) = props.get_mut(param.name) {
                *any = Value::Object(Map::new());
            }
            let node = props.get_mut(param.name).and_then(Value::as_object_mut);
            let Some(node) = node else {
                compiled.problem = Some(format!(
                    "parameter `{}` is missing from the schema",
                    param.name
                ));
                compiled.text.push(None);
                continue;
            };
            apply_param(node, param);
            compiled
                .text
                .push(compile_text(param.constraints, &mut compiled.problem));
        }
    }
    // schemars appends `$schema` last; readers expect it first.
    if let Value::Object(root) = &mut schema
        && let Some(dialect) = root.shift_remove("$schema")
    {
        let rest = std::mem::take(root);
        root.insert("$schema".into(), dialect);
        root.extend(rest);
    }
    Built {
        schema,
        compiled,
        full_validation,
    }
}

fn apply_param(node: &mut Map<String, Value>, param: &ParamSpec) {
    let description = if param.description_from_docs {
        normalize_doc(param.description)
    } else {
        param.description.to_owned()
    };
    if !description.is_empty() {
        node.insert("description".into(), Value::String(description));
    }
    for constraint in param.constraints {
        match *constraint {
            Constraint::Length { kind, min, max } => {
                let (lo, hi) = match kind {
                    LengthKind::Chars => ("minLength", "maxLength"),
                    LengthKind::Items => ("minItems", "maxItems"),
                };
                if let Some(min) = min {
                    node.insert(lo.into(), min.into());
                }
                if let Some(max) = max {
                    node.insert(hi.into(), max.into());
                }
            }
            Constraint::Range {
                min,
                max,
                exclusive_min,
                exclusive_max,
            } => {
                if let Some(min) = min {
                    tighten(node, "minimum", min, std::cmp::Ordering::Greater);
                }
                if let Some(max) = max {
                    tighten(node, "maximum", max, std::cmp::Ordering::Less);
                }
                if let Some(bound) = exclusive_min {
                    node.insert("exclusiveMinimum".into(), bound.to_json());
                }
                if let Some(bound) = exclusive_max {
                    node.insert("exclusiveMaximum".into(), bound.to_json());
                }
            }
            Constraint::Pattern(pattern) => {
                node.insert("pattern".into(), pattern.into());
            }
            Constraint::Format(format) => {
                node.insert("format".into(), format.into());
            }
        }
    }
    if let Some(default) = param.default {
        node.insert("default".into(), default());
    }
}

/// Sets `key` to `bound` unless the type's own bound is already tighter (`u8`'s `minimum: 0`
/// stays when `range(min = -5)` is written), so the schema never admits what serde rejects.
fn tighten(node: &mut Map<String, Value>, key: &str, bound: Bound, tighter: std::cmp::Ordering) {
    let new = bound.to_json();
    let keep_old = node
        .get(key)
        .and_then(|old| compare_json_numbers(old, &new))
        .is_some_and(|ord| ord == tighter);
    if !keep_old {
        node.insert(key.into(), new);
    }
}

fn compile_text(constraints: &[Constraint], problem: &mut Option<String>) -> Option<Validator> {
    let mut node = Map::new();
    for constraint in constraints {
        match *constraint {
            Constraint::Pattern(p) => {
                node.insert("pattern".into(), p.into());
            }
            Constraint::Format(f) => {
                node.insert("format".into(), f.into());
            }
            Constraint::Length { .. } | Constraint::Range { .. } => {}
        }
    }
    if node.is_empty() {
        return None;
    }
    match compile(&Value::Object(node)) {
        Ok(v) => Some(v),
        Err(err) => {
            *problem = Some(err);
            None
        }
    }
}

/// The output schema as advertised: without the Rust type's name as `title`, and none at all
/// for a tool that returns `()` (its data is always `null`).
pub(crate) fn output_schema(mut schema: Value) -> Option<Value> {
    let root = schema.as_object_mut()?;
    root.shift_remove("title");
    if root.get("type").and_then(Value::as_str) == Some("null") {
        return None;
    }
    Some(schema)
}

/// Compiles a validator for `schema` with the settings the runtime uses everywhere: JSON Schema
/// 2020-12 with `format` asserted (a schema that says `email` gets an email address).
pub(crate) fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .map_err(|err| format!("the input schema does not compile: {err}"))
}

/// Keywords whose constraint serde does not check by itself.
const UNENFORCED: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "multipleOf",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "contains",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "not",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Keywords whose values are subschemas, or maps/arrays of subschemas.
pub(crate) const SUBSCHEMA_KEYS: &[&str] = &[
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
];
pub(crate) const SUBSCHEMA_LISTS: &[&str] = &["prefixItems", "anyOf", "oneOf", "allOf"];
pub(crate) const SUBSCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "dependentSchemas",
];

/// Whether serde (through the strict adapter) reads an `anyOf`/`oneOf` exactly as the schema
/// says: `Option<T>` (`[T, null]`), and externally tagged enums (each branch a variant name or
/// an object with one key). Other unions (internally or adjacently tagged, untagged enums) are
/// read by serde from a buffer, beyond the adapter's reach.
fn union_is_exact(node: &Map<String, Value>) -> bool {
    let branches = |key: &str| -> Vec<&Map<String, Value>> {
        node.get(key)
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default()
    };
    let is_null = |b: &Map<String, Value>| {
        b.get("type").and_then(Value::as_str) == Some("null")
            && b.keys().all(|k| k == "type" || k == "description")
    };
    let is_ref = |b: &Map<String, Value>| {
        b.contains_key("$ref") && b.keys().all(|k| k == "$ref" || k == "description")
    };
    let is_name = |b: &Map<String, Value>| {
        b.get("type").is_none_or(|t| t == "string")
            && (b.get("const").is_some_and(Value::is_string)
                || b.get("enum")
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().all(Value::is_string)))
            && b.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "type" | "const" | "enum" | "description" | "title"
                )
            })
    };
    let is_tagged_object = |b: &Map<String, Value>| {
        b.get("type").and_then(Value::as_str) == Some("object")
            && b.get("additionalProperties") == Some(&Value::Bool(false))
            && b.get("required")
                .and_then(Value::as_array)
                .is_some_and(|r| r.len() == 1)
            && b.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| {
                    p.len() == 1 && p.values().all(|content| content.get("const").is_none())
                })
    };
    let any_of = branches("anyOf");
    let one_of = branches("oneOf");
    // `Option<T>`: `[T, null]` with `T` a reference.
    let option = |list: &[&Map<String, Value>]| {
        list.iter().all(|b| is_null(b) || is_ref(b))
            && list.iter().filter(|b| is_ref(b)).count() <= 1
    };
    // An externally tagged enum: each variant a name or an object with one key.
    let external =
        |list: &[&Map<String, Value>]| list.iter().all(|b| is_name(b) || is_tagged_object(b));
    option(&any_of) && (option(&one_of) || external(&one_of))
}

/// Writes the range of a Rust integer type where schemars leaves it out (`i32`, `i64`, `u64`,
/// ...): serde rejects what does not fit, so the schema says so too.
fn add_integer_bounds(schema: &mut Value) {
    let _ = visit_mut::<()>(schema, "", &mut |node, _| {
        if let Some((lo, hi)) = node
            .get("format")
            .and_then(Value::as_str)
            .and_then(natural_bounds)
        {
            for (key, bound) in [("minimum", lo), ("maximum", hi)] {
                if node.contains_key(key) {
                    continue;
                }
                if let Ok(n) = i64::try_from(bound) {
                    node.insert(key.into(), n.into());
                } else if let Ok(n) = u64::try_from(bound) {
                    node.insert(key.into(), n.into());
                }
            }
        }
        Ok(())
    });
}

/// The callback of [`visit_mut`]: a schema object and its JSON pointer.
pub(crate) type Visitor<'f, E> = dyn FnMut(&mut Map<String, Value>, &str) -> Result<(), E> + 'f;

/// Calls `f` on every schema object under `node`, parents before children, with the JSON
/// pointer of each within the whole schema. Stops at the first error.
pub(crate) fn visit_mut<E>(node: &mut Value, path: &str, f: &mut Visitor<'_, E>) -> Result<(), E> {
    let Value::Object(map) = node else {
        return Ok(());
    };
    f(map, path)?;
    for key in SUBSCHEMA_KEYS {
        if let Some(sub) = map.get_mut(*key) {
            visit_mut(sub, &format!("{path}/{key}"), f)?;
        }
    }
    for key in SUBSCHEMA_LISTS {
        if let Some(Value::Array(items)) = map.get_mut(*key) {
            for (i, item) in items.iter_mut().enumerate() {
                visit_mut(item, &format!("{path}/{key}/{i}"), f)?;
            }
        }
    }
    for key in SUBSCHEMA_MAPS {
        if let Some(Value::Object(children)) = map.get_mut(*key) {
            for (name, child) in children.iter_mut() {
                let name = name.replace('~', "~0").replace('/', "~1");
                visit_mut(child, &format!("{path}/{key}/{name}"), f)?;
            }
        }
    }
    Ok(())
}

/// The bounds schemars writes for Rust integer types; serde enforces them by itself.
fn natural_bounds(format: &str) -> Option<(i128, i128)> {
    Some(match format {
        "uint8" => (0, i128::from(u8::MAX)),
        "uint16" => (0, i128::from(u16::MAX)),
        "uint32" => (0, i128::from(u32::MAX)),
        "uint64" | "uint" => (0, i128::from(u64::MAX)),
        "int8" => (i128::from(i8::MIN), i128::from(i8::MAX)),
        "int16" => (i128::from(i16::MIN), i128::from(i16::MAX)),
        "int32" => (i128::from(i32::MIN), i128::from(i32::MAX)),
        "int64" | "int" => (i128::from(i64::MIN), i128::from(i64::MAX)),
        _ => return None,
    })
}

const NUMBER_FORMATS: &[&str] = &["float", "double"];

pub(crate) fn has_unenforced_constraints(schema: &Value) -> bool {
    let Value::Object(node) = schema else {
        return false;
    };
    if UNENFORCED.iter().any(|k| node.contains_key(*k))
        || node.get("uniqueItems") == Some(&Value::Bool(true))
    {
        return true;
    }
    let format = node.get("format").and_then(Value::as_str);
    if let Some(f) = format
        && natural_bounds(f).is_none()
        && !NUMBER_FORMATS.contains(&f)
    {
        return true;
    }
    let bounds = format.and_then(natural_bounds);
    for (key, natural) in [
        ("minimum", bounds.map(|b| b.0)),
        ("maximum", bounds.map(|b| b.1)),
    ] {
        if let Some(value) = node.get(key) {
            let matches = natural.is_some_and(|n| {
                value.as_i64().map(i128::from) == Some(n)
                    || value.as_u64().map(i128::from) == Some(n)
            });
            if !matches {
                return true;
            }
        }
    }
    if (node.contains_key("minItems") || node.contains_key("maxItems"))
        && !node.contains_key("prefixItems")
    {
        return true;
    }
    if node.contains_key("allOf") || !union_is_exact(node) {
        return true;
    }
    let singles = SUBSCHEMA_KEYS.iter().filter_map(|k| node.get(*k));
    let lists = SUBSCHEMA_LISTS
        .iter()
        .filter_map(|k| node.get(*k).and_then(Value::as_array))
        .flatten();
    let maps = SUBSCHEMA_MAPS
        .iter()
        .filter_map(|k| node.get(*k).and_then(Value::as_object))
        .flat_map(Map::values);
    singles
        .chain(lists)
        .chain(maps)
        .any(has_unenforced_constraints)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn doc_normalization_keeps_paragraphs_and_indentation() {
        assert_eq!(normalize_doc(" a\n b\n\n c"), "a b\n\nc");
        assert_eq!(normalize_doc("  two spaces"), " two spaces");
        assert_eq!(normalize_doc("\n\n x \n\n"), "x");
        assert_eq!(normalize_doc(""), "");
    }

    #[test]
    fn doc_lines_join_into_paragraphs_as_rustdoc_reads_them() {
        let doc = " Cancels a booking: nothing is booked\n or held afterwards.\n\n # Notes\n Refunds take\n five days.\n\n - first item\n   goes on\n - second\n 1. one\n 2) two\n\n | a | b |\n |---|---|\n\n > quoted\n > more\n\n ```\n let x = 1;\n let y = 2;\n ```\n\n     indented code\n     more code\n\n Hard break  \n here\\\n and here.";
        assert_eq!(
            normalize_doc(doc),
            "Cancels a booking: nothing is booked or held afterwards.\n\n# Notes\nRefunds take five days.\n\n- first item goes on\n- second\n1. one\n2) two\n\n| a | b |\n|---|---|\n\n> quoted\n> more\n\n```\nlet x = 1;\nlet y = 2;\n```\n\n    indented code\n    more code\n\nHard break\nhere\\\nand here."
        );
        // A fence of tildes, and a longer closing fence.
        assert_eq!(
            normalize_doc(" ~~~\n a\n b\n ~~~~\n after\n text"),
            "~~~\na\nb\n~~~~\nafter text"
        );
    }

    #[test]
    fn detects_constraints_serde_does_not_enforce() {
        assert!(!has_unenforced_constraints(
            &json!({"type":"integer","format":"uint8","minimum":0,"maximum":255})
        ));
        assert!(has_unenforced_constraints(
            &json!({"type":"integer","format":"uint8","minimum":1,"maximum":255})
        ));
        assert!(!has_unenforced_constraints(
            &json!({"type":"array","prefixItems":[{}],"minItems":1,"maxItems":1})
        ));
        assert!(has_unenforced_constraints(
            &json!({"$defs":{"X":{"properties":{"a":{"type":"string","minLength":2}}}}})
        ));
        assert!(!has_unenforced_constraints(
            &json!({"properties":{"pattern":{"type":"string"}}})
        ));
        assert!(has_unenforced_constraints(
            &json!({"type":"string","format":"email"})
        ));
        assert!(!has_unenforced_constraints(
            &json!({"type":"number","format":"double"})
        ));
    }
}
